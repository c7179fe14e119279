//! The reading verbs: get, list and watch.

use axum::body::Body;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::Response;
use kplane_types::{StatusReason, UserInfo};

use super::super::negotiation;
use super::super::response;
use super::super::table::TableOptions;
use super::super::AppState;
use super::{require_verb, AnnotationFilter, Call};
use kplane_registry::error::{ApiError, ApiResult};

/// `GET` of one object.
pub(super) async fn get(c: Call<'_>, name: &str) -> ApiResult<Response> {
    // The list options are validated as for any GET.
    super::super::query::list_params(&c.q)?;
    let topts = TableOptions::from_query(&c.q)?;
    require_verb(&c.rt, "get")?;
    let repr = negotiation::negotiate(c.accept, false, false)?;
    let bytes = c.state.registry.get(&c.target, name).await?;
    response::object(StatusCode::OK, &c.rt, bytes, repr, &topts)
}

/// A watch: `watch=true` or the legacy `/watch/` prefix; of one object when `name` is
/// given.
pub(super) async fn watch(c: Call<'_>, name: Option<&str>) -> ApiResult<Response> {
    let mut lp = super::super::query::list_params_watching(&c.q)?;
    lp.annotation = annotation_filter(&c.req);
    let topts = TableOptions::from_query(&c.q)?;
    if let Some(n) = name {
        // Watch of a single object: a field selector on its name.
        lp.field_selector = Some(match lp.field_selector.take() {
            Some(f) => format!("{f},metadata.name={n}"),
            None => format!("metadata.name={n}"),
        });
    }
    let rt = &c.rt;
    require_verb(rt, "watch")?;
    let watch_list = lp.send_initial_events == Some(true) && lp.allow_bookmarks;
    // Custom resources, and kplane's own kinds (CRDs in kcp), have no protobuf.
    let no_protobuf =
        rt.custom.is_some() || !kplane_protobuf::supports(&rt.api_version(), &rt.kind);
    let (repr, encoding) = negotiation::negotiate_watch(c.accept, no_protobuf, watch_list)?;
    let blueprint = watch_list
        .then(|| super::super::watch_list::blueprint(rt, repr, encoding))
        .transpose()?;
    let permit = watch_permit(c.state, c.user)?;
    let setup = c.state.registry.watch(&c.target, &lp).await?;
    Ok(with_permit(
        response::watch(
            rt.clone(),
            setup,
            (repr, encoding),
            topts,
            blueprint,
            c.state.metrics.clone(),
        ),
        permit,
    ))
}

/// A list (a collection `GET`).
pub(super) async fn list(c: Call<'_>) -> ApiResult<Response> {
    let mut lp = super::super::query::list_params(&c.q)?;
    lp.annotation = annotation_filter(&c.req);
    clamp_page(c.state, &mut lp);
    let topts = TableOptions::from_query(&c.q)?;
    require_verb(&c.rt, "list")?;
    let repr = negotiation::negotiate(c.accept, true, false)?;
    let page = c.state.registry.list(&c.target, &lp).await?;
    response::list(&c.rt, page, repr, &topts).await
}

/// A unit of the user's watch count (`--max-watches-per-user`; `system:masters` are
/// exempt, as from kube-apiserver's priority and fairness): a 429 with Retry-After when
/// the user holds the maximum.
fn watch_permit(
    state: &AppState,
    user: &UserInfo,
) -> ApiResult<Option<crate::quotas::Permit<(String, String)>>> {
    if user.groups.iter().any(|g| g == "system:masters") {
        return Ok(None);
    }
    let key = (user.username.clone(), user.uid.clone());
    let max = state.limits.max_watches_per_user;
    match state.watches.acquire(&key, max) {
        Some(p) => Ok(Some(p)),
        None => {
            state
                .metrics
                .limit_refusals
                .count(crate::limits::Refusal::WatchesPerUser);
            let mut e = ApiError::new(
                StatusReason::TooManyRequests,
                format!(
                    "too many watches: user {:?} has {max} open, the limit",
                    user.username
                ),
            );
            e.0.retry_after = Some(1);
            Err(e)
        }
    }
}

/// The watch response, holding its permit until the stream ends.
fn with_permit(
    resp: Response,
    permit: Option<crate::quotas::Permit<(String, String)>>,
) -> Response {
    match permit {
        Some(p) => resp.map(|b| Body::new(crate::conn_timeouts::GuardedBody::new(b, p))),
        None => resp,
    }
}

/// A `limit` above the server's page maximum is served as the maximum: the client gets a
/// continue token for the rest, as it would from any page (docs/security.md, "Limits").
fn clamp_page(state: &AppState, lp: &mut super::super::query::ListParams) {
    let max = state.limits.max_list_page;
    if lp.limit.is_some_and(|n| n > max) {
        lp.limit = Some(max);
        state
            .metrics
            .limit_refusals
            .count(crate::limits::Refusal::ListPageClamped);
    }
}

/// The request's [`AnnotationFilter`], as list options want it.
fn annotation_filter(req: &Request<Body>) -> Option<(String, String)> {
    req.extensions()
        .get::<AnnotationFilter>()
        .map(|f| (f.0.clone(), f.1.clone()))
}
