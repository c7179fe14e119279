//! HTTP and routing: one fallback handler parses the path (logical cluster prefix,
//! API group/version, resource), authenticates, and dispatches to the non-resource
//! endpoints (version, health, discovery, OpenAPI) or to the resource handlers.
//! [`router`] builds the whole app without a socket, so tests can drive it directly.

pub mod auth;
pub mod discovery;
pub mod health;
pub mod json;
pub mod negotiation;
pub mod openapi;
pub mod query;
pub mod request_info;
pub mod resources;
pub mod response;
pub mod reviews;
pub mod table;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use axum::Router;

use crate::error::ApiError;
use crate::registry::Registry;
use request_info::{ApiPath, ClusterScope};

/// Everything a request handler needs.
#[derive(Debug)]
pub struct AppState {
    pub registry: Arc<Registry>,
    pub discovery: discovery::Discovery,
    pub openapi: kplane_openapi::OpenApiV3,
    pub auth: auth::Authenticator,
    pub ready: AtomicBool,
    /// `host:port` clients use, for `serverAddressByClientCIDRs`.
    pub server_address: String,
}

/// The application router.
pub fn router(state: Arc<AppState>) -> Router {
    Router::new().fallback(dispatch).with_state(state)
}

async fn dispatch(State(state): State<Arc<AppState>>, req: Request<Body>) -> Response {
    let path = req.uri().path().to_string();
    let target = match request_info::parse(&path) {
        Ok(t) => t,
        Err(msg) => return ApiError::bad_request(msg).into_response(),
    };
    let rest = target.rest.as_str();
    // Public endpoints (`system:public-info-viewer`).
    match rest {
        "/version" | "/version/" => return health::version(),
        "/healthz" | "/livez" | "/readyz" => {
            return health::check(rest, req.uri().query(), state.ready.load(Ordering::Acquire))
        }
        _ if rest.starts_with("/livez/")
            || rest.starts_with("/healthz/")
            || rest.starts_with("/readyz/") =>
        {
            return health::check(rest, req.uri().query(), state.ready.load(Ordering::Acquire))
        }
        _ => {}
    }
    let user = match state.auth.authenticate(req.headers()) {
        Some(u) => u,
        None => return auth::unauthorized(),
    };
    let accept = negotiation::parse_accept(
        req.headers()
            .get(axum::http::header::ACCEPT)
            .and_then(|v| v.to_str().ok()),
    );
    if rest == "/openapi/v3" || rest.starts_with("/openapi/v3/") {
        return openapi::serve_v3(&state, rest, req.uri().query(), req.headers(), &accept);
    }
    if rest == "/openapi/v2" {
        return openapi::serve_v2();
    }
    let Some(api) = target.api.clone() else {
        return ApiError::not_found_path().into_response();
    };
    let cluster = match &target.cluster {
        ClusterScope::One(c) => Some(c.to_string()),
        ClusterScope::Wildcard => None,
    };
    match api {
        ApiPath::CoreRoot => discovery::core_root(&state, &accept, req.headers()),
        ApiPath::GroupsRoot => discovery::groups_root(&state, &accept, req.headers()),
        ApiPath::Group { group } => discovery::group(&state, &group),
        ApiPath::GroupVersion { group, version } => {
            discovery::group_version(&state, &group, &version)
        }
        ApiPath::Resource(rp) => resources::handle(state, cluster, rp, user, accept, req).await,
    }
}
