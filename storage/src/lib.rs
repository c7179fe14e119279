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
pub mod traits;
pub mod types;
pub mod watch;

pub use self::claim::{Claim, ClaimKeeper, LocalClaims};
pub use self::encryption::{EncryptedStorage, Rules as EncryptionRules};
pub use self::postgres::{PostgresStorage, PostgresStorageOptions};
pub use self::sled::{SledStorage, SledStorageOptions, LATEST_SEGMENT_SIZE, MAX_WRITE_GROUP};
pub use error::{Error, Result};
pub use event_log::{EventLog, EventPage};
pub use key::{Clusters, Key, Prefix};
pub use range::{RangeScan, Tombstone, CLUSTER_DELETE_BATCH};
pub use traits::{count_by_listing, Storage, COUNT_CHUNK, STALL_AFTER};
pub use types::{
    BatchWrite, CloseReason, Encoder, Event, EventType, Filter, KeyValue, ListOptions, ListResult,
    Precondition, Revision, StorageStats, WatchEvent,
};
pub use watch::WatchReceiver;
