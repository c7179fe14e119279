//! The one path by which committed events reach a [`super::PostgresStorage`]'s watchers,
//! its GET cache and its `current_revision()`: the writer's own groups and the log
//! tailer's pages ([`super::tail`]) both go through [`publish`], under one lock.
//!
//! The position (`Shared::current`) is the revision up to which everything was
//! published. [`publish`] takes the events of revisions `(after, through]` and publishes
//! only those above the position, in revision order, and only if they continue it
//! exactly: each must be the position plus one, and the last must be `through`. So nothing
//! is published twice, out of order or with a hole, whichever of the writer and the tailer
//! gets there first. Pages that start beyond the position are refused
//! ([`Outcome::Deferred`]); the tailer, which always reads from the position, publishes
//! them. Every check runs before anything changes: a refused page changes nothing.
//!
//! The log has no holes between the compaction point and the head: every revision is one
//! log row, and the counter row's lock makes revisions commit in revision order, so a row
//! above the position that is not visible yet belongs to a transaction that has not
//! committed, never to one that committed out of order. A hole in a page therefore means
//! a corrupt log, and fails with [`Error::Corrupt`].
//!
//! [`resync`] is the exit when the position fell below the compaction point: the events in
//! between are gone from the log, so the watchers cannot get a gapless stream. They are
//! closed with [`CloseReason::TooSlow`] (the API ends their watch; a client resuming from
//! its last revision gets 410 Gone and relists, an informer rescans), the cache is cleared
//! and the position jumps to the database's revision.
//!
//! [`rewind`] is the exit when the database went back below the position (a failover to
//! a standby that lost the last commits): the same closing and clearing, and the
//! position moves back to the database's revision.

use std::sync::atomic::Ordering;
use std::sync::{Mutex, MutexGuard};

use super::cache::Cache;
use super::Shared;
use crate::{CloseReason, Error, Event, Key, KeyValue, Result, Revision};

/// What [`publish`] did with a page.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Published, or already published before.
    Done,
    /// The page starts beyond the position: nothing was published.
    Deferred { position: Revision },
}

/// The lock of the publish path and what it guards besides the position.
pub(crate) struct Publisher {
    cache: Mutex<Cache>,
}

impl Publisher {
    pub(crate) fn new(cache_bytes: usize) -> Publisher {
        Publisher {
            cache: Mutex::new(Cache::new(cache_bytes)),
        }
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, Cache> {
        self.cache
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Publishes the events of revisions `(after, through]` (every revision in the range,
/// in order) that lie above the position.
pub(crate) fn publish(
    shared: &Shared,
    events: Vec<Event>,
    after: Revision,
    through: Revision,
) -> Result<Outcome> {
    let mut cache = shared.publisher.lock();
    let position = shared.current.load(Ordering::Acquire);
    if through <= position {
        return Ok(Outcome::Done);
    }
    if after > position {
        return Ok(Outcome::Deferred { position });
    }
    let fresh: Vec<Event> = events
        .into_iter()
        .filter(|e| e.kv.mod_revision > position)
        .collect();
    let mut next = position;
    for e in &fresh {
        if e.kv.mod_revision != next + 1 {
            return Err(Error::Corrupt(format!(
                "the log holds revision {} after {next}: revisions in between are missing",
                e.kv.mod_revision
            )));
        }
        next += 1;
    }
    if next != through {
        return Err(Error::Corrupt(format!(
            "the log ends at revision {next}, not at {through}"
        )));
    }
    for e in &fresh {
        cache.apply(e);
    }
    shared.hub.publish(fresh, through);
    shared.current.store(through, Ordering::Release);
    Ok(Outcome::Done)
}

/// The position fell below the compaction point `compacted`: closes every watcher, clears
/// the cache and jumps to `head`, the database's revision. Does nothing if the position
/// caught up meanwhile.
pub(crate) fn resync(shared: &Shared, head: Revision, compacted: Revision) {
    let mut cache = shared.publisher.lock();
    let position = shared.current.load(Ordering::Acquire);
    if position >= compacted {
        return;
    }
    let to = head.max(position);
    tracing::warn!(
        position,
        compacted,
        head = to,
        "postgres storage: this replica fell behind the compaction point; closing its \
         watchers (they resume or relist) and resuming at the database's revision"
    );
    cache.clear();
    shared.hub.restart_at(to, CloseReason::TooSlow);
    shared.current.store(to, Ordering::Release);
    shared.resyncs.fetch_add(1, Ordering::Relaxed);
}

/// The database is at `head`, below the position: it lost the revisions above `head`
/// that this process published (a failover to a standby that had not received them).
/// Logs an error naming them, closes every watcher with [`CloseReason::TooSlow`] (clients
/// relist), clears the cache, takes the database's compaction point and moves the
/// position back to `head`, so reads and writes follow the database again.
///
/// `seen` is the position and `epoch` the rewind count read before `head` was: if either
/// changed, `head` may be older than what was published since, and nothing is done (the
/// next look decides again). Returns whether it rewound.
pub(crate) fn rewind(
    shared: &Shared,
    head: Revision,
    compacted: Revision,
    seen: Revision,
    epoch: u64,
) -> bool {
    let mut cache = shared.publisher.lock();
    let position = shared.current.load(Ordering::Acquire);
    if position != seen || shared.rewinds.load(Ordering::Acquire) != epoch || head >= position {
        return false;
    }
    tracing::error!(
        lost_from = head + 1,
        lost_through = position,
        database = head,
        "postgres storage: the database went back in revisions: revisions {}..={} this \
         process published are not in it (a failover to a standby that had not received \
         them; acknowledged writes among them are lost). Closing every watcher (clients \
         relist) and following the database from revision {}",
        head + 1,
        position,
        head
    );
    cache.clear();
    shared.hub.rewind_to(head, CloseReason::TooSlow);
    shared
        .compacted
        .store(compacted.min(head), Ordering::Release);
    shared.current.store(head, Ordering::Release);
    shared.rewinds.fetch_add(1, Ordering::AcqRel);
    true
}

/// The cached state of `key`, if any (`Some(None)`: known absent).
pub(crate) fn cached(shared: &Shared, key: &Key) -> Option<Option<KeyValue>> {
    shared.publisher.lock().get(key)
}

/// Stores the state of `key` a GET read at snapshot revision `as_of`, unless an event
/// above `as_of` was published already (the entry could miss it).
pub(crate) fn remember(shared: &Shared, key: &Key, value: Option<KeyValue>, as_of: Revision) {
    let mut cache = shared.publisher.lock();
    if shared.current.load(Ordering::Acquire) <= as_of {
        cache.insert_read(key, value, as_of);
    }
}
