//! CEL for admission policies (`k8s.io/apiserver/pkg/admission/plugin/cel`): expressions
//! over the variables `object`, `oldObject`, `request`, `namespaceObject`, `params` (when
//! the policy has a `paramKind`) and `variables` (the policy's named expressions, each
//! seeing the ones declared before it), compiled once and evaluated per request under
//! kube-apiserver's runtime limits.
//!
//! - [`compile`] parses and checks an expression: undeclared identifiers and functions, a
//!   `variables.<name>` that is not declared (yet), and the result type an expression of
//!   its field must have (`must evaluate to bool but got int`). `object`, `oldObject` and
//!   `params` are `dyn`: their fields are not checked against a schema; `request` and
//!   `namespaceObject` have the types upstream declares for them (`admission_types`);
//!   `variables.<name>` has the type of that variable's expression (a [`Declared`]), and a
//!   result the checker can only call `dyn` passes unless the expression is a bare
//!   variable or field. `authorizer` and
//!   `authorizer.requestResource` (the `authz` library) are declared everywhere but in
//!   `messageExpression`, as upstream declares them.
//! - [`Inputs`] converts a request's values once (with an [`Authorize`] function the caller
//!   prepared for the request's checks, synchronous); an [`Evaluator`] then evaluates
//!   expressions against them under one runtime budget (kube-apiserver's
//!   `RuntimeCELCostBudget` for one policy's validations, `PerCallLimit` per expression;
//!   cost as cel-go computes it, see `actual`). Variables are evaluated when an expression
//!   refers to them, at most once per evaluator, their cost charged to that expression.

use std::collections::HashMap;
use std::sync::Arc;

use kube_cel::cel::common::ast::{EntryExpr, Expr};
use kube_cel::cel::objects::{Key, Map as CelMap};
use kube_cel::cel::{Context, IdedExpr, Value as Cel};
use serde_json::Value;

use super::actual;
use super::authz;
pub use super::authz::{Authorize, AuthzDecision, AuthzRequest, ResourceAttributes, Target};
use super::check::{self, Kind, VarTy};
use super::compile::parse;
use super::eval::{error_text, run, to_cel, Outcome, ROOT};

/// `celconfig.PerCallLimit`: what one expression may cost.
pub const PER_CALL_LIMIT: u64 = 1_000_000;
/// `celconfig.RuntimeCELCostBudget`: what one policy's expressions of one kind may cost
/// together for one request.
pub const RUNTIME_BUDGET: u64 = 10_000_000;
/// `celconfig.RuntimeCELCostBudgetMatchConditions`.
pub const MATCH_CONDITIONS_BUDGET: u64 = 2_500_000;
/// `celconfig.MaxEvaluatedMessageExpressionSizeBytes`.
pub const MAX_MESSAGE_BYTES: usize = 5 * 1024;
/// What an evaluation past the budget reports (`cel.ErrOutOfBudget`'s detail).
pub const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";

/// The result type an expression must have (its field's `ReturnTypes`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Want {
    /// `validations[].expression`, `matchConditions[].expression`.
    Bool,
    /// `messageExpression`.
    String,
    /// `auditAnnotations[].valueExpression`.
    StringOrNull,
    /// `variables[].expression`.
    Any,
}

/// What an expression may refer to.
#[derive(Clone, Copy, Debug)]
pub struct Env<'a> {
    /// The policy has a `paramKind` (`params` is declared).
    pub params: bool,
    /// `authorizer` and `authorizer.requestResource` are declared (everywhere but in
    /// `messageExpression`).
    pub authorizer: bool,
    /// The variables declared before the expression, in order.
    pub variables: &'a [Declared],
}

/// A policy variable as the expressions after it see it: its name and the type of its
/// expression, worked out once when it was compiled (`dyn` when it did not compile).
#[derive(Clone, Debug)]
pub struct Declared {
    name: String,
    ty: VarTy,
}

impl Declared {
    /// The variable `name` whose expression compiled to `expr` (`None`: it did not).
    pub fn new(name: &str, expr: Option<&Expression>) -> Self {
        Declared {
            name: name.to_string(),
            ty: expr.map_or(VarTy::DYN, |e| e.ty.clone()),
        }
    }

    /// The variable's name.
    pub fn name(&self) -> &str {
        &self.name
    }
}

/// A compiled expression.
#[derive(Debug)]
pub struct Expression {
    src: String,
    expr: IdedExpr,
    /// The variables it reads, by name (`None`: `variables` itself, so all of them).
    uses: Option<Vec<String>>,
    /// The type a variable of this expression has to the expressions after it.
    ty: VarTy,
}

