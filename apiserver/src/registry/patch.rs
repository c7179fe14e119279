//! Patch application: RFC 6902 JSON patch (with Kubernetes' `test`-against-null quirk),
//! RFC 7386 merge patch, and strategic merge patch for built-in types driven by the
//! patch metadata (merge keys and strategies) of the fields kplane serves.

use serde_json::{Map, Value};

use super::catalog::ResourceType;
use crate::error::{ApiError, ApiResult};
use kplane_types::StatusReason;

/// The patch media types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PatchType {
    Json,
    Merge,
    Strategic,
}

/// A decoded patch document.
#[derive(Debug)]
pub enum Parsed {
    Json(Vec<Value>),
    Merge(Value),
    Strategic(Value),
}

/// Most operations accepted in one JSON patch (kube-apiserver's limit).
const MAX_JSON_PATCH_OPS: usize = 10_000;

pub fn parse(ty: PatchType, body: &[u8]) -> ApiResult<Parsed> {
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    match ty {
        PatchType::Json => match v {
            Value::Array(ops) => {
                if ops.len() > MAX_JSON_PATCH_OPS {
                    return Err(ApiError::new(
                        StatusReason::RequestEntityTooLarge,
                        format!(
                            "The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPS}, got {}",
                            ops.len()
                        ),
                    ));
                }
                Ok(Parsed::Json(ops))
            }
            _ => Err(ApiError::bad_request(
                "json patch must be an array of operations",
            )),
        },
        PatchType::Merge if v.is_object() => Ok(Parsed::Merge(v)),
        PatchType::Strategic if v.is_object() => Ok(Parsed::Strategic(v)),
        _ => Err(ApiError::bad_request("a merge patch must be a JSON object")),
    }
}

/// Whether the patch itself sets `metadata.resourceVersion` (then it is an optimistic lock).
pub fn mentions_resource_version(p: &Parsed) -> bool {
    match p {
        Parsed::Json(ops) => ops
            .iter()
            .any(|op| op.get("path").and_then(Value::as_str) == Some("/metadata/resourceVersion")),
        Parsed::Merge(v) | Parsed::Strategic(v) => v.pointer("/metadata/resourceVersion").is_some(),
    }
}

/// Applies `p` to `doc`; the error string becomes a 422.
pub fn apply(p: &Parsed, doc: &Value, _rt: &ResourceType) -> Result<Value, String> {
    match p {
        Parsed::Json(ops) => apply_json_patch(ops, doc),
        Parsed::Merge(m) => {
            let mut out = doc.clone();
            json_patch::merge(&mut out, m);
            Ok(out)
        }
        Parsed::Strategic(m) => {
            let mut out = doc.clone();
            strategic_merge(&mut out, m, &mut Vec::new())?;
            Ok(out)
        }
    }
}

fn apply_json_patch(ops: &[Value], doc: &Value) -> Result<Value, String> {
    let mut out = doc.clone();
    for op in ops {
        let parsed: json_patch::PatchOperation = serde_json::from_value(op.clone())
            .map_err(|e| format!("invalid JSON patch operation: {e}"))?;
        if let json_patch::PatchOperation::Test(t) = &parsed {
            // Kubernetes (evanphx/json-patch v4): testing a missing member against null succeeds.
            if t.value.is_null() && out.pointer(t.path.as_str()).is_none() {
                continue;
            }
        }
        json_patch::patch(&mut out, &[parsed]).map_err(|e| e.to_string())?;
    }
    Ok(out)
}

