//! Counts the entries and bytes of each keyspace (the first byte of the tree key: `L`
//! latest, `H` history, `E` event log, `T` commit times, `I` index, `M` meta) of a stopped
//! kplane store, to see where its disk space goes.
//!
//! ```sh
//! cargo run --release -p kplane-storage --example keyspaces -- DATA_DIR/db
//! ```

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

fn main() {
    let path = std::env::args()
        .nth(1)
        .expect("the store directory (DATA_DIR/db)");
    let db = sled::open(&path).unwrap();
    println!("size on disk: {} MiB", db.size_on_disk().unwrap() >> 20);
    let tree = db.open_tree("kplane").unwrap();
    let mut spaces: BTreeMap<char, (u64, u64)> = BTreeMap::new();
    for entry in tree.iter() {
        let (k, v) = entry.unwrap();
        let tag = k.first().map_or('?', |b| char::from(*b));
        let e = spaces.entry(tag).or_default();
        e.0 += 1;
        e.1 += (k.len() + v.len()) as u64;
    }
    for (tag, (n, bytes)) in spaces {
        println!(
            "{tag}: {n:>9} entries {:>8.1} MiB",
            bytes as f64 / 1048576.0
        );
    }
}
