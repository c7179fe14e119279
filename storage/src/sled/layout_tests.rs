//! Tests of the two-database layout: crash recovery between the log and the latest
//! batch, conversion of the single-database format (also interrupted), generations
//! (their length, count and the stepwise compaction point) and reads at a revision whose
//! versions lived in a dropped generation.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use super::compaction::generation_length;
use super::encoding::{
    encode_u64, index_key, index_key_bytes, key_bytes, latest_key, meta_key, Record,
    META_COMPACTED, META_REVISION,
};
use super::latest::{LATEST_DIR, LATEST_TREE};
use super::log::GENERATIONS;
use super::log::LOG_DIR;
use super::{SledStorage, SledStorageOptions};
use crate::{
    Encoder, Error, EventType, Key, KeyValue, ListOptions, Precondition, Prefix, Revision, Storage,
    WatchEvent, WatchReceiver,
};

const RES: &str = "/things";

fn enc(v: &str) -> Encoder {
    let v = v.to_string();
    Box::new(move |_| Ok(v.into_bytes()))
}

fn key(name: &str) -> Key {
    Key::new("c", RES, "ns", name)
}

fn reopen(dir: &std::path::Path, opts: SledStorageOptions) -> Arc<SledStorage> {
    for _ in 0..100 {
        if let Ok(s) = SledStorage::open(dir, opts.clone()) {
            return s;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("cannot reopen");
}

async fn list_at(s: &SledStorage, prefix: &Prefix, at: Option<Revision>) -> Vec<KeyValue> {
    s.list(
        prefix,
        &ListOptions {
            at_revision: at,
            ..Default::default()
        },
        None,
    )
    .await
    .unwrap()
    .items
}

fn values(kvs: &[KeyValue]) -> Vec<(String, String)> {
    kvs.iter()
        .map(|kv| {
            (
                kv.key.name.clone(),
                String::from_utf8(kv.value.to_vec()).unwrap(),
            )
        })
        .collect()
}

fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
    p.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

fn wildcard() -> Prefix {
    Prefix {
        cluster: crate::Clusters::All,
        resource: Some(RES.into()),
        namespace: None,
    }
}

async fn next_event(rx: &mut WatchReceiver) -> Arc<crate::Event> {
    loop {
        match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
            Ok(Some(WatchEvent::Event(e))) => return e,
            Ok(Some(WatchEvent::Progress(_))) => {}
            other => panic!("expected an event, got {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_between_the_log_and_the_latest_batch_is_replayed_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let s = SledStorage::open(dir.path(), SledStorageOptions::default()).unwrap();
    for n in ["a", "b", "c"] {
        s.put(key(n), Precondition::MustNotExist, enc(n))
            .await
            .unwrap();
    }
    let before = s.current_revision();
    // From here on the writer commits to the log only, as if it crashed each time right
    // after the log's flush.
    s.shared.skip_latest.store(true, Ordering::Release);
    s.put(key("a"), Precondition::MustExist, enc("a2"))
        .await
        .unwrap();
    s.delete(key("b"), Precondition::MustExist, enc("b-gone"))
        .await
        .unwrap();
    s.put(key("d"), Precondition::MustNotExist, enc("d"))
        .await
        .unwrap();
    let after = s.current_revision();
    assert_eq!(after, before + 3);
    // The latest database did not see them.
    assert_eq!(
        values(&list_at(&s, &Prefix::cluster("c"), None).await).len(),
        3
    );
    s.shutdown().await.unwrap();
    drop(s);

    let s = reopen(dir.path(), SledStorageOptions::default());
    assert_eq!(s.current_revision(), after);
    let want = pairs(&[("a", "a2"), ("c", "c"), ("d", "d")]);
    assert_eq!(
        values(&list_at(&s, &Prefix::cluster("c"), None).await),
        want
    );
    assert_eq!(values(&list_at(&s, &wildcard(), None).await), want);
    assert_eq!(s.get(&key("b")).await.unwrap(), None);
    assert_eq!(s.count(&Prefix::cluster("c")).await.unwrap(), 3);
    // The state before the lost batches is still exact, and watchers replay them.
    assert_eq!(
        values(&list_at(&s, &Prefix::cluster("c"), Some(before)).await),
        pairs(&[("a", "a"), ("b", "b"), ("c", "c")])
    );
    let mut rx = s.watch(&Prefix::cluster("c"), before, None).await.unwrap();
    let e = next_event(&mut rx).await;
    assert_eq!(
        (e.event_type, e.prev.as_deref()),
        (EventType::Modified, Some(&b"a"[..]))
    );
    let e = next_event(&mut rx).await;
    assert_eq!(
        (e.event_type, e.prev.as_deref()),
        (EventType::Deleted, Some(&b"b"[..]))
    );
    let e = next_event(&mut rx).await;
    assert_eq!((e.event_type, e.prev.clone()), (EventType::Added, None));
    // Writes continue from the recovered state.
    s.put(key("b"), Precondition::MustNotExist, enc("b2"))
        .await
        .unwrap();
    s.put(key("d"), Precondition::ModRevision(after), enc("d2"))
        .await
        .unwrap();
    s.shutdown().await.unwrap();
}

/// Writes a store in the single-database format kplane used before the two-database
/// layout: latest values (`L`), history (`H`), the event log (`E`), commit times (`T`),
/// the wildcard index (`I`, also for a key that only has history) and the meta entries.
/// Returns the live keys with their values and the store's revision.
fn write_old_format(dir: &std::path::Path, live: usize) -> (Vec<(String, String)>, Revision) {
    let db = sled::Config::new().path(dir).open().unwrap();
    let tree = db.open_tree(LATEST_TREE).unwrap();
    let mut want = Vec::new();
    let mut rev = 0;
    let mut batch = sled::Batch::default();
    for i in 0..live {
        rev += 1;
        let k = key(&format!("k{i:05}"));
        let kb = key_bytes(&k);
        let value = format!("v{i}");
        let rec = Record {
            tombstone: false,
            create_revision: rev,
            mod_revision: rev,
            value: value.clone().into_bytes().into(),
        };
        batch.insert(latest_key(&kb), rec.encode());
        batch.insert(index_key(&index_key_bytes(&k)), &[]);
        let mut h = vec![b'H'];
        h.extend_from_slice(&kb);
        h.extend_from_slice(&(rev - 1).to_be_bytes());
        batch.insert(h, rec.encode());
        let mut e = vec![b'E'];
        e.extend_from_slice(&rev.to_be_bytes());
        let mut ev = vec![b'A'];
        ev.extend_from_slice(&kb);
        batch.insert(e, ev);
        want.push((k.name.clone(), value));
    }
    // A deleted key: history and index entry only.
    rev += 1;
    let gone = key("gone");
    batch.insert(index_key(&index_key_bytes(&gone)), &[]);
    let mut h = vec![b'H'];
    h.extend_from_slice(&key_bytes(&gone));
    h.extend_from_slice(&rev.to_be_bytes());
    batch.insert(h, vec![1u8; 17]);
    let mut t = vec![b'T'];
    t.extend_from_slice(&rev.to_be_bytes());
    batch.insert(t, &encode_u64(1));
    batch.insert(meta_key(META_REVISION), &encode_u64(rev));
    batch.insert(meta_key(META_COMPACTED), &encode_u64(1));
    // The older format wrote with batches (this test process's sled lock is irrelevant).
    #[allow(clippy::disallowed_methods)]
    tree.apply_batch(batch).unwrap();
    db.flush().unwrap();
    (want, rev)
}

fn old_files_present(dir: &std::path::Path) -> bool {
    dir.join("conf").exists() || dir.join("db").exists()
}

async fn check_converted(dir: &std::path::Path, want: &[(String, String)], rev: Revision) {
    let s = reopen(dir, SledStorageOptions::default());
    assert!(!old_files_present(dir), "old files left");
    assert!(dir.join(LATEST_DIR).is_dir() && dir.join(LOG_DIR).is_dir());
    assert_eq!(s.current_revision(), rev);
    assert_eq!(s.compacted_revision(), rev);
    assert_eq!(
        values(&list_at(&s, &Prefix::cluster("c"), None).await),
        want
    );
    assert_eq!(values(&list_at(&s, &wildcard(), None).await), want);
    assert_eq!(s.count(&wildcard()).await.unwrap(), want.len() as u64);
    // Watchers from before the conversion must relist.
    let e = s.watch(&Prefix::cluster("c"), rev - 1, None).await;
    assert!(matches!(e, Err(Error::Compacted { .. })), "{e:?}");
    // Old values are found at the conversion's revision once superseded.
    let first = key("k00000");
    let cur = s.get(&first).await.unwrap().unwrap();
    s.put(
        first.clone(),
        Precondition::ModRevision(cur.mod_revision),
        enc("new"),
    )
    .await
    .unwrap();
    assert_eq!(
        values(&list_at(&s, &Prefix::cluster("c"), Some(rev)).await),
        want
    );
    let mut rx = s.watch(&Prefix::cluster("c"), rev, None).await.unwrap();
    let e = next_event(&mut rx).await;
    assert_eq!(e.prev.as_deref(), Some(&b"v0"[..]));
    s.shutdown().await.unwrap();
    drop(s);
    // And it stays converted.
    let s = reopen(dir, SledStorageOptions::default());
    assert_eq!(s.current_revision(), rev + 1);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_single_database_format_is_converted_at_start_up() {
    // Around the conversion's copy batch (live values plus their index entries).
    for live in [1, 2047, 2048, 2049, 5000] {
        let dir = tempfile::tempdir().unwrap();
        let (want, rev) = write_old_format(dir.path(), live);
        check_converted(dir.path(), &want, rev).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_conversion_is_retried_or_finished() {
    // A crash while building the new latest database: the old store is intact and the
    // half-built copy is thrown away.
    let dir = tempfile::tempdir().unwrap();
    let (want, rev) = write_old_format(dir.path(), 10);
    let tmp = dir.path().join("latest.converting");
    {
        let junk = sled::Config::new().path(&tmp).open().unwrap();
        junk.open_tree(LATEST_TREE)
            .unwrap()
            .insert(latest_key(&key_bytes(&key("junk"))), vec![0u8; 17])
            .unwrap();
        junk.flush().unwrap();
    }
    check_converted(dir.path(), &want, rev).await;
    assert!(!tmp.exists());

    // A crash after the rename, before the old files were deleted: they are deleted and
    // the converted store is used.
    let dir = tempfile::tempdir().unwrap();
    let (want, rev) = write_old_format(dir.path(), 10);
    let s = reopen(dir.path(), SledStorageOptions::default());
    s.shutdown().await.unwrap();
    drop(s);
    write_old_format(dir.path(), 3);
    assert!(old_files_present(dir.path()));
    check_converted(dir.path(), &want, rev).await;
}

#[test]
fn generation_length_is_a_sixth_of_the_window() {
    assert_eq!(GENERATIONS, 6);
    assert_eq!(
        generation_length(Duration::from_secs(300), GENERATIONS),
        Duration::from_secs(50)
    );
    assert_eq!(
        generation_length(Duration::from_millis(6), GENERATIONS),
        Duration::from_millis(1)
    );
    // Never below 1 ms, so a tiny window does not start a generation per write.
    assert_eq!(
        generation_length(Duration::from_millis(5), GENERATIONS),
        Duration::from_millis(1)
    );
    assert_eq!(
        generation_length(Duration::ZERO, GENERATIONS),
        Duration::from_millis(1)
    );
    assert_eq!(
        generation_length(Duration::from_secs(300), 20),
        Duration::from_secs(15)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn generations_are_bounded_and_the_compaction_point_moves_in_steps() {
    let dir = tempfile::tempdir().unwrap();
    // Generations of 300 ms: long against a durable write even on a loaded 2-core machine
    // (at 100 ms the count of generations was seen to fall short there).
    let window = Duration::from_millis(1800);
    let opts = SledStorageOptions {
        event_window: window,
        compaction_interval: Duration::from_millis(10),
        ..Default::default()
    };
    let s = SledStorage::open(dir.path(), opts).unwrap();
    let started = std::time::Instant::now();
    let mut max_gens = 0;
    let mut points = std::collections::BTreeSet::new();
    let mut firsts = std::collections::BTreeSet::new();
    let mut i = 0u64;
    while started.elapsed() < window * 3 {
        let k = key(&format!("k{}", i % 20));
        let pre = if i < 20 {
            Precondition::MustNotExist
        } else {
            Precondition::MustExist
        };
        s.put(k, pre, enc(&format!("v{i}"))).await.unwrap();
        i += 1;
        let gens = s.shared.log.generations();
        max_gens = max_gens.max(gens.len());
        firsts.extend(gens.iter().map(|g| g.first));
        let compacted = s.compacted_revision();
        if compacted > 0 {
            points.insert(compacted);
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // A window's worth of generations, plus the one being filled and one being dropped.
    assert!(
        max_gens <= GENERATIONS as usize + 2,
        "{max_gens} generations"
    );
    assert!(
        max_gens >= GENERATIONS as usize - 1,
        "{max_gens} generations"
    );
    // Every compaction point is the end of a generation: the revision before a
    // generation's first one, and several were passed.
    assert!(points.len() >= 3, "{points:?}");
    for p in &points {
        assert!(
            firsts.contains(&(p + 1)),
            "{p} is no generation's end: {firsts:?}"
        );
    }
    // The state at the compaction point is still exact and watchable. Generations keep
    // ageing out after the writes stop, so the point may move between reading it and
    // listing at it: then the list says so (Compacted, past the point read) and the
    // check is repeated at the new point, which must settle once no generation is left
    // to drop.
    let mut checked = false;
    for _ in 0..50 {
        let now = s.compacted_revision();
        let opts = ListOptions {
            at_revision: Some(now),
            ..Default::default()
        };
        match s.list(&Prefix::cluster("c"), &opts, None).await {
            Ok(list) => {
                assert_eq!(list.items.len(), 20);
                assert!(list.items.iter().all(|kv| kv.mod_revision <= now));
            }
            Err(Error::Compacted { compacted, .. }) if compacted > now => continue,
            Err(e) => panic!("list at the compaction point {now}: {e}"),
        }
        match s.watch(&Prefix::cluster("c"), now, None).await {
            Ok(_) => {
                checked = true;
                break;
            }
            Err(Error::Compacted { compacted, .. }) if compacted > now => continue,
            Err(e) => panic!("watch from the compaction point {now}: {e}"),
        }
    }
    assert!(checked, "the compaction point never held still");
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn versions_from_a_dropped_generation_stay_readable_while_needed() {
    let dir = tempfile::tempdir().unwrap();
    let window = Duration::from_millis(600);
    let opts = SledStorageOptions {
        event_window: window,
        compaction_interval: Duration::from_millis(5),
        ..Default::default()
    };
    let s = SledStorage::open(dir.path(), opts).unwrap();
    // First generation: a (stays the latest value), b (superseded in the next
    // generation: carried over) and c (deleted in the next generation: carried over).
    for n in ["a", "b", "c"] {
        s.put(key(n), Precondition::MustNotExist, enc(n))
            .await
            .unwrap();
    }
    let end_of_first = s.current_revision();
    tokio::time::sleep(Duration::from_millis(250)).await;
    s.put(key("b"), Precondition::MustExist, enc("b2"))
        .await
        .unwrap();
    s.delete(key("c"), Precondition::MustExist, enc("c-gone"))
        .await
        .unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while s.shared.log.generations()[0].first <= end_of_first {
        assert!(std::time::Instant::now() < deadline, "no compaction");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    // Freeze the compaction point by reopening with a long window.
    s.shutdown().await.unwrap();
    drop(s);
    let s = reopen(dir.path(), SledStorageOptions::default());
    assert_eq!(s.compacted_revision(), end_of_first);
    assert!(s.shared.log.generations()[0].first > end_of_first);
    let at_first = pairs(&[("a", "a"), ("b", "b"), ("c", "c")]);
    assert_eq!(
        values(&list_at(&s, &Prefix::cluster("c"), Some(end_of_first)).await),
        at_first
    );
    assert_eq!(
        values(&list_at(&s, &wildcard(), Some(end_of_first)).await),
        at_first
    );
    // a's only version is in the latest database; superseding it logs it again.
    s.put(key("a"), Precondition::MustExist, enc("a2"))
        .await
        .unwrap();
    let now = s.current_revision();
    for at in [end_of_first, now - 1] {
        let got = values(&list_at(&s, &Prefix::cluster("c"), Some(at)).await);
        assert_eq!(got[0], ("a".to_string(), "a".to_string()), "at {at}");
    }
    assert_eq!(
        values(&list_at(&s, &Prefix::cluster("c"), None).await),
        pairs(&[("a", "a2"), ("b", "b2")])
    );
    // Watching from the compaction point replays every later change with its previous
    // value, including those whose previous version was in the dropped generation.
    let mut rx = s
        .watch(&Prefix::cluster("c"), end_of_first, None)
        .await
        .unwrap();
    for (t, prev) in [
        (EventType::Modified, "b"),
        (EventType::Deleted, "c"),
        (EventType::Modified, "a"),
    ] {
        let e = next_event(&mut rx).await;
        assert_eq!(
            (e.event_type, e.prev.as_deref()),
            (t, Some(prev.as_bytes()))
        );
    }
    s.shutdown().await.unwrap();
}

/// The logical sizes the store reports, against a scan of its trees.
fn scanned_bytes(s: &SledStorage) -> (u64, u64) {
    let latest = super::log::tree_bytes(&s.shared.latest().tree).unwrap();
    let log = s
        .shared
        .log
        .generations()
        .iter()
        .map(|g| super::log::tree_bytes(&g.tree).unwrap())
        .sum();
    (latest, log)
}

fn reported_bytes(s: &SledStorage) -> (u64, u64) {
    let st = s.stats();
    (st.latest_logical_bytes, st.log_logical_bytes)
}

/// Creates, updates, deletes and recreates keys `0..n` (values of ~`len` bytes).
async fn mixed_writes(s: &SledStorage, n: usize, len: usize, round: usize) {
    let pad = "p".repeat(len);
    for i in 0..n {
        let k = key(&format!("k{i}"));
        let exists = s.get(&k).await.unwrap().is_some();
        let pre = if exists {
            Precondition::MustExist
        } else {
            Precondition::MustNotExist
        };
        s.put(k.clone(), pre, enc(&format!("{round}-{i}-{pad}")))
            .await
            .unwrap();
        // Every third key is deleted (and recreated next round, reusing its index entry);
        // every seventh stays deleted after the first round.
        if i % 3 == 0 || (i % 7 == 0 && round > 0) {
            s.delete(k, Precondition::MustExist, enc("gone"))
                .await
                .unwrap();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logical_sizes_match_the_trees_without_and_with_compaction() {
    // Without compaction: every byte logged is in the window and retained.
    let dir = tempfile::tempdir().unwrap();
    let long = SledStorageOptions {
        event_window: Duration::from_secs(3600),
        ..Default::default()
    };
    let s = SledStorage::open(dir.path(), long.clone()).unwrap();
    for round in 0..3 {
        mixed_writes(&s, 40, 200, round).await;
    }
    let (latest, log) = scanned_bytes(&s);
    assert!(latest > 0 && log > latest, "{latest} {log}");
    assert_eq!(reported_bytes(&s), (latest, log));
    assert_eq!(s.stats().window_logical_bytes, log);
    s.shutdown().await.unwrap();
    drop(s);
    // Reopened: counted from the trees; the window only counts this process's commits.
    let s = reopen(dir.path(), long);
    assert_eq!(reported_bytes(&s), (latest, log));
    assert_eq!(s.stats().window_logical_bytes, 0);
    s.shutdown().await.unwrap();
    drop(s);

    // With generations dropped (copies carried, index entries of deleted keys removed).
    let dir = tempfile::tempdir().unwrap();
    let window = Duration::from_millis(600);
    let short = SledStorageOptions {
        event_window: window,
        compaction_interval: Duration::from_millis(10),
        ..Default::default()
    };
    let s = SledStorage::open(dir.path(), short).unwrap();
    let started = std::time::Instant::now();
    let mut round = 0;
    while started.elapsed() < window * 3 {
        mixed_writes(&s, 30, 100, round).await;
        round += 1;
    }
    let last = s.current_revision();
    // Quiet until every generation but the newest is dropped and compaction is idle.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        tokio::time::sleep(window).await;
        let idle = s.stats().compaction_backlog == 0;
        if idle && s.shared.log.generations().len() <= 2 && s.compacted_revision() >= last {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "compaction did not settle"
        );
    }
    assert!(s.compacted_revision() > 0);
    let (latest, log) = scanned_bytes(&s);
    assert_eq!(reported_bytes(&s), (latest, log));
    // Nothing was committed within the last window (counted in 100 ms buckets).
    tokio::time::sleep(window + Duration::from_millis(200)).await;
    assert_eq!(s.stats().window_logical_bytes, 0);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_written_with_and_without_compression_reads_back_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let opts = |compress_history| SledStorageOptions {
        event_window: Duration::from_secs(3600),
        compress_history,
        ..Default::default()
    };
    let body = |i: usize| format!("{{\"data\":{{\"k\":\"{}\"}},\"n\":{i}}}", "x".repeat(1200));
    // History of a store that did not compress (as before compression existed), then of
    // the same store compressing, over the same keys.
    let mut written = Vec::new();
    for (phase, compress) in [(0, false), (1, true)] {
        let s = reopen(dir.path(), opts(compress));
        for i in 0..60 {
            let k = key(&format!("k{}", i % 7));
            let exists = s.get(&k).await.unwrap().is_some();
            let pre = if exists {
                Precondition::MustExist
            } else {
                Precondition::MustNotExist
            };
            let v = body(phase * 100 + i);
            let kv = s.put(k.clone(), pre, enc(&v)).await.unwrap();
            written.push((kv.mod_revision, k.name.clone(), v));
            if i % 11 == 10 {
                let kv = s
                    .delete(k.clone(), Precondition::MustExist, enc("gone"))
                    .await
                    .unwrap();
                written.push((kv.mod_revision, k.name.clone(), "gone".into()));
            }
        }
        s.shutdown().await.unwrap();
    }
    let s = reopen(dir.path(), opts(true));
    // Logical sizes count compressed records at their full length.
    let (latest, log) = scanned_bytes(&s);
    assert_eq!(reported_bytes(&s), (latest, log));
    let stored: u64 = s
        .shared
        .log
        .generations()
        .iter()
        .flat_map(|g| g.tree.iter())
        .map(|e| {
            let (k, v) = e.unwrap();
            (k.len() + v.len()) as u64
        })
        .sum();
    // Half the versions were written uncompressed; the other half shrink ~10x.
    assert!(
        stored < log * 7 / 10,
        "stored {stored} of {log} logical bytes"
    );
    // Every version, read at its revision and replayed by a watch from the start.
    for (rev, name, v) in &written {
        let got = list_at(&s, &Prefix::cluster("c"), Some(*rev)).await;
        let kv = got.iter().find(|kv| &kv.key.name == name);
        if v == "gone" {
            assert!(kv.is_none(), "{name}@{rev}");
        } else {
            assert_eq!(kv.unwrap().value, v.as_bytes(), "{name}@{rev}");
        }
    }
    let mut rx = s.watch(&Prefix::cluster("c"), 0, None).await.unwrap();
    for (rev, name, v) in &written {
        let e = next_event(&mut rx).await;
        assert_eq!(
            (e.kv.mod_revision, &e.kv.key.name, e.kv.value.as_ref()),
            (*rev, name, v.as_bytes())
        );
    }
    s.shutdown().await.unwrap();
}
