//! `GET .../pods/<name>/log`: the options decoded and checked and the pod's host found by
//! the registry (`kplane_registry::pod_logs`), the request handed to the target's syncer
//! through the broker ([`crate::pod_logs`]), and its answer streamed as `text/plain` as it
//! comes (each piece is sent as soon as the syncer posts it, so `follow` streams).

use axum::body::Body;
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use kplane_registry::error::{ApiError, ApiResult};
use kplane_registry::pod_logs::PodLogOptions;
use kplane_registry::Target;
use kplane_types::{Status, StatusReason};

use crate::pod_logs::BrokerError;

use super::AppState;

/// An error answer's body is read up to this size.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// Serves a `pods/log` request for pod `name` of `t`.
pub(super) async fn serve(
    state: &AppState,
    t: &Target,
    name: &str,
    method: &Method,
    query: Option<&str>,
) -> ApiResult<Response> {
    if *method != Method::GET {
        return Err(ApiError::from(Status::method_not_allowed(
            method.as_str(),
            "pods/log",
        )));
    }
    let pairs: Vec<(String, String)> = form_urlencoded::parse(query.unwrap_or("").as_bytes())
        .into_owned()
        .collect();
    let opts = PodLogOptions::from_query(pairs.iter().map(|(k, v)| (k.as_str(), v.as_str())))?;
    let Some(route) = state.registry.pod_log_route(t, name, &opts).await? else {
        return Ok(StatusCode::NO_CONTENT.into_response());
    };
    let target = route.target.clone();
    let what = format!("pod {}/{}", route.namespace, route.pod);
    let opened = state.pod_logs.open(route).await.map_err(|e| match e {
        BrokerError::NoSyncer => ApiError::new(
            StatusReason::ServiceUnavailable,
            format!("no syncer of sync target {target} is connected to this server to read the log of {what}"),
        ),
        BrokerError::TooMany => ApiError::new(
            StatusReason::TooManyRequests,
            format!("too many log requests wait for the syncer of sync target {target}"),
        ),
        _ => ApiError::new(
            StatusReason::Timeout,
            format!("the syncer of sync target {target} did not answer the log request of {what} in time"),
        ),
    })?;
    let code = StatusCode::from_u16(opened.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    if code == StatusCode::NO_CONTENT {
        return Ok(StatusCode::NO_CONTENT.into_response());
    }
    if !code.is_success() {
        // The host's own Status, as a client of the host would have seen it.
        let body = opened.body.collect(ERROR_BODY_LIMIT).await;
        let is_status = serde_json::from_slice::<serde_json::Value>(&body)
            .is_ok_and(|v| v.get("kind").and_then(|k| k.as_str()) == Some("Status"));
        if is_status {
            return Ok((code, [(header::CONTENT_TYPE, "application/json")], body).into_response());
        }
        return Err(ApiError::internal(format!(
            "the host of sync target {target} answered the log request of {what} with {code}: {}",
            String::from_utf8_lossy(&body)
        )));
    }
    Ok((
        code,
        [(header::CONTENT_TYPE, "text/plain")],
        Body::from_stream(opened.body.into_stream()),
    )
        .into_response())
}
