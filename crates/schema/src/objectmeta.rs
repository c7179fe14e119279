//! TypeMeta and ObjectMeta of embedded resources (`x-kubernetes-embedded-resource`), as
//! apiextensions `objectmeta/validation.go` checks them: `apiVersion` and `kind` required
//! and well formed, `metadata` decodable as ObjectMeta and valid.

use kplane_types::validation::{
    validate_annotations, validate_labels, validate_name, validate_path_segment_name,
};
use kplane_types::Cause;
use serde_json::{Map, Value};

use crate::errors::{go_value, invalid, required};
use crate::node::Node;
use crate::path::{join, visit, PathStack};

/// Validates the embedded resources in `v` (field paths relative to `base`).
pub(crate) fn validate(n: &Node, v: &Value, base: &str, errs: &mut Vec<Cause>) {
    visit(n, v, &mut PathStack::default(), &mut |n, v, ps| {
        if let (true, Value::Object(m)) = (n.embedded, v) {
            embedded_resource(&join(base, &ps.field()), m, errs);
        }
    });
}

/// apimachinery `IsDNS1035Label`.
fn is_dns1035_label(s: &str) -> Vec<String> {
    let mut out = Vec::new();
    if s.len() > 63 {
        out.push(kplane_types::validation::max_len_error(63));
    }
    let b = s.as_bytes();
    let ok = b.first().is_some_and(u8::is_ascii_lowercase)
        && b.last()
            .is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit())
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'-');
    if !ok {
        out.push(kplane_types::validation::regex_error(
            "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character",
            "[a-z]([-a-z0-9]*[a-z0-9])?",
            &["my-name", "abc-123"],
        ));
    }
    out
}

fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Why `meta` does not decode as an ObjectMeta, in encoding/json's words.
fn object_meta_decode_error(meta: &Value) -> Option<String> {
    let Value::Object(m) = meta else {
        return Some(format!(
            "json: cannot unmarshal {} into Go value of type v1.ObjectMeta",
            json_kind(meta)
        ));
    };
    let field_err = |f: &str, v: &Value, go: &str| {
        Some(format!(
            "json: cannot unmarshal {} into Go struct field ObjectMeta.{f} of type {go}",
            json_kind(v)
        ))
    };
    for (f, v) in m {
        if v.is_null() {
            continue;
        }
        match f.as_str() {
            "name" | "generateName" | "namespace" | "selfLink" | "uid" | "resourceVersion"
            | "creationTimestamp" | "deletionTimestamp"
                if !v.is_string() =>
            {
                return field_err(f, v, "string");
            }
            "generation" | "deletionGracePeriodSeconds"
                if v.as_number().is_none_or(|n| n.as_i64().is_none()) =>
            {
                return field_err(f, v, "int64");
            }
            "labels" | "annotations" => match v {
                Value::Object(entries) => {
                    if let Some(bad) = entries.values().find(|x| !x.is_string() && !x.is_null()) {
                        return field_err(f, bad, "string");
                    }
                }
                other => return field_err(f, other, "map[string]string"),
            },
            "finalizers" => match v {
                Value::Array(items) => {
                    if let Some(bad) = items.iter().find(|x| !x.is_string()) {
                        return field_err(f, bad, "string");
                    }
                }
                other => return field_err(f, other, "[]string"),
            },
            "ownerReferences" | "managedFields" if !v.is_array() => {
                return field_err(f, v, "[]v1.OwnerReference");
            }
            _ => {}
        }
    }
    None
}

fn embedded_resource(path: &str, x: &Map<String, Value>, errs: &mut Vec<Cause>) {
    if !x.contains_key("apiVersion") {
        errs.push(required(join(path, "apiVersion"), ""));
    }
    if !x.contains_key("kind") {
        errs.push(required(join(path, "kind"), ""));
    }
    if let Some(v) = x.get("apiVersion") {
        let p = join(path, "apiVersion");
        match v.as_str() {
            None => errs.push(invalid(p, &go_value(v), "must be a string")),
            Some("") => errs.push(invalid(p, "\"\"", "must not be empty")),
            Some(av) => {
                if av != "/" && av.matches('/').count() > 1 {
                    errs.push(invalid(
                        p,
                        &go_value(v),
                        &format!("unexpected GroupVersion string: {av}"),
                    ));
                }
            }
        }
    }
    if let Some(v) = x.get("kind") {
        let p = join(path, "kind");
        match v.as_str() {
            None => errs.push(invalid(p, &go_value(v), "must be a string")),
            Some("") => errs.push(invalid(p, "\"\"", "must not be empty")),
            Some(kind) => {
                let problems = is_dns1035_label(&kind.to_lowercase());
                if !problems.is_empty() {
                    errs.push(invalid(
                        p,
                        &go_value(v),
                        &format!(
                            "may have mixed case, but should otherwise match: {}",
                            problems.join(",")
                        ),
                    ));
                }
            }
        }
    }
    if let Some(meta) = x.get("metadata") {
        let p = join(path, "metadata");
        if let Some(e) = object_meta_decode_error(meta) {
            errs.push(invalid(p, &go_value(meta), &e));
            return;
        }
        let Some(m) = meta.as_object() else { return };
        let s = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("");
        let name = if s("name").is_empty() {
            "fakename"
        } else {
            s("name")
        };
        errs.extend(validate_name(
            name,
            s("generateName"),
            &p,
            validate_path_segment_name,
        ));
        let ns = s("namespace");
        if !ns.is_empty() {
            for msg in kplane_types::validation::is_dns1123_label(ns) {
                errs.push(invalid(
                    join(&p, "namespace"),
                    &go_value(&Value::String(ns.into())),
                    &msg,
                ));
            }
        }
        if let Some(labels) = m.get("labels").and_then(Value::as_object) {
            errs.extend(validate_labels(labels, &join(&p, "labels")));
        }
        if let Some(ann) = m.get("annotations").and_then(Value::as_object) {
            errs.extend(validate_annotations(ann, &join(&p, "annotations")));
        }
    }
}
