//! The pods of synced Jobs, reflected from the host into the logical cluster that owns the
//! Job. kplane runs nothing, but operators read the pods of their Jobs (hive lists the
//! install pod by the Job's selector and reads its status): so the syncer writes, through
//! the sync endpoint, one core/v1 Pod in kplane per host pod of a synced Job, with the
//! host's spec and status, labels that the tenant Job's selector matches (the host Job's
//! `controller-uid` labels replaced by the tenant Job's uid, `job-name` by its name), an
//! ownerReference to the tenant Job and the target's annotation; kept current as the host
//! pod changes and deleted when it goes. Deleting a reflected pod in kplane (what
//! `kubectl delete pod` does to restart a Job's pod) deletes the host pod.
//!
//! Two watches feed it: the host pods of the target's Jobs (their pod templates carry the
//! target's label and the source annotations, so every pod does) and the reflections in
//! kplane (`clusters/*/api/v1/pods` of the endpoint, the pods carrying the target's
//! annotation). Both queue the owning Job's key; the Job's reconcile brings the
//! reflections in line ([`reconcile`]) once both watches have listed.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use futures::StreamExt as _;
use kube::api::{Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt as _;
use serde_json::{json, Map, Value};

use crate::error::{is_status, Error, KubeContext as _, Result};
use crate::naming::{
    HostLayout, CLUSTER_ANNOTATION, NAMESPACE_ANNOTATION, NAME_ANNOTATION, TARGET_ANNOTATION,
    TARGET_LABEL, UID_ANNOTATION,
};
pub use crate::pod_state::PodState;
use crate::policies::SOURCE_LABEL;
use crate::state::{annotation, slim, Compact, ObjectKey, State};

/// Annotation of a reflected pod: the host pod it reflects (`<namespace>/<name>`).
pub const HOST_POD_ANNOTATION: &str = "sync.kplane.io/host-pod";

/// The labels a Job controller puts on its pods that name the Job: (label, by uid?).
const JOB_LABELS: [(&str, bool); 4] = [
    ("controller-uid", true),
    ("batch.kubernetes.io/controller-uid", true),
    ("job-name", false),
    ("batch.kubernetes.io/job-name", false),
];

pub fn resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("", "v1", "Pod"), "pods")
}

/// The pod template labels and annotations every host pod of source `key` carries, so
/// that the host pod watch finds it and knows its source.
pub fn template_marks(state: &State, key: &ObjectKey, uid: &str) -> (Value, Value) {
    let labels = json!({ TARGET_LABEL: state.target.name });
    let annotations = json!({
        CLUSTER_ANNOTATION: key.cluster,
        NAMESPACE_ANNOTATION: key.namespace,
        NAME_ANNOTATION: key.name,
        UID_ANNOTATION: uid,
        TARGET_ANNOTATION: state.target.annotation(),
    });
    (labels, annotations)
}

