//! A throwaway PostgreSQL server for tests (the `testing` feature): `initdb` into a
//! temporary directory, `postgres` on a free port of 127.0.0.1 with its socket in that
//! directory, one database per test, everything stopped and removed when the
//! [`PgServer`] is dropped (also when a test panics).
//!
//! `initdb` and `postgres` refuse to run as root: as root, the server runs as the
//! `postgres` user (the temporary directory is handed to it); otherwise as the current
//! user. The binaries are found through `$KPLANE_PG_BINDIR`, `pg_config --bindir` or
//! `/usr/lib/postgresql/*/bin`. [`PgServer::available`] tells whether they are installed,
//! so a test can skip (loudly) on a machine without PostgreSQL.

use std::net::TcpListener;
use std::os::unix::fs::MetadataExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// How long the server gets to start or stop.
const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A running throwaway PostgreSQL server.
pub struct PgServer {
    child: Option<Child>,
    port: u16,
    bindir: PathBuf,
    /// Holds the data directory and the socket; removed last.
    dir: Option<tempfile::TempDir>,
    user: Option<(u32, u32)>,
    databases: AtomicU32,
}

/// The directory holding `initdb` and `postgres`, if PostgreSQL is installed.
pub fn bindir() -> Option<PathBuf> {
    let ok = |d: &Path| d.join("initdb").is_file() && d.join("postgres").is_file();
    if let Some(d) = std::env::var_os("KPLANE_PG_BINDIR").map(PathBuf::from) {
        return ok(&d).then_some(d);
    }
    if let Ok(out) = Command::new("pg_config").arg("--bindir").output() {
        let d = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        if out.status.success() && ok(&d) {
            return Some(d);
        }
    }
    let mut versions: Vec<PathBuf> = std::fs::read_dir("/usr/lib/postgresql")
        .ok()?
        .filter_map(|e| e.ok().map(|e| e.path().join("bin")))
        .filter(|d| ok(d))
        .collect();
    versions.sort();
    versions.pop()
}

/// The uid and gid of `name`, from `id`.
fn ids_of(name: &str) -> Option<(u32, u32)> {
    let id = |flag: &str| -> Option<u32> {
        let out = Command::new("id").args([flag, name]).output().ok()?;
        String::from_utf8_lossy(&out.stdout).trim().parse().ok()
    };
    Some((id("-u")?, id("-g")?))
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("no free port")
}

impl PgServer {
    /// Whether PostgreSQL's server binaries are installed here.
    pub fn available() -> bool {
        bindir().is_some()
    }

    /// Initializes and starts a server; panics (failing the test) if it cannot.
    pub fn start() -> PgServer {
        let bindir = bindir().expect("PostgreSQL is not installed (initdb/postgres not found)");
        let dir = tempfile::Builder::new()
            .prefix("kplane-pg-")
            .tempdir()
            .expect("temp dir");
        let root = std::fs::metadata("/proc/self").map(|m| m.uid()).ok() == Some(0);
        let user = if root {
            let ids = ids_of("postgres").expect("running as root needs a `postgres` user");
            std::os::unix::fs::chown(dir.path(), Some(ids.0), Some(ids.1)).expect("chown");
            Some(ids)
        } else {
            None
        };
        let mut server = PgServer {
            child: None,
            port: 0,
            bindir,
            dir: Some(dir),
            user,
            databases: AtomicU32::new(0),
        };
        let data = server.path().join("data");
        let status = server
            .command("initdb")
            .args(["-D"])
            .arg(&data)
            .args([
                "-U",
                "postgres",
                "--auth=trust",
                "-E",
                "UTF8",
                "--locale=C",
                "--no-sync",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .status()
            .expect("run initdb");
        assert!(status.success(), "initdb failed: {status}");
        // A port can be taken between choosing and binding it: try a few.
        for _ in 0..5 {
            if server.spawn(free_port()) {
                return server;
            }
        }
        panic!("PostgreSQL did not start");
    }

    /// Starts `postgres` on `port` and waits until it accepts connections.
    fn spawn(&mut self, port: u16) -> bool {
        let data = self.path().join("data");
        let child = self
            .command("postgres")
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string(), "-h", "127.0.0.1", "-k"])
            .arg(self.path())
            // A test server: durability is not what the tests check, speed is.
            .args(["-c", "fsync=off", "-c", "synchronous_commit=off"])
            .args(["-c", "full_page_writes=off", "-c", "max_connections=200"])
            .args(["-c", "shared_buffers=32MB"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("run postgres");
        self.child = Some(child);
        self.port = port;
        if self.wait_ready() {
            return true;
        }
        self.stop();
        false
    }

    /// Starts the stopped server again on the same data and port (a database restart
    /// or failover as clients see it).
    pub fn restart(&mut self) {
        self.stop();
        self.resume();
    }

    /// Starts the server again on the same data and port after [`PgServer::stop`] (a
    /// database that was down for a while, as clients see it); panics if it cannot.
    pub fn resume(&mut self) {
        assert!(self.child.is_none(), "PostgreSQL is running");
        assert!(self.spawn(self.port), "PostgreSQL did not start again");
    }

    fn path(&self) -> &Path {
        self.dir
            .as_ref()
            .map_or(Path::new("/nonexistent"), |d| d.path())
    }

    /// A command of the server's binaries, as the server's user.
    fn command(&self, bin: &str) -> Command {
        let mut cmd = Command::new(self.bindir.join(bin));
        if let Some((uid, gid)) = self.user {
            cmd.uid(uid).gid(gid);
            cmd.env("HOME", self.path());
        }
        cmd.current_dir(self.path());
        cmd
    }

    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + START_TIMEOUT;
        while Instant::now() < deadline {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(_)) = child.try_wait() {
                    return false;
                }
            }
            let ready = self
                .command("pg_isready")
                .args(["-h", "127.0.0.1", "-p", &self.port.to_string(), "-q"])
                .status()
                .is_ok_and(|s| s.success());
            if ready {
                return true;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        false
    }

    /// The server's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The address of database `db` on this server.
    pub fn url(&self, db: &str) -> String {
        format!("postgres://postgres@127.0.0.1:{}/{db}", self.port)
    }

    /// Creates a new, empty database and returns its address.
    pub fn create_database(&self) -> String {
        let n = self.databases.fetch_add(1, Ordering::Relaxed);
        let name = format!("kplane_test_{n}");
        let status = self
            .command("createdb")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
            ])
            .arg(&name)
            .status()
            .expect("run createdb");
        assert!(status.success(), "createdb failed: {status}");
        self.url(&name)
    }

    /// Stops the server (fast shutdown: open connections are ended) and waits for it.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // SIGINT is PostgreSQL's fast shutdown.
        let _ = Command::new("kill")
            .args(["-INT", &child.id().to_string()])
            .status();
        let deadline = Instant::now() + START_TIMEOUT;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        self.stop();
        if let Some(dir) = self.dir.take() {
            let _ = dir.close();
        }
    }
}
