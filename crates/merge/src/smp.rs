//! Strategic merge patch (`application/strategic-merge-patch+json`) for built-in kinds,
//! with the semantics of `k8s.io/apimachinery/pkg/util/strategicpatch` as the apiserver
//! applies a patch (`MergeParallelList` and `IgnoreUnmatchedNulls` on):
//!
//! - maps merge recursively; `null` deletes a key;
//! - lists with `patchStrategy: merge` merge items by `patchMergeKey` (objects) or by
//!   value (scalars); other lists are replaced;
//! - `$patch: replace` (map or list item) replaces, `$patch: delete` deletes (a map
//!   becomes `{}`, a list item is removed by merge key); `$patch: merge` in a list is an
//!   error;
//! - `$retainKeys: [..]` drops the original's keys not listed;
//! - `$deleteFromPrimitiveList/<f>: [..]` removes scalars from list `<f>`;
//! - `$setElementOrder/<f>: [..]` orders list `<f>` (directive order first, then patch
//!   order, then live order, merged as upstream's `normalizeElementOrder` does).
//!
//! Directive keys are never stored. Ordering uses hash maps, so merging is linear in the
//! list sizes (upstream's is quadratic).

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

use crate::error::MergeError;
use crate::fieldset::go_json;
use crate::ssa::json_eq;
use crate::types::{render_type_path, PatchMeta, PatchStrategy, PathElement, TypeInfo};

const DIRECTIVE: &str = "$patch";
const RETAIN_KEYS: &str = "$retainKeys";
const DELETE_PRIMITIVE: &str = "$deleteFromPrimitiveList/";
const SET_ORDER: &str = "$setElementOrder/";
const MAX_DEPTH: usize = 200;

/// Applies a strategic merge patch to `original`, driven by `types`' patch metadata.
pub fn strategic_merge(
    original: &Value,
    patch: &Value,
    types: &dyn TypeInfo,
) -> Result<Value, MergeError> {
    let Some(p) = patch.as_object() else {
        return Err(MergeError::bad_request(format!(
            "json: cannot unmarshal {} into Go value of type map[string]interface {{}}",
            go_kind(patch)
        )));
    };
    let o = original.as_object().cloned().unwrap_or_default();
    let s = Smp { types };
    Ok(Value::Object(s.merge_map(o, p, &mut Vec::new())?))
}

fn go_kind(v: &Value) -> &'static str {
    match v {
        Value::Array(_) => "array",
        Value::String(_) => "string",
        Value::Number(_) => "number",
        Value::Bool(_) => "bool",
        Value::Null => "null",
        Value::Object(_) => "object",
    }
}

/// Identity of a scalar (Go interface equality on decoded JSON: numbers as float64).
fn scalar_key(v: &Value) -> String {
    match v {
        Value::Number(n) => match n.as_f64() {
            Some(f) => format!("n:{f}"),
            None => format!("n:{n}"),
        },
        other => go_json(other),
    }
}

struct Smp<'t> {
    types: &'t dyn TypeInfo,
}

type TPath<'a> = Vec<PathElement<'a>>;

fn bad_order() -> MergeError {
    MergeError::bad_request("invalid patch format of setElementOrder list")
}

