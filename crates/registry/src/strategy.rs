//! Per-type behaviour behind one trait, as kube-apiserver's `rest.RESTCreateStrategy`,
//! `RESTUpdateStrategy`, `RESTDeleteStrategy` and `ResetFieldsStrategy`: what a type
//! defaults, prepares and validates on create and update, what its main endpoint and its
//! `/status` and `/finalize` subresources may change, its stored form, its field selector
//! labels and what its delete does. The cluster work around a built-in type's writes is
//! not a strategy's: it is the type's write hooks (`hooks.rs`).
//!
//! Every [`ResourceType`] holds the strategy of its type (`ResourceType::strategy`); the
//! generic verbs (`write.rs`, `read.rs`, `watch.rs`, `apply.rs`) call these methods and never
//! ask which type they are writing. Each type's implementation has a module in `strategies`, calling
//! the type's own modules where it has them (`job`, `network_policy`, `pod`, `crd`,
//! `custom`, `stored_form`).
//! A new type (a Workspace, a SyncTarget) is a new implementation, not a new branch.
//!
//! Version conversion (events.k8s.io over the core Event store, custom resource versions) is
//! not a strategy method: it is [`Conversion`], an optional field of the `ResourceType`, so
//! that a read of a type stored as served costs one `Option` test per item and nothing more.

use std::fmt;

use bytes::Bytes;
use kplane_types::Cause;
use serde_json::Value;

use crate::catalog::ResourceType;
use crate::error::{ApiError, ApiResult};
use crate::name_rule::NameRule;

/// How a field selector reads the value of a (converted) label from a stored object. A
/// plain function, chosen once per request ([`TypeStrategy::field_values`]): it runs per
/// object a field selector tests.
pub type FieldValues = fn(&Value, &str) -> Option<String>;

/// What is particular to one type. Every method has the behaviour of a plain type as its
/// default (a ConfigMap-like object without status, subresources or hooks), so an
/// implementation states only what differs. `rt` is the served resource the request went
/// through (kind, scope, subresources, a custom resource's schema).
pub trait TypeStrategy: Send + Sync + fmt::Debug {
    // ---- What the type is -------------------------------------------------------------

    /// Whether objects are stored. Create-only reviews are computed by the server and
    /// never reach the write path.
    fn is_stored(&self) -> bool {
        true
    }

    /// A PUT of a missing object creates it (`AllowCreateOnUpdate`).
    fn allow_create_on_update(&self) -> bool {
        false
    }

    /// A PUT without `metadata.resourceVersion` overwrites (`AllowUnconditionalUpdate`).
    fn allow_unconditional_update(&self) -> bool {
        true
    }

    /// The type counts spec changes in `metadata.generation`.
    fn has_generation(&self) -> bool {
        false
    }

    /// Which names the type accepts.
    fn name_rule(&self) -> NameRule {
        NameRule::Dns1123Subdomain
    }