impl Expression {
    /// The expression as written.
    pub fn source(&self) -> &str {
        &self.src
    }
}

/// A named variable of a policy (`spec.variables[]`).
#[derive(Debug)]
pub struct Variable {
    pub name: String,
    pub expr: Expression,
}

const VARIABLES: &str = "variables";
const AUTHORIZER: &str = "authorizer";
const REQUEST_RESOURCE: &str = "authorizer.requestResource";

/// Compiles `src` in `env` for a field that wants `want`; the error is upstream's detail
/// (`compilation failed: ERROR: <input>: ...`, `must evaluate to bool but got int`).
pub fn compile(src: &str, env: Env<'_>, want: Want) -> Result<Expression, String> {
    stacker::grow(crate::options::COMPILE_STACK_BYTES, || {
        compile_here(src, env.params, env.authorizer, Some(env.variables), want)
    })
}

/// Compiles a match condition as upstream's stateless compiler does (the validation of
/// every `matchConditions[].expression`, and an admission webhook's conditions when they
/// run): a bool over `object`, `oldObject`, `request`, `namespaceObject`, `authorizer`,
/// `authorizer.requestResource` and, with `params`, `params`; `variables` is not declared.
pub fn compile_condition(src: &str, params: bool) -> Result<Expression, String> {
    stacker::grow(crate::options::COMPILE_STACK_BYTES, || {
        compile_here(src, params, true, None, Want::Bool)
    })
}

/// `variables`: the variables declared before the expression, `None` when `variables`
/// itself is not declared.
fn compile_here(
    src: &str,
    params: bool,
    authorizer: bool,
    variables: Option<&[Declared]>,
    want: Want,
) -> Result<Expression, String> {
    let expr = parse(src).map_err(|e| format!("compilation failed: {e}"))?;
    let mut names = vec!["object", "oldObject", "request", "namespaceObject"];
    if variables.is_some() {
        names.push(VARIABLES);
    }
    if params {
        names.push("params");
    }
    let typed: Option<Vec<(&str, &VarTy)>> =
        variables.map(|declared| declared.iter().map(|d| (d.name.as_str(), &d.ty)).collect());
    let (kind, ty, var_ty) = check::analyze_dyn(&expr, &names, authorizer, typed.as_deref())
        .map_err(|d| format!("compilation failed: ERROR: <input>: {d}"))?;
    let mut uses = Some(Vec::new());
    if let Some(declared) = variables {
        let names: Vec<String> = declared.iter().map(|d| d.name.clone()).collect();
        variable_uses(&expr, &names, &mut uses)
            .map_err(|d| format!("compilation failed: ERROR: <input>: {d}"))?;
    }
    // cel-go types a bare variable or field of a `dyn` as `dyn`; elsewhere kplane's
    // checker may say `dyn` where cel-go knows better, so only those are refused
    let bare = matches!(expr.expr, Expr::Ident(_) | Expr::Select(_));
    let fits = match (want, kind) {
        (Want::Any, _) => true,
        (_, Kind::Dyn) => !bare,
        (Want::Bool, k) => k == Kind::Bool,
        (Want::String, k) => k == Kind::String,
        (Want::StringOrNull, k) => k == Kind::String || ty == "null_type",
    };
    if !fits {
        return Err(match want {
            Want::Bool => format!("must evaluate to bool but got {ty}"),
            Want::String => format!("must evaluate to string but got {ty}"),
            _ => format!("must evaluate to one of [string null_type] but got {ty}"),
        });
    }
    let expr = match authorizer {
        true => request_resource_ident(expr),
        false => expr,
    };
    Ok(Expression {
        src: src.to_string(),
        expr: actual::instrument(expr),
        uses,
        ty: var_ty,
    })
}

