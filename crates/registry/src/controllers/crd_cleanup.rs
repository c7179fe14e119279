//! The CRD finalizer (what the apiextensions-apiserver's `crd-finalizer` does): when a CRD
//! with the `customresourcecleanup.apiextensions.k8s.io` finalizer is deleted, every custom
//! resource it served is deleted (through deletecollection's path), and then the finalizer
//! is dropped through the CRD's `/status`, recorded under kube-apiserver's field manager;
//! the update removes the CRD when no other finalizer remains (and rechecks the names of
//! the cluster's other CRDs).

use kplane_storage::{Key, Prefix};
use kplane_types::{ClusterName, ClusterScope};
use serde_json::Value;

use super::write_failed;
use super::{Controller, Named};
use crate::crd::{self, CLEANUP_FINALIZER, CRD_RESOURCE};
use crate::error::{ApiError, ApiResult};
use crate::options::{ListParams, WriteParams, APISERVER_MANAGER};
use crate::{meta, Registry, Target};

/// The controller's name in logs.
const CONTROLLER: &str = "crd-finalizer";

/// Deletes every instance of a deleted CRD, then drops its cleanup finalizer.
/// Returns false (retry) while instances remain or the write failed.
pub(crate) async fn cleanup_crd(
    reg: &Registry,
    cluster: &ClusterName,
    name: &str,
) -> ApiResult<bool> {
    let key = Key::new(cluster, CRD_RESOURCE, "", name);
    let Some((_, obj)) = reg.get_decoded(&key).await? else {
        return Ok(true);
    };
    if !meta::is_deleting(&obj) {
        return Ok(true);
    }
    let catalog = reg.cluster_catalog(cluster).await?;
    let group = obj
        .pointer("/spec/group")
        .and_then(Value::as_str)
        .unwrap_or("");
    let plural = obj
        .pointer("/status/acceptedNames/plural")
        .and_then(Value::as_str)
        .unwrap_or("");
    let storage_resource = format!("{group}/{plural}");
    // The storage version's type (its objects need no conversion to be listed).
    let is_storage = |rt: &crate::ResourceType| {
        rt.custom
            .as_ref()
            .is_none_or(|c| c.storage_version == rt.version)
    };
    let rt = catalog
        .all()
        .iter()
        .filter(|rt| rt.storage_resource == storage_resource)
        .min_by_key(|rt| !is_storage(rt))
        .cloned();
    if let Some(rt) = rt {
        let t = Target {
            cluster: ClusterScope::One(cluster.clone()),
            rt,
            namespace: None,
        };
        reg.delete_all(&t, &ListParams::default(), &Default::default())
            .await?;
    }
    let left = reg
        .count_by_prefix(&Prefix::resource(cluster, storage_resource))
        .await?;
    if left > 0 {
        return Ok(false);
    }
    if !meta::finalizers(&obj)
        .iter()
        .any(|f| f == CLEANUP_FINALIZER)
    {
        // Already dropped: the CRD waits for other parties' finalizers only.
        return Ok(true);
    }
    let crd_type = reg
        .builtin_catalog()
        .get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        .cloned()
        .ok_or_else(|| ApiError::internal("customresourcedefinitions are not registered"))?;
    let t = Target {
        cluster: ClusterScope::One(cluster.clone()),
        rt: crd_type,
        namespace: None,
    };
    // `obj` carries the resourceVersion it was read at: the update's precondition.
    let w = WriteParams::controller_named(APISERVER_MANAGER);
    match reg
        .update(
            &t,
            name,
            Some("status"),
            crd::without_cleanup_finalizer(&obj),
            &w,
        )
        .await
    {
        Ok(_) => Ok(true),
        Err(e) if e.code() == 404 => Ok(true),
        Err(e) => {
            write_failed(CONTROLLER, cluster.as_str(), &t.rt, "", name, &e);
            Ok(false)
        }
    }
}

/// The CRD finalizer: deletes a deleted CRD's custom resources, then drops its finalizer.
pub struct CrdCleanup;

impl Controller<Registry> for CrdCleanup {
    type Key = Named;

    fn name(&self) -> &'static str {
        CONTROLLER
    }

    async fn reconcile(&self, registry: &Registry, key: &Named) -> ApiResult<bool> {
        cleanup_crd(registry, &key.cluster, &key.name).await
    }
}
