//! Host pods that are not synced objects' but that the SyncTarget's `spec.reflectPods`
//! names (a host namespace and a label selector), reflected into a namespace of a logical
//! cluster the target covers: an operator that reads its own Pod (hive copies its
//! nodeSelector and tolerations, found by `POD_NAME`/`POD_NAMESPACE`, into the Jobs it
//! makes) finds it in its logical cluster. One watch per entry; each host pod's reflection
//! is written through the sync endpoint when the pod changes, and deleted when it goes. A
//! reflection deleted in kplane is written again: the host pod is the operator's own and is
//! never deleted for it.

use std::collections::{BTreeMap, HashSet};
use std::sync::Arc;

use futures::StreamExt as _;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt as _;
use serde_json::{json, Map, Value};

use crate::error::{is_status, Error, KubeContext as _, Result};
use crate::naming::TARGET_ANNOTATION;
use crate::pods::{resource, HOST_POD_ANNOTATION};
use crate::state::{annotation, slim, State};

/// Annotation of a chosen pod's reflection: which `spec.reflectPods` entry made it (10 hex
/// digits of sha256 of its host namespace and selector), so that two entries reflecting
/// into one namespace never take each other's reflections away.
pub const ENTRY_ANNOTATION: &str = "sync.kplane.io/reflected-by";

/// One `spec.reflectPods` entry, defaults applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub host_namespace: String,
    /// The label selector as a list option (`a=b,c in (d),!e`).
    pub selector: String,
    pub cluster: String,
    pub namespace: String,
}

/// A label selector (`matchLabels`, `matchExpressions`) as the `labelSelector` string.
pub fn selector_string(sel: &Value) -> String {
    let mut parts: Vec<String> = sel
        .get("matchLabels")
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect()
        })
        .unwrap_or_default();
    for e in sel
        .get("matchExpressions")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
    {
        let key = e["key"].as_str().unwrap_or_default();
        let values: Vec<&str> = e["values"]
            .as_array()
            .map(|v| v.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        parts.push(match e["operator"].as_str().unwrap_or_default() {
            "In" => format!("{key} in ({})", values.join(",")),
            "NotIn" => format!("{key} notin ({})", values.join(",")),
            "Exists" => key.to_owned(),
            _ => format!("!{key}"),
        });
    }
    parts.join(",")
}

/// The entries of SyncTarget `target` (its own logical cluster is `target_cluster`).
pub fn entries(target: &Value, target_cluster: &str) -> Vec<Entry> {
    target
        .pointer("/spec/reflectPods")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
        .iter()
        .filter_map(|e| {
            let s = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or_default();
            let host_namespace = s("hostNamespace");
            if host_namespace.is_empty() {
                return None;
            }
            Some(Entry {
                host_namespace: host_namespace.to_owned(),
                selector: selector_string(e.get("selector").unwrap_or(&json!({}))),
                cluster: Some(s("cluster"))
                    .filter(|c| !c.is_empty())
                    .unwrap_or(target_cluster)
                    .to_owned(),
                namespace: Some(s("namespace"))
                    .filter(|n| !n.is_empty())
                    .unwrap_or(host_namespace)
                    .to_owned(),
            })
        })
        .collect()
}

impl Entry {
    /// The value of [`ENTRY_ANNOTATION`] for this entry.
    pub fn id(&self) -> String {
        crate::naming::hash_hex(&format!("{}\n{}", self.host_namespace, self.selector), 10)
    }
}

/// The reflection of chosen host pod `host` by `entry`, for target `target_id`.
pub fn reflection(host: &Value, entry: &Entry, target_id: &str) -> Value {
    let namespace = entry.namespace.as_str();
    let meta = host.get("metadata");
    let text = |f: &str| {
        meta.and_then(|m| m.get(f))
            .and_then(Value::as_str)
            .unwrap_or_default()
    };
    let mut annotations: Map<String, Value> = meta
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    annotations.insert(TARGET_ANNOTATION.to_owned(), json!(target_id));
    annotations.insert(
        HOST_POD_ANNOTATION.to_owned(),
        json!(format!("{}/{}", text("namespace"), text("name"))),
    );
    annotations.insert(ENTRY_ANNOTATION.to_owned(), json!(entry.id()));
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": text("name"),
            "namespace": namespace,
            "labels": meta.and_then(|m| m.get("labels")).cloned().unwrap_or_else(|| json!({})),
            "annotations": annotations,
        },
        "spec": host.get("spec").cloned().unwrap_or_else(|| json!({})),
        "status": host.get("status").cloned().unwrap_or_else(|| json!({})),
    })
}

