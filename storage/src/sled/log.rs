//! The log database: every version once, keyed by the revision that wrote it, in
//! generation trees.
//!
//! A generation is one sled tree named `gen ++ be64(first revision)`; it holds the versions
//! (`V`), their per-key index (`X`) and the commit times (`T`) of the revisions from its
//! first one up to the next generation's first one, plus copies of older versions that
//! readers may still need (see [`super::compaction`]). The writer starts a new generation
//! every window / [`GENERATIONS`]; compaction drops the oldest one as a whole
//! (`Db::drop_tree`) once all of it is older than the window, so the compaction point moves
//! in steps and the log never deletes entries one by one (which is what makes sled's files
//! grow under churn, docs/performance.md).
//!
//! Readers take a snapshot of the generation list; a tree dropped under a reader reads as
//! empty: whatever a reader at or above the new compaction point needs from it was copied
//! to the next generation before the drop.
//!
//! The log also accounts for its logical size (the bytes of its entries' keys and values,
//! what sled's files hold before amplification), per generation and for the commits of the
//! last event window ([`Log::logical_bytes`], [`Log::window_bytes`]), so the data
//! directory's size can be compared with what it holds.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::Instant;

use super::encoding::{
    decode_u64, decode_version, encode_u64, rev_of_tagged, split_xref_key, time_key, version_key,
    version_logical_len, xref_key, Record, TAG_VERSION,
};
use super::ops::Ops;
use super::read::backend;
use crate::{Result, Revision};

/// Generation trees per event window: history is kept for between one window and one
/// window plus a generation.
pub(crate) const GENERATIONS: u32 = 6;

const GEN_PREFIX: &[u8] = b"gen";

/// One generation tree.
#[derive(Clone)]
pub(crate) struct Generation {
    /// The first revision written natively into this tree.
    pub first: Revision,
    pub tree: sled::Tree,
    /// When this process started the generation (or opened it).
    pub started: Instant,
    /// Logical bytes of the tree's entries (keys and values).
    pub bytes: Arc<AtomicU64>,
}

impl Generation {
    fn new(first: Revision, tree: sled::Tree, bytes: u64) -> Generation {
        Generation {
            first,
            tree,
            started: Instant::now(),
            bytes: Arc::new(AtomicU64::new(bytes)),
        }
    }

    /// Counts `bytes` more logical bytes written into this generation.
    pub(crate) fn add_bytes(&self, bytes: u64) {
        self.bytes.fetch_add(bytes, Ordering::Relaxed);
    }
}

/// Granularity of the window accounting: commits within one bucket are summed.
const WINDOW_BUCKET_MS: u64 = 100;

/// The log database and its generations, oldest first.
pub(crate) struct Log {
    pub(crate) db: sled::Db,
    gens: RwLock<Vec<Generation>>,
    /// Logical bytes logged per commit-time bucket, oldest first (this process's commits
    /// only; older buckets are pruned by [`Log::window_bytes`]).
    recent: Mutex<VecDeque<(u64, u64)>>,
}

/// The logical size of a tree: the bytes of its keys and values (log versions counted
/// with their records uncompressed).
pub(crate) fn tree_bytes(tree: &sled::Tree) -> Result<u64> {
    let mut total = 0u64;
    for entry in tree.iter() {
        let (k, v) = entry.map_err(backend)?;
        let v_len = if k.first() == Some(&TAG_VERSION) {
            version_logical_len(&v)?
        } else {
            v.len()
        };
        total += (k.len() + v_len) as u64;
    }
    Ok(total)
}

/// Log writes under construction (applied in order, never as a sled batch: see
/// [`super::ops`]) with the logical bytes they write.
#[derive(Default)]
pub(crate) struct SizedBatch {
    pub(crate) ops: Ops,
    pub(crate) bytes: u64,
}

impl SizedBatch {
    pub(crate) fn insert(&mut self, k: impl AsRef<[u8]>, v: impl AsRef<[u8]>) {
        let v_len = v.as_ref().len();
        self.insert_logical(k, v, v_len);
    }

    /// Inserts a value whose logical length is `v_len` (a compressed log version).
    pub(crate) fn insert_logical(
        &mut self,
        k: impl AsRef<[u8]>,
        v: impl AsRef<[u8]>,
        v_len: usize,
    ) {
        let (k, v) = (k.as_ref(), v.as_ref());
        self.bytes += (k.len() + v_len) as u64;
        self.ops.insert(k, v);
    }
}

