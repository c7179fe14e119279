//! Value validation of objects: every OpenAPI keyword, list types and embedded resources,
//! with kube-openapi's messages as apiextensions reports them.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::json;

fn check(spec_props: serde_json::Value, spec: serde_json::Value) -> Vec<String> {
    let s = schema(with_spec(spec_props));
    errors(
        &s,
        &json!({"apiVersion": "x/v1", "kind": "X", "metadata": {"name": "a"}, "spec": spec}),
    )
}

fn one(spec_props: serde_json::Value, spec: serde_json::Value) -> String {
    let errs = check(spec_props, spec);
    assert_eq!(errs.len(), 1, "{errs:#?}");
    errs[0].clone()
}

#[test]
fn types() {
    let props = json!({"i": {"type": "integer"}, "n": {"type": "number"}, "s": {"type": "string"}, "b": {"type": "boolean"}, "o": {"type": "object"}, "a": {"type": "array", "items": {"type": "string"}}});
    assert_eq!(
        check(
            props.clone(),
            json!({"i": 1, "n": 1.5, "s": "x", "b": true, "o": {}, "a": []})
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        check(props.clone(), json!({"i": 2.0, "n": 3})),
        Vec::<String>::new(),
        "integral floats are integers, integers are numbers"
    );
    let errs = check(
        props,
        json!({"i": 1.5, "n": "x", "s": 1, "b": "true", "o": [], "a": {}}),
    );
    assert_eq!(
        errs,
        vec![
        "spec.a: Invalid value: \"object\": spec.a in body must be of type array: \"object\"",
        "spec.b: Invalid value: \"string\": spec.b in body must be of type boolean: \"string\"",
        "spec.i: Invalid value: \"number\": spec.i in body must be of type integer: \"number\"",
        "spec.n: Invalid value: \"string\": spec.n in body must be of type number: \"string\"",
        "spec.o: Invalid value: \"array\": spec.o in body must be of type object: \"array\"",
        "spec.s: Invalid value: \"integer\": spec.s in body must be of type string: \"integer\"",
    ]
    );
    let s = schema(with_spec(json!({"i": {"type": "integer"}})));
    let causes = s.validate(&json!({"spec": {"i": "x"}}), None);
    assert_eq!(
        causes[0].reason,
        kplane_types::CauseType::FieldValueTypeInvalid
    );
}

#[test]
fn nullable() {
    let props = json!({"s": {"type": "string"}, "n": {"type": "string", "nullable": true}});
    assert_eq!(
        check(props.clone(), json!({"n": null})),
        Vec::<String>::new()
    );
    assert_eq!(
        one(props, json!({"s": null})),
        "spec.s: Invalid value: \"null\": spec.s in body must be of type string: \"null\""
    );
}

#[test]
fn enums() {
    let props = json!({"color": {"type": "string", "enum": ["red", "blue"]}, "n": {"type": "integer", "enum": [1, 2]}});
    assert_eq!(
        one(props.clone(), json!({"color": "NonExistentValue"})),
        "spec.color: Unsupported value: \"NonExistentValue\": supported values: \"red\", \"blue\""
    );
    assert_eq!(
        one(props.clone(), json!({"n": 3})),
        "spec.n: Unsupported value: 3: supported values: \"1\", \"2\""
    );
    assert_eq!(
        check(props, json!({"color": "red", "n": 2.0})),
        Vec::<String>::new()
    );
    let s = schema(with_spec(
        json!({"color": {"type": "string", "enum": ["red"]}}),
    ));
    assert_eq!(
        s.validate(&json!({"spec": {"color": "x"}}), None)[0].reason,
        kplane_types::CauseType::FieldValueNotSupported
    );
}

#[test]
fn strings() {
    let props =
        json!({"name": {"type": "string", "pattern": "^[a-z]+$", "minLength": 2, "maxLength": 5}});
    assert_eq!(
        one(props.clone(), json!({"name": "x"})),
        "spec.name: Invalid value: \"x\": spec.name in body should be at least 2 chars long"
    );
    assert_eq!(
        one(props.clone(), json!({"name": "abcdef"})),
        "spec.name: Too long: may not be more than 5 bytes"
    );
    assert_eq!(
        one(props.clone(), json!({"name": "AB"})),
        "spec.name: Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'"
    );
    // lengths count Unicode characters, and RE2 classes are ASCII
    let props = json!({"u": {"type": "string", "maxLength": 3}, "d": {"type": "string", "pattern": "^\\d+$"}});
    assert_eq!(
        check(props.clone(), json!({"u": "äöü", "d": "123"})),
        Vec::<String>::new()
    );
    assert_eq!(
        one(props, json!({"d": "١٢٣"})),
        "spec.d: Invalid value: \"١٢٣\": spec.d in body should match '^\\d+$'"
    );
    let s = schema(with_spec(json!({"t": {"type": "string", "maxLength": 1}})));
    let c = &s.validate(&json!({"spec": {"t": "ab"}}), None)[0];
    assert_eq!(
        (c.reason, c.message.as_str()),
        (
            kplane_types::CauseType::FieldValueTooLong,
            "Too long: may not be more than 1 byte"
        )
    );
}

#[test]
fn unicode_classes_in_patterns() {
    // Go's RE2 accepts Unicode general categories and scripts, one-letter (`\pL`) and
    // braced (`\p{L}`), negated with `\P` or `\p{^...}`
    let props = json!({
        "word": {"type": "string", "pattern": "^[\\p{L}\\p{S}]+$"},
        "short": {"type": "string", "pattern": "^\\pL\\PL$"},
        "greek": {"type": "string", "pattern": "^\\p{Greek}+$"},
        "nonletters": {"type": "string", "pattern": "^\\p{^L}+$"},
    });
    let ok = json!({"word": "héllo€√", "short": "é1", "greek": "αβγ", "nonletters": "12 €"});
    assert_eq!(check(props.clone(), ok), Vec::<String>::new());
    assert_eq!(
        check(props, json!({"word": "ab1", "short": "ab", "greek": "abc", "nonletters": "1a"})),
        vec![
            "spec.greek: Invalid value: \"abc\": spec.greek in body should match '^\\p{Greek}+$'",
            "spec.nonletters: Invalid value: \"1a\": spec.nonletters in body should match '^\\p{^L}+$'",
            "spec.short: Invalid value: \"ab\": spec.short in body should match '^\\pL\\PL$'",
            "spec.word: Invalid value: \"ab1\": spec.word in body should match '^[\\p{L}\\p{S}]+$'",
        ]
    );
}

#[test]
fn numbers() {
    let props = json!({
        "size": {"type": "integer", "maximum": 10, "minimum": 1},
        "ex": {"type": "integer", "maximum": 10, "exclusiveMaximum": true, "minimum": 0, "exclusiveMinimum": true},
        "f": {"type": "number", "maximum": 1000000, "multipleOf": 0.5},
        "m": {"type": "integer", "multipleOf": 3},
    });
    assert_eq!(
        one(props.clone(), json!({"size": 11})),
        "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10"
    );
    assert_eq!(
        one(props.clone(), json!({"size": 0})),
        "spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"
    );
    assert_eq!(
        one(props.clone(), json!({"ex": 10})),
        "spec.ex: Invalid value: 10: spec.ex in body should be less than 10"
    );
    assert_eq!(
        one(props.clone(), json!({"ex": 0})),
        "spec.ex: Invalid value: 0: spec.ex in body should be greater than 0"
    );
    assert_eq!(one(props.clone(), json!({"f": 2000000.5})), "spec.f: Invalid value: 2.0000005e+06: spec.f in body should be less than or equal to 1e+06");
    assert_eq!(
        one(props.clone(), json!({"f": 1.25})),
        "spec.f: Invalid value: 1.25: spec.f in body should be a multiple of 0.5"
    );
    assert_eq!(
        one(props.clone(), json!({"m": 7})),
        "spec.m: Invalid value: 7: spec.m in body should be a multiple of 3"
    );
    assert_eq!(
        check(props, json!({"size": 10, "ex": 5, "f": 1.5, "m": 9})),
        Vec::<String>::new()
    );
}

#[test]
fn arrays_and_objects() {
    let props = json!({
        "l": {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string"}},
        "o": {"type": "object", "minProperties": 1, "maxProperties": 2, "additionalProperties": {"type": "integer"}},
        "closed": {"type": "object", "additionalProperties": false},
    });
    assert_eq!(
        one(props.clone(), json!({"l": []})),
        "spec.l: Invalid value: 0: spec.l in body should have at least 1 items"
    );
    assert_eq!(
        one(props.clone(), json!({"l": ["a", "b", "c"]})),
        "spec.l: Too many: 3: must have at most 2 items"
    );
    assert_eq!(one(props.clone(), json!({"l": ["a", 1]})), "spec.l[1]: Invalid value: \"integer\": spec.l[1] in body must be of type string: \"integer\"");
    assert_eq!(
        one(props.clone(), json!({"o": {}})),
        "spec.o: Invalid value: 0: spec.o in body should have at least 1 properties"
    );
    assert_eq!(
        one(props.clone(), json!({"o": {"a": 1, "b": 2, "c": 3}})),
        "spec.o: Too many: 3: must have at most 2 items"
    );
    assert_eq!(
        one(props.clone(), json!({"o": {"a": "x"}})),
        "spec.o.a: Invalid value: \"string\": spec.o.a in body must be of type integer: \"string\""
    );
    assert_eq!(
        one(props, json!({"closed": {"x": 1}})),
        "spec.closed: Invalid value: \"x\": spec.closed.x in body is a forbidden property"
    );
}

#[test]
fn required_fields() {
    let props = json!({"bars": {"type": "array", "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}}});
    assert_eq!(
        one(props, json!({"bars": [{"name": "a"}, {}]})),
        "spec.bars[1].name: Required value"
    );
    let s = schema(
        json!({"type": "object", "required": ["spec"], "properties": {"spec": {"type": "object"}}}),
    );
    let c = s.validate(&json!({}), None);
    assert_eq!(
        (c[0].field.as_str(), c[0].message.as_str(), c[0].reason),
        (
            "spec",
            "Required value",
            kplane_types::CauseType::FieldValueRequired
        )
    );
}

#[test]
fn formats() {
    let props = json!({
        "id": {"type": "string", "format": "uuid"},
        "at": {"type": "string", "format": "date-time"},
        "ip": {"type": "string", "format": "ipv4"},
        "net": {"type": "string", "format": "cidr"},
        "host": {"type": "string", "format": "hostname"},
        "mail": {"type": "string", "format": "email"},
        "data": {"type": "string", "format": "byte"},
        "small": {"type": "integer", "format": "int32"},
        "odd": {"type": "string", "format": "no-such-format"},
    });
    let good = json!({"id": "123e4567-e89b-12d3-a456-426614174000", "at": "2024-05-01T10:00:00Z", "ip": "10.1.2.3", "net": "10.0.0.0/8", "host": "a.example.com", "mail": "a@b.io", "data": "aGk=", "small": 99999999999i64, "odd": "anything"});
    assert_eq!(check(props.clone(), good), Vec::<String>::new());
    let errs = check(
        props,
        json!({"id": "nope", "at": "yesterday", "ip": "10.1.2", "net": "10.0.0.0", "host": "-x-", "mail": "@", "data": "!!"}),
    );
    assert_eq!(errs, vec![
        "spec.at: Invalid value: \"yesterday\": spec.at in body must be of type date-time: \"yesterday\"",
        "spec.data: Invalid value: \"!!\": spec.data in body must be of type byte: \"!!\"",
        "spec.host: Invalid value: \"-x-\": spec.host in body must be of type hostname: \"-x-\"",
        "spec.id: Invalid value: \"nope\": spec.id in body must be of type uuid: \"nope\"",
        "spec.ip: Invalid value: \"10.1.2\": spec.ip in body must be of type ipv4: \"10.1.2\"",
        "spec.mail: Invalid value: \"@\": spec.mail in body must be of type email: \"@\"",
        "spec.net: Invalid value: \"10.0.0.0\": spec.net in body must be of type cidr: \"10.0.0.0\"",
    ]);
}

#[test]
fn int_or_string() {
    let props = json!({"p": {"x-kubernetes-int-or-string": true}});
    assert_eq!(
        check(props.clone(), json!({"p": 8080})),
        Vec::<String>::new()
    );
    assert_eq!(
        check(props.clone(), json!({"p": "http"})),
        Vec::<String>::new()
    );
    assert_eq!(one(props, json!({"p": true})), "spec.p: Invalid value: \"boolean\": spec.p in body must be of type integer,string: \"boolean\"");
}

#[test]
fn logical_junctors() {
    let props = json!({
        "any": {"type": "string", "anyOf": [{"pattern": "^a"}, {"pattern": "^b"}]},
        "one": {"type": "integer", "oneOf": [{"minimum": 5}, {"maximum": 10}]},
        "all": {"type": "string", "allOf": [{"minLength": 2}, {"maxLength": 3}]},
        "not": {"type": "string", "not": {"enum": ["forbidden"]}},
    });
    assert_eq!(
        check(
            props.clone(),
            json!({"any": "apple", "one": 11, "all": "ab", "not": "ok"})
        ),
        Vec::<String>::new()
    );
    assert_eq!(
        check(props.clone(), json!({"any": "cherry"})),
        vec![
            ": Invalid value: \"\": \"spec.any\" must validate at least one schema (anyOf)",
            "spec.any: Invalid value: \"cherry\": spec.any in body should match '^a'",
        ]
        .into_iter()
        .map(|s| s.trim_start_matches(": ").to_string())
        .collect::<Vec<_>>()
    );
    assert_eq!(check(props.clone(), json!({"one": 7})), vec!["Invalid value: \"\": \"spec.one\" must validate one and only one schema (oneOf). Found 2 valid alternatives"]);
    assert_eq!(
        check(props.clone(), json!({"all": "abcd"})),
        vec![
            "spec.all: Too long: may not be more than 3 bytes",
            "Invalid value: \"\": \"spec.all\" must validate all the schemas (allOf)",
        ]
    );
    assert_eq!(
        check(props, json!({"not": "forbidden"})),
        vec!["Invalid value: \"\": \"spec.not\" must not validate the schema (not)"]
    );
}

#[test]
fn list_sets_and_maps_are_unique() {
    let props = json!({
        "set": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["port", "protocol"], "items": {"type": "object", "required": ["port"], "properties": {"port": {"type": "integer"}, "protocol": {"type": "string", "default": "TCP"}}}},
        "byName": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}},
    });
    let errs = check(
        props.clone(),
        json!({
            "set": ["a", "b", "a", "a", "b"],
            "ports": [{"port": 80, "protocol": "TCP"}, {"port": 80, "protocol": "UDP"}, {"port": 80, "protocol": "TCP"}],
            "byName": [{"name": "x"}, {"name": "x"}],
        }),
    );
    assert_eq!(errs, vec![
        "spec.byName[1]: Duplicate value: map[string]interface {}{\"name\":\"x\"}",
        "spec.ports[2]: Duplicate value: map[string]interface {}{\"port\":80, \"protocol\":\"TCP\"}",
        "spec.set[2]: Duplicate value: \"a\"",
        "spec.set[4]: Duplicate value: \"b\"",
    ]);
    let s = schema(with_spec(props));
    let c = s.validate(&json!({"spec": {"set": ["a", "a"]}}), None);
    assert_eq!(c[0].reason, kplane_types::CauseType::FieldValueDuplicate);
}

#[test]
fn embedded_resources_are_checked() {
    let props = json!({"tpl": {"type": "object", "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}});
    assert_eq!(
        check(
            props.clone(),
            json!({"tpl": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}}}})
        ),
        Vec::<String>::new()
    );
    let errs = check(props.clone(), json!({"tpl": {"metadata": {"name": "a/b"}}}));
    assert_eq!(
        errs,
        vec![
            "spec.tpl.apiVersion: Required value",
            "spec.tpl.kind: Required value",
            "spec.tpl.metadata.name: Invalid value: \"a/b\": may not contain '/'",
        ]
    );
    let errs = check(
        props.clone(),
        json!({"tpl": {"apiVersion": "a/b/c", "kind": "Bad_Kind", "metadata": {"labels": {"a": 1}}}}),
    );
    assert_eq!(
        errs[0],
        "spec.tpl.apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c"
    );
    assert!(errs[1].starts_with("spec.tpl.kind: Invalid value: \"Bad_Kind\": may have mixed case, but should otherwise match: a DNS-1035 label must consist of"), "{errs:?}");
    assert_eq!(errs[2], "spec.tpl.metadata: Invalid value: map[string]interface {}{\"labels\":map[string]interface {}{\"a\":1}}: json: cannot unmarshal number into Go struct field ObjectMeta.labels of type string");
}

#[test]
fn all_violations_are_reported() {
    let props = json!({"a": {"type": "integer", "maximum": 1}, "b": {"type": "string", "enum": ["x"]}, "c": {"type": "array", "items": {"type": "integer", "minimum": 0}}});
    let errs = check(props, json!({"a": 5, "b": "y", "c": [-1, -2, -3]}));
    assert_eq!(errs.len(), 5, "{errs:#?}");
}

#[test]
fn unchanged_values_are_ratcheted_on_update() {
    let s = schema(with_spec(json!({
        "name": {"type": "string", "maxLength": 3},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "port": {"type": "integer", "maximum": 100}}}},
        "level": {"type": "integer", "x-kubernetes-validations": [{"rule": "self < 5"}]},
    })));
    // stored before the schema was tightened
    let old =
        json!({"spec": {"name": "toolong", "ports": [{"name": "a", "port": 500}], "level": 9}});
    // unchanged invalid values pass, wherever map-list items moved to
    let new = json!({"spec": {"name": "toolong", "ports": [{"name": "b", "port": 1}, {"name": "a", "port": 500}], "level": 9}});
    assert!(
        s.validate(&new, Some(&old)).is_empty(),
        "{:#?}",
        render(&s.validate(&new, Some(&old)))
    );
    // changed values are validated
    let changed =
        json!({"spec": {"name": "toolonger", "ports": [{"name": "a", "port": 501}], "level": 10}});
    assert_eq!(render(&s.validate(&changed, Some(&old))), vec![
        "spec.name: Too long: may not be more than 3 bytes",
        "spec.ports[0].port: Invalid value: 501: spec.ports[0].port in body should be less than or equal to 100",
        "spec.level: Invalid value: \"integer\": failed rule: self < 5",
    ]);
    // on create everything is validated
    assert_eq!(errors(&s, &new).len(), 3);
}
