//! The quota status controller: every [`STATUS_EVERY`], each logical cluster whose counts
//! changed gets them written into its Workspace's `status.quota` (`hard`: the limits in
//! force, `used`: what it holds), through the `/status` verb like any controller write. A
//! tenant's writes never wait for it, and a cluster written to a thousand times in that
//! interval costs one status write.

use std::sync::Arc;
use std::time::Duration;

use kplane_types::ClusterName;
use serde_json::{json, Value};

use crate::error::ApiResult;
use crate::options::WriteParams;
use crate::{Registry, Target};

/// How often changed counts are written into Workspaces' status.
pub const STATUS_EVERY: Duration = Duration::from_secs(5);

/// The field manager of the status writes.
const MANAGER: &str = "kplane-quota";

/// Runs the controller until its task is stopped.
pub(crate) async fn run(reg: Arc<Registry>) {
    let mut tick = tokio::time::interval(STATUS_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        for cluster in reg.quotas().take_changed() {
            if let Err(e) = write_quota_status(&reg, &cluster).await {
                tracing::debug!(cluster, error = %e.0.message, "quota status not written; retried");
                reg.quotas().mark_changed(&cluster);
            }
        }
    }
}

/// Writes `cluster`'s limits and counts into its Workspace's `status.quota`, unless
/// they are there already or the Workspace is not Ready (being created or deleted:
/// its own controller writes its status then). `root` has no Workspace.
pub(crate) async fn write_quota_status(reg: &Registry, cluster: &str) -> ApiResult<()> {
    let Some(c) = ClusterName::parse(cluster) else {
        return Ok(());
    };
    let (Some(parent), Some(used)) = (c.parent(), reg.quotas().usage(cluster)) else {
        return Ok(());
    };
    let t = Target::new(
        &parent,
        crate::controllers::workspace::workspace_type(reg)?,
        None,
    );
    let name = c.base_name();
    let mut obj: Value = match reg.get(&t, name).await {
        Ok(b) => serde_json::from_slice(&b).map_err(|e| crate::corrupt(&e))?,
        Err(e) if e.code() == 404 => return Ok(()),
        Err(e) => return Err(e),
    };
    if obj.pointer("/status/phase") != Some(&json!("Ready")) {
        return Ok(());
    }
    let quota = json!({"hard": reg.quotas().hard(cluster), "used": used.by_name()});
    if obj.pointer("/status/quota") == Some(&quota) {
        return Ok(());
    }
    obj["status"]["quota"] = quota;
    match reg
        .update(
            &t,
            name,
            Some("status"),
            obj,
            &WriteParams::controller_named(MANAGER),
        )
        .await
    {
        Ok(_) => Ok(()),
        Err(e) if e.code() == 404 => Ok(()),
        Err(e) => Err(e),
    }
}
