//! Running the real `kubectl` against a server, isolated from the user's configuration.
//!
//! Every invocation gets `--kubeconfig`, `--cache-dir` (one directory per kubeconfig, inside the
//! server's scratch directory) and `HOME` pointing into the scratch directory, so neither the
//! user's config nor a stale discovery cache can influence (or hide) anything. Every invocation
//! is bounded by a timeout; a hung kubectl is killed and reported.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use anyhow::{bail, Context as _, Result};

/// Upper bound for one kubectl invocation (namespace deletion waits for the contents).
pub const KUBECTL_TIMEOUT: Duration = Duration::from_secs(90);

/// The result of one kubectl run.
#[derive(Debug)]
pub struct KubectlOutput {
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
}

impl KubectlOutput {
    pub fn success(&self) -> bool {
        self.status.success()
    }
}

/// A kubectl bound to one kubeconfig with an isolated `HOME` and cache directory.
#[derive(Debug, Clone)]
pub struct Kubectl {
    kubeconfig: PathBuf,
    home: PathBuf,
    cache_dir: PathBuf,
}

impl Kubectl {
    pub fn new(kubeconfig: PathBuf, home: PathBuf, cache_dir: PathBuf) -> Self {
        Self {
            kubeconfig,
            home,
            cache_dir,
        }
    }

    pub fn kubeconfig(&self) -> &Path {
        &self.kubeconfig
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("kubectl");
        cmd.arg("--kubeconfig")
            .arg(&self.kubeconfig)
            .arg("--cache-dir")
            .arg(&self.cache_dir)
            .args(args)
            .env("HOME", &self.home)
            .env_remove("KUBECONFIG")
            .env_remove("KUBE_EDITOR")
            .env_remove("EDITOR");
        cmd
    }

    /// Runs `kubectl <args>`.
    pub fn run(&self, args: &[&str]) -> Result<KubectlOutput> {
        self.run_with(args, None, &[])
    }

    /// Runs `kubectl <args>` with `stdin` piped in.
    pub fn run_stdin(&self, args: &[&str], stdin: &str) -> Result<KubectlOutput> {
        self.run_with(args, Some(stdin), &[])
    }

    /// Runs kubectl; fails (with both outputs) unless it exits 0; returns stdout.
    pub fn ok(&self, args: &[&str]) -> Result<String> {
        expect_success(args, self.run(args)?)
    }

    /// [`Kubectl::ok`] with `stdin` piped in.
    pub fn ok_stdin(&self, args: &[&str], stdin: &str) -> Result<String> {
        expect_success(args, self.run_stdin(args, stdin)?)
    }

    /// Runs kubectl with extra environment variables (e.g. `KUBE_EDITOR`).
    pub fn run_with(
        &self,
        args: &[&str],
        stdin: Option<&str>,
        envs: &[(&str, &str)],
    ) -> Result<KubectlOutput> {
        let mut cmd = self.command(args);
        cmd.envs(envs.iter().copied());
        run_bounded(cmd, stdin, KUBECTL_TIMEOUT)
            .with_context(|| format!("kubectl {}", args.join(" ")))
    }

    /// Starts a long-running kubectl (e.g. `get -w`) whose stdout lines can be awaited.
    pub fn spawn_watch(&self, args: &[&str]) -> Result<KubectlWatch> {
        let mut cmd = self.command(args);
        cmd.stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = cmd.spawn().context("spawning kubectl (is it on PATH?)")?;
        let stdout = child.stdout.take().context("kubectl stdout")?;
        let mut stderr = child.stderr.take().context("kubectl stderr")?;
        let (tx, lines) = mpsc::channel();
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr_text = Arc::new(Mutex::new(String::new()));
        let sink = Arc::clone(&stderr_text);
        thread::spawn(move || {
            let mut buf = String::new();
            let _ = stderr.read_to_string(&mut buf);
            if let Ok(mut s) = sink.lock() {
                s.push_str(&buf);
            }
        });
        Ok(KubectlWatch {
            child,
            lines,
            seen: Vec::new(),
            stderr: stderr_text,
        })
    }
}

fn expect_success(args: &[&str], out: KubectlOutput) -> Result<String> {
    if !out.success() {
        bail!(
            "kubectl {} failed ({}):\nstdout: {}\nstderr: {}",
            args.join(" "),
            out.status,
            out.stdout,
            out.stderr
        );
    }
    Ok(out.stdout)
}

fn run_bounded(mut cmd: Command, stdin: Option<&str>, timeout: Duration) -> Result<KubectlOutput> {
    cmd.stdin(if stdin.is_some() {
        Stdio::piped()
    } else {
        Stdio::null()
    })
    .stdout(Stdio::piped())
    .stderr(Stdio::piped());
    let mut child = cmd.spawn().context("spawning kubectl (is it on PATH?)")?;
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        let input = input.to_owned();
        // A writer thread: kubectl may not read all of stdin before it fails.
        thread::spawn(move || {
            let _ = pipe.write_all(input.as_bytes());
        });
    }
    let stdout = reader(child.stdout.take().context("kubectl stdout")?);
    let stderr = reader(child.stderr.take().context("kubectl stderr")?);
    let deadline = Instant::now() + timeout;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            bail!(
                "timed out after {timeout:?}; stdout so far: {}; stderr so far: {}",
                stdout.join().unwrap_or_default(),
                stderr.join().unwrap_or_default()
            );
        }
        thread::sleep(Duration::from_millis(10));
    };
    Ok(KubectlOutput {
        status,
        stdout: stdout.join().unwrap_or_default(),
        stderr: stderr.join().unwrap_or_default(),
    })
}

fn reader(mut pipe: impl std::io::Read + Send + 'static) -> thread::JoinHandle<String> {
    thread::spawn(move || {
        let mut buf = Vec::new();
        let _ = pipe.read_to_end(&mut buf);
        String::from_utf8_lossy(&buf).into_owned()
    })
}

/// A running `kubectl ... -w`; killed on drop.
#[derive(Debug)]
pub struct KubectlWatch {
    child: Child,
    lines: mpsc::Receiver<String>,
    seen: Vec<String>,
    stderr: Arc<Mutex<String>>,
}

impl KubectlWatch {
    /// Waits up to `timeout` for a stdout line satisfying `pred`; earlier lines are skipped
    /// (but kept for the error message).
    pub fn wait_for_line(
        &mut self,
        timeout: Duration,
        what: &str,
        pred: impl Fn(&str) -> bool,
    ) -> Result<String> {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    self.seen.push(line.clone());
                    if pred(&line) {
                        return Ok(line);
                    }
                }
                Err(_) => bail!(
                    "no kubectl watch line with {what} within {timeout:?}; lines so far:\n{}\n\
                     stderr: {}",
                    self.seen.join("\n"),
                    self.stderr()
                ),
            }
        }
    }

    /// Every line received so far.
    pub fn seen(&self) -> &[String] {
        &self.seen
    }

    /// What kubectl wrote to stderr so far.
    pub fn stderr(&self) -> String {
        self.stderr.lock().map(|s| s.clone()).unwrap_or_default()
    }
}

impl Drop for KubectlWatch {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
