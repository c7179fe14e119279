//! The SyncTargets that apply to each logical cluster, cached for the `SyncAssignment`
//! admission plugin (`admission::sync_assignment`), which asks on every create, and
//! [`Registry::applicable_sync_targets_in`]: the targets one object may go to, in order (the
//! one rule of assignment, for the plugin and the sync controllers alike).
//!
//! A cluster's entry is its *effective* list: its own SyncTargets (by name), then those of
//! its parent that have `includeDescendants`, then the grandparent's, up to `root` —
//! nearest cluster first, the order in which the first applicable target wins. It is
//! built from the parent's entry plus one read of the cluster's own SyncTargets, so each
//! cluster is read once; a cluster without any applicable target shares one empty entry.
//! In the steady state a create costs one hash lookup under a read lock.
//!
//! Invalidation: a SyncTarget change in cluster C drops C's entry and every descendant's
//! (`C:...`), synchronously from the SyncTarget strategy's after-write hooks (a client's
//! next create sees its own target) and from the shared informer for every path that
//! bypasses them (a workspace's cluster deletion). Writes that leave what the assignment
//! reads unchanged (the syncer's heartbeats through `/status`) invalidate nothing. A
//! generation counter keeps a build that raced with an invalidation from being stored, and
//! the map is bounded ([`ClusterCache`]).

use std::sync::{Arc, LazyLock};

use kplane_storage::{Key, KeyValue, ListOptions, Prefix};
use kplane_types::ClusterName;
use serde_json::{Map, Value};

use crate::cluster_cache::ClusterCache;
use crate::controllers::informer::InformerHandler;
use crate::error::ApiResult;
use crate::sync::strategy::{TargetSpec, SYNC_TARGET_RESOURCE};
use crate::Registry;

/// One target as seen from a cluster: the cluster it lives in, and its spec.
#[derive(Clone, Debug, PartialEq)]
pub struct Applicable {
    pub cluster: ClusterName,
    pub spec: TargetSpec,
}

impl Applicable {
    /// The assignment annotation's value for this target: `<cluster>/<name>`.
    pub fn reference(&self) -> String {
        format!("{}/{}", self.cluster, self.spec.name)
    }
}

/// A cluster's effective SyncTargets, nearest cluster first (see the module doc). The
/// targets are shared: an ancestor's target is one allocation however many clusters
/// below it hold it.
pub type Effective = Arc<[Arc<Applicable>]>;

static EMPTY: LazyLock<Effective> = LazyLock::new(|| Arc::from(Vec::new()));

/// Effective SyncTargets by logical cluster name.
#[derive(Debug, Default)]
pub struct Cache(ClusterCache<Effective>);

impl Cache {
    /// The cached entry of `cluster`.
    pub fn get(&self, cluster: &str) -> Option<Effective> {
        self.0.get(cluster)
    }

    /// The generation to pass to [`Cache::insert`] for a build starting now.
    pub fn generation(&self) -> u64 {
        self.0.generation()
    }

    /// Caches the entry built from what was read after `generation` was taken, unless an
    /// invalidation came in between; returns the entry to use (empty ones shared).
    pub fn insert(&self, cluster: &str, list: Vec<Arc<Applicable>>, generation: u64) -> Effective {
        let list = if list.is_empty() {
            EMPTY.clone()
        } else {
            Arc::from(list)
        };
        self.0.insert(cluster, list, generation)
    }

    /// Forgets the entries of `cluster` and of every cluster below it.
    pub fn invalidate(&self, cluster: &str) {
        self.0.invalidate_subtree(cluster);
    }

    /// Forgets `cluster`'s subtree if the stored SyncTarget `obj` of `cluster` reads
    /// differently from what the cache holds of it (a new, changed or deleted target).
    pub fn observe(&self, cluster: &str, obj: &Value) {
        let Some(entry) = self.get(cluster) else {
            // Nothing below an uncached cluster is cached (entries build top-down).
            return;
        };
        let spec = TargetSpec::of(obj);
        let cached = entry
            .iter()
            .find(|a| a.cluster.as_str() == cluster && a.spec.name == spec.name);
        if cached.map(|a| &a.spec) != Some(&spec) {
            self.invalidate(cluster);
        }
    }

    /// Forgets every entry.
    pub fn clear(&self) {
        self.0.clear();
    }

    /// Entries built from storage so far (tests, metrics).
    pub fn builds(&self) -> u64 {
        self.0.builds()
    }

    /// Logical clusters with a cached entry.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether no entry is cached.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Invalidates from the shared informer: any SyncTarget change, whatever wrote it.
#[derive(Debug)]
pub struct Invalidator(pub Arc<Cache>);

impl InformerHandler for Invalidator {
    fn on_resync(&self) {
        self.0.clear();
    }

