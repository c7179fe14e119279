//! What the syncer keeps in memory while it is the leader: the assigned source objects as
//! the watches last showed them (the cache the workers reconcile from), the copies each
//! synced object uses, the host namespaces known to exist, the work queue and the metrics.
//! Everything in it can be rebuilt from kplane and the host, which is what a restart does.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::clients::KplaneClients;
use crate::kinds::SyncedKind;
use crate::metrics::Metrics;
use crate::naming::{HostLayout, TargetRef, CLUSTER_ANNOTATION, TARGET_ANNOTATION};
use crate::queue::WorkQueue;

pub use crate::object::{annotation, slim, Compact, CopyKey, ObjectKey};
/// See the module docs.
pub struct State {
    pub target: TargetRef,
    pub layout: HostLayout,
    pub kplane: KplaneClients,
    pub host: kube::Client,
    pub kinds: Vec<Arc<dyn SyncedKind>>,
    pub queue: Arc<WorkQueue<ObjectKey>>,
    pub metrics: Arc<Metrics>,
    /// Assigned source objects (without managedFields), also those being deleted.
    pub cache: Mutex<HashMap<ObjectKey, Compact>>,
    /// Per kind: whether its watch has listed everything once (before that, an object
    /// missing from the cache may just not be seen yet, so nothing is removed for it).
    pub listed: Vec<AtomicBool>,
    /// The copies each synced object used at its last reconcile.
    pub refs: Mutex<HashMap<ObjectKey, BTreeSet<CopyKey>>>,
    /// Held while copies are written or removed, so a copy another object just started to
    /// use is never removed.
    pub copy_lock: tokio::sync::Mutex<()>,
    /// Host namespaces known to exist.
    pub namespaces: Mutex<HashSet<String>>,
    /// Source objects whose host object exists and agrees.
    pub synced: Mutex<HashSet<ObjectKey>>,
    /// Host objects as the host watch last showed them, by source key: reconciles read
    /// them here instead of asking the host each time (a miss still asks).
    pub host_cache: Mutex<HashMap<ObjectKey, Compact>>,
    /// When each copy was last written or found up to date; a copy is checked again when
    /// an object starts to use it, or once per resync period.
    pub copies_checked: Mutex<HashMap<CopyKey, Instant>>,
    /// The resourceVersions this syncer's own last writes produced, per key, in kplane and
    /// on the host: the watch event of such a write brings nothing new and is not queued.
    pub own_source_writes: Mutex<HashMap<ObjectKey, String>>,
    pub own_host_writes: Mutex<HashMap<ObjectKey, String>>,
    /// Whether the host answered last time (the heartbeat's check, the host watch): the
    /// cached host objects say nothing about a host that is away, so no status is written
    /// back from them meanwhile.
    pub host_reachable: AtomicBool,
    /// The resync period.
    pub resync: Duration,
    /// Where synced pods reach kplane (`api_access`); `None`: their pod templates are not
    /// rewritten.
    pub pod_api: Option<crate::pod_api::PodApi>,
    /// When each synced object's in-cluster API Secret was last found fresh or renewed.
    pub access_checked: Mutex<HashMap<ObjectKey, Instant>>,
    /// When the NetworkPolicies of each source (cluster, namespace) were last carried.
    pub policies_checked: Mutex<HashMap<(String, String), Instant>>,
    /// Held while host NetworkPolicies are carried or removed, so a namespace's last
    /// object going never removes them under a new object that just carried them.
    pub policy_lock: tokio::sync::Mutex<()>,
    /// The host pods of synced objects and their reflections in kplane.
    pub pods: crate::pod_state::PodState,
    /// The cached objects not being deleted, per source (cluster, namespace): whether a
    /// namespace still has a live synced object, without a scan of the cache.
    pub live: Mutex<HashMap<(String, String), HashSet<ObjectKey>>>,
}

impl std::fmt::Debug for State {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("State")
            .field("target", &self.target)
            .field("layout", &self.layout)
            .field("kplane", &self.kplane)
            .finish_non_exhaustive()
    }
}

impl State {
    /// Whether `obj` is assigned to this target.
    pub fn assigned(&self, obj: &Value) -> bool {
        annotation(obj, TARGET_ANNOTATION) == Some(self.target.annotation().as_str())
    }

    /// The key of source object `obj` of kind `kind` (its cluster from `kplane.io/cluster`).
    pub fn key_of(&self, kind: usize, obj: &Value) -> Option<ObjectKey> {
        Some(ObjectKey {
            kind,
            cluster: annotation(obj, CLUSTER_ANNOTATION)?.to_owned(),
            namespace: obj.pointer("/metadata/namespace")?.as_str()?.to_owned(),
            name: obj.pointer("/metadata/name")?.as_str()?.to_owned(),
        })
    }

    pub fn cached(&self, key: &ObjectKey) -> Option<Value> {
        let compact = self.cache.lock().ok()?.get(key).cloned()?;
        Some(compact.value())
    }

    pub fn is_cached(&self, key: &ObjectKey) -> bool {
        self.cache
            .lock()
            .map(|c| c.contains_key(key))
            .unwrap_or(false)
    }

    /// Whether the in-cluster API Secret of `key` is to be checked (never checked, or not
    /// within the resync period).
    pub fn access_due(&self, key: &ObjectKey) -> bool {
        self.access_checked
            .lock()
            .map(|m| m.get(key).is_none_or(|t| t.elapsed() >= self.resync))
            .unwrap_or(true)
    }

