//! The `kplane ws` CLI and `kplane kubeconfig`, driven as a user drives them: the real
//! binary (also as the kubectl plugins `kubectl ws` and `kubectl kplane`, through a PATH
//! holding the symlinks `make install` creates) against a real server, with kubectl
//! reading the kubeconfig the CLI rewrites. Every test works on a copy of the server's
//! kubeconfig in its own scratch directory, with `HOME` there too.

use std::ffi::OsString;
use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _, Result};
use kplane_e2e::{kplane_bin, KplaneServer};

/// Upper bound for one CLI or kubectl run.
/// Upper bound for one CLI run (an export or import of a few thousand objects included).
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// The outcome of one run.
/// One CLI run's outcome (also used by the export/import tests in `archive.rs`).
#[derive(Debug)]
pub(crate) struct Run {
    pub(crate) code: Option<i32>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Run {
    pub(crate) fn ok(self) -> Result<String> {
        ensure!(
            self.code == Some(0),
            "exit {:?}\nstdout: {}\nstderr: {}",
            self.code,
            self.stdout,
            self.stderr
        );
        Ok(self.stdout)
    }

    /// A clean failure: exit 1, `error: ...` on stderr containing `want`, no panic.
    pub(crate) fn fails_with(&self, want: &str) -> Result<()> {
        ensure!(
            self.code == Some(1),
            "exit {:?}, want 1: {self:?}",
            self.code
        );
        ensure!(
            self.stderr.starts_with("error: ") && self.stderr.contains(want),
            "stderr lacks {want:?}: {}",
            self.stderr
        );
        ensure!(
            !self.stderr.contains("panicked") && !self.stderr.contains("backtrace"),
            "{}",
            self.stderr
        );
        Ok(())
    }
}

/// A user's shell: a scratch `HOME`, a `KUBECONFIG` and a `PATH` with the plugin links.
struct Shell {
    dir: tempfile::TempDir,
    kubeconfig: PathBuf,
    path: OsString,
}

impl Shell {
    /// A shell whose `KUBECONFIG` is a copy of `server`'s admin kubeconfig.
    fn new(server: &KplaneServer) -> Result<Self> {
        let shell = Self::empty()?;
        std::fs::copy(server.kubeconfig(), &shell.kubeconfig).context("copying the kubeconfig")?;
        Ok(shell)
    }

    /// A shell with no kubeconfig file yet.
    fn empty() -> Result<Self> {
        let dir = tempfile::Builder::new()
            .prefix("kplane-ws-cli-")
            .tempdir()?;
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin)?;
        let kplane = kplane_bin()?;
        for name in ["kplane", "kubectl-ws", "kubectl-kplane"] {
            std::os::unix::fs::symlink(&kplane, bin.join(name))?;
        }
        let mut path = OsString::from(bin.as_os_str());
        if let Some(rest) = std::env::var_os("PATH") {
            path.push(":");
            path.push(rest);
        }
        let kubeconfig = dir.path().join("config");
        Ok(Self {
            dir,
            kubeconfig,
            path,
        })
    }

    fn command(&self, program: &str, args: &[&str]) -> Command {
        let mut cmd = Command::new(program);
        cmd.args(args)
            .env("PATH", &self.path)
            .env("HOME", self.dir.path())
            .env("KUBECONFIG", &self.kubeconfig)
            .env_remove("RUST_BACKTRACE")
            .env_remove("RUST_LIB_BACKTRACE");
        cmd
    }

    fn kplane(&self, args: &[&str]) -> Result<Run> {
        run(self.command("kplane", args), &self.dir.path().join("out"))
    }

    /// kubectl with its own discovery cache; plugin runs (`kubectl ws`) get no flags, as
    /// kubectl only finds a plugin whose name comes first.
    fn kubectl(&self, args: &[&str]) -> Result<Run> {
        let mut full = args.to_vec();
        if !matches!(args.first(), Some(&"ws" | &"kplane")) {
            full.extend_from_slice(&["--cache-dir", "kubectl-cache"]);
        }
        let mut cmd = self.command("kubectl", &full);
        cmd.current_dir(self.dir.path());
        run(cmd, &self.dir.path().join("out"))
    }

