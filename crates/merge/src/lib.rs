//! kplane-merge: the server-side apply and strategic-merge-patch engine of kplane.
//!
//! A pure engine over `serde_json::Value` objects (no IO): the server hands it the live
//! object, the request body and the kind's type information, and stores what comes back.
//!
//! - [`apply`]: server-side apply (`application/apply-patch+yaml`) with field ownership in
//!   `metadata.managedFields` (FieldsV1), conflicts ([`ApplyError::Conflicts`], rendered by
//!   [`conflicts_status`] as the apiserver's 409), `force`, removal of fields a manager
//!   stopped applying, create-on-apply, subresource entries and the `kubectl`
//!   client-side-apply upgrade.
//! - [`record_update`]: `Update` entries for every other write (POST, PUT, JSON/merge/
//!   strategic patches), honouring client-supplied managedFields as upstream does.
//! - [`strategic_merge`]: strategic merge patch with all its directives.
//! - [`TypeInfo`]: list/map semantics by type path. [`builtin_type_info`] serves the
//!   built-in kinds from the data table `data/builtin.yaml`; [`crd_type_info`] reads a
//!   CRD's `openAPIV3Schema`; [`DefaultTypeInfo`] covers anything else.
//!
//! Semantics follow sigs.k8s.io/structured-merge-diff (merge, compare, field sets, list
//! ordering), k8s.io/apimachinery's `managedfields` (entry identity and order, stripped
//! metadata fields, timestamps, update-entry cap, last-applied handling) and
//! `strategicpatch`; the implementation is kplane's own, and linear in object size.

mod apply;
mod builtin;
mod conflict;
mod fieldset;
mod managed;
mod model;
mod schema;
mod smp;
mod ssa;
mod types;

use std::fmt;

use kplane_types::{Status, StatusReason};

pub use apply::{apply, record_update, Request, LAST_APPLIED_ANNOTATION};
pub use builtin::{builtin_table, builtin_type_info, BuiltinTable};
pub use conflict::{conflicts_message, conflicts_status, Conflict};
pub use fieldset::{path_string, FieldSet};
pub use managed::{
    ManagedFields, ManagedFieldsEntry, Operation, ANCIENT_CHANGES, MAX_UPDATE_MANAGERS,
};
pub use model::ModelTypeInfo;
pub use schema::crd_type_info;
pub use smp::strategic_merge;
pub use types::{
    DefaultTypeInfo, ListType, MapType, PatchMeta, PatchStrategy, PathElement, TypeInfo,
};

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
