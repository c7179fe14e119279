//! Label and field selection of objects for list, watch and deletecollection, with the
//! per-type rules on which field labels exist.

use kplane_types::fields::{self, FieldSelector};
use kplane_types::labels::LabelSelector;
use serde_json::Value;

use super::catalog::ResourceType;
use crate::error::{ApiError, ApiResult};

/// A compiled selection. Matches everything when both selectors are absent.
#[derive(Debug, Default)]
pub struct Selection {
    labels: Option<LabelSelector>,
    fields: Option<FieldSelector>,
}

impl Selection {
    pub fn new(
        rt: &ResourceType,
        label: Option<&str>,
        field: Option<&str>,
    ) -> ApiResult<Selection> {
        let labels = match label {
            Some(s) => {
                Some(LabelSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?)
            }
            None => None,
        };
        let fields = match field {
            Some(s) => {
                let f =
                    FieldSelector::parse(s).map_err(|e| ApiError::bad_request(e.to_string()))?;
                for r in f.requirements() {
                    if !rt.selectable(&r.field) {
                        return Err(ApiError::bad_request(format!(
                            "field label not supported: {}",
                            r.field
                        )));
                    }
                }
                Some(f)
            }
            None => None,
        };
        Ok(Selection { labels, fields })
    }

    pub fn is_everything(&self) -> bool {
        self.labels.is_none() && self.fields.is_none()
    }

    /// Whether a decoded object matches.
    pub fn matches(&self, obj: &Value) -> bool {
        if let Some(l) = &self.labels {
            let empty = serde_json::Map::new();
            let labels = obj
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .unwrap_or(&empty);
            if !l.matches(labels) {
                return false;
            }
        }
        if let Some(f) = &self.fields {
            if !f.matches(|path| field_value(obj, path)) {
                return false;
            }
        }
        true
    }

    /// Whether stored bytes match (decoding only when a selector is set).
    pub fn matches_bytes(&self, bytes: &[u8]) -> bool {
        if self.is_everything() {
            return true;
        }
        match serde_json::from_slice::<Value>(bytes) {
            Ok(v) => self.matches(&v),
            Err(_) => false,
        }
    }
}

/// The value of a selectable field. `metadata.namespace` of a cluster-scoped object is "".
fn field_value(obj: &Value, path: &str) -> Option<String> {
    match path {
        "metadata.namespace" => Some(fields::object_field(obj, path).unwrap_or_default()),
        // core/v1 Event `source` selects on source.component.
        "source" => fields::object_field(obj, "source.component"),
        // Job `status.successful` is the succeeded count (0 when unset).
        "status.successful" => {
            Some(fields::object_field(obj, "status.succeeded").unwrap_or_else(|| "0".into()))
        }
        _ => fields::object_field(obj, path),
    }
}
