//! Read paths over the layout of [`super::encoding`]: point reads at a revision, snapshot
//! lists and counts.
//!
//! GET and LIST at the current revision read the latest database only. sled has no
//! snapshots, the latest database is written after the log (the log's flush is the
//! commit), and a group's entries are written one by one, not as one batch
//! ([`super::ops`]), so a read may see any part of a group that is not yet published
//! (in the log and in the latest database); reads never trust a scan blindly: every value is checked against the
//! requested revision `R` and, when the latest value is newer than `R`, the exact version
//! at `R` is looked up in the log's per-key index ([`version_at`]). Keys that were deleted
//! after `R` (or while a scan was running) are found again through the log's versions after
//! `R` (the "correction" step of [`list`]).

use super::db::backend;
use super::encoding::{
    after_cluster, decode_cluster, decode_index_key, decode_key, key_bytes, latest_key,
    peek_version, split_xref_key, Plan, Record, TAG_LATEST, TAG_XREF,
};
use super::log::Log;
use crate::{Clusters, EventType, Filter, Key, KeyValue, Prefix, Result, Revision};

/// How many scanned entries between cooperative yields to the async runtime.
const YIELD_EVERY: usize = 1024;

/// The latest live record of an encoded key (may be newer than the durable revision).
pub(crate) fn read_latest(tree: &sled::Tree, kb: &[u8]) -> Result<Option<Record>> {
    tree.get(latest_key(kb))
        .map_err(backend)?
        .map(Record::decode)
        .transpose()
}

/// The exact value of an encoded key at revision `rev` (`None`: absent at `rev`).
///
/// Correct under concurrent writes: the log is written before the latest value, and every
/// version a reader at or above the compaction point may need stays in the log.
pub(crate) fn version_at(
    latest: &sled::Tree,
    log: &Log,
    kb: &[u8],
    rev: Revision,
) -> Result<Option<Record>> {
    if let Some(rec) = read_latest(latest, kb)? {
        if rec.mod_revision <= rev {
            return Ok(Some(rec));
        }
    }
    log.version_at(kb, rev)
}

/// Which algorithm [`list`] uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ListMode {
    /// Scan the latest keyspace; fix up keys changed after `R` through the event log
    /// tail `(R, now]`. Cheap when `R` is recent.
    Latest,
    /// Merge-scan the latest keyspace and the log's per-key index (every key that existed
    /// at any retained revision); fix up keys deleted while scanning through the event log after
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
    latest: &sled::Tree,
    log: &Log,
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
            scan_index(latest, log, &plan, prefix, rev, start_after, &mut out).await?;
            // The index keeps keys until compaction has removed all their history, so
            // a concurrent delete cannot hide a key from this scan: no correction needed.
            None
        }
        (Plan::Keys { .. }, ListMode::Latest) => {
            scan_latest(latest, log, &plan, prefix, rev, start_after, &mut out).await?;
            Some(rev)
        }
        (Plan::Keys { .. }, ListMode::History { applied_at_start }) => {
            scan_history(latest, log, &plan, prefix, rev, start_after, &mut out).await?;
            Some(applied_at_start)
        }
    };
    if let Some(from) = correction_from {
        correct(latest, log, prefix, rev, from, start_after, &mut out).await?;
    }
    Ok(out.finish())
}

/// Walks the latest keyspace from `start_after` (stopping when `out` is full), offering
/// what `resolve` makes of each entry: its key, and its state at the list's revision (`None`
/// when it has none there or lies outside the prefix, which `resolve` checks before reading
/// any record).
async fn scan_keyspace(
    latest: &sled::Tree,
    plan: &Plan,
    start_after: Option<&Key>,
    out: &mut Collector<'_>,
    resolve: impl Fn(&[u8], sled::IVec) -> Result<(Key, Option<Record>)>,
) -> Result<()> {
    for range in plan.ranges(TAG_LATEST, start_after) {
        for entry in latest.range(range) {
            let (k, v) = entry.map_err(backend)?;
            if out.full() {
                out.more = true;
                return Ok(());
            }
            if out.tick() {
                tokio::task::yield_now().await;
            }
            let (key, rec) = resolve(&k[1..], v)?;
            if let Some(rec) = rec {
                out.offer(rec.into_kv(key));
            }
        }
    }
    Ok(())
}

/// The latest records, or their versions at `rev` when they changed since.
async fn scan_latest(
    latest: &sled::Tree,
    log: &Log,
    plan: &Plan,
    prefix: &Prefix,
    rev: Revision,
    start_after: Option<&Key>,
    out: &mut Collector<'_>,
) -> Result<()> {
    scan_keyspace(latest, plan, start_after, out, |kb, v| {
        let (key, _) = decode_key(kb)?;
        if !prefix.contains(&key) {
            return Ok((key, None));
        }
        let rec = Record::decode(v)?;
        let rec = if rec.mod_revision <= rev {
            Some(rec)
        } else {
            log.version_at(kb, rev)?
        };
        Ok((key, rec))
    })
    .await
}