/// Follows the host pods of `entry` and keeps their reflections.
pub async fn run(state: Arc<State>, entry: Entry) {
    let host: Api<DynamicObject> =
        Api::namespaced_with(state.host.clone(), &entry.host_namespace, &resource());
    let config = watcher::Config::default().labels(&entry.selector);
    let mut stream = watcher::watcher(host, config).default_backoff().boxed();
    let mut seen: HashSet<String> = HashSet::new();
    let mut current: BTreeMap<String, Value> = BTreeMap::new();
    // Once per resync period every reflection is written again where it differs (or was
    // deleted in kplane).
    let mut resync = tokio::time::interval(state.resync);
    resync.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let ev = tokio::select! {
            ev = stream.next() => match ev {
                Some(ev) => ev,
                None => break,
            },
            _ = resync.tick() => {
                for v in current.values() {
                    if let Err(e) = upsert(&state, &entry, v).await {
                        state.metrics.error();
                        tracing::warn!(host_namespace = %entry.host_namespace, error = %e,
                            "reflecting a chosen host pod failed; retried at the next resync");
                    }
                }
                continue;
            }
        };
        let result = match ev {
            Ok(Event::Init) => {
                seen.clear();
                Ok(())
            }
            Ok(Event::InitApply(o)) => {
                let v = slim(serde_json::to_value(o).unwrap_or(Value::Null));
                let name = name_of(&v);
                seen.insert(name.clone());
                current.insert(name, v.clone());
                upsert(&state, &entry, &v).await
            }
            Ok(Event::InitDone) => {
                current.retain(|n, _| seen.contains(n));
                remove_others(&state, &entry, &seen).await
            }
            Ok(Event::Apply(o)) => {
                let v = slim(serde_json::to_value(o).unwrap_or(Value::Null));
                current.insert(name_of(&v), v.clone());
                upsert(&state, &entry, &v).await
            }
            Ok(Event::Delete(o)) => {
                let v = serde_json::to_value(o).unwrap_or(Value::Null);
                let name = name_of(&v);
                current.remove(&name);
                seen.remove(&name);
                remove_others(&state, &entry, &current.keys().cloned().collect()).await
            }
            Err(e) => Err(Error::Retry(format!("watching host pods: {e}"))),
        };
        if let Err(e) = result {
            state.metrics.error();
            tracing::warn!(host_namespace = %entry.host_namespace, selector = %entry.selector,
                error = %e, "reflecting chosen host pods failed; retried at the next change");
        }
    }
}

