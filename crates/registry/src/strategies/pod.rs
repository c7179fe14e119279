//! core/v1 Pod: the rules themselves are in the crate's `pod` module (defaults, QoS class,
//! validation); this is how they plug into the write path. A status subresource whose
//! writes keep the stored spec, owner references and deletion timestamp, no generation,
//! and upstream's field selector labels (`spec.nodeName`, `status.phase`, ...).
//!
//! Deletes are immediate: there is no kubelet to confirm a graceful one (the syncer deletes
//! the host pod a deleted reflection stood for).

use kplane_types::Cause;
use serde_json::Value;

use crate::catalog::ResourceType;
use crate::error::{ApiError, ApiResult};
use crate::strategy::{FieldValues, TypeStrategy};
use crate::{field_labels, pod, stored_form};

#[derive(Debug)]
pub struct Pod;

#[async_trait::async_trait]
impl TypeStrategy for Pod {
    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        pod::default(obj);
    }

    fn canonicalize(&self, _rt: &ResourceType, obj: &mut Value) {
        pod::round_trip(obj);
        stored_form::pod(obj);
    }

    fn prepare_for_create(&self, _rt: &ResourceType, obj: &mut Value) {
        pod::prepare_create(obj);
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        pod::validate(obj, old)
    }

    fn warnings(&self, _rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<String> {
        pod::warnings(obj, old)
    }

    fn prepare_for_subresource_update(
        &self,
        _rt: &ResourceType,
        sub: &str,
        new: Value,
        old: &Value,
    ) -> ApiResult<Value> {
        match sub {
            "status" => Ok(pod::prepare_status_update(new, old)),
            other => Err(ApiError::not_found_sub(other)),
        }
    }

    fn field_label(&self, rt: &ResourceType, label: &str) -> Result<String, String> {
        field_labels::pod_convert(rt, label)
    }

    fn field_values(&self) -> FieldValues {
        field_labels::pod_value
    }
}