/// The reflection in kplane of host pod `host` of the source object `key` (uid
/// `source_uid`, its selector's `matchLabels` `selector`) of a target whose id is
/// `target_id`.
pub fn reflection(
    host: &Value,
    key: &ObjectKey,
    source_uid: &str,
    selector: Option<&Value>,
    target_id: &str,
) -> Value {
    let meta = host.get("metadata");
    let mut labels: Map<String, Value> = meta
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    labels.remove(TARGET_LABEL);
    labels.remove(SOURCE_LABEL);
    // The source's own selector matches its reflected pods whatever labels the host's
    // Job controller used (a host without the `batch.kubernetes.io/` ones, say).
    if let Some(sel) = selector.and_then(Value::as_object) {
        for (k, v) in sel {
            labels.insert(k.clone(), v.clone());
        }
    }
    for (label, by_uid) in JOB_LABELS {
        if labels.contains_key(label) {
            let v = if by_uid {
                source_uid
            } else {
                key.name.as_str()
            };
            labels.insert(label.to_owned(), json!(v));
        }
    }
    let mut annotations: Map<String, Value> = meta
        .and_then(|m| m.get("annotations"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for a in [
        CLUSTER_ANNOTATION,
        NAMESPACE_ANNOTATION,
        NAME_ANNOTATION,
        UID_ANNOTATION,
    ] {
        annotations.remove(a);
    }
    annotations.insert(TARGET_ANNOTATION.to_owned(), json!(target_id));
    let host_ns = meta
        .and_then(|m| m.get("namespace"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    let name = meta
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    annotations.insert(
        HOST_POD_ANNOTATION.to_owned(),
        json!(format!("{host_ns}/{name}")),
    );
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": key.namespace,
            "labels": labels,
            "annotations": annotations,
            "ownerReferences": [{
                "apiVersion": "batch/v1", "kind": "Job", "name": key.name, "uid": source_uid,
                "controller": true, "blockOwnerDeletion": true,
            }],
        },
        "spec": host.get("spec").cloned().unwrap_or_else(|| json!({})),
        "status": host.get("status").cloned().unwrap_or_else(|| json!({})),
    })
}

/// Whether `want`'s spec differs from `have`'s in more than `nodeName` (which the host's
/// scheduler sets after the pod is made, and a pod update may not change).
pub fn spec_changes(want: &Value, have: &Value) -> bool {
    let spec = |v: &Value| {
        let mut s = v.get("spec").cloned().unwrap_or(json!({}));
        if let Some(o) = s.as_object_mut() {
            o.remove("nodeName");
        }
        s
    };
    spec(want) != spec(have)
}

/// Whether stored reflection `have` shows `want`'s status (empty values aside: two
/// servers may store the same status with or without them).
pub fn same_status(want: &Value, have: &Value) -> bool {
    let status = |v: &Value| v.get("status").and_then(crate::kinds::normalize);
    status(want) == status(have)
}

/// Whether reflection `have` (as stored) shows `want`'s labels, annotations and status.
fn same_meta(want: &Value, have: &Value) -> bool {
    let m = |v: &Value, f: &str| {
        v.pointer(&format!("/metadata/{f}"))
            .cloned()
            .unwrap_or(json!({}))
    };
    m(want, "labels") == m(have, "labels") && m(want, "annotations") == m(have, "annotations")
}

/// The source key of the Job kind (the synced kind whose objects have pods).
fn pod_kind(state: &State) -> Option<usize> {
    state
        .kinds
        .iter()
        .position(|k| k.pod_spec_pointer().is_some())
}

/// The source key of host pod `v` (from the annotations its template gave it).
fn host_key(state: &State, v: &Value) -> Option<ObjectKey> {
    if annotation(v, TARGET_ANNOTATION) != Some(state.target.annotation().as_str()) {
        return None;
    }
    Some(ObjectKey {
        kind: pod_kind(state)?,
        cluster: annotation(v, CLUSTER_ANNOTATION)?.to_owned(),
        namespace: annotation(v, NAMESPACE_ANNOTATION)?.to_owned(),
        name: annotation(v, NAME_ANNOTATION)?.to_owned(),
    })
}

/// The source key of reflection `v` (its cluster annotation, namespace and owner Job).
fn reflected_key(state: &State, v: &Value) -> Option<ObjectKey> {
    let owner = v
        .pointer("/metadata/ownerReferences")?
        .as_array()?
        .iter()
        .find(|o| o["kind"] == "Job" && o["controller"] == true)?;
    Some(ObjectKey {
        kind: pod_kind(state)?,
        cluster: annotation(v, CLUSTER_ANNOTATION)?.to_owned(),
        namespace: v.pointer("/metadata/namespace")?.as_str()?.to_owned(),
        name: owner["name"].as_str()?.to_owned(),
    })
}

fn name_of(v: &Value) -> String {
    v.pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// Follows the host pods of the target's synced objects.
pub async fn watch_host_pods(state: Arc<State>) {
    let ar = resource();
    let api: Api<DynamicObject> = match &state.layout {
        HostLayout::Shared(ns) => Api::namespaced_with(state.host.clone(), ns, &ar),
        HostLayout::PerNamespace => Api::all_with(state.host.clone(), &ar),
    };
    let config = watcher::Config::default().labels(&state.target.label_selector());
    follow(state, api, config, Side::Host).await;
}

/// Follows the reflections in kplane (through the endpoint); a reflection deleted by
/// someone else dooms its host pod.
pub async fn watch_reflections(state: Arc<State>) {
    let client = match state.kplane.cluster("*") {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "no client for the pod watch");
            return;
        }
    };
    let api: Api<DynamicObject> = Api::all_with(client, &resource());
    follow(state, api, watcher::Config::default(), Side::Reflected).await;
}

/// Which of the two pod watches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Side {
    Host,
    Reflected,
}