/// The variable `authorizer.requestResource` is bound under its qualified name: `e` with
/// every selection of `requestResource` from `authorizer` made a read of that name
/// (cel-go resolves the qualified name before the selection), except where a
/// comprehension's variable named `authorizer` hides it.
fn request_resource_ident(mut e: IdedExpr) -> IdedExpr {
    fn walk(e: &mut IdedExpr) {
        if let Expr::Select(sel) = &e.expr {
            if !sel.test
                && sel.field == "requestResource"
                && matches!(&sel.operand.expr, Expr::Ident(v) if v == AUTHORIZER)
            {
                e.expr = Expr::Ident(REQUEST_RESOURCE.to_string());
                return;
            }
        }
        match &mut e.expr {
            Expr::Select(sel) => walk(&mut sel.operand),
            Expr::Call(c) => {
                if let Some(t) = c.target.as_deref_mut() {
                    walk(t);
                }
                c.args.iter_mut().for_each(walk);
            }
            Expr::List(l) => l.elements.iter_mut().for_each(walk),
            Expr::Map(m) => {
                for en in m.entries.iter_mut() {
                    match &mut en.expr {
                        EntryExpr::MapEntry(me) => {
                            walk(&mut me.key);
                            walk(&mut me.value);
                        }
                        EntryExpr::StructField(f) => walk(&mut f.value),
                    }
                }
            }
            Expr::Comprehension(c) => {
                walk(&mut c.iter_range);
                walk(&mut c.accu_init);
                let hides = c.iter_var == AUTHORIZER
                    || c.accu_var == AUTHORIZER
                    || c.iter_var2.as_deref() == Some(AUTHORIZER);
                if !hides {
                    walk(&mut c.loop_cond);
                    walk(&mut c.loop_step);
                    walk(&mut c.result);
                }
            }
            _ => {}
        }
    }
    walk(&mut e);
    e
}

/// Collects the `variables.<name>` that `e` reads into `uses` (`None` once `variables`
/// is read another way); a name not in `declared` is cel-go's `undefined field`.
fn variable_uses(
    e: &IdedExpr,
    declared: &[String],
    uses: &mut Option<Vec<String>>,
) -> Result<(), String> {
    match &e.expr {
        Expr::Select(sel) => {
            if matches!(&sel.operand.expr, Expr::Ident(v) if v == VARIABLES) {
                if !declared.contains(&sel.field) {
                    return Err(format!("undefined field '{}'", sel.field));
                }
                if let Some(u) = uses {
                    if !u.contains(&sel.field) {
                        u.push(sel.field.clone());
                    }
                }
                return Ok(());
            }
            variable_uses(&sel.operand, declared, uses)
        }
        Expr::Ident(v) if v == VARIABLES => {
            *uses = None;
            Ok(())
        }
        Expr::Call(c) => {
            if let Some(t) = &c.target {
                variable_uses(t, declared, uses)?;
            }
            c.args
                .iter()
                .try_for_each(|a| variable_uses(a, declared, uses))
        }
        Expr::List(l) => l
            .elements
            .iter()
            .try_for_each(|x| variable_uses(x, declared, uses)),
        Expr::Map(m) => m.entries.iter().try_for_each(|en| match &en.expr {
            EntryExpr::MapEntry(me) => {
                variable_uses(&me.key, declared, uses)?;
                variable_uses(&me.value, declared, uses)
            }
            EntryExpr::StructField(f) => variable_uses(&f.value, declared, uses),
        }),
        Expr::Comprehension(c) => [
            &c.iter_range,
            &c.accu_init,
            &c.loop_cond,
            &c.loop_step,
            &c.result,
        ]
        .into_iter()
        .try_for_each(|x| variable_uses(x, declared, uses)),
        _ => Ok(()),
    }
}

/// A request's values as CEL sees them, converted once per request.
#[derive(Clone, Debug)]
pub struct Inputs {
    object: Cel,
    old_object: Cel,
    request: Cel,
    namespace_object: Cel,
    params: Cel,
    /// `authorizer` and `authorizer.requestResource`, when the request has a requester.
    authorizer: Option<(Cel, Cel)>,
}

/// The JSON values of a request (`None`: CEL's `null`).
#[derive(Clone, Copy, Debug, Default)]
pub struct Values<'a> {
    pub object: Option<&'a Value>,
    pub old_object: Option<&'a Value>,
    pub request: Option<&'a Value>,
    pub namespace_object: Option<&'a Value>,
    pub params: Option<&'a Value>,
}

fn cel_of(v: Option<&Value>) -> Cel {
    v.map_or(Cel::Null, |v| to_cel(v, None, false, 0))
}

impl Inputs {
    /// Converts `v`.
    pub fn new(v: Values<'_>) -> Inputs {
        Inputs {
            object: cel_of(v.object),
            old_object: cel_of(v.old_object),
            request: cel_of(v.request),
            namespace_object: cel_of(v.namespace_object),
            params: cel_of(v.params),
            authorizer: None,
        }
    }

