//! The in-memory state derived from stored objects follows the storage events, not only
//! this process's write path: so a replica serves what another replica (or the leader's
//! controllers) wrote, on the same database (docs/architecture.md "Replicas: derived
//! state").
//!
//! [`informer`] builds the process's informer with the handlers every replica runs,
//! whatever the leadership (the leader's controllers add theirs after them: see
//! `controllers/informer.rs`): the RBAC, SyncTarget and ServiceAccount caches'
//! invalidators, the sync endpoint's reference index, and [`Follower`], which keeps
//!
//! - the catalogs: a CRD change drops its cluster's catalog (and the multi-cluster ones),
//!   which the next request loads again from the stored CRDs, with its discovery and
//!   OpenAPI documents (derived per catalog content);
//! - cluster existence: a cluster holding an object exists (the bootstrap of a Workspace's
//!   cluster writes its default namespaces); a Workspace that is deleted, or that has lost
//!   its `tenancy.kplane.io/workspace` finalizer while deleting, takes its cluster and the
//!   descendants with it (the workspace controller deleted their keys first); a replay
//!   (the informer's rescan after it was cut off) forgets the clusters it showed no key
//!   of, as a start-up load would;
//! - terminating marks: a Workspace with a deletionTimestamp marks its cluster, a deleted
//!   one unmarks it; a replay clears the marks of the Workspaces it did not show deleting
//!   (marks this process set after the replay's revision stay: their events follow);
//! - resourceVersion floors: a stored floor record raises the cluster's floor;
//! - phases: a move's phase record (`~cluster-phases`) fences a cluster, marks it moved (the
//!   leader then removes its keys) or, deleted, ends its phase; an import journal record
//!   makes its new targets Importing and, past the point of no return, its replaced
//!   targets Replacing, and its deletion ends them (`cluster_states.rs`). A change older
//!   than the last one the table applied is skipped, so a late delivery of this
//!   replica's own change never undoes a newer one; a replay ends the phases whose records
//!   went meanwhile. (A move's write fence itself is the store's, exact across replicas:
//!   the phase here makes the answer a 429 before the write reaches the store.)
//!
//! The write path keeps updating the same state synchronously, so the replica that wrote
//! reads its own writes at once; here every update is idempotent, so seeing the same
//! change again costs nothing. On another replica the delay is the storage's (the tailer's
//! delivery of the change) plus this informer's.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use kplane_storage::{KeyValue, Revision};
use kplane_types::ClusterName;
use serde_json::Value;

use crate::archive::{journal_phases, Journal, JOURNAL_CLUSTER, JOURNAL_RESOURCE};
use crate::cluster_states::{
    ClusterPhase, FLOOR_NAME, HIDDEN_PREFIX, PHASES_CLUSTER, STATE_RESOURCE,
};
use crate::clusters::FloorRecord;
use crate::controllers::informer::{Informer, InformerHandler};
use crate::crd::CRD_RESOURCE;
use crate::strategies::workspace::{WORKSPACE_FINALIZER, WORKSPACE_RESOURCE};
use crate::{meta, Registry};

/// The informer of `registry` with the derived state's handlers (run it on every replica).
pub(crate) fn informer(registry: &Arc<Registry>) -> Informer {
    Informer::new(registry.storage().clone())
        .following_imports(registry.cluster_table().clone())
        .with(Arc::new(Follower::new(registry.clone())))
        .with(Arc::new(crate::rbac::cache::Invalidator(
            registry.rbac_cache().clone(),
        )))
        .with(Arc::new(crate::sync::targets::Invalidator(
            registry.sync_target_cache().clone(),
        )))
        .with(Arc::new(crate::webhooks::cache::Invalidator {
            cache: registry.webhook_cache().clone(),
            resources: crate::webhooks::cache::RESOURCES,
        }))
        .with(Arc::new(crate::policies::Invalidator {
            cache: registry.policy_cache().clone(),
            resources: crate::policies::RESOURCES,
        }))
        .with(Arc::new(crate::sync::ref_index::Indexer(
            registry.sync_ref_index().clone(),
        )))
        .with(Arc::new(crate::token_bindings::Invalidator(
            registry.service_account_cache().clone(),
        )))
        .with(Arc::new(crate::resource_quota::index::Indexer(
            registry.quota_index().clone(),
        )))
}

/// Catalogs, cluster existence, terminating marks, floors and phases (see the module doc).
pub(crate) struct Follower {
    reg: Arc<Registry>,
    /// What the replay under way showed.
    replay: Mutex<Option<Replay>>,
}

/// What a replay of the store as of `at` showed, for what it did not show to end when it
/// ends (the changes missed while the informer was cut off, deletions among them).
#[derive(Default)]
struct Replay {
    at: Revision,
    /// Clusters whose phase records it showed.
    phases: HashSet<String>,
    /// Clusters holding at least one key.
    holding: HashSet<ClusterName>,
    /// Children of Workspaces with a deletionTimestamp.
    deleting: HashSet<ClusterName>,
    /// The cluster of the last object (the scan is in key order: each cluster's keys
    /// come together, so each cluster is inserted once).
    last: Option<ClusterName>,
}

impl Follower {
    pub(crate) fn new(reg: Arc<Registry>) -> Follower {
        Follower {
            reg,
            replay: Mutex::new(None),
        }
    }

