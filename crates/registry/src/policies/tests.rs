//! Defaults, validation and evaluation of policies (matching: `matching.rs`).

use kplane_types::StatusReason;
use serde_json::{json, Value};

use super::config::{default_binding, default_policy, validate_binding, validate_policy};
use super::evaluate::{evaluate, evaluate_all, Decision, Values, MAX_AUDIT_ANNOTATION_VALUE};
use super::model::parse_policy;

fn policy(spec: Value) -> Value {
    let mut p = json!({"metadata": {"name": "limit"}, "spec": spec});
    default_policy(&mut p);
    p
}

fn rules() -> Value {
    json!({"resourceRules": [{"operations": ["CREATE", "UPDATE"], "apiGroups": ["batch"],
                              "apiVersions": ["v1"], "resources": ["jobs"]}]})
}

fn fields(causes: &[kplane_types::Cause]) -> Vec<String> {
    causes
        .iter()
        .map(|c| format!("{}: {}", c.field, c.message))
        .collect()
}

#[test]
fn defaults_are_upstreams() {
    let p = policy(json!({"matchConstraints": rules(), "validations": [{"expression": "true"}]}));
    assert_eq!(p["spec"]["failurePolicy"], "Fail");
    let mc = &p["spec"]["matchConstraints"];
    assert_eq!(mc["matchPolicy"], "Equivalent");
    assert_eq!(mc["namespaceSelector"], json!({}));
    assert_eq!(mc["objectSelector"], json!({}));
    assert_eq!(mc["resourceRules"][0]["scope"], "*");
    assert!(
        validate_policy(&p, None).is_empty(),
        "{:?}",
        validate_policy(&p, None)
    );
    let mut b = json!({"spec": {"policyName": "limit", "validationActions": ["Deny"],
                                "matchResources": {}}});
    default_binding(&mut b);
    assert_eq!(b["spec"]["matchResources"]["matchPolicy"], "Equivalent");
    assert!(validate_binding(&b).is_empty());
}

#[test]
fn policy_validation_compiles_every_expression() {
    let p = policy(json!({
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "matchConstraints": rules(),
        "matchConditions": [{"name": "m", "expression": "object.x"}],
        "variables": [{"name": "v", "expression": "object.spec.parallelism"},
                      {"name": "1bad", "expression": "variables.v"},
                      {"name": "while", "expression": "1"}],
        "validations": [{"expression": "variables.nope > 1"},
                        {"expression": "1 + 1"},
                        {"expression": "params.data.max == '1'", "messageExpression": "1",
                         "reason": "Teapot", "message": "a\nb"}],
        "auditAnnotations": [{"key": "k", "valueExpression": "true"}]}));
    let got = fields(&validate_policy(&p, None));
    let want = [
        "spec.matchConditions[0].expression: Invalid value: \"object.x\": must evaluate to bool but got dyn",
        "spec.variables[1].name: Invalid value: \"1bad\": name is not a valid CEL identifier",
        "spec.variables[2].name: Invalid value: \"while\": name is not a valid CEL identifier",
        "spec.validations[0].expression: Invalid value: \"variables.nope > 1\": compilation failed: ERROR: <input>: undefined field 'nope'",
        "spec.validations[1].expression: Invalid value: \"1 + 1\": must evaluate to bool but got int",
        "spec.validations[2].messageExpression: Invalid value: \"1\": must evaluate to string but got int",
        "spec.validations[2].message: Invalid value: \"a\\nb\": message must not contain line breaks",
        "spec.validations[2].reason: Unsupported value: \"Teapot\": supported values: \"Forbidden\", \"Invalid\", \"RequestEntityTooLarge\", \"Unauthorized\"",
        "spec.auditAnnotations[0].valueExpression: Invalid value: \"true\": must evaluate to one of [string null_type] but got bool",
    ];
    assert_eq!(got, want);
    let empty = policy(json!({"matchConstraints": {"resourceRules": []}}));
    let got = fields(&validate_policy(&empty, None));
    assert!(got.contains(&"spec.matchConstraints.resourceRules: Required value".to_string()));
    assert!(got.contains(&"spec.validations: Required value: validations or auditAnnotations must contain at least one item".to_string()));
    let no_params = policy(json!({"matchConstraints": rules(),
                                  "validations": [{"expression": "params.x == 1"}]}));
    let got = fields(&validate_policy(&no_params, None));
    assert!(
        got[0].contains("undeclared reference to 'params'"),
        "{got:?}"
    );
}

