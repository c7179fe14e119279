//! Durable create throughput of the sled storage alone: `C` concurrent writers (tokio tasks)
//! each create keys of `VAL` bytes through `Storage::put` for `SECS` seconds, on a fresh
//! database in `DIR` (removed at the end; `FLUSH_MS`: sled's background flush interval, 0
//! for none). Prints creates per second and the p50/p99 latency
//! of one acknowledged (fsynced) create, then the group-commit figures: the storage layer's
//! share of kplane-bench's create scenario, small enough to compare builds of the sled
//! layout (docs/performance.md). Uses mimalloc, as the server does.
//!
//! ```sh
//! DIR=/tmp/create-rate C=64 SECS=10 cargo run --release -p kplane-storage --example create_rate
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use kplane_storage::{Key, Precondition, SledStorage, SledStorageOptions, Storage};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

#[tokio::main]
async fn main() {
    let secs = env("SECS", 10);
    let writers = env("C", 64);
    let val = env("VAL", 1024) as usize;
    let dir = std::env::var("DIR").expect("DIR: a directory for the database");
    let mut opts = SledStorageOptions::default();
    // FLUSH_MS (optional): sled's background flush interval; 0 switches it off.
    if let Ok(Ok(ms)) = std::env::var("FLUSH_MS").map(|s| s.parse::<u64>()) {
        opts.flush_every_ms = (ms > 0).then_some(ms);
    }
    let store: Arc<dyn Storage> = SledStorage::open(&dir, opts).unwrap();
    let counter = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + Duration::from_secs(secs);
    let mut tasks = Vec::new();
    for _ in 0..writers {
        let (store, counter) = (store.clone(), counter.clone());
        tasks.push(tokio::spawn(async move {
            let mut latencies = Vec::new();
            while Instant::now() < deadline {
                let id = counter.fetch_add(1, Ordering::Relaxed);
                let key = Key::new(
                    "bench",
                    "/configmaps",
                    format!("ns{}", id % 16),
                    format!("cm-{id}"),
                );
                let value = vec![b'x'; val];
                let t = Instant::now();
                store
                    .put(
                        key,
                        Precondition::MustNotExist,
                        Box::new(move |_| Ok(value)),
                    )
                    .await
                    .unwrap();
                latencies.push(t.elapsed());
            }
            latencies
        }));
    }
    let mut latencies = Vec::new();
    for t in tasks {
        latencies.extend(t.await.unwrap());
    }
    let elapsed = started.elapsed();
    latencies.sort();
    let pct = |p: f64| latencies[((latencies.len() as f64 * p) as usize).min(latencies.len() - 1)];
    println!(
        "creates={} secs={:.1} rate={:.0}/s p50={:.2}ms p99={:.2}ms",
        latencies.len(),
        elapsed.as_secs_f64(),
        latencies.len() as f64 / elapsed.as_secs_f64(),
        pct(0.50).as_secs_f64() * 1e3,
        pct(0.99).as_secs_f64() * 1e3,
    );
    let stats = store.stats();
    println!(
        "  groups={} writes/group={:.1} max_group={} commit_ms={}",
        stats.commit_groups,
        stats.committed_writes as f64 / stats.commit_groups.max(1) as f64,
        stats.max_group,
        stats.commit_micros / 1000,
    );
    store.shutdown().await.unwrap();
    drop(store);
    std::fs::remove_dir_all(&dir).unwrap();
}
