//! Which namespaces hold ResourceQuotas, per logical cluster: an informer handler every
//! replica runs (`crate::derived`), so that quota admission and the quota controller learn
//! in one map lookup that a namespace has no quota (the common case) without reading
//! storage. A replay builds a fresh map, swapped in when it ends, so the answers stay
//! whole while the informer rescans. Until the informer's first replay has ended (just
//! after start-up) every namespace may hold quotas: admission then reads them from
//! storage, so no create goes unchecked.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, RwLock};

use kplane_storage::KeyValue;

use super::RESOURCE;
use crate::controllers::informer::InformerHandler;

/// cluster → namespace → the names of its quotas.
type Map = HashMap<String, HashMap<String, HashSet<String>>>;

/// The namespaces holding quotas.
#[derive(Debug, Default)]
pub struct QuotaIndex {
    /// Whether a replay has ended since start-up (the map is whole).
    synced: std::sync::atomic::AtomicBool,
    live: RwLock<Map>,
    /// The map a replay under way builds.
    replay: RwLock<Option<Map>>,
    /// When a quota of "cluster/namespace" was last written with a settled status (what
    /// admission's raises look like), on the leader: the quota controller's recheck does
    /// not recount a namespace within [`super::controller::GRACE`] of one, so that a
    /// create counted but not yet stored is not counted out again.
    raised: std::sync::Mutex<HashMap<String, std::time::Instant>>,
}

impl QuotaIndex {
    /// Whether `namespace` of `cluster` may hold a quota: it does, or the index is not
    /// whole yet.
    pub fn has_quotas(&self, cluster: &str, namespace: &str) -> bool {
        if !self.synced.load(std::sync::atomic::Ordering::Acquire) {
            return true;
        }
        let live = self.live.read().unwrap_or_else(|e| e.into_inner());
        live.get(cluster)
            .is_some_and(|ns| ns.contains_key(namespace))
    }

    /// The namespaces of `cluster` holding quotas.
    pub fn namespaces_of(&self, cluster: &str) -> Vec<String> {
        let live = self.live.read().unwrap_or_else(|e| e.into_inner());
        live.get(cluster)
            .map(|ns| ns.keys().cloned().collect())
            .unwrap_or_default()
    }

    /// Notes that a quota of `cluster`'s `namespace` was just raised.
    pub(crate) fn note_raise(&self, cluster: &str, namespace: &str) {
        let mut m = self.raised.lock().unwrap_or_else(|e| e.into_inner());
        m.insert(format!("{cluster}/{namespace}"), std::time::Instant::now());
    }

    /// When a quota of the namespace was last raised, forgetting it once it is older than
    /// `grace` (the map keeps only namespaces raised within it).
    pub(crate) fn raised_within(
        &self,
        cluster: &str,
        namespace: &str,
        grace: std::time::Duration,
    ) -> Option<std::time::Instant> {
        let mut m = self.raised.lock().unwrap_or_else(|e| e.into_inner());
        let key = format!("{cluster}/{namespace}");
        match m.get(&key) {
            Some(at) if at.elapsed() < grace => Some(*at),
            Some(_) => {
                m.remove(&key);
                None
            }
            None => None,
        }
    }

    /// Marks the index whole without a replay (tests that feed it by hand).
    #[cfg(test)]
    pub(crate) fn mark_synced(&self) {
        self.synced
            .store(true, std::sync::atomic::Ordering::Release);
    }

    /// Namespaces holding quotas (tests, metrics).
    pub fn namespaces(&self) -> usize {
        let live = self.live.read().unwrap_or_else(|e| e.into_inner());
        live.values().map(HashMap::len).sum()
    }

    fn apply(map: &mut Map, kv: &KeyValue, deleted: bool) {
        let (c, ns) = (&kv.key.cluster, &kv.key.namespace);
        if deleted {
            let Some(namespaces) = map.get_mut(c) else {
                return;
            };
            if let Some(names) = namespaces.get_mut(ns) {
                names.remove(&kv.key.name);
                if names.is_empty() {
                    namespaces.remove(ns);
                }
            }
            if namespaces.is_empty() {
                map.remove(c);
            }
        } else {
            map.entry(c.clone())
                .or_default()
                .entry(ns.clone())
                .or_default()
                .insert(kv.key.name.clone());
        }
    }
}

/// The index's informer handler.
pub struct Indexer(pub Arc<QuotaIndex>);

impl InformerHandler for Indexer {
    fn on_resync(&self) {
        *self.0.replay.write().unwrap_or_else(|e| e.into_inner()) = Some(Map::new());
    }

    fn on_object(&self, kv: &KeyValue, deleted: bool, replay: bool) {
        if kv.key.resource != RESOURCE {
            return;
        }
        if replay {
            if let Some(m) = self
                .0
                .replay
                .write()
                .unwrap_or_else(|e| e.into_inner())
                .as_mut()
            {
                QuotaIndex::apply(m, kv, deleted);
            }
            return;
        }
        QuotaIndex::apply(
            &mut self.0.live.write().unwrap_or_else(|e| e.into_inner()),
            kv,
            deleted,
        );
    }

    fn on_synced(&self) {
        if let Some(m) = self
            .0
            .replay
            .write()
            .unwrap_or_else(|e| e.into_inner())
            .take()
        {
            *self.0.live.write().unwrap_or_else(|e| e.into_inner()) = m;
            self.0
                .synced
                .store(true, std::sync::atomic::Ordering::Release);
        }
    }
}
