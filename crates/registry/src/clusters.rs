//! Which logical clusters exist, and which are being deleted.
//!
//! `root` always exists. Any other logical cluster exists from the moment it is bootstrapped
//! (the workspace controller creates its default namespaces for a Workspace's child, see
//! `namespaces.rs`) until the workspace controller has deleted its key range. Every
//! bootstrapped cluster holds keys (its default namespaces) and deletion removes them all,
//! so "exists" is "holds at least one key": [`Registry::load_cluster_state`] reads the set
//! from storage ([`kplane_storage::Storage::clusters`]) once at start-up, which also covers
//! clusters that older kplane versions created on a first write. After that the set
//! changes only in memory: marked on bootstrap, forgotten when a deletion finishes, and
//! following the storage events (`derived.rs`), whose rescan makes it what a start-up load
//! would find ([`Registry::settle_after_replay`]). One entry costs its name, its mark's
//! revision and a B-tree slot (tens of bytes), so 100,000 clusters are cheap.
//!
//! A request into a cluster that does not exist is a 404 ([`Registry::check_cluster`], which
//! the HTTP layer asks once per request). The development flag
//! [`Registry::set_auto_create_clusters`] restores the older behaviour: every cluster
//! answers, and the first write into an unknown one bootstraps it.
//!
//! A cluster whose Workspace carries a deletionTimestamp is *terminating*: writes into it
//! and its descendants are refused from the marking write on (the Workspace strategy's
//! hooks set and clear the mark), and the marks are rebuilt at start-up from the stored
//! Workspaces, so a restart never reopens a terminating cluster for writes.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::Ordering;
use std::sync::PoisonError;

use std::sync::Arc;

use kplane_storage::{
    Clusters, Key, ListOptions, Prefix, Revision, Tombstone, CLUSTER_DELETE_BATCH,
};
use kplane_types::{ClusterName, ClusterScope, Status, StatusReason};
use serde_json::Value;

use crate::cluster_states::{ClusterTable, FLOOR_NAME, HIDDEN_PREFIX, STATE_RESOURCE};
use crate::controllers::runtime::stored_cluster;
use crate::error::{ApiError, ApiResult};
use crate::strategies::workspace::WORKSPACE_RESOURCE;
use crate::Registry;

pub(crate) mod state;
pub use crate::cluster_states::table::no_such_cluster;
pub(crate) use state::ClusterState;

/// How many cluster names (and stored Workspaces) one start-up read brings in.
pub(crate) const LOAD_PAGE: usize = 1024;

impl Registry {
    /// Deletes every key of `cluster` (in batches; each tombstone carries the object's last
    /// state) and forgets it: from now on it does not exist, and its name starts afresh
    /// when it is used again. Resumable: a rerun deletes what is left.
    pub(crate) async fn erase_cluster(&self, cluster: &ClusterName) -> ApiResult<()> {
        self.storage
            .delete_cluster(
                cluster.as_str(),
                CLUSTER_DELETE_BATCH,
                last_state_tombstone(),
            )
            .await
            .map_err(ApiError::from)?;
        self.unmark_cluster(cluster);
        self.catalogs.forget(cluster);
        Ok(())
    }
}

/// The tombstone of a range delete, as the write path's delete makes it: the object's last
/// state with the delete's resourceVersion. A value that does not decode is passed on as
/// stored (it is still deleted).
pub(crate) fn last_state_tombstone() -> Tombstone {
    Arc::new(|kv, rev| {
        let Ok(mut obj) = serde_json::from_slice::<Value>(&kv.value) else {
            return Ok(kv.value.to_vec());
        };
        if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
            m.insert("resourceVersion".into(), Value::String(rev.to_string()));
        }
        serde_json::to_vec(&obj).map_err(|e| e.to_string())
    })
}

impl Registry {
    /// The work of
    /// [`LogicalClusters::set_auto_create`](crate::clusters::LogicalClusters::set_auto_create).
    pub(crate) fn set_auto_create_clusters(&self, on: bool) {
        self.clusters.auto_create.store(on, Ordering::Relaxed);
    }

    /// The work of [`LogicalClusters::auto_create`](crate::clusters::LogicalClusters::auto_create).
    pub(crate) fn auto_create_clusters(&self) -> bool {
        self.clusters.auto_create.load(Ordering::Relaxed)
    }

