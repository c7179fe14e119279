//! Watch fan-out, shared by every backend: the registry of live watchers, the dispatch of
//! committed events to them (called by the backend's writer once per write group), and the
//! receiving end of a watch. History is replayed through the backend's [`EventLog`]; the
//! hub never reads a backend's data directly.
//!
//! A watcher is a [`Slot`] whose bounded queue is its channel: dispatch pushes live events
//! into it and wakes the [`WatchReceiver`], which also generates progress notifications
//! while it is awaited. A live watch therefore has no task of its own; only a watcher that
//! starts behind the dispatched revision gets a task, which replays the event log, hands
//! over to live delivery without gap or duplicate, and ends. Dropping the receiver
//! unregisters the watcher.
//!
//! Watchers are indexed by `(cluster, resource, namespace)`, each level either a concrete
//! value or a wildcard, so dispatching one event visits only the buckets that can match
//! it (at most 8), never the full watcher list. Watchers of a cluster subtree
//! ([`Clusters::Subtree`]) have their own index by root cluster, looked up once per
//! ancestor of the event's cluster (`root`, `root:acme`, `root:acme:team-a` for an event in
//! `root:acme:team-a`), and only while such watchers exist. The writer never blocks on a watcher: a
//! watcher whose queue is (nearly) full gets [`CloseReason::TooSlow`] in the last free
//! slot and is dropped.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;

use crate::event_log::EventLog;
use crate::{CloseReason, Clusters, Error, Event, Prefix, Result, Revision, WatchEvent};

/// How long a closing watcher task waits for channel room to deliver its close notice.
const CLOSE_NOTICE_WAIT: Duration = Duration::from_secs(1);

/// Events replayed from the log per [`EventLog::read`].
pub const REPLAY_CHUNK: usize = 256;

/// While a watcher replays history, live events are buffered up to this many times its
/// channel capacity before it is declared too slow.
pub const REPLAY_BUFFER_FACTOR: usize = 8;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// One index level: watchers registered for a concrete value, or for any value.
struct Level<T> {
    any: Option<T>,
    named: HashMap<String, T>,
}

impl<T> Default for Level<T> {
    fn default() -> Self {
        Level {
            any: None,
            named: HashMap::new(),
        }
    }
}

impl<T: Default> Level<T> {
    fn entry(&mut self, k: Option<&String>) -> &mut T {
        match k {
            None => self.any.get_or_insert_with(T::default),
            Some(k) => self.named.entry(k.clone()).or_default(),
        }
    }

    fn get_mut(&mut self, k: Option<&String>) -> Option<&mut T> {
        match k {
            None => self.any.as_mut(),
            Some(k) => self.named.get_mut(k),
        }
    }

    fn remove(&mut self, k: Option<&String>) {
        match k {
            None => self.any = None,
            Some(k) => {
                self.named.remove(k);
            }
        }
    }

    /// The (up to two) children that match `k`.
    fn matching<'a>(&'a self, k: &str) -> impl Iterator<Item = &'a T> {
        self.any.iter().chain(self.named.get(k))
    }

    fn is_empty(&self) -> bool {
        self.any.is_none() && self.named.is_empty()
    }
}

type Bucket = HashMap<u64, Arc<Slot>>;
type NamespaceLevel = Level<Bucket>;
type ResourceLevel = Level<NamespaceLevel>;
type ClusterLevel = Level<ResourceLevel>;

#[derive(Default)]
struct Registry {
    index: ClusterLevel,
    /// Watchers of a subtree, by the subtree's root cluster.
    subtrees: HashMap<String, ResourceLevel>,
    next_id: u64,
    len: usize,
    closed: bool,
}

/// The clusters whose subtree contains `cluster`: its ancestors and itself.
fn subtree_roots(cluster: &str) -> impl Iterator<Item = &str> {
    cluster
        .match_indices(':')
        .map(|(i, _)| &cluster[..i])
        .chain(std::iter::once(cluster))
}

/// Every watcher of a registry, taken out of it.
type Taken = (ClusterLevel, HashMap<String, ResourceLevel>);

impl Registry {
    /// Removes every watcher and returns them.
    fn take_all(&mut self) -> Taken {
        self.len = 0;
        (
            std::mem::take(&mut self.index),
            std::mem::take(&mut self.subtrees),
        )
    }

