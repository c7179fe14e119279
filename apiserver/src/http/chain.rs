//! The request path every request takes, main API and sync endpoint alike: the filters in
//! kube-apiserver's order (`server/config.go` `DefaultBuildHandlerChain`), outermost first,
//! each a function that passes the request on or answers it, called in turn by [`chain`]:
//!
//! 0. panic recovery ([`recover_panics`]): a panic answers kube-apiserver's 500 rather than
//!    dropping the connection (the scope recovers those of the filters inside it and the
//!    handler, so that they are logged and audited);
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
//! then the handler ([`handler`]). A filter that refuses the request answers without
//! passing it on. What the filters learn of a request (its route and attributes, its user,
//! audit trail and seats) they share in a [`Passage`], which the scope ends. What differs
//! between the main API and the sync endpoint is their [`Route`]: how a path that does not
//! parse is answered, which path is authenticated, which attributes impersonation and
//! authorization see, whether there are public endpoints, which seats the request takes,
//! and which handler serves it.

use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Router;
use futures::FutureExt;
use kplane_registry::error::ApiError;
use kplane_types::{RequestInfo, UserInfo};

use super::error::StatusResponse;
use super::filters::{self, RequestScope};
use super::request_info::{self, RequestTarget};
use super::{archive, auth, health, httplog, sync_endpoint, AppState};

/// The application: every request goes through [`chain`].
pub(super) fn app(state: Arc<AppState>) -> Router {
    Router::new().fallback(chain).with_state(state)
}

/// The filters, in order, then the handler. One function calls them in turn rather than
/// one tower layer each: a stack of ten `from_fn` layers cloned and boxed the rest of the
/// stack, and moved the request's future, at every layer of every request (11% of a GET's
/// CPU, a third of an update's throughput).
async fn chain(State(state): State<Arc<AppState>>, req: Request<Body>) -> Response {
    recover_panics(state, req).await
}

/// The filters inside the request's scope, then the handler.
async fn scoped(state: &Arc<AppState>, passage: &Passage, req: Request<Body>) -> Response {
    match filtered(state, passage, req).await {
        Ok(req) => handler(state, passage, req).await,
        Err(resp) => resp,
    }
}

