//! The sled backend: [`SledStorage`] ([`store`]) on two kinds of sled databases.
//!
//! The data directory holds `latest/`, a sled database with [`LATEST_SEGMENT_SIZE`]
//! segments (or the size it was created with), with the latest value of every key, the
//! wildcard index and the meta entries (rebuilt online into a fresh `latest.<n>` when
//! sled's files grow far beyond what it holds: [`latest`]), and `log/` (every version once, by revision, in
//! generations, each a sled database with 8 MiB segments: [`log`]). Separating the
//! short-lived latest values from the history, large segments for the log and deleting
//! whole generations are what keeps sled's files bounded under churn, and makes them
//! shrink when the write rate does (docs/performance.md).
//!
//! Everything that knows sled lives in this module: the tuning knobs ([`options`]), the
//! databases' segment sizes ([`db`]), the key layout ([`encoding`]), the log's generations
//! ([`log`]), the latest database and its rebuilds ([`latest`]), the read paths ([`read`]),
//! the state the parts share ([`shared`]), the single writer ([`writer`]) and what it is
//! asked ([`request`]), compaction ([`compaction`]), the event log the hub replays
//! ([`event_log`]), cluster deletes ([`cluster_delete`]), scans at a revision ([`scan`]),
//! crash recovery ([`recovery`]), the conversion of the older single-database format
//! ([`migrate`]), ordered writes without sled batches, which keep sled's process-wide
//! lock off so reads never wait for the writer ([`ops`]), and the store that opens and
//! routes to them ([`store`]). This file only declares them and re-exports the public
//! items.

#[cfg(test)]
mod apply_tests;
mod cluster_delete;
mod compaction;
mod compress;
mod db;
mod encoding;
mod event_log;
#[cfg(test)]
mod generation_tests;
mod latest;
#[cfg(test)]
mod latest_tests;
#[cfg(test)]
mod layout_tests;
mod log;
mod migrate;
mod ops;
mod options;
mod read;
mod recovery;
mod request;
mod scan;
mod shared;
#[cfg(test)]
mod size_tests;
mod store;
mod writer;

pub use self::db::LATEST_SEGMENT_SIZE;
pub use self::options::{SledStorageOptions, LATEST_REBUILD_FACTOR, LATEST_REBUILD_MIN_BYTES};
pub use self::request::MAX_WRITE_GROUP;
pub use self::store::SledStorage;
