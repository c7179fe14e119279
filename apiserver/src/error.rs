//! The HTTP-facing error: every failure leaves the server as one `metav1.Status`.
//!
//! Lower layers (storage, decoding, registry) have their own error types; they are mapped
//! into [`ApiError`] once, at the registry boundary, with the resource and name the lower
//! layer did not know.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use kplane_types::{Status, StatusReason};

/// An error answered to the client as a `metav1.Status`.
#[derive(Debug, Clone)]
pub struct ApiError(pub Box<Status>);

pub type ApiResult<T> = Result<T, ApiError>;

impl ApiError {
    pub fn new(reason: StatusReason, message: impl Into<String>) -> Self {
        ApiError::from(Status::new(reason, message))
    }

    pub fn bad_request(message: impl Into<String>) -> Self {
        ApiError::from(Status::bad_request(message))
    }

    pub fn internal(message: impl Into<String>) -> Self {
        ApiError::from(Status::internal(message))
    }

    pub fn not_found_path() -> Self {
        ApiError::from(Status::new(
            StatusReason::NotFound,
            "the server could not find the requested resource",
        ))
        .with_empty_details()
    }

    fn with_empty_details(mut self) -> Self {
        self.0.details = Some(Default::default());
        self
    }

    /// 404 for a subresource the resource does not have.
    pub fn not_found_sub(sub: &str) -> Self {
        ApiError::from(Status::new(
            StatusReason::NotFound,
            format!("the server could not find the requested resource (subresource {sub:?})"),
        ))
    }

    pub fn with_code(mut self, code: u16) -> Self {
        self.0.code = code;
        self
    }

    pub fn is_conflict(&self) -> bool {
        self.0.reason == StatusReason::Conflict
    }

    pub fn code(&self) -> u16 {
        self.0.code
    }
}

impl From<Status> for ApiError {
    fn from(s: Status) -> Self {
        ApiError(Box::new(s))
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&self.0.to_json()).unwrap_or_default();
        let code = StatusCode::from_u16(self.0.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = (code, body).into_response();
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        if self.0.code >= 500 {
            // No logging here: the request log writes it once, with the request (httplog).
            resp.extensions_mut()
                .insert(crate::http::httplog::ErrorCause(self.0.message.clone()));
        }
        if let Some(r) = self.0.retry_after {
            if let Ok(v) = HeaderValue::from_str(&r.to_string()) {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        resp
    }
}
