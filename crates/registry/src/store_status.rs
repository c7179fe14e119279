//! What the store says of itself, for the health checks and `/metrics`: whether it is
//! healthy, its revisions and backend figures, and how many objects of each built-in
//! resource it holds; whether it is shared and who leads, for the controllers. The HTTP
//! layer and the controllers read these here, never the store.

use kplane_storage::{Clusters, Prefix, Revision, StorageStats};

use crate::Registry;

/// The store's revisions and backend figures.
#[derive(Clone, Debug, Default)]
pub struct StoreFigures {
    pub revision: Revision,
    pub compacted_revision: Revision,
    pub stats: StorageStats,
}

impl Registry {
    /// Whether other processes share the store (replicas on PostgreSQL; never on sled).
    pub(crate) fn store_shared(&self) -> bool {
        self.storage.shared()
    }

    /// Whether this process leads, as the store elects it (always, on sled), and its
    /// changes.
    pub(crate) fn store_leadership(&self) -> tokio::sync::watch::Receiver<bool> {
        self.storage.leadership()
    }

    /// The store, for tests of the layers above the registry.
    #[cfg(feature = "testing")]
    pub fn storage_for_tests(&self) -> &std::sync::Arc<dyn kplane_storage::Storage> {
        &self.storage
    }
}

/// What health checks and `/metrics` read of a [`Registry`]: the store's health and
/// figures, object counts, the controllers' queue and leadership.
#[derive(Clone, Copy, Debug)]
pub struct Health<'a>(&'a Registry);

impl Registry {
    /// The registry's figures for health checks and metrics ([`Health`]).
    pub fn health(&self) -> Health<'_> {
        Health(self)
    }
}

impl Health<'_> {
    /// `Err` with the reason while the store cannot serve.
    pub fn storage(&self) -> Result<(), String> {
        self.0.storage.health()
    }

    /// The store's revisions and backend figures.
    pub fn store_figures(&self) -> StoreFigures {
        let storage = &self.0.storage;
        StoreFigures {
            revision: storage.current_revision(),
            compacted_revision: storage.compacted_revision(),
            stats: storage.stats(),
        }
    }

    /// Objects stored of each built-in resource across every logical cluster, named as
    /// `apiserver_storage_objects` names them (`<plural>` or `<plural>.<group>`); a count
    /// the store cannot give is 0. Each storage resource is counted once.
    pub async fn object_counts(&self) -> Vec<(String, u64)> {
        let mut out = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for rt in self.0.builtin_catalog().all() {
            if !rt.is_stored() || !seen.insert(rt.storage_resource.clone()) {
                continue;
            }
            let prefix = Prefix {
                cluster: Clusters::All,
                resource: Some(rt.storage_resource.clone()),
                namespace: None,
            };
            let n = self.0.storage.count(&prefix).await.unwrap_or(0);
            let name = if rt.group.is_empty() {
                rt.plural.clone()
            } else {
                format!("{}.{}", rt.plural, rt.group)
            };
            out.push((name, n));
        }
        out
    }

    /// Controller work items queued or running (namespace emptying, CRD cleanup, garbage
    /// collection, root-CA syncs); items waiting to be retried are not counted. For
    /// `/metrics`.
    pub fn queued_work(&self) -> u64 {
        self.0.queued_work()
    }

    /// Whether this process runs the writing controllers now (`kplane_leader` in
    /// `/metrics`). True for a registry whose controllers were never started.
    pub fn is_leader(&self) -> bool {
        self.0.is_leader()
    }
}
