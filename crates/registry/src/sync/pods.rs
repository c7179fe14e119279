//! Pods through the sync endpoint: the reflections of a target's host pods (docs/sync.md,
//! "Pods, reflected from the host"). A reflection carries the target's annotation
//! `sync.kplane.io/target: <cluster>/<target>` and a controller ownerReference to the Job
//! it belongs to, which must be assigned to the same target: that is what lets the
//! target's syncer create it ([`SyncChecks::check_pod_owner`](super::SyncChecks::check_pod_owner), asked by the endpoint
//! before the write and by `SyncerScope` at write time), and the annotation alone is what
//! lets it read, update and delete it afterwards.

use kplane_types::{ClusterName, ClusterScope, Status};
use serde_json::Value;

use super::spec::TARGET_ANNOTATION;
use crate::error::{ApiError, ApiResult};
use crate::{Registry, Target};

/// Whether a resource is core/v1 pods.
pub fn is_pods(group: &str, version: &str, resource: &str) -> bool {
    group.is_empty() && version == "v1" && resource == "pods"
}

/// The target id a pod's annotation names ("" without one).
pub fn target_of(pod: &Value) -> &str {
    pod.pointer("/metadata/annotations")
        .and_then(|a| a.get(TARGET_ANNOTATION))
        .and_then(Value::as_str)
        .unwrap_or("")
}

/// The name and uid of the Job a pod's controller ownerReference names (batch/v1 Job,
/// `controller: true`).
pub fn owner_job(pod: &Value) -> Option<(&str, &str)> {
    let refs = pod.pointer("/metadata/ownerReferences")?.as_array()?;
    let owner = refs
        .iter()
        .find(|r| r.get("controller") == Some(&Value::Bool(true)))?;
    let field = |k: &str| owner.get(k).and_then(Value::as_str).unwrap_or("");
    (field("apiVersion") == "batch/v1" && field("kind") == "Job")
        .then(|| (field("name"), field("uid")))
}

fn forbidden(name: &str, why: &str) -> ApiError {
    ApiError::from(Status::forbidden("", "pods", name, why))
}

impl Registry {
    /// Whether the SyncTarget `id` (`<cluster>/<target>`) reflects chosen host pods into
    /// `cluster`/`namespace` (`spec.reflectPods`, into a cluster it covers).
    pub(crate) async fn sync_reflects_pods_into(
        &self,
        id: &str,
        cluster: &ClusterName,
        namespace: &str,
    ) -> ApiResult<bool> {
        let Some((target_cluster, name)) = id.rsplit_once('/') else {
            return Ok(false);
        };
        let Some(target_cluster) = ClusterName::parse(target_cluster) else {
            return Ok(false);
        };
        let t = super::spec::TargetRef {
            cluster: target_cluster.clone(),
            name: name.to_string(),
        };
        let spec = self.sync_checks().target_spec(&t).await?;
        Ok(super::spec::covers(&spec, &target_cluster, cluster)
            && spec.reflects_pods_into(target_cluster.as_str(), cluster.as_str(), namespace))
    }
}

impl super::SyncChecks<'_> {
    /// Checks that `pod`, to be created in `cluster`/`namespace` by the syncer of target
    /// `id` (`<cluster>/<target>`), is a reflection of one of that target's pods: it carries
    /// the target's annotation and a controller ownerReference to a Job of the namespace
    /// (by name and uid) that is assigned to the target. 403 Forbidden otherwise, saying
    /// which part is missing.
    pub async fn check_pod_owner(
        &self,
        cluster: &ClusterName,
        namespace: &str,
        pod: &Value,
        id: &str,
    ) -> ApiResult<()> {
        let name = pod
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("");
        if target_of(pod) != id {
            return Err(forbidden(
                name,
                &format!("a pod created through the sync endpoint must carry the annotation {TARGET_ANNOTATION}: {id}"),
            ));
        }
        let Some((job, uid)) = owner_job(pod) else {
            // A host pod the SyncTarget's `spec.reflectPods` chooses (an operator's own).
            if pod.pointer("/metadata/ownerReferences").is_none()
                && self
                    .0
                    .sync_reflects_pods_into(id, cluster, namespace)
                    .await?
            {
                return Ok(());
            }
            return Err(forbidden(
                name,
                "a pod created through the sync endpoint must have a controller ownerReference to a batch/v1 Job, or be in a namespace the sync target's spec.reflectPods names",
            ));
        };
        let not_assigned = || {
            forbidden(
                name,
                &format!("the owner Job {namespace}/{job} (uid {uid}) is not a Job assigned to the sync target {id}"),
            )
        };
        let catalog = self
            .0
            .catalog_for(&ClusterScope::One(cluster.clone()))
            .await?;
        let Some(jobs) = catalog.get("batch", "v1", "jobs").cloned() else {
            return Err(not_assigned());
        };
        let target = Target::new(cluster, jobs, Some(namespace.to_string()));
        let Some(kv) = self.0.get_stored(&target, job).await? else {
            return Err(not_assigned());
        };
        let stored: Value = serde_json::from_slice(&kv.value).map_err(|e| crate::corrupt(&e))?;
        let stored_uid = stored
            .pointer("/metadata/uid")
            .and_then(Value::as_str)
            .unwrap_or("");
        if stored_uid != uid || target_of(&stored) != id {
            return Err(not_assigned());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests;
