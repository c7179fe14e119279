//! Measures the heap the garbage collector's graph needs at the scale issue 6 names:
//! 1,000,000 objects across 10,000 logical clusters, 20% of them owned (200,000 edges).
//!
//! Only owned objects enter the graph, so it feeds the real `Graph` the 200,000 owned
//! objects (each with one owner uid; every owner has two dependents) and reports the
//! resident-set growth, with mimalloc as in the `kplane` binary.
//!
//! Run: `cargo run --release -p kplane-apiserver --example gc_graph_memory`
// A measuring tool: its cluster names are constants, and a bad one is a bug to stop on.
#![allow(clippy::expect_used)]

use kplane_apiserver::registry::controllers::gc::{Graph, ObjRef};
use kplane_types::ClusterName;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CLUSTERS: usize = 10_000;
const OBJECTS_PER_CLUSTER: usize = 100;
const OWNED_PER_CLUSTER: usize = 20;

/// Resident set size in bytes, from /proc/self/statm.
fn rss() -> u64 {
    let statm = std::fs::read_to_string("/proc/self/statm").unwrap_or_default();
    let pages: u64 = statm
        .split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .unwrap_or(0);
    pages * 4096
}

/// A uid as the server generates them (UUID v4 text), derived from a counter.
fn uid(n: usize) -> String {
    uuid::Uuid::from_u128(0x6b1d_1f38_0000_4000_8000_0000_0000_0000 | n as u128).to_string()
}

fn main() {
    let before = rss();
    let mut graph = Graph::default();
    let mut edges = 0usize;
    for c in 0..CLUSTERS {
        let cluster = ClusterName::parse(&format!("tenant-{c:05}")).expect("a valid name");
        for i in 0..OWNED_PER_CLUSTER {
            // Owned objects alternate between ConfigMaps and Secrets in two namespaces;
            // owners are other objects of the cluster, two dependents each.
            let dep = ObjRef {
                cluster: cluster.clone(),
                resource: if i % 2 == 0 {
                    "/configmaps"
                } else {
                    "/secrets"
                }
                .into(),
                namespace: if i % 4 < 2 { "default" } else { "team-a" }.into(),
                name: format!("owned-object-{i:03}"),
            };
            let owner = c * OBJECTS_PER_CLUSTER + OWNED_PER_CLUSTER + i / 2;
            graph.set_owners(&dep, vec![uid(owner)]);
            edges += 1;
        }
    }
    let after = rss();
    let mib = |b: u64| b as f64 / (1024.0 * 1024.0);
    println!(
        "objects: {}, clusters: {CLUSTERS}, owned objects in the graph: {}, edges: {edges}",
        CLUSTERS * OBJECTS_PER_CLUSTER,
        graph.len()
    );
    println!(
        "RSS before {:.1} MiB, after {:.1} MiB: graph {:.1} MiB ({:.0} bytes per owned object)",
        mib(before),
        mib(after),
        mib(after.saturating_sub(before)),
        after.saturating_sub(before) as f64 / edges as f64
    );
    // Keep the graph alive until after the measurement, and prove it answers.
    assert_eq!(
        graph
            .dependents_of(
                &ClusterName::parse("tenant-00000").expect("a valid name"),
                &uid(OWNED_PER_CLUSTER),
            )
            .len(),
        2
    );
}