    /// Whether logical cluster `cluster` exists (`root` always does).
    pub(crate) fn cluster_exists(&self, cluster: &ClusterName) -> bool {
        cluster.is_root() || self.is_marked(cluster)
    }

    /// The work of [`LogicalClusters::check`](crate::clusters::LogicalClusters::check).
    pub(crate) fn check_cluster(&self, scope: &ClusterScope) -> ApiResult<()> {
        match scope {
            ClusterScope::One(c) | ClusterScope::Subtree { root: c, .. } => {
                self.refuse_if_moved(c)?
            }
            ClusterScope::Wildcard => {}
        }
        if self.auto_create_clusters() {
            return Ok(());
        }
        match scope {
            ClusterScope::One(cluster) => {
                self.clusters.table.check_request(cluster)?;
                self.require_cluster(cluster)
            }
            // `root:acme:*` needs `root:acme`; the `*` wildcard always answers.
            ClusterScope::Subtree { root, .. } => {
                self.clusters.table.check_request(root)?;
                self.require_cluster(root)
            }
            ClusterScope::Wildcard => Ok(()),
        }
    }

    /// The per-cluster state table (phases of imports, resourceVersion floors).
    pub(crate) fn cluster_table(&self) -> &std::sync::Arc<ClusterTable> {
        &self.clusters.table
    }

    /// 404 unless `cluster` exists.
    pub(crate) fn require_cluster(&self, cluster: &ClusterName) -> ApiResult<()> {
        if self.cluster_exists(cluster) {
            Ok(())
        } else {
            Err(no_such_cluster(cluster))
        }
    }

    /// The work of [`LogicalClusters::existing`](crate::clusters::LogicalClusters::existing).
    pub(crate) fn existing_clusters(&self) -> Vec<ClusterName> {
        let set = self.existing_read();
        let mut v = Vec::with_capacity(set.len() + 1);
        v.push(ClusterName::root());
        v.extend(set.keys().filter(|c| !c.is_root()).cloned());
        v
    }

    /// The work of [`LogicalClusters::known`](crate::clusters::LogicalClusters::known).
    pub(crate) fn known_clusters(&self) -> usize {
        self.existing_read().len()
    }

    /// The work of [`LogicalClusters::load_state`](crate::clusters::LogicalClusters::load_state).
    pub(crate) async fn load_cluster_state(&self) -> ApiResult<()> {
        self.load_cluster_state_paged(LOAD_PAGE).await
    }

    pub(crate) async fn load_cluster_state_paged(&self, page: usize) -> ApiResult<()> {
        // Unfinished imports first: rolled back or forward, so that what is loaded below
        // is what the clients will see.
        self.recover_imports().await?;
        let mut after: Option<String> = None;
        loop {
            let names = self.storage.clusters(after.as_deref(), page).await?;
            let Some(last) = names.last().cloned() else {
                break;
            };
            let rev = self.mark_revision();
            let mut set = self.existing_write();
            for n in names.iter().filter(|n| !n.starts_with(HIDDEN_PREFIX)) {
                match ClusterName::parse(n) {
                    Some(c) => {
                        set.insert(c, rev);
                    }
                    None => {
                        tracing::warn!(cluster = %n, "stored keys of an invalid logical cluster name; skipped")
                    }
                }
            }
            drop(set);
            after = Some(last);
        }
        self.load_floors(page).await?;
        self.load_terminating(page).await?;
        self.load_cluster_phases(page).await
    }

    /// Loads every cluster's resourceVersion floor (`cluster_states.rs`).
    async fn load_floors(&self, page: usize) -> ApiResult<()> {
        let prefix = Prefix::all_clusters(STATE_RESOURCE);
        let mut start_after: Option<Key> = None;
        loop {
            let opts = ListOptions {
                start_after: start_after.take(),
                limit: Some(page.max(1)),
                ..Default::default()
            };
            let res = self.storage.list(&prefix, &opts, None).await?;
            for kv in res.items.iter().filter(|kv| kv.key.name == FLOOR_NAME) {
                match serde_json::from_slice::<FloorRecord>(&kv.value) {
                    Ok(f) => self.clusters.table.raise_floor(&kv.key.cluster, f.floor),
                    Err(e) => {
                        tracing::warn!(cluster = %kv.key.cluster, error = %e, "unreadable resourceVersion floor; skipped")
                    }
                }
            }
            match res.items.last() {
                Some(last) if res.more => start_after = Some(last.key.clone()),
                _ => return Ok(()),
            }
        }
    }

