//! Tests of groups written entry by entry ([`super::ops`]): while the writer is part-way
//! through a group's log entries or its latest values, readers at the published revision
//! (get, list by key range and by the wildcard index, paged lists, a watch from the list's
//! revision) see the state before the group exactly, and no caller has its answer before
//! the flush; a crash part-way through the log entries loses the whole group (never
//! acknowledged) and one part-way through the latest values is repaired on open. Group sizes
//! from one write to more than [`MAX_WRITE_GROUP`].

use std::sync::mpsc as std_mpsc;
use std::sync::Arc;
use std::time::Duration;

use super::ops::Target;
use super::{SledStorage, SledStorageOptions, MAX_WRITE_GROUP};
use crate::{
    BatchWrite, Encoder, EventType, Key, ListOptions, Precondition, Prefix, Revision, Storage,
    WatchEvent, WatchReceiver,
};

const RES: &str = "/things";

type State = Vec<(String, String)>;

fn opts() -> SledStorageOptions {
    SledStorageOptions {
        watch_channel_capacity: 4 * MAX_WRITE_GROUP,
        ..SledStorageOptions::default()
    }
}

fn enc(v: &str) -> Encoder {
    let v = v.to_string();
    Box::new(move |_| Ok(v.into_bytes()))
}

fn key(name: &str) -> Key {
    Key::new("c", RES, "ns", name)
}

fn wildcard() -> Prefix {
    Prefix {
        cluster: crate::Clusters::All,
        resource: Some(RES.into()),
        namespace: None,
    }
}

fn write(name: &str, delete: bool, pre: Precondition, v: &str) -> BatchWrite {
    BatchWrite {
        key: key(name),
        delete,
        precondition: pre,
        encode: enc(v),
    }
}

/// `n` keys `kNNNNN` = `v1`, and a group over them: every third key updated to `v2`, every
/// third deleted, one new key `nNNNNN` per three; one update when `n` is 1.
struct Case {
    initial: State,
    after: State,
    group: Vec<BatchWrite>,
}

fn case(n: usize) -> Case {
    let mut initial = Vec::new();
    let mut after = Vec::new();
    let mut group = Vec::new();
    for i in 0..n {
        let name = format!("k{i:05}");
        initial.push((name.clone(), "v1".to_string()));
        match i % 3 {
            0 => {
                group.push(write(&name, false, Precondition::MustExist, "v2"));
                after.push((name, "v2".to_string()));
            }
            1 => group.push(write(&name, true, Precondition::MustExist, "gone")),
            _ => after.push((name, "v1".to_string())),
        }
    }
    for i in 0..n / 3 {
        let name = format!("n{i:05}");
        group.push(write(&name, false, Precondition::MustNotExist, "new"));
        after.push((name, "new".to_string()));
    }
    Case {
        initial,
        after,
        group,
    }
}

async fn setup(dir: &std::path::Path, c: &Case) -> (Arc<SledStorage>, Revision) {
    let s = SledStorage::open(dir, opts()).unwrap();
    let writes = c
        .initial
        .iter()
        .map(|(k, v)| write(k, false, Precondition::MustNotExist, v))
        .collect();
    for r in s.write_batch(writes).await {
        r.unwrap();
    }
    let rev = s.current_revision();
    (s, rev)
}

fn state(items: &[crate::KeyValue]) -> State {
    items
        .iter()
        .map(|kv| {
            (
                kv.key.name.clone(),
                String::from_utf8(kv.value.to_vec()).unwrap(),
            )
        })
        .collect()
}

/// Lists `prefix` at `at` (the current revision when `None`) in pages of `limit`; returns
/// the state and the revision every page reported.
async fn list(
    s: &SledStorage,
    prefix: &Prefix,
    at: Option<Revision>,
    limit: Option<usize>,
) -> (State, Revision) {
    let mut out = Vec::new();
    let mut start_after = None;
    let mut at = at;
    loop {
        let page = s
            .list(
                prefix,
                &ListOptions {
                    at_revision: at,
                    start_after: start_after.clone(),
                    limit,
                },
                None,
            )
            .await
            .unwrap();
        assert!(at.is_none_or(|a| a == page.revision));
        at = Some(page.revision);
        out.extend(state(&page.items));
        start_after = page.items.last().map(|kv| kv.key.clone());
        if !page.more {
            return (out, page.revision);
        }
    }
}

