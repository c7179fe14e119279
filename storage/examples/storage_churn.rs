//! kplane's storage layer alone under churn: `C` writers each rewrite their share of
//! `KEYS` values of `VAL` bytes through `Storage::put` (compare-and-swap on the revision
//! read, as the API's updates do), with compaction keeping `WIN` seconds of history. Prints
//! the write rate and sled's size on disk every 10 s for `SECS` seconds (`CACHE_MB`: sled's
//! page cache size; `GENS`: generation trees per window, default 6; `COMPRESS=0`: history
//! uncompressed; `RANDOM=1`: values of random base64 characters instead of `x`s, for
//! measuring compression honestly; `EVENTS=n`: Event-like keys created and deleted beside
//! the updates, `n` kept; `LATEST_REBUILD=f`: the latest database's rebuild factor, 0 for
//! none). Each line is followed by the databases' sizes on disk
//! against the logical sizes the store reports (`StorageStats`). `N` (optional): stop after about that many writes instead, printing
//! every `STEP` writes (default 100,000) and once at the end, so runs of a
//! fixed write count can be compared with `sled_churn` (`WIN` far above the run's length
//! keeps the compactor from removing anything). Between
//! `sled_churn` (raw sled) and a whole server (`crates/bench/scripts/churn.sh`), to tell
//! which layer makes the data directory grow (docs/performance-history.md, "Disk
//! usage and throughput under churn").
//!
//! ```sh
//! DIR=/tmp/storage-churn SECS=120 WIN=30 cargo run --release -p kplane-storage --example storage_churn
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kplane_storage::{BatchWrite, Key, Precondition, SledStorage, SledStorageOptions, Storage};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// The databases' sizes on disk against the logical sizes the store reports: `disk/window`
/// is the data directory over the live data plus the window's history (the target is at
/// most 3), `disk/retained` over everything the store keeps.
fn logical(s: &kplane_storage::StorageStats) -> String {
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    let latest_disk = s.disk_bytes.saturating_sub(s.log_disk_bytes);
    format!(
        "disk latest {:.0} MiB log {:.0} MiB  logical latest {:.1} MiB log {:.1} MiB \
         window {:.1} MiB  disk/window {:.2}  disk/retained {:.2}  log disk/log logical {:.2}",
        mib(latest_disk),
        mib(s.log_disk_bytes),
        mib(s.latest_logical_bytes),
        mib(s.log_logical_bytes),
        mib(s.window_logical_bytes),
        s.disk_bytes as f64 / (s.latest_logical_bytes + s.window_logical_bytes).max(1) as f64,
        s.disk_bytes as f64 / (s.latest_logical_bytes + s.log_logical_bytes).max(1) as f64,
        s.log_disk_bytes as f64 / s.log_logical_bytes.max(1) as f64,
    )
}

/// A value of `len` bytes: `x` repeated, or with `RANDOM=1` random base64 characters
/// (incompressible but for the 6 bits per byte of the alphabet), different per call.
fn value(len: usize, random: bool, seed: u64) -> Vec<u8> {
    const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if !random {
        return vec![b'x'; len];
    }
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            B64[(x % 64) as usize]
        })
        .collect()
}

