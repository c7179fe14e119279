//! `x-kubernetes-list-type` uniqueness (apiextensions `listtype/validation.go`): items of
//! `set` lists are unique, items of `map` lists are objects unique by their map keys.

use std::collections::HashMap;

use kplane_types::Cause;
use serde_json::{Map, Value};

use crate::errors::{duplicate, go_sharp_v, go_value, invalid};
use crate::node::{ListType, Node};
use crate::path::{join, visit, PathStack, MAX_WALK_DEPTH};

/// Validates list sets and maps in `v` (field paths relative to `base`).
pub(crate) fn validate(n: &Node, v: &Value, base: &str, errs: &mut Vec<Cause>) {
    visit(n, v, &mut PathStack::default(), &mut |n, v, ps| {
        if let Value::Array(a) = v {
            array(n, a, ps, base, errs);
        }
    });
}

fn at(base: &str, ps: &PathStack<'_>, i: usize) -> String {
    let p = ps.field();
    join(base, &format!("{p}[{i}]"))
}

fn array(n: &Node, a: &[Value], ps: &PathStack<'_>, base: &str, errs: &mut Vec<Cause>) {
    match &n.list_type {
        Some(ListType::Set) => {
            for i in non_unique(a.iter().map(canonical_key)) {
                errs.push(duplicate(at(base, ps, i), &go_value(&a[i])));
            }
        }
        Some(ListType::Map(keys)) => list_map(keys, a, ps, base, errs),
        _ => {}
    }
}

fn list_map(keys: &[String], a: &[Value], ps: &PathStack<'_>, base: &str, errs: &mut Vec<Cause>) {
    for (i, x) in a.iter().enumerate() {
        if !x.is_null() && !x.is_object() {
            errs.push(invalid(
                at(base, ps, i),
                &go_value(x),
                "must be an object for an array of list-type map",
            ));
            return;
        }
    }
    if a.len() <= 1 {
        return;
    }
    let key_maps: Vec<Option<Map<String, Value>>> = a
        .iter()
        .map(|x| {
            let obj = x.as_object();
            if keys.len() == 1 {
                obj.and_then(|o| o.get(&keys[0])).map(|k| {
                    let mut m = Map::new();
                    m.insert(keys[0].clone(), k.clone());
                    m
                })
            } else {
                let mut m = Map::new();
                for k in keys {
                    if let Some(v) = obj.and_then(|o| o.get(k)) {
                        m.insert(k.clone(), v.clone());
                    }
                }
                Some(m)
            }
        })
        .collect();
    let canon = key_maps.iter().map(|m| match m {
        None => "unspecified".to_string(),
        Some(m) if keys.len() == 1 => m.get(&keys[0]).map(canonical_key).unwrap_or_default(),
        Some(m) => canonical_key(&Value::Object(m.clone())),
    });
    for i in non_unique(canon) {
        let shown = match &key_maps[i] {
            None => "map[string]interface {}{}".to_string(),
            Some(m) => go_sharp_v(&Value::Object(m.clone())),
        };
        errs.push(duplicate(at(base, ps, i), &shown));
    }
}

/// Indexes of the second appearance of every repeated key.
fn non_unique(keys: impl Iterator<Item = String>) -> Vec<usize> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut out = Vec::new();
    for (i, k) in keys.enumerate() {
        let times = seen.entry(k).or_insert(0);
        *times += 1;
        if *times == 2 {
            out.push(i);
        }
    }
    out
}

/// A key that is equal exactly when Go would find two unstructured values equal as map keys
/// (scalars by type and value) or as JSON (compounds).
pub(crate) fn canonical_key(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("b:{b}"),
        Value::Number(n) => match n.as_i64() {
            Some(i) => format!("i:{i}"),
            None => format!("f:{}", n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => format!("s:{s}"),
        compound => format!("j:{}", canonical_json(compound)),
    }
}

/// JSON with object keys sorted, independent of map ordering features. Values nested
/// deeper than any schema allows are replaced by a token unique to this call's position, so
/// they never compare equal (and never exhaust the stack).
pub(crate) fn canonical_json(v: &Value) -> String {
    let mut out = String::new();
    write_canonical(v, &mut out, 0);
    out
}

fn write_canonical(v: &Value, out: &mut String, depth: usize) {
    if depth > MAX_WALK_DEPTH {
        out.push_str(&format!("<deep:{:p}>", v as *const Value));
        return;
    }
    match v {
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(x, out, depth + 1);
            }
            out.push(']');
        }
        Value::Object(m) => {
            out.push('{');
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                if let Some(x) = m.get(k) {
                    write_canonical(x, out, depth + 1);
                }
            }
            out.push('}');
        }
        scalar => out.push_str(&scalar.to_string()),
    }
}
