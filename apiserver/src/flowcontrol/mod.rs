//! Fair queuing of requests, per logical cluster and, within one, per user: kplane's
//! counterpart of kube-apiserver's API Priority and Fairness, with the logical cluster as
//! the flow that must not starve the others (docs/security.md, "Fair queuing").
//!
//! The server has a number of seats (`--max-requests-inflight` plus
//! `--max-mutating-requests-inflight`, as upstream sizes APF); a request holds the seats its
//! work estimate names ([`estimate`]) while it executes, a watch only until it is
//! established. One logical cluster holds at most `--max-seats-per-cluster` of them while
//! another cluster holds seats too (alone, it may use them all).
//! A request that finds no free seat, or its cluster at its cap or with requests already
//! waiting, waits in its cluster's queue ([`queues`]: deficit round robin over clusters in
//! seats, round robin over users); past `--max-queued-per-cluster` waiting requests, or
//! after waiting `--queue-wait` (a quarter of a `timeout` the request sets, when shorter),
//! it is refused with 429, `Retry-After` and a `Status` (kube-apiserver answers its APF
//! refusals with the same message in plain text). Members of `system:masters` are exempt;
//! the sync endpoint has `--syncer-seats` seats of its own before it queues like a tenant.
//!
//! While a request waits for the store's writer (a write's group commit and fsync:
//! [`kplane_storage::io_wait`]) its seats are lent to the pool and taken back, past the
//! caps if need be, when it runs again: seats bound the work that uses the cores, not the
//! writes waiting for durability, which commit in larger groups the more of them wait.
//!
//! The path of a request that finds a seat takes one shard lock and one atomic update
//! (and the same again when it ends); the queue lock is taken only when requests wait.

pub mod estimate;
pub mod lowered;
mod queues;
#[cfg(test)]
mod tests;

use std::collections::HashMap;
use std::fmt::Write as _;
use std::hash::{BuildHasher, RandomState};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use kplane_types::status::{Status, StatusReason};
use kplane_types::UserInfo;
use tokio::sync::oneshot;

use queues::{Fit, Queues};

/// The message of a refusal (kube-apiserver's `tooManyRequests`).
pub const TOO_MANY_REQUESTS: &str = "Too many requests, please try again later.";
/// The `Retry-After` of a refusal, in seconds (the least upstream's tracker answers).
pub const RETRY_AFTER_SECONDS: u32 = 1;
/// The queue key of the sync endpoint's requests past its own seats (not a cluster name).
const SYNC_FLOW: &str = "(sync)";
/// Lock shards of the per-cluster seat counts.
const SHARDS: usize = 64;
/// Idle per-cluster entries a shard keeps before it sweeps them out.
const SHARD_SWEEP_AT: usize = 512;
/// `apiserver_flowcontrol_request_wait_duration_seconds` buckets (upstream's).
const WAIT_BUCKETS: &[f64] = &[
    0.0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 15.0, 30.0,
];

/// The settings (`kplane serve` flags of the same names).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowConfig {
    /// Seats of the whole server.
    pub max_seats: u32,
    /// Seats one logical cluster may hold at once (at least [`estimate::MAX_SEATS`]).
    pub max_seats_per_cluster: u32,
    /// Requests one logical cluster may have waiting.
    pub max_queued_per_cluster: u32,
    /// How long a request waits for seats at most.
    pub queue_wait: Duration,
    /// Seats of the sync endpoint's own, before its requests queue like a tenant's.
    pub syncer_seats: u32,
    /// How long after another cluster's request a cluster's cap still binds (a cluster
    /// alone may use every seat).
    pub shared_window: Duration,
}

impl FlowConfig {
    /// Seats one logical cluster may hold by default: eight per core of this machine, at
    /// least [`estimate::MAX_SEATS`] (16 on 2 cores, 128 on 16). Seats bound the work
    /// that uses the cores (a write waiting for its commit lends its seats), so one
    /// cluster's share is sized by the cores: past a few requests per core a busy
    /// cluster only lengthens every other cluster's wait for a core.
    pub fn default_seats_per_cluster() -> u32 {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        u32::try_from(cores.saturating_mul(8))
            .unwrap_or(u32::MAX)
            .max(estimate::MAX_SEATS)
    }
}

