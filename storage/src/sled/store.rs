//! [`SledStorage`]: opening the store (migration, recovery, the writer thread) and the
//! [`Storage`] implementation that routes reads to [`super::read`], writes to the writer
//! thread ([`super::writer`]) and watches to the hub ([`crate::watch`]), which replays
//! history through [`super::event_log`].

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

use super::cluster_delete;
use super::compaction::{self, Compactor};
use super::compress;
use super::db::{backend, MAX_SEGMENT_SIZE};
use super::encoding::{decode_u64, key_bytes, meta_key, META_COMPACTED, META_REVISION};
use super::event_log::SledEventLog;
use super::latest;
use super::log::{self, Log};
use super::migrate;
use super::options::SledStorageOptions;
use super::read;
use super::recovery;
use super::request::{WriteRequest, MAX_WRITE_GROUP};
use super::scan::SledScan;
use super::shared::{mono_millis, CommitCounters, CompactionProgress, Shared};
use super::writer::{Request, Writer};
use crate::event_log::EventLog;
use crate::range::{RangeScan, Tombstone};
use crate::watch::Hub;
use crate::{
    BatchWrite, Encoder, Error, Filter, Key, KeyValue, ListOptions, ListResult, Precondition,
    Prefix, Result, Revision, Storage, WatchReceiver,
};

/// How many times `count_after` counts in the latest keyspace before it counts by
/// listing, when writes keep touching the range it counts.
const COUNT_TRIES: usize = 3;

/// A [`Storage`] on top of sled databases (latest values, and the log's generations).
pub struct SledStorage {
    pub(super) shared: Arc<Shared>,
    requests: Mutex<Option<mpsc::Sender<Request>>>,
    /// What the watch hub replays history from.
    event_log: Arc<dyn EventLog>,
    /// [`Storage::claim`]: one process opens the store, so its own guards are all holders.
    claims: crate::LocalClaims,
}

fn read_meta(tree: &sled::Tree, name: &[u8]) -> Result<Revision> {
    tree.get(meta_key(name))
        .map_err(backend)?
        .map_or(Ok(0), |v| decode_u64(&v))
}

