//! Compile-time handling of `x-kubernetes-validations`: parse, check, estimate cost,
//! instrument comprehensions for the runtime budget, and report errors the way
//! apiextensions does (`compilation failed: ...`, `estimated rule cost exceeds budget ...`).

use std::panic::{catch_unwind, AssertUnwindSafe};

use kplane_types::validation::go_quote;
use kplane_types::Cause;
use kube_cel::cel::common::ast::{CallExpr, EntryExpr, Expr};
use kube_cel::cel::parser::Parser;
use kube_cel::cel::IdedExpr;

use super::check::{self, max_entries, Kind};
use super::{CelRule, Program};
use crate::errors::{forbidden, invalid};
use crate::node::{Additional, Node};
use crate::path::join;
use crate::CompileOptions;

/// Name of the function the instrumented loop conditions call.
pub(crate) const TICK: &str = "kplaneTick";

/// Parses a CEL expression, never panicking.
pub(crate) fn parse(src: &str) -> Result<IdedExpr, String> {
    match catch_unwind(AssertUnwindSafe(|| {
        Parser::new().enable_optional_syntax(true).parse(src)
    })) {
        Ok(Ok(e)) => Ok(e),
        Ok(Err(errs)) => Err(errs.to_string()),
        Err(_) => Err("ERROR: <input>:1:1: the expression could not be parsed".into()),
    }
}

/// `getCostErrorMessage`.
fn cost_error(what: &str, cost: u64, limit: u64) -> String {
    let factor = cost as f64 / limit.max(1) as f64;
    let f = if factor > 100.0 {
        "more than 100x".to_string()
    } else if factor < 1.5 {
        format!("{factor:.6}x")
    } else {
        format!("{factor:.1}x")
    };
    format!("{what} exceeds budget by factor of {f} (try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)")
}

/// Makes every comprehension charge the runtime budget once per iteration.
fn instrument(e: &mut IdedExpr) {
    match &mut e.expr {
        Expr::Comprehension(c) => {
            instrument(&mut c.iter_range);
            instrument(&mut c.accu_init);
            instrument(&mut c.loop_cond);
            instrument(&mut c.loop_step);
            instrument(&mut c.result);
            let cond = std::mem::take(&mut c.loop_cond);
            c.loop_cond = IdedExpr {
                id: cond.id,
                expr: Expr::Call(CallExpr {
                    func_name: TICK.to_string(),
                    target: None,
                    args: vec![
                        IdedExpr {
                            id: cond.id,
                            expr: Expr::Ident(c.accu_var.clone()),
                        },
                        cond,
                    ],
                }),
            };
        }
        Expr::Call(call) => {
            if let Some(t) = call.target.as_mut() {
                instrument(t);
            }
            for a in call.args.iter_mut() {
                instrument(a);
            }
        }
        Expr::Select(s) => instrument(&mut s.operand),
        Expr::List(l) => l.elements.iter_mut().for_each(instrument),
        Expr::Map(m) => {
            for entry in m.entries.iter_mut() {
                if let EntryExpr::MapEntry(me) = &mut entry.expr {
                    instrument(&mut me.key);
                    instrument(&mut me.value);
                }
            }
        }
        _ => {}
    }
}

/// Compiles all rules of a schema tree and accounts their estimated costs.
pub(crate) struct CelCompiler<'o> {
    opts: &'o CompileOptions,
    pub errs: Vec<Cause>,
    total: u64,
    most_expensive: Vec<(u64, String)>,
}

