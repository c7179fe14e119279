//! CRD validation ratcheting, case by case after the table of apiextensions' integration
//! test (`test/integration/ratcheting_test.go`): an object stored under a looser schema,
//! the schema tightened, then updates. Each step names the update and what kube-apiserver
//! 1.32 answers: the errors, and the warnings of ratcheted CEL failures.

mod common;

use common::{render, schema};
use kplane_schema::CompiledSchema;
use serde_json::{json, Value};

/// A root object schema with the given properties (upstream's tests put their fields at
/// the root, beside apiVersion, kind and metadata).
fn root(props: Value) -> CompiledSchema {
    schema(json!({"type": "object", "properties": props}))
}

/// The errors and warnings of updating `old` to `new`.
fn update(s: &CompiledSchema, old: &Value, new: &Value) -> (Vec<String>, Vec<String>) {
    let v = s.validate_update(new, old);
    (render(&v.errors), v.warnings)
}

/// The errors of updating `old` to `new`, which must raise no warnings.
fn errors(s: &CompiledSchema, old: &Value, new: &Value) -> Vec<String> {
    let (errs, warnings) = update(s, old, new);
    assert_eq!(warnings, Vec::<String>::new(), "{errs:?}");
    errs
}

const NONE: Vec<String> = Vec::new();

#[test]
fn minimum_and_maximum_ratchet_unchanged_numbers() {
    let s = root(json!({
        "hasMinimum": {"type": "number", "minimum": 10},
        "hasMaximum": {"type": "number", "maximum": 20},
        "noRestrictions": {"type": "integer"},
    }));
    let old = json!({"hasMinimum": 0, "hasMaximum": 1000});
    let added = json!({"hasMinimum": 0, "hasMaximum": 1000, "noRestrictions": 50});
    assert_eq!(errors(&s, &old, &added), NONE);
    assert_eq!(
        errors(&s, &added, &json!({"hasMinimum": 5, "hasMaximum": 1000})),
        vec!["hasMinimum: Invalid value: 5: hasMinimum in body should be greater than or equal to 10"]
    );
    assert_eq!(
        errors(&s, &added, &json!({"hasMinimum": 5, "hasMaximum": 21})),
        vec![
            "hasMaximum: Invalid value: 21: hasMaximum in body should be less than or equal to 20",
            "hasMinimum: Invalid value: 5: hasMinimum in body should be greater than or equal to 10",
        ]
    );
    assert_eq!(
        errors(&s, &added, &json!({"hasMinimum": 11, "hasMaximum": 1000})),
        NONE
    );
}

#[test]
fn enum_ratchets_only_the_value_stored_before() {
    let s = root(json!({
        "enumField": {"type": "string", "enum": ["A", "B", "C"]},
        "otherField": {"type": "string"},
    }));
    let old = json!({"enumField": "okValueNowBadValueLater"});
    assert_eq!(errors(&s, &old, &old), NONE);
    let other = json!({"enumField": "okValueNowBadValueLater", "otherField": "anythingGoes"});
    assert_eq!(errors(&s, &old, &other), NONE);
    let unsupported = "enumField: Unsupported value: \"D\": supported values: \"A\", \"B\", \"C\"";
    assert_eq!(
        errors(&s, &other, &json!({"enumField": "D"})),
        vec![unsupported]
    );
    // once valid, going back to the old invalid value is a change like any other
    let valid = json!({"enumField": "A"});
    assert_eq!(errors(&s, &other, &valid), NONE);
    assert_eq!(
        errors(&s, &valid, &old),
        vec!["enumField: Unsupported value: \"okValueNowBadValueLater\": supported values: \"A\", \"B\", \"C\""]
    );
}

#[test]
fn additional_properties_correlate_by_key() {
    let s = root(json!({
        "nums": {"type": "object", "additionalProperties": {"type": "number", "minimum": 1000}},
    }));
    let old = json!({"nums": {"num1": 1, "num2": 1000000}});
    assert_eq!(
        errors(&s, &old, &json!({"nums": {"num1": 1, "num2": 2000}})),
        NONE
    );
    assert_eq!(
        errors(&s, &old, &json!({"nums": {"num1": 2, "num2": 2000}})),
        vec!["nums.num1: Invalid value: 2: nums.num1 in body should be greater than or equal to 1000"]
    );
}

