//! The fixed sizes of the sled backend, each tested below, at, just above and ~10x its
//! value: the watch replay chunk ([`REPLAY_CHUNK`] events, or 16x that many log entries
//! scanned), a watcher's queue (`watch_channel_capacity`), the live events parked while
//! a watcher replays ([`REPLAY_BUFFER_FACTOR`] x its capacity), the write group
//! ([`MAX_WRITE_GROUP`]), the lag up to which a snapshot list scans the latest keyspace
//! ([`LATEST_SCAN_MAX_LAG`]) and the compaction chunk ([`CHUNK`]).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use super::compaction::CHUNK;
use super::event_log::SCAN_FACTOR;
use super::shared::LATEST_SCAN_MAX_LAG;
use super::MAX_WRITE_GROUP;
use crate::watch::{REPLAY_BUFFER_FACTOR, REPLAY_CHUNK};
use crate::{
    CloseReason, Encoder, Key, ListOptions, Precondition, Prefix, Revision, SledStorage,
    SledStorageOptions, Storage, WatchEvent, WatchReceiver,
};

const RES: &str = "/things";

fn enc(v: String) -> Encoder {
    Box::new(move |_| Ok(v.into_bytes()))
}

fn key(cluster: &str, name: &str) -> Key {
    Key::new(cluster, RES, "ns", name)
}

fn open(dir: &std::path::Path, opts: SledStorageOptions) -> Arc<SledStorage> {
    SledStorage::open(dir, opts).unwrap()
}

/// Writes `keys` (value = `v`) concurrently, creating or overwriting; returns the
/// revisions in the order of `keys`.
async fn write_all(s: &Arc<SledStorage>, keys: Vec<Key>, v: &str) -> Vec<Revision> {
    let tasks: Vec<_> = keys
        .into_iter()
        .map(|k| {
            let s = s.clone();
            let v = v.to_string();
            tokio::spawn(async move {
                let pre = match s.get(&k).await.unwrap() {
                    Some(_) => Precondition::MustExist,
                    None => Precondition::MustNotExist,
                };
                s.put(k, pre, enc(v)).await.unwrap().mod_revision
            })
        })
        .collect();
    let mut revs = Vec::with_capacity(tasks.len());
    for t in tasks {
        revs.push(t.await.unwrap());
    }
    revs
}

