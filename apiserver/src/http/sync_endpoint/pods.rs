//! The sync endpoint's Pod create: the body must be a reflection of one of the target's
//! host pods (its annotation names the target, its controller ownerReference names a Job
//! of the namespace assigned to the target, by name and uid), which the registry checks
//! (`Registry::sync_checks().check_pod_owner`, asked again by `SyncerScope` at write time). The body
//! is read here and put back for the ordinary create handler.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use kplane_registry::error::ApiResult;
use kplane_registry::sync::TargetRef;
use kplane_types::RequestInfo;

use super::super::request_info::ResourcePath;
use super::super::AppState;

/// Checks the create's body and hands the request back with it.
pub(super) async fn checked_create(
    state: &Arc<AppState>,
    req: Request<Body>,
    t: &TargetRef,
    info: &RequestInfo,
    rp: &ResourcePath,
) -> ApiResult<Request<Body>> {
    let cluster = super::one_cluster(info)?;
    let (req, pod) = super::read_object(req).await?;
    let namespace = rp.namespace.as_deref().unwrap_or_default();
    state
        .registry
        .sync_checks()
        .check_pod_owner(&cluster, namespace, &pod, &t.id())
        .await?;
    Ok(req)
}
