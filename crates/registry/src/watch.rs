//! Watches: the initial events (for `resourceVersion` unset/"0" or `sendInitialEvents`),
//! then the live stream from storage with selectors applied per event (an object that
//! stops matching is a DELETED, one that starts matching an ADDED), bookmarks, timeouts,
//! and a clean end on shutdown. [`WatchSetup::next`] is the one step function.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kplane_storage::{EventType, Revision, WatchEvent, WatchReceiver};
use kplane_types::Status;
use rand::Rng;
use serde_json::json;
use tokio::time::Instant;

use super::builtins::Overlay;
use super::key_order::{KeyOrder, Segment};
use super::selection::Selection;
use super::{storage_error, ListPage, Registry, ResourceType, Target};
use crate::cluster_states::ClusterTable;
use crate::error::ApiResult;
use crate::options::ListParams;

/// How often an idle watch with `allowWatchBookmarks` gets a BOOKMARK.
const BOOKMARK_EVERY: Duration = Duration::from_secs(60);

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WatchType {
    Added,
    Modified,
    Deleted,
    Bookmark,
    Error,
}

impl WatchType {
    pub fn as_str(self) -> &'static str {
        match self {
            WatchType::Added => "ADDED",
            WatchType::Modified => "MODIFIED",
            WatchType::Deleted => "DELETED",
            WatchType::Bookmark => "BOOKMARK",
            WatchType::Error => "ERROR",
        }
    }
}

/// One event to send: its type and the encoded object.
#[derive(Clone, Debug)]
pub struct WatchItem {
    pub ty: WatchType,
    pub object: Bytes,
}

/// A running watch.
pub struct WatchSetup {
    rt: Arc<ResourceType>,
    selection: Selection,
    /// A multi-cluster watch: each object gets the `kplane.io/cluster` annotation.
    annotate: bool,
    /// The built-in objects of a one-cluster watch: a stored object taking the place of
    /// one is a MODIFIED, its deletion a DELETED and the built-in's ADDED.
    builtins: Option<Overlay>,
    /// Events ready to send: the current batch of initial events, a bookmark, an error.
    queue: VecDeque<WatchItem>,
    /// The initial list, sent batch by batch (bounded memory however long it is).
    initial: Option<InitialEvents>,
    /// The storage watch to open once the initial events are sent.
    pending: Option<PendingWatch>,
    rx: Option<WatchReceiver>,
    bookmarks: bool,
    deadline: Instant,
    shutdown: tokio::sync::watch::Receiver<bool>,
    /// The clusters watched, the revision the watch started from, and the table whose
    /// floors end it with a 410 once one of them rises above that revision (an import
    /// replaced a watched cluster) and whose phases hide clusters being imported.
    fence: Fence,
    /// Conversion webhooks' transport, for a custom resource with one: each live event's
    /// object is converted before it is sent; a failed conversion ends the watch with an
    /// ERROR event.
    transport: Option<Arc<dyn crate::webhooks::WebhookTransport>>,
}

/// What ends a watch when an import makes its clusters new (`cluster_states.rs`).
struct Fence {
    scope: kplane_storage::Clusters,
    start: Revision,
    table: Arc<ClusterTable>,
    floors: tokio::sync::watch::Receiver<u64>,
}

impl Fence {
    /// The 410 ERROR event when a watched cluster's floor is above the watch's start.
    fn expired(&mut self) -> Option<WatchItem> {
        self.floors.mark_unchanged();
        self.table
            .check_rv(&self.scope, self.start)
            .err()
            .map(|e| error_item(&e.0))
    }
}

/// The initial events still to send: the list, and whether the
/// `k8s.io/initial-events-end` bookmark follows it (`sendInitialEvents=true`).
struct InitialEvents {
    list: ListPage,
    end_bookmark: bool,
    /// For a list across namespaces: kube-apiserver's key order (`key_order.rs`).
    order: Option<KeyOrder>,
    /// What the ordering put in place of the batches read so far.
    segments: VecDeque<Segment>,
    /// Whether the list's last batch has been read.
    scanned: bool,
}

