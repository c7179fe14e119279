//! Garbage collection by `ownerReferences`, inside the server and per logical cluster, as
//! kube-controller-manager's collector does it:
//! - dependents whose owners are all gone (or have another uid) are deleted;
//! - `propagationPolicy: Orphan` (finalizer `orphan`): the owner's dependents lose their
//!   references to it, then the owner goes;
//! - `propagationPolicy: Foreground` (finalizer `foregroundDeletion`): dependents are deleted
//!   (in the foreground themselves, so chains cascade), then the owner goes.
//!
//! The graph holds only objects that have owners (memory is proportional to owned objects,
//! not to all objects). It is fed by the shared informer (`GraphFeed`): rebuilt from its
//! scan at start-up (and after it fell behind) and then kept current from its watch, so a
//! cascade interrupted by a restart finishes. Owner work waits until the graph is built.
//! Every write (dropping owner references and finalizers, deleting dependents, the
//! `OwnerRefInvalidNamespace` Event) goes through the registry's verbs under
//! kube-controller-manager's field manager; a failed one is logged and its item retried.

use kplane_types::{ClusterName, ClusterScope};
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use kplane_storage::KeyValue;
use serde::Deserialize;
use serde_json::Value;

use super::informer::InformerHandler;
use super::write_failed;
use super::Controller;
use crate::error::{ApiError, ApiResult};
use crate::options::WriteParams;
use crate::{meta, DeleteParams, Registry, Target};

pub use super::ObjRef;

/// The controller's name in logs.
const CONTROLLER: &str = "garbage-collector";

pub use crate::meta::{FOREGROUND_FINALIZER, ORPHAN_FINALIZER};

/// Owner uid (within a cluster) → its dependents, and the reverse.
#[derive(Debug, Default)]
pub struct Graph {
    dependents: HashMap<(ClusterName, String), HashSet<ObjRef>>,
    owners_of: HashMap<ObjRef, Vec<String>>,
}

impl Graph {
    /// Records `dep`'s owner uids; returns whether they changed.
    pub fn set_owners(&mut self, dep: &ObjRef, uids: Vec<String>) -> bool {
        let old = self.owners_of.get(dep).cloned().unwrap_or_default();
        if old == uids {
            return false;
        }
        for uid in &old {
            if let Some(set) = self.dependents.get_mut(&(dep.cluster.clone(), uid.clone())) {
                set.remove(dep);
                if set.is_empty() {
                    self.dependents.remove(&(dep.cluster.clone(), uid.clone()));
                }
            }
        }
        for uid in &uids {
            self.dependents
                .entry((dep.cluster.clone(), uid.clone()))
                .or_default()
                .insert(dep.clone());
        }
        if uids.is_empty() {
            self.owners_of.remove(dep);
        } else {
            self.owners_of.insert(dep.clone(), uids);
        }
        true
    }

