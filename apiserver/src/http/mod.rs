//! HTTP and routing. Every request passes the filters of `chain.rs`, one after another in
//! kube-apiserver's order (panic recovery; the request's attributes, computed once by
//! [`request_info::request_info`] and put in its extensions as a [`RequestInfo`]; its
//! scope and audit trail; authentication ([`auth`]: anonymous requests reach only the public
//! endpoints); impersonation ([`impersonation`]); the public endpoints; fair queuing;
//! authorization ([`authz`])), the same for the main API and the sync endpoint
//! ([`sync_endpoint`], paths under `/services/sync/`). A main API request is then served by
//! `serve`: it asks the registry whether the logical cluster exists (404 otherwise) and
//! dispatches to the non-resource endpoints (version, health, discovery, OpenAPI, metrics) or
//! to the resource handlers. [`router`] builds the whole app without a socket, so tests can
//! drive it directly.

pub mod archive;
pub mod auth;
pub mod authz;
mod chain;
pub mod deadline;
pub mod discovery;
pub mod error;
mod filters;
pub mod health;
pub mod httplog;
pub mod impersonation;
pub mod json;
#[cfg(test)]
mod limits_tests;
mod list_item;
#[cfg(test)]
mod list_tests;
pub mod move_endpoints;
#[cfg(test)]
mod move_tests;
pub mod negotiation;
pub mod oidc_discovery;
pub mod openapi;
mod pod_log;
pub mod query;
mod query_limits;
#[cfg(test)]
mod rbac_tests;
pub mod request_info;
pub mod resources;
pub mod response;
pub mod reviews;
#[cfg(test)]
mod router_tests;
pub mod self_review_authz;
mod spool;
pub mod surface;
pub mod sync_endpoint;
#[cfg(test)]
mod sync_tests;
pub mod table;
pub mod token_file;
pub mod token_request;
mod watch_list;
pub mod x509;

use error::StatusResponse;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::response::{IntoResponse, Response};
use axum::Router;
use kplane_types::{RequestInfo, UserInfo};

use kplane_registry::error::ApiError;
use kplane_registry::Registry;
use request_info::{ApiPath, ClusterScope, RequestTarget};

/// `apiserver_storage_objects` figures and when they were taken.
pub type ObjectCounts = (std::time::Instant, Vec<(String, u64)>);

/// Everything a request handler needs.
#[derive(Debug)]
pub struct AppState {
    pub registry: Arc<Registry>,
    pub surfaces: surface::Surfaces,
    /// Who a request comes from ([`auth`]).
    pub authenticator: Arc<dyn auth::Authenticator>,
    /// Whether they may make it ([`authz`]).
    pub authorizer: Arc<dyn authz::Authorizer>,
    /// Whether requests without credentials reach the public endpoints
    /// (`--anonymous-auth`); when not, they are a 401 everywhere.
    pub anonymous: bool,
    pub ready: AtomicBool,
    /// `host:port` clients use, for `serverAddressByClientCIDRs`.
    pub server_address: String,
    pub metrics: Arc<crate::metrics::Metrics>,
    /// The last `apiserver_storage_objects` figures and when they were taken.
    pub object_counts: std::sync::Mutex<Option<ObjectCounts>>,
    pub event_window: std::time::Duration,
    /// The `/version` body (`crate::version`).
    pub version: String,
    /// ServiceAccount tokens (the `token` subresource, issuer discovery); `None`: not served.
    pub service_accounts: Option<Arc<crate::serviceaccount::ServiceAccounts>>,
    /// The audit log; `None`: no audit.
    pub audit: Option<Arc<crate::audit::Auditor>>,
    /// Where import bodies are spooled (under the data dir; emptied at start-up).
    pub spool_dir: std::path::PathBuf,
    /// The scheduled backups' metrics, when they run (`crate::backup`).
    pub backup: Option<Arc<crate::backup::BackupMetrics>>,
    /// Where pod log requests meet the syncers that serve them ([`crate::pod_logs`]).
    pub pod_logs: Arc<crate::pod_logs::LogBroker>,
    /// Seats and per-cluster queues of every request ([`crate::flowcontrol`]).
    pub flow: Arc<crate::flowcontrol::FlowControl>,
    /// Where the handlers of requests past their cluster's share run
    /// ([`crate::flowcontrol::lowered`]); `None`: here.
    pub lowered: Option<tokio::runtime::Handle>,
    /// The protective limits the handlers apply (query, selectors, page size, body time).
    pub limits: crate::limits::Limits,
    /// Watches open per user, under `limits.max_watches_per_user`.
    pub watches: Arc<crate::quotas::WatchCounts>,
}

/// The application router.
pub fn router(state: Arc<AppState>) -> Router {
    chain::app(state)
}

