//! Generic `ObjectMeta` semantics shared by every type: what the server sets on create
//! (uid, creationTimestamp, generation, generateName), what it preserves on update, and the
//! checks on names, labels and annotations.

use kplane_types::{validation, Cause, Status};
use serde_json::{json, Map, Value};

use super::catalog::ResourceType;
use crate::error::{ApiError, ApiResult};
pub use crate::name_rule::NameRule;

/// The current time as Kubernetes serializes `metav1.Time` (seconds, UTC, `Z`).
pub fn now_time() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The current time as `metav1.MicroTime` (6 fractional digits).
pub fn now_micro_time() -> String {
    chrono::Utc::now()
        .format("%Y-%m-%dT%H:%M:%S%.6fZ")
        .to_string()
}

/// `metadata` as a mutable map, creating it when absent.
pub fn meta_mut(obj: &mut Value) -> ApiResult<&mut Map<String, Value>> {
    let o = obj
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the object must be a JSON object"))?;
    let m = o.entry("metadata").or_insert_with(|| json!({}));
    if m.is_null() {
        *m = json!({});
    }
    m.as_object_mut()
        .ok_or_else(|| ApiError::bad_request("metadata must be an object"))
}

pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

pub fn name_of(obj: &Value) -> &str {
    meta_str(obj, "name").unwrap_or("")
}

/// Checks `apiVersion`/`kind` of a request body against the endpoint and fills them in
/// when absent (Kubernetes accepts bodies without them for the endpoint's type).
pub fn check_type(obj: &mut Value, rt: &ResourceType) -> ApiResult<()> {
    let want_av = rt.api_version();
    let o = obj
        .as_object_mut()
        .ok_or_else(|| ApiError::bad_request("the object must be a JSON object"))?;
    match o.get("apiVersion") {
        None | Some(Value::Null) => {
            o.insert("apiVersion".into(), json!(want_av));
        }
        Some(Value::String(s)) if s.is_empty() => {
            o.insert("apiVersion".into(), json!(want_av));
        }
        Some(Value::String(s)) if *s == want_av => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
            "the API version in the data ({}) does not match the expected API version ({want_av})",
            other.as_str().unwrap_or("<not a string>")
        )))
        }
    }
    match o.get("kind") {
        None | Some(Value::Null) => {
            o.insert("kind".into(), json!(rt.kind));
        }
        Some(Value::String(s)) if s.is_empty() => {
            o.insert("kind".into(), json!(rt.kind));
        }
        Some(Value::String(s)) if *s == rt.kind => {}
        Some(other) => {
            return Err(ApiError::bad_request(format!(
                "the kind in the data ({}) does not match the expected kind ({})",
                other.as_str().unwrap_or("<not a string>"),
                rt.kind
            )))
        }
    }
    Ok(())
}

/// Makes the object's namespace agree with the request (`EnsureObjectNamespaceMatchesRequestNamespace`).
pub fn check_namespace(
    obj: &mut Value,
    rt: &ResourceType,
    request_ns: Option<&str>,
) -> ApiResult<()> {
    let meta = meta_mut(obj)?;
    if !rt.namespaced {
        meta.remove("namespace");
        return Ok(());
    }
    let req = request_ns.unwrap_or("");
    match meta.get("namespace").and_then(Value::as_str) {
        None | Some("") => {
            meta.insert("namespace".into(), json!(req));
        }
        Some(ns) if ns == req => {}
        Some(_) => return Err(ApiError::bad_request(
            "the namespace of the provided object does not match the namespace sent on the request",
        )),
    }
    Ok(())
}

