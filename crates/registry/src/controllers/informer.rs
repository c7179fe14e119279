//! One shared, informer-like view of the whole store: a scan of every logical cluster
//! followed by one wildcard storage watch, fanned out to every registered
//! [`InformerHandler`]. One runs per process (`controllers::start`): the derived-state
//! handlers every replica needs (`crate::derived`: catalogs, cluster existence, RBAC and
//! SyncTarget caches, ...) are registered for good, and, while the process leads, the
//! controllers' handlers (the garbage collector's graph, the root-CA publisher, ...) join
//! them through a [`HandlerSlot`], after them. So each write costs one watch event and one
//! fan-out, and a pass is one scan, however many handlers follow the store. (The CRD write
//! path also rebuilds its cluster's catalog synchronously, before it answers, for
//! read-your-writes.)
//!
//! A pass reads the current revision `R`, tells every handler a resync begins
//! ([`InformerHandler::on_resync`]), replays every stored object as of `R` (`SCAN_PAGE`
//! objects per read, all at revision `R`: one consistent snapshot), tells them the replay
//! ended ([`InformerHandler::on_synced`]) and then delivers every change after `R`, in
//! revision order, from a watch starting at `R`. So each change reaches each handler once:
//! in the snapshot when it is at or before `R`, as an event when it is after. When the
//! watch closes because the informer fell behind, or `R` was compacted away (a scan that
//! outlived the event window), the next pass starts from a fresh scan; when the store shuts
//! down, the informer ends.
//!
//! Handlers in the slot are the pass's from its start: handlers put there later (a
//! leadership gained) start a new pass, so that they see a resync and a whole replay like
//! the others; handlers taken out (a leadership lost) get nothing more from the next event
//! on, without a new pass.
//!
//! Handlers run inline on the informer's task, in the order registered (the slot's last),
//! and must be quick (they update a map or queue work): a slow handler holds up every
//! other and, at worst, closes the watch.

use std::sync::Arc;
use std::time::Duration;

use kplane_storage::{CloseReason, Error as StorageError, EventType, KeyValue, Prefix, Revision};
use kplane_storage::{ListOptions, Storage, WatchEvent};
use tokio::sync::watch;

use crate::cluster_states::ClusterTable;

mod handler;
pub use handler::InformerHandler;

/// Objects read from storage at a time by the scan.
pub(crate) const SCAN_PAGE: usize = 1000;

/// How long the informer waits before a new pass after the store failed (not after it fell
/// behind: that pass starts at once).
const FAILURE_BACKOFF: Duration = Duration::from_secs(1);

/// Whether `cluster` is a pseudo-cluster of phase records (see
/// [`InformerHandler::follows_phases`]).
pub(crate) fn is_phase_record(cluster: &str) -> bool {
    cluster == crate::cluster_states::PHASES_CLUSTER || cluster == crate::archive::JOURNAL_CLUSTER
}

/// A set of handlers.
type Handlers = Arc<[Arc<dyn InformerHandler>]>;

/// Handlers that join a running [`Informer`] and leave it again ([`Informer::with_slot`]):
/// the leader's controllers'.
#[derive(Clone)]
pub(crate) struct HandlerSlot(Arc<watch::Sender<Option<Handlers>>>);

impl std::fmt::Debug for HandlerSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.0.borrow().as_ref().map_or(0, |h| h.len());
        f.debug_struct("HandlerSlot").field("handlers", &n).finish()
    }
}

impl Default for HandlerSlot {
    fn default() -> HandlerSlot {
        HandlerSlot(Arc::new(watch::Sender::new(None)))
    }
}

impl HandlerSlot {
    /// Puts `handlers` in the slot (replacing any there): the informer starts a new pass
    /// for them.
    pub(crate) fn set(&self, handlers: Vec<Arc<dyn InformerHandler>>) {
        self.0.send_replace(Some(handlers.into()));
    }

    /// Empties the slot: its handlers get nothing more from the informer's next event on.
    pub(crate) fn clear(&self) {
        self.0.send_replace(None);
    }

    /// Whether handlers are in the slot.
    #[cfg(test)]
    pub(crate) fn is_set(&self) -> bool {
        self.0.borrow().is_some()
    }
}