/// One pod watch: keeps its map of pods by source key up to date (a relist drops what it
/// no longer shows), marks it listed, and queues the source keys whose pods changed (for
/// the reflections: only those a user deleted).
async fn follow(state: Arc<State>, api: Api<DynamicObject>, config: watcher::Config, side: Side) {
    let (map, listed, what) = match side {
        Side::Host => (&state.pods.host, &state.pods.host_listed, "the host pods"),
        Side::Reflected => (
            &state.pods.reflected,
            &state.pods.reflected_listed,
            "the reflected pods",
        ),
    };
    let mut stream = watcher::watcher(api, config).default_backoff().boxed();
    let mut seen: HashSet<(ObjectKey, String)> = HashSet::new();
    while let Some(ev) = stream.next().await {
        let (obj, deleted, initial) = match ev {
            Ok(Event::Apply(o)) => (o, false, false),
            Ok(Event::InitApply(o)) => (o, false, true),
            Ok(Event::Delete(o)) => (o, true, false),
            Ok(Event::Init) => {
                seen.clear();
                continue;
            }
            Ok(Event::InitDone) => {
                let gone = retain_seen(map, &seen);
                listed.store(true, Ordering::Release);
                for k in gone {
                    state.queue.add(k);
                }
                seen.clear();
                continue;
            }
            Err(e) => {
                tracing::warn!(error = %e, "watching {what} failed; retrying with backoff");
                state.metrics.error();
                continue;
            }
        };
        let v = slim(serde_json::to_value(obj).unwrap_or(Value::Null));
        let key = match side {
            Side::Host => host_key(&state, &v),
            Side::Reflected => reflected_key(&state, &v),
        };
        let Some(key) = key else {
            continue;
        };
        let name = name_of(&v);
        if initial {
            seen.insert((key.clone(), name.clone()));
        }
        if let Ok(mut m) = map.lock() {
            let pods = m.entry(key.clone()).or_default();
            if deleted {
                pods.remove(&name);
            } else {
                pods.insert(name.clone(), Compact::new(&v));
            }
            if pods.is_empty() {
                m.remove(&key);
            }
        }
        match side {
            Side::Host if state.is_cached(&key) => state.queue.add(key),
            Side::Reflected if deleted => {
                let own = state
                    .pods
                    .own_deletes
                    .lock()
                    .map(|mut o| {
                        o.remove(&(key.cluster.clone(), key.namespace.clone(), name.clone()))
                    })
                    .unwrap_or(false);
                if !own {
                    if let Ok(mut d) = state.pods.doomed.lock() {
                        d.insert((key.clone(), name));
                    }
                    state.queue.add(key);
                }
            }
            _ => {}
        }
    }
}

/// The pods `map` holds for `key`, by name.
fn pods_of(
    map: &Mutex<HashMap<ObjectKey, BTreeMap<String, Compact>>>,
    key: &ObjectKey,
) -> BTreeMap<String, Value> {
    map.lock()
        .map(|m| {
            m.get(key)
                .map(|p| p.iter().map(|(n, c)| (n.clone(), c.value())).collect())
                .unwrap_or_default()
        })
        .unwrap_or_default()
}

/// Drops the entries of `map` the relist did not show; the keys that lost some.
fn retain_seen(
    map: &Mutex<HashMap<ObjectKey, BTreeMap<String, Compact>>>,
    seen: &HashSet<(ObjectKey, String)>,
) -> Vec<ObjectKey> {
    let Ok(mut m) = map.lock() else {
        return Vec::new();
    };
    let mut changed = Vec::new();
    for (k, pods) in m.iter_mut() {
        let before = pods.len();
        pods.retain(|n, _| seen.contains(&(k.clone(), n.clone())));
        if pods.len() != before {
            changed.push(k.clone());
        }
    }
    m.retain(|_, pods| !pods.is_empty());
    changed
}