#[tokio::main]
async fn main() {
    let secs = env("SECS", 120);
    let window = env("WIN", 30);
    let keys = env("KEYS", 1000);
    let writers = env("C", 16);
    let val = env("VAL", 1700) as usize;
    let limit = env("N", u64::MAX);
    let step = env("STEP", 100_000).max(1);
    let dir = std::env::var("DIR").expect("DIR: a directory for the database");
    let random = env("RANDOM", 0) == 1;
    let mut opts = SledStorageOptions {
        event_window: Duration::from_secs(window),
        ..Default::default()
    };
    if let Some(mb) = std::env::var("CACHE_MB")
        .ok()
        .and_then(|s| s.parse::<u64>().ok())
    {
        opts.cache_capacity_bytes = mb << 20;
    }
    // PLAN_SECS: how often the compactor plans (default 1 s as the server; a value above the
    // run's length switches the compactor off entirely).
    // GENS: generation trees per window (default 6, as the server).
    if let Ok(Ok(g)) = std::env::var("GENS").map(|s| s.parse::<u32>()) {
        opts.generations = g;
    }
    // COMPRESS=0: keep history uncompressed.
    opts.compress_history = env("COMPRESS", 1) == 1;
    // LATEST_SEG: sled's segment size for the (new) latest database.
    if let Ok(Ok(b)) = std::env::var("LATEST_SEG").map(|s| s.parse::<usize>()) {
        opts.latest_segment_size = b;
    }
    if let Ok(Ok(p)) = std::env::var("PLAN_SECS").map(|s| s.parse::<u64>()) {
        opts.compaction_interval = Duration::from_secs(p);
    }
    // LATEST_REBUILD: rebuild the latest database past this many times its logical size
    // (0: never; default as the server).
    if let Ok(Ok(f)) = std::env::var("LATEST_REBUILD").map(|s| s.parse::<u64>()) {
        opts.latest_rebuild_factor = f;
    }
    // LATEST_MIN_MB / LATEST_EVERY_MS: the rebuild's size floor and minimum interval (to
    // make rebuilds frequent, e.g. when hunting a problem in the copy).
    if let Ok(Ok(m)) = std::env::var("LATEST_MIN_MB").map(|s| s.parse::<u64>()) {
        opts.latest_rebuild_min_bytes = m << 20;
    }
    if let Ok(Ok(ms)) = std::env::var("LATEST_EVERY_MS").map(|s| s.parse::<u64>()) {
        opts.latest_rebuild_interval = Duration::from_millis(ms);
    }
    // EVENTS: after each update a writer also creates an Event-like key (a new name each
    // time) and deletes the one it created EVENTS / C creates earlier, as the server's
    // churn scenario does with Events (their wildcard index entries stay until compaction).
    let events = env("EVENTS", 0);
    let store = SledStorage::open(&dir, opts).unwrap();
    let writes = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut tasks = Vec::new();
    // B (optional): instead of `C` writers, one task sends batches of B writes through
    // `write_batch` (one commit group each), the i-th write to key `(i * STRIDE) % KEYS`:
    // exactly `sled_churn`'s pattern, through kplane's writer.
    let per_batch = env("B", 0);
    let stride = env("STRIDE", 63);
    if per_batch > 0 {
        let (store, writes) = (store.clone(), writes.clone());
        tasks.push(tokio::spawn(async move {
            let mut i = 0u64;
            let mut exists = vec![false; keys as usize];
            while Instant::now() < deadline && writes.load(Ordering::Relaxed) < limit {
                let mut batch = Vec::new();
                for _ in 0..per_batch {
                    i += 1;
                    let k = ((i * stride) % keys) as usize;
                    let precondition = if exists[k] {
                        Precondition::MustExist
                    } else {
                        Precondition::MustNotExist
                    };
                    exists[k] = true;
                    batch.push(BatchWrite {
                        key: Key::new("root", "/configmaps", "churn", format!("cm-{k:05}")),
                        delete: false,
                        precondition,
                        encode: Box::new(move |rev| Ok(value(val, random, rev))),
                    });
                }
                for r in store.write_batch(batch).await {
                    r.unwrap();
                }
                writes.fetch_add(per_batch, Ordering::Relaxed);
            }
        }));
    }
    for w in 0..if per_batch > 0 { 0 } else { writers } {
        let (store, writes) = (store.clone(), writes.clone());
        tasks.push(tokio::spawn(async move {
            let mine: Vec<Key> = (w..keys)
                .step_by(writers as usize)
                .map(|i| Key::new("root", "/configmaps", "churn", format!("cm-{i:05}")))
                .collect();
            let mut revs = vec![None; mine.len()];
            let kept = (events / writers).max(1);
            let mut created = 0u64;
            let event = |n: u64| Key::new("root", "/events", "churn", format!("ev-{w}-{n:012}"));
            while Instant::now() < deadline && writes.load(Ordering::Relaxed) < limit {
                for (key, rev) in mine.iter().zip(revs.iter_mut()) {
                    if events > 0 {
                        store
                            .put(
                                event(created),
                                Precondition::MustNotExist,
                                Box::new(move |rev| Ok(value(val / 2, random, rev))),
                            )
                            .await
                            .unwrap();
                        created += 1;
                        if created > kept {
                            store
                                .delete(
                                    event(created - kept - 1),
                                    Precondition::MustExist,
                                    Box::new(|_| Ok(Vec::new())),
                                )
                                .await
                                .unwrap();
                            writes.fetch_add(1, Ordering::Relaxed);
                        }
                        writes.fetch_add(1, Ordering::Relaxed);
                    }
                    let pre = match *rev {
                        Some(r) => Precondition::ModRevision(r),
                        None => Precondition::MustNotExist,
                    };
                    let kv = store
                        .put(
                            key.clone(),
                            pre,
                            Box::new(move |rev| Ok(value(val, random, rev))),
                        )
                        .await
                        .unwrap();
                    *rev = Some(kv.mod_revision);
                    writes.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    let start = Instant::now();
    let mut last = 0;
    let mut next_step = step;
    let mut last_print = Instant::now();
    while Instant::now() < deadline && tasks.iter().any(|t| !t.is_finished()) {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let n = writes.load(Ordering::Relaxed);
        let due = if limit == u64::MAX {
            last_print.elapsed() >= Duration::from_secs(10)
        } else {
            n >= next_step
        };
        if !due {
            continue;
        }
        while next_step <= n {
            next_step += step;
        }
        let elapsed = last_print.elapsed().as_secs_f64();
        last_print = Instant::now();
        let s = store.stats();
        println!(
            "{:>4.0} s  writes {n:>8}  {:>6}/s  size on disk {:>6} MiB  ({} B/write)  \
             writes per flush {:.1}  compaction backlog {}",
            start.elapsed().as_secs_f64(),
            ((n - last) as f64 / elapsed) as u64,
            s.disk_bytes >> 20,
            s.disk_bytes / n.max(1),
            s.committed_writes as f64 / s.commit_groups.max(1) as f64,
            s.compaction_backlog
        );
        println!("       {}", logical(&s));
        last = n;
    }
    for t in tasks {
        t.await.unwrap();
    }
    let n = writes.load(Ordering::Relaxed);
    let s = store.stats();
    let bytes = s.disk_bytes;
    println!(
        "end: writes {n}  size on disk {} MiB  ({} B/write)",
        bytes >> 20,
        bytes / n.max(1)
    );
    println!("       {}", logical(&s));
    store.shutdown().await.unwrap();
}
