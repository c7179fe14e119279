//! The cost and result type of each call, looked up in the order kube-apiserver's
//! estimator looks: the `sets` extension's estimates, then the Kubernetes library's (by
//! function name), then cel-go's (by the overload the argument types select), else one
//! unit. Every cost here includes the arguments' costs; the caller adds the target's.

use std::rc::Rc;
use std::sync::Arc;

use kube_cel::cel::common::ast::{CallExpr, Expr, LiteralValue};

use super::{add, cel_name, class, classes, Analyzer, Class, Est, Opaque, Ty, MAX_REQUEST_BYTES};
use crate::cel::authz;
use crate::cel::cost::{
    by_factor, selector_cost, Size, AUTHZ_CHECK, MAX_NAME_FORMAT_REGEX, REGEX_STRING_LENGTH,
    STRING_TRAVERSAL,
};

/// Largest serialized format value (`MaxFormatSize`), what comparing two costs.
const MAX_FORMAT_SIZE: u64 = 64;
/// An IPv4 or IPv6 address, in bytes: what IP and CIDR comparisons traverse.
const IP_BYTES: Size = Size { min: 4, max: 16 };

/// A library estimate: the result type, the cost without the arguments, the result size.
type LibEstimate<'n> = (Ty<'n>, u64, Option<Size>);

impl<'n> Analyzer<'n> {
    /// The checked call `f` (namespaced functions by their full name).
    pub(super) fn function(
        &mut self,
        f: &str,
        target: Option<&Est<'n>>,
        args: &[Est<'n>],
        call: &CallExpr,
    ) -> Result<Est<'n>, String> {
        let arg_sum = args.iter().fold(0, |s, a| add(s, a.cost));
        if target.is_none() {
            let types: Vec<&Ty<'n>> = args.iter().map(|a| &a.ty).collect();
            if let Some(e) = super::overloads::mismatch(f, &types) {
                return Err(e);
            }
        }
        if let Some((ty, cost)) = self.authz(f, target, args)? {
            return Ok(Est::of(ty, add(cost, arg_sum)));
        }
        if let Some((ty, cost, size)) = self.library(f, target, args, call) {
            return Ok(Est::of(ty, add(cost, arg_sum)).sized(size));
        }
        if let Some(est) = self.builtin(f, target, args, arg_sum) {
            return Ok(est);
        }
        Ok(self.other(f, target, args, arg_sum, call))
    }

