//! The per-cluster state table: logical clusters that are not simply "existing" or
//! "absent". One entry per such cluster, holding its phase (being imported, being
//! replaced by an import, fenced or moved by `kplane ws move`) and its resourceVersion
//! floor (the revision at which an import or replace made it what it is: older
//! resourceVersions describe another cluster).
//!
//! - **Importing** (a new path being imported): not existing yet, so requests into it
//!   are 404 (`clusters.rs`); wildcard and subtree reads and the internal informer skip
//!   its objects ([`ClusterTable::hides`]).
//! - **Replacing** (an existing path being replaced): requests into it are 503 with
//!   Retry-After; wildcard and subtree reads skip its objects.
//! - **Floor** `F`: any list, continue or watch of the cluster (or of a wildcard or
//!   subtree that spans it) from a resourceVersion below `F` is 410 Expired, and a watch
//!   that started below `F` and is still running when the floor is set ends with a 410
//!   ERROR event ([`ClusterTable::subscribe`]).
//!
//! - **Fenced** (a move's write pause, docs/architecture.md "Moving a logical cluster"):
//!   writes are 429 with `Retry-After: 1`, reads and watches are served. The fence is
//!   exact: every storage write of the registry goes through [`Registry::write_gate`],
//!   which holds a read guard of its cluster's gate shard from the phase check to the
//!   commit; [`Registry::fence_cluster`] sets the phase, then takes the shard's write guard
//!   once, so every write that passed the check has committed when it answers the fence
//!   revision, and every later one sees the fence.
//! - **Moved** to a location: every request into it is a 410 Gone naming the location
//!   ([`moved`]); its objects are hidden and then removed (the workspace controller).
//!
//! Pseudo-clusters whose name starts with [`HIDDEN_PREFIX`] (an import's staging copy, the
//! import journal) are never valid cluster names: no request can address them and every
//! multi-cluster read skips them.
//!
//! Floors are durable: an ordinary key under the reserved resource [`STATE_RESOURCE`]
//! (never served) in the cluster's own key range, loaded at start-up
//! ([`crate::Registry::load_cluster_state`]) and removed with the cluster. Phases are
//! durable through the import journal (`archive/journal.rs`), which start-up resolves
//! before anything is served. Fenced and moved phases are durable as keys of the
//! pseudo-cluster [`PHASES_CLUSTER`] (one per cluster, named by its path), loaded at
//! start-up ([`Registry::load_cluster_phases`]).

use kplane_storage::{Key, ListOptions, Precondition, Prefix, Revision};
use kplane_types::{ClusterName, Status, StatusReason};

use crate::controllers::queue::Named;
use crate::controllers::workspace::Workspaces;
use crate::error::{ApiError, ApiResult};
use crate::Registry;

pub(crate) mod table;
pub use table::{
    below_floor, moved, ClusterPhase, ClusterTable, Phase, FLOOR_NAME, HIDDEN_PREFIX,
    PHASES_CLUSTER, REPLACING_RETRY_SECONDS, STATE_RESOURCE,
};
pub(crate) use table::{WriteGate, FENCE_RECORD_WAITS};

impl Registry {
    /// The work of [`Moves::phase`](crate::cluster_states::Moves::phase).
    pub(crate) fn cluster_phase(&self, cluster: &ClusterName) -> Option<ClusterPhase> {
        self.clusters.table.move_phase(cluster.as_str())
    }

    /// Every cluster with a state, in name order.
    pub(crate) fn cluster_phases(&self) -> Vec<(ClusterName, ClusterPhase)> {
        let t = &self.clusters.table;
        let names: Vec<String> = t.read().keys().cloned().collect();
        let mut v: Vec<_> = names
            .into_iter()
            .filter_map(|c| Some((ClusterName::parse(&c)?, t.move_phase(&c)?)))
            .collect();
        v.sort_by(|a, b| a.0.cmp(&b.0));
        v
    }

