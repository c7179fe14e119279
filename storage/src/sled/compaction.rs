//! Compaction: dropping the oldest log generation once all of it is older than the event
//! window, and starting generations ([`super::log`]).
//!
//! The compaction point `C` moves in steps: when the last commit logged in the oldest
//! generation is at least `event_window` old, `C` becomes the last revision of that
//! generation (the next generation's first revision minus one) and the generation's tree
//! is dropped as a whole. The state at `C` stays exact: before the drop, every key's newest
//! version in the dropped generation that a reader at or above `C` may still need (it is
//! neither a tombstone nor the key's latest value) is copied into the next generation,
//! and the writer copies a latest value at or below `C` into the log when it supersedes
//! it ([`super::writer`]). Keys whose last version in the dropped generation is a tombstone
//! and that have no later version lose their wildcard index entry.
//!
//! Compaction runs in the writer thread, in bounded chunks between write groups, so it is
//! serialized with writes. `C` is published (and persisted) before anything is copied or
//! dropped, so readers and watchers that check the compacted revision after reading know
//! whether they might have missed data.

use std::ops::Bound;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::db::backend;
use super::encoding::{
    decode_key, encode_u64, index_key, index_key_bytes, meta_key, split_xref_key, version_key,
    version_logical_len, xref_key, META_COMPACTED, TAG_XREF,
};
use super::log::{Generation, Log, SizedBatch};
use super::ops::Ops;
use super::read::read_latest;
use super::shared::Shared;
use crate::{Result, Revision};

/// Most per-key index entries of the dropped generation examined per chunk.
pub(crate) const CHUNK: usize = 1024;

/// A chunk also ends after this long (checked after each key): chunks run between write
/// groups, so this bounds the delay compaction adds to a write.
const CHUNK_TIME: Duration = Duration::from_millis(4);

/// A generation drop in progress.
struct Job {
    /// The first revision of the generation being dropped.
    first: Revision,
    /// The compaction point it moves to.
    target: Revision,
    /// The last per-key index key whose key is fully handled.
    cursor: Option<Vec<u8>>,
}

pub(crate) struct Compactor {
    window: Duration,
    gen_len: Duration,
    interval: Duration,
    next_plan: Instant,
    job: Option<Job>,
}

pub(crate) fn unix_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// The length of one generation for an event window split into `generations`
/// ([`super::log::GENERATIONS`] unless configured).
pub(crate) fn generation_length(window: Duration, generations: u32) -> Duration {
    (window / generations.max(1)).max(Duration::from_millis(1))
}

impl Compactor {
    /// `log` and `compacted` as found at start-up: a drop whose compaction point was
    /// published before a restart is resumed.
    pub(crate) fn new(
        window: Duration,
        interval: Duration,
        generations: u32,
        log: &Log,
        compacted: Revision,
    ) -> Self {
        let interval = interval.max(Duration::from_millis(1));
        let gens = log.generations();
        let job = match gens.as_slice() {
            [old, next, ..] if compacted >= next.first.saturating_sub(1) => Some(Job {
                first: old.first,
                target: next.first.saturating_sub(1),
                cursor: None,
            }),
            _ => None,
        };
        Compactor {
            window,
            gen_len: generation_length(window, generations),
            interval,
            next_plan: Instant::now() + interval,
            job,
        }
    }

    /// How long the writer may sleep before compaction needs it.
    pub(crate) fn wait(&self) -> Duration {
        if self.job.is_some() {
            Duration::ZERO
        } else {
            self.next_plan.saturating_duration_since(Instant::now())
        }
    }

    /// Whether the writer should start a new generation before committing revisions
    /// after `last` (the last committed revision) into `current`.
    pub(crate) fn rotation_due(&self, current: &Generation, last: Revision) -> bool {
        last >= current.first && current.started.elapsed() >= self.gen_len
    }

