//! The registry's error: every failure of a verb is one `metav1.Status`, which the HTTP
//! layer sends as it is (with the status code the Status carries).
//!
//! Lower layers (storage, decoding) have their own error types; they are mapped into
//! [`ApiError`] once, at the registry boundary, with the resource and name the lower layer
//! did not know.

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
