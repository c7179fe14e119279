//! `kplane serve --config FILE` (docs/usage.md, "Configuration file"): the server takes
//! its data directory and port from the file when no flag gives them; the example file,
//! docs/examples/kplane.yaml, starts a server whose command-line flags override the file's
//! data directory and address while its other fields (JSON logs, the extra name in the
//! serving certificate) apply; a file with an unknown field stops the server at start-up
//! with an error naming the field.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _, Result};
use kplane_e2e::{KplaneServer, Kubectl, ServerOptions};
use serde_json::Value;

const STARTUP: Duration = Duration::from_secs(60);

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/examples/kplane.yaml")
}

/// A `kplane serve` started without the harness, stopped (SIGTERM, then kill) on drop.
struct Process(Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(self.0.id().to_string())
            .status();
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.0.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// A port nothing listens on now.
fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

#[test]
fn the_file_gives_the_data_directory_and_the_port() -> Result<()> {
    let scratch = tempfile::Builder::new()
        .prefix("kplane-config-")
        .tempdir()?;
    let data_dir = scratch.path().join("from-the-file");
    let port = free_port()?;
    let config = scratch.path().join("kplane.yaml");
    std::fs::write(
        &config,
        format!(
            "data-dir: {}\nbind: 127.0.0.1:{port}\n",
            data_dir.to_str().context("non-UTF-8 path")?
        ),
    )?;
    let log = std::fs::File::create(scratch.path().join("server.log"))?;
    let child = Command::new(kplane_e2e::kplane_bin()?)
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .current_dir(scratch.path())
        .env("NO_COLOR", "1")
        .env_remove("KPLANE_DATA_DIR")
        .env_remove("KPLANE_BIND")
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .spawn()?;
    let mut server = Process(child);

    let kubeconfig = data_dir.join("admin.kubeconfig");
    let deadline = Instant::now() + STARTUP;
    while !kubeconfig.is_file() {
        if let Some(status) = server.0.try_wait()? {
            bail!(
                "kplane exited during start-up ({status}): {}",
                std::fs::read_to_string(scratch.path().join("server.log"))?
            );
        }
        ensure!(Instant::now() < deadline, "no {}", kubeconfig.display());
        std::thread::sleep(Duration::from_millis(50));
    }
    // Nothing went to the default data directory of the working directory.
    ensure!(!scratch.path().join("kplane-data").exists());
    let kubectl = Kubectl::new(
        kubeconfig,
        scratch.path().join("home"),
        scratch.path().join("cache"),
    );
    let server_url = kubectl.ok(&[
        "config",
        "view",
        "-o",
        "jsonpath={.clusters[0].cluster.server}",
    ])?;
    ensure!(
        server_url == format!("https://127.0.0.1:{port}/clusters/root"),
        "{server_url}"
    );
    kubectl.ok(&["create", "namespace", "from-config"])?;
    ensure!(
        kubectl
            .ok(&["get", "namespace", "from-config", "-o", "name"])?
            .trim()
            == "namespace/from-config"
    );
    drop(server);
    Ok(())
}

#[test]
fn the_example_file_applies_under_the_flags() -> Result<()> {
    let example = example();
    // The harness passes `--data-dir` and `--bind 127.0.0.1:0`, which override the
    // example's /var/lib/kplane and 0.0.0.0:6443.
    let server = KplaneServer::start_with(ServerOptions::default().arg("--config").arg(&example))?;
    ensure!(
        !server.base_url().ends_with(":6443"),
        "{}",
        server.base_url()
    );
    server.kubectl_ok(&["get", "namespaces"])?;

    // log-format: json and v: 2 (a 4xx request is logged, as JSON).
    let _ = server.kubectl(&["get", "configmap", "not-there"])?;
    let log = server.log_tail(400);
    let lines: Vec<Value> = log
        .lines()
        .filter(|l| !l.starts_with("==== "))
        .map(serde_json::from_str)
        .collect::<Result<_, _>>()
        .with_context(|| format!("the log is not JSON lines:\n{log}"))?;
    ensure!(
        lines
            .iter()
            .any(|l| l["status"] == 404
                && l["uri"].as_str().is_some_and(|u| u.contains("not-there"))),
        "no request line for the 404 at -v 2:\n{log}"
    );

    // tls-san: kplane.example.com is in the serving certificate.
    let scratch = tempfile::Builder::new()
        .prefix("kplane-config-")
        .tempdir()?;
    let ca = scratch.path().join("ca.crt");
    std::fs::write(&ca, server.ca_pem()?)?;
    let port = server.base_url().rsplit(':').next().context("no port")?;
    for (host, verifies) in [("kplane.example.com", true), ("other.example.com", false)] {
        let out = Command::new("curl")
            .args(["-sS", "-o", "/dev/null", "--cacert"])
            .arg(&ca)
            .arg("--resolve")
            .arg(format!("{host}:{port}:127.0.0.1"))
            .arg(format!("https://{host}:{port}/readyz"))
            .output()
            .context("running curl")?;
        ensure!(
            out.status.success() == verifies,
            "{host}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

#[test]
fn an_unknown_field_stops_the_server_naming_it() -> Result<()> {
    let scratch = tempfile::Builder::new()
        .prefix("kplane-config-")
        .tempdir()?;
    let config = scratch.path().join("kplane.yaml");
    std::fs::write(&config, "bind: 127.0.0.1:0\nstorage-cache: 128\n")?;
    let out = Command::new(kplane_e2e::kplane_bin()?)
        .arg("serve")
        .arg("--config")
        .arg(&config)
        .current_dir(scratch.path())
        .stdin(Stdio::null())
        .output()?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    ensure!(!out.status.success(), "kplane started: {stderr}");
    ensure!(
        stderr.contains("unknown field `storage-cache`") && stderr.contains("kplane.yaml"),
        "{stderr}"
    );
    ensure!(
        !scratch.path().join("kplane-data").exists(),
        "it created a data directory"
    );
    Ok(())
}
