//! The object rules of the sync endpoint (`/services/sync/<cluster>/<target>/...`, issue
//! 15), without HTTP: which SyncTarget a request is for and what its spec says
//! ([`TargetRef`], [`TargetSpec`]), whether an object is assigned to the target (the
//! annotation `sync.kplane.io/target: <cluster>/<target>`), whether a Secret, ConfigMap or
//! ServiceAccount is referenced by an assigned object ([`refs`], answered from an
//! informer-fed index, [`ref_index`], or failing that by reading the assigned objects), and
//! what the endpoint's identity may write ([`SyncerScope`], an admission plugin). Lists and
//! watches of the assigned objects are ordinary ones with `ListParams::annotation` set
//! ([`TargetRef::list_filter`]). The SyncTarget's spec and the names shared with the
//! SyncTarget type come from [`strategy`].

pub mod admission;
pub mod assignment;
pub mod controllers;
mod effective;
pub mod pods;
pub mod ref_index;
pub mod refs;
mod scope;
pub mod spec;
pub mod strategy;
pub mod targets;

pub use scope::{finalizer_only_change, status_only_change, SyncerScope};

use std::sync::Arc;

use kplane_types::{ClusterName, ClusterScope, Status};
use serde_json::Value;

use crate::error::{ApiError, ApiResult};
use crate::options::ListParams;
use crate::{Registry, ResourceType, Target};

pub use spec::{
    covers, SyncedResource, TargetRef, TargetSpec, SYNCER_FINALIZER, SYNCER_USER_PREFIX,
    SYNC_GROUP, TARGET_ANNOTATION,
};

/// The version of SyncTargets.
pub const SYNC_VERSION: &str = "v1alpha1";
/// The resource (plural) of SyncTargets.
pub const SYNC_TARGETS: &str = "synctargets";
/// The verb a user needs on `synctargets/<name>` to use the target's endpoint.
pub const SYNC_VERB: &str = "sync";
/// The name of a target's leader-election Lease (in `kube-system` of its cluster).
pub fn lease_name(target: &str) -> String {
    format!("kplane-syncer-{target}")
}

/// The longest token the sync endpoint issues (the TokenRequest default, what the syncer
/// asks for).
pub const MAX_TOKEN_SECONDS: i64 = 3600;

/// What a TokenRequest through the sync endpoint may ask for: a token of the default
/// audiences, bound to no object, for at most [`MAX_TOKEN_SECONDS`] (the credential of a
/// synced pod's in-cluster API access, nothing a syncer could use elsewhere or keep).
/// 403 Forbidden otherwise, naming what is not allowed.
pub fn check_token_request(obj: &Value, name: &str) -> ApiResult<()> {
    let spec = obj.get("spec");
    let field = |f: &str| spec.and_then(|s| s.get(f)).filter(|v| !v.is_null());
    let why = if field("audiences").is_some_and(|a| a.as_array().is_none_or(|a| !a.is_empty())) {
        Some("spec.audiences must be empty (the server's default audiences)".to_string())
    } else if field("boundObjectRef").is_some() {
        Some("spec.boundObjectRef must be empty".to_string())
    } else if field("expirationSeconds")
        .is_some_and(|e| e.as_i64().is_none_or(|e| e > MAX_TOKEN_SECONDS))
    {
        Some(format!(
            "spec.expirationSeconds must be at most {MAX_TOKEN_SECONDS}"
        ))
    } else {
        None
    };
    match why {
        None => Ok(()),
        Some(why) => Err(ApiError::from(Status::forbidden(
            "",
            "serviceaccounts/token",
            name,
            &format!("the sync endpoint issues only tokens for synced pods: {why}"),
        ))),
    }
}

/// The clusters a list or watch of a target's assigned objects reads: the target cluster's
/// subtree. (Without `includeDescendants` only the target's own cluster holds assigned
/// objects; the subtree scope is what gives every item the `kplane.io/cluster`
/// annotation, and the annotation filter keeps exactly the assigned ones.)
pub fn list_scope(target_cluster: &ClusterName) -> ClusterScope {
    ClusterScope::subtree(target_cluster.clone())
}

impl Registry {
    /// The index of what assigned objects refer to (fed by the informer).
    pub(crate) fn sync_ref_index(&self) -> &Arc<ref_index::RefIndex> {
        &self.sync_refs
    }

    /// The SyncTarget type, when served.
    fn sync_target_type(&self) -> ApiResult<Arc<ResourceType>> {
        self.builtin_catalog()
            .get(SYNC_GROUP, SYNC_VERSION, SYNC_TARGETS)
            .cloned()
            .ok_or_else(ApiError::not_found_path)
    }

