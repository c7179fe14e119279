//! An in-memory [`Storage`] for unit tests (the `testing` feature): [`MemoryStorage`] keeps
//! the latest value of every key in a `BTreeMap` and the retained history as a queue of
//! versions, one per revision, under one lock. It owns nothing on disk and survives no
//! restart, so tests of reopening, crash recovery or on-disk size keep the sled backend.
//!
//! The observable behaviour is the sled backend's, and the conformance suite
//! (`testing::conformance`) checks it the same way: one global revision taken by every
//! committed write (a failed precondition or encoder takes none), the value stored is
//! exactly what the [`Encoder`] made of the write's revision, a delete stores the
//! encoder's tombstone in its event, `write_batch` applies its writes in order with their
//! own preconditions and publishes them as one group, reads at any revision from the
//! compaction point up are exact, and older ones fail with [`Error::Compacted`] (newer ones
//! with [`Error::FutureRevision`]). Watches go through the shared hub ([`crate::watch`]),
//! which replays the history through this store's [`EventLog`].
//!
//! A read at an older revision starts from the latest values and undoes the newer
//! versions of the history (each version keeps the value it replaced), so the cost is the
//! size of the prefix plus the revisions since: fine for tests, not for production, which
//! is one reason the module is only compiled with the `testing` feature. History is
//! bounded by [`MemoryStorageOptions::max_history`] revisions and by the event window;
//! [`MemoryStorage::compact_to`] moves the compaction point at once for tests of "too old"
//! resource versions.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Bound;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;

use crate::event_log::{EventLog, EventPage};
use crate::range::{ListCursor, RangeScan, Tombstone};
use crate::watch::Hub;
use crate::{
    BatchWrite, Clusters, Encoder, Error, Event, EventType, Filter, Key, KeyValue, ListOptions,
    ListResult, Precondition, Prefix, Result, Revision, Storage, StorageStats, WatchReceiver,
    MAX_WRITE_GROUP,
};

/// Tuning knobs of [`MemoryStorage`]; the defaults suit unit tests.
#[derive(Clone, Debug)]
pub struct MemoryStorageOptions {
    /// How long a version stays in the history (watch and continue resumption window), as
    /// sled's `event_window`. Compaction runs after each write group.
    pub event_window: Duration,
    /// The most revisions of history kept; older ones are compacted at the next write.
    pub max_history: usize,
    /// Capacity of each watcher's channel; a watcher that lets it fill up is closed with
    /// [`crate::CloseReason::TooSlow`].
    pub watch_channel_capacity: usize,
}

impl Default for MemoryStorageOptions {
    fn default() -> Self {
        MemoryStorageOptions {
            event_window: Duration::from_secs(300),
            max_history: 100_000,
            watch_channel_capacity: 1024,
        }
    }
}

/// One committed write, kept until compacted.
struct Version {
    event: Event,
    /// The key's value before this write (`None`: it did not exist), to read older states.
    prev: Option<KeyValue>,
    committed: Instant,
}

/// Everything behind the lock.
#[derive(Default)]
struct State {
    latest: BTreeMap<Key, KeyValue>,
    /// Versions with revisions `(compacted, current]`, one per revision, oldest first.
    history: VecDeque<Version>,
    current: Revision,
    closing: bool,
}

/// Group-commit figures, for [`Storage::stats`].
#[derive(Debug, Default)]
struct Counters {
    groups: AtomicU64,
    writes: AtomicU64,
    max_group: AtomicU64,
}

/// The shared part: the state, the revisions readable without the lock, and the hub.
struct Inner {
    state: Mutex<State>,
    current: AtomicU64,
    compacted: AtomicU64,
    hub: Arc<Hub>,
    opts: MemoryStorageOptions,
    counters: Counters,
}

/// An in-memory [`Storage`] with the sled backend's semantics; see the module docs.
pub struct MemoryStorage {
    inner: Arc<Inner>,
    claims: crate::LocalClaims,
}

impl std::fmt::Debug for MemoryStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryStorage")
            .field("current", &self.inner.current.load(Ordering::Acquire))
            .field("compacted", &self.inner.compacted.load(Ordering::Acquire))
            .finish_non_exhaustive()
    }
}

