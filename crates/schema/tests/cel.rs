//! CEL `x-kubernetes-validations`: rules, messages, reasons, field paths, transition rules,
//! Kubernetes CEL libraries, compile errors and cost limits.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use kplane_schema::{compile, CompileOptions};
use serde_json::{json, Value};

fn rule_schema(spec_props: Value, rules: Value) -> Value {
    json!({"type": "object", "properties": {
        "apiVersion": {"type": "string"}, "kind": {"type": "string"}, "metadata": {"type": "object"},
        "spec": {"type": "object", "properties": spec_props, "x-kubernetes-validations": rules},
    }})
}

#[test]
fn simple_rules_and_messages() {
    let s = schema(rule_schema(
        json!({"min": {"type": "integer"}, "max": {"type": "integer"}, "name": {"type": "string", "x-kubernetes-validations": [{"rule": "self.startsWith('k')"}]}}),
        json!([
            {"rule": "self.min <= self.max", "message": "min must not exceed max"},
            {"rule": "self.min >= 0"},
            // (`string(self.max)` has no size bound: Kubernetes refuses it in a concatenation)
            {"rule": "self.max < 100", "messageExpression": "'max is ' + (self.max >= 200 ? '200 or more' : 'over 100') + ', the limit is 100'"},
            {"rule": "self.min != 42", "reason": "FieldValueForbidden", "message": "42 is reserved", "fieldPath": ".min"},
        ]),
    ));
    assert!(errors(&s, &json!({"spec": {"min": 1, "max": 2, "name": "kube"}})).is_empty());
    assert_eq!(
        errors(&s, &json!({"spec": {"min": -5, "max": -10, "name": "x"}})),
        vec![
            "spec: Invalid value: \"object\": min must not exceed max",
            "spec: Invalid value: \"object\": failed rule: self.min >= 0",
            "spec.name: Invalid value: \"string\": failed rule: self.startsWith('k')",
        ]
    );
    assert_eq!(
        errors(&s, &json!({"spec": {"min": 42, "max": 200}})),
        vec![
            "spec: Invalid value: \"object\": max is 200 or more, the limit is 100",
            "spec.min: Forbidden: 42 is reserved",
        ]
    );
}

#[test]
fn runtime_errors_are_reported() {
    let s = schema(rule_schema(
        json!({"a": {"type": "integer"}, "b": {"type": "integer"}}),
        json!([{"rule": "self.a / self.b > 0"}, {"rule": "self.a > 0"}]),
    ));
    assert_eq!(errors(&s, &json!({"spec": {"a": 1, "b": 0}})), vec!["spec: Invalid value: \"object\": division by zero evaluating rule: self.a / self.b > 0"]);
    assert_eq!(
        errors(&s, &json!({"spec": {"b": 1}})),
        vec![
            "spec: Invalid value: \"object\": no such key: a evaluating rule: self.a / self.b > 0",
            "spec: Invalid value: \"object\": no such key: a evaluating rule: self.a > 0",
        ]
    );
}

#[test]
fn transition_rules_only_on_update() {
    let s = schema(rule_schema(
        json!({"image": {"type": "string", "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "image is immutable"}]},
               "replicas": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= oldSelf", "message": "cannot scale down"}]},
               "mode": {"type": "string", "x-kubernetes-validations": [{"rule": "!oldSelf.hasValue() || oldSelf.value() == 'a' || self == oldSelf.value()", "optionalOldSelf": true, "message": "mode may only change from a"}]}}),
        json!([]),
    ));
    let old = json!({"spec": {"image": "v1", "replicas": 3, "mode": "b"}});
    assert!(
        errors(
            &s,
            &json!({"spec": {"image": "v2", "replicas": 1, "mode": "c"}})
        )
        .is_empty(),
        "no transition checks on create"
    );
    assert_eq!(
        render(&s.validate(
            &json!({"spec": {"image": "v2", "replicas": 1, "mode": "c"}}),
            Some(&old)
        )),
        vec![
            "spec.image: Invalid value: \"string\": image is immutable",
            "spec.mode: Invalid value: \"string\": mode may only change from a",
            "spec.replicas: Invalid value: \"integer\": cannot scale down",
        ]
    );
    assert!(s
        .validate(
            &json!({"spec": {"image": "v1", "replicas": 4, "mode": "b"}}),
            Some(&old)
        )
        .is_empty());
    // a field added on update has no old value: the transition rule is skipped
    assert!(s
        .validate(
            &json!({"spec": {"image": "v9"}}),
            Some(&json!({"spec": {}}))
        )
        .is_empty());
}

#[test]
fn list_map_items_correlate_by_key() {
    let s = schema(rule_schema(
        json!({"pools": {"type": "array", "maxItems": 100, "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"], "items": {
        "type": "object", "required": ["name"], "properties": {"name": {"type": "string"}, "zone": {"type": "string", "maxLength": 64}},
        "x-kubernetes-validations": [{"rule": "self.zone == oldSelf.zone", "message": "zone is immutable"}]}}}),
        json!([]),
    ));
    let old =
        json!({"spec": {"pools": [{"name": "a", "zone": "z1"}, {"name": "b", "zone": "z2"}]}});
    let reordered = json!({"spec": {"pools": [{"name": "b", "zone": "z2"}, {"name": "a", "zone": "z1"}, {"name": "c", "zone": "z9"}]}});
    assert!(s.validate(&reordered, Some(&old)).is_empty());
    let changed = json!({"spec": {"pools": [{"name": "b", "zone": "z3"}]}});
    assert_eq!(
        render(&s.validate(&changed, Some(&old))),
        vec!["spec.pools[0]: Invalid value: \"object\": zone is immutable"]
    );
}

