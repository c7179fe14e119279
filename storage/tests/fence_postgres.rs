//! The write fence on PostgreSQL (`Storage::fence_cluster`, `postgres/writer.rs`): ordered
//! with the writes of every store on the database, so that a fence set through one store
//! refuses the writes another store commits after it, and every write acknowledged before
//! it is at or below its revision. Needs PostgreSQL installed (`.ci/run` installs it).

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use kplane_storage::testing::postgres::PgServer;
use kplane_storage::{
    BatchWrite, Error, Key, PostgresStorage, PostgresStorageOptions, Precondition, Prefix, Storage,
    WatchEvent,
};

fn server() -> PgServer {
    PgServer::start_required()
}

async fn open(url: &str) -> Arc<PostgresStorage> {
    PostgresStorage::open(url, PostgresStorageOptions::default())
        .await
        .unwrap()
}

async fn put(s: &PostgresStorage, cluster: &str, name: &str) -> kplane_storage::Result<u64> {
    let kv = s
        .put(
            Key::new(cluster, "configmaps", "default", name),
            Precondition::MustNotExist,
            Box::new(|rev| Ok(format!("{{\"rv\":{rev}}}").into_bytes())),
        )
        .await?;
    Ok(kv.mod_revision)
}

fn is_fenced(e: &Error, cluster: &str) -> bool {
    matches!(e, Error::Fenced { cluster: c } if c == cluster)
}

/// Writers hammer cluster `a` through store B while store A fences it: every write B
/// acknowledged is at or below the fence revision and is in A's change stream up to it
/// (the catch-up a move reads), every later one is refused with `Fenced`; the writes of
/// other clusters go on, a batch fails its fenced writes only, the fence is durable and
/// idempotent, the cluster can still be deleted, and lifting it lets writes in again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fence_through_one_store_refuses_the_writes_of_another_after_it() {
    let pg = server();
    let url = pg.create_database();
    let (a, b) = (open(&url).await, open(&url).await);
    put(&b, "a", "first").await.unwrap();
    let start = b.current_revision();
    // More writers than a write group holds, so groups straddle the fence.
    // Set once the fence answered: each writer then tries once more and stops (without
    // the fence, that write lands after it and fails the test).
    let fenced = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..2 * kplane_storage::MAX_WRITE_GROUP {
        let b = b.clone();
        let fenced = fenced.clone();
        writers.push(tokio::spawn(async move {
            let mut committed = Vec::new();
            for i in 0.. {
                let last = fenced.load(Ordering::Acquire);
                match put(&b, "a", &format!("w{w}-{i}")).await {
                    Ok(rev) => committed.push(rev),
                    Err(e) => {
                        assert!(is_fenced(&e, "a"), "{e}");
                        return committed;
                    }
                }
                // Another cluster's writes are never refused.
                put(&b, "other", &format!("w{w}-{i}")).await.unwrap();
                if last {
                    break;
                }
            }
            committed
        }));
    }
    // Let the writers commit some first.
    while b.current_revision() < start + 200 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let fence = a.fence_cluster("a", true).await.unwrap();
    fenced.store(true, Ordering::Release);
    let mut acknowledged = BTreeSet::new();
    for w in writers {
        for rev in w.await.unwrap() {
            assert!(rev <= fence, "a write at {rev} after the fence at {fence}");
            acknowledged.insert(rev);
        }
    }
    assert!(!acknowledged.is_empty());
    // A's change stream of the cluster up to the fence holds every acknowledged write.
    let mut rx = a.watch(&Prefix::cluster("a"), start, None).await.unwrap();
    let mut seen = BTreeSet::new();
    while seen
        .last()
        .is_none_or(|r| *r < *acknowledged.last().unwrap())
    {
        match tokio::time::timeout(Duration::from_secs(60), rx.recv()).await {
            Ok(Some(WatchEvent::Event(e))) => {
                seen.insert(e.kv.mod_revision);
            }
            Ok(Some(WatchEvent::Progress(_))) => {}
            other => panic!("the change stream ended: {other:?}"),
        }
    }
    assert!(acknowledged.is_subset(&seen));
    // Idempotent; both stores refuse; a batch fails its fenced writes only.
    assert!(a.fence_cluster("a", true).await.unwrap() >= fence);
    assert!(is_fenced(&put(&a, "a", "late").await.unwrap_err(), "a"));
    let batch = |c: &str| BatchWrite {
        key: Key::new(c, "configmaps", "default", "batched"),
        delete: false,
        precondition: Precondition::MustNotExist,
        encode: Box::new(|_| Ok(b"{}".to_vec())),
    };
    let res = b.write_batch(vec![batch("a"), batch("other")]).await;
    assert!(is_fenced(res[0].as_ref().unwrap_err(), "a"));
    assert!(res[1].is_ok());
    let del = b
        .delete(
            Key::new("a", "configmaps", "default", "first"),
            Precondition::MustExist,
            Box::new(|_| Ok(b"{}".to_vec())),
        )
        .await
        .unwrap_err();
    assert!(is_fenced(&del, "a"));
    // Durable: a store opened later refuses too.
    let c = open(&url).await;
    assert!(is_fenced(&put(&c, "a", "later").await.unwrap_err(), "a"));
    // Lifted: writes go in again, through every store.
    b.fence_cluster("a", false).await.unwrap();
    b.fence_cluster("a", false).await.unwrap();
    put(&a, "a", "after-a").await.unwrap();
    put(&c, "a", "after-c").await.unwrap();
    // A fenced cluster can still be removed (after its move).
    a.fence_cluster("a", true).await.unwrap();
    let tomb: kplane_storage::Tombstone = Arc::new(|kv, _| Ok(kv.value.to_vec()));
    assert_eq!(
        a.delete_cluster("a", 100, tomb).await.unwrap() as usize,
        acknowledged.len() + 3
    );
    for s in [a, b, c] {
        s.shutdown().await.unwrap();
    }
}

/// A database of schema version 1 (before the fence table) gets it at the next open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_version_1_database_gets_the_fence_table() {
    let pg = server();
    let url = pg.create_database();
    let a = open(&url).await;
    put(&a, "a", "before").await.unwrap();
    a.shutdown().await.unwrap();
    drop(a);
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let task = tokio::spawn(conn);
    client
        .batch_execute(
            "DROP TABLE kplane_fences; UPDATE kplane_meta SET schema_version = 1 WHERE id = 1",
        )
        .await
        .unwrap();
    let b = open(&url).await;
    b.fence_cluster("a", true).await.unwrap();
    assert!(is_fenced(&put(&b, "a", "after").await.unwrap_err(), "a"));
    let version: i32 = client
        .query_one("SELECT schema_version FROM kplane_meta WHERE id = 1", &[])
        .await
        .unwrap()
        .get(0);
    assert_eq!(version, kplane_storage::postgres::SCHEMA_VERSION);
    assert_eq!(version, 3);
    drop(client);
    let _ = task.await;
    b.shutdown().await.unwrap();
}
