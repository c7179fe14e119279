//! Raw sled under kplane's write pattern, without kplane: per write the latest value (`L`),
//! the superseded value (`H key ++ rev`) and an event-log entry (`E rev`), `B` writes per
//! batch and flush; history older than `WIN` revisions removed in batches of 1,024. Prints
//! sled's size on disk every 100,000 revisions, to tell sled's own space reclamation apart
//! from kplane's (docs/performance-history.md, "Disk usage and throughput under churn").
//!
//! Caution: without `KPVAL`, every write stores the same bytes under the same latest key,
//! and sled 0.34 skips an insert whose value equals the stored one (`Tree::insert_inner`,
//! "short-circuit a no-op set or delete"), so the latest values are never rewritten. Use
//! `KPVAL=1` for kplane's real pattern (see docs/performance-history.md, "Bisecting kplane
//! against raw sled").
//!
//! ```sh
//! DIR=/tmp/sled-churn N=1500000 WIN=300000 B=16 cargo run --release -p kplane-storage --example sled_churn
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]
// Raw-sled experiments of the batch-era layouts: batches on purpose.
#![allow(clippy::disallowed_methods)]

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
    // kplane's extras, off by default: META=1 also writes, per batch, the revision meta key
    // (`M`, one hot key) and a commit-time entry (`T rev`, removed with the history); VAL is
    // the value size; KEYPAD lengthens every object key by that many bytes (kplane's keys
    // carry cluster, resource, namespace and name).
    let meta = env("META", 0) == 1;
    // MTAG: the first byte of the revision meta key (default b'M', as kplane: it sorts
    // between the latest values and the commit-time entries).
    let mtag = env("MTAG", u64::from(b'M')) as u8;
    let val = env("VAL", 1200) as usize;
    let pad = vec![b'p'; env("KEYPAD", 0) as usize];
    // STRIDE: the distance between the keys of consecutive revisions (1: a batch updates
    // neighbouring keys; kplane's concurrent writers update keys spread over the key
    // space: STRIDE=63 does that, each key still updated once per KEYS revisions).
    let stride = env("STRIDE", 1);
    // READ=1: kplane's reads too: the latest value before each write (its compare-and-swap)
    // and, when compacting, a scan of each key's history up to the compaction point.
    let read = env("READ", 0) == 1;
    // KPKEY=1: object keys encoded as kplane encodes them (escaped, terminated cluster,
    // resource, namespace and name components; the name `cm-NNNNN` in decimal) instead of
    // KEYPAD's padding and a big-endian number.
    let kpkey = env("KPKEY", 0) == 1;
    let okey = |tag: u8, k: u64, rev: Option<u64>| {
        let mut v = vec![tag];
        if kpkey {
            for c in ["root", "/configmaps", "churn", &format!("cm-{k:05}")] {
                v.extend_from_slice(c.as_bytes());
                v.extend_from_slice(&[0, 1]);
            }
        } else {
            v.extend_from_slice(&pad);
            v.extend_from_slice(&k.to_be_bytes());
        }
        if let Some(r) = rev {
            v.extend_from_slice(&r.to_be_bytes());
        }
        v
    };
    // KPVAL=1: as kplane's writer: the history entry is keyed by the superseded value's
    // revision and holds it (none on a key's first write), values carry a 17-byte record
    // header with the revisions, the event-log entry holds the object key, and each key gets
    // an index entry (`I`) when created.
    // (KPVAL=2: only the history keyed by the superseded revision; KPVAL=3: only the
    // header; bisecting which of them costs the extra bytes. KPVAL=4: each version stored
    // once, under its own revision, and the latest entry only its revision: a layout that
    // writes each value once instead of twice.)
    let kpmode = env("KPVAL", 0);
    let kpval = kpmode > 0;
    let mut last_rev = vec![0u64; keys as usize];
    let dir = std::env::var("DIR").expect("DIR: a directory for the database");
    let db = sled::Config::new()
        .path(&dir)
        .cache_capacity(64 << 20)
        .flush_every_ms(Some(1000))
        .open()
        .unwrap();
    let tree = db.open_tree("k").unwrap();
    let value = vec![b'x'; val];
    let (mut rev, mut compacted) = (0u64, 0u64);
    let start = Instant::now();
    while rev < total {
        let mut batch = sled::Batch::default();
        for _ in 0..per_batch {
            rev += 1;
            let k = (rev * stride) % keys;
            if read {
                std::hint::black_box(tree.get(okey(b'L', k, None)).unwrap());
            }
            if kpval {
                let rec = |r: u64| {
                    if kpmode == 2 {
                        return value.clone();
                    }
                    let mut v = vec![0u8];
                    v.extend_from_slice(&1u64.to_be_bytes());
                    v.extend_from_slice(&r.to_be_bytes());
                    v.extend_from_slice(&value);
                    v
                };
                let prev = if kpmode == 3 {
                    rev
                } else {
                    last_rev[k as usize]
                };
                if kpmode == 4 {
                    // A layout kplane does not have: every version written once, under its
                    // own revision; the latest entry holds only that revision.
                    if prev == 0 {
                        batch.insert(okey(b'I', k, None), vec![]);
                    }
                    batch.insert(okey(b'H', k, Some(rev)), rec(rev));
                    batch.insert(okey(b'L', k, None), rev.to_be_bytes().to_vec());
                    batch.insert(key(b'E', &[rev]), okey(b'M', k, None));
                    last_rev[k as usize] = rev;
                    continue;
                }
                if prev > 0 {
                    batch.insert(okey(b'H', k, Some(prev)), rec(prev));
                } else {
                    batch.insert(okey(b'I', k, None), vec![]);
                }
                batch.insert(okey(b'L', k, None), rec(rev));
                batch.insert(key(b'E', &[rev]), okey(b'M', k, None));
                last_rev[k as usize] = rev;
            } else {
                batch.insert(okey(b'L', k, None), value.clone());
                batch.insert(okey(b'H', k, Some(rev)), value.clone());
                batch.insert(key(b'E', &[rev]), okey(b'K', k, None));
            }
        }
        if meta {
            batch.insert(key(mtag, &[]), rev.to_be_bytes().to_vec());
            batch.insert(key(b'T', &[rev]), rev.to_be_bytes().to_vec());
        }
        tree.apply_batch(batch).unwrap();
        tree.flush().unwrap();
        if rev > window && rev - window > compacted + 1024 {
            let upto = rev - window;
            let mut batch = sled::Batch::default();
            if read {
                for k in 0..keys.min(upto - compacted) {
                    let range = okey(b'H', k, Some(0))..=okey(b'H', k, Some(upto));
                    std::hint::black_box(tree.range(range).count());
                }
            }
            for r in compacted + 1..=upto {
                batch.remove(okey(b'H', (r * stride) % keys, Some(r)));
                batch.remove(key(b'E', &[r]));
                if meta {
                    batch.remove(key(b'T', &[r]));
                }
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