impl SledStorage {
    /// Opens (or creates) the store in directory `path` and starts its writer thread.
    /// A data directory in the older single-database format is converted first.
    /// Blocking (recovery reads the log); call it before serving or via `spawn_blocking`.
    pub fn open(path: impl AsRef<Path>, opts: SledStorageOptions) -> Result<Arc<SledStorage>> {
        let dir = path.as_ref();
        let size = opts.latest_segment_size;
        if !size.is_power_of_two() || !(256..=MAX_SEGMENT_SIZE).contains(&size) {
            return Err(Error::Backend(format!(
                "latest_segment_size {size}: must be a power of two from 256 bytes to \
                 {MAX_SEGMENT_SIZE} (sled 0.34 can stop on larger segments)"
            )));
        }
        std::fs::create_dir_all(dir)
            .map_err(|e| Error::Backend(format!("cannot create {}: {e}", dir.display())))?;
        migrate::migrate_if_needed(dir, &opts)?;
        // The latest values are the hot read path: most of the cache goes to them.
        let latest_cache = opts.cache_capacity_bytes / 4 * 3;
        let latest_store = latest::Latest::open(
            dir,
            &opts,
            latest_cache,
            latest::RebuildPolicy {
                factor: opts.latest_rebuild_factor,
                min_bytes: opts.latest_rebuild_min_bytes,
                min_interval: opts.latest_rebuild_interval,
            },
        )?;
        let latest_db = latest_store.current();
        let latest = &latest_db.tree;
        let latest_rev = read_meta(latest, META_REVISION)?;
        // The rest is split evenly over the generation databases.
        let log_config = log::LogConfig {
            cache_per_db: ((opts.cache_capacity_bytes - latest_cache)
                / u64::from(opts.generations.max(1) + 2))
            .max(1024 * 1024),
            flush_every_ms: opts.flush_every_ms,
        };
        let log = Arc::new(Log::open(dir, log_config, latest_rev + 1)?);
        recovery::discard_incomplete(&log)?;
        let current = recovery::replay(latest, &log, latest_rev)?;
        log.ensure_own_current(current)?;
        let oldest = log.generations().first().map_or(1, |g| g.first);
        let compacted = read_meta(latest, META_COMPACTED)?.max(oldest.saturating_sub(1));
        let compactor = Compactor::new(
            opts.event_window,
            opts.compaction_interval,
            opts.generations,
            &log,
            compacted,
        );
        let latest_bytes = log::tree_bytes(latest)?;
        drop(latest_db);
        let shared = Arc::new(Shared {
            latest_store,
            log,
            current: AtomicU64::new(current),
            applied: AtomicU64::new(current),
            compacted: Arc::new(AtomicU64::new(compacted)),
            closing: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            writer_busy_since: AtomicU64::new(0),
            hub: Arc::new(Hub::new(current, opts.watch_channel_capacity)),
            stats: CommitCounters::default(),
            compaction: CompactionProgress::default(),
            latest_bytes: AtomicU64::new(latest_bytes),
            event_window: opts.event_window,
            #[cfg(test)]
            skip_latest: AtomicBool::new(false),
            #[cfg(test)]
            apply_hook: Mutex::new(None),
        });
        let (tx, rx) = mpsc::channel();
        let compressor = compress::Compressor::new(opts.compress_history);
        let writer = Writer::new(shared.clone(), rx, current, compactor, compressor);
        std::thread::Builder::new()
            .name("kplane-storage-writer".into())
            .spawn(move || writer.run())
            .map_err(|e| Error::Backend(format!("cannot start the writer thread: {e}")))?;
        let event_log = Arc::new(SledEventLog {
            log: shared.log.clone(),
            compacted: shared.compacted.clone(),
        });
        Ok(Arc::new(SledStorage {
            shared,
            requests: Mutex::new(Some(tx)),
            event_log,
            claims: crate::LocalClaims::default(),
        }))
    }

    /// Number of live watchers (for metrics and tests).
    pub fn watcher_count(&self) -> usize {
        self.shared.hub.watcher_count()
    }

    /// The revision up to which watchers have been offered events, for tests.
    #[cfg(test)]
    pub(crate) fn dispatched_revision(&self) -> Revision {
        self.shared.hub.dispatched()
    }

    /// Number of log versions at or below the compaction point still kept (copies that
    /// readers need, or a generation not yet dropped), for tests of compaction.
    #[cfg(test)]
    pub(crate) fn history_entries(&self) -> usize {
        let compacted = self.compacted_revision();
        self.shared
            .log
            .generations()
            .iter()
            .flat_map(|g| {
                g.tree.range(
                    super::encoding::version_key(0)..=super::encoding::version_key(compacted),
                )
            })
            .count()
    }

    fn sender(&self) -> Result<mpsc::Sender<Request>> {
        if self.shared.closing.load(Ordering::Acquire) {
            return Err(Error::ShuttingDown);
        }
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
            .ok_or(Error::ShuttingDown)
    }

    async fn write(
        &self,
        key: Key,
        delete: bool,
        precondition: Precondition,
        encode: Encoder,
    ) -> Result<KeyValue> {
        let (reply, rx) = oneshot::channel();
        let req = WriteRequest {
            key,
            delete,
            precondition,
            encode,
            reply,
        };
        self.sender()?
            .send(Request::Write(req))
            .map_err(|_| Error::ShuttingDown)?;
        crate::io_wait::reply(rx).await
    }

