//! Two registries on one store, as two replicas on one database: what one writes the other
//! serves (`derived.rs`), and the writing controllers run on the leader only
//! (`controllers/leader.rs`), whichever replica the client wrote through. Leadership is the
//! test's to give ([`Leased`]); the store is one sled store shared by both registries,
//! or (the `postgres` tests) two PostgreSQL stores on one database.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use kplane_storage::{
    BatchWrite, Claim, Encoder, Filter, Key, KeyValue, ListOptions, ListResult, Precondition,
    Prefix, RangeScan, Result, Revision, SledStorage, SledStorageOptions, Storage, StorageStats,
    Tombstone, WatchReceiver,
};
use kplane_types::{ClusterName, ClusterScope, RequestInfo, UserInfo, Verb};
use serde_json::{json, Value};
use tokio::sync::watch;

use crate::builtin_types::builtin;
use crate::catalog::Catalog;
use crate::cluster_states::ClusterPhase;
use crate::controllers::{self, Controllers};
use crate::options::WriteParams;
use crate::rbac::policy::Verdict;
use crate::testing::target;
use crate::{DeleteParams, Registry, Target};

/// A store whose leadership the test gives and takes, and whose watches it can cut off
/// ([`Deafness`]).
struct Leased {
    inner: Arc<dyn Storage>,
    leader: watch::Receiver<bool>,
    deaf: Arc<Deafness>,
}

/// While on, the store's new watches hear nothing (they are served by a hub of their own
/// that nothing is published to); [`Deafness::cut_off`] closes them as too slow, as a
/// store closes a watcher that fell behind: the changes made meanwhile are never
/// delivered, and the watcher has to rescan.
struct Deafness {
    on: std::sync::atomic::AtomicBool,
    hub: Arc<kplane_storage::watch::Hub>,
}

impl Deafness {
    fn new(on: bool) -> Arc<Deafness> {
        Arc::new(Deafness {
            on: on.into(),
            hub: Arc::new(kplane_storage::watch::Hub::new(0, 16)),
        })
    }

    /// Watchers that hear nothing now.
    fn deaf_watchers(&self) -> usize {
        self.hub.watcher_count()
    }

    /// Closes the deaf watches as too slow; new ones hear the store again.
    fn cut_off(&self) {
        self.on.store(false, std::sync::atomic::Ordering::Release);
        self.hub.restart_at(0, kplane_storage::CloseReason::TooSlow);
    }
}

/// The event log of a deaf watch: empty.
struct NoLog;

#[async_trait::async_trait]
impl kplane_storage::EventLog for NoLog {
    async fn read(
        &self,
        _prefix: &Prefix,
        _after: Revision,
        upto: Revision,
        _max_events: usize,
    ) -> Result<kplane_storage::EventPage> {
        Ok(kplane_storage::EventPage {
            events: Vec::new(),
            through: upto,
        })
    }

    fn compacted_revision(&self) -> Revision {
        0
    }
}

#[async_trait::async_trait]
impl Storage for Leased {
    fn current_revision(&self) -> Revision {
        self.inner.current_revision()
    }
    fn compacted_revision(&self) -> Revision {
        self.inner.compacted_revision()
    }
    async fn get(&self, key: &Key) -> Result<Option<KeyValue>> {
        self.inner.get(key).await
    }
    async fn list(
        &self,
        prefix: &Prefix,
        opts: &ListOptions,
        filter: Option<Filter<'_>>,
    ) -> Result<ListResult> {
        self.inner.list(prefix, opts, filter).await
    }
    async fn count(&self, prefix: &Prefix) -> Result<u64> {
        self.inner.count(prefix).await
    }
    async fn put(&self, key: Key, p: Precondition, encode: Encoder) -> Result<KeyValue> {
        self.inner.put(key, p, encode).await
    }
    async fn delete(&self, key: Key, p: Precondition, encode: Encoder) -> Result<KeyValue> {
        self.inner.delete(key, p, encode).await
    }
    async fn write_batch(&self, writes: Vec<BatchWrite>) -> Vec<Result<KeyValue>> {
        self.inner.write_batch(writes).await
    }
    async fn delete_cluster(&self, cluster: &str, batch: usize, t: Tombstone) -> Result<u64> {
        self.inner.delete_cluster(cluster, batch, t).await
    }
    async fn clusters(&self, start_after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        self.inner.clusters(start_after, limit).await
    }
    async fn fence_cluster(&self, cluster: &str, fenced: bool) -> Result<Revision> {
        self.inner.fence_cluster(cluster, fenced).await
    }
    async fn scan(
        &self,
        prefix: &Prefix,
        at: Option<Revision>,
        page_size: usize,
    ) -> Result<Box<dyn RangeScan>> {
        self.inner.scan(prefix, at, page_size).await
    }
    async fn watch(
        &self,
        prefix: &Prefix,
        from: Revision,
        progress_every: Option<Duration>,
    ) -> Result<WatchReceiver> {
        if self.deaf.on.load(std::sync::atomic::Ordering::Acquire) {
            return self
                .deaf
                .hub
                .watch(Arc::new(NoLog), prefix, from, progress_every);
        }
        self.inner.watch(prefix, from, progress_every).await
    }
    fn stats(&self) -> StorageStats {
        self.inner.stats()
    }
    fn leadership(&self) -> watch::Receiver<bool> {
        self.leader.clone()
    }
    fn shared(&self) -> bool {
        // Several registries (replicas) on one store.
        true
    }
    async fn claim(&self, name: &str) -> Result<Option<Claim>> {
        self.inner.claim(name).await
    }
    async fn shutdown(&self) -> Result<()> {
        Ok(())
    }
}

/// One replica: its registry, its running controllers, the switch of its leadership (when
/// the test gives it; otherwise the store elects).
struct Replica {
    reg: Arc<Registry>,
    lead: watch::Sender<bool>,
    controllers: Option<Controllers>,
    _shutdown: watch::Sender<bool>,
}

impl Replica {
    /// A replica over `store`, leading when `leader` (`None`: as the store elects), started
    /// as the server starts one.
    async fn start(store: Arc<dyn Storage>, leader: Option<bool>) -> Replica {
        Replica::start_hearing(store, leader, Deafness::new(false)).await
    }

