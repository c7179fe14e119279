//! The static CEL cost limits at their boundaries, against kube-apiserver 1.32's figures:
//! a rule's estimated cost times the number of times it can run must not exceed
//! 10,000,000 (`StaticEstimatedCostLimit`), all of a CRD's together 100,000,000
//! (`StaticEstimatedCRDCostLimit`). Each case says how upstream arrives at its number.
//!
//! Two rules recur: `self != ''` on a string costs 1 (`self`, and comparing with the
//! shorter side, the empty literal, costs ceil(0.1 * 0) = 0), and `self == 'ab'` costs 2
//! (ceil(0.1 * min(4 * maxLength, 2)) = 1 more). A rule on the items of a list of
//! `maxItems` M can run M times; under a map, `maxProperties` times; under both, their
//! product.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use serde_json::{json, Value};

const TAIL: &str = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";

fn spec(props: Value) -> Value {
    json!({"type": "object", "properties": {"spec": {"type": "object", "properties": props}}})
}

/// A list of `max` strings (maxLength 2) whose items carry `rule`.
fn list_rule(max: u64, rule: &str) -> Value {
    json!({"type": "array", "maxItems": max, "items": {"type": "string", "maxLength": 2,
        "x-kubernetes-validations": [{"rule": rule}]}})
}

fn rule_error(path: &str, factor: &str) -> String {
    format!("{PREFIX}.properties[spec].{path}.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of {factor} {TAIL}")
}

fn total_error(factor: &str) -> String {
    format!("{PREFIX}: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of {factor} {TAIL}")
}

fn contributed(path: &str) -> String {
    format!("{PREFIX}.properties[spec].{path}.x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema")
}

/// The compile errors of `schema`, empty when it compiles.
fn errors_of(schema: &Value) -> Vec<String> {
    match kplane_schema::compile(schema, PREFIX, &kplane_schema::CompileOptions::default()) {
        Ok(_) => Vec::new(),
        Err(e) => render(&e),
    }
}