/// Whether a write may be applied to a key whose latest `mod_revision` is `current`
/// (`None`: absent), with the errors the sled writer returns.
fn check(delete: bool, pre: Precondition, current: Option<Revision>) -> Result<()> {
    match (pre, current) {
        (_, None) if delete => Err(Error::NotFound),
        (Precondition::MustNotExist, None) | (Precondition::MustExist, Some(_)) => Ok(()),
        (Precondition::MustNotExist, Some(_)) => Err(Error::AlreadyExists),
        (Precondition::MustExist | Precondition::ModRevision(_), None) => Err(Error::NotFound),
        (Precondition::ModRevision(r), Some(c)) if c == r => Ok(()),
        (Precondition::ModRevision(_), Some(c)) => Err(Error::Conflict { current: c }),
    }
}

/// The first key a prefix can hold (`None`: the first key of all).
fn lower_bound(prefix: &Prefix) -> Option<Key> {
    let (Clusters::One(c) | Clusters::Subtree(c)) = &prefix.cluster else {
        return None;
    };
    let one = matches!(prefix.cluster, Clusters::One(_));
    let resource = prefix.resource.clone().filter(|_| one).unwrap_or_default();
    let namespace = prefix
        .namespace
        .clone()
        .filter(|_| one && prefix.resource.is_some())
        .unwrap_or_default();
    Some(Key::new(c.as_str(), resource, namespace, ""))
}

/// Whether `key`, met in key order, lies past every key of `prefix`.
fn past(prefix: &Prefix, key: &Key) -> bool {
    match &prefix.cluster {
        Clusters::All => false,
        Clusters::One(c) => key.cluster != *c,
        Clusters::Subtree(c) => !key.cluster.starts_with(c.as_str()),
    }
}

/// Two iterators of values in key order, with no key in both, merged in key order.
fn merge<'a>(
    a: impl Iterator<Item = &'a KeyValue>,
    b: impl Iterator<Item = &'a KeyValue>,
) -> impl Iterator<Item = &'a KeyValue> {
    let (mut a, mut b) = (a.peekable(), b.peekable());
    std::iter::from_fn(move || match (a.peek(), b.peek()) {
        (Some(x), Some(y)) if y.key < x.key => b.next(),
        (Some(_), _) => a.next(),
        (None, _) => b.next(),
    })
}

fn key_len(k: &Key) -> u64 {
    (k.cluster.len() + k.resource.len() + k.namespace.len() + k.name.len()) as u64
}

