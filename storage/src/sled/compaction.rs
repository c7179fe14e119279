//! Compaction of history, event log and commit times older than the event window.
//!
//! The compaction point `C` is the newest revision committed at least `event_window` ago
//! (commit times are logged per write group). Compacting to `C` keeps the state at `C`
//! exact: per key, the newest version at or below `C` survives unless the latest value or a
//! tombstone supersedes it; every older version, tombstones at or below `C` and event-log
//! entries at or below `C` go. Only keys written after the previous compaction point can
//! have newly removable history, and exactly those keys appear in the event-log entries
//! being removed, so compaction never scans all history.
//!
//! Compaction runs in the writer thread, in bounded chunks between write groups, so it is
//! serialized with writes. `C` is published (and persisted in the first chunk) before
//! anything is removed, so readers and watchers that check the compacted revision after
//! reading know whether they might have missed data.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::encoding::{
    decode_event, decode_key, decode_u64, encode_u64, event_key, history_key, index_key,
    index_key_bytes, meta_key, rev_of_tagged, time_key, Record, META_COMPACTED, TAG_EVENT,
    TAG_TIME,
};
use super::read::{backend, read_latest};
use super::Shared;
use crate::{Result, Revision};

/// Most event-log entries processed per chunk.
pub(crate) const CHUNK: usize = 1024;

/// A chunk also ends after this long (checked every [`TIME_CHECK_EVERY`] entries): chunks
/// run between write groups, so this bounds the delay compaction adds to a write.
const CHUNK_TIME: Duration = Duration::from_millis(4);
const TIME_CHECK_EVERY: usize = 64;

pub(crate) struct Compactor {
    window: Duration,
    interval: Duration,
    next_plan: Instant,
    /// A compaction in progress (its point is already published).
    target: Option<Revision>,
}

pub(crate) fn unix_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl Compactor {
    /// `resume`: a compaction point that was published before a restart and may not have
    /// been fully applied.
    pub(crate) fn new(window: Duration, interval: Duration, resume: Option<Revision>) -> Self {
        let interval = interval.max(Duration::from_millis(1));
        Compactor {
            window,
            interval,
            next_plan: Instant::now() + interval,
            target: resume,
        }
    }

    /// How long the writer may sleep before compaction needs it.
    pub(crate) fn wait(&self) -> Duration {
        if self.target.is_some() {
            Duration::ZERO
        } else {
            self.next_plan.saturating_duration_since(Instant::now())
        }
    }

    /// Plans a compaction when due and runs one chunk of the compaction in progress.
    pub(crate) fn run_due(&mut self, shared: &Shared) -> Result<()> {
        if self.target.is_none() && Instant::now() >= self.next_plan {
            self.next_plan = Instant::now() + self.interval;
            let compacted = shared.compacted.load(Ordering::Acquire);
            if let Some(point) = plan(&shared.tree, self.window)? {
                if point > compacted {
                    // Publish first: readers re-check it after reading.
                    shared.compacted.store(point, Ordering::Release);
                    self.target = Some(point);
                }
            }
        }
        if let Some(target) = self.target {
            let progress = &shared.compaction;
            if progress.target.load(Ordering::Relaxed) != target {
                let first = first_event(&shared.tree, target)?.unwrap_or(target + 1);
                progress.done.store(first - 1, Ordering::Relaxed);
                progress.target.store(target, Ordering::Relaxed);
            }
            let (done, through) = step(&shared.tree, target)?;
            if done {
                tracing::debug!(revision = target, "compaction finished");
                self.target = None;
                progress.target.store(0, Ordering::Relaxed);
                progress.done.store(0, Ordering::Relaxed);
            } else {
                progress.done.store(through, Ordering::Relaxed);
            }
        }
        Ok(())
    }
}

