//! The root-CA publisher (what kube-controller-manager's `root-ca-cert-publisher` does):
//! every active namespace of every logical cluster holds a `kube-root-ca.crt` ConfigMap
//! with the serving CA under `ca.crt` and a `kubernetes.io/description` annotation.
//!
//! The ConfigMap is made with its namespace (`namespaces`). The publisher is a handler of
//! the shared informer (`Publisher`): every namespace is synced each time the informer
//! (re)starts from a scan — at start-up, and after it fell behind or its revision was
//! compacted — on a task of its own (`run_syncer`); afterwards each change of a
//! `kube-root-ca.crt` the informer delivers queues a sync ([`RootCa`]) when the
//! ConfigMap was deleted or changed away from that content; the sync recreates it, or puts
//! back `data` and the annotation, keeping everything else (labels, other annotations,
//! `binaryData`), as upstream does. Nothing polls: an untouched namespace costs nothing.
//! Namespaces that are Terminating or gone are left alone. Writes go through the
//! registry's create and update (with the resourceVersion read) under
//! kube-controller-manager's field manager; a failed one is logged and retried.

use kplane_types::{ClusterName, ClusterScope};
use std::sync::Arc;

use kplane_storage::{KeyValue, Prefix};
use serde_json::{json, Map, Value};
use tokio::sync::Notify;

use super::informer::InformerHandler;
use super::write_failed;
use super::{Controller, InNamespace};
use crate::error::ApiResult;
use crate::options::WriteParams;
use crate::{meta, Registry, Target};

/// The ConfigMap's name in every namespace.
pub const CONFIG_MAP_NAME: &str = "kube-root-ca.crt";
/// The data key holding the PEM bundle.
pub const DATA_KEY: &str = "ca.crt";
/// The annotation describing the ConfigMap's use.
pub const DESCRIPTION_ANNOTATION: &str = "kubernetes.io/description";
/// Its value (upstream's text, so tools that compare it see the same).
pub const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";

/// The controller's name in logs.
const CONTROLLER: &str = "root-ca-cert-publisher";

/// Storage resource of ConfigMaps and Namespaces.
const CONFIG_MAPS: &str = "/configmaps";
const NAMESPACES: &str = "/namespaces";

/// The ConfigMap a namespace `ns` should hold for the CA `pem`.
pub fn desired(ns: &str, pem: &str) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": CONFIG_MAP_NAME,
            "namespace": ns,
            "annotations": {DESCRIPTION_ANNOTATION: DESCRIPTION},
        },
        "data": {DATA_KEY: pem},
    })
}

/// Whether a stored `kube-root-ca.crt` is as the publisher leaves it: `data` is exactly
/// `{ca.crt: pem}` and the description annotation is not empty.
pub fn is_published(cm: &Value, pem: &str) -> bool {
    let data_ok = cm
        .get("data")
        .and_then(Value::as_object)
        .is_some_and(|d| d.len() == 1 && d.get(DATA_KEY).and_then(Value::as_str) == Some(pem));
    let annotated = cm
        .pointer("/metadata/annotations")
        .and_then(|a| a.get(DESCRIPTION_ANNOTATION))
        .and_then(Value::as_str)
        .is_some_and(|s| !s.is_empty());
    data_ok && annotated
}

/// `cm` with the publisher's `data` and annotation put back; everything else kept.
fn republished(mut cm: Value, pem: &str) -> Value {
    if let Some(o) = cm.as_object_mut() {
        o.insert("data".into(), json!({DATA_KEY: pem}));
    }
    if let Ok(m) = meta::meta_mut(&mut cm) {
        let ann = m
            .entry("annotations")
            .or_insert_with(|| Value::Object(Map::new()));
        if !ann.is_object() {
            *ann = Value::Object(Map::new());
        }
        ann[DESCRIPTION_ANNOTATION] = json!(DESCRIPTION);
    }
    cm
}

fn config_map_target(reg: &Registry, cluster: &ClusterName, ns: &str) -> Option<Target> {
    let rt = reg.builtin_catalog().get("", "v1", "configmaps").cloned()?;
    Some(Target {
        cluster: ClusterScope::One(cluster.clone()),
        rt,
        namespace: Some(ns.to_string()),
    })
}

/// Whether `ns` exists in `cluster` and is Active (not being deleted).
async fn namespace_active(reg: &Registry, cluster: &ClusterName, ns: &str) -> ApiResult<bool> {
    let key = kplane_storage::Key::new(cluster, NAMESPACES, "", ns);
    Ok(reg.get_decoded(&key).await?.is_some_and(|(_, v)| {
        !meta::is_deleting(&v)
            && v.pointer("/status/phase").and_then(Value::as_str) == Some("Active")
    }))
}

