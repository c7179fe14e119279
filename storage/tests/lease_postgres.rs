//! Leader election on PostgreSQL (`Storage::leadership`, `postgres/lease.rs`): of several
//! stores on one database exactly one leads; when it shuts down, or its session is killed
//! on the server, another takes over. Needs PostgreSQL installed (`.ci/run` installs it).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use kplane_storage::testing::postgres::PgServer;
use kplane_storage::{PostgresStorage, PostgresStorageOptions, Storage};
use tokio::sync::watch::Receiver;

fn server() -> PgServer {
    PgServer::start_required()
}

/// Waits (bounded, generously: the tries are a second apart) until `f` holds for the
/// leadership flags.
/// Never more than one of them leads meanwhile.
async fn until(flags: &[&Receiver<bool>], what: &str, f: impl Fn(&[bool]) -> bool) -> Vec<bool> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let now: Vec<bool> = flags.iter().map(|r| *r.borrow()).collect();
        assert!(leaders(&now) <= 1, "{what}: two leaders: {now:?}");
        if f(&now) {
            return now;
        }
        assert!(tokio::time::Instant::now() < deadline, "{what}: {now:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn leaders(v: &[bool]) -> usize {
    v.iter().filter(|l| **l).count()
}

/// Three stores on one database: exactly one leads; shutting the leader down hands the
/// lead to one of the others; killing the new leader's session on the server (as a
/// failover or a killed process would) takes its lead away and hands it on; never are two
/// stores leaders at once in what the test observes (a new holder waits out the grace in
/// which a predecessor may not know yet).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_store_leads_and_another_takes_over() {
    let pg = server();
    let url = pg.create_database();
    let mut stores: Vec<Arc<PostgresStorage>> = Vec::new();
    for _ in 0..3 {
        stores.push(
            PostgresStorage::open(&url, PostgresStorageOptions::default())
                .await
                .unwrap(),
        );
    }
    let flags: Vec<Receiver<bool>> = stores.iter().map(|s| s.leadership()).collect();
    let refs: Vec<&Receiver<bool>> = flags.iter().collect();
    let now = until(&refs, "one leader", |v| leaders(v) == 1).await;
    let first = now.iter().position(|l| *l).unwrap();

    // The leader shuts down: its connection goes, another store takes the lock.
    stores[first].shutdown().await.unwrap();
    let rest: Vec<usize> = (0..3).filter(|i| *i != first).collect();
    let rest_flags: Vec<&Receiver<bool>> = rest.iter().map(|i| &flags[*i]).collect();
    let now = until(&rest_flags, "a new leader", |v| leaders(v) == 1).await;
    assert!(
        !*flags[first].borrow(),
        "a store that shut down does not lead"
    );
    let second = rest[now.iter().position(|l| *l).unwrap()];

    // Its session is terminated on the server: it notices and stops leading, and a store
    // (the third, or itself again on a new connection) leads again.
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let conn = tokio::spawn(conn);
    let killed = client
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_locks \
             WHERE locktype = 'advisory' AND granted AND objid = $1",
            &[&((0x6b70_6c61_6e65_i64 & 0xffff_ffff) as u32)],
        )
        .await
        .unwrap()
        .get::<_, i64>(0);
    assert_eq!(killed, 1, "the leader's session holds the advisory lock");
    let mut saw_loss = false;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        let now: Vec<bool> = rest.iter().map(|i| *flags[*i].borrow()).collect();
        assert!(leaders(&now) <= 1, "two leaders: {now:?}");
        if !*flags[second].borrow() {
            saw_loss = true;
        }
        if saw_loss && leaders(&now) == 1 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no takeover after the leader's session was killed: {now:?} (loss seen: {saw_loss})"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    drop(client);
    let _ = conn.await;
    for (i, s) in stores.iter().enumerate() {
        if i != first {
            s.shutdown().await.unwrap();
        }
    }
}
