//! Tests of the log's generations as databases of their own: a dropped generation's files
//! are deleted (once no reader holds it) and the space goes back, what a crash leaves in
//! `log/` is cleaned up, recovery replays committed groups from several generation
//! databases, and a log in the single-database format (one tree per generation) is read
//! until it ages out, then deleted.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::db::SEGMENT_SIZE;
use super::log::{legacy_tree_name, LEGACY_DIR, LOG_DIR};
use super::{SledStorage, SledStorageOptions};
use crate::{
    Encoder, EventType, Key, KeyValue, ListOptions, Precondition, Prefix, Revision, Storage,
    WatchEvent,
};

fn enc(v: String) -> Encoder {
    Box::new(move |_| Ok(v.into_bytes()))
}

fn key(name: &str) -> Key {
    Key::new("c", "/things", "ns", name)
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

fn short(window_ms: u64) -> SledStorageOptions {
    SledStorageOptions {
        event_window: Duration::from_millis(window_ms),
        compaction_interval: Duration::from_millis(5),
        ..Default::default()
    }
}

/// The entries of `log/`, by name.
fn log_entries(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join(LOG_DIR))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Bytes of the files under `path` (apparent sizes).
fn dir_bytes(path: &Path) -> u64 {
    let mut total = 0;
    for entry in std::fs::read_dir(path).unwrap() {
        let entry = entry.unwrap();
        let meta = entry.metadata().unwrap();
        total += if meta.is_dir() {
            dir_bytes(&entry.path())
        } else {
            meta.len()
        };
    }
    total
}

async fn list_at(s: &SledStorage, at: Option<Revision>) -> Vec<KeyValue> {
    s.list(
        &Prefix::cluster("c"),
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

/// Puts `v` under `name`, creating it or updating whatever is there.
async fn upsert(s: &SledStorage, name: &str, v: String) -> KeyValue {
    let pre = if s.get(&key(name)).await.unwrap().is_some() {
        Precondition::MustExist
    } else {
        Precondition::MustNotExist
    };
    s.put(key(name), pre, enc(v)).await.unwrap()
}

/// Waits (without writing) until at most two generations are left and nothing waits to be
/// deleted.
async fn settle(s: &SledStorage, window: Duration) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        // The writer rotates and compacts on its own when idle.
        tokio::time::sleep(window / 4).await;
        let log = &s.shared.log;
        if log.generations().len() <= 2 && log.retired_count() == 0 {
            return;
        }
        assert!(Instant::now() < deadline, "generations not dropped");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_generation_deletes_its_files_and_gives_the_space_back() {
    let dir = tempfile::tempdir().unwrap();
    let window = Duration::from_millis(900);
    let opts = SledStorageOptions {
        compress_history: false,
        ..short(900)
    };
    let s = SledStorage::open(dir.path(), opts).unwrap();
    // A burst of 48 MiB of history (six 8 MiB sled segments' worth), well above what a
    // generation holds once the burst is over.
    let pad = "x".repeat(64 * 1024);
    for i in 0..768 {
        upsert(&s, &format!("k{}", i % 8), format!("{i}{pad}")).await;
    }
    let burst_dirs: Vec<PathBuf> = s
        .shared
        .log
        .generations()
        .iter()
        .map(|g| g.dir().to_path_buf())
        .collect();
    let peak_log = dir_bytes(&dir.path().join(LOG_DIR));
    let peak_reported = s.stats().log_disk_bytes;
    assert!(peak_log > 48 << 20, "{peak_log}");
    assert!(peak_reported > 48 << 20, "{peak_reported}");

    // A reader that holds the generations keeps their files until it lets go.
    let held = s.shared.log.generations();
    let first = held[0].first;
    let deadline = Instant::now() + Duration::from_secs(30);
    while s.shared.log.generations()[0].first == first {
        assert!(
            Instant::now() < deadline,
            "the oldest generation was not dropped"
        );
        tokio::time::sleep(window / 4).await;
    }
    assert!(s.shared.log.retired_count() >= 1);
    assert!(held[0].dir().is_dir());
    // ... and reads it in full meanwhile.
    assert!(held[0].tree.iter().count() > 0);
    drop(held);

    // Every generation of the burst ages out (the last one once the writer started a new
    // one while idle) and its directory goes.
    let deadline = Instant::now() + Duration::from_secs(30);
    while let Some(d) = burst_dirs.iter().find(|d| d.exists()) {
        assert!(Instant::now() < deadline, "{} not deleted", d.display());
        tokio::time::sleep(window / 4).await;
    }
    settle(&s, window).await;
    // Only the live generations' directories are left, and at most one spare (no
    // temporary or half-deleted one).
    let live: Vec<String> = s
        .shared
        .log
        .generations()
        .iter()
        .map(|g| g.dir().file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let on_disk = log_entries(dir.path());
    assert!(
        live.iter().all(|g| on_disk.contains(g)),
        "{live:?} {on_disk:?}"
    );
    assert!(on_disk.len() <= live.len() + 1, "{live:?} {on_disk:?}");
    assert!(on_disk.iter().all(|n| n.len() == 21), "{on_disk:?}");
    // The space is back: the files hold what the small writes since need, not the burst.
    let after = dir_bytes(&dir.path().join(LOG_DIR));
    assert!(after < peak_log / 2, "{after} of {peak_log}");
    assert!(s.stats().log_disk_bytes < peak_reported / 2);
    // The latest values are intact.
    for i in 760..768 {
        let kv = s.get(&key(&format!("k{}", i % 8))).await.unwrap().unwrap();
        assert!(kv.value.starts_with(format!("{i}x").as_bytes()));
    }
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crash_is_replayed_from_several_generation_databases() {
    let dir = tempfile::tempdir().unwrap();
    // Generations of 500 ms; the writes the latest database misses span several of them,
    // well within the window even on a loaded machine.
    let opts = SledStorageOptions {
        generations: 12,
        ..short(6000)
    };
    let s = SledStorage::open(dir.path(), opts).unwrap();
    for n in ["a", "b", "c"] {
        upsert(&s, n, n.to_string()).await;
    }
    let before = s.current_revision();
    let gens_before = s.shared.log.generations().len();
    // From here the writer commits to the log only: a crash after every log flush.
    s.shared.skip_latest.store(true, Ordering::Release);
    let mut want = vec![
        ("a", "a".to_string()),
        ("b", String::new()),
        ("c", "c".into()),
    ];
    for round in 0..4 {
        s.put(key("a"), Precondition::MustExist, enc(format!("a{round}")))
            .await
            .unwrap();
        want[0].1 = format!("a{round}");
        tokio::time::sleep(Duration::from_millis(550)).await;
    }
    s.delete(key("b"), Precondition::MustExist, enc("gone".into()))
        .await
        .unwrap();
    s.put(key("d"), Precondition::MustNotExist, enc("d".into()))
        .await
        .unwrap();
    let after = s.current_revision();
    let holding: Vec<_> = s
        .shared
        .log
        .generations()
        .into_iter()
        .filter(|g| g.first > before)
        .collect();
    assert!(
        holding.len() >= 2 && s.shared.log.generations().len() > gens_before,
        "the lost writes are in {} generation databases",
        holding.len()
    );
    drop(holding);
    s.shutdown().await.unwrap();
    drop(s);
    // What a crash during a rotation and during a deletion leaves behind.
    let log = dir.path().join(LOG_DIR);
    let junk_tmp = log.join(format!("g{:020}.tmp", after + 1));
    std::fs::create_dir_all(&junk_tmp).unwrap();
    std::fs::write(junk_tmp.join("conf"), b"half written").unwrap();
    let junk_drop = log.join(format!("g{:020}.dropping", 1));
    std::fs::create_dir_all(&junk_drop).unwrap();
    std::fs::write(junk_drop.join("db"), vec![0u8; 4096]).unwrap();

    let s = reopen(dir.path(), SledStorageOptions::default());
    assert!(!junk_tmp.exists() && !junk_drop.exists());
    assert!(log_entries(dir.path()).iter().all(|n| n.len() == 21));
    assert_eq!(s.current_revision(), after);
    want.remove(1);
    want.push(("d", "d".into()));
    let want: Vec<(String, String)> = want.into_iter().map(|(k, v)| (k.into(), v)).collect();
    assert_eq!(values(&list_at(&s, None).await), want);
    assert_eq!(s.get(&key("b")).await.unwrap(), None);
    // The state before the lost writes is exact, and a watcher replays them in order.
    assert_eq!(
        values(&list_at(&s, Some(before)).await),
        vec![
            ("a".to_string(), "a".to_string()),
            ("b".into(), "b".into()),
            ("c".into(), "c".into())
        ]
    );
    let mut rx = s.watch(&Prefix::cluster("c"), before, None).await.unwrap();
    let mut seen = Vec::new();
    while seen.len() < 6 {
        match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
            Ok(Some(WatchEvent::Event(e))) => seen.push((e.event_type, e.kv.mod_revision)),
            Ok(Some(WatchEvent::Progress(_))) => {}
            other => panic!("expected an event, got {other:?}"),
        }
    }
    let revs: Vec<Revision> = seen.iter().map(|(_, r)| *r).collect();
    assert_eq!(revs, ((before + 1)..=after).collect::<Vec<_>>());
    assert_eq!(seen[4].0, EventType::Deleted);
    assert_eq!(seen[5].0, EventType::Added);
    s.shutdown().await.unwrap();
}

/// Rewrites the log of the (closed) store in `dir` into the single-database format of the
/// previous layout: one sled database in `log/` ([`SEGMENT_SIZE`] segments) with a tree
/// `gen ++ be64(first)` per generation.
fn to_single_log_database(dir: &Path) -> usize {
    let log = dir.join(LOG_DIR);
    let single = dir.join("log.single");
    let db = sled::Config::new()
        .path(&single)
        .segment_size(SEGMENT_SIZE)
        .open()
        .unwrap();
    let mut gens = 0;
    for name in log_entries(dir) {
        let gen_db = sled::Config::new()
            .path(log.join(&name))
            .segment_size(SEGMENT_SIZE)
            .open()
            .unwrap();
        // A spare (no first revision) is no generation.
        let Some(first) = gen_db.get(b"F").unwrap() else {
            continue;
        };
        let first = Revision::from_be_bytes(first.as_ref().try_into().unwrap());
        let tree = db.open_tree(legacy_tree_name(first)).unwrap();
        for entry in gen_db.iter() {
            let (k, v) = entry.unwrap();
            if k.as_ref() != b"F" {
                tree.insert(k, v).unwrap();
            }
        }
        gens += 1;
    }
    db.flush().unwrap();
    drop(db);
    std::fs::remove_dir_all(&log).unwrap();
    std::fs::rename(&single, &log).unwrap();
    gens
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_log_database_is_read_until_it_ages_out_then_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let window = Duration::from_millis(1800);
    let s = SledStorage::open(dir.path(), short(1800)).unwrap();
    let mut history = Vec::new();
    let mut i = 0;
    // Generations of 300 ms: at least three of them.
    while s.shared.log.generations().len() < 3 || i < 10 {
        upsert(&s, &format!("k{}", i % 5), format!("v{i}")).await;
        history.push((s.current_revision(), values(&list_at(&s, None).await)));
        i += 1;
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    s.shutdown().await.unwrap();
    drop(s);
    let gens = to_single_log_database(dir.path());
    assert!(gens >= 3, "{gens} generations");
    assert!(dir.path().join(LOG_DIR).join("conf").exists());

    // Opened with a long window: the old log is served, new revisions go to a generation
    // database of their own.
    let s = reopen(dir.path(), SledStorageOptions::default());
    assert!(dir.path().join(LEGACY_DIR).is_dir());
    let compacted = s.compacted_revision();
    for (rev, state) in history.iter().filter(|(r, _)| *r >= compacted) {
        assert_eq!(&values(&list_at(&s, Some(*rev)).await), state, "at {rev}");
    }
    let (first_rev, _) = history[0];
    let mut rx = s
        .watch(&Prefix::cluster("c"), first_rev.max(compacted), None)
        .await
        .unwrap();
    upsert(&s, "new", "n".into()).await;
    let gens_now = s.shared.log.generations();
    let current = gens_now.last().unwrap();
    assert!(!current.is_legacy());
    assert!(gens_now[0].is_legacy());
    assert_eq!(gens_now.iter().filter(|g| !g.is_legacy()).count(), 1);
    assert!(log_entries(dir.path()).contains(
        &current
            .dir()
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned()
    ));
    let mut revs = Vec::new();
    while revs.last() != Some(&s.current_revision()) {
        match tokio::time::timeout(Duration::from_secs(10), rx.recv()).await {
            Ok(Some(WatchEvent::Event(e))) => revs.push(e.kv.mod_revision),
            Ok(Some(WatchEvent::Progress(_))) => {}
            other => panic!("expected an event, got {other:?}"),
        }
    }
    let from = first_rev.max(compacted) + 1;
    assert_eq!(revs, (from..=s.current_revision()).collect::<Vec<_>>());
    drop(gens_now);
    drop(rx);
    s.shutdown().await.unwrap();
    drop(s);

    // With the short window the old generations age out and the old database goes.
    let s = reopen(dir.path(), short(1800));
    let live = values(&list_at(&s, None).await);
    settle(&s, window).await;
    let deadline = Instant::now() + Duration::from_secs(30);
    while dir.path().join(LEGACY_DIR).exists() {
        assert!(
            Instant::now() < deadline,
            "the old log database was not deleted"
        );
        tokio::time::sleep(window / 4).await;
    }
    assert!(s.shared.log.generations().iter().all(|g| !g.is_legacy()));
    assert_eq!(values(&list_at(&s, None).await), live);
    s.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_latest_database_keeps_the_segment_size_it_was_created_with() {
    use super::db::{existing_segment_size, LATEST_SEGMENT_SIZE, MAX_SEGMENT_SIZE};
    let latest = |d: &Path| d.join(super::latest::LATEST_DIR);
    // New: the latest database gets the configured size, the log 8 MiB.
    let dir = tempfile::tempdir().unwrap();
    let small = SledStorageOptions {
        latest_segment_size: 1 << 21,
        ..Default::default()
    };
    let s = SledStorage::open(dir.path(), small.clone()).unwrap();
    upsert(&s, "a", "1".into()).await;
    let gen_dir = s.shared.log.current().dir().to_path_buf();
    s.shutdown().await.unwrap();
    drop(s);
    assert_eq!(
        existing_segment_size(&latest(dir.path()), 0).unwrap(),
        1 << 21
    );
    assert_eq!(existing_segment_size(&gen_dir, 0).unwrap(), SEGMENT_SIZE);
    // Created with the default (8 MiB) segments: it reopens with them, whatever the
    // option says, and serves its values.
    assert_eq!(LATEST_SEGMENT_SIZE, SEGMENT_SIZE);
    assert_eq!(SEGMENT_SIZE, MAX_SEGMENT_SIZE);
    let dir = tempfile::tempdir().unwrap();
    let s = SledStorage::open(dir.path(), SledStorageOptions::default()).unwrap();
    upsert(&s, "a", "1".into()).await;
    s.shutdown().await.unwrap();
    drop(s);
    assert_eq!(
        existing_segment_size(&latest(dir.path()), 0).unwrap(),
        MAX_SEGMENT_SIZE
    );
    let s = reopen(dir.path(), small);
    assert_eq!(
        values(&list_at(&s, None).await),
        vec![("a".into(), "1".into())]
    );
    upsert(&s, "a", "2".into()).await;
    s.shutdown().await.unwrap();
    assert_eq!(
        existing_segment_size(&latest(dir.path()), 0).unwrap(),
        MAX_SEGMENT_SIZE
    );
    // No conf: the size for a new database.
    assert_eq!(
        existing_segment_size(&dir.path().join("none"), 7).unwrap(),
        7
    );
}

#[test]
fn segments_sled_can_stop_on_are_refused_for_a_new_latest_database() {
    for size in [16 << 20, (8 << 20) + 1, 3 << 20, 128] {
        let dir = tempfile::tempdir().unwrap();
        let opts = SledStorageOptions {
            latest_segment_size: size,
            ..Default::default()
        };
        let e = SledStorage::open(dir.path(), opts)
            .err()
            .unwrap_or_else(|| panic!("{size} accepted"));
        assert!(e.to_string().contains("latest_segment_size"), "{e}");
        // Nothing was created.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_kplane_started_on_the_directory_is_refused_not_merged() {
    let dir = tempfile::tempdir().unwrap();
    let s = SledStorage::open(dir.path(), SledStorageOptions::default()).unwrap();
    upsert(&s, "a", "1".into()).await;
    s.shutdown().await.unwrap();
    drop(s);
    // What an older kplane does to `log/`: opens a single sled database there.
    let db = sled::Config::new()
        .path(dir.path().join(LOG_DIR))
        .segment_size(SEGMENT_SIZE)
        .open()
        .unwrap();
    db.flush().unwrap();
    drop(db);
    let e = SledStorage::open(dir.path(), SledStorageOptions::default())
        .err()
        .expect("refused");
    assert!(e.to_string().contains("older kplane"), "{e}");
    // Nothing was moved.
    assert!(!dir.path().join(LEGACY_DIR).exists());
    assert!(log_entries(dir.path()).iter().any(|n| n.len() == 21));
}
