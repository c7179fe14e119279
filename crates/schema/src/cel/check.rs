//! Static checks and cost estimation of one CEL expression against the schema node it is
//! declared on: identifiers and functions must exist, fields must be declared (with CEL's
//! property-name escaping), and the worst-case cost is kube-apiserver's estimate, step for
//! step: the type of every subexpression picks the cost formula of the function it calls,
//! sizes come from the literal, from a function's result size, or from the schema at the
//! subexpression's field path (`decl`), and comprehensions multiply their per-iteration
//! cost by the size of what they iterate (`cost`).
//!
//! Operator calls are checked against cel-go's overloads (`overloads`). The checker is
//! more lenient than cel-go's in places (untyped and property-less objects allow any
//! field, as `dyn`; equality and `in` take any operands), and it accepts a few functions Kubernetes 1.32 does not
//! declare (`base64`, `math`, cel-go's `lists` extension); those are costed by their own
//! size-based formulas below, since no upstream figure exists for them.

use std::sync::Arc;

use kube_cel::cel::common::ast::{
    CallExpr, ComprehensionExpr, EntryExpr, Expr, LiteralValue, SelectExpr,
};
use kube_cel::cel::IdedExpr;

use super::admission_types;
use super::authz;
use super::cost::{GoPath, Size, LIST_CREATE, MAP_CREATE, SELECT_AND_IDENT};
use super::decl::{Decl, MAX_REQUEST_BYTES};
use super::escaping::escape;
use super::functions::{FUNCTIONS, NAMESPACED};
use crate::node::{Node, Ty as SchemaTy};

mod calls;
mod overloads;

/// Deepest expression tree accepted (bounds interpreter recursion).
pub(crate) const MAX_AST_DEPTH: usize = 100;

/// What an expression evaluates to, as far as the compile-time checks care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Bool,
    String,
    Dyn,
    Other,
}

/// Kubernetes' own value types.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Opaque {
    Ip,
    Cidr,
    Url,
    Quantity,
    Semver,
    Format,
    /// The `authorizer` library's values (`authz`).
    Authorizer,
    PathCheck,
    GroupCheck,
    ResourceCheck,
    Decision,
}

impl Opaque {
    fn is_authz(self) -> bool {
        matches!(
            self,
            Opaque::Authorizer
                | Opaque::PathCheck
                | Opaque::GroupCheck
                | Opaque::ResourceCheck
                | Opaque::Decision
        )
    }
}

