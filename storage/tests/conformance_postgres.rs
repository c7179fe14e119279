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
    CloseReason, Error, EventType, ListOptions, PostgresStorage, PostgresStorageOptions,
    Precondition, Prefix, Revision, Storage, WatchEvent,
};

/// A throwaway server. PostgreSQL must be installed (`.ci/run` installs it; `make test`
/// checks for it first): these tests fail rather than skip without it.
fn server() -> PgServer {
    PgServer::start_required()
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

// ---- Replicas: several stores on one database (issue 17, part 2) ----

/// Waits until `s` has published revision `rev` (a hang guard, not a timing assertion).
/// A store that hears of other stores' writes only when the test calls `catch_up`: no
/// LISTEN, and a tail interval far beyond any test.
async fn deaf_store(url: &str, base: PostgresStorageOptions) -> Arc<PostgresStorage> {
    PostgresStorage::open(
        url,
        PostgresStorageOptions {
            listen: false,
            tail_interval: Duration::from_secs(3600),
            ..base
        },
    )
    .await
    .unwrap()
}

async fn published(s: &PostgresStorage, rev: Revision) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while s.current_revision() < rev {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the store is at {} and never reached {rev}",
            s.current_revision()
        );
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// A watch on one store sees every write made through another store on the same database
/// (and its own store's writes), in revision order, without a gap or a duplicate, each
/// with the key's previous value; more events than a log page, a replay chunk and a write
/// group. The other store's `current_revision()` catches up to the writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_watch_on_one_store_sees_writes_through_another() {
    let pg = server();
    let url = pg.create_database();
    let a = PostgresStorage::open(&url, opts()).await.unwrap();
    let b = PostgresStorage::open(
        &url,
        PostgresStorageOptions {
            // Room for everything at once: the check is order and completeness, not speed.
            watch_channel_capacity: 64 * 1024,
            ..opts()
        },
    )
    .await
    .unwrap();
    let p = Prefix::cluster("rep");
    let mut rx = b.watch(&p, 0, None).await.unwrap();
    let max = kplane_storage::MAX_WRITE_GROUP;
    let n = max + 100;
    assert!(n > 4096);
    // Through `a`: one batch of creates larger than a write group, then updates and
    // deletes of some of them; meanwhile `b` writes keys of its own.
    let a_task = {
        let a = a.clone();
        tokio::spawn(async move {
            let creates = (0..n)
                .map(|i| {
                    conformance::bw(
                        key("rep", "a", &format!("k{i:05}")),
                        false,
                        Precondition::MustNotExist,
                        "c",
                    )
                })
                .collect();
            for r in a.write_batch(creates).await {
                r.unwrap();
            }
            let changes = (0..n)
                .step_by(7)
                .map(|i| {
                    let k = key("rep", "a", &format!("k{i:05}"));
                    conformance::bw(k, i % 2 == 0, Precondition::MustExist, "u")
                })
                .collect();
            let mut last = 0;
            for r in a.write_batch(changes).await {
                last = r.unwrap().mod_revision;
            }
            last
        })
    };
    let b_task = {
        let b: Arc<dyn Storage> = b.clone();
        tokio::spawn(async move {
            let mut last = 0;
            for i in 0..200 {
                let k = key("rep", "b", &format!("k{i:03}"));
                let kv = create(&b, k.clone(), "b").await;
                let kv = b
                    .put(
                        k,
                        Precondition::ModRevision(kv.mod_revision),
                        conformance::enc("b2"),
                    )
                    .await
                    .unwrap();
                last = kv.mod_revision;
            }
            last
        })
    };
    let a_last = a_task.await.unwrap();
    let b_last = b_task.await.unwrap();
    let head = a_last.max(b_last);
    published(&b, head).await;
    assert_eq!(a.current_revision().max(b.current_revision()), head);
    // Every revision 1..=head, in order, each with the key's previous value.
    let mut state: std::collections::HashMap<kplane_storage::Key, bytes::Bytes> =
        std::collections::HashMap::new();
    for want in 1..=head {
        let ev = conformance::next_event(&mut rx).await;
        assert_eq!(ev.kv.mod_revision, want);
        assert_eq!(ev.prev, state.get(&ev.kv.key).cloned(), "prev of {want}");
        match ev.event_type {
            EventType::Deleted => {
                state.remove(&ev.kv.key);
            }
            EventType::Added | EventType::Modified => {
                state.insert(ev.kv.key.clone(), ev.kv.value.clone());
            }
        }
    }
    conformance::assert_quiet(&mut rx).await;
    // Both stores agree on the latest state.
    let a_dyn: Arc<dyn Storage> = a.clone();
    let b_dyn: Arc<dyn Storage> = b.clone();
    let from_a = list_all(&a_dyn, &p, None).await;
    assert_eq!(from_a, list_all(&b_dyn, &p, None).await);
    assert_eq!(from_a.len(), state.len());
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

/// The GET cache stays exact with writers on two stores and readers on both: a write
/// acknowledged through one store is what the other store's GET returns as soon as its
/// `current_revision()` reached the write (and at once on the writing store); successive
/// GETs of a key through one store never go back in revisions; every value a GET returns
/// is one that was written.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_get_cache_is_exact_across_stores() {
    let pg = server();
    let url = pg.create_database();
    // A cache too small for every key, so eviction and refills happen during the test.
    let small = PostgresStorageOptions {
        cache_bytes: 12 * 1024,
        ..opts()
    };
    let a = PostgresStorage::open(&url, small.clone()).await.unwrap();
    let b = PostgresStorage::open(&url, small).await.unwrap();
    let stores = [a.clone(), b.clone()];
    let keys_per_writer = 8;
    let rounds = 25;
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    // Readers: both stores, every key, over and over.
    let mut readers = Vec::new();
    for s in stores.clone() {
        let stop = stop.clone();
        readers.push(tokio::spawn(async move {
            let mut seen: std::collections::HashMap<String, Revision> = Default::default();
            let mut reads = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                for w in 0..4 {
                    for i in 0..keys_per_writer {
                        let name = format!("w{w}-{i}");
                        let Some(kv) = s.get(&key("cache", "ns", &name)).await.unwrap() else {
                            continue;
                        };
                        // Values are written as "{name}:{round}@{revision}".
                        let text = conformance::val(&kv);
                        assert!(
                            text.starts_with(&format!("{name}:"))
                                && text.ends_with(&format!("@{}", kv.mod_revision)),
                            "{text} at {}",
                            kv.mod_revision
                        );
                        let last = seen.entry(name.clone()).or_default();
                        assert!(
                            kv.mod_revision >= *last,
                            "{name} went back from {last} to {}",
                            kv.mod_revision
                        );
                        *last = kv.mod_revision;
                        reads += 1;
                        // A cache hit never waits: let the writers and tailers run.
                        tokio::task::yield_now().await;
                    }
                }
            }
            reads
        }));
    }
    // Writers: two per store, each updating its own keys.
    let mut writers = Vec::new();
    for w in 0..4 {
        let (mine, other) = if w % 2 == 0 {
            (a.clone(), b.clone())
        } else {
            (b.clone(), a.clone())
        };
        writers.push(tokio::spawn(async move {
            for round in 0..rounds {
                for i in 0..keys_per_writer {
                    let name = format!("w{w}-{i}");
                    let k = key("cache", "ns", &name);
                    let pre = if round == 0 {
                        Precondition::MustNotExist
                    } else {
                        Precondition::MustExist
                    };
                    let kv = mine
                        .put(k.clone(), pre, conformance::enc(&format!("{name}:{round}")))
                        .await
                        .unwrap();
                    assert_eq!(
                        mine.get(&k).await.unwrap(),
                        Some(kv.clone()),
                        "read your write"
                    );
                    published(&other, kv.mod_revision).await;
                    // Only this writer writes `k`: the other store must return exactly it.
                    assert_eq!(
                        other.get(&k).await.unwrap(),
                        Some(kv),
                        "after the other store published it"
                    );
                }
            }
        }));
    }
    for w in writers {
        w.await.unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for r in readers {
        assert!(r.await.unwrap() > 0);
    }
    for s in &stores {
        let f = s.cache_figures();
        assert!(f.bytes <= 12 * 1024, "{f:?}");
        assert!(f.hits > 0 && f.misses > 0, "{f:?}");
        let st = s.stats();
        assert!(st.get_cache_hits >= f.hits && st.get_cache_misses >= f.misses);
    }
    // Deletes reach the other store's cache too.
    let k = key("cache", "ns", "w0-0");
    assert!(b.get(&k).await.unwrap().is_some());
    let gone = a
        .delete(k.clone(), Precondition::MustExist, conformance::enc("x"))
        .await
        .unwrap();
    published(&b, gone.mod_revision).await;
    assert_eq!(b.get(&k).await.unwrap(), None);
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

/// A store whose position fell below the compaction point (it did not follow the log
/// while the history it needed was compacted away) closes its watchers as too slow,
/// clears its cache and jumps to the database's revision; a watch from before the
/// compaction point fails with `Compacted`, and a new watch follows later writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store_behind_the_compaction_point_resyncs() {
    let pg = server();
    let url = pg.create_database();
    let a = PostgresStorage::open(&url, opts()).await.unwrap();
    let b = deaf_store(&url, opts()).await;
    let a_dyn: Arc<dyn Storage> = a.clone();
    let k = key("rs", "ns", "k");
    let first = create(&a_dyn, k.clone(), "v1").await;
    b.catch_up().await.unwrap();
    assert_eq!(b.current_revision(), first.mod_revision);
    assert_eq!(b.get(&k).await.unwrap(), Some(first.clone()));
    let p = Prefix::cluster("rs");
    let mut rx = b.watch(&p, first.mod_revision, None).await.unwrap();
    // `a` changes the key and compacts everything `b` has not read.
    let second = a
        .put(k.clone(), Precondition::MustExist, conformance::enc("v2"))
        .await
        .unwrap();
    create(&a_dyn, key("rs", "ns", "other"), "v").await;
    let head = a.current_revision();
    a.compact_now(Duration::ZERO).await.unwrap();
    assert_eq!(a.compacted_revision(), head);
    // Until it looks, `b` still serves its position.
    assert_eq!(b.current_revision(), first.mod_revision);
    b.catch_up().await.unwrap();
    assert_eq!(b.resyncs(), 1);
    assert_eq!(b.current_revision(), head);
    assert_eq!(b.compacted_revision(), head);
    match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
        Ok(Some(WatchEvent::Closed(CloseReason::TooSlow))) => {}
        other => panic!("expected the watch to close, got {other:?}"),
    }
    assert!(matches!(
        b.watch(&p, first.mod_revision, None).await.unwrap_err(),
        Error::Compacted { .. }
    ));
    // The cache was cleared: `b` returns the value `a` wrote, not the one it had cached.
    assert_eq!(b.get(&k).await.unwrap(), Some(second));
    let mut rx = b.watch(&p, head, None).await.unwrap();
    let third = a
        .put(k.clone(), Precondition::MustExist, conformance::enc("v3"))
        .await
        .unwrap();
    b.catch_up().await.unwrap();
    assert_eq!(conformance::next_event(&mut rx).await.kv, third);
    assert_eq!(b.get(&k).await.unwrap(), Some(third));
    assert_eq!(b.resyncs(), 1);
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