    /// Sends `writes` in chunks of at most [`MAX_WRITE_GROUP`], each committed in one group,
    /// and waits for every reply.
    async fn write_chunks(&self, writes: Vec<BatchWrite>) -> Vec<Result<KeyValue>> {
        let mut pending = Vec::with_capacity(writes.len());
        let mut chunk = Vec::new();
        let sender = self.sender();
        for w in writes {
            let (reply, rx) = oneshot::channel();
            chunk.push(WriteRequest {
                key: w.key,
                delete: w.delete,
                precondition: w.precondition,
                encode: w.encode,
                reply,
            });
            pending.push(rx);
            if chunk.len() >= MAX_WRITE_GROUP {
                send_chunk(&sender, std::mem::take(&mut chunk));
            }
        }
        if !chunk.is_empty() {
            send_chunk(&sender, chunk);
        }
        crate::io_wait::replies(pending).await
    }
}

/// Queues one chunk; when the writer is gone its requests are dropped, so their callers see
/// the writer's end as [`Error::ShuttingDown`].
fn send_chunk(sender: &Result<mpsc::Sender<Request>>, chunk: Vec<WriteRequest>) {
    if let Ok(tx) = sender {
        let _ = tx.send(Request::Batch(chunk));
    }
}

#[async_trait::async_trait]
impl Storage for SledStorage {
    fn current_revision(&self) -> Revision {
        self.shared.current_revision()
    }

    fn health(&self) -> std::result::Result<(), String> {
        if self.shared.failed.load(Ordering::Acquire) {
            return Err("the store stopped writing after a failed commit (see the log)".into());
        }
        let since = self.shared.writer_busy_since.load(Ordering::Acquire);
        let busy = mono_millis().saturating_sub(since);
        if since != 0 && u128::from(busy) > crate::STALL_AFTER.as_millis() {
            return Err(format!(
                "the storage writer has not come back from one step for {} s",
                busy / 1000
            ));
        }
        Ok(())
    }

    fn compacted_revision(&self) -> Revision {
        self.shared.compacted_revision()
    }

    async fn get(&self, key: &Key) -> Result<Option<KeyValue>> {
        let rev = self.current_revision();
        let latest = self.shared.latest();
        let rec = read::version_at(&latest.tree, &self.shared.log, &key_bytes(key), rev)?;
        Ok(rec.map(|r| r.into_kv(key.clone())))
    }

    async fn list(
        &self,
        prefix: &Prefix,
        opts: &ListOptions,
        filter: Option<Filter<'_>>,
    ) -> Result<ListResult> {
        self.shared.list(prefix, opts, filter).await
    }

    async fn count(&self, prefix: &Prefix) -> Result<u64> {
        let rev = self.current_revision();
        read::count(&self.shared.latest().tree, prefix, rev).await
    }

    /// Counts in the latest keyspace when no write touches the range meanwhile (a few
    /// tries), otherwise by listing, which is exact however the store changes.
    async fn count_after(&self, prefix: &Prefix, start_after: &Key, at: Revision) -> Result<u64> {
        let shared = &self.shared;
        let rev = shared.read_revision(Some(at))?;
        for _ in 0..COUNT_TRIES {
            // Every change the count may see that is not at or below `applied` shows up in
            // the event log after it (as for a list).
            let applied = shared.applied.load(Ordering::Acquire);
            let latest = shared.latest();
            let counted =
                read::count_after(&latest.tree, &shared.log, prefix, rev, start_after).await?;
            shared.check_not_compacted(rev)?;
            let Some(n) = counted else {
                break;
            };
            if !read::touched_since(&shared.log, prefix, start_after, applied)? {
                return Ok(n);
            }
        }
        crate::count_by_listing(self, prefix, start_after, rev).await
    }

    async fn put(&self, key: Key, precondition: Precondition, encode: Encoder) -> Result<KeyValue> {
        self.write(key, false, precondition, encode).await
    }

    async fn delete(
        &self,
        key: Key,
        precondition: Precondition,
        encode: Encoder,
    ) -> Result<KeyValue> {
        self.write(key, true, precondition, encode).await
    }

    async fn write_batch(&self, writes: Vec<BatchWrite>) -> Vec<Result<KeyValue>> {
        self.write_chunks(writes).await
    }