/// Filters 3 to 9: the request passed on, or the answer that ends it. The filters borrow
/// the request (moving it through each would copy it at every step).
async fn filtered(
    state: &Arc<AppState>,
    passage: &Passage,
    mut req: Request<Body>,
) -> Result<Request<Body>, Response> {
    request_deadline(state, passage, &req)?;
    authentication(state, passage, &mut req).await?;
    impersonation(state, passage, &mut req).await?;
    public_endpoints(state, passage, &req)?;
    fair_queuing(state, passage, &mut req).await?;
    authorization(state, passage).await?;
    Ok(audited_body(passage, req).await)
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
    /// What is left in the passage once the handler has taken the route (allocates
    /// nothing).
    fn handled() -> Route {
        Route::Main(RequestTarget {
            cluster: kplane_types::ClusterScope::Wildcard,
            explicit: false,
            rest: String::new(),
            api: None,
        })
    }

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
    fn authenticated_path<'a>(&self, req: &'a Request<Body>, info: &'a RequestInfo) -> &'a str {
        match self {
            Route::Main(_) => &info.path,
            Route::Sync(_) => req.uri().path(),
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
                state.registry.health().storage(),
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

/// What the filters learn of one request as it passes them: the scope ([`request_scope`])
/// makes it and takes back the audit trail, the acting user and the seats when the
/// response is made. Never locked across an await.
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

/// Panic recovery (upstream's `WithPanicRecovery`): a panic of the filters inside that the
/// scope does not recover itself (its own, request info's) answers the 500 too. A
/// response body that panics while it streams (a watch) ends its connection's stream; the
/// server goes on.
async fn recover_panics(state: Arc<AppState>, req: Request<Body>) -> Response {
    let (method, uri) = (req.method().clone(), req.uri().clone());
    match AssertUnwindSafe(request_info(state, req))
        .catch_unwind()
        .await
    {
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
async fn request_info(state: Arc<AppState>, mut req: Request<Body>) -> Response {
    let start = httplog::RequestStart::new(&req);
    let (route, info) = match Route::of(&req) {
        Ok(r) => r,
        Err(e) => {
            let resp = e.into_response();
            httplog::log(&start, None, None, &resp);
            return resp;
        }
    };
    let info = Arc::new(info);
    req.extensions_mut().insert(info.clone());
    request_scope(state, start, info, route, req).await
}

/// The request's scope ([`RequestScope`]): begun here (warnings, audit annotations, audit
/// trail), ended when the response is made (`Warning` headers, the audit trail finished,
/// the request log line written).
async fn request_scope(
    state: Arc<AppState>,
    start: httplog::RequestStart,
    info: Arc<RequestInfo>,
    route: Route,
    mut req: Request<Body>,
) -> Response {
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
    let (method, uri) = (req.method().clone(), req.uri().clone());
    let handled = AssertUnwindSafe(scoped(&state, &passage, req))
        .catch_unwind()
        .await;
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
// The error is the answer itself, moved once to the client: no box.
#[allow(clippy::result_large_err)]
fn request_deadline(
    state: &AppState,
    passage: &Passage,
    req: &Request<Body>,
) -> Result<(), Response> {
    let info = passage.lock().info.clone();
    if let Err(e) = filters::preflight(state, &info, req.uri().query()) {
        return Err(e.into_response());
    }
    Ok(())
}

/// Authentication (a 401 otherwise); the audit trail learns the user (its
/// `RequestReceived` event).
async fn authentication(
    state: &AppState,
    passage: &Passage,
    req: &mut Request<Body>,
) -> Result<(), Response> {
    let info = passage.lock().info.clone();
    let path = passage.lock().route.authenticated_path(req, &info);
    let authenticated =
        match filters::authenticated(state, req.headers(), req.extensions(), path).await {
            Ok(u) => u,
            Err(resp) => return Err(resp),
        };
    {
        let mut p = passage.lock();
        if let Some(info) = p.route.routed_home(req, &authenticated) {
            p.info = Arc::new(info);
            req.extensions_mut().insert(p.info.clone());
        }
        let info = p.info.clone();
        if let Some(t) = p.trail.as_mut() {
            t.authenticated(&authenticated, &info);
        }
        p.authenticated = Some(authenticated);
    }
    Ok(())
}

/// Impersonation: the acting user (an `Arc<UserInfo>` in the extensions), or the refusal.
async fn impersonation(
    state: &AppState,
    passage: &Passage,
    req: &mut Request<Body>,
) -> Result<(), Response> {
    let (attrs, authenticated) = {
        let mut p = passage.lock();
        (p.route.impersonated(&p.info), p.authenticated.take())
    };
    let Some(authenticated) = authenticated else {
        return Err(misassembled("impersonation before authentication"));
    };
    let acting = passage
        .with_trail(async |trail| {
            filters::acting_user(state, req, &attrs, authenticated, trail).await
        })
        .await;
    match acting {
        Ok(u) => passage.lock().user = Some(u),
        Err(resp) => return Err(resp),
    }
    Ok(())
}

/// The public endpoints (version, health; `system:public-info-viewer` upstream): answered
/// here, without seats or authorization.
// The error is the answer itself, moved once to the client: no box.
#[allow(clippy::result_large_err)]
fn public_endpoints(
    state: &AppState,
    passage: &Passage,
    req: &Request<Body>,
) -> Result<(), Response> {
    let public = {
        let p = passage.lock();
        p.route.public(state, req, &p.info)
    };
    match public {
        Some(resp) => Err(resp),
        None => Ok(()),
    }
}

/// Fair queuing: the request's seats, held until its response is sent, or a 429 (upstream's
/// API Priority and Fairness runs here, between impersonation and authorization).
// A `&mut`, which is `Send` where a shared borrow of the request (its body is not `Sync`)
// held across the await would not be.
async fn fair_queuing(
    state: &AppState,
    passage: &Passage,
    req: &mut Request<Body>,
) -> Result<(), Response> {
    let (seats, info, user) = {
        let p = passage.lock();
        (p.route.seats(&p.info), p.info.clone(), p.user.clone())
    };
    let Some(user) = user else {
        return Err(misassembled("fair queuing before impersonation"));
    };
    let sync = match seats {
        Seats::Request => false,
        Seats::Syncer => true,
        Seats::None => return Ok(()),
    };
    let mut seat = None;
    let admitted = filters::admitted(state, &info, &mut seat, &user, req.uri().query(), sync).await;
    passage.lock().seat = seat;
    admitted
}

/// Authorization of the route's attributes (a 403 otherwise), the decision recorded in the
/// audit trail; public paths pass.
async fn authorization(state: &AppState, passage: &Passage) -> Result<(), Response> {
    let (attrs, user) = {
        let p = passage.lock();
        (p.route.authorized(&p.info), p.user.clone())
    };
    if let Some(attrs) = attrs {
        let Some(user) = user else {
            return Err(misassembled("authorization before impersonation"));
        };
        let decided = passage
            .with_trail(async |trail| filters::authorized(state, &user, &attrs, trail).await)
            .await;
        decided?;
    }
    Ok(())
}

/// The request's body, kept for the audit event when the trail's level records it.
async fn audited_body(passage: &Passage, req: Request<Body>) -> Request<Body> {
    let info = passage.lock().info.clone();
    passage
        .with_trail(async |trail| filters::audited_body(req, &info, trail).await)
        .await
}

/// The handler the filters lead to: the main API's ([`super::serve`]) or the sync
/// endpoint's ([`sync_endpoint::serve`]).
async fn handler(state: &Arc<AppState>, passage: &Passage, req: Request<Body>) -> Response {
    let (route, info, user, waiter, arrived, past_share) = {
        let mut p = passage.lock();
        let seat = p.seat.as_ref();
        let waiter = seat.and_then(crate::flowcontrol::Seat::io_waiter);
        let past_share = seat.is_some_and(crate::flowcontrol::Seat::past_share);
        // Taken, not cloned: nothing reads the route after the handler.
        let route = std::mem::replace(&mut p.route, Route::handled());
        (
            route,
            p.info.clone(),
            p.user.clone(),
            waiter,
            p.arrived,
            past_share,
        )
    };
    let Some(user) = user else {
        return misassembled("the handler before impersonation");
    };
    #[cfg(test)]
    if info.path == PANIC_PATH {
        panic!("a test handler panicked");
    }
    // A request of a cluster past its share is handled on the lowered runtime, if any.
    let lowered = past_share.then(|| state.lowered.clone()).flatten();
    let watch = info.verb == kplane_types::Verb::Watch;
    let st = state.clone();
    // The handlers' futures are boxed: they are the largest part of a request's state,
    // and every filter's future that holds them would be moved with them.
    let work: std::pin::Pin<Box<dyn std::future::Future<Output = Response> + Send>> =
        match route {
            Route::Main(target) => Box::pin(async move {
                super::serve(st, req, target, &info, &user, waiter, arrived).await
            }),
            Route::Sync(r) => {
                Box::pin(async move { sync_endpoint::serve(&st, req, r, &info, waiter).await })
            }
        };
    let Some(runtime) = lowered else {
        return work.await;
    };
    state.flow.count_lowered();
    match crate::flowcontrol::lowered::run(&runtime, work, !watch).await {
        Ok(resp) => resp,
        Err(_) => ApiError::internal("the request's work was cancelled: the server is stopping")
            .into_response(),
    }
}

/// A path whose handler panics, in tests.
#[cfg(test)]
pub(super) const PANIC_PATH: &str = "/debug/panic";

/// The answer when a filter finds what an earlier one should have recorded missing: the
/// filters are out of order (a bug), a 500.
fn misassembled(what: &str) -> Response {
    tracing::error!("request filters out of order: {what}");
    ApiError::internal(what.to_string()).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;
    use kplane_registry::builtin_types::builtin;
    use kplane_registry::catalog::Catalog;
    use kplane_registry::Registry;
    use kplane_storage::{SledStorage, SledStorageOptions, Storage};

    /// The handler's future is boxed, so the futures of the filters around it (moved at
    /// every level, per request) stay small: without the box a request's outer future is
    /// over 30 KiB in a test build.
    #[tokio::test]
    async fn the_request_paths_future_is_small() {
        let dir = tempfile::tempdir().unwrap();
        let storage: Arc<dyn Storage> =
            SledStorage::open(dir.path().join("db"), SledStorageOptions::default()).unwrap();
        let catalog = Arc::new(Catalog::new(builtin()));
        let (_tx, shutdown) = tokio::sync::watch::channel(false);
        let (registry, _queue) = Registry::new(storage, catalog, String::new(), shutdown);
        let state = super::super::router_tests::state(
            registry,
            Arc::new(super::super::auth::AdminTokenAuthenticator::new("x".into())),
            Arc::new(super::super::authz::DenyAll),
            false,
            Default::default(),
            dir.path(),
        );
        let req = || Request::builder().uri("/api").body(Body::empty()).unwrap();
        let passage = Passage(Arc::new(Mutex::new(Passing {
            route: Route::Main(request_info::parse("/clusters/root/api").unwrap()),
            info: Arc::new(RequestInfo::non_resource(
                kplane_types::ClusterScope::One(kplane_types::ClusterName::root()),
                kplane_types::Verb::Get,
                "/api",
            )),
            arrived: std::time::Instant::now(),
            authenticated: None,
            user: None,
            trail: None,
            seat: None,
        })));
        let sizes = [
            (
                "chain",
                std::mem::size_of_val(&chain(State(state.clone()), req())),
            ),
            (
                "scoped",
                std::mem::size_of_val(&scoped(&state, &passage, req())),
            ),
            (
                "handler",
                std::mem::size_of_val(&handler(&state, &passage, req())),
            ),
        ];
        for (name, size) in sizes {
            assert!(size < 16 * 1024, "{name}'s future is {size} bytes");
        }
    }
}
