//! kplane storage: a revisioned, watchable key-value store partitioned by logical cluster.
//!
//! This crate knows bytes, keys and revisions. It knows nothing about Kubernetes objects:
//! values are opaque byte strings produced by the caller (the registry), and the only
//! structure it imposes is the key layout `(cluster, resource, namespace, name)` so that one
//! logical cluster is one contiguous key range.
//!
//! The crate root is backend-neutral: the [`Storage`] trait and its types, keys, errors,
//! the watch fan-out ([`watch`]) with the [`EventLog`] seam it replays history through,
//! the whole-range operations' types ([`range`]) and, behind the `testing` feature, the
//! conformance suite every backend must pass, an in-memory store for unit tests
//! (`memory`) and a wrapper that injects failures into any store (`faults`). The
//! backends: [`sled`] (the default, one process on a local directory) and [`postgres`]
//! (a PostgreSQL database).
//!
//! Architecture invariants:
//! - One global, strictly increasing [`Revision`] for the whole store. Every committed write
//!   (create, update, delete) takes the next revision; object, history entry, event-log entry
//!   and the revision counter are committed atomically.
//! - A write is acknowledged only after it is durable (flushed to disk). Concurrent writes
//!   share one flush (group commit).
//! - Watchers are fed from one in-memory stream; a watcher that cannot keep up is closed
//!   (it receives [`WatchEvent::Closed`]) rather than slowing writers down.
//! - Reads never block writers.

pub mod claim;
pub mod encryption;
pub mod error;
pub mod event_log;
#[cfg(feature = "testing")]
pub mod faults;
pub mod io_wait;
pub mod key;
#[cfg(feature = "testing")]
pub mod memory;
pub mod postgres;
pub mod range;
pub mod sled;
#[cfg(feature = "testing")]
pub mod testing;
pub mod watch;

use std::sync::Arc;

use bytes::Bytes;

pub use self::claim::{Claim, ClaimKeeper, LocalClaims};
pub use self::encryption::{EncryptedStorage, Rules as EncryptionRules};
pub use self::postgres::{PostgresStorage, PostgresStorageOptions};
pub use self::sled::{SledStorage, SledStorageOptions, LATEST_SEGMENT_SIZE, MAX_WRITE_GROUP};
pub use error::{Error, Result};
pub use event_log::{EventLog, EventPage};
pub use key::{Clusters, Key, Prefix};
pub use range::{RangeScan, Tombstone, CLUSTER_DELETE_BATCH};

/// The store-wide revision. Every object's `metadata.resourceVersion` is one of these.
pub type Revision = u64;

/// A stored value with the revisions that describe it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyValue {
    pub key: Key,
    /// The caller-encoded object bytes, exactly as produced by the [`Encoder`].
    pub value: Bytes,
    /// Revision at which the key was (last) created.
    pub create_revision: Revision,
    /// Revision of the last write to this key (for a delete event: the delete's revision).
    pub mod_revision: Revision,
}

/// Builds the bytes to store once the writer has assigned the revision of this write,
/// so the caller can embed the revision (`metadata.resourceVersion`) in the value.
/// Returning an error aborts this write only; nothing is stored.
pub type Encoder = Box<dyn FnOnce(Revision) -> std::result::Result<Vec<u8>, String> + Send>;

/// What must hold for a write to be applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Precondition {
    /// The key must not exist (create).
    MustNotExist,
    /// The key must exist with exactly this `mod_revision` (compare-and-swap).
    ModRevision(Revision),
    /// The key must exist; any revision.
    MustExist,
}

/// One write of a [`Storage::write_batch`]: a put, or a delete whose `encode` produces the
/// tombstone (as for [`Storage::put`] and [`Storage::delete`]).
pub struct BatchWrite {
    pub key: Key,
    pub delete: bool,
    pub precondition: Precondition,
    pub encode: Encoder,
}

impl std::fmt::Debug for BatchWrite {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BatchWrite")
            .field("key", &self.key)
            .field("delete", &self.delete)
            .field("precondition", &self.precondition)
            .finish_non_exhaustive()
    }
}

/// Options for [`Storage::list`].
#[derive(Clone, Debug, Default)]
pub struct ListOptions {
    /// Read the state as of this revision (must be >= the compacted revision and
    /// <= the current revision). `None` reads the latest state.
    pub at_revision: Option<Revision>,
    /// Return only keys strictly greater than this full key (continue tokens).
    pub start_after: Option<Key>,
    /// Maximum number of items *returned* (after filtering). `None` = unlimited.
    pub limit: Option<usize>,
}

/// A caller-supplied predicate over stored values, applied inside the scan so that
/// `limit` counts matching items only (as etcd3 + the Kubernetes storage layer do).
pub type Filter<'a> = &'a (dyn Fn(&KeyValue) -> bool + Sync);

/// The result of [`Storage::list`].
#[derive(Clone, Debug, Default)]
pub struct ListResult {
    pub items: Vec<KeyValue>,
    /// The revision of the snapshot that was read (use it for continue tokens and as the
    /// list's `resourceVersion`).
    pub revision: Revision,
    /// True when more matching-or-unchecked keys remain after the last returned item.
    pub more: bool,
}