/// Makes `kube-root-ca.crt` in `cluster`/`ns` what the publisher publishes.
/// Returns false to be retried (a concurrent write won the race).
pub(super) async fn sync_root_ca(
    reg: &Registry,
    cluster: &ClusterName,
    ns: &str,
) -> ApiResult<bool> {
    if !namespace_active(reg, cluster, ns).await? {
        return Ok(true);
    }
    let Some(t) = config_map_target(reg, cluster, ns) else {
        return Ok(true);
    };
    let w = WriteParams::controller();
    let Some(kv) = reg.get_stored(&t, CONFIG_MAP_NAME).await? else {
        return match reg.create(&t, desired(ns, &reg.root_ca_pem), &w).await {
            Ok(_) => Ok(true),
            // The namespace went away or began terminating meanwhile.
            Err(e) if e.code() == 404 || e.code() == 403 => Ok(true),
            // Made meanwhile (by the namespace's bootstrap): look at it again.
            Err(e) if e.code() == 409 => Ok(false),
            Err(e) => {
                write_failed(CONTROLLER, cluster.as_str(), &t.rt, ns, CONFIG_MAP_NAME, &e);
                Ok(false)
            }
        };
    };
    let cm: Value = serde_json::from_slice(&kv.value).map_err(|e| crate::corrupt(&e))?;
    if is_published(&cm, &reg.root_ca_pem) {
        return Ok(true);
    }
    let mut fixed = republished(cm, &reg.root_ca_pem);
    meta::meta_mut(&mut fixed)?
        .insert("resourceVersion".into(), json!(kv.mod_revision.to_string()));
    match reg.update(&t, CONFIG_MAP_NAME, None, fixed, &w).await {
        Ok(_) => Ok(true),
        // Deleted meanwhile: the next sync recreates it.
        Err(e) if e.code() == 404 => Ok(false),
        Err(e) => {
            write_failed(CONTROLLER, cluster.as_str(), &t.rt, ns, CONFIG_MAP_NAME, &e);
            // An `immutable: true` copy cannot be put back; retrying would not help.
            Ok(e.code() == 422)
        }
    }
}

/// Syncs every namespace of every logical cluster, one at a time, as upstream's
/// publisher does when its informers start: at start-up (stores written before the
/// publisher, or a crash between a namespace and its ConfigMap) and after the informer
/// lost events it cannot replay. Inline, so a large store queues nothing but the syncs
/// that must be retried.
async fn sync_all_namespaces(reg: &Registry) {
    let prefix = Prefix {
        cluster: kplane_storage::Clusters::All,
        resource: Some(NAMESPACES.into()),
        namespace: None,
    };
    let mut opts = kplane_storage::ListOptions {
        limit: Some(1000),
        ..Default::default()
    };
    loop {
        let page = match reg.list_by_prefix(&prefix, &opts, None).await {
            Ok(p) => p,
            Err(e) => {
                tracing::warn!(error = %e.0.message, "root CA publisher could not list namespaces");
                return;
            }
        };
        for kv in &page.items {
            let Some(cluster) = super::stored_cluster(&kv.key) else {
                continue;
            };
            let (cluster, ns) = (&cluster, &kv.key.name);
            let retry = InNamespace::new(cluster.clone(), ns.clone());
            match sync_root_ca(reg, cluster, ns).await {
                Ok(true) => {}
                // A failed write (logged): retried through the queue.
                Ok(false) => reg.enqueue::<RootCa>(retry),
                Err(e) => {
                    tracing::warn!(cluster = %cluster, namespace = ns, error = %e.0.message, "kube-root-ca.crt sync failed");
                    reg.enqueue::<RootCa>(retry);
                }
            }
        }
        match (page.more, page.items.last()) {
            (true, Some(last)) => opts.start_after = Some(last.key.clone()),
            _ => return,
        }
    }
}

/// Whether a change of the ConfigMap at `kv` calls for a sync.
fn needs_sync(kv: &KeyValue, deleted: bool, pem: &str) -> bool {
    if kv.key.resource != CONFIG_MAPS || kv.key.name != CONFIG_MAP_NAME {
        return false;
    }
    deleted || serde_json::from_slice::<Value>(&kv.value).map_or(true, |v| !is_published(&v, pem))
}

/// The publisher's [`InformerHandler`]: a resync asks `run_syncer` to sync every
/// namespace; each later change of a `kube-root-ca.crt` that needs it queues a sync.
pub(crate) struct Publisher {
    registry: Arc<Registry>,
    resync: Arc<Notify>,
}