impl Default for FlowConfig {
    fn default() -> Self {
        FlowConfig {
            // kube-apiserver: --max-requests-inflight 400 + --max-mutating-requests-inflight 200.
            max_seats: 600,
            max_seats_per_cluster: FlowConfig::default_seats_per_cluster(),
            max_queued_per_cluster: 128,
            // Upstream: a quarter of the 60 s request timeout.
            queue_wait: Duration::from_secs(15),
            syncer_seats: 50,
            shared_window: Duration::from_secs(1),
        }
    }
}

impl FlowConfig {
    /// Checks the settings (start-up).
    pub fn validate(&self) -> Result<(), String> {
        if self.max_seats < estimate::MAX_SEATS {
            return Err(format!(
                "the server needs at least {} seats (--max-requests-inflight plus --max-mutating-requests-inflight), got {}",
                estimate::MAX_SEATS,
                self.max_seats
            ));
        }
        if self.max_seats_per_cluster < estimate::MAX_SEATS {
            return Err(format!(
                "--max-seats-per-cluster must be at least {} (the seats of the widest request), got {}",
                estimate::MAX_SEATS,
                self.max_seats_per_cluster
            ));
        }
        if self.queue_wait.is_zero() {
            return Err("--queue-wait must be positive".into());
        }
        Ok(())
    }
}

/// Why a request was refused (the `reason` label of
/// `apiserver_flowcontrol_rejected_requests_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// Its cluster already had the most requests waiting.
    QueueFull,
    /// It waited its longest for seats.
    TimeOut,
}

impl Rejection {
    fn label(self) -> &'static str {
        match self {
            Rejection::QueueFull => "queue-full",
            Rejection::TimeOut => "time-out",
        }
    }

    /// The 429 the client gets.
    pub fn status(self) -> Status {
        let mut s = Status::new(StatusReason::TooManyRequests, TOO_MANY_REQUESTS);
        s.retry_after = Some(RETRY_AFTER_SECONDS);
        s
    }
}

/// A cluster's seats in use and requests waiting.
#[derive(Debug, Default)]
struct ClusterSeats {
    executing: u32,
    queued: u32,
    /// The seats its waiting requests ask for.
    queued_seats: u32,
}

impl ClusterSeats {
    /// One of its waiting requests, of `seats` seats, left the queue.
    fn dequeued(&mut self, seats: u32) {
        self.queued = self.queued.saturating_sub(1);
        self.queued_seats = self.queued_seats.saturating_sub(seats);
    }
}

/// One lock shard of the per-cluster counts.
type Shard = HashMap<Arc<str>, ClusterSeats>;

/// The seats a request holds; released when dropped.
#[derive(Debug)]
pub struct Seat {
    held: Held,
}

#[derive(Debug)]
enum Held {
    Exempt,
    Syncer(Arc<FlowControl>),
    Seats(Arc<Granted>),
}

/// Seats given to a request; lent back to the pool while the request waits for the
/// store's writer ([`kplane_storage::io_wait`]).
#[derive(Debug)]
struct Granted {
    fc: Arc<FlowControl>,
    cluster: Arc<str>,
    seats: u32,
    /// Its cluster was past its share when the request came ([`Seat::past_share`]).
    past_share: bool,
    /// [`HELD`], [`LENT`] (in the pool while the request waits) or [`DONE`].
    state: AtomicU8,
}

/// The request holds its seats.
const HELD: u8 = 0;
/// The request's seats are in the pool while it waits for the store.
const LENT: u8 = 1;
/// The request has ended; its seats are back for good.
const DONE: u8 = 2;

