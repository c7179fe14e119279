//! The registry's view of which logical clusters exist and which are terminating
//! ([`ClusterState`]); `clusters.rs` keeps it in step with storage.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex, RwLock};

use kplane_storage::Revision;
use kplane_types::ClusterName;

use crate::cluster_states::table::ClusterTable;

/// The registry's view of the logical clusters.
#[derive(Debug, Default)]
pub(crate) struct ClusterState {
    /// Clusters that exist (besides `root`, which always does), in name order, so that a
    /// cluster's descendants are one range; each with the revision of its last mark
    /// (`mark_revision`: a rescan leaves marks made after its snapshot alone).
    pub(super) existing: RwLock<BTreeMap<ClusterName, Revision>>,
    /// Clusters whose Workspace is being deleted, each with the revision of its last mark.
    pub(super) terminating: Mutex<HashMap<ClusterName, Revision>>,
    /// Development mode: unknown clusters answer, and a first write bootstraps them.
    pub(super) auto_create: AtomicBool,
    /// Clusters being imported or replaced, and resourceVersion floors
    /// (`cluster_states.rs`).
    pub(crate) table: Arc<ClusterTable>,
}
