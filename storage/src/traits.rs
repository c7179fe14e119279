//! The storage interface: the [`Storage`] trait every backend implements and the server
//! reaches storage through, with the defaults it shares between backends
//! ([`count_by_listing`], [`STALL_AFTER`]).

use crate::claim::Claim;
use crate::error::Result;
use crate::key::{Key, Prefix};
use crate::range::{RangeScan, Tombstone};
use crate::types::{
    BatchWrite, Encoder, Filter, KeyValue, ListOptions, ListResult, Precondition, Revision,
    StorageStats,
};
use crate::watch::WatchReceiver;

/// How long a store may be stuck before [`Storage::health`] reports it (`/livez` then
/// fails, so that a supervisor restarts the process: its log is durable).
pub const STALL_AFTER: std::time::Duration = std::time::Duration::from_secs(30);

/// [`Storage::count_after`] by listing the keys [`COUNT_CHUNK`] at a time at `at`: exact,
/// for backends without a cheaper count.
pub async fn count_by_listing<S: Storage + ?Sized>(
    s: &S,
    prefix: &Prefix,
    start_after: &Key,
    at: Revision,
) -> Result<u64> {
    let mut counted = 0u64;
    let mut opts = ListOptions {
        at_revision: Some(at),
        start_after: Some(start_after.clone()),
        limit: Some(COUNT_CHUNK),
    };
    loop {
        let page = s.list(prefix, &opts, None).await?;
        counted += page.items.len() as u64;
        match page.items.last() {
            Some(last) if page.more => opts.start_after = Some(last.key.clone()),
            _ => return Ok(counted),
        }
    }
}

/// How many keys [`Storage::count_after`]'s default reads at a time.
pub const COUNT_CHUNK: usize = 1000;

