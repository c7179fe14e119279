//! events.k8s.io/v1 Event, served over the core Event store (`events` converts): the
//! fields it requires on create, the core stored form, and its field selector labels,
//! which read the core fields they stand for (`regarding.*` is `involvedObject.*`).

use bytes::Bytes;
use kplane_types::Cause;
use serde_json::Value;

use crate::catalog::ResourceType;
use crate::error::{ApiError, ApiResult};
use crate::strategy::{Conversion, FieldValues, TypeStrategy};
use crate::{corrupt, events, field_labels, stored_form};

#[derive(Debug)]
pub struct EventsV1Event;

#[async_trait::async_trait]
impl TypeStrategy for EventsV1Event {
    fn allow_create_on_update(&self) -> bool {
        true
    }

    fn canonicalize(&self, _rt: &ResourceType, obj: &mut Value) {
        stored_form::core_event(obj);
    }

    /// On create only: the object is in the stored (core) form; causes name the
    /// events.k8s.io fields.
    fn validate(&self, _rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        if old.is_some() {
            return Vec::new();
        }
        let mut causes = Vec::new();
        for (field, shown) in [
            ("eventTime", "eventTime"),
            ("reportingComponent", "reportingController"),
            ("reportingInstance", "reportingInstance"),
            ("action", "action"),
            ("reason", "reason"),
        ] {
            let missing = match obj.get(field) {
                None | Some(Value::Null) => true,
                Some(Value::String(s)) => s.is_empty(),
                _ => false,
            };
            if missing {
                causes.push(Cause::required(shown));
            }
        }
        causes
    }

    fn field_label(&self, _rt: &ResourceType, label: &str) -> Result<String, String> {
        field_labels::events_v1_convert(label)
    }

    fn field_values(&self) -> FieldValues {
        field_labels::event_value
    }
}

/// events.k8s.io/v1 ↔ the stored core/v1 form.
#[derive(Debug)]
pub struct EventsV1Conversion;

impl Conversion for EventsV1Conversion {
    fn to_storage(&self, _rt: &ResourceType, obj: Value) -> Value {
        events::to_core(&obj)
    }

    fn to_api(&self, _rt: &ResourceType, stored: Bytes) -> ApiResult<Bytes> {
        let v: Value = serde_json::from_slice(&stored).map_err(|e| corrupt(&e))?;
        let out = events::to_events_v1(&v);
        serde_json::to_vec(&out)
            .map(Bytes::from)
            .map_err(|e| ApiError::internal(e.to_string()))
    }

    fn to_api_value(&self, _rt: &ResourceType, obj: Value) -> Value {
        events::to_events_v1(&obj)
    }
}
