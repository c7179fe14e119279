//! Where a logical cluster's limits come from: its Workspace's `spec.quota`, read when
//! the Workspace is written (the Workspace's write hooks) and at start-up (with the terminating
//! marks, `clusters.rs`).

use bytes::Bytes;
use kplane_storage::Key;
use kplane_types::ClusterName;

use super::model::Limits;
use crate::error::ApiResult;
use crate::strategies::workspace::WORKSPACE_RESOURCE;
use crate::Registry;

impl Registry {
    /// Sets the limits of the child of Workspace `name` in `cluster` from the stored
    /// Workspace (none when it is gone or has no `spec.quota`).
    pub(crate) async fn refresh_workspace_quota(
        &self,
        cluster: &ClusterName,
        name: &str,
    ) -> ApiResult<()> {
        let Some(child) = cluster.child(name) else {
            return Ok(());
        };
        let key = Key::new(cluster.as_str(), WORKSPACE_RESOURCE, "", name);
        match self.storage().get(&key).await? {
            Some(kv) => self.load_workspace_quota(&child, &kv.value),
            None => self.quotas().set_limits(child.as_str(), None),
        }
        Ok(())
    }

    /// Sets the limits of `child` from its stored Workspace `ws`.
    pub(crate) fn load_workspace_quota(&self, child: &ClusterName, ws: &Bytes) {
        let limits = serde_json::from_slice(ws)
            .ok()
            .and_then(|v| Limits::from_workspace(&v).ok().flatten());
        self.quotas().set_limits(child.as_str(), limits);
    }
}
