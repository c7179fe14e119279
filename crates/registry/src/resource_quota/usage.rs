//! What a namespace uses of the resource names a quota limits (upstream's quota
//! evaluators, `CalculateUsage`), read from storage:
//!
//! - `count/<resource>[.<group>]` of a namespaced resource the cluster serves: its
//!   objects in the namespace (a resource the cluster does not serve has no usage, as
//!   upstream has no evaluator for what discovery does not list);
//! - `configmaps`, `secrets`, `resourcequotas`, `persistentvolumeclaims`: their objects;
//!   `pods`: the pods not in a terminal phase (`Succeeded`, `Failed`); `count/pods`: every stored pod;
//! - `cpu`/`requests.cpu`, `memory`/`requests.memory`, `ephemeral-storage`/
//!   `requests.ephemeral-storage`, `limits.*`, `requests.<extended resource>` and huge
//!   pages: the sum over those pods of each pod's requests (or limits): its containers'
//!   sum, or its largest init container's when that is larger, plus its overhead;
//! - the names of kinds kplane does not serve (`services`, `services.nodeports`,
//!   `services.loadbalancers`, `replicationcontrollers`): zero, since none can exist; and
//!   what claims request of storage (`requests.storage` and the storage-class names): zero,
//!   as kplane's claims are data that no volume backs (a difference from upstream's claim
//!   evaluator, listed in docs/compatibility.md).
//!
//! The pods' names are counted per quota over the pods its scopes match (`scopes`).

use std::collections::{BTreeMap, HashMap};

use kplane_storage::{ListOptions, Prefix};
use kplane_types::ClusterName;
use serde_json::Value;

use super::scopes::PodScopes;
use crate::catalog::Catalog;
use crate::error::{ApiError, ApiResult};
use crate::quantity::{self, Quantity};
use crate::Registry;

/// Objects read at a time when pods are listed.
pub const PAGE: usize = 1000;

/// Names of kinds kplane does not serve: their usage is zero.
const UNSERVED: &[&str] = &[
    "services",
    "services.nodeports",
    "services.loadbalancers",
    "replicationcontrollers",
    "requests.storage",
    "count/services",
    "count/replicationcontrollers",
];

/// The pods' part: the name a pod's requests or limits feed, and from which.
fn pod_resource(name: &str) -> Option<(bool, String)> {
    // (limits?, container resource name)
    if let Some(r) = name.strip_prefix("limits.") {
        return Some((true, r.to_string()));
    }
    if let Some(r) = name.strip_prefix("requests.") {
        return Some((false, r.to_string()));
    }
    match name {
        "cpu" | "memory" | "ephemeral-storage" => Some((false, name.to_string())),
        n if n.starts_with("hugepages-") => Some((false, n.to_string())),
        _ => None,
    }
}

/// Whether `name` is one of the pods' quota names (their count, requests and limits).
pub fn is_pod_name(name: &str) -> bool {
    name == "pods" || name == "count/pods" || pod_resource(name).is_some()
}

/// Whether a pod counts (not in a terminal phase).
fn pod_counts(pod: &Value) -> bool {
    !matches!(
        pod.pointer("/status/phase").and_then(Value::as_str),
        Some("Succeeded" | "Failed")
    )
}

/// A pod's requests (`limits` false) or limits of `resource`: the containers' sum or the
/// largest init container's, whichever is larger, plus the overhead (for a limit, only
/// where one is set).
fn pod_amount(pod: &Value, limits: bool, resource: &str) -> Option<Quantity> {
    let field = if limits { "limits" } else { "requests" };
    let of = |c: &Value| {
        c.pointer(&format!("/resources/{field}"))
            .and_then(|m| m.get(resource))
            .and_then(quantity::parse_value)
    };
    let list = |k: &str| {
        pod.pointer(&format!("/spec/{k}"))
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default()
    };
    let mut sum: Option<Quantity> = None;
    for c in list("containers") {
        if let Some(q) = of(&c) {
            sum = Some(match sum {
                Some(s) => s.checked_add(&q)?,
                None => q,
            });
        }
    }
    for c in list("initContainers") {
        if let Some(q) = of(&c) {
            if sum.is_none_or(|s| q > s) {
                sum = Some(q);
            }
        }
    }
    let overhead = pod
        .pointer("/spec/overhead")
        .and_then(|m| m.get(resource))
        .and_then(quantity::parse_value);
    match (sum, overhead) {
        (Some(s), Some(o)) => s.checked_add(&o),
        // The overhead alone counts as a request, never as a limit (`PodLimits` adds it to
        // the limits that are set only).
        (None, Some(o)) if !limits => Some(o),
        (s, _) => s,
    }
}

/// The served namespaced resource `count/<plural>[.<group>]` names, as (group, plural,
/// storage resource).
fn counted_resource(catalog: &Catalog, name: &str) -> Option<String> {
    let what = name.strip_prefix("count/")?;
    let (plural, group) = what.split_once('.').unwrap_or((what, ""));
    catalog
        .all()
        .iter()
        .find(|t| {
            t.group == group
                && t.plural == plural
                && t.namespaced
                && t.is_stored()
                && !super::ignored(&t.group, &t.plural)
        })
        .map(|t| t.storage_resource.clone())
}

