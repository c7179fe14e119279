//! The runtime ("actual") cost of evaluating a rule, as cel-go's `CostTracker`
//! (`interpreter/runtimecost.go`) computes it under Kubernetes' program options
//! (`OptOptimize`, presence tests free, the Kubernetes library's `CallCost`).
//!
//! cel-go observes every step of its planned program: reading a variable or applying a
//! field or index qualifier costs 1, a call costs what its overload's rule gives for the
//! actual arguments (1 unless the rule depends on sizes), building a list or map costs
//! 10 or 30 unless every element is a constant (the optimizer folds it), `&&`, `||`, `?:`
//! and comprehensions themselves cost nothing, and a ternary branch that is an attribute
//! pays for its qualifiers only. The `cel` interpreter kplane evaluates with has no such
//! hook, so [`instrument`] rewrites each compiled expression once:
//!
//! - fixed costs are summed per straight-line region (what always runs once its region
//!   runs: the expression, the right side of `&&`/`||`, a ternary branch, a comprehension's
//!   condition and step) and charged on entering the region, as `@charge(n) ? region : null`,
//!   which costs one call per region and copies no value;
//! - a call whose cost depends on its arguments' sizes gets those arguments wrapped in
//!   `@arg(code, value)`, which records the size; the last one charges the call.
//!
//! The total equals cel-go's for every evaluation that does not fail part way (cel-go
//! evaluates all arguments of a call even after one fails, the interpreter stops). Limits
//! are checked at every charge, so a rule stops as soon as it goes over its per-call limit.

use std::cell::RefCell;

use kube_cel::cel::common::ast::{CallExpr, EntryExpr, Expr, LiteralValue};
use kube_cel::cel::{ExecutionError, IdedExpr, Value as Cel};

use super::cost::{
    selector_cost, AUTHZ_CHECK, LIST_CREATE, MAP_CREATE, MAX_NAME_FORMAT_REGEX,
    REGEX_STRING_LENGTH, SELECT_AND_IDENT, STRING_TRAVERSAL,
};

/// The function that charges a region's fixed cost.
pub(crate) const CHARGE: &str = "@kplaneCharge";
/// The function that records an argument's size for its call's cost.
pub(crate) const ARG: &str = "@kplaneArg";
/// The function each comprehension's condition is wrapped in, counting the
/// interpreter's own work (see [`work`]).
pub(crate) const WORK: &str = "@kplaneWork";
/// How many times the per-call limit the interpreter's extra work may reach.
const WORK_FACTOR: u64 = 10;
/// cel-go's message when the per-call limit is exceeded.
pub(crate) const LIMIT_EXCEEDED: &str = "operation cancelled: actual cost limit exceeded";

/// The cost state of the evaluation running on this thread.
struct Tracker {
    spent: u64,
    limit: u64,
    /// Accumulator items copied by comprehension steps (see [`work`]).
    work: u64,
    /// Sizes recorded for calls still waiting for their last argument: (site, measure).
    args: Vec<(u32, Measure)>,
}

thread_local! {
    static TRACKER: RefCell<Tracker> = const {
        RefCell::new(Tracker { spent: 0, limit: u64::MAX, work: 0, args: Vec::new() })
    };
}

/// Starts tracking an evaluation that may spend at most `limit`.
pub(crate) fn begin(limit: u64) {
    TRACKER.with(|t| {
        let mut t = t.borrow_mut();
        t.spent = 0;
        t.work = 0;
        t.limit = limit;
        t.args.clear();
    });
}

/// The cost spent since [`begin`].
pub(crate) fn spent() -> u64 {
    TRACKER.with(|t| t.borrow().spent)
}

fn charge_cost(n: u64) -> Result<(), ExecutionError> {
    TRACKER.with(|t| {
        let mut t = t.borrow_mut();
        t.spent = t.spent.saturating_add(n);
        if t.spent > t.limit {
            Err(ExecutionError::function_error(CHARGE, LIMIT_EXCEEDED))
        } else {
            Ok(())
        }
    })
}