    /// The `authorizer` library (`library.Authz`, `AuthzSelectors`): the result type and
    /// cost (`CostEstimator`: 350,000 a check, a selector's parse by its length, 1 for
    /// the rest) of a call of one of its functions, or of any function on one of its
    /// values; cel-go's error when no overload takes the receiver and arguments.
    fn authz(
        &self,
        f: &str,
        target: Option<&Est<'n>>,
        args: &[Est<'n>],
    ) -> Result<Option<(Ty<'n>, u64)>, String> {
        use Opaque::{Authorizer, Decision, GroupCheck, PathCheck, ResourceCheck};
        let on_authz = target.is_some_and(|t| matches!(t.ty, Ty::Opaque(o) if o.is_authz()));
        if !authz::FUNCTIONS.contains(&f) && !on_authz {
            return Ok(None);
        }
        // the receivers an overload takes, its string arguments, its result
        let (receivers, strings, result): (&[Opaque], usize, Ty<'n>) = match f {
            "path" => (&[Authorizer], 1, Ty::Opaque(PathCheck)),
            "group" => (&[Authorizer], 1, Ty::Opaque(GroupCheck)),
            "serviceAccount" => (&[Authorizer], 2, Ty::Opaque(Authorizer)),
            "resource" => (&[GroupCheck], 1, Ty::Opaque(ResourceCheck)),
            "subresource" | "namespace" | "name" | "fieldSelector" | "labelSelector" => {
                (&[ResourceCheck], 1, Ty::Opaque(ResourceCheck))
            }
            "check" => (&[PathCheck, ResourceCheck], 1, Ty::Opaque(Decision)),
            "allowed" | "errored" => (&[Decision], 0, Ty::Bool),
            "reason" | "error" => (&[Decision], 0, Ty::String),
            _ => (&[], 0, Ty::Dyn),
        };
        let receiver_fits = target.is_some_and(|t| match t.ty {
            Ty::Dyn => true,
            Ty::Opaque(o) => receivers.contains(&o),
            _ => false,
        });
        let args_fit =
            args.len() == strings && args.iter().all(|a| matches!(a.ty, Ty::String | Ty::Dyn));
        if !receiver_fits || !args_fit {
            let list = args.iter().map(|a| cel_name(&a.ty)).collect::<Vec<_>>();
            let signature = match target {
                Some(t) => format!("{}.({})", cel_name(&t.ty), list.join(", ")),
                None => format!("({})", list.join(", ")),
            };
            return Err(format!(
                "found no matching overload for '{f}' applied to '{signature}'"
            ));
        }
        let cost = match (f, args.first()) {
            ("check", _) => AUTHZ_CHECK,
            ("fieldSelector" | "labelSelector", Some(s)) => selector_cost(self.lib_size(s).max),
            _ => 1,
        };
        Ok(Some((result, cost)))
    }

    /// The size of a list's items as the library sees them: at the list's path plus
    /// `@items` (a fresh path), else unknown.
    fn item_size(&self, list: &Est<'n>) -> Size {
        let path = list.path.as_ref().map(|p| {
            let mut steps = p.read();
            steps.push(Rc::from("@items"));
            steps
        });
        path.and_then(|p| self.root.size_at(&p))
            .map_or(Size::UNKNOWN, Size::up_to)
    }

    /// The `sets` extension and the Kubernetes libraries (`library.CostEstimator`): one
    /// arm per function, a table rather than logic, hence its length.
    fn library(
        &self,
        f: &str,
        target: Option<&Est<'n>>,
        args: &[Est<'n>],
        call: &CallExpr,
    ) -> Option<LibEstimate<'n>> {
        let lib = |e: &Est<'n>| self.lib_size(e);
        let traverse = |e: &Est<'n>| lib(e).cost(STRING_TRAVERSAL);
        let arg0 = args.first();
        Some(match (f, target, arg0) {
            ("sets.contains" | "sets.intersects" | "sets.equivalent", _, Some(a))
                if args.len() == 2 =>
            {
                // `equivalent` may compare every pair twice
                let factor = if f == "sets.equivalent" { 2.0 } else { 1.0 };
                let pairs = lib(a).mul(lib(&args[1]));
                (Ty::Bool, add(by_factor(pairs.max, factor), 1), None)
            }
            ("isSorted" | "sum" | "max" | "min" | "indexOf" | "lastIndexOf", Some(t), _) => {
                let cost = match t.ty.first_param() {
                    // one comparison per item, plus traversing string items
                    Some(item) => {
                        let mut each = 1;
                        if matches!(item, Ty::String | Ty::Bytes) {
                            each = add(each, self.item_size(t).cost(STRING_TRAVERSAL));
                        }
                        lib(t).max.saturating_mul(each)
                    }
                    // a string's indexOf
                    None => traverse(t),
                };
                let ty = match f {
                    "isSorted" => Ty::Bool,
                    "indexOf" | "lastIndexOf" => Ty::Int,
                    _ => t.ty.first_param().cloned().unwrap_or(Ty::Dyn),
                };
                (ty, cost, None)
            }
            ("url" | "jsonpatch.escapeKey", _, Some(a)) if args.len() == 1 => {
                let ty = match f {
                    "url" => Ty::Opaque(Opaque::Url),
                    _ => Ty::String,
                };
                (ty, traverse(a), Some(lib(a)))
            }
            ("lowerAscii" | "upperAscii" | "substring" | "trim", Some(t), _) => {
                (Ty::String, traverse(t), Some(lib(t)))
            }
            ("replace", Some(t), Some(from)) if args.len() >= 2 => {
                let subject = lib(t);
                let size = replace_size(subject, lib(from), lib(&args[1]));
                // a traversal, and building the result
                let cost = subject.cost(2.0 * STRING_TRAVERSAL);
                (Ty::String, cost, Some(size))
            }
            ("split", Some(t), _) => {
                let subject = lib(t);
                // every character its own item, unless a literal limit says otherwise
                let max = match call.args.get(1).map(|a| &a.expr) {
                    Some(Expr::Literal(LiteralValue::Int(n))) => *n.inner() as u64,
                    _ => subject.max,
                };
                let cost = subject.cost(2.0 * STRING_TRAVERSAL);
                (Ty::list(Ty::String), cost, Some(Size::up_to(max)))
            }
            ("join", Some(t), _) => {
                let items = lib(t);
                let mut size = Size::exact(0);
                if t.ty.first_param().is_some() {
                    size = items.mul(self.item_size(t));
                }
                if let Some(sep) = arg0 {
                    let separators = Size {
                        min: items.min.saturating_sub(1),
                        max: items.max.saturating_sub(1),
                    };
                    size = size.add(lib(sep).mul(separators));
                }
                (Ty::String, size.cost(STRING_TRAVERSAL), Some(size))
            }
            ("find" | "findAll", Some(t), Some(re)) => {
                let subject = lib(t);
                // one more character, so an empty string still pays for the regex
                let scan = subject.add(Size::exact(1)).cost(STRING_TRAVERSAL);
                let cost = scan.saturating_mul(lib(re).cost(REGEX_STRING_LENGTH));
                let ty = match f {
                    "find" => Ty::String,
                    _ => Ty::list(Ty::String),
                };
                (ty, cost, Some(Size::up_to(subject.max)))
            }
            ("cidr" | "isIP" | "isCIDR" | "quantity" | "isQuantity", _, Some(a)) => {
                let ty = match f {
                    "cidr" => Ty::Opaque(Opaque::Cidr),
                    "quantity" => Ty::Opaque(Opaque::Quantity),
                    _ => Ty::Bool,
                };
                (ty, traverse(a), None)
            }
            // `ip(string)` parses; `cidr.ip()` reads a field
            ("ip", _, Some(a)) => (Ty::Opaque(Opaque::Ip), traverse(a), None),
            ("ip", _, None) => (Ty::Opaque(Opaque::Ip), 1, None),
            ("ip.isCanonical", _, Some(a)) => (Ty::Bool, lib(a).cost(2.0 * STRING_TRAVERSAL), None),
            ("containsIP" | "containsCIDR", _, Some(a)) => {
                let mut cost = IP_BYTES.add(IP_BYTES).cost(STRING_TRAVERSAL);
                if f == "containsCIDR" {
                    cost = add(add(cost, IP_BYTES.cost(STRING_TRAVERSAL)), 1);
                }
                // the string overloads parse their argument too
                if matches!(a.ty, Ty::String | Ty::Dyn) {
                    cost = add(cost, traverse(a));
                }
                (Ty::Bool, cost, None)
            }
            ("validate", Some(_), Some(a)) => {
                let scan = traverse(a);
                let cost = by_factor(scan, MAX_NAME_FORMAT_REGEX * REGEX_STRING_LENGTH);
                (Ty::optional(Ty::list(Ty::String)), cost, None)
            }
            ("format.named", _, _) => (Ty::optional(Ty::Opaque(Opaque::Format)), 1, None),
            ("masked", _, _) => (Ty::Opaque(Opaque::Cidr), 1, None),
            ("add" | "sub", _, _) => (Ty::Opaque(Opaque::Quantity), 1, None),
            ("prefixLength" | "family" | "sign" | "asInteger" | "compareTo", _, _) => {
                (Ty::Int, 1, None)
            }
            ("asApproximateFloat", _, _) => (Ty::Double, 1, None),
            (
                "isUnspecified"
                | "isLoopback"
                | "isLinkLocalMulticast"
                | "isLinkLocalUnicast"
                | "isGlobalUnicast"
                | "isInteger"
                | "isGreaterThan"
                | "isLessThan",
                _,
                _,
            ) => (Ty::Bool, 1, None),
            ("getScheme" | "getHostname" | "getHost" | "getPort" | "getEscapedPath", _, _) => {
                (Ty::String, 1, None)
            }
            ("getQuery", _, _) => {
                let values = Arc::new(Ty::list(Ty::String));
                (Ty::Map(Arc::new(Ty::String), values), 1, None)
            }
            ("_==_", _, Some(l)) if args.len() == 2 => {
                let r = &args[1];
                let cost = match (&l.ty, &r.ty) {
                    (Ty::Opaque(a), Ty::Opaque(b)) if a == b => match a {
                        Opaque::Ip | Opaque::Cidr | Opaque::Quantity | Opaque::Semver => 1,
                        Opaque::Authorizer
                        | Opaque::PathCheck
                        | Opaque::GroupCheck
                        | Opaque::ResourceCheck
                        | Opaque::Decision => 1,
                        Opaque::Format => by_factor(MAX_FORMAT_SIZE, STRING_TRAVERSAL),
                        // upstream reads the right side's size for both sides
                        Opaque::Url => by_factor(r.computed.map_or(1, |s| s.max), STRING_TRAVERSAL),
                    },
                    _ => return None,
                };
                (Ty::Bool, cost, None)
            }
            _ => return None,
        })
    }

    /// cel-go's own estimates (`checker.coster.functionCost`), by overload: a table too.
    fn builtin(
        &self,
        f: &str,
        target: Option<&Est<'n>>,
        args: &[Est<'n>],
        arg_sum: u64,
    ) -> Option<Est<'n>> {
        let size = |e: &Est<'n>| self.size(e);
        let total = |ty: Ty<'n>, cost: u64| Est::of(ty, add(cost, arg_sum));
        match (f, target, args) {
            ("format", Some(t), _) => Some(total(Ty::String, size(t).cost(STRING_TRAVERSAL))),
            // conversions between strings and bytes traverse; the other overloads are O(1)
            ("bytes", None, [a]) if matches!(a.ty, Ty::String | Ty::Dyn) => {
                let s = size(a);
                let cost = conversion_cost(&a.ty, s.cost(STRING_TRAVERSAL));
                let result = Size {
                    min: s.min,
                    max: s.max.wrapping_mul(4),
                };
                Some(total(Ty::Bytes, cost).sized(Some(result)))
            }
            ("string", None, [a]) if matches!(a.ty, Ty::Bytes | Ty::Dyn) => {
                let s = size(a);
                let cost = conversion_cost(&a.ty, s.cost(STRING_TRAVERSAL));
                let result = Size {
                    min: s.min / 4,
                    max: s.max,
                };
                Some(total(Ty::String, cost).sized(Some(result)))
            }
            ("strings.quote", None, [a]) => {
                let s = size(a);
                let result = Size {
                    min: s.min.wrapping_add(2),
                    max: s.max.wrapping_mul(2).wrapping_add(2),
                };
                Some(total(Ty::String, s.cost(STRING_TRAVERSAL)).sized(Some(result)))
            }
            // the prefix (suffix) is what is traversed
            ("startsWith" | "endsWith", Some(_), [a]) => {
                Some(total(Ty::Bool, size(a).cost(STRING_TRAVERSAL)))
            }
            ("@in", None, [_, container]) => {
                let scan = size(container).cost(1.0);
                let cost = match container.ty {
                    Ty::List(_) => scan,
                    Ty::Dyn => scan.max(1),
                    _ => 1,
                };
                Some(total(Ty::Bool, cost))
            }
            ("matches", Some(t), [re]) => {
                let scan = size(t).add(Size::exact(1)).cost(STRING_TRAVERSAL);
                let cost = scan.saturating_mul(size(re).cost(REGEX_STRING_LENGTH));
                Some(total(Ty::Bool, cost))
            }
            ("contains", Some(t), [sub]) => {
                let cost = size(t)
                    .cost(STRING_TRAVERSAL)
                    .saturating_mul(size(sub).cost(STRING_TRAVERSAL));
                Some(total(Ty::Bool, cost))
            }
            ("_&&_" | "_||_", None, _) => Some(Est::of(Ty::Bool, arg_sum)),
            ("_?_:_", None, [c, yes, no]) => {
                let ty = yes.ty.join(&no.ty);
                let cost = add(c.cost, yes.cost.max(no.cost));
                Some(Est::of(ty, cost).sized(Some(size(yes).union(size(no)))))
            }
            ("_+_", None, [l, r]) => {
                let sum = size(l).add(size(r));
                let mut cost = 0;
                let mut sized = false;
                for c in classes(&l.ty, &r.ty) {
                    sized |= c != Class::Other;
                    cost = cost.max(match c {
                        Class::String | Class::Bytes => sum.cost(STRING_TRAVERSAL),
                        // concatenating lists is O(1)
                        Class::List | Class::Other => 1,
                    });
                }
                Some(total(sum_type(&l.ty, &r.ty), cost).sized(sized.then_some(sum)))
            }
            ("_<_" | "_<=_" | "_>_" | "_>=_", None, [l, r]) => {
                let by_size = by_factor(size(l).max.min(size(r).max), STRING_TRAVERSAL);
                let textual = |t: &Ty<'n>| matches!(class(t), Some(Class::String | Class::Bytes));
                let cost = if textual(&l.ty) || textual(&r.ty) {
                    by_size
                } else if l.ty.is_dyn() && r.ty.is_dyn() {
                    by_size.max(1)
                } else {
                    1
                };
                Some(total(Ty::Bool, cost))
            }
            // equality traverses the smaller side
            ("_==_" | "_!=_", None, [l, r]) => {
                let cost = by_factor(size(l).max.min(size(r).max), STRING_TRAVERSAL);
                Some(total(Ty::Bool, cost))
            }
            ("_[_]", None, [container, _]) => {
                let el = self.index(container);
                Some(Est {
                    cost: add(1, arg_sum),
                    ..el
                })
            }
            _ => None,
        }
    }

    /// Everything else: one unit (cel-go's O(1) default), or kplane's own estimate for the
    /// functions Kubernetes 1.32 does not declare.
    fn other(
        &self,
        f: &str,
        target: Option<&Est<'n>>,
        args: &[Est<'n>],
        arg_sum: u64,
        call: &CallExpr,
    ) -> Est<'n> {
        let subject = target.or(args.first());
        let subject_ty = subject.map_or(Ty::Dyn, |s| s.ty.clone());
        let n = subject.map_or(1, |s| self.lib_size(s).max);
        let own = |cost: u64, ty: Ty<'n>, size: Option<u64>| {
            Est::of(ty, add(add(cost, 1), arg_sum)).sized(size.map(Size::up_to))
        };
        match f {
            "lists.range" => {
                let n = match call.args.first().map(|a| &a.expr) {
                    Some(Expr::Literal(LiteralValue::Int(i))) => (*i.inner()).max(0) as u64,
                    _ => MAX_REQUEST_BYTES as u64 * 1024,
                };
                own(n, Ty::list(Ty::Int), Some(n))
            }
            "distinct" | "sort" => {
                let log = u64::from(64 - n.leading_zeros()).max(1);
                own(n.saturating_mul(log), subject_ty, Some(n))
            }
            "reverse" | "slice" => own(n, subject_ty, Some(n)),
            "flatten" => own(n, Ty::list(Ty::Dyn), None),
            "first" | "last" => {
                let item = subject_ty.first_param().cloned().unwrap_or(Ty::Dyn);
                own(n, Ty::optional(item), None)
            }
            "base64.encode" | "base64.decode" => {
                let ty = match f {
                    "base64.encode" => Ty::String,
                    _ => Ty::Bytes,
                };
                own(by_factor(n, STRING_TRAVERSAL), ty, None)
            }
            _ => Est::of(self.result_type(f, target, args, call), add(1, arg_sum)),
        }
    }

