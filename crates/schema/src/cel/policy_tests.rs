use serde_json::json;

use super::*;

fn env(params: bool, variables: &[Declared]) -> Env<'_> {
    Env {
        params,
        authorizer: false,
        variables,
    }
}

/// The variables `(name, expression)`, each compiled after the ones before it.
fn declare(params: bool, vars: &[(&str, &str)]) -> Vec<Declared> {
    let mut out: Vec<Declared> = Vec::new();
    for (name, src) in vars {
        let compiled = compile(src, env(params, &out), Want::Any);
        out.push(Declared::new(name, compiled.as_ref().ok()));
    }
    out
}

#[test]
fn compile_checks_identifiers_variables_and_result_types() {
    assert!(compile("object.spec.replicas <= 5", env(false, &[]), Want::Bool).is_ok());
    let e = compile("params.max > 1", env(false, &[]), Want::Bool).unwrap_err();
    assert!(
        e.starts_with("compilation failed: ERROR: <input>: undeclared reference to 'params'"),
        "{e}"
    );
    assert!(compile("params.max > 1", env(true, &[]), Want::Bool).is_ok());
    let e = compile("self.x", env(true, &[]), Want::Bool).unwrap_err();
    assert!(e.contains("undeclared reference to 'self'"), "{e}");
    let e = compile("authorizer.group('') != null", env(true, &[]), Want::Bool).unwrap_err();
    assert!(e.contains("undeclared reference to 'authorizer'"), "{e}");
    assert_eq!(
        compile("1 + 2", env(false, &[]), Want::Bool).unwrap_err(),
        "must evaluate to bool but got int"
    );
    assert_eq!(
        compile("object.spec", env(false, &[]), Want::Bool).unwrap_err(),
        "must evaluate to bool but got dyn"
    );
    assert_eq!(
        compile("true", env(false, &[]), Want::String).unwrap_err(),
        "must evaluate to string but got bool"
    );
    assert!(compile("null", env(false, &[]), Want::StringOrNull).is_ok());
    assert!(compile("'a' + object.metadata.name", env(false, &[]), Want::String).is_ok());
    let vars = declare(false, &[("a", "object.a")]);
    assert!(compile("variables.a > 1", env(false, &vars), Want::Bool).is_ok());
    let e = compile("variables.b > 1", env(false, &vars), Want::Bool).unwrap_err();
    assert!(e.ends_with("undefined field 'b'"), "{e}");
    let e = compile("object.", env(false, &[]), Want::Bool).unwrap_err();
    assert!(
        e.starts_with("compilation failed: ERROR: <input>:1:"),
        "{e}"
    );
}

/// Upstream's conformance spec "should allow expressions to refer variables": a
/// variable's type is its expression's, so a bool variable is a valid validation.
#[test]
fn variables_have_the_types_of_their_expressions() {
    let vars = declare(
        false,
        &[
            ("replicas", "object.spec.replicas"),
            ("oddReplicas", "variables.replicas % 2 == 1"),
            ("three", "1 + 2"),
            ("names", "['a', 'b']"),
            ("broken", "object.("),
        ],
    );
    let ok = |src: &str| compile(src, env(false, &vars), Want::Bool).map(|_| ());
    assert_eq!(ok("variables.oddReplicas"), Ok(()));
    assert_eq!(ok("variables.replicas > 1"), Ok(()));
    assert_eq!(ok("variables.names.all(n, n.startsWith('a'))"), Ok(()));
    // a variable that does not compile is `dyn` to the expressions after it
    assert_eq!(ok("variables.broken == 1"), Ok(()));
    assert_eq!(
        ok("variables.replicas"),
        Err("must evaluate to bool but got dyn".into())
    );
    assert_eq!(
        ok("variables.three"),
        Err("must evaluate to bool but got int".into())
    );
    let e = ok("variables.names[0] > 1").unwrap_err();
    assert!(
        e.contains("found no matching overload for '_>_' applied to '(string, int)'"),
        "{e}"
    );
    // each variable sees only the ones before it
    let e = compile("variables.oddReplicas", env(false, &vars[..1]), Want::Bool).unwrap_err();
    assert!(e.ends_with("undefined field 'oddReplicas'"), "{e}");
}

