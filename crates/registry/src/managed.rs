//! managedFields bookkeeping for every write that is not a server-side apply: creates,
//! updates (PUT) and JSON/merge/strategic patches record an `Update` entry for their field
//! manager (`fieldManager`, else the User-Agent prefix), as kube-apiserver's field manager
//! does. Server-side apply records its own `Apply` entries in [`super::apply`].
//!
//! Also owns the per-kind merge type information both paths use.

use std::sync::Arc;

use kplane_merge::{DefaultTypeInfo, Request, TypeInfo};
use serde_json::Value;

use super::catalog::ResourceType;
use super::meta;
pub use crate::crd::info::LazyTypeInfo;
use crate::options::WriteParams;

/// List and map semantics of `rt`'s objects.
pub fn type_info(rt: &ResourceType) -> Arc<dyn TypeInfo> {
    if let Some(info) = &rt.custom {
        return info
            .merge_types
            .0
            .get_or_init(|| match kplane_merge::crd_type_info(&info.raw_schema) {
                Ok(ti) => Arc::new(ti),
                Err(_) => Arc::new(DefaultTypeInfo),
            })
            .clone();
    }
    kplane_merge::builtin_type_info(&rt.group, &rt.kind)
        .unwrap_or_else(|| Arc::new(DefaultTypeInfo))
}

/// Records the write of `new` over `old` (`None` for a create) in `new`'s managedFields.
/// `sub` is the subresource the request went through.
pub fn record_update(
    rt: &ResourceType,
    old: Option<&Value>,
    new: &mut Value,
    sub: Option<&str>,
    w: &WriteParams,
) {
    if w.skip_managed_fields || !rt.is_stored() {
        return;
    }
    let sub = w.managed_subresource.or(sub);
    let types = type_info(rt);
    let api_version = rt.api_version();
    let now = meta::now_time();
    let req = Request {
        manager: w.manager(),
        api_version: &api_version,
        subresource: sub,
        now: &now,
        types: &*types,
        reset_fields: if w.managed_subresource.is_some() {
            &[]
        } else {
            rt.strategy.reset_fields(rt, sub)
        },
    };
    // The merge puts `old`'s reset fields back into `new`; on an update the strategy has
    // already decided them (a CRD's `/status` keeps the request's metadata), so they are
    // set aside and returned, with the managedFields the merge computed.
    let set_aside: Vec<(&str, Value)> = match (old, new.as_object_mut()) {
        (Some(_), Some(o)) => req
            .reset_fields
            .iter()
            .filter_map(|f| o.remove(*f).map(|v| (*f, v)))
            .collect(),
        _ => Vec::new(),
    };
    let outcome = kplane_merge::record_update(old, new, &req);
    if let Some(o) = new.as_object_mut() {
        for (field, mut value) in set_aside {
            if field == "metadata" {
                let managed = o
                    .get_mut("metadata")
                    .and_then(Value::as_object_mut)
                    .and_then(|m| m.remove("managedFields"));
                if let Some(m) = value.as_object_mut() {
                    m.remove("managedFields");
                    if let Some(mf) = managed {
                        m.insert("managedFields".into(), mf);
                    }
                }
            }
            o.insert(field.to_string(), value);
        }
    }
    if let Err(e) = outcome {
        // As upstream: never fail a write over bookkeeping, and never keep garbage.
        tracing::warn!(error = %e.message, "managedFields could not be updated; dropping them");
        if let Some(m) = new.get_mut("metadata").and_then(Value::as_object_mut) {
            m.remove("managedFields");
        }
    }
}