/// Brings the reflections of source object `key` (uid `source_uid`) in line with its
/// host pods, and deletes the host pods whose reflection a user deleted. Nothing until
/// both pod watches have listed once.
pub async fn reconcile(state: &State, key: &ObjectKey, source: &Value) -> Result<()> {
    if !state.pods.listed() {
        return Ok(());
    }
    let source_uid = source
        .pointer("/metadata/uid")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let selector = source.pointer("/spec/selector/matchLabels");
    // Only the pods of this incarnation of the source, in its host namespace: a pod that
    // merely carries the marks (left from an earlier Job of the same name, or made by
    // someone else) is not reflected.
    let (host_ns, _) = state.layout.place(&key.cluster, &key.namespace, &key.name);
    let host: BTreeMap<String, Value> = pods_of(&state.pods.host, key)
        .into_iter()
        .filter(|(_, h)| {
            annotation(h, UID_ANNOTATION) == Some(source_uid)
                && h.pointer("/metadata/namespace").and_then(Value::as_str)
                    == Some(host_ns.as_str())
        })
        .collect();
    let reflected = pods_of(&state.pods.reflected, key);
    let doomed: Vec<String> = state
        .pods
        .doomed
        .lock()
        .map(|d| {
            d.iter()
                .filter(|(k, _)| k == key)
                .map(|(_, n)| n.clone())
                .collect()
        })
        .unwrap_or_default();
    for name in &doomed {
        if let Some(h) = host.get(name) {
            delete_host_pod(state, key, h).await?;
        }
        if let Ok(mut d) = state.pods.doomed.lock() {
            d.remove(&(key.clone(), name.clone()));
        }
    }
    let api: Api<DynamicObject> = Api::namespaced_with(
        state.kplane.cluster(&key.cluster)?,
        &key.namespace,
        &resource(),
    );
    let target_id = state.target.annotation();
    for (name, h) in &host {
        if doomed.contains(name) || h.pointer("/metadata/deletionTimestamp").is_some() {
            continue;
        }
        let want = reflection(h, key, source_uid, selector, &target_id);
        match reflected.get(name) {
            None => create(&api, key, &want).await?,
            Some(have) => update(&api, key, &want, have).await?,
        }
    }
    for (name, have) in &reflected {
        let live = host
            .get(name)
            .is_some_and(|h| h.pointer("/metadata/deletionTimestamp").is_none());
        if !live {
            delete_reflection(state, &api, key, name, have).await?;
        }
    }
    Ok(())
}

async fn create(api: &Api<DynamicObject>, key: &ObjectKey, want: &Value) -> Result<()> {
    let name = name_of(want);
    let what = || format!("the reflection {}/{name} in {}", key.namespace, key.cluster);
    let obj: DynamicObject = serde_json::from_value(want.clone())
        .map_err(|e| Error::Config(format!("building {}: {e}", what())))?;
    let created = match api.create(&PostParams::default(), &obj).await {
        Ok(c) => serde_json::to_value(c).unwrap_or(Value::Null),
        Err(e) if is_status(&e, 409) => {
            return Err(Error::Retry(format!("{} appeared meanwhile", what())))
        }
        Err(e) => return Err(e).ctx(|| format!("creating {}", what())),
    };
    tracing::info!(cluster = %key.cluster, namespace = %key.namespace, name = %key.name, pod = %name,
        "reflected a host pod");
    // A create starts the status afresh; the host's is written through /status.
    write_status(api, key, want, &created).await
}

async fn write_status(
    api: &Api<DynamicObject>,
    key: &ObjectKey,
    want: &Value,
    have: &Value,
) -> Result<()> {
    if same_status(want, have) {
        return Ok(());
    }
    let name = name_of(want);
    let mut body = have.clone();
    body["status"] = want.get("status").cloned().unwrap_or(json!({}));
    let obj: DynamicObject = serde_json::from_value(body)
        .map_err(|e| Error::Config(format!("building the status of pod {name}: {e}")))?;
    match api
        .replace_status(&name, &PostParams::default(), &obj)
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if is_status(&e, 409) || is_status(&e, 404) => Err(Error::Retry(format!(
            "the reflection {}/{name} in {} changed meanwhile",
            key.namespace, key.cluster
        ))),
        Err(e) => Err(e).ctx(|| {
            format!(
                "writing the status of the reflection {}/{name} in {}",
                key.namespace, key.cluster
            )
        }),
    }
}

