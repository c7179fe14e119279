//! The stored form of a CustomResourceDefinition: kube-apiserver decodes every CRD into the
//! `apiextensions.k8s.io/v1` Go types and encodes it again, so a field tagged `omitempty`
//! disappears when it holds its zero value (`priority: 0`, `deprecated: false`,
//! `required: []`, `description: ""`, `null`), while a field without the tag, or a
//! pointer, keeps it (`served: false`, `x-kubernetes-preserve-unknown-fields: false`,
//! `default: {}`). This module drops exactly what that round trip drops, field by field
//! as the v1 types declare them, so that clients reading a CRD back see upstream's form
//! (server-side apply compares atomic lists such as `spec.versions` by value).
//!
//! Raw JSON values (`default`, `example`, `enum` items) are left as they are.

use super::json_map::{each_object, is_zero, object_at};
use serde_json::{Map, Value};

/// Fields of `CustomResourceDefinitionSpec` tagged `omitempty` (non-pointer).
const SPEC_OMITEMPTY: &[&str] = &["preserveUnknownFields"];
/// Pointer fields of `CustomResourceDefinitionSpec`.
const SPEC_POINTERS: &[&str] = &["conversion"];
const NAMES_OMITEMPTY: &[&str] = &["singular", "shortNames", "listKind", "categories"];
const CONVERSION_POINTERS: &[&str] = &["webhook"];
const WEBHOOK_POINTERS: &[&str] = &["clientConfig"];
const CLIENT_CONFIG_OMITEMPTY: &[&str] = &["caBundle"];
const CLIENT_CONFIG_POINTERS: &[&str] = &["url", "service"];
const SERVICE_POINTERS: &[&str] = &["path", "port"];
const VERSION_OMITEMPTY: &[&str] = &["deprecated", "additionalPrinterColumns", "selectableFields"];
const VERSION_POINTERS: &[&str] = &["deprecationWarning", "schema", "subresources"];
const VALIDATION_POINTERS: &[&str] = &["openAPIV3Schema"];
const SUBRESOURCES_POINTERS: &[&str] = &["status", "scale"];
const SCALE_POINTERS: &[&str] = &["labelSelectorPath"];
const COLUMN_OMITEMPTY: &[&str] = &["format", "description", "priority"];
const RULE_OMITEMPTY: &[&str] = &["message", "messageExpression", "fieldPath"];
const RULE_POINTERS: &[&str] = &["reason", "optionalOldSelf"];

/// Non-pointer `omitempty` fields of `JSONSchemaProps`.
const SCHEMA_OMITEMPTY: &[&str] = &[
    "id",
    "$schema",
    "$ref",
    "description",
    "type",
    "format",
    "title",
    "exclusiveMaximum",
    "exclusiveMinimum",
    "pattern",
    "uniqueItems",
    "required",
    "enum",
    "allOf",
    "oneOf",
    "anyOf",
    "properties",
    "patternProperties",
    "definitions",
    "dependencies",
    "nullable",
    "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string",
    "x-kubernetes-list-map-keys",
    "x-kubernetes-validations",
];
/// Pointer fields of `JSONSchemaProps`: dropped only when `null`.
const SCHEMA_POINTERS: &[&str] = &[
    "default",
    "maximum",
    "minimum",
    "maxLength",
    "minLength",
    "maxItems",
    "minItems",
    "multipleOf",
    "maxProperties",
    "minProperties",
    "items",
    "additionalItems",
    "additionalProperties",
    "not",
    "externalDocs",
    "example",
    "x-kubernetes-preserve-unknown-fields",
    "x-kubernetes-list-type",
    "x-kubernetes-map-type",
];
/// Schema-valued maps and lists inside a schema.
const SCHEMA_MAPS: &[&str] = &["properties", "patternProperties", "definitions"];
const SCHEMA_LISTS: &[&str] = &["allOf", "oneOf", "anyOf"];
/// Fields holding a schema, or a bool / array of schemas in its place.
const SCHEMA_OR_OTHER: &[&str] = &["items", "additionalItems", "additionalProperties", "not"];

fn drop_fields(m: &mut Map<String, Value>, omitempty: &[&str], pointers: &[&str]) {
    m.retain(|k, v| {
        if omitempty.contains(&k.as_str()) {
            !is_zero(v)
        } else if pointers.contains(&k.as_str()) {
            !v.is_null()
        } else {
            true
        }
    });
}

/// Brings a CRD's spec to the form the v1 types encode (see the module doc).
pub fn canonicalize(obj: &mut Value) {
    let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) else {
        return;
    };
    drop_fields(spec, SPEC_OMITEMPTY, SPEC_POINTERS);
    if let Some(names) = object_at(spec, "names") {
        drop_fields(names, NAMES_OMITEMPTY, &[]);
    }
    if let Some(conv) = object_at(spec, "conversion") {
        canonical_conversion(conv);
    }
    for v in each_object(spec, "versions") {
        canonical_version(v);
    }
}