impl State {
    /// The latest values under `prefix` after `start_after`, in key order.
    fn range<'a>(
        &'a self,
        prefix: &'a Prefix,
        start_after: Option<&Key>,
    ) -> impl Iterator<Item = &'a KeyValue> + 'a {
        let lower = lower_bound(prefix);
        let start = match (lower, start_after) {
            (Some(l), Some(a)) if l > *a => Bound::Included(l),
            (_, Some(a)) => Bound::Excluded(a.clone()),
            (Some(l), None) => Bound::Included(l),
            (None, None) => Bound::Unbounded,
        };
        self.latest
            .range((start, Bound::Unbounded))
            .take_while(|(k, _)| !past(prefix, k))
            .filter(|(k, _)| prefix.contains(k))
            .map(|(_, kv)| kv)
    }

    /// The state at `rev` (validated) of the keys under `prefix` after `start_after`, in
    /// key order: the latest values with every version newer than `rev` undone. Lazy, so
    /// that a page costs its own length plus the revisions since `rev`.
    fn snapshot<'a>(
        &'a self,
        prefix: &'a Prefix,
        rev: Revision,
        start_after: Option<&Key>,
    ) -> impl Iterator<Item = &'a KeyValue> + 'a {
        let mut undone: BTreeMap<&'a Key, Option<&'a KeyValue>> = BTreeMap::new();
        for v in self
            .history
            .iter()
            .rev()
            .take_while(|v| v.event.kv.mod_revision > rev)
        {
            let k = &v.event.kv.key;
            if prefix.contains(k) && start_after.is_none_or(|a| k > a) {
                // Newest first: what remains is the value before the oldest newer write.
                undone.insert(k, v.prev.as_ref());
            }
        }
        let older: Vec<&KeyValue> = undone.values().filter_map(|v| *v).collect();
        let latest = self
            .range(prefix, start_after)
            .filter(move |kv| !undone.contains_key(&kv.key));
        merge(latest, older.into_iter())
    }

    /// Applies one write at the next revision; returns the stored value and its event.
    fn apply(&mut self, w: BatchWrite) -> Result<(KeyValue, Event, Option<KeyValue>)> {
        let prev = self.latest.get(&w.key);
        check(w.delete, w.precondition, prev.map(|kv| kv.mod_revision))?;
        let rev = self.current + 1;
        let value = Bytes::from((w.encode)(rev).map_err(Error::Encode)?);
        let prev = if w.delete {
            self.latest.remove(&w.key)
        } else {
            self.latest.get(&w.key).cloned()
        };
        let kv = KeyValue {
            key: w.key,
            value,
            create_revision: prev.as_ref().map_or(rev, |p| p.create_revision),
            mod_revision: rev,
        };
        if !w.delete {
            self.latest.insert(kv.key.clone(), kv.clone());
        }
        self.current = rev;
        let event_type = match (&prev, w.delete) {
            (_, true) => EventType::Deleted,
            (Some(_), false) => EventType::Modified,
            (None, false) => EventType::Added,
        };
        let event = Event {
            event_type,
            kv: kv.clone(),
            prev: prev.as_ref().map(|p| p.value.clone()),
        };
        Ok((kv, event, prev))
    }
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Inner {
    fn compacted_revision(&self) -> Revision {
        self.compacted.load(Ordering::Acquire)
    }

    /// The revision to read at, validated against the retained window.
    fn read_revision(&self, st: &State, requested: Option<Revision>) -> Result<Revision> {
        let rev = requested.unwrap_or(st.current);
        if rev > st.current {
            return Err(Error::FutureRevision {
                requested: rev,
                current: st.current,
            });
        }
        let compacted = self.compacted_revision();
        if rev < compacted {
            return Err(Error::Compacted {
                requested: rev,
                compacted,
            });
        }
        Ok(rev)
    }

    /// Applies `writes` in order as one group: each its own precondition, encoder and
    /// revision; the ones applied are published together.
    fn write_group(&self, writes: Vec<BatchWrite>) -> Vec<Result<KeyValue>> {
        let mut st = lock(&self.state);
        if st.closing {
            return writes.iter().map(|_| Err(Error::ShuttingDown)).collect();
        }
        let now = Instant::now();
        let mut events = Vec::new();
        let mut out = Vec::with_capacity(writes.len());
        for w in writes {
            out.push(st.apply(w).map(|(kv, event, prev)| {
                events.push(event.clone());
                st.history.push_back(Version {
                    event,
                    prev,
                    committed: now,
                });
                kv
            }));
        }
        self.publish(&mut st, events);
        out
    }

    /// Counts a committed group, publishes it to watchers and compacts what is due, all
    /// under the state lock so that groups are published one at a time in revision order.
    fn publish(&self, st: &mut State, events: Vec<Event>) {
        if events.is_empty() {
            return;
        }
        let n = events.len() as u64;
        self.counters.groups.fetch_add(1, Ordering::Relaxed);
        self.counters.writes.fetch_add(n, Ordering::Relaxed);
        self.counters.max_group.fetch_max(n, Ordering::Relaxed);
        self.current.store(st.current, Ordering::Release);
        self.hub.publish(events, st.current);
        let now = Instant::now();
        let window = self.opts.event_window;
        let max = self.opts.max_history;
        self.compact_while(st, |len, v| {
            len > max || now.saturating_duration_since(v.committed) >= window
        });
    }

    /// Drops the oldest versions while `due(history length, oldest)` says so; the
    /// compaction point becomes the revision of the last one dropped.
    fn compact_while(&self, st: &mut State, mut due: impl FnMut(usize, &Version) -> bool) {
        while let Some(front) = st.history.front() {
            if !due(st.history.len(), front) {
                break;
            }
            let rev = front.event.kv.mod_revision;
            self.compacted.fetch_max(rev, Ordering::AcqRel);
            st.history.pop_front();
        }
    }

    fn list(
        &self,
        prefix: &Prefix,
        opts: &ListOptions,
        filter: Option<Filter<'_>>,
    ) -> Result<ListResult> {
        let st = lock(&self.state);
        let rev = self.read_revision(&st, opts.at_revision)?;
        let limit = opts.limit.filter(|l| *l > 0);
        let mut items = Vec::new();
        let mut more = false;
        for kv in st.snapshot(prefix, rev, opts.start_after.as_ref()) {
            if limit.is_some_and(|l| items.len() >= l) {
                more = true;
                break;
            }
            if filter.is_none_or(|f| f(kv)) {
                items.push(kv.clone());
            }
        }
        Ok(ListResult {
            items,
            revision: rev,
            more,
        })
    }

    /// One batch of [`Storage::delete_cluster`]: deletes the first `limit` keys of
    /// `cluster` in one group; returns how many it deleted and whether it was full.
    fn delete_cluster_batch(
        &self,
        cluster: &str,
        limit: usize,
        tombstone: &Tombstone,
    ) -> Result<(u64, bool)> {
        let prefix = Prefix::cluster(cluster);
        let writes: Vec<BatchWrite> = {
            let st = lock(&self.state);
            if st.closing {
                return Err(Error::ShuttingDown);
            }
            st.range(&prefix, None)
                .take(limit)
                .map(|kv| {
                    let kv = kv.clone();
                    let tombstone = tombstone.clone();
                    BatchWrite {
                        key: kv.key.clone(),
                        delete: true,
                        precondition: Precondition::ModRevision(kv.mod_revision),
                        encode: Box::new(move |rev| tombstone(&kv, rev)),
                    }
                })
                .collect()
        };
        let full = writes.len() >= limit;
        let mut deleted = 0;
        let mut more = full;
        let mut error = None;
        for r in self.write_group(writes) {
            match r {
                Ok(_) => deleted += 1,
                // Deleted meanwhile.
                Err(Error::NotFound) => {}
                // Changed meanwhile: the next batch sees it again.
                Err(Error::Conflict { .. }) => more = true,
                Err(e) => {
                    error.get_or_insert(e);
                }
            }
        }
        match error {
            Some(e) => Err(e),
            None => Ok((deleted, more)),
        }
    }
}