/// Hands `kv` to the handlers that see it: every handler unless `hide` hides its cluster,
/// then only the ones following phase records when it holds them.
fn deliver(
    handlers: &[Arc<dyn InformerHandler>],
    hide: Option<&ClusterTable>,
    kv: &KeyValue,
    deleted: bool,
    replay: bool,
) {
    let hidden = hide.is_some_and(|h| h.hides(&kv.key.cluster));
    if hidden && !is_phase_record(&kv.key.cluster) {
        return;
    }
    for h in handlers {
        if !hidden || h.follows_phases() {
            h.on_object(kv, deleted, replay);
        }
    }
}

/// What ended a pass.
#[derive(Debug, PartialEq, Eq)]
enum Next {
    /// Start over from a fresh scan (after `backoff`).
    Rescan { backoff: Option<Duration> },
    /// The store is shutting down.
    Stop,
}

/// The shared scan-then-watch of every logical cluster.
pub struct Informer {
    storage: Arc<dyn Storage>,
    handlers: Vec<Arc<dyn InformerHandler>>,
    page: usize,
    /// Clusters being imported (and import staging) are not shown to the handlers, and a
    /// rising floor (an import finished) starts a new pass, so that the handlers see the
    /// imported objects (`cluster_states.rs`).
    imports: Option<Arc<ClusterTable>>,
    /// Handlers that join and leave ([`HandlerSlot`]), after `handlers`.
    slot: Option<watch::Receiver<Option<Handlers>>>,
}

impl Informer {
    pub fn new(storage: Arc<dyn Storage>) -> Informer {
        Informer {
            storage,
            handlers: Vec::new(),
            page: SCAN_PAGE,
            imports: None,
            slot: None,
        }
    }

    /// Hides the clusters `table` hides, and rescans whenever one of its floors rises.
    pub fn following_imports(mut self, table: Arc<ClusterTable>) -> Informer {
        self.imports = Some(table);
        self
    }

    /// Registers a handler (before [`Informer::run`]).
    pub fn with(mut self, handler: Arc<dyn InformerHandler>) -> Informer {
        self.handlers.push(handler);
        self
    }

    /// Also delivers to the handlers in `slot` while they are there (after the others).
    pub(crate) fn with_slot(mut self, slot: &HandlerSlot) -> Informer {
        self.slot = Some(slot.0.subscribe());
        self
    }

    /// Reads `page` objects at a time instead of [`SCAN_PAGE`] (tests cross the page).
    #[cfg(test)]
    pub(crate) fn page(mut self, page: usize) -> Informer {
        self.page = page;
        self
    }

    /// Runs passes until the store shuts down.
    pub async fn run(mut self) {
        loop {
            match self.pass().await {
                Next::Stop => return,
                Next::Rescan { backoff } => {
                    if let Some(d) = backoff {
                        tokio::time::sleep(d).await;
                    }
                }
            }
        }
    }

    /// One scan, then the watch until it ends.
    async fn pass(&mut self) -> Next {
        let mut floors = self.imports.as_ref().map(|t| t.subscribe());
        // The handlers of this pass: the slot's as they are now, after the others.
        let mut handlers = self.handlers.clone();
        if let Some(extra) = self
            .slot
            .as_mut()
            .and_then(|s| s.borrow_and_update().clone())
        {
            handlers.extend(extra.iter().cloned());
        }
        let from = self.storage.current_revision();
        for h in &handlers {
            h.on_resync_at(from);
        }
        let hide = self.imports.as_deref();
        match scan_hiding(&*self.storage, &handlers, self.page, from, hide).await {
            Ok(n) => tracing::debug!(objects = n, revision = from, "informer replayed the store"),
            Err(e) => return after_failure(e, "scan"),
        }
        for h in &handlers {
            h.on_synced();
        }
        let all = Prefix {
            cluster: kplane_storage::Clusters::All,
            resource: None,
            namespace: None,
        };
        let mut rx = match self.storage.watch(&all, from, None).await {
            Ok(rx) => rx,
            Err(e) => return after_failure(e, "watch"),
        };
        loop {
            // Biased: a change of the slot or of a floor made before an event arrived is
            // acted on before that event is delivered.
            let ev = tokio::select! {
                biased;
                set = slot_changed(&mut self.slot) => {
                    if set {
                        tracing::debug!("handlers joined the informer; rescanning the store");
                        return Next::Rescan { backoff: None };
                    }
                    handlers.truncate(self.handlers.len());
                    continue;
                }
                _ = floor_rose(floors.as_mut()) => {
                    tracing::debug!("an import finished; rescanning the store");
                    return Next::Rescan { backoff: None };
                }
                ev = rx.recv() => ev,
            };
            let Some(ev) = ev else { break };
            match ev {
                WatchEvent::Event(e) => {
                    let deleted = e.event_type == EventType::Deleted;
                    deliver(&handlers, hide, &e.kv, deleted, false);
                }
                WatchEvent::Progress(_) => {}
                WatchEvent::Closed(CloseReason::TooSlow) => {
                    tracing::warn!("informer fell behind the event stream; rescanning the store");
                    return Next::Rescan { backoff: None };
                }
                WatchEvent::Closed(CloseReason::ShuttingDown) => return Next::Stop,
            }
        }
        Next::Stop
    }
}

