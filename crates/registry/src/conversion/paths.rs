//! The registry's conversions of custom resources with a conversion webhook, between a
//! request's version and the storage version (apiextensions' storage codec, which decodes
//! each stored object into the request's version and encodes writes into the storage
//! version). Every read and write path calls these instead of the synchronous
//! [`crate::Conversion`]; for any other type they are that conversion. A custom resource's
//! write is admitted and validated in the request's version (the current object converted
//! to it) and converted to the storage version to be stored, as apiextensions' request
//! scope and per-version strategy do; every other type's write works in the stored form.
//!
//! Objects already in the wanted version (the request is for the storage version, or an
//! object was stored when another version was the storage version and is read in that
//! version) are not sent; a list's items go in one review.

use std::sync::Arc;

use bytes::Bytes;
use kplane_schema::CompiledSchema;
use kplane_types::StatusReason;
use serde_json::Value;

use super::WebhookConversion;
use crate::catalog::ResourceType;
use crate::error::{ApiError, ApiResult};
use crate::webhooks::WebhookTransport;
use crate::{corrupt, Registry};

/// `rt` without its CRD's conversion webhook ([`crate::crd::CustomInfo::without_webhook`]),
/// its objects taken as stored in `storage_version` (`None`: the CRD's storage version), for
/// the server's own paths that must not call a tenant's webhook: those that discard what
/// they read (deleting a collection for a controller), or write an object back in the
/// version it is stored in (the garbage collector).
pub(crate) fn without_webhook(
    rt: &Arc<ResourceType>,
    storage_version: Option<&str>,
) -> Arc<ResourceType> {
    match &rt.custom {
        Some(info) if info.webhook.is_some() || storage_version.is_some() => {
            let version = storage_version.unwrap_or(&info.storage_version);
            Arc::new(ResourceType {
                custom: Some(Arc::new(info.without_webhook(version))),
                ..(**rt).clone()
            })
        }
        _ => rt.clone(),
    }
}

/// Whether `rt`'s writes are admitted and validated in the request's version and converted
/// to the storage version only to be stored ([`crate::Conversion::writes_in_request_version`]:
/// custom resources, each version validated against its own schema as kube-apiserver's
/// per-version strategies validate it). Every other type is written in its stored form.
pub(crate) fn writes_in_request_version(rt: &ResourceType) -> bool {
    rt.conversion
        .as_ref()
        .is_some_and(|c| c.writes_in_request_version())
}

/// The CRD's conversion webhook, when `rt` is a custom resource with one.
fn webhook_of(rt: &ResourceType) -> Option<&WebhookConversion> {
    rt.custom.as_ref().and_then(|c| c.webhook.as_deref())
}

/// `conversion webhook for <group>/<version>, Kind=<kind> <what>`: 500 with no reason, as
/// kube-apiserver answers an error that is not a Status.
fn failed(from: &str, kind: &str, what: &str) -> ApiError {
    ApiError::new(
        StatusReason::Unknown,
        format!("conversion webhook for {from}, Kind={kind} {what}"),
    )
}

fn api_version_of(v: &Value) -> &str {
    v.get("apiVersion").and_then(Value::as_str).unwrap_or("")
}

fn to_bytes(v: &Value) -> ApiResult<Bytes> {
    serde_json::to_vec(v)
        .map(Bytes::from)
        .map_err(|e| ApiError::internal(e.to_string()))
}

/// Converts objects (decoded, each with its own apiVersion) to `desired` through `hook`;
/// `kind` names what the message reports (the kind, or the list kind for a list).
async fn call_webhook(
    transport: Option<&dyn WebhookTransport>,
    hook: &WebhookConversion,
    objects: Vec<Value>,
    desired: &str,
    kind: &str,
) -> ApiResult<Vec<Value>> {
    let from = objects
        .iter()
        .map(api_version_of)
        .find(|v| *v != desired)
        .unwrap_or(desired)
        .to_string();
    hook.convert(transport, objects, desired)
        .await
        .map_err(|e| failed(&from, kind, &e))
}

/// Drops what `schema` (the target version's) does not declare from converted objects,
/// as apiextensions' schema-coercing converter prunes a webhook's answers.
fn pruned(schema: Option<&Arc<CompiledSchema>>, mut objects: Vec<Value>) -> Vec<Value> {
    if let Some(schema) = schema {
        for o in &mut objects {
            schema.prune(o);
        }
    }
    objects
}

fn served_schema(rt: &ResourceType) -> Option<&Arc<CompiledSchema>> {
    rt.custom.as_ref().and_then(|c| c.schema.as_ref())
}

/// A stored object in `rt`'s version, defaulted (the read form of every path).
pub(crate) async fn api_bytes(
    transport: Option<&dyn WebhookTransport>,
    rt: &ResourceType,
    stored: Bytes,
) -> ApiResult<Bytes> {
    let Some(hook) = webhook_of(rt) else {
        return crate::to_api(rt, stored);
    };
    let obj: Value = serde_json::from_slice(&stored).map_err(|e| corrupt(&e))?;
    if api_version_of(&obj) == rt.api_version() {
        return crate::to_api(rt, stored);
    }
    let converted = call_webhook(transport, hook, vec![obj], &rt.api_version(), &rt.kind).await?;
    let converted = pruned(served_schema(rt), converted);
    let obj = converted.into_iter().next().unwrap_or(Value::Null);
    crate::to_api(rt, to_bytes(&obj)?)
}