#[async_trait::async_trait]
impl EventLog for Inner {
    async fn read(
        &self,
        prefix: &Prefix,
        after: Revision,
        upto: Revision,
        max_events: usize,
    ) -> Result<EventPage> {
        let st = lock(&self.state);
        let start = st
            .history
            .partition_point(|v| v.event.kv.mod_revision <= after);
        let mut page = EventPage {
            events: Vec::new(),
            through: upto,
        };
        for v in st.history.range(start..) {
            let rev = v.event.kv.mod_revision;
            if rev > upto {
                break;
            }
            if page.events.len() >= max_events.max(1) {
                page.through = rev - 1;
                break;
            }
            if prefix.contains(&v.event.kv.key) {
                page.events.push(v.event.clone());
            }
        }
        Ok(page)
    }

    fn compacted_revision(&self) -> Revision {
        Inner::compacted_revision(self)
    }
}

impl MemoryStorage {
    /// An empty store with `opts`.
    pub fn new(opts: MemoryStorageOptions) -> Arc<MemoryStorage> {
        let hub = Arc::new(Hub::new(0, opts.watch_channel_capacity));
        Arc::new(MemoryStorage {
            inner: Arc::new(Inner {
                state: Mutex::new(State::default()),
                current: AtomicU64::new(0),
                compacted: AtomicU64::new(0),
                hub,
                opts,
                counters: Counters::default(),
            }),
            claims: crate::LocalClaims::default(),
        })
    }

    /// Moves the compaction point to `rev` (at most the current revision) now: reads at
    /// and watches from older revisions fail with [`Error::Compacted`] from here on. For
    /// tests of "too old" resource versions without waiting for a window to pass.
    pub fn compact_to(&self, rev: Revision) {
        let mut st = lock(&self.inner.state);
        let rev = rev.min(st.current);
        self.inner
            .compact_while(&mut st, |_, v| v.event.kv.mod_revision <= rev);
        self.inner.compacted.fetch_max(rev, Ordering::AcqRel);
    }

    /// Commits `writes` as one group, then yields to the runtime once, as a write to a
    /// backend does while it waits for its commit: without it, tasks writing in a loop
    /// would never let the readers of their watches run, and would close them as too slow.
    async fn write(&self, writes: Vec<BatchWrite>) -> Vec<Result<KeyValue>> {
        let out = self.inner.write_group(writes);
        tokio::task::yield_now().await;
        out
    }