#[test]
fn per_rule_limit() {
    let l = "properties[l].items";
    let cases: Vec<(&str, Value, Vec<String>)> = vec![
        // 1 * 10,000,000 runs = 10,000,000: at the limit, accepted
        ("at the limit", spec(json!({"l": list_rule(10_000_000, "self != ''")})), vec![]),
        // 1 * 10,000,001 = 10,000,001: factor 1.0000001, printed with %f
        (
            "one over",
            spec(json!({"l": list_rule(10_000_001, "self != ''")})),
            vec![rule_error(l, "1.000000x")],
        ),
        // 2 * 5,000,000 = 10,000,000 through `self == 'ab'`: accepted
        ("at the limit, cost 2", spec(json!({"l": list_rule(5_000_000, "self == 'ab'")})), vec![]),
        // 2 * 5,000,001 = 10,000,002: 1.0000002
        (
            "one item over, cost 2",
            spec(json!({"l": list_rule(5_000_001, "self == 'ab'")})),
            vec![rule_error(l, "1.000000x")],
        ),
        // 14,999,999: 1.4999999 is still below 1.5, so %f, which rounds it to 1.500000
        (
            "just below 1.5",
            spec(json!({"l": list_rule(14_999_999, "self != ''")})),
            vec![rule_error(l, "1.500000x")],
        ),
        // 15,000,000: 1.5 and up print with one decimal
        (
            "1.5",
            spec(json!({"l": list_rule(15_000_000, "self != ''")})),
            vec![rule_error(l, "1.5x")],
        ),
        // 1,000,000,000: exactly 100, not more than 100; the total (100,000,000) is exceeded
        // tenfold by this one rule, which is listed as contributing
        (
            "100x",
            spec(json!({"l": list_rule(1_000_000_000, "self != ''")})),
            vec![rule_error(l, "100.0x"), contributed(l), total_error("10.0x")],
        ),
        // 1,000,000,001: more than 100
        (
            "over 100x",
            spec(json!({"l": list_rule(1_000_000_001, "self != ''")})),
            vec![rule_error(l, "more than 100x"), contributed(l), total_error("10.0x")],
        ),
        // a list of lists: 5,000 * 1,000 = 5,000,000 runs of cost 2 = 10,000,000
        (
            "nested lists at the limit",
            spec(json!({"l": {"type": "array", "maxItems": 5000, "items": list_rule(1000, "self == 'ab'")}})),
            vec![],
        ),
        // 5,001 * 1,000 * 2 = 10,002,000: 1.0002
        (
            "nested lists over",
            spec(json!({"l": {"type": "array", "maxItems": 5001, "items": list_rule(1000, "self == 'ab'")}})),
            vec![rule_error("properties[l].items.items", "1.000200x")],
        ),
        // a map (maxProperties 10,000) of lists (maxItems 1,000): 10,000,000 runs of cost 1
        (
            "map of lists at the limit",
            spec(json!({"m": {"type": "object", "maxProperties": 10000, "additionalProperties": list_rule(1000, "self != ''")}})),
            vec![],
        ),
        // 10,001 * 1,000 = 10,001,000: 1.0001
        (
            "map of lists over",
            spec(json!({"m": {"type": "object", "maxProperties": 10001, "additionalProperties": list_rule(1000, "self != ''")}})),
            vec![rule_error("properties[m].additionalProperties.items", "1.000100x")],
        ),
        // `self.matches('^a+$')` on a string of maxLength L: self 1, plus the string's
        // 4 * L bytes (+1) at 0.1 each, rounded up, times the 4-character pattern at 0.25
        // (1). L = 24,999,997: ceil(0.1 * 99,999,989) = 9,999,999, so 10,000,000
        (
            "regex at the limit",
            spec(json!({"s": {"type": "string", "maxLength": 24_999_997, "x-kubernetes-validations": [{"rule": "self.matches('^a+$')"}]}})),
            vec![],
        ),
        // L = 24,999,998: ceil(0.1 * 99,999,993) = 10,000,000, so 10,000,001
        (
            "regex over",
            spec(json!({"s": {"type": "string", "maxLength": 24_999_998, "x-kubernetes-validations": [{"rule": "self.matches('^a+$')"}]}})),
            vec![format!("{PREFIX}.properties[spec].properties[s].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of 1.000000x {TAIL}")],
        ),
    ];
    for (name, schema, want) in cases {
        assert_eq!(errors_of(&schema), want, "{name}");
    }
}

#[test]
fn rules_under_unbounded_lists_and_maps() {
    let object = |required: Value, rule: &str| {
        json!({"type": "object", "required": required, "properties": {"n": {"type": "integer"}},
            "x-kubernetes-validations": [{"rule": rule}]})
    };
    // each `self.n > k` costs 3 (self, .n, the comparison); has() costs its operand (1)
    let nine = "self.n > 1 && self.n > 2 && self.n > 3";
    let ten = "self.n > 1 && self.n > 2 && self.n > 3 && has(self.n)";
    let path = "properties[l].items";
    let cases: Vec<(&str, Value, Vec<String>)> = vec![
        // no maxItems: a rule on the items runs as often as the smallest item fits in
        // 3 MiB with a comma: `{}` is 2 bytes, so 3,145,728 / 3 = 1,048,576 times;
        // 9 * 1,048,576 = 9,437,184
        (
            "unbounded, cost 9",
            spec(json!({"l": {"type": "array", "items": object(json!([]), nine)}})),
            vec![],
        ),
        // 10 * 1,048,576 = 10,485,760: 1.048576
        (
            "unbounded, cost 10",
            spec(json!({"l": {"type": "array", "items": object(json!([]), ten)}})),
            vec![rule_error(path, "1.048576x")],
        ),
        // with `n` required the smallest item is `{"n":0}`: 2 + 1 + 1 + 4 = 8 bytes, so
        // 3,145,728 / 9 = 349,525 runs: 3,495,250
        (
            "unbounded, n required",
            spec(json!({"l": {"type": "array", "items": object(json!(["n"]), ten)}})),
            vec![],
        ),
        // an unbounded list anywhere above decides, even under a bounded one
        (
            "unbounded under bounded",
            spec(
                json!({"o": {"type": "array", "maxItems": 1, "items": {"type": "array", "items": object(json!([]), ten)}}}),
            ),
            vec![rule_error("properties[o].items.items", "1.048576x")],
        ),
        // a map without maxProperties too: the values' own smallest size decides the same way
        (
            "unbounded map",
            spec(json!({"m": {"type": "object", "additionalProperties": object(json!([]), ten)}})),
            vec![rule_error(
                "properties[m].additionalProperties",
                "1.048576x",
            )],
        ),
    ];
    for (name, schema, want) in cases {
        assert_eq!(errors_of(&schema), want, "{name}");
    }
}

