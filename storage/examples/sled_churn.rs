//! Raw sled under kplane's write pattern, without kplane: per write the latest value (`L`),
//! the superseded value (`H key ++ rev`) and an event-log entry (`E rev`), `B` writes per
//! batch and flush; history older than `WIN` revisions removed in batches of 1,024. Prints
//! sled's size on disk every 100,000 revisions, to tell sled's own space reclamation apart
//! from kplane's (docs/performance.md, "Disk usage and throughput under churn").
//!
//! ```sh
//! DIR=/tmp/sled-churn N=1500000 WIN=300000 B=16 cargo run --release -p kplane-storage --example sled_churn
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

fn env(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn key(tag: u8, parts: &[u64]) -> Vec<u8> {
    let mut k = vec![tag];
    for p in parts {
        k.extend_from_slice(&p.to_be_bytes());
    }
    k
}

fn main() {
    let total = env("N", 1_000_000);
    let window = env("WIN", 50_000);
    let per_batch = env("B", 16);
    let keys = env("KEYS", 1000);
    let dir = std::env::var("DIR").expect("DIR: a directory for the database");
    let db = sled::Config::new()
        .path(&dir)
        .cache_capacity(64 << 20)
        .flush_every_ms(Some(1000))
        .open()
        .unwrap();
    let tree = db.open_tree("k").unwrap();
    let value = vec![b'x'; 1200];
    let (mut rev, mut compacted) = (0u64, 0u64);
    let start = Instant::now();
    while rev < total {
        let mut batch = sled::Batch::default();
        for _ in 0..per_batch {
            rev += 1;
            let k = rev % keys;
            batch.insert(key(b'L', &[k]), value.clone());
            batch.insert(key(b'H', &[k, rev]), value.clone());
            batch.insert(key(b'E', &[rev]), k.to_be_bytes().to_vec());
        }
        tree.apply_batch(batch).unwrap();
        tree.flush().unwrap();
        if rev > window && rev - window > compacted + 1024 {
            let upto = rev - window;
            let mut batch = sled::Batch::default();
            for r in compacted + 1..=upto {
                batch.remove(key(b'H', &[r % keys, r]));
                batch.remove(key(b'E', &[r]));
            }
            tree.apply_batch(batch).unwrap();
            compacted = upto;
        }
        if rev % 100_000 < per_batch {
            println!(
                "revision {rev:>9}  {:>5.0} s  size on disk {:>6} MiB",
                start.elapsed().as_secs_f64(),
                db.size_on_disk().unwrap() >> 20
            );
        }
    }
}