    /// The answer to any request into a moved cluster; `Ok` otherwise.
    pub(crate) fn refuse_if_moved(&self, cluster: &ClusterName) -> ApiResult<()> {
        match self.cluster_phase(cluster) {
            Some(ClusterPhase::Moved { location }) => Err(moved(cluster, &location)),
            _ => Ok(()),
        }
    }

    /// The answer to a write into a fenced (429) or moved (410) cluster; `Ok` otherwise.
    pub(crate) fn refuse_if_fenced(&self, cluster: &str) -> ApiResult<()> {
        match self.clusters.table.move_phase(cluster) {
            None => Ok(()),
            Some(ClusterPhase::Fenced) => Err(crate::error::fenced(cluster)),
            Some(ClusterPhase::Moved { location }) => match ClusterName::parse(cluster) {
                Some(c) => Err(moved(&c, &location)),
                None => Ok(()),
            },
        }
    }

    /// Checks that writes into `clusters` are allowed and holds them open until the guard
    /// is dropped (after the commit): a fence waits for it ([`Registry::fence_cluster`]).
    pub(crate) async fn write_gate<'a, I>(&'a self, clusters: I) -> ApiResult<WriteGate<'a>>
    where
        I: IntoIterator<Item = &'a str>,
    {
        let mut names: Vec<&str> = clusters.into_iter().collect();
        names.sort_unstable();
        names.dedup();
        // One guard per distinct shard, taken in shard order (never two of one shard).
        let mut shards: Vec<usize> = names
            .iter()
            .map(|c| self.clusters.table.shard_of(c))
            .collect();
        shards.sort_unstable();
        shards.dedup();
        let mut guards = Vec::with_capacity(shards.len());
        for s in shards {
            guards.push(self.clusters.table.gate[s].read().await);
        }
        let gate = WriteGate { _guards: guards };
        for c in names {
            self.refuse_if_fenced(c)?;
        }
        Ok(gate)
    }

    /// The work of [`Moves::fence`](crate::cluster_states::Moves::fence).
    pub(crate) async fn fence_cluster(&self, cluster: &ClusterName) -> ApiResult<Revision> {
        self.refuse_if_moved(cluster)?;
        if cluster.is_root() {
            return Err(ApiError::bad_request(
                "the root logical cluster cannot be moved".to_string(),
            ));
        }
        self.require_cluster(cluster)?;
        if let Some(p @ (Phase::Importing | Phase::Replacing)) =
            self.clusters.table.phase(cluster.as_str())
        {
            return Err(ApiError::from(Status::new(
                StatusReason::Conflict,
                format!("logical cluster \"{cluster}\" cannot be fenced while it is {p:?}"),
            )));
        }
        match self.durable_phase(cluster).await? {
            Some((ClusterPhase::Moved { location }, _)) => return Err(moved(cluster, &location)),
            Some((ClusterPhase::Fenced, _)) => {}
            None => {
                self.store_phase(cluster, Some(&ClusterPhase::Fenced))
                    .await?;
            }
        }
        self.set_own_move_phase(cluster, Some(&ClusterPhase::Fenced));
        // Every write of this process that checked the state before it changed holds its
        // shard: wait.
        let shard = self.clusters.table.shard_of(cluster.as_str());
        drop(self.clusters.table.gate[shard].write().await);
        // The writes of every other process sharing the store: refused inside the commit
        // that would order them after the storage's fence.
        let fence = self
            .storage
            .fence_cluster(cluster.as_str(), true)
            .await?
            .max(self.storage.current_revision());
        // The caller reads the changes up to the fence next, perhaps from this replica:
        // give its store a moment to publish them (the change stream waits too, so a
        // slow one is no error here: the fence is set).
        if self.wait_for_revision(fence).await.is_err() {
            tracing::debug!(cluster = %cluster, fence, "the fence revision is not published here yet");
        }
        Ok(fence)
    }

    /// The move's phase of `cluster` as stored (another replica may have changed it
    /// since this one's table), with its record.
    async fn durable_phase(
        &self,
        cluster: &ClusterName,
    ) -> ApiResult<Option<(ClusterPhase, kplane_storage::KeyValue)>> {
        let Some(kv) = self.storage.get(&phase_key(cluster)).await? else {
            return Ok(None);
        };
        let phase = serde_json::from_slice::<ClusterPhase>(&kv.value)
            .map_err(|e| ApiError::internal(format!("unreadable cluster state: {e}")))?;
        Ok(Some((phase, kv)))
    }

    /// [`Registry::durable_phase`], waiting a little for one when there is none: a record
    /// another replica wrote reaches this replica's store within its publication delay
    /// (docs/storage-postgres.md), and the move's next step may come here at once.
    async fn stored_phase_waiting(
        &self,
        cluster: &ClusterName,
    ) -> ApiResult<Option<(ClusterPhase, kplane_storage::KeyValue)>> {
        let mut stored = self.durable_phase(cluster).await?;
        for _ in 0..FENCE_RECORD_WAITS {
            if stored.is_some() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            stored = self.durable_phase(cluster).await?;
        }
        Ok(stored)
    }

    /// Applies this process's own change of the move's phase of `cluster` to its table.
    fn set_own_move_phase(&self, cluster: &ClusterName, phase: Option<&ClusterPhase>) {
        let rev = self.storage.current_revision();
        self.clusters
            .table
            .set_move_phase(cluster.as_str(), phase, rev, true);
    }

    /// Applies this process's own change of the (import) phase of `cluster` to its table.
    pub(crate) fn set_own_phase(&self, cluster: &str, phase: Option<Phase>) {
        let rev = self.storage.current_revision();
        self.clusters.table.set_phase_at(cluster, phase, rev, true);
    }

    /// The work of [`Moves::unfence`](crate::cluster_states::Moves::unfence).
    pub(crate) async fn unfence_cluster(&self, cluster: &ClusterName) -> ApiResult<()> {
        match self.stored_phase_waiting(cluster).await? {
            Some((ClusterPhase::Moved { location }, _)) => {
                return Err(ApiError::from(Status::new(
                    StatusReason::Conflict,
                    format!(
                        "logical cluster \"{cluster}\" has moved to {location}: it cannot be unfenced"
                    ),
                )))
            }
            Some((ClusterPhase::Fenced, _)) => self.store_phase(cluster, None).await?,
            None => {}
        }
        // The record first: a store fence without it would refuse writes for ever.
        self.storage.fence_cluster(cluster.as_str(), false).await?;
        self.set_own_move_phase(cluster, None);
        Ok(())
    }

    /// The work of [`Moves::mark_moved`](crate::cluster_states::Moves::mark_moved).
    pub(crate) async fn mark_moved(&self, cluster: &ClusterName, location: &str) -> ApiResult<()> {
        let location = location.trim();
        let valid = (location.starts_with("https://") || location.starts_with("http://"))
            && !location.chars().any(char::is_whitespace);
        if !valid {
            return Err(ApiError::bad_request(format!(
                "the new location of a moved logical cluster must be an http(s) URL, not {location:?}"
            )));
        }
        let phase = ClusterPhase::Moved {
            location: location.to_string(),
        };
        // As stored: the fence may have been set through another replica.
        match self.stored_phase_waiting(cluster).await?.map(|(p, _)| p) {
            Some(ClusterPhase::Fenced) => {}
            Some(p) if p == phase => {}
            Some(ClusterPhase::Moved { location: other }) => {
                return Err(moved(cluster, &other));
            }
            None => {
                return Err(ApiError::from(Status::new(
                    StatusReason::Conflict,
                    format!(
                        "logical cluster \"{cluster}\" must be fenced before it is marked moved"
                    ),
                )))
            }
        }
        // The store's fence stays: writes are refused until the cluster is forgotten.
        self.store_phase(cluster, Some(&phase)).await?;
        self.set_own_move_phase(cluster, Some(&phase));
        self.enqueue_moved(cluster);
        Ok(())
    }

    /// Queues the removal of a moved cluster's keys and its Workspace's status.
    pub(crate) fn enqueue_moved(&self, cluster: &ClusterName) {
        if let Some(parent) = cluster.parent() {
            self.enqueue::<Workspaces>(Named::new(parent, cluster.base_name().to_string()));
        }
    }

    /// Drops the state of `cluster` (its Workspace is gone: the name starts afresh).
    pub(crate) async fn clear_cluster_phase(&self, cluster: &ClusterName) -> ApiResult<()> {
        if self.cluster_phase(cluster).is_some() || self.durable_phase(cluster).await?.is_some() {
            self.store_phase(cluster, None).await?;
            self.storage.fence_cluster(cluster.as_str(), false).await?;
            self.set_own_move_phase(cluster, None);
        }
        Ok(())
    }

    /// Writes (or deletes) the durable entry of `cluster`.
    async fn store_phase(
        &self,
        cluster: &ClusterName,
        phase: Option<&ClusterPhase>,
    ) -> ApiResult<()> {
        let key = phase_key(cluster);
        let current = self.storage.get(&key).await?;
        let Some(phase) = phase else {
            return match current {
                None => Ok(()),
                Some(kv) => match self
                    .storage
                    .delete(
                        key,
                        Precondition::ModRevision(kv.mod_revision),
                        Box::new(move |_| Ok(kv.value.to_vec())),
                    )
                    .await
                {
                    Ok(_) | Err(kplane_storage::Error::NotFound) => Ok(()),
                    Err(e) => Err(e.into()),
                },
            };
        };
        let bytes = serde_json::to_vec(phase).map_err(|e| ApiError::internal(e.to_string()))?;
        let pre = match &current {
            None => Precondition::MustNotExist,
            Some(kv) => Precondition::ModRevision(kv.mod_revision),
        };
        self.storage
            .put(key, pre, Box::new(move |_| Ok(bytes)))
            .await?;
        Ok(())
    }

    /// Reads the table from storage (start-up) and queues the removal of the keys of every
    /// moved cluster that still holds some.
    pub(crate) async fn load_cluster_phases(&self, page: usize) -> ApiResult<()> {
        let prefix = Prefix::resource(PHASES_CLUSTER, STATE_RESOURCE);
        let mut start_after = None;
        loop {
            let opts = ListOptions {
                start_after: start_after.take(),
                limit: Some(page.max(1)),
                ..Default::default()
            };
            let res = self.storage.list(&prefix, &opts, None).await?;
            for kv in &res.items {
                let phase = serde_json::from_slice::<ClusterPhase>(&kv.value);
                match (ClusterName::parse(&kv.key.name), phase) {
                    (Some(c), Ok(p)) => {
                        if matches!(p, ClusterPhase::Moved { .. }) {
                            self.enqueue_moved(&c);
                        }
                        self.clusters.table.set_move_phase(
                            c.as_str(),
                            Some(&p),
                            kv.mod_revision,
                            false,
                        );
                    }
                    (_, Err(e)) => {
                        tracing::warn!(cluster = %kv.key.name, error = %e, "unreadable cluster state; skipped")
                    }
                    (None, _) => {
                        tracing::warn!(cluster = %kv.key.name, "cluster state of an invalid name; skipped")
                    }
                }
            }
            match res.items.last() {
                Some(last) if res.more => start_after = Some(last.key.clone()),
                _ => return Ok(()),
            }
        }
    }
}