    /// Applies a phase record (see the module doc).
    fn on_phase_record(&self, kv: &KeyValue, deleted: bool, replay: bool) {
        let key = &kv.key;
        let table = self.reg.cluster_table();
        let rev = kv.mod_revision;
        let mut shown = Vec::new();
        if key.cluster == PHASES_CLUSTER && key.resource == STATE_RESOURCE {
            let phase = if deleted {
                None
            } else {
                match serde_json::from_slice::<ClusterPhase>(&kv.value) {
                    Ok(p) => Some(p),
                    Err(e) => {
                        tracing::warn!(cluster = %key.name, error = %e, "unreadable cluster state; skipped");
                        return;
                    }
                }
            };
            let applied = table.set_move_phase(&key.name, phase.as_ref(), rev, false);
            if let (true, Some(ClusterPhase::Moved { .. })) = (applied, &phase) {
                if let Some(c) = ClusterName::parse(&key.name) {
                    // The leader removes its keys (a no-op elsewhere).
                    self.reg.enqueue_moved(&c);
                }
            }
            shown.push(key.name.clone());
        } else if key.cluster == JOURNAL_CLUSTER && key.resource == JOURNAL_RESOURCE {
            let j = match serde_json::from_slice::<Journal>(&kv.value) {
                Ok(j) => j,
                Err(e) => {
                    tracing::warn!(target = %key.name, error = %e, "unreadable import journal; skipped");
                    return;
                }
            };
            for (target, phase) in journal_phases(&j, deleted) {
                table.set_phase_at(target, phase, rev, false);
                shown.push(target.to_string());
            }
        }
        if replay {
            self.noting(|r| r.phases.extend(shown));
        }
    }

    /// Notes what the replay under way showed (nothing when none is).
    fn noting(&self, f: impl FnOnce(&mut Replay)) {
        let mut r = self.replay.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(r) = r.as_mut() {
            f(r);
        }
    }
}

impl InformerHandler for Follower {
    /// Changes may have been missed: every catalog loads again on its next use. Existence,
    /// terminating marks, floors and phases are set again by the replay; what it did not
    /// show ends when it ends (a cluster without keys, the terminating mark of a cluster
    /// whose Workspace went or is no longer deleting, a phase whose record went:
    /// [`Registry::settle_after_replay`], `ClusterTable::end_phases_not_shown`).
    fn on_resync(&self) {
        self.reg.catalogs.forget_all();
    }

    fn on_resync_at(&self, at: Revision) {
        *self.replay.lock().unwrap_or_else(PoisonError::into_inner) = Some(Replay {
            at,
            ..Default::default()
        });
        self.on_resync();
    }

    fn on_synced(&self) {
        let replay = self
            .replay
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        if let Some(r) = replay {
            self.reg
                .cluster_table()
                .end_phases_not_shown(&r.phases, r.at);
            for c in self.reg.settle_after_replay(&r.holding, &r.deleting, r.at) {
                self.reg.catalogs.forget(&c);
            }
        }
    }

    fn follows_phases(&self) -> bool {
        true
    }

    fn on_object(&self, kv: &KeyValue, deleted: bool, replay: bool) {
        let key = &kv.key;
        if key.cluster.starts_with(HIDDEN_PREFIX) {
            if crate::controllers::informer::is_phase_record(&key.cluster) {
                self.on_phase_record(kv, deleted, replay);
            }
            return;
        }
        let Some(cluster) = ClusterName::parse(&key.cluster) else {
            return;
        };
        let reg = &self.reg;
        if replay {
            self.noting(|r| {
                if r.last.as_ref() != Some(&cluster) {
                    r.holding.insert(cluster.clone());
                    r.last = Some(cluster.clone());
                }
            });
        }
        if !deleted && !reg.is_marked(&cluster) {
            reg.mark_cluster(&cluster);
        }
        match key.resource.as_str() {
            CRD_RESOURCE => reg.catalogs.forget(&cluster),
            STATE_RESOURCE if key.name == FLOOR_NAME && !deleted => {
                match serde_json::from_slice::<FloorRecord>(&kv.value) {
                    Ok(f) => reg.cluster_table().raise_floor(&key.cluster, f.floor),
                    Err(e) => {
                        tracing::warn!(cluster = %key.cluster, error = %e, "unreadable resourceVersion floor; skipped")
                    }
                }
            }
            WORKSPACE_RESOURCE => {
                let Some(child) = cluster.child(&key.name) else {
                    return;
                };
                let v = serde_json::from_slice::<Value>(&kv.value).ok();
                let deleting = v.as_ref().is_some_and(meta::is_deleting);
                let finalized = v
                    .as_ref()
                    .is_some_and(|v| !meta::finalizers(v).iter().any(|f| f == WORKSPACE_FINALIZER));
                if deleted || (deleting && finalized) {
                    // The workspace controller deleted the child's keys (and its
                    // descendants') before it let the Workspace go.
                    for c in reg.existing_descendants(&child) {
                        reg.unmark_cluster(&c);
                        reg.catalogs.forget(&c);
                        reg.set_terminating(&c, false);
                    }
                    reg.unmark_cluster(&child);
                    reg.catalogs.forget(&child);
                }
                if deleted {
                    reg.set_terminating(&child, false);
                } else if deleting {
                    reg.set_terminating(&child, true);
                    if replay {
                        self.noting(|r| {
                            r.deleting.insert(child.clone());
                        });
                    }
                }
            }
            _ => {}
        }
    }
}
