//! The sled-backed [`Storage`]: opening and recovering the database, the shared state of
//! the store, and the trait implementation that routes reads to [`crate::read`], writes to
//! the writer thread ([`crate::writer`]) and watches to the hub ([`crate::watch`]).

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

use tokio::sync::oneshot;

use crate::compaction::{self, Compactor};
use crate::encoding::{decode_u64, key_bytes, meta_key, META_COMPACTED, META_REVISION};
use crate::read::{self, backend, ListMode};
use crate::watch::Hub;
use crate::writer::{Request, WriteRequest, Writer};
use crate::{
    Encoder, Error, Filter, Key, KeyValue, ListOptions, ListResult, Precondition, Prefix, Result,
    Revision, Storage, WatchReceiver,
};

/// Snapshots at most this many revisions behind the current one are listed by scanning the
/// latest values and correcting through the event-log tail; older ones merge history.
const LATEST_SCAN_MAX_LAG: Revision = 4096;

/// Tuning knobs for [`SledStorage`].
#[derive(Clone, Debug)]
pub struct SledStorageOptions {
    /// How long history and the event log are kept (watch and continue resumption window).
    pub event_window: Duration,
    /// How often the compactor looks for work.
    pub compaction_interval: Duration,
    /// sled page cache size.
    pub cache_capacity_bytes: u64,
    /// Capacity of each watcher's channel; a watcher that lets it fill up is closed with
    /// [`crate::CloseReason::TooSlow`].
    pub watch_channel_capacity: usize,
    /// sled's own background flush interval. Commits are flushed (fsync) regardless; this
    /// only drives sled's background log maintenance.
    pub flush_every_ms: Option<u64>,
}

impl Default for SledStorageOptions {
    fn default() -> Self {
        SledStorageOptions {
            event_window: Duration::from_secs(300),
            compaction_interval: Duration::from_secs(30),
            cache_capacity_bytes: 64 * 1024 * 1024,
            watch_channel_capacity: 1024,
            flush_every_ms: Some(1000),
        }
    }
}

/// State shared by the API-facing handle, the writer thread and the watcher tasks.
pub(crate) struct Shared {
    pub(crate) tree: sled::Tree,
    /// Latest durable revision.
    pub(crate) current: AtomicU64,
    /// Highest revision whose batch may be visible (durable or not).
    pub(crate) applied: AtomicU64,
    /// Compaction point: the state at it is still exact; older revisions are gone.
    pub(crate) compacted: Arc<AtomicU64>,
    /// Set once shutdown started: new writes are refused.
    pub(crate) closing: AtomicBool,
    /// Set when a commit failed: the store refuses further writes.
    pub(crate) failed: AtomicBool,
    pub(crate) hub: Arc<Hub>,
}

/// A [`Storage`] on top of one sled database.
pub struct SledStorage {
    shared: Arc<Shared>,
    requests: Mutex<Option<mpsc::Sender<Request>>>,
}

fn read_meta(tree: &sled::Tree, name: &[u8]) -> Result<Revision> {
    tree.get(meta_key(name))
        .map_err(backend)?
        .map_or(Ok(0), |v| decode_u64(&v))
}

