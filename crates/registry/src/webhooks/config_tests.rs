#![allow(clippy::unwrap_used)]
//! Defaults and validation against upstream's field paths and messages.

use super::*;

fn hook(extra: Value) -> Value {
    let mut h = json!({
        "name": "deny.example.com",
        "clientConfig": {"url": "https://127.0.0.1:8443/validate"},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["configmaps"]}],
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
    });
    if let (Some(h), Value::Object(e)) = (h.as_object_mut(), extra) {
        h.extend(e);
    }
    h
}

fn config(hooks: Vec<Value>) -> Value {
    json!({"metadata": {"name": "c"}, "webhooks": hooks})
}

fn messages(kind: Kind, obj: &Value, old: Option<&Value>) -> Vec<String> {
    validate(kind, obj, old).iter().map(Cause::render).collect()
}

#[test]
fn defaults_are_upstreams() {
    let mut obj = config(vec![json!({"name": "a.b.c",
        "clientConfig": {"service": {"namespace": "ns", "name": "svc"}},
        "rules": [{"operations": ["*"]}]})]);
    default(Kind::Mutating, &mut obj);
    assert_eq!(
        obj["webhooks"][0],
        json!({"name": "a.b.c",
            "clientConfig": {"service": {"namespace": "ns", "name": "svc", "port": 443}},
            "rules": [{"operations": ["*"], "scope": "*"}],
            "failurePolicy": "Fail", "matchPolicy": "Equivalent",
            "namespaceSelector": {}, "objectSelector": {}, "timeoutSeconds": 10,
            "reinvocationPolicy": "Never"})
    );
    let mut v = config(vec![
        json!({"name": "a.b.c", "failurePolicy": "Ignore", "timeoutSeconds": 3}),
    ]);
    default(Kind::Validating, &mut v);
    assert_eq!(v["webhooks"][0]["failurePolicy"], "Ignore");
    assert_eq!(v["webhooks"][0]["timeoutSeconds"], 3);
    assert!(v["webhooks"][0].get("reinvocationPolicy").is_none());
}

#[test]
fn a_valid_configuration_passes() {
    for kind in [Kind::Validating, Kind::Mutating] {
        let mut obj = config(vec![hook(json!({}))]);
        default(kind, &mut obj);
        assert_eq!(messages(kind, &obj, None), Vec::<String>::new());
    }
}

#[test]
fn webhook_fields_are_checked_as_upstream() {
    let obj = config(vec![
        hook(
            json!({"name": "short.name", "sideEffects": "Some", "failurePolicy": "Maybe",
            "timeoutSeconds": 31, "admissionReviewVersions": ["v2"],
            "clientConfig": {"url": "http://u@h/p?q=1#f"}}),
        ),
        hook(
            json!({"sideEffects": null, "matchPolicy": "Loose", "admissionReviewVersions": [],
            "clientConfig": {}}),
        ),
        hook(json!({"name": "deny.example.com"})),
    ]);
    assert_eq!(
        messages(Kind::Validating, &obj, None),
        vec![
            r#"webhooks[0].name: Invalid value: "short.name": should be a domain with at least three segments separated by dots"#,
            r#"webhooks[0].failurePolicy: Unsupported value: "Maybe": supported values: "Fail", "Ignore""#,
            r#"webhooks[0].sideEffects: Unsupported value: "Some": supported values: "None", "NoneOnDryRun""#,
            "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
            r#"webhooks[0].clientConfig.url: Invalid value: "http": 'https' is the only allowed URL scheme; desired format: https://host[/path]"#,
            r#"webhooks[0].clientConfig.url: Invalid value: "u": user information is not permitted in the URL"#,
            r#"webhooks[0].clientConfig.url: Invalid value: "f": fragments are not permitted in the URL"#,
            r#"webhooks[0].clientConfig.url: Invalid value: "q=1": query parameters are not permitted in the URL"#,
            r#"webhooks[0].admissionReviewVersions: Invalid value: []string{"v2"}: must include at least one of v1, v1beta1"#,
            r#"webhooks[1].matchPolicy: Unsupported value: "Loose": supported values: "Equivalent", "Exact""#,
            "webhooks[1].sideEffects: Required value: must specify one of None, NoneOnDryRun",
            "webhooks[1].clientConfig: Required value: exactly one of url or service is required",
            "webhooks[1].admissionReviewVersions: Required value: must specify one of v1, v1beta1",
            r#"webhooks[2].name: Duplicate value: "deny.example.com""#,
        ]
    );
    // The name rule (IsFullyQualifiedName) on its own.
    let obj = config(vec![hook(json!({"name": "short.name"}))]);
    assert_eq!(
        messages(Kind::Mutating, &obj, None),
        vec![
            r#"webhooks[0].name: Invalid value: "short.name": should be a domain with at least three segments separated by dots"#
        ]
    );
}