    /// Marks the child of every stored Workspace that carries a deletionTimestamp, and
    /// sets each child's quota limits (`quota`).
    async fn load_terminating(&self, page: usize) -> ApiResult<()> {
        let prefix = Prefix {
            cluster: Clusters::All,
            resource: Some(WORKSPACE_RESOURCE.into()),
            namespace: None,
        };
        let mut start_after: Option<Key> = None;
        loop {
            let opts = ListOptions {
                start_after: start_after.take(),
                limit: Some(page.max(1)),
                ..Default::default()
            };
            let res = self.storage.list(&prefix, &opts, None).await?;
            for kv in &res.items {
                let deleting = serde_json::from_slice::<Deleting>(&kv.value)
                    .is_ok_and(|d| d.metadata.deletion_timestamp.is_some());
                let child = stored_cluster(&kv.key).and_then(|c| c.child(&kv.key.name));
                if let (true, Some(child)) = (deleting, &child) {
                    self.set_terminating(child, true);
                }
                if let Some(child) = &child {
                    self.load_workspace_quota(child, &kv.value);
                }
            }
            match res.items.last() {
                Some(last) if res.more => start_after = Some(last.key.clone()),
                _ => return Ok(()),
            }
        }
    }

    /// Records that `cluster` exists; `true` when it was not recorded before.
    pub(crate) fn mark_cluster(&self, cluster: &ClusterName) -> bool {
        let rev = self.mark_revision();
        self.existing_write().insert(cluster.clone(), rev).is_none()
    }

    /// [`Registry::mark_cluster`] for a cluster whose keys are being written: until
    /// [`Registry::unpin_cluster`], no rescan forgets it.
    pub(crate) fn pin_cluster(&self, cluster: &ClusterName) -> bool {
        self.existing_write()
            .insert(cluster.clone(), Revision::MAX)
            .is_none()
    }

    /// Ends [`Registry::pin_cluster`] (the keys are written): the mark carries the
    /// revision of a mark made now. Nothing for a cluster unmarked meanwhile.
    pub(crate) fn unpin_cluster(&self, cluster: &ClusterName) {
        let rev = self.mark_revision();
        if let Some(r) = self.existing_write().get_mut(cluster) {
            *r = rev;
        }
    }

    /// The revision a mark made now carries: the first one a write after it can have (a
    /// replay as of an older revision cannot show the change the mark stands for).
    fn mark_revision(&self) -> Revision {
        self.storage.current_revision().saturating_add(1)
    }

    /// Whether `cluster` was bootstrapped (or found holding keys at start-up).
    pub(crate) fn is_marked(&self, cluster: &ClusterName) -> bool {
        self.existing_read().contains_key(cluster)
    }

    /// After a replay of the store as of revision `at` (the derived-state informer's
    /// rescan, which follows changes it may have missed): what a start-up load would find.
    /// A cluster that held no key in the replay (`holding` lists those that did) is
    /// forgotten, so is the terminating mark of a cluster whose Workspace the replay did
    /// not show with a deletionTimestamp (`deleting`), as their DELETED events would have
    /// done. Left alone: `root`; marks set after `at` (this process's write path, whose
    /// change the replay could not show: its event follows); clusters the replay could
    /// not show (being imported or replaced, moved: `ClusterTable::hides`, or a phase that
    /// changed at or after `at`: an import that finished while the replay ran), and the
    /// marks of those whose parent it could not show. Returns the clusters forgotten
    /// (their catalogs are the caller's).
    pub(crate) fn settle_after_replay(
        &self,
        holding: &HashSet<ClusterName>,
        deleting: &HashSet<ClusterName>,
        at: Revision,
    ) -> Vec<ClusterName> {
        let table = &self.clusters.table;
        let mut gone = Vec::new();
        {
            let mut set = self.existing_write();
            set.retain(|c, rev| {
                let keep = *rev > at
                    || c.is_root()
                    || holding.contains(c)
                    || table.hides(c.as_str())
                    || table.phase_changed_since(c.as_str(), at);
                if !keep {
                    gone.push(c.clone());
                }
                keep
            });
        }
        let mut marks = self
            .clusters
            .terminating
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        marks.retain(|c, rev| {
            *rev > at
                || deleting.contains(c)
                || c.parent().is_some_and(|p| {
                    table.hides(p.as_str()) || table.phase_changed_since(p.as_str(), at)
                })
        });
        for c in &gone {
            tracing::debug!(cluster = %c, "a cluster deleted while not followed is forgotten");
        }
        gone
    }