/// How a list field merges in a strategic merge patch.
enum ListStrategy {
    /// Replace the whole list (the default).
    Replace,
    /// Merge elements by the value of this key.
    MergeKey(&'static str),
    /// A list of scalars merged as a set.
    MergePrimitives,
}

/// The patch metadata (`patchStrategy`/`patchMergeKey`) of the list fields of the served
/// built-in types, keyed by field name and the name of its parent.
fn list_strategy(path: &[String], field: &str) -> ListStrategy {
    let parent = path.last().map(String::as_str).unwrap_or("");
    match (parent, field) {
        ("metadata", "finalizers") => ListStrategy::MergePrimitives,
        ("metadata", "ownerReferences") => ListStrategy::MergeKey("uid"),
        (_, "containers" | "initContainers" | "ephemeralContainers") => {
            ListStrategy::MergeKey("name")
        }
        (_, "env") => ListStrategy::MergeKey("name"),
        (_, "ports") => ListStrategy::MergeKey("containerPort"),
        (_, "volumeMounts") => ListStrategy::MergeKey("mountPath"),
        (_, "volumeDevices") => ListStrategy::MergeKey("devicePath"),
        (_, "volumes" | "imagePullSecrets" | "secrets") => ListStrategy::MergeKey("name"),
        (_, "hostAliases") => ListStrategy::MergeKey("ip"),
        (_, "topologySpreadConstraints") => ListStrategy::MergeKey("topologyKey"),
        (_, "conditions") => ListStrategy::MergeKey("type"),
        (_, "resourceClaims") => ListStrategy::MergeKey("name"),
        _ => ListStrategy::Replace,
    }
}

/// Applies a strategic merge patch map onto `target` (a map).
fn strategic_merge(
    target: &mut Value,
    patch: &Value,
    path: &mut Vec<String>,
) -> Result<(), String> {
    let Some(pm) = patch.as_object() else {
        *target = patch.clone();
        return Ok(());
    };
    match pm.get("$patch").and_then(Value::as_str) {
        Some("replace") => {
            *target = Value::Object(strip_directives(pm));
            return Ok(());
        }
        Some("delete") => {
            *target = Value::Null;
            return Ok(());
        }
        Some("merge") | None => {}
        Some(other) => return Err(format!("unknown patch type: {other:?}")),
    }
    if !target.is_object() {
        *target = Value::Object(Map::new());
    }
    let retain: Option<Vec<String>> = pm.get("$retainKeys").and_then(Value::as_array).map(|a| {
        a.iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect()
    });
    for (k, pv) in pm {
        if k == "$patch" || k == "$retainKeys" || k.starts_with("$setElementOrder/") {
            continue;
        }
        let Some(tm) = target.as_object_mut() else {
            break;
        };
        if let Some(field) = k.strip_prefix("$deleteFromPrimitiveList/") {
            let remove: Vec<&Value> = pv
                .as_array()
                .map(|a| a.iter().collect())
                .unwrap_or_default();
            if let Some(Value::Array(list)) = tm.get_mut(field) {
                list.retain(|v| !remove.contains(&v));
            }
            continue;
        }
        if pv.is_null() {
            tm.remove(k);
            continue;
        }
        match pv {
            Value::Object(_) => {
                let entry = tm.entry(k.clone()).or_insert(Value::Null);
                path.push(k.clone());
                strategic_merge(entry, pv, path)?;
                path.pop();
                if entry.is_null() {
                    tm.remove(k);
                }
            }
            Value::Array(items) => {
                let strategy = list_strategy(path, k);
                let existing = tm.remove(k).and_then(|v| match v {
                    Value::Array(a) => Some(a),
                    _ => None,
                });
                path.push(k.clone());
                let merged = merge_list(existing.unwrap_or_default(), items, strategy, path)?;
                path.pop();
                tm.insert(k.clone(), Value::Array(merged));
            }
            other => {
                tm.insert(k.clone(), other.clone());
            }
        }
    }
    if let (Some(keep), Some(tm)) = (retain, target.as_object_mut()) {
        tm.retain(|k, _| keep.contains(k));
    }
    Ok(())
}

fn strip_directives(m: &Map<String, Value>) -> Map<String, Value> {
    m.iter()
        .filter(|(k, _)| !k.starts_with('$'))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

fn merge_list(
    mut existing: Vec<Value>,
    items: &[Value],
    strategy: ListStrategy,
    path: &mut Vec<String>,
) -> Result<Vec<Value>, String> {
    match strategy {
        ListStrategy::Replace => Ok(items
            .iter()
            .filter(|i| i.get("$patch").is_none())
            .cloned()
            .collect()),
        ListStrategy::MergePrimitives => {
            for i in items {
                if !existing.contains(i) {
                    existing.push(i.clone());
                }
            }
            Ok(existing)
        }
        ListStrategy::MergeKey(key) => {
            if items
                .iter()
                .any(|i| i.get("$patch").and_then(Value::as_str) == Some("replace"))
            {
                return Ok(items
                    .iter()
                    .filter(|i| i.get("$patch").is_none())
                    .cloned()
                    .collect());
            }
            for item in items {
                let Some(kv) = item.get(key) else {
                    return Err(format!(
                        "map: {item} does not contain declared merge key: {key}"
                    ));
                };
                let pos = existing.iter().position(|e| e.get(key) == Some(kv));
                if item.get("$patch").and_then(Value::as_str) == Some("delete") {
                    if let Some(p) = pos {
                        existing.remove(p);
                    }
                    continue;
                }
                match pos {
                    Some(p) => strategic_merge(&mut existing[p], item, path)?,
                    None => {
                        let mut fresh = Value::Object(Map::new());
                        strategic_merge(&mut fresh, item, path)?;
                        existing.push(fresh);
                    }
                }
            }
            Ok(existing)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rt() -> ResourceType {
        super::super::catalog::builtin()
            .into_iter()
            .find(|r| r.kind == "ConfigMap")
            .unwrap()
    }

    #[test]
    fn json_patch_test_null_on_missing_member_succeeds() {
        let doc = json!({"metadata": {"name": "a"}});
        let ops = vec![
            json!({"op": "test", "path": "/metadata/finalizers", "value": null}),
            json!({"op": "add", "path": "/metadata/finalizers", "value": ["x"]}),
        ];
        let out = apply(&Parsed::Json(ops), &doc, &rt()).unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["x"]));
    }

    #[test]
    fn json_patch_failed_test_fails() {
        let doc = json!({"a": 1});
        let ops = vec![json!({"op": "test", "path": "/a", "value": 2})];
        assert!(apply(&Parsed::Json(ops), &doc, &rt()).is_err());
    }

    #[test]
    fn merge_patch_deletes_with_null() {
        let doc = json!({"data": {"a": "1", "b": "2"}});
        let out = apply(
            &Parsed::Merge(json!({"data": {"a": null, "c": "3"}})),
            &doc,
            &rt(),
        )
        .unwrap();
        assert_eq!(out, json!({"data": {"b": "2", "c": "3"}}));
    }

    #[test]
    fn strategic_merges_containers_by_name_and_strips_directives() {
        let doc = json!({"spec": {"template": {"spec": {"containers": [
            {"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}}}});
        let patch = json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "a"}, {"name": "b"}],
            "containers": [{"name": "b", "image": "z"}, {"name": "a", "$patch": "delete"}]}}}});
        let out = apply(&Parsed::Strategic(patch), &doc, &rt()).unwrap();
        assert_eq!(
            out["spec"]["template"]["spec"]["containers"],
            json!([{"name": "b", "image": "z"}])
        );
    }

    #[test]
    fn strategic_finalizers_merge_as_set() {
        let doc = json!({"metadata": {"finalizers": ["a"]}});
        let out = apply(
            &Parsed::Strategic(json!({"metadata": {"finalizers": ["b", "a"]}})),
            &doc,
            &rt(),
        )
        .unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!(["a", "b"]));
        let out = apply(
            &Parsed::Strategic(json!({"metadata": {"$deleteFromPrimitiveList/finalizers": ["a"]}})),
            &doc,
            &rt(),
        )
        .unwrap();
        assert_eq!(out["metadata"]["finalizers"], json!([]));
    }

    #[test]
    fn too_many_json_patch_ops_is_413() {
        let ops: Vec<Value> = (0..10_001)
            .map(|_| json!({"op": "test", "path": "/a", "value": 1}))
            .collect();
        let body = serde_json::to_vec(&ops).unwrap();
        assert_eq!(parse(PatchType::Json, &body).unwrap_err().code(), 413);
    }
}
