//! The request path every request takes, main API and sync endpoint alike: the filters as
//! tower layers ([`app`]), in kube-apiserver's order (`server/config.go`
//! `DefaultBuildHandlerChain`), outermost first:
//!
//! 0. panic recovery ([`recover_panics`]): a panic answers kube-apiserver's 500 rather than
//!    dropping the connection (the scope layer recovers those of the layers inside it and
//!    the handler, so that they are logged and audited);
//! 1. request info ([`request_info`]): the path parsed into a [`Route`] and the request's
//!    attributes (a path that does not parse is answered here);
//! 2. the request's scope ([`request_scope`]): its request log line, warnings, admission's
//!    audit annotations and audit trail (begun before authentication, so 401s are audited);
//! 3. the request deadline and query limits ([`request_deadline`]);
//! 4. authentication ([`authentication`]);
//! 5. impersonation ([`impersonation`]);
//! 6. the public endpoints, version and health ([`public_endpoints`]: no seat, no
//!    authorization);
//! 7. fair queuing ([`fair_queuing`], where upstream runs API Priority and Fairness);
//! 8. authorization ([`authorization`]);
//! 9. the request body kept for the audit event ([`audited_body`]);
//!
//! then the handler ([`handler`]). A layer that refuses the request answers without calling
//! the next. What the layers learn of a request (its route and attributes, its user, audit
//! trail and seats) passes between them in its extensions as a [`Passage`], which the scope
//! layer ends. What differs between the main API and the sync endpoint is their [`Route`]:
//! how a path that does not parse is answered, which path is authenticated, which attributes
//! impersonation and authorization see, whether there are public endpoints, which seats the
//! request takes, and which handler serves it.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{from_fn, from_fn_with_state, Next};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Router};
use futures::FutureExt;
use kplane_registry::error::ApiError;
use kplane_types::{RequestInfo, UserInfo};
use tower::ServiceBuilder;

use super::error::StatusResponse;
use super::filters::{self, RequestScope};
use super::request_info::{self, RequestTarget};
use super::{archive, auth, health, httplog, sync_endpoint, AppState};

/// The application: the handler behind the filters' layers, in order.
pub(super) fn app(state: Arc<AppState>) -> Router {
    let layers = ServiceBuilder::new()
        .layer(from_fn(recover_panics))
        .layer(from_fn(request_info))
        .layer(from_fn_with_state(state.clone(), request_scope))
        .layer(from_fn_with_state(state.clone(), request_deadline))
        .layer(from_fn_with_state(state.clone(), authentication))
        .layer(from_fn_with_state(state.clone(), impersonation))
        .layer(from_fn_with_state(state.clone(), public_endpoints))
        .layer(from_fn_with_state(state.clone(), fair_queuing))
        .layer(from_fn_with_state(state.clone(), authorization))
        .layer(from_fn(audited_body));
    Router::new()
        .fallback(handler)
        .layer(layers)
        .with_state(state)
}