    /// Forgets that `cluster` exists (its key range is gone).
    pub(crate) fn unmark_cluster(&self, cluster: &ClusterName) {
        self.existing_write().remove(cluster);
    }

    /// The existing clusters strictly within `root` (its descendants), in name order.
    pub(crate) fn existing_descendants(&self, root: &ClusterName) -> Vec<ClusterName> {
        let set = self.existing_read();
        set.range(root.clone()..)
            .map(|(c, _)| c)
            .take_while(|c| c.as_str().starts_with(root.as_str()))
            .filter(|c| *c != root && c.is_within(root))
            .cloned()
            .collect()
    }

    /// 403 for a write into a logical cluster that is being deleted (or lies within one).
    pub(crate) fn refuse_if_terminating(&self, cluster: &ClusterName) -> ApiResult<()> {
        let set = self
            .clusters
            .terminating
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if set.is_empty() {
            return Ok(());
        }
        // The cluster and its ancestors: a few lookups, however many clusters terminate.
        let mut next = Some(cluster.clone());
        while let Some(c) = next {
            if set.contains_key(&c) {
                return Err(ApiError::from(Status::new(
                    StatusReason::Forbidden,
                    format!(
                        "unable to write to logical cluster \"{cluster}\" because workspace \"{c}\" is being deleted"
                    ),
                )));
            }
            next = c.parent();
        }
        Ok(())
    }

    /// Whether `cluster` is being deleted (it or an ancestor is terminating) or is gone (no
    /// longer exists, outside development mode): no write into it can succeed.
    pub(crate) fn cluster_going(&self, cluster: &ClusterName) -> bool {
        self.refuse_if_terminating(cluster).is_err()
            || (!self.auto_create_clusters() && !self.cluster_exists(cluster))
    }

    /// Marks (or unmarks) `cluster` as terminating.
    pub(crate) fn set_terminating(&self, cluster: &ClusterName, on: bool) {
        let rev = self.mark_revision();
        let mut set = self
            .clusters
            .terminating
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if on {
            set.insert(cluster.clone(), rev);
        } else {
            set.remove(cluster);
        }
    }

    /// Whether `cluster` itself is marked terminating.
    pub(crate) fn is_terminating(&self, cluster: &ClusterName) -> bool {
        self.clusters
            .terminating
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(cluster)
    }

    fn existing_read(&self) -> std::sync::RwLockReadGuard<'_, BTreeMap<ClusterName, Revision>> {
        self.clusters
            .existing
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn existing_write(&self) -> std::sync::RwLockWriteGuard<'_, BTreeMap<ClusterName, Revision>> {
        self.clusters
            .existing
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// A cluster's durable resourceVersion floor (`cluster_states.rs`).
#[derive(serde::Serialize, serde::Deserialize)]
pub(crate) struct FloorRecord {
    pub(crate) floor: kplane_storage::Revision,
}

/// What start-up reads of a stored Workspace: whether it carries a deletionTimestamp
/// (everything else is skipped, not decoded).
#[derive(serde::Deserialize)]
struct Deleting {
    metadata: DeletingMeta,
}

#[derive(serde::Deserialize)]
struct DeletingMeta {
    #[serde(rename = "deletionTimestamp")]
    deletion_timestamp: Option<serde::de::IgnoredAny>,
}

#[cfg(test)]
pub(crate) mod tests {
    use std::sync::Arc;

    use kplane_storage::Storage;
    use serde_json::json;

    use super::*;
    use crate::builtin_types::builtin;
    use crate::catalog::Catalog;
    use crate::options::WriteParams;
    use crate::Target;

    pub(crate) fn name(s: &str) -> ClusterName {
        ClusterName::parse(s).unwrap()
    }