/// `@charge(n)`: adds a region's fixed cost; true, so the region runs.
pub(crate) fn charge(n: i64) -> Result<bool, ExecutionError> {
    charge_cost(u64::try_from(n).unwrap_or(0))?;
    Ok(true)
}

/// `@work(accu, cond)`: a safety net, not a cost. cel-go appends to a comprehension's
/// list or map accumulator in place (`+` on lists costs 1); the interpreter copies it, so
/// `map` and `filter` do work quadratic in their size. Each step's accumulator size is
/// counted, and past [`WORK_FACTOR`] times the per-call limit the evaluation is cancelled
/// as if over that limit. Rules within kube-apiserver's limits stay far below it (a
/// `map` of 4,000 items copies 8 million).
pub(crate) fn work(accu: Cel, cond: Cel) -> Result<Cel, ExecutionError> {
    let size = match &accu {
        Cel::List(l) => l.len() as u64,
        Cel::Map(m) => m.map.len() as u64,
        _ => return Ok(cond),
    };
    TRACKER.with(|t| {
        let mut t = t.borrow_mut();
        t.work = t.work.saturating_add(size);
        if t.work > t.limit.saturating_mul(WORK_FACTOR) {
            t.spent = t.limit.saturating_add(1);
            return Err(ExecutionError::function_error(WORK, LIMIT_EXCEEDED));
        }
        Ok(cond)
    })
}

/// `@arg(code, value)`: records `value`'s measure for its call; the call's last sized
/// argument charges the call. Returns `value`.
pub(crate) fn arg(code: i64, value: Cel) -> Result<Cel, ExecutionError> {
    let code = Code::decode(code);
    let m = Measure::of(&value, code.rule);
    if code.index + 1 < code.count {
        TRACKER.with(|t| t.borrow_mut().args.push((code.site, m)));
        return Ok(value);
    }
    // the earlier arguments of this call, most recent last (stale entries of calls that
    // failed part way are skipped by their site)
    let mut sizes = [Measure::default(); 2];
    TRACKER.with(|t| {
        let mut t = t.borrow_mut();
        let mut want = code.index;
        while want > 0 {
            match t.args.iter().rposition(|(s, _)| *s == code.site) {
                Some(i) => {
                    want -= 1;
                    if let Some(slot) = sizes.get_mut(want) {
                        *slot = t.args[i].1;
                    }
                    t.args.truncate(i);
                }
                None => break,
            }
        }
    });
    if let Some(slot) = sizes.get_mut(code.index) {
        *slot = m;
    }
    charge_cost(code.rule.cost(&sizes[..code.count.min(2)]))?;
    Ok(value)
}

/// What the cost of a call with a sized rule is computed from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rule {
    /// `==`, `!=`: ceil(0.1 * the smaller size).
    Equality,
    /// `<`, `<=`, `>`, `>=`: as equality for two strings or two bytes, else 1.
    Ordering,
    /// `+`: ceil(0.1 * (a + b)) for strings and bytes, else 1.
    Concat,
    /// `in`: the list's size (a map: 1).
    InList,
    /// ceil(0.1 * size) of the first argument.
    Tenth,
    /// ceil(0.2 * size) of the first argument (`replace`, `split`, `ip.isCanonical`).
    TwoTenths,
    /// `string(bytes)`, `bytes(string)`: ceil(0.1 * size) when converting, else 1.
    Conversion,
    /// `contains` on strings: ceil(0.1 * a) * ceil(0.1 * b).
    Contains,
    /// `matches`, `find`, `findAll`: ceil(0.1 * (1 + a)) * ceil(0.25 * b).
    Regex,
    /// `validate` of a named format: the string against the longest format regex.
    FormatValidate,
    /// `isSorted`, `sum`, `min`, `max`, `indexOf`, `lastIndexOf`: one traversal.
    Traversal,
    /// `join`: ceil(0.2 * size of the joined string).
    Join,
    /// `containsIP`: 1 (the CIDR is not sized), plus ceil(0.1 * size) of a string.
    ContainsIp,
    /// `containsCIDR`: 3, plus ceil(0.1 * size) of a string.
    ContainsCidr,
    /// `fieldSelector`, `labelSelector`: `selectorCostEstimate` of the selector's length.
    Selector,
}