    /// Number of live watchers.
    pub fn watcher_count(&self) -> usize {
        self.inner.hub.watcher_count()
    }
}

/// A scan: pages of snapshot lists at one revision, each after the last key of the one
/// before; a page fails with [`Error::Compacted`] once the revision is compacted.
struct MemoryScan {
    inner: Arc<Inner>,
    prefix: Prefix,
    cursor: ListCursor,
}

#[async_trait::async_trait]
impl RangeScan for MemoryScan {
    fn revision(&self) -> Revision {
        self.cursor.revision
    }

    async fn next_page(&mut self) -> Result<Option<Vec<KeyValue>>> {
        let Some(opts) = self.cursor.next_options() else {
            return Ok(None);
        };
        let page = self.inner.list(&self.prefix, &opts, None)?;
        Ok(self.cursor.advance(page))
    }
}

#[async_trait::async_trait]
impl Storage for MemoryStorage {
    fn current_revision(&self) -> Revision {
        self.inner.current.load(Ordering::Acquire)
    }

    fn compacted_revision(&self) -> Revision {
        self.inner.compacted_revision()
    }

    async fn get(&self, key: &Key) -> Result<Option<KeyValue>> {
        Ok(lock(&self.inner.state).latest.get(key).cloned())
    }

    async fn list(
        &self,
        prefix: &Prefix,
        opts: &ListOptions,
        filter: Option<Filter<'_>>,
    ) -> Result<ListResult> {
        self.inner.list(prefix, opts, filter)
    }

    async fn count(&self, prefix: &Prefix) -> Result<u64> {
        Ok(lock(&self.inner.state).range(prefix, None).count() as u64)
    }

    async fn put(&self, key: Key, precondition: Precondition, encode: Encoder) -> Result<KeyValue> {
        let w = BatchWrite {
            key,
            delete: false,
            precondition,
            encode,
        };
        self.write(vec![w])
            .await
            .pop()
            .unwrap_or(Err(Error::ShuttingDown))
    }

    async fn delete(
        &self,
        key: Key,
        precondition: Precondition,
        encode: Encoder,
    ) -> Result<KeyValue> {
        let w = BatchWrite {
            key,
            delete: true,
            precondition,
            encode,
        };
        self.write(vec![w])
            .await
            .pop()
            .unwrap_or(Err(Error::ShuttingDown))
    }

    async fn write_batch(&self, writes: Vec<BatchWrite>) -> Vec<Result<KeyValue>> {
        self.write(writes).await
    }

    async fn delete_cluster(
        &self,
        cluster: &str,
        batch: usize,
        tombstone: Tombstone,
    ) -> Result<u64> {
        let limit = batch.clamp(1, MAX_WRITE_GROUP);
        let mut total = 0;
        loop {
            let (deleted, more) = self
                .inner
                .delete_cluster_batch(cluster, limit, &tombstone)?;
            total += deleted;
            if !more {
                return Ok(total);
            }
            // Other writes commit between the batches.
            tokio::task::yield_now().await;
        }
    }

    async fn clusters(&self, start_after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        // The first key of the first cluster after `c`: `c` followed by NUL is the least
        // name greater than `c`.
        let first_after = |c: &str| Bound::Included(Key::new(format!("{c}\u{0}"), "", "", ""));
        let st = lock(&self.inner.state);
        let mut from = start_after.map_or(Bound::Unbounded, first_after);
        let mut out = Vec::new();
        while out.len() < limit.max(1) {
            let Some((k, _)) = st.latest.range((from, Bound::Unbounded)).next() else {
                break;
            };
            from = first_after(&k.cluster);
            out.push(k.cluster.clone());
        }
        Ok(out)
    }

    async fn scan(
        &self,
        prefix: &Prefix,
        at: Option<Revision>,
        page_size: usize,
    ) -> Result<Box<dyn RangeScan>> {
        let revision = {
            let st = lock(&self.inner.state);
            self.inner.read_revision(&st, at)?
        };
        Ok(Box::new(MemoryScan {
            inner: self.inner.clone(),
            prefix: prefix.clone(),
            cursor: ListCursor::new(revision, page_size),
        }))
    }

