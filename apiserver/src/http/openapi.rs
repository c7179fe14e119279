//! Serving OpenAPI: `/openapi/v3` (index with content hashes), `/openapi/v3/<gv>`
//! (immutable per hash; a stale hash redirects to the current one) and `/openapi/v2` (JSON or
//! gnostic protobuf, chosen from `Accept` as kube-openapi's v2 handler does, with an entity
//! tag and conditional requests).

use super::error::StatusResponse;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};

use super::negotiation::MediaType;
use super::query::Query;
use super::surface::Surface;
use kplane_registry::error::ApiError;

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

/// The encodings of `/openapi/v2`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum V2Format {
    Json,
    Protobuf,
}

/// The protobuf media type kube-openapi answers with (clients may ask for it or for the
/// older `@v1.0` spelling, which client-go sends).
const V2_PROTOBUF: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// One media range of `Accept`, parsed as kube-openapi's `goautoneg` does.
struct Clause<'a> {
    kind: &'a str,
    sub: &'a str,
    q: f32,
}

fn parse_clauses(header: &str) -> Vec<Clause<'_>> {
    let mut clauses = Vec::new();
    for part in header.split(',') {
        let mut pieces = part.trim().split(';');
        let range = pieces.next().unwrap_or_default();
        let mut sp = range.split('/');
        let kind = sp.next().unwrap_or_default().trim();
        let sub = match (sp.next(), sp.next()) {
            (None, _) if kind == "*" => "*",
            (Some(sub), None) => sub.trim(),
            _ => continue,
        };
        let mut q = 1.0;
        for param in pieces {
            if let Some((k, v)) = param.split_once('=') {
                if k.trim() == "q" {
                    q = v.trim().parse().unwrap_or(0.0);
                }
            }
        }
        clauses.push(Clause { kind, sub, q });
    }
    // Higher q first, then concrete types before wildcards.
    clauses.sort_by(|a, b| {
        b.q.partial_cmp(&a.q)
            .unwrap_or(std::cmp::Ordering::Equal)
            .then_with(|| (a.kind == "*").cmp(&(b.kind == "*")))
            .then_with(|| (a.sub == "*").cmp(&(b.sub == "*")))
    });
    clauses
}

/// The encoding `/openapi/v2` answers `Accept` with: the first clause (in preference order)
/// that matches `application/json` or one of the two protobuf spellings; `None` is a 406.
pub fn v2_format(headers: &HeaderMap) -> Option<V2Format> {
    let accept = headers
        .get(header::ACCEPT)
        .and_then(|v| v.to_str().ok())
        .filter(|v| !v.is_empty())
        .unwrap_or("*/*");
    const OFFERED: [(&str, V2Format); 3] = [
        ("json", V2Format::Json),
        (
            "com.github.proto-openapi.spec.v2@v1.0+protobuf",
            V2Format::Protobuf,
        ),
        (
            "com.github.proto-openapi.spec.v2.v1.0+protobuf",
            V2Format::Protobuf,
        ),
    ];
    parse_clauses(accept).iter().find_map(|c| {
        OFFERED.iter().find_map(|(sub, format)| {
            let kind_ok = c.kind == "application" || c.kind == "*";
            let sub_ok = c.sub == *sub || c.sub == "*";
            (kind_ok && sub_ok).then_some(*format)
        })
    })
}

/// kube-openapi's answer to an `Accept` it cannot serve: a bare 406.
pub fn v2_not_acceptable() -> Response {
    let mut r = StatusCode::NOT_ACCEPTABLE.into_response();
    r.headers_mut()
        .insert(header::VARY, HeaderValue::from_static("Accept"));
    r
}

/// `Last-Modified` / `If-Modified-Since` format (`http.TimeFormat`).
const HTTP_DATE: &str = "%a, %d %b %Y %H:%M:%S GMT";

/// Whether an `If-None-Match` list names `etag` (weak comparison, `*` matches anything).
fn none_match_hits(header: &str, quoted: &str) -> bool {
    header
        .split(',')
        .map(str::trim)
        .any(|tag| tag == "*" || tag.strip_prefix("W/").unwrap_or(tag) == quoted)
}

/// Whether the conditional headers make this a `304 Not Modified` (Go's `http.ServeContent`:
/// `If-None-Match` when present, otherwise `If-Modified-Since` at one-second precision).
fn not_modified(
    headers: &HeaderMap,
    quoted: &str,
    modified: chrono::DateTime<chrono::Utc>,
) -> bool {
    if let Some(v) = headers.get(header::IF_NONE_MATCH) {
        return v.to_str().is_ok_and(|h| none_match_hits(h, quoted));
    }
    headers
        .get(header::IF_MODIFIED_SINCE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| chrono::NaiveDateTime::parse_from_str(v, HTTP_DATE).ok())
        .is_some_and(|since| {
            modified.naive_utc().and_utc().timestamp() <= since.and_utc().timestamp()
        })
}

