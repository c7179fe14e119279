//! The SyncTarget controller (issue 15): kplane's side of a target's health, of assigning
//! objects that the `SyncAssignment` admission plugin could not, and of draining a deleted
//! target. Assignment and names follow the shared rule in [`crate::sync::assignment`].
//!
//! - Health ([`Targets`]): the syncer writes `status.lastHeartbeatTime` and
//!   Ready=True with every heartbeat. Until the first one, Ready is Unknown `NoHeartbeat`;
//!   when `spec.heartbeatTimeoutSeconds` pass without one (counted from the last
//!   heartbeat, or from the target's creation when there was none), Ready turns False
//!   `HeartbeatTimeout` and every object assigned to the target gets the condition
//!   Synced=False `SyncerHeartbeatTimeout`: its status is stale (so does an object
//!   assigned to it later, while the heartbeat is still overdue). Each target has one
//!   deadline in the controllers' timers (`timers`), moved by every heartbeat; nothing
//!   polls the targets.
//! - Drain (also [`Targets`]): a target being deleted keeps its
//!   `sync.kplane.io/drain` finalizer until its syncer reported Drained=True, or it has
//!   no live syncer (the heartbeat timed out or never came). Then every assigned object
//!   gets Synced=False `SyncTargetDeleted` and loses the assignment annotation and the
//!   `sync.kplane.io/syncer` finalizer, and the drain finalizer is removed. A target that
//!   goes without it (the finalizer removed by hand) has its objects released the same
//!   way, by its last state (kept by the [`Targets`] controller until they are).
//! - Assignment ([`Assign`], [`AssignNamespace`]): when a target
//!   appears or its spec changes, the unassigned objects in its scope are assigned by the
//!   rule (annotation plus syncer finalizer); when a namespace's labels change so that a
//!   target's selector matches, the unassigned objects of that namespace.
//!
//! Objects are read `PAGE` at a time and one run writes at most `WRITE_BATCH` of them,
//! then queues itself again behind other work. Writes go through the registry verbs as
//! the internal user [`USER`], with the resourceVersion read as precondition; a conflict
//! leaves the item to be retried.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use chrono::{DateTime, SubsecRound, Utc};
use kplane_storage::{Clusters, Key, KeyValue, ListOptions, Prefix};
use kplane_types::{ClusterName, UserInfo};
use serde_json::{json, Map, Value};

use crate::controllers::informer::InformerHandler;
use crate::controllers::queue::{Controller, InNamespace, Named};
use crate::controllers::runtime::{stored_cluster, write_failed};
use crate::controllers::timers::instant_at;
use crate::error::{ApiError, ApiResult};
use crate::options::WriteParams;
use crate::sync::assignment::{
    applies, assigned_to, candidate_clusters, first_applicable, includes_descendants,
    synced_resources, target_ref, SyncedResource, TargetSpec, DRAIN_FINALIZER, SYNCED_CONDITION,
    SYNCER_FINALIZER, SYNC_GROUP, SYNC_TARGETS, SYNC_TARGET_RESOURCE, SYNC_VERSION,
    TARGET_ANNOTATION,
};
use crate::{meta, Registry, ResourceType, Target};

/// The internal user the controller writes as (privileged for the assignment annotation).
pub const USER: &str = "system:kplane:sync-target-controller";

/// The field manager of its writes.
pub const FIELD_MANAGER: &str = "kplane-sync-target-controller";

/// Objects read from storage at a time.
pub(crate) const PAGE: usize = 500;

/// Most objects one run writes before it queues itself again.
pub(crate) const WRITE_BATCH: usize = 500;

/// `spec.heartbeatTimeoutSeconds` when absent.
const DEFAULT_TIMEOUT_SECONDS: i64 = 30;

/// How long after a deadline the timer fires, so that it is past (times have seconds).
const SLACK: Duration = Duration::from_millis(20);

/// The stored form of namespaces.
const NAMESPACES: &str = "/namespaces";

/// What the heartbeat says at some time.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Health {
    /// The last heartbeat is recent enough until `until`.
    Fresh { until: DateTime<Utc> },
    /// No heartbeat yet; the first is due by `until` (creation plus the timeout).
    Awaiting { until: DateTime<Utc> },
    /// Overdue: the last heartbeat (`None`: there was none since `since`).
    TimedOut {
        last: Option<DateTime<Utc>>,
        since: DateTime<Utc>,
    },
}

fn time_at(v: &Value, pointer: &str) -> Option<DateTime<Utc>> {
    let s = v.pointer(pointer)?.as_str()?;
    Some(DateTime::parse_from_rfc3339(s).ok()?.with_timezone(&Utc))
}

/// `spec.heartbeatTimeoutSeconds` (default 30, at least 1).
pub(crate) fn heartbeat_timeout(target: &Value) -> chrono::Duration {
    let secs = target
        .pointer("/spec/heartbeatTimeoutSeconds")
        .and_then(Value::as_i64)
        .unwrap_or(DEFAULT_TIMEOUT_SECONDS)
        .max(1);
    chrono::Duration::seconds(secs)
}

/// The target's health at `now`. Times are written in whole seconds (the syncer's
/// heartbeat, the creation time): a heartbeat is overdue when `now`, in whole seconds,
/// is more than the timeout after it, so it is never judged older than it is.
pub(crate) fn health(target: &Value, now: DateTime<Utc>) -> Health {
    let timeout = heartbeat_timeout(target);
    let now = now.trunc_subsecs(0);
    // The first whole second at which a time `t` is overdue.
    let overdue = |t: DateTime<Utc>| t + timeout + chrono::Duration::seconds(1);
    match time_at(target, "/status/lastHeartbeatTime") {
        Some(last) if now >= overdue(last) => Health::TimedOut {
            last: Some(last),
            since: last,
        },
        Some(last) => Health::Fresh {
            until: overdue(last),
        },
        None => {
            let created = time_at(target, "/metadata/creationTimestamp").unwrap_or(now);
            if now >= overdue(created) {
                Health::TimedOut {
                    last: None,
                    since: created,
                }
            } else {
                Health::Awaiting {
                    until: overdue(created),
                }
            }
        }
    }
}

/// A condition wanted on an object: type, status, reason, message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Cond {
    pub ty: &'static str,
    pub status: &'static str,
    pub reason: &'static str,
    pub message: String,
}