impl InitialEvents {
    /// The next batch of initial events, in key order; `None` after the last.
    async fn next_batch(&mut self) -> ApiResult<Option<Vec<Bytes>>> {
        loop {
            match self.segments.front_mut() {
                Some(Segment::Items(items)) => {
                    let items = std::mem::take(items);
                    self.segments.pop_front();
                    return Ok(Some(items));
                }
                Some(Segment::Namespace(page)) => match page.next_batch().await? {
                    Some(batch) => return Ok(Some(batch)),
                    None => {
                        self.segments.pop_front();
                        continue;
                    }
                },
                None if self.scanned => return Ok(None),
                None => {}
            }
            let batch = self.list.next_batch().await?;
            let Some(order) = self.order.as_mut() else {
                self.scanned = batch.is_none();
                return Ok(batch);
            };
            match batch {
                Some(batch) => self.segments.extend(order.batch(batch).await?),
                None => {
                    self.scanned = true;
                    self.segments.extend(order.finish().await?);
                }
            }
        }
    }
}

/// Where the live events of a watch with initial events start: the storage watch is
/// opened after the last initial event, from the list's revision, so the changes made
/// while a long initial list is sent are replayed from the event log with back-pressure
/// instead of filling the watcher's live queue.
struct PendingWatch {
    storage: Arc<dyn kplane_storage::Storage>,
    prefix: kplane_storage::Prefix,
    from: Revision,
    progress: Option<Duration>,
}

impl std::fmt::Debug for WatchSetup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchSetup")
            .field("rt", &self.rt.plural)
            .finish_non_exhaustive()
    }
}

fn bookmark(rt: &ResourceType, rev: Revision, initial_end: bool) -> WatchItem {
    let mut meta = json!({"resourceVersion": rev.to_string()});
    if initial_end {
        meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
    }
    let obj = json!({"kind": rt.kind, "apiVersion": rt.api_version(), "metadata": meta});
    WatchItem {
        ty: WatchType::Bookmark,
        object: Bytes::from(obj.to_string()),
    }
}

fn error_item(status: &Status) -> WatchItem {
    WatchItem {
        ty: WatchType::Error,
        object: Bytes::from(status.to_json().to_string()),
    }
}

/// The ERROR event for a storage watch that could not be opened.
fn watch_error(e: kplane_storage::Error, rt: &ResourceType) -> WatchItem {
    match e {
        kplane_storage::Error::Compacted {
            requested,
            compacted,
        } => error_item(&Status::expired(format!(
            "too old resource version: {requested} ({compacted})"
        ))),
        other => error_item(&storage_error(other, rt, "").0),
    }
}

impl Registry {
    /// Starts a watch.
    pub async fn watch(self: &Arc<Self>, t: &Target, p: &ListParams) -> ApiResult<WatchSetup> {
        let selection = Selection::for_params(&t.rt, p)?;
        let timeout = match p.timeout_seconds {
            Some(s) => Duration::from_secs(s),
            None => Duration::from_secs(rand::rng().random_range(1800..3600)),
        };
        let mut setup = WatchSetup {
            rt: t.rt.clone(),
            selection,
            annotate: t.cluster.is_multi(),
            builtins: None,
            queue: VecDeque::new(),
            initial: None,
            pending: None,
            rx: None,
            bookmarks: p.allow_bookmarks,
            deadline: Instant::now() + timeout,
            shutdown: self.shutdown.clone(),
            transport: self.admission.webhook_transport().cloned(),
            fence: Fence {
                scope: t.prefix().cluster,
                start: 0,
                table: self.clusters.table.clone(),
                floors: self.clusters.table.subscribe(),
            },
        };
        if let Some((builtins, cluster)) = self.builtins_of(t) {
            let birth = self.cluster_birth(&cluster).await?;
            setup.builtins = Some(Overlay {
                builtins,
                cluster,
                birth,
                hidden: Default::default(),
            });
        }
        let rv = p.resource_version.as_deref();
        let send_initial = match p.send_initial_events {
            Some(b) => b,
            None => matches!(rv, None | Some("0")),
        };
        let progress = p.allow_bookmarks.then_some(BOOKMARK_EVERY);
        if send_initial {
            let mut lp = ListParams {
                label_selector: p.label_selector.clone(),
                field_selector: p.field_selector.clone(),
                annotation: p.annotation.clone(),
                ..Default::default()
            };
            if let Some(rv) = rv.filter(|r| *r != "0") {
                lp.resource_version = Some(rv.to_string());
            }
            // The first batch is read here, so that its errors are the response's status.
            let list = self.list(t, &lp).await?;
            setup.fence.start = list.revision();
            setup.pending = Some(PendingWatch {
                storage: self.storage.clone(),
                prefix: t.prefix(),
                from: list.revision(),
                progress,
            });
            setup.initial = Some(InitialEvents {
                order: KeyOrder::for_target(self, t, p, list.revision()),
                list,
                end_bookmark: p.send_initial_events == Some(true),
                segments: VecDeque::new(),
                scanned: false,
            });
            return Ok(setup);
        }
        let from = match rv {
            None | Some("0") => self.storage.current_revision(),
            Some(s) => s.parse::<Revision>().map_err(|_| {
                crate::error::ApiError::bad_request(format!("invalid resource version {s:?}"))
            })?,
        };
        if from > self.storage.current_revision() {
            self.wait_for_revision(from).await?;
        }
        setup.fence.start = from;
        if let Some(expired) = setup.fence.expired() {
            setup.queue.push_back(expired);
            return Ok(setup);
        }
        match self.storage.watch(&t.prefix(), from, progress).await {
            Ok(rx) => setup.rx = Some(rx),
            Err(e @ kplane_storage::Error::Compacted { .. }) => {
                setup.queue.push_back(watch_error(e, &t.rt));
            }
            Err(e) => return Err(storage_error(e, &t.rt, "")),
        }
        Ok(setup)
    }
}

