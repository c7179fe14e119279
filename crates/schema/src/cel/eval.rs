//! Runtime evaluation of compiled rules (apiextensions `cel/validation.go`): `self` bound
//! to the node's value, `oldSelf` to the correlated old value (transition rules run only
//! when one exists, unless `optionalOldSelf`), errors shaped like upstream's.
//!
//! Ratcheting: every rule runs on update, as upstream's do. A failure of a rule without
//! `oldSelf` on a value unchanged from its old one (or, for a value that does not correlate,
//! such as an item of a `set` or atomic list, on its nearest correlated ancestor) is a
//! warning instead of an error; transition rules and evaluation errors are never ratcheted.
//!
//! Cost: each evaluation is charged its actual cost as cel-go computes it (`actual`). One
//! evaluation may spend at most the per-call limit (`PerCallLimit`), one `validate` call at
//! most the runtime budget (`RuntimeCELCostBudget`); beyond either, evaluation stops with
//! upstream's messages, the budget checked first as `validation.go` does.

use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, LazyLock};

use kplane_types::validation::go_quote;
use kplane_types::Cause;
use kube_cel::cel::objects::{Key, Map as CelMap, OptionalValue};
use kube_cel::cel::{Context, ExecutionError, Value as Cel};
use kube_cel::KubeCelExt;
use serde_json::Value;

use super::actual;
use super::rule::{CelRule, Reason};
use crate::errors::{duplicate, forbidden, invalid, required};
use crate::formats::{parse_date, parse_duration};
use crate::node::{Node, Ty};
use crate::path::{join, PathStack, Seg};
use crate::ratchet::{MapList, Ratchet};

use crate::path::MAX_WALK_DEPTH;
/// What a rule reports when the per-validation budget cannot pay for it.
const OUT_OF_BUDGET: &str =
    "validation failed due to running out of cost budget, no further validation rules will be run";
/// `MaxEvaluatedMessageExpressionSizeBytes`.
const MAX_MESSAGE_BYTES: usize = 5 * 1024;

/// Functions and libraries, built once per process and shared by all evaluations.
pub(crate) static ROOT: LazyLock<Context<'static>> = LazyLock::new(|| {
    let mut ctx = Context::default().with_all();
    super::arg_errors::register(&mut ctx);
    super::authz::register(&mut ctx);
    ctx.add_function(actual::CHARGE, actual::charge);
    ctx.add_function(actual::ARG, actual::arg);
    ctx.add_function(actual::WORK, actual::work);
    ctx
});

