//! The `ResourceQuota` validating admission plugin (upstream's `ResourceQuota` plugin with
//! its object-count evaluators): a create in a namespace whose quotas limit it — a
//! quota's `status.hard` names `count/<resource>[.<group>]` of the request's resource,
//! or its legacy name (`configmaps`, `secrets`, `resourcequotas`) — is checked against
//! each such quota: refused (403) when a counted name has no usage in the status yet
//! (`status unknown for quota: <name>, resources: <names>`), or when one more would pass
//! `status.hard` (`exceeded quota: <name>, requested: <r>=1, used: <r>=<n>, limited:
//! <r>=<n>`); otherwise each quota's `status.used` is raised by one, written with the
//! resourceVersion read as precondition, before the object is stored. A dry run is
//! checked and not recorded. Updates, subresources and pods (reflections of host pods the
//! syncer writes, which the host's own quotas admit) are not counted here; the controller
//! counts pods.
//!
//! As upstream's evaluator, one namespace's creates are checked together: each waits in
//! its namespace's queue, and whoever holds the namespace's lock takes every create
//! waiting, reads the quotas once, decides each create in arrival order (each accepted
//! one raising the usage the next one is checked against) and writes each quota once for
//! the batch. So concurrent creates neither fail each other's status writes nor pay one
//! status write each. A status write that conflicts (a controller wrote the quota
//! meanwhile) reads that quota again and decides the batch's accepted creates against it
//! once more, three times at most; a create refused then may already have been counted in
//! another quota, which the controller's recount puts right within seconds.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, Weak};

use kplane_storage::{KeyValue, Prefix};
use kplane_types::{ClusterName, Status};
use serde_json::{json, Map, Value};
use tokio::sync::oneshot;

use super::validation::parse_list;
use super::{count_name, legacy_count_name, RESOURCE};
use crate::admission::chain::{Attributes, Operation, ValidatingAdmission};
use crate::error::{ApiError, ApiResult};
use crate::options::{WriteParams, APISERVER_MANAGER};
use crate::quantity::Quantity;
use crate::{Registry, Target};

/// The plugin's name (as upstream's).
pub const PLUGIN: &str = "ResourceQuota";

/// How long a create waits for its quota check.
pub const EVALUATION_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Reads of a quota after the first, when its status write conflicts.
const RETRIES: usize = 3;

/// Namespaces whose queue map is swept of unused entries when it grows past this.
pub(crate) const SWEEP_AT: usize = 1024;

/// What a create waiting in its namespace's queue is told.
type Verdict = Result<(), Refusal>;

/// Why a create is refused.
#[derive(Debug)]
enum Refusal {
    /// A quota refuses it: the text after `is forbidden: `.
    Quota(String),
    /// Reading or writing the quotas failed.
    Error(ApiError),
}

/// One create waiting for its namespace's quota check.
struct Pending {
    /// The quota names one more of which it uses.
    names: Vec<String>,
    dry_run: bool,
    reply: oneshot::Sender<Verdict>,
}

/// One namespace's queue of creates and the lock of whoever checks them.
#[derive(Default)]
pub(crate) struct NamespaceQueue {
    lock: tokio::sync::Mutex<()>,
    waiting: Mutex<Vec<Pending>>,
}

impl NamespaceQueue {
    fn push(&self, names: &[String], dry_run: bool) -> oneshot::Receiver<Verdict> {
        let (reply, rx) = oneshot::channel();
        self.waiting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(Pending {
                names: names.to_vec(),
                dry_run,
                reply,
            });
        rx
    }

    fn take(&self) -> Vec<Pending> {
        std::mem::take(&mut *self.waiting.lock().unwrap_or_else(|e| e.into_inner()))
    }
}

/// The plugin.
#[derive(Default)]
pub struct ResourceQuotaAdmission {
    /// "cluster/namespace" → its queue (kept only while in use).
    queues: Mutex<HashMap<String, Weak<NamespaceQueue>>>,
}