impl WatchSetup {
    /// The next event to send, or `None` when the watch is over.
    pub async fn next(&mut self) -> Option<WatchItem> {
        loop {
            if let Some(item) = self.queue.pop_front() {
                return Some(item);
            }
            if *self.shutdown.borrow() {
                return None;
            }
            if self.initial.is_some() {
                self.next_initial_batch().await;
                continue;
            }
            if let Some(w) = self.pending.take() {
                match w.storage.watch(&w.prefix, w.from, w.progress).await {
                    Ok(rx) => self.rx = Some(rx),
                    Err(e) => self.queue.push_back(watch_error(e, &self.rt)),
                }
                continue;
            }
            if self.fence.floors.has_changed().unwrap_or(false) {
                if let Some(expired) = self.fence.expired() {
                    self.rx = None;
                    return Some(expired);
                }
            }
            let rx = self.rx.as_mut()?;
            let ev = tokio::select! {
                ev = rx.recv() => ev,
                _ = tokio::time::sleep_until(self.deadline) => None,
                _ = self.shutdown.changed() => None,
                _ = self.fence.floors.changed() => {
                    match self.fence.expired() {
                        Some(expired) => {
                            self.rx = None;
                            return Some(expired);
                        }
                        None => continue,
                    }
                }
            };
            match ev? {
                WatchEvent::Event(e) => {
                    // A cluster being imported or replaced shows nothing until the flip
                    // ends the watch with a 410.
                    if self.fence.table.hides(&e.kv.key.cluster) {
                        continue;
                    }
                    let converted = match self.convert_with_webhook(&e).await {
                        Ok(c) => c,
                        Err(err) => {
                            self.rx = None;
                            return Some(error_item(&err.0));
                        }
                    };
                    if let Some(item) = self.translate(&e, converted) {
                        return Some(item);
                    }
                }
                WatchEvent::Progress(rev) => {
                    if self.bookmarks {
                        return Some(bookmark(&self.rt, rev, false));
                    }
                }
                WatchEvent::Closed(_) => {
                    self.rx = None;
                    return None;
                }
            }
        }
    }

    /// Queues the next batch of initial events; after the last one, the end bookmark.
    /// A batch that cannot be read ends the watch with an ERROR event (the client starts
    /// over), never with a silently shortened initial state.
    async fn next_initial_batch(&mut self) {
        let Some(initial) = self.initial.as_mut() else {
            return;
        };
        match initial.next_batch().await {
            Ok(Some(batch)) => {
                self.queue.extend(batch.into_iter().map(|object| WatchItem {
                    ty: WatchType::Added,
                    object,
                }));
            }
            Ok(None) => {
                if initial.end_bookmark {
                    let rev = initial.list.revision();
                    self.queue.push_back(bookmark(&self.rt, rev, true));
                }
                self.initial = None;
            }
            Err(e) => {
                self.initial = None;
                self.pending = None;
                self.queue.push_back(error_item(&e.0));
            }
        }
    }