    /// The server URL of the kubeconfig's current context, as kubectl reads it.
    fn server(&self) -> Result<String> {
        self.kubectl(&[
            "config",
            "view",
            "--minify",
            "-o",
            "jsonpath={.clusters[0].cluster.server}",
        ])?
        .ok()
    }

    /// `kplane ws <args>` prints exactly `Current workspace is "<path>".`
    fn use_ws(&self, args: &[&str], path: &str) -> Result<()> {
        let out = self.kplane(args)?.ok()?;
        ensure!(
            out == format!("Current workspace is \"{path}\".\n"),
            "kplane {args:?}: {out}"
        );
        Ok(())
    }
}

/// Runs `cmd` with stdout and stderr in files under `scratch`, killing it after
/// [`RUN_TIMEOUT`].
pub(crate) fn run(mut cmd: Command, scratch: &Path) -> Result<Run> {
    std::fs::create_dir_all(scratch)?;
    let (out_path, err_path) = (scratch.join("stdout"), scratch.join("stderr"));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path)?)
        .stderr(std::fs::File::create(&err_path)?)
        .spawn()
        .with_context(|| format!("spawning {cmd:?}"))?;
    let deadline = Instant::now() + RUN_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!("{cmd:?} did not finish within {RUN_TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Ok(Run {
        code: status.code(),
        stdout: std::fs::read_to_string(&out_path)?,
        stderr: std::fs::read_to_string(&err_path)?,
    })
}

