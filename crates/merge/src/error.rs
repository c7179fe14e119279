//! The merge engine's basic failure: [`MergeError`] (merges and update recording), the
//! status class it maps to ([`MergeErrorKind`]) and the apiserver `Status` it answers
//! with. Server-side apply's own failure, which adds conflicts, is in `apply_error`.

use std::fmt;

use kplane_types::{Status, StatusReason};

/// What kind of failure a [`MergeError`] is, i.e. which status the server answers with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MergeErrorKind {
    /// 400 (malformed patch or directive).
    BadRequest,
    /// 422 (patch content Kubernetes rejects as unprocessable).
    Invalid,
    /// 500 (broken type table and the like).
    Internal,
}

/// A failed merge or update recording.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MergeError {
    pub kind: MergeErrorKind,
    pub message: String,
}

impl MergeError {
    pub(crate) fn bad_request(m: impl Into<String>) -> Self {
        MergeError {
            kind: MergeErrorKind::BadRequest,
            message: m.into(),
        }
    }

    pub(crate) fn invalid(m: impl Into<String>) -> Self {
        MergeError {
            kind: MergeErrorKind::Invalid,
            message: m.into(),
        }
    }

    pub(crate) fn internal(m: impl Into<String>) -> Self {
        MergeError {
            kind: MergeErrorKind::Internal,
            message: m.into(),
        }
    }

    /// The `Status` the apiserver answers with.
    pub fn to_status(&self) -> Status {
        let reason = match self.kind {
            MergeErrorKind::BadRequest => StatusReason::BadRequest,
            MergeErrorKind::Invalid => StatusReason::Invalid,
            MergeErrorKind::Internal => StatusReason::InternalError,
        };
        Status::new(reason, self.message.clone())
    }
}

impl fmt::Display for MergeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for MergeError {}