#[test]
fn rules_and_services_are_checked_as_upstream() {
    let obj = config(vec![hook(json!({
        "rules": [
            {"operations": ["*", "CREATE"], "apiGroups": [], "apiVersions": ["*", "v1"],
             "resources": ["*", "pods"], "scope": "Everywhere"},
            {"operations": ["PATCH"], "apiGroups": ["*"], "apiVersions": [""],
             "resources": ["pods/*", "pods/status"]},
        ],
        "clientConfig": {"service": {"namespace": "", "name": "s", "port": 0, "path": "foo//bar"}},
    }))]);
    assert_eq!(
        messages(Kind::Validating, &obj, None),
        vec![
            r#"webhooks[0].rules[0].operations: Invalid value: []string{"*", "CREATE"}: if '*' is present, must not specify other operations"#,
            "webhooks[0].rules[0].apiGroups: Required value",
            r#"webhooks[0].rules[0].apiVersions: Invalid value: []string{"*", "v1"}: if '*' is present, must not specify other API versions"#,
            r#"webhooks[0].rules[0].resources: Invalid value: []string{"*", "pods"}: if '*' is present, must not specify other resources without subresources"#,
            r#"webhooks[0].rules[0].scope: Unsupported value: "Everywhere": supported values: "*", "Cluster", "Namespaced""#,
            r#"webhooks[0].rules[1].operations[0]: Unsupported value: "PATCH": supported values: "*", "CONNECT", "CREATE", "DELETE", "UPDATE""#,
            "webhooks[0].rules[1].apiVersions[0]: Required value",
            r#"webhooks[0].rules[1].resources[1]: Invalid value: "pods/status": if 'pods/*' is present, must not specify pods/status"#,
            "webhooks[0].clientConfig.service.namespace: Required value: service namespace is required",
            "webhooks[0].clientConfig.service.port: Invalid value: 0: port is not valid: must be between 1 and 65535, inclusive",
            r#"webhooks[0].clientConfig.service.path: Invalid value: "foo//bar": must start with a '/'"#,
            r#"webhooks[0].clientConfig.service.path: Invalid value: "foo//bar": segment[1] may not be empty"#,
        ]
    );
}

#[test]
fn an_update_keeps_what_the_stored_object_already_allowed() {
    let old = config(vec![hook(json!({"sideEffects": "Unknown"}))]);
    let new = config(vec![hook(json!({"sideEffects": "Some"}))]);
    assert_eq!(
        messages(Kind::Validating, &new, Some(&old)),
        Vec::<String>::new()
    );
    assert_eq!(messages(Kind::Validating, &new, None).len(), 1);
    let clean = config(vec![hook(json!({}))]);
    assert_eq!(messages(Kind::Validating, &new, Some(&clean)).len(), 1);
}

#[test]
fn urls_split_as_go_splits_them() {
    let u = split_url("https://user:pw@host:8443/a/b?x=1#frag");
    assert_eq!(
        u,
        UrlParts {
            scheme: "https",
            user: "user:pw",
            host: "host:8443",
            path: "/a/b",
            query: "x=1",
            fragment: "frag"
        }
    );
    assert_eq!(split_url("no-scheme").scheme, "");
    assert_eq!(split_url("https://h").path, "");
}

#[test]
fn match_conditions_are_compiled_and_named() {
    let conds = |c: Value| config(vec![hook(json!({"matchConditions": c}))]);
    let ok = conds(json!([{"name": "not-kube-system",
        "expression": "request.namespace != 'kube-system'"}]));
    assert!(messages(Kind::Validating, &ok, None).is_empty());
    let bad = conds(json!([
        {"name": "int", "expression": "1 + 2"},
        {"name": "int", "expression": "object.metadata.name == 'a'"},
        {"name": "Bad Name!", "expression": "variables.x"},
        {"name": "params", "expression": "params.x == 1"},
        {"name": "syntax", "expression": "object."},
        {"name": "", "expression": "  "},
    ]));
    let m = messages(Kind::Mutating, &bad, None);
    let p = "webhooks[0].matchConditions";
    assert_eq!(
        m[0],
        format!("{p}[0].expression: Invalid value: \"1 + 2\": must evaluate to bool but got int")
    );
    assert_eq!(m[1], format!("{p}[1].name: Duplicate value: \"int\""));
    assert!(
        m[2].starts_with(&format!("{p}[2].expression: Invalid value: \"variables.x\": compilation failed: ERROR: <input>:")) 
            && m[2].contains("undeclared reference to 'variables'"),
        "{m:?}"
    );
    assert!(
        m[3].starts_with(&format!(
            "{p}[2].name: Invalid value: \"Bad Name!\": name part must consist of"
        )),
        "{m:?}"
    );
    assert!(m[4].contains("undeclared reference to 'params'"), "{m:?}");
    assert!(
        m[5].starts_with(&format!(
            "{p}[4].expression: Invalid value: \"object.\": compilation failed: ERROR: <input>:1:"
        )),
        "{m:?}"
    );
    assert_eq!(m[6], format!("{p}[5].expression: Required value"));
    assert_eq!(m[7], format!("{p}[5].name: Required value"));
    assert_eq!(m.len(), 8, "{m:?}");
    let many: Vec<Value> = (0..65)
        .map(|i| json!({"name": format!("c{i}"), "expression": "true"}))
        .collect();
    assert_eq!(
        messages(Kind::Validating, &conds(Value::Array(many)), None),
        vec![format!("{p}: Too many: 65: must have at most 64 items")]
    );
}

#[test]
fn unchanged_match_conditions_are_not_validated_again() {
    let with = |c: &str| {
        config(vec![hook(
            json!({"matchConditions": [{"name": "a", "expression": c}]}),
        )])
    };
    let stored = with("1 + 2");
    let mut relabelled = stored.clone();
    relabelled["metadata"]["labels"] = json!({"x": "y"});
    assert!(messages(Kind::Validating, &relabelled, Some(&stored)).is_empty());
    let changed = with("2 + 3");
    assert_eq!(messages(Kind::Validating, &changed, Some(&stored)).len(), 1);
    // a webhook added: every webhook's conditions are validated again
    let mut added = stored.clone();
    let mut second = hook(json!({}));
    second["name"] = json!("other.example.com");
    added["webhooks"].as_array_mut().unwrap().push(second);
    assert_eq!(messages(Kind::Validating, &added, Some(&stored)).len(), 1);
}