/// Other stores' writes arrive without any LISTEN connection (polling every tail
/// interval), and keep arriving when the LISTEN connections are killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_tailer_survives_without_listen() {
    let pg = server();
    let url = pg.create_database();
    let a = PostgresStorage::open(&url, opts()).await.unwrap();
    let b = PostgresStorage::open(&url, opts()).await.unwrap();
    let polling = PostgresStorage::open(
        &url,
        PostgresStorageOptions {
            listen: false,
            ..opts()
        },
    )
    .await
    .unwrap();
    let p = Prefix::cluster("ls");
    let mut rx_b = b.watch(&p, 0, None).await.unwrap();
    let mut rx_poll = polling.watch(&p, 0, None).await.unwrap();
    let a_dyn: Arc<dyn Storage> = a.clone();
    let mut written = Vec::new();
    for i in 0..10 {
        written.push(create(&a_dyn, key("ls", "ns", &format!("before{i}")), "v").await);
    }
    // Kill every LISTEN connection (those of `a` and `b`), once both are open.
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let task = tokio::spawn(conn);
    listen_connections(&client, 2).await;
    let killed: i64 = client
        .query_one(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE application_name = 'kplane-listen'",
            &[],
        )
        .await
        .unwrap()
        .get(0);
    assert_eq!(killed, 2);
    for i in 0..10 {
        written.push(create(&a_dyn, key("ls", "ns", &format!("after{i}")), "v").await);
    }
    for rx in [&mut rx_b, &mut rx_poll] {
        for want in &written {
            assert_eq!(&conformance::next_event(rx).await.kv, want);
        }
    }
    // The LISTEN connections come back.
    listen_connections(&client, 2).await;
    drop(client);
    let _ = task.await;
    for s in [a, b, polling] {
        s.shutdown().await.unwrap();
    }
}