/// The next watch event's revision, failing on anything but an event.
async fn next_rev(rx: &mut WatchReceiver) -> Revision {
    loop {
        match tokio::time::timeout(Duration::from_secs(20), rx.recv()).await {
            Ok(Some(WatchEvent::Event(e))) => return e.kv.mod_revision,
            Ok(Some(WatchEvent::Progress(_))) => {}
            other => panic!("expected an event, got {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_is_complete_across_the_replay_chunk() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path(), SledStorageOptions::default());
    for n in [
        REPLAY_CHUNK - 1,
        REPLAY_CHUNK,
        REPLAY_CHUNK + 1,
        10 * REPLAY_CHUNK,
    ] {
        let cluster = format!("replay-{n}");
        let from = s.current_revision();
        let keys = (0..n).map(|i| key(&cluster, &format!("k{i:05}"))).collect();
        let mut want = write_all(&s, keys, "v").await;
        want.sort_unstable();
        let mut rx = s
            .watch(&Prefix::cluster(&cluster), from, None)
            .await
            .unwrap();
        let mut got = Vec::with_capacity(n);
        while got.len() < n {
            got.push(next_rev(&mut rx).await);
        }
        assert_eq!(got, want, "replay of {n} events");
    }
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_skips_long_runs_of_other_keys() {
    // A replay chunk also ends after SCAN_FACTOR x REPLAY_CHUNK log entries scanned without a
    // match.
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path(), SledStorageOptions::default());
    let scan = SCAN_FACTOR * REPLAY_CHUNK;
    let from = s.current_revision();
    let mut want = Vec::new();
    // (3x rather than 10x past the bound: each entry is a durable write, and 10x took
    // 15 s in a debug build on a busy machine.)
    for (i, others) in [scan - 1, scan, scan + 1, 3 * scan].into_iter().enumerate() {
        want.extend(write_all(&s, vec![key("mine", &format!("m{i}"))], "v").await);
        let keys = (0..others)
            .map(|j| key("other", &format!("o{i}-{j:06}")))
            .collect();
        write_all(&s, keys, "v").await;
    }
    want.extend(write_all(&s, vec![key("mine", "last")], "v").await);
    let mut rx = s.watch(&Prefix::cluster("mine"), from, None).await.unwrap();
    let mut got = Vec::new();
    while got.len() < want.len() {
        got.push(next_rev(&mut rx).await);
    }
    assert_eq!(got, want);
    s.shutdown().await.unwrap();
}

/// Reads `rx` until it is closed as too slow (with the notice, or ended without it) or
/// `all` events arrived (then checks that nothing follows); returns the events read and
/// whether it was closed.
/// Creates `n` keys `{prefix}{i}` in cluster `c`, one write each, and waits until dispatch
/// has offered every one of them to the watchers; returns the last revision written.
async fn create_and_dispatch(s: &Arc<SledStorage>, prefix: &str, n: usize) -> Revision {
    for i in 0..n {
        let k = key("c", &format!("{prefix}{i:06}"));
        s.put(k, Precondition::MustNotExist, enc("v".into()))
            .await
            .unwrap();
    }
    let end = s.current_revision();
    while s.dispatched_revision() < end {
        tokio::task::yield_now().await;
    }
    end
}

async fn drain(rx: &mut WatchReceiver, all: usize) -> (usize, bool) {
    let mut events = 0;
    loop {
        let wait = if events == all { 200 } else { 20_000 };
        match tokio::time::timeout(Duration::from_millis(wait), rx.recv()).await {
            Ok(Some(WatchEvent::Event(_))) => events += 1,
            Ok(Some(WatchEvent::Closed(CloseReason::TooSlow))) => return (events, true),
            // Closed while its queue stayed full for a while: the notice is given up and
            // the stream just ends.
            Ok(None) => return (events, true),
            Ok(Some(WatchEvent::Progress(_))) => {}
            Ok(other) => panic!("after {events} events: {other:?}"),
            Err(_) if events == all => return (events, false),
            Err(_) => panic!("stalled after {events} of {all} events"),
        }
    }
}

/// What a watcher that did not read while `writes` events arrived finds in its queue:
/// the number of events, and whether it was closed as too slow.
async fn unread_watcher(capacity: usize, writes: usize) -> (usize, bool) {
    let dir = tempfile::tempdir().unwrap();
    let opts = SledStorageOptions {
        watch_channel_capacity: capacity,
        ..Default::default()
    };
    let s = open(dir.path(), opts);
    let p = Prefix::cluster("c");
    let from = s.current_revision();
    let mut idle = s.watch(&p, from, None).await.unwrap();
    // Dispatch has offered every event to the idle watcher.
    assert_eq!(
        create_and_dispatch(&s, "k", writes).await,
        from + writes as Revision
    );
    let got = drain(&mut idle, writes).await;
    s.shutdown().await.unwrap();
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_watcher_queue_holds_its_capacity_less_the_close_notice() {
    // One slot is kept for the close notice: capacity - 1 events fit.
    for capacity in [16, SledStorageOptions::default().watch_channel_capacity] {
        for (writes, closed) in [
            (capacity - 2, false),
            (capacity - 1, false),
            (capacity, true),
            (capacity + 1, true),
        ] {
            let (events, was_closed) = unread_watcher(capacity, writes).await;
            assert_eq!(was_closed, closed, "capacity {capacity}, {writes} writes");
            assert_eq!(
                events,
                writes.min(capacity - 1),
                "capacity {capacity}, {writes} writes"
            );
        }
    }
    let (events, closed) = unread_watcher(16, 160).await;
    assert!(
        closed && events == 15,
        "10x: {events} events, closed {closed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_beyond_one_group_are_all_committed_in_bounded_groups() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path(), SledStorageOptions::default());
    // (3x rather than 10x the bound: three full groups and a partial one already show
    // the bound held group after group; 10x took 30 s in a debug build on a busy machine.)
    for n in [
        MAX_WRITE_GROUP - 1,
        MAX_WRITE_GROUP,
        MAX_WRITE_GROUP + 1,
        3 * MAX_WRITE_GROUP + 1,
    ] {
        let cluster = format!("g{n}");
        // Hold the writer in the encoder of one write while `n` more are queued, so the
        // next groups are as large as the bound allows.
        let (started_tx, started) = std::sync::mpsc::channel::<()>();
        let (release, released) = std::sync::mpsc::channel::<()>();
        let blocker: Encoder = Box::new(move |_| {
            let _ = started_tx.send(());
            let _ = released.recv();
            Ok(b"blocker".to_vec())
        });
        let held = {
            let s = s.clone();
            let k = key(&cluster, "blocker");
            tokio::spawn(async move { s.put(k, Precondition::MustNotExist, blocker).await })
        };
        tokio::task::spawn_blocking(move || started.recv())
            .await
            .unwrap()
            .unwrap();
        let before = s.stats();
        let rev0 = s.current_revision();
        let queued = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let tasks: Vec<_> = (0..n)
            .map(|i| {
                let s = s.clone();
                let k = key(&cluster, &format!("k{i:06}"));
                let queued = queued.clone();
                tokio::spawn(async move {
                    // The request is sent to the writer on the first poll.
                    let mut put = s.put(k, Precondition::MustNotExist, enc("v".into()));
                    let first = futures::poll!(&mut put);
                    queued.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let kv = match first {
                        std::task::Poll::Ready(r) => r,
                        std::task::Poll::Pending => put.await,
                    };
                    kv.unwrap().mod_revision
                })
            })
            .collect();
        while queued.load(std::sync::atomic::Ordering::SeqCst) < n {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        release.send(()).unwrap();
        held.await.unwrap().unwrap();
        let mut revs = Vec::with_capacity(n);
        for t in tasks {
            revs.push(t.await.unwrap());
        }
        revs.sort_unstable();
        revs.dedup();
        assert_eq!(revs.len(), n, "{n} writes, distinct revisions");
        assert_eq!(s.current_revision(), rev0 + n as Revision + 1);
        let after = s.stats();
        assert_eq!(
            after.commit_groups - before.commit_groups,
            1 + n.div_ceil(MAX_WRITE_GROUP) as u64,
            "groups for the blocker and {n} queued writes"
        );
        assert_eq!(after.max_group as usize, n.min(MAX_WRITE_GROUP));
        let listed = s
            .list(&Prefix::cluster(&cluster), &ListOptions::default(), None)
            .await
            .unwrap();
        assert_eq!(listed.items.len(), n + 1);
    }
    s.shutdown().await.unwrap();
}

/// `(name, value)` of every key in `prefix` at `rev`, read in pages of 97.
async fn state_at(s: &SledStorage, prefix: &Prefix, rev: Revision) -> Vec<(String, String)> {
    let mut opts = ListOptions {
        at_revision: Some(rev),
        limit: Some(97),
        ..Default::default()
    };
    let mut out = Vec::new();
    loop {
        let page = s.list(prefix, &opts, None).await.unwrap();
        out.extend(page.items.iter().map(|kv| {
            (
                kv.key.name.clone(),
                String::from_utf8_lossy(&kv.value).into_owned(),
            )
        }));
        match (page.more, page.items.last()) {
            (true, Some(last)) => opts.start_after = Some(last.key.clone()),
            _ => return out,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn snapshots_are_exact_on_both_sides_of_the_latest_scan_lag() {
    let dir = tempfile::tempdir().unwrap();
    let s = open(dir.path(), SledStorageOptions::default());
    let p = Prefix::cluster("c");
    // 200 keys at the snapshot; later writes rewrite them, delete some, add others.
    let keys: Vec<Key> = (0..200).map(|i| key("c", &format!("k{i:04}"))).collect();
    write_all(&s, keys.clone(), "old").await;
    let snap = s.current_revision();
    let want: BTreeMap<String, String> = keys
        .iter()
        .map(|k| (k.name.clone(), "old".to_string()))
        .collect();
    let want: Vec<(String, String)> = want.into_iter().collect();
    for i in 0..50 {
        s.delete(
            keys[i * 4].clone(),
            Precondition::MustExist,
            enc("gone".into()),
        )
        .await
        .unwrap();
    }
    let lag = LATEST_SCAN_MAX_LAG as usize;
    for (round, target) in [lag - 1, lag, lag + 1, 10 * lag].into_iter().enumerate() {
        let now = (s.current_revision() - snap) as usize;
        let batch: Vec<Key> = (now..target)
            .map(|i| {
                if i % 2 == 0 {
                    keys[1 + (i % 199)].clone()
                } else {
                    key("c", &format!("new{round}-{i:06}"))
                }
            })
            .collect();
        // Rewrites of a key in one batch would race for its precondition: one at a time.
        for chunk in batch.chunks(150) {
            let mut seen = std::collections::HashSet::new();
            let (first, again): (Vec<Key>, Vec<Key>) =
                chunk.iter().cloned().partition(|k| seen.insert(k.clone()));
            write_all(&s, first, "new").await;
            write_all(&s, again, "new").await;
        }
        assert_eq!((s.current_revision() - snap) as usize, target);
        assert_eq!(
            state_at(&s, &p, snap).await,
            want,
            "snapshot {target} revisions behind"
        );
    }
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compaction_across_its_chunk_keeps_the_state_exact() {
    for n in [CHUNK - 1, CHUNK, CHUNK + 1, 10 * CHUNK] {
        let dir = tempfile::tempdir().unwrap();
        let opts = SledStorageOptions {
            event_window: Duration::from_millis(300),
            compaction_interval: Duration::from_millis(20),
            ..Default::default()
        };
        let s = open(dir.path(), opts);
        let p = Prefix::cluster("c");
        // n log entries: 64 keys written and rewritten.
        let keys: Vec<Key> = (0..n)
            .map(|i| key("c", &format!("k{:03}", i % 64)))
            .collect();
        for chunk in keys.chunks(64) {
            write_all(&s, chunk.to_vec(), "v").await;
        }
        let last = s.current_revision();
        let want = state_at(&s, &p, last).await;
        tokio::time::sleep(Duration::from_millis(400)).await;
        // A write after the window moves the compaction point up to `last`.
        s.put(
            key("d", "after"),
            Precondition::MustNotExist,
            enc("v".into()),
        )
        .await
        .unwrap();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while s.compacted_revision() < last {
            assert!(
                tokio::time::Instant::now() < deadline,
                "no compaction of {n}"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Let the chunks run, then the state at the compaction point is still exact and
        // no history of it is left.
        let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
        while s.history_entries() > 0 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "history of {n} left"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        assert_eq!(state_at(&s, &p, last).await, want, "{n} entries");
        s.shutdown().await.unwrap();
    }
}

/// A watcher whose replay of `old` events is stuck (nobody reads) while `live` events
/// arrive: the events it then reads, and whether it was closed as too slow.
async fn stuck_replay(capacity: usize, old: usize, live: usize) -> (usize, bool) {
    let dir = tempfile::tempdir().unwrap();
    let opts = SledStorageOptions {
        watch_channel_capacity: capacity,
        ..Default::default()
    };
    let s = open(dir.path(), opts);
    let p = Prefix::cluster("c");
    let from = s.current_revision();
    // Registered once the old events were dispatched: every one of them is replayed, and
    // only the live events below are parked.
    let old_end = create_and_dispatch(&s, "old", old).await;
    assert_eq!(old_end, from + old as Revision);
    let mut stuck = s.watch(&p, from, None).await.unwrap();
    // Every live event has been offered to the stuck watcher.
    assert_eq!(
        create_and_dispatch(&s, "new", live).await,
        old_end + live as Revision
    );
    let got = drain(&mut stuck, old + live).await;
    s.shutdown().await.unwrap();
    got
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_events_parked_during_a_replay_are_bounded() {
    let capacity = 4;
    let buffer = capacity * REPLAY_BUFFER_FACTOR;
    // More history than the queue holds: the replay waits for a reader that never comes.
    let old = 3 * capacity;
    for (live, closed) in [
        (buffer - 1, false),
        (buffer, false),
        (buffer + 1, true),
        (10 * buffer, true),
    ] {
        let (events, was_closed) = stuck_replay(capacity, old, live).await;
        assert_eq!(was_closed, closed, "{live} live events");
        if !closed {
            assert_eq!(events, old + live, "{live} live events, all delivered");
        } else {
            assert!(events < old + live, "{live} live events");
        }
    }
}