/// Resolves when `floors` (when there) says a floor rose; never without it.
async fn floor_rose(floors: Option<&mut watch::Receiver<u64>>) {
    match floors {
        Some(f) => {
            let _ = f.changed().await;
        }
        None => std::future::pending().await,
    }
}

/// Resolves when the slot (when there) changes: whether handlers are in it now. A slot
/// whose every holder is gone is empty for good (it is then dropped).
async fn slot_changed(slot: &mut Option<watch::Receiver<Option<Handlers>>>) -> bool {
    let Some(s) = slot.as_mut() else {
        return std::future::pending().await;
    };
    if s.changed().await.is_err() {
        *slot = None;
        return false;
    }
    s.borrow_and_update().is_some()
}

/// What follows a failed scan or watch.
fn after_failure(e: StorageError, what: &str) -> Next {
    match e {
        StorageError::ShuttingDown => Next::Stop,
        StorageError::Compacted { .. } => {
            tracing::warn!(error = %e, "informer {what} outlived the event window; rescanning the store");
            Next::Rescan { backoff: None }
        }
        e => {
            tracing::warn!(error = %e, "informer {what} failed; rescanning the store");
            Next::Rescan {
                backoff: Some(FAILURE_BACKOFF),
            }
        }
    }
}

/// Replays every stored object as of revision `at` to `handlers`, `page` objects per read.
/// Returns how many objects there were.
#[cfg(test)]
pub(crate) async fn scan(
    storage: &dyn Storage,
    handlers: &[Arc<dyn InformerHandler>],
    page: usize,
    at: Revision,
) -> kplane_storage::Result<usize> {
    scan_hiding(storage, handlers, page, at, None).await
}

