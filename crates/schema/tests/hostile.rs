//! Hostile schemas and objects are refused or bounded: nothing hangs or overflows.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::time::{Duration, Instant};

use common::*;
use kplane_schema::{compile, CompileOptions};
use serde_json::{json, Value};

fn nested(depth: usize) -> Value {
    let mut v = json!({"type": "string"});
    for _ in 0..depth {
        v = json!({"type": "object", "properties": {"a": v}});
    }
    json!({"type": "object", "properties": {"spec": v}})
}

#[test]
fn deep_schemas_are_refused() {
    schema(nested(60));
    let errs = compile_errors(nested(200));
    assert_eq!(errs.len(), 1, "{errs:?}");
    assert!(
        errs[0].ends_with("Forbidden: must not be nested more than 64 levels deep"),
        "{errs:?}"
    );
    // far deeper than any stack would allow a naive recursive walk: still a clean refusal
    let mut v = json!({"type": "string"});
    for _ in 0..5000 {
        let mut props = serde_json::Map::new();
        props.insert("a".into(), v);
        let mut m = serde_json::Map::new();
        m.insert("type".into(), json!("object"));
        m.insert("properties".into(), Value::Object(props));
        v = Value::Object(m);
    }
    let errs = compile_errors_ref(&v);
    assert_eq!(errs.len(), 1);
    std::mem::forget(v); // dropping a 5000-deep serde_json value recursively is the test's own problem
}

#[test]
fn huge_enums_and_schemas_are_refused() {
    let values: Vec<Value> = (0..20_000).map(|i| json!(format!("v{i}"))).collect();
    let errs = compile_errors(with_spec(json!({"e": {"type": "string", "enum": values}})));
    assert_eq!(errs, vec![format!("{PREFIX}.properties[spec].properties[e].enum: Too many: 20000: must have at most 10000 items")]);
    // a large-but-allowed enum is a hash lookup
    let values: Vec<Value> = (0..10_000).map(|i| json!(format!("v{i}"))).collect();
    let s = schema(with_spec(json!({"e": {"type": "string", "enum": values}})));
    assert!(errors(&s, &json!({"spec": {"e": "v9999"}})).is_empty());
    let mut props = serde_json::Map::new();
    for i in 0..200 {
        props.insert(format!("p{i}"), json!({"type": "string"}));
    }
    let opts = CompileOptions {
        max_schema_nodes: 100,
        ..CompileOptions::default()
    };
    let errs = compile_errors_with(with_spec(Value::Object(props)), &opts);
    assert_eq!(errs.len(), 1);
    assert!(
        errs[0].contains("schema is too large: more than 100 schema objects"),
        "{errs:?}"
    );
}

#[test]
fn catastrophic_regex_is_linear() {
    let s = schema(with_spec(
        json!({"p": {"type": "string", "pattern": "^(a+)+$"}, "q": {"type": "string", "pattern": "(x+x+)+y"}}),
    ));
    let long = "a".repeat(100_000) + "!";
    let start = Instant::now();
    let errs = errors(&s, &json!({"spec": {"p": long, "q": "x".repeat(100_000)}}));
    assert_eq!(errs.len(), 2);
    assert!(
        start.elapsed() < Duration::from_secs(2),
        "{:?}",
        start.elapsed()
    );
}

#[test]
fn oversized_regexes_are_refused() {
    let errs = compile_errors(with_spec(
        json!({"p": {"type": "string", "pattern": "(\\pL{100}){100}"}}),
    ));
    assert!(errs[0].contains("must be a valid regular expression, but isn't: compiled regular expression exceeds the size limit"), "{errs:?}");
    let errs = compile_errors(with_spec(
        json!({"p": {"type": "string", "pattern": "a".repeat(20_000)}}),
    ));
    assert!(
        errs[0].contains("pattern longer than 16384 bytes"),
        "{errs:?}"
    );
}

#[test]
fn deep_objects_do_not_overflow() {
    let s = schema(json!({"type": "object", "properties": {
        "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "x-kubernetes-validations": [{"rule": "self == self"}]},
        "list": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}},
    }}));
    // built by hand: `json!` would re-serialize the nested value at every level
    let mut deep = json!(1);
    for _ in 0..2000 {
        let mut m = serde_json::Map::new();
        m.insert("x".into(), Value::Array(vec![deep]));
        deep = Value::Object(m);
    }
    let mut top = serde_json::Map::new();
    top.insert("spec".into(), deep);
    top.insert("list".into(), json!([[["too", ["deep"]]]]));
    let mut obj = Value::Object(top);
    let _ = s.prune(&mut obj);
    s.apply_defaults(&mut obj);
    let _ = s.validate(&obj, None);
    let _ = s.validate(&obj, Some(&obj));
    let other = json!({"spec": {"x": 1}});
    let _ = s.validate(&obj, Some(&other));
    std::mem::forget(obj);
}