    /// [`Replica::start`], its store's watches deaf while `deaf` says so (`leader` must
    /// be given for that).
    async fn start_hearing(
        store: Arc<dyn Storage>,
        leader: Option<bool>,
        deaf: Arc<Deafness>,
    ) -> Replica {
        let (lead, rx) = watch::channel(leader.unwrap_or(false));
        let storage: Arc<dyn Storage> = match leader {
            Some(_) => Arc::new(Leased {
                inner: store,
                leader: rx,
                deaf,
            }),
            None => store,
        };
        let (tx, shutdown) = watch::channel(false);
        let (reg, queue) = Registry::new(
            storage,
            Arc::new(Catalog::new(builtin())),
            String::new(),
            shutdown,
        );
        reg.set_external_url("https://kplane.test");
        reg.load_cluster_state().await.unwrap();
        let controllers = controllers::start(&reg, queue, Duration::from_secs(3600), None);
        reg.ensure_cluster(&ClusterName::root()).await.unwrap();
        Replica {
            reg,
            lead,
            controllers: Some(controllers),
            _shutdown: tx,
        }
    }
}

fn name(s: &str) -> ClusterName {
    ClusterName::parse(s).unwrap()
}

fn in_cluster(t: Target, cluster: &str) -> Target {
    Target {
        cluster: ClusterScope::One(name(cluster)),
        ..t
    }
}

fn widget_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget",
                      "listKind": "WidgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]
        }
    })
}

async fn widgets(reg: &Registry, cluster: &str) -> Option<Target> {
    let rt = reg
        .cluster_catalog(&name(cluster))
        .await
        .unwrap()
        .get("example.com", "v1", "widgets")
        .cloned()?;
    Some(Target::new(&name(cluster), rt, Some("default".into())))
}

fn alice_reads_configmaps(cluster: &str) -> (UserInfo, RequestInfo) {
    let user = UserInfo {
        username: "alice".into(),
        groups: vec!["system:authenticated".into()],
        ..Default::default()
    };
    let req = RequestInfo {
        cluster: ClusterScope::One(name(cluster)),
        path: String::new(),
        verb: Verb::parse("get"),
        is_resource_request: true,
        api_group: String::new(),
        api_version: "v1".into(),
        namespace: Some("default".into()),
        resource: "configmaps".into(),
        subresource: None,
        name: Some("c".into()),
    };
    (user, req)
}

async fn exists(reg: &Registry, t: &Target, n: &str) -> bool {
    match reg.get(t, n).await {
        Ok(_) => true,
        Err(e) if e.code() == 404 => false,
        Err(e) => panic!("{}", e.0.message),
    }
}

async fn create_namespace_with_content(reg: &Registry, ns: &str) {
    let w = WriteParams::default();
    let nst = target(reg, "", "namespaces", None);
    reg.create(&nst, json!({"metadata": {"name": ns}}), &w)
        .await
        .unwrap();
    let cms = target(reg, "", "configmaps", Some(ns));
    reg.create(&cms, json!({"metadata": {"name": "c"}}), &w)
        .await
        .unwrap();
}