#[test]
fn binding_validation() {
    let b = json!({"spec": {"policyName": "",
        "paramRef": {"name": "a", "selector": {}, "parameterNotFoundAction": "Maybe"},
        "validationActions": ["Deny", "Warn", "Deny", "Log"]}});
    let got = fields(&validate_binding(&b));
    let want = [
        "spec.policyName: Required value",
        "spec.paramRef.name: Forbidden: name and selector are mutually exclusive",
        "spec.paramRef.selector: Forbidden: name and selector are mutually exclusive",
        "spec.paramRef.parameterNotFoundAction: Unsupported value: \"Maybe\": supported values: \"Deny\", \"Allow\"",
        "spec.validationActions[2]: Duplicate value: \"Deny\"",
        "spec.validationActions[3]: Unsupported value: \"Log\": supported values: \"Audit\", \"Deny\", \"Warn\"",
        "spec.validationActions: Invalid value: []admissionregistration.ValidationAction{\"Deny\", \"Warn\", \"Deny\", \"Log\"}: must not contain both Deny and Warn (repeating the same validation failure information in the API response and headers serves no purpose)",
    ];
    assert_eq!(got, want);
    let none = json!({"spec": {"policyName": "p", "paramRef": {}}});
    let got = fields(&validate_binding(&none));
    assert_eq!(
        got,
        [
            "spec.paramRef: Required value: one of name or selector must be specified",
            "spec.paramRef.parameterNotFoundAction: Required value",
            "spec.validationActions: Required value: at least one validation action is required",
        ]
    );
}

fn values(obj: Value) -> Values {
    Values {
        object: Some(obj),
        old_object: None,
        request: json!({"operation": "CREATE"}),
        namespace: Some(json!({"metadata": {"name": "ns", "labels": {"team": "a"}}})),
        authorizer: None,
    }
}

fn invalid(msg: &str, index: usize) -> Decision {
    Decision {
        message: msg.into(),
        reason: StatusReason::Invalid,
        index,
    }
}

#[test]
fn evaluation_messages_reasons_and_params() {
    let p = parse_policy(&policy(json!({
        "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
        "matchConstraints": rules(),
        "variables": [{"name": "p", "expression": "object.spec.parallelism"}],
        "validations": [
            {"expression": "variables.p <= int(params.data.max)",
             "messageExpression": "'parallelism must be at most ' + params.data.max"},
            {"expression": "namespaceObject.metadata.labels.team == 'b'", "reason": "Forbidden",
             "message": " wrong team "},
            {"expression": "request.operation == 'DELETE'"},
            {"expression": "object.spec.nothing == 1"}]})));
    let job = json!({"spec": {"parallelism": 7}});
    let got = evaluate(
        &p,
        &values(job.clone()),
        &[Some(json!({"data": {"max": "5"}}))],
    );
    assert_eq!(
        got,
        [
            invalid("parallelism must be at most 5", 0),
            Decision {
                message: "wrong team".into(),
                reason: StatusReason::Forbidden,
                index: 1,
            },
            invalid("failed expression: request.operation == 'DELETE'", 2),
            invalid(
                "expression 'object.spec.nothing == 1' resulted in error: no such key: nothing",
                3
            ),
        ]
    );
    // each param is evaluated; an absent param list evaluates nothing
    let two = [
        Some(json!({"data": {"max": "9"}})),
        Some(json!({"data": {"max": "1"}})),
    ];
    let got = evaluate(&p, &values(job.clone()), &two);
    assert_eq!(
        got.iter()
            .filter(|d| d.message.starts_with("parallelism"))
            .count(),
        1
    );
    assert!(evaluate(&p, &values(job), &[]).is_empty());
}