impl<'t> Smp<'t> {
    fn merge_map<'a>(
        &self,
        original: Map<String, Value>,
        patch: &'a Map<String, Value>,
        tp: &mut TPath<'a>,
    ) -> Result<Map<String, Value>, MergeError> {
        if tp.len() > MAX_DEPTH {
            return Err(MergeError::bad_request("patch nested too deeply"));
        }
        if let Some(d) = patch.get(DIRECTIVE) {
            return match d.as_str() {
                Some("replace") => self.merge_fields(Map::new(), patch, tp),
                Some("delete") => Ok(Map::new()),
                _ => Err(MergeError::bad_request(format!(
                    "unknown patch type: {} in map: {}",
                    d,
                    Value::Object(patch.clone())
                ))),
            };
        }
        self.merge_fields(original, patch, tp)
    }

    /// Merges the fields of `patch` (its `$patch` directive already handled).
    fn merge_fields<'a>(
        &self,
        mut original: Map<String, Value>,
        patch: &'a Map<String, Value>,
        tp: &mut TPath<'a>,
    ) -> Result<Map<String, Value>, MergeError> {
        if let Some(rk) = patch.get(RETAIN_KEYS) {
            let list = rk
                .as_array()
                .ok_or_else(|| MergeError::bad_request("invalid patch format of retainKeys"))?;
            let keep: HashSet<&str> = list.iter().filter_map(Value::as_str).collect();
            for (k, v) in patch {
                if v.is_null()
                    || k == RETAIN_KEYS
                    || k.starts_with(DELETE_PRIMITIVE)
                    || k.starts_with(SET_ORDER)
                {
                    continue;
                }
                if !keep.contains(k.as_str()) {
                    return Err(MergeError::invalid(
                        "patch content doesn't match retainKeys list",
                    ));
                }
            }
            original.retain(|k, _| keep.contains(k.as_str()));
        }
        let mut done: HashSet<&str> = HashSet::new();
        for (key, order) in patch {
            let Some(field) = key.strip_prefix(SET_ORDER) else {
                continue;
            };
            tp.push(PathElement::Field(field));
            let r = self.set_element_order(&mut original, patch, field, order, tp);
            tp.pop();
            if r? {
                done.insert(field);
            }
        }
        for (k, pv) in patch {
            if k == DIRECTIVE
                || k == RETAIN_KEYS
                || k.starts_with(SET_ORDER)
                || k.starts_with(DELETE_PRIMITIVE)
                || done.contains(k.as_str())
            {
                continue;
            }
            if pv.is_null() {
                original.remove(k);
                continue;
            }
            tp.push(PathElement::Field(k));
            let merged = self.merge_value(original.remove(k), pv, tp);
            tp.pop();
            original.insert(k.clone(), merged?);
        }
        for (k, pv) in patch {
            let Some(field) = k.strip_prefix(DELETE_PRIMITIVE) else {
                continue;
            };
            let del = pv
                .as_array()
                .ok_or_else(|| MergeError::bad_request("invalid patch format of primitive list"))?;
            if let Some(Value::Array(cur)) = original.get_mut(field) {
                let gone: HashSet<String> = del.iter().map(scalar_key).collect();
                cur.retain(|v| !gone.contains(&scalar_key(v)));
            }
        }
        Ok(original)
    }

    /// Merges one patch value into the original value of a field (absent: a new value,
    /// whose directives and nulls are still processed).
    fn merge_value<'a>(
        &self,
        original: Option<Value>,
        pv: &'a Value,
        tp: &mut TPath<'a>,
    ) -> Result<Value, MergeError> {
        match (original, pv) {
            (Some(Value::Object(o)), Value::Object(p)) => {
                if self.types.map_patch_strategy(tp) == PatchStrategy::Replace {
                    return Ok(Value::Object(self.merge_map(Map::new(), p, tp)?));
                }
                Ok(Value::Object(self.merge_map(o, p, tp)?))
            }
            (None, Value::Object(p)) => Ok(Value::Object(self.merge_map(Map::new(), p, tp)?)),
            (Some(Value::Array(o)), Value::Array(p)) => {
                let meta = self.types.list_patch_meta(tp);
                if meta.strategy != PatchStrategy::Merge {
                    return Ok(pv.clone());
                }
                Ok(Value::Array(self.merge_list(o, p, &meta, tp)?))
            }
            (None, Value::Array(p)) => {
                let meta = self.types.list_patch_meta(tp);
                if meta.strategy != PatchStrategy::Merge {
                    return Ok(pv.clone());
                }
                Ok(Value::Array(self.merge_list(Vec::new(), p, &meta, tp)?))
            }
            _ => Ok(pv.clone()),
        }
    }

    /// Handles `$setElementOrder/<field>`; returns whether the field's patch list was
    /// consumed.
    fn set_element_order<'a>(
        &self,
        original: &mut Map<String, Value>,
        patch: &'a Map<String, Value>,
        field: &'a str,
        order: &'a Value,
        tp: &mut TPath<'a>,
    ) -> Result<bool, MergeError> {
        let order = order.as_array().ok_or_else(bad_order)?;
        let meta = self.types.list_patch_meta(tp);
        let orig = match original.get(field) {
            Some(Value::Array(a)) => Some(a.clone()),
            Some(_) => return Err(bad_order()),
            None => None,
        };
        let plist = match patch.get(field) {
            Some(Value::Array(a)) => Some(a),
            Some(_) => return Err(bad_order()),
            None => None,
        };
        let key = meta.merge_key.as_deref();
        if let Some(p) = plist {
            validate_against_order(p, order, key)?;
        }
        let merged = match (&orig, plist) {
            (Some(o), None) => o.clone(),
            (None, Some(p)) => {
                match self.merge_value(None, patch.get(field).unwrap_or(&Value::Null), tp)? {
                    Value::Array(a) => a,
                    _ => p.clone(),
                }
            }
            (Some(o), Some(p)) => {
                if meta.strategy == PatchStrategy::Merge {
                    self.merge_list(o.clone(), p, &meta, tp)?
                } else {
                    p.clone()
                }
            }
            (None, None) => return Ok(false),
        };
        let keyf = |v: &Value| item_key(v, key);
        let in_order: HashSet<String> = order.iter().filter_map(keyf).collect();
        let (patch_items, server_only): (Vec<Value>, Vec<Value>) = merged
            .into_iter()
            .partition(|v| keyf(v).is_some_and(|k| in_order.contains(&k)));
        let server_order = orig.unwrap_or_default();
        let out = normalize_order(patch_items, server_only, order, &server_order, key);
        original.insert(field.to_string(), Value::Array(out));
        Ok(plist.is_some())
    }

    fn merge_list<'a>(
        &self,
        original: Vec<Value>,
        patch: &'a [Value],
        meta: &PatchMeta,
        tp: &mut TPath<'a>,
    ) -> Result<Vec<Value>, MergeError> {
        if original.is_empty() && patch.is_empty() {
            return Ok(original);
        }
        let mut is_map = None;
        for v in original.iter().chain(patch) {
            let m = match v {
                Value::Array(_) => {
                    return Err(MergeError::invalid("lists of lists are not supported"))
                }
                Value::Object(_) => true,
                Value::Null => continue,
                _ => false,
            };
            match is_map {
                None => is_map = Some(m),
                Some(prev) if prev != m => {
                    return Err(MergeError::bad_request(format!(
                        "{}: mismatched types in list",
                        render_type_path(tp)
                    )))
                }
                _ => {}
            }
        }
        if is_map != Some(true) {
            let mut seen = HashSet::new();
            let mut merged = Vec::new();
            for v in original.iter().chain(patch) {
                if seen.insert(scalar_key(v)) {
                    merged.push(v.clone());
                }
            }
            let in_patch: HashSet<String> = patch.iter().map(scalar_key).collect();
            let (pi, so): (Vec<Value>, Vec<Value>) = merged
                .into_iter()
                .partition(|v| in_patch.contains(&scalar_key(v)));
            return Ok(normalize_order(pi, so, patch, &original, None));
        }
        let Some(key) = meta.merge_key.as_deref() else {
            return Err(MergeError::bad_request(format!(
                "cannot merge lists without merge key for {}",
                render_type_path(tp)
            )));
        };
        let no_key = |v: &Value| {
            MergeError::bad_request(format!(
                "map: {v} does not contain declared merge key: {key}"
            ))
        };
        let mut orig = original;
        let mut items: Vec<&'a Map<String, Value>> = Vec::new();
        let mut replace = false;
        for v in patch {
            let Some(o) = v.as_object() else {
                return Err(no_key(v));
            };
            match o.get(DIRECTIVE) {
                None => items.push(o),
                Some(d) => match d.as_str() {
                    Some("delete") => {
                        let kv = o.get(key).ok_or_else(|| no_key(v))?;
                        orig.retain(|x| !x.get(key).is_some_and(|y| json_eq(y, kv)));
                    }
                    Some("replace") => replace = true,
                    Some("merge") => {
                        return Err(MergeError::bad_request(
                            "merging lists cannot yet be specified in the patch",
                        ))
                    }
                    _ => {
                        return Err(MergeError::bad_request(format!(
                            "unknown patch type: {d} in map: {v}"
                        )))
                    }
                },
            }
        }
        if replace {
            return Ok(items
                .into_iter()
                .map(|m| Value::Object(m.clone()))
                .collect());
        }
        let server_order = orig.clone();
        let mut index: HashMap<String, usize> = HashMap::new();
        for (i, x) in orig.iter().enumerate() {
            if let Some(k) = x.get(key).map(scalar_key) {
                index.entry(k).or_insert(i);
            }
        }
        tp.push(PathElement::Item);
        for m in &items {
            let kv = match m.get(key) {
                Some(kv) => scalar_key(kv),
                None => {
                    tp.pop();
                    return Err(no_key(&Value::Object((*m).clone())));
                }
            };
            let r = match index.get(&kv) {
                Some(&i) => {
                    let cur = std::mem::take(&mut orig[i]);
                    let base = match cur {
                        Value::Object(c) => c,
                        _ => Map::new(),
                    };
                    self.merge_map(base, m, tp)
                        .map(|v| orig[i] = Value::Object(v))
                }
                None => self.merge_map(Map::new(), m, tp).map(|v| {
                    index.insert(kv, orig.len());
                    orig.push(Value::Object(v));
                }),
            };
            if let Err(e) = r {
                tp.pop();
                return Err(e);
            }
        }
        tp.pop();
        let patch_keys: HashSet<String> = items
            .iter()
            .filter_map(|m| m.get(key).map(scalar_key))
            .collect();
        let (pi, so): (Vec<Value>, Vec<Value>) = orig.into_iter().partition(|v| {
            v.get(key)
                .is_some_and(|k| patch_keys.contains(&scalar_key(k)))
        });
        let patch_order: Vec<Value> = items.iter().map(|m| Value::Object((*m).clone())).collect();
        Ok(normalize_order(
            pi,
            so,
            &patch_order,
            &server_order,
            Some(key),
        ))
    }
}

