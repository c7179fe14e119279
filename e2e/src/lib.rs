//! End-to-end test support: starts the real `kplane` binary and drives it with real clients.
//!
//! [`KplaneServer`] owns one server process plus a scratch directory holding its data directory,
//! its log (stdout and stderr), an isolated `HOME` and per-kubeconfig kubectl cache directories.
//! Every test starts its own server on a port the OS picks (`--bind 127.0.0.1:0`), so tests run
//! in parallel without sharing anything.
//!
//! What this crate must never do: leave a process, a port or a directory behind. `Drop` stops the
//! server (SIGTERM, then SIGKILL after a grace period) and removes the scratch directory, also
//! when the test panics; it prints the tail of the server log, which the test harness shows only
//! for failing tests.
//!
//! The clients are the real ones: `kubectl` from `PATH` (see [`Kubectl`]) and [`kube::Client`].

mod base64;
pub mod fixtures;
mod kubectl;
mod table;

use std::ffi::OsString;
use std::fs::{self, OpenOptions};
use std::future::Future;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};
use kube::config::{KubeConfigOptions, Kubeconfig};

pub use crate::base64::{decode as base64_decode, encode as base64_encode};
pub use crate::kubectl::{Kubectl, KubectlOutput, KubectlWatch};
pub use crate::table::Table;

/// How long the server may take to write `admin.kubeconfig` after it was spawned.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a SIGTERM'd server may take to exit before it is SIGKILLed.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(5);
/// Lines of the server log printed when a server is dropped (shown for failing tests only).
const LOG_TAIL_LINES: usize = 60;

/// The path of the `kplane` binary: `$KPLANE_BIN`, else `<workspace>/target/debug/kplane`.
pub fn kplane_bin() -> Result<PathBuf> {
    let path = match std::env::var_os("KPLANE_BIN") {
        Some(path) => PathBuf::from(path),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/debug/kplane"),
    };
    if !path.is_file() {
        bail!(
            "kplane binary not found at {}: build it with `cargo build -p kplane` \
             or point KPLANE_BIN at it",
            path.display()
        );
    }
    Ok(path)
}

/// Extra settings for [`KplaneServer::start_with`].
#[derive(Debug, Default, Clone)]
pub struct ServerOptions {
    args: Vec<OsString>,
    data_dir: Option<PathBuf>,
    /// Environment changes applied after the harness's own (`None` removes the variable).
    env: Vec<(OsString, Option<OsString>)>,
}

impl ServerOptions {
    /// Appends an argument after `serve --data-dir D --bind 127.0.0.1:0`.
    #[must_use]
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// Sets an environment variable of the server (after the harness's `NO_COLOR=1`).
    #[must_use]
    pub fn env(mut self, key: impl Into<OsString>, value: impl Into<OsString>) -> Self {
        self.env.push((key.into(), Some(value.into())));
        self
    }

    /// Removes an environment variable from the server's environment (also `NO_COLOR`).
    #[must_use]
    pub fn env_remove(mut self, key: impl Into<OsString>) -> Self {
        self.env.push((key.into(), None));
        self
    }

    /// Uses an existing data directory (owned by the caller; it is not removed on drop).
    #[must_use]
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
        self
    }
}

/// Where a running server answers and how to authenticate, read from its `admin.kubeconfig`.
#[derive(Debug, Default, Clone)]
struct Endpoint {
    /// `https://127.0.0.1:<port>`, without any cluster prefix.
    base_url: String,
    /// The kubeconfig's server URL, e.g. `https://127.0.0.1:<port>/clusters/root`.
    server_url: String,
    /// Base64 PEM, as in the kubeconfig's `certificate-authority-data`.
    ca_data: String,
    token: String,
}

/// One `kplane serve` process with its own scratch directory. See the crate docs.
#[derive(Debug)]
pub struct KplaneServer {
    child: Option<Child>,
    bin: PathBuf,
    args: Vec<OsString>,
    env: Vec<(OsString, Option<OsString>)>,
    data_dir: PathBuf,
    log_path: PathBuf,
    scratch: PathBuf,
    endpoint: Endpoint,
    kubectl: Kubectl,
    starts: u32,
    /// Removed last (fields drop in declaration order, after `Drop::drop`).
    _tempdir: tempfile::TempDir,
}