    /// The dependents of the owner with `uid` in `cluster`.
    pub fn dependents_of(&self, cluster: &ClusterName, uid: &str) -> Vec<ObjRef> {
        self.dependents
            .get(&(cluster.clone(), uid.to_string()))
            .map(|s| s.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// Forgets everything (a fresh scan follows).
    fn clear(&mut self) {
        self.dependents.clear();
        self.owners_of.clear();
    }

    /// Objects with owners (for metrics and tests).
    pub fn len(&self) -> usize {
        self.owners_of.len()
    }

    pub fn is_empty(&self) -> bool {
        self.owners_of.is_empty()
    }
}

/// The garbage collector (upstream's `garbage-collector-controller`): its graph of owner
/// references, fed by [`GraphFeed`], and the work of its [`GcKey`]s.
#[derive(Debug, Default)]
pub struct GarbageCollector {
    graph: Mutex<Graph>,
    /// Dependents with an owner reference to a kind their cluster does not serve (yet):
    /// looked at again when that cluster's CRDs change, as Kubernetes' collector keeps
    /// retrying the lookup until the kind appears.
    unresolved: Mutex<HashSet<ObjRef>>,
    /// Owners recently deleted with dependents: a dependent's reference to one of them is
    /// absent because the owner is gone, so the cascade need not look for it in other
    /// namespaces (the `OwnerRefInvalidNamespace` check), which would cost reads per
    /// dependent.
    deleted_owners: Mutex<RecentUids>,
    /// Whether the graph holds every owned object (the informer's replay ended).
    synced: AtomicBool,
}

/// A bounded set of `(cluster, uid)`: the oldest entries leave first.
#[derive(Debug, Default)]
struct RecentUids {
    order: std::collections::VecDeque<(String, String)>,
    set: HashSet<(String, String)>,
}

impl RecentUids {
    /// Enough for every owner of a large cascade; a forgotten one only costs the check.
    const CAPACITY: usize = 65_536;

    fn insert(&mut self, cluster: &ClusterName, uid: &str) {
        let k = (cluster.to_string(), uid.to_string());
        if !self.set.insert(k.clone()) {
            return;
        }
        self.order.push_back(k);
        if self.order.len() > Self::CAPACITY {
            if let Some(old) = self.order.pop_front() {
                self.set.remove(&old);
            }
        }
    }

    fn contains(&self, cluster: &ClusterName, uid: &str) -> bool {
        self.set.contains(&(cluster.to_string(), uid.to_string()))
    }
}

impl GarbageCollector {
    pub fn owned_objects(&self) -> usize {
        self.graph.lock().map(|g| g.len()).unwrap_or(0)
    }

    /// Whether the graph is complete (owner work needs every dependent).
    pub fn synced(&self) -> bool {
        self.synced.load(Ordering::Acquire)
    }

    /// A fresh scan begins: the graph is rebuilt from it, so that owners deleted while
    /// events were missed are noticed (each owned object is examined again). Also when
    /// this replica stops leading (`leader`): the graph's memory goes with it.
    pub(super) fn reset(&self) {
        self.synced.store(false, Ordering::Release);
        if let Ok(mut g) = self.graph.lock() {
            g.clear();
        }
    }

    fn mark_synced(&self) {
        self.synced.store(true, Ordering::Release);
    }

    fn remember_deleted_owner(&self, cluster: &ClusterName, uid: &str) {
        if let Ok(mut d) = self.deleted_owners.lock() {
            d.insert(cluster, uid);
        }
    }

    fn was_deleted_owner(&self, cluster: &ClusterName, uid: &str) -> bool {
        self.deleted_owners
            .lock()
            .map(|d| d.contains(cluster, uid))
            .unwrap_or(false)
    }

    fn park_unresolved(&self, dep: &ObjRef) {
        if let Ok(mut u) = self.unresolved.lock() {
            u.insert(dep.clone());
        }
    }

    /// Takes the parked dependents of `cluster`.
    fn take_unresolved(&self, cluster: &ClusterName) -> Vec<ObjRef> {
        let Ok(mut u) = self.unresolved.lock() else {
            return Vec::new();
        };
        let (mine, rest): (HashSet<ObjRef>, HashSet<ObjRef>) =
            u.drain().partition(|r| r.cluster == *cluster);
        *u = rest;
        mine.into_iter().collect()
    }
}

/// The metadata the collector reads, decoded without building a JSON tree.
#[derive(Deserialize, Default)]
struct Head {
    #[serde(default)]
    metadata: HeadMeta,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub(super) struct HeadMeta {
    #[serde(default)]
    pub(super) uid: String,
    #[serde(default)]
    owner_references: Vec<OwnerRef>,
    #[serde(default)]
    finalizers: Vec<String>,
    #[serde(default)]
    deletion_timestamp: Option<String>,
}

/// The coordinates of one owner reference.
#[derive(Deserialize, Clone, Debug)]
#[serde(rename_all = "camelCase")]
pub(super) struct OwnerRef {
    #[serde(default)]
    pub(super) api_version: String,
    #[serde(default)]
    pub(super) kind: String,
    #[serde(default)]
    pub(super) name: String,
    #[serde(default)]
    pub(super) uid: String,
}

/// What an owner reference resolves to, as upstream's collector classifies it.
#[derive(Debug, PartialEq, Eq)]
enum OwnerState {
    /// The owner does not exist (or is another object with the same name).
    Absent,
    /// The owner exists; `foreground` when it is being deleted in the foreground.
    Present { foreground: bool },
    /// The kind is not served in the cluster: the reference cannot be resolved, so the
    /// dependent is left alone (Kubernetes keeps retrying the lookup).
    UnknownKind,
    /// A cluster-scoped dependent names a namespaced kind: never resolvable, never a
    /// reason to collect (Kubernetes' `namespacedOwnerOfClusterScopedObjectErr`).
    NamespacedOwnerOfClusterScoped,
}

pub(super) fn head(bytes: &[u8]) -> HeadMeta {
    serde_json::from_slice::<Head>(bytes)
        .map(|h| h.metadata)
        .unwrap_or_default()
}

/// Whether an object's finalizers ask the collector for work.
fn wants_owner_work(m: &HeadMeta) -> bool {
    m.deletion_timestamp.is_some()
        && m.finalizers
            .iter()
            .any(|f| f == ORPHAN_FINALIZER || f == FOREGROUND_FINALIZER)
}

/// Feeds one stored object (scan or event) to the graph and queues the work it implies.
fn gc_observe(reg: &Registry, gc: &GarbageCollector, kv: &KeyValue, deleted: bool) {
    let mentions_owners = memchr_contains(&kv.value, b"ownerReferences");
    let mentions_finalizers = memchr_contains(&kv.value, b"finalizers");
    let Some(r) = ObjRef::of(kv) else {
        return;
    };
    if deleted {
        let m = head(&kv.value);
        let dependents = {
            let Ok(mut g) = gc.graph.lock() else {
                return;
            };
            g.set_owners(&r, vec![]);
            g.dependents_of(&r.cluster, &m.uid)
        };
        if !dependents.is_empty() {
            gc.remember_deleted_owner(&r.cluster, &m.uid);
        }
        for d in dependents {
            reg.enqueue::<GarbageCollector>(GcKey::Dependent(d));
        }
        return;
    }
    if !mentions_owners && !mentions_finalizers {
        if let Ok(mut g) = gc.graph.lock() {
            g.set_owners(&r, vec![]);
        }
        return;
    }
    let m = head(&kv.value);
    let uids: Vec<String> = m.owner_references.iter().map(|o| o.uid.clone()).collect();
    let changed = gc
        .graph
        .lock()
        .map(|mut g| g.set_owners(&r, uids))
        .unwrap_or(false);
    if changed && !m.owner_references.is_empty() {
        reg.enqueue::<GarbageCollector>(GcKey::Dependent(r.clone()));
    }
    if wants_owner_work(&m) {
        reg.enqueue::<GarbageCollector>(GcKey::Owner(r));
    }
}

/// Resolves one owner reference of `dep` (whose stored form is `obj`). Namespaced
/// owners are looked up in the dependent's namespace only; one found elsewhere is
/// reported with an `OwnerRefInvalidNamespace` Warning, as Kubernetes does.
async fn owner_state(
    reg: &Registry,
    dep: &ObjRef,
    obj: &Value,
    o: &OwnerRef,
) -> ApiResult<OwnerState> {
    let group = o.api_version.split_once('/').map(|(g, _)| g).unwrap_or("");
    let catalog = reg.cluster_catalog(&dep.cluster).await?;
    let Some(rt) = catalog
        .all()
        .iter()
        .find(|rt| rt.group == group && rt.kind == o.kind)
        .cloned()
    else {
        return Ok(OwnerState::UnknownKind);
    };
    if rt.namespaced && dep.namespace.is_empty() {
        if crate::controllers::gc_events::owner_elsewhere(reg, dep, &rt, o).await? {
            crate::controllers::gc_events::report_invalid_namespace(reg, dep, obj, o).await;
        }
        return Ok(OwnerState::NamespacedOwnerOfClusterScoped);
    }
    let ns = if rt.namespaced {
        dep.namespace.clone()
    } else {
        String::new()
    };
    let state = stored_head(reg, &dep.cluster, &rt, &ns, &o.name)
        .await?
        .filter(|m| m.uid == o.uid)
        .map_or(OwnerState::Absent, |m| OwnerState::Present {
            foreground: m.deletion_timestamp.is_some()
                && m.finalizers.iter().any(|f| f == FOREGROUND_FINALIZER),
        });
    if state == OwnerState::Absent
        && rt.namespaced
        && !gc(reg).was_deleted_owner(&dep.cluster, &o.uid)
        && crate::controllers::gc_events::owner_elsewhere(reg, dep, &rt, o).await?
    {
        crate::controllers::gc_events::report_invalid_namespace(reg, dep, obj, o).await;
    }
    Ok(state)
}

/// The collector's view of the stored object `name` of `rt` in `namespace`.
pub(super) async fn stored_head(
    reg: &Registry,
    cluster: &ClusterName,
    rt: &crate::ResourceType,
    namespace: &str,
    name: &str,
) -> ApiResult<Option<HeadMeta>> {
    let key = kplane_storage::Key::new(cluster, rt.storage_resource.clone(), namespace, name);
    let kv = reg.get_by_key(&key).await?;
    Ok(kv.map(|kv| head(&kv.value)))
}

/// A registry target for a stored object.
async fn gc_target(reg: &Registry, r: &ObjRef) -> ApiResult<Option<Target>> {
    let catalog = reg.cluster_catalog(&r.cluster).await?;
    // Prefer the type whose API version is the storage form (core Events over
    // events.k8s.io; a custom resource's storage version, which needs no conversion
    // webhook call).
    let is_storage_form = |rt: &crate::catalog::ResourceType| match &rt.custom {
        Some(c) => c.storage_version == rt.version,
        None => rt.conversion.is_none(),
    };
    let rt = catalog
        .all()
        .iter()
        .filter(|rt| rt.storage_resource == r.resource)
        .min_by_key(|rt| !is_storage_form(rt))
        .cloned();
    // Deletes read back what they remove (discarded here): never through a webhook.
    Ok(rt.map(|rt| Target {
        cluster: ClusterScope::One(r.cluster.clone()),
        namespace: rt.namespaced.then(|| r.namespace.clone()),
        rt: crate::conversion::paths::without_webhook(&rt, None),
    }))
}

/// `t` for writing `obj` (its stored form) back: for a custom resource stored in
/// another version than `t`'s, the type of that version without conversion webhook and
/// taking that version as the storage version, so the object is read and written as
/// is (validated against that version's schema). A version no longer served keeps `t`.
async fn gc_write_target(reg: &Registry, t: &Target, obj: &Value) -> Target {
    let stored = obj.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let version = stored.rsplit_once('/').map_or(stored, |(_, v)| v);
    if t.rt.custom.is_none() || version == t.rt.version {
        return t.clone();
    }
    let catalog = match t.cluster() {
        Ok(c) => reg.cluster_catalog(c).await.ok(),
        Err(_) => None,
    };
    match catalog.and_then(|c| c.get(&t.rt.group, version, &t.rt.plural).cloned()) {
        Some(rt) => Target {
            rt: crate::conversion::paths::without_webhook(&rt, Some(version)),
            ..t.clone()
        },
        None => t.clone(),
    }
}

async fn gc_get(reg: &Registry, r: &ObjRef) -> ApiResult<Option<Value>> {
    let key = kplane_storage::Key::new(
        r.cluster.clone(),
        r.resource.clone(),
        r.namespace.clone(),
        r.name.clone(),
    );
    let kv = reg.get_by_key(&key).await?;
    kv.map(|kv| serde_json::from_slice(&kv.value).map_err(|e| ApiError::internal(e.to_string())))
        .transpose()
}

/// The kinds served in `cluster` changed (a CRD was written): dependents whose owner
/// kinds could not be resolved are examined again.
pub(crate) fn gc_kinds_changed(reg: &Registry, cluster: &ClusterName) {
    for r in gc(reg).take_unresolved(cluster) {
        reg.enqueue::<GarbageCollector>(GcKey::Dependent(r));
    }
}

/// Writes `obj` back through the registry (validation, finalizer semantics), with the
/// resourceVersion it was read at as precondition. Returns false when the write failed
/// (logged; the caller's item is retried); an object gone meanwhile needs no write.
async fn gc_update(reg: &Registry, t: &Target, obj: Value) -> bool {
    let name = meta::name_of(&obj).to_string();
    // Only metadata changes: the object is written back in the version it is stored in,
    // so no conversion webhook is called (a tenant's slow or missing webhook must not
    // hold the shared worker), as upstream's collector works on metadata only.
    let t = &gc_write_target(reg, t, &obj).await;
    let obj = match reg.api_value(&t.rt, obj).await {
        Ok(obj) => obj,
        Err(e) => {
            gc_write_failed(t, &name, &e);
            return false;
        }
    };
    match reg
        .update(t, &name, None, obj, &WriteParams::controller())
        .await
    {
        Ok(_) => true,
        Err(e) if e.code() == 404 => true,
        Err(e) => {
            gc_write_failed(t, &name, &e);
            false
        }
    }
}

fn gc_write_failed(t: &Target, name: &str, e: &ApiError) {
    write_failed(
        CONTROLLER,
        t.cluster.as_str(),
        &t.rt,
        t.namespace.as_deref().unwrap_or(""),
        name,
        e,
    );
}

/// Deletes a dependent whose owners are gone, removes dangling references when some
/// owner remains, or cascades a foreground deletion. Returns false to retry later.
pub(super) async fn gc_dependent(reg: &Registry, r: &ObjRef) -> ApiResult<bool> {
    let Some(obj) = gc_get(reg, r).await? else {
        return Ok(true);
    };
    let Some(t) = gc_target(reg, r).await? else {
        return Ok(true);
    };
    let m: HeadMeta = serde_json::from_value(obj.get("metadata").cloned().unwrap_or_default())
        .unwrap_or_default();
    if m.owner_references.is_empty() {
        return Ok(true);
    }
    // Upstream's classification: solid owners exist; dangling ones are gone; waiting
    // ones are being deleted in the foreground.
    let (mut dangling, mut waiting, mut solid) = (Vec::new(), Vec::new(), 0usize);
    for o in &m.owner_references {
        match owner_state(reg, r, &obj, o).await? {
            OwnerState::Absent => dangling.push(o.uid.clone()),
            OwnerState::Present { foreground: true } => waiting.push(o.uid.clone()),
            OwnerState::Present { foreground: false } => solid += 1,
            // Unresolvable references stop the collector here, whatever the others say.
            OwnerState::UnknownKind => {
                gc(reg).park_unresolved(r);
                return Ok(true);
            }
            OwnerState::NamespacedOwnerOfClusterScoped => return Ok(true),
        }
    }
    if solid > 0 {
        // Kept by a live owner: drop only the references that no longer hold.
        if !dangling.is_empty() || !waiting.is_empty() {
            let mut updated = obj;
            if let Some(Value::Array(refs)) = updated.pointer_mut("/metadata/ownerReferences") {
                refs.retain(|o| {
                    let uid = o.get("uid").and_then(Value::as_str).unwrap_or("");
                    !dangling.iter().chain(&waiting).any(|u| u == uid)
                });
            }
            return Ok(gc_update(reg, &t, updated).await);
        }
        return Ok(true);
    }
    if m.deletion_timestamp.is_some() {
        return Ok(true);
    }
    if !waiting.is_empty() && !gc(reg).synced() {
        // Whether to cascade in the foreground depends on the whole graph.
        return Ok(false);
    }
    let has_dependents = gc(reg)
        .graph
        .lock()
        .map(|g| !g.dependents_of(&r.cluster, &m.uid).is_empty())
        .unwrap_or(false);
    // Foreground only when an owner waits and this object has dependents of its own,
    // so the cascade continues down the chain; otherwise an ordinary delete.
    let policy = if !waiting.is_empty() && has_dependents {
        "Foreground"
    } else {
        "Background"
    };
    let d = DeleteParams {
        propagation_policy: Some(policy.into()),
        ..Default::default()
    };
    match reg.delete(&t, &r.name, &d).await {
        Ok(_) => Ok(true),
        Err(e) if e.code() == 404 => Ok(true),
        Err(e) => {
            gc_write_failed(&t, &r.name, &e);
            Ok(false)
        }
    }
}

/// Honours the `orphan` and `foregroundDeletion` finalizers of a deleting owner.
pub(super) async fn gc_owner(reg: &Registry, r: &ObjRef) -> ApiResult<bool> {
    let Some(obj) = gc_get(reg, r).await? else {
        return Ok(true);
    };
    let Some(t) = gc_target(reg, r).await? else {
        return Ok(true);
    };
    if !meta::is_deleting(&obj) {
        return Ok(true);
    }
    if !gc(reg).synced() {
        // Orphaning or waiting for dependents needs every dependent in the graph.
        return Ok(false);
    }
    let uid = meta::meta_str(&obj, "uid").unwrap_or("").to_string();
    let fins = meta::finalizers(&obj);
    let deps = gc(reg)
        .graph
        .lock()
        .map(|g| g.dependents_of(&r.cluster, &uid))
        .unwrap_or_default();
    let mut remove = Vec::new();
    if fins.iter().any(|f| f == ORPHAN_FINALIZER) {
        for d in &deps {
            let (Some(mut dep), Some(dt)) = (gc_get(reg, d).await?, gc_target(reg, d).await?)
            else {
                continue;
            };
            if let Some(Value::Array(refs)) = dep.pointer_mut("/metadata/ownerReferences") {
                refs.retain(|o| o.get("uid").and_then(Value::as_str) != Some(uid.as_str()));
            }
            if !gc_update(reg, &dt, dep).await {
                // The finalizer stays until every dependent is orphaned.
                return Ok(false);
            }
        }
        remove.push(ORPHAN_FINALIZER);
    }
    if fins.iter().any(|f| f == FOREGROUND_FINALIZER) {
        let mut waiting = false;
        for d in &deps {
            let Some(dep) = gc_get(reg, d).await? else {
                continue;
            };
            waiting = true;
            if !meta::is_deleting(&dep) {
                reg.enqueue::<GarbageCollector>(GcKey::Dependent(d.clone()));
            }
        }
        if waiting {
            return Ok(false);
        }
        remove.push(FOREGROUND_FINALIZER);
    }
    if remove.is_empty() {
        return Ok(true);
    }
    let mut updated = obj;
    if let Some(Value::Array(f)) = updated.pointer_mut("/metadata/finalizers") {
        f.retain(|x| !remove.iter().any(|r| x == r));
    }
    Ok(gc_update(reg, &t, updated).await)
}

fn memchr_contains(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
}

/// The collector's [`InformerHandler`]: feeds every stored object and change to the graph.
pub(crate) struct GraphFeed(Arc<Registry>, Arc<GarbageCollector>);

impl GraphFeed {
    pub(crate) fn new(registry: Arc<Registry>) -> GraphFeed {
        let gc = gc(&registry);
        GraphFeed(registry, gc)
    }
}

impl InformerHandler for GraphFeed {
    fn on_resync(&self) {
        self.1.reset();
    }

    fn on_object(&self, kv: &KeyValue, deleted: bool, _replay: bool) {
        gc_observe(&self.0, &self.1, kv, deleted);
    }

    fn on_synced(&self) {
        let gc = &self.1;
        gc.mark_synced();
        tracing::info!(owned = gc.owned_objects(), "garbage collector graph built");
    }
}

/// A unit of the garbage collector's work.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum GcKey {
    /// An object whose owners may be gone (or are deleted in the foreground).
    Dependent(ObjRef),
    /// An owner's `orphan` / `foregroundDeletion` finalizer to honour.
    Owner(ObjRef),
}

impl Controller<Registry> for GarbageCollector {
    type Key = GcKey;

    fn name(&self) -> &'static str {
        CONTROLLER
    }

    async fn reconcile(&self, registry: &Registry, key: &GcKey) -> ApiResult<bool> {
        match key {
            GcKey::Dependent(r) => gc_dependent(registry, r).await,
            GcKey::Owner(r) => gc_owner(registry, r).await,
        }
    }
}

/// The registered garbage collector (a detached, empty one when none is registered:
/// then nothing is collected).
fn gc(reg: &Registry) -> Arc<GarbageCollector> {
    reg.controller::<GarbageCollector>().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cn(s: &str) -> ClusterName {
        ClusterName::parse(s).unwrap()
    }

    #[test]
    fn recent_uids_keep_exactly_the_newest_capacity() {
        let cap = RecentUids::CAPACITY;
        for n in [cap - 1, cap, cap + 1, 10 * cap] {
            let mut r = RecentUids::default();
            for i in 0..n {
                r.insert(&cn("c"), &i.to_string());
            }
            let kept = n.min(cap);
            assert_eq!((r.order.len(), r.set.len()), (kept, kept), "after {n}");
            assert!(
                r.contains(&cn("c"), &(n - kept).to_string()),
                "oldest kept of {n}"
            );
            assert!(r.contains(&cn("c"), &(n - 1).to_string()), "newest of {n}");
            if n > cap {
                assert!(!r.contains(&cn("c"), &(n - kept - 1).to_string()), "{n}");
            }
        }
    }

    #[test]
    fn recent_uids_forget_the_oldest_beyond_capacity() {
        let mut r = RecentUids::default();
        r.insert(&cn("c"), "first");
        r.insert(&cn("c"), "first");
        assert_eq!(r.order.len(), 1, "a repeated uid is kept once");
        for i in 0..RecentUids::CAPACITY {
            r.insert(&cn("c"), &i.to_string());
        }
        assert!(!r.contains(&cn("c"), "first"), "the oldest entry must go");
        assert!(r.contains(&cn("c"), &(RecentUids::CAPACITY - 1).to_string()));
        assert!(
            !r.contains(&cn("other"), "0"),
            "uids are per logical cluster"
        );
        assert_eq!(r.order.len(), RecentUids::CAPACITY);
        assert_eq!(r.set.len(), RecentUids::CAPACITY);
    }

    fn r(name: &str) -> ObjRef {
        ObjRef {
            cluster: ClusterName::root(),
            resource: "/configmaps".into(),
            namespace: "d".into(),
            name: name.into(),
        }
    }

    #[test]
    fn graph_tracks_owner_changes() {
        let mut g = Graph::default();
        assert!(g.set_owners(&r("b"), vec!["u1".into()]));
        assert!(!g.set_owners(&r("b"), vec!["u1".into()]));
        assert_eq!(g.dependents_of(&cn("root"), "u1"), vec![r("b")]);
        assert!(g.set_owners(&r("b"), vec!["u2".into()]));
        assert!(g.dependents_of(&cn("root"), "u1").is_empty());
        assert_eq!(g.dependents_of(&cn("root"), "u2"), vec![r("b")]);
        assert!(
            g.dependents_of(&cn("other"), "u2").is_empty(),
            "clusters never mix"
        );
        g.set_owners(&r("b"), vec![]);
        assert!(g.is_empty());
        assert!(g.dependents.is_empty());
    }

    #[test]
    fn head_reads_owner_references() {
        let m = head(br#"{"metadata":{"uid":"x","ownerReferences":[{"apiVersion":"v1","kind":"ConfigMap","name":"a","uid":"u"}],"finalizers":["orphan"],"deletionTimestamp":"2024-01-01T00:00:00Z"},"data":{"k":"v"}}"#);
        assert_eq!(m.uid, "x");
        assert_eq!(m.owner_references[0].uid, "u");
        assert!(wants_owner_work(&m));
    }
}