    /// A registry over `storage` (nothing loaded, nothing bootstrapped).
    pub(crate) fn registry(
        storage: Arc<dyn Storage>,
    ) -> (Arc<Registry>, tokio::sync::watch::Sender<bool>) {
        let (tx, shutdown) = tokio::sync::watch::channel(false);
        let catalog = Arc::new(Catalog::new(builtin()));
        let (reg, _queue) = Registry::new(storage, catalog, String::new(), shutdown);
        (reg, tx)
    }

    pub(crate) fn configmaps(reg: &Registry, cluster: &str) -> Target {
        let rt = reg
            .builtin_catalog()
            .get("", "v1", "configmaps")
            .unwrap()
            .clone();
        Target::new(&name(cluster), rt, Some("default".into()))
    }

    async fn create_cm(reg: &Registry, cluster: &str) -> ApiResult<bytes::Bytes> {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
        reg.create(&configmaps(reg, cluster), obj, &WriteParams::default())
            .await
    }

    fn open() -> Arc<dyn Storage> {
        crate::testing::memory_store()
    }

    /// Clusters created by first writes (as older versions did, here in development mode)
    /// exist after a restart: the set is loaded from storage, in pages below, at, above and
    /// ten times the number of clusters.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn existence_is_loaded_from_storage_at_start_up() {
        let storage = open();
        let clusters = ["root", "root:a", "root:a:b", "root:a-b", "root:b", "legacy"];
        {
            let (reg, _tx) = registry(storage.clone());
            reg.set_auto_create_clusters(true);
            for c in clusters {
                create_cm(&reg, c).await.unwrap();
            }
        }
        let n = clusters.len();
        for page in [1, n - 1, n, n + 1, 10 * n] {
            let (reg, _tx) = registry(storage.clone());
            assert!(!reg.cluster_exists(&name("root:a")));
            reg.load_cluster_state_paged(page).await.unwrap();
            for c in clusters {
                assert!(reg.cluster_exists(&name(c)), "{c}, page {page}");
                reg.check_cluster(&ClusterScope::One(name(c))).unwrap();
            }
            assert_eq!(reg.known_clusters(), n, "page {page}");
            for c in ["root:c", "root:a:b:c", "root:a:"]
                .iter()
                .filter_map(|c| ClusterName::parse(c))
            {
                assert!(!reg.cluster_exists(&c), "{c}");
            }
            assert_eq!(
                reg.existing_descendants(&name("root:a")),
                [name("root:a:b")],
                "page {page}"
            );
        }
    }

    /// Without the development flag a request into an unknown cluster is a 404 with a
    /// Status naming it, and a write there creates nothing; `root` and the wildcard always
    /// pass. With the flag, everything passes and the first write bootstraps the cluster.
    #[tokio::test]
    async fn unknown_clusters_are_404_unless_the_development_flag_is_on() {
        let storage = open();
        let (reg, _tx) = registry(storage.clone());
        reg.load_cluster_state().await.unwrap();
        reg.ensure_cluster(&ClusterName::root()).await.unwrap();
        assert!(!reg.auto_create_clusters());
        let nope = ClusterScope::One(name("root:nope"));
        let e = reg.check_cluster(&nope).unwrap_err();
        assert_eq!(e.code(), 404);
        assert_eq!(e.0.reason, StatusReason::NotFound);
        assert_eq!(e.0.message, "logical cluster \"root:nope\" does not exist");
        reg.check_cluster(&ClusterScope::One(ClusterName::root()))
            .unwrap();
        reg.check_cluster(&ClusterScope::Wildcard).unwrap();
        // A subtree needs its root: `root:*` answers, `root:nope:*` is the 404 of root:nope.
        reg.check_cluster(&ClusterScope::subtree(ClusterName::root()))
            .unwrap();
        let e = reg
            .check_cluster(&ClusterScope::subtree(name("root:nope")))
            .unwrap_err();
        assert_eq!(e.code(), 404);
        assert_eq!(e.0.message, "logical cluster \"root:nope\" does not exist");

        let e = create_cm(&reg, "root:nope").await.unwrap_err();
        assert_eq!(e.code(), 404);
        assert_eq!(e.0.message, "logical cluster \"root:nope\" does not exist");
        let count = |c: &'static str| {
            let s = storage.clone();
            async move { s.count(&Prefix::cluster(c)).await.unwrap() }
        };
        assert_eq!(count("root:nope").await, 0);
        create_cm(&reg, "root").await.unwrap();

