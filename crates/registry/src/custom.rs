//! Custom resources: decoding against the CRD's structural schema (pruning, defaulting,
//! `fieldValidation`), validation, version conversion (`strategy: None` rewrites
//! `apiVersion`), defaulting on read, and the `scale` subresource.

use bytes::Bytes;
use kplane_types::{Cause, Status};
use serde_json::{json, Value};

use super::catalog::ResourceType;
use super::crd::{object, ScalePaths};
use super::patch::{self, PatchType};
use super::{corrupt, meta, Registry, Target};
use crate::error::{ApiError, ApiResult};
use crate::options::WriteParams;

/// Prunes, reports per `fieldValidation`, and defaults a custom resource from a request.
pub fn decode(
    rt: &ResourceType,
    obj: &mut Value,
    w: &WriteParams,
    duplicates: &[String],
) -> ApiResult<()> {
    let unknown = prune(rt, obj)?;
    super::typed::report_field_problems(rt, w, &unknown, duplicates)
}

/// Prunes what the schema does not declare (returning the paths) and applies defaults.
pub fn prune(rt: &ResourceType, obj: &mut Value) -> ApiResult<Vec<String>> {
    let Some(info) = &rt.custom else {
        return Ok(Vec::new());
    };
    let mut unknown = Vec::new();
    if let Some(m) = obj.get_mut("metadata") {
        let r = kplane_openapi::typed::prune_and_check(crate::meta::OBJECT_META, m);
        if let Some(e) = r.type_errors.first() {
            return Err(ApiError::bad_request(format!(
                "unable to decode metadata: {e}"
            )));
        }
        unknown.extend(r.unknown.into_iter().map(|p| format!("metadata.{p}")));
    }
    if let Some(schema) = &info.schema {
        unknown.extend(schema.prune(obj));
        schema.apply_defaults(obj);
    }
    Ok(unknown)
}

/// Schema validation of a custom resource against its version's schema (`old` on update,
/// for transition rules and ratcheting), both in that version: the write path keeps a
/// custom resource in the request's version until it is stored, as kube-apiserver's
/// strategy of each version validates with that version's schema.
pub fn validate(obj: &Value, old: Option<&Value>, rt: &ResourceType) -> Vec<Cause> {
    match rt.custom.as_ref().and_then(|c| c.schema.as_ref()) {
        Some(schema) => schema.validate(obj, old),
        None => vec![],
    }
}

/// Schema validation of an update of the stored `old` (converted to `rt`'s version) with
/// CRD validation ratcheting (`kplane_schema::CompiledSchema::validate_update`) against
/// `rt`'s version's schema: the errors, and the warnings of ratcheted CEL failures added
/// to `warnings`.
pub fn validate_update(
    obj: &Value,
    old: &Value,
    rt: &ResourceType,
    warnings: &mut Vec<String>,
) -> Vec<Cause> {
    let Some(schema) = rt.custom.as_ref().and_then(|c| c.schema.as_ref()) else {
        return vec![];
    };
    let v = schema.validate_update(obj, old);
    warnings.extend(v.warnings);
    v.errors
}

/// The stored form: the storage version's apiVersion.
pub fn to_storage(rt: &ResourceType, mut obj: Value) -> Value {
    if let Some(info) = &rt.custom {
        obj["apiVersion"] = json!(format!("{}/{}", rt.group, info.storage_version));
    }
    obj
}

/// The requested version's form, with defaults applied (defaulting from storage).
pub fn to_api(rt: &ResourceType, stored: Bytes) -> ApiResult<Bytes> {
    let Some(info) = &rt.custom else {
        return Ok(stored);
    };
    let want = rt.api_version();
    if !info.has_defaults && stored_api_version_is(&stored, &want) {
        return Ok(stored);
    }
    let mut v: Value = serde_json::from_slice(&stored).map_err(|e| corrupt(&e))?;
    v["apiVersion"] = json!(want);
    if let Some(schema) = &info.schema {
        schema.apply_defaults(&mut v);
    }
    serde_json::to_vec(&v)
        .map(Bytes::from)
        .map_err(|e| ApiError::internal(e.to_string()))
}

/// Cheap check of `"apiVersion":"<want>"` without decoding (our encoder writes sorted keys,
/// so apiVersion comes first).
fn stored_api_version_is(stored: &[u8], want: &str) -> bool {
    let needle = format!("{{\"apiVersion\":\"{want}\"");
    stored.starts_with(needle.as_bytes())
}

fn path_segments(p: &str) -> Vec<&str> {
    p.trim_start_matches('.')
        .split('.')
        .filter(|s| !s.is_empty())
        .collect()
}

fn get_path<'a>(obj: &'a Value, p: &str) -> Option<&'a Value> {
    path_segments(p)
        .into_iter()
        .try_fold(obj, |v, seg| v.get(seg))
}

fn set_path(obj: &mut Value, p: &str, value: Value) {
    let segs = path_segments(p);
    let mut cur = obj;
    for (i, seg) in segs.iter().enumerate() {
        if !cur.is_object() {
            *cur = json!({});
        }
        let Some(m) = cur.as_object_mut() else { return };
        if i + 1 == segs.len() {
            m.insert(seg.to_string(), value);
            return;
        }
        cur = m.entry(seg.to_string()).or_insert_with(|| json!({}));
    }
}

