//! What every controller shares: the retry interval, the work queue's verbs on the
//! registry (`work`, `enqueue`, retries, leadership), object references, the runtimes an
//! item runs on, and the helpers controllers use to read keys and report failed writes.
//! Which controllers run, and their start-up, is the parent module's business.

use crate::controllers::queue::{self, Controller};
use crate::error::ApiError;
use crate::{Registry, ResourceType};
use kplane_storage::KeyValue;
use kplane_types::ClusterName;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// One unit of kplane's controller work ([`queue::Item`] for the [`Registry`]).
pub type Item = queue::Item<Registry>;

/// The controllers a [`Registry`] runs ([`queue::Registered`]).
pub type Registered = queue::Registered<Registry>;

/// How long an unfinished work item (content with finalizers, a failed write) waits before
/// it runs again.
pub const RETRY_EVERY: Duration = Duration::from_secs(2);

/// One stored object: cluster, storage resource, namespace, name.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ObjRef {
    pub cluster: ClusterName,
    pub resource: String,
    pub namespace: String,
    pub name: String,
}

impl ObjRef {
    /// The object stored at `kv` (`None` for a key with a damaged cluster name).
    pub fn of(kv: &KeyValue) -> Option<ObjRef> {
        Some(ObjRef {
            cluster: stored_cluster(&kv.key)?,
            resource: kv.key.resource.clone(),
            namespace: kv.key.namespace.clone(),
            name: kv.key.name.clone(),
        })
    }
}

impl Registry {
    /// The work item of `key` for the registered controller `C` (`None`, logged, when `C`
    /// is not registered).
    pub(crate) fn work<C: Controller<Registry>>(&self, key: C::Key) -> Option<Item> {
        self.controllers.registered.item::<C>(key)
    }

    /// The registered controller `C`, for its state.
    pub(crate) fn controller<C: Controller<Registry>>(&self) -> Option<Arc<C>> {
        self.controllers.registered.get::<C>()
    }

    /// Queues `key` for controller `C` ([`Registry::enqueue_item`]).
    pub(crate) fn enqueue<C: Controller<Registry>>(&self, key: C::Key) {
        if let Some(w) = self.work::<C>(key) {
            self.enqueue_item(w);
        }
    }

    /// Queues `w` unless it is queued already (then it runs once, seeing the latest state).
    /// Not on a replica that is not the leader: there nothing runs the queue, and the
    /// leader's informer finds the same work from the write's storage event.
    pub(crate) fn enqueue_item(&self, w: Item) {
        let c = &self.controllers;
        // Read under the lock: a replica that stops leading empties the queue under it
        // (`leader::drop_work`), so nothing is queued after that.
        let mut waiting = c.waiting();
        if !c.leader.load(Ordering::Acquire) {
            return;
        }
        if waiting.queued.contains(&w) {
            return;
        }
        if c.queue.send(w.clone()).is_ok() {
            waiting.queued.insert(w);
            c.queued.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Queues `w` again after [`RETRY_EVERY`], unless a retry of it is already waiting.
    pub(crate) fn retry_later(self: &Arc<Self>, w: Item) {
        if !self.controllers.waiting().delayed.insert(w.clone()) {
            return;
        }
        let r = self.clone();
        tokio::spawn(async move {
            tokio::time::sleep(RETRY_EVERY).await;
            r.controllers.waiting().delayed.remove(&w);
            r.enqueue_item(w);
        });
    }

    /// Whether this process runs the controllers now.
    pub(crate) fn leads(&self) -> bool {
        self.controllers.leader.load(Ordering::Acquire)
    }

    /// The work of [`Health::queued_work`](crate::store_status::Health::queued_work).
    pub(crate) fn queued_work(&self) -> u64 {
        self.controllers.queued.load(Ordering::Relaxed)
    }
}

impl Registry {
    /// Runs one item, logging a failure; `false` when it must run again later.
    pub(crate) async fn run_logged(&self, work: &Item) -> bool {
        match work.run(self).await {
            Ok(done) => done,
            Err(e) => {
                tracing::warn!(?work, code = e.code(), error = %e.0.message, "controller work failed; retrying");
                false
            }
        }
    }
}

/// Where the controllers' work items run.
#[derive(Clone, Debug)]
pub(crate) struct Places {
    /// The queue's dispatch and the items a client waits for (a Workspace's bootstrap: its
    /// creator waits for Ready); everything when `background` is `None`.
    pub(crate) foreground: tokio::runtime::Handle,
    /// The items no request waits for: Workspace deletions and every item of the one-at-a-
    /// time worker (namespace, GC, root CA, ...), on a runtime whose threads yield to
    /// request handling (`kplane serve`'s background runtime).
    pub(crate) background: Option<tokio::runtime::Handle>,
}

impl Places {
    /// The runtime for background items.
    pub(crate) fn background(&self) -> &tokio::runtime::Handle {
        self.background.as_ref().unwrap_or(&self.foreground)
    }
}

/// The logical cluster of a key read from storage. Keys are written only for validated
/// names, so `None` means a damaged key: it is logged and skipped.
pub(crate) fn stored_cluster(key: &kplane_storage::Key) -> Option<ClusterName> {
    let c = ClusterName::parse(&key.cluster);
    if c.is_none() {
        tracing::warn!(cluster = %key.cluster, name = %key.name, "stored key with an invalid logical cluster name; skipped");
    }
    c
}

/// Logs a controller write that failed, with the object's coordinates and the Status
/// message (`controller` names the writer, as upstream's controller names).
pub(crate) fn write_failed(
    controller: &str,
    cluster: &str,
    rt: &ResourceType,
    namespace: &str,
    name: &str,
    e: &ApiError,
) {
    let resource = if rt.group.is_empty() {
        rt.plural.clone()
    } else {
        format!("{}.{}", rt.plural, rt.group)
    };
    tracing::warn!(
        controller,
        cluster,
        resource,
        namespace,
        name,
        code = e.code(),
        error = %e.0.message,
        "controller write failed"
    );
}