fn name_of(v: &Value) -> String {
    v.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn kplane_pods(state: &State, entry: &Entry) -> Result<Api<DynamicObject>> {
    Ok(Api::namespaced_with(
        state.kplane.cluster(&entry.cluster)?,
        &entry.namespace,
        &resource(),
    ))
}

/// Creates or brings up to date the reflection of host pod `host`.
async fn upsert(state: &State, entry: &Entry, host: &Value) -> Result<()> {
    if host.pointer("/metadata/deletionTimestamp").is_some() {
        return Ok(());
    }
    let api = kplane_pods(state, entry)?;
    let want = reflection(host, entry, &state.target.annotation());
    let name = name_of(&want);
    let what = || {
        format!(
            "the reflection {}/{name} in {}",
            entry.namespace, entry.cluster
        )
    };
    let have = match api.get_opt(&name).await {
        Ok(h) => h.map(|h| serde_json::to_value(h).unwrap_or(Value::Null)),
        Err(e) if is_status(&e, 404) || is_status(&e, 403) => None,
        Err(e) => return Err(e).ctx(|| format!("reading {}", what())),
    };
    let mut have = match have {
        Some(h) => h,
        None => {
            let obj: DynamicObject = serde_json::from_value(want.clone())
                .map_err(|e| Error::Config(format!("building {}: {e}", what())))?;
            let created = api
                .create(&PostParams::default(), &obj)
                .await
                .ctx(|| format!("creating {}", what()))?;
            tracing::info!(cluster = %entry.cluster, namespace = %entry.namespace, pod = %name,
                "reflected a chosen host pod");
            serde_json::to_value(created).unwrap_or(Value::Null)
        }
    };
    let meta_differs = ["labels", "annotations"]
        .iter()
        .any(|f| want["metadata"][f] != have["metadata"][f]);
    let spec_differs = crate::pods::spec_changes(&want, &have);
    if meta_differs || spec_differs {
        let mut body = have.clone();
        for f in ["labels", "annotations"] {
            body["metadata"][f] = want["metadata"][f].clone();
        }
        if spec_differs {
            body["spec"] = want["spec"].clone();
        }
        let obj: DynamicObject = serde_json::from_value(body.clone())
            .map_err(|e| Error::Config(format!("building {}: {e}", what())))?;
        have = match api.replace(&name, &PostParams::default(), &obj).await {
            Ok(o) => serde_json::to_value(o).unwrap_or(have),
            // A spec change a pod update may not make: the rest still follows.
            Err(e) if is_status(&e, 422) && meta_differs => {
                body["spec"] = have["spec"].clone();
                let obj: DynamicObject = serde_json::from_value(body)
                    .map_err(|e| Error::Config(format!("building {}: {e}", what())))?;
                serde_json::to_value(
                    api.replace(&name, &PostParams::default(), &obj)
                        .await
                        .ctx(|| format!("updating {}", what()))?,
                )
                .unwrap_or(have)
            }
            Err(e) if is_status(&e, 422) => have,
            Err(e) => return Err(e).ctx(|| format!("updating {}", what())),
        };
    }
    if !crate::pods::same_status(&want, &have) {
        let mut body = have;
        body["status"] = want["status"].clone();
        let obj: DynamicObject = serde_json::from_value(body)
            .map_err(|e| Error::Config(format!("building {}: {e}", what())))?;
        api.replace_status(&name, &PostParams::default(), &obj)
            .await
            .ctx(|| format!("writing the status of {}", what()))?;
    }
    Ok(())
}

/// Deletes the reflections of `entry` whose host pod is not in `live`.
async fn remove_others(state: &State, entry: &Entry, live: &HashSet<String>) -> Result<()> {
    let all: Api<DynamicObject> = Api::all_with(state.kplane.cluster("*")?, &resource());
    let list = all
        .list(&ListParams::default())
        .await
        .ctx(|| "listing the reflected pods".to_owned())?;
    let id = entry.id();
    let api = kplane_pods(state, entry)?;
    for p in list.items {
        let v = serde_json::to_value(p).unwrap_or(Value::Null);
        let ours = annotation(&v, crate::naming::CLUSTER_ANNOTATION)
            == Some(entry.cluster.as_str())
            && v.pointer("/metadata/namespace").and_then(Value::as_str)
                == Some(entry.namespace.as_str())
            && annotation(&v, ENTRY_ANNOTATION) == Some(id.as_str());
        let name = name_of(&v);
        if !ours || live.contains(&name) {
            continue;
        }
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => {
                tracing::info!(cluster = %entry.cluster, namespace = %entry.namespace, pod = %name,
                "deleted the reflection of a chosen host pod that is gone")
            }
            Err(e) if is_status(&e, 404) => {}
            Err(e) => return Err(e).ctx(|| format!("deleting the reflection {name}")),
        }
    }
    Ok(())
}