    fn insert(&mut self, slot: Arc<Slot>) {
        let p = &slot.prefix;
        let res = match &p.cluster {
            Clusters::All => self.index.entry(None),
            Clusters::One(c) => self.index.entry(Some(c)),
            Clusters::Subtree(c) => self.subtrees.entry(c.clone()).or_default(),
        };
        res.entry(p.resource.as_ref())
            .entry(p.namespace.as_ref())
            .insert(slot.id, slot.clone());
        self.len += 1;
    }

    /// The resource levels that can hold watchers of events in `cluster`.
    fn matching<'a>(&'a self, cluster: &'a str) -> impl Iterator<Item = &'a ResourceLevel> {
        let subtrees = (!self.subtrees.is_empty())
            .then(|| subtree_roots(cluster).filter_map(|root| self.subtrees.get(root)))
            .into_iter()
            .flatten();
        self.index.matching(cluster).chain(subtrees)
    }

    fn remove(&mut self, id: u64, p: &Prefix) {
        let res = match &p.cluster {
            Clusters::All => self.index.get_mut(None),
            Clusters::One(c) => self.index.get_mut(Some(c)),
            Clusters::Subtree(c) => self.subtrees.get_mut(c),
        };
        let Some(res) = res else {
            return;
        };
        let Some(ns) = res.get_mut(p.resource.as_ref()) else {
            return;
        };
        let Some(bucket) = ns.get_mut(p.namespace.as_ref()) else {
            return;
        };
        if bucket.remove(&id).is_some() {
            self.len -= 1;
        }
        if bucket.is_empty() {
            ns.remove(p.namespace.as_ref());
        }
        if ns.is_empty() {
            res.remove(p.resource.as_ref());
        }
        if res.is_empty() {
            match &p.cluster {
                Clusters::All => self.index.remove(None),
                Clusters::One(c) => self.index.remove(Some(c)),
                Clusters::Subtree(c) => {
                    self.subtrees.remove(c);
                }
            }
        }
    }
}

/// Delivery state of one watcher, shared by the writer (dispatch), the replay task (while
/// there is history to replay) and the [`WatchReceiver`].
enum Phase {
    /// Replaying the log; live events are parked here.
    Replaying(Vec<Arc<Event>>),
    /// Dispatch delivers live events directly into the queue.
    Live,
}

struct SlotState {
    phase: Phase,
    /// Events for the receiver, oldest first: the watcher's channel. Bounded by the hub's
    /// channel capacity.
    queue: VecDeque<WatchEvent>,
    /// Highest revision delivered (or covered by replay); live events at or below it are
    /// duplicates.
    last_rev: Revision,
    /// Whether an event was queued since the last progress tick.
    sent_since_tick: bool,
    /// Set when the watcher was closed by dispatch (too slow) or shutdown.
    closed: Option<CloseReason>,
    /// Whether the `Closed` notice was put into the queue.
    notice_sent: bool,
    /// Nothing more will be queued: once the queue is drained, the stream ends.
    ended: bool,
    /// The [`WatchReceiver`] was dropped.
    receiver_gone: bool,
}

impl SlotState {
    /// Marks the watcher closed and, if possible, tells it why. In the live phase there is
    /// always room: dispatch and progress keep one queue slot free.
    /// Returns whether the notice is in the queue.
    fn close(&mut self, reason: CloseReason, capacity: usize) -> bool {
        if self.closed.is_none() {
            self.closed = Some(reason);
        }
        if let Phase::Replaying(buf) = &mut self.phase {
            buf.clear();
        }
        if !self.notice_sent && self.queue.len() < capacity {
            self.queue.push_back(WatchEvent::Closed(reason));
            self.notice_sent = true;
        }
        self.notice_sent
    }

    /// Whether a live event or progress notification fits, keeping the last slot free for
    /// the close notice.
    fn has_room(&self, capacity: usize) -> bool {
        self.queue.len().saturating_add(1) < capacity
    }
}

/// One registered watcher. In the live phase it is the whole watch: dispatch pushes into
/// its queue and wakes the receiver; there is no task per watcher.
pub(crate) struct Slot {
    id: u64,
    prefix: Prefix,
    from: Revision,
    state: Mutex<SlotState>,
    /// Wakes the receiver: something was queued or the stream ended.
    readable: Notify,
    /// Wakes the replay task: queue room, the watcher was closed or the receiver dropped.
    wake_task: Notify,
}

enum Delivery {
    Ok,
    /// Remove this watcher from the registry.
    Drop,
}