const RULES: [Rule; 15] = [
    Rule::Equality,
    Rule::Ordering,
    Rule::Concat,
    Rule::InList,
    Rule::Tenth,
    Rule::TwoTenths,
    Rule::Conversion,
    Rule::Contains,
    Rule::Regex,
    Rule::FormatValidate,
    Rule::Traversal,
    Rule::Join,
    Rule::ContainsIp,
    Rule::ContainsCidr,
    Rule::Selector,
];

fn tenth(n: u64, factor: f64) -> u64 {
    (n as f64 * factor).ceil() as u64
}

impl Rule {
    fn cost(self, m: &[Measure]) -> u64 {
        let a = m.first().copied().unwrap_or_default();
        let b = m.get(1).copied().unwrap_or_default();
        let textual = |x: Measure, y: Measure| x.class == y.class && x.class.textual();
        match self {
            Rule::Equality => tenth(a.size.min(b.size), STRING_TRAVERSAL),
            Rule::Ordering if textual(a, b) => tenth(a.size.min(b.size), STRING_TRAVERSAL),
            Rule::Concat if textual(a, b) => tenth(a.size + b.size, STRING_TRAVERSAL),
            Rule::Ordering | Rule::Concat => 1,
            Rule::InList => match a.class {
                Class::List => a.size,
                _ => 1,
            },
            Rule::Tenth => tenth(a.size, STRING_TRAVERSAL),
            Rule::TwoTenths => tenth(a.size, 2.0 * STRING_TRAVERSAL),
            Rule::Conversion if a.class.textual() => tenth(a.size, STRING_TRAVERSAL),
            Rule::Conversion => 1,
            Rule::Contains => tenth(a.size, STRING_TRAVERSAL) * tenth(b.size, STRING_TRAVERSAL),
            Rule::Regex => tenth(1 + a.size, STRING_TRAVERSAL) * tenth(b.size, REGEX_STRING_LENGTH),
            Rule::FormatValidate => {
                tenth(1 + b.size, STRING_TRAVERSAL)
                    * (MAX_NAME_FORMAT_REGEX * REGEX_STRING_LENGTH).ceil() as u64
            }
            Rule::Traversal => a.traversal,
            Rule::Join => tenth(a.traversal + b.size * a.size.saturating_sub(1), 0.2),
            Rule::Selector => selector_cost(a.size),
            Rule::ContainsIp | Rule::ContainsCidr => {
                let base = if self == Rule::ContainsIp { 1 } else { 3 };
                match b.class {
                    Class::String => base + tenth(b.size, STRING_TRAVERSAL),
                    _ => base,
                }
            }
        }
    }

    fn index(self) -> i64 {
        RULES.iter().position(|r| *r == self).unwrap_or(0) as i64
    }
}

/// The kind of value an argument was, for the rules that depend on it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Class {
    String,
    Bytes,
    List,
    Map,
    #[default]
    Other,
}

impl Class {
    fn textual(self) -> bool {
        matches!(self, Class::String | Class::Bytes)
    }
}

/// What a rule needs to know of one argument.
#[derive(Clone, Copy, Debug, Default)]
struct Measure {
    class: Class,
    /// cel-go's `actualSize`: characters of a string, bytes, items, entries; 1 otherwise.
    size: u64,
    /// The Kubernetes library's `traversalCost` (`Traversal`), or the characters of a
    /// list's strings (`Join`); 0 for other rules.
    traversal: u64,
}

impl Measure {
    fn of(v: &Cel, rule: Rule) -> Measure {
        let (class, size) = match v {
            Cel::String(s) => (Class::String, s.chars().count() as u64),
            Cel::Bytes(b) => (Class::Bytes, b.len() as u64),
            Cel::List(l) => (Class::List, l.len() as u64),
            Cel::Map(m) => (Class::Map, m.map.len() as u64),
            _ => (Class::Other, 1),
        };
        let traversal = match (rule, v) {
            (Rule::Traversal, v) => traversal_cost(v),
            (Rule::Join, Cel::List(l)) => l
                .iter()
                .map(|x| match x {
                    Cel::String(s) => s.chars().count() as u64,
                    _ => 0,
                })
                .sum(),
            _ => 0,
        };
        Measure {
            class,
            size,
            traversal,
        }
    }
}

