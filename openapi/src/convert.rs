//! Conversion of JSON-Schema values (as `schemars` and CRDs produce them) into the OpenAPI 3.0
//! schema dialect the Kubernetes API server publishes.
//!
//! The walk follows schema keywords only (`properties`, `items`, `allOf`, ...), so data such as
//! `default`, `enum` or `example` values, and property *names* such as `$ref` (which
//! `JSONSchemaProps` has), are never rewritten.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use crate::names::{LIST_META, OBJECT_META};

/// The prefix of every reference inside a published document.
pub(crate) const REF_PREFIX: &str = "#/components/schemas/";

/// `#/components/schemas/<name>`.
pub(crate) fn schema_ref(name: &str) -> String {
    format!("{REF_PREFIX}{name}")
}

/// Keywords whose value is a map from names to subschemas.
const SCHEMA_MAPS: &[&str] = &["properties", "patternProperties"];
/// Keywords whose value is an array of subschemas.
const SCHEMA_ARRAYS: &[&str] = &["allOf", "anyOf", "oneOf"];
/// Keywords whose value is a single subschema.
const SCHEMA_SINGLE: &[&str] = &["not", "additionalProperties", "items"];
/// JSON-Schema keywords OpenAPI 3.0 schemas do not have.
const DROPPED: &[&str] = &["$schema", "$id", "$defs", "definitions", "$comment"];

/// Rewrites `schema` in place into OpenAPI 3.0 form:
/// drops `$schema`/`$id`/`definitions`/`$defs`, turns `"type": [T, "null"]` into
/// `type: T` + `nullable: true`, `const` into a one-value `enum`, points `$ref`s at
/// `#/components/schemas/`, wraps a `$ref` that has sibling keywords into `allOf`, and turns
/// boolean subschemas (other than `additionalProperties`) into objects.
pub(crate) fn to_openapi3(schema: &mut Value) {
    let Value::Object(obj) = schema else {
        return;
    };
    for key in DROPPED {
        obj.remove(*key);
    }
    convert_type(obj);
    if let Some(value) = obj.remove("const") {
        obj.insert("enum".into(), Value::Array(vec![value]));
    }
    if let Some(Value::String(reference)) = obj.get_mut("$ref") {
        *reference = rewrite_ref(reference);
    }
    if obj.len() > 1 {
        if let Some(reference) = obj.remove("$ref") {
            let mut wrapped = Map::new();
            wrapped.insert("$ref".into(), reference);
            let all_of = obj
                .entry("allOf")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(items) = all_of {
                items.push(Value::Object(wrapped));
            }
        }
    }

    for key in SCHEMA_MAPS {
        if let Some(Value::Object(children)) = obj.get_mut(*key) {
            for child in children.values_mut() {
                subschema(child);
            }
        }
    }
    for key in SCHEMA_ARRAYS {
        if let Some(Value::Array(children)) = obj.get_mut(*key) {
            children.iter_mut().for_each(subschema);
        }
    }
    for key in SCHEMA_SINGLE {
        match obj.get_mut(*key) {
            // OpenAPI 3.0 allows a boolean `additionalProperties`.
            Some(Value::Bool(_)) if *key == "additionalProperties" => {}
            // Tuple-form `items` is not OpenAPI 3.0; keep the first element's schema.
            Some(Value::Array(children)) if *key == "items" => {
                let mut first = children.first().cloned().unwrap_or(Value::Bool(true));
                subschema(&mut first);
                obj.insert("items".into(), first);
            }
            Some(child) => subschema(child),
            None => {}
        }
    }
}

/// Converts a subschema, replacing boolean schemas with their object equivalents.
fn subschema(schema: &mut Value) {
    match schema {
        Value::Bool(true) => *schema = Value::Object(Map::new()),
        Value::Bool(false) => *schema = serde_json::json!({"not": {}}),
        _ => to_openapi3(schema),
    }
}

/// `"type": ["string", "null"]` → `"type": "string", "nullable": true`; several non-null
/// types become an `anyOf` of single-typed schemas.
fn convert_type(obj: &mut Map<String, Value>) {
    let Some(Value::Array(types)) = obj.get("type") else {
        return;
    };
    let nullable = types.iter().any(|t| t == "null");
    let mut rest: Vec<Value> = types.iter().filter(|t| *t != "null").cloned().collect();
    obj.remove("type");
    match rest.len() {
        0 => {}
        1 => {
            obj.insert("type".into(), rest.remove(0));
        }
        _ => {
            let alternatives = rest
                .into_iter()
                .map(|t| serde_json::json!({"type": t}))
                .collect();
            obj.insert("anyOf".into(), Value::Array(alternatives));
        }
    }
    if nullable {
        obj.insert("nullable".into(), Value::Bool(true));
    }
}

/// Points JSON-Schema local references (`#/definitions/X`, `#/$defs/X`) at the document's
/// `components/schemas`.
fn rewrite_ref(reference: &str) -> String {
    for prefix in ["#/definitions/", "#/$defs/"] {
        if let Some(name) = reference.strip_prefix(prefix) {
            return schema_ref(name);
        }
    }
    reference.to_owned()
}

/// The definition name a `$ref` value points to, if it is a local component reference.
pub(crate) fn ref_target(reference: &str) -> Option<&str> {
    reference.strip_prefix(REF_PREFIX)
}

