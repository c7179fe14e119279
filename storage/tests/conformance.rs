//! Storage conformance for the sled backend.
//!
//! [`sled_conformance`] runs the backend-independent suite
//! (`kplane_storage::testing::conformance`, the `testing` feature) against sled. The tests
//! after it cover sled-specific behaviour: compaction with a tiny window, slow watchers
//! with a tiny channel, restart, shutdown and durability across `kill -9`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use kplane_storage::testing::conformance::{
    self, assert_quiet, create, enc, key, list_all, next_event, val,
    write_batch_events_one_per_write, RES,
};
use kplane_storage::{
    CloseReason, Error, EventType, ListOptions, Precondition, Prefix, Revision, SledStorage,
    SledStorageOptions, Storage, Tombstone, WatchEvent, CLUSTER_DELETE_BATCH,
};

fn sled_opts() -> SledStorageOptions {
    SledStorageOptions {
        compaction_interval: Duration::from_millis(50),
        ..Default::default()
    }
}

/// Opens, retrying while a previous instance in this process still releases the lock.
fn open_retry(path: &std::path::Path, opts: SledStorageOptions) -> Arc<SledStorage> {
    let mut last = None;
    for _ in 0..100 {
        match SledStorage::open(path, opts.clone()) {
            Ok(s) => return s,
            Err(e) => last = Some(e),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("cannot reopen: {last:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_conformance() {
    let dir = tempfile::tempdir().unwrap();
    let s = SledStorage::open(dir.path(), sled_opts()).unwrap();
    conformance::run_all(s.clone()).await;
    s.shutdown().await.unwrap();
}

/// Batches below, at and above the group size (and across two chunks) commit with one
/// flush per chunk and still give one revision and one event per write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_write_batch_group_boundaries() {
    let dir = tempfile::tempdir().unwrap();
    let s = SledStorage::open(dir.path(), sled_opts()).unwrap();
    let dyn_s: Arc<dyn Storage> = s.clone();
    let max = kplane_storage::MAX_WRITE_GROUP;
    for n in [max - 1, max, max + 1, 2 * max + 1] {
        let groups_before = s.stats().commit_groups;
        write_batch_events_one_per_write(&dyn_s, n).await;
        let groups = s.stats().commit_groups - groups_before;
        // Two batches (creates, deletes) of ceil(n / max) chunks each.
        let chunks = n.div_ceil(max) as u64;
        assert!(
            groups <= 2 * chunks,
            "{n} writes took {groups} flushes, want at most {}",
            2 * chunks
        );
    }
    s.shutdown().await.unwrap();
}

/// The figures `/metrics` shows: the store's size on disk, and a compaction backlog that
/// is bounded by the compaction point and drains to 0 once compaction caught up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_stats_show_disk_size_and_compaction_backlog() {
    let dir = tempfile::tempdir().unwrap();
    let opts = SledStorageOptions {
        event_window: Duration::from_secs(3),
        compaction_interval: Duration::from_millis(20),
        ..Default::default()
    };
    let s = SledStorage::open(dir.path(), opts).unwrap();
    let dyn_s: Arc<dyn Storage> = s.clone();
    // Three compaction chunks (1024 event-log entries each) of creates and deletes.
    write_batch_events_one_per_write(&dyn_s, 1600).await;
    assert!(s.stats().disk_bytes > 0);
    let written = s.current_revision();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    let mut max_backlog = 0;
    loop {
        let st = s.stats();
        assert!(st.compaction_backlog <= s.compacted_revision(), "{st:?}");
        max_backlog = max_backlog.max(st.compaction_backlog);
        if s.compacted_revision() >= written && st.compaction_backlog == 0 {
            break;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "compaction did not finish: {st:?}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    eprintln!("largest compaction backlog seen: {max_backlog}");
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let s = open_short_window(dir.path());
    let p = Prefix::cluster("c");
    let k1 = key("c", "ns", "k1");
    let k2 = key("c", "ns", "k2");
    let v1 = create(&s, k1.clone(), "1").await;
    let v2 = s
        .put(k1.clone(), Precondition::MustExist, enc("2"))
        .await
        .unwrap();
    let d = create(&s, k2.clone(), "x").await;
    let snap_old = s.current_revision();
    let gone = s
        .delete(k2.clone(), Precondition::MustExist, enc("gone"))
        .await
        .unwrap();
    let state_at_c = list_all(&s, &p, None).await;
    let c_rev = s.current_revision();
    assert_eq!(s.compacted_revision(), 0);

    // Wait for the window to pass, then write newer data that stays in the window.
    tokio::time::sleep(Duration::from_millis(400)).await;
    let v3 = s
        .put(k1.clone(), Precondition::MustExist, enc("3"))
        .await
        .unwrap();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while s.compacted_revision() < c_rev {
        assert!(tokio::time::Instant::now() < deadline, "no compaction");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        s.compacted_revision(),
        c_rev,
        "newer writes are still in the window"
    );

    // Reads below the compaction point fail; at and above it they are exact.
    let e = s
        .list(
            &p,
            &ListOptions {
                at_revision: Some(snap_old),
                ..Default::default()
            },
            None,
        )
        .await;
    assert!(matches!(e, Err(Error::Compacted { .. })), "{e:?}");
    let e = s.watch(&p, v1.mod_revision, None).await;
    assert!(matches!(e, Err(Error::Compacted { .. })));
    assert_eq!(list_all(&s, &p, Some(c_rev)).await, state_at_c);
    assert_eq!(
        list_all(&s, &p, Some(c_rev)).await[0].mod_revision,
        v2.mod_revision
    );
    let now = list_all(&s, &p, None).await;
    assert_eq!(now.len(), 1);
    assert_eq!(now[0].mod_revision, v3.mod_revision);
    // Watching from the compaction point replays exactly the later write, with prev.
    let mut rx = s.watch(&p, c_rev, None).await.unwrap();
    let e = next_event(&mut rx).await;
    assert_eq!(e.kv.mod_revision, v3.mod_revision);
    assert_eq!(e.prev.as_deref(), Some(v2.value.as_ref()));
    assert_quiet(&mut rx).await;
    let _ = (d, gone);

    // Everything ages out eventually; the latest state survives.
    tokio::time::sleep(Duration::from_millis(400)).await;
    create(&s, key("c", "ns", "k3"), "x").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while s.compacted_revision() < v3.mod_revision {
        assert!(
            tokio::time::Instant::now() < deadline,
            "no second compaction"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(s.get(&k1).await.unwrap().unwrap(), v3);
    assert_eq!(list_all(&s, &p, None).await.len(), 2);
    let wild = Prefix {
        cluster: kplane_storage::Clusters::All,
        resource: Some(RES.into()),
        namespace: None,
    };
    assert_eq!(list_all(&s, &wild, None).await.len(), 2);

    // The compaction point survives a restart.
    let compacted = s.compacted_revision();
    s.shutdown().await.unwrap();
    drop(s);
    let s = open_retry(dir.path(), SledStorageOptions::default());
    assert_eq!(s.compacted_revision(), compacted);
    s.shutdown().await.unwrap();
}

/// A store whose watch queues hold only `capacity` entries (to make watchers slow).
/// A store whose event window (300 ms) passes within a test, compacted every 20 ms.
fn open_short_window(dir: &std::path::Path) -> Arc<dyn Storage> {
    let opts = SledStorageOptions {
        event_window: Duration::from_millis(300),
        compaction_interval: Duration::from_millis(20),
        ..Default::default()
    };
    SledStorage::open(dir, opts).unwrap()
}

fn open_with_watch_capacity(dir: &std::path::Path, capacity: usize) -> Arc<SledStorage> {
    let opts = SledStorageOptions {
        watch_channel_capacity: capacity,
        ..Default::default()
    };
    SledStorage::open(dir, opts).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_slow_watcher_is_closed_and_writer_not_blocked() {
    const WRITES: usize = 200;
    let dir = tempfile::tempdir().unwrap();
    // The slow watcher never reads, so it overflows once the capacity is reached (well
    // before WRITES); the fast one needs enough room to ride out scheduling noise on a
    // loaded machine (one slot is always kept for the close notice): 16 was seen to be too
    // little with a load average of 6 on 2 cores.
    let sled = open_with_watch_capacity(dir.path(), 64);
    let s: Arc<dyn Storage> = sled.clone();
    let mut slow = s.watch(&Prefix::cluster("c"), 0, None).await.unwrap();
    let mut fast = s.watch(&Prefix::cluster("c"), 0, None).await.unwrap();
    let fast_reader = tokio::spawn(async move {
        let mut n = 0;
        while n < WRITES {
            match fast.recv().await {
                Some(WatchEvent::Event(_)) => n += 1,
                Some(WatchEvent::Progress(_)) => {}
                other => panic!("fast watcher: {other:?}"),
            }
        }
    });
    let writes = async {
        for i in 0..WRITES {
            create(&s, key("c", "ns", &format!("k{i}")), "v").await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), writes)
        .await
        .expect("writer blocked");
    fast_reader.await.unwrap();
    let mut events = 0;
    loop {
        match slow.recv().await {
            Some(WatchEvent::Event(_)) => events += 1,
            Some(WatchEvent::Closed(CloseReason::TooSlow)) => break,
            other => panic!("slow watcher: {other:?}"),
        }
    }
    assert!(
        events < 64,
        "the slow watcher got {events} events past its capacity"
    );
    assert!(slow.recv().await.is_none(), "closed watcher must end");
    // It is unregistered.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while sled.watcher_count() > 1 {
        assert!(tokio::time::Instant::now() < deadline);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_restart_keeps_data_and_revisions() {
    let dir = tempfile::tempdir().unwrap();
    let s: Arc<dyn Storage> = SledStorage::open(dir.path(), sled_opts()).unwrap();
    let a = create(&s, key("c", "ns", "a"), "1").await;
    let b = s
        .put(key("c", "ns", "a"), Precondition::MustExist, enc("2"))
        .await
        .unwrap();
    let d = create(&s, key("c", "ns", "d"), "1").await;
    let gone = s
        .delete(key("c", "ns", "d"), Precondition::MustExist, enc("x"))
        .await
        .unwrap();
    let rev = s.current_revision();
    assert_eq!(rev, gone.mod_revision);
    s.shutdown().await.unwrap();
    // After shutdown: writes and watches are refused.
    let e = s
        .put(key("c", "ns", "z"), Precondition::MustNotExist, enc("1"))
        .await;
    assert!(matches!(e, Err(Error::ShuttingDown)));
    assert!(matches!(
        s.watch(&Prefix::cluster("c"), 0, None).await,
        Err(Error::ShuttingDown)
    ));
    drop(s);

    let s: Arc<dyn Storage> = open_retry(dir.path(), sled_opts());
    assert_eq!(s.current_revision(), rev);
    assert_eq!(s.get(&key("c", "ns", "a")).await.unwrap().unwrap(), b);
    assert!(s.get(&key("c", "ns", "d")).await.unwrap().is_none());
    let next = create(&s, key("c", "ns", "e"), "1").await;
    assert_eq!(next.mod_revision, rev + 1);
    // History and the event log survive too: replay with prev values.
    let mut rx = s.watch(&Prefix::cluster("c"), 0, None).await.unwrap();
    let revs: Vec<_> = [
        a.mod_revision,
        b.mod_revision,
        d.mod_revision,
        gone.mod_revision,
        next.mod_revision,
    ]
    .to_vec();
    for (i, want) in revs.iter().enumerate() {
        let e = next_event(&mut rx).await;
        assert_eq!(e.kv.mod_revision, *want);
        if i == 1 {
            assert_eq!(e.prev.as_deref(), Some(a.value.as_ref()));
        }
    }
    let old = list_all(&s, &Prefix::cluster("c"), Some(d.mod_revision)).await;
    assert_eq!(old.len(), 2);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_shutdown_finishes_pending_and_closes_watchers() {
    let dir = tempfile::tempdir().unwrap();
    let s: Arc<dyn Storage> = SledStorage::open(dir.path(), sled_opts()).unwrap();
    let mut rx = s.watch(&Prefix::cluster("c"), 0, None).await.unwrap();
    let mut pending = Vec::new();
    for i in 0..50 {
        let s = s.clone();
        pending.push(tokio::spawn(async move {
            s.put(
                key("c", "ns", &format!("k{i}")),
                Precondition::MustNotExist,
                enc("v"),
            )
            .await
        }));
    }
    tokio::task::yield_now().await;
    s.shutdown().await.unwrap();
    let mut ok = 0;
    for p in pending {
        match p.await.unwrap() {
            Ok(_) => ok += 1,
            Err(Error::ShuttingDown) => {}
            Err(e) => panic!("{e:?}"),
        }
    }
    let mut events = 0;
    loop {
        match tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .unwrap()
        {
            Some(WatchEvent::Event(_)) => events += 1,
            Some(WatchEvent::Closed(CloseReason::ShuttingDown)) => break,
            other => panic!("{other:?}"),
        }
    }
    assert_eq!(
        events, ok,
        "every acknowledged write was published before closing"
    );
    assert!(rx.recv().await.is_none());
    drop(s);
    let s = open_retry(dir.path(), sled_opts());
    assert_eq!(s.count(&Prefix::cluster("c")).await.unwrap(), ok as u64);
    s.shutdown().await.unwrap();
}

/// Kills the child process if the test fails before doing so itself.
struct KillOnDrop(std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

const CRASH_ENV: &str = "KPLANE_STORAGE_CRASH_CHILD_DIR";

/// Child role of [`sled_acknowledged_writes_survive_kill_9`]: writes forever, printing each
/// acknowledged write. A no-op in a normal test run.
#[test]
fn crash_child() {
    let Ok(dir) = std::env::var(CRASH_ENV) else {
        return;
    };
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async move {
        let s: Arc<dyn Storage> = SledStorage::open(&dir, SledStorageOptions::default()).unwrap();
        let out = Arc::new(std::sync::Mutex::new(std::io::stdout()));
        let mut tasks = Vec::new();
        for t in 0..8 {
            let s = s.clone();
            let out = out.clone();
            tasks.push(tokio::spawn(async move {
                for i in 0u64.. {
                    let name = format!("t{t}-{i}");
                    let kv = create(&s, key("crash", "ns", &name), &name).await;
                    let mut o = out.lock().unwrap();
                    use std::io::Write;
                    writeln!(o, "ACK {name} {}", kv.mod_revision).unwrap();
                    o.flush().unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_acknowledged_writes_survive_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let mut floor: Revision = 0;
    for round in 0..2 {
        let child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
            .env(CRASH_ENV, dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let mut child = KillOnDrop(child);
        let stdout = child.0.stdout.take().unwrap();
        let mut acked = Vec::new();
        for line in BufReader::new(stdout).lines() {
            let line = line.unwrap();
            if let Some(rest) = line.strip_prefix("ACK ") {
                let (name, rev) = rest.split_once(' ').unwrap();
                acked.push((name.to_string(), rev.parse::<Revision>().unwrap()));
                if acked.len() == 300 {
                    child.0.kill().unwrap(); // SIGKILL, mid-stream
                    break;
                }
            }
        }
        child.0.wait().unwrap();
        assert_eq!(acked.len(), 300, "child died early (round {round})");
        // The recovered store continued the revision sequence.
        assert!(acked.iter().all(|(_, r)| *r > floor));
        let s = open_retry(dir.path(), SledStorageOptions::default());
        let max = acked.iter().map(|(_, r)| *r).max().unwrap();
        assert!(s.current_revision() >= max);
        for (name, rev) in &acked {
            let kv = s.get(&key("crash", "ns", name)).await.unwrap();
            let kv = kv.unwrap_or_else(|| panic!("acknowledged write {name}@{rev} lost"));
            assert_eq!(kv.mod_revision, *rev);
            assert_eq!(val(&kv), format!("{name}@{rev}"));
        }
        s.shutdown().await.unwrap();
        drop(s);
        // Round two reuses the key names: delete them first.
        if round == 0 {
            let s = open_retry(dir.path(), SledStorageOptions::default());
            let p = Prefix::cluster("crash");
            let items = list_all(&(s.clone() as Arc<dyn Storage>), &p, None).await;
            for kv in items {
                s.delete(kv.key, Precondition::MustExist, enc("x"))
                    .await
                    .unwrap();
            }
            floor = s.current_revision();
            s.shutdown().await.unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_watcher_stalled_during_replay_is_closed() {
    let dir = tempfile::tempdir().unwrap();
    let sled = open_with_watch_capacity(dir.path(), 4);
    let s: Arc<dyn Storage> = sled.clone();
    for i in 0..10 {
        create(&s, key("c", "ns", &format!("old{i}")), "v").await;
    }
    // Replay blocks on the full channel; live events pile up until the watcher is closed.
    let mut rx = s.watch(&Prefix::cluster("c"), 0, None).await.unwrap();
    let writes = async {
        for i in 0..100 {
            create(&s, key("c", "ns", &format!("new{i}")), "v").await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), writes)
        .await
        .expect("writer blocked");
    let mut events = 0;
    loop {
        match tokio::time::timeout(Duration::from_secs(5), rx.recv())
            .await
            .unwrap()
        {
            Some(WatchEvent::Event(_)) => events += 1,
            Some(WatchEvent::Closed(CloseReason::TooSlow)) => break,
            other => panic!("{other:?}"),
        }
    }
    assert!(events < 110);
    assert!(rx.recv().await.is_none());
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_live_watchers_have_no_task() {
    let dir = tempfile::tempdir().unwrap();
    let sled = SledStorage::open(dir.path(), sled_opts()).unwrap();
    let s: Arc<dyn Storage> = sled.clone();
    let old = create(&s, key("t", "ns", "old"), "v").await;
    let tasks = || {
        tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks()
    };
    let before = tasks();
    // Watchers at the current revision are live at once: no task each.
    let mut live = Vec::new();
    for i in 0..100 {
        let prefix = Prefix::namespace("t", RES, format!("n{}", i % 3));
        let progress = (i % 2 == 0).then_some(Duration::from_millis(20));
        live.push(
            s.watch(&prefix, s.current_revision(), progress)
                .await
                .unwrap(),
        );
    }
    assert_eq!(tasks(), before);
    // A watcher with history to replay has a task until it is live.
    let mut replaying = s.watch(&Prefix::cluster("t"), 0, None).await.unwrap();
    assert_eq!(
        next_event(&mut replaying).await.kv.mod_revision,
        old.mod_revision
    );
    let fresh = create(&s, key("t", "n1", "x"), "v").await;
    assert_eq!(
        next_event(&mut replaying).await.kv.mod_revision,
        fresh.mod_revision
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while tasks() != before {
        assert!(
            tokio::time::Instant::now() < deadline,
            "replay task did not end"
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    for rx in live.iter_mut().skip(1).step_by(3) {
        assert_eq!(next_event(rx).await.kv.mod_revision, fresh.mod_revision);
    }
    // A watcher with progress gets it from its own receiver.
    match tokio::time::timeout(Duration::from_secs(5), live[0].recv()).await {
        Ok(Some(WatchEvent::Progress(r))) => assert!(r >= fresh.mod_revision),
        other => panic!("{other:?}"),
    }
    assert_eq!(sled.watcher_count(), 101);
    drop(live);
    drop(replaying);
    assert_eq!(sled.watcher_count(), 0);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_many_watchers() {
    let dir = tempfile::tempdir().unwrap();
    let sled = SledStorage::open(dir.path(), SledStorageOptions::default()).unwrap();
    let s: Arc<dyn Storage> = sled.clone();
    let from = s.current_revision();
    // 1,000 watchers on one namespace, 20,000 single-cluster watchers, one wildcard.
    let mut same_ns = Vec::new();
    for _ in 0..1000 {
        same_ns.push(
            s.watch(&Prefix::namespace("hot", RES, "ns"), from, None)
                .await
                .unwrap(),
        );
    }
    let mut per_cluster = Vec::new();
    for i in 0..20_000 {
        per_cluster.push(
            s.watch(&Prefix::cluster(format!("tenant-{i}")), from, None)
                .await
                .unwrap(),
        );
    }
    let wild = Prefix {
        cluster: kplane_storage::Clusters::All,
        resource: Some(RES.into()),
        namespace: None,
    };
    let mut wild_rx = s.watch(&wild, from, None).await.unwrap();
    assert_eq!(sled.watcher_count(), 21_001);

    let start = std::time::Instant::now();
    let mut revs = Vec::new();
    for i in 0..20 {
        revs.push(
            create(&s, key("hot", "ns", &format!("k{i}")), "v")
                .await
                .mod_revision,
        );
        create(&s, key(&format!("tenant-{i}"), "ns", "x"), "v").await;
    }
    let elapsed = start.elapsed();
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    for rx in &mut same_ns {
        for want in &revs {
            assert_eq!(next_event(rx).await.kv.mod_revision, *want);
        }
    }
    for (i, rx) in per_cluster.iter_mut().enumerate() {
        if i < 20 {
            assert_eq!(next_event(rx).await.kv.key.cluster, format!("tenant-{i}"));
        }
        assert!(rx.try_recv().is_none());
    }
    for _ in 0..40 {
        next_event(&mut wild_rx).await;
    }
    drop(same_ns);
    drop(per_cluster);
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while sled.watcher_count() > 1 {
        assert!(
            tokio::time::Instant::now() < deadline,
            "dropped watchers not unregistered"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    s.shutdown().await.unwrap();
}

/// Creates `n` keys in `cluster`, 100 per batch; returns the last revision.
async fn fill_cluster(s: &Arc<dyn Storage>, cluster: &str, n: usize) -> Revision {
    let keys: Vec<_> = (0..n)
        .map(|i| key(cluster, "ns", &format!("k{i:05}")))
        .collect();
    for chunk in keys.chunks(100) {
        let writes = chunk
            .iter()
            .map(|k| kplane_storage::BatchWrite {
                key: k.clone(),
                delete: false,
                precondition: Precondition::MustNotExist,
                encode: enc("v"),
            })
            .collect();
        for r in s.write_batch(writes).await {
            r.unwrap();
        }
    }
    s.current_revision()
}

fn raw_tombstone() -> Tombstone {
    Arc::new(|kv: &kplane_storage::KeyValue, _| Ok(kv.value.to_vec()))
}

/// A cluster delete commits one group (one flush) per batch, each at most the batch size
/// (itself at most [`kplane_storage::MAX_WRITE_GROUP`]), so other writes are never held
/// behind more than one batch. Clusters below, at, above and 10x the suggested batch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_cluster_delete_commits_one_group_per_batch() {
    let dir = tempfile::tempdir().unwrap();
    let sled = SledStorage::open(dir.path(), sled_opts()).unwrap();
    let s: Arc<dyn Storage> = sled.clone();
    let b = CLUSTER_DELETE_BATCH;
    let max = kplane_storage::MAX_WRITE_GROUP;
    for (n, batch, groups) in [
        (b - 1, b, 1),
        (b, b, 1),
        (b + 1, b, 2),
        (10 * b, b, 10),
        (1201, 500, 3),
        (max + 1, usize::MAX, 2),
    ] {
        let cluster = format!("c{n}b{batch}");
        fill_cluster(&s, &cluster, n).await;
        let before = sled.stats();
        let deleted = s
            .delete_cluster(&cluster, batch, raw_tombstone())
            .await
            .unwrap();
        assert_eq!(deleted, n as u64);
        let after = sled.stats();
        assert_eq!(
            after.commit_groups - before.commit_groups,
            groups,
            "{n} keys in batches of {batch}"
        );
        assert_eq!(
            after.max_group,
            before.max_group.max(batch.min(n).min(max) as u64),
            "{n} keys in batches of {batch}"
        );
    }
    s.shutdown().await.unwrap();
}

/// A cluster delete cut short by a shutdown (as by a crash) is finished by calling it
/// again after a restart: every key is deleted exactly once, with one event each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_cluster_delete_resumes_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let s: Arc<dyn Storage> = SledStorage::open(dir.path(), sled_opts()).unwrap();
    let n = 1201;
    let start = fill_cluster(&s, "gone", n).await;
    let p = Prefix::cluster("gone");
    let mut rx = s.watch(&p, start, None).await.unwrap();
    let deleting = {
        let s = s.clone();
        tokio::spawn(async move { s.delete_cluster("gone", 100, raw_tombstone()).await })
    };
    // Stop the store once the first batch is in.
    let first = next_event(&mut rx).await;
    assert_eq!(first.kv.mod_revision, start + 1);
    s.shutdown().await.unwrap();
    match deleting.await.unwrap() {
        Ok(d) => assert_eq!(d, n as u64, "finished before the shutdown"),
        Err(Error::ShuttingDown) => {}
        Err(e) => panic!("{e:?}"),
    }
    drop(rx);
    drop(s);

    let s: Arc<dyn Storage> = open_retry(dir.path(), sled_opts());
    let left = s.count(&p).await.unwrap();
    assert!(left < n as u64, "the first batch is durable");
    assert_eq!(
        s.delete_cluster("gone", 100, raw_tombstone())
            .await
            .unwrap(),
        left
    );
    assert_eq!(s.count(&p).await.unwrap(), 0);
    let mut replay = s.watch(&p, start, None).await.unwrap();
    let mut keys = std::collections::BTreeSet::new();
    for i in 0..n {
        let e = next_event(&mut replay).await;
        assert_eq!(e.event_type, EventType::Deleted);
        assert_eq!(e.kv.mod_revision, start + 1 + i as Revision);
        keys.insert(e.kv.key.clone());
    }
    assert_eq!(keys.len(), n);
    assert_quiet(&mut replay).await;
    s.shutdown().await.unwrap();
}

/// The conformance check for scans that outlast the event window, with a short window.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_scan_outlasting_the_window_fails() {
    let dir = tempfile::tempdir().unwrap();
    let s = open_short_window(dir.path());
    conformance::scan_outlasting_the_window_fails(&s).await;
    s.shutdown().await.unwrap();
}