#[test]
fn hostile_cel_is_refused_or_bounded() {
    let base = |rule: &str| with_spec_rule(rule);
    // unbounded cost
    let errs = compile_errors(base(
        "self.s.all(a, self.s.all(b, self.s.all(c, a + b + c != '')))",
    ));
    assert!(
        errs[0].contains("estimated rule cost exceeds budget"),
        "{errs:?}"
    );
    // deep expressions
    let chain = vec!["1"; 500].join(" + ");
    let errs = compile_errors(base(&format!("{chain} > 0")));
    assert!(
        errs[0].contains("expression nesting exceeds the maximum depth of 100"),
        "{errs:?}"
    );
    let parens = format!("{}true{}", "(".repeat(300), ")".repeat(300));
    let errs = compile_errors(base(&parens));
    assert!(errs[0].contains("compilation failed"), "{errs:?}");
    // over-long rules
    let long = format!("self.s.size() >= 0{}", " && true".repeat(3000));
    let errs = compile_errors(base(&long));
    assert!(
        errs[0].contains("must not be longer than 16384 bytes"),
        "{errs:?}"
    );
    // constructs the interpreter cannot evaluate are refused at compile time
    let errs = compile_errors(base("Foo{a: 1} == Foo{a: 1}"));
    assert!(
        errs[0].contains("undeclared reference to 'Foo'"),
        "{errs:?}"
    );
    let errs = compile_errors(base("lists.range(self.n).size() > 0"));
    assert!(
        errs[0].contains("estimated rule cost exceeds budget"),
        "{errs:?}"
    );
}

fn with_spec_rule(rule: &str) -> Value {
    json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"s": {"type": "array", "items": {"type": "string"}}, "n": {"type": "integer"}},
        "x-kubernetes-validations": [{"rule": rule}]}}})
}

#[test]
fn quadratic_list_building_is_bounded_at_runtime() {
    let opts = CompileOptions {
        max_cel_cost: u64::MAX,
        max_total_cel_cost: u64::MAX,
        ..CompileOptions::default()
    };
    let s = compile(
        &with_spec_rule("self.s.map(a, self.s.map(b, a + b)).size() > 0"),
        PREFIX,
        &opts,
    )
    .unwrap();
    let items: Vec<String> = (0..3000).map(|i| format!("item-{i}")).collect();
    let start = Instant::now();
    let errs = errors(&s, &json!({"spec": {"s": items}}));
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
    assert_eq!(errs.len(), 1);
    assert!(errs[0].contains("actual cost limit exceeded"), "{errs:?}");
}

#[test]
fn deepest_allowed_rules_fit_the_evaluation_stack() {
    // The deepest expression compile() accepts, over the deepest value CEL converts, evaluated
    // inline on a thread with just the stack validate() requires before it switches stacks.
    let chain = vec!["self.n"; 95].join(" + ");
    let s = schema(
        json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"n": {"type": "integer"}, "any": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
        "x-kubernetes-validations": [{"rule": format!("{chain} >= 0")}, {"rule": "self.any == self.any"}]}}}),
    );
    let mut deep = json!(1);
    for _ in 0..300 {
        let mut m = serde_json::Map::new();
        m.insert("x".into(), Value::Array(vec![deep]));
        deep = Value::Object(m);
    }
    let mut spec = serde_json::Map::new();
    spec.insert("n".into(), json!(1));
    spec.insert("any".into(), deep);
    let mut top = serde_json::Map::new();
    top.insert("spec".into(), Value::Object(spec));
    let obj = Value::Object(top);
    let stack = if cfg!(debug_assertions) {
        (16 << 20) + (1 << 20)
    } else {
        (2 << 20) + (1 << 20)
    };
    let errs = std::thread::Builder::new()
        .stack_size(stack)
        .spawn(move || {
            let errs = render(&s.validate(&obj, None));
            std::mem::forget(obj);
            errs
        })
        .unwrap()
        .join()
        .unwrap();
    assert!(errs.is_empty(), "{errs:?}");
}