/// Deletes the chosen pods' reflections that no entry of `entries` makes any more (an
/// entry removed from `spec.reflectPods`, or from `--reflect-host-namespaces`); run when
/// the watches start.
pub async fn remove_stale(state: Arc<State>, entries: Vec<Entry>) {
    let ids: HashSet<String> = entries.iter().map(Entry::id).collect();
    let result = async {
        let all: Api<DynamicObject> = Api::all_with(state.kplane.cluster("*")?, &resource());
        let list = match all.list(&ListParams::default()).await {
            Ok(l) => l,
            // A kplane without Pods has no reflections.
            Err(e) if is_status(&e, 404) => return Ok(()),
            Err(e) => return Err(e).ctx(|| "listing the reflected pods".to_owned()),
        };
        for p in list.items {
            let v = serde_json::to_value(p).unwrap_or(Value::Null);
            let Some(id) = annotation(&v, ENTRY_ANNOTATION) else {
                continue;
            };
            let (Some(cluster), Some(ns)) = (
                annotation(&v, crate::naming::CLUSTER_ANNOTATION),
                v.pointer("/metadata/namespace").and_then(Value::as_str),
            ) else {
                continue;
            };
            if ids.contains(id) {
                continue;
            }
            let name = name_of(&v);
            let api: Api<DynamicObject> =
                Api::namespaced_with(state.kplane.cluster(cluster)?, ns, &resource());
            match api.delete(&name, &DeleteParams::default()).await {
                Ok(_) => tracing::info!(cluster, namespace = ns, pod = %name,
                    "deleted the reflection of a chosen host pod no spec.reflectPods entry names"),
                Err(e) if is_status(&e, 404) => {}
                Err(e) => return Err(e).ctx(|| format!("deleting the reflection {name}")),
            }
        }
        Ok::<(), Error>(())
    }
    .await;
    if let Err(e) = result {
        state.metrics.error();
        tracing::warn!(error = %e, "removing stale reflections of chosen host pods failed; tried again at the next start");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_default_to_the_target_cluster_and_the_host_namespace() {
        let t = json!({"spec": {"reflectPods": [
            {"hostNamespace": "hive", "selector": {"matchLabels": {"control-plane": "controller-manager"},
              "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]},
                                   {"key": "canary", "operator": "DoesNotExist"},
                                   {"key": "app", "operator": "Exists"},
                                   {"key": "zone", "operator": "NotIn", "values": ["x"]}]}},
            {"hostNamespace": "ops", "selector": {}, "cluster": "root:t:a", "namespace": "operators"},
            {"selector": {}},
        ]}});
        assert_eq!(
            entries(&t, "root:t"),
            [
                Entry {
                    host_namespace: "hive".into(),
                    selector:
                        "control-plane=controller-manager,tier in (a,b),!canary,app,zone notin (x)"
                            .into(),
                    cluster: "root:t".into(),
                    namespace: "hive".into(),
                },
                Entry {
                    host_namespace: "ops".into(),
                    selector: String::new(),
                    cluster: "root:t:a".into(),
                    namespace: "operators".into(),
                },
            ]
        );
    }

    #[test]
    fn a_chosen_pod_is_reflected_as_the_host_has_it() {
        let host = json!({
            "metadata": {"name": "hive-controllers-7d9f", "namespace": "hive", "uid": "u", "resourceVersion": "3",
                         "labels": {"control-plane": "controller-manager"},
                         "ownerReferences": [{"kind": "ReplicaSet", "name": "hive-controllers", "uid": "r"}]},
            "spec": {"nodeSelector": {"node-role.kubernetes.io/infra": ""},
                     "tolerations": [{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}],
                     "containers": [{"name": "manager", "image": "quay.io/openshift/hive"}]},
            "status": {"phase": "Running"},
        });
        let entry = Entry {
            host_namespace: "hive".into(),
            selector: "control-plane=controller-manager".into(),
            cluster: "root:t".into(),
            namespace: "hive".into(),
        };
        let r = reflection(&host, &entry, "root/east");
        assert_eq!(r["metadata"]["name"], "hive-controllers-7d9f");
        assert_eq!(r["metadata"]["namespace"], "hive");
        assert_eq!(r["metadata"]["labels"], host["metadata"]["labels"]);
        assert_eq!(
            r["metadata"]["annotations"],
            json!({TARGET_ANNOTATION: "root/east", HOST_POD_ANNOTATION: "hive/hive-controllers-7d9f",
                   ENTRY_ANNOTATION: entry.id()})
        );
        assert!(r["metadata"].get("ownerReferences").is_none());
        let other = Entry {
            selector: "app=clustersync".into(),
            ..entry.clone()
        };
        assert_ne!(
            other.id(),
            entry.id(),
            "two entries into one namespace are told apart"
        );
        assert_eq!(r["spec"], host["spec"]);
        assert_eq!(r["status"], host["status"]);
    }
}
