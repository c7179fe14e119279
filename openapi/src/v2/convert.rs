//! From the OpenAPI 3.0 group-version documents to Swagger 2.0, as kube-apiserver publishes
//! `/openapi/v2`:
//!
//! * schemas: `#/components/schemas/` references become `#/definitions/`, the
//!   `allOf: [{$ref}]` wrapper becomes a plain `$ref` (with its description), and what
//!   Swagger 2.0 lacks is dropped (`oneOf`, `anyOf`, `not`, `nullable`). Every `default` is
//!   dropped, as upstream prunes defaults from the v2 definitions (`handler.PruneDefaults`);
//! * custom resources are converted from their CRD schema as the apiextensions server does
//!   for v2 (`ToStructuralOpenAPIV2`): nullable nodes lose their type, items and properties
//!   (and leave their parent's `required`), `x-kubernetes-preserve-unknown-fields` nodes lose
//!   items and properties and, on objects, their type, and a root that preserves unknown
//!   fields publishes only `type: object`;
//! * operations: the request body becomes a `body` parameter plus `consumes`, response
//!   contents become `produces` plus a response `schema`, parameters carry their type
//!   inline, and every operation has `schemes: [https]`.

use serde_json::{json, Map, Value};

use crate::catalog::builtin_type_meta;
use crate::convert::REF_PREFIX;
use crate::kind_schema::{add_gvk, Gvk};
use crate::ServedResource;

/// The prefix of every reference inside a Swagger 2.0 document.
pub(crate) const DEFINITIONS_PREFIX: &str = "#/definitions/";

/// Keywords Swagger 2.0 schemas do not have (or that upstream prunes from `/openapi/v2`).
const DROPPED: &[&str] = &[
    "default",
    "nullable",
    "oneOf",
    "anyOf",
    "not",
    "writeOnly",
    "deprecated",
    "patternProperties",
    "discriminator",
];

/// Rewrites an OpenAPI 3.0 schema in place into Swagger 2.0 form (see module docs).
pub(crate) fn schema_to_v2(schema: &mut Value) {
    let Value::Object(obj) = schema else {
        return;
    };
    for key in DROPPED {
        obj.remove(*key);
    }
    if let Some(Value::String(reference)) = obj.get_mut("$ref") {
        if let Some(name) = reference.strip_prefix(REF_PREFIX) {
            *reference = format!("{DEFINITIONS_PREFIX}{name}");
        }
    }
    hoist_single_ref(obj);
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        props.values_mut().for_each(schema_to_v2);
    }
    if let Some(Value::Array(all)) = obj.get_mut("allOf") {
        all.iter_mut().for_each(schema_to_v2);
    }
    match obj.get_mut("items") {
        Some(Value::Array(items)) => items.iter_mut().for_each(schema_to_v2),
        Some(item @ Value::Object(_)) => schema_to_v2(item),
        _ => {}
    }
    if let Some(additional @ Value::Object(_)) = obj.get_mut("additionalProperties") {
        schema_to_v2(additional);
    }
}

/// `{"allOf": [{"$ref": R}], "description": D}` → `{"$ref": R', "description": D}`, as
/// upstream's v2 documents write a reference with a description.
fn hoist_single_ref(obj: &mut Map<String, Value>) {
    let single = match obj.get("allOf") {
        Some(Value::Array(all)) if all.len() == 1 => all[0]
            .as_object()
            .filter(|o| o.len() == 1)
            .and_then(|o| o.get("$ref"))
            .and_then(Value::as_str)
            .map(str::to_owned),
        _ => None,
    };
    let blocked = ["$ref", "type", "properties", "items"]
        .iter()
        .any(|k| obj.contains_key(*k));
    if let (Some(reference), false) = (single, blocked) {
        obj.remove("allOf");
        let reference = match reference.strip_prefix(REF_PREFIX) {
            Some(name) => format!("{DEFINITIONS_PREFIX}{name}"),
            None => reference,
        };
        obj.insert("$ref".into(), Value::String(reference));
    }
}

/// Reshapes the built-in types whose v2 form differs from their v3 one (upstream's
/// `OpenAPISchemaType` vs `OpenAPIV3OneOfTypes`): `Quantity` is a string and `IntOrString` a
/// string of format `int-or-string`.
pub(crate) fn fix_known_types(defs: &mut Map<String, Value>) {
    let reshape = |defs: &mut Map<String, Value>, name: &str, body: Value| {
        if let Some(Value::Object(obj)) = defs.get_mut(name) {
            let description = obj.remove("description");
            obj.clear();
            if let Value::Object(body) = body {
                obj.extend(body);
            }
            if let Some(description) = description {
                obj.insert("description".into(), description);
            }
        }
    };
    reshape(
        defs,
        "io.k8s.apimachinery.pkg.api.resource.Quantity",
        json!({"type": "string"}),
    );
    reshape(
        defs,
        "io.k8s.apimachinery.pkg.util.intstr.IntOrString",
        json!({"type": "string", "format": "int-or-string"}),
    );
}

