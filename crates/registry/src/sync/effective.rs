//! Which SyncTargets an object may go to, read through the registry: a cluster's
//! effective targets ([`crate::sync::targets::Cache`], built on a miss from the parent's
//! entry and one read of the cluster's own SyncTargets) and the one rule of assignment.

use std::sync::Arc;

use kplane_storage::{Key, ListOptions, Prefix};
use kplane_types::ClusterName;
use serde_json::{Map, Value};

use crate::error::ApiResult;
use crate::sync::spec::{TargetSpec, SYNC_TARGET_RESOURCE};
use crate::sync::targets::{Applicable, Cache, Effective, EMPTY};
use crate::Registry;

impl Registry {
    /// The SyncTarget cache (shared with the informer's invalidator).
    pub(crate) fn sync_target_cache(&self) -> &Arc<Cache> {
        &self.sync_targets
    }

    /// The SyncTargets that apply to objects of `cluster`, nearest cluster first: the
    /// cluster's own, then each ancestor's with `includeDescendants` (targets being
    /// deleted included: callers skip them).
    pub(crate) async fn effective_sync_targets(
        &self,
        cluster: &ClusterName,
    ) -> ApiResult<Effective> {
        if let Some(e) = self.sync_targets.get(cluster.as_str()) {
            return Ok(e);
        }
        // Taken before any read, so that nothing read before an invalidation is stored.
        let generation = self.sync_targets.generation();
        // The uncached chain, nearest first, up to the first cached ancestor.
        let mut chain = vec![cluster.clone()];
        let mut inherited = EMPTY.clone();
        let mut up = cluster.parent();
        while let Some(p) = up {
            if let Some(e) = self.sync_targets.get(p.as_str()) {
                inherited = e;
                break;
            }
            up = p.parent();
            chain.push(p);
        }
        let mut result = inherited;
        for c in chain.iter().rev() {
            let mut list = self.own_sync_targets(c).await?;
            list.extend(
                result
                    .iter()
                    .filter(|a| a.spec.include_descendants)
                    .cloned(),
            );
            result = self.sync_targets.insert(c.as_str(), list, generation);
        }
        Ok(result)
    }

    /// Caches the SyncTargets of `cluster` before it comes into being (it holds no object
    /// and nothing can be written into it yet, so it has none of its own): those its
    /// ancestors pass down. Spares the bootstrap's first create a read of its empty
    /// SyncTargets. Nothing is cached when an ancestor's cannot be read.
    pub(crate) async fn cache_sync_targets_of_new_cluster(&self, cluster: &ClusterName) {
        if self.sync_targets.get(cluster.as_str()).is_some() {
            return;
        }
        let generation = self.sync_targets.generation();
        let inherited = match cluster.parent() {
            Some(p) => match self.effective_sync_targets(&p).await {
                Ok(e) => e,
                Err(_) => return,
            },
            None => EMPTY.clone(),
        };
        let list = inherited
            .iter()
            .filter(|a| a.spec.include_descendants)
            .cloned()
            .collect();
        self.sync_targets.insert(cluster.as_str(), list, generation);
    }

    /// The SyncTargets an object of `group`/`resource` created in `cluster` (in
    /// `namespace`, `None` for a cluster-scoped one) may go to, in the order of
    /// preference: the first is the one the `SyncAssignment` plugin picks. Leaves out
    /// targets being deleted, those that do not sync the resource (in any version), and
    /// those whose `namespaceSelector` does not match the namespace's labels (a
    /// cluster-scoped object matches only targets without a selector).
    #[cfg(test)]
    pub(crate) async fn applicable_sync_targets(
        &self,
        cluster: &ClusterName,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
    ) -> ApiResult<Vec<Arc<Applicable>>> {
        self.applicable_sync_targets_in(cluster, group, resource, namespace, None)
            .await
    }

    /// The SyncTargets an object of `group`/`resource` created in `cluster` may go to (see
    /// `applicable_sync_targets`), the namespace given as `new_namespace` when it is not
    /// stored yet (written in the same batch, before the object).
    pub(crate) async fn applicable_sync_targets_in(
        &self,
        cluster: &ClusterName,
        group: &str,
        resource: &str,
        namespace: Option<&str>,
        new_namespace: Option<&Value>,
    ) -> ApiResult<Vec<Arc<Applicable>>> {
        let effective = self.effective_sync_targets(cluster).await?;
        let candidates: Vec<&Arc<Applicable>> = effective
            .iter()
            .filter(|t| !t.spec.deleting && t.spec.syncs_resource(group, resource))
            .collect();
        if candidates.is_empty() {
            return Ok(Vec::new());
        }
        let labels = match namespace {
            Some(ns)
                if candidates
                    .iter()
                    .any(|t| t.spec.namespace_selector.is_some()) =>
            {
                match new_namespace {
                    Some(obj) => labels_of(obj),
                    None => self.namespace_labels(cluster, ns).await?,
                }
            }
            _ => Map::new(),
        };
        Ok(candidates
            .into_iter()
            .filter(|t| {
                crate::sync::assignment::applies(t, group, resource, namespace.is_some(), &labels)
            })
            .cloned()
            .collect())
    }

    /// The labels of namespace `ns` of `cluster` (none when it does not exist: a missing
    /// namespace is the NamespaceLifecycle plugin's business).
    async fn namespace_labels(
        &self,
        cluster: &ClusterName,
        ns: &str,
    ) -> ApiResult<Map<String, Value>> {
        let nst = self.namespace_type()?;
        let key = Key::new(cluster.as_str(), nst.storage_resource.as_str(), "", ns);
        let Some(kv) = self.storage.get(&key).await? else {
            return Ok(Map::new());
        };
        let obj: Value = serde_json::from_slice(&kv.value).map_err(|e| crate::corrupt(&e))?;
        Ok(labels_of(&obj))
    }

    /// `cluster`'s own SyncTargets, by name.
    async fn own_sync_targets(&self, cluster: &ClusterName) -> ApiResult<Vec<Arc<Applicable>>> {
        let prefix = Prefix::resource(cluster.as_str(), SYNC_TARGET_RESOURCE);
        let res = self
            .storage
            .list(&prefix, &ListOptions::default(), None)
            .await?;
        Ok(res
            .items
            .iter()
            .filter_map(|kv| serde_json::from_slice::<Value>(&kv.value).ok())
            .map(|obj| {
                Arc::new(Applicable {
                    cluster: cluster.clone(),
                    spec: TargetSpec::of(&obj),
                })
            })
            .collect())
    }

    /// After a SyncTarget write in `cluster` (its write hooks): re-reads `name` and
    /// drops the cached entries it changes; `None` when it is gone.
    pub(crate) async fn sync_target_written(&self, cluster: &ClusterName, name: &str) {
        let key = Key::new(cluster.as_str(), SYNC_TARGET_RESOURCE, "", name);
        match self.storage.get(&key).await {
            Ok(Some(kv)) => match serde_json::from_slice::<Value>(&kv.value) {
                Ok(obj) => self.sync_targets.observe(cluster.as_str(), &obj),
                Err(_) => self.sync_targets.invalidate(cluster.as_str()),
            },
            _ => self.sync_targets.invalidate(cluster.as_str()),
        }
    }
}

/// An object's labels.
fn labels_of(obj: &Value) -> Map<String, Value> {
    obj.pointer("/metadata/labels")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default()
}