fn gen_name(first: Revision) -> Vec<u8> {
    let mut name = GEN_PREFIX.to_vec();
    name.extend_from_slice(&first.to_be_bytes());
    name
}

/// Reads that race with a generation drop see the dropped tree as empty.
fn live<T>(r: sled::Result<T>, empty: T) -> Result<T> {
    match r {
        Ok(v) => Ok(v),
        Err(sled::Error::CollectionNotFound(_)) => Ok(empty),
        Err(e) => Err(backend(e)),
    }
}

impl Log {
    /// Opens the generations of `db`; creates the first one (starting at `next`) when there
    /// is none.
    pub(crate) fn open(db: sled::Db, next: Revision) -> Result<Log> {
        let mut gens = Vec::new();
        for name in db.tree_names() {
            let Some(first) = name.strip_prefix(GEN_PREFIX) else {
                continue;
            };
            let Ok(first) = decode_u64(first) else {
                continue;
            };
            let tree = db.open_tree(&name).map_err(backend)?;
            let bytes = tree_bytes(&tree)?;
            gens.push(Generation::new(first, tree, bytes));
        }
        gens.sort_by_key(|g| g.first);
        if gens.is_empty() {
            let tree = db.open_tree(gen_name(next)).map_err(backend)?;
            gens.push(Generation::new(next, tree, 0));
        }
        Ok(Log {
            db,
            gens: RwLock::new(gens),
            recent: Mutex::new(VecDeque::new()),
        })
    }

    /// Logical bytes of every retained generation.
    pub(crate) fn logical_bytes(&self) -> u64 {
        self.generations()
            .iter()
            .map(|g| g.bytes.load(Ordering::Relaxed))
            .sum()
    }

    /// Records `bytes` logged by a commit at `millis` (writer thread).
    pub(crate) fn note_commit(&self, millis: u64, bytes: u64) {
        let bucket = millis / WINDOW_BUCKET_MS;
        let mut recent = self
            .recent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        match recent.back_mut() {
            Some((b, n)) if *b == bucket => *n += bytes,
            _ => recent.push_back((bucket, bytes)),
        }
    }

    /// Logical bytes logged by this process's commits of the last `window_ms`
    /// milliseconds before `now_ms` (to within one 100 ms bucket); drops older buckets.
    pub(crate) fn window_bytes(&self, now_ms: u64, window_ms: u64) -> u64 {
        let oldest = now_ms.saturating_sub(window_ms) / WINDOW_BUCKET_MS;
        let mut recent = self
            .recent
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while recent.front().is_some_and(|(b, _)| *b < oldest) {
            recent.pop_front();
        }
        recent.iter().map(|(_, n)| n).sum()
    }