fn canonical_conversion(conv: &mut Map<String, Value>) {
    drop_fields(conv, &[], CONVERSION_POINTERS);
    let Some(webhook) = object_at(conv, "webhook") else {
        return;
    };
    drop_fields(webhook, &[], WEBHOOK_POINTERS);
    let Some(cc) = object_at(webhook, "clientConfig") else {
        return;
    };
    drop_fields(cc, CLIENT_CONFIG_OMITEMPTY, CLIENT_CONFIG_POINTERS);
    if let Some(svc) = object_at(cc, "service") {
        drop_fields(svc, &[], SERVICE_POINTERS);
    }
}

fn canonical_version(v: &mut Map<String, Value>) {
    drop_fields(v, VERSION_OMITEMPTY, VERSION_POINTERS);
    if let Some(validation) = object_at(v, "schema") {
        drop_fields(validation, &[], VALIDATION_POINTERS);
        if let Some(schema) = object_at(validation, "openAPIV3Schema") {
            canonical_schema(schema, 0);
        }
    }
    if let Some(sub) = object_at(v, "subresources") {
        drop_fields(sub, &[], SUBRESOURCES_POINTERS);
        if let Some(scale) = object_at(sub, "scale") {
            drop_fields(scale, &[], SCALE_POINTERS);
        }
    }
    for col in each_object(v, "additionalPrinterColumns") {
        drop_fields(col, COLUMN_OMITEMPTY, &[]);
    }
}

/// Schemas nest; past this depth the rest is left alone (compilation refuses such schemas).
const MAX_SCHEMA_DEPTH: usize = 128;

fn canonical_schema(schema: &mut Map<String, Value>, depth: usize) {
    if depth > MAX_SCHEMA_DEPTH {
        return;
    }
    drop_fields(schema, SCHEMA_OMITEMPTY, SCHEMA_POINTERS);
    for key in SCHEMA_MAPS {
        if let Some(m) = object_at(schema, key) {
            for sub in m.values_mut().filter_map(Value::as_object_mut) {
                canonical_schema(sub, depth + 1);
            }
        }
    }
    for key in SCHEMA_LISTS {
        for sub in each_object(schema, key) {
            canonical_schema(sub, depth + 1);
        }
    }
    for key in SCHEMA_OR_OTHER {
        match schema.get_mut(*key) {
            Some(Value::Object(sub)) => canonical_schema(sub, depth + 1),
            Some(Value::Array(items)) => {
                for sub in items.iter_mut().filter_map(Value::as_object_mut) {
                    canonical_schema(sub, depth + 1);
                }
            }
            _ => {}
        }
    }
    // dependencies: each value is a schema or a list of property names.
    if let Some(deps) = object_at(schema, "dependencies") {
        for sub in deps.values_mut().filter_map(Value::as_object_mut) {
            canonical_schema(sub, depth + 1);
        }
    }
    for rule in each_object(schema, "x-kubernetes-validations") {
        drop_fields(rule, RULE_OMITEMPTY, RULE_POINTERS);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn zero_values_of_omitempty_fields_go_and_the_rest_stays() {
        let mut crd = json!({"spec": {
            "group": "example.com", "preserveUnknownFields": false,
            "names": {"plural": "widgets", "kind": "Widget", "shortNames": [], "categories": null},
            "versions": [{
                "name": "v1", "served": false, "storage": true, "deprecated": false,
                "deprecationWarning": null, "selectableFields": [],
                "subresources": {"status": {}, "scale": null},
                "additionalPrinterColumns": [
                    {"name": "A", "type": "string", "jsonPath": ".a", "priority": 0, "format": "", "description": ""},
                    {"name": "B", "type": "integer", "jsonPath": ".b", "priority": 1}
                ],
                "schema": {"openAPIV3Schema": {
                    "type": "object", "description": "", "required": [], "nullable": false,
                    "x-kubernetes-preserve-unknown-fields": false,
                    "properties": {
                        "spec": {"type": "object", "default": {}, "minimum": 0, "properties": {},
                            "x-kubernetes-validations": [{"rule": "true", "message": "", "reason": null}]},
                        "list": {"type": "array", "items": {"type": "string", "format": "", "enum": []}},
                        "any": {"x-kubernetes-int-or-string": false, "anyOf": [{"type": "integer", "pattern": ""}]}
                    }
                }}
            }]
        }});
        canonicalize(&mut crd);
        assert_eq!(
            crd,
            json!({"spec": {
                "group": "example.com",
                "names": {"plural": "widgets", "kind": "Widget"},
                "versions": [{
                    "name": "v1", "served": false, "storage": true,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "A", "type": "string", "jsonPath": ".a"},
                        {"name": "B", "type": "integer", "jsonPath": ".b", "priority": 1}
                    ],
                    "schema": {"openAPIV3Schema": {
                        "type": "object",
                        "x-kubernetes-preserve-unknown-fields": false,
                        "properties": {
                            "spec": {"type": "object", "default": {}, "minimum": 0,
                                "x-kubernetes-validations": [{"rule": "true"}]},
                            "list": {"type": "array", "items": {"type": "string"}},
                            "any": {"anyOf": [{"type": "integer"}]}
                        }
                    }}
                }]
            }})
        );
    }
}