#[test]
fn kubernetes_libraries_and_formats() {
    let s = schema(rule_schema(
        json!({
            "mem": {"type": "string", "x-kubernetes-validations": [{"rule": "quantity(self).isLessThan(quantity('64Gi'))"}]},
            "url": {"type": "string", "x-kubernetes-validations": [{"rule": "isURL(self) && url(self).getScheme() == 'https'"}]},
            "ip": {"type": "string", "x-kubernetes-validations": [{"rule": "isIP(self) && ip(self).family() == 4"}]},
            "timeout": {"type": "string", "format": "duration", "x-kubernetes-validations": [{"rule": "self <= duration('1h')"}]},
            "at": {"type": "string", "format": "date-time", "x-kubernetes-validations": [{"rule": "self > timestamp('2020-01-01T00:00:00Z')"}]},
            "port": {"x-kubernetes-int-or-string": true, "x-kubernetes-validations": [{"rule": "self == 'http' || self == 80"}]},
            "words": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 20}, "x-kubernetes-validations": [{"rule": "self.all(w, w.lowerAscii() == w) && self.map(w, w.size()).sum() < 50"}]},
            "x-dash": {"type": "integer"},
            "namespace": {"type": "string"},
        }),
        json!([{"rule": "!has(self.x__dash__dash) || self.x__dash__dash < self.__namespace__.size()"}]),
    ));
    let ok = json!({"spec": {"mem": "1Gi", "url": "https://a.b/c", "ip": "10.0.0.1", "timeout": "30m", "at": "2024-01-01T00:00:00Z", "port": 80, "words": ["a", "bc"], "x-dash": 1, "namespace": "abc"}});
    let errs = errors(&s, &ok);
    assert!(errs.is_empty(), "{errs:#?}");
    assert!(errors(&s, &json!({"spec": {"port": "http"}})).is_empty());
    let bad = json!({"spec": {"mem": "128Gi", "url": "http://a.b", "ip": "fe80::1", "timeout": "2h", "at": "2019-01-01T00:00:00Z", "port": 81, "words": ["A"], "x-dash": 9, "namespace": "abc"}});
    let errs = errors(&s, &bad);
    assert_eq!(errs.len(), 8, "{errs:#?}");
    assert!(
        errs.contains(
            &"spec.port: Invalid value: \"\": failed rule: self == 'http' || self == 80"
                .to_string()
        ),
        "{errs:#?}"
    );
    assert!(
        errs.contains(
            &"spec.timeout: Invalid value: \"string\": failed rule: self <= duration('1h')"
                .to_string()
        ),
        "{errs:#?}"
    );
    assert!(errs.contains(&"spec: Invalid value: \"object\": failed rule: !has(self.x__dash__dash) || self.x__dash__dash < self.__namespace__.size()".to_string()), "{errs:#?}");
}