impl Slot {
    /// Called by the writer for each matching committed event. Never blocks.
    fn deliver(&self, ev: &Arc<Event>, capacity: usize, replay_buffer: usize) -> Delivery {
        let mut st = lock(&self.state);
        if st.closed.is_some() || st.receiver_gone {
            return Delivery::Drop;
        }
        let rev = ev.kv.mod_revision;
        let too_slow = match &mut st.phase {
            Phase::Replaying(buf) => {
                if buf.len() >= replay_buffer {
                    true
                } else {
                    buf.push(ev.clone());
                    false
                }
            }
            Phase::Live => {
                if rev <= st.last_rev {
                    return Delivery::Ok;
                }
                if st.has_room(capacity) {
                    st.queue.push_back(WatchEvent::Event(ev.clone()));
                    st.last_rev = rev;
                    st.sent_since_tick = true;
                    drop(st);
                    self.readable.notify_one();
                    return Delivery::Ok;
                }
                true
            }
        };
        if !too_slow {
            return Delivery::Ok;
        }
        self.close_locked(st, CloseReason::TooSlow, capacity);
        Delivery::Drop
    }

    fn close(&self, reason: CloseReason, capacity: usize) {
        self.close_locked(lock(&self.state), reason, capacity);
    }

    /// In the live phase: queues the notice and ends the stream. During replay the task
    /// owns the queue's tail; it is told and sends the notice itself.
    fn close_locked(
        &self,
        mut st: MutexGuard<'_, SlotState>,
        reason: CloseReason,
        capacity: usize,
    ) {
        if matches!(st.phase, Phase::Live) {
            st.close(reason, capacity);
            st.ended = true;
            drop(st);
            self.readable.notify_one();
        } else {
            if st.closed.is_none() {
                st.closed = Some(reason);
            }
            drop(st);
            self.wake_task.notify_one();
        }
    }
}

/// The registry of watchers plus the revision up to which events have been dispatched.
///
/// A backend owns one hub: its writer calls [`Hub::publish`] once per durable write group,
/// its `watch` calls [`Hub::watch`] with its [`EventLog`], and its shutdown calls
/// [`Hub::close_all`].
pub struct Hub {
    registry: Mutex<Registry>,
    /// Every committed event with a revision at or below this has been dispatched.
    dispatched: AtomicU64,
    channel_capacity: usize,
    shutdown: tokio::sync::watch::Sender<bool>,
}

impl Hub {
    /// A hub with everything up to `dispatched` (the backend's current revision when it
    /// opens) already dispatched, whose watchers' queues hold `channel_capacity` entries.
    pub fn new(dispatched: Revision, channel_capacity: usize) -> Hub {
        Hub {
            registry: Mutex::new(Registry::default()),
            dispatched: AtomicU64::new(dispatched),
            channel_capacity: channel_capacity.max(2),
            shutdown: tokio::sync::watch::Sender::new(false),
        }
    }

    /// The revision up to which events have been dispatched (for tests).
    #[cfg(test)]
    pub(crate) fn dispatched(&self) -> Revision {
        self.dispatched.load(Ordering::Acquire)
    }

    /// Number of registered watchers.
    pub fn watcher_count(&self) -> usize {
        lock(&self.registry).len
    }

    fn replay_buffer(&self) -> usize {
        self.channel_capacity.saturating_mul(REPLAY_BUFFER_FACTOR)
    }

    /// Dispatches one committed write group (events in revision order; `last_rev` is the
    /// group's last revision). Called by the backend's publishing path only (sled: its
    /// writer; PostgreSQL: its writer and log tailer under one lock), after the group is
    /// durable, one group at a time and in revision order.
    pub fn publish(&self, events: Vec<Event>, last_rev: Revision) {
        let mut reg = lock(&self.registry);
        if reg.len > 0 {
            let capacity = self.channel_capacity;
            let replay_buffer = self.replay_buffer();
            let mut dropped: Vec<(u64, Prefix)> = Vec::new();
            for ev in events {
                let ev = Arc::new(ev);
                let key = &ev.kv.key;
                for res in reg.matching(&key.cluster) {
                    for ns in res.matching(&key.resource) {
                        for bucket in ns.matching(&key.namespace) {
                            for slot in bucket.values() {
                                if let Delivery::Drop = slot.deliver(&ev, capacity, replay_buffer) {
                                    dropped.push((slot.id, slot.prefix.clone()));
                                }
                            }
                        }
                    }
                }
            }
            for (id, prefix) in dropped {
                reg.remove(id, &prefix);
            }
        }
        // Stored under the registry lock: a watcher registered after this point replays
        // everything up to `last_rev` from the log.
        self.dispatched.store(last_rev, Ordering::Release);
    }