/// Type-checks the well-known metadata fields so later code can rely on their shapes.
pub fn check_meta_types(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(meta) = obj.get("metadata") else {
        return causes;
    };
    if !meta.is_object() {
        causes.push(Cause::invalid("metadata", meta, "must be an object"));
        return causes;
    }
    for f in [
        "name",
        "generateName",
        "namespace",
        "resourceVersion",
        "uid",
    ] {
        if let Some(v) = meta.get(f) {
            if !v.is_string() && !v.is_null() {
                causes.push(Cause::invalid(
                    format!("metadata.{f}"),
                    v,
                    "must be a string",
                ));
            }
        }
    }
    for f in ["labels", "annotations"] {
        if let Some(v) = meta.get(f) {
            match v {
                Value::Null => {}
                Value::Object(m) => {
                    for (k, val) in m {
                        if !val.is_string() {
                            causes.push(Cause::invalid(
                                format!("metadata.{f}[{k}]"),
                                val,
                                "must be a string",
                            ));
                        }
                    }
                }
                other => causes.push(Cause::invalid(
                    format!("metadata.{f}"),
                    other,
                    "must be an object",
                )),
            }
        }
    }
    if let Some(v) = meta.get("finalizers") {
        match v {
            Value::Null => {}
            Value::Array(a) if a.iter().all(Value::is_string) => {}
            other => causes.push(Cause::invalid(
                "metadata.finalizers",
                other,
                "must be a list of strings",
            )),
        }
    }
    causes
}

/// Validates name, labels, annotations and finalizers.
pub fn validate_object_meta(obj: &Value, rule: NameRule) -> Vec<Cause> {
    let mut causes = check_meta_types(obj);
    if !causes.is_empty() {
        return causes;
    }
    let name = name_of(obj);
    if name.is_empty() {
        causes.push(Cause::required("metadata.name"));
    } else {
        let errs = match rule {
            NameRule::Dns1123Subdomain => validation::is_dns1123_subdomain(name),
            NameRule::Dns1123Label => validation::is_dns1123_label(name),
            NameRule::PathSegment => validation::is_valid_path_segment_name(name),
        };
        for msg in errs {
            causes.push(Cause::invalid("metadata.name", &json!(name), &msg));
        }
    }
    if let Some(Value::Object(labels)) = obj.pointer("/metadata/labels") {
        causes.extend(validation::validate_labels(labels, "metadata.labels"));
    }
    if let Some(Value::Object(ann)) = obj.pointer("/metadata/annotations") {
        causes.extend(validation::validate_annotations(
            ann,
            "metadata.annotations",
        ));
    }
    causes.extend(validate_owner_references(obj));
    if let Some(Value::Array(fins)) = obj.pointer("/metadata/finalizers") {
        causes.extend(validate_finalizers(fins));
    }
    causes
}

/// `ValidateFinalizers`: each a qualified name (errors on the list's path, without an
/// index, as upstream), and not both `orphan` and `foregroundDeletion`.
fn validate_finalizers(fins: &[Value]) -> Vec<Cause> {
    const PATH: &str = "metadata.finalizers";
    let mut causes = Vec::new();
    for f in fins {
        for msg in validation::is_qualified_name(f.as_str().unwrap_or("")) {
            causes.push(Cause::invalid(PATH, f, &msg));
        }
    }
    let has = |name: &str| fins.iter().any(|f| f == name);
    if has("orphan") && has("foregroundDeletion") {
        // Go prints the []string value with %#v.
        let items: Vec<String> = fins.iter().map(|f| f.to_string()).collect();
        causes.push(Cause::new(
            kplane_types::CauseType::FieldValueInvalid,
            PATH,
            format!(
                "Invalid value: []string{{{}}}: finalizer orphan and foregroundDeletion cannot be both set",
                items.join(", ")
            ),
        ));
    }
    causes
}

/// `metadata.ownerReferences`: apiVersion, kind, name and uid are required, and at most
/// one reference may be the controller (`ValidateOwnerReferences`).
fn validate_owner_references(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let Some(refs) = obj.pointer("/metadata/ownerReferences") else {
        return causes;
    };
    let Some(refs) = refs.as_array() else {
        causes.push(Cause::invalid(
            "metadata.ownerReferences",
            refs,
            "must be a list",
        ));
        return causes;
    };
    let mut controllers = Vec::new();
    for (i, r) in refs.iter().enumerate() {
        let base = format!("metadata.ownerReferences[{i}]");
        for f in ["apiVersion", "kind", "name", "uid"] {
            if r.get(f).and_then(Value::as_str).unwrap_or("").is_empty() {
                causes.push(Cause::invalid(
                    format!("{base}.{f}"),
                    &json!(""),
                    &format!("{f} must not be empty"),
                ));
            }
        }
        if r.get("controller") == Some(&Value::Bool(true)) {
            controllers.push(
                r.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
            );
        }
    }
    if controllers.len() > 1 {
        causes.push(Cause::invalid(
            "metadata.ownerReferences",
            &Value::Array(refs.clone()),
            &format!(
                "Only one reference can have Controller set to true. Found \"true\" in references for {}",
                controllers.join(" and ")
            ),
        ));
    }
    causes
}

