//! Whole-target passes over the host: the resync sweep (host objects whose source no
//! longer exists, copies nothing references any more) and the drain when the SyncTarget is
//! deleted (every host object of the target, then its namespaces).

use std::collections::BTreeSet;

use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, ListParams};
use serde_json::Value;

use crate::copies::{self, core_resource, key_of_copy};
use crate::error::{is_status, Error, KubeContext as _, Result};
use crate::kinds::SyncedKind;
use crate::naming::{
    HostLayout, TargetRef, CLUSTER_ANNOTATION, NAMESPACE_ANNOTATION, NAME_ANNOTATION,
    TARGET_ANNOTATION, UID_ANNOTATION,
};
use crate::policies;
use crate::state::{annotation, Compact, CopyKey, ObjectKey, State};
use kplane_types::pod_refs::{self, RefKind};

/// Page size of host lists.
const PAGE: u32 = 500;

/// The API of `ar` on the host, in the shared host namespace or across namespaces.
fn host_scope(host: &kube::Client, layout: &HostLayout, ar: &ApiResource) -> Api<DynamicObject> {
    match layout {
        HostLayout::Shared(ns) => Api::namespaced_with(host.clone(), ns, ar),
        HostLayout::PerNamespace => Api::all_with(host.clone(), ar),
    }
}

/// Every host object of `api` with the target's label and annotation, paged.
async fn list_ours(api: &Api<DynamicObject>, target: &TargetRef, what: &str) -> Result<Vec<Value>> {
    let mut out = Vec::new();
    let mut params = ListParams::default()
        .labels(&target.label_selector())
        .limit(PAGE);
    let want = target.annotation();
    loop {
        let page = api
            .list(&params)
            .await
            .ctx(|| format!("listing host {what}"))?;
        for item in page.items {
            let v = serde_json::to_value(item).unwrap_or(Value::Null);
            if annotation(&v, TARGET_ANNOTATION) == Some(want.as_str()) {
                out.push(v);
            }
        }
        match page.metadata.continue_ {
            Some(c) if !c.is_empty() => params = params.continue_token(&c),
            _ => break,
        }
    }
    Ok(out)
}

/// A string field of an object's metadata ("" when absent).
fn meta_str<'a>(obj: &'a Value, field: &str) -> &'a str {
    obj.get("metadata")
        .and_then(|m| m.get(field))
        .and_then(Value::as_str)
        .unwrap_or_default()
}

async fn delete(api: &Api<DynamicObject>, obj: &Value) -> Result<()> {
    let name = meta_str(obj, "name");
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => Ok(()),
        Err(e) if is_status(&e, 404) => Ok(()),
        Err(e) => Err(e).ctx(|| format!("deleting host object {name}")),
    }
}

fn in_namespace(
    api: &Api<DynamicObject>,
    host: &kube::Client,
    obj: &Value,
    ar: &ApiResource,
) -> Api<DynamicObject> {
    match obj.pointer("/metadata/namespace").and_then(Value::as_str) {
        Some(ns) => Api::namespaced_with(host.clone(), ns, ar),
        None => api.clone(),
    }
}