    /// Starts generations on time when idle, plans a drop when due and runs one chunk of
    /// the drop in progress.
    pub(crate) fn run_due(&mut self, shared: &Shared) -> Result<()> {
        if self.job.is_none() && Instant::now() >= self.next_plan {
            self.next_plan = Instant::now() + self.interval;
            let last = shared.current_revision();
            if self.rotation_due(&shared.log.current(), last) {
                shared.log.try_rotate(last + 1)?;
            }
            self.plan(shared)?;
        }
        let Some(job) = &mut self.job else {
            // Files of dropped generations that readers held at the drop.
            return shared.log.reap();
        };
        let progress = &shared.compaction;
        progress.target.store(job.target, Ordering::Relaxed);
        progress
            .done
            .store(job.first.saturating_sub(1), Ordering::Relaxed);
        if step(shared, job)? {
            // The copies (all in the next generation) must be durable before the
            // generation goes.
            if let Some(next) = shared.log.generations().get(1) {
                next.flush().map_err(backend)?;
            }
            shared.log.drop_oldest()?;
            tracing::debug!(revision = job.target, "compaction finished");
            self.job = None;
            progress.target.store(0, Ordering::Relaxed);
            progress.done.store(0, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Publishes the drop of the oldest generation when all of it is out of the window.
    fn plan(&mut self, shared: &Shared) -> Result<()> {
        let gens = shared.log.generations();
        let [old, next, ..] = gens.as_slice() else {
            return Ok(());
        };
        let window_ms = u64::try_from(self.window.as_millis()).unwrap_or(u64::MAX);
        let cutoff = unix_millis().saturating_sub(window_ms);
        if Log::last_commit_millis(old)?.is_some_and(|t| t > cutoff) {
            return Ok(());
        }
        let target = next.first.saturating_sub(1);
        if target > shared.compacted_revision() {
            // Publish first: readers re-check it after reading.
            shared.compacted.store(target, Ordering::Release);
            let mk = meta_key(META_COMPACTED);
            let prev = shared
                .latest_store
                .insert(&mk, &encode_u64(target))
                .map_err(backend)?;
            if prev.is_none() {
                shared.add_latest_bytes((mk.len() + 8) as i64);
            }
        }
        self.job = Some(Job {
            first: old.first,
            target,
            cursor: None,
        });
        Ok(())
    }
}

/// Runs one chunk of the drop: handles the keys of the oldest generation after the cursor.
/// Returns whether every key is handled.
fn step(shared: &Shared, job: &mut Job) -> Result<bool> {
    let gens = shared.log.generations();
    let [old, next, later @ ..] = gens.as_slice() else {
        return Ok(true);
    };
    if old.first != job.first {
        return Ok(true);
    }
    let lo = match &job.cursor {
        Some(c) => Bound::Excluded(c.clone()),
        None => Bound::Included(vec![TAG_XREF]),
    };
    let hi = Bound::Excluded(vec![TAG_XREF + 1]);
    let mut carry = SizedBatch::default();
    let mut unindex = Unindex::default();
    let started = Instant::now();
    // The key being read and its newest version in this generation so far.
    let mut pending: Option<(Vec<u8>, Revision, bool)> = None;
    let mut done = true;
    for (n, entry) in old.tree.range((lo, hi)).enumerate() {
        let (k, v) = entry.map_err(backend)?;
        let (kb, rev) = split_xref_key(&k)?;
        let tombstone = v.first() == Some(&1);
        match &mut pending {
            Some((p, r, t)) if p.as_slice() == kb => {
                *r = rev;
                *t = tombstone;
            }
            _ => {
                if let Some((p, r, t)) = pending.take() {
                    handle_key(shared, old, next, later, &p, r, t, &mut carry, &mut unindex)?;
                    job.cursor = Some(xref_key(&p, Revision::MAX));
                    if n >= CHUNK || started.elapsed() >= CHUNK_TIME {
                        done = false;
                        break;
                    }
                }
                pending = Some((kb.to_vec(), rev, tombstone));
            }
        }
    }
    if done {
        if let Some((p, r, t)) = pending.take() {
            handle_key(shared, old, next, later, &p, r, t, &mut carry, &mut unindex)?;
        }
    }
    // In order, not as batches (see `ops`): a copy's version before its index entry, so a
    // reader that finds the entry finds the version; a crash part-way leaves copies of true
    // versions, and the drop (which comes after) is redone from the start.
    next.add_bytes(carry.bytes);
    carry.ops.apply(&next.tree, |_| Ok(())).map_err(backend)?;
    shared.add_latest_bytes(-unindex.bytes);
    shared
        .latest_store
        .apply(unindex.ops, |_| Ok(()))
        .map_err(backend)?;
    Ok(done)
}

/// Index entries removed from the latest database, with their logical bytes.
#[derive(Default)]
struct Unindex {
    ops: Ops,
    bytes: i64,
}

/// Decides what one key of the dropped generation needs: `rev` is its newest version there.
#[allow(clippy::too_many_arguments)]
fn handle_key(
    shared: &Shared,
    old: &Generation,
    next: &Generation,
    later: &[Generation],
    kb: &[u8],
    rev: Revision,
    tombstone: bool,
    carry: &mut SizedBatch,
    unindex: &mut Unindex,
) -> Result<()> {
    let latest_db = shared.latest();
    let latest = read_latest(&latest_db.tree, kb)?;
    if !tombstone {
        if latest.is_some_and(|r| r.mod_revision == rev) {
            // Still the latest value: the writer logs it again when it supersedes it.
            return Ok(());
        }
        // Superseded or deleted after the compaction point: readers between need it.
        if let Some(raw) = old.tree.get(version_key(rev)).map_err(backend)? {
            let logical = version_logical_len(&raw)?;
            carry.insert_logical(version_key(rev), raw, logical);
            carry.insert(xref_key(kb, rev), [0u8]);
        }
        return Ok(());
    }
    if latest.is_some() {
        return Ok(());
    }
    for gen in std::iter::once(next).chain(later) {
        let newer = gen
            .tree
            .range(xref_key(kb, 0)..=xref_key(kb, Revision::MAX))
            .next()
            .transpose()
            .map_err(backend)?;
        if newer.is_some() {
            return Ok(());
        }
    }
    let (key, _) = decode_key(kb)?;
    let ik = index_key(&index_key_bytes(&key));
    if latest_db.tree.contains_key(&ik).map_err(backend)? {
        unindex.bytes += ik.len() as i64;
    }
    unindex.ops.remove(ik);
    Ok(())
}
