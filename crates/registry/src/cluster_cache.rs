//! A per-logical-cluster cache of values built from storage, shared by the caches that
//! answer on a hot path from what a cluster stores (compiled RBAC layers, effective
//! SyncTargets): a map from cluster name to a cheaply cloned value (an `Arc`), read under
//! a read lock.
//!
//! A generation counter keeps a build that raced with an invalidation from storing what it
//! read before the change: take [`ClusterCache::generation`] before reading storage and
//! pass it to [`ClusterCache::insert`], which stores only if no invalidation of that
//! cluster came in between. Invalidations are tracked per cluster (in [`STRIPES`] slots by
//! the name's hash, so the state stays bounded; two clusters sharing a slot only cost a
//! build that is not kept), so one cluster's churn does not discard the builds of others;
//! dropping a subtree or everything discards every build in flight. The map holds at most [`MAX_CLUSTERS`] entries; past that it is emptied and
//! refills on demand (memory stays bounded).

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// The most logical clusters whose entries are kept.
pub const MAX_CLUSTERS: usize = 65_536;

/// Slots recording the last invalidation of the clusters hashed to each.
const STRIPES: usize = 1024;

/// What a write hook needs of a per-cluster cache ([`crate::hooks::DropCached`]): to
/// forget one cluster's entry.
pub trait Invalidate: Send + Sync + fmt::Debug {
    /// Forgets what is cached for `cluster`.
    fn invalidate(&self, cluster: &str);
}

impl<V: Clone + Send + Sync + fmt::Debug> Invalidate for ClusterCache<V> {
    fn invalidate(&self, cluster: &str) {
        ClusterCache::invalidate(self, cluster);
    }
}

/// Values of type `V` (an `Arc` of what was built) by logical cluster name.
#[derive(Debug)]
pub struct ClusterCache<V> {
    entries: RwLock<HashMap<String, V>>,
    /// Bumped by every invalidation.
    generation: AtomicU64,
    /// The generation of the last invalidation of every cluster (a subtree, a clear).
    all_at: AtomicU64,
    /// The generation of the last invalidation of one cluster, by its slot.
    stripes: Box<[AtomicU64]>,
    builds: AtomicU64,
}

impl<V> Default for ClusterCache<V> {
    fn default() -> Self {
        ClusterCache {
            entries: RwLock::new(HashMap::new()),
            generation: AtomicU64::new(0),
            all_at: AtomicU64::new(0),
            stripes: (0..STRIPES).map(|_| AtomicU64::new(0)).collect(),
            builds: AtomicU64::new(0),
        }
    }
}

/// The slot of `cluster` in [`ClusterCache::stripes`].
fn stripe(cluster: &str) -> usize {
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
    let h = BuildHasherDefault::<DefaultHasher>::default().hash_one(cluster);
    usize::try_from(h % STRIPES as u64).unwrap_or(0)
}