/// Removes host objects whose source is gone (for kinds listed once) and copies that no
/// cached object references (once every kind is listed).
pub async fn sweep(state: &State) -> Result<()> {
    for (i, kind) in state.kinds.iter().enumerate() {
        if !state.listed[i].load(std::sync::atomic::Ordering::Acquire) {
            continue;
        }
        let ar = kind.api_resource();
        let api = host_scope(&state.host, &state.layout, &ar);
        for obj in list_ours(&api, &state.target, &ar.plural).await? {
            let key = (|| {
                Some(ObjectKey {
                    kind: i,
                    cluster: annotation(&obj, CLUSTER_ANNOTATION)?.to_owned(),
                    namespace: annotation(&obj, NAMESPACE_ANNOTATION)?.to_owned(),
                    name: annotation(&obj, NAME_ANNOTATION)?.to_owned(),
                })
            })();
            let Some(key) = key else { continue };
            if state.is_cached(&key) {
                continue;
            }
            delete(&in_namespace(&api, &state.host, &obj, &ar), &obj).await?;
            tracing::info!(cluster = %key.cluster, namespace = %key.namespace, name = %key.name,
                uid = annotation(&obj, UID_ANNOTATION).unwrap_or_default(),
                "resync: deleted the host {} whose source no longer exists", ar.kind);
            state.mark_synced(&key, false);
        }
    }
    if !state.all_listed() {
        return Ok(());
    }
    // Copied out (cheap: shared text), parsed without the lock.
    let cached: Vec<(ObjectKey, Compact)> = state
        .cache
        .lock()
        .map_err(|_| Error::Retry("cache lock poisoned".into()))?
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let mut referenced: BTreeSet<CopyKey> = BTreeSet::new();
    for (key, obj) in cached {
        let Some(pointer) = state.kinds[key.kind].pod_spec_pointer() else {
            continue;
        };
        let obj = obj.value();
        let refs = obj
            .pointer(pointer)
            .map(pod_refs::extract)
            .unwrap_or_default();
        referenced.extend(refs.into_iter().map(|r| CopyKey {
            kind: r.kind,
            cluster: key.cluster.clone(),
            namespace: key.namespace.clone(),
            name: r.name,
        }));
    }
    for kind in RefKind::ALL {
        let ar = core_resource(kind);
        let api = host_scope(&state.host, &state.layout, &ar);
        for obj in list_ours(&api, &state.target, kind.resource()).await? {
            let Some(key) = key_of_copy(kind, &obj) else {
                continue;
            };
            if referenced.contains(&key) {
                continue;
            }
            let _guard = state.copy_lock.lock().await;
            let used = state
                .refs
                .lock()
                .map(|r| r.values().any(|s| s.contains(&key)))
                .unwrap_or(true);
            if !used {
                copies::remove(state, &key).await?;
            }
        }
    }
    // NetworkPolicies of source namespaces without a synced object left.
    let ar = policies::resource();
    let api = host_scope(&state.host, &state.layout, &ar);
    let mut released = BTreeSet::new();
    for obj in list_ours(&api, &state.target, "networkpolicies").await? {
        let (Some(cluster), Some(namespace)) = (
            annotation(&obj, CLUSTER_ANNOTATION),
            annotation(&obj, NAMESPACE_ANNOTATION),
        ) else {
            continue;
        };
        if released.insert((cluster.to_owned(), namespace.to_owned())) {
            policies::release_namespace(state, cluster, namespace).await?;
        }
    }
    Ok(())
}

/// Removes every host object of the target: synced objects, copies, and (per-namespace
/// layout) the host namespaces the syncer created. `Ok(n)`: how many synced objects were
/// still there.
pub async fn drain(
    host: &kube::Client,
    target: &TargetRef,
    layout: &HostLayout,
    kinds: &[std::sync::Arc<dyn SyncedKind>],
) -> Result<usize> {
    let mut found = 0;
    for kind in kinds {
        let ar = kind.api_resource();
        let api = host_scope(host, layout, &ar);
        for obj in list_ours(&api, target, &ar.plural).await? {
            found += 1;
            delete(&in_namespace(&api, host, &obj, &ar), &obj).await?;
            tracing::info!(
                host_namespace = meta_str(&obj, "namespace"),
                host_name = meta_str(&obj, "name"),
                "drain: deleted the host {}",
                ar.kind
            );
        }
    }
    let policy = policies::resource();
    let api = host_scope(host, layout, &policy);
    for obj in list_ours(&api, target, "networkpolicies").await? {
        delete(&in_namespace(&api, host, &obj, &policy), &obj).await?;
        tracing::info!(
            host_namespace = meta_str(&obj, "namespace"),
            host_name = meta_str(&obj, "name"),
            "drain: deleted the host NetworkPolicy"
        );
    }
    for kind in RefKind::ALL {
        let ar = core_resource(kind);
        let api = host_scope(host, layout, &ar);
        for obj in list_ours(&api, target, kind.resource()).await? {
            delete(&in_namespace(&api, host, &obj, &ar), &obj).await?;
            tracing::info!(
                host_namespace = meta_str(&obj, "namespace"),
                host_name = meta_str(&obj, "name"),
                "drain: deleted the host {}",
                kind.kind()
            );
        }
    }
    if *layout == HostLayout::PerNamespace {
        let ar = ApiResource::from_gvk_with_plural(
            &kube::api::GroupVersionKind::gvk("", "v1", "Namespace"),
            "namespaces",
        );
        let api: Api<DynamicObject> = Api::all_with(host.clone(), &ar);
        for obj in list_ours(&api, target, "namespaces").await? {
            if obj.pointer("/metadata/deletionTimestamp").is_some() {
                continue;
            }
            delete(&api, &obj).await?;
            tracing::info!(
                host_namespace = meta_str(&obj, "name"),
                "drain: deleted the host namespace"
            );
        }
    }
    Ok(found)
}