impl KplaneServer {
    /// Starts a server on a fresh data directory and waits until it is ready.
    pub fn start() -> Result<Self> {
        Self::start_with(ServerOptions::default())
    }

    /// Starts a server with extra arguments and/or an existing data directory.
    pub fn start_with(options: ServerOptions) -> Result<Self> {
        let bin = kplane_bin()?;
        let tempdir = tempfile::Builder::new()
            .prefix("kplane-e2e-")
            .tempdir()
            .context("creating the scratch directory")?;
        let scratch = tempdir.path().to_path_buf();
        let data_dir = match options.data_dir {
            Some(dir) => dir,
            None => scratch.join("data"),
        };
        fs::create_dir_all(&data_dir)
            .with_context(|| format!("creating data dir {}", data_dir.display()))?;
        let home = scratch.join("home");
        fs::create_dir_all(&home).context("creating HOME for kubectl")?;
        let kubectl = Kubectl::new(
            data_dir.join("admin.kubeconfig"),
            home,
            scratch.join("kubectl-cache").join("admin"),
        );
        let mut server = Self {
            child: None,
            bin,
            args: options.args,
            env: options.env,
            data_dir,
            log_path: scratch.join("server.log"),
            scratch,
            endpoint: Endpoint::default(),
            kubectl,
            starts: 0,
            _tempdir: tempdir,
        };
        server.spawn()?;
        Ok(server)
    }

    /// Stops the server if it runs (gracefully) and starts it again on the same data directory
    /// and port, so clients made before the restart (a kube-rs watcher) reach it again.
    pub fn restart(&mut self) -> Result<()> {
        if self.child.is_some() {
            self.stop()?;
        }
        self.spawn()
    }