impl<'o> CelCompiler<'o> {
    pub(crate) fn new(opts: &'o CompileOptions) -> CelCompiler<'o> {
        CelCompiler {
            opts,
            errs: Vec::new(),
            total: 0,
            most_expensive: Vec::new(),
        }
    }

    /// Compiles the rules of `n` and below; `cardinality` is how many times `n` can occur.
    pub(crate) fn compile_tree(&mut self, n: &mut Node, cardinality: u64, resource_root: bool) {
        if !n.cel_below {
            return;
        }
        let entries = max_entries(n);
        for (_, p) in n.properties.iter_mut() {
            let root = p.embedded;
            self.compile_tree(p, cardinality, root);
        }
        if let Some(items) = n.items.as_deref_mut() {
            let root = items.embedded;
            self.compile_tree(items, cardinality.saturating_mul(entries), root);
        }
        if let Additional::Schema(ap) = &mut n.additional {
            let root = ap.embedded;
            self.compile_tree(ap, cardinality.saturating_mul(entries), root);
        }
        let mut rules = std::mem::take(&mut n.rules);
        for r in rules.iter_mut() {
            self.compile_rule(r, n, cardinality, resource_root);
            r.path = String::new();
        }
        n.rules = rules;
    }

    fn observe(&mut self, path: String, cost: u64) {
        self.total = self.total.saturating_add(cost);
        if cost < self.opts.max_total_cel_cost / 100 {
            return;
        }
        self.most_expensive.push((cost, path));
        self.most_expensive.sort_by_key(|e| std::cmp::Reverse(e.0));
        self.most_expensive.truncate(4);
    }

    fn compile_rule(&mut self, r: &mut CelRule, n: &Node, cardinality: u64, resource_root: bool) {
        if r.rule.trim().is_empty() {
            return;
        }
        let rule_path = join(&r.path, "rule");
        let before = self.errs.len();
        let optional = r.optional_old_self == Some(true);
        let mut program = None;
        let mut uses_old_self = false;
        match parse(&r.rule) {
            Err(e) => self.errs.push(invalid(
                rule_path.clone(),
                &r.go_repr(),
                &format!("compilation failed: {e}"),
            )),
            Ok(expr) => match check::analyze(&expr, n, resource_root, optional) {
                Err(detail) => self.errs.push(invalid(
                    rule_path.clone(),
                    &r.go_repr(),
                    &format!("compilation failed: ERROR: <input>: {detail}"),
                )),
                Ok(a) => {
                    uses_old_self = a.uses_old_self;
                    if !matches!(a.kind, Kind::Bool | Kind::Dyn) {
                        self.errs.push(invalid(
                            rule_path.clone(),
                            &r.go_repr(),
                            "cel expression must evaluate to a bool",
                        ));
                    }
                    let cost = a.cost.saturating_mul(cardinality);
                    if cost > self.opts.max_cel_cost {
                        self.errs.push(forbidden(
                            rule_path.clone(),
                            &cost_error("estimated rule cost", cost, self.opts.max_cel_cost),
                        ));
                    }
                    self.observe(rule_path.clone(), cost);
                    program = Some((expr, a.nodes));
                }
            },
        }
        let mut message = None;
        if let Some(src) = r
            .message_expression
            .as_deref()
            .filter(|s| !s.trim().is_empty())
        {
            let mp = join(&r.path, "messageExpression");
            match parse(src) {
                Err(e) => self.errs.push(invalid(
                    mp,
                    &r.go_repr(),
                    &format!("messageExpression compilation failed: {e}"),
                )),
                Ok(expr) => match check::analyze(&expr, n, resource_root, false) {
                    Err(detail) => self.errs.push(invalid(
                        mp,
                        &r.go_repr(),
                        &format!("messageExpression compilation failed: ERROR: <input>: {detail}"),
                    )),
                    Ok(a) => {
                        if !matches!(a.kind, Kind::String | Kind::Dyn) {
                            self.errs.push(invalid(
                                mp.clone(),
                                &r.go_repr(),
                                "messageExpression must evaluate to a string",
                            ));
                        }
                        let cost = a.cost.saturating_mul(cardinality);
                        if cost > self.opts.max_cel_cost {
                            self.errs.push(forbidden(
                                mp.clone(),
                                &cost_error(
                                    "estimated messageExpression cost",
                                    cost,
                                    self.opts.max_cel_cost,
                                ),
                            ));
                        }
                        self.observe(mp, cost);
                        message = Some((expr, a.nodes));
                    }
                },
            }
        }
        if uses_old_self {
            if let Some(within) = &r.uncorrelatable {
                self.errs.push(invalid(
                    rule_path,
                    &go_quote(&r.rule),
                    &format!("oldSelf cannot be used on the uncorrelatable portion of the schema within {within}"),
                ));
            }
        } else if let Some(b) = r.optional_old_self {
            self.errs.push(invalid(
                join(&r.path, "optionalOldSelf"),
                &b.to_string(),
                "may not be set if oldSelf is not used in rule",
            ));
        }
        if self.errs.len() != before {
            return;
        }
        if let Some((mut expr, nodes)) = program {
            instrument(&mut expr);
            let (message_expr, message_base_cost) = match message {
                Some((mut m, mn)) => {
                    instrument(&mut m);
                    (Some(m), mn)
                }
                None => (None, 0),
            };
            r.program = Some(Program {
                expr,
                message_expr,
                uses_old_self,
                base_cost: nodes,
                message_base_cost,
            });
        }
    }

    /// The per-CRD total check; returns all CEL errors.
    pub(crate) fn finish(mut self, prefix: &str) -> Vec<Cause> {
        if self.total > self.opts.max_total_cel_cost {
            for (_, path) in std::mem::take(&mut self.most_expensive) {
                self.errs.push(forbidden(path, "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"));
            }
            self.errs.push(forbidden(
                prefix.to_string(),
                &cost_error("x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema", self.total, self.opts.max_total_cel_cost),
            ));
        }
        self.errs
    }
}
