use serde_json::json;

use super::*;

fn env(params: bool, variables: &[String]) -> Env<'_> {
    Env { params, variables }
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
    let vars = vec!["a".to_string()];
    assert!(compile("variables.a > 1", env(false, &vars), Want::Bool).is_ok());
    let e = compile("variables.b > 1", env(false, &vars), Want::Bool).unwrap_err();
    assert!(e.ends_with("undefined field 'b'"), "{e}");
    let e = compile("object.", env(false, &[]), Want::Bool).unwrap_err();
    assert!(
        e.starts_with("compilation failed: ERROR: <input>:1:"),
        "{e}"
    );
}

fn var(name: &str, src: &str, before: &[String]) -> Variable {
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
    let vars = vec![
        var("p", "object.spec.parallelism", &[]),
        var("max", "int(params.data.max)", &["p".into()]),
        var("bad", "object.spec.missing", &["p".into(), "max".into()]),
    ];
    let names: Vec<String> = vars.iter().map(|v| v.name.clone()).collect();
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