        reg.set_auto_create_clusters(true);
        reg.check_cluster(&nope).unwrap();
        create_cm(&reg, "root:nope").await.unwrap();
        // The default namespaces and the ConfigMap.
        assert!(count("root:nope").await > 1);
        reg.set_auto_create_clusters(false);
        reg.check_cluster(&nope).unwrap();
        reg.check_cluster(&ClusterScope::subtree(name("root:nope")))
            .unwrap();
        assert!(reg.cluster_exists(&name("root:nope")));
    }

    /// The children of stored Workspaces that carry a deletionTimestamp are terminating
    /// after a restart (loaded in pages below, at, above and ten times their number);
    /// those of other Workspaces are not.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn terminating_marks_are_loaded_from_stored_workspaces() {
        let storage = open();
        let deleting = ["root:a", "root:b", "root:b:x", "root:c"];
        {
            let (reg, _tx) = registry(storage.clone());
            reg.set_auto_create_clusters(true);
            let rt = reg
                .builtin_catalog()
                .get("tenancy.kplane.io", "v1alpha1", "workspaces")
                .unwrap()
                .clone();
            let target = |path: &str| {
                let child = name(path);
                let t = Target::new(&child.parent().unwrap(), rt.clone(), None);
                (child, t)
            };
            for path in deleting.iter().chain(&["root:kept"]) {
                let (child, t) = target(path);
                let obj = json!({"apiVersion": "tenancy.kplane.io/v1alpha1",
                                 "kind": "Workspace", "metadata": {"name": child.base_name()}});
                reg.create(&t, obj, &WriteParams::default()).await.unwrap();
            }
            // Deepest first: a terminating cluster takes no more writes.
            for path in deleting.iter().rev() {
                let (child, t) = target(path);
                reg.delete(&t, child.base_name(), &Default::default())
                    .await
                    .unwrap();
                assert!(reg.is_terminating(&child), "{child}");
            }
        }
        let n = deleting.len();
        for page in [1, n - 1, n, n + 1, 10 * n] {
            let (reg, _tx) = registry(storage.clone());
            reg.load_cluster_state_paged(page).await.unwrap();
            for c in deleting {
                assert!(reg.is_terminating(&name(c)), "{c}, page {page}");
            }
            assert!(!reg.is_terminating(&name("root:kept")), "page {page}");
            let e = reg.refuse_if_terminating(&name("root:b:x:y")).unwrap_err();
            assert_eq!(e.code(), 403);
        }
    }

    /// After a replay as of revision `at`: clusters it showed no key of and terminating
    /// marks it did not show are dropped; `root`, what it showed, marks set after `at`
    /// (this process's writes), clusters it could not show (an import) and marks within
    /// them stay.
    #[tokio::test]
    async fn a_replay_drops_what_it_did_not_show_and_nothing_newer() {
        let (reg, _tx) = registry(open());
        reg.set_auto_create_clusters(true);
        for c in ["root:old", "root:shown", "root:imp"] {
            reg.mark_cluster(&name(c));
        }
        // A bootstrap writing its keys; an import whose keys the replay hid.
        reg.pin_cluster(&name("root:pinned"));
        reg.mark_cluster(&name("root:imported"));
        reg.clusters.table.set_phase(
            "root:imported",
            Some(crate::cluster_states::Phase::Importing),
        );
        for c in ["root:old", "root:shown", "root:imp:x", "root:gone"] {
            reg.set_terminating(&name(c), true);
        }
        // A write after the marks; the replay is as of it.
        create_cm(&reg, "root").await.unwrap();
        let at = reg.storage.current_revision();
        // Marks made after the replay's revision was read: before any later write, and
        // after one.
        reg.mark_cluster(&name("root:new"));
        reg.set_terminating(&name("root:new"), true);
        create_cm(&reg, "root:newer").await.unwrap();
        assert!(reg.storage.current_revision() > at);
        reg.set_terminating(&name("root:newer"), true);
        reg.clusters
            .table
            .set_phase("root:imp", Some(crate::cluster_states::Phase::Importing));
        // The import finished while the replay ran (its phase ended after `at`).
        reg.set_own_phase("root:imported", None);
        let holding: HashSet<ClusterName> = [name("root:shown")].into();
        let deleting: HashSet<ClusterName> = [name("root:shown")].into();
        let gone = reg.settle_after_replay(&holding, &deleting, at);
        assert_eq!(gone, [name("root:old")]);
        for c in [
            "root",
            "root:shown",
            "root:imp",
            "root:new",
            "root:newer",
            "root:pinned",
            "root:imported",
        ] {
            assert!(reg.cluster_exists(&name(c)), "{c}");
        }
        assert!(!reg.cluster_exists(&name("root:old")));
        for (c, on) in [
            ("root:old", false),
            ("root:gone", false),
            ("root:shown", true),
            ("root:imp:x", true),
            ("root:new", true),
            ("root:newer", true),
        ] {
            assert_eq!(reg.is_terminating(&name(c)), on, "{c}");
        }
        // Unpinned, it is a mark like any other: a later replay that does not show it
        // forgets it.
        reg.unpin_cluster(&name("root:pinned"));
        create_cm(&reg, "root:later").await.unwrap();
        let later = reg.storage.current_revision();
        let gone = reg.settle_after_replay(&holding, &deleting, later);
        assert!(gone.contains(&name("root:pinned")), "{gone:?}");
    }

    /// Terminating marks cover descendants, not siblings with the same prefix.
    #[tokio::test]
    async fn a_terminating_mark_covers_the_cluster_and_its_descendants() {
        let (reg, _tx) = registry(open());
        reg.set_terminating(&name("root:a"), true);
        for c in ["root:a", "root:a:b", "root:a:b:c"] {
            let e = reg.refuse_if_terminating(&name(c)).unwrap_err();
            assert_eq!(e.code(), 403, "{c}");
            assert!(
                e.0.message.contains("workspace \"root:a\""),
                "{}",
                e.0.message
            );
        }
        for c in ["root", "root:ab", "root:a-b", "root:b:a"] {
            reg.refuse_if_terminating(&name(c)).unwrap();
        }
        reg.set_terminating(&name("root:a"), false);
        reg.refuse_if_terminating(&name("root:a:b")).unwrap();
    }
}