/// The newest revision whose write group committed at least `window` ago.
fn plan(tree: &sled::Tree, window: Duration) -> Result<Option<Revision>> {
    let window_ms = u64::try_from(window.as_millis()).unwrap_or(u64::MAX);
    let cutoff = unix_millis().saturating_sub(window_ms);
    let mut point = None;
    for entry in tree.range(time_key(0)..=time_key(Revision::MAX)) {
        let (k, v) = entry.map_err(backend)?;
        if k.first() != Some(&TAG_TIME) {
            break;
        }
        if decode_u64(&v)? > cutoff {
            break;
        }
        point = Some(rev_of_tagged(&k)?);
    }
    Ok(point)
}

/// Runs one chunk of compaction to `target`. Returns whether it is complete, and the
/// last event-log revision this chunk processed.
fn step(tree: &sled::Tree, target: Revision) -> Result<(bool, Revision)> {
    let mut batch = sled::Batch::default();
    batch.insert(meta_key(META_COMPACTED), &encode_u64(target));
    let mut keys: HashSet<Vec<u8>> = HashSet::new();
    let mut n = 0;
    let mut through = 0;
    let started = Instant::now();
    let mut out_of_time = false;
    for entry in tree.range(event_key(0)..=event_key(target)) {
        let (k, v) = entry.map_err(backend)?;
        if k.first() != Some(&TAG_EVENT) {
            break;
        }
        through = rev_of_tagged(&k)?;
        let (_, kb) = decode_event(&v)?;
        if keys.insert(kb.to_vec()) {
            compact_key(tree, kb, target, &mut batch)?;
        }
        batch.remove(k);
        n += 1;
        if n >= CHUNK {
            break;
        }
        if n % TIME_CHECK_EVERY == 0 && started.elapsed() >= CHUNK_TIME {
            out_of_time = true;
            break;
        }
    }
    let done = n < CHUNK && !out_of_time;
    if done {
        for entry in tree.range(time_key(0)..=time_key(target)) {
            let (k, _) = entry.map_err(backend)?;
            batch.remove(k);
        }
    }
    tree.apply_batch(batch).map_err(backend)?;
    Ok((done, through))
}

/// Removes the history of one key that no snapshot at or after `target` can need.
fn compact_key(
    tree: &sled::Tree,
    kb: &[u8],
    target: Revision,
    batch: &mut sled::Batch,
) -> Result<()> {
    let latest_mod = read_latest(tree, kb)?.map(|r| r.mod_revision);
    let mut old = Vec::new();
    for entry in tree.range(history_key(kb, 0)..=history_key(kb, target)) {
        let (k, v) = entry.map_err(backend)?;
        old.push((k, Record::raw_is_tombstone(&v)));
    }
    let keep_newest = latest_mod.is_none_or(|m| m > target)
        && old.last().is_some_and(|(_, tombstone)| !tombstone);
    let remove = if keep_newest {
        old.len() - 1
    } else {
        old.len()
    };
    for (k, _) in &old[..remove] {
        batch.remove(k.clone());
    }
    if latest_mod.is_none() && remove == old.len() {
        let newer = tree
            .range(history_key(kb, target.saturating_add(1))..=history_key(kb, Revision::MAX))
            .next()
            .transpose()
            .map_err(backend)?;
        if newer.is_none() {
            let (key, _) = decode_key(kb)?;
            batch.remove(index_key(&index_key_bytes(&key)));
        }
    }
    Ok(())
}

/// The oldest event-log revision at or below `upto`, if any.
fn first_event(tree: &sled::Tree, upto: Revision) -> Result<Option<Revision>> {
    match tree
        .range(event_key(0)..=event_key(upto))
        .next()
        .transpose()
        .map_err(backend)?
    {
        Some((k, _)) if k.first() == Some(&TAG_EVENT) => Ok(Some(rev_of_tagged(&k)?.max(1))),
        _ => Ok(None),
    }
}

/// Whether event-log entries at or below `compacted` remain (an interrupted compaction).
pub(crate) fn unfinished(tree: &sled::Tree, compacted: Revision) -> Result<bool> {
    Ok(first_event(tree, compacted)?.is_some())
}
