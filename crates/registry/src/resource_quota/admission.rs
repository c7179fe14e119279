//! The `ResourceQuota` validating admission plugin (upstream's `ResourceQuota` plugin with
//! its object-count evaluators): a create in a namespace whose quotas limit it — a
//! quota's `status.hard` names `count/<resource>[.<group>]` of the request's resource,
//! or its legacy name (`configmaps`, `secrets`, `resourcequotas`) — is checked against
//! each such quota: refused (403) when a counted name has no usage in the status yet
//! (`status unknown for quota: <name>, resources: <names>`), or when one more would pass
//! `status.hard` (`exceeded quota: <name>, requested: <r>=1, used: <r>=<n>, limited:
//! <r>=<n>`); otherwise each quota's `status.used` is raised by one, written with the
//! resourceVersion read as precondition (a conflict reads the quotas again, three times
//! at most, as upstream retries), before the object is stored. A dry run is checked and
//! not recorded. Updates, subresources and pods (reflections of host pods the syncer
//! writes, which the host's own quotas admit) are not counted here; the controller counts
//! pods.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Weak};

use kplane_storage::{KeyValue, Prefix};
use kplane_types::{ClusterName, Status};
use serde_json::{json, Map, Value};

use super::validation::parse_list;
use super::{count_name, legacy_count_name, RESOURCE};
use crate::admission::{Attributes, Operation, ValidatingAdmission};
use crate::error::{ApiError, ApiResult};
use crate::options::{WriteParams, APISERVER_MANAGER};
use crate::quantity::Quantity;
use crate::{Registry, Target};

/// The plugin's name (as upstream's).
pub const PLUGIN: &str = "ResourceQuota";

/// Reads of the quotas after the first, when a status write conflicts.
const RETRIES: usize = 3;

/// Namespaces whose lock map is swept of unused entries when it grows past this.
pub(crate) const SWEEP_AT: usize = 1024;

/// The plugin. Creates counted in one namespace are checked and recorded one at a time
/// (upstream's evaluator runs one namespace's work in one worker), so that concurrent
/// creates queue instead of failing each other's status writes.
#[derive(Debug, Default)]
pub struct ResourceQuotaAdmission {
    /// "cluster/namespace" → the lock of its quota checks (held only while in use).
    locks: std::sync::Mutex<HashMap<String, Weak<tokio::sync::Mutex<()>>>>,
}

impl ResourceQuotaAdmission {
    /// The lock of `cluster`'s `namespace`.
    pub(crate) fn lock_of(&self, cluster: &str, namespace: &str) -> Arc<tokio::sync::Mutex<()>> {
        let mut locks = self.locks.lock().unwrap_or_else(|e| e.into_inner());
        let key = format!("{cluster}/{namespace}");
        if let Some(l) = locks.get(&key).and_then(Weak::upgrade) {
            return l;
        }
        if locks.len() >= SWEEP_AT {
            locks.retain(|_, w| w.strong_count() > 0);
        }
        let l = Arc::new(tokio::sync::Mutex::new(()));
        locks.insert(key, Arc::downgrade(&l));
        l
    }

    /// Entries in the lock map (tests).
    #[cfg(test)]
    pub(crate) fn locks(&self) -> usize {
        self.locks.lock().unwrap_or_else(|e| e.into_inner()).len()
    }
}

/// `prettyPrint`: `name=value` pairs in name order, joined by commas.
fn pretty(list: &BTreeMap<String, Quantity>) -> String {
    list.iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",")
}

/// What a request does to one quota.
enum Outcome {
    /// The quota does not limit the request's resource.
    Untouched,
    /// The quota's status with one more of each counted name.
    Raised(Value),
}