impl std::fmt::Debug for ResourceQuotaAdmission {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("ResourceQuotaAdmission")
    }
}

impl ResourceQuotaAdmission {
    /// The queue of `cluster`'s `namespace`.
    pub(crate) fn queue_of(&self, cluster: &str, namespace: &str) -> Arc<NamespaceQueue> {
        let mut queues = self.queues.lock().unwrap_or_else(|e| e.into_inner());
        let key = format!("{cluster}/{namespace}");
        if let Some(q) = queues.get(&key).and_then(Weak::upgrade) {
            return q;
        }
        if queues.len() >= SWEEP_AT {
            queues.retain(|_, w| w.strong_count() > 0);
        }
        let q = Arc::new(NamespaceQueue::default());
        queues.insert(key, Arc::downgrade(&q));
        q
    }

    /// Entries in the queue map (tests).
    #[cfg(test)]
    pub(crate) fn queues(&self) -> usize {
        self.queues.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// `prettyPrint`: `name=value` pairs in name order, joined by commas.
fn pretty(list: &BTreeMap<String, Quantity>) -> String {
    list.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// One quota as a batch sees it: its stored object and the usage the batch has reached.
struct QuotaState {
    kv: KeyValue,
    obj: Value,
    hard: BTreeMap<String, Quantity>,
    used: BTreeMap<String, Quantity>,
    /// Whether the batch raised its usage.
    raised: bool,
    /// Whether the quota has scopes ([`super::is_scoped`]).
    scoped: bool,
}

impl QuotaState {
    fn of(kv: KeyValue) -> ApiResult<QuotaState> {
        let obj: Value = serde_json::from_slice(&kv.value).map_err(|e| crate::corrupt(&e))?;
        Ok(QuotaState {
            scoped: super::is_scoped(&obj),
            hard: parse_list(obj.pointer("/status/hard")),
            used: parse_list(obj.pointer("/status/used")),
            kv,
            obj,
            raised: false,
        })
    }

    /// The names of `names` this quota limits (none when it is scoped: object counts
    /// never match a scoped quota).
    fn limited<'a>(&self, names: &'a [String]) -> Vec<&'a String> {
        if self.scoped {
            return Vec::new();
        }
        names
            .iter()
            .filter(|n| self.hard.contains_key(*n))
            .collect()
    }

    /// The quota's object with the batch's usage in `status.used` (other entries kept).
    fn written(&self) -> Value {
        let mut obj = self.obj.clone();
        let mut used: Map<String, Value> = obj
            .pointer("/status/used")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        for (k, v) in &self.used {
            if used.contains_key(k) || self.hard.contains_key(k) {
                used.insert(k.clone(), json!(v.to_string()));
            }
        }
        if !obj.get("status").is_some_and(Value::is_object) {
            obj["status"] = json!({});
        }
        obj["status"]["used"] = Value::Object(used);
        obj["metadata"]["resourceVersion"] = json!(self.kv.mod_revision.to_string());
        obj
    }
}

/// Upstream's `CheckRequest` for one create of `names` against `quotas` (in order): the
/// refusal's text, or the indexes of the quotas it raises (the usage is raised when
/// `apply`).
fn decide(quotas: &mut [QuotaState], names: &[String], apply: bool) -> Result<(), String> {
    for q in quotas.iter() {
        let limited = q.limited(names);
        if !limited.is_empty() && limited.iter().any(|n| !q.used.contains_key(*n)) {
            let mut shown: Vec<&str> = limited.iter().map(|s| s.as_str()).collect();
            shown.sort_unstable();
            return Err(format!(
                "status unknown for quota: {}, resources: {}",
                q.kv.key.name,
                shown.join(",")
            ));
        }
    }
    let one = Quantity::count(1);
    for q in quotas.iter() {
        let exceeded: Vec<&String> = q
            .limited(names)
            .into_iter()
            .filter(|n| {
                q.used[*n]
                    .checked_add(&one)
                    .is_none_or(|next| next > q.hard[*n])
            })
            .collect();
        if exceeded.is_empty() {
            continue;
        }
        let mask = |l: &BTreeMap<String, Quantity>| -> BTreeMap<String, Quantity> {
            exceeded
                .iter()
                .filter_map(|k| Some(((*k).clone(), *l.get(*k)?)))
                .collect()
        };
        let requested: BTreeMap<String, Quantity> =
            exceeded.iter().map(|k| ((*k).clone(), one)).collect();
        return Err(format!(
            "exceeded quota: {}, requested: {}, used: {}, limited: {}",
            q.kv.key.name,
            pretty(&requested),
            pretty(&mask(&q.used)),
            pretty(&mask(&q.hard))
        ));
    }
    if apply {
        for q in quotas.iter_mut().filter(|q| !q.scoped) {
            for n in names {
                if q.hard.contains_key(n) {
                    if let Some(u) = q.used.get_mut(n) {
                        *u = u.checked_add(&one).unwrap_or(*u);
                        q.raised = true;
                    }
                }
            }
        }
    }
    Ok(())
}

impl Registry {
    /// The quotas of `namespace` in `cluster`, as stored.
    pub(crate) async fn namespace_quotas(
        &self,
        cluster: &ClusterName,
        namespace: &str,
    ) -> ApiResult<Vec<KeyValue>> {
        let prefix = Prefix {
            cluster: kplane_storage::Clusters::One(cluster.as_str().into()),
            resource: Some(RESOURCE.into()),
            namespace: Some(namespace.into()),
        };
        Ok(self
            .storage
            .list(&prefix, &Default::default(), None)
            .await
            .map_err(ApiError::from)?
            .items)
    }

