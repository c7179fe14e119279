//! coordination.k8s.io/v1 Lease: created on update, never updated unconditionally (leader
//! election relies on the resourceVersion), and a spec always written.

use serde_json::Value;

use crate::catalog::ResourceType;
use crate::stored_form;
use crate::strategy::TypeStrategy;

#[derive(Debug)]
pub struct Lease;

#[async_trait::async_trait]
impl TypeStrategy for Lease {
    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn allow_unconditional_update(&self) -> bool {
        false
    }

    fn canonicalize(&self, _rt: &ResourceType, obj: &mut Value) {
        stored_form::lease(obj);
    }
}