    async fn delete_cluster(
        &self,
        cluster: &str,
        batch: usize,
        tombstone: Tombstone,
    ) -> Result<u64> {
        let send = |req| {
            self.sender()?
                .send(Request::DeleteRange(req))
                .map_err(|_| Error::ShuttingDown)
        };
        cluster_delete::delete_cluster(send, cluster, batch, tombstone).await
    }

    async fn clusters(&self, start_after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        let latest = self.shared.latest();
        read::clusters(&latest.tree, start_after, limit).await
    }

    async fn scan(
        &self,
        prefix: &Prefix,
        at: Option<Revision>,
        page_size: usize,
    ) -> Result<Box<dyn RangeScan>> {
        let scan = SledScan::start(self.shared.clone(), prefix, at, page_size)?;
        Ok(Box::new(scan))
    }

    async fn watch(
        &self,
        prefix: &Prefix,
        from: Revision,
        progress_every: Option<Duration>,
    ) -> Result<WatchReceiver> {
        if self.shared.closing.load(Ordering::Acquire) {
            return Err(Error::ShuttingDown);
        }
        self.shared.check_not_compacted(from)?;
        self.shared
            .hub
            .watch(self.event_log.clone(), prefix, from, progress_every)
    }

    fn stats(&self) -> crate::StorageStats {
        let c = &self.shared.stats;
        crate::StorageStats {
            commit_groups: c.groups.load(Ordering::Relaxed),
            committed_writes: c.writes.load(Ordering::Relaxed),
            commit_micros: c.flush_micros.load(Ordering::Relaxed),
            max_group: c.max_group.load(Ordering::Relaxed),
            watchers: self.watcher_count() as u64,
            disk_bytes: self.shared.latest_store.disk_bytes() + self.shared.log.disk_bytes(),
            log_disk_bytes: self.shared.log.disk_bytes(),
            latest_logical_bytes: self.shared.latest_bytes.load(Ordering::Relaxed),
            log_logical_bytes: self.shared.log.logical_bytes(),
            window_logical_bytes: self.shared.log.window_bytes(
                compaction::unix_millis(),
                u64::try_from(self.shared.event_window.as_millis()).unwrap_or(u64::MAX),
            ),
            compaction_backlog: self
                .shared
                .compaction
                .target
                .load(Ordering::Relaxed)
                .saturating_sub(self.shared.compaction.done.load(Ordering::Relaxed)),
            ..crate::StorageStats::default()
        }
    }

    async fn claim(&self, name: &str) -> Result<Option<crate::Claim>> {
        Ok(self.claims.claim(name))
    }

    async fn shutdown(&self) -> Result<()> {
        let sender = self
            .requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        self.shared.closing.store(true, Ordering::Release);
        let Some(sender) = sender else {
            return Ok(());
        };
        let (reply, rx) = oneshot::channel();
        if sender.send(Request::Shutdown(reply)).is_err() {
            return Ok(());
        }
        drop(sender);
        rx.await.unwrap_or(Ok(()))
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::sled::encoding::{TAG_INDEX, TAG_TIME, TAG_VERSION, TAG_XREF};
    use crate::sled::read::ListMode;

    fn enc(v: &'static str) -> Encoder {
        Box::new(move |rev| Ok(format!("{v}@{rev}").into_bytes()))
    }

    type Model = BTreeMap<Key, KeyValue>;

    /// Random creates, updates and deletes over a few clusters, namespaces and names;
    /// returns the model state after every revision.
    async fn random_ops(s: &SledStorage, ops: usize, seed: u64) -> Vec<(Revision, Model)> {
        let mut seed = seed;
        let mut rnd = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut model: Model = s
            .list(
                &Prefix {
                    cluster: crate::Clusters::All,
                    resource: None,
                    namespace: None,
                },
                &ListOptions::default(),
                None,
            )
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|kv| (kv.key.clone(), kv))
            .collect();
        let mut states = Vec::new();
        for _ in 0..ops {
            let k = Key::new(
                ["c1", "c2", "c10", "c1:x", "c1:x:y", "c1-b"][(rnd() % 6) as usize],
                ["/pods", "/configmaps"][(rnd() % 2) as usize],
                ["a", "b"][(rnd() % 2) as usize],
                format!("k{}", rnd() % 5),
            );
            let (kv, deleted) = if let Some(cur) = model.get(&k) {
                let pre = Precondition::ModRevision(cur.mod_revision);
                if rnd() % 3 == 0 {
                    (s.delete(k.clone(), pre, enc("d")).await.unwrap(), true)
                } else {
                    (s.put(k.clone(), pre, enc("u")).await.unwrap(), false)
                }
            } else {
                (
                    s.put(k.clone(), Precondition::MustNotExist, enc("c"))
                        .await
                        .unwrap(),
                    false,
                )
            };
            if deleted {
                model.remove(&k);
            } else {
                model.insert(k, kv.clone());
            }
            states.push((kv.mod_revision, model.clone()));
        }
        states
    }