#[test]
fn failure_policy_and_match_conditions() {
    let spec = |failure: &str| {
        parse_policy(&policy(json!({
            "failurePolicy": failure,
            "matchConstraints": rules(),
            "matchConditions": [{"name": "labelled",
                                 "expression": "has(object.metadata.labels) && 'check' in object.metadata.labels"}],
            "validations": [{"expression": "object.spec.x == 1"}],
            "auditAnnotations": [{"key": "k", "valueExpression": "'v' + object.spec.y"}]})))
    };
    let unlabelled = json!({"metadata": {}, "spec": {}});
    assert!(evaluate(&spec("Fail"), &values(unlabelled), &[None]).is_empty());
    let labelled = json!({"metadata": {"labels": {"check": "1"}}, "spec": {}});
    let got = evaluate(&spec("Fail"), &values(labelled.clone()), &[None]);
    assert_eq!(
        got,
        [
            invalid(
                "expression 'object.spec.x == 1' resulted in error: no such key: x",
                0
            ),
            invalid(
                "expression ''v' + object.spec.y' resulted in error: no such key: y",
                0
            ),
        ]
    );
    assert!(evaluate(&spec("Ignore"), &values(labelled), &[None]).is_empty());
}

/// Audit annotations: a string value is published trimmed (at most 10 KiB), an empty or
/// null one is left out, and an evaluation error counts only under `Fail`.
#[test]
fn audit_annotation_values_and_errors() {
    let spec = |failure: &str| {
        parse_policy(&policy(json!({
            "failurePolicy": failure,
            "matchConstraints": rules(),
            "auditAnnotations": [
                {"key": "team", "valueExpression": "' ' + namespaceObject.metadata.labels.team + ' '"},
                {"key": "empty", "valueExpression": "'  '"},
                {"key": "none", "valueExpression": "null"},
                {"key": "long", "valueExpression": "string(object.spec.long)"},
                {"key": "missing", "valueExpression": "'v' + object.spec.nothing"}]})))
    };
    let long = json!({"spec": {"long": "é".repeat(MAX_AUDIT_ANNOTATION_VALUE)}});
    let got = evaluate_all(&spec("Ignore"), &values(long.clone()), &[None]);
    assert!(
        got.decisions.is_empty() && got.annotation_errors.is_empty(),
        "{got:?}"
    );
    let keys: Vec<&str> = got.annotations.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(keys, ["team", "long"], "{got:?}");
    assert_eq!(got.annotations[0].1, "a");
    // Cut at the limit, on a character boundary ("é" is two bytes).
    assert_eq!(got.annotations[1].1.len(), MAX_AUDIT_ANNOTATION_VALUE);
    let got = evaluate_all(&spec("Fail"), &values(long), &[None]);
    assert_eq!(
        got.annotation_errors,
        [invalid(
            "expression ''v' + object.spec.nothing' resulted in error: no such key: nothing",
            0
        )]
    );
}

/// An audit annotation value of exactly the limit is published whole; one byte more is cut
/// to the limit; ten times the limit too.
#[test]
fn audit_annotation_values_at_the_limit() {
    let p = parse_policy(&policy(json!({
        "matchConstraints": rules(),
        "auditAnnotations": [
            {"key": "exact", "valueExpression": "string(object.spec.exact)"},
            {"key": "over", "valueExpression": "string(object.spec.over)"},
            {"key": "tenfold", "valueExpression": "string(object.spec.tenfold)"}]})));
    let obj = json!({"spec": {
        "exact": "x".repeat(MAX_AUDIT_ANNOTATION_VALUE),
        "over": "y".repeat(MAX_AUDIT_ANNOTATION_VALUE + 1),
        "tenfold": "z".repeat(10 * MAX_AUDIT_ANNOTATION_VALUE)}});
    let got = evaluate_all(&p, &values(obj), &[None]);
    let lens: Vec<(&str, usize)> = got
        .annotations
        .iter()
        .map(|(k, v)| (k.as_str(), v.len()))
        .collect();
    assert_eq!(
        lens,
        [
            ("exact", MAX_AUDIT_ANNOTATION_VALUE),
            ("over", MAX_AUDIT_ANNOTATION_VALUE),
            ("tenfold", MAX_AUDIT_ANNOTATION_VALUE)
        ],
        "{:?}",
        got.annotation_errors
    );
}