#[test]
fn min_and_max_properties_ratchet_an_unchanged_object() {
    let s = root(json!({
        "restricted": {"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}},
        "unrestricted": {"type": "object", "additionalProperties": {"type": "string"}},
    }));
    let old = json!({"restricted": {"key1": "hi", "key2": "there"}});
    let sibling =
        json!({"restricted": {"key1": "hi", "key2": "there"}, "unrestricted": {"key1": "yo"}});
    assert_eq!(errors(&s, &old, &sibling), NONE);
    assert_eq!(
        errors(
            &s,
            &sibling,
            &json!({"restricted": {"key1": "changed", "key2": "there"}, "unrestricted": {"key1": "yo"}})
        ),
        vec!["restricted: Too many: 2: must have at most 1 item"]
    );
}

#[test]
fn an_unchanged_atomic_list_ratchets_its_length_and_items() {
    let s = root(json!({
        "field": {"type": "string"},
        "array": {"type": "array", "minItems": 10, "items": {"type": "string", "maxLength": 5}},
    }));
    let old = json!({"array": ["value1", "value2", "value3"]});
    let with_field = json!({"array": ["value1", "value2", "value3"], "field": "value"});
    assert_eq!(errors(&s, &old, &with_field), NONE);
    // any change to an atomic list validates all of it: its items do not correlate
    assert_eq!(
        errors(
            &s,
            &with_field,
            &json!({"array": ["value2", "value2", "value3"]})
        ),
        vec![
            "array[0]: Too long: may not be more than 5 bytes",
            "array[1]: Too long: may not be more than 5 bytes",
            "array[2]: Too long: may not be more than 5 bytes",
            "array: Invalid value: 3: array in body should have at least 10 items",
        ]
    );
    let max = root(json!({"array": {"type": "array", "maxItems": 1, "items": {"type": "string"}}}));
    assert_eq!(errors(&max, &old, &old), NONE);
    assert_eq!(
        errors(
            &max,
            &old,
            &json!({"array": ["value1", "value2", "value3", "value4"]})
        ),
        vec!["array: Too many: 4: must have at most 1 item"]
    );
}

#[test]
fn strings_ratchet_length_pattern_and_format_until_changed() {
    let s = root(json!({
        "short": {"type": "string", "maxLength": 3},
        "long": {"type": "string", "minLength": 10},
        "pattern": {"type": "string", "pattern": "^[a-z]+$"},
        "field": {"type": "string", "format": "date-time"},
        "otherField": {"type": "string"},
    }));
    let old = json!({"short": "toolong", "long": "short", "pattern": "Upper", "field": "doesnt abide any format"});
    let mut new = old.clone();
    new["otherField"] = json!("value2");
    assert_eq!(errors(&s, &old, &new), NONE);
    let changed = json!({"short": "toolonger", "long": "shorter", "pattern": "Upper1", "field": "still no format", "otherField": "value2"});
    assert_eq!(
        errors(&s, &new, &changed),
        vec![
            "field: Invalid value: \"still no format\": field in body must be of type date-time: \"still no format\"",
            "long: Invalid value: \"shorter\": long in body should be at least 10 chars long",
            "pattern: Invalid value: \"Upper1\": pattern in body should match '^[a-z]+$'",
            "short: Too long: may not be more than 3 bytes",
        ]
    );
    // a valid value, then back to the one stored first: validated again
    let valid = json!({"field": "2018-11-13T20:20:39+00:00"});
    assert_eq!(errors(&s, &old, &valid), NONE);
    assert_eq!(
        errors(&s, &valid, &json!({"field": "doesnt abide any format"})),
        vec!["field: Invalid value: \"doesnt abide any format\": field in body must be of type date-time: \"doesnt abide any format\""]
    );
}

/// `field`: a map list keyed by name and port, its items tightened after they were stored.
fn ports(list_checks: Value, port: Value) -> CompiledSchema {
    let mut list = json!({"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name", "port"],
        "items": {"type": "object", "required": ["name", "port"], "properties": {
            "name": {"type": "string"}, "port": port, "field": {"type": "string"}}}});
    if let (Some(l), Some(c)) = (list.as_object_mut(), list_checks.as_object()) {
        l.extend(c.clone());
    }
    root(json!({"field": list}))
}

fn item(name: &str, port: u32, field: &str) -> Value {
    json!({"name": name, "port": port, "field": field})
}

#[test]
fn map_list_reordering_keeps_invalid_items_and_keys() {
    let old = json!({"field": [item("nginx", 443, "value"), item("etcd", 2379, "value"), item("kube-apiserver", 6443, "value")]});
    let reordered = json!({"field": [item("kube-apiserver", 6443, "value"), item("nginx", 443, "value"), item("etcd", 2379, "value")]});
    // maxItems exceeded: a map list is unchanged when its items are, in any order
    let s = ports(json!({"maxItems": 2}), json!({"type": "number"}));
    assert_eq!(errors(&s, &old, &reordered), NONE);
    let grown = json!({"field": [item("kube-apiserver", 6443, "value"), item("nginx", 443, "value"),
        item("etcd", 2379, "value"), item("dev", 8080, "value")]});
    assert_eq!(
        errors(&s, &reordered, &grown),
        vec!["field: Too many: 4: must have at most 2 items"]
    );
    // odd ports: the items correlate by their keys, so an item whose sibling field changed
    // keeps its invalid key, and an added valid item is fine
    let s = ports(json!({}), json!({"type": "number", "multipleOf": 2}));
    assert_eq!(errors(&s, &reordered, &old), NONE);
    let changed = json!({"field": [item("nginx", 443, "value"), item("etcd", 2379, "value"),
        item("kube-apiserver", 6443, "this is a changed value for an an invalid but grandfathered key"), item("dev", 8080, "value")]});
    assert_eq!(errors(&s, &old, &changed), NONE);
    // a new item with an invalid key is refused
    let added = json!({"field": [item("nginx", 443, "value"), item("new", 7, "value")]});
    assert_eq!(
        errors(&s, &old, &added),
        vec!["field[1].port: Invalid value: 7: field[1].port in body should be a multiple of 2"]
    );
}