impl SledStorage {
    /// Opens (or creates) the store in directory `path` and starts its writer thread.
    /// Blocking (recovery reads the log); call it before serving or via `spawn_blocking`.
    pub fn open(path: impl AsRef<Path>, opts: SledStorageOptions) -> Result<Arc<SledStorage>> {
        let db = sled::Config::new()
            .path(path)
            .cache_capacity(opts.cache_capacity_bytes)
            .flush_every_ms(opts.flush_every_ms)
            .mode(sled::Mode::HighThroughput)
            .open()
            .map_err(backend)?;
        let tree = db.open_tree("kplane").map_err(backend)?;
        let current = read_meta(&tree, META_REVISION)?;
        let compacted = read_meta(&tree, META_COMPACTED)?;
        let resume = compaction::unfinished(&tree, compacted)?.then_some(compacted);
        let shared = Arc::new(Shared {
            tree,
            current: AtomicU64::new(current),
            applied: AtomicU64::new(current),
            compacted: Arc::new(AtomicU64::new(compacted)),
            closing: AtomicBool::new(false),
            failed: AtomicBool::new(false),
            hub: Arc::new(Hub::new(current, opts.watch_channel_capacity)),
        });
        let (tx, rx) = mpsc::channel();
        let compactor = Compactor::new(opts.event_window, opts.compaction_interval, resume);
        let writer = Writer::new(shared.clone(), rx, current, compactor);
        std::thread::Builder::new()
            .name("kplane-storage-writer".into())
            .spawn(move || writer.run())
            .map_err(|e| Error::Backend(format!("cannot start the writer thread: {e}")))?;
        drop(db);
        Ok(Arc::new(SledStorage {
            shared,
            requests: Mutex::new(Some(tx)),
        }))
    }

    /// Number of live watchers (for metrics and tests).
    pub fn watcher_count(&self) -> usize {
        self.shared.hub.watcher_count()
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
        rx.await.map_err(|_| Error::ShuttingDown)?
    }

    /// The revision to read at, validated against the retained window.
    fn read_revision(&self, requested: Option<Revision>) -> Result<Revision> {
        let current = self.current_revision();
        let rev = requested.unwrap_or(current);
        if rev > current {
            return Err(Error::FutureRevision {
                requested: rev,
                current,
            });
        }
        self.check_not_compacted(rev)?;
        Ok(rev)
    }

    fn check_not_compacted(&self, rev: Revision) -> Result<()> {
        let compacted = self.compacted_revision();
        if rev < compacted {
            return Err(Error::Compacted {
                requested: rev,
                compacted,
            });
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl Storage for SledStorage {
    fn current_revision(&self) -> Revision {
        self.shared.current.load(Ordering::Acquire)
    }

    fn compacted_revision(&self) -> Revision {
        self.shared.compacted.load(Ordering::Acquire)
    }

    async fn get(&self, key: &Key) -> Result<Option<KeyValue>> {
        let rev = self.current_revision();
        let rec = read::version_at(&self.shared.tree, &key_bytes(key), rev)?;
        Ok(rec.map(|r| r.into_kv(key.clone())))
    }

    async fn list(
        &self,
        prefix: &Prefix,
        opts: &ListOptions,
        filter: Option<Filter<'_>>,
    ) -> Result<ListResult> {
        // Read before choosing the revision: every change visible to the scan that is not
        // at or below `applied_at_start` shows up in the event log after it.
        let applied_at_start = self.shared.applied.load(Ordering::Acquire);
        let rev = self.read_revision(opts.at_revision)?;
        let lag = self.current_revision().saturating_sub(rev);
        let mode = if lag <= LATEST_SCAN_MAX_LAG {
            ListMode::Latest
        } else {
            ListMode::History { applied_at_start }
        };
        let (items, more) = read::list(
            &self.shared.tree,
            prefix,
            rev,
            mode,
            opts.start_after.as_ref(),
            opts.limit,
            filter,
        )
        .await?;
        // Compaction publishes its point before removing anything.
        self.check_not_compacted(rev)?;
        Ok(ListResult {
            items,
            revision: rev,
            more,
        })
    }

    async fn count(&self, prefix: &Prefix) -> Result<u64> {
        read::count(&self.shared.tree, prefix, self.current_revision()).await
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

    async fn watch(
        &self,
        prefix: &Prefix,
        from: Revision,
        progress_every: Option<Duration>,
    ) -> Result<WatchReceiver> {
        if self.shared.closing.load(Ordering::Acquire) {
            return Err(Error::ShuttingDown);
        }
        self.check_not_compacted(from)?;
        self.shared.hub.watch(
            self.shared.tree.clone(),
            prefix,
            from,
            progress_every,
            self.shared.compacted.clone(),
        )
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