/// Converts a JSON value described by `n` into a CEL value (objects as maps with escaped
/// property names, formats `byte`/`duration`/`date`/`date-time` as bytes/durations/timestamps).
pub(crate) fn to_cel(v: &Value, n: Option<&Node>, resource_root: bool, depth: usize) -> Cel {
    if depth > MAX_WALK_DEPTH {
        return Cel::Null;
    }
    match v {
        Value::Null => Cel::Null,
        Value::Bool(b) => Cel::Bool(*b),
        Value::Number(num) => match (n.and_then(|n| n.ty), num.as_i64()) {
            (Some(Ty::Number), _) => Cel::Float(num.as_f64().unwrap_or(f64::NAN)),
            (_, Some(i)) => Cel::Int(i),
            (Some(Ty::Integer), None) => {
                let f = num.as_f64().unwrap_or(f64::NAN);
                if f.fract() == 0.0 && f.abs() < 9.2e18 {
                    Cel::Int(f as i64)
                } else {
                    Cel::Float(f)
                }
            }
            _ => Cel::Float(num.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => string_to_cel(s, n),
        Value::Array(a) => {
            let items = n.and_then(|n| n.items.as_deref());
            Cel::List(Arc::new(
                a.iter()
                    .map(|x| to_cel(x, items, items.is_some_and(|i| i.embedded), depth + 1))
                    .collect(),
            ))
        }
        Value::Object(m) => {
            let mut out: HashMap<Key, Cel> = HashMap::with_capacity(m.len());
            let Some(n) = n else {
                for (k, x) in m {
                    out.insert(
                        Key::String(Arc::new(k.clone())),
                        to_cel(x, None, false, depth + 1),
                    );
                }
                return Cel::Map(CelMap { map: Arc::new(out) });
            };
            let root = resource_root || n.embedded;
            let struct_like = !n.properties.is_empty() || root;
            for (k, x) in m {
                if root && (k == "apiVersion" || k == "kind") {
                    out.insert(
                        Key::String(Arc::new(k.clone())),
                        to_cel(x, None, false, depth + 1),
                    );
                } else if root && k == "metadata" {
                    let mut meta: HashMap<Key, Cel> = HashMap::new();
                    if let Some(mm) = x.as_object() {
                        for f in ["name", "generateName"] {
                            if let Some(s) = mm.get(f).and_then(Value::as_str) {
                                meta.insert(
                                    Key::String(Arc::new(f.to_string())),
                                    Cel::String(Arc::new(s.to_string())),
                                );
                            }
                        }
                    }
                    out.insert(
                        Key::String(Arc::new(k.clone())),
                        Cel::Map(CelMap {
                            map: Arc::new(meta),
                        }),
                    );
                } else if let Some(p) = n.property(k) {
                    if let Some(ek) = super::escaping::escape(k) {
                        out.insert(
                            Key::String(Arc::new(ek)),
                            to_cel(x, Some(p), p.embedded, depth + 1),
                        );
                    }
                } else if let Some(ap) = n.additional.schema() {
                    out.insert(
                        Key::String(Arc::new(k.clone())),
                        to_cel(x, Some(ap), ap.embedded, depth + 1),
                    );
                } else if !struct_like {
                    out.insert(
                        Key::String(Arc::new(k.clone())),
                        to_cel(x, None, false, depth + 1),
                    );
                }
            }
            Cel::Map(CelMap { map: Arc::new(out) })
        }
    }
}

fn string_to_cel(s: &str, n: Option<&Node>) -> Cel {
    let plain = || Cel::String(Arc::new(s.to_string()));
    // by the format as written, as the checker types it (`datetime` stays a string)
    match n.and_then(|n| n.format.as_ref()).map(|f| &*f.1) {
        Some("byte") => decode_base64(s)
            .map(|b| Cel::Bytes(Arc::new(b)))
            .unwrap_or_else(plain),
        Some("duration") => match parse_duration(s).and_then(|ns| i64::try_from(ns).ok()) {
            Some(ns) => Cel::Duration(chrono::Duration::nanoseconds(ns)),
            None => plain(),
        },
        Some("date-time") => match chrono::DateTime::parse_from_rfc3339(s) {
            Ok(t) => Cel::Timestamp(t),
            Err(_) => plain(),
        },
        Some("date") => {
            match parse_date(s).and_then(|(y, m, d)| chrono::NaiveDate::from_ymd_opt(y, m, d)) {
                Some(date) => match date.and_hms_opt(0, 0, 0) {
                    Some(dt) => Cel::Timestamp(dt.and_utc().fixed_offset()),
                    None => plain(),
                },
                None => plain(),
            }
        }
        _ => plain(),
    }
}

fn decode_base64(s: &str) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let mut buf = 0u32;
    let mut bits = 0;
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            b'=' => break,
            _ => return None,
        };
        buf = (buf << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((buf >> bits) as u8);
        }
    }
    Some(out)
}

/// cel-go's wording of an evaluation error.
pub(crate) fn error_text(e: &ExecutionError) -> String {
    match e {
        ExecutionError::NoSuchKey(k) => format!("no such key: {k}"),
        ExecutionError::NoSuchOverload => "no such overload".into(),
        ExecutionError::UndeclaredReference(r) => format!("undeclared reference to '{r}'"),
        ExecutionError::DivisionByZero(_) => "division by zero".into(),
        ExecutionError::RemainderByZero(_) => "modulus by zero".into(),
        ExecutionError::Overflow(..) => "integer overflow".into(),
        ExecutionError::IndexOutOfBounds(i) => format!("index out of bounds: {}", cel_display(i)),
        ExecutionError::FunctionError { message, .. } => message.clone(),
        other => {
            let s = other.to_string();
            let mut c = s.chars();
            match c.next() {
                Some(f) => f.to_lowercase().collect::<String>() + c.as_str(),
                None => s,
            }
        }
    }
}