    /// Objects every logical cluster holds without storing them, shown where the cluster
    /// stores none of the same name ([`crate::builtins`]): the RBAC bootstrap roles.
    fn builtins(&self, _rt: &ResourceType) -> Option<&'static crate::builtins::Builtins> {
        None
    }

    // ---- Create (`PrepareForCreate`, `Validate`, `WarningsOnCreate`) ------------------

    /// Defaulting of a request object (create and every update), before validation.
    fn default(&self, _rt: &ResourceType, _obj: &mut Value) {}

    /// Brings an object (in its stored form) to the form its Go type encodes
    /// (`stored_form`): zero values of `omitempty` fields dropped, structs always written.
    fn canonicalize(&self, _rt: &ResourceType, _obj: &mut Value) {}

    /// Preparation of a new object, after the generic metadata is set.
    fn prepare_for_create(&self, _rt: &ResourceType, _obj: &mut Value) {}

    /// The type's validation on create (`old` is `None`) and update (the stored object).
    /// The generic ObjectMeta rules are checked by the caller, with [`Self::name_rule`].
    fn validate(&self, _rt: &ResourceType, _obj: &Value, _old: Option<&Value>) -> Vec<Cause> {
        Vec::new()
    }

    /// The type's validation of an update, which may also warn (a custom resource's
    /// ratcheted CEL failures); by default [`Self::validate`] with the stored object.
    fn validate_update(
        &self,
        rt: &ResourceType,
        obj: &Value,
        old: &Value,
        _warnings: &mut Vec<String>,
    ) -> Vec<Cause> {
        self.validate(rt, obj, Some(old))
    }

    /// Warnings a write of a valid object gets (`WarningsOnCreate`/`WarningsOnUpdate`).
    fn warnings(&self, _rt: &ResourceType, _obj: &Value, _old: Option<&Value>) -> Vec<String> {
        Vec::new()
    }

    // ---- Update (`PrepareForUpdate`, `ValidateUpdate`, reset fields) ------------------

    /// What a write through the main endpoint may not change, applied to the request
    /// object `new` over the stored `old`. By default a type with a status subresource
    /// keeps the stored status.
    fn prepare_for_update(&self, rt: &ResourceType, new: &mut Value, old: &Value) {
        keep_stored_status(rt, new, old);
    }

    /// A write through subresource `sub` (upstream's status and finalize strategies): the
    /// object to store, from the request's `new` and the stored `old`. By default `/status`
    /// takes only the request's status and keeps everything else (a custom resource's
    /// status strategy); any other subresource is not found. Generic metadata rules (uid,
    /// generation, timestamps) are applied afterwards.
    fn prepare_for_subresource_update(
        &self,
        _rt: &ResourceType,
        sub: &str,
        new: Value,
        old: &Value,
    ) -> ApiResult<Value> {
        match sub {
            "status" => Ok(with_field_from(old.clone(), &new, "status")),
            other => Err(ApiError::not_found_sub(other)),
        }
    }

    /// Validation of a `/status` write beyond [`Self::validate`].
    fn validate_status_update(&self, _rt: &ResourceType, _obj: &Value) -> Vec<Cause> {
        Vec::new()
    }

    /// Top-level fields a write through `sub` does not own (`GetResetFields`): kept out of
    /// the writer's managedFields. What the object keeps is the `prepare_*` methods' job.
    fn reset_fields(&self, rt: &ResourceType, sub: Option<&str>) -> &'static [&'static str] {
        default_reset_fields(rt, sub)
    }

    // ---- Delete (`RESTDeleteStrategy`, `BeforeDelete`) --------------------------------

    /// Orphan and Foreground propagation go through the garbage collector's finalizers.
    fn delete_propagates(&self) -> bool {
        true
    }

    /// Finalizers of the type's own (a Namespace's `spec.finalizers`) hold a deleted
    /// object like `metadata.finalizers` do.
    fn holds_deletion(&self, _obj: &Value) -> bool {
        false
    }

    /// Changes to an object being marked for deletion (a Namespace turns Terminating).
    fn prepare_for_delete(&self, _rt: &ResourceType, _marked: &mut Value) {}

    /// A deletecollection may remove finalizer-free objects in storage batches: the
    /// type's delete marks nothing, and its write hooks' `after_delete` (if any) is cheap and
    /// needs no order with other writes (it runs for each object after its batch).
    fn deletes_in_bulk(&self) -> bool {
        true
    }

    // ---- Field selectors (`GetAttrs`, field label conversion) ------------------------

    /// The stored-form label a field selector's `label` stands for, or the message of the
    /// 400 a request naming it gets.
    fn field_label(&self, _rt: &ResourceType, label: &str) -> Result<String, String> {
        crate::field_labels::generic::default_convert(label)
    }

    /// How the type's objects answer field selector labels.
    fn field_values(&self) -> FieldValues {
        crate::field_labels::generic::generic_value
    }

    // ---- Cluster state around a write ------------------------------------------------

    /// Writes of the type are serialised per registry (CRDs: name-conflict checks must
    /// see each other).
    fn serialize_writes(&self) -> bool {
        false
    }
}

/// Version conversion of a type served in a form other than the stored one.
pub trait Conversion: Send + Sync + fmt::Debug {
    /// A request object of `rt`'s API version in the stored form.
    fn to_storage(&self, rt: &ResourceType, obj: Value) -> Value;

    /// Stored bytes in `rt`'s API version (may return them as they are).
    fn to_api(&self, rt: &ResourceType, stored: Bytes) -> ApiResult<Bytes>;

    /// A decoded stored object in `rt`'s API version.
    fn to_api_value(&self, rt: &ResourceType, obj: Value) -> Value;

    /// Whether a write is admitted, defaulted and validated in the request's version and
    /// converted to the stored form only to be stored (custom resources: apiextensions
    /// serves each version with its own strategy and schema), rather than converted to the
    /// stored form as it is decoded (every other type: its strategy knows the stored form).
    fn writes_in_request_version(&self) -> bool {
        false
    }
}

/// The main endpoint of a type with a status subresource keeps the stored status.
pub(crate) fn keep_stored_status(rt: &ResourceType, new: &mut Value, old: &Value) {
    if !rt.status_subresource {
        return;
    }
    match old.get("status") {
        Some(s) => new["status"] = s.clone(),
        None => {
            if let Some(o) = new.as_object_mut() {
                o.remove("status");
            }
        }
    }
}

/// The subresource write of the types whose `/status` takes the request's metadata and
/// status and keeps the stored spec (Job, CRD, ResourceQuota status strategies); any
/// other subresource is not found.
pub(crate) fn status_keeps_spec(sub: &str, new: Value, old: &Value) -> ApiResult<Value> {
    match sub {
        "status" => Ok(with_field_from(new, old, "spec")),
        other => Err(ApiError::not_found_sub(other)),
    }
}

/// `base` with its top-level `field` replaced by `from`'s (removed when `from` has none).
pub(crate) fn with_field_from(mut base: Value, from: &Value, field: &str) -> Value {
    if let Some(o) = base.as_object_mut() {
        match from.get(field) {
            Some(v) => {
                o.insert(field.into(), v.clone());
            }
            None => {
                o.remove(field);
            }
        }
    }
    base
}

/// The reset fields of most types: `/status` does not own the spec, `/finalize` not the
/// status, and the main endpoint of a type with a status subresource not the status.
pub(crate) fn default_reset_fields(
    rt: &ResourceType,
    sub: Option<&str>,
) -> &'static [&'static str] {
    match sub {
        Some("status") => &["spec"],
        Some("finalize") => &["status"],
        Some(_) => &[],
        None if rt.status_subresource => &["status"],
        None => &[],
    }
}
