//! The sled backend's tuning knobs ([`SledStorageOptions`]) and their defaults.

use std::time::Duration;

use super::db::LATEST_SEGMENT_SIZE;
use super::log;

/// Tuning knobs for [`super::SledStorage`].
#[derive(Clone, Debug)]
pub struct SledStorageOptions {
    /// How long history and the event log are kept (watch and continue resumption window).
    pub event_window: Duration,
    /// How often the compactor looks for work. Frequent planning keeps each compaction
    /// small (about one interval of writes), so history stays near the window under churn
    /// and no compaction holds the writer for long.
    pub compaction_interval: Duration,
    /// sled page cache size.
    pub cache_capacity_bytes: u64,
    /// Capacity of each watcher's channel; a watcher that lets it fill up is closed with
    /// [`crate::CloseReason::TooSlow`].
    pub watch_channel_capacity: usize,
    /// sled's own background flush interval. Commits are flushed (fsync) regardless; this
    /// only drives sled's background log maintenance.
    pub flush_every_ms: Option<u64>,
    /// Compress the records kept in the log (history) with zstd. Existing records are read
    /// in either form whatever this says.
    pub compress_history: bool,
    /// Generation trees the log keeps per event window: history is kept for between one
    /// window and one window plus a generation (default [`log::GENERATIONS`]).
    pub generations: u32,
    /// sled's segment size for a new latest database (a power of two from 256 bytes to
    /// [`MAX_SEGMENT_SIZE`](super::db::MAX_SEGMENT_SIZE), 8 MiB; default [`LATEST_SEGMENT_SIZE`]). An existing one keeps
    /// the size it was created with (sled fixes it at creation) unless that is above
    /// [`MAX_SEGMENT_SIZE`](super::db::MAX_SEGMENT_SIZE): such a database is rebuilt with this size.
    pub latest_segment_size: usize,
    /// Rebuild the latest database into a fresh one once its size on disk passes this many
    /// times its logical size (and [`SledStorageOptions::latest_rebuild_min_bytes`]); 0:
    /// never. sled does not give the space of rewritten values back by itself
    /// (docs/performance.md).
    pub latest_rebuild_factor: u64,
    /// The size on disk below which the latest database is never rebuilt.
    pub latest_rebuild_min_bytes: u64,
    /// The shortest time between two rebuilds of the latest database.
    pub latest_rebuild_interval: Duration,
}

impl Default for SledStorageOptions {
    fn default() -> Self {
        SledStorageOptions {
            event_window: Duration::from_secs(300),
            compaction_interval: Duration::from_secs(1),
            cache_capacity_bytes: 64 * 1024 * 1024,
            watch_channel_capacity: 1024,
            flush_every_ms: Some(1000),
            compress_history: true,
            generations: log::GENERATIONS,
            latest_segment_size: LATEST_SEGMENT_SIZE,
            latest_rebuild_factor: LATEST_REBUILD_FACTOR,
            latest_rebuild_min_bytes: LATEST_REBUILD_MIN_BYTES,
            latest_rebuild_interval: Duration::from_secs(30),
        }
    }
}

/// Default of [`SledStorageOptions::latest_rebuild_factor`]: the latest database is
/// rebuilt once its files pass 4x what it holds (and [`LATEST_REBUILD_MIN_BYTES`]). It was
/// off from session 12 to session 14: it had stopped the writer once and made a corrupted
/// copy once, both from sled's IO buffer offset overflowing with 16 MiB segments
/// ([`MAX_SEGMENT_SIZE`](super::db::MAX_SEGMENT_SIZE)).
pub const LATEST_REBUILD_FACTOR: u64 = 4;

/// Default of [`SledStorageOptions::latest_rebuild_min_bytes`]: a fresh latest database
/// under churn takes a few segments whatever it holds.
pub const LATEST_REBUILD_MIN_BYTES: u64 = 256 * 1024 * 1024;