    /// The result type of a function whose cost is the default.
    fn result_type(
        &self,
        f: &str,
        target: Option<&Est<'n>>,
        args: &[Est<'n>],
        call: &CallExpr,
    ) -> Ty<'n> {
        let arg = |i: usize| args.get(i).map_or(Ty::Dyn, |a| a.ty.clone());
        let target_ty = target.map_or(Ty::Dyn, |t| t.ty.clone());
        match f {
            "size" | "int" | "major" | "minor" | "patch" => Ty::Int,
            "uint" => Ty::Uint,
            "double" => Ty::Double,
            "string" | "charAt" => Ty::String,
            "bytes" => Ty::Bytes,
            "duration" => Ty::Duration,
            "timestamp" => Ty::Timestamp,
            "semver" => Ty::Opaque(Opaque::Semver),
            "dyn" => Ty::Dyn,
            "matches" | "hasValue" | "!_" | "@not_strictly_false" => Ty::Bool,
            f if f.starts_with("get") => Ty::Int,
            f if f.starts_with("is") || f.starts_with("sets.") => Ty::Bool,
            "math.isFinite" | "math.isInf" | "math.isNaN" => Ty::Bool,
            "math.ceil" | "math.floor" | "math.round" | "math.trunc" | "math.sqrt" => Ty::Double,
            // the mixed overloads (`math.greatest(1, 2.0)`) answer `dyn`
            "math.greatest" | "math.least" => Ty::Dyn,
            f if f.starts_with("math.") => arg(0),
            f if f.starts_with("format.") => Ty::Opaque(Opaque::Format),
            "value" | "orValue" => match target_ty {
                Ty::Optional(inner) => (*inner).clone(),
                _ => Ty::Dyn,
            },
            "or" => target_ty,
            "optional.of" | "optional.ofNonZeroValue" => Ty::optional(arg(0)),
            "optional.none" => Ty::optional(Ty::Dyn),
            "_?._" => {
                let field = match call.args.get(1).map(|a| &a.expr) {
                    Some(Expr::Literal(LiteralValue::String(s))) => Some(s.inner().to_string()),
                    _ => None,
                };
                let ty = match (args.first(), field) {
                    (Some(op), Some(name)) => self.field(op, &name).map_or(Ty::Dyn, |e| e.ty),
                    _ => Ty::Dyn,
                };
                Ty::optional(ty)
            }
            "_[?_]" => Ty::optional(args.first().map_or(Ty::Dyn, |c| self.index(c).ty)),
            "-_" => arg(0),
            // with a `dyn` operand, the overloads the other operand still allows decide
            "_-_" => match (arg(0), arg(1)) {
                (Ty::Timestamp, Ty::Timestamp) | (Ty::Dyn, Ty::Timestamp) => Ty::Duration,
                (Ty::Timestamp, Ty::Dyn) | (Ty::Dyn, Ty::Duration) => Ty::Dyn,
                (Ty::Dyn, r) => r,
                (l, _) => l,
            },
            "_*_" | "_/_" | "_%_" => match arg(0) {
                Ty::Dyn => arg(1),
                l => l,
            },
            _ => Ty::Dyn,
        }
    }
}

