//! Each logical cluster's catalog, cached and shared by content ([`Catalogs`]), and the
//! per-cluster locks that serialise CRD writes.

use crate::catalog::Catalog;
use kplane_types::ClusterName;
use std::collections::HashMap;
use std::sync::{Arc, Mutex, RwLock, Weak};

/// The catalogs of all logical clusters.
#[derive(Debug)]
pub struct Catalogs {
    pub(crate) builtin: Arc<Catalog>,
    pub(crate) by_cluster: RwLock<HashMap<ClusterName, Arc<Catalog>>>,
    pub(crate) by_fingerprint: Mutex<HashMap<String, Weak<Catalog>>>,
    /// Serialises the CRD writes of each logical cluster so that their name-conflict checks
    /// see each other (held around the status computation and the storage write only,
    /// never across admission: see `Registry::serialized_write`).
    pub(crate) crd_write: ClusterLocks,
    /// The catalogs of `/clusters/*` and of subtrees, dropped when any cluster's CRDs change.
    pub(crate) multi: MultiCatalogs,
    /// Bumped by every [`Catalogs::forget`]: a lazy load that raced with one is not kept.
    pub(crate) generation: std::sync::atomic::AtomicU64,
}

/// One async lock per logical cluster, alive while someone holds or awaits it (the map
/// keeps weak references, pruned when a lock is made, so it stays as small as the number of
/// clusters writing at once).
#[derive(Debug, Default)]
pub(crate) struct ClusterLocks(Mutex<HashMap<ClusterName, Weak<tokio::sync::Mutex<()>>>>);

impl ClusterLocks {
    /// Waits for `cluster`'s lock; other clusters' locks are independent.
    pub(crate) async fn lock(&self, cluster: &ClusterName) -> tokio::sync::OwnedMutexGuard<()> {
        let lock = {
            let mut map = self.0.lock().unwrap_or_else(|e| e.into_inner());
            match map.get(cluster).and_then(Weak::upgrade) {
                Some(l) => l,
                None => {
                    map.retain(|_, w| w.strong_count() > 0);
                    let l = Arc::new(tokio::sync::Mutex::new(()));
                    map.insert(cluster.clone(), Arc::downgrade(&l));
                    l
                }
            }
        };
        lock.lock_owned().await
    }

    /// Clusters with a live lock (tests).
    #[cfg(test)]
    pub(crate) fn live(&self) -> usize {
        let map = self.0.lock().unwrap_or_else(|e| e.into_inner());
        map.values().filter(|w| w.strong_count() > 0).count()
    }
}

impl Catalogs {
    pub fn new(builtin: Arc<Catalog>) -> Catalogs {
        Catalogs {
            builtin,
            by_cluster: RwLock::new(HashMap::new()),
            by_fingerprint: Mutex::new(HashMap::new()),
            crd_write: ClusterLocks::default(),
            multi: Default::default(),
            generation: Default::default(),
        }
    }

    pub fn builtin(&self) -> &Arc<Catalog> {
        &self.builtin
    }

    /// Number of distinct catalogs alive (for metrics and tests of sharing).
    pub fn distinct(&self) -> usize {
        self.by_fingerprint
            .lock()
            .map(|m| m.values().filter(|w| w.strong_count() > 0).count())
            .unwrap_or(0)
            + 1
    }

    pub(super) fn cached(&self, cluster: &ClusterName) -> Option<Arc<Catalog>> {
        self.by_cluster.read().ok()?.get(cluster).cloned()
    }

    /// Forgets a deleted cluster's catalog (the next use loads it again).
    pub(crate) fn forget(&self, cluster: &ClusterName) {
        if let Ok(mut m) = self.by_cluster.write() {
            self.generation
                .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
            m.remove(cluster);
        }
        self.multi.invalidate();
    }

    pub(super) fn store(&self, cluster: &ClusterName, c: Arc<Catalog>) {
        if let Ok(mut m) = self.by_cluster.write() {
            m.insert(cluster.clone(), c);
        }
    }

    /// Stores a lazily loaded catalog unless a [`Catalogs::forget`] happened since
    /// `generation` (it may have been read before the change that caused it).
    pub(super) fn store_loaded(&self, cluster: &ClusterName, c: Arc<Catalog>, generation: u64) {
        if let Ok(mut m) = self.by_cluster.write() {
            if self.generation.load(std::sync::atomic::Ordering::Acquire) == generation {
                m.insert(cluster.clone(), c);
            }
        }
    }

    /// Drops every cached catalog (the derived-state informer resyncs: changes may have
    /// been missed). Each loads again on its next use.
    pub(crate) fn forget_all(&self) {
        if let Ok(mut m) = self.by_cluster.write() {
            self.generation
                .fetch_add(1, std::sync::atomic::Ordering::AcqRel);
            m.clear();
        }
        self.multi.invalidate();
    }

    /// The shared catalog for this content, building it at most once while it is alive.
    pub(crate) fn intern(
        &self,
        fingerprint: String,
        build: impl FnOnce() -> Catalog,
    ) -> Arc<Catalog> {
        let Ok(mut m) = self.by_fingerprint.lock() else {
            return Arc::new(build());
        };
        if let Some(c) = m.get(&fingerprint).and_then(Weak::upgrade) {
            return c;
        }
        m.retain(|_, w| w.strong_count() > 0);
        let c = Arc::new(build());
        m.insert(fingerprint, Arc::downgrade(&c));
        c
    }
}

/// The cached catalogs of multi-cluster scopes (`None`: every cluster; `Some(root)`: a
/// subtree).
#[derive(Debug, Default)]
pub(crate) struct MultiCatalogs {
    pub(crate) state: Mutex<MultiState>,
}

impl MultiCatalogs {
    /// The cached catalog, or the generation a catalog built now belongs to.
    pub(crate) fn lookup(&self, key: &Option<ClusterName>) -> Result<Arc<Catalog>, u64> {
        let Ok(st) = self.state.lock() else {
            return Err(u64::MAX);
        };
        st.by_scope.get(key).cloned().ok_or(st.generation)
    }

    /// Keeps a catalog built at `generation`, unless CRDs changed meanwhile.
    pub(crate) fn store(&self, key: Option<ClusterName>, generation: u64, c: Arc<Catalog>) {
        let Ok(mut st) = self.state.lock() else {
            return;
        };
        if st.generation != generation {
            return;
        }
        if st.by_scope.len() >= MAX_CACHED_SCOPES {
            st.by_scope.clear();
        }
        st.by_scope.insert(key, c);
    }

    /// Some cluster's CRDs changed: every multi-cluster catalog is rebuilt on next use.
    pub(crate) fn invalidate(&self) {
        if let Ok(mut st) = self.state.lock() {
            st.generation = st.generation.wrapping_add(1);
            st.by_scope.clear();
        }
    }

    /// Number of cached scopes (for tests).
    #[cfg(test)]
    pub(crate) fn cached(&self) -> usize {
        self.state.lock().map(|s| s.by_scope.len()).unwrap_or(0)
    }
}

/// Distinct subtree roots whose catalogs are kept; the cache starts over past this.
const MAX_CACHED_SCOPES: usize = 1024;

#[derive(Debug, Default)]
pub(crate) struct MultiState {
    /// Bumped by every invalidation: a catalog built from CRDs read before it is not kept.
    pub(crate) generation: u64,
    pub(crate) by_scope: HashMap<Option<ClusterName>, Arc<Catalog>>,
}
