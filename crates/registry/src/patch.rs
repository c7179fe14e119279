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
pub(crate) const MAX_JSON_PATCH_OPS: usize = 10_000;

/// Most bytes the `copy` operations of one JSON patch may add to the document, counted as
/// JSON (kube-apiserver's `JSONPatchMaxCopyBytes`, the request body limit): without it a
/// few dozen copies of a member into itself double the object each time.
pub(crate) const MAX_JSON_PATCH_COPY_BYTES: usize = 3 * 1024 * 1024;

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
    let mut copied = 0;
    for op in ops {
        let parsed: json_patch::PatchOperation = serde_json::from_value(op.clone())
            .map_err(|e| format!("invalid JSON patch operation: {e}"))?;
        apply_json_patch_op(&mut out, &parsed, &mut copied)?;
    }
    Ok(out)
}

/// Applies one JSON patch operation to `doc` as kube-apiserver's JSON patch library (evanphx
/// v4) does: testing a missing member against null succeeds, and the bytes `copy`
/// operations add (`copied`, summed over the patch) stay within
/// [`MAX_JSON_PATCH_COPY_BYTES`], checked before each copy is made, with upstream's message.
pub(crate) fn apply_json_patch_op(
    doc: &mut Value,
    op: &json_patch::PatchOperation,
    copied: &mut usize,
) -> Result<(), String> {
    match op {
        json_patch::PatchOperation::Test(t)
            if t.value.is_null() && doc.pointer(t.path.as_str()).is_none() =>
        {
            return Ok(());
        }
        json_patch::PatchOperation::Copy(c) => {
            if let Some(source) = doc.pointer(c.from.as_str()) {
                *copied = copied.saturating_add(encoded_len(source));
                if *copied > MAX_JSON_PATCH_COPY_BYTES {
                    return Err(format!(
                        "Unable to complete the copy, the accumulated size increase of copy is {copied}, exceeding the limit {MAX_JSON_PATCH_COPY_BYTES}"
                    ));
                }
            }
        }
        _ => {}
    }
    json_patch::patch(doc, std::slice::from_ref(op)).map_err(|e| e.to_string())
}

/// The length of `v` as compact JSON, counted without writing it out.
fn encoded_len(v: &Value) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0 = self.0.saturating_add(buf.len());
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut c = Count(0);
    // Writing a Value to a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut c, v);
    c.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rt_of(kind: &str) -> ResourceType {
        super::super::builtin_types::builtin()
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

    /// Copies of an object into itself double it each time: the patch fails once the
    /// copies would add more than the limit, before the document grows past it.
    #[test]
    fn json_patch_copies_are_limited_in_size() {
        let doc = json!({"metadata": {"name": "x", "annotations": {"a": "b".repeat(1000)}}});
        let doubling = |n: usize| -> Vec<Value> {
            (0..n)
                .map(|i| json!({"op": "copy", "from": "/metadata", "path": format!("/metadata/x{i}")}))
                .collect()
        };
        // 2^10 KB: within the limit.
        let out = apply_json_patch(&doubling(10), &doc).unwrap();
        assert!(encoded_len(&out) > 1 << 20);
        let e = apply_json_patch(&doubling(13), &doc).unwrap_err();
        assert!(
            e.starts_with("Unable to complete the copy, the accumulated size increase of copy is ")
                && e.ends_with("exceeding the limit 3145728"),
            "{e}"
        );
        let e = apply_json_patch(&doubling(60), &doc).unwrap_err();
        assert!(e.contains("exceeding the limit 3145728"), "{e}");
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