/// `request` and `namespaceObject` have upstream's declared types at compile time, so a
/// policy or match condition that reads a field they lack, or uses one as the wrong type,
/// is refused when it is written, as kube-apiserver refuses it.
#[test]
fn request_and_namespace_are_typed_as_upstream_declares_them() {
    let ok = |src: &str| compile(src, env(false, &[]), Want::Bool).map(|_| ());
    for src in [
        "request.operation == 'CREATE'",
        "request.namespace == 'default' && request.name != ''",
        "request.dryRun",
        "request.userInfo.groups.exists(g, g == 'system:masters')",
        "request.kind.group == 'apps' && request.requestResource.resource == 'deployments'",
        "has(request.options.dryRun)",
        "namespaceObject.metadata.labels['env'] == 'prod'",
        "namespaceObject.metadata.UID != ''",
        "namespaceObject.status.phase == 'Active'",
    ] {
        assert_eq!(ok(src), Ok(()), "{src}");
    }
    let e = ok("request.userInfo.username").unwrap_err();
    assert_eq!(e, "must evaluate to bool but got string");
    let e = ok("request.foo == 1").unwrap_err();
    assert!(e.ends_with("undefined field 'foo'"), "{e}");
    let e = ok("namespaceObject.metadata.uid == ''").unwrap_err();
    assert!(e.ends_with("undefined field 'uid'"), "{e}");
    let e = ok("request.operation > 1").unwrap_err();
    assert!(
        e.ends_with("found no matching overload for '_>_' applied to '(string, int)'"),
        "{e}"
    );
    // match conditions are compiled in the same environment
    let e = compile_condition("request.userInfo.uid > 1", false).unwrap_err();
    assert!(
        e.ends_with("found no matching overload for '_>_' applied to '(string, int)'"),
        "{e}"
    );
}

fn var(name: &str, src: &str, before: &[Declared]) -> Variable {
    Variable {
        name: name.into(),
        expr: compile(src, env(true, before), Want::Any).unwrap(),
    }
}

#[test]
fn evaluates_with_object_params_and_variables() {
    let obj = json!({"metadata": {"name": "j"}, "spec": {"parallelism": 7}});
    let params = json!({"data": {"max": "5"}});
    let inputs = Inputs::new(Values {
        object: Some(&obj),
        params: Some(&params),
        ..Values::default()
    });
    let declared = declare(
        true,
        &[
            ("p", "object.spec.parallelism"),
            ("max", "int(params.data.max)"),
            ("bad", "object.spec.missing"),
        ],
    );
    let vars: Vec<Variable> = [
        "object.spec.parallelism",
        "int(params.data.max)",
        "object.spec.missing",
    ]
    .iter()
    .enumerate()
    .map(|(i, src)| var(declared[i].name(), src, &declared[..i]))
    .collect();
    let names = declared.to_vec();
    let mut ev = Evaluator::new(&inputs, &vars, RUNTIME_BUDGET);
    let e = compile(
        "variables.p <= variables.max",
        env(true, &names),
        Want::Bool,
    )
    .unwrap();
    assert_eq!(ev.eval(&e), Ok(Ok(Evaluated::Bool(false))));
    let spent = RUNTIME_BUDGET - ev.remaining();
    assert!(spent > 0);
    // the variables are cached: the second evaluation costs only the expression
    assert_eq!(ev.eval(&e), Ok(Ok(Evaluated::Bool(false))));
    assert!(RUNTIME_BUDGET - ev.remaining() < 2 * spent);
    let m = compile(
        "'parallelism ' + string(variables.p) + ' is over ' + params.data.max",
        env(true, &names),
        Want::String,
    )
    .unwrap();
    assert_eq!(
        ev.eval(&m),
        Ok(Ok(Evaluated::String("parallelism 7 is over 5".into())))
    );
    let b = compile("variables.bad == 1", env(true, &names), Want::Bool).unwrap();
    assert_eq!(
        ev.eval(&b),
        Ok(Err("expression 'variables.bad == 1' resulted in error: composited variable \"bad\" fails to evaluate: no such key: missing".into()))
    );
    // an unused failing variable is not evaluated
    let ok = compile("variables.p == 7", env(true, &names), Want::Bool).unwrap();
    assert_eq!(ev.eval(&ok), Ok(Ok(Evaluated::Bool(true))));
    // params swapped, the rest kept
    let other = json!({"data": {"max": "9"}});
    let inputs2 = inputs.with_params(Some(&other));
    let mut ev2 = Evaluator::new(&inputs2, &vars, RUNTIME_BUDGET);
    assert_eq!(ev2.eval(&e), Ok(Ok(Evaluated::Bool(true))));
}