/// Everything a reader can see of the store, checked against `want` at revision `rev`
/// (but the count, which is approximate while a group is being applied).
async fn assert_reads(s: &SledStorage, want: &State, rev: Revision) {
    assert_reads_but_count(s, want, rev).await;
    assert_eq!(
        s.count(&Prefix::cluster("c")).await.unwrap(),
        want.len() as u64
    );
}

async fn assert_reads_but_count(s: &SledStorage, want: &State, rev: Revision) {
    assert_eq!(s.current_revision(), rev);
    for (prefix, limit) in [
        (Prefix::cluster("c"), None),
        (Prefix::cluster("c"), Some(97)),
        (wildcard(), None),
        (wildcard(), Some(97)),
    ] {
        let (got, at) = list(s, &prefix, None, limit).await;
        assert_eq!(at, rev);
        assert_eq!(&got, want, "{prefix:?} limit {limit:?}");
    }
    let (got, _) = list(s, &Prefix::cluster("c"), Some(rev), Some(500)).await;
    assert_eq!(&got, want, "list at {rev}");
    for (name, value) in want.iter().step_by(7) {
        let kv = s.get(&key(name)).await.unwrap().unwrap();
        assert_eq!((name, value.as_bytes()), (name, &kv.value[..]));
    }
    // Updated, deleted, untouched and created by the group.
    for name in ["k00000", "k00001", "k00002", "n00000"] {
        let got = s.get(&key(name)).await.unwrap().map(|kv| kv.value.to_vec());
        let expected = want
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_bytes().to_vec());
        assert_eq!(got, expected, "{name}");
    }
}

/// Makes the writer stop before the `at`-th write of its next group to `target`, until the
/// returned sender is used (or dropped); the receiver says the writer got there.
fn pause_at(
    s: &SledStorage,
    target: Target,
    at: usize,
) -> (std_mpsc::Receiver<()>, std_mpsc::SyncSender<()>) {
    let (reached_tx, reached_rx) = std_mpsc::sync_channel(1);
    let (release_tx, release_rx) = std_mpsc::sync_channel::<()>(1);
    let mut fired = false;
    *s.shared.apply_hook.lock().unwrap() = Some(Box::new(move |t, i| {
        if !fired && t == target && i == at {
            fired = true;
            let _ = reached_tx.send(());
            let _ = release_rx.recv();
        }
        Ok(())
    }));
    (reached_rx, release_tx)
}

/// Makes the writer fail (as if it crashed) at the `at`-th write of its next group to
/// `target`, and at every write after it.
fn crash_at(s: &SledStorage, target: Target, at: usize) {
    let mut crashed = false;
    *s.shared.apply_hook.lock().unwrap() = Some(Box::new(move |t, i| {
        if crashed || (t == target && i == at) {
            crashed = true;
            return Err(sled::Error::Unsupported("simulated crash".into()));
        }
        Ok(())
    }));
}

async fn next_event(rx: &mut WatchReceiver) -> Arc<crate::Event> {
    loop {
        match tokio::time::timeout(Duration::from_secs(30), rx.recv()).await {
            Ok(Some(WatchEvent::Event(e))) => return e,
            Ok(Some(WatchEvent::Progress(_))) => {}
            other => panic!("expected an event, got {other:?}"),
        }
    }
}

