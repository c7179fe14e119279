//! The writing controllers run on one replica at a time: the leader the store elects
//! ([`kplane_storage::Storage::leadership`]; on sled always this process, on PostgreSQL
//! the holder of a session advisory lock).
//!
//! [`run`] follows leadership: on gain it sets the registry's leader flag (from then on
//! the write path queues work again) and starts the controllers ([`super::start_leading`]:
//! their handlers join the process's informer, which starts a new pass for them, so that
//! they see a resync and a fresh scan, and [`PendingFeed`] queues every pending
//! namespace, CRD and Workspace it replays; the worker takes over the queue); on loss it
//! clears the flag, aborts those tasks, waits for them to end and takes their handlers out
//! of the informer. The answer the store gives at start-up is acted on before the
//! informer's first pass ([`super::start`]), so that a process that leads from the start
//! scans once. Each storage write is atomic and every
//! controller write carries the resourceVersion it read, so an item cut short is simply
//! done again by the next leader. Caches (`crate::derived`) run on every replica whatever
//! the leadership.
//!
//! On a replica that does not lead, [`Registry::enqueue`] drops work: the leader finds it
//! from the write's storage event instead ([`PendingFeed`] and the other handlers of its
//! informer), within the tailer's delay. A replica that stops leading, or learns at
//! start-up that it does not lead, drops what it had queued (`drop_work`).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use kplane_storage::KeyValue;
use serde_json::Value;
use tokio::sync::mpsc::UnboundedReceiver;

use super::informer::{HandlerSlot, InformerHandler};
use super::{stored_cluster, Controllers, Item, Named};
use crate::crd::CRD_RESOURCE;
use crate::strategies::workspace::WORKSPACE_RESOURCE;
use crate::{meta, Registry};

impl Registry {
    /// The work of [`Health::is_leader`](crate::store_status::Health::is_leader).
    pub(crate) fn is_leader(&self) -> bool {
        self.controllers.leader.load(Ordering::Acquire)
    }

    fn set_leader(&self, on: bool) {
        self.controllers.leader.store(on, Ordering::Release);
    }
}

/// What starting the writing controllers takes.
pub(crate) struct Leading {
    pub(crate) registry: Arc<Registry>,
    pub(crate) queue: Arc<tokio::sync::Mutex<UnboundedReceiver<Item>>>,
    pub(crate) event_ttl: Duration,
    pub(crate) background: Option<tokio::runtime::Handle>,
    /// Where the controllers' informer handlers join the process's informer.
    pub(crate) slot: HandlerSlot,
}

impl Leading {
    /// Starts or stops the controllers (`running`) as `leader` says; what must be waited
    /// for (stopping them, dropping their work) is left to [`Leading::finish`].
    pub(crate) fn step(&self, leader: bool, running: &mut Option<Controllers>) -> Cleanup {
        let registry = &self.registry;
        let mut cleanup = Cleanup::default();
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
                cleanup.stop = running.take();
                cleanup.drop_work = true;
                tracing::warn!("this replica no longer leads: the controllers stopped");
            }
            (false, false) => {
                if registry.is_leader() {
                    tracing::info!("another replica leads: the controllers run there");
                    registry.set_leader(false);
                    // Work queued before the store said who leads (start-up).
                    cleanup.drop_work = true;
                }
            }
            (true, true) => {}
        }
        cleanup
    }

    /// Stops the controllers a step took out and drops their work, waiting for both.
    pub(crate) async fn finish(&self, cleanup: Cleanup) {
        if let Some(c) = cleanup.stop {
            stop_and_wait(c).await;
        }
        if cleanup.drop_work {
            drop_work(&self.registry, &self.queue).await;
        }
    }
}

/// What a [`Leading::step`] leaves to wait for.
#[derive(Default)]
pub(crate) struct Cleanup {
    stop: Option<Controllers>,
    drop_work: bool,
}

/// Starts and stops the writing controllers as `leadership` says (`running`: what
/// [`Leading::step`] made of its current answer), until the registry's controllers are
/// stopped (this task is aborted: the running controllers go with it).
pub(crate) async fn run(
    leading: Leading,
    mut leadership: tokio::sync::watch::Receiver<bool>,
    mut running: Option<Controllers>,
    first: Cleanup,
) {
    leading.finish(first).await;
    loop {
        if leadership.changed().await.is_err() {
            // The store never changes its answer again (sled: always the leader).
            std::future::pending::<()>().await;
        }
        let leader = *leadership.borrow_and_update();
        let cleanup = leading.step(leader, &mut running);
        leading.finish(cleanup).await;
    }
}

/// Aborts the controllers' tasks and waits until each has ended, so that none of them
/// touches the queue or its count afterwards.
async fn stop_and_wait(mut c: Controllers) {
    let tasks = std::mem::take(&mut c.tasks);
    for t in &tasks {
        t.abort();
    }
    for t in tasks {
        // Cancelled (or ended, or panicked: logged by the runtime).
        let _ = t.await;
    }
}