/// The key of the durable move phase of `cluster`.
fn phase_key(cluster: &ClusterName) -> Key {
    Key::new(PHASES_CLUSTER, STATE_RESOURCE, "", cluster.as_str())
}

/// The states of logical clusters being moved to another server (fenced, moved): what a
/// [`Registry`] offers of [`crate::cluster_states`].
#[derive(Clone, Copy, Debug)]
pub struct Moves<'a>(&'a Registry);

impl Registry {
    /// The registry's states of logical clusters being moved ([`Moves`]).
    pub fn moves(&self) -> Moves<'_> {
        Moves(self)
    }
}

impl Moves<'_> {
    /// The state of `cluster` in the move's table (`None`: served as usual).
    pub fn phase(&self, cluster: &ClusterName) -> Option<ClusterPhase> {
        self.0.cluster_phase(cluster)
    }

    /// Fences `cluster` for a move (durable; idempotent) and returns the fence revision:
    /// every write of the cluster has a revision at or below it, and writes from now on
    /// are refused with 429 until [`Registry::unfence_cluster`]. 404 for a cluster that
    /// does not exist, 410 for one that has moved, 400 for `root`.
    pub async fn fence(&self, cluster: &ClusterName) -> ApiResult<Revision> {
        self.0.fence_cluster(cluster).await
    }

    /// Lifts the fence of `cluster` (a move rolled back). Idempotent; 409 for a cluster
    /// that has moved.
    pub async fn unfence(&self, cluster: &ClusterName) -> ApiResult<()> {
        self.0.unfence_cluster(cluster).await
    }

    /// Records that `cluster` lives at `location` now (durable): from then on every request
    /// into it is a 410 naming `location`, its Workspace reports it, and its keys are
    /// removed in the background (the workspace controller; resumed at start-up). The
    /// cluster must be fenced first (so that no write is lost), or already moved to the
    /// same location (idempotent).
    pub async fn mark_moved(&self, cluster: &ClusterName, location: &str) -> ApiResult<()> {
        self.0.mark_moved(cluster, location).await
    }
}