    fn spawn(&mut self) -> Result<()> {
        let kubeconfig = self.kubeconfig().to_path_buf();
        // A stale file from a previous run must not be mistaken for readiness.
        match fs::remove_file(&kubeconfig) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).context("removing the previous admin.kubeconfig"),
        }
        self.starts += 1;
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log_path)
            .context("opening the server log")?;
        writeln!(log, "==== kplane-e2e: start #{} ====", self.starts)?;
        // A restart binds the port of the previous start.
        let bind = match self.endpoint.base_url.rsplit_once(':') {
            Some((_, port)) if !port.is_empty() => format!("127.0.0.1:{port}"),
            _ => "127.0.0.1:0".to_string(),
        };
        let mut command = Command::new(&self.bin);
        command
            .arg("serve")
            .arg("--data-dir")
            .arg(&self.data_dir)
            .arg("--bind")
            .arg(&bind)
            .args(&self.args)
            .env("NO_COLOR", "1")
            .env_remove("KPLANE_DATA_DIR")
            .env_remove("KPLANE_BIND")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log);
        for (key, value) in &self.env {
            match value {
                Some(v) => command.env(key, v),
                None => command.env_remove(key),
            };
        }
        let child = command
            .spawn()
            .with_context(|| format!("spawning {}", self.bin.display()))?;
        self.child = Some(child);
        self.wait_ready(&kubeconfig)
    }

    fn wait_ready(&mut self, kubeconfig: &Path) -> Result<()> {
        let deadline = Instant::now() + STARTUP_TIMEOUT;
        loop {
            if kubeconfig.is_file() {
                if let Ok(endpoint) = read_endpoint(kubeconfig) {
                    self.endpoint = endpoint;
                    return Ok(());
                }
            }
            if let Some(child) = self.child.as_mut() {
                if let Some(status) = child.try_wait()? {
                    self.child = None;
                    bail!(
                        "kplane exited during startup ({status}); log tail:\n{}",
                        self.log_tail(LOG_TAIL_LINES)
                    );
                }
            }
            if Instant::now() > deadline {
                bail!(
                    "kplane did not write {} within {:?}; log tail:\n{}",
                    kubeconfig.display(),
                    STARTUP_TIMEOUT,
                    self.log_tail(LOG_TAIL_LINES)
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The process id of the running server.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Sends SIGTERM (graceful shutdown) without waiting.
    pub fn sigterm(&self) -> Result<()> {
        let Some(pid) = self.pid() else {
            bail!("the server is not running");
        };
        let status = Command::new("kill")
            .arg("-TERM")
            .arg(pid.to_string())
            .status()
            .context("running kill -TERM")?;
        if !status.success() {
            bail!("kill -TERM {pid} failed: {status}");
        }
        Ok(())
    }

    /// Kills the server with SIGKILL (no graceful shutdown) and reaps it.
    pub fn kill(&mut self) -> Result<ExitStatus> {
        let Some(mut child) = self.child.take() else {
            bail!("the server is not running");
        };
        child.kill().context("sending SIGKILL")?;
        child.wait().context("reaping the killed server")
    }

    /// Waits up to `timeout` for the server to exit; `None` if it still runs.
    pub fn wait_for_exit(&mut self, timeout: Duration) -> Result<Option<ExitStatus>> {
        let deadline = Instant::now() + timeout;
        loop {
            let Some(child) = self.child.as_mut() else {
                bail!("the server is not running");
            };
            if let Some(status) = child.try_wait()? {
                self.child = None;
                return Ok(Some(status));
            }
            if Instant::now() > deadline {
                return Ok(None);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// SIGTERM, wait up to [`SHUTDOWN_GRACE`], then SIGKILL. Returns how the process ended.
    pub fn stop(&mut self) -> Result<ExitStatus> {
        if self.child.is_none() {
            bail!("the server is not running");
        }
        if self.sigterm().is_ok() {
            if let Some(status) = self.wait_for_exit(SHUTDOWN_GRACE)? {
                return Ok(status);
            }
        }
        self.kill()
    }

    /// `DATA_DIR/admin.kubeconfig`, as written by the server.
    pub fn kubeconfig(&self) -> &Path {
        self.kubectl.kubeconfig()
    }

    /// `https://127.0.0.1:<port>` (no cluster prefix).
    pub fn base_url(&self) -> &str {
        &self.endpoint.base_url
    }

    /// The kubeconfig's server URL (`<base_url>/clusters/root`).
    pub fn server_url(&self) -> &str {
        &self.endpoint.server_url
    }

    /// The admin bearer token.
    pub fn token(&self) -> &str {
        &self.endpoint.token
    }

    /// The CA that signed the serving certificate, PEM.
    pub fn ca_pem(&self) -> Result<String> {
        let bytes = base64_decode(&self.endpoint.ca_data).context("decoding the CA")?;
        String::from_utf8(bytes).context("CA is not UTF-8 PEM")
    }

    /// The data directory passed as `--data-dir`.
    pub fn data_dir(&self) -> &Path {
        &self.data_dir
    }

    /// The last `lines` lines of the server's stdout and stderr.
    pub fn log_tail(&self, lines: usize) -> String {
        let text = fs::read_to_string(&self.log_path).unwrap_or_default();
        let all: Vec<&str> = text.lines().collect();
        all[all.len().saturating_sub(lines)..].join("\n")
    }

    /// kubectl bound to `admin.kubeconfig` (logical cluster `root`).
    pub fn kubectl_root(&self) -> &Kubectl {
        &self.kubectl
    }

    /// Runs `kubectl --kubeconfig admin.kubeconfig <args>`.
    pub fn kubectl(&self, args: &[&str]) -> Result<KubectlOutput> {
        self.kubectl.run(args)
    }

    /// Runs kubectl, fails unless it exits 0, returns its stdout.
    pub fn kubectl_ok(&self, args: &[&str]) -> Result<String> {
        self.kubectl.ok(args)
    }

    /// Runs kubectl with `stdin` piped in (for `apply -f -`, `create -f -`).
    pub fn kubectl_stdin(&self, args: &[&str], stdin: &str) -> Result<KubectlOutput> {
        self.kubectl.run_stdin(args, stdin)
    }

    /// Writes a kubeconfig whose server URL is `<base_url>/clusters/<cluster>` (same CA and token).
    pub fn kubeconfig_for_cluster(&self, cluster: &str) -> Result<PathBuf> {
        let path = self
            .scratch
            .join(format!("{}.kubeconfig", sanitize(cluster)));
        let url = format!("{}/clusters/{cluster}", self.endpoint.base_url);
        fs::write(&path, self.kubeconfig_text(&url))
            .with_context(|| format!("writing {}", path.display()))?;
        Ok(path)
    }

    /// kubectl bound to a logical cluster, with its own discovery cache directory.
    pub fn kubectl_for(&self, cluster: &str) -> Result<Kubectl> {
        let kubeconfig = self.kubeconfig_for_cluster(cluster)?;
        Ok(Kubectl::new(
            kubeconfig,
            self.scratch.join("home"),
            self.scratch.join("kubectl-cache").join(sanitize(cluster)),
        ))
    }

    /// Creates logical cluster `path` (e.g. `root:acme:team-a`) as users do: applies a
    /// Workspace named after its last segment in its parent (which must exist) and waits
    /// until it is Ready.
    pub fn create_workspace(&self, path: &str) -> Result<()> {
        let Some((parent, name)) = path.rsplit_once(':') else {
            bail!("{path} has no parent workspace");
        };
        let kubectl = self.kubectl_for(parent)?;
        let manifest = format!(
            "apiVersion: tenancy.kplane.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: {name}\n"
        );
        let out = kubectl.run_stdin(&["apply", "-f", "-"], &manifest)?;
        if !out.success() {
            bail!("creating workspace {path}: {}", out.stderr);
        }
        kubectl
            .ok(&[
                "wait",
                "--for=jsonpath={.status.phase}=Ready",
                &format!("workspace/{name}"),
                "--timeout=30s",
            ])
            .with_context(|| format!("waiting for workspace {path}"))?;
        Ok(())
    }

    /// [`KplaneServer::create_workspace`] for each path, in order (parents first).
    pub fn create_workspaces(&self, paths: &[&str]) -> Result<()> {
        paths.iter().try_for_each(|p| self.create_workspace(p))
    }

    /// A kube-rs client from `admin.kubeconfig`.
    pub async fn client(&self) -> Result<kube::Client> {
        let kubeconfig = Kubeconfig::read_from(self.kubeconfig()).context("reading kubeconfig")?;
        client_from(kubeconfig).await
    }

    /// A kube-rs client for the logical cluster `cluster` (`<base_url>/clusters/<cluster>`).
    pub async fn client_for(&self, cluster: &str) -> Result<kube::Client> {
        let url = format!("{}/clusters/{cluster}", self.endpoint.base_url);
        self.client_at(&url).await
    }

    /// A kube-rs client whose requests carry no `/clusters/...` prefix at all.
    pub async fn client_unprefixed(&self) -> Result<kube::Client> {
        let url = self.endpoint.base_url.clone();
        self.client_at(&url).await
    }

    /// A kube-rs client for `<base_url><path>` (e.g. a sync endpoint's
    /// `/services/sync/<cluster>/<target>/clusters/*`) presenting `token` instead of the
    /// admin's.
    pub async fn client_with_token(&self, path: &str, token: &str) -> Result<kube::Client> {
        let text = serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "kplane", "cluster": {
                "server": format!("{}{path}", self.endpoint.base_url),
                "certificate-authority-data": self.endpoint.ca_data,
            }}],
            "users": [{"name": "user", "user": {"token": token}}],
            "contexts": [{"name": "kplane", "context": {"cluster": "kplane", "user": "user"}}],
            "current-context": "kplane",
        })
        .to_string();
        let kubeconfig = Kubeconfig::from_yaml(&text).context("parsing generated kubeconfig")?;
        client_from(kubeconfig).await
    }

    async fn client_at(&self, server_url: &str) -> Result<kube::Client> {
        let kubeconfig = Kubeconfig::from_yaml(&self.kubeconfig_text(server_url))
            .context("parsing generated kubeconfig")?;
        client_from(kubeconfig).await
    }

    /// A kubeconfig (JSON, which is valid YAML) for `server_url` with this server's CA and token.
    fn kubeconfig_text(&self, server_url: &str) -> String {
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "kplane", "cluster": {
                "server": server_url,
                "certificate-authority-data": self.endpoint.ca_data,
            }}],
            "users": [{"name": "admin", "user": {"token": self.endpoint.token}}],
            "contexts": [{"name": "kplane", "context": {"cluster": "kplane", "user": "admin"}}],
            "current-context": "kplane",
        })
        .to_string()
    }
}

