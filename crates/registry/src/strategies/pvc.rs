//! core/v1 PersistentVolumeClaim: the rules are the crate's `pvc` module (defaults, the
//! status a create starts with, validation); this is how they plug into the write path. A
//! status subresource whose writes keep the stored spec (upstream's status strategy), the
//! main endpoint keeping the stored status, and the generic field selector labels.

use kplane_types::Cause;
use serde_json::Value;

use crate::catalog::ResourceType;
use crate::error::ApiResult;
use crate::pvc;
use crate::strategy::{keep_stored_status, status_keeps_spec, TypeStrategy};

#[derive(Debug)]
pub struct PersistentVolumeClaim;

#[async_trait::async_trait]
impl TypeStrategy for PersistentVolumeClaim {
    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        pvc::default(obj);
    }

    fn canonicalize(&self, _rt: &ResourceType, obj: &mut Value) {
        pvc::stored_form(obj);
    }

    fn prepare_for_create(&self, _rt: &ResourceType, obj: &mut Value) {
        pvc::prepare_create(obj);
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        pvc::validate(obj, old)
    }

    fn prepare_for_update(&self, rt: &ResourceType, new: &mut Value, old: &Value) {
        keep_stored_status(rt, new, old);
        pvc::prepare_update(new, old);
    }

    /// `/status` takes the request's metadata and status and keeps the stored spec.
    fn prepare_for_subresource_update(
        &self,
        _rt: &ResourceType,
        sub: &str,
        new: Value,
        old: &Value,
    ) -> ApiResult<Value> {
        let mut obj = status_keeps_spec(sub, new, old)?;
        pvc::prepare_status_update(&mut obj, old);
        Ok(obj)
    }
}