    /// The target of ResourceQuotas in `namespace`.
    pub(crate) fn quota_target(&self, cluster: &ClusterName, namespace: &str) -> Option<Target> {
        let rt = self
            .builtin_catalog()
            .get("", "v1", "resourcequotas")?
            .clone();
        Some(Target::new(cluster, rt, Some(namespace.to_string())))
    }

    /// Checks and records a batch of creates of `namespace` (see the module doc); every
    /// create of it is told its verdict.
    async fn check_quota_batch(&self, cluster: &ClusterName, namespace: &str, batch: Vec<Pending>) {
        let quotas = match self.namespace_quotas(cluster, namespace).await {
            Ok(q) => q,
            Err(e) => return fail_all(batch, &e),
        };
        let mut states = Vec::with_capacity(quotas.len());
        for kv in quotas {
            match QuotaState::of(kv) {
                Ok(s) => states.push(s),
                Err(e) => return fail_all(batch, &e),
            }
        }
        // Decided in arrival order; the accepted ones wait for the writes.
        let mut accepted = Vec::new();
        for p in batch {
            match decide(&mut states, &p.names, !p.dry_run) {
                Err(why) => {
                    let _ = p.reply.send(Err(Refusal::Quota(why)));
                }
                Ok(()) if p.dry_run => {
                    let _ = p.reply.send(Ok(()));
                }
                Ok(()) => accepted.push(p),
            }
        }
        let Some(t) = self.quota_target(cluster, namespace) else {
            return reply_all(accepted);
        };
        let w = WriteParams::controller_named(APISERVER_MANAGER);
        for state in states.iter_mut() {
            if !state.raised || accepted.is_empty() {
                continue;
            }
            let mut attempt = 0;
            loop {
                let name = state.kv.key.name.clone();
                match self
                    .update(&t, &name, Some("status"), state.written(), &w)
                    .await
                {
                    Ok(_) => break,
                    Err(e) if (e.code() == 409 || e.code() == 404) && attempt < RETRIES => {
                        attempt += 1;
                        // Read this quota again and decide the accepted creates against it.
                        let fresh = match self.get_stored(&t, &name).await {
                            Ok(Some(kv)) => kv,
                            // Gone: it limits nothing any more.
                            Ok(None) => break,
                            Err(e) => return fail_all(accepted, &e),
                        };
                        *state = match QuotaState::of(fresh) {
                            Ok(s) => s,
                            Err(e) => return fail_all(accepted, &e),
                        };
                        let mut still = Vec::with_capacity(accepted.len());
                        for p in accepted {
                            match decide(std::slice::from_mut(state), &p.names, true) {
                                Err(why) => {
                                    let _ = p.reply.send(Err(Refusal::Quota(why)));
                                }
                                Ok(()) => still.push(p),
                            }
                        }
                        accepted = still;
                        if !state.raised || accepted.is_empty() {
                            break;
                        }
                    }
                    Err(e) => return fail_all(accepted, &e),
                }
            }
        }
        reply_all(accepted)
    }
}

/// Tells every create of `batch` that it may be stored.
fn reply_all(batch: Vec<Pending>) {
    for p in batch {
        let _ = p.reply.send(Ok(()));
    }
}

/// Tells every create of `batch` that the check failed with `e`.
fn fail_all(batch: Vec<Pending>, e: &ApiError) {
    for p in batch {
        let _ = p.reply.send(Err(Refusal::Error(e.clone())));
    }
}

#[async_trait::async_trait]
impl ValidatingAdmission<Registry> for ResourceQuotaAdmission {
    fn name(&self) -> &'static str {
        PLUGIN
    }

    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }

    async fn validate(
        &self,
        reg: &Registry,
        a: &Attributes<'_>,
        obj: Option<&Value>,
    ) -> ApiResult<()> {
        let rt = a.resource;
        if a.operation != Operation::Create
            || a.subresource.is_some()
            || a.namespace.is_empty()
            || !rt.namespaced
            || (rt.group.is_empty() && rt.plural == "pods")
            || !rt.is_stored()
            || super::ignored(&rt.group, &rt.plural)
            || !reg
                .quota_index()
                .has_quotas(a.cluster.as_str(), a.namespace)
        {
            return Ok(());
        }
        let mut names = vec![count_name(&rt.group, &rt.plural)];
        names.extend(legacy_count_name(&rt.group, &rt.plural).map(str::to_string));
        let queue = self.queue_of(a.cluster.as_str(), a.namespace);
        let mut rx = queue.push(&names, a.dry_run);
        let wait = async {
            loop {
                let _held = queue.lock.lock().await;
                match rx.try_recv() {
                    Ok(v) => break v,
                    // Taken by a check whose request was cancelled before it answered.
                    Err(oneshot::error::TryRecvError::Closed) => rx = queue.push(&names, a.dry_run),
                    Err(oneshot::error::TryRecvError::Empty) => {}
                }
                let batch = queue.take();
                reg.check_quota_batch(a.cluster, a.namespace, batch).await;
            }
        };
        // Upstream's evaluator gives up after ten seconds (a slow webhook on the quota's
        // status, a store that does not answer).
        let Ok(verdict) = tokio::time::timeout(EVALUATION_TIMEOUT, wait).await else {
            return Err(ApiError::internal("resource quota evaluation timed out"));
        };
        match verdict {
            Ok(()) => Ok(()),
            Err(Refusal::Error(e)) => Err(e),
            Err(Refusal::Quota(why)) => {
                // `admission.NewForbidden`: the object's name, else its generateName.
                let meta = obj.and_then(|o| o.get("metadata"));
                let name = [a.name]
                    .into_iter()
                    .chain(meta.and_then(|m| m.get("name")).and_then(Value::as_str))
                    .chain(
                        meta.and_then(|m| m.get("generateName"))
                            .and_then(Value::as_str),
                    )
                    .find(|s| !s.is_empty())
                    .unwrap_or("Unknown");
                Err(ApiError::from(Status::forbidden(
                    &rt.group, &rt.plural, name, &why,
                )))
            }
        }
    }
}