    async fn watch(
        &self,
        prefix: &Prefix,
        from: Revision,
        progress_every: Option<Duration>,
    ) -> Result<WatchReceiver> {
        if lock(&self.inner.state).closing {
            return Err(Error::ShuttingDown);
        }
        let compacted = self.inner.compacted_revision();
        if from < compacted {
            return Err(Error::Compacted {
                requested: from,
                compacted,
            });
        }
        let log: Arc<dyn EventLog> = self.inner.clone();
        self.inner.hub.watch(log, prefix, from, progress_every)
    }

    fn stats(&self) -> StorageStats {
        let c = &self.inner.counters;
        let (latest, log) = {
            let st = lock(&self.inner.state);
            let size = |kv: &KeyValue| key_len(&kv.key) + kv.value.len() as u64;
            let latest: u64 = st.latest.values().map(size).sum();
            let log: u64 = st.history.iter().map(|v| size(&v.event.kv)).sum();
            (latest, log)
        };
        StorageStats {
            commit_groups: c.groups.load(Ordering::Relaxed),
            committed_writes: c.writes.load(Ordering::Relaxed),
            max_group: c.max_group.load(Ordering::Relaxed),
            watchers: self.watcher_count() as u64,
            latest_logical_bytes: latest,
            log_logical_bytes: log,
            window_logical_bytes: log,
            ..StorageStats::default()
        }
    }

    async fn claim(&self, name: &str) -> Result<Option<crate::Claim>> {
        Ok(self.claims.claim(name))
    }

    async fn shutdown(&self) -> Result<()> {
        lock(&self.inner.state).closing = true;
        self.inner.hub.close_all();
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::testing::conformance::{create, enc, key, list_all, next_event, RES};

    fn store() -> Arc<dyn Storage> {
        MemoryStorage::new(MemoryStorageOptions::default())
    }

    /// `compact_to` moves the compaction point at once; `max_history` bounds the history.
    #[tokio::test]
    async fn compaction_by_call_and_by_count() {
        let m = MemoryStorage::new(MemoryStorageOptions {
            max_history: 3,
            ..Default::default()
        });
        let s: Arc<dyn Storage> = m.clone();
        let p = Prefix::resource("c", RES);
        let a = create(&s, key("c", "ns", "a"), "a").await;
        create(&s, key("c", "ns", "b"), "b").await;
        assert_eq!(s.compacted_revision(), 0);
        assert_eq!(
            list_all(&s, &p, Some(a.mod_revision)).await,
            vec![a.clone()]
        );
        for i in 0..3 {
            create(&s, key("c", "ns", &format!("x{i}")), "x").await;
        }
        // Five revisions, three kept: the state at 2 is still exact.
        assert_eq!(s.compacted_revision(), 2);
        assert_eq!(list_all(&s, &p, Some(2)).await.len(), 2);
        let e = s
            .list(
                &p,
                &ListOptions {
                    at_revision: Some(1),
                    ..Default::default()
                },
                None,
            )
            .await
            .unwrap_err();
        assert!(
            matches!(
                e,
                Error::Compacted {
                    requested: 1,
                    compacted: 2
                }
            ),
            "{e:?}"
        );
        let mut rx = s.watch(&p, 2, None).await.unwrap();
        assert_eq!(next_event(&mut rx).await.kv.mod_revision, 3);
        m.compact_to(4);
        assert_eq!(s.compacted_revision(), 4);
        assert!(matches!(
            s.watch(&p, 3, None).await,
            Err(Error::Compacted {
                requested: 3,
                compacted: 4
            })
        ));
        m.compact_to(100);
        assert_eq!(s.compacted_revision(), 5);
    }

    /// Writes after shutdown are refused; watchers are closed.
    #[tokio::test]
    async fn shutdown_refuses_writes() {
        let s = store();
        let mut rx = s.watch(&Prefix::cluster("c"), 0, None).await.unwrap();
        s.shutdown().await.unwrap();
        assert!(matches!(
            rx.recv().await,
            Some(crate::WatchEvent::Closed(crate::CloseReason::ShuttingDown))
        ));
        let e = s
            .put(key("c", "ns", "a"), Precondition::MustNotExist, enc("v"))
            .await;
        assert!(matches!(e, Err(Error::ShuttingDown)));
        assert!(matches!(
            s.watch(&Prefix::cluster("c"), 0, None).await,
            Err(Error::ShuttingDown)
        ));
    }
}
