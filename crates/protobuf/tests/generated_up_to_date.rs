//! The committed descriptor table (`src/generated.rs`) must equal a fresh
//! generation from the k8s-pb / k8s-openapi sources in the cargo registry and
//! `data/go-scalar-presence.txt`. On failure, run
//! `cargo run -p kplane-protobuf --example gen_descriptors` and commit.

#[path = "../gen/generator.rs"]
mod generator;

use std::path::Path;

#[test]
fn committed_descriptor_table_is_current() {
    let crate_dir = Path::new(env!("CARGO_MANIFEST_DIR"));
    let generated = generator::Inputs::locate(crate_dir).and_then(|i| generator::generate(&i));
    let generated = match generated {
        Ok(g) => g,
        Err(e) => panic!("generator failed: {e}"),
    };
    assert!(
        generated.unclassified.is_empty(),
        "unclassified optional scalars (add to data/go-scalar-presence.txt): {:#?}",
        generated.unclassified
    );
    assert!(
        generated.stale.is_empty(),
        "stale entries in data/go-scalar-presence.txt: {:#?}",
        generated.stale
    );
    let committed = std::fs::read_to_string(crate_dir.join("src/generated.rs")).unwrap_or_default();
    assert!(
        committed == generated.source,
        "src/generated.rs is out of date: run `cargo run -p kplane-protobuf --example gen_descriptors`"
    );
}

#[test]
fn table_roots_match_k8s_pb_resources() {
    // Every root names a k8s-pb message; the generator cross-checks
    // apiVersion/kind against k8s-pb's `impl Resource` where it exists.
    for (api_version, kind, path) in generator::ROOTS {
        assert!(!kind.is_empty() && !path.is_empty());
        assert!(
            kplane_protobuf::supports(
                if *api_version == "*" {
                    "v1"
                } else {
                    api_version
                },
                kind
            ),
            "{api_version} {kind}"
        );
    }
}
