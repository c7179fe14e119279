//! Patch application: RFC 6902 JSON patch (with Kubernetes' `test`-against-null quirk),
//! RFC 7386 merge patch, and strategic merge patch for built-in types, which `kplane-merge`
//! applies from each kind's patch metadata (merge keys, strategies, directives).

use serde_json::Value;

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

/// A request body the HTTP layer decoded (JSON or YAML), with the keys it repeated (the last
/// one wins; `fieldValidation` decides whether that is an error).
#[derive(Clone, Debug, Default)]
pub struct Document {
    pub value: Value,
    pub duplicates: Vec<String>,
}

impl Document {
    pub fn new(value: Value) -> Self {
        Document {
            value,
            duplicates: Vec::new(),
        }
    }
}

pub fn parse(ty: PatchType, doc: Document) -> ApiResult<Parsed> {
    parse_checked(ty, doc).map(|(p, _)| p)
}

/// [`parse`], also returning the keys merge and strategic patches repeat (JSON patches are
/// lists of operations: their repeated keys do not matter).
pub fn parse_checked(ty: PatchType, doc: Document) -> ApiResult<(Parsed, Vec<String>)> {
    let duplicates = match ty {
        PatchType::Json => Vec::new(),
        PatchType::Merge | PatchType::Strategic => doc.duplicates,
    };
    parse_value(ty, doc.value).map(|p| (p, duplicates))
}

fn parse_value(ty: PatchType, v: Value) -> ApiResult<Parsed> {
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
pub fn apply(p: &Parsed, doc: &Value, rt: &ResourceType) -> Result<Value, String> {
    match p {
        Parsed::Json(ops) => apply_json_patch(ops, doc),
        Parsed::Merge(m) => {
            let mut out = doc.clone();
            json_patch::merge(&mut out, m);
            Ok(out)
        }
        Parsed::Strategic(m) => {
            let types: std::sync::Arc<dyn kplane_merge::TypeInfo> =
                kplane_merge::builtin_type_info(&rt.group, &rt.kind)
                    .unwrap_or_else(|| std::sync::Arc::new(kplane_merge::DefaultTypeInfo));
            kplane_merge::strategic_merge(doc, m, &*types).map_err(|e| e.to_string())
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

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rt_of(kind: &str) -> ResourceType {
        super::super::catalog::builtin()
            .into_iter()
            .find(|r| r.kind == kind)
            .unwrap()
    }

    fn rt() -> ResourceType {
        rt_of("ConfigMap")
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
        // What kubectl sends when a manifest drops container a and changes b's image.
        let patch = json!({"spec": {"template": {"spec": {
            "$setElementOrder/containers": [{"name": "b"}],
            "containers": [{"name": "b", "image": "z"}, {"name": "a", "$patch": "delete"}]}}}});
        let out = apply(&Parsed::Strategic(patch), &doc, &rt_of("Job")).unwrap();
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
        // Upstream order (normalizeElementOrder -> mergeSortedSlice(serverOnly, patch)):
        // the patch's items first, then those only on the server.
        assert_eq!(out["metadata"]["finalizers"], json!(["b", "a"]));
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
        for (n, ok) in [
            (MAX_JSON_PATCH_OPS - 1, true),
            (MAX_JSON_PATCH_OPS, true),
            (MAX_JSON_PATCH_OPS + 1, false),
            (10 * MAX_JSON_PATCH_OPS, false),
        ] {
            let ops: Vec<Value> = (0..n)
                .map(|_| json!({"op": "test", "path": "/a", "value": 1}))
                .collect();
            match parse(PatchType::Json, Document::new(Value::Array(ops))) {
                Ok(_) => assert!(ok, "{n} operations accepted"),
                Err(e) => assert!(!ok && e.code() == 413, "{n} operations: {}", e.code()),
            }
        }
    }
}