fn is_true(obj: &Map<String, Value>, key: &str) -> bool {
    obj.get(key).and_then(Value::as_bool) == Some(true)
}

/// Upstream's `ToStructuralOpenAPIV2` on one node and then its children (parents first, so a
/// parent sees its children's `nullable` before they lose it).
fn structural_to_v2(schema: &mut Value) {
    let Value::Object(obj) = schema else {
        return;
    };
    for key in ["allOf", "oneOf", "anyOf", "not"] {
        obj.remove(key);
    }
    // A property that may be null is not required in v2.
    let nullable_props: Vec<String> = obj
        .get("properties")
        .and_then(Value::as_object)
        .map(|props| {
            props
                .iter()
                .filter(|(_, p)| p.as_object().is_some_and(|p| is_true(p, "nullable")))
                .map(|(name, _)| name.clone())
                .collect()
        })
        .unwrap_or_default();
    let nullable_values = obj
        .get("additionalProperties")
        .and_then(Value::as_object)
        .is_some_and(|a| is_true(a, "nullable"));
    if nullable_values {
        obj.remove("required");
    } else if !nullable_props.is_empty() {
        let now_empty = match obj.get_mut("required") {
            Some(Value::Array(required)) => {
                required.retain(|r| {
                    !r.as_str()
                        .is_some_and(|r| nullable_props.iter().any(|p| p == r))
                });
                required.is_empty()
            }
            _ => false,
        };
        if now_empty {
            obj.remove("required");
        }
    }
    if is_true(obj, "nullable") {
        obj.remove("type");
        obj.remove("items");
        obj.remove("properties");
    }
    obj.remove("nullable");
    let preserve = is_true(obj, "x-kubernetes-preserve-unknown-fields");
    if preserve {
        obj.remove("items");
        obj.remove("properties");
    }
    let ty = obj.get("type").and_then(Value::as_str);
    if (ty == Some("array") && !obj.contains_key("items")) || (preserve && ty == Some("object")) {
        obj.remove("type");
    }

    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        props.values_mut().for_each(structural_to_v2);
    }
    if let Some(item @ Value::Object(_)) = obj.get_mut("items") {
        structural_to_v2(item);
    }
    if let Some(additional @ Value::Object(_)) = obj.get_mut("additionalProperties") {
        structural_to_v2(additional);
    }
}

/// The v2 definition of a custom kind, from its CRD schema (see module docs).
pub(crate) fn custom_kind_definition(resource: &ServedResource, crd_schema: &Value) -> Value {
    let gvk = Gvk::new(&resource.group, &resource.version, &resource.kind);
    let preserves = crd_schema
        .as_object()
        .is_some_and(|o| is_true(o, "x-kubernetes-preserve-unknown-fields"));
    if preserves || !crd_schema.is_object() {
        // kubectl would refuse unknown fields next to any published property.
        let mut def = json!({"type": "object"});
        add_gvk(&mut def, &gvk);
        return def;
    }
    let mut def = crd_schema.clone();
    structural_to_v2(&mut def);
    let type_meta = builtin_type_meta();
    if let Value::Object(obj) = &mut def {
        let properties = obj
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(properties) = properties {
            properties.insert("apiVersion".into(), type_meta.api_version.clone());
            properties.insert("kind".into(), type_meta.kind.clone());
            properties.insert("metadata".into(), type_meta.object_meta.clone());
        }
        if let Some(Value::Array(required)) = obj.get_mut("required") {
            required.retain(|r| r != "metadata");
        }
        if obj
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(Vec::is_empty)
        {
            obj.remove("required");
        }
    }
    crate::custom::add_embedded_properties(&mut def, true);
    schema_to_v2(&mut def);
    add_gvk(&mut def, &gvk);
    def
}

/// The order in which upstream lists media types in `consumes` and `produces`.
const MEDIA_ORDER: &[&str] = &[
    "*/*",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
    "application/json;stream=watch",
    "application/vnd.kubernetes.protobuf;stream=watch",
];

fn media_sorted(mut types: Vec<String>) -> Vec<Value> {
    let rank = |t: &str| {
        MEDIA_ORDER
            .iter()
            .position(|m| *m == t)
            .unwrap_or(MEDIA_ORDER.len())
    };
    types.sort_by(|a, b| rank(a).cmp(&rank(b)).then_with(|| a.cmp(b)));
    types.dedup();
    types.into_iter().map(Value::String).collect()
}