#[test]
fn null_inputs_and_errors() {
    let inputs = Inputs::new(Values::default());
    let mut ev = Evaluator::new(&inputs, &[], RUNTIME_BUDGET);
    let e = compile(
        "object == null && params == null",
        env(true, &[]),
        Want::Bool,
    )
    .unwrap();
    assert_eq!(ev.eval(&e), Ok(Ok(Evaluated::Bool(true))));
    let empty = json!({});
    let inputs = Inputs::new(Values {
        object: Some(&empty),
        ..Values::default()
    });
    let mut ev = Evaluator::new(&inputs, &[], RUNTIME_BUDGET);
    let e = compile("object.spec.x == 1", env(false, &[]), Want::Bool).unwrap();
    assert_eq!(
        ev.eval(&e),
        Ok(Err(
            "expression 'object.spec.x == 1' resulted in error: no such key: spec".into()
        ))
    );
}

#[test]
fn per_call_limit_and_budget() {
    let inputs = Inputs::new(Values::default());
    // about 1,000,000 steps of a comprehension over a large list: over the per-call limit
    let src = "[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, [1,2,3,4,5,6,7,8,9,10].all(f, a + b + c + d + e + f > 0))))))";
    let e = compile(src, env(false, &[]), Want::Bool).unwrap();
    let mut ev = Evaluator::new(&inputs, &[], RUNTIME_BUDGET);
    let err = ev.eval(&e).unwrap().unwrap_err();
    assert!(
        err.ends_with("resulted in error: operation cancelled: actual cost limit exceeded"),
        "{err}"
    );
    let cheap = compile("1 == 1", env(false, &[]), Want::Bool).unwrap();
    let mut poor = Evaluator::new(&inputs, &[], 0);
    assert_eq!(poor.eval(&cheap), Err(OutOfBudget));
}

#[test]
fn conditions_do_not_declare_variables() {
    assert!(compile_condition("object.metadata.name == 'a'", false).is_ok());
    let e = compile_condition("variables.a", false).unwrap_err();
    assert!(e.contains("undeclared reference to 'variables'"), "{e}");
    let e = compile_condition("params.a == 1", false).unwrap_err();
    assert!(e.contains("undeclared reference to 'params'"), "{e}");
    assert!(compile_condition("params.a == 1", true).is_ok());
    assert_eq!(
        compile_condition("'a'", false).unwrap_err(),
        "must evaluate to bool but got string"
    );
}

#[test]
fn match_conditions_as_upstream_orders_them() {
    let obj = json!({"metadata": {"name": "a"}});
    let inputs = Inputs::new(Values {
        object: Some(&obj),
        ..Values::default()
    });
    let c = |src: &str| compile_condition(src, false);
    assert_eq!(match_conditions(&[], &inputs), Matched::Yes);
    assert_eq!(
        match_conditions(&[c("true"), c("object.metadata.name == 'a'")], &inputs),
        Matched::Yes
    );
    // a false condition wins over an error, before or after it
    let err = c("object.spec.x == 1");
    assert_eq!(
        match_conditions(&[c("object.spec.x == 1"), c("false")], &inputs),
        Matched::No
    );
    assert_eq!(match_conditions(&[c("false"), err], &inputs), Matched::No);
    assert_eq!(
        match_conditions(&[c("object.spec.x == 1"), c("true")], &inputs),
        Matched::Error(
            "expression 'object.spec.x == 1' resulted in error: no such key: spec".into()
        )
    );
    assert_eq!(
        match_conditions(
            &[c("object.spec.x == 1"), Err("compilation failed: boom".into())],
            &inputs
        ),
        Matched::Error(
            "[expression 'object.spec.x == 1' resulted in error: no such key: spec, compilation error: compilation failed: boom]"
                .into()
        )
    );
    // every condition runs: the budget (2,500,000) runs out after a false one
    let heavy = "[1,2,3,4,5,6,7,8,9,10].all(a, [1,2,3,4,5,6,7,8,9,10].all(b, [1,2,3,4,5,6,7,8,9,10].all(c, [1,2,3,4,5,6,7,8,9,10].all(d, [1,2,3,4,5,6,7,8,9,10].all(e, a + b + c + d + e > 0)))))";
    let mut conds = vec![c("false")];
    conds.extend((0..6).map(|_| c(heavy)));
    assert_eq!(
        match_conditions(&conds, &inputs),
        Matched::Error(OUT_OF_BUDGET.into())
    );
    assert_eq!(match_conditions(&conds[..2], &inputs), Matched::No);
}

