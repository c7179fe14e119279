//! Compile-time handling of `x-kubernetes-validations`: parse, check, estimate cost,
//! instrument expressions for their runtime cost (`actual`), and report errors the way
//! apiextensions does (`compilation failed: ...`, `estimated rule cost exceeds budget ...`).

use std::panic::{catch_unwind, AssertUnwindSafe};

use kplane_types::validation::go_quote;
use kplane_types::Cause;
use kube_cel::cel::parser::Parser;
use kube_cel::cel::IdedExpr;

use super::actual;
use super::check::{self, Kind};
use super::decl::{cardinality_factor, unbounded_cardinality};
use super::rule::{CelRule, Program};
use crate::errors::{forbidden, invalid};
use crate::node::{Additional, Node};
use crate::options::CompileOptions;
use crate::path::join;

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

/// Where an expression is compiled: the node it is declared on, whether that is a resource
/// root, and whether `oldSelf` is optional there.
struct Site<'n> {
    node: &'n Node,
    resource_root: bool,
    optional_old_self: bool,
}

/// The estimated cost of one expression (a rule times how often it can run, or a
/// `messageExpression`), kept with the compiled schema so that the static limits can be
/// applied to a schema compiled without them.
#[derive(Debug)]
pub(crate) struct ExprCost {
    /// The expression's field path below the compiled schema's `field_prefix`.
    path: Box<str>,
    message_expression: bool,
    cost: u64,
}

/// What the per-expression limit's message calls the cost.
fn cost_name(message_expression: bool) -> &'static str {
    if message_expression {
        "estimated messageExpression cost"
    } else {
        "estimated rule cost"
    }
}

impl ExprCost {
    pub(crate) fn heap_size(&self) -> usize {
        std::mem::size_of::<ExprCost>() + self.path.len()
    }
}

/// The static cost limits of `opts` applied to `costs` (paths under `prefix`), as
/// apiextensions applies them: each expression over `max_cel_cost`, in compile order, then
/// the total over `max_total_cel_cost` with the (at most four) expressions that contributed
/// most, each at least 1% of that limit.
pub(crate) fn cost_limit_errors(
    costs: &[ExprCost],
    prefix: &str,
    opts: &CompileOptions,
) -> Vec<Cause> {
    let mut errs: Vec<Cause> = costs
        .iter()
        .filter(|c| c.cost > opts.max_cel_cost)
        .map(|c| {
            forbidden(
                join(prefix, &c.path),
                &cost_error(cost_name(c.message_expression), c.cost, opts.max_cel_cost),
            )
        })
        .collect();
    errs.extend(total_cost_errors(
        costs.iter().map(|c| (join(prefix, &c.path), c.cost)),
        prefix,
        opts.max_total_cel_cost,
    ));
    errs
}

/// `TotalCost.ObserveExpressionCost` over every expression, then the per-schema check.
fn total_cost_errors(
    costs: impl Iterator<Item = (String, u64)>,
    prefix: &str,
    limit: u64,
) -> Vec<Cause> {
    let mut total = 0u64;
    let mut most_expensive: Vec<(u64, String)> = Vec::new();
    for (path, cost) in costs {
        total = total.saturating_add(cost);
        if cost < limit / 100 {
            continue;
        }
        most_expensive.push((cost, path));
        most_expensive.sort_by_key(|e| std::cmp::Reverse(e.0));
        most_expensive.truncate(4);
    }
    if total <= limit {
        return Vec::new();
    }
    let mut errs: Vec<Cause> = most_expensive
        .into_iter()
        .map(|(_, path)| forbidden(path, "contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"))
        .collect();
    errs.push(forbidden(
        prefix.to_string(),
        &cost_error(
            "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
            total,
            limit,
        ),
    ));
    errs
}

/// Compiles all rules of a schema tree and accounts their estimated costs.
pub(crate) struct CelCompiler<'o> {
    opts: &'o CompileOptions,
    pub errs: Vec<Cause>,
    /// Every expression's cost, with its full path, in compile order.
    costs: Vec<ExprCost>,
}

