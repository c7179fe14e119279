//! The server's own controllers: the background work kube-controller-manager (and the
//! controllers inside kube-apiserver) would do, written as clients of the registry.
//!
//! - `namespace` (with `ns_purge` and [`ns_conditions`]): empties a Terminating
//!   namespace, reports what blocks it, then removes it;
//! - `crd_cleanup`: deletes the custom resources of a deleted CRD, then lets it go;
//! - [`gc`] (with `gc_events`): garbage collection by `ownerReferences`;
//! - [`root_ca`]: keeps `kube-root-ca.crt` in every namespace;
//! - `event_ttl`: removes Events older than the Event TTL;
//! - `workspace`: bootstraps a Workspace's logical cluster (applying its template with
//!   [`workspace_template`]) and reports it Ready (or Failed), and deletes the cluster
//!   (with its descendants) when the Workspace is deleted;
//! - `sync::controllers`: a SyncTarget's Ready condition from its heartbeats (stale objects
//!   marked when they stop), the assignment of objects that predate their target, the drain
//!   of a deleted target;
//! - [`job_ttl`]: deletes finished Jobs after their `ttlSecondsAfterFinished`;
//! - `timers`: the deadlines of those two (one sleeping task, no polling);
//! - [`cr_aggregation`]: writes the rules of aggregated ClusterRoles (`aggregationRule`);
//! - `policies::status`: type checks ValidatingAdmissionPolicies and writes their status;
//! - [`informer`]: the process's one scan-then-watch of the whole store, fanned out to the
//!   derived state's handlers and, on the leader, the controllers' that follow every
//!   change (the garbage collector's graph, the root-CA publisher).
//!
//! Controllers read through the registry (`get_by_key`, `list_by_prefix`; only the
//! informer reads the store itself) and write only through it: `create`, `update` (with
//! the resourceVersion they read as precondition), `delete`, deletecollection's path, and its bulk delete of already-read objects
//! (`bulk_delete`), so that managedFields, the after-write hooks and the built-in admission
//! plugins apply to their writes as to any client's (webhooks and policies see only writes
//! with a requester, docs/admission-webhooks.md). Writes carry the field manager upstream's
//! controller would ([`WriteParams::controller`], [`WriteParams::controller_named`]). A
//! failed write is logged with the object's coordinates (`write_failed`) and its work item
//! retried.
//!
//! Each controller implements [`Controller`] ([`queue`]: its key type, its `reconcile`);
//! [`builtin`] registers kplane's own when the registry is built, and the rest of the
//! registry names one by its type (`registry.enqueue::<C>(key)`). Work items are queued by
//! the write path and by the informer's handlers and run one at a time by [`run_worker`],
//! except those of pooled controllers (Workspaces), which run on a bounded concurrent pool
//! (`pool`) beside it. As in client-go's work queue, an item queued again before it
//! runs runs once, and an unfinished item waits [`RETRY_EVERY`] in a delay set where
//! further retries of it merge, so each item is at most once queued and once delayed.
//! Work left unfinished by an earlier run is found again at start-up by the leader's
//! informer handler (`leader::PendingFeed`) in the informer's replay of the store (no
//! read of its own: a second read of every namespace, CRD and Workspace kept them all in
//! memory at once). [`start`] runs them all: the informer, the queue's
//! dispatch and Workspace bootstraps on the caller's runtime, the work no request waits
//! for on the background runtime it is given (`Places`), whose threads run at a lower OS
//! priority so that on few cores requests are scheduled first.
//!
//! [`WriteParams::controller`]: crate::options::WriteParams::controller
//! [`WriteParams::controller_named`]: crate::options::WriteParams::controller_named

#[cfg(test)]
mod conversion_tests;
pub mod cr_aggregation;
pub(crate) mod crd_cleanup;
pub(crate) mod event_ttl;
pub mod gc;
mod gc_events;
pub mod informer;
pub mod job_ttl;
pub mod leader;
pub(crate) mod namespace;
pub mod ns_conditions;
mod ns_purge;
mod pool;
pub mod queue;
pub mod root_ca;
pub mod runtime;
pub(crate) mod timers;
pub(crate) mod workspace;
pub mod workspace_template;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;
use tokio::task::JoinHandle;

use crate::Registry;
pub use cr_aggregation::Aggregation;
pub use crd_cleanup::CrdCleanup;
pub use gc::{GarbageCollector, GcKey};
pub use job_ttl::JobTtl;
pub use namespace::Namespaces;
pub use queue::{Controller, InNamespace, Named};
pub use root_ca::RootCa;
pub(crate) use runtime::{stored_cluster, write_failed, Places};
pub use runtime::{Item, Registered};
pub use runtime::{ObjRef, RETRY_EVERY};
pub use workspace::Workspaces;