    /// Closes every watcher with `ShuttingDown` and refuses new ones.
    pub fn close_all(&self) {
        let mut reg = lock(&self.registry);
        reg.closed = true;
        let taken = reg.take_all();
        drop(reg);
        self.close_slots(taken, CloseReason::ShuttingDown);
        self.shutdown.send_replace(true);
    }

    /// Closes every watcher with `reason` and moves the dispatched revision to `rev`
    /// without dispatching what lies between: for a backend that can no longer deliver
    /// those events (they left its event log before it published them). New watchers are
    /// still accepted; one registered after this call replays from the log up to `rev`.
    pub fn restart_at(&self, rev: Revision, reason: CloseReason) {
        let mut reg = lock(&self.registry);
        let taken = reg.take_all();
        // Under the registry lock, like `publish`: a watcher registered after this point
        // replays up to `rev` from the log.
        self.dispatched.fetch_max(rev, Ordering::AcqRel);
        drop(reg);
        self.close_slots(taken, reason);
    }

    fn close_slots(&self, (index, subtrees): Taken, reason: CloseReason) {
        let levels = index.any.iter().chain(index.named.values());
        for res in levels.chain(subtrees.values()) {
            for ns in res.any.iter().chain(res.named.values()) {
                for bucket in ns.any.iter().chain(ns.named.values()) {
                    for slot in bucket.values() {
                        slot.close(reason, self.channel_capacity);
                    }
                }
            }
        }
    }

    fn unregister(&self, slot: &Slot) {
        lock(&self.registry).remove(slot.id, &slot.prefix);
    }

    /// Registers a watcher of the changes under `prefix` after `from`. The log's
    /// compaction point is read after registration to validate `from`. A watcher with
    /// history to replay gets a task, which holds `log` until the watcher is live; one
    /// that starts at the dispatched revision is live at once and needs none.
    pub fn watch(
        self: &Arc<Self>,
        log: Arc<dyn EventLog>,
        prefix: &Prefix,
        from: Revision,
        progress_every: Option<Duration>,
    ) -> Result<WatchReceiver> {
        let mut reg = lock(&self.registry);
        if reg.closed {
            return Err(Error::ShuttingDown);
        }
        reg.next_id += 1;
        let slot = Arc::new(Slot {
            id: reg.next_id,
            prefix: prefix.clone(),
            from,
            state: Mutex::new(SlotState {
                phase: Phase::Replaying(Vec::new()),
                queue: VecDeque::new(),
                last_rev: from,
                sent_since_tick: false,
                closed: None,
                notice_sent: false,
                ended: false,
                receiver_gone: false,
            }),
            readable: Notify::new(),
            wake_task: Notify::new(),
        });
        reg.insert(slot.clone());
        let snapshot = self.dispatched.load(Ordering::Acquire);
        drop(reg);
        let compacted_now = log.compacted_revision();
        if from < compacted_now {
            self.unregister(&slot);
            return Err(Error::Compacted {
                requested: from,
                compacted: compacted_now,
            });
        }
        let receiver = WatchReceiver {
            hub: self.clone(),
            slot: slot.clone(),
            progress_every,
            ticker: None,
            map: None,
        };
        let live_now = from >= snapshot && {
            // Nothing to replay: go live here unless dispatch already parked events (or
            // closed the watcher), which the task then hands over.
            let mut st = lock(&slot.state);
            match &st.phase {
                Phase::Replaying(buf) if buf.is_empty() && st.closed.is_none() => {
                    st.phase = Phase::Live;
                    true
                }
                _ => false,
            }
        };
        if !live_now {
            let task = ReplayTask {
                hub: self.clone(),
                log,
                slot,
                snapshot,
                shutdown: self.shutdown.subscribe(),
            };
            tokio::spawn(task.run());
        }
        Ok(receiver)
    }
}