/// Stored objects of one list (or one batch of a streamed list) in `rt`'s version: one
/// review for all that need it.
pub(crate) async fn api_list(
    transport: Option<&dyn WebhookTransport>,
    rt: &ResourceType,
    stored: Vec<Bytes>,
) -> ApiResult<Vec<Bytes>> {
    let Some(hook) = webhook_of(rt) else {
        return stored.into_iter().map(|b| crate::to_api(rt, b)).collect();
    };
    let want = rt.api_version();
    let objects = stored
        .iter()
        .map(|b| serde_json::from_slice::<Value>(b).map_err(|e| corrupt(&e)))
        .collect::<ApiResult<Vec<Value>>>()?;
    if objects.iter().all(|o| api_version_of(o) == want) {
        return stored.into_iter().map(|b| crate::to_api(rt, b)).collect();
    }
    let converted = call_webhook(transport, hook, objects, &want, &rt.list_kind).await?;
    pruned(served_schema(rt), converted)
        .iter()
        .map(|o| to_bytes(o).and_then(|b| crate::to_api(rt, b)))
        .collect()
}

impl Registry {
    /// The transport conversion webhooks are called through.
    pub(crate) fn conversion_transport(&self) -> Option<&dyn WebhookTransport> {
        self.admission.webhook_transport().map(|t| &**t)
    }

    /// A stored object in `rt`'s version ([`api_bytes`]).
    pub(crate) async fn api_bytes(&self, rt: &ResourceType, stored: Bytes) -> ApiResult<Bytes> {
        api_bytes(self.conversion_transport(), rt, stored).await
    }

    /// A decoded stored object in `rt`'s version.
    pub(crate) async fn api_value(&self, rt: &ResourceType, obj: Value) -> ApiResult<Value> {
        let Some(hook) = webhook_of(rt) else {
            return Ok(self.stored_to_api(rt, obj));
        };
        if api_version_of(&obj) == rt.api_version() {
            return Ok(obj);
        }
        let t = self.conversion_transport();
        let converted = call_webhook(t, hook, vec![obj], &rt.api_version(), &rt.kind).await?;
        let converted = pruned(served_schema(rt), converted);
        Ok(converted.into_iter().next().unwrap_or(Value::Null))
    }

    /// A decoded request object in the form the write path admits and validates: the
    /// request's version for a type that writes in it (custom resources, see
    /// [`writes_in_request_version`]), else the stored form ([`Registry::storage_value`]).
    pub(crate) async fn write_value(&self, rt: &ResourceType, obj: Value) -> ApiResult<Value> {
        if writes_in_request_version(rt) {
            return Ok(obj);
        }
        self.storage_value(rt, obj).await
    }

    /// The stored object `old` in the write form when that is another object: a custom
    /// resource stored in another version than the request's, converted to it as
    /// apiextensions' storage decodes the current object into the request's version
    /// (through the webhook, or relabelled for strategy `None`); `read` is the object in
    /// the request's version when the caller already read it so (then not converted
    /// again). `None` when `old` is the write form itself (a single-version CRD, any other
    /// type): no conversion, no copy.
    pub(crate) async fn old_write_value(
        &self,
        rt: &ResourceType,
        old: &Value,
        read: Option<Value>,
    ) -> ApiResult<Option<Value>> {
        if !writes_in_request_version(rt) || api_version_of(old) == rt.api_version() {
            return Ok(None);
        }
        match read {
            Some(v) => Ok(Some(v)),
            None => self.api_value(rt, old.clone()).await.map(Some),
        }
    }

    /// An object in the write form, to be stored: a custom resource converted to the
    /// storage version ([`Registry::storage_value`]); any other type's write form is
    /// already the stored form.
    pub(crate) async fn stored_of_write(&self, rt: &ResourceType, obj: Value) -> ApiResult<Value> {
        if writes_in_request_version(rt) {
            return self.storage_value(rt, obj).await;
        }
        Ok(obj)
    }

    /// An object a mutating admission webhook changed in `invoked`'s version, back in the
    /// write form of the request's type `rt`.
    pub(crate) async fn write_value_from(
        &self,
        invoked: &ResourceType,
        rt: &ResourceType,
        obj: Value,
    ) -> ApiResult<Value> {
        if writes_in_request_version(rt) {
            return self.api_value(rt, obj).await;
        }
        self.storage_value(invoked, obj).await
    }

    /// A request object of `rt`'s version in the storage version (the stored form).
    pub(crate) async fn storage_value(&self, rt: &ResourceType, obj: Value) -> ApiResult<Value> {
        let (Some(hook), Some(info)) = (webhook_of(rt), rt.custom.as_ref()) else {
            return Ok(self.to_storage(rt, obj));
        };
        let want = format!("{}/{}", rt.group, info.storage_version);
        if api_version_of(&obj) == want {
            return Ok(obj);
        }
        let t = self.conversion_transport();
        let converted = call_webhook(t, hook, vec![obj], &want, &rt.kind).await?;
        let converted = pruned(info.storage_schema.as_ref(), converted);
        Ok(converted.into_iter().next().unwrap_or(Value::Null))
    }
}
