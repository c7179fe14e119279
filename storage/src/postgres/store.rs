//! [`PostgresStorage`]: opening the database (pool, schema migration, the writer, compactor
//! and tailer tasks) and the [`Storage`] implementation that routes writes to the writer
//! task ([`super::writer`]), reads and the event log to [`super::read`] and watches to the
//! shared hub ([`crate::watch`]).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod, Runtime};
use tokio::sync::{mpsc, oneshot};

use super::cache::CacheFigures;
use super::errors::pool_err;
use super::options::{PostgresStorageOptions, CACHE_TRUST_INTERVALS, MIN_CACHE_TRUST};
use super::read::{self, PgEventLog, PgScan};
use super::shared::{CommitCounters, CompactionProgress, Publisher, Shared, Sizes};
use super::writer::{self, DeleteBatch, Request, WriteRequest};
use super::{claims, compaction, lease, lost, schema, tail};
use crate::event_log::EventLog;
use crate::range::{RangeScan, Tombstone};
use crate::watch::Hub;
use crate::{
    BatchWrite, Encoder, Error, Filter, Key, KeyValue, ListOptions, ListResult, Precondition,
    Prefix, Result, Revision, Storage, StorageStats, WatchReceiver, MAX_WRITE_GROUP,
};

/// The connection settings: `url` plus kplane's bounds on waiting (unless `url` sets its
/// own statement timeout).
fn connection_config(url: &str, opts: &PostgresStorageOptions) -> Result<tokio_postgres::Config> {
    let mut config: tokio_postgres::Config = url
        .parse()
        .map_err(|e| Error::Backend(format!("invalid PostgreSQL address: {e}")))?;
    config.connect_timeout(opts.connect_timeout);
    // A dead peer (a failed-over primary) is noticed in seconds, not hours.
    config.keepalives(true);
    config.keepalives_idle(Duration::from_secs(10));
    config.tcp_user_timeout(opts.statement_timeout);
    if !config
        .get_options()
        .is_some_and(|o| o.contains("statement_timeout"))
    {
        let ms = opts.statement_timeout.as_millis();
        let extra = format!("-c statement_timeout={ms}");
        let options = match config.get_options() {
            Some(o) if !o.is_empty() => format!("{o} {extra}"),
            _ => extra,
        };
        config.options(&options);
    }
    if config.get_application_name().is_none() {
        config.application_name("kplane");
    }
    Ok(config)
}

/// A [`Storage`] on a PostgreSQL database.
pub struct PostgresStorage {
    pub(super) shared: Arc<Shared>,
    requests: Mutex<Option<mpsc::UnboundedSender<Request>>>,
    writer: Mutex<Option<tokio::task::JoinHandle<()>>>,
    /// Stops the compactor, the log tailer and its LISTEN connection.
    stop_tasks: tokio::sync::watch::Sender<bool>,
    event_log: Arc<dyn EventLog>,
    lease: lease::Lease,
}

/// Opens the pool's connections with their tasks on the runtime the store was opened on
/// (the server's own), whichever runtime asks for a new connection: a pooled connection
/// serves every tenant's later requests, so it must not be driven by the lowered-priority
/// threads that run the requests of a cluster past its share (the API server's fair
/// queuing).
struct ConnectOn(tokio::runtime::Handle);

impl deadpool_postgres::Connect for ConnectOn {
    fn connect(
        &self,
        pg_config: &tokio_postgres::Config,
    ) -> futures::future::BoxFuture<'_, Opened> {
        let pg_config = pg_config.clone();
        let runtime = self.0.clone();
        Box::pin(async move {
            // Opened there too: a socket is driven by the runtime it is opened on.
            match runtime.spawn(open_connection(pg_config.clone())).await {
                Ok(opened) => opened,
                // The server's runtime is stopping (or the connect panicked): open it here.
                Err(_) => open_connection(pg_config).await,
            }
        })
    }
}

/// A new connection of the pool: its client and the task that drives it.
type Opened = std::result::Result<
    (tokio_postgres::Client, tokio::task::JoinHandle<()>),
    tokio_postgres::Error,
>;

/// A connection to the database and the task that drives it (on the calling runtime).
async fn open_connection(pg_config: tokio_postgres::Config) -> Opened {
    let (client, connection) = pg_config.connect(tokio_postgres::NoTls).await?;
    let task = tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::warn!(error = %e, "postgres connection failed");
        }
    });
    Ok((client, task))
}

