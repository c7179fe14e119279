//! The in-memory state derived from stored objects follows the storage events, not only
//! this process's write path: so a replica serves what another replica (or the leader's
//! controllers) wrote, on the same database (docs/architecture.md "Replicas: derived
//! state").
//!
//! [`informer`] builds the informer every replica runs, whatever the leadership: the RBAC
//! and SyncTarget caches' invalidators, the sync endpoint's reference index, and
//! [`Follower`], which keeps
//!
//! - the catalogs: a CRD change drops its cluster's catalog (and the multi-cluster ones),
//!   which the next request loads again from the stored CRDs, with its discovery and
//!   OpenAPI documents (derived per catalog content);
//! - cluster existence: a cluster holding an object exists (the bootstrap of a Workspace's
//!   cluster writes its default namespaces); a Workspace that is deleted, or that has lost
//!   its `tenancy.kplane.io/workspace` finalizer while deleting, takes its cluster and the
//!   descendants with it (the workspace controller deleted their keys first);
//! - terminating marks: a Workspace with a deletionTimestamp marks its cluster, a deleted
//!   one unmarks it;
//! - resourceVersion floors: a stored floor record raises the cluster's floor.
//!
//! The write path keeps updating the same state synchronously, so the replica that wrote
//! reads its own writes at once; here every update is idempotent, so seeing the same
//! change again costs nothing. On another replica the delay is the storage's (the tailer's
//! delivery of the change) plus this informer's.

use std::sync::Arc;

use kplane_storage::KeyValue;
use serde_json::Value;

use crate::cluster_states::{FLOOR_NAME, HIDDEN_PREFIX, STATE_RESOURCE};
use crate::clusters::FloorRecord;
use crate::controllers::informer::{Informer, InformerHandler};
use crate::crd::CRD_RESOURCE;
use crate::strategies::workspace::{WORKSPACE_FINALIZER, WORKSPACE_RESOURCE};
use crate::{meta, Registry};

/// The derived-state informer of `registry` (run it on every replica).
pub(crate) fn informer(registry: &Arc<Registry>) -> Informer {
    Informer::new(registry.storage().clone())
        .following_imports(registry.cluster_table().clone())
        .with(Arc::new(Follower(registry.clone())))
        .with(Arc::new(crate::rbac::cache::Invalidator(
            registry.rbac_cache().clone(),
        )))
        .with(Arc::new(crate::sync_targets::Invalidator(
            registry.sync_target_cache().clone(),
        )))
        .with(Arc::new(crate::sync::ref_index::Indexer(
            registry.sync_ref_index().clone(),
        )))
}

/// Catalogs, cluster existence, terminating marks and floors (see the module doc).
pub(crate) struct Follower(pub(crate) Arc<Registry>);

impl InformerHandler for Follower {
    /// Changes may have been missed: every catalog loads again on its next use. Existence,
    /// terminating marks and floors are set again by the replay (what the replay cannot
    /// show, a Workspace deleted meanwhile, keeps its marks until a later event).
    fn on_resync(&self) {
        self.0.catalogs.forget_all();
    }

    fn on_object(&self, kv: &KeyValue, deleted: bool, _replay: bool) {
        let key = &kv.key;
        if key.cluster.starts_with(HIDDEN_PREFIX) {
            return;
        }
        let Some(cluster) = kplane_types::ClusterName::parse(&key.cluster) else {
            return;
        };
        let reg = &self.0;
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
                }
            }
            _ => {}
        }
    }
}