/// Kind of a change in the event stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Added,
    Modified,
    Deleted,
}

/// One committed change.
#[derive(Clone, Debug)]
pub struct Event {
    pub event_type: EventType,
    /// The new value (for `Deleted`: the tombstone value produced by the delete's encoder,
    /// i.e. the last state of the object carrying the delete's revision).
    pub kv: KeyValue,
    /// The value before this change, when known. Always set for events delivered live;
    /// may be `None` for events replayed from the persisted log after a restart.
    pub prev: Option<Bytes>,
}

/// What a watch receives.
#[derive(Clone, Debug)]
pub enum WatchEvent {
    /// Committed changes, in revision order.
    Event(Arc<Event>),
    /// A progress notification: every change up to and including this revision that
    /// matches the watch has been delivered (used for BOOKMARKs).
    Progress(Revision),
    /// The watch ended because it fell behind or the store is shutting down. The watcher
    /// should re-establish from its last revision.
    Closed(CloseReason),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CloseReason {
    /// The watcher did not keep up with the event stream.
    TooSlow,
    /// The store is shutting down.
    ShuttingDown,
}

pub use watch::WatchReceiver;

/// Operational figures of a backend, for `/metrics`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StorageStats {
    /// Durable commit groups (one fsync each).
    pub commit_groups: u64,
    /// Writes committed in those groups (writes / groups = mean group size).
    pub committed_writes: u64,
    /// Total time spent applying and flushing groups, in microseconds.
    pub commit_micros: u64,
    /// Largest group so far.
    pub max_group: u64,
    /// Registered watchers.
    pub watchers: u64,
    /// Bytes the backend's files take on disk (sled: its data file and blobs).
    pub disk_bytes: u64,
    /// The part of `disk_bytes` that holds history (sled: the log database).
    pub log_disk_bytes: u64,
    /// Logical size of the latest values and their index: the bytes of the keys and values
    /// stored, before the backend's space amplification.
    pub latest_logical_bytes: u64,
    /// Logical size of the retained history (every version kept for watches and reads at
    /// older revisions, with its per-key index and commit times): the event window plus
    /// whatever the backend keeps beyond it until it compacts.
    pub log_logical_bytes: u64,
    /// Logical size of the history committed within the last event window (since the
    /// process started): the "watch window" part of `log_logical_bytes`.
    pub window_logical_bytes: u64,
    /// Revisions below the compaction point whose history and event-log entries are not
    /// removed yet: the compactor's backlog (0 when it is idle).
    pub compaction_backlog: u64,
    /// Rows of history the backend keeps (PostgreSQL: the planner's count of the log
    /// table's rows; 0 for backends that do not count them, such as sled).
    pub history_rows: u64,
    /// GETs answered from the backend's cache of latest values (PostgreSQL; 0 on sled,
    /// which reads its local database).
    pub get_cache_hits: u64,
    /// GETs that missed that cache and read the database.
    pub get_cache_misses: u64,
}

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
    /// from them fail with [`Error::Compacted`]. The state at exactly this revision is still
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
    /// linear in the keys counted; fails as such a list would ([`Error::Compacted`]).
    async fn count_after(&self, prefix: &Prefix, start_after: &Key, at: Revision) -> Result<u64> {
        count_by_listing(self, prefix, start_after, at).await
    }

    /// Writes `key` if `precondition` holds. The value is produced by `encode` with the
    /// revision this write will commit at. Returns the stored value once durable.
    /// Errors: [`Error::AlreadyExists`], [`Error::NotFound`], [`Error::Conflict`].
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
    /// the backend can manage (sled: one per [`MAX_WRITE_GROUP`] writes). Returns one result
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
    /// in commits of at most `batch` keys (clamped to 1..=[`MAX_WRITE_GROUP`]; see
    /// [`CLUSTER_DELETE_BATCH`]), never in one large one: other writes are committed
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
    /// [`Error::Fenced`] (nothing written), in whichever process sharing the store it is
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
    /// falls below the compaction point), its next page fails with [`Error::Compacted`].
    /// Fails at once with [`Error::Compacted`] or [`Error::FutureRevision`] for a
    /// revision outside the window.
    async fn scan(
        &self,
        prefix: &Prefix,
        at: Option<Revision>,
        page_size: usize,
    ) -> Result<Box<dyn RangeScan>>;

    /// Starts a watch of every change under `prefix` with revision > `from`.
    /// `from` older than the compacted revision fails with [`Error::Compacted`];
    /// `from` in the future waits for it. Changes already in the event log are replayed
    /// first, then live changes follow without gap or duplicate.
    /// `progress_every` asks for a [`WatchEvent::Progress`] at that interval when idle.
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
    /// sled (one process): names held by this store's guards ([`LocalClaims`]).
    /// PostgreSQL: a session advisory lock on a key made from the name, held on a
    /// connection of its own for the guard's life (`postgres/claims.rs`): a killed
    /// process's session ends and frees it at once.
    async fn claim(&self, name: &str) -> Result<Option<Claim>>;

    /// Flushes everything to disk and stops accepting writes; live watches receive
    /// [`WatchEvent::Closed`] with [`CloseReason::ShuttingDown`].
    async fn shutdown(&self) -> Result<()>;
}
