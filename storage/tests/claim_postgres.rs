//! Claims on names (`Storage::claim`, `postgres/claims.rs`): exclusive across stores on one
//! database (and across guards of one store), released when the guard is released (at
//! once) or dropped, when
//! the holder's store is dropped, and when its session is killed on the server (the holder
//! then sees the claim lost). sled's claims: exclusive per store. Needs PostgreSQL
//! installed (`.ci/run` installs it).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use kplane_storage::testing::postgres::PgServer;
use kplane_storage::{Claim, PostgresStorage, SledStorage, SledStorageOptions, Storage};

fn server() -> PgServer {
    PgServer::start_required()
}

async fn open(url: &str) -> Arc<PostgresStorage> {
    PostgresStorage::open(url, Default::default())
        .await
        .unwrap()
}

/// Claims `name` through `store`, trying until it is granted (bounded generously: a
/// failure is a claim never released, not a slow release).
async fn claim_eventually(store: &dyn Storage, name: &str) -> Claim {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(c) = store.claim(name).await.unwrap() {
            return c;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{name} never released"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The sessions holding a claim's lock (the two-integer advisory locks).
async fn claim_sessions(client: &tokio_postgres::Client) -> i64 {
    client
        .query_one(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted \
             AND objsubid = 2",
            &[],
        )
        .await
        .unwrap()
        .get(0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_is_exclusive_across_stores_and_ends_with_its_holder() {
    let pg = server();
    let url = pg.create_database();
    let (a, b) = (open(&url).await, open(&url).await);
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let conn = tokio::spawn(conn);

    // Exclusive: across stores, and across two guards of one store.
    let x = a.claim("import:root:x").await.unwrap().expect("free");
    assert!(x.is_held());
    assert_eq!(x.name(), "import:root:x");
    assert!(b.claim("import:root:x").await.unwrap().is_none());
    assert!(a.claim("import:root:x").await.unwrap().is_none());
    let y = b
        .claim("import:root:y")
        .await
        .unwrap()
        .expect("another name");
    assert!(x.grace() > Duration::ZERO);
    assert_eq!(claim_sessions(&client).await, 2);
    // A refused try holds nothing.
    assert!(b.claim("import:root:x").await.unwrap().is_none());
    assert_eq!(claim_sessions(&client).await, 2);

    // Released explicitly: free for any store as soon as `release` returns.
    let w = a.claim("import:root:w").await.unwrap().expect("free");
    w.release().await;
    let w = b
        .claim("import:root:w")
        .await
        .unwrap()
        .expect("free once released");
    w.release().await;

    // Released by dropping the guard.
    drop(x);
    let x = claim_eventually(&*b, "import:root:x").await;
    assert!(a.claim("import:root:x").await.unwrap().is_none());

    // The holder's session killed on the server: the holder sees the claim lost, and the
    // name is free for the other store.
    drop(y);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while claim_sessions(&client).await != 1 {
        assert!(tokio::time::Instant::now() < deadline, "y never released");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let killed: i64 = client
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_locks \
             WHERE locktype = 'advisory' AND granted AND objsubid = 2",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(killed, 1, "x's session holds its lock");
    let retaken = claim_eventually(&*a, "import:root:x").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while x.is_held() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the holder never noticed its lost session"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    drop(x);
    assert!(b.claim("import:root:x").await.unwrap().is_none());

    // The holder's store dropped (its guard kept): the claim ends with the store.
    drop(a);
    let again = claim_eventually(&*b, "import:root:x").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while retaken.is_held() {
        assert!(tokio::time::Instant::now() < deadline, "still held");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // And with a store shut down; a shut-down store grants nothing.
    b.shutdown().await.unwrap();
    let c = open(&url).await;
    let z = claim_eventually(&*c, "import:root:x").await;
    assert!(z.is_held());
    assert!(!again.is_held());
    assert!(b.claim("import:root:q").await.is_err());
    drop((z, again, retaken));
    c.shutdown().await.unwrap();
    drop(client);
    let _ = conn.await;
}

/// sled: one process, so a name is held exactly while a guard of the store has it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_claims_are_the_stores_guards() {
    let dir = tempfile::tempdir().unwrap();
    let s: Arc<dyn Storage> =
        SledStorage::open(dir.path().join("db"), SledStorageOptions::default()).unwrap();
    let x = s.claim("x").await.unwrap().expect("free");
    assert!(s.claim("x").await.unwrap().is_none());
    assert_eq!(x.grace(), Duration::ZERO);
    let y = s.claim("y").await.unwrap().expect("another name");
    drop(x);
    assert!(s.claim("x").await.unwrap().is_some());
    assert!(y.is_held());
    drop(y);
    s.shutdown().await.unwrap();
}
