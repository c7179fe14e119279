//! The request filters every request passes, main API and sync endpoint alike, in
//! kube-apiserver's order (`server/config.go` `DefaultBuildHandlerChain`): the request's
//! scope (request log line, warning recorder, admission's audit annotations, audit trail:
//! [`RequestScope::begin`] and [`RequestScope::end`]), the request deadline, authentication
//! ([`authenticated`]), impersonation ([`acting_user`]), fair queuing ([`admitted`], where
//! upstream runs API Priority and Fairness), authorization ([`authorized`]) and the request
//! body kept for an audit event that records it ([`audited_body`]). [`super::chain`] calls these in that order for both the main API and the sync
//! endpoint.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::response::Response;
use kplane_registry::audit_annotations::AuditAnnotations;
use kplane_registry::warnings::Warnings;
use kplane_types::{RequestInfo, UserInfo};

use super::{authz, httplog, impersonation, AppState};

/// What lives as long as one request: its log line's start, its attributes, its user once
/// known, its audit trail, and the recorders admission writes into.
pub(super) struct RequestScope {
    start: httplog::RequestStart,
    /// The request's attributes (replaced when a ServiceAccount token routes a path
    /// without a cluster prefix to its own cluster).
    pub info: Arc<RequestInfo>,
    /// Set once the request is authenticated (the acting user).
    pub user: Option<Arc<UserInfo>>,
    pub trail: Option<crate::audit::Trail>,
    warnings: Warnings,
    /// Admission's audit annotations, recorded only when there is an audit log.
    annotations: Option<AuditAnnotations>,
    /// The request's seats ([`admitted`]), held until its response body ends (a watch's
    /// until it is established, that is, until its response is made).
    pub seat: Option<crate::flowcontrol::Seat>,
}

impl RequestScope {
    /// Begins a request's scope: puts its attributes, warning recorder and audit
    /// annotations in its extensions and begins its audit trail.
    pub(super) fn begin(
        state: &AppState,
        start: httplog::RequestStart,
        req: &mut Request<Body>,
        info: Arc<RequestInfo>,
    ) -> RequestScope {
        let warnings = Warnings::default();
        let annotations = state.audit.as_ref().map(|_| AuditAnnotations::default());
        let ext = req.extensions_mut();
        ext.insert(warnings.clone());
        if let Some(a) = &annotations {
            ext.insert(a.clone());
        }
        ext.insert(info.clone());
        let peer = req.extensions().get::<httplog::Peer>().map(|p| p.0.ip());
        let trail = state.audit.as_ref().map(|a| a.begin(req, peer));
        RequestScope {
            start,
            info,
            user: None,
            trail,
            warnings,
            annotations,
            seat: None,
        }
    }

    /// Ends the request: its warnings as `Warning` headers (refusals' too), the audit
    /// trail finished with admission's annotations, the request log line written.
    pub(super) async fn end(mut self, mut resp: Response) -> Response {
        add_warnings(&self.warnings, resp.headers_mut());
        let seat = self.seat.take();
        let resp = match self.trail {
            Some(mut t) => {
                if let Some(a) = &self.annotations {
                    t.admission_annotations(a.at_level(t.at_request_level()));
                }
                t.finish(&self.info, resp).await
            }
            None => resp,
        };
        httplog::log(
            &self.start,
            Some(&self.info),
            self.user.as_ref().map(|u| u.username.as_str()),
            &resp,
        );
        // Last, so that the audit trail still sees the body as the handler made it.
        match seat {
            Some(seat) if self.info.verb != kplane_types::Verb::Watch => {
                hold_until_sent(resp, seat)
            }
            _ => resp,
        }
    }
}

/// The response with `seat` held until its body has been sent (or dropped): a LIST's
/// body is encoded while it streams.
fn hold_until_sent(resp: Response, seat: crate::flowcontrol::Seat) -> Response {
    resp.map(|body| {
        Body::new(http_body_util::BodyExt::map_frame(body, move |frame| {
            let _held = &seat;
            frame
        }))
    })
}

/// Sends a request's warnings as `Warning: 299 - "<text>"` headers.
fn add_warnings(w: &Warnings, headers: &mut axum::http::HeaderMap) {
    for text in w.header_texts() {
        let escaped = text.replace('\\', "\\\\").replace('"', "\\\"");
        if let Ok(v) = axum::http::HeaderValue::from_str(&format!("299 - \"{escaped}\"")) {
            headers.append("warning", v);
        }
    }
}

/// The checks that run before authentication: the request deadline (a valid `timeout`)
/// and the protective query limits (a refusal counted). `Err` is the refusal.
pub(super) fn preflight(
    state: &AppState,
    info: &RequestInfo,
    query: Option<&str>,
) -> Result<(), kplane_registry::error::ApiError> {
    super::deadline::check_timeout(info, query)?;
    if let Err((refusal, e)) = super::query_limits::check(&state.limits, query) {
        state.metrics.limit_refusals.count(refusal);
        return Err(e);
    }
    Ok(())
}