    fn prefixes() -> Vec<Prefix> {
        vec![
            Prefix {
                cluster: crate::Clusters::All,
                resource: None,
                namespace: None,
            },
            Prefix::cluster("c1"),
            Prefix::resource("c1", "/pods"),
            Prefix::namespace("c10", "/configmaps", "a"),
            Prefix {
                cluster: crate::Clusters::All,
                resource: Some("/pods".into()),
                namespace: None,
            },
            Prefix {
                cluster: crate::Clusters::All,
                resource: Some("/configmaps".into()),
                namespace: Some("b".into()),
            },
            Prefix {
                cluster: crate::Clusters::One("c2".into()),
                resource: None,
                namespace: Some("a".into()),
            },
            // Subtrees: `c1` holds `c1:x` and `c1:x:y`, not `c10` or `c1-b`.
            Prefix {
                cluster: crate::Clusters::Subtree("c1".into()),
                resource: Some("/pods".into()),
                namespace: None,
            },
            Prefix {
                cluster: crate::Clusters::Subtree("c1:x".into()),
                resource: Some("/configmaps".into()),
                namespace: Some("b".into()),
            },
            Prefix {
                cluster: crate::Clusters::Subtree("c1".into()),
                resource: None,
                namespace: None,
            },
        ]
    }

    /// Lists `prefix` at `rev` with `mode`, in pages of `page` items.
    async fn paged(
        s: &SledStorage,
        prefix: &Prefix,
        rev: Revision,
        mode: ListMode,
        page: Option<usize>,
    ) -> Vec<KeyValue> {
        let mut out: Vec<KeyValue> = Vec::new();
        loop {
            let after = out.last().map(|kv| kv.key.clone());
            let (items, more) = read::list(
                &s.shared.latest().tree,
                &s.shared.log,
                prefix,
                rev,
                mode,
                after.as_ref(),
                page,
                None,
            )
            .await
            .unwrap();
            if let Some(p) = page {
                assert!(items.len() <= p);
            }
            out.extend(items);
            if !more {
                return out;
            }
        }
    }

    async fn check_states(s: &SledStorage, states: &[(Revision, Model)], min_rev: Revision) {
        let applied = s.shared.applied.load(Ordering::Acquire);
        // Every state at or after `min_rev`, thinned out to keep debug builds fast.
        for (rev, model) in states
            .iter()
            .filter(|(r, _)| *r >= min_rev && (*r == min_rev || r % 3 == 0))
        {
            for prefix in prefixes() {
                let want: Vec<KeyValue> = model
                    .values()
                    .filter(|kv| prefix.contains(&kv.key))
                    .cloned()
                    .collect();
                for mode in [
                    ListMode::Latest,
                    ListMode::History {
                        applied_at_start: applied,
                    },
                ] {
                    for page in [None, Some(1), Some(4)] {
                        let got = paged(s, &prefix, *rev, mode, page).await;
                        assert_eq!(
                            got, want,
                            "rev {rev} prefix {prefix:?} mode {mode:?} page {page:?}"
                        );
                    }
                }
            }
        }
    }