/// The storage interface. The server reaches storage only through this trait.
#[async_trait::async_trait]
pub trait Storage: Send + Sync + 'static {
    /// The latest committed (durable) revision.
    fn current_revision(&self) -> Revision;

    /// Whether the store works: `Err` says why not (a writer that has not come back from
    /// one step for [`STALL_AFTER`], a store that stopped after a failed commit, a replica
    /// that has not reached its database for that long). Cheap: `/livez` and `/readyz` ask
    /// it on every probe.
    fn health(&self) -> std::result::Result<(), String> {
        Ok(())
    }

    /// The compaction point. Revisions below it are compacted: reads at them and watches
    /// from them fail with [`Error::Compacted`](crate::Error::Compacted). The state at exactly this revision is still
    /// exact, and a watch from it receives every later change (etcd semantics).
    fn compacted_revision(&self) -> Revision;

    /// Reads one key at the latest revision.
    async fn get(&self, key: &Key) -> Result<Option<KeyValue>>;

    /// Lists the keys under `prefix` in key order.
    async fn list(
        &self,
        prefix: &Prefix,
        opts: &ListOptions,
        filter: Option<Filter<'_>>,
    ) -> Result<ListResult>;

    /// Counts keys under `prefix` at the latest revision (for metrics and quotas).
    async fn count(&self, prefix: &Prefix) -> Result<u64>;

    /// Counts the keys under `prefix` strictly after `start_after` as of revision `at`:
    /// a list page's `remainingItemCount` (etcd answers it with the count of its range
    /// read). Exact at `at`, as [`Storage::list`] at that revision would see them, and
    /// linear in the keys counted; fails as such a list would ([`Error::Compacted`](crate::Error::Compacted)).
    async fn count_after(&self, prefix: &Prefix, start_after: &Key, at: Revision) -> Result<u64> {
        count_by_listing(self, prefix, start_after, at).await
    }

    /// Writes `key` if `precondition` holds. The value is produced by `encode` with the
    /// revision this write will commit at. Returns the stored value once durable.
    /// Errors: [`Error::AlreadyExists`](crate::Error::AlreadyExists), [`Error::NotFound`](crate::Error::NotFound), [`Error::Conflict`](crate::Error::Conflict).
    async fn put(&self, key: Key, precondition: Precondition, encode: Encoder) -> Result<KeyValue>;

    /// Deletes `key` if `precondition` holds. `encode` produces the tombstone value carried
    /// by the `Deleted` event (the object's last state with the delete's revision).
    /// Returns that tombstone once durable.
    async fn delete(
        &self,
        key: Key,
        precondition: Precondition,
        encode: Encoder,
    ) -> Result<KeyValue>;

    /// Commits many writes together: each is checked against its own precondition and
    /// applied in order at its own revision with its own event (exactly as the same writes
    /// sent one by one), and the ones that succeed become durable with as few flushes as
    /// the backend can manage (sled: one per [`MAX_WRITE_GROUP`](crate::MAX_WRITE_GROUP) writes). Returns one result
    /// per write, in order; a failed precondition or encoder fails that write only.
    /// Callers bound the batch: watchers receive a batch's events at once, and one whose
    /// channel cannot hold them is closed as too slow.
    async fn write_batch(&self, writes: Vec<BatchWrite>) -> Vec<Result<KeyValue>> {
        let mut out = Vec::with_capacity(writes.len());
        for w in writes {
            out.push(if w.delete {
                self.delete(w.key, w.precondition, w.encode).await
            } else {
                self.put(w.key, w.precondition, w.encode).await
            });
        }
        out
    }

    /// Deletes every key of logical cluster `cluster` (all resources and namespaces) and
    /// returns how many it deleted. Each key is deleted as by [`Storage::delete`]: at its
    /// own revision, with its own `Deleted` event carrying the value `tombstone` makes of
    /// it, so watchers and snapshot reads see the deletes like any others. The keys go
    /// in commits of at most `batch` keys (clamped to 1..=[`MAX_WRITE_GROUP`](crate::MAX_WRITE_GROUP); see
    /// [`CLUSTER_DELETE_BATCH`](crate::CLUSTER_DELETE_BATCH)), never in one large one: other writes are committed
    /// between the batches, and each batch is all-or-nothing. Resumable: after a crash or
    /// an error, calling it again deletes what is left. Keys written into the cluster
    /// while it runs may or may not be deleted (the caller stops writes first); the call
    /// returns once a batch finds nothing left to delete.
    async fn delete_cluster(
        &self,
        cluster: &str,
        batch: usize,
        tombstone: Tombstone,
    ) -> Result<u64>;

    /// Fences the writes of logical cluster `cluster` (with `fenced == false`: lifts the
    /// fence), ordered with the writes themselves, and returns the fence revision `F`:
    /// every write of a key of `cluster` that committed before it has a revision at or
    /// below `F`, and every [`Storage::put`], [`Storage::delete`] or
    /// [`Storage::write_batch`] write of such a key that would commit after it fails with
    /// [`Error::Fenced`](crate::Error::Fenced) (nothing written), in whichever process sharing the store it is
    /// made, until the fence is lifted. [`Storage::delete_cluster`] is not fenced (it
    /// removes a cluster after its move). Durable and idempotent.
    ///
    /// The default, for backends only one process can open (sled), fences nothing and
    /// returns the current revision: there the caller's in-process write gate is exact
    /// (`kplane_registry::cluster_states`). PostgreSQL keeps a `kplane_fences` row,
    /// written under the revision lock, that every write group checks under the same lock.
    async fn fence_cluster(&self, cluster: &str, fenced: bool) -> Result<Revision> {
        let _ = (cluster, fenced);
        Ok(self.current_revision())
    }

    /// The logical clusters that hold at least one key at the latest state, in key order:
    /// at most `limit` (at least 1) names strictly after `start_after` (from the first when
    /// `None`). A cluster whose keys were all deleted is not listed. Callers page through
    /// them (e.g. to load which clusters exist at start-up); sled seeks once per cluster,
    /// whatever the number of keys each holds.
    async fn clusters(&self, start_after: Option<&str>, limit: usize) -> Result<Vec<String>>;

    /// Starts a consistent scan of every key under `prefix` at revision `at` (the current
    /// revision when `None`), read `page_size` keys at a time (at least 1): an exporter
    /// streams a whole logical cluster, across resources, without holding it in memory,
    /// and every page shows the store at the same revision however it changes meanwhile.
    /// The scan holds nothing back: if it outlasts the retained window (the revision
    /// falls below the compaction point), its next page fails with [`Error::Compacted`](crate::Error::Compacted).
    /// Fails at once with [`Error::Compacted`](crate::Error::Compacted) or [`Error::FutureRevision`](crate::Error::FutureRevision) for a
    /// revision outside the window.
    async fn scan(
        &self,
        prefix: &Prefix,
        at: Option<Revision>,
        page_size: usize,
    ) -> Result<Box<dyn RangeScan>>;

    /// Starts a watch of every change under `prefix` with revision > `from`.
    /// `from` older than the compacted revision fails with [`Error::Compacted`](crate::Error::Compacted);
    /// `from` in the future waits for it. Changes already in the event log are replayed
    /// first, then live changes follow without gap or duplicate.
    /// `progress_every` asks for a [`WatchEvent::Progress`](crate::WatchEvent::Progress) at that interval when idle.
    async fn watch(
        &self,
        prefix: &Prefix,
        from: Revision,
        progress_every: Option<std::time::Duration>,
    ) -> Result<WatchReceiver>;

    /// Whether `kv`, as this store returned it, is stored in a form it would not write now
    /// (encryption at rest: a value under an older key, or in the clear): a write of the
    /// same value must then still be made (kube-apiserver's transformer `stale` flag).
    /// Backends store what they are given: `false`.
    fn stale(&self, kv: &KeyValue) -> bool {
        let _ = kv;
        false
    }

    /// Whether values of `storage_resource` (`<group>/<plural>`) are encrypted at rest
    /// (an encryption configuration whose first provider for it encrypts). Backends
    /// store what they are given: `false`.
    fn encrypts(&self, storage_resource: &str) -> bool {
        let _ = storage_resource;
        false
    }

    /// Figures for metrics (group commit, watchers). Backends without them report zeros.
    fn stats(&self) -> StorageStats {
        StorageStats::default()
    }

    /// Leadership among the processes that share this store, for the work only one of them
    /// may do at a time (the registry's writing controllers): `true` while this process
    /// holds it. The receiver changes when leadership is gained or lost; once its sender
    /// is gone it never changes again. The default, for backends only one process can
    /// open (sled), is always `true`. PostgreSQL holds a session advisory lock on a
    /// dedicated connection (`postgres/lease.rs`): lost when that connection drops, so the
    /// lock of a killed process is free at once.
    fn leadership(&self) -> tokio::sync::watch::Receiver<bool> {
        tokio::sync::watch::channel(true).1
    }

    /// Whether other processes may write this store too (PostgreSQL); `false` for a store
    /// only this process opens (sled), where no replica that does not lead drops work.
    fn shared(&self) -> bool {
        false
    }

    /// Claims `name` among the processes that share this store (`claim.rs`): `Some` guard
    /// when granted, `None` while another holder has it (in this process or another).
    /// The claim ends with [`Claim::release`] (the name is free for every process when it
    /// returns) and, a moment later, when the guard is dropped, when the store is closed
    /// or dropped, and with the process; so a name found free has nobody working on it
    /// (the registry claims an import's journal for as long as it works on the import).
    /// A claim can also be lost while held ([`Claim::is_held`] turns false, within
    /// [`Claim::grace`]).
    ///
    /// sled (one process): names held by this store's guards ([`LocalClaims`](crate::LocalClaims)).
    /// PostgreSQL: a session advisory lock on a key made from the name, held on a
    /// connection of its own for the guard's life (`postgres/claims.rs`): a killed
    /// process's session ends and frees it at once.
    async fn claim(&self, name: &str) -> Result<Option<Claim>>;

    /// Flushes everything to disk and stops accepting writes; live watches receive
    /// [`WatchEvent::Closed`](crate::WatchEvent::Closed) with [`CloseReason::ShuttingDown`](crate::CloseReason::ShuttingDown).
    async fn shutdown(&self) -> Result<()>;
}
