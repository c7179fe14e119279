//! Storage conformance for the PostgreSQL backend, on a throwaway server per test
//! (`kplane_storage::testing::postgres`).
//!
//! [`postgres_conformance`] runs the backend-independent suite unchanged; the tests after
//! it cover what only this backend has: reopening a database, group commit of batches,
//! compaction deleting history, and a scan outlasting a short window. They need PostgreSQL
//! installed (`.ci/run` installs it) and fail without it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use kplane_storage::testing::conformance::{self, create, key, list_all, RES};
use kplane_storage::testing::postgres::PgServer;
use kplane_storage::{
    Error, ListOptions, PostgresStorage, PostgresStorageOptions, Precondition, Prefix, Storage,
};

/// A throwaway server. PostgreSQL must be installed (`.ci/run` installs it; `make test`
/// checks for it first): these tests fail rather than skip without it.
fn server() -> PgServer {
    assert!(
        PgServer::available(),
        "PostgreSQL is not installed: apt-get install postgresql (.ci/run does)"
    );
    PgServer::start()
}

fn opts() -> PostgresStorageOptions {
    PostgresStorageOptions {
        compaction_interval: Duration::from_millis(50),
        ..Default::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_conformance() {
    let pg = server();
    let s = PostgresStorage::open(&pg.create_database(), opts())
        .await
        .unwrap();
    conformance::run_all(s.clone()).await;
    s.shutdown().await.unwrap();
}

/// Reopening a database keeps every key, the revision and the history; a second store on
/// another database of the same server is independent.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_reopen_keeps_state() {
    let pg = server();
    let url = pg.create_database();
    let s = PostgresStorage::open(&url, opts()).await.unwrap();
    let dyn_s: Arc<dyn Storage> = s.clone();
    let a = create(&dyn_s, key("re", "ns", "a"), "v").await;
    let b = create(&dyn_s, key("re", "ns", "b"), "v").await;
    s.shutdown().await.unwrap();
    drop(s);
    let s = PostgresStorage::open(&url, opts()).await.unwrap();
    assert_eq!(s.current_revision(), b.mod_revision);
    let dyn_s: Arc<dyn Storage> = s.clone();
    let all = list_all(&dyn_s, &Prefix::resource("re", RES), None).await;
    assert_eq!(all, vec![a.clone(), b.clone()]);
    // History survives: the state before `b` and a watch from before `a`.
    let before_b = list_all(&dyn_s, &Prefix::resource("re", RES), Some(a.mod_revision)).await;
    assert_eq!(before_b, vec![a.clone()]);
    let mut rx = s
        .watch(&Prefix::cluster("re"), a.mod_revision - 1, None)
        .await
        .unwrap();
    assert_eq!(conformance::next_event(&mut rx).await.kv, a);
    assert_eq!(conformance::next_event(&mut rx).await.kv, b);
    let other = PostgresStorage::open(&pg.create_database(), opts())
        .await
        .unwrap();
    assert_eq!(other.current_revision(), 0);
    other.shutdown().await.unwrap();
    s.shutdown().await.unwrap();
}

/// Batches commit in few transactions: far fewer groups than writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_write_batch_groups() {
    let pg = server();
    let s = PostgresStorage::open(&pg.create_database(), opts())
        .await
        .unwrap();
    let dyn_s: Arc<dyn Storage> = s.clone();
    let max = kplane_storage::MAX_WRITE_GROUP;
    for n in [10, max + 1] {
        let before = s.stats().commit_groups;
        conformance::write_batch_events_one_per_write(&dyn_s, n).await;
        let groups = s.stats().commit_groups - before;
        let chunks = n.div_ceil(max) as u64;
        // Creates and deletes; the writer may split a batch where it caught it mid-queue.
        assert!(groups <= 4 * chunks, "{n} writes took {groups} commits");
    }
    assert!(s.stats().max_group > 1);
    s.shutdown().await.unwrap();
}

