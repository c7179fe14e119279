//! Definitions of custom resources from their CRD structural schema, named and shaped like the
//! upstream apiextensions server publishes them: reversed group + version + kind
//! (`example.com`/`v1`/`Widget` → `com.example.v1.Widget`), the standard `apiVersion`, `kind`
//! and `metadata` (→ `ObjectMeta`) properties, and `x-kubernetes-group-version-kind`.

use serde_json::{Map, Value};

use crate::catalog::builtin_type_meta;
use crate::kind_schema::{add_gvk, Gvk};
use crate::{convert, Error, ServedResource};

/// The definition name of a custom kind: reversed group, version, kind.
pub(crate) fn definition_name(group: &str, version: &str, kind: &str) -> String {
    let mut parts: Vec<&str> = group.split('.').filter(|p| !p.is_empty()).rev().collect();
    parts.push(version);
    parts.push(kind);
    parts.join(".")
}

/// The kind definition of a custom resource: `(name, schema)`.
pub(crate) fn kind_definition(
    resource: &ServedResource,
    schema: &Value,
) -> Result<(String, Value), Error> {
    let invalid = |reason: &str| Error::InvalidCustomSchema {
        resource: format!(
            "{}/{}/{}",
            resource.group, resource.version, resource.plural
        ),
        reason: reason.to_owned(),
    };
    if !schema.is_object() {
        return Err(invalid("the schema is not a JSON object"));
    }
    let mut def = schema.clone();
    convert::to_openapi3(&mut def);
    let Value::Object(obj) = &mut def else {
        return Err(invalid("the schema is not a JSON object"));
    };
    match obj.get("type") {
        None => {
            obj.insert("type".into(), Value::String("object".into()));
        }
        Some(Value::String(t)) if t == "object" => {}
        Some(_) => return Err(invalid("the root type must be \"object\"")),
    }

    let type_meta = builtin_type_meta();
    let properties = obj
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if !properties.is_object() {
        return Err(invalid("\"properties\" is not an object"));
    }
    if let Value::Object(properties) = properties {
        properties.insert("apiVersion".into(), type_meta.api_version.clone());
        properties.insert("kind".into(), type_meta.kind.clone());
        properties.insert("metadata".into(), type_meta.object_meta.clone());
    }
    add_embedded_properties(&mut def, false);
    convert::fix_object_meta_usage(&mut def);
    add_gvk(
        &mut def,
        &Gvk::new(&resource.group, &resource.version, &resource.kind),
    );
    Ok((
        definition_name(&resource.group, &resource.version, &resource.kind),
        def,
    ))
}

/// Gives every `x-kubernetes-embedded-resource` node of a custom schema the standard
/// `apiVersion`, `kind` and `metadata` properties and requires `kind` and `apiVersion`, as the
/// apiextensions server's OpenAPI builder does (children first). With `skip_preserved` (the
/// v2 form) a node that preserves unknown fields is left alone: kubectl would refuse any field
/// next to published properties.
pub(crate) fn add_embedded_properties(schema: &mut Value, skip_preserved: bool) {
    let Value::Object(obj) = schema else {
        return;
    };
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for child in props.values_mut() {
            add_embedded_properties(child, skip_preserved);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(child @ Value::Object(_)) = obj.get_mut(key) {
            add_embedded_properties(child, skip_preserved);
        }
    }
    let flag = |obj: &Map<String, Value>, key: &str| obj.get(key) == Some(&Value::Bool(true));
    if skip_preserved && flag(obj, "x-kubernetes-preserve-unknown-fields") {
        return;
    }
    if !flag(obj, "x-kubernetes-embedded-resource") {
        return;
    }
    let type_meta = builtin_type_meta();
    let described = |schema: &Value, text: &str| {
        let mut schema = schema.clone();
        if let Value::Object(o) = &mut schema {
            o.insert("description".into(), Value::String(text.to_owned()));
        }
        schema
    };
    let properties = obj
        .entry("properties")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(properties) = properties {
        properties.insert(
            "apiVersion".into(),
            described(
                &type_meta.api_version,
                "The versioned schema of the embedded object (group/version).",
            ),
        );
        properties.insert(
            "kind".into(),
            described(
                &type_meta.kind,
                "The kind of the embedded object, in CamelCase.",
            ),
        );
        properties.insert("metadata".into(), type_meta.object_meta.clone());
    }
    let required = obj
        .entry("required")
        .or_insert_with(|| Value::Array(Vec::new()));
    if let Value::Array(required) = required {
        for name in ["kind", "apiVersion"] {
            if !required.iter().any(|r| r == name) {
                required.push(Value::String(name.to_owned()));
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn embedded_resources_get_type_meta_unless_preserved_in_v2() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": true,
                    "required": ["spec"],
                    "properties": {"spec": {"type": "object"}},
                },
                "raw": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": true,
                    "x-kubernetes-preserve-unknown-fields": true,
                },
            },
        });
        let mut v3 = schema.clone();
        add_embedded_properties(&mut v3, false);
        let template = &v3["properties"]["template"];
        assert_eq!(
            template["required"],
            serde_json::json!(["spec", "kind", "apiVersion"])
        );
        for p in ["apiVersion", "kind", "metadata", "spec"] {
            assert!(template["properties"].get(p).is_some(), "{p}");
        }
        assert!(v3["properties"]["raw"]["properties"]["kind"].is_object());
        let mut v2 = schema;
        add_embedded_properties(&mut v2, true);
        assert_eq!(v2["properties"]["template"], *template);
        assert!(v2["properties"]["raw"].get("properties").is_none());
    }

    #[test]
    fn reversed_group_names() {
        assert_eq!(
            definition_name("example.com", "v1", "Widget"),
            "com.example.v1.Widget"
        );
        assert_eq!(
            definition_name("stable.example.com", "v1beta1", "CronTab"),
            "com.example.stable.v1beta1.CronTab"
        );
    }
}
