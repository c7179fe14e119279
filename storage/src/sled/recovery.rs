//! Crash recovery, on open, in two steps.
//!
//! 1. [`discard_incomplete`]: the writer writes a group's log entries one by one with the
//!    group's commit-time entry (its end marker) last, then flushes ([`super::ops`]). sled
//!    recovers a prefix of what was written, so after a crash the log may end with part
//!    of a group that was never acknowledged: its versions after the last marker are
//!    removed with their index entries.
//! 2. [`replay`]: the log's flush is the commit point and the latest database is written
//!    after it (and flushed in the background), so the latest database may lack the last
//!    committed groups, or hold part of one. They are replayed from the log, in revision
//!    order, the revision counter last.

use super::db::backend;
use super::encoding::{
    decode_version, encode_u64, index_key, index_key_bytes, latest_key, meta_key, peek_version,
    rev_of_tagged, time_key, version_key, xref_key, META_REVISION,
};
use super::log::{tree_bytes, Log};
use super::ops::Ops;
use crate::{EventType, Result, Revision};

/// Removes the log's versions written after the last group end marker (a group cut short
/// by a crash), with their index entries; returns the last committed revision in the log
/// (0 when no group was ever committed).
pub(crate) fn discard_incomplete(log: &Log) -> Result<Revision> {
    let gens = log.generations();
    let mut committed = 0;
    for gen in gens.iter().rev() {
        let last = gen
            .tree
            .range(time_key(0)..=time_key(Revision::MAX))
            .next_back()
            .transpose()
            .map_err(backend)?;
        if let Some((k, _)) = last {
            committed = rev_of_tagged(&k)?;
            break;
        }
    }
    let mut removed_any = false;
    for gen in &gens {
        // Only versions written natively into this generation can be part of the cut
        // group; copies of older versions (below `first`) are true versions and stay.
        let from = gen.first.max(committed.saturating_add(1));
        // Index entries first, in their own pass: a crash part-way leaves no index entry
        // without its version, so a rerun finds every entry still to remove through the
        // versions.
        let mut xrefs = Ops::default();
        let mut versions = Ops::default();
        let mut n = 0usize;
        for entry in gen
            .tree
            .range(version_key(from)..=version_key(Revision::MAX))
        {
            let (k, v) = entry.map_err(backend)?;
            let rev = rev_of_tagged(&k)?;
            let (_, kb) = peek_version(&v)?;
            xrefs.remove(xref_key(kb, rev));
            versions.remove(k);
            n += 1;
        }
        if n == 0 {
            continue;
        }
        tracing::warn!(
            generation = gen.first,
            after = committed,
            versions = n,
            "discarding the log entries of a write group cut short by a crash"
        );
        xrefs.apply(&gen.tree, |_| Ok(())).map_err(backend)?;
        versions.apply(&gen.tree, |_| Ok(())).map_err(backend)?;
        gen.bytes
            .store(tree_bytes(&gen.tree)?, std::sync::atomic::Ordering::Relaxed);
        removed_any = true;
    }
    if removed_any {
        log.flush_all()?;
    }
    Ok(committed)
}

/// Applies every logged version after `latest_rev` (the latest database's recorded
/// revision) to the latest database; returns the store's current revision.
pub(crate) fn replay(latest: &sled::Tree, log: &Log, latest_rev: Revision) -> Result<Revision> {
    let mut ops = Ops::default();
    let mut last = latest_rev;
    for entry in log.entries(latest_rev, Revision::MAX) {
        let (rev, raw) = entry?;
        let v = decode_version(raw)?;
        if v.event_type == EventType::Deleted {
            ops.remove(latest_key(&v.kb));
        } else {
            ops.insert(latest_key(&v.kb), v.record.encode());
            ops.insert(index_key(&index_key_bytes(&v.key)), []);
        }
        last = rev;
    }
    if last > latest_rev {
        tracing::info!(
            from = latest_rev,
            to = last,
            "replaying the log into latest values"
        );
        // Last, so that a crash during the replay leaves the counter where it was and the
        // next start replays again (every write here is idempotent).
        ops.insert_last(meta_key(META_REVISION), encode_u64(last));
        ops.apply(latest, |_| Ok(())).map_err(backend)?;
        latest.flush().map_err(backend)?;
    }
    Ok(last)
}
