//! The runtime cost of CEL rules, against kube-apiserver 1.32: the actual cost cel-go's
//! `CostTracker` reports under Kubernetes' program options (constant lists folded,
//! presence tests free, the Kubernetes library's `CallCost`), the per-call limit
//! (`PerCallLimit`) and the per-validation budget (`RuntimeCELCostBudget`) with
//! `validation.go`'s messages. Figures marked "upstream" are expectations of
//! apiextensions' `validation_test.go` (`expectedCost`, remaining budgets); the others
//! follow cel-go's rules step by step, as each case says.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use common::*;
use kplane_schema::{compile, CompileOptions};
use serde_json::{json, Value};

const BUDGET_MSG: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// `spec` with properties `props` and the rules `rules`.
fn spec_rules(props: Value, rules: Value) -> Value {
    json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": props, "x-kubernetes-validations": rules}}})
}

/// Validation errors under `opts`' runtime limits (the static estimate is not under test).
fn errors_under(schema: &Value, obj: &Value, opts: &CompileOptions) -> Vec<String> {
    let s = compile(schema, PREFIX, &opts.without_cost_limits()).unwrap();
    render(&s.validate(obj, None))
}

/// The smallest runtime budget under which validating `obj` does not run out: the cost.
fn actual_cost(schema: &Value, obj: &Value) -> u64 {
    let fits = |budget: u64| {
        let opts = CompileOptions {
            cel_runtime_budget: budget,
            ..CompileOptions::default()
        };
        !errors_under(schema, obj, &opts)
            .iter()
            .any(|e| e.contains("running out of cost budget"))
    };
    let (mut lo, mut hi) = (0u64, 10_000_000u64);
    assert!(fits(hi), "does not fit the default budget");
    while lo < hi {
        let mid = (lo + hi) / 2;
        if fits(mid) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    hi
}

fn rule_cost(rule: &str, props: Value, spec: Value) -> u64 {
    actual_cost(
        &spec_rules(props, json!([{"rule": rule}])),
        &json!({"spec": spec}),
    )
}

#[test]
fn kubernetes_library_calls_cost_what_upstream_expects() {
    let props = json!({"val1": {"type": "string"}, "val2": {"type": "string"}});
    let spec = json!({"val1": "20", "val2": "200M"});
    // upstream: the constant list is folded (0), one traversal of 4 ints
    assert_eq!(
        rule_cost("[1,2,3,4].isSorted()", props.clone(), spec.clone()),
        4
    );
    // upstream: url() ceil(23 * 0.1) = 3, getHostname 1, != on the empty host 0
    assert_eq!(
        rule_cost(
            "url('https:://kubernetes.io/').getHostname() != 'test'",
            props.clone(),
            spec.clone()
        ),
        4
    );
    // upstream: split ceil(15 * 0.2) = 3, size 1, > 1
    assert_eq!(
        rule_cost(
            "size('abc 123 def 123'.split(' ')) > 0",
            props.clone(),
            spec.clone()
        ),
        5
    );
    // upstream: join of a folded list, ceil(22 * 0.2) = 5 for the joined string, size 1, > 1
    assert_eq!(
        rule_cost(
            "size(['aa', 'bb', 'cc', 'd', 'e', 'f', 'g', 'h', 'i', 'j'].join(' ')) > 0",
            props,
            spec
        ),
        7
    );
}

#[test]
fn string_functions_cost_a_tenth_of_their_input() {
    let p = json!({"s": {"type": "string"}});
    let s = json!({"s": "x"});
    // library cost_test.go: 21 characters, ceil(2.1) = 3 each, == ceil(min(21, 21) * 0.1) = 3
    let r = "'ABCDEFGHIJ abcdefghij'.lowerAscii() == 'abcdefghij ABCDEFGHIJ'.lowerAscii()";
    assert_eq!(rule_cost(r, p.clone(), s.clone()), 9);
    // replace: ceil(15 * 0.2) = 3; the comparison with a non-empty literal 2
    assert_eq!(
        rule_cost(
            "'abc 123 def 123'.replace('123', '456') != ''",
            p.clone(),
            s.clone()
        ),
        3
    );
    // substring: ceil(1.5) = 2, trim: ceil(1.9) = 2; != '' costs 0
    assert_eq!(
        rule_cost("'abc 123 def 123'.substring(5) != ''", p.clone(), s.clone()),
        2
    );
    assert_eq!(
        rule_cost("'  abc 123 def 123  '.trim() != ''", p.clone(), s.clone()),
        2
    );
    // find: ceil((1 + 15) * 0.1) * ceil(3 * 0.25) = 2
    assert_eq!(rule_cost("'abc 123 def 123'.find('123') != ''", p, s), 2);
}

#[test]
fn fields_and_variables_cost_one_each() {
    let p = json!({"a": {"type": "object", "properties": {"b": {"type": "integer"}}},
                   "s": {"type": "string"}});
    let spec = json!({"a": {"b": 1}, "s": "abcdefghijk"});
    // self 1, .a 1, .b 1, > on ints 1
    assert_eq!(rule_cost("self.a.b > 0", p.clone(), spec.clone()), 4);
    // presence tests are free (PresenceTestHasCost(false)): only the .a qualifier is charged
    assert_eq!(rule_cost("has(self.a.b)", p.clone(), spec.clone()), 1);
    // self.s (2) == literal of 3 characters: ceil(min(11, 3) * 0.1) = 1
    assert_eq!(rule_cost("self.s == 'abc'", p.clone(), spec.clone()), 3);
    // startsWith: ceil(11 * 0.1) = 2
    assert_eq!(
        rule_cost("self.s.startsWith('a')", p.clone(), spec.clone()),
        4
    );
    // `x in <constant list>` is a set lookup: free
    assert_eq!(
        rule_cost("self.s in ['a', 'b']", p.clone(), spec.clone()),
        2
    );
    // a list literal with a variable element is built: 10 plus its elements
    assert_eq!(
        rule_cost("self.s in [self.s]", p.clone(), spec.clone()),
        2 + 10 + 2 + 1
    );
    // a ternary costs its condition and the branch taken; an attribute branch its qualifiers
    assert_eq!(
        rule_cost("(self.a.b > 0 ? self.a.b : 0) == 1", p, spec),
        4 + 2 + 1
    );
}

#[test]
fn comprehensions_cost_each_iteration() {
    let p = json!({"l": {"type": "array", "items": {"type": "integer"}}});
    // range self.l 2, result 1; per item: condition @not_strictly_false(@result) 2,
    // step @result (1) && x > 0 (2) = 3
    for n in [0u64, 1, 3, 10] {
        let items: Vec<u64> = (1..=n).collect();
        assert_eq!(
            rule_cost("self.l.all(x, x > 0)", p.clone(), json!({"l": items})),
            3 + 5 * n,
            "{n} items"
        );
    }
    // exists: condition @not_strictly_false(!@result) 3, step @result || x < 0: 1 + 2
    let items: Vec<u64> = (1..=4).collect();
    assert_eq!(
        rule_cost("!self.l.exists(x, x < 0)", p.clone(), json!({"l": items})),
        1 + 3 + 6 * 4
    );
    // map: condition `true` free; step @result (1) + [x * 2] (10 + 2) and + on lists 1
    let items: Vec<u64> = (1..=4).collect();
    assert_eq!(
        rule_cost("size(self.l.map(x, x * 2)) == 4", p, json!({"l": items})),
        3 + 14 * 4 + 2
    );
}

/// The CRD of e2e `crd_validation_rules.go`, with the object of "MUST fail create of a
/// custom resource that exceeds the runtime cost limit".
fn e2e_schema() -> Value {
    spec_rules(
        json!({"x": {"type": "integer"}, "y": {"type": "integer"},
               "firstArray": {"type": "array", "maxItems": 1000, "items": {"type": "integer"}},
               "secondArray": {"type": "array", "maxItems": 1000, "items": {"type": "integer"}},
               "largeArray": {"type": "array", "maxItems": 725, "items": {"type": "integer"}}}),
        json!([{"rule": "self.x + self.y > 0"},
               {"rule": "self.firstArray.isSorted() && self.secondArray.isSorted() && ((self.firstArray.sum() + self.secondArray.sum()) % 2 == 0)"},
               {"rule": "self.largeArray.all(x, self.largeArray.all(y, y == x))"}]),
    )
}

#[test]
fn the_e2e_object_exceeds_the_per_call_limit() {
    let s = schema(e2e_schema());
    let errs = errors(&s, &json!({"spec": {"largeArray": vec![20; 725]}}));
    // the absent fields fail the first two rules as in kube-apiserver (cel-go's missing
    // key error), and the third is cancelled by the per-call limit: 725 outer iterations of
    // 2 + 1 + (3 + 725 * 6) each cost ~3.2 million
    assert_eq!(
        errs,
        vec![
            "spec: Invalid value: \"object\": no such key: x evaluating rule: self.x + self.y > 0",
            "spec: Invalid value: \"object\": no such key: firstArray evaluating rule: self.firstArray.isSorted() && self.secondArray.isSorted() && ((self.firstArray.sum() + self.secondArray.sum()) % 2 == 0)",
            "spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.largeArray.all(x, self.largeArray.all(y, y == x))",
        ]
    );
    // the spec's valid object passes
    let ok = json!({"spec": {"x": 1, "y": 0, "firstArray": [1, 2], "secondArray": [3, 4], "largeArray": vec![20; 100]}});
    assert_eq!(errors(&s, &ok), Vec::<String>::new());
}

#[test]
fn the_per_call_limit_and_the_budget_at_their_boundaries() {
    let v = spec_rules(
        json!({"l": {"type": "array", "items": {"type": "integer"}}}),
        json!([{"rule": "self.l.all(x, x > 0)"}]),
    );
    let obj = json!({"spec": {"l": [1, 2, 3]}}); // cost 18
    let with = |per_call: u64, budget: u64| {
        errors_under(
            &v,
            &obj,
            &CompileOptions {
                cel_per_call_limit: per_call,
                cel_runtime_budget: budget,
                ..CompileOptions::default()
            },
        )
    };
    assert_eq!(with(18, 18), Vec::<String>::new());
    assert_eq!(with(17, 100), vec!["spec: Invalid value: \"object\": 'operation cancelled: actual cost limit exceeded': no further validation rules will be run due to call cost exceeds limit for rule: self.l.all(x, x > 0)"]);
    assert_eq!(
        with(18, 17),
        vec![format!("spec: Invalid value: \"object\": {BUDGET_MSG}")]
    );
    // cancelled, and the cost so far is more than the budget left: the budget message
    assert_eq!(
        with(17, 10),
        vec![format!("spec: Invalid value: \"object\": {BUDGET_MSG}")]
    );
}

#[test]
fn message_expressions_are_charged_to_the_budget() {
    let v = json!({"type": "object", "properties": {"spec": {"type": "object",
        "properties": {"str": {"type": "string"}},
        "x-kubernetes-validations": [{"rule": "false", "messageExpression": "'str1 ' + self.str"}]}}});
    let obj = json!({"spec": {"str": "a string"}});
    // upstream: 50 - 46: self.str 2, + on strings ceil((5 + 8) * 0.1) = 2; `false` is free
    assert_eq!(actual_cost(&v, &obj), 4);
    let errs = errors_under(
        &v,
        &obj,
        &CompileOptions {
            cel_runtime_budget: 3,
            ..CompileOptions::default()
        },
    );
    assert_eq!(errs, vec!["spec: Invalid value: \"object\": messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run"]);
    let errs = errors_under(
        &v,
        &obj,
        &CompileOptions {
            cel_per_call_limit: 3,
            ..CompileOptions::default()
        },
    );
    assert_eq!(errs, vec!["spec: Invalid value: \"object\": no further validation rules will be run due to call cost exceeds limit for messageExpression: \"'str1 ' + self.str\""]);
}