    /// Records (or, with `ok` false, forgets) a check of `key`'s in-cluster API Secret.
    pub fn access_checked(&self, key: &ObjectKey, ok: bool) {
        if let Ok(mut m) = self.access_checked.lock() {
            if ok {
                m.insert(key.clone(), Instant::now());
            } else {
                m.remove(key);
            }
        }
    }

    /// Whether the NetworkPolicies of `cluster`/`namespace` are to be carried again.
    pub fn policies_due(&self, cluster: &str, namespace: &str) -> bool {
        self.policies_checked
            .lock()
            .map(|m| {
                m.get(&(cluster.to_owned(), namespace.to_owned()))
                    .is_none_or(|t| t.elapsed() >= self.resync)
            })
            .unwrap_or(true)
    }

    /// Records (or forgets) that the NetworkPolicies of `cluster`/`namespace` agree.
    pub fn policies_checked(&self, cluster: &str, namespace: &str, ok: bool) {
        if let Ok(mut m) = self.policies_checked.lock() {
            let k = (cluster.to_owned(), namespace.to_owned());
            if ok {
                m.insert(k, Instant::now());
            } else {
                m.remove(&k);
            }
        }
    }

    /// Whether a live assigned object of `cluster`/`namespace` is cached (one being
    /// deleted does not count).
    pub fn namespace_in_use(&self, cluster: &str, namespace: &str) -> bool {
        self.live
            .lock()
            .map(|l| l.contains_key(&(cluster.to_owned(), namespace.to_owned())))
            .unwrap_or(true)
    }

    /// Drops what is kept per synced object once it is gone (or going): when its token
    /// was checked, host pods to delete for it.
    pub fn forget(&self, key: &ObjectKey) {
        self.access_checked(key, false);
        if let Ok(mut d) = self.pods.doomed.lock() {
            d.retain(|(k, _)| k != key);
        }
    }

    /// Records whether cached object `key` is live (cached and not being deleted).
    pub fn note_live(&self, key: &ObjectKey, live: bool) {
        let Ok(mut l) = self.live.lock() else {
            return;
        };
        let ns = (key.cluster.clone(), key.namespace.clone());
        if live {
            l.entry(ns).or_default().insert(key.clone());
        } else if let Some(set) = l.get_mut(&ns) {
            set.remove(key);
            if set.is_empty() {
                l.remove(&ns);
            }
        }
    }

    /// Whether `key`'s host object exists and agrees, as last seen.
    pub fn is_synced(&self, key: &ObjectKey) -> bool {
        self.synced.lock().map(|s| s.contains(key)).unwrap_or(false)
    }

    pub fn all_listed(&self) -> bool {
        self.listed.iter().all(|l| l.load(Ordering::Acquire))
    }

    pub fn mark_synced(&self, key: &ObjectKey, synced: bool) {
        if let Ok(mut s) = self.synced.lock() {
            if synced {
                s.insert(key.clone());
            } else {
                s.remove(key);
            }
            self.metrics.set_synced_objects(s.len());
        }
    }

    /// The cached host object of `key`, if it belongs to source incarnation `uid`.
    pub fn cached_host(&self, key: &ObjectKey, uid: &str) -> Option<Value> {
        let compact = self.host_cache.lock().ok()?.get(key).cloned()?;
        let host = compact.value();
        (annotation(&host, crate::naming::UID_ANNOTATION) == Some(uid)).then_some(host)
    }

    /// Whether copy `key` is due for a check (not checked within the resync period).
    pub fn copy_due(&self, key: &CopyKey) -> bool {
        self.copies_checked
            .lock()
            .map(|c| c.get(key).is_none_or(|t| t.elapsed() >= self.resync))
            .unwrap_or(true)
    }

    /// Records that copy `key` was just checked (`false`: forget it).
    pub fn copy_checked(&self, key: &CopyKey, checked: bool) {
        if let Ok(mut c) = self.copies_checked.lock() {
            if checked {
                c.insert(key.clone(), Instant::now());
            } else {
                c.remove(key);
            }
        }
    }

    /// Records that this syncer's write produced `obj` (its resourceVersion) in `writes`.
    pub fn note_write(writes: &Mutex<HashMap<ObjectKey, String>>, key: &ObjectKey, obj: &Value) {
        let Some(rv) = obj
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
        else {
            return;
        };
        if let Ok(mut w) = writes.lock() {
            w.insert(key.clone(), rv.to_owned());
        }
    }

    /// Whether the watched `obj` is what this syncer's last write of `key` produced (the
    /// record is used up either way).
    pub fn own_write(
        writes: &Mutex<HashMap<ObjectKey, String>>,
        key: &ObjectKey,
        obj: &Value,
    ) -> bool {
        let rv = obj
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str);
        let Ok(mut w) = writes.lock() else {
            return false;
        };
        match w.remove(key) {
            Some(own) => Some(own.as_str()) == rv,
            None => false,
        }
    }

    /// Records a host object this syncer just wrote: its watch event is not queued, and it
    /// is cached unless the watch already cached a version of it (which may be newer than
    /// this write: resourceVersions do not order, so the watch's copy wins).
    pub fn wrote_host(&self, key: &ObjectKey, obj: &Value) {
        Self::note_write(&self.own_host_writes, key, obj);
        if let Ok(mut cache) = self.host_cache.lock() {
            cache
                .entry(key.clone())
                .or_insert_with(|| Compact::new(obj));
        }
    }

    pub fn set_host_reachable(&self, up: bool) {
        self.host_reachable.store(up, Ordering::Release);
    }

    pub fn host_reachable(&self) -> bool {
        self.host_reachable.load(Ordering::Acquire)
    }

    pub fn synced_count(&self) -> usize {
        self.synced.lock().map(|s| s.len()).unwrap_or(0)
    }
}
