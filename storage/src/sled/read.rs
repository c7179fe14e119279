//! Read paths over the layout of [`super::encoding`]: point reads at a revision, snapshot
//! lists, counts and loading logged events for watch replay.
//!
//! sled has no snapshots, and a write group becomes visible (atomically, per sled
//! operation) before it is durable. Reads therefore never trust a scan blindly: every
//! value is checked against the requested revision `R` and, when the latest value is newer
//! than `R`, the exact version at `R` is looked up in history ([`version_at`]). Keys that a
//! concurrent write removed from the latest keyspace while a scan was running are found
//! again through the event log (the "correction" step of [`list`]).

use bytes::Bytes;

use super::encoding::{
    decode_event, decode_index_key, decode_key, event_key, history_key, key_bytes, latest_key,
    split_history_key, tag_end, Plan, Record, TAG_EVENT, TAG_HISTORY, TAG_LATEST,
};
use crate::{Error, Event, EventType, Filter, Key, KeyValue, Prefix, Result, Revision};

/// How many scanned entries between cooperative yields to the async runtime.
const YIELD_EVERY: usize = 1024;

pub(crate) fn backend(e: sled::Error) -> Error {
    Error::Backend(e.to_string())
}

/// The latest live record of an encoded key (may be newer than the durable revision).
pub(crate) fn read_latest(tree: &sled::Tree, kb: &[u8]) -> Result<Option<Record>> {
    tree.get(latest_key(kb))
        .map_err(backend)?
        .map(Record::decode)
        .transpose()
}

/// The exact value of an encoded key at revision `rev` (`None`: absent at `rev`).
///
/// Correct under concurrent writes: a version that stops being the latest is moved to
/// history in the same atomic batch, and history entries above the compaction point are
/// never removed.
pub(crate) fn version_at(tree: &sled::Tree, kb: &[u8], rev: Revision) -> Result<Option<Record>> {
    if let Some(latest) = read_latest(tree, kb)? {
        if latest.mod_revision <= rev {
            return Ok(Some(latest));
        }
    }
    let newest = tree
        .range(history_key(kb, 0)..=history_key(kb, rev))
        .next_back()
        .transpose()
        .map_err(backend)?;
    match newest {
        Some((_, raw)) => {
            let rec = Record::decode(raw)?;
            Ok((!rec.tombstone).then_some(rec))
        }
        None => Ok(None),
    }
}

/// The value a key had just before revision `rev`, if it existed then and is still
/// retained.
pub(crate) fn value_before(tree: &sled::Tree, kb: &[u8], rev: Revision) -> Result<Option<Bytes>> {
    let newest = tree
        .range(history_key(kb, 0)..history_key(kb, rev))
        .next_back()
        .transpose()
        .map_err(backend)?;
    match newest {
        Some((_, raw)) => {
            let rec = Record::decode(raw)?;
            Ok((!rec.tombstone).then_some(rec.value))
        }
        None => Ok(None),
    }
}

/// Rebuilds the event committed at `rev` for `key` (already decoded by the caller).
/// `None` when its data is gone (compacted concurrently).
pub(crate) fn load_event(
    tree: &sled::Tree,
    rev: Revision,
    event_type: EventType,
    kb: &[u8],
    key: Key,
) -> Result<Option<Event>> {
    let mut rec = None;
    if event_type != EventType::Deleted {
        rec = read_latest(tree, kb)?.filter(|r| r.mod_revision == rev);
    }
    if rec.is_none() {
        rec = tree
            .get(history_key(kb, rev))
            .map_err(backend)?
            .map(Record::decode)
            .transpose()?;
    }
    let Some(rec) = rec else {
        return Ok(None);
    };
    let prev = if event_type == EventType::Added {
        None
    } else {
        value_before(tree, kb, rev)?
    };
    Ok(Some(Event {
        event_type,
        kv: rec.into_kv(key),
        prev,
    }))
}

/// Which algorithm [`list`] uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListMode {
    /// Scan the latest keyspace; fix up keys changed after `R` through the event log
    /// tail `(R, now]`. Cheap when `R` is recent.
    Latest,
    /// Merge-scan latest and history keyspaces (every key that existed at any retained
    /// revision); fix up keys deleted while scanning through the event log after
    /// `applied_at_start` (every batch up to it was fully visible when the scan started).
    /// Used for older snapshots.
    History { applied_at_start: Revision },
}

/// Accumulates list results, applying the filter and the limit.
struct Collector<'a> {
    items: Vec<KeyValue>,
    limit: Option<usize>,
    filter: Option<Filter<'a>>,
    /// Set when the scan stopped because the limit was reached and candidates remained.
    more: bool,
    /// Entries scanned since the last yield.
    examined: usize,
}

