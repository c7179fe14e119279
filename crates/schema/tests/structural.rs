//! Compile-time checks: structural-schema rules and CRD schema validation, with
//! apiextensions' exact field paths and messages.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::json;

const P: &str = "spec.versions[0].schema.openAPIV3Schema";

fn has(errs: &[String], want: &str) {
    assert!(
        errs.iter().any(|e| e == want),
        "missing\n  {want}\nin\n  {errs:#?}"
    );
}

#[test]
fn type_is_required_everywhere() {
    let errs = compile_errors(
        json!({"properties": {"a": {"properties": {"b": {}}}, "l": {"type": "array", "items": {}}}}),
    );
    has(
        &errs,
        &format!("{P}.type: Required value: must not be empty at the root"),
    );
    has(
        &errs,
        &format!(
            "{P}.properties[a].type: Required value: must not be empty for specified object fields"
        ),
    );
    has(&errs, &format!("{P}.properties[a].properties[b].type: Required value: must not be empty for specified object fields"));
    has(&errs, &format!("{P}.properties[l].items.type: Required value: must not be empty for specified array items"));
}

#[test]
fn type_may_be_empty_under_int_or_string_and_preserve_unknown_fields() {
    schema(with_spec(json!({
        "port": {"x-kubernetes-int-or-string": true},
        "anything": {"x-kubernetes-preserve-unknown-fields": true},
        "ios": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "string"}]},
        "ios2": {"x-kubernetes-int-or-string": true, "allOf": [{"anyOf": [{"type": "integer"}, {"type": "string"}]}, {"pattern": "^[0-9]+%?$"}]},
    })));
}

#[test]
fn root_must_be_an_object() {
    let errs = compile_errors(json!({"type": "string"}));
    has(
        &errs,
        &format!("{P}.type: Invalid value: \"string\": must be object at the root"),
    );
    let errs = compile_errors(json!({"type": "object", "nullable": true}));
    has(
        &errs,
        &format!("{P}.nullable: Forbidden: nullable cannot be true at the root"),
    );
}

#[test]
fn metadata_may_only_restrict_name_and_generate_name() {
    schema(
        json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"name": {"type": "string", "maxLength": 10}}}}}),
    );
    let errs = compile_errors(
        json!({"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}}),
    );
    has(&errs, &format!("{P}.properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata is implicitly specified"));
    let errs =
        compile_errors(json!({"type": "object", "properties": {"metadata": {"type": "string"}}}));
    has(
        &errs,
        &format!("{P}.properties[metadata].type: Invalid value: \"string\": must be object"),
    );
    let errs =
        compile_errors(json!({"type": "object", "properties": {"kind": {"type": "integer"}}}));
    has(
        &errs,
        &format!("{P}.properties[kind].type: Invalid value: \"integer\": must be string"),
    );
    let errs = compile_errors(
        json!({"type": "object", "properties": {"metadata": {"type": "object", "default": {}}}}),
    );
    has(
        &errs,
        &format!(
            "{P}.properties[metadata].default: Forbidden: must not be set in top-level metadata"
        ),
    );
}

#[test]
fn additional_properties_rules() {
    let errs = compile_errors(with_spec(
        json!({"m": {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}}}),
    ));
    has(&errs, &format!("{P}.properties[spec].properties[m].additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive"));
    let errs =
        compile_errors(json!({"type": "object", "additionalProperties": {"type": "string"}}));
    has(
        &errs,
        &format!("{P}.additionalProperties: Forbidden: must not be used at the root"),
    );
}

#[test]
fn value_validations_may_not_shape_data() {
    let errs = compile_errors(with_spec(json!({"x": {
        "type": "string",
        "anyOf": [{"type": "string", "description": "d", "nullable": true, "default": "a", "x-kubernetes-preserve-unknown-fields": true}],
        "allOf": [{"properties": {"metadata": {}}}],
        "oneOf": [{"x-kubernetes-validations": [{"rule": "true"}]}],
        "not": {"additionalProperties": {}},
    }})));
    let x = format!("{P}.properties[spec].properties[x]");
    has(
        &errs,
        &format!("{x}.anyOf[0].type: Forbidden: must be empty to be structural"),
    );
    has(
        &errs,
        &format!("{x}.anyOf[0].description: Forbidden: must be empty to be structural"),
    );
    has(
        &errs,
        &format!("{x}.anyOf[0].nullable: Forbidden: must be false to be structural"),
    );
    has(
        &errs,
        &format!("{x}.anyOf[0].default: Forbidden: must be undefined to be structural"),
    );
    has(&errs, &format!("{x}.anyOf[0].x-kubernetes-preserve-unknown-fields: Forbidden: must be false to be structural"));
    has(&errs, &format!("{x}.allOf[0].properties[metadata]: Forbidden: must not be specified in a nested context"));
    has(
        &errs,
        &format!(
            "{x}.oneOf[0].x-kubernetes-validations: Forbidden: must be empty to be structural"
        ),
    );
    has(
        &errs,
        &format!("{x}.not.additionalProperties: Forbidden: must be undefined to be structural"),
    );
}

