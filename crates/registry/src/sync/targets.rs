//! The SyncTargets that apply to each logical cluster, cached for the `SyncAssignment`
//! admission plugin (`sync::admission`), which asks on every create, and
//! [`crate::Registry::applicable_sync_targets_in`]: the targets one object may go to, in order (the
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
//! (`C:...`), synchronously from the SyncTarget's after-write hooks (a client's
//! next create sees its own target) and from the shared informer for every path that
//! bypasses them (a workspace's cluster deletion). Writes that leave what the assignment
//! reads unchanged (the syncer's heartbeats through `/status`) invalidate nothing. A
//! generation counter keeps a build that raced with an invalidation from being stored, and
//! the map is bounded ([`ClusterCache`]).

use std::sync::{Arc, LazyLock};

use kplane_storage::KeyValue;
use kplane_types::ClusterName;
use serde_json::Value;

use crate::cluster_cache::ClusterCache;
use crate::controllers::informer::InformerHandler;
use crate::sync::spec::{TargetSpec, SYNC_TARGET_RESOURCE};

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

pub(crate) static EMPTY: LazyLock<Effective> = LazyLock::new(|| Arc::from(Vec::new()));

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

impl crate::cluster_cache::Invalidate for Cache {
    fn invalidate(&self, cluster: &str) {
        Cache::invalidate(self, cluster);
    }
}

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
