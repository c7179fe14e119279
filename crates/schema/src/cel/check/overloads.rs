//! Which operand types cel-go's standard operators accept, as the Kubernetes 1.32
//! environment declares them (with `CrossTypeNumericComparisons`, so an ordering may mix
//! `int`, `uint` and `double`): the orderings, arithmetic, unary minus, logical not, and
//! the logical and/or. A call no overload accepts is refused with cel-go's message,
//! `found no matching overload for '_>_' applied to '(int, string)'`.
//!
//! Only operands whose types are fully known are judged: `dyn` (int-or-string,
//! untyped and property-less objects, a policy's untyped variables), objects, optionals
//! and the Kubernetes library types always fit, so nothing cel-go accepts is refused
//! where kplane's checker knows less than cel-go's.

use super::{cel_name, Ty};

/// How an operand's type takes part in overload resolution here.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Concrete {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Null,
    Duration,
    Timestamp,
    List,
    Map,
}

impl Concrete {
    fn numeric(self) -> bool {
        matches!(self, Concrete::Int | Concrete::Uint | Concrete::Double)
    }
}

/// The type if it is one the operators' overloads are judged on; `None` for anything
/// that may stand for several (`dyn`, objects, optionals, library types).
fn concrete(t: &Ty<'_>) -> Option<Concrete> {
    Some(match t {
        Ty::Bool => Concrete::Bool,
        Ty::Int => Concrete::Int,
        Ty::Uint => Concrete::Uint,
        Ty::Double => Concrete::Double,
        Ty::String => Concrete::String,
        Ty::Bytes => Concrete::Bytes,
        Ty::Null => Concrete::Null,
        Ty::Duration => Concrete::Duration,
        Ty::Timestamp => Concrete::Timestamp,
        Ty::List(_) => Concrete::List,
        Ty::Map(..) => Concrete::Map,
        Ty::Dyn | Ty::Object(_) | Ty::Opaque(_) | Ty::Optional(_) => return None,
    })
}

/// Whether some overload of the binary operator `f` takes `(a, b)`; `None` when `f` is
/// not one judged here.
fn binary_fits(f: &str, a: Concrete, b: Concrete) -> Option<bool> {
    use Concrete::*;
    let same = a == b;
    Some(match f {
        "_<_" | "_<=_" | "_>_" | "_>=_" => {
            (a.numeric() && b.numeric())
                || (same && matches!(a, Bool | String | Bytes | Timestamp | Duration))
        }
        "_+_" => {
            (same && matches!(a, Int | Uint | Double | String | Bytes | List | Duration))
                || matches!((a, b), (Timestamp, Duration) | (Duration, Timestamp))
        }
        "_-_" => {
            (same && matches!(a, Int | Uint | Double | Timestamp | Duration))
                || (a, b) == (Timestamp, Duration)
        }
        "_*_" | "_/_" => same && a.numeric(),
        "_%_" => same && matches!(a, Int | Uint),
        "_&&_" | "_||_" => same && a == Bool,
        _ => return None,
    })
}

/// Whether some overload of the unary operator `f` takes `a`; `None` when `f` is not one
/// judged here.
fn unary_fits(f: &str, a: Concrete) -> Option<bool> {
    Some(match f {
        "-_" => matches!(a, Concrete::Int | Concrete::Double),
        "!_" => a == Concrete::Bool,
        _ => return None,
    })
}