/// The global conversions pass their operand's own error on, as cel-go does (the `cel`
/// crate alone says "missing argument or target").
#[test]
fn an_operands_error_is_the_calls_error() {
    let empty = json!({"spec": {}});
    let inputs = Inputs::new(Values {
        object: Some(&empty),
        ..Values::default()
    });
    for src in [
        "string(object.spec.x) == 'a'",
        "size(object.spec.x) == 1",
        "int(object.spec.x) == 1",
        "uint(object.spec.x) == 1u",
        "double(object.spec.x) == 1.0",
        "object.spec.x.size() == 1",
    ] {
        let mut ev = Evaluator::new(&inputs, &[], RUNTIME_BUDGET);
        let e = compile(src, env(false, &[]), Want::Bool).unwrap();
        assert_eq!(
            ev.eval(&e),
            Ok(Err(format!(
                "expression '{src}' resulted in error: no such key: x"
            ))),
        );
    }
    let mut ev = Evaluator::new(&inputs, &[], RUNTIME_BUDGET);
    let e = compile(
        "size('abc') == 3 && string(1) == '1' && int('2') == 2",
        env(false, &[]),
        Want::Bool,
    )
    .unwrap();
    assert_eq!(ev.eval(&e), Ok(Ok(Evaluated::Bool(true))));
}

fn authz_env() -> Env<'static> {
    Env {
        params: false,
        authorizer: true,
        variables: &[],
    }
}

/// A fake authorizer: allows `get` of `secrets` in `ns1` (any name) and `get` of the
/// path `/healthz`, each to the requester only; records every request.
fn fake() -> (
    Authorize,
    std::sync::Arc<std::sync::Mutex<Vec<AuthzRequest>>>,
) {
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let log = seen.clone();
    let f: Authorize = std::sync::Arc::new(move |r: &AuthzRequest| {
        log.lock().unwrap().push(r.clone());
        let allowed = r.service_account.is_none()
            && r.verb == "get"
            && match &r.target {
                Target::Path(p) => p == "/healthz",
                Target::Resource(a) => a.resource == "secrets" && a.namespace == "ns1",
            };
        AuthzDecision {
            allowed,
            reason: if allowed { "ok".into() } else { String::new() },
            error: (r.verb == "boom").then(|| "authorizer failed".to_string()),
        }
    });
    (f, seen)
}

fn authz_inputs(f: Authorize) -> Inputs {
    let request = ResourceAttributes {
        group: "apps".into(),
        resource: "deployments".into(),
        subresource: "scale".into(),
        namespace: "ns1".into(),
        name: "web".into(),
        ..Default::default()
    };
    Inputs::new(Values::default()).with_authorizer(f, request)
}

fn eval_authz(src: &str, inputs: &Inputs) -> Result<Evaluated, String> {
    let e = compile(src, authz_env(), Want::Any).unwrap();
    Evaluator::new(inputs, &[], RUNTIME_BUDGET)
        .eval(&e)
        .unwrap()
}

