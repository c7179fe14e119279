//! core/v1 Event: created on update (event recorders PUT), its stored form, and its field
//! selector labels (`involvedObject.*`, `source` and the rest of `GetAttrs`).

use serde_json::Value;

use crate::catalog::ResourceType;
use crate::strategy::{FieldValues, TypeStrategy};
use crate::{field_labels, stored_form};

#[derive(Debug)]
pub struct CoreEvent;

#[async_trait::async_trait]
impl TypeStrategy for CoreEvent {
    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn canonicalize(&self, _rt: &ResourceType, obj: &mut Value) {
        stored_form::core_event(obj);
    }

    fn field_label(&self, rt: &ResourceType, label: &str) -> Result<String, String> {
        field_labels::meta_or_listed(rt, label)
    }

    fn field_values(&self) -> FieldValues {
        field_labels::event_value
    }
}