/// cel-go's error for an operator call `f(args)` that no overload accepts; `None` when
/// one does, or when an operand's type is not fully known.
pub(super) fn mismatch(f: &str, args: &[&Ty<'_>]) -> Option<String> {
    let fits = match args {
        [a] => unary_fits(f, concrete(a)?)?,
        [a, b] => binary_fits(f, concrete(a)?, concrete(b)?)?,
        _ => return None,
    };
    if fits {
        return None;
    }
    let names: Vec<String> = args.iter().map(|t| cel_name(t)).collect();
    Some(format!(
        "found no matching overload for '{f}' applied to '({})'",
        names.join(", ")
    ))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use crate::build::Builder;
    use crate::cel::check::analyze;
    use crate::cel::compile::parse;
    use crate::options::CompileOptions;
    use crate::walk::Walk;

    /// Checks `rule` on an object of one field per type; the checker's error, if any.
    fn check(rule: &str) -> Result<(), String> {
        let schema = json!({"type": "object", "properties": {
            "i": {"type": "integer"},
            "d": {"type": "number"},
            "s": {"type": "string"},
            "b": {"type": "string", "format": "byte"},
            "t": {"type": "string", "format": "date-time"},
            "day": {"type": "string", "format": "date"},
            "dur": {"type": "string", "format": "duration"},
            "dt": {"type": "string", "format": "datetime"},
            "flag": {"type": "boolean"},
            "l": {"type": "array", "items": {"type": "integer"}},
            "m": {"type": "object", "additionalProperties": {"type": "integer"}},
            "ios": {"x-kubernetes-int-or-string": true},
            "any": {"x-kubernetes-preserve-unknown-fields": true},
            "o": {"type": "object", "x-kubernetes-preserve-unknown-fields": true},
        }});
        let opts = CompileOptions::default();
        let node = Builder::new(&opts).node(&schema, &Walk::root("test"));
        let expr = parse(rule).unwrap();
        analyze(&expr, &node, false, false).map(|_| ())
    }

    #[test]
    fn operators_cel_go_declares_are_accepted() {
        for rule in [
            // orderings: same types, and any numeric mix (CrossTypeNumericComparisons)
            "self.i > 1",
            "self.i > 1.0",
            "self.i >= 1u",
            "self.d < self.i",
            "1u <= self.d",
            "self.s < 'a'",
            "self.b > b'a'",
            "self.flag < true",
            "self.t < timestamp('2024-01-01T00:00:00Z')",
            "self.day <= self.t",
            "self.dur > duration('1s')",
            // arithmetic
            "self.i + 1 > 0",
            "self.d * 2.0 > 0.0",
            "self.i / 2 - 1 > 0",
            "self.i % 2 == 0",
            "1u % 2u == 1u",
            "self.s + 'x' == 'y'",
            "self.b + b'x' == b'y'",
            "self.l + [1] == self.l",
            "self.t + self.dur > self.t",
            "self.dur + self.t > self.t",
            "self.dur + self.dur > self.dur",
            "self.t - self.t > duration('0s')",
            "self.t - self.dur < self.t",
            "self.dur - self.dur < self.dur",
            // unary and logical
            "-self.i < 0",
            "-self.d < 0.0",
            "!self.flag",
            "self.flag && self.i > 0 || !self.flag",
            // macros expand to operators over their accumulators
            "self.l.all(x, x > 0)",
            "self.l.exists_one(x, x > 1)",
            "self.l.map(x, x * 2).size() > 0",
            "self.l.filter(x, x % 2 == 0).size() > 0",
            "self.m.all(k, self.m[k] > 1 && k > 'a')",
            // a format cel-go does not know by that name is a string
            "self.dt > 'x'",
            // dyn matches every overload
            "self.ios > 1",
            "self.ios + 'x' == 'y'",
            "self.any > '1'",
            "self.o.x > 'a' && self.o.x > 1",
            // a duration plus `dyn` may be a timestamp, a timestamp minus `dyn` a duration
            "self.dur + self.any > self.t",
            "self.t - self.any > self.dur",
            "self.any - self.dur < self.t",
            "self.m['a'] > 1",
            // literals and conditionals take the most general of their elements' types
            "{'a': 1, 'b': self.ios}['b'] + 'x' == 'y'",
            "{'a': 1, self.ios: 2}.size() > 0",
            "[[1], [self.ios]][1][0] + 'x' == 'y'",
            "[1, self.ios][0] + 'x' == 'y'",
            "(self.flag ? [1] : [self.ios])[0] + 'x' == 'y'",
            "(self.flag ? 1 : self.ios) + 'x' == 'y'",
            "{'a': [1], 'b': [self.any]}['a'][0] > '1'",
        ] {
            assert_eq!(check(rule), Ok(()), "{rule}");
        }
    }

    #[test]
    fn operators_without_an_overload_are_refused_with_cel_gos_message() {
        for (rule, op, args) in [
            ("self.i > '1'", "_>_", "int, string"),
            ("'wants ' + self.i == 'x'", "_+_", "string, int"),
            ("self.i < self.s", "_<_", "int, string"),
            ("self.flag <= 1", "_<=_", "bool, int"),
            ("null >= 1", "_>=_", "null_type, int"),
            ("self.l < self.l", "_<_", "list(int), list(int)"),
            ("self.i + 1u > 0", "_+_", "int, uint"),
            ("self.i + 1.0 > 0.0", "_+_", "int, double"),
            ("self.d % 2.0 == 0.0", "_%_", "double, double"),
            (
                "self.t + self.t > self.t",
                "_+_",
                "google.protobuf.Timestamp, google.protobuf.Timestamp",
            ),
            (
                "self.dur - self.t < self.t",
                "_-_",
                "google.protobuf.Duration, google.protobuf.Timestamp",
            ),
            (
                "self.t > self.dur",
                "_>_",
                "google.protobuf.Timestamp, google.protobuf.Duration",
            ),
            (
                "self.m + self.m == self.m",
                "_+_",
                "map(string, int), map(string, int)",
            ),
            ("self.s * 2 == 'x'", "_*_", "string, int"),
            ("{'a': 1, 'b': 2}['b'] + 'x' == 'y'", "_+_", "int, string"),
            ("(self.flag ? 1 : 2) + 'x' == 'y'", "_+_", "int, string"),
            ("self.b > 'a'", "_>_", "bytes, string"),
            ("self.i && true", "_&&_", "int, bool"),
            ("-self.flag", "-_", "bool"),
            ("!self.i", "!_", "int"),
            // `dyn` plus an int is an int; a timestamp minus `dyn` is not a string
            ("self.any + 1 > 'a'", "_>_", "int, string"),
            (
                "self.any - self.t > 'a'",
                "_>_",
                "google.protobuf.Duration, string",
            ),
            ("self.l.all(x, x > 'a')", "_>_", "int, string"),
        ] {
            let want = format!("found no matching overload for '{op}' applied to '({args})'");
            assert_eq!(check(rule), Err(want), "{rule}");
        }
    }
}
