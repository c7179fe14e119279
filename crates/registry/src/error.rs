//! The registry's error: every failure of a verb is one `metav1.Status`, which the HTTP
//! layer sends as it is (with the status code the Status carries).
//!
//! Lower layers (storage, decoding) have their own error types; they are mapped into
//! [`ApiError`] once, at the registry boundary, with the resource and name the lower
//! layer did not know. Storage errors have one mapping, `From<kplane_storage::Error>`
//! below; `registry::storage_error` only adds the resource and name to the errors that
//! name an object (not found, already exists, conflict).

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

/// Seconds a client is asked to wait after a storage timeout (kube-apiserver's storage
/// timeouts ask for 2).
const STORAGE_TIMEOUT_RETRY_SECONDS: u32 = 2;

/// The one mapping of storage errors to Statuses, as kube-apiserver maps storage errors
/// (`k8s.io/apiserver/pkg/storage/errors`, `responsewriters.ErrorToAPIStatus`): not found
/// 404, already exists and conflict 409, a compacted revision 410 Expired, a revision the
/// server has not reached 504, shutting down 503 ServiceUnavailable, a backend timeout
/// 504 Timeout (both retryable), anything else 500.
impl From<kplane_storage::Error> for ApiError {
    fn from(e: kplane_storage::Error) -> Self {
        use kplane_storage::Error as E;
        match e {
            E::NotFound => ApiError::new(StatusReason::NotFound, e.to_string()),
            E::AlreadyExists => ApiError::new(StatusReason::AlreadyExists, e.to_string()),
            E::Conflict { .. } => ApiError::new(StatusReason::Conflict, e.to_string()),
            E::Compacted {
                requested,
                compacted,
            } => ApiError::from(Status::expired(format!(
                "too old resource version: {requested} ({compacted})"
            ))),
            E::FutureRevision { .. } => too_large_rv(),
            E::ShuttingDown => ApiError::new(
                StatusReason::ServiceUnavailable,
                "the server is shutting down",
            ),
            E::Timeout(m) => {
                let mut s = Status::new(StatusReason::Timeout, format!("Timeout: {m}"));
                s.retry_after = Some(STORAGE_TIMEOUT_RETRY_SECONDS);
                ApiError::from(s)
            }
            E::Fenced { cluster } => fenced(&cluster),
            E::Encode(m) => ApiError::internal(m),
            E::Refused(m) => ApiError::from(Status::forbidden("", "", "", &m)),
            E::Corrupt(_) | E::Backend(_) => ApiError::internal(e.to_string()),
        }
    }
}

/// 504 for a resourceVersion the server has not reached (`NewTooLargeResourceVersionError`).
pub fn too_large_rv() -> ApiError {
    let mut s = Status::new(StatusReason::Timeout, "Too large resource version");
    s.details = Some(kplane_types::status::Details {
        causes: vec![kplane_types::Cause::new(
            kplane_types::CauseType::ResourceVersionTooLarge,
            "",
            "Too large resource version",
        )],
        ..Default::default()
    });
    s.retry_after = Some(1);
    ApiError::from(s)
}

/// 429 for a write into a fenced cluster.
pub(crate) fn fenced(cluster: &str) -> ApiError {
    let mut s = Status::new(
        StatusReason::TooManyRequests,
        format!("logical cluster \"{cluster}\" is being moved: writes are paused, please retry"),
    );
    s.retry_after = Some(1);
    ApiError::from(s)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use kplane_storage::Error as E;

    fn mapped(e: E) -> (u16, &'static str, Option<u32>, String) {
        let s = *ApiError::from(e).0;
        (s.code, s.reason.as_str(), s.retry_after, s.message)
    }

    #[test]
    fn storage_errors_map_as_kube_apiserver_maps_them() {
        assert_eq!(mapped(E::NotFound).0, 404);
        assert_eq!(mapped(E::AlreadyExists).1, "AlreadyExists");
        assert_eq!(mapped(E::Conflict { current: 3 }).0, 409);
        let (code, reason, _, message) = mapped(E::Compacted {
            requested: 2,
            compacted: 5,
        });
        assert_eq!((code, reason), (410, "Expired"));
        assert_eq!(message, "too old resource version: 2 (5)");
        let (code, reason, retry, _) = mapped(E::FutureRevision {
            requested: 9,
            current: 5,
        });
        assert_eq!((code, reason, retry), (504, "Timeout", Some(1)));
        let (code, reason, retry, _) = mapped(E::ShuttingDown);
        assert_eq!((code, reason, retry), (503, "ServiceUnavailable", None));
        let (code, reason, retry, message) = mapped(E::Timeout("lock wait".into()));
        assert_eq!((code, reason, retry), (504, "Timeout", Some(2)));
        assert_eq!(message, "Timeout: lock wait");
        for e in [
            E::Encode("x".into()),
            E::Corrupt("y".into()),
            E::Backend("z".into()),
        ] {
            assert_eq!(mapped(e).0, 500);
        }
    }
}
