//! The static CEL cost limits are applied per request to one shared compiled schema:
//! kube-apiserver checks estimated costs when a CRD is written, skips the per-rule limit
//! when an update leaves a version's schema unchanged (the per-CRD total still applies),
//! and never checks them when it serves a CRD. `SchemaCache` compiles a schema once without
//! the limits and answers each request as `compile` would under that request's options.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::sync::Arc;

use common::*;
use kplane_schema::{compile, CompileOptions, SchemaCache};
use serde_json::{json, Value};

const TAIL: &str = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";

/// Options of an update that leaves the schema unchanged: no per-rule limit.
fn unchanged_schema() -> CompileOptions {
    CompileOptions {
        max_cel_cost: u64::MAX,
        ..CompileOptions::default()
    }
}

/// A list of `max` strings whose items must not be empty (`self != ''` costs 1 per run).
fn non_empty_list(max: u64) -> Value {
    json!({"type": "array", "maxItems": max, "items": {"type": "string", "maxLength": 2,
        "x-kubernetes-validations": [{"rule": "self != ''", "message": "must not be empty"}]}})
}

fn root(props: Value) -> Value {
    json!({"type": "object", "properties": {"spec": {"type": "object", "properties": props}}})
}

fn rule_path(prefix: &str, list: &str) -> String {
    format!("{prefix}.properties[spec].properties[{list}].items.x-kubernetes-validations[0].rule")
}

/// `compile`'s errors under `opts`, rendered.
fn compile_errors_under(schema: &Value, prefix: &str, opts: &CompileOptions) -> Vec<String> {
    match compile(schema, prefix, opts) {
        Ok(_) => Vec::new(),
        Err(e) => render(&e),
    }
}

#[test]
fn one_compiled_schema_answers_each_request_under_its_own_limits() {
    let cache = SchemaCache::new();
    // 10,000,001 runs of cost 1: over the per-rule limit, within the total
    let schema = root(json!({"l": non_empty_list(10_000_001)}));
    let over = format!(
        "{}: Forbidden: estimated rule cost exceeds budget by factor of 1.000000x {TAIL}",
        rule_path(PREFIX, "l")
    );

    // written (create, or an update that changes the schema): refused as `compile` refuses
    let refused = cache
        .get_or_compile(&schema, PREFIX, &CompileOptions::default())
        .unwrap_err();
    assert_eq!(render(&refused), vec![over.clone()]);
    assert_eq!(
        compile_errors_under(&schema, PREFIX, &CompileOptions::default()),
        vec![over]
    );

    // an update that leaves the schema unchanged, and serving: accepted, one shared schema
    let unchanged = cache
        .get_or_compile(&schema, PREFIX, &unchanged_schema())
        .unwrap();
    let served = cache
        .get_or_compile(
            &schema,
            "openAPIV3Schema",
            &CompileOptions::default().without_cost_limits(),
        )
        .unwrap();
    assert!(Arc::ptr_eq(&unchanged, &served));
    assert_eq!(cache.len(), 1);

    // the shared schema reports the limits of whoever asks, under the asker's prefix
    assert_eq!(
        render(&served.cost_limit_errors(
            "spec.validation.openAPIV3Schema",
            &CompileOptions::default()
        )),
        vec![format!(
            "{}: Forbidden: estimated rule cost exceeds budget by factor of 1.000000x {TAIL}",
            rule_path("spec.validation.openAPIV3Schema", "l")
        )]
    );
    assert!(served
        .cost_limit_errors(PREFIX, &unchanged_schema())
        .is_empty());

    // the rule over the static limit is compiled and enforced (runtime budgets still apply)
    assert_eq!(
        errors(&served, &json!({"spec": {"l": ["a", ""]}})),
        vec!["spec.l[1]: Invalid value: \"string\": must not be empty".to_string()]
    );
    assert!(errors(&served, &json!({"spec": {"l": ["a", "b"]}})).is_empty());
}

