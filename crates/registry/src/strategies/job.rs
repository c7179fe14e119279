//! batch/v1 Job: the rules themselves are in the crate's `job` module (defaults, selector
//! generation, validation, warnings) and `job_status`; this is how they plug into the
//! write path. A status subresource whose writes keep the stored spec, a generation, and
//! the `status.successful` field selector label.

use kplane_types::Cause;
use serde_json::Value;

use crate::catalog::ResourceType;
use crate::error::ApiResult;
use crate::strategy::{status_keeps_spec, FieldValues, TypeStrategy};
use crate::{field_labels, job, stored_form};

#[derive(Debug)]
pub struct Job;

#[async_trait::async_trait]
impl TypeStrategy for Job {
    fn has_generation(&self) -> bool {
        true
    }

    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        job::default(obj);
    }

    fn canonicalize(&self, _rt: &ResourceType, obj: &mut Value) {
        stored_form::job(obj);
    }

    fn prepare_for_create(&self, _rt: &ResourceType, obj: &mut Value) {
        job::prepare_create(obj);
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        job::validate(obj, old)
    }

    fn warnings(&self, _rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<String> {
        job::warnings(obj, old)
    }

    /// `/status` takes the request's metadata and status and keeps the stored spec.
    fn prepare_for_subresource_update(
        &self,
        _rt: &ResourceType,
        sub: &str,
        new: Value,
        old: &Value,
    ) -> ApiResult<Value> {
        status_keeps_spec(sub, new, old)
    }

    fn field_label(&self, rt: &ResourceType, label: &str) -> Result<String, String> {
        field_labels::job_convert(rt, label)
    }

    fn field_values(&self) -> FieldValues {
        field_labels::job_value
    }
}
