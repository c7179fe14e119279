//! `SchemaCache`: identical schemas compile once and are shared; unused ones are freed.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::*;
use kplane_schema::{CompileOptions, SchemaCache};
use serde_json::json;

#[test]
fn identical_schemas_are_shared_and_freed() {
    let cache = SchemaCache::new();
    let opts = CompileOptions::default();
    let a = json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {"x": {"type": "string"}, "y": {"type": "integer"}}}}});
    // same content, different key order (as another cluster's YAML might produce)
    let b: serde_json::Value = serde_json::from_str(r#"{"properties": {"spec": {"properties": {"y": {"type": "integer"}, "x": {"type": "string"}}, "type": "object"}}, "type": "object"}"#).unwrap();
    let c = json!({"type": "object", "properties": {"spec": {"type": "object"}}});
    let s1 = cache.get_or_compile(&a, PREFIX, &opts).unwrap();
    let s2 = cache
        .get_or_compile(&b, "spec.versions[3].schema.openAPIV3Schema", &opts)
        .unwrap();
    let s3 = cache.get_or_compile(&c, PREFIX, &opts).unwrap();
    assert!(Arc::ptr_eq(&s1, &s2));
    assert!(!Arc::ptr_eq(&s1, &s3));
    assert_eq!(cache.len(), 2);
    // different options compile separately
    let other = CompileOptions {
        max_depth: 10,
        ..CompileOptions::default()
    };
    let s4 = cache.get_or_compile(&a, PREFIX, &other).unwrap();
    assert!(!Arc::ptr_eq(&s1, &s4));
    drop((s1, s2, s4));
    assert_eq!(cache.len(), 1);
    drop(s3);
    assert!(cache.is_empty());
    // errors carry the caller's prefix and are not cached
    let bad = json!({"type": "string"});
    let e = cache.get_or_compile(&bad, "p", &opts).unwrap_err();
    assert_eq!(e[0].field, "p.type");
}

#[test]
fn many_clusters_share_one_compiled_schema() {
    let cache = Arc::new(SchemaCache::new());
    let schema = with_spec(
        json!({"replicas": {"type": "integer", "minimum": 0, "x-kubernetes-validations": [{"rule": "self < 1000"}]}}),
    );
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let cache = cache.clone();
            let schema = schema.clone();
            std::thread::spawn(move || {
                (0..250)
                    .map(|_| {
                        cache
                            .get_or_compile(&schema, PREFIX, &CompileOptions::default())
                            .unwrap()
                    })
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let all: Vec<_> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    assert_eq!(all.len(), 2000);
    assert_eq!(cache.len(), 1);
    assert!(all.iter().all(|s| Arc::ptr_eq(s, &all[0])));
}