/// The publisher and the task that syncs every namespace when it asks (run it).
pub(crate) fn publisher(
    registry: Arc<Registry>,
) -> (Publisher, impl std::future::Future<Output = ()> + Send) {
    let resync = Arc::new(Notify::new());
    let syncer = run_syncer(registry.clone(), resync.clone());
    (Publisher { registry, resync }, syncer)
}

impl InformerHandler for Publisher {
    fn on_resync(&self) {
        // One stored permit: requests made while a sync runs are served by one more sync.
        self.resync.notify_one();
    }

    fn on_object(&self, kv: &KeyValue, deleted: bool, replay: bool) {
        // The replay is covered by the sync of every namespace the resync started.
        if !replay && needs_sync(kv, deleted, &self.registry.root_ca_pem) {
            let Some(cluster) = super::stored_cluster(&kv.key) else {
                return;
            };
            if deleted && self.registry.cluster_going(&cluster) {
                // Its cluster is being deleted (or is gone): nothing may be written there,
                // so a sync would only be refused. A deleted workspace's copies go by the
                // thousand.
                return;
            }
            let key = InNamespace::new(cluster, kv.key.namespace.clone());
            self.registry.enqueue::<RootCa>(key);
        }
    }
}

/// Syncs every namespace each time the publisher asks (the informer started a scan after
/// reading its revision, so changes after the sync began reach the publisher as events).
pub(crate) async fn run_syncer(registry: Arc<Registry>, resync: Arc<Notify>) {
    loop {
        resync.notified().await;
        sync_all_namespaces(&registry).await;
    }
}

/// The root-CA publisher, for one namespace's `kube-root-ca.crt` (recreated or republished).
pub struct RootCa;

impl Controller<Registry> for RootCa {
    type Key = InNamespace;