fn rfc3339(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The Ready condition kplane writes for `health` (`None` while heartbeats are fresh: the
/// syncer writes Ready=True itself).
pub(crate) fn wanted_ready(health: &Health, timeout: chrono::Duration) -> Option<Cond> {
    let secs = timeout.num_seconds();
    match health {
        Health::Fresh { .. } => None,
        Health::Awaiting { .. } => Some(Cond {
            ty: "Ready",
            status: "Unknown",
            reason: "NoHeartbeat",
            message: "no heartbeat from a syncer yet".into(),
        }),
        Health::TimedOut { last: Some(t), .. } => Some(Cond {
            ty: "Ready",
            status: "False",
            reason: "HeartbeatTimeout",
            message: format!(
                "no heartbeat for more than {secs}s: last heartbeat at {}",
                rfc3339(*t)
            ),
        }),
        Health::TimedOut { last: None, since } => Some(Cond {
            ty: "Ready",
            status: "False",
            reason: "HeartbeatTimeout",
            message: format!(
                "no heartbeat within {secs}s of the SyncTarget's creation at {}",
                rfc3339(*since)
            ),
        }),
    }
}

/// The reason of the Synced condition of an object whose target's heartbeat timed out.
const STALE_REASON: &str = "SyncerHeartbeatTimeout";

/// The Synced condition of an object whose target's heartbeat timed out.
pub(crate) fn stale_condition(target: &str, health: &Health) -> Cond {
    let message = match health {
        Health::TimedOut { last: Some(t), .. } => {
            format!(
                "status is stale: SyncTarget {target} last heartbeat at {}",
                rfc3339(*t)
            )
        }
        Health::TimedOut { last: None, since } => format!(
            "status is stale: SyncTarget {target} has had no heartbeat since its creation at {}",
            rfc3339(*since)
        ),
        _ => format!("status is stale: SyncTarget {target} is not heartbeating"),
    };
    Cond {
        ty: SYNCED_CONDITION,
        status: "False",
        reason: STALE_REASON,
        message,
    }
}

/// The Synced condition of an object released by a deleted target.
pub(crate) fn deleted_condition(target: &str) -> Cond {
    Cond {
        ty: SYNCED_CONDITION,
        status: "False",
        reason: "SyncTargetDeleted",
        message: format!("SyncTarget {target} was deleted; the object is no longer synced"),
    }
}

/// The condition of `ty` in `status.conditions`.
fn condition<'a>(obj: &'a Value, ty: &str) -> Option<&'a Value> {
    obj.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(ty))
}

/// The reason of the condition of `ty`.
fn condition_reason<'a>(obj: &'a Value, ty: &str) -> Option<&'a str> {
    condition(obj, ty)?.get("reason")?.as_str()
}

/// Whether the condition of `want.ty` has `want`'s status and reason.
fn has_condition(obj: &Value, want: &Cond) -> bool {
    condition(obj, want.ty).is_some_and(|c| {
        c.get("status").and_then(Value::as_str) == Some(want.status)
            && c.get("reason").and_then(Value::as_str) == Some(want.reason)
    })
}

/// Sets `want` in `status.conditions` ([`crate::conditions::set`]); `probe` adds
/// `lastProbeTime` as the Job conditions have it.
pub(crate) fn set_condition(obj: &mut Value, want: &Cond, now: &str, probe: bool) {
    let want = crate::conditions::Condition {
        ty: want.ty,
        status: want.status,
        reason: want.reason,
        message: &want.message,
    };
    crate::conditions::set_in_status(obj, want, now, probe);
}

/// Whether the syncer reported the target drained (Drained=True).
fn drained(target: &Value) -> bool {
    condition(target, "Drained").is_some_and(|c| c.get("status") == Some(&json!("True")))
}

/// What the controller has to do for a target at some time.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Ready differs from what kplane writes in this state.
    pub ready: Option<Cond>,
    /// Being deleted with nothing left to wait for: release its objects.
    pub drain: bool,
    /// The heartbeat timed out: mark its objects stale.
    pub stale: bool,
    /// When to look again (the heartbeat deadline).
    pub recheck: Option<DateTime<Utc>>,
}

/// The plan for `target` at `now`.
pub(crate) fn plan(target: &Value, now: DateTime<Utc>) -> Plan {
    let h = health(target, now);
    // Before the first heartbeat is due, a Ready condition someone wrote stays (the
    // strategy writes Unknown on create; kplane only fills it in when it is missing).
    let awaiting = matches!(h, Health::Awaiting { .. });
    let kept = awaiting && condition(target, "Ready").is_some();
    let ready =
        wanted_ready(&h, heartbeat_timeout(target)).filter(|c| !kept && !has_condition(target, c));
    let deleting = meta::is_deleting(target);
    let holds = meta::finalizers(target)
        .iter()
        .any(|f| f == DRAIN_FINALIZER);
    let live = matches!(h, Health::Fresh { .. });
    let drain = deleting && holds && (drained(target) || !live);
    let recheck = match h {
        Health::Fresh { until } | Health::Awaiting { until } => Some(until),
        Health::TimedOut { .. } => None,
    };
    Plan {
        ready,
        drain,
        stale: !deleting && matches!(h, Health::TimedOut { .. }),
        recheck,
    }
}

/// The internal identity of the controller's writes.
fn user() -> UserInfo {
    UserInfo {
        username: USER.into(),
        groups: vec!["system:authenticated".into()],
        ..Default::default()
    }
}

fn write_params() -> WriteParams {
    WriteParams {
        user: Some(user()),
        ..WriteParams::controller_named(FIELD_MANAGER)
    }
}

/// What one pass over a target's assigned objects ended with.
enum Pass {
    /// Every object was handled.
    Done,
    /// The write batch is used up: more remain.
    More,
    /// A write failed (logged): retry later.
    Failed,
}

/// What to do with each assigned object.
enum Act {
    MarkStale(Cond),
    Release(Cond),
}

/// The storage resource of a synced resource (built-ins as the catalog stores them,
/// custom resources as `<group>/<plural>`).
fn storage_resource(reg: &Registry, r: &SyncedResource) -> String {
    reg.builtin_catalog()
        .get(&r.group, &r.version, &r.resource)
        .map(|rt| rt.storage_resource.clone())
        .unwrap_or_else(|| format!("{}/{}", r.group, r.resource))
}

/// What one assignment run read (namespace labels) and did.
#[derive(Default)]
struct AssignCtx {
    labels: HashMap<(ClusterName, String), Map<String, Value>>,
    writes: usize,
    failed: bool,
}

fn sync_target_rt(reg: &Registry) -> Option<Arc<ResourceType>> {
    reg.builtin_catalog()
        .get(SYNC_GROUP, SYNC_VERSION, SYNC_TARGETS)
        .cloned()
}

async fn read_json(reg: &Registry, key: &Key) -> ApiResult<Option<(KeyValue, Value)>> {
    let Some(kv) = reg.get_by_key(key).await? else {
        return Ok(None);
    };
    match serde_json::from_slice::<Value>(&kv.value) {
        Ok(v) => Ok(Some((kv, v))),
        Err(e) => Err(ApiError::internal(format!(
            "stored object {key:?} does not decode: {e}"
        ))),
    }
}

/// The resource type serving `r` in `cluster` (custom resources from its catalog).
async fn synced_rt(
    reg: &Registry,
    cluster: &ClusterName,
    r: &SyncedResource,
) -> Option<Arc<ResourceType>> {
    if let Some(rt) = reg.builtin_catalog().get(&r.group, &r.version, &r.resource) {
        return Some(rt.clone());
    }
    let catalog = reg.cluster_catalog(cluster).await.ok()?;
    catalog.get(&r.group, &r.version, &r.resource).cloned()
}

