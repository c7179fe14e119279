//! The store's data types: the [`Revision`], stored values ([`KeyValue`]), what a write
//! carries ([`Encoder`], [`Precondition`], [`BatchWrite`]), list options and results,
//! committed changes ([`Event`]) and what a watch receives ([`WatchEvent`]), and a
//! backend's figures ([`StorageStats`]). The [`crate::Storage`] trait (`traits.rs`) speaks
//! in these types.

use std::sync::Arc;

use bytes::Bytes;

use crate::key::Key;

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

/// One write of a [`Storage::write_batch`](crate::Storage::write_batch): a put, or a delete whose `encode` produces the
/// tombstone (as for [`Storage::put`](crate::Storage::put) and [`Storage::delete`](crate::Storage::delete)).
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

/// Options for [`Storage::list`](crate::Storage::list).
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

/// The result of [`Storage::list`](crate::Storage::list).
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