#[test]
fn nested_workspaces_are_created_listed_as_a_tree_and_entered_and_left() -> Result<()> {
    let server = KplaneServer::start()?;
    let sh = Shell::new(&server)?;
    let base = server.base_url().to_owned();

    let out = sh.kplane(&["ws", "create", "acme", "--wait"])?.ok()?;
    assert_eq!(
        out,
        "Workspace \"root:acme\" created.\nWorkspace \"root:acme\" is ready.\n"
    );
    sh.kplane(&["ws", "create", "team-a", "--parent", "root:acme", "--wait"])?
        .ok()?;
    // --parent relative to the current workspace.
    sh.kplane(&["ws", "create", "team-b", "--parent", "acme", "--wait"])?
        .ok()?;
    sh.kplane(&[
        "ws",
        "create",
        "dev",
        "--parent",
        "root:acme:team-a",
        "--wait",
    ])?
    .ok()?;

    let table = sh.kplane(&["ws", "list"])?.ok()?;
    let lines: Vec<Vec<&str>> = table
        .lines()
        .map(|l| l.split_whitespace().collect())
        .collect();
    assert_eq!(lines.len(), 2, "{table}");
    assert_eq!(lines[0], ["NAME", "PHASE", "URL", "AGE"], "{table}");
    let acme_url = format!("{base}/clusters/root:acme");
    assert_eq!(
        &lines[1][..3],
        ["acme", "Ready", acme_url.as_str()],
        "{table}"
    );

    let tree = sh.kplane(&["ws", "list", "--tree"])?.ok()?;
    assert_eq!(
        tree,
        "root\n└── acme\n    ├── team-a\n    │   └── dev\n    └── team-b\n"
    );

    // The round trip; kubectl follows every move.
    sh.use_ws(&["ws", "use", "root:acme"], "root:acme")?;
    sh.use_ws(&["ws", "current"], "root:acme")?;
    assert_eq!(sh.server()?, acme_url);
    let in_acme = sh.kubectl(&["get", "workspaces", "-o", "name"])?.ok()?;
    assert_eq!(
        in_acme,
        "workspace.tenancy.kplane.io/team-a\nworkspace.tenancy.kplane.io/team-b\n"
    );
    // Pages of one: every workspace is still listed.
    let paged = sh.kplane(&["ws", "list", "--chunk-size", "1"])?.ok()?;
    assert_eq!(paged.lines().count(), 3, "{paged}");
    assert!(
        paged.contains("team-a") && paged.contains("team-b"),
        "{paged}"
    );

    sh.use_ws(&["ws", "use", "team-a"], "root:acme:team-a")?;
    assert_eq!(sh.server()?, format!("{base}/clusters/root:acme:team-a"));
    sh.use_ws(&["ws", "use", ".."], "root:acme")?;
    sh.use_ws(&["ws", "use", "-"], "root:acme:team-a")?;
    // kubectl rewrites the file and keeps what `use -` needs.
    sh.kubectl(&["config", "set-context", "--current", "--namespace=default"])?
        .ok()?;
    sh.use_ws(&["ws", "use", "-"], "root:acme")?;
    sh.use_ws(&["ws", "use", "~"], "root")?;
    assert_eq!(sh.server()?, format!("{base}/clusters/root"));
    // An unquoted ~ arrives expanded by the shell.
    sh.use_ws(&["ws", "use", "root:acme"], "root:acme")?;
    let home = sh.dir.path().to_string_lossy().into_owned();
    sh.use_ws(&["ws", "use", &home], "root")?;
    sh.use_ws(&["ws"], "root")?;

    // Delete waits until the workspace is gone.
    sh.use_ws(&["ws", "use", "acme"], "root:acme")?;
    let out = sh.kplane(&["ws", "delete", "team-b"])?.ok()?;
    assert_eq!(out, "Workspace \"root:acme:team-b\" deleted.\n");
    let left = sh.kubectl(&["get", "workspaces", "-o", "name"])?.ok()?;
    assert_eq!(left, "workspace.tenancy.kplane.io/team-a\n");
    sh.kplane(&["ws", "delete", "team-b"])?
        .fails_with("workspace \"root:acme:team-b\" not found")?;
    sh.kplane(&["ws", "use", "team-b"])?
        .fails_with("workspace \"root:acme:team-b\" not found")?;
    // `create --enter` waits and moves in.
    sh.kplane(&["ws", "create", "team-c", "--enter"])?.ok()?;
    sh.use_ws(&["ws", "current"], "root:acme:team-c")?;
    Ok(())
}

#[test]
fn kubectl_ws_works_as_a_plugin_and_an_exported_kubeconfig_works_with_kubectl() -> Result<()> {
    let server = KplaneServer::start()?;
    let sh = Shell::new(&server)?;
    sh.kplane(&["ws", "create", "acme", "--wait"])?.ok()?;

    let out = sh.kubectl(&["ws", "use", "root:acme"])?.ok()?;
    assert_eq!(out, "Current workspace is \"root:acme\".\n");
    let out = sh.kubectl(&["kplane", "ws", "current"])?.ok()?;
    assert_eq!(out, "Current workspace is \"root:acme\".\n");
    let help = sh.kubectl(&["ws", "--help"])?.ok()?;
    assert!(help.contains("Usage: kubectl ws"), "{help}");
    sh.kubectl(&["ws", "use", "~"])?.ok()?;

    // A kubeconfig for root:acme, used by kubectl as is.
    let exported = sh.kplane(&["kubeconfig", "root:acme"])?.ok()?;
    let file = sh.dir.path().join("acme.kubeconfig");
    std::fs::write(&file, &exported)?;
    let file = file.to_string_lossy().into_owned();
    let created = sh
        .kubectl(&[
            "--kubeconfig",
            &file,
            "create",
            "configmap",
            "hello",
            "--from-literal=k=v",
        ])?
        .ok()?;
    assert_eq!(created, "configmap/hello created\n");
    let value = sh
        .kubectl(&[
            "--kubeconfig",
            &file,
            "get",
            "configmap",
            "hello",
            "-o",
            "jsonpath={.data.k}",
        ])?
        .ok()?;
    assert_eq!(value, "v");
    // It landed in root:acme and nowhere else.
    server
        .kubectl_for("root:acme")?
        .ok(&["get", "configmap", "hello"])?;
    let in_root = server.kubectl(&["get", "configmap", "hello"])?;
    ensure!(!in_root.success(), "root sees root:acme's ConfigMap");
    // Self-contained: no file references, the context named after the workspace.
    assert!(!exported.contains("certificate-authority:"), "{exported}");
    assert!(
        exported.contains("current-context: root:acme"),
        "{exported}"
    );
    sh.kplane(&["kubeconfig", "root:nope"])?
        .fails_with("workspace \"root:nope\" not found")?;
    Ok(())
}

