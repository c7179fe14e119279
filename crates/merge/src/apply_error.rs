//! Server-side apply's failure: [`ApplyError`] (conflicts, malformed or ill-typed
//! configurations, failed merges), its apiserver `Status` and upstream's message for a
//! typed-patch failure.

use std::fmt;

use kplane_types::{Status, StatusReason};

use crate::conflict::{conflicts_message, conflicts_status, Conflict};
use crate::error::{MergeError, MergeErrorKind};

/// A failed server-side apply.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApplyError {
    /// Fields owned by other managers would change (409 unless `force`).
    Conflicts(Vec<Conflict>),
    /// The request is malformed (400): managedFields in the configuration, wrong
    /// apiVersion, not an object.
    BadRequest(String),
    /// The configuration does not fit its type (missing map-list keys, duplicate items):
    /// upstream's conversion of the patch into a typed value fails, and it answers 500
    /// without a reason, `failed to create typed patch object (<namespace>/<name>; <gvk>):
    /// <this>`. Only the caller knows the object's name and kind, so it renders the
    /// message ([`ApplyError::typed_message`]); `to_status` leaves the identity out.
    Typed(String),
    /// The merge itself failed (500).
    Invalid(String),
}

impl ApplyError {
    /// The `Status` the apiserver answers with.
    pub fn to_status(&self) -> Status {
        match self {
            ApplyError::Conflicts(c) => conflicts_status(c),
            ApplyError::BadRequest(m) => Status::bad_request(m.clone()),
            ApplyError::Typed(m) => Status::new(
                StatusReason::Unknown,
                format!("failed to create typed patch object: {m}"),
            ),
            ApplyError::Invalid(m) => Status::new(StatusReason::InternalError, m.clone()),
        }
    }

    /// Upstream's message for a [`ApplyError::Typed`] failure of the object `name` in
    /// `namespace` (empty when cluster-scoped) of `api_version` and `kind`, as its
    /// structured-merge field manager words it (`objectGVKNN`).
    pub fn typed_message(
        detail: &str,
        namespace: &str,
        name: &str,
        api_version: &str,
        kind: &str,
    ) -> String {
        let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
        format!("failed to create typed patch object ({namespace}/{name}; {group}/{version}, Kind={kind}): {detail}")
    }
}

impl fmt::Display for ApplyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ApplyError::Conflicts(c) => f.write_str(&conflicts_message(c)),
            ApplyError::BadRequest(m) | ApplyError::Invalid(m) => f.write_str(m),
            ApplyError::Typed(m) => write!(f, "failed to create typed patch object: {m}"),
        }
    }
}

impl std::error::Error for ApplyError {}

impl From<MergeError> for ApplyError {
    fn from(e: MergeError) -> Self {
        match e.kind {
            MergeErrorKind::BadRequest => ApplyError::BadRequest(e.message),
            _ => ApplyError::Invalid(e.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typed_failure_names_the_object_as_upstream_does() {
        // structuredmerge.go: fmt.Errorf("failed to create typed patch object (%v): %v",
        // objectGVKNN(patchObj), err), with objectGVKNN "<ns>/<name>; <gvk>" and a GVK's
        // String() "<group>/<version>, Kind=<kind>" (an empty group for the core group)
        let detail = r#".spec.pipeline: duplicate entries for key [step="one"]"#;
        assert_eq!(
            ApplyError::typed_message(
                detail,
                "",
                "c",
                "apiextensions.crossplane.io/v1",
                "Composition"
            ),
            r#"failed to create typed patch object (/c; apiextensions.crossplane.io/v1, Kind=Composition): .spec.pipeline: duplicate entries for key [step="one"]"#
        );
        assert_eq!(
            ApplyError::typed_message(".spec: x", "default", "fv", "v1", "ConfigMap"),
            "failed to create typed patch object (default/fv; /v1, Kind=ConfigMap): .spec: x"
        );
        // an error without a status of its own: 500 and no reason
        let st = ApplyError::Typed(detail.into()).to_status();
        assert_eq!(st.reason, StatusReason::Unknown);
        assert_eq!(st.code, 500);
    }
}