/// Drops the work of a replica that no longer leads (the leader has it, or finds it from
/// what it replays): the queued items, the merged and delayed ones, the deadlines, the
/// garbage collector's graph; the count `/metrics` shows (`kplane_lifecycle_queue_depth`)
/// goes back to 0, including the items the stopped worker had taken in. Runs after the
/// leader flag is cleared and the worker stopped: nothing is queued meanwhile
/// ([`Registry::enqueue`]).
async fn drop_work(registry: &Registry, queue: &tokio::sync::Mutex<UnboundedReceiver<Item>>) {
    let mut rx = queue.lock().await;
    let c = &registry.controllers;
    let mut waiting = c.waiting();
    let mut dropped = 0usize;
    while rx.try_recv().is_ok() {
        dropped += 1;
    }
    waiting.queued.clear();
    waiting.delayed.clear();
    c.queued.store(0, Ordering::Relaxed);
    drop(waiting);
    c.timers.clear();
    // Rebuilt by the controllers' informer when this replica leads again.
    if let Some(gc) = registry.controller::<super::GarbageCollector>() {
        gc.reset();
    }
    if dropped > 0 {
        tracing::info!(
            dropped,
            "queued controller work dropped: the leader does it"
        );
    }
}

/// Queues the work that pending objects need, as the write path's hooks do on the replica
/// that wrote them: a Terminating namespace is emptied, a deleted CRD's resources removed
/// (and dependents of kinds a CRD change may resolve examined again), a Workspace not yet
/// Ready (or being deleted) brought along. Replayed objects too, so a new leader finds the
/// work its predecessor left; and on each resync, the removal of every moved cluster's
/// keys (`cluster_states.rs`: a cluster marked moved while nobody led, or on a replica
/// whose queue then dropped it). Queueing is idempotent: the work reads the stored state.
///
/// Also what a replica that does not lead cannot queue: on a store other processes share
/// ([`kplane_storage::Storage::shared`]; on sled there is no other replica), a namespace
/// created (a live event) gets its `kube-root-ca.crt` checked [`super::RETRY_EVERY`] later (the replica
/// that created it made the ConfigMap with it, or queued a retry when that write failed,
/// which a replica that does not lead drops; the check finds it there and writes
/// nothing). Replayed namespaces are the root-CA publisher's own resync.
pub(crate) struct PendingFeed(pub(crate) Arc<Registry>);

/// What a new leader's first pass queues from the store as it is now: a replay of every
/// stored object through [`PendingFeed`] alone (tests of a restart that run the worker
/// without the informer).
#[cfg(test)]
pub(crate) async fn replay_pending(reg: &Arc<Registry>) {
    let feed: Arc<dyn InformerHandler> = Arc::new(PendingFeed(reg.clone()));
    let at = reg.storage().current_revision();
    feed.on_resync_at(at);
    super::informer::scan(&**reg.storage(), &[feed], super::informer::SCAN_PAGE, at)
        .await
        .unwrap();
}

impl InformerHandler for PendingFeed {
    fn on_resync(&self) {
        for (cluster, phase) in self.0.cluster_phases() {
            if matches!(phase, crate::cluster_states::ClusterPhase::Moved { .. }) {
                self.0.enqueue_moved(&cluster);
            }
        }
    }

    fn on_object(&self, kv: &KeyValue, deleted: bool, replay: bool) {
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
            crate::controllers::gc::gc_kinds_changed(reg, &cluster);
        }
        if deleted {
            return;
        }
        if resource == "/namespaces"
            && !replay
            && kv.create_revision == kv.mod_revision
            && reg.store_shared()
        {
            let key = super::InNamespace::new(cluster.clone(), kv.key.name.clone());
            if let Some(check) = reg.work::<super::RootCa>(key) {
                let at = tokio::time::Instant::now() + super::RETRY_EVERY;
                reg.controllers.timers.schedule(check, at);
            }
        }
        let Ok(v) = serde_json::from_slice::<Value>(&kv.value) else {
            return;
        };
        let name = kv.key.name.clone();
        match resource {
            "/namespaces" if meta::is_deleting(&v) => {
                reg.enqueue::<super::Namespaces>(Named::new(cluster, name))
            }
            CRD_RESOURCE if meta::is_deleting(&v) => {
                reg.enqueue::<super::CrdCleanup>(Named::new(cluster, name))
            }
            WORKSPACE_RESOURCE
                if meta::is_deleting(&v) || v.pointer("/status/phase") != Some(&"Ready".into()) =>
            {
                reg.enqueue::<super::Workspaces>(Named::new(cluster, name))
            }
            _ => {}
        }
    }
}