    /// The event's object converted by the CRD's conversion webhook (`None` for a type
    /// without one: `translate` converts only the events it sends).
    async fn convert_with_webhook(&self, e: &kplane_storage::Event) -> ApiResult<Option<Bytes>> {
        if self.rt.custom.as_ref().is_none_or(|c| c.webhook.is_none()) {
            return Ok(None);
        }
        let t = self.transport.as_deref();
        crate::conversion::paths::api_bytes(t, &self.rt, e.kv.value.clone())
            .await
            .map(Some)
    }

    /// Applies the selection to one storage event (`converted`: its object already in
    /// the watch's version).
    fn translate(
        &mut self,
        e: &kplane_storage::Event,
        converted: Option<Bytes>,
    ) -> Option<WatchItem> {
        if let Some(mut items) = self.translate_over_builtin(e) {
            let first = items.pop_front();
            self.queue.extend(items);
            return first;
        }
        let now = self.selection.matches_bytes(&e.kv.value);
        let before = e.prev.as_ref().map(|p| self.selection.matches_bytes(p));
        let ty = match e.event_type {
            EventType::Added => now.then_some(WatchType::Added),
            EventType::Deleted => (now || before == Some(true)).then_some(WatchType::Deleted),
            EventType::Modified => match (before, now) {
                (Some(true), true) | (None, true) => Some(WatchType::Modified),
                (Some(false), true) => Some(WatchType::Added),
                (Some(true), false) | (None, false) if !self.selection.is_everything() => {
                    Some(WatchType::Deleted)
                }
                _ => None,
            },
        }?;
        let object = match converted {
            Some(c) => c,
            None => super::to_api(&self.rt, e.kv.value.clone()).ok()?,
        };
        let object = if self.annotate {
            crate::wildcard::annotate(&object, &e.kv.key.cluster).ok()?
        } else {
            object
        };
        Some(WatchItem { ty, object })
    }

    /// The events of a stored object of a built-in's name appearing or going: the built-in
    /// was there before and is there again after. Its appearance is a MODIFIED (a write
    /// over the built-in); its deletion a DELETED followed by the built-in's ADDED (as
    /// kube-apiserver re-creates a deleted default, and so that `kubectl delete --wait`
    /// sees the deletion). `None` for any other event.
    fn translate_over_builtin(&self, e: &kplane_storage::Event) -> Option<VecDeque<WatchItem>> {
        let ov = self.builtins.as_ref()?;
        let name = e.kv.key.name.as_str();
        if !ov.builtins.contains(name) || e.event_type == EventType::Modified {
            return None;
        }
        // The built-in as it reads from this event's revision on (a resumed watch
        // continues from there).
        let builtin =
            ov.builtins
                .render(&self.rt, &ov.cluster, name, &ov.birth, e.kv.mod_revision)?;
        let shown = self.selection.matches_bytes(&builtin);
        let stored = || super::to_api(&self.rt, e.kv.value.clone()).ok();
        let item = |ty, object: Option<Bytes>| object.map(|object| WatchItem { ty, object });
        let items = match e.event_type {
            EventType::Added => match (shown, self.selection.matches_bytes(&e.kv.value)) {
                (true, true) => item(WatchType::Modified, stored()),
                (false, true) => item(WatchType::Added, stored()),
                (true, false) => item(WatchType::Deleted, stored()),
                (false, false) => None,
            },
            _ => {
                let before = match &e.prev {
                    Some(p) => self.selection.matches_bytes(p),
                    None => self.selection.matches_bytes(&e.kv.value),
                };
                let gone = before.then(|| item(WatchType::Deleted, stored())).flatten();
                let back = shown
                    .then(|| item(WatchType::Added, Some(builtin)))
                    .flatten();
                return Some(gone.into_iter().chain(back).collect());
            }
        };
        Some(items.into_iter().collect())
    }
}