impl Drop for KplaneServer {
    fn drop(&mut self) {
        if self.child.is_some() {
            if let Err(e) = self.stop() {
                eprintln!("kplane-e2e: stopping the server failed: {e:#}");
            }
        }
        // Captured by the test harness: shown only when the test fails.
        eprintln!(
            "---- kplane server log (last {LOG_TAIL_LINES} lines) ----\n{}\n---- end of server log ----",
            self.log_tail(LOG_TAIL_LINES)
        );
    }
}

async fn client_from(kubeconfig: Kubeconfig) -> Result<kube::Client> {
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .context("building kube config")?;
    kube::Client::try_from(config).context("building kube client")
}

fn read_endpoint(path: &Path) -> Result<Endpoint> {
    let kubeconfig = Kubeconfig::read_from(path).context("reading admin.kubeconfig")?;
    // Serialising exposes the token (kube keeps it in a SecretString).
    let value = serde_json::to_value(&kubeconfig)?;
    let cluster = &value["clusters"][0]["cluster"];
    let server_url = cluster["server"]
        .as_str()
        .context("kubeconfig has no server URL")?
        .to_owned();
    let ca_data = cluster["certificate-authority-data"]
        .as_str()
        .context("kubeconfig has no certificate-authority-data")?
        .to_owned();
    let token = value["users"][0]["user"]["token"]
        .as_str()
        .context("kubeconfig has no token")?
        .to_owned();
    let base_url = match server_url.find("/clusters/") {
        Some(i) => server_url[..i].to_owned(),
        None => server_url.trim_end_matches('/').to_owned(),
    };
    Ok(Endpoint {
        base_url,
        server_url,
        ca_data,
        token,
    })
}

