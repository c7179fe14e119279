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
mod apply_error;
mod builtin;
mod conflict;
mod error;
mod fieldset;
mod managed;
mod model;
mod schema;
mod smp;
mod ssa;
mod types;

pub use apply::{apply, record_update, Request, LAST_APPLIED_ANNOTATION};
pub use apply_error::ApplyError;
pub use builtin::{builtin_table, builtin_type_info, BuiltinTable};
pub use conflict::{conflicts_message, conflicts_status, Conflict};
pub use error::{MergeError, MergeErrorKind};
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
