//! `kplane serve` on a PostgreSQL primary with a synchronous hot standby
//! (`kplane_storage::testing::postgres`), its `--storage` address naming both with
//! `target_session_attrs=read-write`: the primary is killed and the standby promoted.
//! Every ConfigMap whose create kubectl saw succeed is still there, creates fail with a
//! `Timeout` Status meanwhile (never hang), work again on the new primary without
//! restarting kplane, and an open `kubectl get -w` sees them.
//! It needs PostgreSQL installed and fails without it.

use std::time::{Duration, Instant};

use anyhow::{ensure, Result};
use kplane_e2e::{KplaneServer, ServerOptions};
use kplane_storage::testing::postgres::PgServer;

const WATCH_TIMEOUT: Duration = Duration::from_secs(60);

/// A watch line `ADDED NAME ...`.
fn added(name: &'static str) -> impl Fn(&str) -> bool {
    move |line: &str| {
        let cols: Vec<&str> = line.split_whitespace().collect();
        cols.first() == Some(&"ADDED") && cols.get(1) == Some(&name)
    }
}

#[test]
fn kplane_follows_a_postgres_failover() -> Result<()> {
    PgServer::require();
    let mut primary = PgServer::start_with(&["synchronous_commit=on"]);
    let url = primary.create_database();
    let standby = primary.standby();
    primary.make_synchronous();
    let db = url.rsplit('/').next().unwrap_or_default();
    let address = format!(
        "postgres://postgres@127.0.0.1:{},127.0.0.1:{}/{db}?target_session_attrs=read-write",
        primary.port(),
        standby.port()
    );
    let server = KplaneServer::start_with(ServerOptions::default().arg("--storage").arg(address))?;
    let k = server.kubectl_root();
    k.ok(&["create", "namespace", "fo"])?;
    let mut created = Vec::new();
    for i in 0..20 {
        let name = format!("before-{i}");
        k.ok(&["create", "configmap", &name, "-n", "fo"])?;
        created.push(name);
    }
    let mut watch = k.spawn_watch(&[
        "get",
        "configmaps",
        "-n",
        "fo",
        "-w",
        "--output-watch-events",
    ])?;
    watch.wait_for_line(WATCH_TIMEOUT, "ADDED before-19", added("before-19"))?;
    primary.kill();
    // Between the crash and the promotion no host takes writes: a create fails, bounded.
    let started = Instant::now();
    let out = k.run(&[
        "create",
        "configmap",
        "during",
        "-n",
        "fo",
        "--request-timeout=60s",
    ])?;
    ensure!(
        !out.success() && out.stderr.contains("Timeout"),
        "a create without a primary: {out:?}"
    );
    ensure!(
        started.elapsed() < Duration::from_secs(60),
        "the create hung"
    );
    standby.promote();
    // The same kplane writes to the new primary.
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let out = k.run(&[
            "create",
            "configmap",
            "after",
            "-n",
            "fo",
            "--request-timeout=60s",
        ])?;
        if out.success() {
            break;
        }
        ensure!(
            out.stderr.contains("Timeout") || out.stderr.contains("AlreadyExists"),
            "a create during the failover: {out:?}"
        );
        if out.stderr.contains("AlreadyExists") {
            break;
        }
        ensure!(Instant::now() < deadline, "creates never worked again");
        std::thread::sleep(Duration::from_millis(200));
    }
    created.push("after".to_string());
    watch.wait_for_line(WATCH_TIMEOUT, "ADDED after", added("after"))?;
    let names = k.ok(&[
        "get",
        "configmaps",
        "-n",
        "fo",
        "-o",
        "jsonpath={.items[*].metadata.name}",
    ])?;
    for name in &created {
        ensure!(
            names.split_whitespace().any(|n| n == name),
            "{name} is missing after the failover: {names}"
        );
    }
    drop(server);
    drop(standby);
    drop(primary);
    Ok(())
}