impl<'a> Collector<'a> {
    fn new(limit: Option<usize>, filter: Option<Filter<'a>>) -> Self {
        Collector {
            items: Vec::new(),
            limit: limit.filter(|l| *l > 0),
            filter,
            more: false,
            examined: 0,
        }
    }

    fn full(&self) -> bool {
        self.limit.is_some_and(|l| self.items.len() >= l)
    }

    fn accepts(&self, kv: &KeyValue) -> bool {
        self.filter.is_none_or(|f| f(kv))
    }

    fn offer(&mut self, kv: KeyValue) {
        if self.accepts(&kv) {
            self.items.push(kv);
        }
    }

    /// Counts one scanned entry; true when the caller should yield to the runtime.
    fn tick(&mut self) -> bool {
        self.examined += 1;
        if self.examined >= YIELD_EVERY {
            self.examined = 0;
            return true;
        }
        false
    }

    /// The last key the scan looked at when it stopped early (keys after it were not
    /// examined), or `None` when the scan covered the whole range.
    fn bound(&self) -> Option<Key> {
        if self.more {
            self.items.last().map(|kv| kv.key.clone())
        } else {
            None
        }
    }

    fn finish(self) -> (Vec<KeyValue>, bool) {
        (self.items, self.more)
    }
}

/// Lists the state at revision `rev` of the keys in `prefix` after `start_after`.
/// The caller validated `rev` against the compacted and current revisions.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn list(
    tree: &sled::Tree,
    prefix: &Prefix,
    rev: Revision,
    mode: ListMode,
    start_after: Option<&Key>,
    limit: Option<usize>,
    filter: Option<Filter<'_>>,
) -> Result<(Vec<KeyValue>, bool)> {
    let plan = Plan::for_prefix(prefix);
    let mut out = Collector::new(limit, filter);
    let correction_from = match (&plan, mode) {
        (Plan::Index { .. }, _) => {
            scan_index(tree, &plan, prefix, rev, start_after, &mut out).await?;
            // The index keeps keys until compaction has removed all their history, so
            // a concurrent delete cannot hide a key from this scan: no correction needed.
            None
        }
        (Plan::Keys { .. }, ListMode::Latest) => {
            scan_latest(tree, &plan, prefix, rev, start_after, &mut out).await?;
            Some(rev)
        }
        (Plan::Keys { .. }, ListMode::History { applied_at_start }) => {
            scan_history(tree, &plan, prefix, rev, start_after, &mut out).await?;
            Some(applied_at_start)
        }
    };
    if let Some(from) = correction_from {
        correct(tree, prefix, rev, from, start_after, &mut out).await?;
    }
    Ok(out.finish())
}

async fn scan_latest(
    tree: &sled::Tree,
    plan: &Plan,
    prefix: &Prefix,
    rev: Revision,
    start_after: Option<&Key>,
    out: &mut Collector<'_>,
) -> Result<()> {
    let Some(range) = plan.range(TAG_LATEST, start_after) else {
        return Ok(());
    };
    for entry in tree.range(range) {
        let (k, v) = entry.map_err(backend)?;
        if out.full() {
            out.more = true;
            break;
        }
        if out.tick() {
            tokio::task::yield_now().await;
        }
        let kb = &k[1..];
        let (key, _) = decode_key(kb)?;
        if !prefix.contains(&key) {
            continue;
        }
        let rec = Record::decode(v)?;
        let rec = if rec.mod_revision <= rev {
            Some(rec)
        } else {
            version_at(tree, kb, rev)?
        };
        if let Some(rec) = rec {
            out.offer(rec.into_kv(key));
        }
    }
    Ok(())
}

async fn scan_history(
    tree: &sled::Tree,
    plan: &Plan,
    prefix: &Prefix,
    rev: Revision,
    start_after: Option<&Key>,
    out: &mut Collector<'_>,
) -> Result<()> {
    let (Some(l_range), Some(h_range)) = (
        plan.range(TAG_LATEST, start_after),
        plan.range(TAG_HISTORY, start_after),
    ) else {
        return Ok(());
    };
    let mut l_iter = tree.range(l_range);
    let mut h_iter = tree.range(h_range);
    let mut l_next = l_iter.next().transpose().map_err(backend)?;
    let mut h_next = h_iter.next().transpose().map_err(backend)?;
    loop {
        let h_kb = match &h_next {
            Some((hk, _)) => Some(split_history_key(hk)?.0),
            None => None,
        };
        let take_latest = match (&l_next, h_kb) {
            (None, None) => break,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (Some((lk, _)), Some(h)) => &lk[1..] <= h,
        };
        if out.full() {
            out.more = true;
            break;
        }
        if out.tick() {
            tokio::task::yield_now().await;
        }
        let (kb, latest) = if take_latest {
            match l_next.take() {
                Some((lk, lv)) => {
                    l_next = l_iter.next().transpose().map_err(backend)?;
                    (lk[1..].to_vec(), Some(lv))
                }
                None => break,
            }
        } else {
            (h_kb.map(<[u8]>::to_vec).unwrap_or_default(), None)
        };
        // Skip every history entry of this key.
        while let Some((hk, _)) = &h_next {
            if split_history_key(hk)?.0 != kb.as_slice() {
                break;
            }
            h_next = h_iter.next().transpose().map_err(backend)?;
        }
        let (key, _) = decode_key(&kb)?;
        if !prefix.contains(&key) {
            continue;
        }
        let rec = match latest.map(Record::decode).transpose()? {
            Some(rec) if rec.mod_revision <= rev => Some(rec),
            _ => version_at(tree, &kb, rev)?,
        };
        if let Some(rec) = rec {
            out.offer(rec.into_kv(key));
        }
    }
    Ok(())
}