async fn update(
    api: &Api<DynamicObject>,
    key: &ObjectKey,
    want: &Value,
    have: &Value,
) -> Result<()> {
    let mut have = have.clone();
    let spec_differs = spec_changes(want, &have);
    if !same_meta(want, &have) || spec_differs {
        let name = name_of(want);
        // A pod's spec is immutable but for a few fields (upstream's rule, which kplane
        // keeps): a host change beyond them (the scheduler's nodeName) is left out, the
        // labels, annotations and status still follow.
        let mut tries = vec![true];
        if spec_differs {
            tries.push(false);
        }
        for with_spec in tries {
            let mut body = have.clone();
            for f in ["labels", "annotations"] {
                body["metadata"][f] = want["metadata"][f].clone();
            }
            if with_spec && spec_differs {
                body["spec"] = want.get("spec").cloned().unwrap_or(json!({}));
            }
            if !with_spec && same_meta(want, &have) {
                break;
            }
            let obj: DynamicObject = serde_json::from_value(body)
                .map_err(|e| Error::Config(format!("building pod {name}: {e}")))?;
            match api.replace(&name, &PostParams::default(), &obj).await {
                Ok(o) => {
                    have = serde_json::to_value(o).unwrap_or(have);
                    break;
                }
                Err(e) if with_spec && spec_differs && is_status(&e, 422) => continue,
                Err(e) if is_status(&e, 409) || is_status(&e, 404) => {
                    return Err(Error::Retry(format!(
                        "the reflection {}/{name} in {} changed meanwhile",
                        key.namespace, key.cluster
                    )))
                }
                Err(e) => {
                    return Err(e).ctx(|| {
                        format!(
                            "updating the reflection {}/{name} in {}",
                            key.namespace, key.cluster
                        )
                    })
                }
            }
        }
    }
    write_status(api, key, want, &have).await
}

async fn delete_reflection(
    state: &State,
    api: &Api<DynamicObject>,
    key: &ObjectKey,
    name: &str,
    have: &Value,
) -> Result<()> {
    if have.pointer("/metadata/deletionTimestamp").is_some() {
        return Ok(());
    }
    if let Ok(mut o) = state.pods.own_deletes.lock() {
        o.insert((key.cluster.clone(), key.namespace.clone(), name.to_owned()));
    }
    match api.delete(name, &DeleteParams::background()).await {
        Ok(_) => {}
        Err(e) if is_status(&e, 404) => return Ok(()),
        Err(e) => {
            return Err(e).ctx(|| {
                format!(
                    "deleting the reflection {}/{name} in {}",
                    key.namespace, key.cluster
                )
            })
        }
    }
    tracing::info!(cluster = %key.cluster, namespace = %key.namespace, name = %key.name, pod = %name,
        "deleted the reflection of a host pod that is gone");
    Ok(())
}

/// Deletes every pod reflection of the target in kplane (the drain's last step).
pub async fn remove_all_reflections(kplane: &crate::clients::KplaneClients) -> Result<()> {
    let all: Api<DynamicObject> = Api::all_with(kplane.cluster("*")?, &resource());
    let list = match all.list(&kube::api::ListParams::default()).await {
        Ok(l) => l,
        // A kplane without Pods has no reflections.
        Err(e) if is_status(&e, 404) => return Ok(()),
        Err(e) => return Err(e).ctx(|| "listing the reflected pods".to_owned()),
    };
    for p in list.items {
        let v = serde_json::to_value(p).unwrap_or(Value::Null);
        let (Some(cluster), Some(ns)) = (
            annotation(&v, CLUSTER_ANNOTATION),
            v.pointer("/metadata/namespace").and_then(Value::as_str),
        ) else {
            continue;
        };
        let name = name_of(&v);
        let api: Api<DynamicObject> =
            Api::namespaced_with(kplane.cluster(cluster)?, ns, &resource());
        match api.delete(&name, &DeleteParams::default()).await {
            Ok(_) => tracing::info!(cluster, namespace = ns, pod = %name,
                "drain: deleted the reflection of a host pod"),
            Err(e) if is_status(&e, 404) => {}
            Err(e) => {
                return Err(e).ctx(|| format!("deleting the reflection {ns}/{name} in {cluster}"))
            }
        }
    }
    Ok(())
}