/// Fails with 422 on any cause.
pub fn invalid_if_any(rt: &ResourceType, name: &str, causes: Vec<Cause>) -> ApiResult<()> {
    if causes.is_empty() {
        Ok(())
    } else {
        Err(ApiError::from(Status::invalid(
            &rt.group, &rt.kind, name, causes,
        )))
    }
}

/// Sets the server-owned fields of a new object.
pub fn prepare_create(obj: &mut Value, rt: &ResourceType) -> ApiResult<()> {
    let has_generation = rt.strategy.has_generation();
    let meta = meta_mut(obj)?;
    for f in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "selfLink",
        "resourceVersion",
    ] {
        meta.remove(f);
    }
    meta.insert("uid".into(), json!(uuid::Uuid::new_v4().to_string()));
    meta.insert("creationTimestamp".into(), json!(now_time()));
    if has_generation {
        meta.insert("generation".into(), json!(1));
    } else {
        meta.remove("generation");
    }
    strip_empty_meta(meta);
    Ok(())
}

/// Drops empty or null optional metadata maps and lists, as Go's omitempty does.
pub fn strip_empty_meta(meta: &mut Map<String, Value>) {
    for f in [
        "labels",
        "annotations",
        "finalizers",
        "ownerReferences",
        "managedFields",
        "generateName",
    ] {
        let empty = match meta.get(f) {
            Some(Value::Null) => true,
            Some(Value::Object(m)) => m.is_empty(),
            Some(Value::Array(a)) => a.is_empty(),
            Some(Value::String(s)) => s.is_empty(),
            _ => false,
        };
        if empty {
            meta.remove(f);
        }
    }
}

/// An update may not start an object's deletion nor change its grace period
/// (`ValidateObjectMetaUpdate`'s immutable `deletionTimestamp` and
/// `deletionGracePeriodSeconds`): a timestamp the stored object has is kept whatever the
/// update says, as is its grace period when the update leaves it out (`BeforeUpdate`), but
/// one the stored object lacks, or another grace period, is refused.
fn deletion_fields_kept(new: &Value, old_meta: &Value) -> Vec<Cause> {
    let set =
        |m: Option<&Value>, f: &str| m.and_then(|m| m.get(f)).filter(|v| !v.is_null()).cloned();
    let new_meta = new.get("metadata");
    let mut causes = Vec::new();
    if set(Some(old_meta), "deletionTimestamp").is_none() {
        if let Some(ts) = set(new_meta, "deletionTimestamp") {
            let shown = ts.as_str().map_or_else(|| ts.to_string(), go_time_string);
            causes.push(Cause::new(
                kplane_types::CauseType::FieldValueInvalid,
                "metadata.deletionTimestamp",
                format!("Invalid value: {shown}: field is immutable"),
            ));
        }
    }
    let grace = "deletionGracePeriodSeconds";
    if let Some(g) = set(new_meta, grace) {
        if Some(&g) != set(Some(old_meta), grace).as_ref() {
            causes.push(Cause::invalid(
                format!("metadata.{grace}"),
                &g,
                "field is immutable",
            ));
        }
    }
    causes
}

/// A timestamp as Go's `time.Time.String` prints it in UTC (`2026-01-02 15:04:05 +0000
/// UTC`, with the fraction of a second when there is one), as validation messages show a
/// `metav1.Time`; the text itself when it is not RFC 3339.
fn go_time_string(ts: &str) -> String {
    let Ok(t) = chrono::DateTime::parse_from_rfc3339(ts) else {
        return ts.to_string();
    };
    let t = t.with_timezone(&chrono::Utc);
    let nanos = t.timestamp_subsec_nanos();
    let fraction = if nanos == 0 {
        String::new()
    } else {
        format!(".{nanos:09}").trim_end_matches('0').to_string()
    };
    format!("{}{fraction} +0000 UTC", t.format("%Y-%m-%d %H:%M:%S"))
}