/// Serves a request of the main API once the filters ([`chain`]) have passed it: the
/// OIDC discovery documents, the existence check of its logical cluster, then the
/// non-resource endpoints, discovery and the resource handlers. `waiter`: the request's
/// seats, lent to others while its handler waits for the store's writer; `arrived`: when
/// the request arrived (for its latency metric).
async fn serve(
    state: Arc<AppState>,
    req: Request<Body>,
    target: RequestTarget,
    info: &RequestInfo,
    user: &UserInfo,
    waiter: Option<Arc<dyn kplane_storage::io_wait::IoWait>>,
    arrived: std::time::Instant,
) -> Response {
    let rest = info.path.as_str();
    // ServiceAccount issuer discovery: the same answer for every cluster name, so it is
    // served before (and tells nothing about) the existence check.
    if oidc_discovery::is_discovery_path(rest) {
        return oidc_discovery::serve(&state, info);
    }
    // The one existence check of the request's logical cluster (404 when it does not
    // exist), after authorization so that neither 401 nor 403 tells whether it does. An
    // import's target need not exist (the registry checks its parent).
    if !archive::is_import_path(rest) {
        if let Err(e) = state.registry.logical_clusters().check(&info.cluster) {
            return e.into_response();
        }
    }
    if archive::is_archive_path(rest) {
        let method = req.method().clone();
        let query = req.uri().query().map(str::to_string);
        return archive::serve(&state, info, &method, query.as_deref(), req.into_body()).await;
    }
    let accept = negotiation::parse_accept(
        req.headers()
            .get(axum::http::header::ACCEPT)
            .and_then(|v| v.to_str().ok()),
    );
    let cluster = &info.cluster;
    if rest.starts_with("/kplane/v1/") {
        if let Some(resp) =
            move_endpoints::serve(&state.registry, req.method(), info, req.uri().query()).await
        {
            return resp;
        }
    }
    if rest == "/metrics" {
        return metrics_endpoint(&state).await;
    }
    if rest == "/metrics/slis" {
        return (
            [(
                axum::http::header::CONTENT_TYPE,
                "text/plain; version=0.0.4; charset=utf-8",
            )],
            state.metrics.health.render(),
        )
            .into_response();
    }
    if rest == "/openapi/v2" {
        return openapi_v2(&state, cluster, req.headers()).await;
    }
    let Some(api) = target.api else {
        if rest == "/openapi/v3" || rest.starts_with("/openapi/v3/") {
            return match surface_for(&state, cluster).await {
                Ok(s) => openapi::serve_v3(&s, rest, req.uri().query(), &accept),
                Err(e) => e.into_response(),
            };
        }
        return ApiError::not_found_path().into_response();
    };
    let discovery_surface = match &api {
        ApiPath::Resource(_) => None,
        _ => match surface_for(&state, cluster).await {
            Ok(s) => Some(s),
            Err(e) => return e.into_response(),
        },
    };
    match (api, discovery_surface) {
        (ApiPath::CoreRoot, Some(s)) => {
            discovery::core_root(&s.discovery, &state.server_address, &accept, req.headers())
        }
        (ApiPath::GroupsRoot, Some(s)) => {
            discovery::groups_root(&s.discovery, &accept, req.headers())
        }
        (ApiPath::Group { group }, Some(s)) => discovery::group(&s.discovery, &group),
        (ApiPath::GroupVersion { group, version }, Some(s)) => {
            discovery::group_version(&s.discovery, &group, &version)
        }
        (ApiPath::Resource(rp), _) => {
            let started = arrived;
            let apply = req
                .headers()
                .get(axum::http::header::CONTENT_TYPE)
                .is_some_and(|v| v.as_bytes() == b"application/apply-patch+yaml");
            let labels = crate::metrics::RequestLabels::of(info, apply);
            let metrics = state.metrics.clone();
            let handled = resources::handle(state, rp, info, user, accept, req);
            // While the request waits for the store's writer its seats serve others.
            let resp = filters::handle(waiter, handled).await;
            metrics.observe_request(
                labels,
                resp.status().as_u16(),
                started.elapsed().as_secs_f64(),
            );
            resp
        }
        _ => ApiError::not_found_path().into_response(),
    }
}

/// Who a request comes from: the user its credentials name, or `system:anonymous` for a
/// request without any on a public path (when anonymous requests are enabled). Anything
/// else is kube-apiserver's 401.
async fn authenticate(
    state: &AppState,
    headers: &axum::http::HeaderMap,
    certs: Option<&auth::PeerCertificates>,
    path: &str,
) -> Result<UserInfo, Response> {
    let credentials = auth::AuthRequest::from_headers(headers, certs);
    match state.authenticator.authenticate(&credentials).await {
        auth::AuthOutcome::Authenticated(u) => Ok(u),
        auth::AuthOutcome::Rejected(e) => {
            tracing::debug!(error = %e, "authentication failed");
            Err(auth::unauthorized())
        }
        // A presented token nobody knows is upstream's "invalid bearer token".
        auth::AuthOutcome::NotApplicable if credentials.bearer_token.is_some() => {
            tracing::debug!("authentication failed: invalid bearer token");
            Err(auth::unauthorized())
        }
        auth::AuthOutcome::NotApplicable if state.anonymous && auth::is_public_path(path) => {
            Ok(auth::anonymous_user())
        }
        auth::AuthOutcome::NotApplicable => Err(auth::unauthorized()),
    }
}