#[test]
fn mistakes_fail_with_a_clear_message() -> Result<()> {
    let server = KplaneServer::start()?;
    let sh = Shell::new(&server)?;
    let before = std::fs::read_to_string(&sh.kubeconfig)?;

    sh.kplane(&["ws", "use", ".."])?
        .fails_with("the current workspace is \"root\", which has no parent")?;
    sh.kplane(&["ws", "use", "-"])?
        .fails_with("there is no previous workspace")?;
    sh.kplane(&["ws", "use", "root:nope"])?
        .fails_with("workspace \"root:nope\" not found")?;
    sh.kplane(&["ws", "use", "Bad_Name"])?
        .fails_with("is not a workspace path")?;
    sh.kplane(&["ws", "--context", "nope", "current"])?
        .fails_with("context \"nope\" not found in the kubeconfig")?;
    sh.kplane(&["ws", "create", "x", "--parent", "root:nope"])?
        .fails_with("workspace \"root:nope\" not found")?;
    assert_eq!(
        std::fs::read_to_string(&sh.kubeconfig)?,
        before,
        "a refused command left the kubeconfig as it was"
    );

    // The server refuses: its message is shown.
    sh.kplane(&["ws", "create", "x", "--wait"])?.ok()?;
    sh.kplane(&["ws", "create", "x"])?
        .fails_with("already exists")?;

    // No kubeconfig at all.
    let bare = Shell::empty()?;
    let mut cmd = bare.command("kplane", &["ws", "current"]);
    cmd.env_remove("KUBECONFIG");
    run(cmd, &bare.dir.path().join("out"))?.fails_with("no kubeconfig: ")?;
    bare.kplane(&["ws", "list"])?
        .fails_with("none of the files in KUBECONFIG exists")?;

    // A server that is not there.
    let stopped = Shell::empty()?;
    let text = before.replace(server.base_url(), "https://127.0.0.1:1");
    ensure!(text != before, "the kubeconfig names {}", server.base_url());
    std::fs::write(&stopped.kubeconfig, text)?;
    stopped
        .kplane(&["ws", "list"])?
        .fails_with("cannot reach the server at https://127.0.0.1:1/clusters/root")?;
    stopped
        .kplane(&["ws", "use", "~"])?
        .fails_with("cannot reach the server")?;
    Ok(())
}

/// `--wait` on a real server: a Workspace whose template does not exist turns Failed with
/// the reason `TemplateNotFound`, and `kplane ws create --wait` reports it.
#[test]
fn waiting_for_a_workspace_whose_template_is_missing_fails_with_template_not_found() -> Result<()> {
    let server = KplaneServer::start()?;
    let sh = Shell::new(&server)?;
    let run = sh.kplane(&["ws", "create", "x", "--template", "missing", "--wait"])?;
    ensure!(run.stdout == "Workspace \"root:x\" created.\n", "{run:?}");
    run.fails_with(
        "workspace \"root:x\" failed: TemplateNotFound: WorkspaceTemplate \"missing\" was not \
         found in logical cluster \"root\" or any of its ancestors",
    )?;
    // The server keeps it Failed (not half-Ready), as kubectl shows.
    let phase = sh
        .kubectl(&["get", "ws", "x", "-o", "jsonpath={.status.phase}"])?
        .ok()?;
    assert_eq!(phase, "Failed");
    Ok(())
}

