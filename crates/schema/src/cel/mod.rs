//! CEL `x-kubernetes-validations` (apiextensions `pkg/apiserver/schema/cel`), on the `cel`
//! interpreter with the Kubernetes CEL libraries from `kube-cel`.
//!
//! - [`compile`] parses every rule and `messageExpression` once, checks it against the
//!   schema (undeclared identifiers and functions, undefined fields, result type) and
//!   refuses rules over the per-rule and per-CRD cost limits with kube-apiserver's
//!   messages. A rule's cost is its estimate times how often it can run: the product of
//!   `maxItems`/`maxProperties` above it, or, under an unbounded list or map, as many of
//!   its node's smallest serialization as fit in a 3 MiB request; a `messageExpression`
//!   counts once. Every expression's cost stays with the compiled schema, so the limits
//!   can also be applied to a schema compiled without them (`cost_limit_errors`).
//! - `check` types each expression and estimates its worst-case cost as kube-apiserver
//!   1.32 does (cel-go's estimator with the Kubernetes library estimator): `decl` holds
//!   the sizes the schema gives (`maxLength` counts 4 bytes per character, enums their
//!   longest value, formats their longest text, anything unbounded what fits in a
//!   request), `cost` the arithmetic. kube-apiserver's own cost tables are its tests.
//! - [`eval`] evaluates them with `self` (and `oldSelf` for transition rules) bound to the
//!   node's value, under a per-call and a per-request runtime budget: `actual` instruments
//!   each expression once so that evaluation charges cel-go's actual cost as it goes.
//!
//! - [`typecheck`] checks an admission policy's expressions with `object` typed by a
//!   matched kind's schema (the policy status controller's warnings).
//!
//! Operators are checked against cel-go's overloads (`int > string` is refused with
//! cel-go's `found no matching overload` message) when both operand types are known.
//! Where kplane still differs from kube-apiserver 1.32: the checker is more lenient
//! (fields of untyped or property-less objects are `dyn`; a `dyn` rule result passes as a
//! bool; `==`, `in` and indexing are not checked against their operand types; errors
//! carry no line and column), it accepts functions 1.32 does not declare (`base64`, `math`, cel-go's `lists`
//! extension: costed by kplane's own size-based estimates), and it does not know type
//! identifiers (`type(x) == string`) or the two-variable comprehensions of 1.32. An
//! evaluation that fails part way is charged only what ran (cel-go keeps evaluating a
//! call's other arguments), and comprehensions whose accumulators the interpreter copies
//! are also bounded by a work limit of their own (`actual::work`).

mod actual;
mod admission_types;
mod arg_errors;
mod authz;
mod check;
pub(crate) mod compile;
mod cost;
mod decl;
pub(crate) mod eval;
mod functions;
pub mod policy;
pub mod typecheck;

use kube_cel::cel::IdedExpr;

pub(crate) use compile::{cost_limit_errors, CelCompiler, ExprCost};
pub(crate) use eval::validate_value;

use crate::node::Node;

/// `reason` of a validation rule.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Reason {
    Invalid,
    Forbidden,
    Required,
    Duplicate,
}

impl Reason {
    pub(crate) fn parse(s: &str) -> Option<Reason> {
        Some(match s {
            "FieldValueInvalid" => Reason::Invalid,
            "FieldValueForbidden" => Reason::Forbidden,
            "FieldValueRequired" => Reason::Required,
            "FieldValueDuplicate" => Reason::Duplicate,
            _ => return None,
        })
    }

    fn go_name(self) -> &'static str {
        match self {
            Reason::Invalid => "FieldValueInvalid",
            Reason::Forbidden => "FieldValueForbidden",
            Reason::Required => "FieldValueRequired",
            Reason::Duplicate => "FieldValueDuplicate",
        }
    }
}

/// A compiled expression.
#[derive(Debug)]
pub(crate) struct Program {
    pub expr: IdedExpr,
    pub message_expr: Option<IdedExpr>,
    pub uses_old_self: bool,
    /// Number of AST nodes of the rule and of its `messageExpression` (memory estimate).
    pub nodes: u64,
    pub message_nodes: u64,
}

/// One `x-kubernetes-validations` entry.
#[derive(Debug)]
pub(crate) struct CelRule {
    pub rule: String,
    pub message: Option<String>,
    pub message_expression: Option<String>,
    pub reason: Option<Reason>,
    /// The normalized `fieldPath`, appended to the error path.
    pub field_path: Option<String>,
    pub optional_old_self: Option<bool>,
    /// The ancestor below which `oldSelf` cannot be correlated (compile-time check only).
    pub uncorrelatable: Option<String>,
    /// Schema path of this entry (compile-time errors only; cleared after compiling).
    pub path: String,
    pub program: Option<Program>,
}

impl CelRule {
    pub(crate) fn heap_size(&self) -> usize {
        std::mem::size_of::<CelRule>()
            + self.rule.len()
            + self.message.as_ref().map_or(0, String::len)
            + self.message_expression.as_ref().map_or(0, String::len)
            + self
                .program
                .as_ref()
                .map_or(0, |p| (p.nodes + p.message_nodes) as usize * 96)
    }

