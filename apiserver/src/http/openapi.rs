//! Serving OpenAPI: `/openapi/v3` (index with content hashes) and `/openapi/v3/<gv>`
//! (immutable per hash; a stale hash redirects to the current one). `/openapi/v2` is only
//! ever requested as protobuf by Go clients, which would fail on JSON, so it is a 404.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::negotiation::MediaType;
use super::query::Query;
use super::surface::Surface;
use crate::error::ApiError;

fn accepts_json(accept: &[MediaType]) -> bool {
    accept.iter().any(|m| {
        matches!(
            m.essence.as_str(),
            "application/json" | "application/*" | "*/*"
        ) && m.param("as").is_none()
    })
}

/// `GET /openapi/v3[/<gv>]`
pub fn serve_v3(
    surface: &Surface,
    rest: &str,
    query: Option<&str>,
    accept: &[MediaType],
) -> Response {
    if !accepts_json(accept) {
        return super::negotiation::not_acceptable().into_response();
    }
    let gv = rest
        .trim_start_matches("/openapi/v3")
        .trim_start_matches('/');
    if gv.is_empty() {
        let mut r = (
            StatusCode::OK,
            bytes::Bytes::from_owner(surface.openapi.index_json()),
        )
            .into_response();
        r.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        return r;
    }
    let Some((body, hash)) = surface.openapi.group_version(gv) else {
        return ApiError::not_found_path().into_response();
    };
    let q = Query::parse(query);
    let mut r = match q.get("hash") {
        Some(h) if h != hash => {
            let mut r = StatusCode::MOVED_PERMANENTLY.into_response();
            if let Ok(v) = HeaderValue::from_str(&format!("/openapi/v3/{gv}?hash={hash}")) {
                r.headers_mut().insert(header::LOCATION, v);
            }
            return r;
        }
        Some(_) => {
            let mut r = (StatusCode::OK, bytes::Bytes::from_owner(body.clone())).into_response();
            let h = r.headers_mut();
            h.insert(
                header::CACHE_CONTROL,
                HeaderValue::from_static("public, immutable"),
            );
            let expires = (chrono::Utc::now() + chrono::Duration::days(365))
                .format("%a, %d %b %Y %H:%M:%S GMT")
                .to_string();
            if let Ok(v) = HeaderValue::from_str(&expires) {
                h.insert(header::EXPIRES, v);
            }
            r
        }
        None => (StatusCode::OK, bytes::Bytes::from_owner(body.clone())).into_response(),
    };
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    h.insert(header::VARY, HeaderValue::from_static("Accept"));
    if let Ok(v) = HeaderValue::from_str(&format!("\"{hash}\"")) {
        h.insert(header::ETAG, v);
    }
    r
}

/// `GET /openapi/v2`: not served (see module docs).
pub fn serve_v2() -> Response {
    ApiError::not_found_path().into_response()
}