/// `--wait` on a workspace that turns Failed: a stand-in server (plain HTTP) that accepts
/// the Workspace and then reports it Failed, as a failing template leaves it.
#[test]
fn waiting_for_a_workspace_that_fails_reports_the_reason() -> Result<()> {
    let fake = FakeServer::start()?;
    let sh = Shell::empty()?;
    let kubeconfig = serde_json::json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "fake", "cluster": {"server": format!("{}/clusters/root", fake.url)}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "u"}}],
        "current-context": "fake",
    });
    std::fs::write(&sh.kubeconfig, kubeconfig.to_string())?;
    let run = sh.kplane(&["ws", "create", "x", "--wait"])?;
    ensure!(run.stdout == "Workspace \"root:x\" created.\n", "{run:?}");
    run.fails_with(
        "workspace \"root:x\" failed: TemplateFailed: applying ConfigMap default/x: invalid",
    )?;
    let seen = fake.stop();
    ensure!(
        seen.iter().any(
            |r| r.starts_with("POST /clusters/root/apis/tenancy.kplane.io/v1alpha1/workspaces")
        ),
        "{seen:?}"
    );
    ensure!(
        seen.iter()
            .any(|r| r
                .starts_with("GET /clusters/root/apis/tenancy.kplane.io/v1alpha1/workspaces/x")),
        "{seen:?}"
    );
    Ok(())
}

/// A minimal HTTP/1.1 server answering the Workspace calls of `kplane ws create --wait`
/// with canned objects; one connection per request. Stopped (and joined) by [`Self::stop`].
struct FakeServer {
    url: String,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Vec<String>>>,
}

impl FakeServer {
    fn start() -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        listener.set_nonblocking(true)?;
        let url = format!("http://{}", listener.local_addr()?);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut seen = Vec::new();
            while !flag.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        if let Ok(line) = answer(stream) {
                            seen.push(line);
                        }
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(10)),
                }
            }
            seen
        });
        Ok(Self {
            url,
            stop,
            thread: Some(thread),
        })
    }

    /// Stops the server; the request lines it answered.
    fn stop(mut self) -> Vec<String> {
        self.stop.store(true, Ordering::SeqCst);
        self.thread
            .take()
            .and_then(|t| t.join().ok())
            .unwrap_or_default()
    }
}

impl Drop for FakeServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Reads one request from `stream` and answers it; returns its request line.
fn answer(stream: TcpStream) -> Result<String> {
    stream.set_nonblocking(false)?;
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut length = 0usize;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header)?;
        if header.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = header.split_once(':') {
            if k.eq_ignore_ascii_case("content-length") {
                length = v.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    let workspace = |phase: &str, conditions: serde_json::Value| {
        serde_json::json!({
            "apiVersion": "tenancy.kplane.io/v1alpha1",
            "kind": "Workspace",
            "metadata": {"name": "x", "uid": "u1", "resourceVersion": "1",
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "status": {"phase": phase, "conditions": conditions},
        })
    };
    let (code, body) = if request_line.starts_with("POST ") {
        (
            "201 Created",
            workspace("Initializing", serde_json::json!([])),
        )
    } else if request_line.contains("/workspaces/x") {
        let failed = serde_json::json!([{"type": "Ready", "status": "False",
            "reason": "TemplateFailed", "message": "applying ConfigMap default/x: invalid"}]);
        ("200 OK", workspace("Failed", failed))
    } else {
        let list = serde_json::json!({"apiVersion": "tenancy.kplane.io/v1alpha1",
            "kind": "WorkspaceList", "metadata": {"resourceVersion": "1"}, "items": []});
        ("200 OK", list)
    };
    let body = body.to_string();
    let mut stream = stream;
    write!(
        stream,
        "HTTP/1.1 {code}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )?;
    stream.flush()?;
    Ok(request_line.trim().to_owned())
}