/// The Kubernetes library's `traversalCost`: a tenth of a string's bytes (rounded down),
/// summed over lists and maps (keys and values), 1 for anything else.
fn traversal_cost(v: &Cel) -> u64 {
    match v {
        Cel::String(s) => (s.len() as f64 * STRING_TRAVERSAL) as u64,
        Cel::Bytes(b) => (b.len() as f64 * STRING_TRAVERSAL) as u64,
        Cel::List(l) => l.iter().map(traversal_cost).sum(),
        Cel::Map(m) => m
            .map
            .iter()
            .map(|(k, x)| {
                let key = match k {
                    kube_cel::cel::objects::Key::String(s) => {
                        (s.len() as f64 * STRING_TRAVERSAL) as u64
                    }
                    _ => 1,
                };
                key + traversal_cost(x)
            })
            .sum(),
        _ => 1,
    }
}

/// An `@arg` code: which call (site), which of its sized arguments, how many, which rule.
#[derive(Clone, Copy, Debug)]
struct Code {
    site: u32,
    rule: Rule,
    count: usize,
    index: usize,
}

impl Code {
    fn encode(self) -> i64 {
        (i64::from(self.site) << 24)
            | (self.rule.index() << 16)
            | ((self.count as i64) << 8)
            | self.index as i64
    }

    fn decode(c: i64) -> Code {
        Code {
            site: ((c >> 24) & 0xffff_ffff) as u32,
            rule: RULES
                .get(((c >> 16) & 0xff) as usize)
                .copied()
                .unwrap_or(Rule::Equality),
            count: ((c >> 8) & 0xff) as usize,
            index: (c & 0xff) as usize,
        }
    }
}

/// Rewrites `e` to charge its runtime cost as it evaluates (see the module docs).
pub(crate) fn instrument(e: IdedExpr) -> IdedExpr {
    let mut ins = Instrumenter { sites: 0 };
    let l = ins.lower(e);
    region(l.expr, l.eval)
}

/// A lowered subexpression and the fixed cost its region must charge for it.
struct Lowered {
    expr: IdedExpr,
    /// Fixed cost when evaluated.
    eval: u64,
    /// Fixed cost when resolved as a ternary branch (an attribute's own read is free).
    resolve: u64,
    /// An attribute in cel-go's plan (variables, and field and index selections on them).
    attr: bool,
    /// A constant after cel-go's optimizer (literals, literal lists and maps, conversions
    /// of constants).
    constant: bool,
}

impl Lowered {
    fn value(expr: IdedExpr, eval: u64) -> Lowered {
        Lowered {
            expr,
            eval,
            resolve: eval,
            attr: false,
            constant: false,
        }
    }
}

fn node(expr: Expr) -> IdedExpr {
    IdedExpr { id: 0, expr }
}

fn int(n: i64) -> IdedExpr {
    node(Expr::Literal(LiteralValue::Int(n.into())))
}

fn call(name: &str, args: Vec<IdedExpr>) -> IdedExpr {
    node(Expr::Call(CallExpr {
        func_name: name.to_string(),
        target: None,
        args,
    }))
}

/// `@charge(cost) ? e : null`, or `e` when there is nothing to charge.
fn region(e: IdedExpr, cost: u64) -> IdedExpr {
    if cost == 0 {
        return e;
    }
    let n = i64::try_from(cost).unwrap_or(i64::MAX);
    call(
        "_?_:_",
        vec![
            call(CHARGE, vec![int(n)]),
            e,
            node(Expr::Literal(LiteralValue::Null)),
        ],
    )
}

