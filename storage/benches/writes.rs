//! Durable write throughput of the sled storage: 1 KiB creates from 1, 8 and 64 concurrent
//! writers (tokio tasks). One criterion iteration is one acknowledged (fsynced) create, so
//! the reported throughput is creates per second.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use kplane_storage::{Key, Precondition, SledStorage, SledStorageOptions, Storage};

const VALUE_SIZE: usize = 1024;

async fn run_writers(
    store: Arc<dyn Storage>,
    counter: Arc<AtomicU64>,
    writers: u64,
    iters: u64,
) -> Duration {
    let start = Instant::now();
    let mut tasks = Vec::with_capacity(writers as usize);
    for w in 0..writers {
        let n = iters / writers + u64::from(w < iters % writers);
        let store = store.clone();
        let counter = counter.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..n {
                let id = counter.fetch_add(1, Ordering::Relaxed);
                let key = Key::new(
                    "bench",
                    "/configmaps",
                    format!("ns{}", id % 16),
                    format!("cm-{id}"),
                );
                let value = vec![b'x'; VALUE_SIZE];
                store
                    .put(
                        key,
                        Precondition::MustNotExist,
                        Box::new(move |_| Ok(value)),
                    )
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    start.elapsed()
}

fn durable_writes(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let mut group = c.benchmark_group("durable_create_1KiB");
    group.throughput(Throughput::Elements(1));
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(5));
    for writers in [1u64, 8, 64] {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn Storage> =
            SledStorage::open(dir.path(), SledStorageOptions::default()).unwrap();
        let counter = Arc::new(AtomicU64::new(0));
        group.bench_with_input(
            BenchmarkId::from_parameter(writers),
            &writers,
            |b, &writers| {
                b.to_async(&rt).iter_custom(|iters| {
                    run_writers(store.clone(), counter.clone(), writers, iters)
                });
            },
        );
        rt.block_on(store.shutdown()).unwrap();
    }
    group.finish();
}

criterion_group!(benches, durable_writes);
criterion_main!(benches);
