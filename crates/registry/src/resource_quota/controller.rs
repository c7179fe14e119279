//! The resource quota controller (kube-controller-manager's `resourcequota` controller):
//! keeps each quota's `status.hard` equal to its `spec.hard` and its `status.used` equal
//! to what its namespace uses of those names ([`super::usage`]), written through the
//! `/status` subresource with the resourceVersion read as precondition.
//!
//! A namespace's quotas are synced as one work item ([`Quotas`]), queued
//! by the leader's informer handler ([`Feed`]): at once when a quota is replayed (every
//! informer pass, start-up included), created, or written with a status that does not
//! match its spec, when an object of a namespace holding quotas is deleted, and, for
//! every namespace of the cluster holding quotas, when a CRD changes (its
//! `count/<plural>.<group>` gains or loses a usage); a few seconds later
//! ([`RECHECK_AFTER`], [`Recheck`], one deadline per namespace however
//! many writes) when a quota's usage was raised by admission or an object was created
//! there, which puts right a create that failed after admission counted it and counts what
//! admission does not (pods). A recheck waits until no quota of the namespace was raised
//! for [`GRACE`], so that it never counts out a create admitted but not yet stored.
//! Namespaces without quotas cost one map lookup per event.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use kplane_storage::KeyValue;
use kplane_types::ClusterName;
use serde_json::{json, Map, Value};

use super::{CONTROLLER, RESOURCE};
use crate::controllers::informer::InformerHandler;
use crate::controllers::queue::{Controller, InNamespace};
use crate::controllers::runtime::{stored_cluster, write_failed};
use crate::crd::CRD_RESOURCE;
use crate::error::ApiResult;
use crate::options::WriteParams;
use crate::Registry;

/// How long after a create (or admission's raise of a usage) the namespace's quotas are
/// counted again.
pub const RECHECK_AFTER: Duration = Duration::from_secs(3);

/// How long after a quota's last raise a recheck waits before it may count again: the
/// creates admission counted by then have been stored (a recount between a create's
/// admission and its storage would count it out, letting one more create past the limit).
pub const GRACE: Duration = Duration::from_secs(2);

/// The status a quota should have, given what its namespace uses (`usage`): `hard` from
/// the spec, `used` for each hard name (the last observation kept for a name with no
/// usage now), empty lists left out as the Go type leaves them.
fn desired_status(quota: &Value, usage: &super::usage::Usage) -> Value {
    // Object counts never match a scoped quota: only the pods' names have a usage there,
    // over the pods its scopes match.
    let scopes = super::scopes::PodScopes::of(quota);
    let scoped = scopes.is_scoped();
    let hard = quota
        .pointer("/spec/hard")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let old_used = quota.pointer("/status/used").and_then(Value::as_object);
    let mut used = Map::new();
    for k in hard.keys() {
        if scoped && !super::usage::is_pod_name(k) {
            used.insert(k.clone(), json!("0"));
        } else if let Some(q) = usage.of(k, &scopes) {
            used.insert(k.clone(), json!(q.to_string()));
        } else if let Some(v) = old_used.and_then(|u| u.get(k)) {
            used.insert(k.clone(), v.clone());
        }
    }
    let mut status = Map::new();
    if !hard.is_empty() {
        status.insert("hard".into(), Value::Object(hard));
    }
    if !used.is_empty() {
        status.insert("used".into(), Value::Object(used));
    }
    Value::Object(status)
}

/// Syncs the status of every quota of `namespace` in `cluster`; false to be retried
/// (a write lost a race).
pub(crate) async fn sync_resource_quotas(
    reg: &Registry,
    cluster: &ClusterName,
    namespace: &str,
) -> ApiResult<bool> {
    let quotas = reg.namespace_quotas(cluster, namespace).await?;
    if quotas.is_empty() {
        return Ok(true);
    }
    let Some(t) = reg.quota_target(cluster, namespace) else {
        return Ok(true);
    };
    let mut decoded = Vec::with_capacity(quotas.len());
    let mut names = BTreeSet::new();
    for kv in &quotas {
        let q: Value = serde_json::from_slice(&kv.value).map_err(|e| crate::corrupt(&e))?;
        if let Some(h) = q.pointer("/spec/hard").and_then(Value::as_object) {
            names.extend(h.keys().cloned());
        }
        decoded.push((kv, q));
    }
    let names: Vec<String> = names.into_iter().collect();
    let usage = reg.quota_usage(cluster, namespace, &names).await?;
    let w = WriteParams::controller();
    let mut done = true;
    for (kv, mut q) in decoded {
        let status = desired_status(&q, &usage);
        let current = q.get("status").cloned().unwrap_or_else(|| json!({}));
        if current == status {
            continue;
        }
        q["status"] = status;
        q["metadata"]["resourceVersion"] = json!(kv.mod_revision.to_string());
        match reg.update(&t, &kv.key.name, Some("status"), q, &w).await {
            Ok(_) => {}
            // Deleted meanwhile: nothing to keep.
            Err(e) if e.code() == 404 => {}
            // Written meanwhile: count again.
            Err(e) if e.code() == 409 => done = false,
            Err(e) => {
                write_failed(
                    CONTROLLER,
                    cluster.as_str(),
                    &t.rt,
                    namespace,
                    &kv.key.name,
                    &e,
                );
                done = false;
            }
        }
    }
    Ok(done)
}

