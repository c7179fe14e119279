//! The sync endpoint's log requests (docs/sync.md, "Pod logs"): the target's syncer takes
//! the log requests of its pods with `GET <endpoint>/kplane/v1/logrequests?timeoutSeconds=N`
//! (a long poll: it answers as soon as one waits, or empty after N seconds, at most
//! [`MAX_POLL_SECONDS`]), and posts each request's answer back with
//! `POST <endpoint>/kplane/v1/logrequests/<id>`: the first post carries `?code=<host's status
//! code>` (2xx, 4xx or 5xx), each carries the next bytes (at most [`MAX_PIECE_BYTES`]), the last `?end=true`.
//! A post for a request whose reader has gone is answered 410 (404 for one never known or
//! already ended), and the syncer stops reading the host.

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use kplane_registry::error::{ApiError, ApiResult};
use kplane_registry::sync::TargetRef;
use kplane_types::{Status, StatusReason};
use serde_json::json;

use crate::pod_logs::BrokerError;

use super::super::AppState;

/// The path below the endpoint.
pub(super) const PATH: &str = "/kplane/v1/logrequests";
/// The longest poll.
const MAX_POLL_SECONDS: u64 = 60;
/// The poll's wait without `timeoutSeconds`.
const DEFAULT_POLL_SECONDS: u64 = 30;
/// The largest piece one post may carry.
pub(super) const MAX_PIECE_BYTES: usize = 256 * 1024;

/// Whether an inner path is served here.
pub(super) fn is_log_path(path: &str) -> bool {
    path == PATH || path.strip_prefix(PATH).is_some_and(|r| r.starts_with('/'))
}

fn query_value<'a>(pairs: &'a [(String, String)], key: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| v.as_str())
}

/// Serves a log-request path of target `t`'s endpoint.
pub(super) async fn serve(
    state: &AppState,
    req: Request<Body>,
    t: &TargetRef,
    path: &str,
) -> ApiResult<Response> {
    let pairs: Vec<(String, String)> =
        form_urlencoded::parse(req.uri().query().unwrap_or("").as_bytes())
            .into_owned()
            .collect();
    let method = req.method().clone();
    let id = t.id();
    let rest = path.strip_prefix(PATH).unwrap_or_default();
    if rest.is_empty() {
        if method != Method::GET {
            return Err(ApiError::from(Status::method_not_allowed(
                method.as_str(),
                "logrequests",
            )));
        }
        let wait = match query_value(&pairs, "timeoutSeconds") {
            None | Some("") => DEFAULT_POLL_SECONDS,
            Some(v) => v
                .parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid timeoutSeconds {v:?}")))?,
        }
        .min(MAX_POLL_SECONDS);
        let items = state
            .pod_logs
            .take(&id, std::time::Duration::from_secs(wait))
            .await;
        let body = json!({"kind": "LogRequestList", "items": items});
        return Ok((
            StatusCode::OK,
            [(header::CONTENT_TYPE, "application/json")],
            body.to_string(),
        )
            .into_response());
    }
    let request = rest.trim_start_matches('/');
    if request.is_empty() || request.contains('/') {
        return Err(ApiError::not_found_path());
    }
    if method != Method::POST {
        return Err(ApiError::from(Status::method_not_allowed(
            method.as_str(),
            "logrequests",
        )));
    }
    let code = match query_value(&pairs, "code") {
        None | Some("") => None,
        Some(v) => Some(
            v.parse::<u16>()
                .ok()
                .filter(|c| (200..=299).contains(c) || (400..=599).contains(c))
                .ok_or_else(|| ApiError::bad_request(format!("invalid code {v:?}")))?,
        ),
    };
    let end = query_value(&pairs, "end").is_some_and(|v| v == "true");
    let bytes = axum::body::to_bytes(req.into_body(), MAX_PIECE_BYTES)
        .await
        .map_err(|_| {
            ApiError::new(
                StatusReason::RequestEntityTooLarge,
                format!("a piece of a log may be at most {MAX_PIECE_BYTES} bytes"),
            )
        })?;
    match state.pod_logs.deliver(&id, request, code, bytes, end).await {
        Ok(()) => Ok(StatusCode::NO_CONTENT.into_response()),
        Err(BrokerError::Gone) => Err(ApiError::new(
            StatusReason::Gone,
            format!("the reader of log request {request} has gone"),
        )),
        Err(_) => Err(ApiError::new(
            StatusReason::NotFound,
            format!("log request {request} not found"),
        )),
    }
}