#[test]
fn atomic_list_items_do_not_correlate_by_index() {
    let s = root(json!({
        "values": {"type": "array", "items": {"type": "object", "additionalProperties": {"type": "string", "minLength": 6}}},
        "otherField": {"type": "string"},
    }));
    let old = json!({"values": [{"name": "1", "key": "value"}, {"name": "2", "key": "value"}]});
    let too_short = |i: usize, k: &str, v: &str| {
        format!("values[{i}].{k}: Invalid value: \"{v}\": values[{i}].{k} in body should be at least 6 chars long")
    };
    assert_eq!(
        errors(
            &s,
            &old,
            &json!({"values": [{"name": "1", "key": "value"}, {"name": "2", "key": "bad"}]})
        ),
        vec![
            too_short(0, "key", "value"),
            too_short(0, "name", "1"),
            too_short(1, "key", "bad"),
            too_short(1, "name", "2"),
        ]
    );
    let other = json!({"values": [{"name": "1", "key": "value"}, {"name": "2", "key": "value"}], "otherField": "hello world"});
    assert_eq!(errors(&s, &old, &other), NONE);
    // a valid key added to one element: every element is validated again
    let added = json!({"values": [{"name": "1", "key": "value"}, {"name": "2", "key": "value", "key2": "valid value"}]});
    assert_eq!(errors(&s, &old, &added).len(), 4);
    let reordered =
        json!({"values": [{"name": "2", "key": "value"}, {"name": "1", "key": "value"}]});
    assert_eq!(errors(&s, &old, &reordered).len(), 4);
}

#[test]
fn set_items_do_not_correlate() {
    let s = root(json!({
        "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string", "maxLength": 3}},
    }));
    let old = json!({"tags": ["toolong", "ok"]});
    assert_eq!(errors(&s, &old, &old), NONE);
    // adding an item changes the set: its unchanged invalid item is refused again
    assert_eq!(
        errors(&s, &old, &json!({"tags": ["toolong", "ok", "new"]})),
        vec!["tags[0]: Too long: may not be more than 3 bytes"]
    );
    // reordered: not deep-equal, so not unchanged
    assert_eq!(
        errors(&s, &old, &json!({"tags": ["ok", "toolong"]})),
        vec!["tags[1]: Too long: may not be more than 3 bytes"]
    );
}

#[test]
fn list_type_duplicates_are_ratcheted_only_while_the_old_object_has_some() {
    let s = root(json!({
        "a": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        "b": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
    }));
    let old = json!({"a": ["x", "x"]});
    // upstream drops every list-type error of the new object when the old one has any
    assert_eq!(
        errors(&s, &old, &json!({"a": ["x", "x"], "b": ["y", "y"]})),
        NONE
    );
    assert_eq!(
        errors(&s, &json!({"a": ["x"]}), &json!({"a": ["x", "x"]})),
        vec!["a[1]: Duplicate value: \"x\""]
    );
}

#[test]
fn unchanged_values_are_compared_with_the_old_object_as_defaulted() {
    let s = root(json!({
        "items": {"type": "array", "maxItems": 1, "items": {"type": "object", "properties": {
            "a": {"type": "string"}, "b": {"type": "string", "default": "x"}}}},
        "n": {"type": "integer"},
    }));
    // stored before `b` had a default: read back with it, so the list is unchanged
    let old = json!({"items": [{"a": "1"}, {"a": "2"}], "n": 1});
    let new = json!({"items": [{"a": "1", "b": "x"}, {"a": "2", "b": "x"}], "n": 2});
    assert_eq!(errors(&s, &old, &new), NONE);
}

#[test]
fn api_version_and_kind_of_the_resource_are_never_ratcheted() {
    let s = root(json!({"kind": {"type": "string", "maxLength": 3}, "n": {"type": "integer"}}));
    let old = json!({"kind": "Gadget", "n": 1});
    assert_eq!(
        errors(&s, &old, &json!({"kind": "Gadget", "n": 2})),
        vec!["kind: Too long: may not be more than 3 bytes"]
    );
}