/// The size of a literal, when the expression is one.
fn literal_size(e: &IdedExpr) -> Option<u64> {
    match &e.expr {
        Expr::Literal(LiteralValue::String(s)) => Some(s.inner().chars().count() as u64),
        Expr::Literal(LiteralValue::Bytes(b)) => Some(b.inner().len() as u64),
        Expr::Literal(_) => Some(1),
        Expr::List(l) => Some(l.elements.len() as u64),
        Expr::Map(m) => Some(m.entries.len() as u64),
        _ => None,
    }
}

fn is_scalar_literal(e: &IdedExpr) -> bool {
    matches!(
        &e.expr,
        Expr::Literal(
            LiteralValue::Int(_)
                | LiteralValue::UInt(_)
                | LiteralValue::Double(_)
                | LiteralValue::Boolean(_)
                | LiteralValue::Null
        )
    )
}

/// cel-go's type conversion functions (folded when applied to a constant).
const CONVERSIONS: [&str; 10] = [
    "bool",
    "bytes",
    "double",
    "duration",
    "dyn",
    "int",
    "string",
    "timestamp",
    "type",
    "uint",
];

/// How a call is costed: a fixed amount, or by a rule over some of its arguments
/// (positions count the receiver first, as cel-go's argument lists do).
enum CallCost {
    Fixed(u64),
    Sized(Rule, &'static [usize]),
}

fn call_cost(name: &str, args: &[IdedExpr], has_target: bool) -> CallCost {
    use CallCost::{Fixed, Sized};
    let any_scalar = args.iter().any(is_scalar_literal);
    match name {
        "_==_" | "_!=_" => {
            if any_scalar {
                return Fixed(1);
            }
            if args.iter().any(|a| literal_size(a) == Some(0)) {
                return Fixed(0);
            }
            Sized(Rule::Equality, &[0, 1])
        }
        "_<_" | "_<=_" | "_>_" | "_>=_" if !any_scalar => Sized(Rule::Ordering, &[0, 1]),
        "_+_" if !any_scalar => Sized(Rule::Concat, &[0, 1]),
        "@in" => Sized(Rule::InList, &[1]),
        "startsWith"
        | "endsWith"
        | "lowerAscii"
        | "upperAscii"
        | "substring"
        | "trim"
        | "url"
        | "jsonpatch.escapeKey"
        | "cidr"
        | "isIP"
        | "isCIDR"
        | "quantity"
        | "isQuantity"
        | "strings.quote"
        | "format" => Sized(Rule::Tenth, &[0]),
        "ip" if !has_target => Sized(Rule::Tenth, &[0]),
        "replace" | "split" | "ip.isCanonical" => Sized(Rule::TwoTenths, &[0]),
        "string" | "bytes" => Sized(Rule::Conversion, &[0]),
        "contains" => Sized(Rule::Contains, &[0, 1]),
        "matches" | "find" | "findAll" => Sized(Rule::Regex, &[0, 1]),
        "validate" => Sized(Rule::FormatValidate, &[0, 1]),
        "isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf" => {
            Sized(Rule::Traversal, &[0])
        }
        "join" if args.len() >= 2 => Sized(Rule::Join, &[0, 1]),
        "join" => Sized(Rule::Join, &[0]),
        "containsIP" => Sized(Rule::ContainsIp, &[0, 1]),
        "containsCIDR" => Sized(Rule::ContainsCidr, &[0, 1]),
        "check" if has_target => Fixed(AUTHZ_CHECK),
        "fieldSelector" | "labelSelector" if has_target => Sized(Rule::Selector, &[1]),
        _ => Fixed(1),
    }
}

struct Instrumenter {
    sites: u32,
}

impl Instrumenter {
    fn lower(&mut self, e: IdedExpr) -> Lowered {
        let id = e.id;
        match e.expr {
            Expr::Literal(l) => Lowered {
                constant: true,
                ..Lowered::value(
                    IdedExpr {
                        id,
                        expr: Expr::Literal(l),
                    },
                    0,
                )
            },
            Expr::Ident(name) => Lowered {
                expr: IdedExpr {
                    id,
                    expr: Expr::Ident(name),
                },
                eval: SELECT_AND_IDENT,
                resolve: 0,
                attr: true,
                constant: false,
            },
            Expr::Select(mut sel) => {
                let mut op = self.lower(*sel.operand);
                *sel.operand = std::mem::replace(&mut op.expr, int(0));
                let expr = IdedExpr {
                    id,
                    expr: Expr::Select(sel.clone()),
                };
                if sel.test {
                    // presence tests are free; the operand's own read is not observed
                    return Lowered::value(expr, op.resolve);
                }
                let (eval, resolve) = qualified(&op, SELECT_AND_IDENT);
                Lowered {
                    expr,
                    eval,
                    resolve,
                    attr: true,
                    constant: false,
                }
            }
            Expr::List(mut list) => {
                let mut eval = 0;
                let mut constant = true;
                let elements = std::mem::take(&mut list.elements);
                for el in elements {
                    let l = self.lower(el);
                    eval += l.eval;
                    constant &= l.constant;
                    list.elements.push(l.expr);
                }
                let expr = IdedExpr {
                    id,
                    expr: Expr::List(list),
                };
                if constant {
                    return Lowered {
                        constant: true,
                        ..Lowered::value(expr, 0)
                    };
                }
                Lowered::value(expr, eval + LIST_CREATE)
            }
            Expr::Map(mut map) => {
                let mut eval = 0;
                let mut constant = true;
                for entry in map.entries.iter_mut() {
                    if let EntryExpr::MapEntry(me) = &mut entry.expr {
                        let k = self.lower(std::mem::take(&mut me.key));
                        let v = self.lower(std::mem::take(&mut me.value));
                        eval += k.eval + v.eval;
                        constant &= k.constant && v.constant;
                        me.key = k.expr;
                        me.value = v.expr;
                    }
                }
                let expr = IdedExpr {
                    id,
                    expr: Expr::Map(map),
                };
                if constant {
                    return Lowered {
                        constant: true,
                        ..Lowered::value(expr, 0)
                    };
                }
                Lowered::value(expr, eval + MAP_CREATE)
            }
            Expr::Comprehension(mut c) => {
                let range = self.lower(std::mem::take(&mut c.iter_range));
                let init = self.lower(std::mem::take(&mut c.accu_init));
                let cond = self.lower(std::mem::take(&mut c.loop_cond));
                let step = self.lower(std::mem::take(&mut c.loop_step));
                let result = self.lower(std::mem::take(&mut c.result));
                c.iter_range = range.expr;
                c.accu_init = init.expr;
                let accu = node(Expr::Ident(c.accu_var.clone()));
                c.loop_cond = call(WORK, vec![accu, region(cond.expr, cond.eval)]);
                c.loop_step = region(step.expr, step.eval);
                c.result = result.expr;
                let expr = IdedExpr {
                    id,
                    expr: Expr::Comprehension(c),
                };
                Lowered::value(expr, range.eval + init.eval + result.eval)
            }
            Expr::Call(c) => self.call(id, c),
            other => Lowered::value(IdedExpr { id, expr: other }, 0),
        }
    }

