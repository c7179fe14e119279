//! ServiceAccount issuer discovery, as kube-apiserver serves it for offline verification of
//! its tokens: `/.well-known/openid-configuration` (the OpenID provider configuration:
//! issuer, `jwks_uri`, supported response and subject types and signing algorithms) and
//! `/openid/v1/jwks` (the public verification keys, `application/jwk-set+json`). Each
//! logical cluster is an issuer, so both are served under `/clusters/<path>/` too, naming
//! that cluster's issuer; the unprefixed paths describe `root`'s. They are answered before
//! the cluster existence check: every valid cluster name gets the same keys, and the answer
//! tells nothing about which clusters exist.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use kplane_registry::error::ApiError;
use kplane_types::RequestInfo;

use super::error::StatusResponse;
use super::AppState;

/// The OpenID provider configuration path.
pub const OPENID_CONFIGURATION: &str = "/.well-known/openid-configuration";
/// The JWKS path.
pub const JWKS: &str = "/openid/v1/jwks";

const CACHE_CONTROL: &str = "public, max-age=3600";

/// Whether `path` is one of the discovery endpoints.
pub fn is_discovery_path(path: &str) -> bool {
    path == OPENID_CONFIGURATION || path == JWKS
}

/// Answers a discovery request (`info.path` is one of the two paths).
pub fn serve(state: &AppState, info: &RequestInfo) -> Response {
    let (Some(sa), Some(cluster)) = (state.service_accounts.as_ref(), info.cluster.one()) else {
        return ApiError::not_found_path().into_response();
    };
    if !matches!(info.verb, kplane_types::Verb::Get) {
        return ApiError::from(kplane_types::Status::method_not_allowed(
            "POST",
            info.path.trim_start_matches('/'),
        ))
        .into_response();
    }
    let tokens = &sa.tokens;
    let (content_type, body) = if info.path == JWKS {
        ("application/jwk-set+json", tokens.keys().jwks())
    } else {
        let issuer = tokens.issuer(cluster);
        (
            "application/json",
            json!({
                "issuer": issuer,
                "jwks_uri": format!("{issuer}{JWKS}"),
                "response_types_supported": ["id_token"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": tokens.keys().algorithms(),
            }),
        )
    };
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, content_type),
            (header::CACHE_CONTROL, CACHE_CONTROL),
        ],
        body.to_string(),
    )
        .into_response()
}