    fn reopen(path: &std::path::Path, opts: SledStorageOptions) -> Arc<SledStorage> {
        for _ in 0..100 {
            if let Ok(s) = SledStorage::open(path, opts.clone()) {
                return s;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("cannot reopen");
    }

    /// Entries of keyspace `tag` in the latest database.
    fn count_latest(s: &SledStorage, tag: u8) -> usize {
        s.shared.latest().tree.scan_prefix([tag]).count()
    }

    /// Entries of keyspace `tag` in all log generations.
    fn count_log(s: &SledStorage, tag: u8) -> usize {
        s.shared
            .log
            .generations()
            .iter()
            .map(|g| g.tree.scan_prefix([tag]).count())
            .sum()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_list_mode_matches_the_model() {
        let dir = tempfile::tempdir().unwrap();
        let s = SledStorage::open(dir.path(), SledStorageOptions::default()).unwrap();
        let states = random_ops(&s, 250, 7).await;
        check_states(&s, &states, 0).await;
        s.shutdown().await.unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn compaction_keeps_snapshots_exact_and_removes_history() {
        let dir = tempfile::tempdir().unwrap();
        let opts = SledStorageOptions {
            event_window: Duration::from_millis(400),
            compaction_interval: Duration::from_millis(20),
            ..Default::default()
        };
        let s = SledStorage::open(dir.path(), opts).unwrap();
        let old = random_ops(&s, 200, 11).await;
        let old_last = s.current_revision();
        assert!(count_log(&s, TAG_VERSION) > 0);
        tokio::time::sleep(Duration::from_millis(500)).await;
        let new = random_ops(&s, 100, 13).await;
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while s.compacted_revision() < old_last {
            assert!(std::time::Instant::now() < deadline, "no compaction");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Reopen with a long window so the compaction point stays put while checking.
        tokio::time::sleep(Duration::from_millis(100)).await;
        s.shutdown().await.unwrap();
        drop(s);
        let s = reopen(dir.path(), SledStorageOptions::default());
        let compacted = s.compacted_revision();
        assert!(compacted >= old_last);
        let all: Vec<_> = old.into_iter().chain(new).collect();
        check_states(&s, &all, compacted).await;
        let e = s
            .list(
                &Prefix::cluster("c1"),
                &ListOptions {
                    at_revision: Some(compacted - 1),
                    ..Default::default()
                },
                None,
            )
            .await;
        assert!(matches!(e, Err(Error::Compacted { .. })));

        s.shutdown().await.unwrap();
        drop(s);
        let opts = SledStorageOptions {
            event_window: Duration::from_millis(400),
            compaction_interval: Duration::from_millis(20),
            ..Default::default()
        };
        let s = reopen(dir.path(), opts);

        // Once everything aged out, only latest values and their index entries remain.
        tokio::time::sleep(Duration::from_millis(500)).await;
        s.put(
            Key::new("c3", "/pods", "a", "x"),
            Precondition::MustNotExist,
            enc("c"),
        )
        .await
        .unwrap();
        let last = s.current_revision();
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while s.compacted_revision() < last - 1 {
            assert!(std::time::Instant::now() < deadline, "no second compaction");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        // Let the compaction finish its chunks.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let live = s
            .count(&Prefix {
                cluster: crate::Clusters::All,
                resource: None,
                namespace: None,
            })
            .await
            .unwrap();
        assert_eq!(s.history_entries(), 0);
        assert_eq!(count_log(&s, TAG_VERSION), 1);
        assert_eq!(count_log(&s, TAG_XREF), 1);
        assert_eq!(count_log(&s, TAG_TIME), 1);
        assert_eq!(count_latest(&s, TAG_INDEX) as u64, live);
        s.shutdown().await.unwrap();
    }
}