/// Which logical clusters exist, and whether a request may create one: what a [`Registry`]
/// offers of [`crate::clusters`].
#[derive(Clone, Copy, Debug)]
pub struct LogicalClusters<'a>(&'a Registry);

impl Registry {
    /// The registry's logical clusters ([`LogicalClusters`]).
    pub fn logical_clusters(&self) -> LogicalClusters<'_> {
        LogicalClusters(self)
    }
}

impl LogicalClusters<'_> {
    /// Development and testing only: every logical cluster answers, and the first write
    /// into an unknown one bootstraps it (`kplane serve --auto-create-clusters`). Off by
    /// default: clusters are created through Workspaces.
    pub fn set_auto_create(&self, on: bool) {
        self.0.set_auto_create_clusters(on)
    }

    /// Whether [`Registry::set_auto_create_clusters`] turned development mode on.
    pub fn auto_create(&self) -> bool {
        self.0.auto_create_clusters()
    }

    /// The one existence check of a request: 410 naming the new location for a cluster that
    /// has moved (`cluster_states.rs`), 404 for a logical cluster that does not exist
    /// (never created, or deleted); a subtree (`root:acme:*`) needs its root. The `*`
    /// wildcard always passes, so does everything in development mode
    /// ([`Registry::set_auto_create_clusters`]).
    pub fn check(&self, scope: &ClusterScope) -> ApiResult<()> {
        self.0.check_cluster(scope)
    }

    /// Every logical cluster that exists, `root` first, then in name order (a copy: the
    /// scheduled backups walk it).
    pub fn existing(&self) -> Vec<ClusterName> {
        self.0.existing_clusters()
    }

    /// Logical clusters that exist besides `root` (`root` too once it is bootstrapped).
    pub fn known(&self) -> usize {
        self.0.known_clusters()
    }

    /// Loads which logical clusters exist (those holding keys) and which are terminating
    /// (the children of stored Workspaces with a deletionTimestamp) from storage. The server
    /// calls it once at start-up, before it serves and before the controllers run.
    pub async fn load_state(&self) -> ApiResult<()> {
        self.0.load_cluster_state().await
    }
}