/// Health and drain of one SyncTarget (see the module doc); `false` to be retried.
pub(crate) async fn sync_target(
    reg: &Registry,
    cluster: &ClusterName,
    name: &str,
) -> ApiResult<bool> {
    let Some(work) = reg.work::<Targets>(Named::new(cluster.clone(), name)) else {
        return Ok(true);
    };
    let Some(rt) = sync_target_rt(reg) else {
        return Ok(true);
    };
    let key = Key::new(cluster.as_str(), SYNC_TARGET_RESOURCE, "", name);
    let Some((kv, mut target)) = read_json(reg, &key).await? else {
        reg.controllers.timers.cancel(&work);
        return release_orphans(reg, cluster, name).await;
    };
    let now = Utc::now();
    let p = plan(&target, now);
    let t = Target::new(cluster, rt.clone(), None);
    let w = write_params();
    let mut rv = kv.mod_revision;
    if let Some(cond) = &p.ready {
        set_condition(&mut target, cond, &meta::now_time(), false);
        meta::meta_mut(&mut target)?.insert("resourceVersion".into(), json!(rv.to_string()));
        match reg.update(&t, name, Some("status"), target, &w).await {
            Ok((bytes, _)) => {
                target = serde_json::from_slice(&bytes)
                    .map_err(|e| ApiError::internal(e.to_string()))?;
                rv = meta::meta_str(&target, "resourceVersion")
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(rv);
            }
            Err(e) if e.code() == 404 => return Ok(true),
            Err(e) => {
                write_failed(FIELD_MANAGER, cluster.as_str(), &rt, "", name, &e);
                return Ok(false);
            }
        }
    }
    if let Some(at) = p.recheck {
        reg.controllers
            .timers
            .schedule(work.clone(), instant_at(at) + SLACK);
    }
    let me = target_ref(cluster, name);
    let act = if p.drain {
        Act::Release(deleted_condition(&me))
    } else if p.stale {
        Act::MarkStale(stale_condition(&me, &health(&target, now)))
    } else {
        return Ok(true);
    };
    let drain = matches!(act, Act::Release(_));
    match each_assigned(reg, cluster, &target, &me, &act).await? {
        Pass::Failed => return Ok(false),
        Pass::More => {
            reg.enqueue_item(work);
            return Ok(true);
        }
        Pass::Done => {}
    }
    if !drain {
        return Ok(true);
    }
    // Every object released: the target may go.
    if let Some(f) = target
        .pointer_mut("/metadata/finalizers")
        .and_then(Value::as_array_mut)
    {
        f.retain(|x| x != DRAIN_FINALIZER);
    }
    meta::meta_mut(&mut target)?.insert("resourceVersion".into(), json!(rv.to_string()));
    match reg.update(&t, name, None, target, &w).await {
        Ok(_) => Ok(true),
        Err(e) if e.code() == 404 => Ok(true),
        Err(e) => {
            write_failed(FIELD_MANAGER, cluster.as_str(), &rt, "", name, &e);
            Ok(false)
        }
    }
}

/// Releases the objects still assigned to a SyncTarget that went without being drained
/// (its drain finalizer removed by hand, say), as a drain would, by its last state.
async fn release_orphans(reg: &Registry, cluster: &ClusterName, name: &str) -> ApiResult<bool> {
    let k = (cluster.clone(), name.to_string());
    let last = with_gone(reg, |g| g.get(&k).cloned());
    let Some(last) = last else {
        return Ok(true);
    };
    let me = target_ref(cluster, name);
    match each_assigned(
        reg,
        cluster,
        &last,
        &me,
        &Act::Release(deleted_condition(&me)),
    )
    .await?
    {
        Pass::Failed => Ok(false),
        Pass::More => {
            reg.enqueue::<Targets>(Named::new(cluster.clone(), name.to_string()));
            Ok(true)
        }
        Pass::Done => {
            with_gone(reg, |g| g.remove(&k));
            Ok(true)
        }
    }
}

/// Applies `act` to every object assigned to `me` (the target `target` of `cluster`),
/// at most [`WRITE_BATCH`] writes.
async fn each_assigned(
    reg: &Registry,
    cluster: &ClusterName,
    target: &Value,
    me: &str,
    act: &Act,
) -> ApiResult<Pass> {
    let scope = if includes_descendants(target) {
        Clusters::Subtree(cluster.as_str().to_string())
    } else {
        Clusters::One(cluster.as_str().to_string())
    };
    let mut writes = 0;
    let mut failed = false;
    for r in synced_resources(target) {
        let prefix = Prefix {
            cluster: scope.clone(),
            resource: Some(storage_resource(reg, &r)),
            namespace: None,
        };
        let mut opts = ListOptions {
            limit: Some(PAGE),
            ..Default::default()
        };
        loop {
            let read = reg.list_by_prefix(&prefix, &opts, None).await?;
            for kv in &read.items {
                let Ok(obj) = serde_json::from_slice::<Value>(&kv.value) else {
                    continue;
                };
                if assigned_to(&obj) != Some(me) {
                    continue;
                }
                let Some(oc) = stored_cluster(&kv.key) else {
                    continue;
                };
                let Some(rt) = synced_rt(reg, &oc, &r).await else {
                    continue;
                };
                match act_on(reg, &oc, &rt, kv, obj, act).await {
                    Ok(n) => writes += n,
                    Err(()) => failed = true,
                }
                if writes >= WRITE_BATCH {
                    return Ok(Pass::More);
                }
            }
            match (read.more, read.items.last()) {
                (true, Some(last)) => opts.start_after = Some(last.key.clone()),
                _ => break,
            }
        }
    }
    Ok(if failed { Pass::Failed } else { Pass::Done })
}

/// One assigned object: its condition, and for a release the annotation and finalizer.
/// Returns how many writes it made; `Err` when one failed (logged).
async fn act_on(
    reg: &Registry,
    cluster: &ClusterName,
    rt: &Arc<ResourceType>,
    kv: &KeyValue,
    mut obj: Value,
    act: &Act,
) -> Result<usize, ()> {
    let (ns, name) = (kv.key.namespace.as_str(), kv.key.name.as_str());
    let t = Target::new(
        cluster,
        rt.clone(),
        (!ns.is_empty()).then(|| ns.to_string()),
    );
    let w = write_params();
    let failed = |e: &ApiError| write_failed(FIELD_MANAGER, cluster.as_str(), rt, ns, name, e);
    let cond = match act {
        Act::MarkStale(c) | Act::Release(c) => c,
    };
    let mut rv = kv.mod_revision;
    let mut writes = 0;
    if !has_condition(&obj, cond) {
        let sub = rt.status_subresource.then_some("status");
        set_condition(&mut obj, cond, &meta::now_time(), true);
        set_rv(&mut obj, rv);
        match reg.update(&t, name, sub, obj, &w).await {
            Ok((bytes, _)) => {
                writes += 1;
                obj = serde_json::from_slice(&bytes).map_err(|_| ())?;
                rv = meta::meta_str(&obj, "resourceVersion")
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(rv);
            }
            Err(e) if e.code() == 404 => return Ok(writes),
            Err(e) => {
                failed(&e);
                return Err(());
            }
        }
    }
    if matches!(act, Act::MarkStale(_)) {
        return Ok(writes);
    }
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        if let Some(a) = m.get_mut("annotations").and_then(Value::as_object_mut) {
            a.remove(TARGET_ANNOTATION);
        }
        if let Some(f) = m.get_mut("finalizers").and_then(Value::as_array_mut) {
            f.retain(|x| x != SYNCER_FINALIZER);
        }
    }
    set_rv(&mut obj, rv);
    match reg.update(&t, name, None, obj, &w).await {
        Ok(_) => Ok(writes + 1),
        Err(e) if e.code() == 404 => Ok(writes),
        Err(e) => {
            failed(&e);
            Err(())
        }
    }
}