impl kplane_storage::io_wait::IoWait for Granted {
    fn begin(&self) {
        let lent = self
            .state
            .compare_exchange(HELD, LENT, Ordering::AcqRel, Ordering::Acquire);
        if lent.is_ok() {
            self.fc.lend(&self.cluster, self.seats);
        }
    }

    fn end(&self) {
        let back = self
            .state
            .compare_exchange(LENT, HELD, Ordering::AcqRel, Ordering::Acquire);
        if back.is_ok() {
            self.fc.take_back(&self.cluster, self.seats);
        }
    }
}

impl Seat {
    /// The seats held (0 when exempt or on the sync endpoint's own seats).
    pub fn seats(&self) -> u32 {
        match &self.held {
            Held::Seats(g) => g.seats,
            _ => 0,
        }
    }

    /// Whether the request's cluster was past its share of the server when the request
    /// came: it waited, and its cluster's seats with those of its requests already
    /// waiting and its own would have passed the cluster's cap while other clusters were
    /// busy (not a request that waited only for the server's seats, nor one on the sync
    /// endpoint's queue). Such a request's
    /// work may run at a lower CPU priority ([`lowered`]), so that the cores go to the
    /// clusters within their share first.
    pub fn past_share(&self) -> bool {
        match &self.held {
            Held::Seats(g) => g.past_share,
            _ => false,
        }
    }

    /// What to tell while the request waits for the store, so that its seats serve
    /// others meanwhile (`None` when it holds none).
    pub fn io_waiter(&self) -> Option<Arc<dyn kplane_storage::io_wait::IoWait>> {
        match &self.held {
            Held::Seats(g) => Some(g.clone()),
            _ => None,
        }
    }
}

impl Drop for Seat {
    fn drop(&mut self) {
        match &self.held {
            Held::Exempt => {}
            Held::Syncer(fc) => {
                fc.syncer_in_use.fetch_sub(1, Ordering::AcqRel);
            }
            Held::Seats(g) => {
                let held = g.state.swap(DONE, Ordering::AcqRel) == HELD;
                g.fc.finished(&g.cluster, if held { g.seats } else { 0 });
            }
        }
    }
}

/// A request waiting in its queue; taken out of it if the request gives up (its client
/// went away, or it waited too long).
struct Pending<'a> {
    fc: &'a Arc<FlowControl>,
    cluster: &'a Arc<str>,
    user: &'a str,
    id: u64,
    seats: u32,
    rx: oneshot::Receiver<()>,
    done: bool,
}

impl Pending<'_> {
    /// Leaves the queue; `true` when the request was given its seats meanwhile (it then
    /// holds them).
    fn leave(&mut self) -> bool {
        self.done = true;
        let mut q = self.fc.queues();
        if q.remove(self.cluster, self.user, self.id).is_some() {
            self.fc.waiting.fetch_sub(1, Ordering::SeqCst);
            // It may have been the request whose turn it was, holding the others back.
            self.fc.dispatch(&mut q);
            drop(q);
            let mut shard = self.fc.shard(self.cluster);
            if let Some(c) = shard.get_mut(&**self.cluster) {
                c.dequeued(self.seats);
            }
            return false;
        }
        drop(q);
        // Dispatched under the queue lock before we took it: the grant is in the channel.
        self.rx.try_recv().is_ok()
    }
}

impl Drop for Pending<'_> {
    fn drop(&mut self) {
        if !self.done && self.leave() {
            self.fc.release(self.cluster, self.seats);
        }
    }
}

/// Counters of `/metrics`.
#[derive(Debug, Default)]
struct Stats {
    dispatched: AtomicU64,
    dispatched_exempt: AtomicU64,
    dispatched_syncer: AtomicU64,
    rejected_queue_full: AtomicU64,
    rejected_time_out: AtomicU64,
    executing_requests: AtomicI64,
    /// Times a request's seats were lent while it waited for the store.
    lent: AtomicU64,
    /// Requests past their cluster's share whose handlers ran at the lowered priority.
    lowered: AtomicU64,
    waited: Mutex<WaitHistogram>,
}