fn cel_display(v: &Cel) -> String {
    match v {
        Cel::Int(i) => i.to_string(),
        Cel::UInt(u) => u.to_string(),
        Cel::String(s) => s.to_string(),
        other => format!("{other:?}"),
    }
}

/// How one evaluation ended.
pub(crate) enum Outcome {
    Value(Cel),
    Error(ExecutionError),
    /// cel-go's `operation cancelled: actual cost limit exceeded`.
    CostLimit,
}

/// Evaluates one compiled expression in `ctx` under the per-call `limit`; the outcome
/// and the actual cost (past the limit when cancelled, as cel-go reports it).
pub(crate) fn run(expr: &kube_cel::cel::IdedExpr, ctx: &Context<'_>, limit: u64) -> (Outcome, u64) {
    actual::begin(limit);
    let result = catch_unwind(AssertUnwindSafe(|| ctx.resolve(expr)));
    let cost = actual::spent();
    let out = match result {
        _ if cost > limit => Outcome::CostLimit,
        Ok(Ok(v)) => Outcome::Value(v),
        Ok(Err(e)) => Outcome::Error(e),
        Err(_) => Outcome::Error(ExecutionError::function_error(
            "eval",
            "internal error evaluating the expression",
        )),
    };
    (out, cost)
}

/// Walks an object and evaluates every rule; errors go to `out`.
pub(crate) struct Evaluator<'e> {
    base: &'e str,
    out: &'e mut Vec<Cause>,
    /// On update: decides which failures are ratcheted into `warnings`.
    ratchet: Option<&'e Ratchet>,
    warnings: &'e mut Vec<String>,
    remaining: u64,
    per_call: u64,
    stopped: bool,
}

/// A value and the old value it correlates with: where a failed rule's ratcheting is
/// decided (`ratchetingOptions`' current or nearest parent correlation).
#[derive(Clone, Copy)]
struct Anchor<'a> {
    node: &'a Node,
    old: &'a Value,
    new: &'a Value,
}

/// Validates the CEL rules in `v` (with `old` for transition rules) below `n`.
pub(crate) fn validate_value(
    n: &Node,
    v: &Value,
    old: Option<&Value>,
    base: &str,
    budget: u64,
    out: &mut Vec<Cause>,
) {
    let limits = Limits {
        budget,
        per_call: budget,
    };
    validate_with_limits(n, v, old, base, limits, None, out, &mut Vec::new());
}

/// The runtime cost one validation may spend, and one evaluation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Limits {
    pub budget: u64,
    pub per_call: u64,
}

/// Like [`validate_value`] with an explicit per-call limit and, on update, ratcheting:
/// the failures it turns into `warnings` (rendered as Go's `field.Error`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn validate_with_limits(
    n: &Node,
    v: &Value,
    old: Option<&Value>,
    base: &str,
    limits: Limits,
    ratchet: Option<&Ratchet>,
    out: &mut Vec<Cause>,
    warnings: &mut Vec<String>,
) {
    let mut e = Evaluator {
        base,
        out,
        ratchet,
        warnings,
        remaining: limits.budget,
        per_call: limits.per_call,
        stopped: false,
    };
    let at = Walk {
        root: true,
        correlated: true,
        depth: 0,
    };
    e.walk(n, v, old, None, &mut PathStack::default(), at);
}

/// Where the walk is: at the resource root, whether the value may correlate with its old
/// value for ratcheting (not the root's apiVersion and kind), how deep.
#[derive(Clone, Copy)]
struct Walk {
    root: bool,
    correlated: bool,
    depth: usize,
}

impl Walk {
    fn child(self, correlated: bool) -> Walk {
        Walk {
            root: false,
            correlated,
            depth: self.depth + 1,
        }
    }
}

