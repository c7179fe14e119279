//! networking.k8s.io/v1 NetworkPolicy: the rules themselves are in the crate's
//! `network_policy` module (defaults, validation); this is how they plug into the write
//! path. A generation counting spec changes, no status subresource (1.32 has none), and
//! the generic field selector labels.

use kplane_types::Cause;
use serde_json::Value;

use crate::catalog::ResourceType;
use crate::strategy::TypeStrategy;
use crate::{network_policy, stored_form};

#[derive(Debug)]
pub struct NetworkPolicy;

#[async_trait::async_trait]
impl TypeStrategy for NetworkPolicy {
    fn has_generation(&self) -> bool {
        true
    }

    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        network_policy::default(obj);
    }

    fn canonicalize(&self, _rt: &ResourceType, obj: &mut Value) {
        stored_form::network_policy(obj);
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        network_policy::validate(obj, old)
    }
}