    /// The generations, oldest first.
    pub(crate) fn generations(&self) -> Vec<Generation> {
        self.gens
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The generation new revisions go to.
    pub(crate) fn current(&self) -> Generation {
        let gens = self
            .gens
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // `open` leaves at least one generation and only the oldest is ever removed
        // while a newer one exists.
        gens[gens.len() - 1].clone()
    }

    /// Starts a new generation whose first revision is `first` (writer thread only).
    pub(crate) fn rotate(&self, first: Revision) -> Result<Generation> {
        let tree = self.db.open_tree(gen_name(first)).map_err(backend)?;
        let bytes = tree_bytes(&tree)?;
        let gen = Generation::new(first, tree, bytes);
        self.gens
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .push(gen.clone());
        Ok(gen)
    }

    /// Removes the oldest generation from the list and drops its tree (compaction only;
    /// never the current generation).
    pub(crate) fn drop_oldest(&self) -> Result<()> {
        let gen = {
            let mut gens = self
                .gens
                .write()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if gens.len() < 2 {
                return Ok(());
            }
            gens.remove(0)
        };
        self.db
            .drop_tree(gen_name(gen.first))
            .map(|_| ())
            .map_err(backend)
    }

    /// The unix millis of the last commit logged in `gen`, if any.
    pub(crate) fn last_commit_millis(gen: &Generation) -> Result<Option<u64>> {
        let last = gen
            .tree
            .range(time_key(0)..=time_key(Revision::MAX))
            .next_back()
            .transpose();
        match live(last, None)? {
            Some((_, v)) => Ok(Some(decode_u64(&v)?)),
            None => Ok(None),
        }
    }

    /// The newest logged version of `kb` at or below `rev`, as (its revision, whether it is
    /// a tombstone, the generation holding it), over all generations.
    fn newest_xref(
        gens: &[Generation],
        kb: &[u8],
        rev: Revision,
    ) -> Result<Option<(Revision, bool, usize)>> {
        let mut best: Option<(Revision, bool, usize)> = None;
        for (i, gen) in gens.iter().enumerate() {
            let found = gen
                .tree
                .range(xref_key(kb, 0)..=xref_key(kb, rev))
                .next_back()
                .transpose();
            let Some((k, v)) = live(found, None)? else {
                continue;
            };
            let (_, r) = split_xref_key(&k)?;
            // On a tie (a version and its copy) the newer generation wins: it is dropped last.
            if best.is_none_or(|(b, _, _)| r >= b) {
                best = Some((r, v.first() == Some(&1), i));
            }
        }
        Ok(best)
    }

    /// The value of `kb` at `rev` according to the log alone (`None`: absent, or never
    /// logged). Exact for `rev` at or above the compaction point when the key's latest
    /// value is newer than `rev`.
    ///
    /// A generation may be dropped between finding a version's index entry in it and reading
    /// the version (a dropped tree reads as empty). Whatever a reader at or above the
    /// compaction point needs from it was copied to a newer generation before the drop, so
    /// the lookup is then repeated on a fresh list of generations; a version whose index
    /// entry exists is never reported absent because of a drop.
    pub(crate) fn version_at(&self, kb: &[u8], rev: Revision) -> Result<Option<Record>> {
        let mut dropped_under_us = 0;
        loop {
            let gens = self.generations();
            let Some((r, tombstone, i)) = Self::newest_xref(&gens, kb, rev)? else {
                return Ok(None);
            };
            if tombstone {
                return Ok(None);
            }
            if let Some(raw) = live(gens[i].tree.get(version_key(r)), None)? {
                return Ok(Some(decode_version(raw)?.record));
            }
            let still_there = self.generations().iter().any(|g| g.first == gens[i].first);
            // The entry without its version in a live tree, or drop after drop (each needs
            // a whole generation to age out, so this ends): report what the log holds.
            if still_there || dropped_under_us >= GENERATIONS {
                return Ok(None);
            }
            dropped_under_us += 1;
        }
    }

    /// The versions written after `after` and at or below `upto`, in revision order.
    pub(crate) fn entries(&self, after: Revision, upto: Revision) -> LogIter {
        LogIter {
            gens: self.generations(),
            next_gen: 0,
            current: None,
            after,
            upto,
        }
    }
}

/// Iterates the log's versions in revision order across generations (see [`Log::entries`]).
/// Copies of older versions kept in a newer generation are skipped.
pub(crate) struct LogIter {
    gens: Vec<Generation>,
    next_gen: usize,
    current: Option<sled::Iter>,
    after: Revision,
    upto: Revision,
}

impl Iterator for LogIter {
    type Item = Result<(Revision, sled::IVec)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(iter) = &mut self.current {
                match iter.next() {
                    Some(Ok((k, v))) => {
                        return Some(rev_of_tagged(&k).map(|r| (r, v)));
                    }
                    Some(Err(sled::Error::CollectionNotFound(_))) | None => {
                        self.current = None;
                    }
                    Some(Err(e)) => return Some(Err(backend(e))),
                }
            }
            let gen = self.gens.get(self.next_gen)?;
            self.next_gen += 1;
            // Native revisions of a generation end where the next one begins.
            let end = self
                .gens
                .get(self.next_gen)
                .map_or(Revision::MAX, |g| g.first.saturating_sub(1))
                .min(self.upto);
            let start = gen.first.max(self.after.saturating_add(1));
            if start > end {
                continue;
            }
            self.current = Some(gen.tree.range(version_key(start)..=version_key(end)));
        }
    }
}

/// Appends the commit time of the group ending at `rev` to `batch`: the group's end marker
/// (written last, see [`super::ops`]).
pub(crate) fn log_commit_time(batch: &mut SizedBatch, rev: Revision, millis: u64) {
    let (k, v) = (time_key(rev), encode_u64(millis));
    batch.bytes += (k.len() + v.len()) as u64;
    batch.ops.insert_last(k, v);
}