#[test]
fn cel_failures_on_unchanged_values_are_warnings() {
    let s = root(json!({
        "field": {"type": "object", "additionalProperties": {"type": "object", "properties": {
            "stringField": {"type": "string", "x-kubernetes-validations": [
                {"rule": "self.startsWith('k8s')", "message": "strings must have k8s prefix"},
                {"rule": "size(self) % 2 == 1", "message": "strings must have odd length"}]},
            "intField": {"type": "number"}}}},
    }));
    let prefix = |k: &str| {
        format!("field[{k}].stringField: Invalid value: \"string\": strings must have k8s prefix")
    };
    let odd = |k: &str| {
        format!("field[{k}].stringField: Invalid value: \"string\": strings must have odd length")
    };
    let old = json!({"field": {
        "object1": {"stringField": "a string", "intField": 5},
        "object4": {"stringField": "k8s third string", "intField": 7}}});
    // siblings changed, the failing strings not: ratcheted, with upstream's warnings
    let siblings = json!({"field": {
        "object1": {"stringField": "a string", "intField": 1000},
        "object4": {"stringField": "k8s third string", "intField": 7000}}});
    let (errs, warnings) = update(&s, &old, &siblings);
    assert_eq!(errs, NONE);
    assert_eq!(
        warnings,
        vec![prefix("object1"), odd("object1"), odd("object4")]
    );
    // values swapped between keys: changed, refused
    let swapped = json!({"field": {
        "object1": {"stringField": "k8s third string", "intField": 1000},
        "object4": {"stringField": "a string", "intField": 7000}}});
    let (errs, warnings) = update(&s, &old, &swapped);
    assert_eq!(
        errs,
        vec![odd("object1"), prefix("object4"), odd("object4")]
    );
    assert_eq!(warnings, NONE);
}

#[test]
fn cel_failures_inside_an_atomic_list_ratchet_with_the_whole_list() {
    let s = root(json!({
        "tags": {"type": "array", "items": {"type": "string", "x-kubernetes-validations": [{"rule": "self != 'bad'"}]}},
        "n": {"type": "integer"},
    }));
    let failed =
        |i: usize| format!("tags[{i}]: Invalid value: \"string\": failed rule: self != 'bad'");
    let old = json!({"tags": ["bad", "ok"], "n": 1});
    let (errs, warnings) = update(&s, &old, &json!({"tags": ["bad", "ok"], "n": 2}));
    assert_eq!((errs, warnings), (NONE, vec![failed(0)]));
    let (errs, warnings) = update(&s, &old, &json!({"tags": ["bad", "ok", "new"], "n": 1}));
    assert_eq!((errs, warnings), (vec![failed(0)], NONE));
}

#[test]
fn transition_rules_are_never_ratcheted() {
    let s = root(json!({
        "myStringField": {"type": "string", "x-kubernetes-validations": [
            {"rule": "oldSelf != 'myStringValue' || self == 'validstring'"}]},
        "myOtherField": {"type": "string"},
    }));
    let old = json!({"myStringField": "myStringValue", "myOtherField": "myOtherField"});
    let new = json!({"myStringField": "myStringValue", "myOtherField": "myNewOtherField"});
    assert_eq!(
        errors(&s, &old, &new),
        vec!["myStringField: Invalid value: \"string\": failed rule: oldSelf != 'myStringValue' || self == 'validstring'"]
    );
    let fixed = json!({"myStringField": "validstring", "myOtherField": "myNewOtherField"});
    assert_eq!(errors(&s, &old, &fixed), NONE);
}

#[test]
fn optional_old_self_rules_run_on_create_and_are_not_ratcheted() {
    let s = root(
        json!({"field": {"type": "string", "x-kubernetes-validations": [
        {"rule": "!oldSelf.hasValue()", "message": "oldSelf must be null", "optionalOldSelf": true}]}}),
    );
    let created = json!({"field": "value"});
    assert_eq!(render(&s.validate(&created, None)), NONE);
    let failed = vec!["field: Invalid value: \"string\": oldSelf must be null"];
    assert_eq!(errors(&s, &created, &json!({"field": "value2"})), failed);
    assert_eq!(errors(&s, &created, &created), failed);
}

#[test]
fn cel_evaluation_errors_are_never_ratcheted() {
    let s = root(
        json!({"obj": {"type": "object", "properties": {"a": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": "self.a == 1"}]}, "n": {"type": "integer"}}),
    );
    let old = json!({"obj": {}, "n": 1});
    assert_eq!(
        errors(&s, &old, &json!({"obj": {}, "n": 2})),
        vec!["obj: Invalid value: \"object\": no such key: a evaluating rule: self.a == 1"]
    );
}