/// kplane's own controllers, registered by [`Registry::new`]: what each reconciles is in
/// its module.
pub fn builtin() -> Registered {
    Registered::default()
        .with(Namespaces)
        .with(CrdCleanup)
        .with(GarbageCollector::default())
        .with(RootCa)
        .with(Workspaces::default())
        .with(Aggregation)
        .with(JobTtl)
        .with(crate::sync::controllers::Targets::default())
        .with(crate::sync::controllers::Assign)
        .with(crate::sync::controllers::AssignNamespace)
        .with(crate::resource_quota::controller::Quotas)
        .with(crate::resource_quota::controller::Recheck)
        .with(crate::policies::status::PolicyStatus)
}

/// Runs controller work until the queue closes; unfinished items are retried. Workspace
/// items go to their own bounded concurrent pool ([`pool`]), run in this same task; every
/// other item runs here, one at a time. Everything runs on the caller's runtime.
pub async fn run_worker(registry: Arc<Registry>, mut queue: UnboundedReceiver<Item>) {
    let places = Places {
        foreground: tokio::runtime::Handle::current(),
        background: None,
    };
    run_worker_on(registry, &mut queue, places).await
}

/// [`run_worker`] over a borrowed queue (the leader's worker: a new one takes the queue
/// over when this process leads again), with the items run where `places` says. The
/// dispatch stays in this task (on the foreground), so a bootstrap never waits for a
/// background thread to be scheduled.
async fn run_worker_on(
    registry: Arc<Registry>,
    queue: &mut UnboundedReceiver<Item>,
    places: Places,
) {
    let (to_pool, pool_items) = tokio::sync::mpsc::unbounded_channel();
    let background = places.background.clone();
    let workspaces = pool::run_pool(registry.clone(), pool_items, places);
    let others = async move {
        while let Some(work) = queue.recv().await {
            // From here on, queueing it again runs it again (it may change while it runs).
            registry.controllers.waiting().queued.remove(&work);
            if work.pooled() {
                if let Err(e) = to_pool.send(work) {
                    // The pool ends only after this loop: not reached; counted as done.
                    tracing::warn!(work = ?e.0, "controller pool gone; item dropped");
                    registry.controllers.queued.fetch_sub(1, Ordering::Relaxed);
                }
                continue;
            }
            let (work, done) = match &background {
                // Still one at a time: this loop waits for the item to finish.
                Some(bg) => {
                    let r = registry.clone();
                    let w = work.clone();
                    match bg.spawn(async move { r.run_logged(&w).await }).await {
                        Ok(done) => (work, done),
                        // It panicked (logged by the runtime) or the runtime is shutting
                        // down: retried later, found again at the next start otherwise.
                        Err(_) => (work, false),
                    }
                }
                None => {
                    let done = registry.run_logged(&work).await;
                    (work, done)
                }
            };
            registry.controllers.queued.fetch_sub(1, Ordering::Relaxed);
            if !done {
                registry.retry_later(work);
            }
        }
    };
    tokio::join!(others, workspaces);
}

/// The background tasks of the controllers; dropping it (or [`Controllers::stop`]) stops
/// them.
#[derive(Debug)]
pub struct Controllers {
    tasks: Vec<JoinHandle<()>>,
    /// Emptied when these stop: the leader's handlers in the process's informer.
    slot: Option<informer::HandlerSlot>,
}

impl Controllers {
    /// Stops every controller task (work in progress is abandoned; it resumes on the next
    /// start from what is stored).
    pub fn stop(self) {
        drop(self);
    }
}

impl Drop for Controllers {
    fn drop(&mut self) {
        if let Some(s) = &self.slot {
            s.clear();
        }
        for t in &self.tasks {
            t.abort();
        }
    }
}

/// Starts the controllers over `registry` ([`leader`]): on every replica the process's one
/// informer ([`informer`]) with the handlers of the derived state (catalogs, cluster
/// existence and terminating marks, floors, the RBAC and SyncTarget caches, the sync
/// endpoint's reference index: `crate::derived`); and, while this process is the leader
/// the store elects ([`kplane_storage::Storage::leadership`]; always, on sled), the writing
/// controllers: the worker of its queue (`queue`, from [`Registry::new`]), the informer
/// handlers feeding the garbage collector, the root-CA publisher, the ClusterRole
/// aggregation controller, the SyncTarget and Job TTL controllers (with the task of their
/// timers), the queueing of pending namespace, CRD and Workspace work (unfinished work of
/// an earlier run among it, from the informer's replay), the Event sweeper for
/// `event_ttl` and the resolution of imports whose owner is gone, and, with `background`, the items of the one-at-a-time worker,
/// Workspace deletions, the timers, the root-CA syncer, the Event sweeper and the import
/// resolution on that runtime instead of the caller's.
pub fn start(
    registry: &Arc<Registry>,
    queue: UnboundedReceiver<Item>,
    event_ttl: Duration,
    background: Option<tokio::runtime::Handle>,
) -> Controllers {
    let slot = informer::HandlerSlot::default();
    let informer = crate::derived::informer(registry).with_slot(&slot);
    let leading = leader::Leading {
        registry: registry.clone(),
        queue: Arc::new(tokio::sync::Mutex::new(queue)),
        event_ttl,
        background,
        slot,
    };
    // The store's first answer before the informer's first pass: a leader's handlers join
    // that pass instead of starting a second one.
    let mut leadership = registry.store_leadership();
    let mut running = None;
    let first = leading.step(*leadership.borrow_and_update(), &mut running);
    Controllers {
        tasks: vec![
            // On the foreground: it must keep up with every write (a watcher that falls
            // behind is closed, and the informer starts over with a scan).
            tokio::spawn(informer.run()),
            tokio::spawn(leader::run(leading, leadership, running, first)),
        ],
        slot: None,
    }
}