/// A live watch: the receiving end of a watcher's queue. Dropping it unregisters the
/// watcher. Progress notifications are generated here, on a timer that runs only while
/// [`WatchReceiver::recv`] is awaited, so a watch costs no task of its own.
pub struct WatchReceiver {
    hub: Arc<Hub>,
    slot: Arc<Slot>,
    progress_every: Option<Duration>,
    /// Started when the watcher goes live, like the task's ticker was.
    ticker: Option<tokio::time::Interval>,
    /// Applied to each change on its way out ([`WatchReceiver::map_events`]).
    map: Option<EventMap>,
}

/// What [`WatchReceiver::map_events`] applies to each change.
pub type EventMap = Arc<dyn Fn(Arc<crate::Event>) -> Arc<crate::Event> + Send + Sync>;

impl std::fmt::Debug for WatchReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchReceiver")
            .field("id", &self.slot.id)
            .finish_non_exhaustive()
    }
}

impl WatchReceiver {
    /// This watch with `map` applied to each change it delivers (a store decorator's view
    /// of the values, such as the decrypting one of `encryption`).
    pub fn map_events(mut self, map: EventMap) -> WatchReceiver {
        self.map = Some(map);
        self
    }

    /// The next event; `None` once the watch has ended (after [`WatchEvent::Closed`], or
    /// when the notice could not be delivered). Cancel safe.
    pub async fn recv(&mut self) -> Option<WatchEvent> {
        loop {
            let live = {
                let mut st = lock(&self.slot.state);
                if let Some(ev) = self.pop(&mut st) {
                    return Some(ev);
                }
                if st.ended {
                    return None;
                }
                matches!(st.phase, Phase::Live) && st.closed.is_none()
            };
            if live && self.ticker.is_none() {
                if let Some(every) = self.progress_every {
                    let start = tokio::time::Instant::now() + every;
                    let mut t = tokio::time::interval_at(start, every);
                    t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                    self.ticker = Some(t);
                }
            }
            let readable = self.slot.readable.notified();
            let ticked = match self.ticker.as_mut() {
                None => {
                    readable.await;
                    false
                }
                Some(t) => tokio::select! {
                    () = readable => false,
                    _ = t.tick() => true,
                },
            };
            if ticked {
                self.progress();
            }
        }
    }

    /// The next queued event, without waiting.
    pub fn try_recv(&mut self) -> Option<WatchEvent> {
        let mut st = lock(&self.slot.state);
        self.pop(&mut st)
    }

    fn pop(&self, st: &mut SlotState) -> Option<WatchEvent> {
        let ev = st.queue.pop_front()?;
        if matches!(st.phase, Phase::Replaying(_)) {
            // The replay task may be waiting for room.
            self.slot.wake_task.notify_one();
        }
        Some(match (ev, &self.map) {
            (WatchEvent::Event(e), Some(map)) => WatchEvent::Event(map(e)),
            (ev, _) => ev,
        })
    }

    /// Queues a progress notification if the watcher was idle since the last tick.
    fn progress(&self) {
        let mut st = lock(&self.slot.state);
        if st.closed.is_some() {
            return;
        }
        let idle = !st.sent_since_tick;
        st.sent_since_tick = false;
        let dispatched = self.hub.dispatched.load(Ordering::Acquire);
        if idle && dispatched >= self.slot.from && st.has_room(self.hub.channel_capacity) {
            let rev = dispatched.max(st.last_rev);
            st.queue.push_back(WatchEvent::Progress(rev));
        }
    }
}

impl Drop for WatchReceiver {
    fn drop(&mut self) {
        {
            let mut st = lock(&self.slot.state);
            st.receiver_gone = true;
            st.queue.clear();
            if let Phase::Replaying(buf) = &mut st.phase {
                buf.clear();
            }
        }
        self.hub.unregister(&self.slot);
        self.slot.wake_task.notify_one();
    }
}

/// Replays the log for a watcher that starts behind the dispatched revision, then hands
/// over to live delivery and ends.
struct ReplayTask {
    hub: Arc<Hub>,
    log: Arc<dyn EventLog>,
    slot: Arc<Slot>,
    /// Events up to here come from the log; later ones arrive live.
    snapshot: Revision,
    shutdown: tokio::sync::watch::Receiver<bool>,
}

impl Drop for ReplayTask {
    /// A task that stops before the watcher is live (closed, or cancelled with the runtime)
    /// ends the stream, so the receiver sees its end like a dropped channel sender.
    fn drop(&mut self) {
        let mut st = lock(&self.slot.state);
        if matches!(st.phase, Phase::Replaying(_)) {
            st.ended = true;
            drop(st);
            self.slot.readable.notify_one();
        }
    }
}