async fn scan_index(
    tree: &sled::Tree,
    plan: &Plan,
    prefix: &Prefix,
    rev: Revision,
    start_after: Option<&Key>,
    out: &mut Collector<'_>,
) -> Result<()> {
    let Some(range) = plan.range(TAG_LATEST, start_after) else {
        return Ok(());
    };
    for entry in tree.range(range) {
        let (k, _) = entry.map_err(backend)?;
        if out.full() {
            out.more = true;
            break;
        }
        if out.tick() {
            tokio::task::yield_now().await;
        }
        let key = decode_index_key(&k[1..])?;
        if !prefix.contains(&key) {
            continue;
        }
        if let Some(rec) = version_at(tree, &key_bytes(&key), rev)? {
            out.offer(rec.into_kv(key));
        }
    }
    Ok(())
}

/// Adds the keys a scan can miss: keys removed from the latest keyspace by a write after
/// `from` (deletes racing with the scan). Every value added is exact at `rev`.
async fn correct(
    tree: &sled::Tree,
    prefix: &Prefix,
    rev: Revision,
    from: Revision,
    start_after: Option<&Key>,
    out: &mut Collector<'_>,
) -> Result<()> {
    let bound = out.bound();
    let mut extra: Vec<KeyValue> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for entry in tree.range(event_key(from.saturating_add(1))..tag_end(TAG_EVENT)) {
        let (_, v) = entry.map_err(backend)?;
        if out.tick() {
            tokio::task::yield_now().await;
        }
        let (event_type, kb) = decode_event(&v)?;
        if event_type != EventType::Deleted {
            // Only deletes remove a key from the latest keyspace.
            continue;
        }
        let (key, _) = decode_key(kb)?;
        if !prefix.contains(&key) || start_after.is_some_and(|s| key <= *s) {
            continue;
        }
        if bound.as_ref().is_some_and(|b| key > *b) {
            continue;
        }
        if out.items.binary_search_by(|kv| kv.key.cmp(&key)).is_ok() || !seen.insert(key.clone()) {
            continue;
        }
        if let Some(rec) = version_at(tree, kb, rev)? {
            let kv = rec.into_kv(key);
            if out.accepts(&kv) {
                extra.push(kv);
            }
        }
    }
    if extra.is_empty() {
        return Ok(());
    }
    out.items.extend(extra);
    out.items.sort_by(|a, b| a.key.cmp(&b.key));
    if let Some(limit) = out.limit {
        if out.items.len() > limit {
            out.items.truncate(limit);
            out.more = true;
        }
    }
    Ok(())
}

/// Counts keys under `prefix` that exist at `rev` (approximately: a key deleted by a
/// not-yet-durable write is not counted).
pub(crate) async fn count(tree: &sled::Tree, prefix: &Prefix, rev: Revision) -> Result<u64> {
    let plan = Plan::for_prefix(prefix);
    let Some(range) = plan.range(TAG_LATEST, None) else {
        return Ok(0);
    };
    let exact_range = matches!(&plan, Plan::Keys { .. })
        && (prefix.namespace.is_none() || prefix.resource.is_some())
        && (prefix.resource.is_none() || prefix.cluster.is_some());
    let mut n = 0u64;
    let mut scanned = 0usize;
    for entry in tree.range(range) {
        let (k, v) = entry.map_err(backend)?;
        scanned += 1;
        if scanned >= YIELD_EVERY {
            scanned = 0;
            tokio::task::yield_now().await;
        }
        let live = match &plan {
            Plan::Keys { .. } => {
                if !exact_range && !prefix.contains(&decode_key(&k[1..])?.0) {
                    continue;
                }
                Some(Record::decode(v)?)
            }
            Plan::Index { .. } => {
                let key = decode_index_key(&k[1..])?;
                if !prefix.contains(&key) {
                    continue;
                }
                read_latest(tree, &key_bytes(&key))?
            }
        };
        if live.is_some_and(|r| r.create_revision <= rev) {
            n += 1;
        }
    }
    Ok(n)
}