#[test]
fn value_validations_must_be_declared_in_the_spine() {
    let errs = compile_errors(
        json!({"type": "object", "properties": {"a": {"type": "string"}}, "anyOf": [{"properties": {"b": {"minLength": 1}}}, {"required": ["a"]}]}),
    );
    has(&errs, &format!("{P}.properties[b]: Required value: because it is defined in {P}.anyOf[0].properties[b]"));
}

#[test]
fn items_must_be_a_single_schema() {
    let errs = compile_errors(with_spec(
        json!({"l": {"type": "array", "items": [{"type": "string"}]}}),
    ));
    has(&errs, &format!("{P}.properties[spec].properties[l].items: Forbidden: items must be a schema object and not an array"));
}

#[test]
fn unsupported_keywords_are_forbidden() {
    let errs = compile_errors(with_spec(json!({
        "a": {"type": "string", "$ref": "#/definitions/x"},
        "b": {"type": "array", "items": {"type": "string"}, "uniqueItems": true},
        "c": {"type": "object", "patternProperties": {"^x": {"type": "string"}}},
        "d": {"type": "object", "dependencies": {"x": ["y"]}},
        "e": {"type": "array", "items": {"type": "string"}, "additionalItems": false},
        "f": {"type": "object", "definitions": {"x": {"type": "string"}}},
        "g": {"type": "string", "id": "x"},
        "h": {"type": "null"},
        "i": {"type": "strange"},
    })));
    let s = format!("{P}.properties[spec].properties");
    has(
        &errs,
        &format!("{s}[a].$ref: Forbidden: $ref is not supported"),
    );
    has(&errs, &format!("{s}[b].uniqueItems: Forbidden: uniqueItems cannot be set to true since the runtime complexity becomes quadratic"));
    has(
        &errs,
        &format!("{s}[c].patternProperties: Forbidden: patternProperties is not supported"),
    );
    has(
        &errs,
        &format!("{s}[d].dependencies: Forbidden: dependencies is not supported"),
    );
    has(
        &errs,
        &format!("{s}[e].additionalItems: Forbidden: additionalItems is not supported"),
    );
    has(
        &errs,
        &format!("{s}[f].definitions: Forbidden: definitions is not supported"),
    );
    has(&errs, &format!("{s}[g].id: Forbidden: id is not supported"));
    has(
        &errs,
        &format!(
            "{s}[h].type: Forbidden: type cannot be set to null, use nullable as an alternative"
        ),
    );
    has(&errs, &format!("{s}[i].type: Unsupported value: \"strange\": supported values: \"array\", \"boolean\", \"integer\", \"number\", \"object\", \"string\""));
}

#[test]
fn int_or_string_rules() {
    let errs = compile_errors(with_spec(
        json!({"p": {"x-kubernetes-int-or-string": true, "x-kubernetes-preserve-unknown-fields": true}}),
    ));
    has(&errs, &format!("{P}.properties[spec].properties[p].x-kubernetes-preserve-unknown-fields: Invalid value: true: must be false if x-kubernetes-int-or-string is true"));
    let errs = compile_errors(with_spec(
        json!({"p": {"x-kubernetes-int-or-string": true, "anyOf": [{"type": "integer"}, {"type": "boolean"}]}}),
    ));
    has(&errs, &format!("{P}.properties[spec].properties[p].anyOf[1].type: Forbidden: must be empty to be structural"));
}

#[test]
fn embedded_resource_rules() {
    let errs = compile_errors(with_spec(
        json!({"e": {"x-kubernetes-embedded-resource": true}, "f": {"type": "object", "x-kubernetes-embedded-resource": true}}),
    ));
    has(&errs, &format!("{P}.properties[spec].properties[e].type: Required value: must be object if x-kubernetes-embedded-resource is true"));
    has(&errs, &format!("{P}.properties[spec].properties[f].properties: Required value: must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields"));
    schema(with_spec(
        json!({"e": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}),
    ));
}