/// `GET /openapi/v2` in the chosen encoding, or 304 when the client's copy is current.
pub fn serve_v2(
    doc: &kplane_openapi::OpenApiV2,
    built: std::time::SystemTime,
    format: V2Format,
    headers: &HeaderMap,
) -> Response {
    let quoted = format!("\"{}\"", doc.etag());
    let modified: chrono::DateTime<chrono::Utc> = built.into();
    let mut r = if not_modified(headers, &quoted, modified) {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let (chunks, content_type) = match format {
            V2Format::Json => (doc.json_chunks(), "application/json"),
            V2Format::Protobuf => (doc.protobuf_chunks(), V2_PROTOBUF),
        };
        // The encoded chunks are sent as they are (the built-in part is shared by every
        // document): nothing is encoded or copied per request.
        let length: usize = chunks.iter().map(|c| c.len()).sum();
        let stream = futures::stream::iter(
            chunks
                .into_iter()
                .map(|c| Ok::<_, std::convert::Infallible>(bytes::Bytes::from_owner(c))),
        );
        let mut r = (StatusCode::OK, axum::body::Body::from_stream(stream)).into_response();
        let h = r.headers_mut();
        h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
        h.insert(header::CONTENT_LENGTH, HeaderValue::from(length));
        r
    };
    let h = r.headers_mut();
    h.insert(header::VARY, HeaderValue::from_static("Accept"));
    if let Ok(v) = HeaderValue::from_str(&quoted) {
        h.insert(header::ETAG, v);
    }
    if let Ok(v) = HeaderValue::from_str(&modified.format(HTTP_DATE).to_string()) {
        h.insert(header::LAST_MODIFIED, v);
    }
    r
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn accept(v: &str) -> Option<V2Format> {
        let mut h = HeaderMap::new();
        h.insert(header::ACCEPT, HeaderValue::from_str(v).unwrap());
        v2_format(&h)
    }

    #[test]
    fn accept_selection_follows_kube_openapi() {
        assert_eq!(v2_format(&HeaderMap::new()), Some(V2Format::Json));
        assert_eq!(accept("*/*"), Some(V2Format::Json));
        assert_eq!(accept("application/json"), Some(V2Format::Json));
        assert_eq!(
            accept("application/com.github.proto-openapi.spec.v2@v1.0+protobuf"),
            Some(V2Format::Protobuf)
        );
        assert_eq!(
            accept("application/com.github.proto-openapi.spec.v2.v1.0+protobuf"),
            Some(V2Format::Protobuf)
        );
        assert_eq!(
            accept("application/json;q=0.5, application/com.github.proto-openapi.spec.v2.v1.0+protobuf"),
            Some(V2Format::Protobuf)
        );
        assert_eq!(
            accept("*/*, application/com.github.proto-openapi.spec.v2@v1.0+protobuf"),
            Some(V2Format::Protobuf)
        );
        assert_eq!(accept("application/yaml"), None);
        assert_eq!(
            accept("text/html, application/vnd.kubernetes.protobuf"),
            None
        );
    }

    #[test]
    fn if_modified_since_only_without_if_none_match() {
        let built = chrono::DateTime::parse_from_rfc3339("2026-01-02T03:04:05.678Z")
            .unwrap()
            .with_timezone(&chrono::Utc);
        let q = "\"ABC\"";
        let with = |pairs: &[(header::HeaderName, &str)]| {
            let mut h = HeaderMap::new();
            for (k, v) in pairs {
                h.insert(k.clone(), HeaderValue::from_str(v).unwrap());
            }
            not_modified(&h, q, built)
        };
        assert!(with(&[(
            header::IF_MODIFIED_SINCE,
            "Fri, 02 Jan 2026 03:04:05 GMT"
        )]));
        assert!(with(&[(
            header::IF_MODIFIED_SINCE,
            "Fri, 02 Jan 2026 04:00:00 GMT"
        )]));
        assert!(!with(&[(
            header::IF_MODIFIED_SINCE,
            "Fri, 02 Jan 2026 03:04:04 GMT"
        )]));
        assert!(!with(&[(header::IF_MODIFIED_SINCE, "yesterday")]));
        // If-None-Match decides alone when present.
        assert!(!with(&[
            (header::IF_NONE_MATCH, "\"OTHER\""),
            (header::IF_MODIFIED_SINCE, "Fri, 02 Jan 2026 04:00:00 GMT"),
        ]));
        assert!(!with(&[]));
    }

    #[test]
    fn if_none_match_lists_and_weak_tags() {
        let q = "\"ABC\"";
        assert!(none_match_hits("\"ABC\"", q));
        assert!(none_match_hits("\"X\", W/\"ABC\"", q));
        assert!(none_match_hits("*", q));
        assert!(!none_match_hits("\"ABD\"", q));
        assert!(!none_match_hits("ABC", q));
    }
}