/// Reshapes the few built-in types whose `k8s-openapi` schema differs from what the upstream
/// API server publishes for them (their descriptions are kept):
///
/// * `Quantity` — upstream: `oneOf: [string, number]` (k8s-openapi: only
///   `x-kubernetes-int-or-string`).
/// * `IntOrString` — upstream: `format: int-or-string` + `oneOf: [integer, string]`; the
///   `x-kubernetes-int-or-string` marker from k8s-openapi is kept.
/// * apiextensions `JSON` and `JSONSchemaPropsOr{Array,Bool,StringArray}` — upstream leaves
///   them untyped (any JSON value); k8s-openapi types `JSON` as an object.
pub(crate) fn fix_known_types(defs: &mut BTreeMap<String, Value>) {
    let reshape = |defs: &mut BTreeMap<String, Value>, name: &str, body: Value| {
        if let Some(Value::Object(obj)) = defs.get_mut(name) {
            let description = obj.remove("description");
            let extension = obj.remove("x-kubernetes-int-or-string");
            obj.clear();
            if let Value::Object(body) = body {
                obj.extend(body);
            }
            if let Some(description) = description {
                obj.insert("description".into(), description);
            }
            if name.ends_with("IntOrString") {
                if let Some(extension) = extension {
                    obj.insert("x-kubernetes-int-or-string".into(), extension);
                }
            }
        }
    };
    reshape(
        defs,
        "io.k8s.apimachinery.pkg.api.resource.Quantity",
        serde_json::json!({"oneOf": [{"type": "string"}, {"type": "number"}]}),
    );
    reshape(
        defs,
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
        serde_json::json!({
            "format": "int-or-string",
            "oneOf": [{"type": "integer"}, {"type": "string"}],
        }),
    );
    for name in [
        "JSON",
        "JSONSchemaPropsOrArray",
        "JSONSchemaPropsOrBool",
        "JSONSchemaPropsOrStringArray",
    ] {
        let full = format!("io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.{name}");
        reshape(defs, &full, serde_json::json!({}));
    }
}

/// Upstream never lists `metadata` as required and gives it `default: {}`; k8s-openapi marks it
/// required because its Rust field is not optional. Applies to a top-level definition whose
/// `metadata` property references `ObjectMeta` or `ListMeta`.
pub(crate) fn fix_object_meta_usage(schema: &mut Value) {
    let Some(obj) = schema.as_object_mut() else {
        return;
    };
    let is_meta = obj
        .get("properties")
        .and_then(|p| p.get("metadata"))
        .is_some_and(references_meta);
    if !is_meta {
        return;
    }
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        if let Some(Value::Object(metadata)) = props.get_mut("metadata") {
            if let Some(reference) = metadata.remove("$ref") {
                metadata.insert("allOf".into(), serde_json::json!([{"$ref": reference}]));
            }
            metadata
                .entry("default")
                .or_insert_with(|| Value::Object(Map::new()));
        }
    }
    let now_empty = match obj.get_mut("required") {
        Some(Value::Array(required)) => {
            required.retain(|r| r != "metadata");
            required.is_empty()
        }
        _ => false,
    };
    if now_empty {
        obj.remove("required");
    }
}

fn references_meta(schema: &Value) -> bool {
    let direct = |s: &Value| {
        s.get("$ref")
            .and_then(Value::as_str)
            .and_then(ref_target)
            .is_some_and(|t| t == OBJECT_META || t == LIST_META)
    };
    direct(schema)
        || schema
            .get("allOf")
            .and_then(Value::as_array)
            .is_some_and(|all| all.iter().any(direct))
}

/// Calls `f` with every `$ref` target name found in `schema` (at any depth).
pub(crate) fn for_each_ref(schema: &Value, f: &mut impl FnMut(&str)) {
    match schema {
        Value::Object(obj) => {
            for (key, value) in obj {
                match value {
                    Value::String(reference) if key == "$ref" => {
                        if let Some(name) = ref_target(reference) {
                            f(name);
                        }
                    }
                    _ => for_each_ref(value, f),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|v| for_each_ref(v, f)),
        _ => {}
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nullable_types_and_refs() {
        let mut s = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "definitions": {"X": {}},
            "properties": {
                "a": {"type": ["string", "null"]},
                "b": {"$ref": "#/definitions/X", "description": "d"},
                "c": {"const": "x"},
                "d": {"type": "array", "items": true},
                "$ref": {"type": "string", "default": {"$ref": "#/definitions/keep"}},
            },
            "additionalProperties": false,
        });
        to_openapi3(&mut s);
        assert_eq!(
            s,
            json!({
                "type": "object",
                "properties": {
                    "a": {"type": "string", "nullable": true},
                    "b": {"allOf": [{"$ref": "#/components/schemas/X"}], "description": "d"},
                    "c": {"enum": ["x"]},
                    "d": {"type": "array", "items": {}},
                    "$ref": {"type": "string", "default": {"$ref": "#/definitions/keep"}},
                },
                "additionalProperties": false,
            })
        );
    }

    #[test]
    fn multiple_types_become_any_of() {
        let mut s = json!({"type": ["integer", "string"]});
        to_openapi3(&mut s);
        assert_eq!(
            s,
            json!({"anyOf": [{"type": "integer"}, {"type": "string"}]})
        );
    }
}