/// With a short window, history ages out: the compaction point passes old revisions,
/// reads and watches below it fail with `Compacted`, the log keeps no row at or below it,
/// and the latest state is untouched.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_compaction_deletes_history() {
    let pg = server();
    let url = pg.create_database();
    let s = PostgresStorage::open(
        &url,
        PostgresStorageOptions {
            event_window: Duration::from_millis(300),
            compaction_interval: Duration::from_secs(3600),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let dyn_s: Arc<dyn Storage> = s.clone();
    let k = key("cmp", "ns", "a");
    let first = create(&dyn_s, k.clone(), "v").await;
    // More history than one delete batch of the compactor.
    for _ in 0..6 {
        let writes = (0..1000)
            .map(|_| conformance::bw(k.clone(), false, Precondition::MustExist, "u"))
            .collect();
        for r in s.write_batch(writes).await {
            r.unwrap();
        }
    }
    let old = s.current_revision();
    tokio::time::sleep(Duration::from_millis(400)).await;
    let last = create(&dyn_s, key("cmp", "ns", "b"), "v").await;
    s.compact_now(Duration::from_millis(300)).await.unwrap();
    assert!(s.compacted_revision() >= old, "{}", s.compacted_revision());
    assert!(s.compacted_revision() < last.mod_revision);
    let e = s
        .list(
            &Prefix::cluster("cmp"),
            &ListOptions {
                at_revision: Some(first.mod_revision),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Compacted { .. }), "{e:?}");
    assert!(matches!(
        s.watch(&Prefix::cluster("cmp"), first.mod_revision, None)
            .await
            .unwrap_err(),
        Error::Compacted { .. }
    ));
    // The state at the compaction point is still exact, and a watch from it sees `b`.
    let at = list_all(
        &dyn_s,
        &Prefix::cluster("cmp"),
        Some(s.compacted_revision()),
    )
    .await;
    assert_eq!(at.len(), 1);
    let mut rx = s
        .watch(&Prefix::cluster("cmp"), s.compacted_revision(), None)
        .await
        .unwrap();
    assert_eq!(conformance::next_event(&mut rx).await.kv, last);
    let rows = history_rows(&url).await;
    assert!(rows <= 1, "{rows} log rows left");
    assert_eq!(
        list_all(&dyn_s, &Prefix::cluster("cmp"), None).await.len(),
        2
    );
    s.shutdown().await.unwrap();
}

/// Rows of the log table, read directly.
async fn history_rows(url: &str) -> i64 {
    let (client, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let task = tokio::spawn(conn);
    let n: i64 = client
        .query_one("SELECT count(*) FROM kplane_log", &[])
        .await
        .unwrap()
        .get(0);
    drop(client);
    let _ = task.await;
    n
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_scan_outlasting_the_window_fails() {
    let pg = server();
    let s = PostgresStorage::open(
        &pg.create_database(),
        PostgresStorageOptions {
            event_window: Duration::from_millis(500),
            compaction_interval: Duration::from_millis(50),
            ..Default::default()
        },
    )
    .await
    .unwrap();
    let dyn_s: Arc<dyn Storage> = s.clone();
    conformance::scan_outlasting_the_window_fails(&dyn_s).await;
    s.shutdown().await.unwrap();
}

/// Snapshots far behind the current revision (read through the log's per-key index) and
/// close to it (through the log's tail) are both exact, in pages.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_old_and_recent_snapshots() {
    let pg = server();
    let s = PostgresStorage::open(&pg.create_database(), opts())
        .await
        .unwrap();
    let dyn_s: Arc<dyn Storage> = s.clone();
    let p = Prefix::cluster("snap");
    let keys: Vec<_> = (0..50)
        .map(|i| key("snap", "ns", &format!("k{i:02}")))
        .collect();
    let writes = keys
        .iter()
        .map(|k| conformance::bw(k.clone(), false, Precondition::MustNotExist, "c"))
        .collect();
    for r in s.write_batch(writes).await {
        r.unwrap();
    }
    let old_rev = s.current_revision();
    let old = list_all(&dyn_s, &p, None).await;
    // Far more revisions than the tail path covers: updates, deletes and re-creates.
    let mut recent = (0, Vec::new());
    for round in 0..90 {
        if round == 89 {
            // Read at the latest revision: no log tail to merge.
            recent = (s.current_revision(), list_all(&dyn_s, &p, None).await);
        }
        let writes = keys
            .iter()
            .enumerate()
            .map(|(i, k)| {
                let delete = (i + round) % 7 == 0;
                let pre = if round > 0 && (i + round - 1) % 7 == 0 {
                    Precondition::MustNotExist
                } else {
                    Precondition::MustExist
                };
                conformance::bw(k.clone(), delete, pre, &format!("r{round}"))
            })
            .collect();
        for r in s.write_batch(writes).await {
            r.unwrap();
        }
    }
    let (recent_rev, recent) = recent;
    assert!(s.current_revision() - recent_rev >= 40);
    assert!(s.current_revision() - old_rev > 4096);
    for (rev, want) in [(old_rev, &old), (recent_rev, &recent)] {
        let mut got = Vec::new();
        let mut opts = ListOptions {
            at_revision: Some(rev),
            limit: Some(7),
            ..Default::default()
        };
        loop {
            let r = s.list(&p, &opts, None).await.unwrap();
            got.extend(r.items.iter().cloned());
            if !r.more {
                break;
            }
            opts.start_after = r.items.last().map(|kv| kv.key.clone());
        }
        assert_eq!(&got, want, "at {rev}");
    }
    assert_eq!(old.len(), 50);
    s.shutdown().await.unwrap();
}

/// The database going away fails requests with `Timeout` (retryable: a 504 for clients)
/// rather than hanging; once it is back, the same store serves and writes again without
/// being reopened, and the write that failed was not applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_survives_a_database_restart() {
    let mut pg = server();
    let s = PostgresStorage::open(
        &pg.create_database(),
        PostgresStorageOptions {
            connect_timeout: Duration::from_secs(2),
            ..opts()
        },
    )
    .await
    .unwrap();
    let dyn_s: Arc<dyn Storage> = s.clone();
    let a = create(&dyn_s, key("rs", "ns", "a"), "v").await;
    pg.stop();
    let e = s
        .put(
            key("rs", "ns", "b"),
            Precondition::MustNotExist,
            conformance::enc("v"),
        )
        .await
        .unwrap_err();
    assert!(matches!(e, Error::Timeout(_)), "{e:?}");
    // A key the cache does not hold is read from the database: it fails.
    let e = s.get(&key("rs", "ns", "never-read")).await.unwrap_err();
    assert!(matches!(e, Error::Timeout(_)), "{e:?}");
    // A cached key is served only while the log tailer confirms it follows the database:
    // once it cannot (within about a second), GETs read the database and fail too.
    let e = loop {
        match s.get(&a.key).await {
            Ok(v) => assert_eq!(v, Some(a.clone()), "the cache served a wrong value"),
            Err(e) => break e,
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    assert!(matches!(e, Error::Timeout(_)), "{e:?}");
    pg.restart();
    // The pool replaces the broken connections.
    assert_eq!(s.get(&a.key).await.unwrap(), Some(a.clone()));
    let b = create(&dyn_s, key("rs", "ns", "b"), "v").await;
    assert_eq!(
        b.mod_revision,
        a.mod_revision + 1,
        "the failed write took no revision"
    );
    let all = list_all(&dyn_s, &Prefix::cluster("rs"), None).await;
    assert_eq!(all, vec![a, b]);
    s.shutdown().await.unwrap();
}

/// Two stores on one database (two kplane processes, as replicas will be) write
/// concurrently: every write gets its own revision, the revisions are contiguous, and a
/// store publishes the other's writes to its watchers, in order, before its own next ones.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_two_writers_share_one_revision_sequence() {
    let pg = server();
    let url = pg.create_database();
    let a = PostgresStorage::open(&url, opts()).await.unwrap();
    let b = PostgresStorage::open(&url, opts()).await.unwrap();
    // A live watcher of `b`: `a`'s writes reach it only through `b`'s catching up.
    let mut rx = b.watch(&Prefix::cluster("two"), 0, None).await.unwrap();
    let per_task = 40;
    let mut handles = Vec::new();
    for (i, s) in [a.clone(), b.clone(), a.clone(), b.clone()]
        .into_iter()
        .enumerate()
    {
        let s: Arc<dyn Storage> = s;
        handles.push(tokio::spawn(async move {
            let mut revs = Vec::new();
            for j in 0..per_task {
                let kv = create(&s, key("two", "ns", &format!("t{i}-{j:03}")), "v").await;
                revs.push(kv.mod_revision);
            }
            revs
        }));
    }
    let mut all = Vec::new();
    for h in handles {
        let revs = h.await.unwrap();
        assert!(revs.windows(2).all(|w| w[0] < w[1]));
        all.extend(revs);
    }
    all.sort_unstable();
    let n = 4 * per_task as u64;
    assert_eq!(all, (1..=n).collect::<Vec<_>>(), "unique and contiguous");
    // One more write through `b`: it publishes everything `a` wrote first.
    let last = b
        .put(
            key("two", "ns", "last"),
            Precondition::MustNotExist,
            conformance::enc("v"),
        )
        .await
        .unwrap();
    assert_eq!(last.mod_revision, n + 1);
    assert_eq!(b.current_revision(), n + 1);
    for want in 1..=n + 1 {
        assert_eq!(conformance::next_event(&mut rx).await.kv.mod_revision, want);
    }
    let b_dyn: Arc<dyn Storage> = b.clone();
    assert_eq!(
        list_all(&b_dyn, &Prefix::cluster("two"), None).await.len() as u64,
        n + 1
    );
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

/// Concurrent single writes share commits (group commit): 64 clients writing one at a
/// time commit in far fewer transactions than writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_concurrent_writes_share_commits() {
    let pg = server();
    let s = PostgresStorage::open(&pg.create_database(), opts())
        .await
        .unwrap();
    let clients = 64;
    let per_client = 20;
    let before = s.stats();
    let mut handles = Vec::new();
    for c in 0..clients {
        let s: Arc<dyn Storage> = s.clone();
        handles.push(tokio::spawn(async move {
            for i in 0..per_client {
                create(&s, key("gc", "ns", &format!("c{c}-{i}")), &"x".repeat(1024)).await;
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    let after = s.stats();
    let writes = after.committed_writes - before.committed_writes;
    let groups = after.commit_groups - before.commit_groups;
    assert_eq!(writes, (clients * per_client) as u64);
    assert!(
        groups * 4 <= writes,
        "{writes} writes took {groups} commits"
    );
    assert!(after.max_group >= 8, "largest group {}", after.max_group);
    s.shutdown().await.unwrap();
}