    /// `ruleErrorString`: the trimmed message if set, else the trimmed rule.
    pub(crate) fn error_string(&self) -> &str {
        match self.message.as_deref() {
            Some(m) if !m.is_empty() => m.trim(),
            _ => self.rule.trim(),
        }
    }

    /// Go's `%#v` of the apiextensions `ValidationRule` (how compile errors show the rule).
    pub(crate) fn go_repr(&self) -> String {
        use kplane_types::validation::go_quote;
        let reason = match self.reason {
            Some(r) => format!(
                "(*apiextensions.FieldValueErrorReason)({})",
                go_quote(r.go_name())
            ),
            None => "(*apiextensions.FieldValueErrorReason)(nil)".into(),
        };
        let oos = match self.optional_old_self {
            Some(b) => format!("(*bool)({b})"),
            None => "(*bool)(nil)".into(),
        };
        format!(
            "apiextensions.ValidationRule{{Rule:{}, Message:{}, MessageExpression:{}, Reason:{reason}, FieldPath:{}, OptionalOldSelf:{oos}}}",
            go_quote(&self.rule),
            go_quote(self.message.as_deref().unwrap_or("")),
            go_quote(self.message_expression.as_deref().unwrap_or("")),
            go_quote(self.field_path.as_deref().unwrap_or("")),
        )
    }
}

/// Checks a rule's `fieldPath` (`ValidFieldPath`: `.a.b`, `['a.b']`, only through declared
/// properties and maps) and returns it as a field path (`a.b`, `[a.b]`).
pub(crate) fn valid_field_path(path: &str, n: &Node) -> Result<String, String> {
    let mut out = String::new();
    let mut node = n;
    let mut rest = path;
    let step = |out: &mut String, node: &mut &Node, name: String| -> Result<(), String> {
        if !node.properties.is_empty() {
            let child = node
                .property(&name)
                .ok_or("does not refer to a valid field")?;
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&name);
            *node = child;
        } else if let Some(ap) = node.additional.schema() {
            out.push('[');
            out.push_str(&name);
            out.push(']');
            *node = ap;
        } else {
            return Err("does not refer to a valid field".into());
        }
        Ok(())
    };
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            let name = &r[..end];
            if name.is_empty() {
                return Err("unexpected end of JSON path".into());
            }
            step(&mut out, &mut node, name.to_string())?;
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix("['") {
            let mut end = None;
            let bytes = r.as_bytes();
            for i in 0..bytes.len() {
                if bytes[i] == b'\'' && (i == 0 || bytes[i - 1] != b'\\') {
                    end = Some(i);
                    break;
                }
            }
            let end = end.ok_or("unexpected end of JSON path")?;
            let name = unescape_single_quoted(&r[..end])?;
            let after = &r[end + 1..];
            rest = after.strip_prefix(']').ok_or("expected ]")?;
            step(&mut out, &mut node, name)?;
        } else {
            return Err(format!("expected [ or . but got: {rest}"));
        }
    }
    Ok(out)
}

fn unescape_single_quoted(s: &str) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        out.push(match chars.next() {
            Some('a') => '\u{7}',
            Some('b') => '\u{8}',
            Some('f') => '\u{c}',
            Some('n') => '\n',
            Some('r') => '\r',
            Some('t') => '\t',
            Some('v') => '\u{b}',
            Some('\'') => '\'',
            Some('\\') => '\\',
            other => return Err(format!("invalid escape char \\{}", other.unwrap_or(' '))),
        });
    }
    Ok(out)
}

/// CEL's escaping of property names (`apiserver/pkg/cel/escaping.go`): `__` →
/// `__underscores__`, `.` → `__dot__`, `-` → `__dash__`, `/` → `__slash__`, reserved
/// words → `__word__`; `None` for names CEL cannot address.
pub(crate) fn escape(ident: &str) -> Option<String> {
    const RESERVED: [&str; 21] = [
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ];
    let first = ident.chars().next()?;
    if first.is_ascii_digit() {
        return None;
    }
    if RESERVED.contains(&ident) {
        return Some(format!("__{ident}__"));
    }
    let mut out = String::with_capacity(ident.len());
    let mut chars = ident.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '_' if chars.peek() == Some(&'_') => {
                chars.next();
                out.push_str("__underscores__");
            }
            '.' => out.push_str("__dot__"),
            '-' => out.push_str("__dash__"),
            '/' => out.push_str("__slash__"),
            c if c.is_ascii_alphanumeric() || c == '_' => out.push(c),
            _ => return None,
        }
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping() {
        assert_eq!(escape("foo").as_deref(), Some("foo"));
        assert_eq!(escape("namespace").as_deref(), Some("__namespace__"));
        assert_eq!(escape("foo-bar").as_deref(), Some("foo__dash__bar"));
        assert_eq!(escape("a.b/c").as_deref(), Some("a__dot__b__slash__c"));
        assert_eq!(escape("a__b").as_deref(), Some("a__underscores__b"));
        assert_eq!(escape("my_field").as_deref(), Some("my_field"));
        assert_eq!(escape("1abc"), None);
        assert_eq!(escape("a b"), None);
    }
}