/// A format CEL does not know by its written name (`datetime`, not `date-time`) leaves the
/// value a string, both for the checker and at runtime, as kube-apiserver's `values.go`.
#[test]
fn a_format_is_known_to_cel_only_by_its_written_name() {
    let s = schema(rule_schema(
        json!({
            "when": {"type": "string", "format": "datetime", "x-kubernetes-validations": [{"rule": "self.startsWith('2024')"}]},
            "at": {"type": "string", "format": "date-time", "x-kubernetes-validations": [{"rule": "self > timestamp('2020-01-01T00:00:00Z')"}]},
        }),
        json!([]),
    ));
    let ok = json!({"spec": {"when": "2024-01-01T00:00:00Z", "at": "2024-01-01T00:00:00Z"}});
    let errs = errors(&s, &ok);
    assert!(errs.is_empty(), "{errs:#?}");
    let bad = json!({"spec": {"when": "2023-01-01T00:00:00Z", "at": "2024-01-01T00:00:00Z"}});
    let errs = errors(&s, &bad);
    assert_eq!(
        errs,
        ["spec.when: Invalid value: \"string\": failed rule: self.startsWith('2024')"],
        "{errs:#?}"
    );
}

#[test]
fn compile_errors_point_at_the_rule() {
    let errs = compile_errors(rule_schema(
        json!({"a": {"type": "integer"}}),
        json!([
            {"rule": "self.a >"},
            {"rule": "self.b == 1"},
            {"rule": "self.a + 1"},
            {"rule": "nope(self.a)"},
            {"rule": "self.a > 1", "messageExpression": "self.a"},
            {"rule": "self.a > 1", "optionalOldSelf": true},
        ]),
    ));
    let v = format!("{PREFIX}.properties[spec].x-kubernetes-validations");
    assert!(errs[0].starts_with(&format!("{v}[0].rule: Invalid value: apiextensions.ValidationRule{{Rule:\"self.a >\", Message:\"\", MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", OptionalOldSelf:(*bool)(nil)}}: compilation failed: ERROR: <input>:1:")), "{errs:#?}");
    assert!(
        errs[1].ends_with("compilation failed: ERROR: <input>: undefined field 'b'"),
        "{errs:#?}"
    );
    assert!(
        errs[2].ends_with("cel expression must evaluate to a bool"),
        "{errs:#?}"
    );
    assert!(
        errs[3].ends_with(
            "compilation failed: ERROR: <input>: undeclared reference to 'nope' (in container '')"
        ),
        "{errs:#?}"
    );
    assert!(
        errs[4].starts_with(&format!("{v}[4].messageExpression: Invalid value: "))
            && errs[4].ends_with("messageExpression must evaluate to a string"),
        "{errs:#?}"
    );
    assert_eq!(errs[5], format!("{v}[5].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not used in rule"));
}

#[test]
fn old_self_needs_a_correlatable_path() {
    let errs = compile_errors(rule_schema(
        json!({"l": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10, "x-kubernetes-validations": [{"rule": "self == oldSelf"}]}}}),
        json!([]),
    ));
    assert_eq!(errs, vec![format!(
        "{PREFIX}.properties[spec].properties[l].items.x-kubernetes-validations[0].rule: Invalid value: \"self == oldSelf\": oldSelf cannot be used on the uncorrelatable portion of the schema within {PREFIX}.properties[spec].properties[l]"
    )]);
}

#[test]
fn unbounded_cost_is_refused_at_compile_time() {
    let errs = compile_errors(rule_schema(
        json!({"l": {"type": "array", "items": {"type": "string"}}}),
        json!([{"rule": "self.l.all(x, self.l.all(y, x == y || !x.contains(y)))"}]),
    ));
    assert_eq!(errs[0], format!("{PREFIX}.properties[spec].x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"));
    assert!(errs.iter().any(|e| e == &format!("{PREFIX}: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)")), "{errs:#?}");
    // the same rule with bounds compiles
    schema(rule_schema(
        json!({"l": {"type": "array", "maxItems": 10, "items": {"type": "string", "maxLength": 10}}}),
        json!([{"rule": "self.l.all(x, self.l.all(y, x == y || !x.contains(y)))"}]),
    ));
}