fn reopen(dir: &std::path::Path) -> Arc<SledStorage> {
    for _ in 0..100 {
        if let Ok(s) = SledStorage::open(dir, opts()) {
            return s;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("cannot reopen");
}

async fn paused_group_is_invisible(n: usize, target: Target) {
    let dir = tempfile::tempdir().unwrap();
    let c = case(n);
    let (s, before) = setup(dir.path(), &c).await;
    let m = c.group.len();
    assert_reads(&s, &c.initial, before).await;
    // Half-way through the group's log entries (2 per write, then the marker), or through
    // its latest values (at least one per write, then the revision counter).
    let at = match target {
        Target::Log => m,
        Target::Latest => m / 2,
    };
    let (reached, release) = pause_at(&s, target, at);
    let writer = {
        let s = s.clone();
        let group = c.group;
        tokio::spawn(async move { s.write_batch(group).await })
    };
    tokio::task::spawn_blocking(move || reached.recv().unwrap())
        .await
        .unwrap();
    assert_reads_but_count(&s, &c.initial, before).await;
    let mut rx = s.watch(&Prefix::cluster("c"), before, None).await.unwrap();
    // Not acknowledged before the group is whole (and, for the log, flushed).
    assert!(!writer.is_finished());
    release.send(()).unwrap();
    for r in writer.await.unwrap() {
        r.unwrap();
    }
    let after = before + m as Revision;
    assert_reads(&s, &c.after, after).await;
    // The watch from the paused list's revision gets each write once, in order.
    for rev in before + 1..=after {
        let e = next_event(&mut rx).await;
        assert_eq!(e.kv.mod_revision, rev);
    }
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_part_way_through_its_log_entries_is_invisible_to_readers() {
    for n in [1, 300, 9000] {
        paused_group_is_invisible(n, Target::Log).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_group_part_way_through_its_latest_values_is_invisible_to_readers() {
    for n in [1, 300, 9000] {
        paused_group_is_invisible(n, Target::Latest).await;
    }
}

#[test]
fn the_large_case_is_larger_than_a_write_group() {
    assert!(case(9000).group.len() > MAX_WRITE_GROUP);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_part_way_through_a_groups_log_entries_loses_the_whole_group() {
    let n = 300;
    let m = case(n).group.len();
    // The first entry, the first index entry, the last index entry, the end marker.
    for at in [0, 1, 2 * m - 1, 2 * m] {
        let dir = tempfile::tempdir().unwrap();
        let c = case(n);
        let (s, before) = setup(dir.path(), &c).await;
        crash_at(&s, Target::Log, at);
        for r in s.write_batch(c.group).await {
            assert!(r.is_err(), "crash at {at}: a write was acknowledged");
        }
        // The shutdown flushes what the writer wrote: the worst case, the cut group's
        // first entries on disk.
        s.shutdown().await.unwrap();
        drop(s);

        let s = reopen(dir.path());
        assert_reads(&s, &c.initial, before).await;
        // The revisions of the lost group are reused, with no trace of it in reads at
        // them, in the log or in a watch.
        let mut rx = s.watch(&Prefix::cluster("c"), before, None).await.unwrap();
        s.put(key("k00000"), Precondition::MustExist, enc("v3"))
            .await
            .unwrap();
        s.put(key("n00000"), Precondition::MustNotExist, enc("z"))
            .await
            .unwrap();
        let e = next_event(&mut rx).await;
        assert_eq!(
            (e.event_type, e.kv.mod_revision, &e.kv.value[..]),
            (EventType::Modified, before + 1, &b"v3"[..])
        );
        let e = next_event(&mut rx).await;
        assert_eq!(
            (e.event_type, e.kv.mod_revision, &e.kv.value[..]),
            (EventType::Added, before + 2, &b"z"[..])
        );
        assert_eq!(s.shared.log.entries(before, Revision::MAX).count(), 2);
        let (at_first, _) = list(&s, &Prefix::cluster("c"), Some(before + 1), None).await;
        let mut want = c.initial.clone();
        want[0].1 = "v3".into();
        assert_eq!(at_first, want, "crash at {at}");
        assert_eq!(
            s.get(&key("k00001")).await.unwrap().map(|kv| kv.value),
            Some("v1".into())
        );
        s.shutdown().await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_part_way_through_a_groups_latest_values_is_repaired_on_open() {
    let n = 300;
    let m = case(n).group.len();
    // The first value, one in the middle, the revision counter (one value per update and
    // delete, two per create).
    let latest_writes = m + n / 3 + 1;
    for at in [0, latest_writes / 2, latest_writes - 1] {
        let dir = tempfile::tempdir().unwrap();
        let c = case(n);
        let (s, before) = setup(dir.path(), &c).await;
        crash_at(&s, Target::Latest, at);
        // Committed (the log is flushed): acknowledged.
        for r in s.write_batch(c.group).await {
            r.unwrap();
        }
        s.shutdown().await.unwrap();
        drop(s);

        let s = reopen(dir.path());
        let after = before + m as Revision;
        assert_reads(&s, &c.after, after).await;
        let (at_before, _) = list(&s, &Prefix::cluster("c"), Some(before), None).await;
        assert_eq!(at_before, c.initial, "crash at {at}");
        s.put(key("z"), Precondition::MustNotExist, enc("z"))
            .await
            .unwrap();
        assert_eq!(s.current_revision(), after + 1);
        s.shutdown().await.unwrap();
    }
}