impl PostgresStorage {
    /// Connects to the database at `url` (`postgres://user[:password]@host[:port]/db`, or
    /// the key=value form libpq takes), creates or migrates the schema and starts the
    /// writer and compactor tasks. Must be called inside a Tokio runtime.
    pub async fn open(url: &str, opts: PostgresStorageOptions) -> Result<Arc<PostgresStorage>> {
        let config = connection_config(url, &opts)?;
        let mut listen_config = config.clone();
        listen_config.application_name(format!(
            "{}-listen",
            config.get_application_name().unwrap_or("kplane")
        ));
        let manager = Manager::from_connect(
            config,
            ConnectOn(tokio::runtime::Handle::current()),
            ManagerConfig {
                recycling_method: RecyclingMethod::Fast,
            },
        );
        let pool = Pool::builder(manager)
            .max_size(opts.pool_size.max(2))
            .runtime(Runtime::Tokio1)
            .wait_timeout(Some(opts.connect_timeout))
            .create_timeout(Some(opts.connect_timeout))
            .build()
            .map_err(|e| Error::Backend(format!("postgres pool: {e}")))?;
        let mut client = pool.get().await.map_err(pool_err)?;
        let (current, compacted) = schema::migrate(&mut client).await?;
        let gaps = lost::load(&client, compacted).await?;
        drop(client);
        let shared = Arc::new(Shared {
            pool,
            current: AtomicU64::new(current),
            compacted: AtomicU64::new(compacted),
            closing: AtomicBool::new(false),
            hub: Arc::new(Hub::new(current, opts.watch_channel_capacity)),
            stats: CommitCounters::default(),
            compaction: CompactionProgress::default(),
            sizes: Sizes::default(),
            publisher: Publisher::new(opts.cache_bytes),
            tail_wake: Arc::new(tokio::sync::Notify::new()),
            resyncs: AtomicU64::new(0),
            rewinds: AtomicU64::new(0),
            lost: lost::LostRanges::default(),
            opened: std::time::Instant::now(),
            confirmed_at: AtomicU64::new(0),
            cache_trust: (opts.tail_interval * CACHE_TRUST_INTERVALS).max(MIN_CACHE_TRUST),
            statement_timeout: opts.statement_timeout,
        });
        for g in gaps {
            shared.lost.record(g);
        }
        let (tx, rx) = mpsc::unbounded_channel();
        let writer = tokio::spawn(writer::run(shared.clone(), rx));
        let (stop_tasks, stop) = tokio::sync::watch::channel(false);
        tokio::spawn(compaction::run(
            shared.clone(),
            opts.event_window,
            opts.compaction_interval,
            stop.clone(),
        ));
        tokio::spawn(tail::run(
            shared.clone(),
            opts.tail_interval,
            shared.tail_wake.clone(),
            stop.clone(),
        ));
        if opts.listen {
            tokio::spawn(tail::listen(
                shared.clone(),
                listen_config,
                shared.tail_wake.clone(),
                stop,
            ));
        }
        let event_log = Arc::new(PgEventLog {
            shared: shared.clone(),
        });
        Ok(Arc::new(PostgresStorage {
            shared,
            requests: Mutex::new(Some(tx)),
            writer: Mutex::new(Some(writer)),
            stop_tasks,
            event_log,
            lease: lease::Lease::new(),
        }))
    }

    /// Number of live watchers.
    pub fn watcher_count(&self) -> usize {
        self.shared.hub.watcher_count()
    }

    /// The planner's estimate of the log's rows (history kept for the event window),
    /// refreshed by the compactor: a figure for metrics.
    pub fn history_rows(&self) -> u64 {
        self.shared.sizes.history_rows.load(Ordering::Relaxed)
    }

    /// The GET cache's figures.
    pub fn cache_figures(&self) -> CacheFigures {
        self.shared.publisher.lock().cache.figures()
    }

    /// How many times this store's position fell below the compaction point (it was cut
    /// off from the log longer than the event window) and it closed its watchers and
    /// jumped to the database's revision.
    pub fn resyncs(&self) -> u64 {
        self.shared.resyncs.load(Ordering::Relaxed)
    }