/// Checks one quota (`obj`, named `qname`) against a create of `names`; the refusal's text
/// when it must be refused.
fn check(qname: &str, quota: &Value, names: &[String]) -> Result<Outcome, String> {
    let hard = parse_list(quota.pointer("/status/hard"));
    let limited: Vec<&String> = names.iter().filter(|n| hard.contains_key(*n)).collect();
    if limited.is_empty() {
        return Ok(Outcome::Untouched);
    }
    let used_raw = quota.pointer("/status/used").and_then(Value::as_object);
    let used = parse_list(quota.pointer("/status/used"));
    if limited.iter().any(|n| !used.contains_key(*n)) {
        let mut shown: Vec<&str> = limited.iter().map(|s| s.as_str()).collect();
        shown.sort_unstable();
        return Err(format!(
            "status unknown for quota: {qname}, resources: {}",
            shown.join(",")
        ));
    }
    let one = Quantity::count(1);
    let mut exceeded = Vec::new();
    let mut raised = BTreeMap::new();
    for n in &limited {
        let now = used[*n];
        let next = now.checked_add(&one).ok_or("quota usage overflows")?;
        if next > hard[*n] {
            exceeded.push(n.to_string());
        }
        raised.insert(n.to_string(), next);
    }
    if !exceeded.is_empty() {
        let mask = |l: &BTreeMap<String, Quantity>| -> BTreeMap<String, Quantity> {
            l.iter()
                .filter(|(k, _)| exceeded.contains(k))
                .map(|(k, v)| (k.clone(), *v))
                .collect()
        };
        let requested: BTreeMap<String, Quantity> =
            exceeded.iter().map(|k| (k.clone(), one)).collect();
        return Err(format!(
            "exceeded quota: {qname}, requested: {}, used: {}, limited: {}",
            pretty(&requested),
            pretty(&mask(&used)),
            pretty(&mask(&hard))
        ));
    }
    let mut new_used: Map<String, Value> = used_raw.cloned().unwrap_or_default();
    for (k, v) in raised {
        new_used.insert(k, json!(v.to_string()));
    }
    let mut status = quota.get("status").cloned().unwrap_or_else(|| json!({}));
    status["used"] = Value::Object(new_used);
    Ok(Outcome::Raised(status))
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
}

#[async_trait::async_trait]
impl ValidatingAdmission for ResourceQuotaAdmission {
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
            || !reg
                .quota_index()
                .has_quotas(a.cluster.as_str(), a.namespace)
        {
            return Ok(());
        }
        let mut names = vec![count_name(&rt.group, &rt.plural)];
        names.extend(legacy_count_name(&rt.group, &rt.plural).map(str::to_string));
        let refuse = |why: &str| {
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
            ApiError::from(Status::forbidden(&rt.group, &rt.plural, name, why))
        };
        let lock = self.lock_of(a.cluster.as_str(), a.namespace);
        let _held = lock.lock().await;
        let mut last = None;
        // Quotas already raised for this request (a retry reads only the others again).
        let mut raised = std::collections::HashSet::new();
        for _ in 0..=RETRIES {
            let quotas = reg.namespace_quotas(a.cluster, a.namespace).await?;
            let mut writes = Vec::new();
            for kv in quotas.iter().filter(|kv| !raised.contains(&kv.key.name)) {
                let quota: Value =
                    serde_json::from_slice(&kv.value).map_err(|e| crate::corrupt(&e))?;
                match check(&kv.key.name, &quota, &names).map_err(|why| refuse(&why))? {
                    Outcome::Untouched => {}
                    Outcome::Raised(status) => writes.push((kv, quota, status)),
                }
            }
            if writes.is_empty() || a.dry_run {
                return Ok(());
            }
            let Some(t) = reg.quota_target(a.cluster, a.namespace) else {
                return Ok(());
            };
            let w = WriteParams::controller_named(APISERVER_MANAGER);
            let mut conflict = false;
            for (kv, mut quota, status) in writes {
                quota["status"] = status;
                quota["metadata"]["resourceVersion"] = json!(kv.mod_revision.to_string());
                match reg
                    .update(&t, &kv.key.name, Some("status"), quota, &w)
                    .await
                {
                    Ok(_) => {
                        raised.insert(kv.key.name.clone());
                    }
                    // Changed (or deleted) since it was read: read them again.
                    Err(e) if e.code() == 409 || e.code() == 404 => {
                        conflict = true;
                        last = Some(e);
                        break;
                    }
                    Err(e) => return Err(e),
                }
            }
            if !conflict {
                return Ok(());
            }
        }
        Err(last.unwrap_or_else(|| ApiError::internal("resource quota evaluation failed")))
    }
}
