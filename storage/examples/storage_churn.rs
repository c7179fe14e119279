//! kplane's storage layer alone under churn: `C` writers each rewrite their share of
//! `KEYS` values of `VAL` bytes through `Storage::put` (compare-and-swap on the revision
//! read, as the API's updates do), with compaction keeping `WIN` seconds of history. Prints
//! the write rate and sled's size on disk every 10 s for `SECS` seconds (`CACHE_MB`: sled's
//! page cache size). Between
//! `sled_churn` (raw sled) and a whole server (`crates/bench/scripts/churn.sh`), to tell
//! which layer makes the data directory grow (docs/performance.md, "Disk usage and
//! throughput under churn").
//!
//! ```sh
//! DIR=/tmp/storage-churn SECS=120 WIN=30 cargo run --release -p kplane-storage --example storage_churn
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kplane_storage::{Key, Precondition, SledStorage, SledStorageOptions, Storage};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() {
    let secs = env("SECS", 120);
    let window = env("WIN", 30);
    let keys = env("KEYS", 1000);
    let writers = env("C", 16);
    let val = env("VAL", 1700) as usize;
    let dir = std::env::var("DIR").expect("DIR: a directory for the database");
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
    let store = SledStorage::open(dir, opts).unwrap();
    let writes = Arc::new(AtomicU64::new(0));
    let deadline = Instant::now() + Duration::from_secs(secs);
    let mut tasks = Vec::new();
    for w in 0..writers {
        let (store, writes) = (store.clone(), writes.clone());
        tasks.push(tokio::spawn(async move {
            let mine: Vec<Key> = (w..keys)
                .step_by(writers as usize)
                .map(|i| Key::new("root", "/configmaps", "churn", format!("cm-{i:05}")))
                .collect();
            let mut revs = vec![None; mine.len()];
            while Instant::now() < deadline {
                for (key, rev) in mine.iter().zip(revs.iter_mut()) {
                    let pre = match *rev {
                        Some(r) => Precondition::ModRevision(r),
                        None => Precondition::MustNotExist,
                    };
                    let kv = store
                        .put(key.clone(), pre, Box::new(move |_| Ok(vec![b'x'; val])))
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
    while Instant::now() < deadline {
        tokio::time::sleep(Duration::from_secs(10)).await;
        let n = writes.load(Ordering::Relaxed);
        let s = store.stats();
        println!(
            "{:>4.0} s  writes {n:>8}  {:>6}/s  size on disk {:>6} MiB  ({} B/write)  \
             writes per flush {:.1}  compaction backlog {}",
            start.elapsed().as_secs_f64(),
            (n - last) / 10,
            s.disk_bytes >> 20,
            s.disk_bytes / n.max(1),
            s.committed_writes as f64 / s.commit_groups.max(1) as f64,
            s.compaction_backlog
        );
        last = n;
    }
    for t in tasks {
        t.await.unwrap();
    }
    store.shutdown().await.unwrap();
}
