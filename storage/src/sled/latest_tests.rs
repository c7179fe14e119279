//! Tests of the latest database's rebuild ([`super::latest`]): a rebuild copied while the
//! writer goes on leaves a database identical to the one it replaces, readers holding the
//! old one keep reading it and its files go once they let go; a crash at every step (part-way
//! through the copy, after the swap with the completion marker lost, after the swap before
//! the old database is deleted) reopens with every committed write; the size check starts
//! rebuilds on its own; an older kplane cannot open a rebuilt directory.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::db::{existing_segment_size, MAX_SEGMENT_SIZE};
use super::latest::LATEST_DIR;
use super::{SledStorage, SledStorageOptions};
use crate::{Encoder, Key, ListOptions, Precondition, Prefix, Storage};

/// Keys written: more than three copy steps of entries (each key has a value and an index
/// entry).
const KEYS: u64 = 1_700;

fn enc(v: String) -> Encoder {
    Box::new(move |_| Ok(v.into_bytes()))
}

fn key(i: u64) -> Key {
    Key::new("c", "/things", "ns", format!("k{i:05}"))
}

/// No automatic rebuild; the tests start them.
fn opts() -> SledStorageOptions {
    SledStorageOptions {
        latest_rebuild_factor: 0,
        ..Default::default()
    }
}