#[cfg(test)]
mod move_tests {
    use super::table::GATE_SHARDS;
    use std::sync::Arc;

    use kplane_storage::Storage;
    use kplane_types::ClusterScope;
    use serde_json::json;

    use super::*;
    use crate::clusters::tests::{configmaps, name, registry};
    use crate::options::{ListParams, WriteParams};
    use crate::Target;

    fn open() -> Arc<dyn Storage> {
        crate::testing::memory_store()
    }

    async fn create_cm(reg: &Registry, cluster: &str, cm: &str) -> ApiResult<bytes::Bytes> {
        let obj = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": cm}});
        reg.create(&configmaps(reg, cluster), obj, &WriteParams::default())
            .await
    }

    async fn keys(storage: &Arc<dyn Storage>, cluster: &str) -> u64 {
        storage.count(&Prefix::cluster(cluster)).await.unwrap()
    }

    /// A fenced cluster refuses every kind of write with 429 and `Retry-After: 1` (its
    /// neighbours do not), serves reads, and the fence revision covers every write it
    /// took; the fence survives a restart, and lifting it lets writes in again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_fenced_cluster_refuses_writes_serves_reads_and_stays_fenced_after_a_restart() {
        let storage = open();
        {
            let (reg, _tx) = registry(storage.clone());
            reg.set_auto_create_clusters(true);
            create_cm(&reg, "root:a", "before").await.unwrap();
            create_cm(&reg, "root:ab", "before").await.unwrap();
            let fence = reg.fence_cluster(&name("root:a")).await.unwrap();
            assert_eq!(fence, storage.current_revision());
            // Idempotent: no write of the cluster in between.
            assert!(reg.fence_cluster(&name("root:a")).await.unwrap() >= fence);
            let e = create_cm(&reg, "root:a", "after").await.unwrap_err();
            assert_eq!(e.code(), 429);
            assert_eq!(e.0.retry_after, Some(1));
            assert!(
                e.0.message.contains("\"root:a\" is being moved"),
                "{}",
                e.0.message
            );
            let t = configmaps(&reg, "root:a");
            let e = reg
                .delete(&t, "before", &Default::default())
                .await
                .unwrap_err();
            assert_eq!(e.code(), 429);
            let e = reg
                .delete_collection(&t, &ListParams::default(), &Default::default())
                .await
                .unwrap_err();
            assert_eq!(e.code(), 429);
            reg.get(&t, "before").await.unwrap();
            create_cm(&reg, "root:ab", "after").await.unwrap();
            reg.check_cluster(&ClusterScope::One(name("root:a")))
                .unwrap();
        }
        let (reg, _tx) = registry(storage.clone());
        reg.load_cluster_state().await.unwrap();
        assert_eq!(reg.known_clusters(), 2);
        assert_eq!(
            reg.cluster_phase(&name("root:a")),
            Some(ClusterPhase::Fenced)
        );
        assert_eq!(
            create_cm(&reg, "root:a", "x").await.unwrap_err().code(),
            429
        );
        reg.unfence_cluster(&name("root:a")).await.unwrap();
        reg.unfence_cluster(&name("root:a")).await.unwrap();
        create_cm(&reg, "root:a", "x").await.unwrap();
        let (reg, _tx) = registry(storage.clone());
        reg.load_cluster_state().await.unwrap();
        assert_eq!(reg.cluster_phase(&name("root:a")), None);
    }

    /// Writes racing the fence either commit at or below the fence revision or are
    /// refused: none lands after it (ten times the gate's shard count of writers).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn no_write_lands_after_the_fence_revision() {
        let storage = open();
        let (reg, _tx) = registry(storage.clone());
        reg.set_auto_create_clusters(true);
        create_cm(&reg, "root:a", "first").await.unwrap();
        let mut writers = Vec::new();
        for w in 0..10 * GATE_SHARDS {
            let reg = reg.clone();
            writers.push(tokio::spawn(async move {
                let mut committed = Vec::new();
                for i in 0.. {
                    match create_cm(&reg, "root:a", &format!("w{w}-{i}")).await {
                        Ok(b) => {
                            let v: serde_json::Value = serde_json::from_slice(&b).unwrap();
                            let rv: u64 = v["metadata"]["resourceVersion"]
                                .as_str()
                                .unwrap()
                                .parse()
                                .unwrap();
                            committed.push(rv);
                        }
                        Err(e) => {
                            assert_eq!(e.code(), 429, "{}", e.0.message);
                            return committed;
                        }
                    }
                }
                committed
            }));
        }
        tokio::task::yield_now().await;
        let fence = reg.fence_cluster(&name("root:a")).await.unwrap();
        let mut total = 0;
        for w in writers {
            for rv in w.await.unwrap() {
                assert!(rv <= fence, "a write at {rv} after the fence at {fence}");
                total += 1;
            }
        }
        // Every committed write is in the cluster (none lost either).
        assert_eq!(keys(&storage, "root:a").await, total + 1 + 4 + 4 + 4);
    }

    /// Marking a cluster moved needs the fence; afterwards every request (reads too, and
    /// subtree reads) gets a 410 naming the new location, the mark survives a restart,
    /// the workspace controller removes its keys (also when resumed) and reports the move
    /// in the parent's Workspace.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_moved_cluster_answers_410_with_its_location_and_its_keys_go() {
        let storage = open();
        let to = "https://other.example:6443/clusters/root:b";
        let ws_rt;
        {
            let (reg, _tx) = registry(storage.clone());
            reg.set_external_url("https://here.example:6443");
            reg.load_cluster_state().await.unwrap();
            reg.ensure_cluster(&ClusterName::root()).await.unwrap();
            ws_rt = reg
                .builtin_catalog()
                .get("tenancy.kplane.io", "v1alpha1", "workspaces")
                .unwrap()
                .clone();
            let t = Target::new(&ClusterName::root(), ws_rt.clone(), None);
            let obj = json!({"apiVersion": "tenancy.kplane.io/v1alpha1",
                             "kind": "Workspace", "metadata": {"name": "a"}});
            reg.create(&t, obj, &WriteParams::default()).await.unwrap();
            assert!(
                crate::controllers::workspace::sync_workspace(&reg, &ClusterName::root(), "a")
                    .await
                    .unwrap()
            );
            create_cm(&reg, "root:a", "data").await.unwrap();
            let e = reg.mark_moved(&name("root:a"), to).await.unwrap_err();
            assert_eq!(e.code(), 409, "{}", e.0.message);
            assert!(e.0.message.contains("must be fenced"), "{}", e.0.message);
            reg.fence_cluster(&name("root:a")).await.unwrap();
            let e = reg
                .mark_moved(&name("root:a"), "nowhere")
                .await
                .unwrap_err();
            assert_eq!(e.code(), 400);
            reg.mark_moved(&name("root:a"), to).await.unwrap();
            reg.mark_moved(&name("root:a"), to).await.unwrap();
            let e = reg
                .mark_moved(&name("root:a"), "https://else.example")
                .await
                .unwrap_err();
            assert_eq!(e.code(), 410);
            for scope in [
                ClusterScope::One(name("root:a")),
                ClusterScope::subtree(name("root:a")),
            ] {
                let e = reg.check_cluster(&scope).unwrap_err();
                assert_eq!(e.code(), 410);
                assert_eq!(e.0.reason, StatusReason::Gone);
                assert_eq!(
                    e.0.message,
                    format!("logical cluster \"root:a\" has moved to {to}")
                );
                let json = e.0.to_json();
                assert_eq!(json["details"]["causes"][0]["field"], "location");
                assert_eq!(json["details"]["causes"][0]["message"], to);
            }
            reg.check_cluster(&ClusterScope::One(name("root:ab")))
                .unwrap_err();
            assert_eq!(
                create_cm(&reg, "root:a", "x").await.unwrap_err().code(),
                410
            );
            assert_eq!(
                reg.unfence_cluster(&name("root:a"))
                    .await
                    .unwrap_err()
                    .code(),
                409
            );
            // Killed before the controller ran: the keys are still there.
            assert!(keys(&storage, "root:a").await > 0);
        }
        let (reg, _tx) = registry(storage.clone());
        reg.set_external_url("https://here.example:6443");
        reg.load_cluster_state().await.unwrap();
        assert_eq!(
            reg.check_cluster(&ClusterScope::One(name("root:a")))
                .unwrap_err()
                .code(),
            410
        );
        // What start-up queued for it: the parent's Workspace.
        assert!(
            crate::controllers::workspace::sync_workspace(&reg, &ClusterName::root(), "a")
                .await
                .unwrap()
        );
        assert_eq!(keys(&storage, "root:a").await, 0);
        assert!(!reg.cluster_exists(&name("root:a")));
        assert_eq!(
            reg.check_cluster(&ClusterScope::One(name("root:a")))
                .unwrap_err()
                .code(),
            410
        );
        let t = Target::new(&ClusterName::root(), ws_rt, None);
        let ws: serde_json::Value =
            serde_json::from_slice(&reg.get(&t, "a").await.unwrap()).unwrap();
        assert_eq!(ws["status"]["URL"], to);
        let conds = ws["status"]["conditions"].as_array().unwrap();
        assert!(conds
            .iter()
            .any(|c| c["type"] == "Moved" && c["status"] == "True" && c["message"] == to));
        assert!(conds
            .iter()
            .any(|c| c["type"] == "Ready" && c["status"] == "False"));
        // Deleting the Workspace forgets the move: the name starts afresh.
        reg.delete(&t, "a", &Default::default()).await.unwrap();
        assert!(
            crate::controllers::workspace::sync_workspace(&reg, &ClusterName::root(), "a")
                .await
                .unwrap()
        );
        assert_eq!(reg.cluster_phase(&name("root:a")), None);
        reg.check_cluster(&ClusterScope::One(name("root:a")))
            .unwrap_err();
        assert_eq!(
            reg.check_cluster(&ClusterScope::One(name("root:a")))
                .unwrap_err()
                .code(),
            404
        );
    }
}
