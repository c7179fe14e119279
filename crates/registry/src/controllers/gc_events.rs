//! The Warning Event Kubernetes' garbage collector reports when an owner reference points
//! at a namespaced owner that lives outside the dependent's namespace (a cluster-scoped
//! dependent, or a namespaced one naming an owner in another namespace): reason
//! `OwnerRefInvalidNamespace`, source `garbage-collector-controller`, on the dependent.
//!
//! Like upstream, the Event is reported only when an object with the reference's uid is
//! actually found elsewhere; a reference to nothing at all is simply an absent owner.

use kplane_storage::Prefix;
use kplane_types::ClusterScope;
use serde_json::{json, Value};

use super::gc::{ObjRef, OwnerRef};
use crate::error::ApiResult;
use crate::options::WriteParams;
use crate::{meta, Registry, ResourceType, Target};

/// The event source (and reporting controller) of the garbage collector's Events.
const COMPONENT: &str = "garbage-collector-controller";
pub const REASON: &str = "OwnerRefInvalidNamespace";

/// The Event's message, as upstream formats its owner identity.
pub fn message(o: &OwnerRef, dep_namespace: &str) -> String {
    format!(
        "ownerRef [{}/{}, namespace: {dep_namespace}, name: {}, uid: {}] does not exist in namespace \"{dep_namespace}\"",
        o.api_version, o.kind, o.name, o.uid
    )
}

/// Whether an object of `rt` named like the reference, with its uid, exists in a
/// namespace of the dependent's cluster other than the dependent's own.
pub(super) async fn owner_elsewhere(
    reg: &Registry,
    dep: &ObjRef,
    rt: &ResourceType,
    o: &OwnerRef,
) -> ApiResult<bool> {
    let namespaces = reg
        .list_by_prefix(
            &Prefix::resource(
                dep.cluster.clone(),
                reg.namespace_type()?.storage_resource.clone(),
            ),
            &Default::default(),
            None,
        )
        .await?;
    for ns in namespaces.items.iter().map(|kv| &kv.key.name) {
        if *ns == dep.namespace {
            continue;
        }
        let found = crate::controllers::gc::stored_head(reg, &dep.cluster, rt, ns, &o.name).await?;
        if found.is_some_and(|m| m.uid == o.uid) {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Records the `OwnerRefInvalidNamespace` Warning on the dependent `obj`. Like
/// upstream's event recorder, a failure is logged and not retried.
pub(super) async fn report_invalid_namespace(
    reg: &Registry,
    dep: &ObjRef,
    obj: &Value,
    o: &OwnerRef,
) {
    if let Err(e) = try_report_invalid_namespace(reg, dep, obj, o).await {
        tracing::warn!(
            controller = COMPONENT,
            cluster = %dep.cluster,
            resource = dep.resource,
            namespace = dep.namespace,
            name = dep.name,
            code = e.code(),
            error = %e.0.message,
            "could not record an OwnerRefInvalidNamespace event"
        );
    }
}

async fn try_report_invalid_namespace(
    reg: &Registry,
    dep: &ObjRef,
    obj: &Value,
    o: &OwnerRef,
) -> ApiResult<()> {
    let catalog = reg.cluster_catalog(&dep.cluster).await?;
    let Some(rt) = catalog.get("", "v1", "events").cloned() else {
        return Ok(());
    };
    let now = chrono::Utc::now();
    let at = meta::now_time();
    let name = meta::name_of(obj);
    let event_ns = if dep.namespace.is_empty() {
        "default"
    } else {
        dep.namespace.as_str()
    };
    let mut involved = json!({
        "kind": obj.get("kind").cloned().unwrap_or_default(),
        "name": name,
        "uid": meta::meta_str(obj, "uid").unwrap_or(""),
        "apiVersion": obj.get("apiVersion").cloned().unwrap_or_default(),
    });
    if !dep.namespace.is_empty() {
        involved["namespace"] = json!(dep.namespace);
    }
    let event = json!({
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            "name": format!("{name}.{:x}", now.timestamp_nanos_opt().unwrap_or(0)),
            "namespace": event_ns,
        },
        "involvedObject": involved,
        "reason": REASON,
        "message": message(o, &dep.namespace),
        "source": {"component": COMPONENT},
        "firstTimestamp": at,
        "lastTimestamp": at,
        "count": 1,
        "type": "Warning",
        "reportingComponent": COMPONENT,
        "reportingInstance": "",
    });
    let t = Target {
        cluster: ClusterScope::One(dep.cluster.clone()),
        rt,
        namespace: Some(event_ns.to_string()),
    };
    reg.create(&t, event, &WriteParams::controller()).await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn message_matches_upstream_format() {
        let o = OwnerRef {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            name: "owner".into(),
            uid: "u-1".into(),
        };
        assert_eq!(
            message(&o, ""),
            "ownerRef [v1/ConfigMap, namespace: , name: owner, uid: u-1] does not exist in namespace \"\""
        );
        assert_eq!(
            message(&o, "b"),
            "ownerRef [v1/ConfigMap, namespace: b, name: owner, uid: u-1] does not exist in namespace \"b\""
        );
    }
}