fn sanitize(name: &str) -> String {
    name.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
        .collect()
}

/// Polls `check` every 50 ms until it returns `Ok(true)`; fails after `timeout` with `what` and
/// the last error seen.
pub fn poll_until(
    timeout: Duration,
    what: &str,
    mut check: impl FnMut() -> Result<bool>,
) -> Result<()> {
    let deadline = Instant::now() + timeout;
    loop {
        let last = check();
        if matches!(last, Ok(true)) {
            return Ok(());
        }
        if Instant::now() > deadline {
            let detail = match last {
                Err(e) => format!("; last error: {e:#}"),
                _ => String::new(),
            };
            bail!("timed out after {timeout:?} waiting for {what}{detail}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Async [`poll_until`].
pub async fn eventually<F, Fut>(timeout: Duration, what: &str, mut check: F) -> Result<()>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<bool>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        let last = check().await;
        if matches!(last, Ok(true)) {
            return Ok(());
        }
        if Instant::now() > deadline {
            let detail = match last {
                Err(e) => format!("; last error: {e:#}"),
                _ => String::new(),
            };
            bail!("timed out after {timeout:?} waiting for {what}{detail}");
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

const ONE_CONFIGMAP_ROLE: &str = "apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: one-configmap
  namespace: default
rules:
- apiGroups: [\"\"]
  resources: [configmaps]
  verbs: [get]
  resourceNames: [one]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: one-configmap
  namespace: default
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: one-configmap
subjects:
- kind: SUBJECT_KIND
  name: SUBJECT
  apiGroup: rbac.authorization.k8s.io
";

/// A Role `one-configmap` in namespace `default` allowing `get` of the ConfigMap `one` only
/// (resourceNames), and its RoleBinding to `subject` of `kind` (`User`, `Group`).
pub fn one_configmap_role(kind: &str, subject: &str) -> String {
    ONE_CONFIGMAP_ROLE
        .replace("SUBJECT_KIND", kind)
        .replace("SUBJECT", subject)
}
