//! Structural-schema invariants (apiextensions `pkg/apiserver/schema/validation.go` and
//! `complete.go`): every field typed, the root an object, metadata only restricting
//! `name`/`generateName`, value validations (allOf/anyOf/oneOf/not) free of anything that
//! shapes data, and everything they mention also declared outside them.

use kplane_types::Cause;
use serde_json::{Map, Value};

use crate::errors::{forbidden, go_value, invalid, required};
use crate::node::Node;
use crate::path::join;
use crate::walk::{Level, Walk};

fn is_type_only(v: &Value, ty: &str) -> bool {
    v.as_object()
        .is_some_and(|o| o.len() == 1 && o.get("type").and_then(Value::as_str) == Some(ty))
}

/// `anyOf: [{type: integer}, {type: string}]` exactly.
pub(crate) fn is_int_or_string_any_of(any_of: Option<&Value>) -> bool {
    match any_of.and_then(Value::as_array) {
        Some(a) => a.len() == 2 && is_type_only(&a[0], "integer") && is_type_only(&a[1], "string"),
        None => false,
    }
}

/// `allOf: [{anyOf: [{type: integer}, {type: string}]}, ...]`.
pub(crate) fn is_int_or_string_all_of(all_of: Option<&Value>) -> bool {
    all_of
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .and_then(Value::as_object)
        .is_some_and(|first| is_int_or_string_any_of(first.get("anyOf")))
}

fn non_zero(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(a)) => !a.is_empty(),
        Some(Value::Object(o)) => !o.is_empty(),
        Some(Value::Number(_)) => true,
    }
}

fn type_of(o: &Map<String, Value>) -> &str {
    o.get("type").and_then(Value::as_str).unwrap_or("")
}

/// `validateNestedValueValidation`: what a schema inside allOf/anyOf/oneOf/not may not set.
pub(crate) fn nested_checks(o: &Map<String, Value>, w: &Walk, errs: &mut Vec<Cause>) {
    let p = w.path.as_str();
    let checks: [(&str, &str); 14] = [
        ("type", "must be empty to be structural"),
        ("additionalProperties", "must be undefined to be structural"),
        ("default", "must be undefined to be structural"),
        ("title", "must be empty to be structural"),
        ("description", "must be empty to be structural"),
        ("nullable", "must be false to be structural"),
        ("externalDocs", "must be undefined to be structural"),
        (
            "x-kubernetes-preserve-unknown-fields",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-embedded-resource",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-int-or-string",
            "must be false to be structural",
        ),
        (
            "x-kubernetes-list-map-keys",
            "must be empty to be structural",
        ),
        (
            "x-kubernetes-list-type",
            "must be undefined to be structural",
        ),
        (
            "x-kubernetes-map-type",
            "must be undefined to be structural",
        ),
        ("x-kubernetes-validations", "must be empty to be structural"),
    ];
    for (key, msg) in checks {
        let present = match key {
            "additionalProperties"
            | "externalDocs"
            | "x-kubernetes-list-type"
            | "x-kubernetes-map-type" => o.get(key).is_some_and(|v| !v.is_null()),
            _ => non_zero(o.get(key)),
        };
        if present {
            errs.push(forbidden(join(p, key), msg));
        }
    }
    if o.get("properties")
        .and_then(Value::as_object)
        .is_some_and(|m| m.contains_key("metadata"))
    {
        errs.push(forbidden(
            join(p, "properties[metadata]"),
            "must not be specified in a nested context",
        ));
    }
}