/// Identity of a list item: its merge-key value (maps) or its value (scalars).
fn item_key(v: &Value, key: Option<&str>) -> Option<String> {
    match key {
        Some(k) => v.get(k).map(scalar_key),
        None => Some(scalar_key(v)),
    }
}

/// Upstream's `validatePatchWithSetOrderList`: the patch list's items (without
/// directives) must appear in the `$setElementOrder` list, in the same relative order.
fn validate_against_order(
    patch: &[Value],
    order: &[Value],
    key: Option<&str>,
) -> Result<(), MergeError> {
    if patch.is_empty() || order.is_empty() {
        return Ok(());
    }
    let items: Vec<&Value> = patch
        .iter()
        .filter(|v| v.get(DIRECTIVE).is_none())
        .collect();
    let (mut pi, mut oi) = (0, 0);
    while pi < items.len() && oi < order.len() {
        let a = item_key(items[pi], key);
        if a.is_none() && key.is_some() {
            return Err(bad_order());
        }
        if a == item_key(&order[oi], key) {
            pi += 1;
        }
        oi += 1;
    }
    if pi < items.len() {
        return Err(MergeError::bad_request(format!(
            "The order in patch list:\n{}\n doesn't match {SET_ORDER} list:\n{}\n",
            Value::Array(patch.to_vec()),
            Value::Array(order.to_vec())
        )));
    }
    Ok(())
}