    fn name(&self) -> &'static str {
        CONTROLLER
    }

    async fn reconcile(&self, registry: &Registry, key: &InNamespace) -> ApiResult<bool> {
        sync_root_ca(registry, &key.cluster, &key.namespace).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn published_means_exact_data_and_a_description() {
        let pem = "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n";
        let good = desired("ns", pem);
        assert!(is_published(&good, pem));
        let mut extra_key = good.clone();
        extra_key["data"]["other"] = json!("v");
        let mut wrong_ca = good.clone();
        wrong_ca["data"][DATA_KEY] = json!("not a CA");
        let mut no_desc = good.clone();
        no_desc["metadata"]["annotations"] = json!({});
        let mut empty_desc = good.clone();
        empty_desc["metadata"]["annotations"][DESCRIPTION_ANNOTATION] = json!("");
        let mut no_data = good.clone();
        no_data.as_object_mut().unwrap().remove("data");
        for (what, cm) in [
            ("extra key", &extra_key),
            ("wrong CA", &wrong_ca),
            ("no description", &no_desc),
            ("empty description", &empty_desc),
            ("no data", &no_data),
        ] {
            assert!(!is_published(cm, pem), "{what}");
            let fixed = republished(cm.clone(), pem);
            assert!(is_published(&fixed, pem), "{what} republished");
        }
        // A different description is left as is; only an empty one is replaced.
        let mut other_desc = good.clone();
        other_desc["metadata"]["annotations"][DESCRIPTION_ANNOTATION] = json!("mine");
        assert!(is_published(&other_desc, pem));
    }

    /// A deleted copy queues a sync in a live cluster only: not in a cluster being deleted
    /// (or within one), nor in one that is gone, where no write could succeed (a deleted
    /// workspace drops four copies, 40,000 for 10,000 workspaces).
    #[tokio::test]
    async fn a_deleted_copy_queues_a_sync_only_where_it_can_be_written() {
        use kplane_storage::{Key, Storage};
        let storage: Arc<dyn Storage> = crate::testing::memory_store();
        let catalog = Arc::new(crate::Catalog::new(crate::builtin_types::builtin()));
        let (_tx, shutdown) = tokio::sync::watch::channel(false);
        let (reg, _queue) = Registry::new(storage, catalog, "PEM".into(), shutdown);
        let (publisher, _syncer) = publisher(reg.clone());
        let c = |s: &str| ClusterName::parse(s).unwrap();
        for live in ["root:live", "root:going", "root:going:child"] {
            reg.mark_cluster(&c(live));
        }
        reg.set_terminating(&c("root:going"), true);
        let copy = |cluster: &str| KeyValue {
            key: Key::new(cluster, CONFIG_MAPS, "default", CONFIG_MAP_NAME),
            value: serde_json::to_vec(&desired("default", "PEM"))
                .unwrap()
                .into(),
            create_revision: 1,
            mod_revision: 2,
        };
        for (cluster, queued) in [
            ("root:going", 0),
            ("root:going:child", 0),
            ("root:gone", 0),
            ("root:live", 1),
            ("root", 2),
        ] {
            publisher.on_object(&copy(cluster), true, false);
            assert_eq!(reg.queued_work(), queued, "{cluster}");
        }
        // A changed (not deleted) copy in a going cluster is not this filter's business.
        let mut changed = copy("root:going");
        changed.value = serde_json::to_vec(&desired("default", "other"))
            .unwrap()
            .into();
        publisher.on_object(&changed, false, false);
        assert_eq!(reg.queued_work(), 3);
    }

    async fn stored_root_ca(reg: &Registry, cluster: &ClusterName, ns: &str) -> Option<Value> {
        let key = kplane_storage::Key::new(cluster, CONFIG_MAPS, ns, CONFIG_MAP_NAME);
        reg.get_decoded(&key).await.unwrap().map(|(_, v)| v)
    }

    /// The start-up pass repairs what changed while no watch was running: a missing
    /// ConfigMap, one with other data, one without the annotation (an older store), in
    /// every logical cluster, and leaves a Terminating namespace alone.
    #[tokio::test]
    async fn start_up_pass_publishes_in_every_namespace_of_every_cluster() {
        use kplane_storage::{Key, Precondition, Storage};
        let storage: Arc<dyn Storage> = crate::testing::memory_store();
        let catalog = Arc::new(crate::Catalog::new(crate::builtin_types::builtin()));
        let (_tx, shutdown) = tokio::sync::watch::channel(false);
        let (reg, _queue) = Registry::new(storage.clone(), catalog, "PEM".into(), shutdown);
        for c in ["root", "root:b"] {
            reg.ensure_cluster(&kplane_types::ClusterName::parse(c).unwrap())
                .await
                .unwrap();
        }
        let key = |c: &str, ns: &str| Key::new(c, CONFIG_MAPS, ns, CONFIG_MAP_NAME);
        let raw = |v: Value| crate::write::encoder(v);
        storage
            .delete(
                key("root", "default"),
                Precondition::MustExist,
                raw(json!({})),
            )
            .await
            .unwrap();
        let mut tampered = desired("kube-system", "other");
        tampered["metadata"]["labels"] = json!({"keep": "me"});
        storage
            .put(
                key("root", "kube-system"),
                Precondition::MustExist,
                raw(tampered),
            )
            .await
            .unwrap();
        let mut old_style = desired("default", "PEM");
        old_style["metadata"]["annotations"] = json!({});
        storage
            .put(
                key("root:b", "default"),
                Precondition::MustExist,
                raw(old_style),
            )
            .await
            .unwrap();
        let ns_key = Key::new("root:b", NAMESPACES, "", "kube-public");
        let (_, mut ns) = reg.get_decoded(&ns_key).await.unwrap().unwrap();
        ns["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
        storage
            .put(ns_key, Precondition::MustExist, raw(ns))
            .await
            .unwrap();
        storage
            .delete(
                key("root:b", "kube-public"),
                Precondition::MustExist,
                raw(json!({})),
            )
            .await
            .unwrap();

        sync_all_namespaces(&reg).await;
        for c in ["root", "root:b"] {
            for ns in crate::namespaces::DEFAULT_NAMESPACES {
                let cm =
                    stored_root_ca(&reg, &kplane_types::ClusterName::parse(c).unwrap(), ns).await;
                if (c, *ns) == ("root:b", "kube-public") {
                    assert!(cm.is_none(), "a Terminating namespace got a new ConfigMap");
                    continue;
                }
                let cm = cm.unwrap_or_else(|| panic!("{c}/{ns} has no kube-root-ca.crt"));
                assert!(is_published(&cm, "PEM"), "{c}/{ns}: {cm}");
            }
        }
        let fixed = stored_root_ca(&reg, &kplane_types::ClusterName::root(), "kube-system")
            .await
            .unwrap();
        assert_eq!(fixed["metadata"]["labels"], json!({"keep": "me"}));
    }

    #[test]
    fn republishing_keeps_labels_annotations_and_binary_data() {
        let pem = "pem";
        let cm = json!({
            "metadata": {"name": CONFIG_MAP_NAME, "labels": {"a": "b"}, "annotations": {"x": "y"}},
            "data": {DATA_KEY: "tampered"},
            "binaryData": {"bin": "AAEC"},
        });
        let fixed = republished(cm, pem);
        assert_eq!(fixed["metadata"]["labels"], json!({"a": "b"}));
        assert_eq!(fixed["metadata"]["annotations"]["x"], "y");
        assert_eq!(
            fixed["metadata"]["annotations"][DESCRIPTION_ANNOTATION],
            DESCRIPTION
        );
        assert_eq!(fixed["data"], json!({DATA_KEY: pem}));
        assert_eq!(fixed["binaryData"], json!({"bin": "AAEC"}));
    }
}
