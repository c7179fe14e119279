//! core/v1 Secret: `stringData` folded into `data`, `type` defaulted to `Opaque` and
//! immutable, the keys each well-known type requires, the 1 MiB limit, and the `type`
//! field selector label.

use base64::Engine;
use kplane_types::{validation, Cause};
use serde_json::{json, Value};

use super::config_map::{check_immutable, MAX_DATA_BYTES};
use crate::catalog::ResourceType;
use crate::strategy::TypeStrategy;
use crate::{field_labels, stored_form};

#[derive(Debug)]
pub struct Secret;

#[async_trait::async_trait]
impl TypeStrategy for Secret {
    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        default_secret(obj);
    }

    fn canonicalize(&self, _rt: &ResourceType, obj: &mut Value) {
        stored_form::secret(obj);
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        validate_secret(obj, old)
    }

    fn field_label(&self, rt: &ResourceType, label: &str) -> Result<String, String> {
        field_labels::meta_or_listed(rt, label)
    }
}

/// Folds `stringData` into base64 `data` and defaults `type` to `Opaque`.
fn default_secret(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else { return };
    if let Some(Value::Object(sd)) = o.remove("stringData") {
        let data = o.entry("data").or_insert_with(|| json!({}));
        if !data.is_object() {
            *data = json!({});
        }
        for (k, v) in sd {
            if let Value::String(s) = v {
                data[k.as_str()] =
                    json!(base64::engine::general_purpose::STANDARD.encode(s.as_bytes()));
            }
        }
    }
    match o.get("type") {
        None | Some(Value::Null) => {
            o.insert("type".into(), json!("Opaque"));
        }
        Some(Value::String(s)) if s.is_empty() => {
            o.insert("type".into(), json!("Opaque"));
        }
        _ => {}
    }
}

pub(super) fn validate_secret(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut size = 0;
    match obj.get("data") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                for msg in validation::config_map_key_errors(k) {
                    causes.push(Cause::invalid(format!("data[{k}]"), &json!(k), &msg));
                }
                match v
                    .as_str()
                    .map(|s| base64::engine::general_purpose::STANDARD.decode(s))
                {
                    Some(Ok(bytes)) => size += bytes.len(),
                    _ => causes.push(Cause::invalid(
                        format!("data[{k}]"),
                        &json!("<value omitted>"),
                        "illegal base64 data",
                    )),
                }
            }
        }
        Some(other) => causes.push(Cause::invalid("data", other, "must be an object")),
    }
    if size > MAX_DATA_BYTES {
        causes.push(Cause::too_long("data", MAX_DATA_BYTES));
    }
    let ty = obj.get("type").and_then(Value::as_str).unwrap_or("Opaque");
    let required: &[&str] = match ty {
        "kubernetes.io/dockerconfigjson" => &[".dockerconfigjson"],
        "kubernetes.io/dockercfg" => &[".dockercfg"],
        "kubernetes.io/tls" => &["tls.crt", "tls.key"],
        _ => &[],
    };
    for k in required {
        if obj
            .pointer(&format!(
                "/data/{}",
                k.replace('~', "~0").replace('/', "~1")
            ))
            .is_none()
        {
            causes.push(Cause::required(format!("data[{k}]")));
        }
    }
    if ty == "kubernetes.io/service-account-token"
        && obj
            .pointer("/metadata/annotations/kubernetes.io~1service-account.name")
            .is_none()
    {
        causes.push(Cause::required(
            "metadata.annotations[kubernetes.io/service-account.name]",
        ));
    }
    if let Some(old) = old {
        if old.get("type") != obj.get("type") {
            causes.push(Cause::invalid(
                "type",
                obj.get("type").unwrap_or(&Value::Null),
                "field is immutable",
            ));
        }
    }
    check_immutable(obj, old, &["data"], &mut causes);
    causes
}