#[test]
fn message_expressions_are_not_multiplied() {
    // the rule `self.n > 1` costs 3, run 2,000,000 times: 6,000,000. The message
    // `'n is small: ' + self.s` concatenates 12 + 4 * 10 bytes: ceil(0.1 * 52) = 6, plus
    // self.s 2 = 8, counted once (16,000,000 if it were multiplied)
    let item = json!({"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string", "maxLength": 10}},
        "x-kubernetes-validations": [{"rule": "self.n > 1", "messageExpression": "'n is small: ' + self.s"}]});
    let schema = spec(json!({"l": {"type": "array", "maxItems": 2_000_000, "items": item}}));
    assert_eq!(errors_of(&schema), Vec::<String>::new());
    // an unbounded string in a concatenation: ceil(0.1 * (12 + 3,145,726)) = 314,574 + 2,
    // fine; the same with `string(self.n)`, whose size nothing bounds, is not
    let unbounded = |message: &str| {
        spec(
            json!({"o": {"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string"}},
            "x-kubernetes-validations": [{"rule": "self.n > 1", "messageExpression": message}]}}),
        )
    };
    assert_eq!(
        errors_of(&unbounded("'n is small: ' + self.s")),
        Vec::<String>::new()
    );
    let m = format!(
        "{PREFIX}.properties[spec].properties[o].x-kubernetes-validations[0].messageExpression"
    );
    assert_eq!(
        errors_of(&unbounded("'n is small: ' + string(self.n)")),
        vec![
            format!("{m}: Forbidden: estimated messageExpression cost exceeds budget by factor of more than 100x {TAIL}"),
            format!("{m}: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"),
            total_error("more than 100x"),
        ]
    );
}

#[test]
fn per_crd_total_limit() {
    // ten lists of 5,000,000 - k strings (k = 0..9) with `self == 'ab'` (cost 2):
    // 2 * (50,000,000 - 45) = 99,999,910, and an eleventh of `extra` strings with
    // `self != ''` (cost 1): with 90 the total is exactly 100,000,000
    let with_extra = |extra: u64| {
        let mut props = serde_json::Map::new();
        for k in 0..10u64 {
            props.insert(format!("p{k:02}"), list_rule(5_000_000 - k, "self == 'ab'"));
        }
        props.insert("p10".into(), list_rule(extra, "self != ''"));
        spec(Value::Object(props))
    };
    assert_eq!(errors_of(&with_extra(90)), Vec::<String>::new());
    // 91: 100,000,001, a factor of 1.00000001. The four most expensive rules (each at
    // least 1% of the limit) are named, most expensive first: 10,000,000, 9,999,998,
    // 9,999,996, 9,999,994
    assert_eq!(
        errors_of(&with_extra(91)),
        vec![
            contributed("properties[p00].items"),
            contributed("properties[p01].items"),
            contributed("properties[p02].items"),
            contributed("properties[p03].items"),
            total_error("1.000000x"),
        ]
    );
}