    /// How many times this store found that the database lost revisions it had published
    /// (a failover to a standby that had not received them) and closed its watchers and
    /// cleared its cache; its position does not move back (the lost revisions stay a gap).
    pub fn rewinds(&self) -> u64 {
        self.shared.rewinds.load(Ordering::Relaxed)
    }

    /// Publishes every write the database committed that this store has not published yet,
    /// now, instead of at the tailer's next wake-up (for tests).
    pub async fn catch_up(&self) -> Result<()> {
        tail::catch_up(&self.shared).await
    }

    /// Runs one compaction round now (for tests): moves the compaction point to the last
    /// revision older than `window` and deletes the history at or below it.
    pub async fn compact_now(&self, window: Duration) -> Result<()> {
        compaction::round(&self.shared, window).await
    }

    /// A read at a revision this store has not published yet (one another replica wrote
    /// and a client brought here, e.g. in a continue token) first catches up with the
    /// database; a revision beyond the database's still fails with `FutureRevision`.
    async fn reach(&self, at: Option<Revision>) {
        if at.is_some_and(|r| r > self.shared.current_revision()) {
            if let Err(e) = tail::catch_up(&self.shared).await {
                tracing::debug!(error = %e, "postgres storage: catching up for a read failed");
            }
        }
    }

    fn sender(&self) -> Result<mpsc::UnboundedSender<Request>> {
        if self.shared.closing.load(Ordering::Acquire) {
            return Err(Error::ShuttingDown);
        }
        self.requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
            .ok_or(Error::ShuttingDown)
    }

    fn send_write(
        &self,
        sender: &mpsc::UnboundedSender<Request>,
        w: BatchWrite,
    ) -> oneshot::Receiver<Result<KeyValue>> {
        let (reply, rx) = oneshot::channel();
        let req = WriteRequest {
            key: w.key,
            delete: w.delete,
            precondition: w.precondition,
            encode: w.encode,
            reply,
        };
        // A closed channel drops the reply sender: the receiver reports ShuttingDown.
        let _ = sender.send(Request::Write(req));
        rx
    }

    async fn write(
        &self,
        key: Key,
        delete: bool,
        precondition: Precondition,
        encode: Encoder,
    ) -> Result<KeyValue> {
        let sender = self.sender()?;
        let rx = self.send_write(
            &sender,
            BatchWrite {
                key,
                delete,
                precondition,
                encode,
            },
        );
        drop(sender);
        crate::io_wait::reply(rx).await
    }
}

#[async_trait::async_trait]
impl Storage for PostgresStorage {
    fn current_revision(&self) -> Revision {
        self.shared.current_revision()
    }

    fn health(&self) -> std::result::Result<(), String> {
        let since = self
            .shared
            .clock_millis()
            .saturating_sub(self.shared.confirmed_at.load(Ordering::Acquire));
        if u128::from(since) > crate::STALL_AFTER.as_millis() {
            return Err(format!(
                "the log tailer has not caught up with the database for {} s",
                since / 1000
            ));
        }
        Ok(())
    }

    fn compacted_revision(&self) -> Revision {
        self.shared.compacted_revision()
    }

    async fn get(&self, key: &Key) -> Result<Option<KeyValue>> {
        read::get(&self.shared, key).await
    }

    async fn list(
        &self,
        prefix: &Prefix,
        opts: &ListOptions,
        filter: Option<Filter<'_>>,
    ) -> Result<ListResult> {
        self.reach(opts.at_revision).await;
        read::list(&self.shared, prefix, opts, filter).await
    }

    async fn count(&self, prefix: &Prefix) -> Result<u64> {
        read::count(&self.shared, prefix).await
    }