/// Upstream's `normalizeElementOrder`: sorts the patch items by `patch_order` and the
/// server-only items by `server_order`, then interleaves them, keeping both relative
/// orders and putting a server-only item first only when the live order says so.
fn normalize_order(
    mut patch_items: Vec<Value>,
    mut server_only: Vec<Value>,
    patch_order: &[Value],
    server_order: &[Value],
    key: Option<&str>,
) -> Vec<Value> {
    let positions = |list: &[Value]| {
        let mut m: HashMap<String, usize> = HashMap::new();
        for (i, v) in list.iter().enumerate() {
            if let Some(k) = item_key(v, key) {
                m.entry(k).or_insert(i);
            }
        }
        m
    };
    let ppos = positions(patch_order);
    let spos = positions(server_order);
    let pos_in = |m: &HashMap<String, usize>, v: &Value| {
        item_key(v, key)
            .and_then(|k| m.get(&k).copied())
            .unwrap_or(usize::MAX)
    };
    patch_items.sort_by_key(|v| pos_in(&ppos, v));
    server_only.sort_by_key(|v| pos_in(&spos, v));
    let mut out = Vec::with_capacity(patch_items.len() + server_only.len());
    let mut left = server_only.into_iter().peekable();
    let mut right = patch_items.into_iter().peekable();
    loop {
        let take_left = match (left.peek(), right.peek()) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some(l), Some(r)) => {
                let (li, ri) = (pos_in(&spos, l), pos_in(&spos, r));
                li != usize::MAX && ri != usize::MAX && li < ri
            }
        };
        let next = if take_left { left.next() } else { right.next() };
        if let Some(v) = next {
            out.push(v);
        }
    }
    out
}
