//! The field selector labels every type answers: `metadata.name` and `metadata.namespace`.

use kplane_types::fields;
use serde_json::Value;

/// apimachinery's default conversion, for kinds without a conversion function of their own.
pub fn default_convert(label: &str) -> Result<String, String> {
    if label == "metadata.name" || label == "metadata.namespace" {
        Ok(label.to_string())
    } else {
        Err(format!(
            "{label:?} is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        ))
    }
}

/// The value of the (converted) label `label` of a stored object: the field at that path.
/// `metadata.namespace` of a cluster-scoped object is "".
pub fn generic_value(obj: &Value, label: &str) -> Option<String> {
    match label {
        "metadata.namespace" => Some(fields::object_field(obj, label).unwrap_or_default()),
        _ => fields::object_field(obj, label),
    }
}
