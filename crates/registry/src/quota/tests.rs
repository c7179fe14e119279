//! Quotas at write time: limits at, one above and ten times their value, races for the
//! last slots, counts that survive a restart and follow every kind of delete.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;
use std::sync::Arc;

use kplane_storage::{Clusters, Prefix, Storage};
use kplane_types::{ClusterName, ClusterScope, StatusReason};
use serde_json::{json, Value};

use super::*;
use crate::builtin_types::builtin;
use crate::catalog::Catalog;
use crate::options::WriteParams;
use crate::{DeleteOutcome, DeleteParams, Registry, Target};

const CLUSTER: &str = "root:t";

fn cluster() -> ClusterName {
    ClusterName::parse(CLUSTER).unwrap()
}

struct Env {
    _dir: tempfile::TempDir,
    storage: Arc<dyn Storage>,
    reg: Arc<Registry>,
    _shutdown: tokio::sync::watch::Sender<bool>,
}

/// A registry over `storage` (a restart when it was used before), with `root` and
/// `root:t` bootstrapped.
async fn registry(storage: &Arc<dyn Storage>) -> (Arc<Registry>, tokio::sync::watch::Sender<bool>) {
    let (tx, shutdown) = tokio::sync::watch::channel(false);
    let catalog = Arc::new(Catalog::new(builtin()));
    let (reg, _queue) = Registry::new(storage.clone(), catalog, String::new(), shutdown);
    reg.load_cluster_state().await.unwrap();
    reg.ensure_cluster(&ClusterName::root()).await.unwrap();
    reg.ensure_cluster(&cluster()).await.unwrap();
    (reg, tx)
}

async fn env() -> Env {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = crate::testing::memory_store();
    let (reg, tx) = registry(&storage).await;
    Env {
        _dir: dir,
        storage,
        reg,
        _shutdown: tx,
    }
}

fn configmaps(reg: &Registry, c: &ClusterName) -> Target {
    let mut t = crate::testing::target(reg, "", "configmaps", Some("default"));
    t.cluster = ClusterScope::One(c.clone());
    t
}

fn cm(name: &str, data: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name},
           "data": {"k": data}})
}

async fn create(reg: &Registry, t: &Target, name: &str) -> crate::ApiResult<bytes::Bytes> {
    reg.create(t, cm(name, "v"), &WriteParams::default()).await
}

fn used(reg: &Registry, resource: &str) -> u64 {
    let u = reg.quotas().usage(CLUSTER).expect("counted");
    u.resources.get(resource).copied().unwrap_or(0)
}

fn configmap_limit(n: u64) -> Limits {
    Limits {
        resources: BTreeMap::from([("configmaps".to_string(), n)]),
        ..Default::default()
    }
}

/// What `cluster` holds, counted from the store itself.
async fn recount(storage: &Arc<dyn Storage>, cluster: &str) -> Usage {
    let prefix = Prefix {
        cluster: Clusters::One(cluster.into()),
        resource: None,
        namespace: None,
    };
    let mut scan = storage.scan(&prefix, None, 100).await.unwrap();
    let mut u = Usage::default();
    while let Some(page) = scan.next_page().await.unwrap() {
        for kv in page
            .iter()
            .filter(|kv| kv.key.resource != crate::cluster_states::STATE_RESOURCE)
        {
            u.objects += 1;
            u.bytes += kv.value.len() as u64;
            *u.resources
                .entry(resource_name(&kv.key.resource))
                .or_default() += 1;
        }
    }
    u
}

fn refusal(name: &str, quota: &str, resource: &str, n: u64) -> String {
    format!(
        "configmaps \"{name}\" is forbidden: exceeded quota: {quota}, requested: {resource}=1, used: {resource}={n}, limited: {resource}={n}"
    )
}

