//! The request path every request takes, main API and sync endpoint alike, in
//! kube-apiserver's order (`server/config.go` `DefaultBuildHandlerChain`): its attributes
//! (request info), its scope (request log line, warnings, audit trail), the request deadline
//! and query limits, authentication, impersonation, the public endpoints, fair queuing,
//! authorization, the body kept for the audit event, then the handler. What differs between
//! the two paths is their [`Route`]: how a path that does not parse is answered, which path
//! is authenticated, which attributes impersonation and authorization see, whether there
//! are public endpoints, which seats the request takes, and which handler serves it.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::response::Response;
use kplane_registry::error::ApiError;
use kplane_types::{RequestInfo, UserInfo};

use super::error::StatusResponse;
use super::filters::{self, RequestScope};
use super::request_info::{self, RequestTarget};
use super::{archive, auth, health, httplog, sync_endpoint, AppState};

/// What a request's path addresses, and so how the filters treat it.
pub(super) enum Route {
    /// The API and the non-resource endpoints of a logical cluster.
    Main(RequestTarget),
    /// A syncer's endpoint ([`sync_endpoint`]).
    Sync(sync_endpoint::Route),
}

/// The seats a request takes ([`filters::admitted`]).
enum Seats {
    /// Its cluster's, as its work estimate names.
    Request,
    /// The syncers' own first.
    Syncer,
    /// None (long polls of the sync endpoint).
    None,
}

impl Route {
    /// The route and attributes of `req`; `Err` is the answer to a path that does not
    /// parse: 400 on the main API, 404 under the sync endpoint.
    fn of(req: &Request<Body>) -> Result<(Route, RequestInfo), Response> {
        let path = req.uri().path();
        let route = if path.starts_with(sync_endpoint::PREFIX) {
            Route::Sync(
                sync_endpoint::Route::parse(path)
                    .ok_or_else(|| ApiError::not_found_path().into_response())?,
            )
        } else {
            Route::Main(
                request_info::parse(path)
                    .map_err(|msg| ApiError::bad_request(msg).into_response())?,
            )
        };
        let target = match &route {
            Route::Main(target) => target,
            Route::Sync(r) => &r.inner,
        };
        let info = request_info::request_info(req.method(), target, req.uri().query());
        Ok((route, info))
    }

    /// The path authentication sees (anonymous requests reach only public paths): the
    /// path without its cluster prefix; the whole path under the sync endpoint, which has
    /// no public path.
    fn authenticated_path(&self, req: &Request<Body>, info: &RequestInfo) -> String {
        match self {
            Route::Main(_) => info.path.clone(),
            Route::Sync(_) => req.uri().path().to_string(),
        }
    }

    /// The attributes once `user` is authenticated, when they change: a ServiceAccount
    /// token routes a path without the cluster prefix to its own cluster.
    fn routed_home(&mut self, req: &Request<Body>, user: &UserInfo) -> Option<RequestInfo> {
        let Route::Main(target) = self else {
            return None;
        };
        let home = user
            .extra
            .get(crate::serviceaccount::CLUSTER_EXTRA)
            .and_then(|v| v.first());
        target
            .route_home(home.map(String::as_str))
            .then(|| request_info::request_info(req.method(), target, req.uri().query()))
    }

    /// The attributes impersonation is decided for.
    fn impersonated<'a>(&'a self, info: &'a RequestInfo) -> &'a RequestInfo {
        match self {
            Route::Main(_) => info,
            Route::Sync(r) => &r.attrs,
        }
    }

    /// The answer of a public endpoint (version, health), served without seats or
    /// authorization; `None` for every other path.
    fn public(
        &self,
        state: &AppState,
        req: &Request<Body>,
        info: &RequestInfo,
    ) -> Option<Response> {
        let Route::Main(_) = self else {
            return None;
        };
        let rest = info.path.as_str();
        let health = || {
            health::check(
                rest,
                req.uri().query(),
                state.ready.load(std::sync::atomic::Ordering::Acquire),
                state.registry.storage_health(),
                &state.metrics.health,
            )
        };
        match rest {
            "/version" | "/version/" => Some(health::version(&state.version)),
            "/healthz" | "/livez" | "/readyz" => Some(health()),
            _ if rest.starts_with("/livez/")
                || rest.starts_with("/healthz/")
                || rest.starts_with("/readyz/") =>
            {
                Some(health())
            }
            _ => None,
        }
    }