/// What a namespace uses: the object counts of the names asked for, and its pods when a
/// pod name was asked for (each quota counts those its scopes match, [`Usage::of`]).
#[derive(Debug, Default)]
pub(crate) struct Usage {
    counted: BTreeMap<String, Quantity>,
    /// Every stored pod of the namespace, terminal ones included.
    pods: Vec<Value>,
}

impl Usage {
    /// What a quota with `scopes` uses of `name` (`None`: not a name kplane can count).
    pub(crate) fn of(&self, name: &str, scopes: &PodScopes) -> Option<Quantity> {
        if !is_pod_name(name) {
            return self.counted.get(name).cloned();
        }
        let matching = || self.pods.iter().filter(|p| scopes.matches(p));
        let count = |n: usize| Quantity::count(i64::try_from(n).unwrap_or(i64::MAX));
        match name {
            "count/pods" => Some(count(matching().count())),
            "pods" => Some(count(matching().filter(|p| pod_counts(p)).count())),
            _ => {
                let (limits, resource) = pod_resource(name)?;
                let mut total = Quantity::zero();
                for p in matching().filter(|p| pod_counts(p)) {
                    if let Some(q) = pod_amount(p, limits, &resource) {
                        total = total.checked_add(&q).unwrap_or(total);
                    }
                }
                Some(total)
            }
        }
    }
}

impl Registry {
    /// What `namespace` of `cluster` uses of each of `names` ([`Usage::of`]); names without
    /// usage (not a resource kplane can count) have none.
    pub(crate) async fn quota_usage(
        &self,
        cluster: &ClusterName,
        namespace: &str,
        names: &[String],
    ) -> ApiResult<Usage> {
        let catalog = self.cluster_catalog(cluster).await?;
        let mut out = Usage::default();
        let mut counts: HashMap<String, u64> = HashMap::new();
        let mut read_pods = false;
        for name in names {
            let storage = match name.as_str() {
                "configmaps" | "secrets" | "resourcequotas" | "persistentvolumeclaims" => {
                    format!("/{name}")
                }
                n if UNSERVED.contains(&n)
                    || n.ends_with(".storageclass.storage.k8s.io/requests.storage")
                    || n.ends_with(".storageclass.storage.k8s.io/persistentvolumeclaims") =>
                {
                    out.counted.insert(name.clone(), Quantity::zero());
                    continue;
                }
                n if is_pod_name(n) => {
                    read_pods = true;
                    continue;
                }
                n if n.starts_with("count/") => match counted_resource(&catalog, n) {
                    Some(s) => s,
                    None => continue,
                },
                _ => continue,
            };
            let n = match counts.get(&storage) {
                Some(n) => *n,
                None => {
                    let prefix = Prefix {
                        cluster: kplane_storage::Clusters::One(cluster.as_str().into()),
                        resource: Some(storage.clone()),
                        namespace: Some(namespace.into()),
                    };
                    let n = self.storage.count(&prefix).await.map_err(ApiError::from)?;
                    counts.insert(storage, n);
                    n
                }
            };
            out.counted.insert(
                name.clone(),
                Quantity::count(i64::try_from(n).unwrap_or(i64::MAX)),
            );
        }
        if read_pods {
            out.pods = self.namespace_pods(cluster, namespace).await?;
        }
        Ok(out)
    }

    /// The pods of `namespace`, read a page at a time.
    async fn namespace_pods(
        &self,
        cluster: &ClusterName,
        namespace: &str,
    ) -> ApiResult<Vec<Value>> {
        let prefix = Prefix {
            cluster: kplane_storage::Clusters::One(cluster.as_str().into()),
            resource: Some("/pods".into()),
            namespace: Some(namespace.into()),
        };
        let mut opts = ListOptions {
            limit: Some(PAGE),
            ..Default::default()
        };
        let mut out = Vec::new();
        loop {
            let page = self
                .storage
                .list(&prefix, &opts, None)
                .await
                .map_err(ApiError::from)?;
            for kv in &page.items {
                let pod: Value =
                    serde_json::from_slice(&kv.value).map_err(|e| crate::corrupt(&e))?;
                out.push(pod);
            }
            match (page.more, page.items.last()) {
                (true, Some(last)) => {
                    opts.start_after = Some(last.key.clone());
                    opts.at_revision = Some(page.revision);
                }
                _ => return Ok(out),
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_pods_requests_are_its_containers_sum_or_its_largest_init_container() {
        let pod = json!({"spec": {
            "containers": [
                {"resources": {"requests": {"cpu": "100m", "memory": "64Mi"}, "limits": {"cpu": "1"}}},
                {"resources": {"requests": {"cpu": "200m"}}},
            ],
            "initContainers": [{"resources": {"requests": {"cpu": "500m"}}}],
            "overhead": {"memory": "1Mi"},
        }});
        assert_eq!(pod_amount(&pod, false, "cpu").unwrap().to_string(), "500m");
        assert_eq!(
            pod_amount(&pod, false, "memory").unwrap(),
            Quantity::parse("65Mi").unwrap()
        );
        assert_eq!(pod_amount(&pod, true, "cpu").unwrap().to_string(), "1");
        assert!(pod_amount(&pod, true, "memory").is_none());
        assert!(pod_counts(&pod));
        assert!(!pod_counts(&json!({"status": {"phase": "Succeeded"}})));
        assert_eq!(
            pod_resource("requests.example.com/dongle"),
            Some((false, "example.com/dongle".into()))
        );
        assert_eq!(pod_resource("configmaps"), None);
    }
}