#[test]
fn authorizer_compiles_as_upstream_declares_it() {
    let ok = |src: &str| compile(src, authz_env(), Want::Bool).map(|_| ());
    for src in [
        "authorizer.group('').resource('secrets').namespace('a').name('b').check('get').allowed()",
        "authorizer.group('apps').resource('deployments').subresource('scale').check('update').errored()",
        "authorizer.path('/healthz').check('get').reason() == ''",
        "authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('list').error() == ''",
        "authorizer.requestResource.check('delete').allowed()",
        "authorizer.requestResource.namespace('other').check('get').allowed()",
        "authorizer.group('').resource('pods').fieldSelector('spec.nodeName=a').labelSelector('a=b').check('list').allowed()",
        "authorizer.group(object.spec.g).resource('x').check('get').allowed()",
    ] {
        assert_eq!(ok(src), Ok(()), "{src}");
    }
    let err = |src: &str| compile(src, authz_env(), Want::Bool).unwrap_err();
    // unknown methods and wrong receivers, cel-go's messages
    assert_eq!(
        err("authorizer.group('').resource('x').verb('get').allowed()"),
        "compilation failed: ERROR: <input>: undeclared reference to 'verb' (in container '')"
    );
    assert_eq!(
        err("authorizer.check('get').allowed()"),
        "compilation failed: ERROR: <input>: found no matching overload for 'check' applied to 'kubernetes.authorization.Authorizer.(string)'"
    );
    assert_eq!(
        err("authorizer.group('').check('get').allowed()"),
        "compilation failed: ERROR: <input>: found no matching overload for 'check' applied to 'kubernetes.authorization.GroupCheck.(string)'"
    );
    assert_eq!(
        err("authorizer.group(1).resource('x').check('get').allowed()"),
        "compilation failed: ERROR: <input>: found no matching overload for 'group' applied to 'kubernetes.authorization.Authorizer.(int)'"
    );
    assert_eq!(
        err("authorizer.serviceAccount('ns').group('').resource('x').check('get').allowed()"),
        "compilation failed: ERROR: <input>: found no matching overload for 'serviceAccount' applied to 'kubernetes.authorization.Authorizer.(string)'"
    );
    assert_eq!(
        err("authorizer.path('/').check('get').size() > 0"),
        "compilation failed: ERROR: <input>: found no matching overload for 'size' applied to 'kubernetes.authorization.Decision.()'"
    );
    assert_eq!(
        err("'a'.name('b') == 'c'"),
        "compilation failed: ERROR: <input>: found no matching overload for 'name' applied to 'string.(string)'"
    );
    assert!(err("authorizer.foo.check('get').allowed()").contains("unexpected failed resolution"));
    // the result type is known: a decision is not a bool
    assert_eq!(
        err("authorizer.requestResource.check('get')"),
        "must evaluate to bool but got kubernetes.authorization.Decision"
    );
    // messageExpression's environment has no authorizer
    let e = compile(
        "authorizer.path('/').check('get').reason()",
        env(false, &[]),
        Want::String,
    );
    assert!(e
        .unwrap_err()
        .contains("undeclared reference to 'authorizer'"));
    // match conditions have it
    assert!(compile_condition("authorizer.requestResource.check('get').allowed()", false).is_ok());
}

#[test]
fn authorizer_checks_ask_the_request_authorizer() {
    let (f, seen) = fake();
    let inputs = authz_inputs(f);
    let src = "authorizer.group('').resource('secrets').namespace('ns1').name('s').check('get')";
    assert_eq!(
        eval_authz(&format!("{src}.allowed()"), &inputs),
        Ok(Evaluated::Bool(true))
    );
    assert_eq!(
        eval_authz(&format!("{src}.reason()"), &inputs),
        Ok(Evaluated::String("ok".into()))
    );
    assert_eq!(
        eval_authz(&format!("{src}.errored()"), &inputs),
        Ok(Evaluated::Bool(false))
    );
    assert_eq!(
        eval_authz(&format!("{src}.error()"), &inputs),
        Ok(Evaluated::String(String::new()))
    );
    assert_eq!(
        seen.lock().unwrap()[0],
        AuthzRequest {
            service_account: None,
            verb: "get".into(),
            target: Target::Resource(ResourceAttributes {
                group: String::new(),
                resource: "secrets".into(),
                namespace: "ns1".into(),
                name: "s".into(),
                ..Default::default()
            }),
        }
    );
    let denied = "authorizer.group('').resource('secrets').namespace('ns2').check('get').allowed()";
    assert_eq!(eval_authz(denied, &inputs), Ok(Evaluated::Bool(false)));
    assert_eq!(
        eval_authz(
            "authorizer.path('/healthz').check('get').allowed()",
            &inputs
        ),
        Ok(Evaluated::Bool(true))
    );
    // an authorizer error is a decision, not an evaluation error
    let boom = "authorizer.path('/x').check('boom')";
    assert_eq!(
        eval_authz(&format!("{boom}.errored()"), &inputs),
        Ok(Evaluated::Bool(true))
    );
    assert_eq!(
        eval_authz(&format!("{boom}.error()"), &inputs),
        Ok(Evaluated::String("authorizer failed".into()))
    );
    // any verb is passed on as written
    let odd = "authorizer.group('').resource('secrets').namespace('ns1').check('Get').allowed()";
    assert_eq!(eval_authz(odd, &inputs), Ok(Evaluated::Bool(false)));
    assert_eq!(seen.lock().unwrap().last().unwrap().verb, "Get");
}

