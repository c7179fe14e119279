//! Raw sled 0.34: how long point reads of one tree take while another thread writes groups
//! into other trees, with the groups written as sled batches (`MODE=batch`) or entry by
//! entry (`MODE=ops`, what kplane's writer does, `storage/src/sled/ops.rs`). The first
//! batch of a process switches sled's process-wide concurrency control to an RwLock, so in
//! `batch` mode every read waits for every batch being applied. Run each mode in its own
//! process (the switch is for good). Prints one JSON line: read latency percentiles with
//! writes going on and without, and the write throughput.
//!
//! `GROUP` writes of `VAL` bytes per group (default 8,192 × 1,024), each group followed by a
//! flush, for `SECS` seconds (default 10), readers `READERS` threads (default 1).
//!
//! ```sh no-run
//! DIR=/tmp/sled-read-lock MODE=batch cargo run --release -p kplane-storage --example sled_read_lock
//! DIR=/tmp/sled-read-lock MODE=ops cargo run --release -p kplane-storage --example sled_read_lock
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]
// The `batch` mode measures sled batches on purpose.
#![allow(clippy::disallowed_methods)]

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn percentiles(mut v: Vec<u64>) -> String {
    v.sort_unstable();
    let at = |p: f64| {
        let i = ((v.len() as f64 - 1.0) * p).round() as usize;
        v.get(i).copied().unwrap_or(0) as f64 / 1000.0
    };
    format!(
        "{{\"n\": {}, \"p50_us\": {:.1}, \"p90_us\": {:.1}, \"p99_us\": {:.1}, \"p999_us\": {:.1}, \"max_us\": {:.1}}}",
        v.len(),
        at(0.5),
        at(0.9),
        at(0.99),
        at(0.999),
        at(1.0)
    )
}

/// Reads random keys of `tree` until `stop`, one every ~50 µs; latencies in ns.
fn read_loop(tree: sled::Tree, keys: u64, stop: Arc<AtomicBool>) -> Vec<u64> {
    let mut out = Vec::new();
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    while !stop.load(Ordering::Relaxed) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let k = (x % keys).to_be_bytes();
        let t = Instant::now();
        let v = tree.get(k).unwrap();
        out.push(t.elapsed().as_nanos() as u64);
        assert!(v.is_some());
        std::thread::sleep(Duration::from_micros(50));
    }
    out
}

fn main() {
    let dir = std::env::var("DIR").unwrap_or_else(|_| "/tmp/sled-read-lock".into());
    let batch = std::env::var("MODE").as_deref() == Ok("batch");
    let group = env("GROUP", 8192);
    let val = env("VAL", 1024) as usize;
    let secs = env("SECS", 10);
    let readers = env("READERS", 1);
    let _ = std::fs::remove_dir_all(&dir);
    let db = sled::Config::new()
        .path(&dir)
        .segment_size(16 * 1024 * 1024)
        .mode(sled::Mode::HighThroughput)
        .open()
        .unwrap();
    let hot = db.open_tree("hot").unwrap();
    let keys = 10_000u64;
    for k in 0..keys {
        hot.insert(k.to_be_bytes(), vec![1u8; 256]).unwrap();
    }
    db.flush().unwrap();
    let log = db.open_tree("log").unwrap();
    let latest = db.open_tree("latest").unwrap();
    if batch {
        // The process-wide switch happens at the first batch: make it now, so the idle
        // reads below are measured in the same mode as the busy ones.
        let mut b = sled::Batch::default();
        b.insert(b"warm".to_vec(), b"up".to_vec());
        hot.apply_batch(b).unwrap();
    }

    let run_reads = |with_writes: bool| -> (String, u64) {
        let stop = Arc::new(AtomicBool::new(false));
        let handles: Vec<_> = (0..readers)
            .map(|_| {
                let (tree, stop) = (hot.clone(), stop.clone());
                std::thread::spawn(move || read_loop(tree, keys, stop))
            })
            .collect();
        let writes = Arc::new(AtomicU64::new(0));
        let writer = with_writes.then(|| {
            let (log, latest, db, stop, writes) = (
                log.clone(),
                latest.clone(),
                db.clone(),
                stop.clone(),
                writes.clone(),
            );
            std::thread::spawn(move || {
                let mut rev = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let value = vec![(rev % 251) as u8; val];
                    if batch {
                        let mut lb = sled::Batch::default();
                        let mut vb = sled::Batch::default();
                        for _ in 0..group {
                            rev += 1;
                            lb.insert(rev.to_be_bytes().to_vec(), value.clone());
                            vb.insert((rev % 100_000).to_be_bytes().to_vec(), value.clone());
                        }
                        log.apply_batch(lb).unwrap();
                        db.flush().unwrap();
                        latest.apply_batch(vb).unwrap();
                    } else {
                        let first = rev;
                        for _ in 0..group {
                            rev += 1;
                            log.insert(rev.to_be_bytes(), value.clone()).unwrap();
                        }
                        db.flush().unwrap();
                        for r in first + 1..=rev {
                            latest
                                .insert((r % 100_000).to_be_bytes(), value.clone())
                                .unwrap();
                        }
                    }
                    writes.fetch_add(group, Ordering::Relaxed);
                }
            })
        });
        std::thread::sleep(Duration::from_secs(secs));
        stop.store(true, Ordering::Relaxed);
        let mut all = Vec::new();
        for h in handles {
            all.extend(h.join().unwrap());
        }
        if let Some(w) = writer {
            w.join().unwrap();
        }
        (percentiles(all), writes.load(Ordering::Relaxed))
    };

    let (idle, _) = run_reads(false);
    let (busy, writes) = run_reads(true);
    println!(
        "{{\"mode\": \"{}\", \"group\": {group}, \"val\": {val}, \"idle\": {idle}, \"during_writes\": {busy}, \"writes_per_s\": {:.0}, \"loadavg\": \"{}\"}}",
        if batch { "batch" } else { "ops" },
        writes as f64 / secs as f64,
        std::fs::read_to_string("/proc/loadavg")
            .unwrap_or_default()
            .split(' ')
            .take(3)
            .collect::<Vec<_>>()
            .join(" ")
    );
    drop(db);
    let _ = std::fs::remove_dir_all(&dir);
}
