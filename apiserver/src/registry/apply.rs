//! Server-side apply (`application/apply-patch+yaml`): the manager's configuration is merged
//! into the live object by `kplane-merge` (ownership in `metadata.managedFields`, conflicts
//! as 409 unless `force`), then written through the ordinary create/update path, so every
//! rule of the type (typed decoding, validation, status subresource) still applies.

use std::sync::Arc;

use bytes::Bytes;
use kplane_merge::{DefaultTypeInfo, Request, TypeInfo};
use kplane_types::{Cause, Status};
use serde_json::{json, Value};

use super::{corrupt, meta, Registry, Strategy, Target};
use crate::error::{ApiError, ApiResult};
use crate::http::query::WriteParams;

/// How many times an apply is retried when the object changed underneath it.
const APPLY_RETRIES: usize = 5;

fn type_info(t: &Target) -> Arc<dyn TypeInfo> {
    let rt = &t.rt;
    if let Some(info) = &rt.custom {
        if let Ok(ti) = kplane_merge::crd_type_info(&info.raw_schema) {
            return Arc::new(ti);
        }
    }
    kplane_merge::builtin_type_info(&rt.group, &rt.kind)
        .unwrap_or_else(|| Arc::new(DefaultTypeInfo))
}

impl Registry {
    /// Applies `body` (YAML or JSON) as `w.field_manager`. Returns the stored object and
    /// whether it was created.
    pub async fn apply(
        &self,
        t: &Target,
        name: &str,
        sub: Option<&str>,
        body: &[u8],
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
        let applied = crate::http::negotiation::parse_yaml(body)?;
        if !applied.is_object() {
            return Err(ApiError::bad_request(
                "the apply configuration must be an object",
            ));
        }
        if let Some(n) = meta::meta_str(&applied, "name").filter(|n| !n.is_empty() && *n != name) {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({n}) does not match the name on the URL ({name})"
            )));
        }
        let types = type_info(t);
        let api_version = rt.api_version();
        let reset: &[&str] = match sub {
            Some(_) => &["spec", "metadata"],
            None if rt.status_subresource => &["status"],
            None => &[],
        };
        for _ in 0..APPLY_RETRIES {
            let current = self.get_stored(t, name).await?;
            let live: Option<Value> = match &current {
                Some(kv) => Some(
                    serde_json::from_slice(&self.to_api(&rt, kv.value.clone())?)
                        .map_err(|e| corrupt(&e))?,
                ),
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
                    .map_err(|e| ApiError::from(e.to_status()))?;
            if let Some(m) = merged.get_mut("metadata").and_then(Value::as_object_mut) {
                m.insert("name".into(), json!(name));
            }
            let result = match &current {
                None if sub.is_some() => {
                    return Err(ApiError::from(Status::not_found(
                        &rt.group, &rt.plural, name,
                    )))
                }
                None => self.create(t, merged, w).await.map(|b| (b, true)),
                Some(kv) => {
                    let obj = if rt.strategy == Strategy::EventsV1Event {
                        super::events::to_core(&merged)
                    } else {
                        self.to_storage(&rt, merged)
                    };
                    self.write_update(t, name, sub, obj, kv, w)
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