    /// Whether an object assigned to `t` in `cluster`/`namespace` (of a namespaced
    /// resource in `spec`, in a cluster the target covers) is `wanted`. Asks the
    /// informer-fed index first (`indexed`, per (target, cluster, namespace, resource)
    /// group, [`ref_index`]); on a miss reads the namespace's assigned objects in batches
    /// (an annotation-filtered list), stopping at the first that is wanted.
    async fn sync_any_assigned(
        &self,
        cluster: &ClusterName,
        namespace: &str,
        t: &TargetRef,
        spec: &TargetSpec,
        indexed: impl Fn(&ref_index::RefIndex, (&str, &str, &str, &str)) -> bool,
        wanted: impl Fn(&Value) -> bool,
    ) -> ApiResult<bool> {
        if !covers(spec, &t.cluster, cluster) {
            return Ok(false);
        }
        let id = t.id();
        let catalog = self
            .catalog_for(&ClusterScope::One(cluster.clone()))
            .await?;
        let types: Vec<Arc<ResourceType>> = spec
            .resources
            .iter()
            .filter_map(|r| catalog.get(&r.group, &r.version, &r.resource).cloned())
            .filter(|rt| rt.namespaced)
            .collect();
        let group = |rt: &ResourceType| -> bool {
            indexed(
                &self.sync_refs,
                (
                    id.as_str(),
                    cluster.as_str(),
                    namespace,
                    rt.storage_resource.as_str(),
                ),
            )
        };
        if types.iter().any(|rt| group(rt)) {
            return Ok(true);
        }
        for rt in types {
            let target = Target::new(cluster, rt, Some(namespace.to_string()));
            let mut p = ListParams::default();
            t.list_filter(&mut p);
            let mut page = self.list(&target, &p).await?;
            while let Some(batch) = page.next_batch().await? {
                for item in batch {
                    let Ok(obj) = serde_json::from_slice::<Value>(&item) else {
                        continue;
                    };
                    if wanted(&obj) {
                        return Ok(true);
                    }
                }
            }
        }
        Ok(false)
    }
}

/// What the sync endpoint asks of the registry: a SyncTarget's spec and whether an object,
/// namespace, referenced object or pod is its syncer's to read or write.
#[derive(Clone, Copy, Debug)]
pub struct SyncChecks<'a>(&'a Registry);

impl Registry {
    /// The sync endpoint's checks of what a SyncTarget's syncer may read and write ([`SyncChecks`]).
    pub fn sync_checks(&self) -> SyncChecks<'_> {
        SyncChecks(self)
    }
}

impl SyncChecks<'_> {
    /// Reads the SyncTarget `t` (404 when it does not exist, or SyncTargets are not served).
    pub async fn target_spec(&self, t: &TargetRef) -> ApiResult<TargetSpec> {
        let rt = self.0.sync_target_type()?;
        let target = Target::new(&t.cluster, rt, None);
        let bytes = self.0.get(&target, &t.name).await?;
        let obj: Value = serde_json::from_slice(&bytes).map_err(|e| super::corrupt(&e))?;
        Ok(TargetSpec::of(&obj))
    }

    /// Checks that object `name` of `target` (one cluster) is assigned to `t`; the
    /// object's ordinary 404 otherwise (the endpoint tells nothing about other objects).
    pub async fn check_assigned(
        &self,
        target: &Target,
        name: &str,
        t: &TargetRef,
    ) -> ApiResult<()> {
        let not_found =
            || ApiError::from(Status::not_found(&target.rt.group, &target.rt.plural, name));
        let Some(kv) = self.0.get_stored(target, name).await? else {
            return Err(not_found());
        };
        let obj: Value = serde_json::from_slice(&kv.value).map_err(|e| super::corrupt(&e))?;
        if t.assigns(&obj) {
            Ok(())
        } else {
            Err(not_found())
        }
    }

    /// Checks that `cluster`/`namespace` holds an object assigned to `t` (of a resource in
    /// `spec`): that namespace's NetworkPolicies govern those objects' pods on the host, so
    /// the syncer may list them. The collection's 404 otherwise.
    pub async fn check_namespace_assigned(
        &self,
        cluster: &ClusterName,
        namespace: &str,
        t: &TargetRef,
        spec: &TargetSpec,
    ) -> ApiResult<()> {
        let found = self
            .0
            .sync_any_assigned(
                cluster,
                namespace,
                t,
                spec,
                |index, group| index.has_group(group),
                |_| true,
            )
            .await?;
        found.then_some(()).ok_or_else(ApiError::not_found_path)
    }

    /// Checks that `name` of `kind` in `cluster`/`namespace` is referenced by the pod
    /// template of an object assigned to `t` in that namespace (of any resource in
    /// `spec`); its ordinary 404 otherwise.
    pub async fn check_referenced(
        &self,
        cluster: &ClusterName,
        namespace: &str,
        kind: refs::RefKind,
        name: &str,
        t: &TargetRef,
        spec: &TargetSpec,
    ) -> ApiResult<()> {
        let found = self
            .0
            .sync_any_assigned(
                cluster,
                namespace,
                t,
                spec,
                |index, group| index.contains(group, kind, name),
                |obj| refs::of_object(obj).contains(kind, name),
            )
            .await?;
        found
            .then_some(())
            .ok_or_else(|| ApiError::from(Status::not_found("", kind.resource(), name)))
    }
}

#[cfg(test)]
mod tests;