fn reopen(dir: &Path, opts: SledStorageOptions) -> Arc<SledStorage> {
    let mut last = None;
    for _ in 0..100 {
        match SledStorage::open(dir, opts.clone()) {
            Ok(s) => return s,
            Err(e) => last = Some(e),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    panic!("cannot reopen: {last:?}");
}

type Model = BTreeMap<String, String>;

/// One write chosen by `seed`: create, update or delete of one of [`KEYS`] keys.
async fn churn(s: &SledStorage, model: &mut Model, n: u64, seed: &mut u64) {
    for _ in 0..n {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        let i = *seed % KEYS;
        let k = key(i);
        let v = format!("v{seed}");
        if model.contains_key(&k.name) {
            if (*seed).is_multiple_of(5) {
                s.delete(k.clone(), Precondition::MustExist, enc(String::new()))
                    .await
                    .unwrap();
                model.remove(&k.name);
            } else {
                s.put(k.clone(), Precondition::MustExist, enc(v.clone()))
                    .await
                    .unwrap();
                model.insert(k.name.clone(), v);
            }
        } else {
            s.put(k.clone(), Precondition::MustNotExist, enc(v.clone()))
                .await
                .unwrap();
            model.insert(k.name.clone(), v);
        }
    }
}

/// Fills every key once.
async fn fill(s: &SledStorage, model: &mut Model) {
    for i in 0..KEYS {
        let v = format!("first{i}");
        s.put(key(i), Precondition::MustNotExist, enc(v.clone()))
            .await
            .unwrap();
        model.insert(key(i).name, v);
    }
}

/// Asserts that `s` holds `model`, restarts it on `dir` and asserts the same of the
/// reopened store, which it returns.
async fn kept_across_a_restart(
    s: Arc<SledStorage>,
    dir: &Path,
    opts: SledStorageOptions,
    model: &Model,
) -> Arc<SledStorage> {
    assert_state(&s, model).await;
    s.shutdown().await.unwrap();
    drop(s);
    let s = reopen(dir, opts);
    assert_state(&s, model).await;
    s
}

/// The store's state through a list, each GET, the count and the wildcard index.
async fn assert_state(s: &SledStorage, want: &Model) {
    let list = s
        .list(
            &Prefix::namespace("c", "/things", "ns"),
            &ListOptions::default(),
            None,
        )
        .await
        .unwrap();
    let got: Model = list
        .items
        .iter()
        .map(|kv| {
            (
                kv.key.name.clone(),
                String::from_utf8(kv.value.to_vec()).unwrap(),
            )
        })
        .collect();
    assert_eq!(&got, want);
    let wildcard = s
        .list(
            &Prefix {
                cluster: crate::Clusters::All,
                resource: Some("/things".into()),
                namespace: None,
            },
            &ListOptions::default(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(wildcard.items.len(), want.len());
    assert_eq!(
        s.count(&Prefix::namespace("c", "/things", "ns"))
            .await
            .unwrap(),
        want.len() as u64
    );
    for i in (0..KEYS).step_by(7) {
        let got = s.get(&key(i)).await.unwrap();
        let got = got.map(|kv| String::from_utf8(kv.value.to_vec()).unwrap());
        assert_eq!(got.as_ref(), want.get(&key(i).name), "key {i}");
    }
}

/// Writes until a rebuild has completed (at least `min` writes while it runs).
async fn churn_until_rebuilt(
    s: &SledStorage,
    model: &mut Model,
    seed: &mut u64,
    done_before: u64,
) -> u64 {
    let mut writes = 0;
    let deadline = Instant::now() + Duration::from_secs(60);
    while s.shared.latest_store.rebuilds() == done_before {
        assert!(Instant::now() < deadline, "no rebuild");
        churn(s, model, 1, seed).await;
        writes += 1;
    }
    writes
}

/// Starts a rebuild and lets its copy go `budget` entries (it then waits for its
/// `copy_budget` to be raised), writing meanwhile. The tree holds the index entries (`I`,
/// one per key written), then the values (`L`), then the meta entries (`M`).
async fn copy_part_way(s: &SledStorage, model: &mut Model, seed: &mut u64, budget: usize) {
    s.shared
        .latest_store
        .copy_budget
        .store(budget, Ordering::Release);
    s.shared.latest_store.force_rebuild();
    let deadline = Instant::now() + Duration::from_secs(30);
    while s.shared.latest_store.copy_budget.load(Ordering::Acquire) > 0 {
        assert!(Instant::now() < deadline, "the copy did not start");
        churn(s, model, 1, seed).await;
    }
}

/// The entries of the latest database's tree.
fn entries(tree: &sled::Tree) -> Vec<(sled::IVec, sled::IVec)> {
    tree.iter().map(Result::unwrap).collect()
}

/// Names of the data directory's entries that are the latest database's.
fn latest_entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(LATEST_DIR))
        .collect();
    names.sort();
    names
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rebuild_under_writes_is_an_exact_copy_and_the_old_files_go() {
    let dir = tempfile::tempdir().unwrap();
    let s = SledStorage::open(dir.path(), opts()).unwrap();
    let mut model = Model::new();
    let mut seed = 7;
    fill(&s, &mut model).await;
    churn(&s, &mut model, 300, &mut seed).await;
    // A reader holding the database in use across the rebuild.
    let old = s.shared.latest();
    // Hold the copy at about the middle, write on both sides of its cursor, then let it
    // finish without writes, so the swap comes after a known last write.
    copy_part_way(&s, &mut model, &mut seed, KEYS as usize).await;
    churn(&s, &mut model, 300, &mut seed).await;
    s.shared
        .latest_store
        .copy_budget
        .store(usize::MAX, Ordering::Release);
    let deadline = Instant::now() + Duration::from_secs(30);
    while s.shared.latest_store.rebuilds() == 0 {
        assert!(Instant::now() < deadline, "no rebuild");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let new = s.shared.latest();
    assert!(!Arc::ptr_eq(&old, &new));
    // The old database stopped at the swap and holds what the new one holds.
    assert_eq!(entries(&old.tree), entries(&new.tree));
    assert_state(&s, &model).await;
    // Written to the new one only from here; the old one is still readable.
    churn(&s, &mut model, 200, &mut seed).await;
    assert_ne!(entries(&old.tree), entries(&new.tree));
    assert_state(&s, &model).await;
    let old_dir = old.dir().to_path_buf();
    assert!(old_dir.is_dir());
    drop(old);
    drop(new);
    let deadline = Instant::now() + Duration::from_secs(30);
    // `latest/` was the old database: it gives way to the marker file.
    while !old_dir.is_file() {
        assert!(Instant::now() < deadline, "old latest database not deleted");
        churn(&s, &mut model, 1, &mut seed).await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(
        latest_entries(dir.path()),
        vec![LATEST_DIR.to_string(), format!("{LATEST_DIR}.{:020}", 1)]
    );
    // A second rebuild, from a rebuilt database.
    s.shared.latest_store.force_rebuild();
    churn_until_rebuilt(&s, &mut model, &mut seed, 1).await;
    let s = kept_across_a_restart(s, dir.path(), opts(), &model).await;
    assert_eq!(
        latest_entries(dir.path()),
        vec![LATEST_DIR.to_string(), format!("{LATEST_DIR}.{:020}", 2)]
    );
    churn(&s, &mut model, 100, &mut seed).await;
    assert_state(&s, &model).await;
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_part_way_through_the_copy_reopens_the_old_database() {
    // After the first entry, at the end of the index entries, half-way through the values.
    for budget in [1, KEYS as usize, (KEYS + KEYS / 2) as usize] {
        crash_part_way_through_the_copy(budget).await;
    }
}

async fn crash_part_way_through_the_copy(budget: usize) {
    let dir = tempfile::tempdir().unwrap();
    let s = SledStorage::open(dir.path(), opts()).unwrap();
    let mut model = Model::new();
    let mut seed = 11 + budget as u64;
    fill(&s, &mut model).await;
    // Stop the copy there, with writes on both sides of its cursor.
    copy_part_way(&s, &mut model, &mut seed, budget).await;
    churn(&s, &mut model, 300, &mut seed).await;
    assert_eq!(s.shared.latest_store.rebuilds(), 0);
    assert!(dir.path().join(LATEST_DIR).is_dir());
    let target = format!("{LATEST_DIR}.{:020}", 1);
    assert!(dir.path().join(&target).is_dir());
    s.shutdown().await.unwrap();
    drop(s);
    let s = reopen(dir.path(), opts());
    assert_eq!(latest_entries(dir.path()), vec![LATEST_DIR.to_string()]);
    assert_state(&s, &model).await;
    // And a rebuild after that one completes.
    s.shared.latest_store.force_rebuild();
    churn_until_rebuilt(&s, &mut model, &mut seed, 0).await;
    let s = kept_across_a_restart(s, dir.path(), opts(), &model).await;
    s.shutdown().await.unwrap();
}

/// A crash after the swap, before the old database was deleted: with the completion
/// marker durable the new one is used; without it (`marker_lost`) the old one is, and the
/// writes made after the swap are replayed into it from the log.
async fn crash_after_the_swap(marker_lost: bool) {
    let dir = tempfile::tempdir().unwrap();
    let s = SledStorage::open(dir.path(), opts()).unwrap();
    let mut model = Model::new();
    let mut seed = 13;
    fill(&s, &mut model).await;
    s.shared
        .latest_store
        .keep_retired
        .store(true, Ordering::Release);
    s.shared.latest_store.force_rebuild();
    churn_until_rebuilt(&s, &mut model, &mut seed, 0).await;
    let new = s.shared.latest();
    if marker_lost {
        new.forget_built();
    }
    drop(new);
    churn(&s, &mut model, 300, &mut seed).await;
    assert!(dir.path().join(LATEST_DIR).is_dir());
    s.shutdown().await.unwrap();
    drop(s);
    let s = reopen(dir.path(), opts());
    let want = if marker_lost {
        vec![LATEST_DIR.to_string()]
    } else {
        vec![LATEST_DIR.to_string(), format!("{LATEST_DIR}.{:020}", 1)]
    };
    assert_eq!(latest_entries(dir.path()), want);
    assert_eq!(dir.path().join(LATEST_DIR).is_dir(), marker_lost);
    assert_state(&s, &model).await;
    churn(&s, &mut model, 100, &mut seed).await;
    assert_state(&s, &model).await;
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_after_the_swap_reopens_the_new_database() {
    crash_after_the_swap(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_before_the_marker_is_durable_replays_into_the_old_database() {
    crash_after_the_swap(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_a_crash_leaves_while_creating_or_deleting_is_removed_on_open() {
    let dir = tempfile::tempdir().unwrap();
    let s = SledStorage::open(dir.path(), opts()).unwrap();
    let mut model = Model::new();
    let mut seed = 17;
    fill(&s, &mut model).await;
    s.shutdown().await.unwrap();
    drop(s);
    for name in [
        format!("{LATEST_DIR}.{:020}.tmp", 4),
        format!("{LATEST_DIR}.{:020}.dropping", 2),
        format!("{LATEST_DIR}.dropping"),
    ] {
        let path = dir.path().join(name);
        std::fs::create_dir(&path).unwrap();
        std::fs::write(path.join("db"), b"partial").unwrap();
    }
    let s = reopen(dir.path(), opts());
    assert_eq!(latest_entries(dir.path()), vec![LATEST_DIR.to_string()]);
    assert_state(&s, &model).await;
    churn(&s, &mut model, 10, &mut seed).await;
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_size_check_rebuilds_on_its_own() {
    // Below the factor: sled's file (a few 8 MiB segments) is never 10,000x what the
    // store holds, so nothing is rebuilt.
    let dir = tempfile::tempdir().unwrap();
    let high = SledStorageOptions {
        latest_rebuild_factor: 10_000,
        latest_rebuild_min_bytes: 0,
        latest_rebuild_interval: Duration::from_millis(10),
        ..Default::default()
    };
    let s = SledStorage::open(dir.path(), high).unwrap();
    let mut model = Model::new();
    let mut seed = 19;
    fill(&s, &mut model).await;
    churn(&s, &mut model, 600, &mut seed).await;
    assert_eq!(s.shared.latest_store.rebuilds(), 0);
    s.shutdown().await.unwrap();
    drop(s);

    // The default factor (the rebuild is on by default) with no minimum size: above it.
    assert_eq!(super::LATEST_REBUILD_FACTOR, 4);
    let dir = tempfile::tempdir().unwrap();
    let opts = SledStorageOptions {
        latest_rebuild_min_bytes: 0,
        latest_rebuild_interval: Duration::from_millis(10),
        ..Default::default()
    };
    let s = SledStorage::open(dir.path(), opts.clone()).unwrap();
    let mut model = Model::new();
    fill(&s, &mut model).await;
    // sled's file is larger than the entries it holds from the start: rebuilds follow.
    churn_until_rebuilt(&s, &mut model, &mut seed, 0).await;
    churn_until_rebuilt(&s, &mut model, &mut seed, 1).await;
    let s = kept_across_a_restart(s, dir.path(), opts, &model).await;
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_kplane_cannot_open_a_rebuilt_directory() {
    let dir = tempfile::tempdir().unwrap();
    let s = SledStorage::open(dir.path(), opts()).unwrap();
    let mut model = Model::new();
    let mut seed = 23;
    fill(&s, &mut model).await;
    s.shared.latest_store.force_rebuild();
    churn_until_rebuilt(&s, &mut model, &mut seed, 0).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while !dir.path().join(LATEST_DIR).is_file() {
        assert!(Instant::now() < deadline, "no marker file");
        churn(&s, &mut model, 1, &mut seed).await;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    s.shutdown().await.unwrap();
    drop(s);
    // What an older kplane does: opens `latest/` as a sled database.
    assert!(sled::Config::new()
        .path(dir.path().join(LATEST_DIR))
        .open()
        .is_err());
    // The rebuilt database gone (a damaged copy): refused, not started empty.
    std::fs::remove_dir_all(dir.path().join(format!("{LATEST_DIR}.{:020}", 1))).unwrap();
    let e = SledStorage::open(dir.path(), opts())
        .err()
        .expect("refused");
    assert!(e.to_string().contains("rebuilt database"), "{e}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_that_does_not_return_gives_the_rebuild_up_and_writes_go_on() {
    let dir = tempfile::tempdir().unwrap();
    let s = SledStorage::open(dir.path(), opts()).unwrap();
    let mut model = Model::new();
    let mut seed = 29;
    fill(&s, &mut model).await;
    let latest = &s.shared.latest_store;
    // The copy's reads never return (as sled's did once): the writer waits 200 ms for the
    // first chunk, gives the rebuild up and goes on writing.
    latest.stall_reads(true, Duration::from_millis(200));
    latest.force_rebuild();
    let deadline = Instant::now() + Duration::from_secs(30);
    while latest.rebuilding() {
        assert!(Instant::now() < deadline, "the rebuild was not given up");
        churn(&s, &mut model, 1, &mut seed).await;
    }
    assert_eq!(latest.rebuilds(), 0);
    churn(&s, &mut model, 500, &mut seed).await;
    assert_state(&s, &model).await;
    // While that read has not returned, no rebuild starts.
    latest.force_rebuild();
    churn(&s, &mut model, 200, &mut seed).await;
    assert!(
        !latest.rebuilding(),
        "a rebuild started beside a stuck read"
    );
    assert_eq!(latest.rebuilds(), 0);
    // Once it returns, rebuilds work again and the copy is exact.
    latest.stall_reads(false, Duration::from_secs(5));
    let deadline = Instant::now() + Duration::from_secs(30);
    while latest.reader_stuck() {
        assert!(Instant::now() < deadline, "the reader did not end");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    latest.force_rebuild();
    churn_until_rebuilt(&s, &mut model, &mut seed, 0).await;
    let s = kept_across_a_restart(s, dir.path(), opts(), &model).await;
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_stuck_for_longer_than_the_stall_bound_makes_the_store_unhealthy() {
    let dir = tempfile::tempdir().unwrap();
    let s = SledStorage::open(dir.path(), opts()).unwrap();
    let mut model = Model::new();
    let mut seed = 31;
    fill(&s, &mut model).await;
    assert_eq!(s.health(), Ok(()));
    // A copy whose read does not return keeps the writer waiting past the bound.
    let latest = &s.shared.latest_store;
    let wait = crate::STALL_AFTER + Duration::from_secs(4);
    latest.stall_reads(true, wait);
    latest.force_rebuild();
    let deadline = Instant::now() + wait + Duration::from_secs(30);
    let reason = loop {
        assert!(Instant::now() < deadline, "never unhealthy");
        if let Err(e) = s.health() {
            break e;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(reason.contains("storage writer"), "{reason}");
    // Once the writer gives the rebuild up it is healthy again and writes go on.
    while s.health().is_err() {
        assert!(Instant::now() < deadline, "still unhealthy");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    churn(&s, &mut model, 100, &mut seed).await;
    assert_state(&s, &model).await;
    latest.stall_reads(false, Duration::from_secs(5));
    s.shutdown().await.unwrap();
}

/// Rewrites the sled database at `path` with `segment_size` segments, every tree copied:
/// what an older kplane made.
fn remake_with_segments(path: &Path, segment_size: usize) {
    let tmp = path.with_extension("remake");
    {
        let old = sled::Config::new()
            .path(path)
            .segment_size(existing_segment_size(path, 0).unwrap())
            .open()
            .unwrap();
        let new = sled::Config::new()
            .path(&tmp)
            .segment_size(segment_size)
            .open()
            .unwrap();
        for name in old.tree_names() {
            let (from, to) = (old.open_tree(&name).unwrap(), new.open_tree(&name).unwrap());
            for kv in from.iter() {
                let (k, v) = kv.unwrap();
                to.insert(k, v).unwrap();
            }
        }
        new.flush().unwrap();
    }
    std::fs::remove_dir_all(path).unwrap();
    std::fs::rename(&tmp, path).unwrap();
    assert_eq!(existing_segment_size(path, 0).unwrap(), segment_size);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn databases_an_older_kplane_made_with_16_mib_segments_are_replaced() {
    let dir = tempfile::tempdir().unwrap();
    let s = SledStorage::open(dir.path(), opts()).unwrap();
    let mut model = Model::new();
    let mut seed = 23;
    fill(&s, &mut model).await;
    churn(&s, &mut model, 300, &mut seed).await;
    let old_gen = s.shared.log.current().dir().to_path_buf();
    s.shutdown().await.unwrap();
    drop(s);
    // Segments of 16 MiB, on which sled 0.34 can stop (super::MAX_SEGMENT_SIZE).
    remake_with_segments(&dir.path().join(LATEST_DIR), 16 << 20);
    remake_with_segments(&old_gen, 16 << 20);

    let s = reopen(dir.path(), opts());
    assert_state(&s, &model).await;
    // New history goes to a new generation with 8 MiB segments from the start.
    let gen = s.shared.log.current().dir().to_path_buf();
    assert_ne!(gen, old_gen);
    assert_eq!(existing_segment_size(&gen, 0).unwrap(), MAX_SEGMENT_SIZE);
    // The latest database is rebuilt with them although the rebuild policy is off.
    churn_until_rebuilt(&s, &mut model, &mut seed, 0).await;
    let latest = s.shared.latest_store.current().dir().to_path_buf();
    assert_eq!(existing_segment_size(&latest, 0).unwrap(), MAX_SEGMENT_SIZE);
    // Once replaced, nothing more is rebuilt; the old database is gone and `latest` is
    // the marker file of a rebuilt directory.
    let s = kept_across_a_restart(s, dir.path(), opts(), &model).await;
    assert_eq!(
        latest_entries(dir.path()),
        vec![
            LATEST_DIR.to_string(),
            latest.file_name().unwrap().to_string_lossy().into_owned()
        ]
    );
    assert!(dir.path().join(LATEST_DIR).is_file());
    churn(&s, &mut model, 300, &mut seed).await;
    assert_eq!(s.shared.latest_store.rebuilds(), 0);
    assert_eq!(s.shared.log.current().dir(), gen.as_path());
    assert_state(&s, &model).await;
    s.shutdown().await.unwrap();
}