/// The checked type of an expression.
#[derive(Clone, Debug)]
enum Ty<'n> {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    Null,
    Duration,
    Timestamp,
    List(Arc<Ty<'n>>),
    Map(Arc<Ty<'n>>, Arc<Ty<'n>>),
    /// An object of the schema (a struct in CEL).
    Object(Decl<'n>),
    Opaque(Opaque),
    Optional(Arc<Ty<'n>>),
    Dyn,
}

impl<'n> Ty<'n> {
    fn list(elem: Ty<'n>) -> Ty<'n> {
        Ty::List(Arc::new(elem))
    }

    fn optional(inner: Ty<'n>) -> Ty<'n> {
        Ty::Optional(Arc::new(inner))
    }

    /// The type CEL declares for a schema declaration.
    fn of(d: Decl<'n>) -> Ty<'n> {
        let n = match d {
            Decl::PlainString | Decl::Key => return Ty::String,
            Decl::Meta => return Ty::Object(d),
            Decl::Node(n, _) => n,
        };
        if n.int_or_string {
            return Ty::Dyn;
        }
        match n.ty {
            Some(SchemaTy::Array) => Ty::list(d.elem().map_or(Ty::Dyn, Ty::of)),
            Some(SchemaTy::Object) => match d.elem() {
                Some(v) => Ty::Map(Arc::new(Ty::String), Arc::new(Ty::of(v))),
                None => Ty::Object(d),
            },
            // by the format as written (`datetime` is a plain string to CEL, as upstream)
            Some(SchemaTy::String) => match n.format.as_ref().map(|f| &*f.1) {
                Some("byte") => Ty::Bytes,
                Some("duration") => Ty::Duration,
                Some("date" | "date-time") => Ty::Timestamp,
                _ => Ty::String,
            },
            Some(SchemaTy::Integer) => Ty::Int,
            Some(SchemaTy::Number) => Ty::Double,
            Some(SchemaTy::Boolean) => Ty::Bool,
            None => Ty::Dyn,
        }
    }

    fn kind(&self) -> Kind {
        match self {
            Ty::Bool => Kind::Bool,
            Ty::String => Kind::String,
            Ty::Dyn => Kind::Dyn,
            _ => Kind::Other,
        }
    }

    fn is_dyn(&self) -> bool {
        matches!(self, Ty::Dyn)
    }

    /// Types of a known, fixed size (cel-go's `isScalar`).
    fn is_scalar(&self) -> bool {
        matches!(
            self,
            Ty::Bool | Ty::Int | Ty::Uint | Ty::Double | Ty::Duration | Ty::Timestamp
        )
    }

    fn same_kind(&self, o: &Ty<'n>) -> bool {
        std::mem::discriminant(self) == std::mem::discriminant(o)
    }

    /// The type of a literal's elements (or a conditional's branches) that are `self` and
    /// `o`: cel-go's most general of the two (`dyn` wins, also inside lists, maps and
    /// optionals); two types cel-go could not join (a compile error with homogeneous
    /// aggregate literals) are `dyn` here, never an error kplane would raise and cel-go not.
    fn join(&self, o: &Ty<'n>) -> Ty<'n> {
        match (self, o) {
            (Ty::Dyn, _) | (_, Ty::Dyn) => Ty::Dyn,
            (Ty::List(a), Ty::List(b)) => Ty::list(a.join(b)),
            (Ty::Map(ka, va), Ty::Map(kb, vb)) => {
                Ty::Map(Arc::new(ka.join(kb)), Arc::new(va.join(vb)))
            }
            (Ty::Optional(a), Ty::Optional(b)) => Ty::optional(a.join(b)),
            (Ty::Opaque(a), Ty::Opaque(b)) if a != b => Ty::Dyn,
            (a, b) if a.same_kind(b) => a.clone(),
            _ => Ty::Dyn,
        }
    }

    /// The first type parameter (a list's element, a map's key, an optional's value).
    fn first_param(&self) -> Option<&Ty<'n>> {
        match self {
            Ty::List(e) | Ty::Map(e, _) | Ty::Optional(e) => Some(e),
            _ => None,
        }
    }
}

/// A checked subexpression with what the estimator knows of it.
#[derive(Clone)]
struct Est<'n> {
    ty: Ty<'n>,
    /// The schema declaration the value comes straight from (fields, items, values).
    decl: Option<Decl<'n>>,
    /// The field path its size is looked up by.
    path: Option<GoPath>,
    /// A size known from the expression itself (literals, results of functions that
    /// report one, comprehensions).
    computed: Option<Size>,
    cost: u64,
}

impl<'n> Est<'n> {
    fn of(ty: Ty<'n>, cost: u64) -> Est<'n> {
        Est {
            ty,
            decl: None,
            path: None,
            computed: None,
            cost,
        }
    }

    fn sized(mut self, size: Option<Size>) -> Est<'n> {
        self.computed = size;
        self
    }
}

/// What an iteration variable ranges over, for its field path.
#[derive(Clone)]
enum Range {
    /// Items of a list: `<range path>.@items`.
    List(Option<GoPath>),
    /// Keys of a map: `<range path>.@keys`.
    Map(Option<GoPath>),
    /// Anything else (`dyn`): no path.
    Other,
}

struct Var<'n> {
    name: String,
    ty: Ty<'n>,
    decl: Option<Decl<'n>>,
    range: Option<Range>,
}

/// The outcome of checking an expression.
pub(crate) struct Analysis {
    pub kind: Kind,
    pub cost: u64,
    pub uses_old_self: bool,
    pub nodes: u64,
}

/// Checks `e` as an expression on node `n`.
pub(crate) fn analyze(
    e: &IdedExpr,
    n: &Node,
    resource_root: bool,
    optional_old_self: bool,
) -> Result<Analysis, String> {
    let mut a = Analyzer {
        scope: Vec::new(),
        root: Decl::Node(n, resource_root),
        optional_old_self,
        uses_old_self: false,
        nodes: 0,
        dyn_vars: &[],
        authorizer: false,
        variables: None,
        plain_keywords: false,
    };
    let est = a.expr(e, 0)?;
    Ok(Analysis {
        kind: est.ty.kind(),
        cost: est.cost,
        uses_old_self: a.uses_old_self,
        nodes: a.nodes,
    })
}

/// Checks `e` in an environment without `self`, whose variables `vars` are `dyn`
/// (admission policies' `object`, `params`, ...) but for `request` and `namespaceObject`,
/// typed as upstream declares them (`admission_types`), and with `authorizer`, also
/// `authorizer` and `authorizer.requestResource`; returns the result's kind, its type as
/// cel-go names it and the type a variable of this expression has to the expressions after
/// it. With `variables` (a policy's variables declared before `e`, in order, with their
/// types), `variables.<name>` has that variable's type, as upstream's composition
/// environment declares it; `vars` then holds `variables` too.
pub(crate) fn analyze_dyn(
    e: &IdedExpr,
    vars: &[&str],
    authorizer: bool,
    variables: Option<&[(&str, &VarTy)]>,
) -> Result<(Kind, String, VarTy), String> {
    let root = Node::default();
    let (request, namespace) = (admission_types::request(), admission_types::namespace());
    let scope = [("request", request), ("namespaceObject", namespace)]
        .into_iter()
        .filter(|(name, _)| vars.contains(name))
        .map(|(name, node)| typed_var(name, Decl::Node(node, false)))
        .collect();
    let mut a = Analyzer {
        scope,
        root: Decl::Node(&root, false),
        optional_old_self: false,
        uses_old_self: false,
        nodes: 0,
        dyn_vars: vars,
        authorizer,
        variables: variables.map(|declared| {
            declared
                .iter()
                .map(|(name, ty)| (name.to_string(), ty.0.clone()))
                .collect()
        }),
        plain_keywords: true,
    };
    let est = a.expr(e, 0)?;
    Ok((
        est.ty.kind(),
        cel_name(&est.ty),
        VarTy(composition_type(&est.ty)),
    ))
}

/// A policy variable's type as the expressions after it see it ([`composition_type`]):
/// free of schema references, so a compiled variable keeps it.
#[derive(Clone, Debug)]
pub(crate) struct VarTy(Ty<'static>);

impl VarTy {
    /// `dyn`: the type of a variable whose expression did not compile.
    pub(crate) const DYN: VarTy = VarTy(Ty::Dyn);
}

/// The variables of an admission policy's type check (upstream's `TypeChecker`): `object`
/// and `oldObject` typed from the matched kind's schema (a resource root), `params` from
/// the param kind's (undeclared without one), `request` and `namespaceObject` as upstream
/// declares them, `authorizer` declared, and `variables` typed by their own expressions in
/// order (one
/// that fails to check is `dyn`; objects, optionals and library values are `dyn` there,
/// lists and maps keep their element types, as upstream's composition environment keeps
/// them). Returns the first error of `e`.
pub(crate) fn analyze_policy(
    e: &IdedExpr,
    object: &Node,
    params: Option<&Node>,
    variables: &[(&str, Option<&IdedExpr>)],
) -> Result<(), String> {
    let mut base = Vec::new();
    for name in ["object", "oldObject"] {
        base.push((name, Decl::Node(object, true)));
    }
    if let Some(p) = params {
        base.push(("params", Decl::Node(p, true)));
    }
    let (request, namespace) = (admission_types::request(), admission_types::namespace());
    base.push(("request", Decl::Node(request, false)));
    base.push(("namespaceObject", Decl::Node(namespace, false)));
    let root = Node::default();
    let analyzer = |vars| policy_analyzer(&base, &root, vars);
    let mut known: Vec<(String, Ty<'_>)> = Vec::new();
    for (name, expr) in variables {
        let ty = match expr {
            Some(v) => analyzer(known.clone())
                .expr(v, 0)
                .map_or(Ty::Dyn, |est| composition_type(&est.ty)),
            None => Ty::Dyn,
        };
        known.push((name.to_string(), ty));
    }
    analyzer(known).expr(e, 0).map(|_| ())
}

/// An analyzer for [`analyze_policy`] with `base` typed and `vars` the variables' types.
fn policy_analyzer<'n>(
    base: &[(&str, Decl<'n>)],
    root: &'n Node,
    vars: Vec<(String, Ty<'n>)>,
) -> Analyzer<'n> {
    const DYN_VARS: &[&str] = &["variables"];
    let scope = base.iter().map(|(name, d)| typed_var(name, *d)).collect();
    Analyzer {
        scope,
        root: Decl::Node(root, false),
        optional_old_self: false,
        uses_old_self: false,
        nodes: 0,
        dyn_vars: DYN_VARS,
        authorizer: true,
        variables: Some(vars),
        plain_keywords: true,
    }
}

/// A variable of the type `d` declares.
fn typed_var<'n>(name: &str, d: Decl<'n>) -> Var<'n> {
    Var {
        name: name.to_string(),
        ty: Ty::of(d),
        decl: Some(d),
        range: Some(Range::Other),
    }
}

/// The type a policy variable has to the expressions after it: objects, optionals and
/// library values lose their type (`dyn`), lists and maps keep their parameters so.
fn composition_type(t: &Ty<'_>) -> Ty<'static> {
    match t {
        Ty::List(e) => Ty::list(composition_type(e)),
        Ty::Map(k, v) => Ty::Map(Arc::new(composition_type(k)), Arc::new(composition_type(v))),
        Ty::Object(_) | Ty::Opaque(_) | Ty::Optional(_) | Ty::Dyn => Ty::Dyn,
        Ty::Bool => Ty::Bool,
        Ty::Int => Ty::Int,
        Ty::Uint => Ty::Uint,
        Ty::Double => Ty::Double,
        Ty::String => Ty::String,
        Ty::Bytes => Ty::Bytes,
        Ty::Null => Ty::Null,
        Ty::Duration => Ty::Duration,
        Ty::Timestamp => Ty::Timestamp,
    }
}

/// cel-go's name of a type (`bool`, `list(int)`, `map(string, dyn)`, ...).
fn cel_name(t: &Ty<'_>) -> String {
    match t {
        Ty::Bool => "bool".into(),
        Ty::Int => "int".into(),
        Ty::Uint => "uint".into(),
        Ty::Double => "double".into(),
        Ty::String => "string".into(),
        Ty::Bytes => "bytes".into(),
        Ty::Null => "null_type".into(),
        Ty::Duration => "google.protobuf.Duration".into(),
        Ty::Timestamp => "google.protobuf.Timestamp".into(),
        Ty::List(e) => format!("list({})", cel_name(e)),
        Ty::Map(k, v) => format!("map({}, {})", cel_name(k), cel_name(v)),
        Ty::Object(_) => "object".into(),
        Ty::Opaque(o) => match o {
            Opaque::Ip => "net.IP".into(),
            Opaque::Cidr => "net.CIDR".into(),
            Opaque::Url => "kubernetes.URL".into(),
            Opaque::Quantity => "kubernetes.Quantity".into(),
            Opaque::Semver => "kubernetes.Semver".into(),
            Opaque::Format => "kubernetes.NamedFormat".into(),
            Opaque::Authorizer => authz::AUTHORIZER.into(),
            Opaque::PathCheck => authz::PATH_CHECK.into(),
            Opaque::GroupCheck => authz::GROUP_CHECK.into(),
            Opaque::ResourceCheck => authz::RESOURCE_CHECK.into(),
            Opaque::Decision => authz::DECISION.into(),
        },
        Ty::Optional(i) => format!("optional_type({})", cel_name(i)),
        Ty::Dyn => "dyn".into(),
    }
}

struct Analyzer<'n> {
    scope: Vec<Var<'n>>,
    /// The declaration of `self`: every path's sizes are looked up from here.
    root: Decl<'n>,
    optional_old_self: bool,
    uses_old_self: bool,
    nodes: u64,
    /// Variables of type `dyn` besides `self` and `oldSelf` (admission policies').
    dyn_vars: &'n [&'n str],
    /// `authorizer` and `authorizer.requestResource` are declared.
    authorizer: bool,
    /// The types of a policy's variables, when `variables.<name>` is typed by them (a
    /// policy's type check); a name not there is an undefined field.
    variables: Option<Vec<(String, Ty<'n>)>>,
    /// A property named like a CEL keyword is also found by its plain name (`namespace`
    /// for `__namespace__`), as in the 1.31+ environments of admission CEL.
    plain_keywords: bool,
}

fn undeclared(name: &str) -> String {
    format!("undeclared reference to '{name}' (in container '')")
}

fn add(a: u64, b: u64) -> u64 {
    a.saturating_add(b)
}

impl<'n> Analyzer<'n> {
    fn expr(&mut self, e: &IdedExpr, depth: usize) -> Result<Est<'n>, String> {
        if depth > MAX_AST_DEPTH {
            return Err(format!(
                "expression nesting exceeds the maximum depth of {MAX_AST_DEPTH}"
            ));
        }
        self.nodes += 1;
        match &e.expr {
            Expr::Literal(l) => Ok(literal(l)),
            Expr::Ident(name) => self.ident(name),
            Expr::Select(sel) => {
                if let Some(est) = self.variable_select(sel)? {
                    return Ok(est);
                }
                if let Some(est) = self.authorizer_select(sel)? {
                    return Ok(est);
                }
                let op = self.expr(&sel.operand, depth + 1)?;
                let field = self.field(&op, &sel.field)?;
                if sel.test {
                    // `has()`: presence tests cost nothing beyond their operand in Kubernetes
                    return Ok(Est::of(Ty::Bool, op.cost));
                }
                let select = match op.ty {
                    Ty::Map(..) | Ty::Object(_) => SELECT_AND_IDENT,
                    _ => 0,
                };
                Ok(Est {
                    path: Some(GoPath::append(op.path.as_ref(), &sel.field)),
                    cost: add(op.cost, select),
                    ..field
                })
            }
            Expr::Call(call) => self.call(call, depth),
            Expr::Comprehension(c) => self.comprehension(c, depth),
            Expr::List(l) => {
                let mut cost = LIST_CREATE;
                let mut elem: Option<Ty<'n>> = None;
                for el in &l.elements {
                    let est = self.expr(el, depth + 1)?;
                    cost = add(cost, est.cost);
                    elem = Some(match elem {
                        None => est.ty,
                        Some(t) => t.join(&est.ty),
                    });
                }
                let size = Size::exact(l.elements.len() as u64);
                Ok(Est::of(Ty::list(elem.unwrap_or(Ty::Dyn)), cost).sized(Some(size)))
            }
            Expr::Map(m) => {
                let mut cost = MAP_CREATE;
                let mut joined: Option<(Ty<'n>, Ty<'n>)> = None;
                for entry in m.entries.iter() {
                    match &entry.expr {
                        EntryExpr::MapEntry(me) => {
                            let k = self.expr(&me.key, depth + 1)?;
                            let v = self.expr(&me.value, depth + 1)?;
                            cost = add(add(cost, k.cost), v.cost);
                            joined = Some(match joined {
                                None => (k.ty, v.ty),
                                Some((key, value)) => (key.join(&k.ty), value.join(&v.ty)),
                            });
                        }
                        EntryExpr::StructField(_) => {
                            return Err("unsupported syntax: struct field in map".into())
                        }
                    }
                }
                let size = Size::exact(m.entries.len() as u64);
                let (key, value) = joined.unwrap_or((Ty::Dyn, Ty::Dyn));
                let ty = Ty::Map(Arc::new(key), Arc::new(value));
                Ok(Est::of(ty, cost).sized(Some(size)))
            }
            Expr::Struct(s) => Err(undeclared(&s.type_name)),
            Expr::Unspecified => Err("unsupported expression".into()),
        }
    }

    fn ident(&mut self, name: &str) -> Result<Est<'n>, String> {
        if let Some(v) = self.scope.iter().rev().find(|v| v.name == name) {
            let path = match &v.range {
                Some(Range::List(p)) => Some(GoPath::append(p.as_ref(), "@items")),
                Some(Range::Map(p)) => Some(GoPath::append(p.as_ref(), "@keys")),
                Some(Range::Other) => None,
                // the accumulator: no path, so no size from the schema
                None => None,
            };
            return Ok(Est {
                ty: v.ty.clone(),
                decl: v.decl,
                path,
                computed: None,
                cost: SELECT_AND_IDENT,
            });
        }
        if self.authorizer && name == "authorizer" {
            return Ok(Est::of(Ty::Opaque(Opaque::Authorizer), SELECT_AND_IDENT));
        }
        if !self.dyn_vars.is_empty() {
            return match self.dyn_vars.contains(&name) {
                true => Ok(Est::of(Ty::Dyn, SELECT_AND_IDENT)),
                false => Err(undeclared(name)),
            };
        }
        let ty = match name {
            "self" => Ty::of(self.root),
            "oldSelf" => {
                self.uses_old_self = true;
                let ty = Ty::of(self.root);
                if self.optional_old_self {
                    Ty::optional(ty)
                } else {
                    ty
                }
            }
            _ => return Err(undeclared(name)),
        };
        Ok(Est {
            ty,
            decl: Some(self.root),
            path: Some(GoPath::var(name)),
            computed: None,
            cost: SELECT_AND_IDENT,
        })
    }

    /// `variables.<name>` where the variables are typed: that variable's type, or cel-go's
    /// error for a name not declared (yet).
    fn variable_select(&self, sel: &SelectExpr) -> Result<Option<Est<'n>>, String> {
        let Some(vars) = &self.variables else {
            return Ok(None);
        };
        let Expr::Ident(v) = &sel.operand.expr else {
            return Ok(None);
        };
        if v != "variables" || self.scope.iter().any(|s| s.name == *v) {
            return Ok(None);
        }
        match vars.iter().rev().find(|(name, _)| *name == sel.field) {
            Some(_) if sel.test => Ok(Some(Est::of(Ty::Bool, SELECT_AND_IDENT))),
            Some((_, ty)) => Ok(Some(Est::of(ty.clone(), SELECT_AND_IDENT))),
            None => Err(format!("undefined field '{}'", sel.field)),
        }
    }

    /// `authorizer.requestResource`, a variable of its own (cel-go resolves the qualified
    /// name first); any other field of an `authorizer` library value is an error: those
    /// types have no fields cel-go can resolve.
    fn authorizer_select(&self, sel: &SelectExpr) -> Result<Option<Est<'n>>, String> {
        let Expr::Ident(v) = &sel.operand.expr else {
            return Ok(None);
        };
        if !self.authorizer || v != "authorizer" || self.scope.iter().any(|s| s.name == *v) {
            return Ok(None);
        }
        if sel.field == "requestResource" && !sel.test {
            let ty = Ty::Opaque(Opaque::ResourceCheck);
            return Ok(Some(Est::of(ty, SELECT_AND_IDENT)));
        }
        Err(format!(
            "unexpected failed resolution of '{}'",
            authz::AUTHORIZER
        ))
    }

    fn comprehension(&mut self, c: &ComprehensionExpr, depth: usize) -> Result<Est<'n>, String> {
        let range = self.expr(&c.iter_range, depth + 1)?;
        let init = self.expr(&c.accu_init, depth + 1)?;
        let (elem, elem_decl, kind) = match &range.ty {
            Ty::List(e) => (
                (**e).clone(),
                range.decl.and_then(Decl::elem),
                Range::List(range.path.clone()),
            ),
            Ty::Map(k, _) => ((**k).clone(), None, Range::Map(range.path.clone())),
            _ => (Ty::Dyn, None, Range::Other),
        };
        let mark = self.scope.len();
        self.scope.push(Var {
            name: c.iter_var.clone(),
            ty: elem,
            decl: elem_decl,
            range: Some(kind),
        });
        if let Some(v2) = &c.iter_var2 {
            self.scope.push(Var {
                name: v2.clone(),
                ty: Ty::Dyn,
                decl: None,
                range: Some(Range::Other),
            });
        }
        self.scope.push(Var {
            name: c.accu_var.clone(),
            ty: init.ty.clone(),
            decl: None,
            range: None,
        });
        let body = self.expr(&c.loop_cond, depth + 1).and_then(|cond| {
            self.expr(&c.loop_step, depth + 1)
                .map(|step| (cond.cost, step))
        });
        // the result sees the accumulator only
        let accu = self.scope.pop();
        self.scope.truncate(mark);
        let (cond_cost, step) = body?;
        let accu_ty = match (&init.ty, &step.ty) {
            (Ty::List(_), Ty::List(e)) if !e.is_dyn() => step.ty.clone(),
            _ => init.ty.clone(),
        };
        if let Some(mut accu) = accu {
            accu.ty = accu_ty.clone();
            self.scope.push(accu);
        }
        let result = self.expr(&c.result, depth + 1);
        self.scope.truncate(mark);
        let result = result?;
        let ty = if matches!(&c.result.expr, Expr::Ident(v) if *v == c.accu_var) {
            accu_ty
        } else {
            result.ty
        };
        let count = self.size(&range);
        let per_iteration = add(step.cost, cond_cost);
        let cost = add(
            add(add(range.cost, init.cost), result.cost),
            count.max.saturating_mul(per_iteration),
        );
        Ok(Est::of(ty, cost).sized(Some(count)))
    }

    /// A field of `op`: its type and declaration (the path and cost are the caller's).
    fn field(&self, op: &Est<'n>, field: &str) -> Result<Est<'n>, String> {
        let decl = match &op.ty {
            Ty::Object(d) => *d,
            Ty::Map(_, v) => {
                return Ok(Est {
                    decl: op.decl.and_then(Decl::elem),
                    ..Est::of((**v).clone(), 0)
                })
            }
            Ty::Optional(inner) => {
                let inner = Est {
                    ty: (**inner).clone(),
                    ..op.clone()
                };
                return self.field(&inner, field);
            }
            Ty::Dyn => return Ok(Est::of(Ty::Dyn, 0)),
            Ty::Opaque(o) if o.is_authz() => {
                return Err(format!(
                    "unexpected failed resolution of '{}'",
                    cel_name(&op.ty)
                ))
            }
            other => {
                return match op.decl {
                    Some(Decl::Node(n, _)) => Err(format!(
                        "type '{}' does not support field selection",
                        n.ty.map_or(schema_name(other), SchemaTy::name)
                    )),
                    _ => Ok(Est::of(Ty::Dyn, 0)),
                }
            }
        };
        // 1.31+ environments (admission CEL) also find a property named like a CEL
        // keyword by its plain name (`namespace` for `__namespace__`)
        let keyword = || {
            let escaped = escape(field).filter(|e| *e == format!("__{field}__"));
            escaped.and_then(|e| decl.field(&e))
        };
        let found = match decl.field(field) {
            None if self.plain_keywords => keyword(),
            found => found,
        };
        if let Some(d) = found {
            return Ok(Est {
                decl: Some(d),
                ..Est::of(Ty::of(d), 0)
            });
        }
        if let Decl::Node(n, root) = decl {
            let declared = n
                .properties
                .iter()
                .any(|(k, _)| escape(k).as_deref() == Some(field));
            // untyped properties and objects without properties: `dyn`, as before
            if declared || (n.properties.is_empty() && !root) {
                return Ok(Est::of(Ty::Dyn, 0));
            }
        }
        Err(format!("undefined field '{field}'"))
    }

    /// The element `container[...]` selects, with its declaration and path.
    fn index(&self, container: &Est<'n>) -> Est<'n> {
        let (ty, step) = match &container.ty {
            Ty::List(e) => ((**e).clone(), "@items"),
            Ty::Map(_, v) => ((**v).clone(), "@values"),
            Ty::Dyn => (Ty::Dyn, "@values"),
            _ => return Est::of(Ty::Dyn, 0),
        };
        Est {
            ty,
            decl: container.decl.and_then(Decl::elem),
            path: Some(GoPath::append(container.path.as_ref(), step)),
            computed: None,
            cost: 0,
        }
    }

    /// The estimator's size of a value: known from the expression, else from the schema
    /// at its path, else 1 for fixed-size types, else unknown (`sizeEstimate`).
    fn size(&self, e: &Est<'n>) -> Size {
        match e.computed.or_else(|| self.path_size(e.path.as_ref())) {
            Some(s) => s,
            None if e.ty.is_scalar() => Size::exact(1),
            None => Size::UNKNOWN,
        }
    }

    /// The size the Kubernetes library functions use: no fallback for fixed-size types.
    fn lib_size(&self, e: &Est<'n>) -> Size {
        e.computed
            .or_else(|| self.path_size(e.path.as_ref()))
            .unwrap_or(Size::UNKNOWN)
    }

    fn path_size(&self, path: Option<&GoPath>) -> Option<Size> {
        self.root.size_at(&path?.read()).map(Size::up_to)
    }

    fn call(&mut self, call: &CallExpr, depth: usize) -> Result<Est<'n>, String> {
        let name = call.func_name.as_str();
        let mut qualified = None;
        if let Some(t) = &call.target {
            if let Expr::Ident(ns) = &t.expr {
                let q = format!("{ns}.{name}");
                if NAMESPACED.contains(&q.as_str())
                    && !self.scope.iter().any(|v| v.name == *ns)
                    && ns != "self"
                    && ns != "oldSelf"
                {
                    qualified = Some(q);
                }
            }
        }
        // cel-go costs the arguments before the target (which matters for shared paths);
        // an error in the target is still the one reported
        let mut args = Vec::with_capacity(call.args.len());
        let mut arg_err = None;
        for a in &call.args {
            match self.expr(a, depth + 1) {
                Ok(est) => args.push(est),
                Err(e) => {
                    arg_err = Some(e);
                    break;
                }
            }
        }
        let target = match (&call.target, &qualified) {
            (Some(t), None) => Some(self.expr(t, depth + 1)?),
            _ => None,
        };
        if let Some(e) = arg_err {
            return Err(e);
        }
        let fname = qualified.as_deref().unwrap_or(name);
        let is_operator =
            fname.starts_with('_') || fname.starts_with('@') || fname == "!_" || fname == "-_";
        if !is_operator
            && qualified.is_none()
            && !FUNCTIONS.contains(&fname)
            && !authz::FUNCTIONS.contains(&fname)
        {
            return Err(undeclared(fname));
        }
        let mut out = self.function(fname, target.as_ref(), &args, call)?;
        if let Some(t) = &target {
            out.cost = add(out.cost, t.cost);
        }
        Ok(out)
    }
}