/// What a request's path addresses, and so how the filters treat it.
#[derive(Clone, Debug)]
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
    fn of(req: &Request<Body>) -> Result<(Route, RequestInfo), ApiError> {
        let path = req.uri().path();
        let route = if path.starts_with(sync_endpoint::PREFIX) {
            Route::Sync(sync_endpoint::Route::parse(path).ok_or_else(ApiError::not_found_path)?)
        } else {
            Route::Main(request_info::parse(path).map_err(ApiError::bad_request)?)
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
    fn impersonated(&self, info: &Arc<RequestInfo>) -> Arc<RequestInfo> {
        match self {
            Route::Main(_) => info.clone(),
            Route::Sync(r) => r.attrs.clone(),
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
    fn authorized(&self, info: &Arc<RequestInfo>) -> Option<Arc<RequestInfo>> {
        match self {
            Route::Main(_) if auth::is_public_path(&info.path) => None,
            // An import is authorized in the target's parent (it creates the target).
            Route::Main(_) => {
                Some(archive::authorization_info(info).map_or_else(|| info.clone(), Arc::new))
            }
            Route::Sync(r) => Some(r.attrs.clone()),
        }
    }
}

/// What the layers learn of one request as it passes them, in its extensions: the scope
/// layer ([`request_scope`]) puts it there and takes back the audit trail, the acting
/// user and the seats when the response is made. Never locked across an await.
#[derive(Clone)]
struct Passage(Arc<Mutex<Passing>>);

struct Passing {
    route: Route,
    /// The request's attributes (replaced when a ServiceAccount token routes a path
    /// without the cluster prefix to its own cluster).
    info: Arc<RequestInfo>,
    /// When the request arrived (for its latency metric).
    arrived: std::time::Instant,
    /// The user its credentials name, until impersonation.
    authenticated: Option<Arc<UserInfo>>,
    /// The acting user, once impersonation is decided.
    user: Option<Arc<UserInfo>>,
    trail: Option<crate::audit::Trail>,
    seat: Option<crate::flowcontrol::Seat>,
}

impl Passage {
    fn lock(&self) -> MutexGuard<'_, Passing> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Runs `f` with the audit trail taken out (it may await), then puts it back.
    async fn with_trail<T>(&self, f: impl AsyncFnOnce(&mut Option<crate::audit::Trail>) -> T) -> T {
        let mut trail = self.lock().trail.take();
        let out = f(&mut trail).await;
        self.lock().trail = trail;
        out
    }
}

/// Panic recovery (upstream's `WithPanicRecovery`): a panic of the layers inside that the
/// scope layer does not recover itself (its own, request info's) answers the 500 too. A
/// response body that panics while it streams (a watch) ends its connection's stream; the
/// server goes on.
async fn recover_panics(req: Request<Body>, next: Next) -> Response {
    let (method, uri) = (req.method().clone(), req.uri().clone());
    match AssertUnwindSafe(next.run(req)).catch_unwind().await {
        Ok(resp) => resp,
        Err(panic) => {
            let message = panic_message(panic.as_ref());
            tracing::error!(%method, %uri, panic = %message, "apiserver panic'd");
            panic_response()
        }
    }
}

/// kube-apiserver's answer to a request whose handling panicked.
fn panic_response() -> Response {
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        "This request caused apiserver to panic. Look in the logs for details.\n",
    )
        .into_response()
}

/// What a panic said (its message, when it is text).
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(not text)".to_string())
}

/// Request info: the route and attributes of the request (an `Arc<RequestInfo>` in its
/// extensions from here on), or the answer to a path that does not parse, with its
/// request log line.
async fn request_info(mut req: Request<Body>, next: Next) -> Response {
    let start = httplog::RequestStart::new(&req);
    let (route, info) = match Route::of(&req) {
        Ok(r) => r,
        Err(e) => {
            let resp = e.into_response();
            httplog::log(&start, None, None, &resp);
            return resp;
        }
    };
    let ext = req.extensions_mut();
    ext.insert(start);
    ext.insert(Arc::new(info));
    ext.insert(route);
    next.run(req).await
}

/// The request's scope ([`RequestScope`]): begun here (warnings, audit annotations, audit
/// trail), ended when the response is made (`Warning` headers, the audit trail finished,
/// the request log line written).
async fn request_scope(
    State(state): State<Arc<AppState>>,
    Extension(start): Extension<httplog::RequestStart>,
    Extension(info): Extension<Arc<RequestInfo>>,
    Extension(route): Extension<Route>,
    mut req: Request<Body>,
    next: Next,
) -> Response {
    req.extensions_mut().remove::<httplog::RequestStart>();
    req.extensions_mut().remove::<Route>();
    let arrived = start.started();
    let mut scope = RequestScope::begin(&state, start, &mut req, info.clone());
    let passage = Passage(Arc::new(Mutex::new(Passing {
        route,
        info,
        arrived,
        authenticated: None,
        user: None,
        trail: scope.trail.take(),
        seat: None,
    })));
    req.extensions_mut().insert(passage.clone());
    let (method, uri) = (req.method().clone(), req.uri().clone());
    let handled = AssertUnwindSafe(next.run(req)).catch_unwind().await;
    {
        let mut p = passage.lock();
        scope.info = p.info.clone();
        scope.user = p.user.take();
        scope.trail = p.trail.take();
        scope.seat = p.seat.take();
    }
    let resp = match handled {
        Ok(resp) => resp,
        Err(panic) => {
            let message = panic_message(panic.as_ref());
            let audit_id = scope.trail.as_ref().map(|t| t.id().to_string());
            tracing::error!(%method, %uri, audit_id = audit_id.as_deref().unwrap_or(""), panic = %message, "apiserver panic'd");
            let mut resp = panic_response();
            if let Some(t) = scope.trail.take() {
                if let Ok(v) = HeaderValue::from_str(t.id()) {
                    resp.headers_mut().insert("audit-id", v);
                }
                t.panicked(&scope.info, &message);
            }
            resp
        }
    };
    scope.end(resp).await
}

/// The request deadline (a valid `timeout`) and the query limits, before authentication.
async fn request_deadline(
    State(state): State<Arc<AppState>>,
    Extension(passage): Extension<Passage>,
    req: Request<Body>,
    next: Next,
) -> Response {
    let info = passage.lock().info.clone();
    if let Err(e) = filters::preflight(&state, &info, req.uri().query()) {
        return e.into_response();
    }
    next.run(req).await
}

/// Authentication (a 401 otherwise); the audit trail learns the user (its
/// `RequestReceived` event).
async fn authentication(
    State(state): State<Arc<AppState>>,
    Extension(passage): Extension<Passage>,
    mut req: Request<Body>,
    next: Next,
) -> Response {
    let path = {
        let p = passage.lock();
        p.route.authenticated_path(&req, &p.info)
    };
    let authenticated =
        match filters::authenticated(&state, req.headers(), req.extensions(), &path).await {
            Ok(u) => u,
            Err(resp) => return resp,
        };
    {
        let mut p = passage.lock();
        if let Some(info) = p.route.routed_home(&req, &authenticated) {
            p.info = Arc::new(info);
            req.extensions_mut().insert(p.info.clone());
        }
        let info = p.info.clone();
        if let Some(t) = p.trail.as_mut() {
            t.authenticated(&authenticated, &info);
        }
        p.authenticated = Some(authenticated);
    }
    next.run(req).await
}

/// Impersonation: the acting user (an `Arc<UserInfo>` in the extensions), or the refusal.
async fn impersonation(
    State(state): State<Arc<AppState>>,
    Extension(passage): Extension<Passage>,
    mut req: Request<Body>,
    next: Next,
) -> Response {
    let (attrs, authenticated) = {
        let mut p = passage.lock();
        (p.route.impersonated(&p.info), p.authenticated.take())
    };
    let Some(authenticated) = authenticated else {
        return misassembled("impersonation before authentication");
    };
    let acting = passage
        .with_trail(async |trail| {
            filters::acting_user(&state, &mut req, &attrs, authenticated, trail).await
        })
        .await;
    match acting {
        Ok(u) => passage.lock().user = Some(u),
        Err(resp) => return resp,
    }
    next.run(req).await
}

/// The public endpoints (version, health; `system:public-info-viewer` upstream): answered
/// here, without seats or authorization.
async fn public_endpoints(
    State(state): State<Arc<AppState>>,
    Extension(passage): Extension<Passage>,
    req: Request<Body>,
    next: Next,
) -> Response {
    let public = {
        let p = passage.lock();
        p.route.public(&state, &req, &p.info)
    };
    match public {
        Some(resp) => resp,
        None => next.run(req).await,
    }
}

/// Fair queuing: the request's seats, held until its response is sent, or a 429 (upstream's
/// API Priority and Fairness runs here, between impersonation and authorization).
async fn fair_queuing(
    State(state): State<Arc<AppState>>,
    Extension(passage): Extension<Passage>,
    req: Request<Body>,
    next: Next,
) -> Response {
    let (seats, info, user) = {
        let p = passage.lock();
        (p.route.seats(&p.info), p.info.clone(), p.user.clone())
    };
    let Some(user) = user else {
        return misassembled("fair queuing before impersonation");
    };
    let sync = match seats {
        Seats::Request => false,
        Seats::Syncer => true,
        Seats::None => return next.run(req).await,
    };
    let mut seat = None;
    let admitted =
        filters::admitted(&state, &info, &mut seat, &user, req.uri().query(), sync).await;
    passage.lock().seat = seat;
    if let Err(resp) = admitted {
        return resp;
    }
    next.run(req).await
}

/// Authorization of the route's attributes (a 403 otherwise), the decision recorded in the
/// audit trail; public paths pass.
async fn authorization(
    State(state): State<Arc<AppState>>,
    Extension(passage): Extension<Passage>,
    req: Request<Body>,
    next: Next,
) -> Response {
    let (attrs, user) = {
        let p = passage.lock();
        (p.route.authorized(&p.info), p.user.clone())
    };
    if let Some(attrs) = attrs {
        let Some(user) = user else {
            return misassembled("authorization before impersonation");
        };
        let decided = passage
            .with_trail(async |trail| filters::authorized(&state, &user, &attrs, trail).await)
            .await;
        if let Err(forbidden) = decided {
            return forbidden;
        }
    }
    next.run(req).await
}

/// The request's body, kept for the audit event when the trail's level records it.
async fn audited_body(
    Extension(passage): Extension<Passage>,
    req: Request<Body>,
    next: Next,
) -> Response {
    let info = passage.lock().info.clone();
    let req = passage
        .with_trail(async |trail| filters::audited_body(req, &info, trail).await)
        .await;
    next.run(req).await
}

/// The handler the filters lead to: the main API's ([`super::serve`]) or the sync
/// endpoint's ([`sync_endpoint::serve`]).
async fn handler(
    State(state): State<Arc<AppState>>,
    Extension(passage): Extension<Passage>,
    req: Request<Body>,
) -> Response {
    let (route, info, user, waiter, arrived) = {
        let p = passage.lock();
        let waiter = p
            .seat
            .as_ref()
            .and_then(crate::flowcontrol::Seat::io_waiter);
        (
            p.route.clone(),
            p.info.clone(),
            p.user.clone(),
            waiter,
            p.arrived,
        )
    };
    let Some(user) = user else {
        return misassembled("the handler before impersonation");
    };
    #[cfg(test)]
    if info.path == PANIC_PATH {
        panic!("a test handler panicked");
    }
    match route {
        Route::Main(target) => {
            super::serve(state, req, target, &info, &user, waiter, arrived).await
        }
        Route::Sync(r) => sync_endpoint::serve(&state, req, r, &info, waiter).await,
    }
}

/// A path whose handler panics, in tests.
#[cfg(test)]
pub(super) const PANIC_PATH: &str = "/debug/panic";

/// The answer when a layer finds what an outer one should have put in the request missing:
/// the layers are out of order (a bug), a 500.
fn misassembled(what: &str) -> Response {
    tracing::error!("request filters out of order: {what}");
    ApiError::internal(what.to_string()).into_response()
}
