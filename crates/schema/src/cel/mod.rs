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
//! - `rule` holds an entry's compiled form ([`CelRule`]), `escaping` CEL's escaping of
//!   property names and `field_path` the check of an entry's `fieldPath`.
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
mod escaping;
pub use escaping::is_reserved_word;
pub(crate) mod eval;
mod field_path;
mod functions;
pub mod policy;
mod rule;
pub mod typecheck;

pub(crate) use compile::{cost_limit_errors, CelCompiler, ExprCost};
pub(crate) use eval::validate_value;
pub(crate) use field_path::valid_field_path;
pub(crate) use rule::{CelRule, Reason};