    async fn count_after(&self, prefix: &Prefix, start_after: &Key, at: Revision) -> Result<u64> {
        self.reach(Some(at)).await;
        read::count_after(&self.shared, prefix, start_after, at).await
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

    /// Queues every write at once: the writer commits them in as few groups as
    /// [`MAX_WRITE_GROUP`] allows (with whatever else is waiting).
    async fn write_batch(&self, writes: Vec<BatchWrite>) -> Vec<Result<KeyValue>> {
        let sender = match self.sender() {
            Ok(s) => s,
            Err(_) => return writes.iter().map(|_| Err(Error::ShuttingDown)).collect(),
        };
        let pending: Vec<_> = writes
            .into_iter()
            .map(|w| self.send_write(&sender, w))
            .collect();
        drop(sender);
        crate::io_wait::replies(pending).await
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
            let (reply, rx) = oneshot::channel();
            self.sender()?
                .send(Request::DeleteBatch(DeleteBatch {
                    cluster: cluster.to_string(),
                    limit,
                    tombstone: tombstone.clone(),
                    reply,
                }))
                .map_err(|_| Error::ShuttingDown)?;
            let n = rx.await.map_err(|_| Error::ShuttingDown)??;
            if n == 0 {
                return Ok(total);
            }
            total += n;
        }
    }

    async fn fence_cluster(&self, cluster: &str, fenced: bool) -> Result<Revision> {
        if self.shared.closing.load(Ordering::Acquire) {
            return Err(Error::ShuttingDown);
        }
        writer::fence(&self.shared, cluster, fenced).await
    }

    async fn clusters(&self, start_after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        read::clusters(&self.shared, start_after, limit).await
    }

    async fn scan(
        &self,
        prefix: &Prefix,
        at: Option<Revision>,
        page_size: usize,
    ) -> Result<Box<dyn RangeScan>> {
        self.reach(at).await;
        let rev = self.shared.read_revision(at)?;
        Ok(Box::new(PgScan {
            shared: self.shared.clone(),
            prefix: prefix.clone(),
            rev,
            page_size: page_size.max(1),
            after: None,
            done: false,
            compacted: false,
        }))
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
        if from > self.shared.current_revision() {
            // A revision another replica published (the watch waits for it): is it lost?
            // Best effort: without the database, the watch waits as before.
            let found = match self.shared.client().await {
                Ok(client) => lost::find_covering(&client, from).await,
                Err(e) => Err(e),
            };
            match found {
                Ok(Some(gap)) => self.shared.lost.record(gap),
                Ok(None) => {}
                Err(e) => {
                    tracing::debug!(error = %e, "postgres storage: looking for lost revisions failed")
                }
            }
        }
        self.shared.check_not_compacted(from)?;
        let rx = self
            .shared
            .hub
            .watch(self.event_log.clone(), prefix, from, progress_every)?;
        // A lost range recorded meanwhile (the hub checks the compaction point itself).
        if let Some(at) = self.shared.lost.covering(from) {
            return Err(Error::Compacted {
                requested: from,
                compacted: at,
            });
        }
        Ok(rx)
    }

    fn stats(&self) -> StorageStats {
        let c = &self.shared.stats;
        let s = &self.shared.sizes;
        let log = s.log_disk.load(Ordering::Relaxed);
        let cache = self.cache_figures();
        StorageStats {
            commit_groups: c.groups.load(Ordering::Relaxed),
            committed_writes: c.writes.load(Ordering::Relaxed),
            commit_micros: c.micros.load(Ordering::Relaxed),
            max_group: c.max_group.load(Ordering::Relaxed),
            watchers: self.watcher_count() as u64,
            disk_bytes: s.latest_disk.load(Ordering::Relaxed) + log,
            log_disk_bytes: log,
            history_rows: s.history_rows.load(Ordering::Relaxed),
            get_cache_hits: cache.hits,
            get_cache_misses: cache.misses,
            compaction_backlog: self
                .shared
                .compaction
                .target
                .load(Ordering::Relaxed)
                .saturating_sub(self.shared.compaction.done.load(Ordering::Relaxed)),
            ..StorageStats::default()
        }
    }

    fn shared(&self) -> bool {
        true
    }

    fn leadership(&self) -> tokio::sync::watch::Receiver<bool> {
        self.lease.subscribe(&self.shared)
    }

    async fn claim(&self, name: &str) -> Result<Option<crate::Claim>> {
        claims::claim(&self.shared, name, self.stop_tasks.subscribe()).await
    }

    async fn shutdown(&self) -> Result<()> {
        self.shared.closing.store(true, Ordering::Release);
        self.lease.stop();
        let sender = self
            .requests
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        drop(sender);
        let writer = self
            .writer
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(w) = writer {
            // The writer drains the queue, then ends.
            let _ = w.await;
        }
        self.stop_tasks.send_replace(true);
        self.shared.hub.close_all();
        Ok(())
    }
}