/// Why the replay task stopped early.
enum Stop {
    /// The receiver is gone; nothing more to send.
    ReceiverGone,
    /// Tell the watcher, then stop.
    Close(CloseReason),
}

impl ReplayTask {
    async fn run(mut self) {
        let stop = match self.replay_and_go_live().await {
            Ok(()) => return,
            Err(stop) => stop,
        };
        self.hub.unregister(&self.slot);
        if let Stop::Close(reason) = stop {
            let capacity = self.hub.channel_capacity;
            let sent = lock(&self.slot.state).close(reason, capacity);
            if !sent {
                // The queue is full (a stalled reader during replay): wait a little for
                // room, then give up; the receiver still sees the stream end.
                let deadline = tokio::time::Instant::now() + CLOSE_NOTICE_WAIT;
                while tokio::time::timeout_at(deadline, self.slot.wake_task.notified())
                    .await
                    .is_ok()
                {
                    let mut st = lock(&self.slot.state);
                    if st.receiver_gone || st.close(reason, capacity) {
                        break;
                    }
                }
            }
        }
        // Dropping the task ends the stream.
    }

    /// Queues one event, waiting for room.
    async fn send(&self, ev: WatchEvent) -> std::result::Result<(), Stop> {
        let capacity = self.hub.channel_capacity;
        loop {
            {
                let mut st = lock(&self.slot.state);
                if st.receiver_gone {
                    return Err(Stop::ReceiverGone);
                }
                if let Some(reason) = st.closed {
                    return Err(Stop::Close(reason));
                }
                if st.queue.len() < capacity {
                    st.queue.push_back(ev);
                    drop(st);
                    self.slot.readable.notify_one();
                    return Ok(());
                }
            }
            self.slot.wake_task.notified().await;
        }
    }

    fn check_open(&self) -> std::result::Result<(), Stop> {
        let st = lock(&self.slot.state);
        if st.receiver_gone {
            return Err(Stop::ReceiverGone);
        }
        match st.closed {
            Some(reason) => Err(Stop::Close(reason)),
            None => Ok(()),
        }
    }

    async fn replay_and_go_live(&mut self) -> std::result::Result<(), Stop> {
        let from = self.slot.from;
        let mut pos = from;
        while pos < self.snapshot {
            if *self.shutdown.borrow() {
                return Err(Stop::Close(CloseReason::ShuttingDown));
            }
            self.check_open()?;
            let page = self
                .log
                .read(&self.slot.prefix, pos, self.snapshot, REPLAY_CHUNK)
                .await;
            let (events, next_pos) = match page {
                Ok(p) if p.through > pos && p.through <= self.snapshot => (p.events, p.through),
                Ok(p) => {
                    tracing::warn!(
                        after = pos,
                        through = p.through,
                        "watch replay: the event log returned a page outside the range asked for"
                    );
                    return Err(Stop::Close(CloseReason::TooSlow));
                }
                Err(e) => {
                    tracing::warn!(error = %e, "watch replay failed");
                    return Err(Stop::Close(CloseReason::TooSlow));
                }
            };
            // Compaction publishes its revision before deleting log entries: if it is
            // still at or below `pos`, the page just read was complete.
            if self.log.compacted_revision() > pos {
                return Err(Stop::Close(CloseReason::TooSlow));
            }
            for ev in events {
                self.send(WatchEvent::Event(Arc::new(ev))).await?;
            }
            pos = next_pos;
        }
        // Hand over to live delivery: drain what dispatch parked meanwhile.
        let mut last = pos.max(from);
        loop {
            let parked = {
                let mut st = lock(&self.slot.state);
                if st.receiver_gone {
                    return Err(Stop::ReceiverGone);
                }
                if let Some(reason) = st.closed {
                    return Err(Stop::Close(reason));
                }
                match &mut st.phase {
                    Phase::Replaying(buf) if !buf.is_empty() => std::mem::take(buf),
                    _ => {
                        st.phase = Phase::Live;
                        st.last_rev = last;
                        break;
                    }
                }
            };
            for ev in parked {
                let rev = ev.kv.mod_revision;
                if rev > last {
                    self.send(WatchEvent::Event(ev)).await?;
                    last = rev;
                }
            }
        }
        // Lets a waiting receiver start its progress ticker.
        self.slot.readable.notify_one();
        Ok(())
    }
}