#[test]
fn an_unchanged_schema_is_still_held_to_the_per_crd_total() {
    // eleven lists of 10,000,001 runs of cost 1: each rule over the per-rule limit, and
    // together 110,000,011, over the total of 100,000,000
    let mut props = serde_json::Map::new();
    for k in 0..11 {
        props.insert(format!("p{k:02}"), non_empty_list(10_000_001));
    }
    let schema = root(Value::Object(props));
    let contributed = |list: &str| {
        format!("{}: Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema", rule_path(PREFIX, list))
    };
    let total = format!("{PREFIX}: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds budget by factor of 1.100000x {TAIL}");
    // as kube-apiserver with suppressPerExpressionCost: only the total and its four
    // largest contributors (equal costs: the first four in schema order)
    let want = vec![
        contributed("p00"),
        contributed("p01"),
        contributed("p02"),
        contributed("p03"),
        total,
    ];
    let cache = SchemaCache::new();
    let errs = cache
        .get_or_compile(&schema, PREFIX, &unchanged_schema())
        .unwrap_err();
    assert_eq!(render(&errs), want);
    assert_eq!(
        compile_errors_under(&schema, PREFIX, &unchanged_schema()),
        want
    );
    // with both limits: eleven per-rule errors first, then the same total
    let written = render(
        &cache
            .get_or_compile(&schema, PREFIX, &CompileOptions::default())
            .unwrap_err(),
    );
    assert_eq!(written.len(), 11 + 5, "{written:#?}");
    assert_eq!(
        written,
        compile_errors_under(&schema, PREFIX, &CompileOptions::default())
    );
    // served: no static limit at all
    assert!(cache
        .get_or_compile(
            &schema,
            PREFIX,
            &CompileOptions::default().without_cost_limits()
        )
        .is_ok());
}

#[test]
fn a_schema_refused_for_other_reasons_reports_what_compile_reports() {
    let cache = SchemaCache::new();
    // an over-budget rule beside a rule that does not compile: both reported, in order
    let broken = root(json!({
        "l": non_empty_list(10_000_001),
        "s": {"type": "string", "x-kubernetes-validations": [{"rule": "self.nope()"}]},
    }));
    for opts in [
        CompileOptions::default(),
        unchanged_schema(),
        CompileOptions::default().without_cost_limits(),
    ] {
        let got = render(&cache.get_or_compile(&broken, PREFIX, &opts).unwrap_err());
        assert_eq!(
            got,
            compile_errors_under(&broken, PREFIX, &opts),
            "{opts:?}"
        );
    }
    let with_limits = render(
        &cache
            .get_or_compile(&broken, PREFIX, &CompileOptions::default())
            .unwrap_err(),
    );
    assert_eq!(with_limits.len(), 2, "{with_limits:#?}");
    assert!(with_limits[0].contains("estimated rule cost exceeds budget"));
    assert!(with_limits[1].contains("compilation failed"));

    // an over-budget rule whose item default breaks it: under the limits, the cost error
    // alone (defaults are checked only once the rules compile); without them, the default
    let mut defaulted = non_empty_list(10_000_001);
    defaulted["items"]["default"] = json!("");
    let schema = root(json!({"l": defaulted}));
    let limited = render(
        &cache
            .get_or_compile(&schema, PREFIX, &CompileOptions::default())
            .unwrap_err(),
    );
    assert_eq!(
        limited,
        compile_errors_under(&schema, PREFIX, &CompileOptions::default())
    );
    assert!(
        limited.len() == 1 && limited[0].contains("estimated rule cost exceeds budget"),
        "{limited:#?}"
    );
    let unlimited = CompileOptions::default().without_cost_limits();
    let defaults = render(
        &cache
            .get_or_compile(&schema, PREFIX, &unlimited)
            .unwrap_err(),
    );
    assert_eq!(defaults, compile_errors_under(&schema, PREFIX, &unlimited));
    assert!(
        defaults.iter().all(|e| !e.contains("cost")),
        "{defaults:#?}"
    );
    assert!(cache.is_empty(), "refused schemas are not cached");
}