/// One sorted source of encoded keys for [`scan_history`]: the latest keyspace (with each
/// key's latest record) or one generation's per-key index (each key once).
struct KeySource {
    iter: sled::Iter,
    xref: bool,
    head: Option<(Vec<u8>, Option<sled::IVec>)>,
}

impl KeySource {
    fn new(iter: sled::Iter, xref: bool) -> Result<KeySource> {
        let mut s = KeySource {
            iter,
            xref,
            head: None,
        };
        s.advance()?;
        Ok(s)
    }

    /// Moves to the next key (skipping further index entries of the current one).
    fn advance(&mut self) -> Result<()> {
        let prev = self.head.take().map(|(kb, _)| kb);
        loop {
            let (k, v) = match self.iter.next() {
                None | Some(Err(sled::Error::CollectionNotFound(_))) => return Ok(()),
                Some(Err(e)) => return Err(backend(e)),
                Some(Ok(entry)) => entry,
            };
            if self.xref {
                let (kb, _) = split_xref_key(&k)?;
                if prev.as_deref() == Some(kb) {
                    continue;
                }
                self.head = Some((kb.to_vec(), None));
            } else {
                self.head = Some((k[1..].to_vec(), Some(v)));
            }
            return Ok(());
        }
    }
}

async fn scan_history(
    latest: &sled::Tree,
    log: &Log,
    plan: &Plan,
    prefix: &Prefix,
    rev: Revision,
    start_after: Option<&Key>,
    out: &mut Collector<'_>,
) -> Result<()> {
    let (Some(l_range), Some(x_range)) = (
        plan.range(TAG_LATEST, start_after),
        plan.range(TAG_XREF, start_after),
    ) else {
        return Ok(());
    };
    let mut sources = vec![KeySource::new(latest.range(l_range), false)?];
    for gen in log.generations() {
        sources.push(KeySource::new(gen.tree.range(x_range.clone()), true)?);
    }
    while let Some(kb) = sources
        .iter()
        .filter_map(|s| s.head.as_ref().map(|(kb, _)| kb))
        .min()
        .cloned()
    {
        if out.full() {
            out.more = true;
            break;
        }
        if out.tick() {
            tokio::task::yield_now().await;
        }
        let mut latest_value = None;
        for s in &mut sources {
            if s.head.as_ref().is_some_and(|(h, _)| *h == kb) {
                if let Some((_, Some(v))) = &s.head {
                    latest_value = Some(v.clone());
                }
                s.advance()?;
            }
        }
        let (key, _) = decode_key(&kb)?;
        if !prefix.contains(&key) {
            continue;
        }
        let rec = match latest_value.map(Record::decode).transpose()? {
            Some(rec) if rec.mod_revision <= rev => Some(rec),
            _ => version_at(latest, log, &kb, rev)?,
        };
        if let Some(rec) = rec {
            out.offer(rec.into_kv(key));
        }
    }
    Ok(())
}

/// The wildcard index's keys, each with its version at `rev`.
async fn scan_index(
    latest: &sled::Tree,
    log: &Log,
    plan: &Plan,
    prefix: &Prefix,
    rev: Revision,
    start_after: Option<&Key>,
    out: &mut Collector<'_>,
) -> Result<()> {
    scan_keyspace(latest, plan, start_after, out, |kb, _| {
        let key = decode_index_key(kb)?;
        if !prefix.contains(&key) {
            return Ok((key, None));
        }
        let rec = version_at(latest, log, &key_bytes(&key), rev)?;
        Ok((key, rec))
    })
    .await
}