/// A conversion that traverses for one argument type and is O(1) for the others: with a
/// `dyn` argument both overloads apply and the larger cost counts.
fn conversion_cost(arg: &Ty<'_>, traversal: u64) -> u64 {
    if arg.is_dyn() {
        traversal.max(1)
    } else {
        traversal
    }
}

/// The type of `l + r`.
fn sum_type<'n>(l: &Ty<'n>, r: &Ty<'n>) -> Ty<'n> {
    match (l, r) {
        (Ty::List(a), Ty::List(_)) if a.is_dyn() => r.clone(),
        (Ty::Timestamp, Ty::Duration) | (Ty::Duration, Ty::Timestamp) => Ty::Timestamp,
        (Ty::Timestamp, Ty::Dyn) | (Ty::Dyn, Ty::Timestamp) => Ty::Timestamp,
        // a duration plus a duration, or a timestamp
        (Ty::Duration, Ty::Dyn) | (Ty::Dyn, Ty::Duration) => Ty::Dyn,
        (Ty::Dyn, r) => r.clone(),
        (l, _) => l.clone(),
    }
}

/// The size of `s.replace(from, to)`: the most replacements of the shortest `from` by the
/// longest `to`, and the fewest of the longest by the shortest.
fn replace_size(s: Size, from: Size, to: Size) -> Size {
    let (mut count, mut kept) = (Size::exact(0), Size::exact(0));
    if from.min == 0 {
        // an empty `from` matches around every character
        count.max = if s.max < u64::MAX { s.max + 1 } else { s.max };
        kept.max = s.max;
    } else if to.max <= from.min {
        kept.max = s.max;
    } else {
        count.max = (s.max as f64 / from.min as f64).ceil() as u64;
    }
    if from.max == 0 {
        count.min = if s.min < u64::MAX { s.min + 1 } else { s.min };
        kept.min = s.min;
    } else if from.max <= to.min {
        kept.min = s.min;
    } else {
        count.min = (s.min as f64 / from.max as f64).ceil() as u64;
    }
    count.mul(to).add(kept)
}
