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
//! A gap row ([`super::lost`]) continues the position like an event when its range of
//! lost revisions starts at or before the next revision. When it starts at or below the
//! position, this process published revisions the database lost: [`publish`] records the
//! range, closes every watcher the same way, clears the cache and moves on to the gap
//! row's revision (the position never moves back).

use std::sync::atomic::Ordering;

use super::lost::{Entry, Gap, Recent};
use super::shared::{Shared, State};
use crate::{CloseReason, Error, Key, KeyValue, Result, Revision};

/// What [`publish`] did with a page.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// Published, or already published before.
    Done,
    /// The page starts beyond the position: nothing was published.
    Deferred { position: Revision },
}

/// Publishes the entries of revisions `(after, through]` (every revision in the range,
/// in order: events and gap rows) that lie above the position.
pub(crate) fn publish(
    shared: &Shared,
    entries: Vec<Entry>,
    after: Revision,
    through: Revision,
) -> Result<Outcome> {
    let mut st = shared.publisher.lock();
    let position = shared.current.load(Ordering::Acquire);
    if through <= position {
        return Ok(Outcome::Done);
    }
    if after > position {
        return Ok(Outcome::Deferred { position });
    }
    let fresh: Vec<Entry> = entries
        .into_iter()
        .filter(|e| e.revision() > position)
        .collect();
    let mut next = position;
    for e in &fresh {
        let continues = match e {
            Entry::Event(ev) => ev.kv.mod_revision == next + 1,
            // A gap's lost range starts at or before the next revision (it may reach back
            // over revisions this process published).
            Entry::Gap(g) => g.at > next && g.from <= next + 1,
        };
        if !continues {
            return Err(Error::Corrupt(format!(
                "the log holds revision {} after {next}: revisions in between are missing",
                e.revision()
            )));
        }
        next = e.revision();
    }
    if next != through {
        return Err(Error::Corrupt(format!(
            "the log ends at revision {next}, not at {through}"
        )));
    }
    // Readers refuse the lost revisions before anything else changes.
    for e in &fresh {
        if let Entry::Gap(g) = e {
            shared.lost.record(*g);
        }
    }
    let reaching_back = fresh.iter().find_map(|e| match e {
        Entry::Gap(g) if g.from <= position => Some(*g),
        _ => None,
    });
    if let Some(g) = reaching_back {
        forget(shared, &mut st, position, g);
    }
    let mut events = Vec::with_capacity(fresh.len());
    for e in fresh {
        st.recent.push(&e);
        if let Entry::Event(ev) = e {
            st.cache.apply(&ev);
            events.push(ev);
        }
    }
    shared.hub.publish(events, through);
    shared.current.store(through, Ordering::Release);
    Ok(Outcome::Done)
}

/// This process published revisions `gap.from..=position`, which the database lost:
/// closes every watcher with [`CloseReason::TooSlow`] (the API ends their watch; resumed
/// from a lost revision it gets 410 Gone and the client relists), clears the cache and
/// forgets the lost revisions' fingerprints. The position stays: it moves on to the gap
/// row's revision as it is published.
fn forget(shared: &Shared, st: &mut State, position: Revision, gap: Gap) {
    tracing::error!(
        lost_from = gap.from,
        lost_through = position,
        gap_row = gap.at,
        "postgres storage: the database lost revisions {}..={} this process published \
         (a failover to a standby that had not received them; acknowledged writes among \
         them are lost). Closing every watcher (clients relist) and going on after \
         revision {}; reads and watches at the lost revisions get 410 Gone",
        gap.from,
        position,
        gap.at
    );
    st.cache.clear();
    st.recent.truncate_from(gap.from);
    shared.hub.restart_at(position, CloseReason::TooSlow);
    shared.rewinds.fetch_add(1, Ordering::AcqRel);
}

/// The position fell below the compaction point `compacted`: closes every watcher, clears
/// the cache and jumps to `head`, the database's revision. Does nothing if the position
/// caught up meanwhile.
pub(crate) fn resync(shared: &Shared, head: Revision, compacted: Revision) {
    let mut st = shared.publisher.lock();
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
    st.cache.clear();
    st.recent = Recent::default();
    shared.hub.restart_at(to, CloseReason::TooSlow);
    shared.current.store(to, Ordering::Release);
    shared.resyncs.fetch_add(1, Ordering::Relaxed);
}

/// What this process published lately, for [`super::lost::raise`].
pub(crate) fn recent(shared: &Shared) -> Vec<(Revision, u64)> {
    shared.publisher.lock().recent.snapshot()
}

/// The fingerprint of what this process published at `rev`, if that is its position's
/// last remembered revision.
pub(crate) fn published_at(shared: &Shared, rev: Revision) -> Option<u64> {
    shared.publisher.lock().recent.last_at(rev)
}

/// The cached state of `key`, if any (`Some(None)`: known absent).
pub(crate) fn cached(shared: &Shared, key: &Key) -> Option<Option<KeyValue>> {
    shared.publisher.lock().cache.get(key)
}

/// Stores the state of `key` a GET read at snapshot revision `as_of`, unless an event
/// above `as_of` was published already (the entry could miss it).
pub(crate) fn remember(shared: &Shared, key: &Key, value: Option<KeyValue>, as_of: Revision) {
    let mut st = shared.publisher.lock();
    if shared.current.load(Ordering::Acquire) <= as_of {
        st.cache.insert_read(key, value, as_of);
    }
}
