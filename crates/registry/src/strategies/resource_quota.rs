//! core/v1 ResourceQuota: the rules are in the crate's `resource_quota` module
//! (validation, the stored form of quantities); this is how they plug into the write
//! path. A new quota starts without status (the controller writes it); the main
//! endpoint keeps the stored status and `/status` keeps the stored spec, as upstream's
//! two strategies; scopes are immutable.

use kplane_types::Cause;
use serde_json::Value;

use crate::catalog::ResourceType;
use crate::error::ApiResult;
use crate::resource_quota::validation;
use crate::strategy::{status_keeps_spec, TypeStrategy};

#[derive(Debug)]
pub struct ResourceQuota;

#[async_trait::async_trait]
impl TypeStrategy for ResourceQuota {
    fn canonicalize(&self, _rt: &ResourceType, obj: &mut Value) {
        validation::canonicalize(obj);
    }

    fn prepare_for_create(&self, _rt: &ResourceType, obj: &mut Value) {
        if let Some(o) = obj.as_object_mut() {
            o.insert("status".into(), Value::Object(Default::default()));
        }
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        validation::validate(obj, old)
    }

    fn prepare_for_subresource_update(
        &self,
        _rt: &ResourceType,
        sub: &str,
        new: Value,
        old: &Value,
    ) -> ApiResult<Value> {
        // The request's metadata and status; the stored spec.
        status_keeps_spec(sub, new, old)
    }

    fn validate_status_update(&self, _rt: &ResourceType, obj: &Value) -> Vec<Cause> {
        let mut out = Vec::new();
        validation::status(obj, &mut out);
        out
    }
}