    /// The same inputs with `authorizer` deciding as `authorize` does, and
    /// `authorizer.requestResource` the check of `request` (the request's own group,
    /// resource, subresource, namespace and name).
    pub fn with_authorizer(self, authorize: Authorize, request: ResourceAttributes) -> Inputs {
        let vars = (
            authz::authorizer(authorize.clone()),
            authz::request_resource(authorize, request),
        );
        Inputs {
            authorizer: Some(vars),
            ..self
        }
    }

    /// The same inputs with other `params`.
    pub fn with_params(&self, params: Option<&Value>) -> Inputs {
        Inputs {
            params: cel_of(params),
            ..self.clone()
        }
    }
}

/// What an expression evaluated to.
#[derive(Clone, Debug, PartialEq)]
pub enum Evaluated {
    Bool(bool),
    String(String),
    Null,
    /// Another type, by cel-go's name.
    Other(&'static str),
}

/// The budget ran out: evaluation of this kind of expression stops ([`OUT_OF_BUDGET`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OutOfBudget;

/// Evaluates expressions against one request's [`Inputs`] under one budget.
pub struct Evaluator<'a> {
    inputs: &'a Inputs,
    variables: &'a [Variable],
    /// Each variable's value once evaluated (an error is upstream's message).
    values: Vec<Option<Result<Cel, String>>>,
    remaining: u64,
}

impl std::fmt::Debug for Evaluator<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Evaluator")
            .field("remaining", &self.remaining)
            .finish_non_exhaustive()
    }
}

impl<'a> Evaluator<'a> {
    /// An evaluator with `budget` to spend, `variables` being the policy's.
    pub fn new(inputs: &'a Inputs, variables: &'a [Variable], budget: u64) -> Self {
        Evaluator {
            inputs,
            variables,
            values: variables.iter().map(|_| None).collect(),
            remaining: budget,
        }
    }

    /// What is left of the budget.
    pub fn remaining(&self) -> u64 {
        self.remaining
    }

    /// Evaluates `e`: its value, or the error upstream reports
    /// (`expression '<e>' resulted in error: <why>`).
    pub fn eval(&mut self, e: &Expression) -> Result<Result<Evaluated, String>, OutOfBudget> {
        stacker::maybe_grow(
            crate::options::EVAL_RED_ZONE_BYTES,
            crate::options::EVAL_STACK_BYTES,
            || self.eval_here(e),
        )
    }

    fn eval_here(&mut self, e: &Expression) -> Result<Result<Evaluated, String>, OutOfBudget> {
        let needed = self.needed(e);
        let mut composition = 0u64;
        let mut failed = None;
        for &i in &needed {
            composition = composition.saturating_add(self.variable(i));
            if let Some(Some(Err(why))) = self.values.get(i) {
                failed.get_or_insert_with(|| why.clone());
            }
        }
        let result = match failed {
            Some(why) => Err(why),
            None => {
                let ctx = self.context();
                let (out, cost) = run(&e.expr, &ctx, PER_CALL_LIMIT);
                composition = composition.saturating_add(cost);
                match out {
                    Outcome::Value(v) => Ok(evaluated(&v)),
                    Outcome::Error(err) => Err(error_text(&err)),
                    Outcome::CostLimit => Err(actual::LIMIT_EXCEEDED.to_string()),
                }
            }
        };
        if composition > self.remaining {
            self.remaining = 0;
            return Err(OutOfBudget);
        }
        self.remaining -= composition;
        Ok(result.map_err(|why| format!("expression '{}' resulted in error: {why}", e.src)))
    }

    /// The indexes of the variables `e` needs, with what they need, in order.
    fn needed(&self, e: &Expression) -> Vec<usize> {
        let index = |n: &str| self.variables.iter().position(|v| v.name == n);
        let mut need = vec![false; self.variables.len()];
        let mark = |uses: &Option<Vec<String>>, need: &mut Vec<bool>, upto: usize| match uses {
            None => need.iter_mut().take(upto).for_each(|n| *n = true),
            Some(u) => u
                .iter()
                .filter_map(|n| index(n))
                .for_each(|i| need[i] = true),
        };
        mark(&e.uses, &mut need, self.variables.len());
        // a variable reads only earlier ones: one pass from the last covers the closure
        for i in (0..self.variables.len()).rev() {
            if need[i] {
                mark(&self.variables[i].expr.uses, &mut need, i);
            }
        }
        (0..need.len()).filter(|&i| need[i]).collect()
    }

