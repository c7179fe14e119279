//! The writing controllers run on one replica at a time: the leader the store elects
//! ([`kplane_storage::Storage::leadership`]; on sled always this process, on PostgreSQL
//! the holder of a session advisory lock).
//!
//! [`run`] follows leadership: on gain it sets the registry's leader flag (from then on
//! the write path queues work again) and starts the controllers ([`super::start_leading`]:
//! their handlers join the process's informer, which starts a new pass for them, so that
//! they see a resync and a fresh scan, and [`PendingFeed`] queues every pending
//! namespace, CRD and Workspace it replays; the worker takes over the queue); on loss it
//! clears the flag, takes their handlers out of the informer and aborts those tasks.
//! The answer the store gives at start-up is acted on before the informer's first pass
//! ([`super::start`]), so that a process that leads from the start scans once. Each storage write is atomic and every
//! controller write carries the resourceVersion it read, so an item cut short is simply
//! done again by the next leader. Caches (`crate::derived`) run on every replica whatever
//! the leadership.
//!
//! On a replica that does not lead, [`Registry::enqueue`] drops work: the leader finds it
//! from the write's storage event instead ([`PendingFeed`] and the other handlers of its
//! informer), within the tailer's delay.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use kplane_storage::KeyValue;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedReceiver;

use super::informer::{HandlerSlot, InformerHandler};
use super::{stored_cluster, Controllers, Work};
use crate::crd::CRD_RESOURCE;
use crate::strategies::workspace::WORKSPACE_RESOURCE;
use crate::{meta, Registry};

impl Registry {
    /// Whether this process runs the writing controllers now (`kplane_leader` in
    /// `/metrics`). True for a registry whose controllers were never started.
    pub fn is_leader(&self) -> bool {
        self.controllers.leader.load(Ordering::Acquire)
    }

    fn set_leader(&self, on: bool) {
        self.controllers.leader.store(on, Ordering::Release);
    }
}

/// What starting the writing controllers takes.
pub(crate) struct Leading {
    pub(crate) registry: Arc<Registry>,
    pub(crate) queue: Arc<tokio::sync::Mutex<UnboundedReceiver<Work>>>,
    pub(crate) event_ttl: Duration,
    pub(crate) background: Option<tokio::runtime::Handle>,
    /// Where the controllers' informer handlers join the process's informer.
    pub(crate) slot: HandlerSlot,
}

impl Leading {
    /// Starts or stops the controllers (`running`) as `leader` says.
    pub(crate) fn step(&self, leader: bool, running: &mut Option<Controllers>) {
        let registry = &self.registry;
        match (leader, running.is_some()) {
            (true, false) => {
                registry.set_leader(true);
                *running = Some(super::start_leading(
                    registry,
                    self.queue.clone(),
                    self.event_ttl,
                    self.background.clone(),
                    &self.slot,
                ));
                tracing::info!("this replica leads: the controllers run here");
            }
            (false, true) => {
                registry.set_leader(false);
                *running = None;
                tracing::warn!("this replica no longer leads: the controllers stopped");
            }
            (false, false) => {
                if registry.is_leader() {
                    tracing::info!("another replica leads: the controllers run there");
                }
                registry.set_leader(false);
            }
            (true, true) => {}
        }
    }
}

/// Starts and stops the writing controllers as `leadership` says (`running`: what
/// [`Leading::step`] made of its current answer), until the registry's controllers are
/// stopped (this task is aborted: the running controllers go with it).
pub(crate) async fn run(
    leading: Leading,
    mut leadership: tokio::sync::watch::Receiver<bool>,
    mut running: Option<Controllers>,
) {
    loop {
        if leadership.changed().await.is_err() {
            // The store never changes its answer again (sled: always the leader).
            std::future::pending::<()>().await;
        }
        let leader = *leadership.borrow_and_update();
        leading.step(leader, &mut running);
    }
}

/// Queues the work that pending objects need, as the write path's hooks do on the replica
/// that wrote them: a Terminating namespace is emptied, a deleted CRD's resources removed
/// (and dependents of kinds a CRD change may resolve examined again), a Workspace not yet
/// Ready (or being deleted) brought along. Replayed objects too, so a new leader finds
/// the work its predecessor left. Queueing is idempotent: the work reads the stored state.
pub(crate) struct PendingFeed(pub(crate) Arc<Registry>);

impl InformerHandler for PendingFeed {
    fn on_resync(&self) {}

    fn on_object(&self, kv: &KeyValue, deleted: bool, _replay: bool) {
        let resource = kv.key.resource.as_str();
        let relevant =
            resource == "/namespaces" || resource == CRD_RESOURCE || resource == WORKSPACE_RESOURCE;
        if !relevant {
            return;
        }
        let Some(cluster) = stored_cluster(&kv.key) else {
            return;
        };
        let reg = &self.0;
        if resource == CRD_RESOURCE {
            // The derived state's handlers, before this one, dropped the cluster's catalog:
            // the collector resolves the new kinds.
            reg.gc_kinds_changed(&cluster);
        }
        if deleted {
            return;
        }
        let Ok(v) = serde_json::from_slice::<Value>(&kv.value) else {
            return;
        };
        let name = kv.key.name.clone();
        match resource {
            "/namespaces" if meta::is_deleting(&v) => {
                reg.enqueue(Work::Namespace { cluster, name })
            }
            CRD_RESOURCE if meta::is_deleting(&v) => {
                reg.enqueue(Work::CrdCleanup { cluster, name })
            }
            WORKSPACE_RESOURCE
                if meta::is_deleting(&v) || v.pointer("/status/phase") != Some(&"Ready".into()) =>
            {
                reg.enqueue(Work::Workspace { cluster, name })
            }
            _ => {}
        }
    }
}