#[test]
fn defaults_must_validate_and_be_pruned() {
    let errs = compile_errors(with_spec(json!({
        "n": {"type": "integer", "default": "three"},
        "o": {"type": "object", "properties": {"a": {"type": "string"}}, "default": {"a": "x", "b": 1}},
        "e": {"type": "string", "enum": ["a", "b"], "default": "c"},
    })));
    let s = format!("{P}.properties[spec].properties");
    has(&errs, &format!("{s}[n].default: Invalid value: \"string\":  in body must be of type integer: \"string\""));
    has(&errs, &format!("{s}[o].default: Invalid value: map[string]interface {{}}{{\"a\":\"x\", \"b\":1}}: must not have unknown fields"));
    has(
        &errs,
        &format!("{s}[e].default: Unsupported value: \"c\": supported values: \"a\", \"b\""),
    );
}

#[test]
fn list_type_rules() {
    let errs = compile_errors(with_spec(json!({
        "a": {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "b": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object", "properties": {"name": {"type": "string"}}}},
        "c": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id"], "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}},
        "d": {"type": "string", "x-kubernetes-list-type": "set"},
        "e": {"type": "array", "x-kubernetes-list-type": "bag", "items": {"type": "string"}},
        "f": {"type": "object", "x-kubernetes-map-type": "weird"},
        "g": {"type": "array", "x-kubernetes-list-map-keys": ["x"], "items": {"type": "object", "properties": {"x": {"type": "string"}}}},
    })));
    let s = format!("{P}.properties[spec].properties");
    has(&errs, &format!("{s}[a].x-kubernetes-list-map-keys: Required value: must not be empty if x-kubernetes-list-type is map"));
    has(&errs, &format!("{s}[b].items.properties[name].default: Required value: this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property"));
    has(&errs, &format!("{s}[c].x-kubernetes-list-map-keys: Invalid value: []string{{\"id\"}}: entries must all be names of item properties"));
    has(&errs, &format!("{s}[d].type: Invalid value: \"string\": must be array if x-kubernetes-list-type is specified"));
    has(&errs, &format!("{s}[e].x-kubernetes-list-type: Unsupported value: \"bag\": supported values: \"atomic\", \"set\", \"map\""));
    has(&errs, &format!("{s}[f].x-kubernetes-map-type: Unsupported value: \"weird\": supported values: \"atomic\", \"granular\""));
    has(&errs, &format!("{s}[g].x-kubernetes-list-type: Required value: must be map if x-kubernetes-list-map-keys is non-empty"));
}

#[test]
fn invalid_pattern() {
    let errs = compile_errors(with_spec(
        json!({"p": {"type": "string", "pattern": "(unclosed"}}),
    ));
    assert!(errs[0].starts_with(&format!("{P}.properties[spec].properties[p].pattern: Invalid value: \"(unclosed\": must be a valid regular expression, but isn't: error parsing regexp: ")), "{errs:?}");
}

#[test]
fn validation_rule_entries_are_checked() {
    let errs = compile_errors(with_spec(
        json!({"x": {"type": "object", "properties": {"a": {"type": "string"}}, "x-kubernetes-validations": [
            {"rule": " "},
            {"rule": "true", "message": " "},
            {"rule": "true", "reason": "FieldValueBogus"},
            {"rule": "true", "fieldPath": ".nope"},
            {"rule": "self.a\n == 'x'"},
        ]}}),
    ));
    let v = format!("{P}.properties[spec].properties[x].x-kubernetes-validations");
    has(
        &errs,
        &format!("{v}[0].rule: Required value: rule is not specified"),
    );
    has(
        &errs,
        &format!("{v}[1].message: Invalid value: \" \": message must be non-empty if specified"),
    );
    has(&errs, &format!("{v}[2].reason: Unsupported value: \"FieldValueBogus\": supported values: \"FieldValueDuplicate\", \"FieldValueForbidden\", \"FieldValueInvalid\", \"FieldValueRequired\""));
    has(
        &errs,
        &format!("{v}[3].fieldPath: Invalid value: \".nope\": fieldPath must be a valid path"),
    );
    has(&errs, &format!("{v}[4].message: Required value: message must be specified if rule contains line breaks"));
}

#[test]
fn all_errors_are_reported_together() {
    let errs = compile_errors(
        json!({"type": "object", "properties": {"a": {}, "b": {"type": "array"}, "c": {"type": "string", "$ref": "x"}}}),
    );
    assert_eq!(errs.len(), 3, "{errs:#?}");
}