#[derive(Debug, Default)]
struct WaitHistogram {
    /// Per outcome (executed, refused): bucket counts, sum, count.
    buckets: [[u64; 13]; 2],
    sum: [f64; 2],
    count: [u64; 2],
}

/// The server's seats, per-cluster counts and queues.
#[derive(Debug)]
pub struct FlowControl {
    config: FlowConfig,
    in_use: AtomicU32,
    waiting: AtomicU32,
    /// Clusters holding seats now.
    busy: AtomicU32,
    /// Whether the request whose turn it is waits for the server's seats: requests then
    /// queue rather than take freed seats ahead of it.
    blocked: AtomicBool,
    /// When this was made (the clock of `shared_until_ms`).
    epoch: Instant,
    /// A hash of the cluster of the last request (0: none yet), and when it was noted
    /// (ms after `epoch`).
    last_cluster: AtomicU64,
    last_seen_ms: AtomicU64,
    /// Until when (ms after `epoch`) the caps bind because clusters take turns.
    shared_until_ms: AtomicU64,
    syncer_in_use: AtomicU32,
    hasher: RandomState,
    shards: Box<[Mutex<Shard>]>,
    queues: Mutex<Queues<oneshot::Sender<()>>>,
    stats: Stats,
}

impl FlowControl {
    pub fn new(config: FlowConfig) -> Arc<FlowControl> {
        Arc::new(FlowControl {
            config,
            in_use: AtomicU32::new(0),
            waiting: AtomicU32::new(0),
            busy: AtomicU32::new(0),
            blocked: AtomicBool::new(false),
            epoch: Instant::now(),
            last_cluster: AtomicU64::new(0),
            last_seen_ms: AtomicU64::new(0),
            shared_until_ms: AtomicU64::new(0),
            syncer_in_use: AtomicU32::new(0),
            hasher: RandomState::new(),
            shards: (0..SHARDS).map(|_| Mutex::new(HashMap::new())).collect(),
            queues: Mutex::new(Queues::default()),
            stats: Stats::default(),
        })
    }

    pub fn config(&self) -> &FlowConfig {
        &self.config
    }

    /// Counts a request past its cluster's share handled at the lowered priority
    /// ([`lowered`]).
    pub fn count_lowered(&self) {
        self.stats.lowered.fetch_add(1, Ordering::Relaxed);
    }

    /// Seats in use, all clusters together.
    pub fn seats_in_use(&self) -> u32 {
        self.in_use.load(Ordering::SeqCst)
    }

    /// Requests waiting for seats.
    pub fn waiting(&self) -> u32 {
        self.waiting.load(Ordering::SeqCst)
    }

    /// Seats for a request of `user` in `cluster` taking `seats` seats, waiting at most
    /// `wait` (capped at the configured wait) for them.
    pub async fn admit(
        self: &Arc<Self>,
        cluster: &str,
        user: &UserInfo,
        seats: u32,
        wait: Option<Duration>,
    ) -> Result<Seat, Rejection> {
        if user.in_group("system:masters") {
            self.stats.dispatched_exempt.fetch_add(1, Ordering::Relaxed);
            return Ok(Seat { held: Held::Exempt });
        }
        self.acquire(cluster, &user.username, seats, wait).await
    }

