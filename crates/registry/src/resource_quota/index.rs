//! Which namespaces hold ResourceQuotas, per logical cluster: an informer handler every
//! replica runs (`crate::derived`), so that quota admission and the quota controller learn
//! in one map lookup that a namespace has no quota (the common case) without reading
//! storage. A replay builds a fresh map, swapped in when it ends, so the answers stay
//! whole while the informer rescans.

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
    live: RwLock<Map>,
    /// The map a replay under way builds.
    replay: RwLock<Option<Map>>,
}

impl QuotaIndex {
    /// Whether `namespace` of `cluster` holds a quota.
    pub fn has_quotas(&self, cluster: &str, namespace: &str) -> bool {
        let live = self.live.read().unwrap_or_else(|e| e.into_inner());
        live.get(cluster)
            .is_some_and(|ns| ns.contains_key(namespace))
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
        }
    }
}
