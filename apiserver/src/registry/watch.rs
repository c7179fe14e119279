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

use super::selection::Selection;
use super::{storage_error, Registry, ResourceType, Target};
use crate::error::ApiResult;
use crate::http::query::ListParams;

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
    initial: VecDeque<WatchItem>,
    rx: Option<WatchReceiver>,
    bookmarks: bool,
    deadline: Instant,
    shutdown: tokio::sync::watch::Receiver<bool>,
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

impl Registry {
    /// Starts a watch.
    pub async fn watch(self: &Arc<Self>, t: &Target, p: &ListParams) -> ApiResult<WatchSetup> {
        let selection = Selection::new(
            &t.rt,
            p.label_selector.as_deref(),
            p.field_selector.as_deref(),
        )?;
        let timeout = match p.timeout_seconds {
            Some(s) => Duration::from_secs(s),
            None => Duration::from_secs(rand::rng().random_range(1800..3600)),
        };
        let mut setup = WatchSetup {
            rt: t.rt.clone(),
            selection,
            initial: VecDeque::new(),
            rx: None,
            bookmarks: p.allow_bookmarks,
            deadline: Instant::now() + timeout,
            shutdown: self.shutdown.clone(),
        };
        let rv = p.resource_version.as_deref();
        let send_initial = match p.send_initial_events {
            Some(b) => b,
            None => matches!(rv, None | Some("0")),
        };
        let from = if send_initial {
            let mut lp = ListParams {
                label_selector: p.label_selector.clone(),
                field_selector: p.field_selector.clone(),
                ..Default::default()
            };
            if let Some(rv) = rv.filter(|r| *r != "0") {
                lp.resource_version = Some(rv.to_string());
            }
            let page = self.list(t, &lp).await?;
            for item in page.items {
                setup.initial.push_back(WatchItem {
                    ty: WatchType::Added,
                    object: item,
                });
            }
            if p.send_initial_events == Some(true) {
                setup
                    .initial
                    .push_back(bookmark(&t.rt, page.revision, true));
            }
            page.revision
        } else {
            match rv {
                None | Some("0") => self.storage.current_revision(),
                Some(s) => s.parse::<Revision>().map_err(|_| {
                    crate::error::ApiError::bad_request(format!("invalid resource version {s:?}"))
                })?,
            }
        };
        if from > self.storage.current_revision() {
            self.wait_for_revision(from).await?;
        }
        let progress = p.allow_bookmarks.then_some(BOOKMARK_EVERY);
        match self.storage.watch(&t.prefix(), from, progress).await {
            Ok(rx) => setup.rx = Some(rx),
            Err(kplane_storage::Error::Compacted {
                requested,
                compacted,
            }) => {
                let s = Status::expired(format!(
                    "too old resource version: {requested} ({compacted})"
                ));
                setup.initial.push_back(error_item(&s));
            }
            Err(e) => return Err(storage_error(e, &t.rt, "")),
        }
        Ok(setup)
    }
}

impl WatchSetup {
    /// The next event to send, or `None` when the watch is over.
    pub async fn next(&mut self) -> Option<WatchItem> {
        if let Some(item) = self.initial.pop_front() {
            return Some(item);
        }
        loop {
            let rx = self.rx.as_mut()?;
            if *self.shutdown.borrow() {
                return None;
            }
            let ev = tokio::select! {
                ev = rx.recv() => ev,
                _ = tokio::time::sleep_until(self.deadline) => None,
                _ = self.shutdown.changed() => None,
            };
            match ev? {
                WatchEvent::Event(e) => {
                    if let Some(item) = self.translate(&e) {
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

    /// Applies the selection to one storage event.
    fn translate(&self, e: &kplane_storage::Event) -> Option<WatchItem> {
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
        let object = super::to_api(&self.rt, e.kv.value.clone()).ok()?;
        Some(WatchItem { ty, object })
    }
}