/// Discovery and OpenAPI of the catalog serving `cluster`.
async fn surface_for(
    state: &AppState,
    cluster: &ClusterScope,
) -> Result<Arc<surface::Surface>, ApiError> {
    let catalog = state.registry.catalog_for(cluster).await?;
    state.surfaces.for_catalog(&catalog)
}

/// `GET /openapi/v2` of the catalog serving `cluster`; the document is built (once per
/// distinct catalog) off the async workers.
async fn openapi_v2(
    state: &AppState,
    cluster: &ClusterScope,
    headers: &axum::http::HeaderMap,
) -> Response {
    let Some(format) = openapi::v2_format(headers) else {
        return openapi::v2_not_acceptable();
    };
    let catalog = match state.registry.catalog_for(cluster).await {
        Ok(c) => c,
        Err(e) => return e.into_response(),
    };
    let surface = match state.surfaces.for_catalog(&catalog) {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let headers = headers.clone();
    let served = tokio::task::spawn_blocking(move || {
        surface
            .openapi_v2(&catalog)
            .map(|(doc, at)| openapi::serve_v2(doc, at, format, &headers))
    })
    .await;
    match served {
        Ok(Ok(response)) => response,
        // kube-openapi answers a spec it cannot produce with a bare 503.
        Ok(Err(e)) => {
            tracing::error!(error = %e, "OpenAPI v2");
            axum::http::StatusCode::SERVICE_UNAVAILABLE.into_response()
        }
        Err(e) => {
            tracing::error!(error = %e, "OpenAPI v2");
            axum::http::StatusCode::SERVICE_UNAVAILABLE.into_response()
        }
    }
}

/// How long `apiserver_storage_objects` figures are reused (upstream refreshes each minute).
const OBJECT_COUNT_TTL: std::time::Duration = std::time::Duration::from_secs(60);

async fn metrics_endpoint(state: &AppState) -> Response {
    let cached = state.object_counts.lock().ok().and_then(|c| {
        c.as_ref()
            .filter(|(t, _)| t.elapsed() < OBJECT_COUNT_TTL)
            .map(|(_, v)| v.clone())
    });
    let objects = match cached {
        Some(v) => v,
        None => {
            let v = state.registry.health().object_counts().await;
            if let Ok(mut c) = state.object_counts.lock() {
                *c = Some((std::time::Instant::now(), v.clone()));
            }
            v
        }
    };
    let store = state.registry.health().store_figures();
    let figures = crate::metrics::StorageFigures {
        revision: store.revision,
        compacted_revision: store.compacted_revision,
        objects,
        logical_clusters: state.registry.logical_clusters().known() as u64,
        event_window_seconds: state.event_window.as_secs(),
        stats: store.stats,
        extra: vec![
            (
                "kplane_rbac_cached_clusters".into(),
                "Logical clusters whose compiled RBAC policy is cached.".into(),
                state.registry.rbac().cache().len() as f64,
            ),
            (
                "kplane_rbac_cached_policies".into(),
                "Cached RBAC policies of logical clusters with RBAC objects of their own (the others share one empty policy).".into(),
                state.registry.rbac().cache().non_empty() as f64,
            ),
            (
                "kplane_leader".into(),
                "1 while this replica runs the writing controllers (the leader the store elects; always 1 on sled), else 0.".into(),
                if state.registry.health().is_leader() { 1.0 } else { 0.0 },
            ),
            (
            "kplane_lifecycle_queue_depth".into(),
            "Background work items (namespace emptying, CRD cleanup, garbage collection) queued or running; retries waiting for their delay are not counted.".into(),
            state.registry.health().queued_work() as f64,
        )],
    };
    let mut body = state.metrics.render(&figures);
    state.flow.render_metrics(&mut body);
    if let Some(a) = &state.audit {
        a.render_metrics(&mut body);
    }
    if let Some(b) = &state.backup {
        b.render(&mut body);
    }
    crate::metrics::render_quota_rejections(&mut body, &state.registry.quotas().rejections());
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn metric_series_do_not_grow_with_logical_clusters() {
        let m = crate::metrics::Metrics::default();
        for i in 0..1000 {
            let path = format!("/clusters/root:t{i}/api/v1/namespaces/default/configmaps/c{i}");
            let target = request_info::parse(&path).unwrap();
            let info = request_info::request_info(&axum::http::Method::GET, &target, None);
            m.observe_request(crate::metrics::RequestLabels::of(&info, false), 200, 0.001);
        }
        let text = m.render(&crate::metrics::StorageFigures::default());
        let series: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("apiserver_request_total"))
            .collect();
        assert_eq!(series.len(), 1, "{series:?}");
        assert!(
            series[0].ends_with(" 1000") && series[0].contains("verb=\"GET\""),
            "{series:?}"
        );
        assert!(
            !text.contains("root:t"),
            "a cluster name leaked into a label"
        );
    }
}
