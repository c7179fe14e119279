//! The PostgreSQL backend's tuning knobs ([`PostgresStorageOptions`]) and the GET
//! cache's trust bounds.

use std::time::Duration;

/// The GET cache answers only while the log tailer has confirmed within this many tail
/// intervals (and at least [`MIN_CACHE_TRUST`]) that it published everything the database
/// committed; otherwise GETs read the database (and fail if it is unreachable).
pub const CACHE_TRUST_INTERVALS: u32 = 10;

/// The shortest time the GET cache is trusted without a confirmed catch-up.
pub const MIN_CACHE_TRUST: Duration = Duration::from_secs(1);

/// Tuning knobs for [`super::PostgresStorage`].
#[derive(Clone, Debug)]
pub struct PostgresStorageOptions {
    /// How long history is kept (watch and continue resumption window).
    pub event_window: Duration,
    /// How often the compactor looks for history that left the window.
    pub compaction_interval: Duration,
    /// Capacity of each watcher's channel (as for sled).
    pub watch_channel_capacity: usize,
    /// Connections in the pool (the writer uses one at a time; reads share the rest).
    pub pool_size: usize,
    /// How long a request waits for a pooled connection or a new one before it fails with
    /// [`crate::Error::Timeout`].
    pub connect_timeout: Duration,
    /// The longest a statement may run (PostgreSQL's `statement_timeout`, unless the
    /// address sets one) and a connection may go unanswered; then the request fails with
    /// [`crate::Error::Timeout`] instead of hanging.
    pub statement_timeout: Duration,
    /// How often the log tailer looks for other processes' writes without a notification:
    /// the bound on their delay when a `NOTIFY` is lost or the LISTEN connection is down
    /// (with notifications they arrive in about one round trip).
    pub tail_interval: Duration,
    /// Whether the log tailer holds a `LISTEN kplane_log` connection to hear of other
    /// processes' commits at once. Off (e.g. behind a pooler in transaction mode, which
    /// cannot hold a LISTEN), they arrive within `tail_interval`.
    pub listen: bool,
    /// Bytes the GET cache may hold (keys, values and a fixed overhead per entry); 0
    /// disables it.
    pub cache_bytes: usize,
}

impl Default for PostgresStorageOptions {
    fn default() -> Self {
        PostgresStorageOptions {
            event_window: Duration::from_secs(300),
            compaction_interval: Duration::from_secs(1),
            watch_channel_capacity: 1024,
            pool_size: 16,
            connect_timeout: Duration::from_secs(10),
            statement_timeout: Duration::from_secs(30),
            tail_interval: Duration::from_millis(100),
            listen: true,
            cache_bytes: 64 << 20,
        }
    }
}
