//! Fixtures for tests of the registry and of the layers above it (enabled by the `testing`
//! feature): a registry with `root` bootstrapped, over an in-memory store
//! (`kplane_storage::memory`) unless the test asks for sled ([`fixture_with`], for sled
//! options such as a short event window, or [`sled_fixture`]) or for a store of its own
//! ([`fixture_over`], e.g. one wrapped in `kplane_storage::faults::Faulty`). Fixtures panic
//! on failure, as the tests using them should.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;

use kplane_storage::memory::{MemoryStorage, MemoryStorageOptions};
use kplane_storage::{SledStorage, SledStorageOptions, Storage};
use serde_json::{json, Value};

use crate::admission::Admission;
use crate::builtin_types::builtin;
use crate::catalog::Catalog;
use crate::options::WriteParams;
use crate::{Registry, Target};

/// A registry, its store, the directory of the store when it is on disk and the sender
/// that keeps its workers running.
pub struct Fixture {
    pub _dir: Option<tempfile::TempDir>,
    pub _shutdown: tokio::sync::watch::Sender<bool>,
    pub reg: Arc<Registry>,
    /// The store under the registry (without the registry's quota decorator).
    pub storage: Arc<dyn Storage>,
}

/// A registry over an in-memory store, with the recommended admission chain.
pub async fn fixture() -> Fixture {
    fixture_with_admission(Admission::recommended()).await
}

/// A registry over a sled store in a temporary directory opened with `opts`.
pub async fn fixture_with(opts: SledStorageOptions) -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> = SledStorage::open(dir.path().join("db"), opts).unwrap();
    build(Some(dir), storage, Admission::recommended()).await
}

/// A registry over a sled store with the default options.
pub async fn sled_fixture() -> Fixture {
    fixture_with(SledStorageOptions::default()).await
}

/// A fixture whose registry has the admission chain `admission`, over an in-memory store.
pub async fn fixture_with_admission(admission: Admission) -> Fixture {
    build(None, memory_store(), admission).await
}

/// A registry over `storage`, with the recommended admission chain.
pub async fn fixture_over(storage: Arc<dyn Storage>) -> Fixture {
    build(None, storage, Admission::recommended()).await
}

/// A fresh in-memory store with the default options.
pub fn memory_store() -> Arc<dyn Storage> {
    MemoryStorage::new(MemoryStorageOptions::default())
}

async fn build(
    dir: Option<tempfile::TempDir>,
    storage: Arc<dyn Storage>,
    admission: Admission,
) -> Fixture {
    let catalog = Arc::new(Catalog::new(builtin()));
    let (tx, shutdown) = tokio::sync::watch::channel(false);
    let (reg, _queue) =
        Registry::with_admission(storage.clone(), catalog, String::new(), shutdown, admission);
    reg.ensure_cluster(&kplane_types::ClusterName::root())
        .await
        .unwrap();
    Fixture {
        _dir: dir,
        _shutdown: tx,
        reg,
        storage,
    }
}

pub fn target(reg: &Registry, group: &str, plural: &str, ns: Option<&str>) -> Target {
    let rt = reg
        .builtin_catalog()
        .all()
        .iter()
        .find(|rt| rt.group == group && rt.plural == plural)
        .unwrap()
        .clone();
    Target {
        cluster: kplane_types::ClusterScope::One(kplane_types::ClusterName::root()),
        rt,
        namespace: ns.map(str::to_string),
    }
}

pub async fn create_namespace(reg: &Registry, name: &str) -> Target {
    let nst = target(reg, "", "namespaces", None);
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}});
    reg.create(&nst, ns, &WriteParams::default()).await.unwrap();
    target(reg, "", "configmaps", Some(name))
}

/// Creates `objs` through `t`, many at a time (one group commit serves them all).
pub async fn create_all(reg: &Registry, t: &Target, objs: Vec<Value>) {
    let w = WriteParams::default();
    for chunk in objs.chunks(256) {
        let creates = chunk.iter().map(|o| reg.create(t, o.clone(), &w));
        for r in futures::future::join_all(creates).await {
            r.unwrap();
        }
    }
}

pub fn configmap(name: &str, group: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "labels": {"group": group}}, "data": {"k": "v"}})
}

/// The `metadata.name` of a stored object.
pub fn name_of(item: &[u8]) -> String {
    let v: Value = serde_json::from_slice(item).unwrap();
    v["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string()
}

/// Polls `check` every few milliseconds until it holds; panics naming `what` after 60 s (a
/// failure is a stuck controller or replica, not a slow one). The one polling helper of the
/// registry's tests.
pub async fn until<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
    while !check().await {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}