/// Adds the keys a scan can miss: keys removed from the latest keyspace by a write after
/// `from` (deletes racing with the scan). Every value added is exact at `rev`.
async fn correct(
    latest: &sled::Tree,
    log: &Log,
    prefix: &Prefix,
    rev: Revision,
    from: Revision,
    start_after: Option<&Key>,
    out: &mut Collector<'_>,
) -> Result<()> {
    let bound = out.bound();
    let mut extra: Vec<KeyValue> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for entry in log.entries(from, Revision::MAX) {
        let (_, v) = entry?;
        if out.tick() {
            tokio::task::yield_now().await;
        }
        let (event_type, kb) = peek_version(&v)?;
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
        if let Some(rec) = version_at(latest, log, kb, rev)? {
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

/// Counts the keys of one cluster's `prefix` after `start_after` that exist at `rev`, as
/// [`list`] in its latest mode finds them but without collecting them: the latest
/// keyspace (a key changed since `rev` counts if it had a version then), then the keys
/// deleted since `rev` that had one. `None` for the prefixes [`list`] reads through the
/// index (subtrees, wildcards), which the caller counts by listing. The count is exact
/// when no key of the range changed while it ran ([`touched_since`] tells).
pub(crate) async fn count_after(
    latest: &sled::Tree,
    log: &Log,
    prefix: &Prefix,
    rev: Revision,
    start_after: &Key,
) -> Result<Option<u64>> {
    let plan = Plan::for_prefix(prefix);
    let exact_range = matches!(&plan, Plan::Keys { .. })
        && (prefix.namespace.is_none() || prefix.resource.is_some())
        && matches!(prefix.cluster, Clusters::One(_));
    if !matches!(&plan, Plan::Keys { .. }) {
        return Ok(None);
    }
    let mut n = 0u64;
    let mut scanned = 0usize;
    let mut tick = || {
        scanned += 1;
        scanned.is_multiple_of(YIELD_EVERY)
    };
    for range in plan.ranges(TAG_LATEST, Some(start_after)) {
        for entry in latest.range(range) {
            let (k, v) = entry.map_err(backend)?;
            if tick() {
                tokio::task::yield_now().await;
            }
            let kb = &k[1..];
            if !exact_range && !prefix.contains(&decode_key(kb)?.0) {
                continue;
            }
            let rec = Record::decode(v)?;
            if rec.mod_revision <= rev || log.version_at(kb, rev)?.is_some() {
                n += 1;
            }
        }
    }
    let mut seen = std::collections::HashSet::new();
    for entry in log.entries(rev, Revision::MAX) {
        let (_, v) = entry?;
        if tick() {
            tokio::task::yield_now().await;
        }
        let (event_type, kb) = peek_version(&v)?;
        if event_type != EventType::Deleted {
            continue;
        }
        let (key, _) = decode_key(kb)?;
        if !prefix.contains(&key) || key <= *start_after || !seen.insert(key) {
            continue;
        }
        // A key in the latest keyspace was counted by the scan.
        if read_latest(latest, kb)?.is_none() && log.version_at(kb, rev)?.is_some() {
            n += 1;
        }
    }
    Ok(Some(n))
}

/// Whether a change committed after `applied` touched a key of `prefix` after
/// `start_after` (a count over that range may then have seen it half-way).
pub(crate) fn touched_since(
    log: &Log,
    prefix: &Prefix,
    start_after: &Key,
    applied: Revision,
) -> Result<bool> {
    for entry in log.entries(applied, Revision::MAX) {
        let (_, v) = entry?;
        let (_, kb) = peek_version(&v)?;
        let (key, _) = decode_key(kb)?;
        if prefix.contains(&key) && key > *start_after {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Counts keys under `prefix` that exist at `rev` (approximately: a key deleted by a
/// not-yet-durable write is not counted).
pub(crate) async fn count(tree: &sled::Tree, prefix: &Prefix, rev: Revision) -> Result<u64> {
    let plan = Plan::for_prefix(prefix);
    let exact_range = matches!(&plan, Plan::Keys { .. })
        && (prefix.namespace.is_none() || prefix.resource.is_some())
        && match prefix.cluster {
            Clusters::One(_) => true,
            Clusters::All => prefix.resource.is_none(),
            Clusters::Subtree(_) => false,
        };
    let mut n = 0u64;
    let mut scanned = 0usize;
    let ranges = plan.ranges(TAG_LATEST, None);
    for entry in ranges.into_iter().flat_map(|range| tree.range(range)) {
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

/// The logical clusters holding live keys in the latest keyspace, after `start_after`, at
/// most `limit`: a skip-scan that reads the first key at or after a bound, takes its
/// cluster, and seeks past that cluster's last possible key, so each cluster costs one
/// seek however many keys it holds.
pub(crate) async fn clusters(
    tree: &sled::Tree,
    start_after: Option<&str>,
    limit: usize,
) -> Result<Vec<String>> {
    let end = vec![TAG_LATEST + 1];
    let mut from = match start_after {
        Some(c) => after_cluster(TAG_LATEST, c),
        None => vec![TAG_LATEST],
    };
    let mut out = Vec::new();
    while out.len() < limit.max(1) {
        let Some(entry) = tree.range(from.clone()..end.clone()).next() else {
            break;
        };
        let (k, _) = entry.map_err(backend)?;
        let cluster = decode_cluster(k.get(1..).unwrap_or_default())?;
        from = after_cluster(TAG_LATEST, &cluster);
        out.push(cluster);
        if out.len() % YIELD_EVERY == 0 {
            tokio::task::yield_now().await;
        }
    }
    Ok(out)
}
