//! PostgreSQL streaming replication and failover under a [`PostgresStorage`], for real: a
//! primary and a hot standby made with `pg_basebackup -R`
//! (`kplane_storage::testing::postgres`), the store connected to both with
//! `target_session_attrs=read-write`, the primary crashed and the standby promoted.
//!
//! - With synchronous replication, under load: every acknowledged write survives, writes
//!   resume without reopening the store, every failure meanwhile is `Error::Timeout`
//!   (each call is bounded), and a watch continues without a gap or is closed.
//! - With asynchronous replication and commits the standby never received: the store
//!   notices the database went back, closes its watchers, forgets what it cached and
//!   writes again after every revision it published (the lost ones stay a gap: reads and
//!   watches there get `Compacted`); a second store that had published more raises the
//!   counter further, and a fresh store's watch from revision 0 passes over the gap.
//!
//! They need PostgreSQL installed (`.ci/run` installs it) and fail without it.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kplane_storage::testing::conformance::{self, key, list_all};
use kplane_storage::testing::postgres::PgServer;
use kplane_storage::{
    CloseReason, Error, Key, KeyValue, PostgresStorage, PostgresStorageOptions, Precondition,
    Prefix, Revision, Storage, WatchEvent,
};

/// The bound on any one call: a failover must make calls fail, never hang.
const CALL_BOUND: Duration = Duration::from_secs(30);

/// The address of database `db` on either server, the writable one chosen.
fn both(primary: &PgServer, standby: &PgServer, url: &str) -> String {
    let db = url.rsplit('/').next().unwrap();
    format!(
        "postgres://postgres@127.0.0.1:{},127.0.0.1:{}/{db}?target_session_attrs=read-write",
        primary.port(),
        standby.port()
    )
}

fn opts() -> PostgresStorageOptions {
    PostgresStorageOptions {
        connect_timeout: Duration::from_secs(3),
        statement_timeout: Duration::from_secs(10),
        watch_channel_capacity: 64 * 1024,
        ..Default::default()
    }
}

