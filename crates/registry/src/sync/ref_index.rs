//! An index of what the objects assigned to each target refer to, per (target, logical
//! cluster, namespace, resource of the referring objects), fed by the shared informer (`controllers::informer`): the sync
//! endpoint answers "may the syncer read this Secret?" with one lookup instead of reading
//! every assigned object of the namespace. A miss is not an answer: the informer follows
//! the store a little behind (a syncer may ask for a new Job's Secret before the informer
//! saw the Job), and it is empty until its first scan ends, so on a miss the registry reads
//! the assigned objects ([`crate::sync::SyncChecks::check_referenced`]). A hit may lag a
//! deletion by as long: a Secret stays readable for that moment after the last Job that
//! referred to it went.
//!
//! Objects are recognised by the bytes of the assignment annotation's key before anything
//! is decoded, so following the store costs one substring search per event, and a map
//! lookup for an object that was indexed.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::RwLock;

use kplane_storage::{Key, KeyValue};
use serde_json::Value;

use super::refs::{self, RefKind};
use super::TARGET_ANNOTATION;
use crate::controllers::informer::InformerHandler;

/// (target id `<cluster>/<name>`, logical cluster, namespace, storage resource of the
/// referring objects).
type Group = (String, String, String, String);

#[derive(Debug, Default)]
struct State {
    /// Each indexed object: its group and its references.
    objects: HashMap<Key, (Group, Vec<(RefKind, String)>)>,
    /// Per group, each reference and how many indexed objects make it.
    refs: HashMap<Group, HashMap<(RefKind, String), u32>>,
}

impl State {
    fn remove(&mut self, key: &Key) {
        let Some((group, list)) = self.objects.remove(key) else {
            return;
        };
        if let Some(counts) = self.refs.get_mut(&group) {
            for r in list {
                if let Some(n) = counts.get_mut(&r) {
                    *n -= 1;
                    if *n == 0 {
                        counts.remove(&r);
                    }
                }
            }
            if counts.is_empty() {
                self.refs.remove(&group);
            }
        }
    }

    fn insert(&mut self, key: Key, group: Group, list: Vec<(RefKind, String)>) {
        self.remove(&key);
        if list.is_empty() {
            return;
        }
        let counts = self.refs.entry(group.clone()).or_default();
        for r in &list {
            *counts.entry(r.clone()).or_insert(0) += 1;
        }
        self.objects.insert(key, (group, list));
    }
}

/// The index (shared between the registry and the informer's [`Indexer`]).
#[derive(Debug, Default)]
pub struct RefIndex {
    state: RwLock<State>,
    hits: AtomicU64,
}

/// The owned key of a group.
fn group_key(target: &str, cluster: &str, namespace: &str, resource: &str) -> Group {
    (
        target.to_string(),
        cluster.to_string(),
        namespace.to_string(),
        resource.to_string(),
    )
}

impl RefIndex {
    /// Whether an object of `resource` (its storage resource, `batch/jobs`) assigned to
    /// `target` in `cluster`/`namespace` is known to refer to `name` of `kind`.
    pub fn contains(
        &self,
        (target, cluster, namespace, resource): (&str, &str, &str, &str),
        kind: RefKind,
        name: &str,
    ) -> bool {
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        let found = state
            .refs
            .get(&group_key(target, cluster, namespace, resource))
            .is_some_and(|c| c.contains_key(&(kind, name.to_string())));
        if found {
            self.hits.fetch_add(1, Ordering::Relaxed);
        }
        found
    }

    /// Whether an indexed object of `group` refers to anything (every assigned Job refers
    /// at least to its ServiceAccount), i.e. the namespace holds an assigned object.
    pub fn has_group(
        &self,
        (target, cluster, namespace, resource): (&str, &str, &str, &str),
    ) -> bool {
        let state = self.state.read().unwrap_or_else(|e| e.into_inner());
        state
            .refs
            .contains_key(&group_key(target, cluster, namespace, resource))
    }

    /// Lookups answered by the index so far (tests).
    pub fn hits(&self) -> u64 {
        self.hits.load(Ordering::Relaxed)
    }