#[test]
fn runtime_cost_is_bounded() {
    // Lift the static limits so the rule compiles; the runtime per-call limit must stop it.
    let opts = CompileOptions {
        max_cel_cost: u64::MAX,
        max_total_cel_cost: u64::MAX,
        ..CompileOptions::default()
    };
    let v = rule_schema(
        json!({"l": {"type": "array", "items": {"type": "integer"}}}),
        json!([{"rule": "self.l.all(x, self.l.all(y, self.l.all(z, x + y + z >= 0)))"}]),
    );
    let s = compile(&v, PREFIX, &opts).unwrap();
    let big: Vec<i64> = (0..200).collect();
    // 200^3 evaluations would take minutes; the error below says the per-call limit cut the
    // rule short (no wall-clock bound: tests never time the machine).
    let errs = errors(&s, &json!({"spec": {"l": big}}));
    assert_eq!(errs, vec!["spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.l.all(x, self.l.all(y, self.l.all(z, x + y + z >= 0)))"]);
    // and the per-request budget stops many cheap-but-numerous evaluations
    let opts = CompileOptions {
        cel_runtime_budget: 1000,
        ..CompileOptions::default()
    };
    let v = rule_schema(
        json!({"l": {"type": "array", "maxItems": 5000, "items": {"type": "integer", "x-kubernetes-validations": [{"rule": "self >= 0"}]}}}),
        json!([]),
    );
    let s = compile(&v, PREFIX, &opts).unwrap();
    let errs = errors(&s, &json!({"spec": {"l": (0..5000).collect::<Vec<i64>>()}}));
    assert_eq!(errs.len(), 1);
    assert!(errs[0].ends_with(": Invalid value: \"integer\": validation failed due to running out of cost budget, no further validation rules will be run"), "{errs:?}");
}

#[test]
fn root_rules_see_type_and_object_meta() {
    let s = schema(
        json!({"type": "object", "properties": {"metadata": {"type": "object"}, "spec": {"type": "object"}},
        "x-kubernetes-validations": [{"rule": "self.metadata.name.startsWith('my-')", "message": "name must start with my-"}, {"rule": "self.kind == 'Widget'"}]}),
    );
    assert!(errors(&s, &json!({"kind": "Widget", "metadata": {"name": "my-a"}})).is_empty());
    assert_eq!(
        errors(&s, &json!({"kind": "Widget", "metadata": {"name": "a"}})),
        vec!["Invalid value: \"object\": name must start with my-"]
    );
    let errs = compile_errors(
        json!({"type": "object", "x-kubernetes-validations": [{"rule": "self.metadata.labels.size() > 0"}]}),
    );
    assert!(errs[0].ends_with("undefined field 'labels'"), "{errs:?}");
}

#[test]
fn defaults_must_satisfy_rules() {
    let errs = compile_errors(rule_schema(
        json!({"n": {"type": "integer", "default": 5, "x-kubernetes-validations": [{"rule": "self < 3"}]}}),
        json!([]),
    ));
    assert_eq!(errs, vec![format!("{PREFIX}.properties[spec].properties[n].default: Invalid value: \"integer\": failed rule: self < 3")]);
}

/// Operators are checked against cel-go's overloads, as kube-apiserver checks them when a
/// CRD is created: `int > string` and `string + int` have none; a `dyn` operand
/// (int-or-string) fits any, and int, uint and double may be compared with each other.
#[test]
fn operators_without_an_overload_refuse_the_crd() {
    let errs = compile_errors(rule_schema(
        json!({"replicas": {"type": "integer"}, "name": {"type": "string"},
               "port": {"x-kubernetes-int-or-string": true}, "ratio": {"type": "number"}}),
        json!([
            {"rule": "self.replicas > '1'"},
            {"rule": "self.replicas > 1", "messageExpression": "'got ' + self.replicas"},
            {"rule": "self.port > 1 && self.ratio < self.replicas && self.name + 'x' != ''"},
        ]),
    ));
    let v = format!("{PREFIX}.properties[spec].x-kubernetes-validations");
    assert_eq!(errs.len(), 2, "{errs:#?}");
    assert!(
        errs[0].starts_with(&format!("{v}[0].rule: Invalid value: ")),
        "{errs:#?}"
    );
    assert!(
        errs[0].ends_with(": compilation failed: ERROR: <input>: found no matching overload for '_>_' applied to '(int, string)'"),
        "{errs:#?}"
    );
    assert!(
        errs[1].starts_with(&format!("{v}[1].messageExpression: Invalid value: ")),
        "{errs:#?}"
    );
    assert!(
        errs[1].ends_with(": messageExpression compilation failed: ERROR: <input>: found no matching overload for '_+_' applied to '(string, int)'"),
        "{errs:#?}"
    );
}