/// `validateStructuralInvariants` for one node of the structural spine.
pub(crate) fn spine_checks(o: &Map<String, Value>, n: &Node, w: &Walk, errs: &mut Vec<Cause>) {
    let p = w.path.as_str();
    let ty = type_of(o);
    if ty == "array"
        && !o.get("items").is_some_and(|i| i.is_object())
        && !o.get("items").is_some_and(Value::is_array)
    {
        errs.push(required(join(p, "items"), "must be specified"));
    }
    if n.additional.is_set() && w.level == Level::Root {
        errs.push(forbidden(
            join(p, "additionalProperties"),
            "must not be used at the root",
        ));
    }
    if n.int_or_string && n.preserve_unknown {
        errs.push(invalid(
            join(p, "x-kubernetes-preserve-unknown-fields"),
            "true",
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if n.int_or_string && n.embedded {
        errs.push(invalid(
            join(p, "x-kubernetes-embedded-resource"),
            "true",
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    let check_metadata = w.level == Level::Root || n.embedded;
    let ty_repr = go_value(&Value::String(ty.to_string()));
    if n.embedded && ty != "object" {
        let msg = "must be object if x-kubernetes-embedded-resource is true";
        if ty.is_empty() {
            errs.push(required(join(p, "type"), msg));
        } else {
            errs.push(invalid(join(p, "type"), &ty_repr, msg));
        }
    } else if ty.is_empty() && !n.int_or_string && !n.preserve_unknown {
        let msg = match w.level {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        errs.push(required(join(p, "type"), msg));
    }
    if n.embedded && n.additional.is_set() {
        errs.push(forbidden(
            join(p, "additionalProperties"),
            "must not be used if x-kubernetes-embedded-resource is set",
        ));
    }
    if w.level == Level::Root && !ty.is_empty() && ty != "object" {
        errs.push(invalid(
            join(p, "type"),
            &ty_repr,
            "must be object at the root",
        ));
    }
    let props = o.get("properties").and_then(Value::as_object);
    for key in ["kind", "apiVersion"] {
        if let Some(prop) = props.and_then(|m| m.get(key)).and_then(Value::as_object) {
            let pt = type_of(prop);
            if check_metadata && pt != "string" {
                errs.push(invalid(
                    join(p, &format!("properties[{key}].type")),
                    &go_value(&Value::String(pt.into())),
                    "must be string",
                ));
            }
        }
    }
    if let Some(meta) = props
        .and_then(|m| m.get("metadata"))
        .and_then(Value::as_object)
    {
        let mp = join(p, "properties[metadata]");
        let mt = type_of(meta);
        if check_metadata && mt != "object" {
            errs.push(invalid(
                join(&mp, "type"),
                &go_value(&Value::String(mt.into())),
                "must be object",
            ));
        }
        if w.level == Level::Root && !metadata_only_names(meta) {
            errs.push(forbidden(mp, "must not specify anything other than name and generateName, but metadata is implicitly specified"));
        }
    }
    if n.embedded && !n.preserve_unknown && n.properties.is_empty() {
        errs.push(required(
            join(p, "properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
}

/// Whether a root `metadata` schema restricts nothing but `name` and `generateName`.
fn metadata_only_names(meta: &Map<String, Value>) -> bool {
    for (k, v) in meta {
        match k.as_str() {
            "type" | "default" | "externalDocs" | "example" => {}
            "properties" => {
                if let Some(props) = v.as_object() {
                    if props.keys().any(|k| k != "name" && k != "generateName") {
                        return false;
                    }
                }
            }
            _ => {
                if non_zero(Some(v)) {
                    return false;
                }
            }
        }
    }
    true
}

/// `validateStructuralCompleteness`: everything the root's value validations mention must be
/// declared in the structural spine too.
pub(crate) fn completeness(root: &Node, path: &str, errs: &mut Vec<Cause>) {
    value_validation_completeness(root, Some(root), path, path, errs);
}

fn value_validation_completeness(
    v: &Node,
    s: Option<&Node>,
    s_path: &str,
    v_path: &str,
    errs: &mut Vec<Cause>,
) {
    let Some(c) = &v.checks else { return };
    let Some(s) = s else {
        errs.push(required(
            s_path.to_string(),
            &format!("because it is defined in {v_path}"),
        ));
        return;
    };
    if let Some(not) = &c.not {
        nested_completeness(not, s, s_path, &join(v_path, "not"), errs);
    }
    for (key, list) in [
        ("allOf", &c.all_of),
        ("anyOf", &c.any_of),
        ("oneOf", &c.one_of),
    ] {
        for (i, sub) in list.iter().enumerate() {
            nested_completeness(sub, s, s_path, &join(v_path, &format!("{key}[{i}]")), errs);
        }
    }
}

fn nested_completeness(v: &Node, s: &Node, s_path: &str, v_path: &str, errs: &mut Vec<Cause>) {
    value_validation_completeness(v, Some(s), s_path, v_path, errs);
    if let Some(vi) = &v.items {
        let sp = join(s_path, "items");
        let vp = join(v_path, "items");
        match &s.items {
            Some(si) => nested_completeness(vi, si, &sp, &vp, errs),
            None => errs.push(required(sp, &format!("because it is defined in {vp}"))),
        }
    }
    for (k, vf) in &v.properties {
        let sp = join(s_path, &format!("properties[{k}]"));
        let vp = join(v_path, &format!("properties[{k}]"));
        match s.property(k) {
            Some(sf) => nested_completeness(vf, sf, &sp, &vp, errs),
            None => errs.push(required(sp, &format!("because it is defined in {vp}"))),
        }
    }
}