/// Everything a client writes through the follower B or the leader A is served by the other:
/// a CRD's resources (catalog), a Workspace's cluster (made by the leader's controller for
/// a Workspace created through B), an RBAC grant, a namespace deletion (emptied and
/// removed by the leader, Terminating meanwhile), a Workspace deletion (its cluster is
/// gone on B too). The follower never queues controller work.
async fn what_one_replica_writes_the_other_serves(
    a_store: Arc<dyn Storage>,
    b_store: Arc<dyn Storage>,
) {
    let a = Replica::start(a_store, Some(true)).await;
    let b = Replica::start(b_store, Some(false)).await;
    crate::testing::until("A leads, B follows", || async {
        a.reg.is_leader() && !b.reg.is_leader()
    })
    .await;
    let w = WriteParams::default();

    // A CRD created through A: B serves its resources (B's catalog was loaded before).
    assert!(widgets(&b.reg, "root").await.is_none());
    let crds = target(
        &a.reg,
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        None,
    );
    a.reg.create(&crds, widget_crd(), &w).await.unwrap();
    crate::testing::until("B serves the widgets", || async {
        widgets(&b.reg, "root").await.is_some()
    })
    .await;
    let wt = widgets(&b.reg, "root").await.unwrap();
    let widget = json!({"apiVersion": "example.com/v1", "kind": "Widget",
                        "metadata": {"name": "w1"}, "spec": {"size": 3}});
    b.reg.create(&wt, widget, &w).await.unwrap();
    let got: Value = serde_json::from_slice(
        &a.reg
            .get(&widgets(&a.reg, "root").await.unwrap(), "w1")
            .await
            .unwrap(),
    )
    .unwrap();
    assert_eq!(got["spec"]["size"], 3);

    // A Workspace created through the follower: the leader's controller makes its cluster,
    // and B serves it.
    let wst = target(&b.reg, "tenancy.kplane.io", "workspaces", None);
    let ws = json!({"apiVersion": "tenancy.kplane.io/v1alpha1", "kind": "Workspace",
                    "metadata": {"name": "team"}});
    b.reg.create(&wst, ws, &w).await.unwrap();
    crate::testing::until("the Workspace is Ready, served by B", || async {
        let v: Value = serde_json::from_slice(&b.reg.get(&wst, "team").await.unwrap()).unwrap();
        v["status"]["phase"] == "Ready"
            && b.reg
                .check_cluster(&ClusterScope::One(name("root:team")))
                .is_ok()
    })
    .await;
    let team_cms = in_cluster(
        target(&b.reg, "", "configmaps", Some("default")),
        "root:team",
    );
    b.reg
        .create(&team_cms, json!({"metadata": {"name": "c"}}), &w)
        .await
        .unwrap();
    assert!(exists(&a.reg, &team_cms, "c").await);
    // B made the child cluster with the Workspace (one commit): A learns of it from the
    // shared store, a moment later.
    crate::testing::until("A knows root:team", || async {
        a.reg
            .check_cluster(&ClusterScope::One(name("root:team")))
            .is_ok()
    })
    .await;

    // An RBAC grant through A: B's cached policy follows.
    let (alice, read) = alice_reads_configmaps("root:team");
    assert!(matches!(
        b.reg.rbac_authorize(&alice, &read).await,
        Verdict::NoOpinion(_)
    ));
    let roles = in_cluster(
        target(
            &a.reg,
            "rbac.authorization.k8s.io",
            "roles",
            Some("default"),
        ),
        "root:team",
    );
    let role = json!({"metadata": {"name": "reader"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]});
    a.reg.create(&roles, role, &w).await.unwrap();
    let bindings = in_cluster(
        target(
            &a.reg,
            "rbac.authorization.k8s.io",
            "rolebindings",
            Some("default"),
        ),
        "root:team",
    );
    let binding = json!({"metadata": {"name": "alice-reads"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
        "subjects": [{"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "alice"}]});
    a.reg.create(&bindings, binding, &w).await.unwrap();
    crate::testing::until("B allows alice", || async {
        matches!(b.reg.rbac_authorize(&alice, &read).await, Verdict::Allow(_))
    })
    .await;

    // A namespace deleted through the follower: Terminating at once, then emptied and
    // removed by the leader.
    create_namespace_with_content(&a.reg, "doomed").await;
    let nst = target(&b.reg, "", "namespaces", None);
    b.reg
        .delete(&nst, "doomed", &DeleteParams::default())
        .await
        .unwrap();
    let v: Value = serde_json::from_slice(&b.reg.get(&nst, "doomed").await.unwrap()).unwrap();
    assert_eq!(v["status"]["phase"], "Terminating");
    crate::testing::until("the leader removed the namespace", || async {
        !exists(&b.reg, &nst, "doomed").await
    })
    .await;
    assert_eq!(b.reg.queued_work(), 0, "the follower queues nothing");

    // The Workspace deleted through the follower: the leader deletes its cluster, which
    // stops existing on B too.
    b.reg
        .delete(&wst, "team", &DeleteParams::default())
        .await
        .unwrap();
    crate::testing::until("root:team is gone on B", || async {
        b.reg
            .check_cluster(&ClusterScope::One(name("root:team")))
            .is_err_and(|e| e.code() == 404)
            && !exists(&b.reg, &wst, "team").await
    })
    .await;
    assert!(!b.reg.is_terminating(&name("root:team")));
    assert!(a
        .reg
        .check_cluster(&ClusterScope::One(name("root:team")))
        .is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_what_one_replica_writes_the_other_serves() {
    on_sled(what_one_replica_writes_the_other_serves).await;
}

/// The Workspaces of `cluster`, on `reg`.
fn workspaces(reg: &Registry, cluster: &str) -> Target {
    in_cluster(
        target(reg, "tenancy.kplane.io", "workspaces", None),
        cluster,
    )
}

/// Creates Workspace `ws` in `cluster` through `reg` (with `finalizers`) and waits until
/// it is Ready.
async fn ready_workspace(reg: &Registry, cluster: &str, ws: &str, finalizers: &[&str]) {
    let t = workspaces(reg, cluster);
    let obj = json!({"apiVersion": "tenancy.kplane.io/v1alpha1", "kind": "Workspace",
                     "metadata": {"name": ws, "finalizers": finalizers}});
    reg.create(&t, obj, &WriteParams::default()).await.unwrap();
    crate::testing::until(&format!("{cluster}:{ws} is Ready"), || async {
        let v: Value = serde_json::from_slice(&reg.get(&t, ws).await.unwrap()).unwrap();
        v["status"]["phase"] == "Ready"
    })
    .await;
}

/// A replica whose derived-state informer was cut off while Workspaces were deleted
/// (and a fence lifted) through the leader ends, after its rescan, as the leader: the
/// deleted clusters (a descendant too) answer 404, the terminating mark of a Workspace
/// that went is gone, the fence is lifted; the rest is untouched. (Before the rescan it still serves the stale state: the test
/// would pass without a cut-off otherwise.)
async fn a_rescan_makes_derived_state_exact(a_store: Arc<dyn Storage>, b_store: Arc<dyn Storage>) {
    let a_view = a_store.clone();
    let a = Replica::start(a_store, Some(true)).await;
    let hold = "example.com/hold";
    ready_workspace(&a.reg, "root", "kept", &[]).await;
    ready_workspace(&a.reg, "root", "gone", &[]).await;
    ready_workspace(&a.reg, "root:gone", "inner", &[]).await;
    ready_workspace(&a.reg, "root", "held", &[hold]).await;
    // `held` is deleted up to its own finalizer: its cluster is gone, it terminates.
    let ws = workspaces(&a.reg, "root");
    a.reg
        .delete(&ws, "held", &DeleteParams::default())
        .await
        .unwrap();
    crate::testing::until("root:held is gone on A", || async {
        answer(&a.reg, "root:held") == 404
    })
    .await;
    // And a fenced cluster.
    a.reg.set_auto_create_clusters(true);
    create_cm(&a.reg, "root:fenced", "c").await.unwrap();
    a.reg.set_auto_create_clusters(false);
    a.reg.fence_cluster(&name("root:fenced")).await.unwrap();

    // B starts (existence and marks loaded from the store), then hears nothing. A
    // PostgreSQL replica's store publishes what another wrote a moment later: B starts
    // once its store has all of A's writes, so that its start-up load sees the fence.
    let written = a_view.current_revision();
    crate::testing::until("B's store has A's writes", || async {
        b_store.current_revision() >= written
    })
    .await;
    let deaf = Deafness::new(true);
    let b = Replica::start_hearing(b_store, Some(false), deaf.clone()).await;
    crate::testing::until("B's informer watches", || async {
        deaf.deaf_watchers() == 1
    })
    .await;
    assert!(b.reg.is_terminating(&name("root:held")));
    assert_eq!(answer(&b.reg, "root:gone:inner"), 200);
    let fenced = || b.reg.cluster_phase(&name("root:fenced"));
    assert_eq!(fenced(), Some(ClusterPhase::Fenced));

    // Through A: `gone` deleted with its descendant, `held` let go.
    a.reg
        .delete(&ws, "gone", &DeleteParams::default())
        .await
        .unwrap();
    let v: Value = serde_json::from_slice(&a.reg.get(&ws, "held").await.unwrap()).unwrap();
    let mut v = v;
    v["metadata"]["finalizers"] = json!([]);
    a.reg
        .update(&ws, "held", None, v, &WriteParams::default())
        .await
        .unwrap();
    a.reg.unfence_cluster(&name("root:fenced")).await.unwrap();
    crate::testing::until("A deleted both Workspaces", || async {
        !exists(&a.reg, &ws, "gone").await && !exists(&a.reg, &ws, "held").await
    })
    .await;
    assert_eq!(answer(&a.reg, "root:gone"), 404);
    assert_eq!(answer(&a.reg, "root:gone:inner"), 404);
    assert!(!a.reg.is_terminating(&name("root:held")));
    // B missed it all.
    assert_eq!(answer(&b.reg, "root:gone"), 200);
    assert_eq!(answer(&b.reg, "root:gone:inner"), 200);
    assert!(b.reg.is_terminating(&name("root:held")));
    assert_eq!(fenced(), Some(ClusterPhase::Fenced));

    // Cut off: B rescans and ends as A.
    deaf.cut_off();
    crate::testing::until("B forgot what went", || async {
        answer(&b.reg, "root:gone") == 404
            && answer(&b.reg, "root:gone:inner") == 404
            && !b.reg.is_terminating(&name("root:held"))
            && fenced().is_none()
    })
    .await;
    assert_eq!(answer(&b.reg, "root:kept"), 200);
    assert_eq!(answer(&b.reg, "root:held"), 404);
    assert_eq!(b.reg.existing_clusters(), a.reg.existing_clusters());
    create_cm(&b.reg, "root:kept", "after").await.unwrap();
    drop((a, b));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_a_rescan_makes_derived_state_exact() {
    on_sled(a_rescan_makes_derived_state_exact).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_a_rescan_makes_derived_state_exact() {
    on_postgres(a_rescan_makes_derived_state_exact).await;
}

/// Only the leader runs the controllers; when it stops leading the other takes over,
/// including the work left pending while nobody led.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_controllers_move_with_the_leadership() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Storage> =
        SledStorage::open(dir.path().join("db"), SledStorageOptions::default()).unwrap();
    let a = Replica::start(store.clone(), Some(true)).await;
    let b = Replica::start(store.clone(), Some(false)).await;
    crate::testing::until("A leads, B follows", || async {
        a.reg.is_leader() && !b.reg.is_leader()
    })
    .await;
    let nst = target(&a.reg, "", "namespaces", None);
    let del = DeleteParams::default();

    // Deleted through B: A does the work.
    create_namespace_with_content(&b.reg, "one").await;
    b.reg.delete(&nst, "one", &del).await.unwrap();
    crate::testing::until("A removed one", || async {
        !exists(&a.reg, &nst, "one").await
    })
    .await;
    assert_eq!(b.reg.queued_work(), 0);

    // Nobody leads: a deletion waits (nothing is queued anywhere).
    a.lead.send_replace(false);
    crate::testing::until("nobody leads", || async {
        !a.reg.is_leader() && !b.reg.is_leader()
    })
    .await;
    create_namespace_with_content(&a.reg, "two").await;
    a.reg.delete(&nst, "two", &del).await.unwrap();
    assert_eq!(a.reg.queued_work(), 0);
    assert_eq!(b.reg.queued_work(), 0);
    assert!(exists(&a.reg, &nst, "two").await);

    // B takes over: it finds the pending deletion, and does the next one made through A.
    b.lead.send_replace(true);
    crate::testing::until("B removed two", || async {
        !exists(&b.reg, &nst, "two").await
    })
    .await;
    assert!(b.reg.is_leader() && !a.reg.is_leader());
    create_namespace_with_content(&a.reg, "three").await;
    a.reg.delete(&nst, "three", &del).await.unwrap();
    crate::testing::until("B removed three", || async {
        !exists(&b.reg, &nst, "three").await
    })
    .await;
    assert_eq!(a.reg.queued_work(), 0);
    drop((a, b));
    store.shutdown().await.unwrap();
}

/// A replica that does not lead holds and counts no controller work
/// (`kplane_lifecycle_queue_depth` reads 0, never a stale figure): what was queued before
/// the store said who leads (start-up), and what was queued or running when it stopped
/// leading, is dropped. When it leads again, its controllers work and the count comes
/// back to 0 when they are done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_that_stops_leading_drops_its_work() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Storage> =
        SledStorage::open(dir.path().join("db"), SledStorageOptions::default()).unwrap();
    let (lead, rx) = watch::channel(false);
    let storage: Arc<dyn Storage> = Arc::new(Leased {
        inner: store.clone(),
        leader: rx,
        deaf: Deafness::new(false),
    });
    let (_tx, shutdown) = watch::channel(false);
    let (reg, queue) = Registry::new(
        storage,
        Arc::new(Catalog::new(builtin())),
        String::new(),
        shutdown,
    );
    reg.set_external_url("https://kplane.test");
    reg.load_cluster_state().await.unwrap();
    reg.ensure_cluster(&ClusterName::root()).await.unwrap();
    let missing = |i: usize| controllers::Named::new(ClusterName::root(), format!("missing-{i}"));
    // Queued before the controllers start (as start-up may): the store then says another
    // replica leads.
    for i in 0..3 {
        reg.enqueue::<controllers::Namespaces>(missing(i));
    }
    assert_eq!(reg.queued_work(), 3);
    let controllers = controllers::start(&reg, queue, Duration::from_secs(3600), None);
    crate::testing::until("the follower dropped its start-up work", || async {
        !reg.is_leader() && reg.queued_work() == 0
    })
    .await;

    // Leading, with far more queued than runs before the leadership goes.
    lead.send_replace(true);
    crate::testing::until("it leads", || async { reg.is_leader() }).await;
    for i in 0..20_000 {
        reg.enqueue::<controllers::Namespaces>(missing(i));
    }
    lead.send_replace(false);
    crate::testing::until("the work is dropped with the leadership", || async {
        !reg.is_leader() && reg.queued_work() == 0
    })
    .await;
    reg.enqueue::<controllers::Namespaces>(missing(0));
    assert_eq!(
        reg.queued_work(),
        0,
        "nothing is queued while it does not lead"
    );

    // Leading again: a namespace deletion is done, and the count goes back to 0.
    lead.send_replace(true);
    crate::testing::until("it leads again", || async { reg.is_leader() }).await;
    create_namespace_with_content(&reg, "doomed").await;
    let nst = target(&reg, "", "namespaces", None);
    reg.delete(&nst, "doomed", &DeleteParams::default())
        .await
        .unwrap();
    crate::testing::until("the namespace is removed, nothing left queued", || async {
        !exists(&reg, &nst, "doomed").await && reg.queued_work() == 0
    })
    .await;
    drop(controllers);
    store.shutdown().await.unwrap();
}

/// Each replica follows the store with one informer, one wildcard watch: the leader's
/// controllers' handlers share the derived state's. What another replica writes reaches
/// both on the leader (a CRD's resources are served; a namespace deleted there is emptied
/// and removed), and the follower keeps following.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_informer_per_replica() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Storage> =
        SledStorage::open(dir.path().join("db"), SledStorageOptions::default()).unwrap();
    // A leads as sled elects (always); B is told it does not.
    let a = Replica::start(store.clone(), None).await;
    let b = Replica::start(store.clone(), Some(false)).await;
    crate::testing::until("A leads, B follows", || async {
        a.reg.is_leader() && !b.reg.is_leader()
    })
    .await;
    let w = WriteParams::default();
    let crds = target(
        &b.reg,
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        None,
    );
    assert!(widgets(&a.reg, "root").await.is_none());
    b.reg.create(&crds, widget_crd(), &w).await.unwrap();
    crate::testing::until("A serves the widgets", || async {
        widgets(&a.reg, "root").await.is_some()
    })
    .await;
    let nst = target(&b.reg, "", "namespaces", None);
    create_namespace_with_content(&b.reg, "doomed").await;
    b.reg
        .delete(&nst, "doomed", &DeleteParams::default())
        .await
        .unwrap();
    crate::testing::until("A's controllers removed the namespace", || async {
        !exists(&b.reg, &nst, "doomed").await
    })
    .await;
    assert_eq!(
        store.stats().watchers,
        2,
        "one wildcard watch per replica, the leader's included"
    );
    drop((a, b));
    store.shutdown().await.unwrap();
}

/// Runs a two-replica scenario with both replicas on one sled store (sled allows one
/// process per data directory).
async fn on_sled<F, Fut>(scenario: F)
where
    F: FnOnce(Arc<dyn Storage>, Arc<dyn Storage>) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Storage> =
        SledStorage::open(dir.path().join("db"), SledStorageOptions::default()).unwrap();
    scenario(store.clone(), store.clone()).await;
    store.shutdown().await.unwrap();
}

/// Runs a two-replica scenario with each replica on a store of its own, both on one
/// PostgreSQL database.
async fn on_postgres<F, Fut>(scenario: F)
where
    F: FnOnce(Arc<dyn Storage>, Arc<dyn Storage>) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let server = pg();
    let url = server.create_database();
    let (a, b) = (pg_store(&url).await, pg_store(&url).await);
    scenario(a.clone(), b.clone()).await;
    a.shutdown().await.unwrap();
    b.shutdown().await.unwrap();
}

/// A throwaway PostgreSQL server (PostgreSQL must be installed: `.ci/run` installs it).
fn pg() -> kplane_storage::testing::postgres::PgServer {
    use kplane_storage::testing::postgres::PgServer;
    PgServer::start_required()
}

async fn pg_store(url: &str) -> Arc<dyn Storage> {
    kplane_storage::PostgresStorage::open(url, Default::default())
        .await
        .unwrap()
}

/// The same across two PostgreSQL stores on one database: B sees A's writes only through
/// its log tailer.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_what_one_replica_writes_the_other_serves() {
    on_postgres(what_one_replica_writes_the_other_serves).await;
}

/// Two replicas on PostgreSQL with the store's own election: one leads and does the work
/// of deletions made through the other; when the leader's store shuts down, the other
/// takes over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_the_other_replica_takes_over() {
    let server = pg();
    let url = server.create_database();
    let stores = [pg_store(&url).await, pg_store(&url).await];
    let mut replicas = [
        Replica::start(stores[0].clone(), None).await,
        Replica::start(stores[1].clone(), None).await,
    ];
    let mut leader = 0;
    crate::testing::until("one replica leads", || async {
        replicas.iter().filter(|r| r.reg.is_leader()).count() == 1
    })
    .await;
    if replicas[1].reg.is_leader() {
        leader = 1;
    }
    let follower = 1 - leader;
    let nst = target(&replicas[0].reg, "", "namespaces", None);
    let del = DeleteParams::default();
    let fr = replicas[follower].reg.clone();
    create_namespace_with_content(&fr, "one").await;
    fr.delete(&nst, "one", &del).await.unwrap();
    crate::testing::until("the leader removed one", || async {
        !exists(&fr, &nst, "one").await
    })
    .await;

    // The leader goes away (its controllers stop, its store closes its lock's session).
    replicas[leader].controllers.take();
    stores[leader].shutdown().await.unwrap();
    crate::testing::until("the other replica leads", || async { fr.is_leader() }).await;
    create_namespace_with_content(&fr, "two").await;
    fr.delete(&nst, "two", &del).await.unwrap();
    crate::testing::until("the new leader removed two", || async {
        !exists(&fr, &nst, "two").await
    })
    .await;
    stores[follower].shutdown().await.unwrap();
}

async fn create_cm(reg: &Registry, cluster: &str, cm: &str) -> crate::error::ApiResult<u64> {
    let t = in_cluster(target(reg, "", "configmaps", Some("default")), cluster);
    let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": cm}});
    let b = reg.create(&t, obj, &WriteParams::default()).await?;
    let v: Value = serde_json::from_slice(&b).unwrap();
    Ok(v["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap())
}

/// The code of what B answers for a request into `cluster` (200 when served).
fn answer(reg: &Registry, cluster: &str) -> u16 {
    match reg.check_cluster(&ClusterScope::One(name(cluster))) {
        Ok(()) => 200,
        Err(e) => e.code(),
    }
}

/// Both replicas follow the phases whichever replica set them: a staged import (a move's
/// target) into a new path made through A is hidden on B (404) until A commits it, then
/// B serves its objects; a fence set through A makes B refuse writes (429), lifted through
/// B it lets A write again; a cluster fenced through A and marked moved through B (which
/// reads the stored fence) is 410 on both.
async fn every_replica_follows_the_phases(a_store: Arc<dyn Storage>, b_store: Arc<dyn Storage>) {
    let a = Replica::start(a_store, Some(true)).await;
    let b = Replica::start(b_store, Some(false)).await;
    for r in [&a, &b] {
        r.reg.set_auto_create_clusters(true);
    }
    create_cm(&a.reg, "root:src", "one").await.unwrap();
    create_cm(&a.reg, "root:src", "two").await.unwrap();
    // From now on clusters exist only as they are made (so requests check phases).
    for r in [&a, &b] {
        r.reg.set_auto_create_clusters(false);
    }
    crate::testing::until("B knows root:src", || async {
        b.reg.cluster_exists(&name("root:src"))
    })
    .await;

    // A staged import through A.
    let dir = tempfile::tempdir().unwrap();
    let archive = dir.path().join("src.kpa");
    let mut export = a.reg.export(&name("root:src"), false, false).await.unwrap();
    let mut bytes = Vec::new();
    while let Some(c) = export.next_chunk().await.unwrap() {
        bytes.extend_from_slice(&c);
    }
    std::fs::write(&archive, bytes).unwrap();
    a.reg
        .import_staged(&archive, &name("root:copy"))
        .await
        .unwrap();
    assert_eq!(answer(&a.reg, "root:copy"), 404);
    crate::testing::until("B hides the staged import", || async {
        b.reg.cluster_table().phase("root:copy") == Some(crate::cluster_states::Phase::Importing)
    })
    .await;
    assert_eq!(answer(&b.reg, "root:copy"), 404);
    assert!(!b.reg.cluster_exists(&name("root:copy")));
    a.reg
        .commit_staged_import(&name("root:copy"))
        .await
        .unwrap();
    let cms =
        |reg: &Registry| in_cluster(target(reg, "", "configmaps", Some("default")), "root:copy");
    crate::testing::until("B serves the imported cluster", || async {
        answer(&b.reg, "root:copy") == 200
            && b.reg.cluster_exists(&name("root:copy"))
            && exists(&b.reg, &cms(&b.reg), "two").await
    })
    .await;

    // A fence through A, lifted through B.
    a.reg.fence_cluster(&name("root:src")).await.unwrap();
    crate::testing::until("B knows the fence", || async {
        b.reg.cluster_phase(&name("root:src")) == Some(ClusterPhase::Fenced)
    })
    .await;
    assert_eq!(
        create_cm(&b.reg, "root:src", "x").await.unwrap_err().code(),
        429
    );
    assert_eq!(
        create_cm(&a.reg, "root:src", "x").await.unwrap_err().code(),
        429
    );
    b.reg.unfence_cluster(&name("root:src")).await.unwrap();
    crate::testing::until("A knows the fence is lifted", || async {
        a.reg.cluster_phase(&name("root:src")).is_none()
    })
    .await;
    create_cm(&a.reg, "root:src", "three").await.unwrap();
    create_cm(&b.reg, "root:src", "four").await.unwrap();

    // Fenced through A, marked moved through B at once: both answer 410.
    let to = "https://elsewhere.example/clusters/root:src";
    a.reg.fence_cluster(&name("root:src")).await.unwrap();
    b.reg.mark_moved(&name("root:src"), to).await.unwrap();
    assert_eq!(answer(&b.reg, "root:src"), 410);
    crate::testing::until("A knows the move", || async {
        answer(&a.reg, "root:src") == 410
    })
    .await;
    drop((a, b));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_every_replica_follows_the_phases() {
    on_sled(every_replica_follows_the_phases).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_every_replica_follows_the_phases() {
    on_postgres(every_replica_follows_the_phases).await;
}

/// Writers hammer a cluster through replica B while replica A fences it (two PostgreSQL
/// stores on one database): every write B acknowledged is at or below the fence
/// revision A answered and in A's state at it (what the move's final catch-up reads);
/// every later one is refused with 429 (B's table may not know the fence yet: the store
/// refuses it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_the_fence_is_exact_across_replicas() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let server = pg();
    let url = server.create_database();
    let (a_store, b_store) = (pg_store(&url).await, pg_store(&url).await);
    let a = Replica::start(a_store.clone(), Some(true)).await;
    let b = Replica::start(b_store.clone(), Some(false)).await;
    for r in [&a, &b] {
        r.reg.set_auto_create_clusters(true);
    }
    let start = create_cm(&b.reg, "root:a", "first").await.unwrap();
    // Set once the fence answered: each writer then tries once more and stops (a write
    // the store let in after the fence would fail the test).
    let fenced = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..2 * kplane_storage::MAX_WRITE_GROUP {
        let reg = b.reg.clone();
        let fenced = fenced.clone();
        writers.push(tokio::spawn(async move {
            let mut committed = Vec::new();
            for i in 0.. {
                let last = fenced.load(Ordering::Acquire);
                match create_cm(&reg, "root:a", &format!("w{w}-{i}")).await {
                    Ok(rv) => committed.push((format!("w{w}-{i}"), rv)),
                    Err(e) => {
                        assert_eq!(e.code(), 429, "{}", e.0.message);
                        assert_eq!(e.0.retry_after, Some(1));
                        break;
                    }
                }
                if last {
                    break;
                }
            }
            committed
        }));
    }
    while b_store.current_revision() < start + 200 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let fence = a.reg.fence_cluster(&name("root:a")).await.unwrap();
    fenced.store(true, Ordering::Release);
    let mut acknowledged = Vec::new();
    for w in writers {
        for (n, rv) in w.await.unwrap() {
            assert!(
                rv <= fence,
                "{n} written at {rv}, after the fence at {fence}"
            );
            acknowledged.push(n);
        }
    }
    assert!(!acknowledged.is_empty());
    let at_fence = a_store
        .list(
            &Prefix::cluster("root:a"),
            &ListOptions {
                at_revision: Some(fence),
                ..Default::default()
            },
            None,
        )
        .await
        .unwrap();
    let names: std::collections::HashSet<String> =
        at_fence.items.into_iter().map(|kv| kv.key.name).collect();
    for n in &acknowledged {
        assert!(names.contains(n), "{n} is missing at the fence revision");
    }
    drop((a, b));
    a_store.shutdown().await.unwrap();
    b_store.shutdown().await.unwrap();
}

/// What a follower cannot queue (its queue drops work), the leader does: the
/// `kube-root-ca.crt` of a namespace whose own write of it failed (here: a namespace
/// stored without one), and the removal of the keys of a cluster marked moved while
/// nobody led.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_leader_does_what_a_follower_cannot_queue() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Storage> =
        SledStorage::open(dir.path().join("db"), SledStorageOptions::default()).unwrap();
    let a = Replica::start(store.clone(), Some(true)).await;
    let b = Replica::start(store.clone(), Some(false)).await;
    crate::testing::until("A leads, B follows", || async {
        a.reg.is_leader() && !b.reg.is_leader()
    })
    .await;

    // A namespace without its ConfigMap.
    let ns = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": "bare", "uid": "5b0a1c4e-0000-4000-8000-000000000001",
                     "creationTimestamp": "2026-01-01T00:00:00Z"},
        "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}});
    let bytes = serde_json::to_vec(&ns).unwrap();
    store
        .put(
            Key::new("root", "/namespaces", "", "bare"),
            Precondition::MustNotExist,
            Box::new(move |_| Ok(bytes)),
        )
        .await
        .unwrap();
    let cms = target(&b.reg, "", "configmaps", Some("bare"));
    crate::testing::until("the leader published kube-root-ca.crt", || async {
        exists(&b.reg, &cms, "kube-root-ca.crt").await
    })
    .await;

    // Marked moved while nobody leads; then A leads again.
    a.lead.send_replace(false);
    crate::testing::until("nobody leads", || async { !a.reg.is_leader() }).await;
    b.reg.set_auto_create_clusters(true);
    create_cm(&b.reg, "root:src", "one").await.unwrap();
    b.reg.set_auto_create_clusters(false);
    b.reg.fence_cluster(&name("root:src")).await.unwrap();
    b.reg
        .mark_moved(
            &name("root:src"),
            "https://elsewhere.example/clusters/root:src",
        )
        .await
        .unwrap();
    crate::testing::until("A knows the move", || async {
        answer(&a.reg, "root:src") == 410
    })
    .await;
    let keys = || async { store.count(&Prefix::cluster("root:src")).await.unwrap() };
    assert!(keys().await > 0);
    a.lead.send_replace(true);
    crate::testing::until(
        "the new leader removed the moved cluster's keys",
        || async { keys().await == 0 },
    )
    .await;
    drop((a, b));
    store.shutdown().await.unwrap();
}

/// Stores `n` ConfigMaps in `cluster` (made first) through `reg`'s store, in batches.
async fn seed_configmaps(reg: &Registry, cluster: &str, n: usize) {
    reg.ensure_cluster(&name(cluster)).await.unwrap();
    for chunk in (0..n).collect::<Vec<_>>().chunks(500) {
        let writes = chunk
            .iter()
            .map(|i| {
                let v = json!({"apiVersion": "v1", "kind": "ConfigMap",
                               "metadata": {"name": format!("cm-{i}"), "namespace": "default",
                                            "uid": format!("uid-{i}")}});
                BatchWrite {
                    key: Key::new(cluster, "/configmaps", "default", format!("cm-{i}")),
                    delete: false,
                    precondition: Precondition::MustNotExist,
                    encode: Box::new(move |rev| {
                        crate::archive::common::with_resource_version(v.to_string().as_bytes(), rev)
                    }),
                }
            })
            .collect();
        for r in reg.storage().write_batch(writes).await {
            r.unwrap();
        }
    }
}

/// `cluster` of `reg` exported into a file of `dir`.
async fn export_file(reg: &Registry, cluster: &str, dir: &std::path::Path) -> std::path::PathBuf {
    let path = dir.join(format!("{cluster}.kpa"));
    let mut export = reg.export(&name(cluster), false, true).await.unwrap();
    let mut bytes = Vec::new();
    while let Some(c) = export.next_chunk().await.unwrap() {
        bytes.extend_from_slice(&c);
    }
    std::fs::write(&path, bytes).unwrap();
    path
}

/// The ConfigMaps `seed_configmaps` stores that are in `cluster` (the root-CA
/// publisher's are not counted).
async fn configmap_count(store: &dyn Storage, cluster: &str) -> u64 {
    let prefix = Prefix {
        cluster: kplane_storage::Clusters::One(cluster.into()),
        resource: Some("/configmaps".into()),
        namespace: None,
    };
    let all = store
        .list(&prefix, &Default::default(), None)
        .await
        .unwrap();
    all.items
        .iter()
        .filter(|kv| kv.key.name.starts_with("cm-"))
        .count() as u64
}

/// Waits until `store` has published every write up to `rev` (made through another
/// store on the same database; at once for one sled store).
async fn follows(store: &dyn Storage, rev: u64) {
    crate::testing::until("the store follows the other's writes", || async {
        store.current_revision() >= rev
    })
    .await;
}

/// Objects above the import's write batch.
const IMPORTED: usize = crate::archive::IMPORT_BATCH + 10;

/// An import running through A (held in its write pass, then past its point of no return)
/// is left alone by B: neither B's start-up nor a resolution round of B rolls it back or
/// forward, and a second import of the target through B is refused (409); A then finishes
/// it and B serves the result.
async fn an_import_in_progress_is_left_to_its_owner(
    a_store: Arc<dyn Storage>,
    b_store: Arc<dyn Storage>,
) {
    use crate::archive::Step;
    let a = Replica::start(a_store, Some(true)).await;
    seed_configmaps(&a.reg, "root:src", IMPORTED).await;
    let dir = tempfile::tempdir().unwrap();
    let archive = export_file(&a.reg, "root:src", dir.path()).await;
    let (mut j, claim, _) = a
        .reg
        .write_import(&archive, &name("root:dst"), false, false)
        .await
        .unwrap();
    assert_eq!(j.step, Step::Writing);

    // B starts (its start-up resolves imports) while A's import is in its write pass.
    follows(&*b_store, a.reg.storage().current_revision()).await;
    let b = Replica::start(b_store.clone(), Some(false)).await;
    let round = b.reg.resolve_orphaned_imports(false).await.unwrap();
    assert_eq!((round.resolved, round.in_progress), (0, 1));
    assert!(b.reg.get_journal("root:dst").await.unwrap().is_some());
    assert_eq!(
        configmap_count(&*b_store, "root:dst").await,
        IMPORTED as u64,
        "the write pass is not rolled back"
    );
    let e = b
        .reg
        .import(&archive, &name("root:dst"), false)
        .await
        .unwrap_err();
    assert_eq!(e.code(), 409, "{}", e.0.message);

    // Past the point of no return: still A's.
    j.step = Step::DeletingOld;
    a.reg.put_journal(&mut j, false).await.unwrap();
    crate::testing::until("B reads the new step", || async {
        b.reg.get_journal("root:dst").await.unwrap().unwrap().step == Step::DeletingOld
    })
    .await;
    let round = b.reg.resolve_orphaned_imports(false).await.unwrap();
    assert_eq!((round.resolved, round.in_progress), (0, 1));
    assert_eq!(
        configmap_count(&*b_store, "root:dst").await,
        IMPORTED as u64,
        "not rolled forward by B"
    );

    // A finishes it; B serves it.
    a.reg.roll_forward_import(j, &claim).await.unwrap();
    drop(claim);
    let cms = in_cluster(
        target(&b.reg, "", "configmaps", Some("default")),
        "root:dst",
    );
    crate::testing::until("B serves the import A finished", || async {
        answer(&b.reg, "root:dst") == 200 && exists(&b.reg, &cms, "cm-0").await
    })
    .await;
    assert_eq!(
        configmap_count(&*b_store, "root:dst").await,
        IMPORTED as u64
    );
    assert!(b.reg.get_journal("root:dst").await.unwrap().is_none());
    drop((a, b));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_an_import_in_progress_is_left_to_its_owner() {
    on_sled(an_import_in_progress_is_left_to_its_owner).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_an_import_in_progress_is_left_to_its_owner() {
    on_postgres(an_import_in_progress_is_left_to_its_owner).await;
}

/// Two imports through A are cut short: one in its write pass, one past its point of no
/// return. While A holds them, the leader B leaves them; once A is gone (on PostgreSQL its
/// store shuts down, its claims kept by the test: they end with the store; on one sled
/// store, its claims are dropped), the leader's own resolution, without any restart, rolls
/// the first back and finishes the second. A move's staged import, which waits for its
/// move, is kept.
async fn the_leader_resolves_imports_whose_owner_is_gone(
    a_store: Arc<dyn Storage>,
    b_store: Arc<dyn Storage>,
    shut_a_down: bool,
) {
    use crate::archive::Step;
    let b = Replica::start(b_store.clone(), Some(true)).await;
    let a = Replica::start(a_store.clone(), Some(false)).await;
    crate::testing::until("B leads", || async { b.reg.is_leader() }).await;
    seed_configmaps(&a.reg, "root:src", IMPORTED).await;
    let dir = tempfile::tempdir().unwrap();
    let archive = export_file(&a.reg, "root:src", dir.path()).await;
    let (_, back, _) = a
        .reg
        .write_import(&archive, &name("root:back"), false, false)
        .await
        .unwrap();
    let (j, fwd, _) = a
        .reg
        .stage_import(&archive, &name("root:fwd"), false)
        .await
        .unwrap();
    let stopped = a
        .reg
        .advance_import(j, &fwd, Some(Step::Finishing))
        .await
        .unwrap();
    assert!(stopped.is_none());
    a.reg
        .import_staged(&archive, &name("root:staged"))
        .await
        .unwrap();
    follows(&*b_store, a_store.current_revision()).await;
    let round = b.reg.resolve_orphaned_imports(false).await.unwrap();
    assert_eq!(
        (round.resolved, round.in_progress, round.staged),
        (0, 2, 1),
        "A holds its imports"
    );
    assert_eq!(
        configmap_count(&*b_store, "root:back").await,
        IMPORTED as u64
    );

    // A goes away mid-way.
    drop(a);
    if shut_a_down {
        a_store.shutdown().await.unwrap();
        drop(a_store);
        crate::testing::until("A's claims ended with its store", || async {
            !back.is_held() && !fwd.is_held()
        })
        .await;
    } else {
        drop((back, fwd));
    }
    let cms = in_cluster(
        target(&b.reg, "", "configmaps", Some("default")),
        "root:fwd",
    );
    crate::testing::until("the leader resolved both imports", || async {
        b.reg.get_journal("root:back").await.unwrap().is_none()
            && b.reg.get_journal("root:fwd").await.unwrap().is_none()
            && answer(&b.reg, "root:fwd") == 200
            && exists(&b.reg, &cms, "cm-0").await
    })
    .await;
    assert_eq!(configmap_count(&*b_store, "root:back").await, 0);
    assert_eq!(answer(&b.reg, "root:back"), 404);
    assert_eq!(
        configmap_count(&*b_store, "root:fwd").await,
        IMPORTED as u64
    );
    let staged = b.reg.staged_import(&name("root:staged")).await.unwrap();
    assert_eq!(staged.source_cluster, "root:src");
    assert_eq!(
        configmap_count(&*b_store, "root:staged").await,
        IMPORTED as u64
    );
    drop(b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sled_the_leader_resolves_imports_whose_owner_is_gone() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn Storage> =
        SledStorage::open(dir.path().join("db"), SledStorageOptions::default()).unwrap();
    the_leader_resolves_imports_whose_owner_is_gone(store.clone(), store.clone(), false).await;
    store.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_the_leader_resolves_imports_whose_owner_is_gone() {
    let server = pg();
    let url = server.create_database();
    let (a, b) = (pg_store(&url).await, pg_store(&url).await);
    the_leader_resolves_imports_whose_owner_is_gone(a, b.clone(), true).await;
    b.shutdown().await.unwrap();
}

/// An owner whose claim is lost (its claim's session killed on the server, as a network
/// cut would) while its import is in its write pass: the leader B resolves the import
/// (rolls it back), and the owner, going on, fails at its next step (503 for the lost
/// claim, 409 for the journal rewritten by B) instead of undoing the resolution.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_an_owner_that_lost_its_claim_stops() {
    use crate::archive::Step;
    let server = pg();
    let url = server.create_database();
    let (a_store, b_store) = (pg_store(&url).await, pg_store(&url).await);
    let b = Replica::start(b_store.clone(), Some(true)).await;
    let a = Replica::start(a_store.clone(), Some(false)).await;
    seed_configmaps(&a.reg, "root:src", IMPORTED).await;
    let dir = tempfile::tempdir().unwrap();
    let archive = export_file(&a.reg, "root:src", dir.path()).await;
    let (mut j, claim, _) = a
        .reg
        .write_import(&archive, &name("root:lost"), false, false)
        .await
        .unwrap();

    let killed = server.sql(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_locks \
         WHERE locktype = 'advisory' AND granted AND objsubid = 2",
    );
    assert_eq!(killed, "1", "the import's claim is the only one held");
    crate::testing::until("A sees its claim lost", || async { !claim.is_held() }).await;
    crate::testing::until("the leader rolled the import back", || async {
        b.reg.get_journal("root:lost").await.unwrap().is_none()
    })
    .await;
    assert_eq!(configmap_count(&*b_store, "root:lost").await, 0);

    // A goes on as if nothing happened: refused at each step.
    let e = a
        .reg
        .advance_import(j.clone(), &claim, None)
        .await
        .unwrap_err();
    assert_eq!(e.code(), 503, "{}", e.0.message);
    j.step = Step::DeletingOld;
    let e = a.reg.put_journal(&mut j, false).await.unwrap_err();
    assert_eq!(e.code(), 409, "{}", e.0.message);
    assert_eq!(configmap_count(&*b_store, "root:lost").await, 0);
    drop((a, b));
    a_store.shutdown().await.unwrap();
    b_store.shutdown().await.unwrap();
}