/// Assigns the unassigned objects in the scope of SyncTarget `name` of `cluster`.
pub(crate) async fn sync_assign(
    reg: &Registry,
    cluster: &ClusterName,
    name: &str,
) -> ApiResult<bool> {
    let key = Key::new(cluster.as_str(), SYNC_TARGET_RESOURCE, "", name);
    let Some((_, target)) = read_json(reg, &key).await? else {
        return Ok(true);
    };
    if meta::is_deleting(&target) {
        return Ok(true);
    }
    let scope = if includes_descendants(&target) {
        Clusters::Subtree(cluster.as_str().to_string())
    } else {
        Clusters::One(cluster.as_str().to_string())
    };
    let mut ctx = AssignCtx::default();
    for r in synced_resources(&target) {
        if !assign_in(reg, scope.clone(), None, &r, &mut ctx).await? {
            reg.enqueue::<Assign>(Named::new(cluster.clone(), name.to_string()));
            return Ok(true);
        }
    }
    Ok(!ctx.failed)
}

/// Assigns the unassigned objects of namespace `namespace` of `cluster`.
pub(crate) async fn sync_assign_namespace(
    reg: &Registry,
    cluster: &ClusterName,
    namespace: &str,
) -> ApiResult<bool> {
    let mut ctx = AssignCtx::default();
    let labels = ns_labels(reg, &mut ctx, cluster, namespace).await?;
    let mut resources: Vec<SyncedResource> = Vec::new();
    for t in reg.effective_sync_targets(cluster).await?.iter() {
        for r in &t.spec.resources {
            if !resources.contains(r) && applies(t, &r.group, &r.resource, true, &labels) {
                resources.push(r.clone());
            }
        }
    }
    for r in resources {
        let scope = Clusters::One(cluster.as_str().to_string());
        if !assign_in(reg, scope, Some(namespace), &r, &mut ctx).await? {
            reg.enqueue::<AssignNamespace>(InNamespace::new(
                cluster.clone(),
                namespace.to_string(),
            ));
            return Ok(true);
        }
    }
    Ok(!ctx.failed)
}

/// The labels of namespace `ns` of `cluster` (empty for cluster-scoped objects).
async fn ns_labels(
    reg: &Registry,
    ctx: &mut AssignCtx,
    cluster: &ClusterName,
    ns: &str,
) -> ApiResult<Map<String, Value>> {
    if ns.is_empty() {
        return Ok(Map::new());
    }
    let k = (cluster.clone(), ns.to_string());
    if let Some(l) = ctx.labels.get(&k) {
        return Ok(l.clone());
    }
    let key = Key::new(cluster.as_str(), NAMESPACES, "", ns);
    let labels = read_json(reg, &key)
        .await?
        .and_then(|(_, v)| {
            v.pointer("/metadata/labels")
                .and_then(Value::as_object)
                .cloned()
        })
        .unwrap_or_default();
    ctx.labels.insert(k, labels.clone());
    Ok(labels)
}

/// Assigns the unassigned objects of `r` in `scope` (one namespace or all); `false`
/// when the write batch is used up.
async fn assign_in(
    reg: &Registry,
    scope: Clusters,
    namespace: Option<&str>,
    r: &SyncedResource,
    ctx: &mut AssignCtx,
) -> ApiResult<bool> {
    let prefix = Prefix {
        cluster: scope,
        resource: Some(storage_resource(reg, r)),
        namespace: namespace.map(str::to_string),
    };
    let mut opts = ListOptions {
        limit: Some(PAGE),
        ..Default::default()
    };
    let w = write_params();
    loop {
        let read = reg.list_by_prefix(&prefix, &opts, None).await?;
        for kv in &read.items {
            let Ok(mut obj) = serde_json::from_slice::<Value>(&kv.value) else {
                continue;
            };
            if assigned_to(&obj).is_some() || meta::is_deleting(&obj) {
                continue;
            }
            let Some(oc) = stored_cluster(&kv.key) else {
                continue;
            };
            let Some(rt) = synced_rt(reg, &oc, r).await else {
                continue;
            };
            let effective = reg.effective_sync_targets(&oc).await?;
            if effective.is_empty() {
                continue;
            }
            let labels = ns_labels(reg, ctx, &oc, &kv.key.namespace).await?;
            let Some(want) =
                first_applicable(&effective, &rt.group, &rt.plural, rt.namespaced, &labels)
                    .map(|t| t.reference())
            else {
                continue;
            };
            let m = meta::meta_mut(&mut obj)?;
            let annotations = m.entry("annotations").or_insert_with(|| json!({}));
            if !annotations.is_object() {
                *annotations = json!({});
            }
            if let Some(a) = annotations.as_object_mut() {
                a.insert(TARGET_ANNOTATION.into(), json!(want));
            }
            let fins = m.entry("finalizers").or_insert_with(|| json!([]));
            if !fins.is_array() {
                *fins = json!([]);
            }
            if let Some(f) = fins.as_array_mut() {
                if !f.iter().any(|x| x == SYNCER_FINALIZER) {
                    f.push(json!(SYNCER_FINALIZER));
                }
            }
            set_rv(&mut obj, kv.mod_revision);
            let ns = kv.key.namespace.as_str();
            let t = Target::new(&oc, rt.clone(), (!ns.is_empty()).then(|| ns.to_string()));
            match reg.update(&t, &kv.key.name, None, obj, &w).await {
                Ok(_) => ctx.writes += 1,
                Err(e) if e.code() == 404 => {}
                Err(e) => {
                    write_failed(FIELD_MANAGER, oc.as_str(), &rt, ns, &kv.key.name, &e);
                    ctx.failed = true;
                }
            }
            if ctx.writes >= WRITE_BATCH {
                return Ok(false);
            }
        }
        match (read.more, read.items.last()) {
            (true, Some(last)) => opts.start_after = Some(last.key.clone()),
            _ => return Ok(true),
        }
    }
}

/// Runs `f` over the targets gone without a drain, by their last state (see
/// [`release_orphans`]); the [`Targets`] controller holds them.
fn with_gone<T>(reg: &Registry, f: impl FnOnce(&mut GoneTargets) -> T) -> T {
    match reg.controller::<Targets>() {
        Some(t) => f(&mut t
            .gone
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)),
        None => f(&mut GoneTargets::new()),
    }
}

/// SyncTargets that went without being drained, with their last state, until their
/// objects are released.
type GoneTargets = HashMap<(ClusterName, String), Value>;

fn set_rv(obj: &mut Value, rv: u64) {
    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
        m.insert("resourceVersion".into(), json!(rv.to_string()));
    }
}

/// What the feed remembers of a SyncTarget.
#[derive(Clone, Debug)]
struct Known {
    spec: TargetSpec,
    deleting: bool,
}

/// The controller's [`InformerHandler`]: follows SyncTargets (queueing health and
/// assignment work, moving heartbeat deadlines) and namespaces (queueing the assignment of
/// a namespace a target's selector now matches).
pub(crate) struct Feed {
    registry: Arc<Registry>,
    known: Mutex<HashMap<ClusterName, BTreeMap<String, Known>>>,
    /// The targets whose heartbeat timed out (annotation values): an object assigned to
    /// one later (created during the outage) is marked stale too.
    stale: Mutex<HashSet<String>>,
}

impl Feed {
    pub(crate) fn new(registry: Arc<Registry>) -> Feed {
        Feed {
            registry,
            known: Mutex::new(HashMap::new()),
            stale: Mutex::new(HashSet::new()),
        }
    }