fn literal<'n>(l: &LiteralValue) -> Est<'n> {
    let (ty, size) = match l {
        LiteralValue::Boolean(_) => (Ty::Bool, 1),
        LiteralValue::Int(_) => (Ty::Int, 1),
        LiteralValue::UInt(_) => (Ty::Uint, 1),
        LiteralValue::Double(_) => (Ty::Double, 1),
        LiteralValue::String(s) => (Ty::String, s.inner().chars().count() as u64),
        LiteralValue::Bytes(b) => (Ty::Bytes, b.inner().len() as u64),
        LiteralValue::Null => (Ty::Null, 1),
    };
    Est::of(ty, 0).sized(Some(Size::exact(size)))
}

/// The schema type name of a CEL type, for error messages.
fn schema_name(t: &Ty<'_>) -> &'static str {
    match t {
        Ty::Bool => "boolean",
        Ty::Int | Ty::Uint => "integer",
        Ty::Double => "number",
        Ty::List(_) => "array",
        Ty::Map(..) | Ty::Object(_) => "object",
        _ => "string",
    }
}

/// Which of an operator's overloads the operand types select, as cel-go resolves them.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Class {
    String,
    Bytes,
    List,
    Other,
}

fn class(t: &Ty<'_>) -> Option<Class> {
    match t {
        Ty::String => Some(Class::String),
        Ty::Bytes => Some(Class::Bytes),
        Ty::List(_) => Some(Class::List),
        Ty::Dyn => None,
        _ => Some(Class::Other),
    }
}

/// The overload classes `a op b` can resolve to (`dyn` matches any).
fn classes(a: &Ty<'_>, b: &Ty<'_>) -> Vec<Class> {
    match (class(a), class(b)) {
        (Some(x), _) | (None, Some(x)) => vec![x],
        (None, None) => vec![Class::String, Class::Bytes, Class::List, Class::Other],
    }
}

#[cfg(test)]
mod tests;
