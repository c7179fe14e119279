//! Server-side apply of an object with a 5,000-entry map-list (`x-kubernetes-list-type:
//! map` keyed by `name`): create-on-apply, a re-apply by the owner changing one value,
//! and an apply by a second manager adding one entry. Must stay well under 50 ms.
//! Uses mimalloc, the allocator the kplane server runs with.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::hint::black_box;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};
use kplane_merge::{apply, builtin_type_info, crd_type_info, record_update, Request};
use serde_json::{json, Value};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const N: usize = 5_000;

fn schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "items": {
                        "type": "array",
                        "x-kubernetes-list-type": "map",
                        "x-kubernetes-list-map-keys": ["name"],
                        "items": {
                            "type": "object",
                            "properties": {"name": {"type": "string"}, "value": {"type": "string"}}
                        }
                    }
                }
            }
        }
    })
}

fn object(n: usize, changed: Option<usize>) -> Value {
    let items: Vec<Value> = (0..n)
        .map(|i| {
            let v = if Some(i) == changed {
                "changed".to_string()
            } else {
                format!("value-{i}")
            };
            json!({"name": format!("item-{i}"), "value": v})
        })
        .collect();
    json!({
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "namespace": "ns"},
        "spec": {"items": items}
    })
}

fn bench(c: &mut Criterion) {
    let types = crd_type_info(&schema()).unwrap();
    let req = |m: &'static str| Request::new(m, "example.com/v1", "2024-01-01T00:00:00Z", &types);
    let full = object(N, None);
    let live = apply(None, &full, &req("owner"), false).unwrap();
    let changed = object(N, Some(N / 2));
    let mut extra = object(0, None);
    extra["spec"]["items"] = json!([{"name": "extra", "value": "x"}]);

    let mut g = c.benchmark_group("apply_5000_map_list");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    g.bench_function("create", |b| {
        b.iter(|| apply(None, black_box(&full), &req("owner"), false).unwrap())
    });
    g.bench_function("reapply_one_changed", |b| {
        b.iter(|| {
            apply(
                Some(black_box(&live)),
                black_box(&changed),
                &req("owner"),
                false,
            )
            .unwrap()
        })
    });
    g.bench_function("second_manager_adds_one", |b| {
        b.iter(|| {
            apply(
                Some(black_box(&live)),
                black_box(&extra),
                &req("other"),
                false,
            )
            .unwrap()
        })
    });
    g.finish();

    // The Update entry every create of a 1 KiB ConfigMap records (the common write).
    let cm_types = builtin_type_info("", "ConfigMap").unwrap();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default", "labels": {"app": "x"}},
        "data": {"a": "x".repeat(1000), "b": "y"}});
    let mut g = c.benchmark_group("record_update");
    g.bench_function("create_configmap_1k", |b| {
        b.iter(|| {
            let mut obj = black_box(&cm).clone();
            let req = Request::new("kubectl-create", "v1", "2024-01-01T00:00:00Z", &*cm_types);
            record_update(None, &mut obj, &req).unwrap();
            obj
        })
    });
    g.bench_function("clone_only_baseline", |b| b.iter(|| black_box(&cm).clone()));
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