/// Waits until `want` LISTEN connections of kplane are open (a hang guard).
async fn listen_connections(client: &tokio_postgres::Client, want: i64) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    loop {
        let n: i64 = client
            .query_one(
                "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'kplane-listen'",
                &[],
            )
            .await
            .unwrap()
            .get(0);
        if n == want {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{n} LISTEN connections"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// `history_rows` in the stats follows the log table (refreshed by the compactor).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_stats_report_history_rows() {
    let pg = server();
    let url = pg.create_database();
    let s = PostgresStorage::open(&url, opts()).await.unwrap();
    let writes = (0..500)
        .map(|i| {
            conformance::bw(
                key("hr", "ns", &format!("k{i}")),
                false,
                Precondition::MustNotExist,
                "v",
            )
        })
        .collect();
    for r in s.write_batch(writes).await {
        r.unwrap();
    }
    // The planner's count is refreshed by ANALYZE (autovacuum's, or this one).
    let (client, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let task = tokio::spawn(conn);
    client.batch_execute("ANALYZE kplane_log").await.unwrap();
    drop(client);
    let _ = task.await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
    while s.stats().history_rows != 500 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "history_rows {}",
            s.stats().history_rows
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    s.shutdown().await.unwrap();
}

/// Every commit notifies `kplane_log` with its last revision (the tailers' wake-up).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_commits_notify_the_log_channel() {
    use futures::StreamExt;
    let pg = server();
    let url = pg.create_database();
    let s = PostgresStorage::open(&url, opts()).await.unwrap();
    let (client, mut conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls)
        .await
        .unwrap();
    let (tx, mut notes) = tokio::sync::mpsc::unbounded_channel();
    let task = tokio::spawn(async move {
        let mut messages = futures::stream::poll_fn(move |cx| conn.poll_message(cx));
        while let Some(Ok(m)) = messages.next().await {
            if let tokio_postgres::AsyncMessage::Notification(n) = m {
                let _ = tx.send((n.channel().to_string(), n.payload().to_string()));
            }
        }
    });
    client.batch_execute("LISTEN kplane_log").await.unwrap();
    let dyn_s: Arc<dyn Storage> = s.clone();
    for i in 0..3 {
        let kv = create(&dyn_s, key("nt", "ns", &format!("k{i}")), "v").await;
        let note = tokio::time::timeout(Duration::from_secs(10), notes.recv())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(
            note,
            ("kplane_log".to_string(), kv.mod_revision.to_string())
        );
    }
    drop(client);
    let _ = task.await;
    s.shutdown().await.unwrap();
}

/// A list at a revision another store wrote (a client's continue token or
/// resourceVersion from another replica) catches up with the database first instead of
/// failing; a revision beyond the database's still fails with `FutureRevision`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_read_at_another_stores_revision_catches_up() {
    let pg = server();
    let url = pg.create_database();
    let a = PostgresStorage::open(&url, opts()).await.unwrap();
    let b = deaf_store(&url, opts()).await;
    let a_dyn: Arc<dyn Storage> = a.clone();
    let b_dyn: Arc<dyn Storage> = b.clone();
    let x = create(&a_dyn, key("fr", "ns", "x"), "v").await;
    assert!(b.current_revision() < x.mod_revision);
    let got = list_all(&b_dyn, &Prefix::cluster("fr"), Some(x.mod_revision)).await;
    assert_eq!(got, vec![x.clone()]);
    assert_eq!(b.current_revision(), x.mod_revision);
    let mut scan = b
        .scan(&Prefix::cluster("fr"), Some(x.mod_revision), 10)
        .await
        .unwrap();
    assert_eq!(scan.next_page().await.unwrap(), Some(vec![x.clone()]));
    let e = b
        .list(
            &Prefix::cluster("fr"),
            &ListOptions {
                at_revision: Some(x.mod_revision + 100),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap_err();
    assert!(matches!(e, Error::FutureRevision { .. }), "{e:?}");
    // A watch resumed on `b` from a revision `b` has not reached (the last one a client
    // saw through `a`) waits for it, then continues without a gap or a repeat.
    let writes: Vec<_> = (0..5)
        .map(|i| {
            conformance::bw(
                key("fr", "ns", &format!("w{i}")),
                false,
                Precondition::MustNotExist,
                "v",
            )
        })
        .collect();
    let written: Vec<_> = a
        .write_batch(writes)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert!(b.current_revision() < written[0].mod_revision);
    let mut rx = b
        .watch(&Prefix::cluster("fr"), written[2].mod_revision, None)
        .await
        .unwrap();
    conformance::assert_quiet(&mut rx).await;
    b.catch_up().await.unwrap();
    for want in &written[3..] {
        assert_eq!(&conformance::next_event(&mut rx).await.kv, want);
    }
    conformance::assert_quiet(&mut rx).await;
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

/// One catch-up of a store that is far behind reads the log in several snapshots (a
/// snapshot reads at most 64 pages of 512 events) and delivers every revision once, in
/// order: 40,000 writes through one store, caught up by another whose tailer neither
/// listens nor polls on its own in the test's time.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_catch_up_across_several_snapshots_misses_nothing() {
    let pg = server();
    let url = pg.create_database();
    let a = PostgresStorage::open(&url, opts()).await.unwrap();
    let b = deaf_store(
        &url,
        PostgresStorageOptions {
            watch_channel_capacity: 64 * 1024,
            ..opts()
        },
    )
    .await;
    let p = Prefix::cluster("far");
    let mut rx = b.watch(&p, 0, None).await.unwrap();
    // Above one snapshot's 64 x 512 events, and not a multiple of a page.
    let n = 40_000;
    let writes = (0..n)
        .map(|i| {
            conformance::bw(
                key("far", "cm", &format!("k{i:05}")),
                false,
                Precondition::MustNotExist,
                "v",
            )
        })
        .collect();
    let mut head = 0;
    for r in a.write_batch(writes).await {
        head = head.max(r.unwrap().mod_revision);
    }
    assert_eq!(head, n as Revision);
    assert_eq!(b.current_revision(), 0, "b's tailer ran on its own");
    b.catch_up().await.unwrap();
    assert_eq!(b.current_revision(), head);
    for want in 1..=head {
        let ev = conformance::next_event(&mut rx).await;
        assert_eq!(ev.kv.mod_revision, want);
        assert_eq!(ev.event_type, EventType::Added);
        assert_eq!(ev.kv.key.name, format!("k{:05}", want - 1));
    }
    conformance::assert_quiet(&mut rx).await;
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}
