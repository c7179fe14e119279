//! Definitions of custom resources from their CRD structural schema, named and shaped like the
//! upstream apiextensions server publishes them: reversed group + version + kind
//! (`example.com`/`v1`/`Widget` → `com.example.v1.Widget`), the standard `apiVersion`, `kind`
//! and `metadata` (→ `ObjectMeta`) properties, and `x-kubernetes-group-version-kind`.

use serde_json::{Map, Value};

use crate::catalog::{add_gvk, Gvk, TypeMeta};
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

    let type_meta = TypeMeta::get();
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

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

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