impl Evaluator<'_> {
    fn path(&self, ps: &PathStack<'_>) -> String {
        join(self.base, &ps.field())
    }

    /// `old` is the correlated old value (`null` included); `parent` the nearest correlated
    /// ancestor.
    fn walk<'a>(
        &mut self,
        n: &'a Node,
        v: &'a Value,
        old: Option<&'a Value>,
        parent: Option<Anchor<'a>>,
        ps: &mut PathStack<'a>,
        at: Walk,
    ) {
        if self.stopped || !n.cel_below || v.is_null() || at.depth > MAX_WALK_DEPTH {
            return;
        }
        let anchor = match (old, at.correlated) {
            (Some(o), true) => Some(Anchor {
                node: n,
                old: o,
                new: v,
            }),
            (_, true) => parent,
            (_, false) => None,
        };
        if !n.rules.is_empty() {
            let old_self = old.filter(|o| !o.is_null());
            self.rules(n, v, old_self, anchor, ps, at.root || n.embedded);
            if self.stopped {
                return;
            }
        }
        match v {
            Value::Array(a) => {
                let Some(items) = n.items.as_deref() else {
                    return;
                };
                // only map lists correlate items (for oldSelf and ratcheting alike)
                let old_items = MapList::of(n, old);
                for (i, x) in a.iter().enumerate() {
                    let ox = old_items.as_ref().and_then(|l| l.get(x));
                    ps.push(Seg::Index(i));
                    self.walk(items, x, ox, anchor, ps, at.child(at.correlated));
                    ps.pop();
                    if self.stopped {
                        return;
                    }
                }
            }
            Value::Object(m) => {
                // every map type correlates its entries (`MapIsCorrelatable`)
                let old_map = old.and_then(Value::as_object);
                let correlated =
                    |k: &str| at.correlated && !(at.root && (k == "apiVersion" || k == "kind"));
                if let Some(ap) = n.additional.schema() {
                    for (k, x) in m {
                        ps.push(Seg::Key(k));
                        let ox = old_map.and_then(|o| o.get(k));
                        self.walk(ap, x, ox, anchor, ps, at.child(correlated(k)));
                        ps.pop();
                        if self.stopped {
                            return;
                        }
                    }
                }
                for (k, child) in &n.properties {
                    if let Some(x) = m.get(k.as_ref()) {
                        ps.push(Seg::Field(k));
                        let ox = old_map.and_then(|o| o.get(k.as_ref()));
                        self.walk(child, x, ox, anchor, ps, at.child(correlated(k)));
                        ps.pop();
                        if self.stopped {
                            return;
                        }
                    }
                }
            }
            _ => {}
        }
    }

    /// Whether a failure of a rule without `oldSelf` at `anchor` is ratcheted
    /// (`shouldRatchetError`).
    fn ratcheted(&self, anchor: Option<Anchor<'_>>) -> bool {
        match (self.ratchet, anchor) {
            (Some(r), Some(a)) => r.unchanged(a.node, a.old, a.new),
            _ => false,
        }
    }

    /// Reports a failed rule: a warning when ratcheted (`addErr`), an error otherwise.
    fn fail(&mut self, cause: Cause, ratcheted: bool) {
        if ratcheted {
            self.warnings
                .push(format!("{}: {}", cause.field, cause.message));
        } else {
            self.out.push(cause);
        }
    }

    fn stop(&mut self, path: String, ty: &str, detail: &str) {
        self.out.push(invalid(path, &go_quote(ty), detail));
        self.stopped = true;
    }

    fn rules(
        &mut self,
        n: &Node,
        v: &Value,
        old: Option<&Value>,
        anchor: Option<Anchor<'_>>,
        ps: &PathStack<'_>,
        root: bool,
    ) {
        let ty = n.type_str();
        if self.remaining == 0 {
            self.stop(self.path(ps), ty, OUT_OF_BUDGET);
            return;
        }
        // `self` (and `oldSelf`) are converted once per node and shared by its rules: the
        // interpreter copies a variable's value into its own representation when bound.
        let mut base = ROOT.new_inner_scope();
        base.add_variable_from_value("self", to_cel(v, Some(n), root, 0));
        let old_val = old.map(|o| to_cel(o, Some(n), root, 0));
        let uses = |optional: bool| {
            n.rules.iter().any(|r| {
                r.program.as_ref().is_some_and(|p| p.uses_old_self)
                    && (r.optional_old_self == Some(true)) == optional
            })
        };
        let with_old = match (&old_val, uses(false)) {
            (Some(o), true) => {
                let mut c = base.new_inner_scope();
                c.add_variable_from_value("oldSelf", o.clone());
                Some(c)
            }
            _ => None,
        };
        let with_optional = uses(true).then(|| {
            let mut c = base.new_inner_scope();
            let opt = match &old_val {
                Some(o) => OptionalValue::of(o.clone()),
                None => OptionalValue::none(),
            };
            c.add_variable_from_value("oldSelf", Cel::Opaque(Arc::new(opt)));
            c
        });
        for r in &n.rules {
            let Some(p) = &r.program else { continue };
            let optional = r.optional_old_self == Some(true);
            let ctx = match (p.uses_old_self, optional) {
                (false, _) => &base,
                (true, true) => match &with_optional {
                    Some(c) => c,
                    None => continue,
                },
                (true, false) => match &with_old {
                    Some(c) => c,
                    None => continue,
                },
            };
            // validation.go: the actual cost is checked against the remaining budget before
            // the evaluation's own error (a cancelled rule may also have run out of budget)
            let (result, cost) = run(&p.expr, ctx, self.per_call);
            let path = self.path(ps);
            if cost > self.remaining {
                self.stop(path, ty, OUT_OF_BUDGET);
                return;
            }
            self.remaining -= cost;
            match result {
                Outcome::CostLimit => {
                    let d = format!("'{}': no further validation rules will be run due to call cost exceeds limit for rule: {}", actual::LIMIT_EXCEEDED, r.error_string());
                    self.stop(path, ty, &d);
                    return;
                }
                Outcome::Error(e) => {
                    let text = error_text(&e);
                    let d = if text.starts_with("no such overload") {
                        format!("'{text}': call arguments did not match a supported operator, function or macro signature for rule: {}", r.error_string())
                    } else {
                        format!("{text} evaluating rule: {}", r.error_string())
                    };
                    self.out.push(invalid(path, &go_quote(ty), &d));
                    continue;
                }
                Outcome::Value(Cel::Bool(true)) => continue,
                Outcome::Value(_) => {}
            }
            let field = match &r.field_path {
                Some(fp) => join(&path, fp),
                None => path,
            };
            let ratcheted = !p.uses_old_self && self.ratcheted(anchor);
            let mut detail = None;
            if let Some(m) = &p.message_expr {
                let (res, cost) = run(m, ctx, self.per_call);
                if cost > self.remaining {
                    let d = "messageExpression evaluation failed due to running out of cost budget, no further validation rules will be run";
                    self.fail(invalid(field, &go_quote(ty), d), ratcheted);
                    self.stopped = true;
                    return;
                }
                match res {
                    Outcome::CostLimit => {
                        let d = format!("no further validation rules will be run due to call cost exceeds limit for messageExpression: {}", go_quote(r.message_expression.as_deref().unwrap_or("")));
                        self.fail(invalid(field, &go_quote(ty), &d), ratcheted);
                        self.stopped = true;
                        return;
                    }
                    Outcome::Value(Cel::String(s)) => {
                        let t = s.trim();
                        if !t.is_empty() && t.len() <= MAX_MESSAGE_BYTES && !t.contains('\n') {
                            detail = Some(t.to_string());
                        }
                    }
                    _ => {}
                }
                self.remaining -= cost;
            }
            let detail = detail.unwrap_or_else(|| default_message(r));
            // upstream reports the node's schema type as the value, whatever its kind
            let shown = go_quote(ty);
            let cause = match r.reason {
                Some(Reason::Forbidden) => forbidden(field, &detail),
                Some(Reason::Required) => required(field, &detail),
                Some(Reason::Duplicate) => duplicate(field, &shown),
                _ => invalid(field, &shown, &detail),
            };
            self.fail(cause, ratcheted);
        }
    }
}

/// `ruleMessageOrDefault`.
fn default_message(r: &CelRule) -> String {
    match r.message.as_deref() {
        Some(m) if !m.is_empty() => m.trim().to_string(),
        _ => format!("failed rule: {}", r.rule.trim()),
    }
}