impl<V: Clone> ClusterCache<V> {
    fn read(&self) -> RwLockReadGuard<'_, HashMap<String, V>> {
        self.entries.read().unwrap_or_else(|e| e.into_inner())
    }

    /// The write lock, with the generation moved on and recorded for `cluster` (`None`:
    /// every cluster): whatever is built for it from reads before this point is not stored.
    fn invalidating(&self, cluster: Option<&str>) -> RwLockWriteGuard<'_, HashMap<String, V>> {
        let entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        let g = self.generation.fetch_add(1, Ordering::AcqRel) + 1;
        let at = match cluster {
            Some(c) => &self.stripes[stripe(c)],
            None => &self.all_at,
        };
        at.store(g, Ordering::Release);
        entries
    }

    /// The cached value of `cluster`.
    pub fn get(&self, cluster: &str) -> Option<V> {
        self.read().get(cluster).cloned()
    }

    /// The generation to pass to [`ClusterCache::insert`] for a build starting now.
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Caches `value`, built from what was read after `generation` was taken, unless an
    /// invalidation of `cluster` came in between; returns it.
    pub fn insert(&self, cluster: &str, value: V, generation: u64) -> V {
        self.builds.fetch_add(1, Ordering::Relaxed);
        let mut entries = self.entries.write().unwrap_or_else(|e| e.into_inner());
        let invalidated = self
            .all_at
            .load(Ordering::Acquire)
            .max(self.stripes[stripe(cluster)].load(Ordering::Acquire));
        if invalidated <= generation {
            if entries.len() >= MAX_CLUSTERS {
                entries.clear();
            }
            entries.insert(cluster.to_string(), value.clone());
        }
        value
    }

    /// Forgets `cluster`'s value.
    pub fn invalidate(&self, cluster: &str) {
        self.invalidating(Some(cluster)).remove(cluster);
    }

    /// Forgets the values of `cluster` and of every cluster below it (`cluster:...`).
    pub fn invalidate_subtree(&self, cluster: &str) {
        self.invalidating(None).retain(|c, _| {
            !(c == cluster
                || c.strip_prefix(cluster)
                    .is_some_and(|rest| rest.starts_with(':')))
        });
    }

    /// Forgets every value.
    pub fn clear(&self) {
        self.invalidating(None).clear();
    }

    /// Values built from storage so far (tests, metrics).
    pub fn builds(&self) -> u64 {
        self.builds.load(Ordering::Relaxed)
    }

    /// Logical clusters with a cached value.
    pub fn len(&self) -> usize {
        self.read().len()
    }

    /// Whether no value is cached.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Cached values for which `pred` holds.
    pub fn count(&self, pred: impl Fn(&V) -> bool) -> usize {
        self.read().values().filter(|v| pred(v)).count()
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn a_build_that_raced_with_an_invalidation_is_not_stored() {
        let c: ClusterCache<u32> = ClusterCache::default();
        let g = c.generation();
        c.invalidate("root:a");
        assert_eq!(c.insert("root:a", 1, g), 1);
        assert_eq!(c.get("root:a"), None);
        assert_eq!(c.insert("root:a", 2, c.generation()), 2);
        assert_eq!(c.get("root:a"), Some(2));
        assert_eq!(c.builds(), 2);
    }

    #[test]
    fn one_clusters_invalidation_keeps_other_clusters_builds() {
        let c: ClusterCache<u32> = ClusterCache::default();
        let (a, b) = ("root:a", "root:b");
        assert_ne!(stripe(a), stripe(b));
        let g = c.generation();
        c.invalidate(b);
        assert_eq!(c.insert(a, 1, g), 1);
        assert_eq!(
            c.get(a),
            Some(1),
            "root:b's invalidation discarded root:a's build"
        );
        assert_eq!(c.insert(b, 2, g), 2);
        assert_eq!(c.get(b), None);
        // A subtree's (or everything's) invalidation discards every build in flight.
        let g = c.generation();
        c.invalidate_subtree("root:x");
        c.insert(b, 3, g);
        assert_eq!(c.get(b), None);
    }

    #[test]
    fn subtrees_are_invalidated_by_path_not_by_prefix() {
        let c: ClusterCache<u32> = ClusterCache::default();
        for (i, name) in ["root:a", "root:a:b", "root:ab", "root"].iter().enumerate() {
            c.insert(name, i as u32, c.generation());
        }
        c.invalidate_subtree("root:a");
        assert_eq!(c.get("root:a"), None);
        assert_eq!(c.get("root:a:b"), None);
        assert_eq!(c.get("root:ab"), Some(2));
        assert_eq!(c.get("root"), Some(3));
        c.invalidate("root");
        assert_eq!(c.len(), 1);
        assert_eq!(c.count(|v| *v == 2), 1);
        c.clear();
        assert!(c.is_empty());
    }

    #[test]
    fn the_map_is_bounded() {
        let c: ClusterCache<u32> = ClusterCache::default();
        for i in 0..MAX_CLUSTERS + 10 {
            c.insert(&format!("root:c{i}"), 0, c.generation());
        }
        assert!(c.len() <= MAX_CLUSTERS, "{}", c.len());
        assert_eq!(c.len(), 10);
    }
}

/// Drops a cluster's entry whenever an object of one of `resources` (storage resources)
/// changes in it, from the shared informer; a resync drops every entry. The caches built
/// from a cluster's configuration objects (webhooks, admission policies) use it.
#[derive(Debug)]
pub struct ResourceInvalidator<V> {
    pub cache: std::sync::Arc<ClusterCache<V>>,
    pub resources: &'static [&'static str],
}

impl<V: Clone + Send + Sync + std::fmt::Debug> crate::controllers::informer::InformerHandler
    for ResourceInvalidator<V>
{
    fn on_resync(&self) {
        self.cache.clear();
    }

    fn on_object(&self, kv: &kplane_storage::KeyValue, _deleted: bool, replay: bool) {
        if !replay && self.resources.contains(&kv.key.resource.as_str()) {
            self.cache.invalidate(&kv.key.cluster);
        }
    }
}
