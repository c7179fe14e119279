//! Type checking of admission policy expressions against the schemas of the kinds a policy
//! matches (upstream's `TypeChecker`, whose findings kube-controller-manager writes to a
//! ValidatingAdmissionPolicy's `status.typeChecking`).
//!
//! A [`TypeSchema`] is a kind's OpenAPI v3 schema (no `$ref`s left) as CEL types it;
//! [`PolicyTypes::check`] checks one expression with `object` and `oldObject` of that type
//! (a resource root: `apiVersion`, `kind` and `metadata` always there), `params` of the
//! param kind's (not declared when the param kind's schema is unknown, as upstream),
//! `request` and `namespaceObject` of upstream's declared types, `authorizer` declared in
//! every expression, and
//! `variables.<name>` typed by the policy's variables. The result type is not judged (the
//! expression's field decides that at admission), only what cel-go's checker refuses as
//! kplane's checker knows it: undeclared names, undefined fields of typed objects,
//! operators without an overload for their operand types.
//!
//! Nothing here changes what a policy does: admission compiles its expressions with
//! `object`, `oldObject` and `params` `dyn` (`policy::compile`), whatever the type check
//! finds.

use serde_json::Value;

use super::check;
use super::compile::parse;
use crate::build::Builder;
use crate::node::Node;
use crate::options::CompileOptions;
use crate::walk::Walk;

/// A kind's schema as the type checker reads it.
pub struct TypeSchema {
    root: Node,
}

impl std::fmt::Debug for TypeSchema {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TypeSchema").finish_non_exhaustive()
    }
}

impl TypeSchema {
    /// The types `schema` declares: an OpenAPI v3 schema object with every `$ref` resolved
    /// (what a recursive definition cannot resolve may be left untyped: it is `dyn`). A
    /// schema that is not structural is read as far as it goes; what it does not type is
    /// `dyn`.
    pub fn new(schema: &Value) -> TypeSchema {
        let opts = CompileOptions::default();
        let root = stacker::grow(crate::options::COMPILE_STACK_BYTES, || {
            Builder::new(&opts).node(schema, &Walk::root(""))
        });
        TypeSchema { root }
    }
}

/// One named variable of a policy (`spec.variables[]`), as written.
#[derive(Clone, Debug)]
pub struct NamedExpression {
    pub name: String,
    pub expression: String,
}

/// The environment of a policy's type check against one matched kind.
#[derive(Clone, Copy, Debug)]
pub struct PolicyTypes<'a> {
    /// The matched kind's schema: the type of `object` and `oldObject`.
    pub object: &'a TypeSchema,
    /// The param kind's schema; `None` leaves `params` undeclared.
    pub params: Option<&'a TypeSchema>,
    /// The policy's variables, in order.
    pub variables: &'a [NamedExpression],
}

impl PolicyTypes<'_> {
    /// The issues of `expression` (a validation's `expression` or `messageExpression`) as
    /// cel-go reports them (`ERROR: <input>: undefined field 'maxRetries'`; kplane gives no
    /// line and column for checker errors), or `None` when it checks.
    pub fn check(&self, expression: &str) -> Option<String> {
        stacker::grow(crate::options::COMPILE_STACK_BYTES, || {
            self.check_here(expression)
        })
    }

    fn check_here(&self, expression: &str) -> Option<String> {
        let expr = match parse(expression) {
            Ok(e) => e,
            Err(e) => return Some(e),
        };
        let parsed: Vec<_> = self
            .variables
            .iter()
            .map(|v| (v.name.as_str(), parse(&v.expression).ok()))
            .collect();
        let variables: Vec<_> = parsed.iter().map(|(n, e)| (*n, e.as_ref())).collect();
        let params = self.params.map(|p| &p.root);
        check::analyze_policy(&expr, &self.object.root, params, &variables)
            .err()
            .map(|d| format!("ERROR: <input>: {d}"))
    }
}

#[cfg(test)]
#[path = "typecheck_tests.rs"]
mod tests;