async fn delete_host_pod(state: &State, key: &ObjectKey, host: &Value) -> Result<()> {
    let ns = host
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let name = name_of(host);
    let api: Api<DynamicObject> = Api::namespaced_with(state.host.clone(), ns, &resource());
    match api.delete(&name, &DeleteParams::default()).await {
        Ok(_) => {}
        Err(e) if is_status(&e, 404) => return Ok(()),
        Err(e) => return Err(e).ctx(|| format!("deleting pod {ns}/{name} on the host")),
    }
    tracing::info!(cluster = %key.cluster, namespace = %key.namespace, name = %key.name,
        host_namespace = %ns, pod = %name, "deleted the host pod whose reflection was deleted in kplane");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> ObjectKey {
        ObjectKey {
            kind: 0,
            cluster: "root:a".into(),
            namespace: "default".into(),
            name: "pi".into(),
        }
    }

    #[test]
    fn a_reflection_matches_the_tenant_jobs_selector_and_names_its_owner() {
        let host = json!({
            "metadata": {
                "name": "pi-x7k2p", "namespace": "kplane-0123456789", "uid": "host-pod-uid",
                "resourceVersion": "9",
                "labels": {
                    "app": "pi", TARGET_LABEL: "east", SOURCE_LABEL: "abc",
                    "controller-uid": "host-job-uid", "batch.kubernetes.io/controller-uid": "host-job-uid",
                    "job-name": "pi-1a2b3c4d", "batch.kubernetes.io/job-name": "pi-1a2b3c4d",
                },
                "annotations": {
                    CLUSTER_ANNOTATION: "root:a", NAMESPACE_ANNOTATION: "default",
                    NAME_ANNOTATION: "pi", UID_ANNOTATION: "src-uid", TARGET_ANNOTATION: "root/east",
                    "note": "kept",
                },
                "ownerReferences": [{"kind": "Job", "name": "pi-1a2b3c4d", "uid": "host-job-uid"}],
            },
            "spec": {"nodeName": "worker-1", "containers": [{"name": "main", "image": "busybox"}]},
            "status": {"phase": "Running", "podIP": "10.1.2.3"},
        });
        let selector = json!({"batch.kubernetes.io/controller-uid": "src-uid"});
        let r = reflection(&host, &key(), "src-uid", Some(&selector), "root/east");
        // A host whose pods lack the label the selector names still matches.
        let mut bare = host.clone();
        if let Some(l) = bare["metadata"]["labels"].as_object_mut() {
            l.remove("batch.kubernetes.io/controller-uid");
        }
        let b = reflection(&bare, &key(), "src-uid", Some(&selector), "root/east");
        assert_eq!(
            b["metadata"]["labels"]["batch.kubernetes.io/controller-uid"],
            "src-uid"
        );
        assert_eq!(r["metadata"]["name"], "pi-x7k2p");
        assert_eq!(r["metadata"]["namespace"], "default");
        assert_eq!(
            r["metadata"]["labels"],
            json!({
                "app": "pi",
                "controller-uid": "src-uid", "batch.kubernetes.io/controller-uid": "src-uid",
                "job-name": "pi", "batch.kubernetes.io/job-name": "pi",
            })
        );
        assert_eq!(
            r["metadata"]["annotations"],
            json!({
                "note": "kept", TARGET_ANNOTATION: "root/east",
                HOST_POD_ANNOTATION: "kplane-0123456789/pi-x7k2p",
            })
        );
        assert_eq!(
            r["metadata"]["ownerReferences"],
            json!([{"apiVersion": "batch/v1", "kind": "Job", "name": "pi", "uid": "src-uid",
                    "controller": true, "blockOwnerDeletion": true}])
        );
        assert!(
            r["metadata"].get("uid").is_none() && r["metadata"].get("resourceVersion").is_none()
        );
        assert_eq!(r["spec"], host["spec"]);
        assert_eq!(r["status"], host["status"]);
    }

    #[test]
    fn a_scheduled_host_pod_is_no_spec_change_of_its_reflection() {
        let have = json!({"spec": {"containers": [{"name": "m", "image": "a"}]}});
        let mut want = have.clone();
        want["spec"]["nodeName"] = json!("worker-1");
        assert!(!spec_changes(&want, &have));
        want["spec"]["containers"][0]["image"] = json!("b");
        assert!(spec_changes(&want, &have));
    }

    #[test]
    fn statuses_stored_with_or_without_empty_values_are_the_same() {
        let want = json!({"status": {"phase": "Running", "conditions": [], "message": "", "podIP": "10.1.2.3"}});
        let have = json!({"status": {"phase": "Running", "podIP": "10.1.2.3"}});
        assert!(same_status(&want, &have));
        let moved = json!({"status": {"phase": "Succeeded", "podIP": "10.1.2.3"}});
        assert!(!same_status(&moved, &have));
    }
}