/// A v3 parameter (`schema: {type}`) as a v2 one (`type` inline).
fn parameter_to_v2(param: &Value) -> Value {
    let Some(obj) = param.as_object() else {
        return param.clone();
    };
    let mut out = Map::new();
    for (key, value) in obj {
        match key.as_str() {
            "schema" => {
                if let Some(schema) = value.as_object() {
                    for inline in ["type", "format", "uniqueItems"] {
                        if let Some(v) = schema.get(inline) {
                            out.insert(inline.into(), v.clone());
                        }
                    }
                }
            }
            "name" | "in" | "description" | "required" | "allowEmptyValue" => {
                out.insert(key.clone(), value.clone());
            }
            k if k.starts_with("x-") => {
                out.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
    Value::Object(out)
}

/// The schema of a v3 `content` map (all its media types share one schema here).
fn content_schema(content: Option<&Value>) -> Option<Value> {
    let content = content?.as_object()?;
    let mut schema = content.values().find_map(|m| m.get("schema"))?.clone();
    schema_to_v2(&mut schema);
    Some(schema)
}

fn content_types(content: Option<&Value>) -> Vec<String> {
    content
        .and_then(Value::as_object)
        .map(|c| c.keys().cloned().collect())
        .unwrap_or_default()
}

/// One v3 operation as a v2 operation.
fn operation_to_v2(op: &Value) -> Value {
    let Some(obj) = op.as_object() else {
        return op.clone();
    };
    let mut out = Map::new();
    let mut params = Vec::new();
    if let Some(body) = obj.get("requestBody").and_then(Value::as_object) {
        let mut param = json!({"in": "body", "name": "body"});
        if let Some(schema) = content_schema(body.get("content")) {
            param["schema"] = schema;
        }
        if body.get("required").and_then(Value::as_bool) == Some(true) {
            param["required"] = Value::Bool(true);
        }
        params.push(param);
        out.insert(
            "consumes".into(),
            Value::Array(media_sorted(content_types(body.get("content")))),
        );
    }
    if let Some(Value::Array(list)) = obj.get("parameters") {
        params.extend(list.iter().map(parameter_to_v2));
    }
    if !params.is_empty() {
        out.insert("parameters".into(), Value::Array(params));
    }
    if let Some(responses) = obj.get("responses").and_then(Value::as_object) {
        let mut produces = Vec::new();
        let mut converted = Map::new();
        for (code, response) in responses {
            let mut r = Map::new();
            if let Some(d) = response.get("description") {
                r.insert("description".into(), d.clone());
            }
            if let Some(schema) = content_schema(response.get("content")) {
                r.insert("schema".into(), schema);
            }
            produces.extend(content_types(response.get("content")));
            converted.insert(code.clone(), Value::Object(r));
        }
        if !produces.is_empty() {
            out.insert("produces".into(), Value::Array(media_sorted(produces)));
        }
        out.insert("responses".into(), Value::Object(converted));
    }
    for (key, value) in obj {
        match key.as_str() {
            "description" | "operationId" | "tags" | "summary" | "deprecated" => {
                out.insert(key.clone(), value.clone());
            }
            k if k.starts_with("x-") => {
                out.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
    out.insert("schemes".into(), json!(["https"]));
    Value::Object(out)
}

/// One v3 path item as a v2 path item.
pub(crate) fn path_item_to_v2(item: &Value) -> Value {
    let Some(obj) = item.as_object() else {
        return item.clone();
    };
    let mut out = Map::new();
    for (key, value) in obj {
        match key.as_str() {
            "get" | "put" | "post" | "delete" | "options" | "head" | "patch" => {
                out.insert(key.clone(), operation_to_v2(value));
            }
            "parameters" => {
                let params = value
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(parameter_to_v2)
                    .collect();
                out.insert(key.clone(), Value::Array(params));
            }
            k if k.starts_with("x-") => {
                out.insert(key.clone(), value.clone());
            }
            _ => {}
        }
    }
    Value::Object(out)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn crd(schema: Value) -> Value {
        let r = ServedResource {
            group: "example.com".into(),
            version: "v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
            namespaced: true,
            verbs: vec![],
            subresources: vec![],
            schema: crate::SchemaSource::Custom {
                schema: schema.clone(),
            },
        };
        custom_kind_definition(&r, &schema)
    }

    #[test]
    fn refs_defaults_and_v3_only_keywords() {
        let mut s = json!({
            "type": "object",
            "properties": {
                "metadata": {"allOf": [{"$ref": "#/components/schemas/X"}], "default": {}, "description": "d"},
                "q": {"oneOf": [{"type": "string"}, {"type": "number"}], "nullable": true},
                "default": {"type": "string", "default": "a"},
                "list": {"type": "array", "items": {"$ref": "#/components/schemas/Y"}},
            },
        });
        schema_to_v2(&mut s);
        assert_eq!(
            s,
            json!({
                "type": "object",
                "properties": {
                    "metadata": {"$ref": "#/definitions/X", "description": "d"},
                    "q": {},
                    "default": {"type": "string"},
                    "list": {"type": "array", "items": {"$ref": "#/definitions/Y"}},
                },
            })
        );
    }

    #[test]
    fn crd_nullable_int_or_string_and_preserved_fields() {
        let def = crd(json!({
            "type": "object",
            "required": ["spec"],
            "properties": {
                "spec": {
                    "type": "object",
                    "required": ["a", "b"],
                    "properties": {
                        "a": {"type": "string", "nullable": true},
                        "b": {"type": "integer", "default": 3, "maximum": 5},
                        "port": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                        "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "properties": {"x": {"type": "string"}}},
                        "raw": {"type": "array", "x-kubernetes-preserve-unknown-fields": true, "items": {"type": "string"}},
                    },
                },
            },
        }));
        let spec = &def["properties"]["spec"];
        assert_eq!(spec["required"], json!(["b"]));
        assert_eq!(spec["properties"]["a"], json!({}));
        assert_eq!(
            spec["properties"]["b"],
            json!({"type": "integer", "maximum": 5})
        );
        assert_eq!(
            spec["properties"]["port"],
            json!({"x-kubernetes-int-or-string": true})
        );
        assert_eq!(
            spec["properties"]["free"],
            json!({"x-kubernetes-preserve-unknown-fields": true})
        );
        assert_eq!(
            spec["properties"]["raw"],
            json!({"x-kubernetes-preserve-unknown-fields": true})
        );
        assert_eq!(
            def["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert!(def["properties"]["metadata"].get("default").is_none());
        assert_eq!(
            def["x-kubernetes-group-version-kind"],
            json!([{"group": "example.com", "version": "v1", "kind": "Widget"}])
        );
    }

    #[test]
    fn crd_preserving_unknown_fields_at_the_root_is_a_bare_object() {
        let def = crd(json!({
            "type": "object",
            "x-kubernetes-preserve-unknown-fields": true,
            "properties": {"spec": {"type": "object"}},
        }));
        assert_eq!(
            def,
            json!({"type": "object", "x-kubernetes-group-version-kind": [
                {"group": "example.com", "version": "v1", "kind": "Widget"}]})
        );
    }

    #[test]
    fn crd_embedded_resources_get_type_meta_as_references() {
        let def = crd(json!({
            "type": "object",
            "properties": {
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": true,
                    "properties": {"spec": {"type": "object", "nullable": true}},
                },
            },
        }));
        let template = &def["properties"]["template"];
        assert_eq!(template["required"], json!(["kind", "apiVersion"]));
        assert_eq!(
            template["properties"]["metadata"]["$ref"],
            "#/definitions/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
        );
        assert_eq!(template["properties"]["kind"]["type"], "string");
        assert_eq!(template["properties"]["spec"], json!({}));
    }

    #[test]
    fn operation_body_and_media_types() {
        let op = json!({
            "operationId": "patchCoreV1Namespace",
            "parameters": [{"name": "fieldValidation", "in": "query", "description": "d", "schema": {"type": "string"}}],
            "requestBody": {"required": true, "content": {
                "application/apply-patch+yaml": {"schema": {"$ref": "#/components/schemas/P"}},
                "application/json-patch+json": {"schema": {"$ref": "#/components/schemas/P"}}}},
            "responses": {"200": {"description": "OK", "content": {
                "application/yaml": {"schema": {"$ref": "#/components/schemas/N"}},
                "application/json": {"schema": {"$ref": "#/components/schemas/N"}}}},
                "401": {"description": "Unauthorized"}},
            "x-kubernetes-action": "patch",
        });
        let v2 = operation_to_v2(&op);
        assert_eq!(
            v2,
            json!({
                "operationId": "patchCoreV1Namespace",
                "consumes": ["application/json-patch+json", "application/apply-patch+yaml"],
                "produces": ["application/json", "application/yaml"],
                "parameters": [
                    {"in": "body", "name": "body", "required": true, "schema": {"$ref": "#/definitions/P"}},
                    {"name": "fieldValidation", "in": "query", "description": "d", "type": "string"},
                ],
                "responses": {
                    "200": {"description": "OK", "schema": {"$ref": "#/definitions/N"}},
                    "401": {"description": "Unauthorized"},
                },
                "schemes": ["https"],
                "x-kubernetes-action": "patch",
            })
        );
    }
}