    fn stale(&self) -> MutexGuard<'_, HashSet<String>> {
        self.stale
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// An object assigned to a target whose heartbeat timed out, without the stale
    /// condition yet: queues the target's marking (which skips the objects already marked).
    fn on_assigned(&self, kv: &KeyValue) {
        if self.stale().is_empty()
            || memchr::memmem::find(&kv.value, TARGET_ANNOTATION.as_bytes()).is_none()
        {
            return;
        }
        let Ok(obj) = serde_json::from_slice::<Value>(&kv.value) else {
            return;
        };
        let Some(to) = assigned_to(&obj) else {
            return;
        };
        if !self.stale().contains(to)
            || condition_reason(&obj, SYNCED_CONDITION) == Some(STALE_REASON)
        {
            return;
        }
        if let Some((cluster, name)) = crate::sync::assignment::parse_target_ref(to) {
            self.registry
                .enqueue::<Targets>(Named::new(cluster, name.to_string()));
        }
    }

    fn known(&self) -> MutexGuard<'_, HashMap<ClusterName, BTreeMap<String, Known>>> {
        self.known
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn on_target(
        &self,
        cluster: ClusterName,
        name: &str,
        kv: &KeyValue,
        deleted: bool,
        replay: bool,
    ) {
        let reg = &self.registry;
        let Some(work) = reg.work::<Targets>(Named::new(cluster.clone(), name)) else {
            return;
        };
        let me = target_ref(&cluster, name);
        if deleted {
            reg.controllers.timers.cancel(&work);
            self.stale().remove(&me);
            // Whatever is still assigned to it is released by its last state (nothing,
            // after a drain).
            if let Ok(last) = serde_json::from_slice::<Value>(&kv.value) {
                with_gone(reg, |g| g.insert((cluster.clone(), name.to_string()), last));
                reg.enqueue_item(work.clone());
            }
            let mut known = self.known();
            if let Some(m) = known.get_mut(&cluster) {
                m.remove(name);
                if m.is_empty() {
                    known.remove(&cluster);
                }
            }
            return;
        }
        let Ok(v) = serde_json::from_slice::<Value>(&kv.value) else {
            return;
        };
        // There again (created anew): its objects are its own.
        with_gone(reg, |g| g.remove(&(cluster.clone(), name.to_string())));
        let p = plan(&v, Utc::now());
        if p.stale {
            self.stale().insert(me);
        } else {
            self.stale().remove(&me);
        }
        if p.ready.is_some() || p.drain || (replay && p.stale) {
            reg.enqueue_item(work.clone());
        }
        match p.recheck {
            Some(at) => reg
                .controllers
                .timers
                .schedule(work, instant_at(at) + SLACK),
            None => reg.controllers.timers.cancel(&work),
        }
        let now = Known {
            spec: TargetSpec::of(&v),
            deleting: meta::is_deleting(&v),
        };
        let changed = {
            let mut known = self.known();
            let m = known.entry(cluster.clone()).or_default();
            let changed = m.get(name).is_none_or(|k| k.spec != now.spec);
            m.insert(name.to_string(), now.clone());
            changed
        };
        if changed && !now.deleting {
            reg.enqueue::<Assign>(Named::new(cluster, name.to_string()));
        }
    }

    fn on_namespace(&self, cluster: ClusterName, name: &str, kv: &KeyValue) {
        let Ok(v) = serde_json::from_slice::<Value>(&kv.value) else {
            return;
        };
        if meta::is_deleting(&v) {
            return;
        }
        let empty = Map::new();
        let labels = v
            .pointer("/metadata/labels")
            .and_then(Value::as_object)
            .unwrap_or(&empty);
        let selects = {
            let known = self.known();
            candidate_clusters(&cluster).iter().any(|c| {
                known.get(c).into_iter().flatten().any(|(_, k)| {
                    // Only a selector can start matching an existing namespace.
                    !k.deleting
                        && k.spec.namespace_selector.is_some()
                        && (*c == cluster || k.spec.include_descendants)
                        && k.spec.selects_namespace(labels)
                })
            })
        };
        if selects {
            self.registry
                .enqueue::<AssignNamespace>(InNamespace::new(cluster, name.to_string()));
        }
    }
}

impl InformerHandler for Feed {
    fn on_resync(&self) {
        self.known().clear();
        self.stale().clear();
    }

    fn on_object(&self, kv: &KeyValue, deleted: bool, replay: bool) {
        let resource = kv.key.resource.as_str();
        if !replay && !deleted && resource != SYNC_TARGET_RESOURCE && resource != NAMESPACES {
            self.on_assigned(kv);
            return;
        }
        if resource != SYNC_TARGET_RESOURCE && (resource != NAMESPACES || replay || deleted) {
            return;
        }
        let Some(cluster) = stored_cluster(&kv.key) else {
            return;
        };
        if resource == SYNC_TARGET_RESOURCE {
            self.on_target(cluster, &kv.key.name, kv, deleted, replay);
        } else {
            self.on_namespace(cluster, &kv.key.name, kv);
        }
    }
}

/// A SyncTarget's Ready condition, its stale objects and its drain.
#[derive(Default)]
pub struct Targets {
    /// The targets gone without a drain, until their objects are released.
    gone: Mutex<GoneTargets>,
}

impl Controller<Registry> for Targets {
    type Key = Named;

    fn name(&self) -> &'static str {
        FIELD_MANAGER
    }

    async fn reconcile(&self, registry: &Registry, key: &Named) -> ApiResult<bool> {
        sync_target(registry, &key.cluster, &key.name).await
    }
}

/// The assignment of the unassigned objects in a SyncTarget's scope.
pub struct Assign;

impl Controller<Registry> for Assign {
    type Key = Named;

    fn name(&self) -> &'static str {
        FIELD_MANAGER
    }

    async fn reconcile(&self, registry: &Registry, key: &Named) -> ApiResult<bool> {
        sync_assign(registry, &key.cluster, &key.name).await
    }
}

/// The assignment of the unassigned objects of one namespace.
pub struct AssignNamespace;

impl Controller<Registry> for AssignNamespace {
    type Key = InNamespace;