#[test]
fn request_resource_service_accounts_and_selectors() {
    let (f, seen) = fake();
    let inputs = authz_inputs(f);
    assert_eq!(
        eval_authz(
            "authorizer.requestResource.check('delete').allowed()",
            &inputs
        ),
        Ok(Evaluated::Bool(false))
    );
    let request = ResourceAttributes {
        group: "apps".into(),
        resource: "deployments".into(),
        subresource: "scale".into(),
        namespace: "ns1".into(),
        name: "web".into(),
        ..Default::default()
    };
    assert_eq!(
        seen.lock().unwrap().pop(),
        Some(AuthzRequest {
            service_account: None,
            verb: "delete".into(),
            target: Target::Resource(request.clone()),
        })
    );
    // a comprehension's variable named `authorizer` hides the library's
    let hidden = "[{'requestResource': 1}].all(authorizer, authorizer.requestResource == 1)";
    assert_eq!(eval_authz(hidden, &inputs), Ok(Evaluated::Bool(true)));
    // the builders apply to the request's resource too
    let src = "authorizer.requestResource.subresource('').name('other').check('get').allowed()";
    assert_eq!(eval_authz(src, &inputs), Ok(Evaluated::Bool(false)));
    let Some(Target::Resource(r)) = seen.lock().unwrap().pop().map(|r| r.target) else {
        panic!("no resource check");
    };
    assert_eq!((r.subresource.as_str(), r.name.as_str()), ("", "other"));
    // a service account: the same check, asked as the service account
    let sa = "authorizer.serviceAccount('ns1', 'builder').group('').resource('secrets').namespace('ns1').check('get').allowed()";
    assert_eq!(eval_authz(sa, &inputs), Ok(Evaluated::Bool(false)));
    let asked = seen.lock().unwrap().pop().unwrap();
    assert_eq!(
        asked.service_account,
        Some(("ns1".to_string(), "builder".to_string()))
    );
    let sel = "authorizer.group('').resource('pods').fieldSelector('spec.nodeName=n1').labelSelector('app=web').check('list').allowed()";
    assert_eq!(eval_authz(sel, &inputs), Ok(Evaluated::Bool(false)));
    let Some(Target::Resource(r)) = seen.lock().unwrap().pop().map(|r| r.target) else {
        panic!("no resource check");
    };
    assert_eq!(
        (r.field_selector.as_str(), r.label_selector.as_str()),
        ("spec.nodeName=n1", "app=web")
    );
}

#[test]
fn authorizer_argument_errors_as_upstream() {
    let (f, seen) = fake();
    let inputs = authz_inputs(f);
    let cases = [
        (
            "authorizer.path(' ').check('get').allowed()",
            "path must not be empty",
        ),
        (
            "authorizer.group('').resource('').check('get').allowed()",
            "resource must not be empty",
        ),
        (
            "authorizer.serviceAccount('ns', 'Bad_Name').path('/').check('get').allowed()",
            "Invalid service account name",
        ),
        (
            "authorizer.serviceAccount('a.b', 'sa').path('/').check('get').allowed()",
            "Invalid service account namespace",
        ),
    ];
    for (src, why) in cases {
        assert_eq!(
            eval_authz(src, &inputs),
            Err(format!("expression '{src}' resulted in error: {why}")),
            "{src}"
        );
    }
    assert!(seen.lock().unwrap().is_empty(), "no check was made");
    // without an authorizer bound (no requester), the variable does not resolve
    let e = compile(
        "authorizer.path('/').check('get').allowed()",
        authz_env(),
        Want::Bool,
    )
    .unwrap();
    let bare = Inputs::new(Values::default());
    let r = Evaluator::new(&bare, &[], RUNTIME_BUDGET).eval(&e).unwrap();
    assert!(r
        .unwrap_err()
        .contains("undeclared reference to 'authorizer'"));
}