    /// Follows one stored object (`None`: deleted).
    pub fn observe(&self, kv: &KeyValue, deleted: bool) {
        let assigned =
            !deleted && memchr::memmem::find(&kv.value, TARGET_ANNOTATION.as_bytes()).is_some();
        if !assigned {
            let known = self
                .state
                .read()
                .unwrap_or_else(|e| e.into_inner())
                .objects
                .contains_key(&kv.key);
            if known {
                self.state
                    .write()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&kv.key);
            }
            return;
        }
        let Ok(obj) = serde_json::from_slice::<Value>(&kv.value) else {
            return;
        };
        let target = obj
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(TARGET_ANNOTATION))
            .and_then(Value::as_str);
        let mut state = self.state.write().unwrap_or_else(|e| e.into_inner());
        match target {
            Some(t) => {
                let list = refs::of_object(&obj)
                    .all()
                    .map(|(k, n)| (k, n.to_string()))
                    .collect();
                let group = (
                    t.to_string(),
                    kv.key.cluster.clone(),
                    kv.key.namespace.clone(),
                    kv.key.resource.clone(),
                );
                state.insert(kv.key.clone(), group, list);
            }
            None => state.remove(&kv.key),
        }
    }

    /// Forgets everything (a fresh informer scan follows).
    pub fn clear(&self) {
        let mut state = self.state.write().unwrap_or_else(|e| e.into_inner());
        state.objects.clear();
        state.refs.clear();
    }
}

/// Feeds a [`RefIndex`] from the shared informer.
#[derive(Debug)]
pub struct Indexer(pub std::sync::Arc<RefIndex>);

impl InformerHandler for Indexer {
    fn on_resync(&self) {
        self.0.clear();
    }

    fn on_object(&self, kv: &KeyValue, deleted: bool, _replay: bool) {
        self.0.observe(kv, deleted);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn kv(name: &str, obj: Value) -> KeyValue {
        KeyValue {
            key: Key::new("root:acme", "batch/jobs", "d", name),
            value: bytes::Bytes::from(obj.to_string()),
            create_revision: 1,
            mod_revision: 1,
        }
    }

    fn job(target: Option<&str>, secret: &str) -> Value {
        let mut j = json!({"kind": "Job", "metadata": {"name": "x"}, "spec": {"template": {"spec": {
            "volumes": [{"name": "v", "secret": {"secretName": secret}}]}}}});
        if let Some(t) = target {
            j["metadata"]["annotations"] = json!({TARGET_ANNOTATION: t});
        }
        j
    }

    #[test]
    fn references_follow_assignment_changes_and_deletions() {
        let idx = RefIndex::default();
        let has = |t: &str, name: &str| {
            idx.contains((t, "root:acme", "d", "batch/jobs"), RefKind::Secret, name)
        };
        idx.observe(&kv("a", job(Some("root:acme/east"), "s1")), false);
        idx.observe(&kv("b", job(Some("root:acme/east"), "s1")), false);
        idx.observe(&kv("c", job(None, "s3")), false);
        assert!(has("root:acme/east", "s1"));
        assert!(!has("root:acme/west", "s1"));
        assert!(!has("root:acme/east", "s3"));
        let east = |ns, resource| ("root:acme/east", "root:acme", ns, resource);
        assert!(idx.contains(east("d", "batch/jobs"), RefKind::ServiceAccount, "default"));
        assert!(!idx.contains(east("other", "batch/jobs"), RefKind::Secret, "s1"));
        assert!(!idx.contains(east("d", "apps/deployments"), RefKind::Secret, "s1"));
        // a changes its Secret; b still refers to s1.
        idx.observe(&kv("a", job(Some("root:acme/east"), "s2")), false);
        assert!(has("root:acme/east", "s1") && has("root:acme/east", "s2"));
        // b moves to west, then a is deleted.
        idx.observe(&kv("b", job(Some("root:acme/west"), "s1")), false);
        assert!(!has("root:acme/east", "s1") && has("root:acme/west", "s1"));
        idx.observe(&kv("a", job(Some("root:acme/east"), "s2")), true);
        assert!(!has("root:acme/east", "s2"));
        // b loses its annotation.
        idx.observe(&kv("b", job(None, "s1")), false);
        assert!(!has("root:acme/west", "s1"));
        let state = idx.state.read().unwrap();
        assert!(
            state.objects.is_empty() && state.refs.is_empty(),
            "{state:?}"
        );
        drop(state);
        idx.observe(&kv("a", job(Some("root:acme/east"), "s1")), false);
        idx.clear();
        assert!(!has("root:acme/east", "s1"));
    }
}