/// Waits until the standby replayed everything the primary wrote so far. The insert
/// location, not `pg_current_wal_lsn()` (the write location): with the test servers'
/// `synchronous_commit=off` a commit returns before its record is written out, so the
/// write location can still be below the last acknowledged commit.
fn replayed(primary: &PgServer, standby: &PgServer) {
    let lsn = primary.sql("SELECT pg_current_wal_insert_lsn()");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while standby.sql(&format!(
        "SELECT pg_last_wal_replay_lsn() >= '{lsn}'::pg_lsn"
    )) != "t"
    {
        assert!(std::time::Instant::now() < deadline, "the standby lags");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Creates `k` through `s`, bounded by [`CALL_BOUND`].
async fn put(s: &PostgresStorage, k: Key, v: &str) -> kplane_storage::Result<KeyValue> {
    tokio::time::timeout(
        CALL_BOUND,
        s.put(k, Precondition::MustNotExist, conformance::enc(v)),
    )
    .await
    .expect("a write hung during the failover")
}

/// Creates a key until it succeeds (each try bounded, failures only `Timeout`).
async fn put_until_ok(s: &PostgresStorage, k: Key, v: &str) -> KeyValue {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
    loop {
        match put(s, k.clone(), v).await {
            Ok(kv) => return kv,
            Err(Error::Timeout(_)) => {}
            Err(e) => panic!("a write failed with {e:?}, not Timeout"),
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "writes never resumed"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Synchronous replication, eight writers through one store, a second store (replica)
/// on the same address: the primary is killed mid-load and the standby promoted. Every
/// acknowledged write is there afterwards, writes resume through the same store, every
/// failure meanwhile is `Timeout` and no call hangs, a watch from revision 0 gets every
/// revision in order or is closed; both stores LISTEN on the new primary again, the
/// replica follows, and one store leads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_synchronous_failover_keeps_every_acknowledged_write() {
    PgServer::require();
    let primary = PgServer::start_with(&["synchronous_commit=on"]);
    let url = primary.create_database();
    let mut primary = primary;
    let standby = primary.standby();
    primary.make_synchronous();
    let s = PostgresStorage::open(&both(&primary, &standby, &url), opts())
        .await
        .unwrap();
    // A second replica on the same address: it follows `s`'s writes through the log.
    let r = PostgresStorage::open(&both(&primary, &standby, &url), opts())
        .await
        .unwrap();
    let leaders = [s.leadership(), r.leadership()];
    let p = Prefix::cluster("fo");
    let mut rx = s.watch(&p, 0, None).await.unwrap();

    let acked: Arc<Mutex<HashMap<Key, KeyValue>>> = Arc::default();
    let failures = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..8 {
        let (s, acked, failures, stop) = (s.clone(), acked.clone(), failures.clone(), stop.clone());
        writers.push(tokio::spawn(async move {
            let mut i = 0;
            while !stop.load(Ordering::Acquire) {
                let k = key("fo", "ns", &format!("w{w}-{i:06}"));
                i += 1;
                match put(&s, k.clone(), "v").await {
                    Ok(kv) => {
                        acked.lock().unwrap().insert(k, kv);
                    }
                    Err(Error::Timeout(_)) => {
                        failures.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                    Err(e) => panic!("a write failed with {e:?}, not Timeout"),
                }
            }
        }));
    }
    one_leader(&leaders).await;
    let count = |acked: &Mutex<HashMap<Key, KeyValue>>| acked.lock().unwrap().len();
    let wait_for = |n: usize| {
        let acked = acked.clone();
        async move {
            let deadline = tokio::time::Instant::now() + Duration::from_secs(120);
            while count(&acked) < n {
                assert!(tokio::time::Instant::now() < deadline, "writes stalled");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    };
    wait_for(300).await;
    // The primary crashes mid-load; the standby is promoted.
    let servers = tokio::task::spawn_blocking(move || {
        primary.kill();
        standby.promote();
        (primary, standby)
    })
    .await
    .unwrap();
    let at_promotion = count(&acked);
    // Writes resume on the new primary, through the same store.
    wait_for(at_promotion + 300).await;
    stop.store(true, Ordering::Release);
    for w in writers {
        w.await.unwrap();
    }
    let acked = acked.lock().unwrap().clone();

    // Every acknowledged write is in the database, as acknowledged.
    let s_dyn: Arc<dyn Storage> = s.clone();
    let listed: HashMap<Key, KeyValue> = list_all(&s_dyn, &p, None)
        .await
        .into_iter()
        .map(|kv| (kv.key.clone(), kv))
        .collect();
    for (k, kv) in &acked {
        assert_eq!(listed.get(k), Some(kv), "an acknowledged write is missing");
    }
    // The watch went on without a gap, or was closed (never skipped).
    let head = s.current_revision();
    let mut next: Revision = 1;
    let mut closed = false;
    while next <= head {
        match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
            Ok(Some(WatchEvent::Event(e))) => {
                assert_eq!(e.kv.mod_revision, next, "the watch skipped");
                next += 1;
            }
            Ok(Some(WatchEvent::Progress(_))) => {}
            Ok(Some(WatchEvent::Closed(CloseReason::TooSlow))) => {
                closed = true;
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    if !closed {
        // Every event the watch got is the database's.
        assert_eq!(next, head + 1);
    }
    // The other replica follows the new primary: its LISTEN connections are back (both
    // stores'), it publishes everything, and one of the two leads again.
    let servers = tokio::task::spawn_blocking(move || {
        let listening = "SELECT count(*) FROM pg_stat_activity \
                         WHERE application_name = 'kplane-listen'";
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        while servers.1.sql(listening) != "2" {
            assert!(
                std::time::Instant::now() < deadline,
                "LISTEN did not reconnect"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        servers
    })
    .await
    .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while r.current_revision() < head {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the replica is stuck"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let r_dyn: Arc<dyn Storage> = r.clone();
    assert_eq!(list_all(&r_dyn, &p, Some(head)).await.len(), listed.len());
    one_leader(&leaders).await;
    eprintln!(
        "failover: {} acknowledged, {} failed meanwhile, watch closed: {closed}, rewinds: {}",
        acked.len(),
        failures.load(Ordering::Relaxed),
        s.rewinds()
    );
    s.shutdown().await.unwrap();
    r.shutdown().await.unwrap();
    drop(servers);
}

/// Waits until exactly one of the stores leads (a hang guard, not a timing assertion).
async fn one_leader(leaders: &[tokio::sync::watch::Receiver<bool>]) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while leaders.iter().filter(|l| *l.borrow()).count() != 1 {
        assert!(tokio::time::Instant::now() < deadline, "no single leader");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// An asynchronous standby that never received the last commits is promoted: the
/// database is behind what the stores published. The store that notices first raises the
/// counter past its own revision (one gap row), closes its watchers (clients relist),
/// forgets its cache and writes again after every revision it published, without being
/// reopened; revisions in the lost range are refused (`Compacted`). A second store that
/// had published more (its own writes, which the first had not read) raises the counter
/// further, past its own. A fresh store's watch from revision 0 receives every row in
/// order, passing over the gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_store_recovers_when_a_failover_lost_commits() {
    PgServer::require();
    let mut primary = PgServer::start();
    let url = primary.create_database();
    let standby = primary.standby();
    let address = both(&primary, &standby, &url);
    // Two replicas that read the log only when told or when they write, so that `s` does
    // not read `r`'s lost writes and each notices the loss when the test says.
    let quiet = || PostgresStorageOptions {
        listen: false,
        tail_interval: Duration::from_secs(3600),
        ..opts()
    };
    let s = PostgresStorage::open(&address, quiet()).await.unwrap();
    let r = PostgresStorage::open(&address, quiet()).await.unwrap();
    let p = Prefix::cluster("lost");
    let mut kept = Vec::new();
    for i in 0..50 {
        kept.push(
            put(&s, key("lost", "ns", &format!("kept{i:03}")), "v")
                .await
                .unwrap(),
        );
    }
    let kept_head = s.current_revision();
    r.catch_up().await.unwrap();
    assert_eq!(r.current_revision(), kept_head);
    let (primary_back, standby) = tokio::task::spawn_blocking(move || {
        replayed(&primary, &standby);
        standby.stop_receiving();
        (primary, standby)
    })
    .await
    .unwrap();
    primary = primary_back;
    let mut rx = s.watch(&p, kept_head, None).await.unwrap();
    // Acknowledged by the primary, never received by the standby: 30 through `s`, then
    // 10 through `r`, which publishes `s`'s first (its writer reads them).
    let mut lost = Vec::new();
    for i in 0..30 {
        lost.push(
            put(&s, key("lost", "ns", &format!("lost{i:03}")), "v")
                .await
                .unwrap(),
        );
    }
    assert_eq!(s.current_revision(), kept_head + 30);
    for i in 0..10 {
        lost.push(
            put(&r, key("lost", "ns", &format!("more{i:03}")), "v")
                .await
                .unwrap(),
        );
    }
    let published_by_s = s.current_revision();
    assert_eq!(published_by_s, kept_head + 30);
    let published_by_r = r.current_revision();
    assert_eq!(published_by_r, kept_head + 40);
    // Cached now.
    assert_eq!(s.get(&lost[0].key).await.unwrap(), Some(lost[0].clone()));
    for want in kept_head + 1..=kept_head + 30 {
        assert_eq!(conformance::next_event(&mut rx).await.kv.mod_revision, want);
    }
    let standby = tokio::task::spawn_blocking(move || {
        primary.kill();
        standby.promote();
        drop(primary);
        standby
    })
    .await
    .unwrap();

    // Writes work again, after every revision `s` published: the lost ones stay a gap.
    let after = put_until_ok(&s, key("lost", "ns", "after"), "v").await;
    assert!(after.mod_revision > published_by_s);
    assert_eq!(s.rewinds(), 1);
    assert!(s.current_revision() >= after.mod_revision);
    // The watch was closed: its client relists.
    loop {
        match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
            Ok(Some(WatchEvent::Progress(_))) => {}
            Ok(Some(WatchEvent::Closed(CloseReason::TooSlow))) => break,
            other => panic!("expected the watch to close, got {other:?}"),
        }
    }
    // The cache forgot the lost writes; the kept ones are there.
    assert_eq!(s.get(&lost[0].key).await.unwrap(), None);
    assert_eq!(s.get(&kept[0].key).await.unwrap(), Some(kept[0].clone()));
    let s_dyn: Arc<dyn Storage> = s.clone();
    let listed = list_all(&s_dyn, &p, None).await;
    assert_eq!(
        listed.len(),
        kept.len() + 1,
        "at {}: {:?}",
        s.current_revision(),
        listed
            .iter()
            .map(|kv| (&kv.key.name, kv.mod_revision))
            .collect::<Vec<_>>()
    );
    // A lost revision means nothing now: reads and watches there get 410.
    let lost_rev = lost[0].mod_revision;
    assert!(matches!(
        s.watch(&p, lost_rev, None).await.unwrap_err(),
        Error::Compacted { requested, .. } if requested == lost_rev
    ));
    let opts_at = |at| kplane_storage::ListOptions {
        at_revision: Some(at),
        start_after: None,
        limit: None,
    };
    assert!(matches!(
        s_dyn.list(&p, &opts_at(lost_rev), None).await.unwrap_err(),
        Error::Compacted { .. }
    ));
    // `r` published more than `s` raised to: it raises the counter past its own.
    let r_rev = put_until_ok(&r, key("lost", "ns", "r-after"), "v").await;
    assert!(r_rev.mod_revision > published_by_r);
    assert!(r_rev.mod_revision > after.mod_revision);
    assert_eq!(r.rewinds(), 1);
    // `r`'s lost range holds `s`'s gap row and write (`r` had published other writes at
    // those revisions): `s` closes its watchers again, and a revision that meant two
    // states is refused by both.
    s.catch_up().await.unwrap();
    assert_eq!(s.rewinds(), 2);
    for store in [&s, &r] {
        assert!(matches!(
            store.watch(&p, after.mod_revision, None).await.unwrap_err(),
            Error::Compacted { .. }
        ));
    }
    // A new watch from the revision before `r`'s write sees it and the next writes.
    let mut rx = s.watch(&p, r_rev.mod_revision - 1, None).await.unwrap();
    let next = put(&s, key("lost", "ns", "next"), "v").await.unwrap();
    assert_eq!(next.mod_revision, r_rev.mod_revision + 1);
    assert_eq!(conformance::next_event(&mut rx).await.kv, r_rev);
    assert_eq!(conformance::next_event(&mut rx).await.kv, next);
    // A fresh store: a watch from 0 gets every row in order, passing over the gaps.
    let fresh = PostgresStorage::open(&address, opts()).await.unwrap();
    let mut all = fresh.watch(&p, 0, None).await.unwrap();
    let want: Vec<Revision> = kept
        .iter()
        .map(|kv| kv.mod_revision)
        .chain([after.mod_revision, r_rev.mod_revision, next.mod_revision])
        .collect();
    for w in want {
        assert_eq!(conformance::next_event(&mut all).await.kv.mod_revision, w);
    }
    conformance::assert_quiet(&mut all).await;
    fresh.shutdown().await.unwrap();
    r.shutdown().await.unwrap();
    s.shutdown().await.unwrap();
    drop(standby);
}

/// With synchronous replication and no standby answering, a write is not acknowledged
/// and does not hang: its `COMMIT` waits for a standby (PostgreSQL's statement timeout
/// does not cover that wait) until the store's bound, then fails with `Timeout`. Once the standby is back, writes are acknowledged
/// again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_synchronous_commit_is_not_acknowledged_without_a_standby() {
    PgServer::require();
    let primary = PgServer::start_with(&["synchronous_commit=on"]);
    let url = primary.create_database();
    let mut standby = primary.standby();
    primary.make_synchronous();
    let s = PostgresStorage::open(
        &url,
        PostgresStorageOptions {
            statement_timeout: Duration::from_secs(3),
            ..opts()
        },
    )
    .await
    .unwrap();
    put(&s, key("sync", "ns", "before"), "v").await.unwrap();
    let mut standby = tokio::task::spawn_blocking(move || {
        standby.stop();
        standby
    })
    .await
    .unwrap();
    match put(&s, key("sync", "ns", "alone"), "v").await {
        Err(Error::Timeout(_)) => {}
        other => panic!("a commit no standby has was answered with {other:?}"),
    }
    let standby = tokio::task::spawn_blocking(move || {
        standby.resume();
        standby
    })
    .await
    .unwrap();
    put_until_ok(&s, key("sync", "ns", "after"), "v").await;
    s.shutdown().await.unwrap();
    drop(standby);
}