/// Carries the server-owned fields from the stored object into an update.
pub fn prepare_update(new: &mut Value, old: &Value, rt: &ResourceType) -> ApiResult<()> {
    // An empty uid takes the stored one; another one is an error (ValidateObjectMetaUpdate).
    if let (Some(uid), Some(old_uid)) = (meta_str(new, "uid"), meta_str(old, "uid")) {
        if !uid.is_empty() && uid != old_uid {
            let cause = Cause::invalid("metadata.uid", &json!(uid), "field is immutable");
            return invalid_if_any(rt, name_of(old), vec![cause]);
        }
    }
    let old_meta = old.get("metadata").cloned().unwrap_or_else(|| json!({}));
    invalid_if_any(rt, name_of(old), deletion_fields_kept(new, &old_meta))?;
    let meta = meta_mut(new)?;
    for f in [
        "uid",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "generation",
    ] {
        match old_meta.get(f) {
            Some(v) => {
                meta.insert(f.into(), v.clone());
            }
            None => {
                meta.remove(f);
            }
        }
    }
    meta.remove("selfLink");
    strip_empty_meta(meta);
    if rt.strategy.has_generation() && spec_changed(new, old, rt.status_subresource) {
        let g = old_meta
            .get("generation")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        if let Ok(m) = meta_mut(new) {
            m.insert("generation".into(), json!(g + 1));
        }
    }
    Ok(())
}

/// Whether anything outside `metadata` (and `status`, when the type has a status
/// subresource) differs: what bumps `metadata.generation`. Without a status subresource a
/// status change is a change like any other (upstream's custom resource strategy).
fn spec_changed(new: &Value, old: &Value, status_apart: bool) -> bool {
    let (Some(n), Some(o)) = (new.as_object(), old.as_object()) else {
        return new != old;
    };
    let counts = |k: &str| k != "metadata" && !(status_apart && k == "status");
    // Compared in place (objects can be large).
    n.keys().filter(|k| counts(k)).count() != o.keys().filter(|k| counts(k)).count()
        || n.iter()
            .filter(|(k, _)| counts(k))
            .any(|(k, v)| o.get(k) != Some(v))
}

/// The finalizers of an object.
pub fn finalizers(obj: &Value) -> Vec<String> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|f| f.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

pub fn is_deleting(obj: &Value) -> bool {
    obj.pointer("/metadata/deletionTimestamp")
        .is_some_and(|v| !v.is_null())
}

/// The resourceVersion a client put in the body, if any.
pub fn body_resource_version(obj: &Value) -> ApiResult<Option<u64>> {
    match meta_str(obj, "resourceVersion") {
        None | Some("") => Ok(None),
        Some(s) => s.parse::<u64>().map(Some).map_err(|_| {
            ApiError::bad_request(format!("invalid resourceVersion {s:?}: must be an integer"))
        }),
    }
}

/// The OpenAPI definition of `ObjectMeta`, against which metadata is pruned and checked.
pub(crate) const OBJECT_META: &str = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta";

/// The finalizer of a delete with `propagationPolicy: Orphan` (`metav1.FinalizerOrphanDependents`).
pub const ORPHAN_FINALIZER: &str = "orphan";
/// The finalizer of a delete with `propagationPolicy: Foreground`
/// (`metav1.FinalizerDeleteDependents`).
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";

/// The 403 a delete of a built-in object gets when the cluster stores none of its name
/// (as kube-apiserver refuses to delete the `default` namespace): kplane keeps it, where
/// kube-apiserver would delete it and re-create it at its next start.
pub fn undeletable(rt: &ResourceType, name: &str) -> ApiError {
    ApiError::from(kplane_types::Status::forbidden(
        &rt.group,
        &rt.plural,
        name,
        &format!(
            "this default {} is part of every logical cluster and may not be deleted; \
             write one of the same name to replace it",
            rt.kind
        ),
    ))
}
