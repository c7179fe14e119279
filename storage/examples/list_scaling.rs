//! How the storage layer's LIST of one namespace scales with its size (issue 3: full LIST
//! grows faster than linearly past 10,000 objects). Fills a fresh store with N values of
//! 1 KiB in one namespace and times `Storage::list` of it (median of 15), for several N,
//! without HTTP, TLS or JSON.
//!
//! cargo run --release -p kplane-storage --example list_scaling [N...]

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Instant;

use kplane_storage::{
    Key, ListOptions, Precondition, Prefix, SledStorage, SledStorageOptions, Storage,
};

#[tokio::main]
async fn main() {
    let sizes: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() {
        vec![10_000, 20_000, 30_000]
    } else {
        sizes
    };
    for n in sizes {
        let dir = tempfile::tempdir().unwrap();
        let store = SledStorage::open(dir.path().join("db"), opts()).unwrap();
        let mut tasks = Vec::new();
        for w in 0..32usize {
            let store = store.clone();
            tasks.push(tokio::spawn(async move {
                for i in (w..n).step_by(32) {
                    let key = Key::new("c", "/configmaps", "big", format!("cm-{i:06}"));
                    store
                        .put(
                            key,
                            Precondition::MustNotExist,
                            Box::new(|_| Ok(vec![b'x'; 1024])),
                        )
                        .await
                        .unwrap();
                }
            }));
        }
        for t in tasks {
            t.await.unwrap();
        }
        let prefix = Prefix {
            cluster: kplane_storage::Clusters::One("c".into()),
            resource: Some("/configmaps".into()),
            namespace: Some("big".into()),
        };
        let mut times = Vec::new();
        for _ in 0..15 {
            let t = Instant::now();
            let r = store
                .list(&prefix, &ListOptions::default(), None)
                .await
                .unwrap();
            times.push(t.elapsed().as_secs_f64() * 1000.0);
            assert_eq!(r.items.len(), n);
        }
        times.sort_by(f64::total_cmp);
        let med = times[times.len() / 2];
        println!(
            "{n:>7} objects: list median {med:7.2} ms ({:.0} ns per object)",
            med * 1e6 / n as f64
        );
        store.shutdown().await.unwrap();
    }
}

/// The default options, with the page cache size from `KPLANE_CACHE_MB` when set.
fn opts() -> SledStorageOptions {
    let mut o = SledStorageOptions::default();
    if let Some(mb) = std::env::var("KPLANE_CACHE_MB")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        o.cache_capacity_bytes = mb * 1024 * 1024;
    }
    o
}