    /// The seats the request takes.
    fn seats(&self, info: &RequestInfo) -> Seats {
        match self {
            Route::Main(_) => Seats::Request,
            // The log requests' long poll is long-running: no seat, as upstream's fair
            // queuing passes long-running requests other than watches.
            Route::Sync(_) if sync_endpoint::is_log_path(&info.path) => Seats::None,
            Route::Sync(_) => Seats::Syncer,
        }
    }

    /// The attributes authorization decides, `None` for a public path (the OIDC discovery
    /// documents as well as version and health).
    fn authorized<'a>(
        &'a self,
        info: &'a RequestInfo,
    ) -> Option<std::borrow::Cow<'a, RequestInfo>> {
        match self {
            Route::Main(_) if auth::is_public_path(&info.path) => None,
            // An import is authorized in the target's parent (it creates the target).
            Route::Main(_) => Some(match archive::authorization_info(info) {
                Some(parent) => std::borrow::Cow::Owned(parent),
                None => std::borrow::Cow::Borrowed(info),
            }),
            Route::Sync(r) => Some(std::borrow::Cow::Borrowed(&r.attrs)),
        }
    }
}

/// Serves one request and writes its line of the request log ([`httplog`]) and its audit
/// events ([`crate::audit`]). The request's extensions carry its attributes as an
/// `Arc<RequestInfo>` and, once authenticated, its user as an `Arc<UserInfo>`.
pub(super) async fn dispatch(
    State(state): State<Arc<AppState>>,
    mut req: Request<Body>,
) -> Response {
    let start = httplog::RequestStart::new(&req);
    let (route, info) = match Route::of(&req) {
        Ok(r) => r,
        Err(resp) => {
            httplog::log(&start, None, None, &resp);
            return resp;
        }
    };
    let mut scope = RequestScope::begin(&state, start, &mut req, Arc::new(info));
    let resp = run(state, req, route, &mut scope).await;
    scope.end(resp).await
}

/// The filters after the request's scope has begun, then its handler. The scope's user is
/// set once the request is authenticated, and its audit trail learns who the user is, whom
/// they impersonate and what authorization decided; its attributes are replaced when a
/// ServiceAccount token routes a path without the cluster prefix to its own cluster.
async fn run(
    state: Arc<AppState>,
    mut req: Request<Body>,
    mut route: Route,
    scope: &mut RequestScope,
) -> Response {
    // The request deadline filter runs before authentication.
    if let Err(resp) = filters::preflight(&state, &scope.info, req.uri().query()) {
        return resp;
    }
    let path = route.authenticated_path(&req, &scope.info);
    let authenticated =
        match filters::authenticated(&state, req.headers(), req.extensions(), &path).await {
            Ok(u) => u,
            Err(resp) => return resp,
        };
    if let Some(info) = route.routed_home(&req, &authenticated) {
        scope.info = Arc::new(info);
        req.extensions_mut().insert(scope.info.clone());
    }
    let info = scope.info.clone();
    if let Some(t) = scope.trail.as_mut() {
        t.authenticated(&authenticated, &info);
    }
    let attrs = route.impersonated(&info);
    let acting = match filters::acting_user(
        &state,
        &mut req,
        attrs,
        authenticated,
        &mut scope.trail,
    )
    .await
    {
        Ok(u) => u,
        Err(resp) => return resp,
    };
    let user = scope.user.insert(acting).clone();
    if let Some(resp) = route.public(&state, &req, &info) {
        return resp;
    }
    // Fair queuing: a seat, or a 429 (upstream's API Priority and Fairness runs here,
    // between impersonation and authorization).
    let sync = match route.seats(&info) {
        Seats::Request => Some(false),
        Seats::Syncer => Some(true),
        Seats::None => None,
    };
    if let Some(sync) = sync {
        if let Err(resp) = filters::admitted(
            &state,
            &info,
            &mut scope.seat,
            &user,
            req.uri().query(),
            sync,
        )
        .await
        {
            return resp;
        }
    }
    if let Some(attrs) = route.authorized(&info) {
        if let Err(forbidden) = filters::authorized(&state, &user, &attrs, &mut scope.trail).await {
            return forbidden;
        }
    }
    let req = filters::audited_body(req, &info, &mut scope.trail).await;
    let waiter = scope
        .seat
        .as_ref()
        .and_then(crate::flowcontrol::Seat::io_waiter);
    match route {
        Route::Main(target) => {
            super::serve(state, req, target, &info, &user, waiter, scope.started()).await
        }
        Route::Sync(r) => sync_endpoint::serve(&state, req, r, &info, waiter).await,
    }
}
