//! core/v1 ConfigMap: keys and the 1 MiB size limit of `data` and `binaryData`, base64
//! binary data, and `immutable`. The key and size helpers are shared with Secrets.

use base64::Engine;
use kplane_types::{validation, Cause};
use serde_json::{json, Value};

use crate::catalog::ResourceType;
use crate::stored_form;
use crate::strategy::TypeStrategy;

/// Total size limit of ConfigMap and Secret data (`MaxSecretSize`, 1 MiB).
pub(super) const MAX_DATA_BYTES: usize = 1024 * 1024;

#[derive(Debug)]
pub struct ConfigMap;

#[async_trait::async_trait]
impl TypeStrategy for ConfigMap {
    fn canonicalize(&self, _rt: &ResourceType, obj: &mut Value) {
        stored_form::config_map(obj);
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        validate_config_map(obj, old)
    }
}

fn data_keys_and_size(obj: &Value, field: &str, causes: &mut Vec<Cause>) -> usize {
    let mut size = 0;
    match obj.get(field) {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                for msg in validation::config_map_key_errors(k) {
                    causes.push(Cause::invalid(format!("{field}[{k}]"), &json!(k), &msg));
                }
                match v {
                    Value::String(s) => size += k.len() + s.len(),
                    other => causes.push(Cause::invalid(
                        format!("{field}[{k}]"),
                        other,
                        "must be a string",
                    )),
                }
            }
        }
        Some(other) => causes.push(Cause::invalid(field, other, "must be an object")),
    }
    size
}

/// With `immutable: true` stored, `fields` and `immutable` itself may not change.
pub(super) fn check_immutable(
    obj: &Value,
    old: Option<&Value>,
    fields: &[&str],
    causes: &mut Vec<Cause>,
) {
    let Some(old) = old else { return };
    if old.get("immutable") != Some(&Value::Bool(true)) {
        return;
    }
    for f in fields {
        if obj.get(*f) != old.get(*f) {
            causes.push(Cause::forbidden(
                *f,
                "field is immutable when `immutable` is set",
            ));
        }
    }
    if obj.get("immutable") != Some(&Value::Bool(true)) {
        causes.push(Cause::forbidden(
            "immutable",
            "field is immutable when `immutable` is set",
        ));
    }
}

pub(super) fn validate_config_map(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let size = data_keys_and_size(obj, "data", &mut causes)
        + data_keys_and_size(obj, "binaryData", &mut causes);
    if let (Some(Value::Object(d)), Some(Value::Object(b))) =
        (obj.get("data"), obj.get("binaryData"))
    {
        for k in d.keys().filter(|k| b.contains_key(*k)) {
            causes.push(Cause::invalid(
                format!("data[{k}]"),
                &json!(k),
                "duplicate of key present in binaryData",
            ));
        }
    }
    if let Some(Value::Object(b)) = obj.get("binaryData") {
        for (k, v) in b {
            if let Some(s) = v.as_str() {
                if base64::engine::general_purpose::STANDARD.decode(s).is_err() {
                    causes.push(Cause::invalid(
                        format!("binaryData[{k}]"),
                        &json!("<value omitted>"),
                        "must be base64",
                    ));
                }
            }
        }
    }
    if size > MAX_DATA_BYTES {
        causes.push(Cause::too_long("", MAX_DATA_BYTES));
    }
    check_immutable(obj, old, &["data", "binaryData"], &mut causes);
    causes
}

#[cfg(test)]
mod tests {
    use super::super::secret::validate_secret;
    use super::*;

    #[test]
    fn config_map_and_secret_data_are_limited_to_one_mebibyte() {
        for (size, ok) in [
            (MAX_DATA_BYTES - 1, true),
            (MAX_DATA_BYTES, true),
            (MAX_DATA_BYTES + 1, false),
            (10 * MAX_DATA_BYTES, false),
        ] {
            // Two keys, so that the limit is on the sum; a ConfigMap counts its keys too
            // (as upstream does), a Secret only its decoded values.
            let half = size / 2;
            let (a, b) = ("a".repeat(half), "b".repeat(size - half));
            let cm = json!({"metadata": {"name": "c"}, "data": {"a": &a[1..], "b": &b[1..]}});
            let too_long = |c: &Vec<Cause>| c.iter().any(|c| c.message.contains("Too long"));
            assert_eq!(
                !too_long(&validate_config_map(&cm, None)),
                ok,
                "ConfigMap of {size}"
            );
            let enc = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
            let secret = json!({"metadata": {"name": "s"}, "data": {"a": enc(&a), "b": enc(&b)}});
            assert_eq!(
                !too_long(&validate_secret(&secret, None)),
                ok,
                "Secret of {size}"
            );
        }
    }
}