/// The writing controllers' tasks, started when this process becomes the leader
/// ([`leader`]), their informer handlers put in `slot`; dropping the returned handle
/// stops them and empties the slot.
pub(crate) fn start_leading(
    registry: &Arc<Registry>,
    queue: Arc<tokio::sync::Mutex<UnboundedReceiver<Item>>>,
    event_ttl: Duration,
    background: Option<tokio::runtime::Handle>,
    slot: &informer::HandlerSlot,
) -> Controllers {
    let (publisher, syncer) = root_ca::publisher(registry.clone());
    // After the derived state's handlers (the RBAC and SyncTarget caches' invalidators
    // among them), so that these never see a cache older than the change they react to
    // (the aggregation controller's sync compiles the changed roles).
    let handlers: Vec<Arc<dyn informer::InformerHandler>> = vec![
        Arc::new(leader::PendingFeed(registry.clone())),
        Arc::new(gc::GraphFeed::new(registry.clone())),
        Arc::new(publisher),
        Arc::new(cr_aggregation::Feed(registry.clone())),
        Arc::new(crate::sync::controllers::Feed::new(registry.clone())),
        Arc::new(job_ttl::Feed(registry.clone())),
        Arc::new(crate::resource_quota::controller::Feed(registry.clone())),
        Arc::new(crate::policies::status::Feed(registry.clone())),
    ];
    slot.set(handlers);
    let places = Places {
        foreground: tokio::runtime::Handle::current(),
        background,
    };
    let bg = places.background().clone();
    let worker = registry.clone();
    let tasks = vec![
        tokio::spawn(async move {
            // One worker at a time holds the queue; a stopped one has released it.
            let mut queue = queue.lock().await;
            run_worker_on(worker, &mut queue, places).await;
        }),
        bg.spawn(timers::run(registry.clone())),
        bg.spawn(syncer),
        bg.spawn(event_ttl::run(registry.clone(), event_ttl)),
        // Workspaces' status.quota (`quota/status.rs`).
        bg.spawn(crate::quota::status_controller(registry.clone())),
        // Imports whose owner is gone (a replica died mid-way): `archive/recovery.rs`.
        bg.spawn(registry.clone().resolve_imports_while_leading()),
    ];
    Controllers {
        tasks,
        slot: Some(slot.clone()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin_types::builtin;
    use crate::catalog::Catalog;
    use kplane_storage::Storage;
    use kplane_types::ClusterName;
    use serde_json::Value;
    use std::sync::Mutex;

    fn ns(reg: &Registry, name: &str) -> Item {
        let key = Named::new(kplane_types::ClusterName::root(), name);
        reg.work::<Namespaces>(key).unwrap()
    }

    /// An item queued twice before it runs is queued once; retries of one item merge while
    /// one waits, and a waiting retry is queued when its delay is over.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn queued_and_delayed_items_merge() {
        let storage: Arc<dyn Storage> = crate::testing::memory_store();
        let (_tx, shutdown) = tokio::sync::watch::channel(false);
        let catalog = Arc::new(Catalog::new(builtin()));
        let (reg, mut queue) = Registry::new(storage, catalog, String::new(), shutdown);
        reg.enqueue_item(ns(&reg, "a"));
        reg.enqueue_item(ns(&reg, "a"));
        reg.enqueue_item(ns(&reg, "b"));
        assert_eq!(reg.queued_work(), 2);
        reg.retry_later(ns(&reg, "c"));
        reg.retry_later(ns(&reg, "c"));
        assert_eq!(reg.controllers.waiting().delayed.len(), 1);
        assert_eq!(reg.queued_work(), 2, "delayed items are not counted");
        let mut got = Vec::new();
        while got.len() < 3 {
            let w = tokio::time::timeout(RETRY_EVERY * 5, queue.recv())
                .await
                .unwrap()
                .unwrap();
            got.push(w);
        }
        assert_eq!(got, [ns(&reg, "a"), ns(&reg, "b"), ns(&reg, "c")]);
        assert!(reg.controllers.waiting().delayed.is_empty());
        assert!(queue.try_recv().is_err(), "each item was queued once");
    }

    /// Log lines written while a test runs on the current thread.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }

        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl Captured {
        fn lines_with(&self, needles: &[&str]) -> Vec<String> {
            let text = String::from_utf8_lossy(&self.0.lock().unwrap()).to_string();
            text.lines()
                .filter(|l| needles.iter().all(|n| l.contains(n)))
                .map(str::to_string)
                .collect()
        }
    }

    /// A controller write that conflicts (the garbage collector drops a dangling owner
    /// reference from an object whose stored resourceVersion it cannot match) is logged with
    /// the object's coordinates and the Status message, and its item is retried through the
    /// queue until the write goes through.
    #[tokio::test]
    async fn a_conflicting_controller_write_is_logged_and_retried() {
        use crate::testing::{create_namespace, target};
        use kplane_storage::{Key, Precondition};
        use serde_json::json;

        let logs = Captured::default();
        let writer = logs.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(move || writer.clone())
            .with_ansi(false)
            .finish();
        // Current-thread runtime: every task of the test logs to this subscriber.
        let _guard = tracing::subscriber::set_default(subscriber);

        let storage: Arc<dyn Storage> = crate::testing::memory_store();
        let (_tx, shutdown) = tokio::sync::watch::channel(false);
        let catalog = Arc::new(Catalog::new(builtin()));
        let (reg, queue) = Registry::new(storage.clone(), catalog, String::new(), shutdown);
        reg.ensure_cluster(&kplane_types::ClusterName::root())
            .await
            .unwrap();
        let t = create_namespace(&reg, "d").await;
        let w = crate::options::WriteParams::default();
        let owner = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}});
        let owner: Value =
            serde_json::from_slice(&reg.create(&t, owner, &w).await.unwrap()).unwrap();
        let refs = json!([
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "owner",
             "uid": owner["metadata"]["uid"]},
            {"apiVersion": "v1", "kind": "ConfigMap", "name": "ghost", "uid": "no-such-uid"},
        ]);
        let dep = json!({"apiVersion": "v1", "kind": "ConfigMap",
                         "metadata": {"name": "dep", "ownerReferences": refs}});
        let dep: Value = serde_json::from_slice(&reg.create(&t, dep, &w).await.unwrap()).unwrap();
        // The stored body names a resourceVersion that is not the object's: every update
        // made from what the collector reads conflicts.
        let key = Key::new("root", "/configmaps", "d", "dep");
        let mut stale = dep.clone();
        stale["metadata"]["resourceVersion"] = json!("1");
        let bytes = serde_json::to_vec(&stale).unwrap();
        storage
            .put(
                key.clone(),
                Precondition::MustExist,
                Box::new(move |_| Ok(bytes)),
            )
            .await
            .unwrap();

        let worker = tokio::spawn(run_worker(reg.clone(), queue));
        let dep_ref = ObjRef {
            cluster: ClusterName::root(),
            resource: "/configmaps".into(),
            namespace: "d".into(),
            name: "dep".into(),
        };
        reg.enqueue::<GarbageCollector>(GcKey::Dependent(dep_ref));
        let failed = || {
            logs.lines_with(&[
                "controller write failed",
                "garbage-collector",
                "root",
                "configmaps",
                "\"d\"",
                "\"dep\"",
                "409",
                "the object has been modified",
            ])
        };
        let deadline = tokio::time::Instant::now() + RETRY_EVERY * 5;
        while failed().len() < 2 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "not retried: {:?}",
                failed()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        // Repaired: the next retry's write goes through and drops the dangling reference.
        let kv = storage.get(&key).await.unwrap().unwrap();
        storage
            .put(
                key.clone(),
                Precondition::ModRevision(kv.mod_revision),
                crate::write::encoder(dep),
            )
            .await
            .unwrap();
        let target_dep = target(&reg, "", "configmaps", Some("d"));
        loop {
            let kv = reg.get_stored(&target_dep, "dep").await.unwrap().unwrap();
            let v: Value = serde_json::from_slice(&kv.value).unwrap();
            if v["metadata"]["ownerReferences"].as_array().map(Vec::len) == Some(1) {
                assert_eq!(v["metadata"]["ownerReferences"][0]["name"], "owner");
                break;
            }
            assert!(
                tokio::time::Instant::now() < deadline + RETRY_EVERY * 2,
                "{v}"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        worker.abort();
        storage.shutdown().await.unwrap();
    }
}
