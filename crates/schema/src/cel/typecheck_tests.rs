#![allow(clippy::unwrap_used)]

use serde_json::{json, Value};

use super::{NamedExpression, PolicyTypes, TypeSchema};

/// The crontab example's schema, as a CRD publishes it (metadata as ObjectMeta).
fn crontab() -> Value {
    json!({"type": "object", "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object", "properties": {
            "name": {"type": "string"},
            "generateName": {"type": "string"},
            "namespace": {"type": "string"},
            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
            "creationTimestamp": {"type": "string", "format": "date-time"},
        }},
        "spec": {"type": "object", "properties": {
            "cronSpec": {"type": "string"},
            "image": {"type": "string"},
            "replicas": {"type": "integer"},
        }},
    }})
}

fn check(expr: &str, variables: &[(&str, &str)], params: Option<&TypeSchema>) -> Option<String> {
    let object = TypeSchema::new(&crontab());
    let variables: Vec<NamedExpression> = variables
        .iter()
        .map(|(n, e)| NamedExpression {
            name: n.to_string(),
            expression: e.to_string(),
        })
        .collect();
    let types = PolicyTypes {
        object: &object,
        params,
        variables: &variables,
    };
    types.check(expr)
}

#[test]
fn expressions_over_the_matched_kind_are_typed() {
    for ok in [
        "object.spec.replicas > 1",
        "oldObject == null || oldObject.spec.replicas <= object.spec.replicas",
        "object.metadata.name.startsWith('a') && object.kind == 'CronTab'",
        // a property named like a CEL keyword, by its plain or its escaped name
        "object.metadata.namespace == object.metadata.__namespace__",
        "object.metadata.labels['app'] == 'x'",
        "object.metadata.creationTimestamp < timestamp('2030-01-01T00:00:00Z')",
        "'wants replicas > 1, got ' + string(object.spec.replicas)",
        // request and namespaceObject typed as upstream declares them, authorizer known
        "request.userInfo.username + object.spec.image != ''",
        "request.namespace == namespaceObject.metadata.name",
        "request.userInfo.groups.exists(g, g == 'admins') || request.dryRun",
        "request.userInfo.extra['scopes'].size() > 0",
        "request.options.anything == 1",
        "namespaceObject.metadata.labels['env'] == 'prod'",
        "namespaceObject.status.conditions.all(c, c.lastTransitionTime < timestamp('2030-01-01T00:00:00Z'))",
        "authorizer.group('').resource('pods').check('get').allowed()",
        // a non-bool result is the admission compiler's business, not the type check's
        "object.spec.replicas",
    ] {
        assert_eq!(check(ok, &[], None), None, "{ok}");
    }
}

#[test]
fn issues_are_cel_gos_errors() {
    let cases = [
        (
            "object.spec.replicas > '1'",
            "ERROR: <input>: found no matching overload for '_>_' applied to '(int, string)'",
        ),
        (
            "object.spec.maxRetries < 10",
            "ERROR: <input>: undefined field 'maxRetries'",
        ),
        (
            "'wants replicas > 1, got ' + object.spec.replicas",
            "ERROR: <input>: found no matching overload for '_+_' applied to '(string, int)'",
        ),
        (
            "oldObject.spec.image > 1",
            "ERROR: <input>: found no matching overload for '_>_' applied to '(string, int)'",
        ),
        (
            "params.data.x == 'a'",
            "ERROR: <input>: undeclared reference to 'params' (in container '')",
        ),
        (
            "self.spec.replicas > 1",
            "ERROR: <input>: undeclared reference to 'self' (in container '')",
        ),
        (
            "namespaceObject.metadata.name > 1",
            "ERROR: <input>: found no matching overload for '_>_' applied to '(string, int)'",
        ),
        (
            "namespaceObject.metadata.uid == ''",
            "ERROR: <input>: undefined field 'uid'",
        ),
        (
            "request.object.spec == null",
            "ERROR: <input>: undefined field 'object'",
        ),
    ];
    for (expr, want) in cases {
        assert_eq!(check(expr, &[], None).as_deref(), Some(want), "{expr}");
    }
    let parse_error = check("object.spec.replicas >", &[], None).unwrap();
    assert!(
        parse_error.starts_with("ERROR: <input>:1:"),
        "{parse_error}"
    );
}

#[test]
fn variables_are_typed_by_their_expressions() {
    let vars = [
        ("replicas", "object.spec.replicas"),
        ("image", "object.spec.image"),
        ("doubled", "variables.replicas * 2"),
        ("spec", "object.spec"),
        ("broken", "object.spec.nope"),
        ("names", "[object.metadata.name]"),
    ];
    assert_eq!(check("variables.doubled > 1", &vars, None), None);
    // objects lose their type in a variable (`dyn`), as a variable that does not check
    assert_eq!(check("variables.spec.anything > '1'", &vars, None), None);
    assert_eq!(check("variables.broken > '1'", &vars, None), None);
    assert_eq!(check("variables.names[0] + 'x' == 'y'", &vars, None), None);
    let wrong = [
        (
            "variables.replicas > '1'",
            "'_>_' applied to '(int, string)'",
        ),
        (
            "variables.image + 1 == 'x'",
            "'_+_' applied to '(string, int)'",
        ),
        (
            "variables.names[0] + 1 == 'x'",
            "'_+_' applied to '(string, int)'",
        ),
    ];
    for (expr, want) in wrong {
        let got = check(expr, &vars, None).unwrap_or_default();
        assert!(got.ends_with(want), "{expr}: {got}");
    }
    assert_eq!(
        check("variables.nope == 1", &vars, None).as_deref(),
        Some("ERROR: <input>: undefined field 'nope'")
    );
}

#[test]
fn params_are_typed_by_the_param_kind() {
    let config_map = TypeSchema::new(&json!({"type": "object", "properties": {
        "apiVersion": {"type": "string"},
        "kind": {"type": "string"},
        "metadata": {"type": "object", "properties": {
            "name": {"type": "string"}, "generateName": {"type": "string"}}},
        "data": {"type": "object", "additionalProperties": {"type": "string"}},
    }}));
    let p = Some(&config_map);
    assert_eq!(
        check("object.spec.image == params.data['image']", &[], p),
        None
    );
    let got = check("object.spec.replicas < params.data['max']", &[], p).unwrap_or_default();
    assert!(got.ends_with("'_<_' applied to '(int, string)'"), "{got}");
    let got = check("params.spec == 1", &[], p).unwrap_or_default();
    assert_eq!(got, "ERROR: <input>: undefined field 'spec'");
}

/// A schema with nothing typed (a kind whose schema is a bare object): what is under it is
/// `dyn`, but the object is still a resource root of `apiVersion`, `kind` and `metadata`.
#[test]
fn a_bare_object_is_a_resource_root_of_three_fields() {
    let object = TypeSchema::new(&json!({"type": "object",
        "x-kubernetes-preserve-unknown-fields": true}));
    let types = PolicyTypes {
        object: &object,
        params: None,
        variables: &[],
    };
    assert_eq!(
        types.check("object.spec.replicas > '1'").as_deref(),
        Some("ERROR: <input>: undefined field 'spec'")
    );
    assert_eq!(
        types.check("object.metadata.name + object.kind > 'a'"),
        None
    );
    assert_eq!(
        types.check("object.metadata.name > 1"),
        Some(
            "ERROR: <input>: found no matching overload for '_>_' applied to '(string, int)'"
                .into()
        )
    );
}