    /// Evaluates variable `i` unless done; returns the cost spent now.
    fn variable(&mut self, i: usize) -> u64 {
        if self.values[i].is_some() {
            return 0;
        }
        let variables = self.variables;
        let v = &variables[i];
        let ctx = self.context();
        let (out, cost) = run(&v.expr.expr, &ctx, PER_CALL_LIMIT);
        let fails =
            |why: String| format!("composited variable {:?} fails to evaluate: {why}", v.name);
        let value = match out {
            Outcome::Value(x) => Ok(x),
            Outcome::Error(err) => Err(fails(error_text(&err))),
            Outcome::CostLimit => Err(fails(actual::LIMIT_EXCEEDED.to_string())),
        };
        drop(ctx);
        self.values[i] = Some(value);
        cost
    }

    /// The inputs with `variables` bound to the variables evaluated so far.
    fn context(&self) -> Context<'static> {
        let mut map: HashMap<Key, Cel> = HashMap::new();
        for (v, value) in self.variables.iter().zip(&self.values) {
            if let Some(Ok(x)) = value {
                map.insert(Key::String(Arc::new(v.name.clone())), x.clone());
            }
        }
        let i = self.inputs;
        let mut ctx = ROOT.new_inner_scope();
        ctx.add_variable_from_value("object", i.object.clone());
        ctx.add_variable_from_value("oldObject", i.old_object.clone());
        ctx.add_variable_from_value("request", i.request.clone());
        ctx.add_variable_from_value("namespaceObject", i.namespace_object.clone());
        ctx.add_variable_from_value("params", i.params.clone());
        if let Some((a, r)) = &i.authorizer {
            ctx.add_variable_from_value(AUTHORIZER, a.clone());
            ctx.add_variable_from_value(REQUEST_RESOURCE, r.clone());
        }
        ctx.add_variable_from_value(VARIABLES, Cel::Map(CelMap { map: Arc::new(map) }));
        ctx
    }
}

/// How a list of match conditions came out for one request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Matched {
    /// None is false and none failed.
    Yes,
    /// One is false (whatever the others did).
    No,
    /// None is false and some failed: one error's message, several as Go's aggregate
    /// `[a, b]`, or [`OUT_OF_BUDGET`]; the caller's failure policy decides.
    Error(String),
}

/// `matchconditions.Matcher.Match`: every condition evaluated in order under
/// [`MATCH_CONDITIONS_BUDGET`] (running out of it is an error, even after a false one),
/// then a false one means no match, else any error is reported. A condition that did not
/// compile (`Err`, the compiler's message) is an error, `compilation error: <why>`.
pub fn match_conditions(conditions: &[Result<Expression, String>], inputs: &Inputs) -> Matched {
    let mut ev = Evaluator::new(inputs, &[], MATCH_CONDITIONS_BUDGET);
    let mut results = Vec::with_capacity(conditions.len());
    for c in conditions {
        let r = match c {
            Ok(e) => ev.eval(e),
            Err(why) => Ok(Err(format!("compilation error: {why}"))),
        };
        match r {
            Err(OutOfBudget) => return Matched::Error(OUT_OF_BUDGET.into()),
            Ok(r) => results.push(r),
        }
    }
    let mut errors = Vec::new();
    for r in results {
        match r {
            Ok(Evaluated::Bool(false)) => return Matched::No,
            Ok(_) => {}
            Err(why) => errors.push(why),
        }
    }
    match errors.len() {
        0 => Matched::Yes,
        1 => Matched::Error(errors.remove(0)),
        _ => Matched::Error(format!("[{}]", errors.join(", "))),
    }
}

fn evaluated(v: &Cel) -> Evaluated {
    match v {
        Cel::Bool(b) => Evaluated::Bool(*b),
        Cel::String(s) => Evaluated::String(s.to_string()),
        Cel::Null => Evaluated::Null,
        Cel::Int(_) => Evaluated::Other("int"),
        Cel::UInt(_) => Evaluated::Other("uint"),
        Cel::Float(_) => Evaluated::Other("double"),
        Cel::Bytes(_) => Evaluated::Other("bytes"),
        Cel::List(_) => Evaluated::Other("list"),
        Cel::Map(_) => Evaluated::Other("map"),
        Cel::Duration(_) => Evaluated::Other("google.protobuf.Duration"),
        Cel::Timestamp(_) => Evaluated::Other("google.protobuf.Timestamp"),
        _ => Evaluated::Other("dyn"),
    }
}

#[cfg(test)]
#[path = "policy_tests.rs"]
mod tests;