fn scale_of(obj: &Value, paths: &ScalePaths) -> Value {
    let md = obj.get("metadata").cloned().unwrap_or_else(|| json!({}));
    let mut meta_out = serde_json::Map::new();
    for f in [
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "creationTimestamp",
    ] {
        if let Some(v) = md.get(f) {
            meta_out.insert(f.into(), v.clone());
        }
    }
    let spec_replicas = get_path(obj, &paths.spec_replicas)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let status_replicas = get_path(obj, &paths.status_replicas)
        .and_then(Value::as_i64)
        .unwrap_or(0);
    let mut status = json!({"replicas": status_replicas});
    if let Some(sel) = paths
        .label_selector
        .as_deref()
        .and_then(|p| get_path(obj, p))
        .and_then(Value::as_str)
    {
        status["selector"] = json!(sel);
    }
    object(vec![
        ("apiVersion", json!("autoscaling/v1")),
        ("kind", json!("Scale")),
        ("metadata", Value::Object(meta_out)),
        ("spec", json!({"replicas": spec_replicas})),
        ("status", status),
    ])
}

fn scale_paths(rt: &ResourceType) -> ApiResult<&ScalePaths> {
    rt.custom
        .as_ref()
        .and_then(|c| c.scale.as_ref())
        .ok_or_else(ApiError::not_found_path)
}

impl Registry {
    /// `GET .../scale`
    pub async fn get_scale(&self, t: &Target, name: &str) -> ApiResult<Bytes> {
        let paths = scale_paths(&t.rt)?;
        let obj: Value =
            serde_json::from_slice(&self.get(t, name).await?).map_err(|e| corrupt(&e))?;
        Ok(Bytes::from(scale_of(&obj, paths).to_string()))
    }

    /// `PUT .../scale`
    pub async fn update_scale(
        &self,
        t: &Target,
        name: &str,
        scale: Value,
        w: &WriteParams,
    ) -> ApiResult<Bytes> {
        self.write_scale(t, name, w, |_| Ok(scale.clone())).await
    }

    /// `PATCH .../scale`
    pub async fn patch_scale(
        &self,
        t: &Target,
        name: &str,
        ty: PatchType,
        doc: patch::Document,
        w: &WriteParams,
    ) -> ApiResult<Bytes> {
        let parsed = patch::parse(ty, doc)?;
        let rt = t.rt.clone();
        self.write_scale(t, name, w, move |current| {
            patch::apply(&parsed, current, &rt).map_err(|msg| {
                ApiError::from(Status::new(kplane_types::StatusReason::Invalid, msg))
            })
        })
        .await
    }

    async fn write_scale(
        &self,
        t: &Target,
        name: &str,
        w: &WriteParams,
        make: impl Fn(&Value) -> ApiResult<Value>,
    ) -> ApiResult<Bytes> {
        let paths = scale_paths(&t.rt)?.clone();
        for _ in 0..5 {
            let obj: Value =
                serde_json::from_slice(&self.get(t, name).await?).map_err(|e| corrupt(&e))?;
            let current = scale_of(&obj, &paths);
            let scale = make(&current)?;
            let replicas = match scale.pointer("/spec/replicas") {
                Some(Value::Number(n)) if n.as_i64().is_some_and(|r| r >= 0) => n.clone(),
                other => {
                    return Err(ApiError::from(Status::invalid(
                        "autoscaling",
                        "Scale",
                        name,
                        vec![Cause::invalid(
                            "spec.replicas",
                            other.unwrap_or(&Value::Null),
                            "must be greater than or equal to 0",
                        )],
                    )))
                }
            };
            let mut updated = obj.clone();
            if let Some(rv) = meta::meta_str(&scale, "resourceVersion").filter(|s| !s.is_empty()) {
                if Some(rv) != meta::meta_str(&obj, "resourceVersion") {
                    return Err(ApiError::from(Status::stale(
                        &t.rt.group,
                        &t.rt.plural,
                        name,
                    )));
                }
            }
            set_path(&mut updated, &paths.spec_replicas, Value::Number(replicas));
            match self.update(t, name, None, updated, w).await {
                Ok((bytes, _)) => {
                    let v: Value = serde_json::from_slice(&bytes).map_err(|e| corrupt(&e))?;
                    return Ok(Bytes::from(scale_of(&v, &paths).to_string()));
                }
                Err(e)
                    if e.is_conflict() && meta::meta_str(&scale, "resourceVersion").is_none() =>
                {
                    continue
                }
                Err(e) => return Err(e),
            }
        }
        Err(ApiError::from(Status::stale(
            &t.rt.group,
            &t.rt.plural,
            name,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scale_reads_and_writes_paths() {
        let paths = ScalePaths {
            spec_replicas: ".spec.replicas".into(),
            status_replicas: ".status.replicas".into(),
            label_selector: Some(".status.selector".into()),
        };
        let mut obj = json!({"metadata": {"name": "a", "resourceVersion": "5"}, "spec": {"replicas": 3},
            "status": {"replicas": 2, "selector": "app=a"}});
        let s = scale_of(&obj, &paths);
        assert_eq!(s["spec"]["replicas"], 3);
        assert_eq!(s["status"], json!({"replicas": 2, "selector": "app=a"}));
        set_path(&mut obj, ".spec.replicas", json!(7));
        assert_eq!(obj["spec"]["replicas"], 7);
    }

    #[test]
    fn api_version_check_is_exact() {
        assert!(stored_api_version_is(
            br#"{"apiVersion":"example.com/v1","kind":"W"}"#,
            "example.com/v1"
        ));
        assert!(!stored_api_version_is(
            br#"{"apiVersion":"example.com/v1beta1"}"#,
            "example.com/v1"
        ));
    }
}
