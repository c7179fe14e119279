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
//!
//! For failover tests, [`PgServer::standby`] makes a hot standby of a server by streaming
//! replication, [`PgServer::make_synchronous`] makes the primary's commits wait for it,
//! [`PgServer::kill`] crashes a server and [`PgServer::promote`] turns a standby into the
//! primary.

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
    /// `name=value` server settings given after the defaults (they override them).
    settings: Vec<String>,
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

    /// Fails the calling test when PostgreSQL is not installed: the PostgreSQL tests fail
    /// rather than skip without it (`.ci/run` installs it, `make test` checks for it).
    pub fn require() {
        assert!(
            PgServer::available(),
            "PostgreSQL is not installed: apt-get install postgresql (.ci/run does)"
        );
    }

    /// [`PgServer::require`], then [`PgServer::start`].
    pub fn start_required() -> PgServer {
        PgServer::require();
        PgServer::start()
    }

    /// Initializes and starts a server; panics (failing the test) if it cannot.
    pub fn start() -> PgServer {
        PgServer::start_with(&[])
    }

    /// [`PgServer::start`] with extra server settings (`name=value`, each passed as
    /// `-c`, after and over the defaults: e.g. `synchronous_commit=on`).
    pub fn start_with(settings: &[&str]) -> PgServer {
        let mut server = PgServer::new_dir(settings);
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
        server.spawn_on_free_port();
        server
    }

    /// A server in a new temporary directory, not started yet.
    fn new_dir(settings: &[&str]) -> PgServer {
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
        PgServer {
            child: None,
            port: 0,
            bindir,
            dir: Some(dir),
            user,
            databases: AtomicU32::new(0),
            settings: settings.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// Starts the server on a free port; panics if it cannot.
    fn spawn_on_free_port(&mut self) {
        // A port can be taken between choosing and binding it: try a few.
        for _ in 0..5 {
            if self.spawn(free_port()) {
                return;
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
            .args(self.settings.iter().flat_map(|s| ["-c", s.as_str()]))
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

    /// Runs one SQL statement in the `postgres` database with `psql` and returns what it
    /// printed (unaligned, tuples only); panics if it fails.
    pub fn sql(&self, statement: &str) -> String {
        let out = self
            .command("psql")
            .args(["-h", "127.0.0.1", "-p", &self.port.to_string()])
            .args(["-U", "postgres", "-d", "postgres", "-X", "-q", "-t", "-A"])
            .args(["-v", "ON_ERROR_STOP=1", "-c", statement])
            .stderr(Stdio::inherit())
            .output()
            .expect("run psql");
        assert!(out.status.success(), "psql failed on {statement:?}");
        String::from_utf8_lossy(&out.stdout).trim().to_string()
    }

    /// Sets a server setting with `ALTER SYSTEM` and reloads the configuration (for
    /// settings that a reload applies and that are not given on the command line).
    pub fn set(&self, name: &str, value: &str) {
        self.sql(&format!("ALTER SYSTEM SET {name} = '{value}'"));
        self.sql("SELECT pg_reload_conf()");
    }

    /// A hot standby of this server: `pg_basebackup -R` (streaming replication, the
    /// WAL streamed during the copy) into a new temporary directory, started on a free
    /// port with this server's settings; returns once it streams from this server. Call
    /// [`PgServer::make_synchronous`] on this server to make its commits wait for it.
    pub fn standby(&self) -> PgServer {
        let settings: Vec<&str> = self.settings.iter().map(String::as_str).collect();
        let mut standby = PgServer::new_dir(&settings);
        let data = standby.path().join("data");
        let status = standby
            .command("pg_basebackup")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "postgres",
            ])
            .arg("-D")
            .arg(&data)
            .args(["-R", "-X", "stream", "--no-sync", "-c", "fast"])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .status()
            .expect("run pg_basebackup");
        assert!(status.success(), "pg_basebackup failed: {status}");
        standby.spawn_on_free_port();
        let deadline = Instant::now() + START_TIMEOUT;
        while standby.sql("SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming'")
            != "1"
        {
            assert!(Instant::now() < deadline, "the standby does not stream");
            std::thread::sleep(Duration::from_millis(50));
        }
        standby
    }

    /// Makes every commit on this server wait until a standby flushed it
    /// (`synchronous_standby_names = '*'`; the server must run with
    /// `synchronous_commit=on`, e.g. from [`PgServer::start_with`]).
    pub fn make_synchronous(&self) {
        self.set("synchronous_standby_names", "*");
        let deadline = Instant::now() + START_TIMEOUT;
        while self.sql("SELECT count(*) FROM pg_stat_replication WHERE sync_state = 'sync'") != "1"
        {
            assert!(Instant::now() < deadline, "no synchronous standby");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// On a standby: stops receiving WAL (an empty `primary_conninfo`), so what the
    /// primary commits from now on never reaches it: the setup of a failover that loses
    /// commits. Returns once the WAL receiver is gone.
    pub fn stop_receiving(&self) {
        self.set("primary_conninfo", "");
        let deadline = Instant::now() + START_TIMEOUT;
        while self.sql("SELECT count(*) FROM pg_stat_wal_receiver") != "0" {
            assert!(Instant::now() < deadline, "the WAL receiver does not stop");
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// On a standby: promotes it to a primary (`pg_ctl promote`) and waits until it
    /// accepts writes.
    pub fn promote(&self) {
        let status = self
            .command("pg_ctl")
            .arg("promote")
            .arg("-D")
            .arg(self.path().join("data"))
            .args(["-w", "-t", "60"])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .status()
            .expect("run pg_ctl promote");
        assert!(status.success(), "pg_ctl promote failed: {status}");
        let deadline = Instant::now() + START_TIMEOUT;
        while self.sql("SELECT pg_is_in_recovery()") != "f" {
            assert!(
                Instant::now() < deadline,
                "the standby is still in recovery"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Kills the server as a crash would: PostgreSQL's immediate shutdown (SIGQUIT: every
    /// backend exits at once, no checkpoint, connections are cut), and waits for it.
    pub fn kill(&mut self) {
        self.signal_and_wait("-QUIT");
    }

    /// Stops the server (fast shutdown: open connections are ended) and waits for it.
    pub fn stop(&mut self) {
        // SIGINT is PostgreSQL's fast shutdown.
        self.signal_and_wait("-INT");
    }

    /// Sends `signal` (a `kill` argument) to the postmaster and waits for it to exit
    /// (SIGKILL after [`START_TIMEOUT`]).
    fn signal_and_wait(&mut self, signal: &str) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = Command::new("kill")
            .args([signal, &child.id().to_string()])
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
