//! How a registry error leaves the server: the `metav1.Status` as a JSON body with the
//! Status's code, `Retry-After` when it carries one, and, for 5xx, the cause for the request
//! log (which writes it once, with the request: see `httplog`) and the Status for the audit
//! log.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use kplane_registry::ApiError;

/// Turns an [`ApiError`] into its HTTP response (the registry crate does not know HTTP).
pub trait StatusResponse {
    fn into_response(self) -> Response;
}

impl StatusResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.0.to_json();
        let body = serde_json::to_vec(&status).unwrap_or_default();
        let code = StatusCode::from_u16(self.0.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        let mut resp = (code, body).into_response();
        resp.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("application/json"),
        );
        // The audit log's `responseStatus` (a few fields of it; only errors carry one).
        resp.extensions_mut()
            .insert(crate::audit::ErrorStatus(std::sync::Arc::new(status)));
        if self.0.code >= 500 {
            // No logging here: the request log writes it once, with the request (httplog).
            resp.extensions_mut()
                .insert(super::httplog::ErrorCause(self.0.message.clone()));
        }
        if let Some(r) = self.0.retry_after {
            if let Ok(v) = HeaderValue::from_str(&r.to_string()) {
                resp.headers_mut().insert(header::RETRY_AFTER, v);
            }
        }
        resp
    }
}

/// A handler's result as a response: the response, or the error's Status.
pub fn respond(r: Result<Response, ApiError>) -> Response {
    r.unwrap_or_else(StatusResponse::into_response)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kplane_storage::Error as E;

    #[test]
    fn a_storage_timeout_answers_504_with_retry_after() {
        let resp = ApiError::from(E::Timeout("statement".into())).into_response();
        assert_eq!(resp.status(), StatusCode::GATEWAY_TIMEOUT);
        assert_eq!(resp.headers()[header::RETRY_AFTER], "2");
        let resp = ApiError::from(E::ShuttingDown).into_response();
        assert_eq!(resp.status(), StatusCode::SERVICE_UNAVAILABLE);
    }
}