#[tokio::test]
async fn a_resource_limit_admits_up_to_it_and_refuses_above_it_and_at_ten_times_it() {
    const LIMIT: u64 = 10;
    let e = env().await;
    let t = configmaps(&e.reg, &cluster());
    let base = used(&e.reg, "configmaps");
    let limit = base + LIMIT;
    e.reg
        .quotas()
        .set_limits(CLUSTER, Some(configmap_limit(limit)));
    for i in 0..LIMIT {
        create(&e.reg, &t, &format!("c{i}")).await.unwrap();
    }
    assert_eq!(used(&e.reg, "configmaps"), limit);
    // One above: 403 in upstream's words, and nothing written.
    let err = create(&e.reg, &t, "above").await.unwrap_err();
    assert_eq!(err.0.code, 403);
    assert_eq!(err.0.reason, StatusReason::Forbidden);
    assert_eq!(
        err.0.message,
        refusal("above", WORKSPACE_QUOTA, "count/configmaps", limit)
    );
    assert_eq!(e.reg.get(&t, "above").await.unwrap_err().0.code, 404);
    // Ten times the limit: every one refused, the count unchanged.
    for i in 0..10 * LIMIT {
        let err = create(&e.reg, &t, &format!("x{i}")).await.unwrap_err();
        assert_eq!(err.0.code, 403, "{}", err.0.message);
    }
    assert_eq!(used(&e.reg, "configmaps"), limit);
    assert_eq!(e.reg.quotas().rejections()["configmaps"], 1 + 10 * LIMIT);
    assert_eq!(
        e.reg.quotas().usage(CLUSTER).unwrap(),
        recount(&e.storage, CLUSTER).await
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_creates_take_exactly_the_free_slots() {
    const FREE: u64 = 20;
    let e = env().await;
    let t = configmaps(&e.reg, &cluster());
    let limit = used(&e.reg, "configmaps") + FREE;
    e.reg
        .quotas()
        .set_limits(CLUSTER, Some(configmap_limit(limit)));
    let tasks: Vec<_> = (0..10 * FREE)
        .map(|i| {
            let (reg, t) = (e.reg.clone(), t.clone());
            tokio::spawn(async move { create(&reg, &t, &format!("r{i}")).await.is_ok() })
        })
        .collect();
    let mut admitted = 0;
    for task in tasks {
        admitted += u64::from(task.await.unwrap());
    }
    assert_eq!(admitted, FREE);
    assert_eq!(used(&e.reg, "configmaps"), limit);
    assert_eq!(
        e.reg.quotas().usage(CLUSTER).unwrap(),
        recount(&e.storage, CLUSTER).await
    );
}

#[tokio::test]
async fn a_restart_counts_what_the_cluster_holds() {
    let e = env().await;
    let t = configmaps(&e.reg, &cluster());
    for i in 0..7 {
        create(&e.reg, &t, &format!("c{i}")).await.unwrap();
    }
    e.reg
        .delete(&t, "c0", &DeleteParams::default())
        .await
        .unwrap();
    let grown = cm("c1", &"x".repeat(500));
    e.reg
        .update(&t, "c1", None, grown, &WriteParams::default())
        .await
        .unwrap();
    let before = e.reg.quotas().usage(CLUSTER).unwrap();
    assert_eq!(before, recount(&e.storage, CLUSTER).await);
    // A new registry over the same store counts the cluster on its first write there.
    let (again, _tx) = registry(&e.storage).await;
    let limit = before.resources["configmaps"] + 1;
    again
        .quotas()
        .set_limits(CLUSTER, Some(configmap_limit(limit)));
    let t = configmaps(&again, &cluster());
    create(&again, &t, "last").await.unwrap();
    let err = create(&again, &t, "over").await.unwrap_err();
    assert_eq!(err.0.code, 403);
    let after = again.quotas().usage(CLUSTER).unwrap();
    assert_eq!(after.objects, before.objects + 1);
    assert_eq!(after, recount(&e.storage, CLUSTER).await);
}

#[tokio::test]
async fn deletes_free_quota_and_a_finalizer_holds_it_until_the_object_is_gone() {
    let e = env().await;
    let t = configmaps(&e.reg, &cluster());
    let limit = used(&e.reg, "configmaps") + 2;
    e.reg
        .quotas()
        .set_limits(CLUSTER, Some(configmap_limit(limit)));
    create(&e.reg, &t, "a").await.unwrap();
    let mut held = cm("held", "v");
    held["metadata"]["finalizers"] = json!(["example.com/hold"]);
    e.reg
        .create(&t, held, &WriteParams::default())
        .await
        .unwrap();
    assert_eq!(create(&e.reg, &t, "b").await.unwrap_err().0.code, 403);
    // A plain delete frees its slot.
    e.reg
        .delete(&t, "a", &DeleteParams::default())
        .await
        .unwrap();
    create(&e.reg, &t, "b").await.unwrap();
    // A delete held by a finalizer keeps it until the finalizer goes.
    let marked = e
        .reg
        .delete(&t, "held", &DeleteParams::default())
        .await
        .unwrap();
    assert!(matches!(marked, DeleteOutcome::Marked(_)));
    assert_eq!(create(&e.reg, &t, "c").await.unwrap_err().0.code, 403);
    let mut obj: Value = serde_json::from_slice(&e.reg.get(&t, "held").await.unwrap()).unwrap();
    obj["metadata"]["finalizers"] = json!([]);
    e.reg
        .update(&t, "held", None, obj, &WriteParams::default())
        .await
        .unwrap();
    create(&e.reg, &t, "c").await.unwrap();
    // A deletecollection frees every slot it empties.
    let before = used(&e.reg, "configmaps");
    let (gone, _) = e
        .reg
        .delete_collection(&t, &Default::default(), &DeleteParams::default())
        .await
        .unwrap();
    assert!(gone.len() >= 3);
    assert_eq!(used(&e.reg, "configmaps"), before - gone.len() as u64);
    assert_eq!(
        e.reg.quotas().usage(CLUSTER).unwrap(),
        recount(&e.storage, CLUSTER).await
    );
}

#[tokio::test]
async fn the_server_default_limits_every_cluster_but_root_and_a_workspace_field_overrides_it() {
    let e = env().await;
    let t = configmaps(&e.reg, &cluster());
    let objects = e.reg.quotas().usage(CLUSTER).unwrap().objects;
    e.reg.quotas().set_default(Limits {
        objects: Some(objects + 1),
        ..Default::default()
    });
    create(&e.reg, &t, "a").await.unwrap();
    let err = create(&e.reg, &t, "b").await.unwrap_err();
    assert_eq!(
        err.0.message,
        refusal("b", DEFAULT_QUOTA, OBJECTS, objects + 1)
    );
    // root has no parent, hence no limit.
    let root = configmaps(&e.reg, &ClusterName::root());
    create(&e.reg, &root, "a").await.unwrap();
    create(&e.reg, &root, "b").await.unwrap();
    assert_eq!(
        e.reg.quotas().usage("root"),
        None,
        "root is not even counted"
    );
    // The Workspace's own field wins over the default.
    e.reg.quotas().set_limits(
        CLUSTER,
        Some(Limits {
            objects: Some(objects + 2),
            ..Default::default()
        }),
    );
    create(&e.reg, &t, "b").await.unwrap();
    let err = create(&e.reg, &t, "c").await.unwrap_err();
    assert_eq!(
        err.0.message,
        refusal("c", WORKSPACE_QUOTA, OBJECTS, objects + 2)
    );
}

#[tokio::test]
async fn stored_bytes_are_limited_on_create_and_on_updates_that_grow() {
    let e = env().await;
    let t = configmaps(&e.reg, &cluster());
    create(&e.reg, &t, "small").await.unwrap();
    let bytes = e.reg.quotas().usage(CLUSTER).unwrap().bytes;
    e.reg.quotas().set_limits(
        CLUSTER,
        Some(Limits {
            bytes: Some(bytes + 1000),
            ..Default::default()
        }),
    );
    let big = cm("big", &"x".repeat(2000));
    let err = e
        .reg
        .create(&t, big, &WriteParams::default())
        .await
        .unwrap_err();
    assert_eq!(err.0.code, 403);
    assert!(
        err.0
            .message
            .contains("exceeded quota: workspace, requested: storage/bytes=")
            && err.0.message.contains(&format!(
                "used: storage/bytes={bytes}, limited: storage/bytes={}",
                bytes + 1000
            )),
        "{}",
        err.0.message
    );
    assert_eq!(e.reg.get(&t, "big").await.unwrap_err().0.code, 404);
    // An update that grows past the limit is refused and changes nothing...
    let grown = cm("small", &"x".repeat(2000));
    let err = e
        .reg
        .update(&t, "small", None, grown, &WriteParams::default())
        .await
        .unwrap_err();
    assert_eq!(err.0.code, 403);
    let stored: Value = serde_json::from_slice(&e.reg.get(&t, "small").await.unwrap()).unwrap();
    assert_eq!(stored["data"]["k"], "v");
    // ...one that grows within it is taken, and counted.
    let grown = cm("small", &"x".repeat(500));
    e.reg
        .update(&t, "small", None, grown, &WriteParams::default())
        .await
        .unwrap();
    assert_eq!(
        e.reg.quotas().usage(CLUSTER).unwrap(),
        recount(&e.storage, CLUSTER).await
    );
}

#[test]
fn a_workspace_quota_is_read_and_checked() {
    let ws = json!({"spec": {"quota": {"objects": 5, "bytes": 100,
                                       "resources": {"configmaps": 2, "deployments.apps": 1}}}});
    let l = Limits::from_workspace(&ws).unwrap().unwrap();
    assert_eq!(l.objects, Some(5));
    assert_eq!(l.bytes, Some(100));
    assert_eq!(l.resources["deployments.apps"], 1);
    assert_eq!(Limits::from_workspace(&json!({"spec": {}})).unwrap(), None);
    let bad = json!({"spec": {"quota": {"objects": -1}}});
    assert_eq!(
        Limits::from_workspace(&bad).unwrap_err().0,
        "spec.quota.objects"
    );
    let bad = json!({"spec": {"quota": {"resources": {"count/configmaps": 1}}}});
    assert!(Limits::from_workspace(&bad).is_err());
    assert_eq!(resource_name("/configmaps"), "configmaps");
    assert_eq!(resource_name("apps/deployments"), "deployments.apps");
}

#[tokio::test]
async fn a_workspace_quota_limits_its_cluster_and_its_status_shows_the_usage() {
    let e = env().await;
    e.reg.set_external_url("https://kplane.test");
    let mut ws = crate::testing::target(&e.reg, "tenancy.kplane.io", "workspaces", None);
    ws.cluster = ClusterScope::One(ClusterName::root());
    let obj = json!({"apiVersion": "tenancy.kplane.io/v1alpha1", "kind": "Workspace",
                     "metadata": {"name": "w"},
                     "spec": {"quota": {"resources": {"secrets": 1}}}});
    e.reg
        .create(&ws, obj, &WriteParams::default())
        .await
        .unwrap();
    let child = ClusterName::parse("root:w").unwrap();
    let mut secrets = crate::testing::target(&e.reg, "", "secrets", Some("default"));
    secrets.cluster = ClusterScope::One(child.clone());
    let secret = |n: &str| json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": n}});
    let w = WriteParams::default();
    e.reg.create(&secrets, secret("a"), &w).await.unwrap();
    let err = e.reg.create(&secrets, secret("b"), &w).await.unwrap_err();
    assert_eq!(
        err.0.message,
        "secrets \"b\" is forbidden: exceeded quota: workspace, requested: count/secrets=1, used: count/secrets=1, limited: count/secrets=1"
    );
    // A bad quota is refused with the field's name.
    let mut bad: Value = serde_json::from_slice(&e.reg.get(&ws, "w").await.unwrap()).unwrap();
    bad["spec"]["quota"]["objects"] = json!(-1);
    let err = e.reg.update(&ws, "w", None, bad, &w).await.unwrap_err();
    assert_eq!(err.0.code, 422, "{}", err.0.message);
    assert!(
        err.0.message.contains("spec.quota.objects"),
        "{}",
        err.0.message
    );
    // The status controller's step writes the limits and the counts.
    crate::quota::status::write_quota_status(&e.reg, "root:w")
        .await
        .unwrap();
    let stored: Value = serde_json::from_slice(&e.reg.get(&ws, "w").await.unwrap()).unwrap();
    let quota = &stored["status"]["quota"];
    assert_eq!(quota["hard"]["count/secrets"], 1, "{stored}");
    assert_eq!(quota["used"]["count/secrets"], 1, "{stored}");
    let used = e.reg.quotas().usage("root:w").unwrap();
    assert_eq!(quota["used"]["count/*"], used.objects);
    assert_eq!(stored["status"]["phase"], "Ready");
    assert_eq!(
        e.reg.quotas().limits("root:w").unwrap().resources["secrets"],
        1
    );
}

#[tokio::test]
async fn a_batch_that_writes_one_key_several_times_is_counted_in_order() {
    use kplane_storage::{BatchWrite, Key, Precondition};
    let e = env().await;
    let key = Key::new(CLUSTER, "/configmaps", "default", "twice");
    let w = |delete: bool, precondition: Precondition, v: &str| BatchWrite {
        key: key.clone(),
        delete,
        precondition,
        encode: Box::new({
            let v = v.to_string();
            move |_| Ok(v.into_bytes())
        }),
    };
    let batch = vec![
        w(false, Precondition::MustNotExist, "one"),
        w(false, Precondition::MustExist, "two, longer"),
        w(true, Precondition::MustExist, ""),
        w(false, Precondition::MustNotExist, "three"),
    ];
    for r in e.reg.storage().write_batch(batch).await {
        r.unwrap();
    }
    assert_eq!(
        e.reg.quotas().usage(CLUSTER).unwrap(),
        recount(&e.storage, CLUSTER).await
    );
}

#[tokio::test]
async fn a_cluster_is_counted_across_scan_pages_at_one_page_one_above_and_ten_pages() {
    use kplane_storage::{BatchWrite, Key, Precondition};
    let page = super::storage::DERIVE_PAGE;
    let e = env().await;
    for n in [page, page + 1, 10 * page] {
        let cluster = format!("root:p{n}");
        // Written behind the registry's back, as a store it finds at start-up.
        let writes = (0..n)
            .map(|i| BatchWrite {
                key: Key::new(&cluster, "/configmaps", "default", format!("c{i}")),
                delete: false,
                precondition: Precondition::MustNotExist,
                encode: Box::new(move |_| Ok(format!("{{\"i\":{i}}}").into_bytes())),
            })
            .collect();
        for r in e.storage.write_batch(writes).await {
            r.unwrap();
        }
        // The registry's first write there counts what the cluster holds.
        let one = Key::new(&cluster, "/secrets", "default", "first");
        e.reg
            .storage()
            .put(
                one,
                Precondition::MustNotExist,
                Box::new(|_| Ok(b"{}".to_vec())),
            )
            .await
            .unwrap();
        let u = e.reg.quotas().usage(&cluster).unwrap();
        assert_eq!(u.resources["configmaps"], n as u64);
        assert_eq!(u.objects, n as u64 + 1);
        assert_eq!(u, recount(&e.storage, &cluster).await);
    }
}

#[tokio::test]
async fn failed_writes_change_no_count() {
    use kplane_storage::{Error, Key, Precondition};
    let e = env().await;
    let s = e.reg.storage();
    let key = Key::new(CLUSTER, "/configmaps", "default", "kube-root-ca.crt");
    let before = e.reg.quotas().usage(CLUSTER).unwrap();
    // A create of a key that exists: the precondition fails before anything is counted.
    let r = s
        .put(
            key.clone(),
            Precondition::MustNotExist,
            Box::new(|_| Ok(b"{}".to_vec())),
        )
        .await;
    assert!(matches!(r, Err(Error::AlreadyExists)), "{r:?}");
    // An update whose encoder fails, and one against another revision.
    let r = s
        .put(
            key.clone(),
            Precondition::MustExist,
            Box::new(|_| Err("boom".into())),
        )
        .await;
    assert!(matches!(r, Err(Error::Encode(_))), "{r:?}");
    let r = s
        .put(
            key.clone(),
            Precondition::ModRevision(1),
            Box::new(|_| Ok(b"{}".to_vec())),
        )
        .await;
    assert!(matches!(r, Err(Error::Conflict { .. })), "{r:?}");
    // A delete of a key that is not there.
    let gone = Key::new(CLUSTER, "/configmaps", "default", "nope");
    let r = s
        .delete(
            gone,
            Precondition::MustExist,
            Box::new(|_| Ok(b"{}".to_vec())),
        )
        .await;
    assert!(matches!(r, Err(Error::NotFound)), "{r:?}");
    assert_eq!(e.reg.quotas().usage(CLUSTER).unwrap(), before);
    assert_eq!(before, recount(&e.storage, CLUSTER).await);
}

/// A backend whose writes of keys named `fail-*` run their encoder and then fail, as a
/// write that fails after the writer took it (a conflict found late, a flush that failed).
struct FailAfterEncoding {
    inner: Arc<dyn Storage>,
    error: fn() -> kplane_storage::Error,
}

#[async_trait::async_trait]
impl Storage for FailAfterEncoding {
    fn current_revision(&self) -> kplane_storage::Revision {
        self.inner.current_revision()
    }
    fn compacted_revision(&self) -> kplane_storage::Revision {
        self.inner.compacted_revision()
    }
    async fn get(
        &self,
        key: &kplane_storage::Key,
    ) -> kplane_storage::Result<Option<kplane_storage::KeyValue>> {
        self.inner.get(key).await
    }
    async fn list(
        &self,
        prefix: &Prefix,
        opts: &kplane_storage::ListOptions,
        filter: Option<kplane_storage::Filter<'_>>,
    ) -> kplane_storage::Result<kplane_storage::ListResult> {
        self.inner.list(prefix, opts, filter).await
    }
    async fn count(&self, prefix: &Prefix) -> kplane_storage::Result<u64> {
        self.inner.count(prefix).await
    }
    async fn put(
        &self,
        key: kplane_storage::Key,
        precondition: kplane_storage::Precondition,
        encode: kplane_storage::Encoder,
    ) -> kplane_storage::Result<kplane_storage::KeyValue> {
        if key.name.starts_with("fail-") {
            encode(self.inner.current_revision() + 1).unwrap();
            return Err((self.error)());
        }
        self.inner.put(key, precondition, encode).await
    }
    async fn delete(
        &self,
        key: kplane_storage::Key,
        precondition: kplane_storage::Precondition,
        encode: kplane_storage::Encoder,
    ) -> kplane_storage::Result<kplane_storage::KeyValue> {
        self.inner.delete(key, precondition, encode).await
    }
    async fn delete_cluster(
        &self,
        cluster: &str,
        batch: usize,
        tombstone: kplane_storage::Tombstone,
    ) -> kplane_storage::Result<u64> {
        self.inner.delete_cluster(cluster, batch, tombstone).await
    }
    async fn clusters(
        &self,
        start_after: Option<&str>,
        limit: usize,
    ) -> kplane_storage::Result<Vec<String>> {
        self.inner.clusters(start_after, limit).await
    }
    async fn scan(
        &self,
        prefix: &Prefix,
        at: Option<kplane_storage::Revision>,
        page_size: usize,
    ) -> kplane_storage::Result<Box<dyn kplane_storage::RangeScan>> {
        self.inner.scan(prefix, at, page_size).await
    }
    async fn watch(
        &self,
        prefix: &Prefix,
        from: kplane_storage::Revision,
        progress_every: Option<std::time::Duration>,
    ) -> kplane_storage::Result<kplane_storage::WatchReceiver> {
        self.inner.watch(prefix, from, progress_every).await
    }
    async fn claim(&self, name: &str) -> kplane_storage::Result<Option<kplane_storage::Claim>> {
        self.inner.claim(name).await
    }
    async fn shutdown(&self) -> kplane_storage::Result<()> {
        self.inner.shutdown().await
    }
}

#[tokio::test]
async fn a_write_that_fails_after_its_reservation_gives_it_back() {
    use kplane_storage::{Error, Key, Precondition};
    let store: Arc<dyn Storage> = crate::testing::memory_store();
    type MakeError = fn() -> Error;
    let cases: [(MakeError, &str); 2] = [
        (|| Error::Conflict { current: 1 }, "released"),
        (|| Error::Timeout("late".into()), "recounted"),
    ];
    for (error, what) in cases {
        let quotas = Arc::new(Quotas::default());
        let failing = Arc::new(FailAfterEncoding {
            inner: store.clone(),
            error,
        });
        let s = QuotaStorage::wrap(failing, quotas.clone());
        let cluster = format!("root:{what}");
        quotas.set_limits(&cluster, Some(configmap_limit(1)));
        let key = |n: &str| Key::new(&cluster, "/configmaps", "default", n);
        let put = |n: &str| {
            s.put(
                key(n),
                Precondition::MustNotExist,
                Box::new(|_| Ok(b"{}".to_vec())),
            )
        };
        // The failed write took the only slot inside its encoder, then failed.
        let r = put("fail-a").await;
        assert!(r.is_err(), "{what}");
        // The slot is free again: given back, or the cluster counted anew.
        put("ok").await.unwrap();
        assert!(
            matches!(put("ok-2").await, Err(Error::Refused(_))),
            "{what}"
        );
        assert_eq!(
            quotas.usage(&cluster).unwrap(),
            recount(&store, &cluster).await,
            "{what}"
        );
    }
}

/// A create that is durable but reported failed (the ambiguous commit: a timeout, or a
/// backend error after the commit) keeps its slot: its outcome is unknown to the quota,
/// which counts the cluster from storage again, so the count is exact and the limit
/// holds.
#[tokio::test]
async fn an_ambiguous_commit_keeps_its_slot() {
    use kplane_storage::faults::{Fault, Faulty, Op};
    use kplane_storage::{Error, Key, Precondition};
    let store = Faulty::new(crate::testing::memory_store());
    let inner: Arc<dyn Storage> = store.inner().clone();
    type MakeError = fn() -> Error;
    let cases: [MakeError; 2] = [
        || Error::Timeout("no reply".into()),
        || Error::Backend("connection lost".into()),
    ];
    for (i, error) in cases.into_iter().enumerate() {
        let quotas = Arc::new(Quotas::default());
        let s = QuotaStorage::wrap(store.clone(), quotas.clone());
        let cluster = format!("root:ambiguous-{i}");
        quotas.set_limits(&cluster, Some(configmap_limit(1)));
        let key = |n: &str| Key::new(&cluster, "/configmaps", "default", n);
        let put = |n: &str| {
            s.put(
                key(n),
                Precondition::MustNotExist,
                Box::new(|_| Ok(b"{}".to_vec())),
            )
        };
        store.inject(Op::Put, Fault::commit_then_fail(error).times(1));
        assert!(put("a").await.is_err());
        assert!(inner.get(&key("a")).await.unwrap().is_some(), "durable");
        assert!(
            matches!(put("b").await, Err(Error::Refused(_))),
            "the ambiguous create holds the only slot"
        );
        assert_eq!(
            quotas.usage(&cluster).unwrap(),
            recount(&inner, &cluster).await
        );
    }
}