/// The recheck [`recheck_quotas_soon`] scheduled: a recount unless a quota of the
/// namespace was raised within [`GRACE`], in which case the recheck waits for it.
pub(crate) async fn settle_resource_quotas(
    reg: &Registry,
    cluster: &ClusterName,
    namespace: &str,
) -> ApiResult<bool> {
    if let Some(at) = reg
        .quota_index()
        .raised_within(cluster.as_str(), namespace, GRACE)
    {
        let key = InNamespace::new(cluster.clone(), namespace);
        if let Some(w) = reg.work::<Recheck>(key) {
            let due = tokio::time::Instant::from_std(at + GRACE + Duration::from_millis(100));
            reg.controllers.timers.schedule_unless_sooner(w, due);
        }
        return Ok(true);
    }
    sync_resource_quotas(reg, cluster, namespace).await
}

/// Counts `namespace`'s quotas again after [`RECHECK_AFTER`] (an earlier deadline
/// already set is kept). Only where the controllers run.
pub(crate) fn recheck_quotas_soon(reg: &Registry, cluster: &ClusterName, namespace: &str) {
    if !reg.leads() {
        return;
    }
    let Some(w) = reg.work::<Recheck>(InNamespace::new(cluster.clone(), namespace)) else {
        return;
    };
    reg.controllers
        .timers
        .schedule_unless_sooner(w, tokio::time::Instant::now() + RECHECK_AFTER);
}

/// Whether a quota's stored status is what the controller leaves (`hard` equal to the
/// spec's, a usage for every hard name); one that is not is synced at once.
fn status_settled(quota: &Value) -> bool {
    let spec = quota.pointer("/spec/hard").and_then(Value::as_object);
    let hard = quota.pointer("/status/hard").and_then(Value::as_object);
    let used = quota.pointer("/status/used").and_then(Value::as_object);
    let empty = Map::new();
    let spec = spec.unwrap_or(&empty);
    spec == hard.unwrap_or(&empty) && spec.keys().all(|k| used.is_some_and(|u| u.contains_key(k)))
}

/// The controller's informer handler (on the leader).
pub(crate) struct Feed(pub(crate) Arc<Registry>);

impl InformerHandler for Feed {
    fn on_resync(&self) {}

    fn on_object(&self, kv: &KeyValue, deleted: bool, replay: bool) {
        let (reg, key) = (&self.0, &kv.key);
        if key.resource == CRD_RESOURCE && !replay {
            // A CRD came, changed or went: its `count/<plural>.<group>` may have a usage
            // now, or none any more.
            let Some(cluster) = stored_cluster(key) else {
                return;
            };
            for namespace in reg.quota_index().namespaces_of(&key.cluster) {
                reg.enqueue::<Quotas>(InNamespace::new(cluster.clone(), namespace));
            }
            return;
        }
        if key.namespace.is_empty() {
            return;
        }
        let is_quota = key.resource == RESOURCE;
        if !is_quota && (replay || !reg.quota_index().has_quotas(&key.cluster, &key.namespace)) {
            return;
        }
        let Some(cluster) = stored_cluster(key) else {
            return;
        };
        if reg.cluster_going(&cluster) {
            return;
        }
        let now = if is_quota {
            replay
                || deleted
                || serde_json::from_slice::<Value>(&kv.value).map_or(true, |q| !status_settled(&q))
        } else {
            deleted
        };
        if now {
            reg.enqueue::<Quotas>(InNamespace::new(cluster, key.namespace.clone()));
        } else {
            if is_quota {
                reg.quota_index().note_raise(&key.cluster, &key.namespace);
            }
            recheck_quotas_soon(reg, &cluster, &key.namespace);
        }
    }
}
/// The status of a namespace's ResourceQuotas.
pub struct Quotas;

impl Controller<Registry> for Quotas {
    type Key = InNamespace;

    fn name(&self) -> &'static str {
        CONTROLLER
    }

    async fn reconcile(&self, registry: &Registry, key: &InNamespace) -> ApiResult<bool> {
        sync_resource_quotas(registry, &key.cluster, &key.namespace).await
    }
}

/// The same, once admission's recent raises of the namespace's quotas have settled.
pub struct Recheck;

impl Controller<Registry> for Recheck {
    type Key = InNamespace;

    fn name(&self) -> &'static str {
        CONTROLLER
    }

    async fn reconcile(&self, registry: &Registry, key: &InNamespace) -> ApiResult<bool> {
        settle_resource_quotas(registry, &key.cluster, &key.namespace).await
    }
}