/// Replays every stored object as of revision `at` to `handlers`, `page` objects per read,
/// without the objects of the clusters `hide` hides. Returns how many objects there were.
async fn scan_hiding(
    storage: &dyn Storage,
    handlers: &[Arc<dyn InformerHandler>],
    page: usize,
    at: Revision,
    hide: Option<&ClusterTable>,
) -> kplane_storage::Result<usize> {
    let all = Prefix {
        cluster: kplane_storage::Clusters::All,
        resource: None,
        namespace: None,
    };
    let mut opts = ListOptions {
        at_revision: Some(at),
        limit: Some(page),
        ..Default::default()
    };
    let mut n = 0;
    loop {
        let read = storage.list(&all, &opts, None).await?;
        for kv in &read.items {
            deliver(handlers, hide, kv, false, true);
        }
        n += read.items.len();
        match (read.more, read.items.last()) {
            (true, Some(last)) => opts.start_after = Some(last.key.clone()),
            _ => return Ok(n),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kplane_storage::{Key, Precondition};
    use std::collections::BTreeMap;
    use std::sync::Mutex;

    /// What a handler saw, in order.
    #[derive(Clone, Debug, PartialEq, Eq)]
    enum Seen {
        Resync,
        Synced,
        Object {
            name: String,
            rev: Revision,
            deleted: bool,
            replay: bool,
        },
    }

    /// Records everything; while `gate` is locked by the test, every delivery waits on it.
    struct Recorder {
        seen: Mutex<Vec<Seen>>,
        gate: Arc<Mutex<()>>,
    }

    impl Recorder {
        fn new(gate: Arc<Mutex<()>>) -> Arc<Recorder> {
            Arc::new(Recorder {
                seen: Mutex::new(Vec::new()),
                gate,
            })
        }

        fn seen(&self) -> Vec<Seen> {
            self.seen.lock().unwrap().clone()
        }
    }

    impl InformerHandler for Recorder {
        fn on_resync(&self) {
            self.seen.lock().unwrap().push(Seen::Resync);
        }

        fn on_object(&self, kv: &KeyValue, deleted: bool, replay: bool) {
            drop(self.gate.lock().unwrap());
            self.seen.lock().unwrap().push(Seen::Object {
                name: kv.key.name.clone(),
                rev: kv.mod_revision,
                deleted,
                replay,
            });
        }

        fn on_synced(&self) {
            self.seen.lock().unwrap().push(Seen::Synced);
        }
    }

    async fn put(s: &Arc<dyn Storage>, name: &str, pre: Precondition) -> Revision {
        s.put(
            Key::new("root", "/configmaps", "ns", name),
            pre,
            Box::new(|_| Ok(b"{}".to_vec())),
        )
        .await
        .unwrap()
        .mod_revision
    }

    /// Waits until `f` holds for the first recorder's deliveries.
    async fn until(r: &Recorder, f: impl Fn(&[Seen]) -> bool) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while !f(&r.seen()) {
            assert!(tokio::time::Instant::now() < deadline, "{:?}", r.seen());
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Every handler sees the same deliveries: a replay of the store (each object once, at
    /// the pass's revision), then each later change once in revision order; after the
    /// watch is closed as too slow, a resync and a fresh replay that, with the changes
    /// after it, is exactly the store's content, no change delivered twice.
    #[tokio::test(flavor = "multi_thread", worker_threads = 3)]
    // The gate is a std mutex on purpose: handlers are synchronous, and holding it across
    // the writes below is what stalls them.
    #[allow(clippy::await_holding_lock)]
    async fn each_change_reaches_every_handler_once_across_a_rescan() {
        let capacity = 16;
        let storage: Arc<dyn Storage> = kplane_storage::memory::MemoryStorage::new(
            kplane_storage::memory::MemoryStorageOptions {
                watch_channel_capacity: capacity,
                ..Default::default()
            },
        );
        // Before the informer: three objects, one updated (the replay has its latest state).
        for name in ["a", "b", "c"] {
            put(&storage, name, Precondition::MustNotExist).await;
        }
        put(&storage, "b", Precondition::MustExist).await;
        let gate = Arc::new(Mutex::new(()));
        let (r1, r2) = (Recorder::new(gate.clone()), Recorder::new(gate.clone()));
        // A page of 2 crosses the page boundary of the scan.
        let informer = Informer::new(storage.clone())
            .page(2)
            .with(r1.clone())
            .with(r2.clone());
        let task = tokio::spawn(informer.run());
        until(&r1, |s| s.contains(&Seen::Synced)).await;
        // Live changes: an update, a create and a delete.
        put(&storage, "a", Precondition::MustExist).await;
        put(&storage, "d", Precondition::MustNotExist).await;
        storage
            .delete(
                Key::new("root", "/configmaps", "ns", "c"),
                Precondition::MustExist,
                Box::new(|_| Ok(b"{}".to_vec())),
            )
            .await
            .unwrap();
        // Resync, a, b, c, Synced, then the three changes.
        until(&r1, |s| s.len() == 8).await;
        // Hold the handlers while more changes than the watch channel holds are written.
        let held = gate.lock().unwrap();
        put(&storage, "e", Precondition::MustNotExist).await;
        tokio::time::sleep(Duration::from_millis(50)).await;
        for i in 0..3 * capacity {
            put(&storage, &format!("f-{i:03}"), Precondition::MustNotExist).await;
        }
        drop(held);
        until(&r1, |s| {
            s.iter().filter(|x| **x == Seen::Synced).count() == 2
        })
        .await;
        let after_rescan = put(&storage, "g", Precondition::MustNotExist).await;
        until(&r1, |s| {
            s.last()
                .is_some_and(|x| matches!(x, Seen::Object { rev, .. } if *rev == after_rescan))
        })
        .await;
        task.abort();

        let seen = r1.seen();
        assert_eq!(seen, r2.seen(), "every handler sees the same deliveries");
        // Split into passes at each resync.
        let passes: Vec<&[Seen]> = seen
            .split(|x| *x == Seen::Resync)
            .filter(|p| !p.is_empty())
            .collect();
        assert_eq!(passes.len(), 2, "{seen:?}");
        // The store's content as the deliveries describe it, rebuilt from the last replay.
        let mut content: BTreeMap<String, Revision> = BTreeMap::new();
        for (i, pass) in passes.iter().enumerate() {
            let synced = pass.iter().position(|x| *x == Seen::Synced).unwrap();
            let (replay, live) = pass.split_at(synced);
            let mut replayed: Vec<(&str, Revision)> = Vec::new();
            for x in replay {
                let Seen::Object {
                    name,
                    rev,
                    deleted,
                    replay,
                } = x
                else {
                    panic!("{x:?} in a replay");
                };
                assert!(*replay && !*deleted);
                replayed.push((name, *rev));
            }
            let names: Vec<&str> = replayed.iter().map(|(n, _)| *n).collect();
            let mut sorted = names.clone();
            sorted.sort_unstable();
            sorted.dedup();
            assert_eq!(names, sorted, "pass {i}: each object once, in key order");
            content = replayed.iter().map(|(n, r)| (n.to_string(), *r)).collect();
            let newest_replayed = replayed.iter().map(|(_, r)| *r).max().unwrap_or(0);
            let mut last = newest_replayed;
            for x in &live[1..] {
                let Seen::Object {
                    name,
                    rev,
                    deleted,
                    replay,
                } = x
                else {
                    panic!("{x:?} after the replay");
                };
                assert!(!*replay);
                assert!(
                    *rev > last,
                    "pass {i}: {x:?} after revision {last}: delivered twice or out of order"
                );
                last = *rev;
                if *deleted {
                    content.remove(name);
                } else {
                    content.insert(name.clone(), *rev);
                }
            }
        }
        let stored: BTreeMap<String, Revision> = storage
            .list(
                &Prefix::resource("root", "/configmaps"),
                &Default::default(),
                None,
            )
            .await
            .unwrap()
            .items
            .into_iter()
            .map(|kv| (kv.key.name, kv.mod_revision))
            .collect();
        assert_eq!(
            content, stored,
            "the last replay plus later changes is the store"
        );
        assert!(content.contains_key("g") && content.contains_key("f-000"));
        storage.shutdown().await.unwrap();
    }

    /// A scan reads one snapshot: writes after its revision are not replayed, whatever the
    /// page size, and every object is replayed exactly once.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_scan_is_one_snapshot_in_pages() {
        let storage: Arc<dyn Storage> = crate::testing::memory_store();
        for i in 0..10 {
            put(&storage, &format!("o-{i:02}"), Precondition::MustNotExist).await;
        }
        let at = storage.current_revision();
        put(&storage, "o-00", Precondition::MustExist).await;
        put(&storage, "o-99", Precondition::MustNotExist).await;
        for page in [1, 3, 9, 10, 11] {
            let r = Recorder::new(Arc::new(Mutex::new(())));
            let handlers: Vec<Arc<dyn InformerHandler>> = vec![r.clone()];
            let n = scan(&*storage, &handlers, page, at).await.unwrap();
            assert_eq!(n, 10, "page {page}");
            let seen = r.seen();
            assert_eq!(seen.len(), 10);
            assert!(seen
                .iter()
                .all(|x| matches!(x, Seen::Object { rev, .. } if *rev <= at)));
        }
        storage.shutdown().await.unwrap();
    }

    /// Handlers put in the slot of a running informer see a resync and a whole replay (a
    /// new pass; the others see it too), then the changes; taken out, they get nothing
    /// from the next change on, while the others go on without a new pass.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn handlers_join_with_a_pass_and_leave_at_once() {
        let storage: Arc<dyn Storage> = crate::testing::memory_store();
        for name in ["a", "b", "c"] {
            put(&storage, name, Precondition::MustNotExist).await;
        }
        let (base, joined) = (Recorder::new(Arc::default()), Recorder::new(Arc::default()));
        let slot = HandlerSlot::default();
        // A page of 2 crosses the page boundary of the scan.
        let informer = Informer::new(storage.clone())
            .page(2)
            .with(base.clone())
            .with_slot(&slot);
        let task = tokio::spawn(informer.run());
        until(&base, |s| s.contains(&Seen::Synced)).await;
        let d = put(&storage, "d", Precondition::MustNotExist).await;
        until(&base, |s| s.len() == 6).await;
        assert!(joined.seen().is_empty());

        slot.set(vec![joined.clone()]);
        until(&joined, |s| s.contains(&Seen::Synced)).await;
        let e = put(&storage, "e", Precondition::MustNotExist).await;
        until(&joined, |s| s.len() == 7).await;
        let object = |name: &str, rev: Revision, replay: bool| Seen::Object {
            name: name.into(),
            rev,
            deleted: false,
            replay,
        };
        let seen = joined.seen();
        assert_eq!(seen[0], Seen::Resync);
        let replayed: Vec<&str> = seen[1..5]
            .iter()
            .map(|x| match x {
                Seen::Object {
                    name, replay: true, ..
                } => name.as_str(),
                x => panic!("{x:?} in the replay"),
            })
            .collect();
        assert_eq!(replayed, ["a", "b", "c", "d"]);
        assert_eq!(seen[5..], [Seen::Synced, object("e", e, false)]);
        until(&base, |s| s.last() == Some(&object("e", e, false))).await;
        let passes = base.seen().iter().filter(|x| **x == Seen::Resync).count();
        assert_eq!(passes, 2, "the join started a new pass for every handler");

        slot.clear();
        assert!(!slot.is_set());
        let f = put(&storage, "f", Precondition::MustNotExist).await;
        until(&base, |s| s.last() == Some(&object("f", f, false))).await;
        let g = put(&storage, "g", Precondition::MustNotExist).await;
        until(&base, |s| s.last() == Some(&object("g", g, false))).await;
        assert_eq!(
            joined.seen().len(),
            7,
            "nothing after leaving: {:?}",
            joined.seen()
        );
        let seen = base.seen();
        assert_eq!(seen.iter().filter(|x| **x == Seen::Resync).count(), 2);
        assert!(seen.contains(&object("d", d, false)));
        task.abort();
        storage.shutdown().await.unwrap();
    }

    /// Clusters being imported and pseudo-clusters are hidden from the handlers, in the
    /// replay and live; a rising floor (an import finished) starts a new pass that shows
    /// the imported cluster's objects.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn imports_are_hidden_until_their_floor_rises() {
        let storage: Arc<dyn Storage> = crate::testing::memory_store();
        let table = Arc::new(ClusterTable::default());
        table.set_phase("root:new", Some(crate::cluster_states::Phase::Importing));
        let put_in = |cluster: &'static str, name: &'static str| {
            let s = storage.clone();
            async move {
                s.put(
                    Key::new(cluster, "/configmaps", "ns", name),
                    Precondition::MustNotExist,
                    Box::new(|_| Ok(b"{}".to_vec())),
                )
                .await
                .unwrap();
            }
        };
        put_in("root:new", "before").await;
        put_in("~import:root:x", "staged").await;
        put_in("root", "seen-1").await;
        let rec = Recorder::new(Arc::default());
        let informer = Informer::new(storage.clone())
            .with(rec.clone())
            .following_imports(table.clone());
        let task = tokio::spawn(informer.run());
        until(&rec, |s| s.contains(&Seen::Synced)).await;
        put_in("root:new", "during").await;
        put_in("root", "seen-2").await;
        let names = |s: &[Seen]| -> Vec<String> {
            s.iter()
                .filter_map(|x| match x {
                    Seen::Object { name, .. } => Some(name.clone()),
                    _ => None,
                })
                .collect()
        };
        until(&rec, |s| names(s).contains(&"seen-2".to_string())).await;
        assert_eq!(names(&rec.seen()), ["seen-1", "seen-2"]);
        table.set_phase("root:new", None);
        table.raise_floor("root:new", storage.current_revision() + 1);
        until(&rec, |s| names(s).contains(&"during".to_string())).await;
        let seen = rec.seen();
        let after = seen.iter().rposition(|s| *s == Seen::Resync).unwrap();
        let replayed = names(&seen[after..]);
        assert!(replayed.contains(&"before".to_string()), "{replayed:?}");
        assert!(!replayed.contains(&"staged".to_string()), "{replayed:?}");
        task.abort();
    }
}