    fn on_object(&self, kv: &KeyValue, deleted: bool, replay: bool) {
        if replay || kv.key.resource != SYNC_TARGET_RESOURCE {
            return;
        }
        match serde_json::from_slice::<Value>(&kv.value) {
            Ok(obj) if !deleted => self.0.observe(&kv.key.cluster, &obj),
            _ => self.0.invalidate(&kv.key.cluster),
        }
    }
}

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

    /// After a SyncTarget write in `cluster` (the strategy's hooks): re-reads `name` and
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn applicable(cluster: &str, name: &str, descendants: bool) -> Arc<Applicable> {
        Arc::new(Applicable {
            cluster: ClusterName::parse(cluster).unwrap(),
            spec: TargetSpec::of(&json!({"metadata": {"name": name},
                                         "spec": {"includeDescendants": descendants}})),
        })
    }

    #[test]
    fn invalidation_drops_the_subtree_only() {
        let c = Cache::default();
        for cl in ["root", "root:a", "root:a:b", "root:ab", "root:c"] {
            let g = c.generation();
            c.insert(cl, vec![applicable(cl, "t", false)], g);
        }
        c.invalidate("root:a");
        assert!(c.get("root").is_some());
        assert!(c.get("root:a").is_none());
        assert!(c.get("root:a:b").is_none());
        assert!(c.get("root:ab").is_some());
        assert!(c.get("root:c").is_some());
        c.invalidate("root");
        assert!(c.is_empty());
    }

    #[test]
    fn a_build_that_raced_with_an_invalidation_is_not_kept() {
        let c = Cache::default();
        let g = c.generation();
        c.invalidate("root");
        let e = c.insert("root", vec![applicable("root", "t", false)], g);
        assert_eq!(e.len(), 1);
        assert!(c.get("root").is_none());
    }

    #[test]
    fn the_informer_invalidates_on_live_sync_target_changes_only() {
        let cache = Arc::new(Cache::default());
        let inv = Invalidator(cache.clone());
        let fill = || {
            let g = cache.generation();
            cache.insert("root:a", vec![applicable("root:a", "east", false)], g);
            cache.insert("root:a:b", vec![], g);
        };
        let kv = |resource: &str, obj: Value| KeyValue {
            key: kplane_storage::Key::new("root:a", resource, "", "east"),
            value: serde_json::to_vec(&obj).unwrap().into(),
            create_revision: 1,
            mod_revision: 2,
        };
        let same = json!({"metadata": {"name": "east"}, "status": {"syncedObjects": 9}});
        let changed = json!({"metadata": {"name": "east"}, "spec": {"includeDescendants": true}});
        fill();
        // Other resources, replays and unchanged targets leave the entries.
        inv.on_object(&kv("batch/jobs", changed.clone()), false, false);
        inv.on_object(&kv(SYNC_TARGET_RESOURCE, changed.clone()), false, true);
        inv.on_object(&kv(SYNC_TARGET_RESOURCE, same.clone()), false, false);
        assert_eq!(cache.len(), 2);
        // A changed target drops the subtree; so does a deleted one, and a resync.
        inv.on_object(&kv(SYNC_TARGET_RESOURCE, changed), false, false);
        assert!(cache.is_empty());
        fill();
        inv.on_object(&kv(SYNC_TARGET_RESOURCE, same), true, false);
        assert!(cache.is_empty());
        fill();
        inv.on_resync();
        assert!(cache.is_empty());
    }

    #[test]
    fn only_changes_the_assignment_reads_invalidate() {
        let c = Cache::default();
        let g = c.generation();
        c.insert("root", vec![applicable("root", "east", false)], g);
        // A heartbeat: same spec.
        c.observe(
            "root",
            &json!({"metadata": {"name": "east"}, "spec": {}, "status": {"syncedObjects": 3}}),
        );
        assert!(c.get("root").is_some());
        // A spec change.
        c.observe(
            "root",
            &json!({"metadata": {"name": "east"}, "spec": {"includeDescendants": true}}),
        );
        assert!(c.get("root").is_none());
        let g = c.generation();
        c.insert("root", vec![applicable("root", "east", false)], g);
        // A new target.
        c.observe("root", &json!({"metadata": {"name": "west"}}));
        assert!(c.get("root").is_none());
        // A target in an uncached cluster changes nothing.
        let g = c.generation();
        c.insert("root", vec![], g);
        c.observe("root:x", &json!({"metadata": {"name": "west"}}));
        assert!(c.get("root").is_some());
    }
}