    fn name(&self) -> &'static str {
        FIELD_MANAGER
    }

    async fn reconcile(&self, registry: &Registry, key: &InNamespace) -> ApiResult<bool> {
        sync_assign_namespace(registry, &key.cluster, &key.namespace).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s).unwrap().with_timezone(&Utc)
    }

    fn target(status: Value) -> Value {
        json!({"metadata": {"name": "east", "creationTimestamp": "2026-01-01T00:00:00Z",
                            "finalizers": [DRAIN_FINALIZER]},
               "spec": {"heartbeatTimeoutSeconds": 2}, "status": status})
    }

    /// Before the first heartbeat Ready is Unknown, for one timeout after creation; then
    /// False. A heartbeat is fresh for one timeout, then overdue.
    #[test]
    fn health_follows_the_heartbeat() {
        let t = target(json!({}));
        let created = at("2026-01-01T00:00:00Z");
        let s = chrono::Duration::seconds(1);
        let ms = chrono::Duration::milliseconds(1);
        let awaiting = Health::Awaiting {
            until: created + s * 3,
        };
        assert_eq!(health(&t, created + s), awaiting);
        // Whole seconds: 2.999 s after a time written as ...:00 may be 2 s after it.
        assert_eq!(health(&t, created + s * 3 - ms), awaiting);
        let late = health(&t, created + s * 3);
        assert_eq!(
            late,
            Health::TimedOut {
                last: None,
                since: created
            }
        );
        let created_form = target(json!({"conditions": [
            {"type": "Ready", "status": "Unknown", "reason": "NoHeartbeat"}]}));
        let p = plan(&created_form, created + s);
        assert_eq!(p.ready, None, "Unknown NoHeartbeat is written on create");
        assert_eq!(p.recheck, Some(created + s * 3));
        assert!(!p.stale && !p.drain);
        let claimed = target(json!({"conditions": [
            {"type": "Ready", "status": "True", "reason": "HeartbeatReceived"}]}));
        assert_eq!(plan(&claimed, created + s).ready, None);
        assert_eq!(
            plan(&claimed, created + s * 3).ready.unwrap().status,
            "False"
        );
        let p = plan(
            &json!({"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"}}),
            created + s,
        );
        assert_eq!(p.ready.as_ref().unwrap().reason, "NoHeartbeat");
        let p = plan(&t, created + s * 3);
        assert_eq!(p.ready.as_ref().unwrap().status, "False");
        assert!(p.stale && p.recheck.is_none());

        let beat = at("2026-01-01T01:00:00Z");
        let t = target(json!({"lastHeartbeatTime": "2026-01-01T01:00:00Z",
            "conditions": [{"type": "Ready", "status": "True", "reason": "HeartbeatReceived"}]}));
        let p = plan(&t, beat + s);
        assert_eq!(
            p,
            Plan {
                ready: None,
                drain: false,
                stale: false,
                recheck: Some(beat + s * 3)
            }
        );
        let p = plan(&t, beat + s * 3);
        let ready = p.ready.unwrap();
        assert_eq!((ready.status, ready.reason), ("False", "HeartbeatTimeout"));
        assert!(
            ready.message.contains("2026-01-01T01:00:00Z"),
            "{}",
            ready.message
        );
        assert!(p.stale);
        // Already written: nothing more to write, still stale.
        let mut written = t.clone();
        set_condition(
            &mut written,
            &wanted_ready(&health(&t, beat + s * 3), chrono::Duration::seconds(2)).unwrap(),
            "2026-01-01T01:00:03Z",
            false,
        );
        let p = plan(&written, beat + s * 3);
        assert!(p.ready.is_none() && p.stale);
        let stale = stale_condition("root/east", &health(&t, beat + s * 3));
        assert_eq!(
            stale.message,
            "status is stale: SyncTarget root/east last heartbeat at 2026-01-01T01:00:00Z"
        );
    }

    /// A target being deleted drains once its syncer reported Drained, or when it has no
    /// live syncer; a live one is waited for until its heartbeat deadline.
    #[test]
    fn a_deleted_target_drains_without_a_live_syncer() {
        let beat = at("2026-01-01T01:00:00Z");
        let s = chrono::Duration::seconds(1);
        let mut t = target(json!({"lastHeartbeatTime": "2026-01-01T01:00:00Z"}));
        t["metadata"]["deletionTimestamp"] = json!("2026-01-01T01:00:00Z");
        let p = plan(&t, beat + s);
        assert!(!p.drain && !p.stale);
        assert_eq!(p.recheck, Some(beat + s * 3));
        assert!(plan(&t, beat + s * 3).drain);
        assert!(
            !plan(&t, beat + s * 3).stale,
            "a deleted target drains instead"
        );
        t["status"]["conditions"] = json!([{"type": "Drained", "status": "True"}]);
        assert!(plan(&t, beat + s).drain);
        // Never heartbeated: drains at once.
        let mut never = target(json!({}));
        never["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:01Z");
        assert!(plan(&never, at("2026-01-01T00:00:01Z")).drain);
        // Without its finalizer there is nothing to hold.
        never["metadata"]["finalizers"] = json!([]);
        assert!(!plan(&never, at("2026-01-01T00:00:01Z")).drain);
    }

    #[test]
    fn set_condition_keeps_the_transition_time_while_the_status_stays() {
        let mut job = json!({"status": {"conditions": [
            {"type": "Complete", "status": "True"},
            {"type": "Synced", "status": "True", "reason": "Synced", "lastTransitionTime": "t0"}]}});
        let c = stale_condition(
            "root/east",
            &Health::TimedOut {
                last: None,
                since: at("2026-01-01T00:00:00Z"),
            },
        );
        set_condition(&mut job, &c, "t1", true);
        let synced = &job["status"]["conditions"][1];
        assert_eq!(synced["status"], "False");
        assert_eq!(synced["lastTransitionTime"], "t1");
        assert_eq!(synced["lastProbeTime"], "t1");
        assert!(has_condition(&job, &c));
        let d = deleted_condition("root/east");
        assert!(!has_condition(&job, &d));
        set_condition(&mut job, &d, "t2", true);
        let synced = &job["status"]["conditions"][1];
        assert_eq!(
            (
                synced["reason"].as_str(),
                synced["lastTransitionTime"].as_str()
            ),
            (Some("SyncTargetDeleted"), Some("t1"))
        );
        assert_eq!(job["status"]["conditions"].as_array().unwrap().len(), 2);
        let mut bare = json!({});
        set_condition(&mut bare, &d, "t3", false);
        assert_eq!(bare["status"]["conditions"][0]["type"], "Synced");
        assert!(bare["status"]["conditions"][0]
            .get("lastProbeTime")
            .is_none());
    }

    use crate::builtin_types::builtin;
    use crate::catalog::Catalog;
    use crate::testing::{create_all, target as target_of};
    use kplane_storage::Storage;
    use kplane_types::ClusterScope;

    /// A registry with its controllers running; dropping it stops them.
    struct Running {
        reg: Arc<Registry>,
        storage: Arc<dyn Storage>,
        _controllers: crate::controllers::Controllers,
        _shutdown: tokio::sync::watch::Sender<bool>,
        _dir: tempfile::TempDir,
    }

    async fn running() -> Running {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> = crate::testing::memory_store();
        let catalog = Arc::new(Catalog::new(builtin()));
        let (tx, shutdown) = tokio::sync::watch::channel(false);
        let (reg, queue) = Registry::with_admission(
            storage.clone(),
            catalog,
            String::new(),
            shutdown,
            crate::admission::Admission::recommended(),
        );
        reg.ensure_cluster(&ClusterName::root()).await.unwrap();
        let controllers = crate::controllers::start(&reg, queue, Duration::from_secs(3600), None);
        // The informer's first pass done (the collector's graph with it): from here on
        // every change is a live event, not folded into a first list that no longer shows
        // a SyncTarget deleted meanwhile.
        crate::testing::until("the informer follows", || async {
            reg.controller::<crate::controllers::gc::GarbageCollector>()
                .is_some_and(|gc| gc.synced())
        })
        .await;
        Running {
            reg,
            storage,
            _controllers: controllers,
            _shutdown: tx,
            _dir: dir,
        }
    }

    fn job(name: &str) -> Value {
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
               "spec": {"template": {"spec": {"restartPolicy": "Never",
                   "containers": [{"name": "c", "image": "busybox"}]}}}})
    }

    fn sync_target_t(reg: &Registry, cluster: &ClusterName) -> Target {
        let rt = reg
            .builtin_catalog()
            .get(SYNC_GROUP, SYNC_VERSION, SYNC_TARGETS)
            .unwrap()
            .clone();
        Target::new(cluster, rt, None)
    }

    fn in_cluster(mut t: Target, cluster: &ClusterName) -> Target {
        t.cluster = ClusterScope::One(cluster.clone());
        t
    }

    async fn create_ns(reg: &Registry, cluster: &ClusterName, name: &str, labels: Value) {
        let t = in_cluster(target_of(reg, "", "namespaces", None), cluster);
        let ns = json!({"apiVersion": "v1", "kind": "Namespace",
                        "metadata": {"name": name, "labels": labels}});
        reg.create(&t, ns, &WriteParams::default()).await.unwrap();
    }

    /// Every stored Job of `cluster`/`ns`, decoded.
    async fn jobs_of(reg: &Registry, cluster: &ClusterName, ns: &str) -> Vec<Value> {
        let prefix = Prefix {
            cluster: Clusters::One(cluster.as_str().into()),
            resource: Some("batch/jobs".into()),
            namespace: Some(ns.into()),
        };
        reg.storage
            .list(&prefix, &Default::default(), None)
            .await
            .unwrap()
            .items
            .iter()
            .map(|kv| serde_json::from_slice(&kv.value).unwrap())
            .collect()
    }

    async fn stored_target(reg: &Registry, cluster: &ClusterName, name: &str) -> Option<Value> {
        let key = Key::new(cluster.as_str(), SYNC_TARGET_RESOURCE, "", name);
        read_json(reg, &key).await.unwrap().map(|(_, v)| v)
    }

    fn synced_reason(job: &Value) -> Option<&str> {
        condition(job, SYNCED_CONDITION)
            .filter(|c| c["status"] == "False")
            .and_then(|c| c["reason"].as_str())
    }

    fn holds_syncer(job: &Value) -> bool {
        meta::finalizers(job).iter().any(|f| f == SYNCER_FINALIZER)
    }

    /// 1,201 Jobs (more than a page and a write batch) that predate their SyncTarget are
    /// assigned to it; without a heartbeat its Ready turns False and every Job gets
    /// Synced=False SyncerHeartbeatTimeout; a heartbeat makes it Ready again (and kplane
    /// leaves it so); deleted while the syncer is live, it waits for the heartbeat to time
    /// out, then every Job gets Synced=False SyncTargetDeleted and loses the annotation and
    /// the syncer finalizer, and the target goes.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_target_assigns_times_out_and_drains_its_jobs() {
        let r = running().await;
        let reg = &r.reg;
        let root = ClusterName::root();
        create_ns(reg, &root, "d", json!({})).await;
        let jobs_t = target_of(reg, "batch", "jobs", Some("d"));
        let n = 1201;
        assert!(
            n > PAGE.max(WRITE_BATCH),
            "more than a page and a write batch"
        );
        create_all(
            reg,
            &jobs_t,
            (0..n).map(|i| job(&format!("j-{i:04}"))).collect(),
        )
        .await;
        let w = WriteParams::default();
        let st = sync_target_t(reg, &root);
        let east = json!({"apiVersion": "sync.kplane.io/v1alpha1", "kind": "SyncTarget",
                          "metadata": {"name": "east"}, "spec": {"heartbeatTimeoutSeconds": 1}});
        reg.create(&st, east, &w).await.unwrap();
        crate::testing::until("every Job assigned", || async {
            jobs_of(reg, &root, "d")
                .await
                .iter()
                .all(|j| assigned_to(j) == Some("root/east") && holds_syncer(j))
        })
        .await;
        crate::testing::until("Ready=False and every Job stale", || async {
            let t = stored_target(reg, &root, "east").await.unwrap();
            let ready = condition(&t, "Ready").cloned().unwrap_or_default();
            ready["status"] == "False"
                && ready["reason"] == "HeartbeatTimeout"
                && jobs_of(reg, &root, "d")
                    .await
                    .iter()
                    .all(|j| synced_reason(j) == Some("SyncerHeartbeatTimeout"))
        })
        .await;
        let j = &jobs_of(reg, &root, "d").await[0];
        let msg = condition(j, SYNCED_CONDITION).unwrap()["message"]
            .as_str()
            .unwrap();
        assert!(
            msg.starts_with("status is stale: SyncTarget root/east has had no heartbeat"),
            "{msg}"
        );

        // A Job created during the outage (assigned by admission) is marked too.
        reg.create(&jobs_t, job("during"), &w).await.unwrap();
        crate::testing::until("the new Job stale", || async {
            let j = reg.get_stored(&jobs_t, "during").await.unwrap().unwrap();
            let j: Value = serde_json::from_slice(&j.value).unwrap();
            assigned_to(&j) == Some("root/east")
                && synced_reason(&j) == Some("SyncerHeartbeatTimeout")
        })
        .await;

        // A heartbeat (as the syncer writes it): Ready=True, which kplane leaves alone
        // while it is fresh. Kept fresh by a writer until the target is deleted.
        let beat = |reg: Arc<Registry>| async move {
            let st = sync_target_t(&reg, &ClusterName::root());
            let mut t = stored_target(&reg, &ClusterName::root(), "east")
                .await
                .unwrap();
            let now = meta::now_time();
            t["status"]["lastHeartbeatTime"] = json!(now);
            t["status"]["conditions"] = json!([{"type": "Ready", "status": "True",
                "reason": "HeartbeatReceived", "message": "", "lastTransitionTime": now}]);
            let _ = reg
                .update(&st, "east", Some("status"), t, &WriteParams::default())
                .await;
        };
        // Two seconds while heartbeats must keep it fresh on a busy machine.
        reg.patch(
            &st,
            "east",
            None,
            crate::patch::PatchType::Merge,
            crate::patch::Document::new(json!({"spec": {"heartbeatTimeoutSeconds": 2}})),
            &w,
        )
        .await
        .unwrap();
        beat(reg.clone()).await;
        let ready = condition(&stored_target(reg, &root, "east").await.unwrap(), "Ready")
            .unwrap()
            .clone();
        assert_eq!(ready["status"], "True", "{ready}");
        let beating = {
            let reg = reg.clone();
            tokio::spawn(async move {
                loop {
                    beat(reg.clone()).await;
                    tokio::time::sleep(Duration::from_millis(200)).await;
                }
            })
        };
        tokio::time::sleep(Duration::from_millis(1500)).await;
        let ready = condition(&stored_target(reg, &root, "east").await.unwrap(), "Ready")
            .unwrap()
            .clone();
        assert_eq!(
            ready["status"], "True",
            "fresh heartbeats keep it Ready: {ready}"
        );

        // Deleted with a live syncer: held until the syncer stops.
        reg.delete(&st, "east", &Default::default()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert!(stored_target(reg, &root, "east").await.is_some());
        assert!(jobs_of(reg, &root, "d")
            .await
            .iter()
            .all(|j| assigned_to(j).is_some()));
        beating.abort();
        crate::testing::until("the target drained and gone", || async {
            stored_target(reg, &root, "east").await.is_none()
        })
        .await;
        let jobs = jobs_of(reg, &root, "d").await;
        assert_eq!(jobs.len(), n + 1);
        for j in &jobs {
            assert_eq!(assigned_to(j), None, "{j}");
            assert!(!holds_syncer(j), "{j}");
            assert_eq!(synced_reason(j), Some("SyncTargetDeleted"), "{j}");
        }
        r.storage.shutdown().await.unwrap();
    }

    /// The rule decides among targets: a namespace selector, the nearest cluster, a
    /// parent's target that includes descendants. An unassigned Job is assigned when its
    /// namespace's labels change so that a selector matches; a target without a syncer
    /// deleted at once releases its Jobs (and a Job being deleted is let go).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn assignment_follows_selectors_scopes_and_namespace_labels() {
        let r = running().await;
        let reg = &r.reg;
        let w = WriteParams::default();
        let root = ClusterName::root();
        let child = ClusterName::parse("root:team").unwrap();
        reg.ensure_cluster(&child).await.unwrap();
        create_ns(reg, &root, "gpu", json!({"gpu": "yes"})).await;
        create_ns(reg, &root, "plain", json!({})).await;
        create_ns(reg, &child, "c", json!({})).await;
        let jobs_in = |cluster: &ClusterName, ns: &str| {
            in_cluster(target_of(reg, "batch", "jobs", Some(ns)), cluster)
        };
        for (cluster, ns) in [(&root, "gpu"), (&root, "plain"), (&child, "c")] {
            reg.create(&jobs_in(cluster, ns), job("j"), &w)
                .await
                .unwrap();
        }
        let st = |c: &ClusterName| sync_target_t(reg, c);
        let spec = |name: &str, spec: Value| {
            json!({"apiVersion": "sync.kplane.io/v1alpha1", "kind": "SyncTarget",
                   "metadata": {"name": name}, "spec": spec})
        };
        reg.create(
            &st(&root),
            spec(
                "gpus",
                json!({"namespaceSelector": {"matchLabels": {"gpu": "yes"}}}),
            ),
            &w,
        )
        .await
        .unwrap();
        reg.create(&st(&root), spec("wide", json!({"includeDescendants": true, "namespaceSelector": {"matchLabels": {"team": "x"}}})), &w)
            .await
            .unwrap();
        let one = |cluster: ClusterName, ns: &'static str| {
            let reg = reg.clone();
            async move { jobs_of(&reg, &cluster, ns).await.remove(0) }
        };
        crate::testing::until("the gpu Job assigned", || async {
            assigned_to(&one(root.clone(), "gpu").await) == Some("root/gpus")
        })
        .await;
        assert_eq!(assigned_to(&one(root.clone(), "plain").await), None);
        assert_eq!(assigned_to(&one(child.clone(), "c").await), None);

        // Labels that now match: the child's namespace goes to the parent's wide target.
        let nst = in_cluster(target_of(reg, "", "namespaces", None), &child);
        reg.patch(
            &nst,
            "c",
            None,
            crate::patch::PatchType::Merge,
            crate::patch::Document::new(json!({"metadata": {"labels": {"team": "x"}}})),
            &w,
        )
        .await
        .unwrap();
        crate::testing::until(
            "the child's Job assigned to the parent's target",
            || async { assigned_to(&one(child.clone(), "c").await) == Some("root/wide") },
        )
        .await;
        // An unassigned Job (its namespace matches no selector), then a target of the
        // child itself: the new target is the nearest for it; the Job already assigned
        // stays where it is.
        create_ns(reg, &child, "c2", json!({})).await;
        reg.create(&jobs_in(&child, "c2"), job("k"), &w)
            .await
            .unwrap();
        assert_eq!(assigned_to(&one(child.clone(), "c2").await), None);
        reg.create(&st(&child), spec("near", json!({})), &w)
            .await
            .unwrap();
        crate::testing::until("the Job assigned to the nearest target", || async {
            assigned_to(&one(child.clone(), "c2").await) == Some("root:team/near")
        })
        .await;
        assert_eq!(
            assigned_to(&one(child.clone(), "c").await),
            Some("root/wide")
        );

        // A Job being deleted waits for the syncer's finalizer; deleting its target
        // (never heartbeated) releases it, and it goes.
        let gpu_jobs = jobs_in(&root, "gpu");
        reg.delete(&gpu_jobs, "j", &Default::default())
            .await
            .unwrap();
        assert!(!jobs_of(reg, &root, "gpu").await.is_empty());
        reg.delete(&st(&root), "gpus", &Default::default())
            .await
            .unwrap();
        crate::testing::until("the released Job gone", || async {
            jobs_of(reg, &root, "gpu").await.is_empty()
        })
        .await;
        crate::testing::until("the target gone", || async {
            stored_target(reg, &root, "gpus").await.is_none()
        })
        .await;
        r.storage.shutdown().await.unwrap();
    }

    /// A target that includes descendants assigns the Jobs that predate it in a
    /// grandchild workspace, marks them stale and drains them there.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_target_over_descendants_reaches_their_jobs() {
        let r = running().await;
        let reg = &r.reg;
        let w = WriteParams::default();
        let root = ClusterName::root();
        let deep = ClusterName::parse("root:x:y").unwrap();
        let sibling = ClusterName::parse("root:z").unwrap();
        for c in [&ClusterName::parse("root:x").unwrap(), &deep, &sibling] {
            reg.ensure_cluster(c).await.unwrap();
            create_ns(reg, c, "d", json!({})).await;
            let t = in_cluster(target_of(reg, "batch", "jobs", Some("d")), c);
            reg.create(&t, job("j"), &w).await.unwrap();
        }
        let st = sync_target_t(reg, &ClusterName::parse("root:x").unwrap());
        let all = json!({"apiVersion": "sync.kplane.io/v1alpha1", "kind": "SyncTarget",
            "metadata": {"name": "all"},
            "spec": {"includeDescendants": true, "heartbeatTimeoutSeconds": 1}});
        reg.create(&st, all, &w).await.unwrap();
        crate::testing::until("the grandchild's Job stale", || async {
            let j = jobs_of(reg, &deep, "d").await.remove(0);
            assigned_to(&j) == Some("root:x/all")
                && synced_reason(&j) == Some("SyncerHeartbeatTimeout")
        })
        .await;
        // Outside the subtree: untouched.
        let other = jobs_of(reg, &sibling, "d").await.remove(0);
        assert_eq!(assigned_to(&other), None);
        assert!(jobs_of(reg, &root, "d").await.is_empty());
        reg.delete(&st, "all", &Default::default()).await.unwrap();
        crate::testing::until("the grandchild's Job released", || async {
            let j = jobs_of(reg, &deep, "d").await.remove(0);
            assigned_to(&j).is_none()
                && !holds_syncer(&j)
                && synced_reason(&j) == Some("SyncTargetDeleted")
        })
        .await;
        r.storage.shutdown().await.unwrap();
    }

    /// A SyncTarget that goes without its drain (the finalizer removed by hand) still has
    /// its objects released, by its last state.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn objects_of_a_target_gone_without_a_drain_are_released() {
        let r = running().await;
        let reg = &r.reg;
        let w = WriteParams::default();
        let root = ClusterName::root();
        create_ns(reg, &root, "d", json!({})).await;
        let st = sync_target_t(reg, &root);
        let east = json!({"apiVersion": "sync.kplane.io/v1alpha1", "kind": "SyncTarget",
                          "metadata": {"name": "east"}});
        reg.create(&st, east, &w).await.unwrap();
        let jobs_t = target_of(reg, "batch", "jobs", Some("d"));
        reg.create(&jobs_t, job("j"), &w).await.unwrap();
        assert_eq!(
            assigned_to(&jobs_of(reg, &root, "d").await[0]),
            Some("root/east")
        );
        reg.patch(
            &st,
            "east",
            None,
            crate::patch::PatchType::Merge,
            crate::patch::Document::new(json!({"metadata": {"finalizers": null}})),
            &w,
        )
        .await
        .unwrap();
        reg.delete(&st, "east", &Default::default()).await.unwrap();
        assert!(stored_target(reg, &root, "east").await.is_none());
        crate::testing::until("the Job released", || async {
            let j = jobs_of(reg, &root, "d").await.remove(0);
            assigned_to(&j).is_none()
                && !holds_syncer(&j)
                && synced_reason(&j) == Some("SyncTargetDeleted")
        })
        .await;
        crate::testing::until("nothing left to release", || async {
            with_gone(reg, |g| g.is_empty())
        })
        .await;
        r.storage.shutdown().await.unwrap();
    }
}
