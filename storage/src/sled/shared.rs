//! The state the sled backend's parts share ([`Shared`]): the databases, the published
//! revisions, the watch hub and the figures for metrics; and the snapshot list every read
//! at a revision goes through ([`Shared::list`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
#[cfg(test)]
use std::sync::Mutex;
use std::time::Duration;

use super::latest;
use super::log::Log;
#[cfg(test)]
use super::ops;
use super::read::{self, ListMode};
use crate::watch::Hub;
use crate::{Error, Filter, ListOptions, ListResult, Prefix, Result, Revision};

/// Snapshots at most this many revisions behind the current one are listed by scanning the
/// latest values and correcting through the event-log tail; older ones merge history.
pub(crate) const LATEST_SCAN_MAX_LAG: Revision = 4096;

/// State shared by the API-facing handle, the writer thread, watch receivers and replay tasks.
pub(crate) struct Shared {
    /// The latest database (replaced when it is rebuilt: take it with
    /// [`Shared::latest`]).
    pub(crate) latest_store: latest::Latest,
    /// The log's generations.
    pub(crate) log: Arc<Log>,
    /// Latest durable revision.
    pub(crate) current: AtomicU64,
    /// Every batch up to this revision is fully visible to readers (durable or not);
    /// later batches may be partly or not visible.
    pub(crate) applied: AtomicU64,
    /// Compaction point: the state at it is still exact; older revisions are gone.
    pub(crate) compacted: Arc<AtomicU64>,
    /// Set once shutdown started: new writes are refused.
    pub(crate) closing: AtomicBool,
    /// Set when a commit failed: the store refuses further writes.
    pub(crate) failed: AtomicBool,
    /// When ([`mono_millis`]) the writer thread began the work it is doing (a group,
    /// a compaction or rebuild step); 0 while it waits for work ([`crate::Storage::health`]).
    pub(crate) writer_busy_since: AtomicU64,
    pub(crate) hub: Arc<Hub>,
    /// Group-commit figures for metrics.
    pub(crate) stats: CommitCounters,
    /// Where the compaction in progress is, for metrics.
    pub(crate) compaction: CompactionProgress,
    /// Logical bytes of the latest database's tree (keys and values), for metrics.
    pub(crate) latest_bytes: AtomicU64,
    /// The event window, for the window's logical size in metrics.
    pub(crate) event_window: Duration,
    /// Test hook: the writer commits to the log but skips the latest database (a crash
    /// between the two batches).
    #[cfg(test)]
    pub(crate) skip_latest: AtomicBool,
    /// Test hook: runs before each write the writer applies to a tree (which tree, the
    /// write's index in the group); an error stops the group there, as a crash would.
    #[cfg(test)]
    pub(crate) apply_hook: Mutex<Option<ApplyHook>>,
}

/// See [`Shared::apply_hook`].
#[cfg(test)]
pub(crate) type ApplyHook = Box<dyn FnMut(ops::Target, usize) -> sled::Result<()> + Send>;

impl Shared {
    pub(crate) fn current_revision(&self) -> Revision {
        self.current.load(Ordering::Acquire)
    }

    /// The latest database in use. A reader takes its revision before this: the database
    /// it gets then holds every write up to that revision, even if a rebuild replaces it
    /// meanwhile ([`latest`]).
    pub(crate) fn latest(&self) -> Arc<latest::LatestDb> {
        self.latest_store.current()
    }

    pub(crate) fn compacted_revision(&self) -> Revision {
        self.compacted.load(Ordering::Acquire)
    }

    /// Applies a change of the latest database's logical size (writer thread only).
    pub(crate) fn add_latest_bytes(&self, delta: i64) {
        let now = self.latest_bytes.load(Ordering::Relaxed);
        let next = now.saturating_add_signed(delta);
        self.latest_bytes.store(next, Ordering::Relaxed);
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

    pub(crate) fn check_not_compacted(&self, rev: Revision) -> Result<()> {
        let compacted = self.compacted_revision();
        if rev < compacted {
            return Err(Error::Compacted {
                requested: rev,
                compacted,
            });
        }
        Ok(())
    }

    /// [`crate::Storage::list`]: a snapshot list at the requested (validated) revision.
    pub(crate) async fn list(
        &self,
        prefix: &Prefix,
        opts: &ListOptions,
        filter: Option<Filter<'_>>,
    ) -> Result<ListResult> {
        // Read before choosing the revision: every change visible to the scan that is not
        // at or below `applied_at_start` shows up in the event log after it.
        let applied_at_start = self.applied.load(Ordering::Acquire);
        let rev = self.read_revision(opts.at_revision)?;
        let latest = self.latest();
        let lag = self.current_revision().saturating_sub(rev);
        let mode = if lag <= LATEST_SCAN_MAX_LAG {
            ListMode::Latest
        } else {
            ListMode::History { applied_at_start }
        };
        let (items, more) = read::list(
            &latest.tree,
            &self.log,
            prefix,
            rev,
            mode,
            opts.start_after.as_ref(),
            opts.limit,
            filter,
        )
        .await?;
        // Compaction publishes its point before removing anything.
        self.check_not_compacted(rev)?;
        Ok(ListResult {
            items,
            revision: rev,
            more,
        })
    }
}

/// The compactor's position: `target` is the compaction point being applied, `done` the
/// last event-log revision it has processed (both 0 when idle).
#[derive(Debug, Default)]
pub(crate) struct CompactionProgress {
    pub(crate) target: AtomicU64,
    pub(crate) done: AtomicU64,
}

/// Counters the writer updates after every durable group.
#[derive(Debug, Default)]
pub(crate) struct CommitCounters {
    pub(crate) groups: AtomicU64,
    pub(crate) writes: AtomicU64,
    pub(crate) flush_micros: AtomicU64,
    pub(crate) max_group: AtomicU64,
}

/// Milliseconds on a monotonic clock (since its first use in the process), never 0.
pub(crate) fn mono_millis() -> u64 {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let start = START.get_or_init(std::time::Instant::now);
    u64::try_from(start.elapsed().as_millis())
        .unwrap_or(u64::MAX)
        .saturating_add(1)
}
