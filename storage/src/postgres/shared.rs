//! The state the PostgreSQL backend's parts share ([`Shared`]): the pool, the position and
//! the compaction point, the watch hub, the publish path's lock with the GET cache it
//! guards ([`Publisher`]), the lost revision ranges and the figures for metrics.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use deadpool_postgres::Pool;

use super::cache::Cache;
use super::errors::pool_err;
use super::lost::{self, Recent};
use crate::watch::Hub;
use crate::{Error, Result, Revision};

/// Group-commit figures.
#[derive(Debug, Default)]
pub(crate) struct CommitCounters {
    pub(crate) groups: AtomicU64,
    pub(crate) writes: AtomicU64,
    pub(crate) micros: AtomicU64,
    pub(crate) max_group: AtomicU64,
}

/// Where the compactor is: the compaction point it applies and the log revision it has
/// deleted up to.
#[derive(Debug, Default)]
pub(crate) struct CompactionProgress {
    pub(crate) target: AtomicU64,
    pub(crate) done: AtomicU64,
}

/// Table sizes, refreshed by the compactor.
#[derive(Debug, Default)]
pub(crate) struct Sizes {
    pub(crate) latest_disk: AtomicU64,
    pub(crate) log_disk: AtomicU64,
    pub(crate) history_rows: AtomicU64,
}

/// State shared by the handle, the writer and compactor tasks, scans and the event log.
pub(crate) struct Shared {
    pub(crate) pool: Pool,
    /// The position: every revision up to it is published (to the hub and the cache).
    /// Written only by [`super::publish`], under its lock.
    pub(crate) current: AtomicU64,
    pub(crate) compacted: AtomicU64,
    pub(crate) closing: AtomicBool,
    pub(crate) hub: Arc<Hub>,
    pub(crate) stats: CommitCounters,
    pub(crate) compaction: CompactionProgress,
    pub(crate) sizes: Sizes,
    /// The publish path's lock and the GET cache it guards.
    pub(crate) publisher: Publisher,
    /// Wakes the log tailer.
    pub(crate) tail_wake: Arc<tokio::sync::Notify>,
    /// How often the position fell below the compaction point.
    pub(crate) resyncs: AtomicU64,
    /// How often this process found that the database lost revisions it published
    /// ([`lost`]): it closed its watchers and cleared its cache.
    pub(crate) rewinds: AtomicU64,
    /// The lost revision ranges this process knows of: reads and watches there fail.
    pub(crate) lost: lost::LostRanges,
    /// The clock of `confirmed_at`.
    pub(crate) opened: std::time::Instant,
    /// When (milliseconds after `opened`) a catch-up last started that then published
    /// everything the database had committed: the cache is that fresh.
    pub(crate) confirmed_at: AtomicU64,
    /// How long the cache may answer without a successful catch-up.
    pub(crate) cache_trust: Duration,
    /// The bound on a statement, and on a `COMMIT` ([`super::writer`]).
    pub(crate) statement_timeout: Duration,
}

impl Shared {
    pub(crate) async fn client(&self) -> Result<deadpool_postgres::Object> {
        self.pool.get().await.map_err(pool_err)
    }

    /// Milliseconds since the store opened.
    pub(crate) fn clock_millis(&self) -> u64 {
        u64::try_from(self.opened.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Whether GETs may be answered from the cache: the tailer confirmed recently that it
    /// follows the database (a replica cut off from it must not serve what it last saw).
    pub(crate) fn cache_trusted(&self) -> bool {
        let trust = u64::try_from(self.cache_trust.as_millis()).unwrap_or(u64::MAX);
        self.clock_millis()
            .saturating_sub(self.confirmed_at.load(Ordering::Acquire))
            <= trust
    }

    pub(crate) fn current_revision(&self) -> Revision {
        self.current.load(Ordering::Acquire)
    }

    pub(crate) fn compacted_revision(&self) -> Revision {
        self.compacted.load(Ordering::Acquire)
    }

    /// Fails with [`Error::Compacted`] for a revision below the compaction point or in a
    /// range of revisions the database lost ([`lost`]; `compacted` is then the gap row's
    /// revision, the first one after the range a client can read at).
    pub(crate) fn check_not_compacted(&self, rev: Revision) -> Result<()> {
        let compacted = self.compacted_revision();
        if rev < compacted {
            return Err(Error::Compacted {
                requested: rev,
                compacted,
            });
        }
        if let Some(at) = self.lost.covering(rev) {
            return Err(Error::Compacted {
                requested: rev,
                compacted: at,
            });
        }
        Ok(())
    }

    /// The revision to read at, validated against the retained window.
    pub(crate) fn read_revision(&self, requested: Option<Revision>) -> Result<Revision> {
        let current = self.current_revision();
        let rev = requested.unwrap_or(current);
        if rev > current {
            return Err(Error::FutureRevision {
                requested: rev,
                current,
            });
        }
        self.check_not_compacted(rev)?;
        Ok(rev)
    }
}

/// The lock of the publish path and what it guards besides the position.
pub(crate) struct Publisher {
    state: Mutex<State>,
}

/// What the publish lock guards: the GET cache and the last revisions published.
pub(crate) struct State {
    pub(crate) cache: Cache,
    pub(crate) recent: Recent,
}

impl Publisher {
    pub(crate) fn new(cache_bytes: usize) -> Publisher {
        Publisher {
            state: Mutex::new(State {
                cache: Cache::new(cache_bytes),
                recent: Recent::default(),
            }),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}
