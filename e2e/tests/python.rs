//! The official Python client (`kubernetes` on PyPI, pinned in `.ci/run`) against the real
//! binary: the scripts under `e2e/testdata/python/` load a kubeconfig for a logical cluster
//! and exercise typed CRUD (ConfigMaps, a CRD and its custom objects, a Job), list paging
//! with `_continue`, watches (also once history expired: 410), the DynamicClient with
//! server-side apply, and authentication and authorization (anonymous 401, a ServiceAccount
//! token confined to its cluster).
//!
//! Each script exits non-zero with a message on the first mismatch; this module passes the
//! server's addresses and credentials through environment variables and fails with the
//! script's output. A missing client is a failure with the install command, never a skip.

use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _, Result};
use kplane_e2e::{KplaneServer, ServerOptions};

/// The client version `.ci/run` installs (Kubernetes 1.32's).
const PYTHON_CLIENT: &str = "kubernetes==32.0.1";
/// A hung script is killed after this long (a guard, not an assertion about speed).
const SCRIPT_LIMIT: Duration = Duration::from_secs(600);
/// ConfigMaps the paging script creates: more than two pages of 500.
const PAGED_OBJECTS: &str = "1101";

fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("testdata/python")
}

/// Fails (with the install command) unless `python3` imports the `kubernetes` package.
fn require_python_client() -> Result<String> {
    let install =
        format!("install it with `python3 -m pip install --quiet {PYTHON_CLIENT}` (`make test` installs it: scripts/test-tools.sh)");
    let out = Command::new("python3")
        .args(["-c", "import kubernetes; print(kubernetes.__version__)"])
        .output()
        .with_context(|| {
            format!("running python3 (is it on PATH?) for the Python client tests; {install}")
        })?;
    if !out.status.success() {
        bail!(
            "the official Python Kubernetes client is not importable by python3: {install}\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Runs `python3 <script>` from the scripts directory with `env`; fails with its output
/// unless it exits 0.
pub(crate) fn run_script(script: &str, env: &[(&str, OsString)]) -> Result<()> {
    let version = require_python_client()?;
    let tmp = tempfile::Builder::new()
        .prefix("kplane-e2e-python-")
        .tempdir()?;
    let stdout_path = tmp.path().join("stdout");
    let stderr_path = tmp.path().join("stderr");
    let mut command = Command::new("python3");
    command
        .arg(scripts_dir().join(script))
        .current_dir(scripts_dir())
        // No __pycache__ in the source tree; the client's temporary CA files in our dir.
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("PYTHONUNBUFFERED", "1")
        .env("TMPDIR", tmp.path())
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&stdout_path)?)
        .stderr(std::fs::File::create(&stderr_path)?);
    for (key, value) in env {
        command.env(key, value);
    }
    let mut child = command
        .spawn()
        .with_context(|| format!("spawning python3 {script}"))?;
    let deadline = Instant::now() + SCRIPT_LIMIT;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() > deadline {
            child.kill().ok();
            child.wait().ok();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let stdout = std::fs::read_to_string(&stdout_path).unwrap_or_default();
    let stderr = std::fs::read_to_string(&stderr_path).unwrap_or_default();
    match status {
        None => bail!(
            "{script} (Python client {version}) ran longer than {SCRIPT_LIMIT:?} and was killed\n\
             stdout:\n{stdout}\nstderr:\n{stderr}"
        ),
        Some(status) => ensure!(
            status.success() && stdout.trim_end().ends_with("ok"),
            "{script} (Python client {version}) failed ({status})\n\
             stdout:\n{stdout}\nstderr:\n{stderr}"
        ),
    }
    Ok(())
}

/// The environment of the scripts that work in one logical cluster as its admin.
fn cluster_env(server: &KplaneServer, cluster: &str) -> Result<Vec<(&'static str, OsString)>> {
    Ok(vec![
        (
            "KPLANE_KUBECONFIG",
            server.kubeconfig_for_cluster(cluster)?.into_os_string(),
        ),
        ("KPLANE_BASE_URL", server.base_url().into()),
        ("KPLANE_CLUSTER", cluster.into()),
    ])
}

/// Fails if the root cluster has namespace `ns`: what a script made stays in its cluster.
fn absent_from_root(server: &KplaneServer, ns: &str) -> Result<()> {
    let out = server.kubectl(&["get", "namespace", ns])?;
    ensure!(
        !out.success() && out.stderr.contains("NotFound"),
        "namespace {ns} leaked into root: {} {}",
        out.stdout,
        out.stderr
    );
    Ok(())
}

#[test]
fn python_client_crud_crd_job_and_server_side_apply() -> Result<()> {
    require_python_client()?;
    let server = KplaneServer::start()?;
    server.create_workspace("root:acme")?;
    let env = cluster_env(&server, "root:acme")?;
    run_script("crud.py", &env)?;
    run_script("ssa.py", &env)?;

    // What Python made is in root:acme (seen by kubectl there) and not in root.
    let acme = server.kubectl_for("root:acme")?;
    acme.ok(&["get", "namespace", "py-crud", "py-ssa"])?;
    acme.ok(&["get", "crd", "widgets.example.com"])?;
    absent_from_root(&server, "py-crud")?;
    absent_from_root(&server, "py-ssa")?;
    let out = server.kubectl(&["get", "crd", "widgets.example.com"])?;
    ensure!(!out.success(), "the CRD leaked into root: {}", out.stdout);
    Ok(())
}

#[test]
fn python_client_paging_and_watches() -> Result<()> {
    require_python_client()?;
    let server = KplaneServer::start()?;
    server.create_workspace("root:acme")?;
    let mut env = cluster_env(&server, "root:acme")?;
    env.push(("KPLANE_OBJECTS", PAGED_OBJECTS.into()));
    run_script("paging.py", &env)?;
    run_script("watch.py", &env)?;
    absent_from_root(&server, "py-paging")?;
    absent_from_root(&server, "py-watch")?;
    Ok(())
}

#[test]
fn python_client_after_history_expired() -> Result<()> {
    require_python_client()?;
    // History of one second: the script writes until an old resourceVersion is gone.
    let server =
        KplaneServer::start_with(ServerOptions::default().arg("--event-window-seconds=1"))?;
    server.create_workspace("root:acme")?;
    run_script("expiry.py", &cluster_env(&server, "root:acme")?)
}

#[test]
fn python_client_authentication_and_tenant_isolation() -> Result<()> {
    require_python_client()?;
    let server = KplaneServer::start()?;
    server.create_workspaces(&["root:a", "root:b"])?;
    for cluster in ["root:a", "root:b"] {
        let kubectl = server.kubectl_for(cluster)?;
        kubectl.ok(&[
            "create",
            "configmap",
            "one",
            &format!("--from-literal=cluster={cluster}"),
        ])?;
        // The same names in both clusters: root:b's binding must not count for root:a's SA.
        kubectl.ok(&["create", "serviceaccount", "reader"])?;
        kubectl.ok(&[
            "create",
            "rolebinding",
            "reader",
            "--clusterrole=view",
            "--serviceaccount=default:reader",
        ])?;
    }
    let token = server
        .kubectl_for("root:a")?
        .ok(&["create", "token", "reader", "--duration", "10m"])?
        .trim()
        .to_string();
    ensure!(token.split('.').count() == 3, "not a JWT: {token}");
    let env = vec![
        (
            "KPLANE_ADMIN_KUBECONFIG",
            server.kubeconfig().as_os_str().to_owned(),
        ),
        ("KPLANE_BASE_URL", server.base_url().into()),
        ("KPLANE_SA_TOKEN", token.into()),
        ("KPLANE_OWN_CLUSTER", "root:a".into()),
        ("KPLANE_OTHER_CLUSTER", "root:b".into()),
    ];
    run_script("auth.py", &env)
}