    /// Seats for a request on the sync endpoint: one of its own seats while any is free,
    /// else a place in the queues like a tenant's.
    pub async fn admit_syncer(self: &Arc<Self>, user: &UserInfo) -> Result<Seat, Rejection> {
        if user.in_group("system:masters") {
            self.stats.dispatched_exempt.fetch_add(1, Ordering::Relaxed);
            return Ok(Seat { held: Held::Exempt });
        }
        let limit = self.config.syncer_seats;
        let got = self
            .syncer_in_use
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < limit).then_some(n + 1)
            })
            .is_ok();
        if got {
            self.stats.dispatched_syncer.fetch_add(1, Ordering::Relaxed);
            return Ok(Seat {
                held: Held::Syncer(self.clone()),
            });
        }
        self.acquire(SYNC_FLOW, &user.username, estimate::MIN_SEATS, None)
            .await
    }

    async fn acquire(
        self: &Arc<Self>,
        cluster: &str,
        user: &str,
        seats: u32,
        wait: Option<Duration>,
    ) -> Result<Seat, Rejection> {
        let seats = seats.clamp(estimate::MIN_SEATS, estimate::MAX_SEATS);
        let started = Instant::now();
        self.note_cluster(cluster);
        let past_share;
        // The path without waiting: nothing of this cluster queued, room under its cap and
        // in the server.
        let key = {
            let mut shard = self.shard(cluster);
            if shard.len() >= SHARD_SWEEP_AT && !shard.contains_key(cluster) {
                shard.retain(|_, c| c.executing > 0 || c.queued > 0);
            }
            let key = match shard.get_key_value(cluster) {
                Some((k, _)) => k.clone(),
                None => Arc::from(cluster),
            };
            let entry = shard.entry(key.clone()).or_default();
            if entry.queued == 0
                && !self.blocked.load(Ordering::SeqCst)
                && self.within_cap(entry, seats)
                && self.take_server_seats(seats)
            {
                self.add_seats(entry, seats);
                drop(shard);
                return Ok(self.granted(key, seats, started, None));
            }
            // Past its share: over its cap counting its requests already waiting (not
            // when they all wait only for the server's seats). The sync endpoint's queue
            // is every syncer's, not a cluster's: never lowered.
            past_share = cluster != SYNC_FLOW
                && !self.within_cap(entry, entry.queued_seats.saturating_add(seats));
            entry.queued += 1;
            entry.queued_seats = entry.queued_seats.saturating_add(seats);
            key
        };
        // Wait in the cluster's queue.
        let (tx, rx) = oneshot::channel();
        let id = {
            let mut q = self.queues();
            match q.push(
                &key,
                user,
                seats,
                tx,
                self.config.max_queued_per_cluster as usize,
            ) {
                Ok(id) => {
                    self.waiting.fetch_add(1, Ordering::SeqCst);
                    self.dispatch(&mut q);
                    id
                }
                Err(_) => {
                    drop(q);
                    let mut shard = self.shard(&key);
                    if let Some(c) = shard.get_mut(&*key) {
                        c.dequeued(seats);
                    }
                    drop(shard);
                    self.refused(Rejection::QueueFull, started);
                    return Err(Rejection::QueueFull);
                }
            }
        };
        let mut pending = Pending {
            fc: self,
            cluster: &key,
            user,
            id,
            seats,
            rx,
            done: false,
        };
        let limit = wait.map_or(self.config.queue_wait, |w| w.min(self.config.queue_wait));
        match tokio::time::timeout(limit, &mut pending.rx).await {
            Ok(Ok(())) => {
                pending.done = true;
                Ok(self.granted(key.clone(), seats, started, Some(past_share)))
            }
            // The sender is never dropped without sending while the request is queued;
            // treat it like a timeout.
            Ok(Err(_)) | Err(_) => {
                if pending.leave() {
                    return Ok(self.granted(key.clone(), seats, started, Some(past_share)));
                }
                self.refused(Rejection::TimeOut, started);
                Err(Rejection::TimeOut)
            }
        }
    }

    /// The seats of a request that waited (`Some(past_share)`: whether its cluster was
    /// past its share when it came) or found them free (`None`).
    fn granted(
        self: &Arc<Self>,
        cluster: Arc<str>,
        seats: u32,
        started: Instant,
        waited: Option<bool>,
    ) -> Seat {
        self.stats.dispatched.fetch_add(1, Ordering::Relaxed);
        self.stats
            .executing_requests
            .fetch_add(1, Ordering::Relaxed);
        // Requests that did not wait are counted by `dispatched` alone (no lock on their
        // path); the histogram adds them to its zero bucket when rendered.
        if waited.is_some() {
            self.observe_wait(0, started.elapsed().as_secs_f64());
        }
        Seat {
            held: Held::Seats(Arc::new(Granted {
                fc: self.clone(),
                cluster,
                seats,
                past_share: waited.unwrap_or(false),
                state: AtomicU8::new(HELD),
            })),
        }
    }

    fn refused(&self, why: Rejection, started: Instant) {
        match why {
            Rejection::QueueFull => &self.stats.rejected_queue_full,
            Rejection::TimeOut => &self.stats.rejected_time_out,
        }
        .fetch_add(1, Ordering::Relaxed);
        self.observe_wait(1, started.elapsed().as_secs_f64());
    }

    fn observe_wait(&self, outcome: usize, secs: f64) {
        if let Ok(mut h) = self.stats.waited.lock() {
            if let Some(i) = WAIT_BUCKETS.iter().position(|b| secs <= *b) {
                h.buckets[outcome][i] += 1;
            }
            h.sum[outcome] += secs;
            h.count[outcome] += 1;
        }
    }

    /// Whether a cluster holding `c`'s seats may take `seats` more: within its cap, or
    /// while it is alone: no other cluster holds seats and none made a request within the
    /// shared window (the cap shares the cores between clusters; a cluster alone may use
    /// them all).
    fn within_cap(&self, c: &ClusterSeats, seats: u32) -> bool {
        c.executing + seats <= self.config.max_seats_per_cluster
            || (self.busy.load(Ordering::SeqCst) == u32::from(c.executing > 0)
                && self.now_ms() >= self.shared_until_ms.load(Ordering::Relaxed))
    }

    /// Milliseconds since this was made.
    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Notes a request of `cluster`: one of another cluster than the last request's,
    /// within the shared window of it, makes the caps bind for the shared window.
    fn note_cluster(&self, cluster: &str) {
        let h = self.hasher.hash_one(cluster) | 1;
        let window = u64::try_from(self.config.shared_window.as_millis()).unwrap_or(0);
        let now = self.now_ms();
        let last = self.last_cluster.load(Ordering::Relaxed);
        let seen = self.last_seen_ms.load(Ordering::Relaxed);
        if last == h {
            // A stream of one cluster's requests writes its time a few times a window.
            if now.saturating_sub(seen) > window / 4 {
                self.last_seen_ms.store(now, Ordering::Relaxed);
            }
            return;
        }
        // Shared for more than half a window still: nothing to write (under many tenants
        // these words are written a few times a window, not on every request).
        if self.shared_until_ms.load(Ordering::Relaxed) > now.saturating_add(window / 2) {
            return;
        }
        if last != 0 && now.saturating_sub(seen) < window {
            self.shared_until_ms
                .store(now.saturating_add(window), Ordering::Relaxed);
        }
        self.last_cluster.store(h, Ordering::Relaxed);
        self.last_seen_ms.store(now, Ordering::Relaxed);
    }

    /// Adds `seats` to a cluster's (its shard locked), counting it busy from its first.
    fn add_seats(&self, c: &mut ClusterSeats, seats: u32) {
        if c.executing == 0 && seats > 0 {
            self.busy.fetch_add(1, Ordering::SeqCst);
        }
        c.executing += seats;
    }

    /// Takes `seats` off a cluster's (its shard locked), not busy once it holds none.
    fn sub_seats(&self, c: &mut ClusterSeats, seats: u32) {
        let before = c.executing;
        c.executing = before.saturating_sub(seats);
        if before > 0 && c.executing == 0 {
            self.busy.fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Takes `seats` of the server's if that many are free.
    fn take_server_seats(&self, seats: u32) -> bool {
        let max = self.config.max_seats;
        self.in_use
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| {
                (n + seats <= max).then_some(n + seats)
            })
            .is_ok()
    }

    /// A request ends: its `seats` (0 when they are in the pool already) go back.
    fn finished(&self, cluster: &str, seats: u32) {
        self.stats
            .executing_requests
            .fetch_sub(1, Ordering::Relaxed);
        if seats > 0 {
            self.release(cluster, seats);
        }
    }

    /// Lends a waiting request's seats to the pool.
    fn lend(&self, cluster: &str, seats: u32) {
        self.stats.lent.fetch_add(1, Ordering::Relaxed);
        self.release(cluster, seats);
    }

    /// Takes lent seats back once the request runs again: at once, even past the caps
    /// (what is left of a write after its commit is short).
    fn take_back(&self, cluster: &str, seats: u32) {
        {
            let mut shard = self.shard(cluster);
            match shard.get_mut(cluster) {
                Some(e) => self.add_seats(e, seats),
                None => self.add_seats(shard.entry(Arc::from(cluster)).or_default(), seats),
            }
        }
        self.in_use.fetch_add(seats, Ordering::SeqCst);
    }

    /// Gives `seats` of `cluster` back to the pool and lets waiting requests run.
    fn release(&self, cluster: &str, seats: u32) {
        {
            let mut shard = self.shard(cluster);
            if let Some(c) = shard.get_mut(cluster) {
                self.sub_seats(c, seats);
            }
        }
        self.in_use.fetch_sub(seats, Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) > 0 {
            let mut q = self.queues();
            self.dispatch(&mut q);
        }
    }

    /// Runs waiting requests while seats allow (with the queue lock held).
    fn dispatch(&self, q: &mut Queues<oneshot::Sender<()>>) {
        let mut server_full = false;
        while q.len() > 0 {
            server_full = false;
            let next = q.pop(|cluster, seats| {
                let mut shard = self.shard(cluster);
                let Some(c) = shard.get_mut(cluster) else {
                    return Fit::ClusterFull;
                };
                if !self.within_cap(c, seats) {
                    return Fit::ClusterFull;
                }
                if !self.take_server_seats(seats) {
                    server_full = true;
                    return Fit::ServerFull;
                }
                self.add_seats(c, seats);
                c.dequeued(seats);
                Fit::Yes
            });
            let Some((cluster, waiter)) = next else {
                break;
            };
            self.waiting.fetch_sub(1, Ordering::SeqCst);
            if waiter.payload.send(()).is_err() {
                // The request is gone: its seats go straight back.
                {
                    let mut shard = self.shard(&cluster);
                    if let Some(c) = shard.get_mut(&*cluster) {
                        self.sub_seats(c, waiter.seats);
                    }
                }
                self.in_use.fetch_sub(waiter.seats, Ordering::SeqCst);
            }
        }
        // Set under the queue lock: cleared once nothing waits for the server.
        self.blocked
            .store(server_full && q.len() > 0, Ordering::SeqCst);
    }

    fn shard(&self, cluster: &str) -> MutexGuard<'_, Shard> {
        let i = (self.hasher.hash_one(cluster) as usize) % SHARDS;
        self.shards[i].lock().unwrap_or_else(|p| p.into_inner())
    }

    fn queues(&self) -> MutexGuard<'_, Queues<oneshot::Sender<()>>> {
        self.queues.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Appends the `apiserver_flowcontrol_*` series (kube-apiserver's names; the priority
    /// levels are `exempt`, `kplane-syncers` for the sync endpoint's own seats and
    /// `kplane-tenants` for everything else, each with a flow schema of the same name).
    pub fn render_metrics(&self, out: &mut String) {
        const T: &str = "kplane-tenants";
        let s = &self.stats;
        let gauge = |out: &mut String, name: &str, help: &str, v: f64| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge");
            let _ = writeln!(
                out,
                "{name}{{flow_schema=\"{T}\",priority_level=\"{T}\"}} {v}"
            );
        };
        gauge(
            out,
            "apiserver_flowcontrol_current_executing_requests",
            "Requests executing (holding seats).",
            s.executing_requests.load(Ordering::Relaxed).max(0) as f64,
        );
        gauge(
            out,
            "apiserver_flowcontrol_current_executing_seats",
            "Seats held by executing requests.",
            self.seats_in_use() as f64,
        );
        gauge(
            out,
            "apiserver_flowcontrol_current_inqueue_requests",
            "Requests waiting in the per-cluster queues.",
            self.waiting() as f64,
        );
        let _ = writeln!(
            out,
            "# HELP apiserver_flowcontrol_nominal_limit_seats Seats of each priority level.\n# TYPE apiserver_flowcontrol_nominal_limit_seats gauge"
        );
        let _ = writeln!(
            out,
            "apiserver_flowcontrol_nominal_limit_seats{{priority_level=\"{T}\"}} {}",
            self.config.max_seats
        );
        let _ = writeln!(
            out,
            "apiserver_flowcontrol_nominal_limit_seats{{priority_level=\"kplane-syncers\"}} {}",
            self.config.syncer_seats
        );
        let _ = writeln!(
            out,
            "# HELP apiserver_flowcontrol_dispatched_requests_total Requests that were given seats.\n# TYPE apiserver_flowcontrol_dispatched_requests_total counter"
        );
        for (level, n) in [
            ("exempt", &s.dispatched_exempt),
            ("kplane-syncers", &s.dispatched_syncer),
            (T, &s.dispatched),
        ] {
            let _ = writeln!(
                out,
                "apiserver_flowcontrol_dispatched_requests_total{{flow_schema=\"{level}\",priority_level=\"{level}\"}} {}",
                n.load(Ordering::Relaxed)
            );
        }
        let _ = writeln!(
            out,
            "# HELP apiserver_flowcontrol_rejected_requests_total Requests refused with 429.\n# TYPE apiserver_flowcontrol_rejected_requests_total counter"
        );
        for (why, n) in [
            (Rejection::QueueFull, &s.rejected_queue_full),
            (Rejection::TimeOut, &s.rejected_time_out),
        ] {
            let _ = writeln!(
                out,
                "apiserver_flowcontrol_rejected_requests_total{{flow_schema=\"{T}\",priority_level=\"{T}\",reason=\"{}\"}} {}",
                why.label(),
                n.load(Ordering::Relaxed)
            );
        }
        let _ = writeln!(
            out,
            "# HELP kplane_flowcontrol_seats_lent_total Times a request's seats served others while it waited for the store's writer.\n# TYPE kplane_flowcontrol_seats_lent_total counter\nkplane_flowcontrol_seats_lent_total {}",
            s.lent.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP kplane_flowcontrol_lowered_requests_total Requests of a logical cluster past its share whose handlers ran at a lower CPU priority.\n# TYPE kplane_flowcontrol_lowered_requests_total counter\nkplane_flowcontrol_lowered_requests_total {}",
            s.lowered.load(Ordering::Relaxed)
        );
        let name = "apiserver_flowcontrol_request_wait_duration_seconds";
        let _ = writeln!(
            out,
            "# HELP {name} How long requests waited in their queue.\n# TYPE {name} histogram"
        );
        if let Ok(h) = s.waited.lock() {
            let dispatched = s.dispatched.load(Ordering::Relaxed);
            for (i, execute) in ["true", "false"].iter().enumerate() {
                let labels =
                    format!("execute=\"{execute}\",flow_schema=\"{T}\",priority_level=\"{T}\"");
                // Executed requests that never queued waited zero seconds.
                let immediate = if i == 0 {
                    dispatched.saturating_sub(h.count[0])
                } else {
                    0
                };
                let mut cumulative = immediate;
                for (b, bound) in WAIT_BUCKETS.iter().enumerate() {
                    cumulative += h.buckets[i][b];
                    let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{bound}\"}} {cumulative}");
                }
                let count = h.count[i] + immediate;
                let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {count}");
                let _ = writeln!(out, "{name}_sum{{{labels}}} {}", h.sum[i]);
                let _ = writeln!(out, "{name}_count{{{labels}}} {count}");
            }
        }
    }
}
