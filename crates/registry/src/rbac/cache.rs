//! The per-logical-cluster cache of compiled RBAC [`Layer`]s.
//!
//! A cluster's layer is built the first time a request of that cluster is authorized (one
//! consistent read of its four RBAC resources) and then served from memory: the hot path
//! takes a read lock and clones an `Arc`. A cluster that stores no RBAC object shares one
//! empty layer, so a cluster costs one map entry. The map is bounded ([`ClusterCache`]).
//!
//! Invalidation: every write of a Role, ClusterRole, RoleBinding or ClusterRoleBinding
//! drops its cluster's entry, synchronously from the RBAC types' after-write hooks
//! (a client sees its own binding at once) and from the shared informer for every path
//! that bypasses them (bulk deletes, a workspace's cluster deletion). A generation counter
//! keeps a build that raced with a write from storing what it read before the write.

use std::sync::{Arc, LazyLock};

use kplane_storage::KeyValue;

use super::policy::Layer;
use super::resources::RBAC_RESOURCES;
use crate::cluster_cache::ClusterCache;
use crate::controllers::informer::InformerHandler;

static EMPTY: LazyLock<Arc<Layer>> = LazyLock::new(|| Arc::new(Layer::default()));

/// Compiled layers by logical cluster name.
#[derive(Debug, Default)]
pub struct Cache(ClusterCache<Arc<Layer>>);

impl Cache {
    /// The cached layer of `cluster`.
    pub fn get(&self, cluster: &str) -> Option<Arc<Layer>> {
        self.0.get(cluster)
    }

    /// The generation to pass to [`Cache::insert`] for a build starting now.
    pub fn generation(&self) -> u64 {
        self.0.generation()
    }

    /// Caches the layer built from what was read after `generation` was taken, unless an
    /// invalidation came in between; returns the layer to use (empty ones shared).
    pub fn insert(&self, cluster: &str, layer: Layer, generation: u64) -> Arc<Layer> {
        let layer = if layer.is_empty() {
            EMPTY.clone()
        } else {
            Arc::new(layer)
        };
        self.0.insert(cluster, layer, generation)
    }

    /// Forgets `cluster`'s layer (one of its RBAC objects changed).
    pub fn invalidate(&self, cluster: &str) {
        self.0.invalidate(cluster);
    }

    /// Forgets every layer.
    pub fn clear(&self) {
        self.0.clear();
    }

    /// Layers built from storage so far (tests, metrics).
    pub fn builds(&self) -> u64 {
        self.0.builds()
    }

    /// Logical clusters with a cached layer.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Logical clusters with a cached layer of RBAC objects of their own (not the shared
    /// empty one).
    pub fn non_empty(&self) -> usize {
        self.0.count(|l| !Arc::ptr_eq(l, &EMPTY))
    }

    /// Whether no layer is cached.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// Invalidates from the shared informer: any RBAC object's change (whatever wrote it).
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

    fn on_object(&self, kv: &KeyValue, _deleted: bool, replay: bool) {
        if !replay && RBAC_RESOURCES.contains(&kv.key.resource.as_str()) {
            self.0.invalidate(&kv.key.cluster);
        }
    }
}