impl<'o> CelCompiler<'o> {
    pub(crate) fn new(opts: &'o CompileOptions) -> CelCompiler<'o> {
        CelCompiler {
            opts,
            errs: Vec::new(),
            costs: Vec::new(),
        }
    }

    /// Compiles the rules of `n` and below. `cardinality` is how many times `n` can occur:
    /// the product of `maxItems`/`maxProperties` of the lists and maps above it, `None`
    /// when one of them is unbounded (then each rule's own estimate applies).
    pub(crate) fn compile_tree(
        &mut self,
        n: &mut Node,
        cardinality: Option<u64>,
        resource_root: bool,
    ) {
        if !n.cel_below {
            return;
        }
        let children = cardinality
            .zip(cardinality_factor(n))
            .map(|(c, f)| c.saturating_mul(f));
        for (_, p) in n.properties.iter_mut() {
            let root = p.embedded;
            self.compile_tree(p, children, root);
        }
        if let Some(items) = n.items.as_deref_mut() {
            let root = items.embedded;
            self.compile_tree(items, children, root);
        }
        if let Additional::Schema(ap) = &mut n.additional {
            let root = ap.embedded;
            self.compile_tree(ap, children, root);
        }
        // under an unbounded list or map: as many of the smallest `n` as fit in a request
        let cardinality = cardinality.unwrap_or_else(|| unbounded_cardinality(n, resource_root));
        let mut rules = std::mem::take(&mut n.rules);
        for r in rules.iter_mut() {
            self.compile_rule(r, n, cardinality, resource_root);
            r.path = String::new();
        }
        n.rules = rules;
    }

    /// Parses and checks one expression of `r` at `site`, reporting errors at `path`.
    fn check(
        &mut self,
        r: &CelRule,
        src: &str,
        site: &Site<'_>,
        path: &str,
        what: &str,
    ) -> Option<(IdedExpr, check::Analysis)> {
        let detail = match parse(src) {
            Err(e) => e,
            Ok(expr) => {
                match check::analyze(&expr, site.node, site.resource_root, site.optional_old_self) {
                    Ok(a) => return Some((expr, a)),
                    Err(detail) => format!("ERROR: <input>: {detail}"),
                }
            }
        };
        self.errs.push(invalid(
            path.to_string(),
            &r.go_repr(),
            &format!("{what}compilation failed: {detail}"),
        ));
        None
    }

    /// The per-expression limit (reported among the other errors, in upstream's order);
    /// the cost is kept for the per-CRD total.
    fn limit(&mut self, path: &str, message_expression: bool, cost: u64) {
        if cost > self.opts.max_cel_cost {
            self.errs.push(forbidden(
                path.to_string(),
                &cost_error(cost_name(message_expression), cost, self.opts.max_cel_cost),
            ));
        }
        self.costs.push(ExprCost {
            path: path.into(),
            message_expression,
            cost,
        });
    }

    fn compile_rule(&mut self, r: &mut CelRule, n: &Node, cardinality: u64, resource_root: bool) {
        if r.rule.trim().is_empty() {
            return;
        }
        let rule_path = join(&r.path, "rule");
        let before = self.errs.len();
        let site = Site {
            node: n,
            resource_root,
            optional_old_self: r.optional_old_self == Some(true),
        };
        let mut uses_old_self = false;
        let program = match self.check(r, &r.rule, &site, &rule_path, "") {
            Some((expr, a)) if matches!(a.kind, Kind::Bool | Kind::Dyn) => {
                uses_old_self = a.uses_old_self;
                // the rule runs once per occurrence of its node
                let cost = a.cost.saturating_mul(cardinality);
                self.limit(&rule_path, false, cost);
                Some((expr, a.nodes))
            }
            Some(_) => {
                self.errs.push(invalid(
                    rule_path.clone(),
                    &r.go_repr(),
                    "cel expression must evaluate to a bool",
                ));
                None
            }
            None => None,
        };
        // as upstream, a messageExpression is compiled only once its rule compiles, and
        // its cost is its own (not multiplied by the cardinality)
        let mut message = None;
        let message_src = r
            .message_expression
            .as_deref()
            .filter(|s| program.is_some() && !s.trim().is_empty());
        if let Some(src) = message_src {
            let mp = join(&r.path, "messageExpression");
            match self.check(r, src, &site, &mp, "messageExpression ") {
                Some((expr, a)) if matches!(a.kind, Kind::String | Kind::Dyn) => {
                    self.limit(&mp, true, a.cost);
                    message = Some((expr, a.nodes));
                }
                Some(_) => self.errs.push(invalid(
                    mp,
                    &r.go_repr(),
                    "messageExpression must evaluate to a string",
                )),
                None => {}
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
        if let Some((expr, nodes)) = program {
            let (message_expr, message_nodes) = match message {
                Some((m, mn)) => (Some(actual::instrument(m)), mn),
                None => (None, 0),
            };
            r.program = Some(Program {
                expr: actual::instrument(expr),
                message_expr,
                uses_old_self,
                nodes,
                message_nodes,
            });
        }
    }

    /// The per-CRD total check; returns all CEL errors, and every expression's cost with
    /// its path relative to `prefix`.
    pub(crate) fn finish(mut self, prefix: &str) -> (Vec<Cause>, Vec<ExprCost>) {
        let totals = total_cost_errors(
            self.costs.iter().map(|c| (c.path.to_string(), c.cost)),
            prefix,
            self.opts.max_total_cel_cost,
        );
        self.errs.extend(totals);
        for c in self.costs.iter_mut() {
            let rel = c.path.strip_prefix(prefix).unwrap_or(&c.path);
            c.path = rel.strip_prefix('.').unwrap_or(rel).into();
        }
        (self.errs, self.costs)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Found by the `crd_schema_and_cel` fuzz target: nested about twice past the `cel`
    /// parser's recursion limit (96), its depth counter goes below zero, a panic inside
    /// the parser where overflow is checked (debug builds; release builds wrap, and the
    /// limit is reported). Either way `parse` answers a parse error, never a panic. On a
    /// thread of its own: the parser's frames are large in a debug build.
    #[test]
    fn an_expression_nested_past_the_recursion_limit_is_a_parse_error() {
        let run = || {
            for src in [
                format!("{}1 == 1", "true ? 1 : ".repeat(500)),
                format!("{}1{}", "(".repeat(200), ")".repeat(200)),
            ] {
                assert!(parse(&src).is_err(), "{}", &src[..40]);
            }
            assert!(parse(&format!("{}1 == 1", "true ? 1 : ".repeat(20))).is_ok());
        };
        let thread = std::thread::Builder::new().stack_size(256 << 20);
        thread.spawn(run).unwrap().join().unwrap();
    }
}