/// Runs a request's handler: while it waits for the store's writer, the request's seats
/// (their `waiter`, when it holds any) serve others.
pub(super) async fn handle<F: std::future::Future>(
    waiter: Option<Arc<dyn kplane_storage::io_wait::IoWait>>,
    handler: F,
) -> F::Output {
    match waiter {
        Some(waiter) => kplane_storage::io_wait::scope(waiter, handler).await,
        None => handler.await,
    }
}

/// Authentication ([`super::authenticate`]) of the request with `headers` (and the
/// client's certificates, from its extensions): `Err` is the 401.
pub(super) async fn authenticated(
    state: &AppState,
    headers: &axum::http::HeaderMap,
    extensions: &axum::http::Extensions,
    path: &str,
) -> Result<Arc<UserInfo>, Response> {
    let certs = extensions.get::<super::auth::PeerCertificates>();
    super::authenticate(state, headers, certs, path)
        .await
        .map(Arc::new)
}

/// Impersonation decided for `attrs`: the acting user (put in the request's extensions,
/// with the authenticated one as its [`impersonation::Impersonator`] when it differs) and
/// the audit trail told; `Err` is the refusal.
pub(super) async fn acting_user(
    state: &AppState,
    req: &mut Request<Body>,
    attrs: &RequestInfo,
    authenticated: Arc<UserInfo>,
    trail: &mut Option<crate::audit::Trail>,
) -> Result<Arc<UserInfo>, Response> {
    let uri = req
        .uri()
        .path_and_query()
        .map_or_else(|| req.uri().path().to_string(), |p| p.as_str().to_string());
    let acting = match impersonation::impersonate(
        state.authorizer.as_ref(),
        req.headers(),
        attrs,
        &authenticated,
        &uri,
    )
    .await?
    {
        None => authenticated,
        Some(impersonated) => {
            tracing::debug!(user = %authenticated.username, as_user = %impersonated.username, "impersonating");
            if let Some(t) = trail.as_mut() {
                t.impersonating(&impersonated);
            }
            req.extensions_mut()
                .insert(impersonation::Impersonator(authenticated));
            Arc::new(impersonated)
        }
    };
    req.extensions_mut().insert(acting.clone());
    Ok(acting)
}

/// Fair queuing ([`crate::flowcontrol`]): the seats the request's work estimate names,
/// held in `held` (the request scope's) from here on; `Err` is the 429 when its cluster's queue is full or it
/// waited too long. `sync`: a request of the sync endpoint (its own seats first).
pub(super) async fn admitted(
    state: &AppState,
    info: &RequestInfo,
    held: &mut Option<crate::flowcontrol::Seat>,
    user: &UserInfo,
    query: Option<&str>,
    sync: bool,
) -> Result<(), Response> {
    // Long-running requests other than watches (a followed log, a proxy) take no seat,
    // as upstream's priority and fairness filter passes them.
    if super::request_info::is_long_running(info) && info.verb != kplane_types::Verb::Watch {
        return Ok(());
    }
    let seat = if sync {
        state.flow.admit_syncer(user).await
    } else {
        let seats = crate::flowcontrol::estimate::seats(info, query);
        let wait = queue_wait(info, query);
        state
            .flow
            .admit(info.cluster.as_str(), user, seats, wait)
            .await
    };
    match seat {
        Ok(seat) => {
            *held = Some(seat);
            Ok(())
        }
        Err(why) => Err(super::error::StatusResponse::into_response(
            kplane_registry::error::ApiError::from(why.status()),
        )),
    }
}

/// How long a request may wait for seats when it sets a `timeout`: a quarter of it, as
/// upstream's `getRequestWaitContext` allows.
fn queue_wait(info: &RequestInfo, query: Option<&str>) -> Option<std::time::Duration> {
    if super::request_info::is_long_running(info) {
        return None;
    }
    let timeout = crate::flowcontrol::estimate::param(query, "timeout")?;
    let nanos = super::deadline::parse_go_duration(&timeout).ok()?;
    (nanos > 0).then(|| std::time::Duration::from_nanos(nanos as u64 / 4))
}

/// Authorization of `attrs` for `user`, the decision recorded in the audit trail: `Err` is
/// the 403.
pub(super) async fn authorized(
    state: &AppState,
    user: &UserInfo,
    attrs: &RequestInfo,
    trail: &mut Option<crate::audit::Trail>,
) -> Result<(), Response> {
    let decided = authz::decide(state.authorizer.as_ref(), user, attrs).await;
    if let Some(t) = trail.as_mut() {
        match &decided {
            Ok(reason) => t.authorized(true, reason),
            Err((reason, _)) => t.authorized(false, reason),
        }
    }
    decided.map(|_| ()).map_err(|(_, forbidden)| forbidden)
}

/// The request, with its body kept for the audit event when the trail's level records it.
pub(super) async fn audited_body(
    req: Request<Body>,
    info: &RequestInfo,
    trail: &mut Option<crate::audit::Trail>,
) -> Request<Body> {
    match trail.as_mut().filter(|t| t.wants_request_body(info)) {
        Some(t) => crate::audit::keep_request_body(t, req).await,
        None => req,
    }
}
