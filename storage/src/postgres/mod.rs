//! The PostgreSQL backend: [`PostgresStorage`] keeps the store in a PostgreSQL 15+
//! database (docs/storage-postgres.md). [`store`] opens it (pool, schema migration,
//! counters) and routes the [`crate::Storage`] methods: writes to the group-commit writer
//! task ([`writer`]), reads and the event log to [`read`], watches to the shared hub
//! ([`crate::watch`]), compaction to its own task ([`compaction`]). The schema is in
//! [`schema`], statement building in [`sql`], the tuning knobs in [`options`], the state
//! the parts share in [`shared`], the error mapping in [`errors`].
//!
//! Several processes (kplane replicas) may share one database: the counter row's lock
//! serializes revision assignment ([`transaction`], [`counter`]), so the log commits in
//! revision order, and each process follows the log with its tailer ([`tail`]). Its own
//! commits and tailed ones reach its watchers, its exact GET cache ([`cache`]) and its
//! `current_revision()` through one publish path ([`publish`]). Revisions a database lost
//! in a failover stay a gap that no write reuses ([`lost`]). This file only declares the
//! modules and re-exports the public items.

mod cache;
mod claims;
mod compaction;
mod counter;
mod errors;
mod lease;
mod lost;
mod options;
mod pki;
mod publish;
mod read;
mod schema;
mod shared;
mod sql;
mod store;
mod tail;
mod transaction;
mod writer;

pub use self::cache::CacheFigures;
pub use self::options::{PostgresStorageOptions, CACHE_TRUST_INTERVALS, MIN_CACHE_TRUST};
pub use self::schema::SCHEMA_VERSION;
pub use self::store::PostgresStorage;
