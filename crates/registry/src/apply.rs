//! Server-side apply (`application/apply-patch+yaml`): the manager's configuration is merged
//! into the live object by `kplane-merge` (ownership in `metadata.managedFields`, conflicts
//! as 409 unless `force`), then written through the ordinary create/update path, so every
//! rule of the type (typed decoding, validation, status subresource) still applies.

use bytes::Bytes;
use kplane_merge::{ApplyError, Request};
use kplane_types::{Cause, Status, StatusReason};
use serde_json::{json, Value};

use super::{corrupt, meta, Registry, ResourceType, Target};
use crate::error::{ApiError, ApiResult};
use crate::options::WriteParams;

/// How many times an apply is retried when the object changed underneath it.
const APPLY_RETRIES: usize = 5;

impl Registry {
    /// Applies `doc` (the decoded YAML or JSON apply configuration) as `w.field_manager`.
    /// Returns the stored object and whether it was created.
    pub async fn apply(
        &self,
        t: &Target,
        name: &str,
        sub: Option<&str>,
        doc: super::patch::Document,
        w: &WriteParams,
    ) -> ApiResult<(Bytes, bool)> {
        let rt = t.rt.clone();
        let Some(manager) = w.field_manager.as_deref() else {
            return Err(ApiError::from(Status::invalid(
                "meta.k8s.io",
                "PatchOptions",
                "",
                vec![Cause::new(
                    kplane_types::CauseType::FieldValueRequired,
                    "fieldManager",
                    "Required value: is required for apply patch",
                )],
            )));
        };
        let super::patch::Document {
            value: applied,
            duplicates,
        } = doc;
        if !applied.is_object() {
            return Err(ApiError::bad_request(
                "the apply configuration must be an object",
            ));
        }
        strict_yaml_problems(w, &duplicates)?;
        if let Some(path) = undeclared_fields(&rt, &applied).first() {
            return Err(not_typed(
                t,
                name,
                &format!(".{path}: field not declared in schema"),
            ));
        }
        if let Some(n) = meta::meta_str(&applied, "name").filter(|n| !n.is_empty() && *n != name) {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        let types = super::managed::type_info(&rt);
        let api_version = rt.api_version();
        let reset = rt.strategy.reset_fields(&rt, sub);
        // The merge result carries this apply's entries; the write must not add more.
        let w = &WriteParams {
            skip_managed_fields: true,
            ..w.clone()
        };
        for _ in 0..APPLY_RETRIES {
            let current = self.get_current(t, name).await?;
            // Whether the API form is the stored bytes as they are (then the decoded live
            // object doubles as the stored one for the update).
            let mut live_is_stored = false;
            let live: Option<Value> = match &current {
                Some(kv) => {
                    let api = self.api_bytes(&rt, kv.value.clone()).await?;
                    live_is_stored =
                        api.as_ptr() == kv.value.as_ptr() && api.len() == kv.value.len();
                    Some(serde_json::from_slice(&api).map_err(|e| corrupt(&e))?)
                }
                None => None,
            };
            let now = meta::now_time();
            let req = Request {
                manager,
                api_version: &api_version,
                subresource: sub,
                now: &now,
                types: &*types,
                reset_fields: reset,
            };
            let mut merged =
                kplane_merge::apply(live.as_ref(), &applied, &req, w.force.unwrap_or(false))
                    .map_err(|e| match e {
                        ApplyError::Typed(detail) => not_typed(t, name, &detail),
                        e => ApiError::from(e.to_status()),
                    })?;
            if let Some(m) = merged.get_mut("metadata").and_then(Value::as_object_mut) {
                m.insert("name".into(), json!(name));
            }
            let result = match &current {
                None if sub.is_some() => {
                    return Err(ApiError::from(Status::not_found(
                        &rt.group, &rt.plural, name,
                    )))
                }
                None => {
                    // Returned as it is: a conflict here is not one to retry.
                    super::precondition::check_apply_create_uid(
                        &rt,
                        name,
                        meta::meta_str(&merged, "uid"),
                    )?;
                    self.create(t, merged, w).await.map(|b| (b, true))
                }
                Some(kv) => {
                    super::typed::typed_decode(&rt, &mut merged, w, &[])?;
                    let obj = self.write_value(&rt, merged).await?;
                    let decoded = match live {
                        Some(v) if live_is_stored => super::write::Decoded::Stored(v),
                        Some(v) => super::write::Decoded::Api(v),
                        None => super::write::Decoded::Nothing,
                    };
                    self.write_update(t, name, sub, obj, kv, decoded, w)
                        .await
                        .map(|b| (b, false))
                }
            };
            match result {
                Err(e) if e.is_conflict() || e.code() == 409 && current.is_none() => continue,
                other => return other,
            }
        }
        Err(ApiError::from(Status::stale(&rt.group, &rt.plural, name)))
    }
}

/// `fieldValidation` for the apply body's duplicate keys (upstream decodes the body a second
/// time with a strict YAML decoder): Strict fails, Warn adds a warning per key.
fn strict_yaml_problems(w: &WriteParams, problems: &[String]) -> ApiResult<()> {
    super::typed::enforce(w, problems.to_vec(), |_| {
        ApiError::bad_request(format!(
            "error strict decoding YAML: error converting YAML to JSON: yaml: unmarshal errors:\n  {}",
            problems.join("\n  ")
        ))
    })
}

/// Fields of the applied configuration that its type does not declare. Server-side apply
/// refuses them whatever `fieldValidation` says: upstream, turning the configuration into
/// a typed object fails before any merge.
fn undeclared_fields(rt: &ResourceType, applied: &Value) -> Vec<String> {
    let mut copy = applied.clone();
    let Some(info) = &rt.custom else {
        return kplane_openapi::typed::prune_and_check(&rt.schema_name, &mut copy).unknown;
    };
    let mut unknown = Vec::new();
    if let Some(m) = copy.get_mut("metadata") {
        let r = kplane_openapi::typed::prune_and_check(crate::meta::OBJECT_META, m);
        unknown.extend(r.unknown.into_iter().map(|p| format!("metadata.{p}")));
    }
    if let Some(schema) = &info.schema {
        unknown.extend(schema.prune(&mut copy));
    }
    unknown
}

/// kube-apiserver's answer to an apply configuration it cannot turn into a typed object
/// (an undeclared field, duplicate map-list keys): an error without a status of its own,
/// hence 500 with no reason (kubernetes/kubernetes#122480), naming the object as its
/// structured-merge field manager does.
fn not_typed(t: &Target, name: &str, detail: &str) -> ApiError {
    let rt = &t.rt;
    ApiError::from(Status::new(
        StatusReason::Unknown,
        ApplyError::typed_message(
            detail,
            t.namespace.as_deref().unwrap_or(""),
            name,
            &rt.api_version(),
            &rt.kind,
        ),
    ))
}