#[test]
fn authorizer_costs_as_upstream() {
    let (f, _) = fake();
    let inputs = authz_inputs(f);
    // a check costs 350,000: two fit in the per-call limit, three do not
    let two = "authorizer.path('/a').check('get').allowed() || authorizer.path('/b').check('get').allowed()";
    let e = compile(two, authz_env(), Want::Bool).unwrap();
    let mut ev = Evaluator::new(&inputs, &[], RUNTIME_BUDGET);
    assert_eq!(ev.eval(&e), Ok(Ok(Evaluated::Bool(false))));
    // twice authorizer 1, path 1, check 350,000, allowed 1 (`||` is free)
    assert_eq!(RUNTIME_BUDGET - ev.remaining(), 2 * 350_003);
    let three = format!("{two} || authorizer.path('/c').check('get').allowed()");
    let e = compile(&three, authz_env(), Want::Bool).unwrap();
    let r = Evaluator::new(&inputs, &[], RUNTIME_BUDGET)
        .eval(&e)
        .unwrap();
    assert!(
        r.unwrap_err()
            .ends_with("operation cancelled: actual cost limit exceeded"),
        "three checks are over the per-call limit"
    );
    // a selector costs its parse: 10 + ceil(0.1 * n) + 50 * ceil(0.5 * n)
    let sel =
        "authorizer.group('').resource('pods').labelSelector('app=web').check('list').allowed()";
    let e = compile(sel, authz_env(), Want::Bool).unwrap();
    let mut ev = Evaluator::new(&inputs, &[], RUNTIME_BUDGET);
    assert_eq!(ev.eval(&e), Ok(Ok(Evaluated::Bool(false))));
    // authorizer, group, resource, allowed 1 each, the check, the selector (7 chars)
    let selector = 10 + 1 + 50 * 4;
    assert_eq!(RUNTIME_BUDGET - ev.remaining(), 4 + 350_000 + selector);
}

/// A long chain of variables, each typed from the one before it: the type reaches the end
/// (each variable's type is worked out once, when it is compiled).
#[test]
fn variable_types_follow_a_long_chain() {
    let mut chain = vec![("v0".to_string(), "1".to_string())];
    for i in 1..1_000 {
        chain.push((format!("v{i}"), format!("variables.v{} + 1", i - 1)));
    }
    let pairs: Vec<(&str, &str)> = chain
        .iter()
        .map(|(n, s)| (n.as_str(), s.as_str()))
        .collect();
    let vars = declare(false, &pairs);
    let ok = |src: &str| compile(src, env(false, &vars), Want::Bool).map(|_| ());
    assert_eq!(ok("variables.v999 > 0"), Ok(()));
    assert_eq!(
        ok("variables.v999"),
        Err("must evaluate to bool but got int".into())
    );
}

/// `dyn(x)` is declared, as cel-go declares it: the way to step outside the declared type
/// of `request` (`dyn(request).foo`), evaluated as `x` itself.
#[test]
fn dyn_steps_outside_the_declared_types() {
    let ok = |src: &str| compile(src, env(false, &[]), Want::Bool);
    assert!(ok("dyn(request).foo == 1").is_ok());
    let e = ok("request.foo == 1").unwrap_err();
    assert!(e.ends_with("undefined field 'foo'"), "{e}");
    let obj = json!({"spec": {"replicas": 3}});
    let inputs = Inputs::new(Values {
        object: Some(&obj),
        ..Values::default()
    });
    let mut ev = Evaluator::new(&inputs, &[], RUNTIME_BUDGET);
    let e = ok("dyn(object.spec).replicas == 3 && dyn(2) + 1 == 3").unwrap();
    assert_eq!(ev.eval(&e), Ok(Ok(Evaluated::Bool(true))));
}