    fn call(&mut self, id: u64, mut c: CallExpr) -> Lowered {
        let name = c.func_name.clone();
        let has_target = c.target.is_some();
        let target = c.target.take().map(|t| self.lower(*t));
        let args: Vec<Lowered> = std::mem::take(&mut c.args)
            .into_iter()
            .map(|a| self.lower(a))
            .collect();
        let at = |c: CallExpr| IdedExpr {
            id,
            expr: Expr::Call(c),
        };
        match (name.as_str(), args.as_slice()) {
            // `&&`, `||`: free; the right side runs only when the left does not decide
            ("_&&_" | "_||_", [l, _]) => {
                let eval = l.eval;
                c.args = args
                    .into_iter()
                    .enumerate()
                    .map(|(i, x)| {
                        if i == 0 {
                            x.expr
                        } else {
                            region(x.expr, x.eval)
                        }
                    })
                    .collect();
                return Lowered::value(at(c), eval);
            }
            // `?:`: free; a branch is resolved, so an attribute's own read is not charged
            ("_?_:_", [cond, _, _]) => {
                let eval = cond.eval;
                c.args = args
                    .into_iter()
                    .enumerate()
                    .map(|(i, x)| {
                        if i == 0 {
                            x.expr
                        } else {
                            region(x.expr, x.resolve)
                        }
                    })
                    .collect();
                return Lowered {
                    attr: true,
                    ..Lowered::value(at(c), eval)
                };
            }
            // indexing qualifies the operand's attribute
            ("_[_]" | "_[?_]" | "_?._", [op, ix]) => {
                let qualifier = SELECT_AND_IDENT
                    + match (ix.constant, ix.attr) {
                        (true, _) => 0,
                        (false, true) => ix.resolve,
                        (false, false) => ix.eval,
                    };
                let (eval, resolve) = qualified(op, qualifier);
                c.args = args.into_iter().map(|x| x.expr).collect();
                return Lowered {
                    expr: at(c),
                    eval,
                    resolve,
                    attr: true,
                    constant: false,
                };
            }
            _ => {}
        }
        let mut all: Vec<Lowered> = target.into_iter().chain(args).collect();
        let fixed: u64 = all.iter().map(|l| l.eval).sum();
        if CONVERSIONS.contains(&name.as_str()) && all.len() == 1 && all[0].constant {
            return Lowered {
                constant: true,
                ..Lowered::value(finish(id, c, all, has_target), 0)
            };
        }
        if name == "@in" && all.get(1).is_some_and(|rhs| set_membership(&rhs.expr)) {
            return Lowered::value(finish(id, c, all, has_target), fixed);
        }
        let exprs: Vec<IdedExpr> = all.iter().map(|l| l.expr.clone()).collect();
        let (rule, positions) = match call_cost(&name, &exprs, has_target) {
            CallCost::Fixed(n) => {
                return Lowered::value(finish(id, c, all, has_target), fixed + n);
            }
            CallCost::Sized(rule, positions) => (rule, positions),
        };
        let site = self.sites;
        self.sites = self.sites.wrapping_add(1);
        let count = positions.iter().filter(|p| **p < all.len()).count();
        let mut index = 0;
        for (pos, l) in all.iter_mut().enumerate() {
            if positions.contains(&pos) {
                let code = Code {
                    site,
                    rule,
                    count,
                    index,
                };
                index += 1;
                let inner = std::mem::replace(&mut l.expr, int(0));
                l.expr = call(ARG, vec![int(code.encode()), inner]);
            }
        }
        Lowered::value(finish(id, c, all, has_target), fixed)
    }
}

/// Puts the lowered receiver and arguments back into the call.
fn finish(id: u64, mut c: CallExpr, all: Vec<Lowered>, has_target: bool) -> IdedExpr {
    let mut it = all.into_iter().map(|l| l.expr);
    if has_target {
        c.target = it.next().map(Box::new);
    }
    c.args = it.collect();
    IdedExpr {
        id,
        expr: Expr::Call(c),
    }
}

/// Cost of an attribute `op` extended by a qualifier of cost `qualifier`: `(eval, resolve)`.
/// A non-attribute operand becomes a relative attribute, whose own read costs 1.
fn qualified(op: &Lowered, qualifier: u64) -> (u64, u64) {
    if op.attr {
        (op.eval + qualifier, op.resolve + qualifier)
    } else {
        (op.eval + SELECT_AND_IDENT + qualifier, op.eval + qualifier)
    }
}

/// Whether `x in <rhs>` becomes cel-go's set membership test (a constant, non-empty or
/// empty, list of primitives other than bytes): free.
fn set_membership(rhs: &IdedExpr) -> bool {
    match &rhs.expr {
        Expr::List(l) => l.elements.iter().all(|e| {
            matches!(
                &e.expr,
                Expr::Literal(
                    LiteralValue::Int(_)
                        | LiteralValue::UInt(_)
                        | LiteralValue::Double(_)
                        | LiteralValue::Boolean(_)
                        | LiteralValue::String(_)
                )
            )
        }),
        _ => false,
    }
}
