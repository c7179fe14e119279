//! Pruning of unknown fields and defaulting, as apiextensions does them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::json;

#[test]
fn prunes_unknown_fields_and_reports_paths() {
    let s = schema(with_spec(json!({
        "known": {"type": "string"},
        "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "integer"}}}},
        "labels": {"type": "object", "additionalProperties": {"type": "object", "properties": {"v": {"type": "string"}}}},
        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"typed": {"type": "object", "properties": {"x": {"type": "string"}}}}},
    })));
    let mut obj = json!({
        "apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n", "anything": "kept-for-the-server"},
        "top": 1,
        "spec": {
            "known": "k", "foo": 1,
            "items": [{"a": 1, "bar": 2}, {"baz": 3}],
            "labels": {"one": {"v": "x", "w": "y"}},
            "free": {"whatever": {"deep": true}, "typed": {"x": "a", "y": "b"}},
        }
    });
    let pruned = s.prune(&mut obj);
    assert_eq!(
        pruned,
        vec![
            "spec.foo",
            "spec.free.typed.y",
            "spec.items[0].bar",
            "spec.items[1].baz",
            "spec.labels.one.w",
            "top"
        ]
    );
    assert_eq!(
        obj,
        json!({
            "apiVersion": "x/v1", "kind": "X", "metadata": {"name": "n", "anything": "kept-for-the-server"},
            "spec": {
                "known": "k",
                "items": [{"a": 1}, {}],
                "labels": {"one": {"v": "x"}},
                "free": {"whatever": {"deep": true}, "typed": {"x": "a"}},
            }
        })
    );
}

#[test]
fn embedded_resources_keep_type_and_object_meta() {
    let s = schema(with_spec(json!({
        "tpl": {"type": "object", "x-kubernetes-embedded-resource": true, "properties": {"spec": {"type": "object", "properties": {"n": {"type": "integer"}}}}},
    })));
    let mut obj = json!({"spec": {"tpl": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}, "bogus": 1}, "spec": {"n": 1, "m": 2}, "extra": true}}});
    let pruned = s.prune(&mut obj);
    assert_eq!(
        pruned,
        vec![
            "spec.tpl.extra",
            "spec.tpl.metadata.bogus",
            "spec.tpl.spec.m"
        ]
    );
    assert_eq!(
        obj["spec"]["tpl"],
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}}, "spec": {"n": 1}})
    );
}

#[test]
fn defaults_missing_fields_and_non_nullable_nulls() {
    let s = schema(with_spec(json!({
        "replicas": {"type": "integer", "default": 1},
        "mode": {"type": "string", "nullable": true, "default": "auto"},
        "strict": {"type": "string", "default": "on"},
        "gone": {"type": "string"},
        "kept": {"type": "string", "nullable": true},
        "nested": {"type": "object", "default": {}, "properties": {"a": {"type": "string", "default": "x"}, "b": {"type": "object", "properties": {"c": {"type": "integer", "default": 7}}}}},
    })));
    let mut obj = json!({"spec": {"mode": null, "strict": null, "gone": null, "kept": null}});
    s.apply_defaults(&mut obj);
    assert_eq!(
        obj["spec"],
        json!({"replicas": 1, "mode": null, "strict": "on", "kept": null, "nested": {"a": "x"}})
    );
    let mut obj = json!({"spec": {"nested": {"b": {}}}});
    s.apply_defaults(&mut obj);
    assert_eq!(obj["spec"]["nested"], json!({"a": "x", "b": {"c": 7}}));
}

#[test]
fn defaults_inside_array_items_and_additional_properties() {
    let s = schema(with_spec(json!({
        "pools": {"type": "array", "items": {"type": "object", "default": {"size": 1}, "properties": {"size": {"type": "integer", "default": 3}, "name": {"type": "string"}}}},
        "limits": {"type": "object", "additionalProperties": {"type": "object", "properties": {"cpu": {"type": "string", "default": "1"}}}},
        "tags": {"type": "array", "items": {"type": "string", "nullable": true, "default": "x"}},
    })));
    let mut obj = json!({"spec": {"pools": [{"name": "a"}, null, {"size": 5}], "limits": {"small": {}, "big": {"cpu": "8"}}, "tags": [null, "y"]}});
    s.apply_defaults(&mut obj);
    assert_eq!(
        obj["spec"]["pools"],
        json!([{"name": "a", "size": 3}, {"size": 1}, {"size": 5}])
    );
    assert_eq!(
        obj["spec"]["limits"],
        json!({"small": {"cpu": "1"}, "big": {"cpu": "8"}})
    );
    assert_eq!(
        obj["spec"]["tags"],
        json!([null, "y"]),
        "nullable items keep explicit nulls"
    );
}

#[test]
fn defaulting_then_validation_is_clean() {
    let s = schema(with_spec(json!({
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"], "items": {"type": "object", "required": ["port"], "properties": {"port": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"}}}},
    })));
    let mut obj = json!({"spec": {"ports": [{"port": 80}, {"port": 80, "protocol": "UDP"}]}});
    s.apply_defaults(&mut obj);
    assert_eq!(obj["spec"]["ports"][0]["protocol"], "TCP");
    assert!(s.validate(&obj, None).is_empty());
    let mut dup = json!({"spec": {"ports": [{"port": 80}, {"port": 80, "protocol": "TCP"}]}});
    s.apply_defaults(&mut dup);
    assert_eq!(errors(&s, &dup), vec!["spec.ports[1]: Duplicate value: map[string]interface {}{\"port\":80, \"protocol\":\"TCP\"}"]);
}

#[test]
fn has_defaults_flag() {
    assert!(!schema(with_spec(json!({"a": {"type": "string"}}))).has_defaults());
    assert!(schema(with_spec(json!({"a": {"type": "string", "default": "x"}}))).has_defaults());
}
