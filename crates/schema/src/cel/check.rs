//! Static checks and cost estimation of one CEL expression against the schema node it is
//! declared on: identifiers and functions must exist, fields must be declared (with CEL's
//! property-name escaping), and the worst-case cost follows Kubernetes' estimator: sizes
//! from `maxLength`/`maxItems`/`maxProperties`, or the largest a 3 MiB request allows.

use kube_cel::cel::common::ast::{EntryExpr, Expr, LiteralValue};
use kube_cel::cel::IdedExpr;

use super::escape;
use super::functions::{FUNCTIONS, NAMESPACED};
use crate::formats::Format;
use crate::node::{Node, Ty};

/// Largest request Kubernetes accepts (bounds every unbounded size).
pub(crate) const MAX_REQUEST_BYTES: u64 = 3 * 1024 * 1024;
/// Deepest expression tree accepted (bounds interpreter recursion).
pub(crate) const MAX_AST_DEPTH: usize = 100;

/// What an expression evaluates to, as far as the checker can tell.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Bool,
    Int,
    Uint,
    Double,
    String,
    Bytes,
    List,
    Map,
    Null,
    Duration,
    Timestamp,
    Optional,
    Dyn,
}

/// The schema an expression's value is described by.
#[derive(Clone, Copy)]
enum Sch<'n> {
    None,
    /// A schema node; `true` when it is a resource root (has apiVersion/kind/metadata).
    Node(&'n Node, bool),
    /// `metadata` of a resource root: only `name` and `generateName`.
    Meta,
}

#[derive(Clone, Copy)]
struct Info<'n> {
    kind: Kind,
    sch: Sch<'n>,
    /// Largest size (string length, list or map entries).
    size: u64,
    /// Largest size of an element (lists and maps).
    elem: u64,
}

impl<'n> Info<'n> {
    fn of(kind: Kind, size: u64) -> Info<'n> {
        Info {
            kind,
            sch: Sch::None,
            size,
            elem: MAX_REQUEST_BYTES,
        }
    }

    fn dyn_() -> Info<'n> {
        Info::of(Kind::Dyn, MAX_REQUEST_BYTES)
    }
}

/// Smallest JSON encoding of a value of this schema.
fn min_size(n: &Node) -> u64 {
    match n.ty {
        Some(Ty::Boolean) => 4,
        Some(Ty::String) => {
            2 + n
                .checks
                .as_ref()
                .and_then(|c| c.min_length)
                .unwrap_or(0)
                .max(0) as u64
        }
        Some(Ty::Array) | Some(Ty::Object) => 2,
        _ => 1,
    }
}

/// Largest number of entries of an array or map schema.
pub(crate) fn max_entries(n: &Node) -> u64 {
    let c = n.checks.as_ref();
    match n.ty {
        Some(Ty::Array) => match c.and_then(|c| c.max_items) {
            Some(m) => m.max(0) as u64,
            None => (MAX_REQUEST_BYTES - 2) / (n.items.as_deref().map_or(1, min_size) + 1),
        },
        _ => match c.and_then(|c| c.max_properties) {
            Some(m) => m.max(0) as u64,
            None if !n.properties.is_empty() => n.properties.len() as u64,
            None => (MAX_REQUEST_BYTES - 2) / (n.additional.schema().map_or(1, min_size) + 4),
        },
    }
}

fn node_info(n: &Node, root: bool) -> Info<'_> {
    let (kind, size) = if n.int_or_string {
        (
            Kind::Dyn,
            n.checks
                .as_ref()
                .and_then(|c| c.max_length)
                .map_or(MAX_REQUEST_BYTES, |m| m.max(0) as u64),
        )
    } else {
        match n.ty {
            Some(Ty::Object) => (Kind::Map, max_entries(n)),
            Some(Ty::Array) => (Kind::List, max_entries(n)),
            Some(Ty::String) => {
                let kind = match n.format.as_ref().map(|f| f.0) {
                    Some(Format::Byte) => Kind::Bytes,
                    Some(Format::Duration) => Kind::Duration,
                    Some(Format::Date) | Some(Format::DateTime) => Kind::Timestamp,
                    _ => Kind::String,
                };
                let max = n
                    .checks
                    .as_ref()
                    .and_then(|c| c.max_length)
                    .map_or(MAX_REQUEST_BYTES - 2, |m| m.max(0) as u64);
                (kind, max)
            }
            Some(Ty::Integer) => (Kind::Int, 1),
            Some(Ty::Number) => (Kind::Double, 1),
            Some(Ty::Boolean) => (Kind::Bool, 1),
            None => (
                if root || n.embedded {
                    Kind::Map
                } else {
                    Kind::Dyn
                },
                MAX_REQUEST_BYTES,
            ),
        }
    };
    let elem = match n.ty {
        Some(Ty::Array) => n
            .items
            .as_deref()
            .map_or(MAX_REQUEST_BYTES, |i| node_info(i, i.embedded).size),
        _ => n
            .additional
            .schema()
            .map_or(MAX_REQUEST_BYTES, |a| node_info(a, a.embedded).size),
    };
    Info {
        kind,
        sch: Sch::Node(n, root || n.embedded),
        size,
        elem,
    }
}

fn tenth(x: u64) -> u64 {
    x.saturating_add(9) / 10
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
        node: n,
        root: resource_root,
        optional_old_self,
        uses_old_self: false,
        nodes: 0,
    };
    let (info, cost) = a.expr(e, 0)?;
    Ok(Analysis {
        kind: info.kind,
        cost,
        uses_old_self: a.uses_old_self,
        nodes: a.nodes,
    })
}

struct Analyzer<'n> {
    scope: Vec<(String, Info<'n>)>,
    node: &'n Node,
    root: bool,
    optional_old_self: bool,
    uses_old_self: bool,
    nodes: u64,
}

fn undeclared(name: &str) -> String {
    format!("undeclared reference to '{name}' (in container '')")
}

impl<'n> Analyzer<'n> {
    fn expr(&mut self, e: &IdedExpr, depth: usize) -> Result<(Info<'n>, u64), String> {
        if depth > MAX_AST_DEPTH {
            return Err(format!(
                "expression nesting exceeds the maximum depth of {MAX_AST_DEPTH}"
            ));
        }
        self.nodes += 1;
        match &e.expr {
            Expr::Literal(l) => Ok((
                match l {
                    LiteralValue::Boolean(_) => Info::of(Kind::Bool, 1),
                    LiteralValue::Int(_) => Info::of(Kind::Int, 1),
                    LiteralValue::UInt(_) => Info::of(Kind::Uint, 1),
                    LiteralValue::Double(_) => Info::of(Kind::Double, 1),
                    LiteralValue::String(s) => {
                        Info::of(Kind::String, s.inner().chars().count() as u64)
                    }
                    LiteralValue::Bytes(b) => Info::of(Kind::Bytes, b.inner().len() as u64),
                    LiteralValue::Null => Info::of(Kind::Null, 1),
                },
                0,
            )),
            Expr::Ident(name) => self.ident(name).map(|i| (i, 1)),
            Expr::Select(sel) => {
                let (op, cost) = self.expr(&sel.operand, depth + 1)?;
                if sel.test {
                    self.field(op, &sel.field)?;
                    return Ok((Info::of(Kind::Bool, 1), cost.saturating_add(1)));
                }
                Ok((self.field(op, &sel.field)?, cost.saturating_add(1)))
            }
            Expr::Call(call) => self.call(call, depth),
            Expr::Comprehension(c) => {
                let (range, rc) = self.expr(&c.iter_range, depth + 1)?;
                let (init, ic) = self.expr(&c.accu_init, depth + 1)?;
                let n = range.size;
                let elem = self.element(range);
                let accu = Info {
                    kind: init.kind,
                    sch: Sch::None,
                    size: n.saturating_mul(elem.size.max(1)).max(init.size),
                    elem: elem.size,
                };
                let mark = self.scope.len();
                self.scope.push((c.iter_var.clone(), elem));
                if let Some(v2) = &c.iter_var2 {
                    self.scope.push((v2.clone(), Info::dyn_()));
                }
                self.scope.push((c.accu_var.clone(), accu));
                let step = self.expr(&c.loop_cond, depth + 1).and_then(|(_, cc)| {
                    self.expr(&c.loop_step, depth + 1)
                        .map(|(_, sc)| cc.saturating_add(sc).saturating_add(1))
                });
                let result = self.expr(&c.result, depth + 1);
                self.scope.truncate(mark);
                let step = step?;
                let (res, resc) = result?;
                let kind = if matches!(&c.result.expr, Expr::Ident(v) if *v == c.accu_var) {
                    init.kind
                } else {
                    res.kind
                };
                let cost = rc
                    .saturating_add(ic)
                    .saturating_add(n.saturating_mul(step))
                    .saturating_add(resc);
                Ok((
                    Info {
                        kind,
                        sch: Sch::None,
                        size: accu.size,
                        elem: elem.size,
                    },
                    cost,
                ))
            }
            Expr::List(l) => {
                let mut cost: u64 = 10;
                let mut elem = 0u64;
                for el in &l.elements {
                    let (i, c) = self.expr(el, depth + 1)?;
                    cost = cost.saturating_add(c);
                    elem = elem.max(i.size);
                }
                Ok((
                    Info {
                        kind: Kind::List,
                        sch: Sch::None,
                        size: l.elements.len() as u64,
                        elem,
                    },
                    cost,
                ))
            }
            Expr::Map(m) => {
                let mut cost: u64 = 30;
                for entry in &m.entries {
                    match &entry.expr {
                        EntryExpr::MapEntry(me) => {
                            cost = cost.saturating_add(self.expr(&me.key, depth + 1)?.1);
                            cost = cost.saturating_add(self.expr(&me.value, depth + 1)?.1);
                        }
                        EntryExpr::StructField(_) => {
                            return Err("unsupported syntax: struct field in map".into())
                        }
                    }
                }
                Ok((
                    Info {
                        kind: Kind::Map,
                        sch: Sch::None,
                        size: m.entries.len() as u64,
                        elem: MAX_REQUEST_BYTES,
                    },
                    cost,
                ))
            }
            Expr::Struct(s) => Err(undeclared(&s.type_name)),
            Expr::Unspecified => Err("unsupported expression".into()),
        }
    }

    fn ident(&mut self, name: &str) -> Result<Info<'n>, String> {
        if let Some((_, info)) = self.scope.iter().rev().find(|(n, _)| n == name) {
            return Ok(*info);
        }
        match name {
            "self" => Ok(node_info(self.node, self.root)),
            "oldSelf" => {
                self.uses_old_self = true;
                let info = node_info(self.node, self.root);
                Ok(if self.optional_old_self {
                    Info {
                        kind: Kind::Optional,
                        ..info
                    }
                } else {
                    info
                })
            }
            _ => Err(undeclared(name)),
        }
    }

    /// The element an iteration over `range` binds.
    fn element(&self, range: Info<'n>) -> Info<'n> {
        match range.sch {
            Sch::Node(n, _) if n.ty == Some(Ty::Array) => n
                .items
                .as_deref()
                .map_or(Info::dyn_(), |i| node_info(i, i.embedded)),
            Sch::Node(..) | Sch::Meta => Info::of(Kind::String, MAX_REQUEST_BYTES),
            Sch::None => Info::of(Kind::Dyn, range.elem),
        }
    }

    fn field(&self, op: Info<'n>, field: &str) -> Result<Info<'n>, String> {
        match op.sch {
            Sch::Meta => match field {
                "name" | "generateName" => Ok(Info::of(Kind::String, 253)),
                _ => Err(format!("undefined field '{field}'")),
            },
            Sch::Node(n, root) => {
                if n.int_or_string {
                    return Ok(Info::dyn_());
                }
                match n.ty {
                    Some(Ty::Object) | None => {}
                    Some(t) => {
                        return Err(format!(
                            "type '{}' does not support field selection",
                            t.name()
                        ))
                    }
                }
                if root {
                    match field {
                        "apiVersion" | "kind" => return Ok(Info::of(Kind::String, 253)),
                        "metadata" => {
                            return Ok(Info {
                                kind: Kind::Map,
                                sch: Sch::Meta,
                                size: 2,
                                elem: 253,
                            })
                        }
                        _ => {}
                    }
                }
                if let Some((_, child)) = n
                    .properties
                    .iter()
                    .find(|(k, _)| escape(k).as_deref() == Some(field))
                {
                    return Ok(node_info(child, child.embedded));
                }
                if let Some(ap) = n.additional.schema() {
                    if n.properties.is_empty() {
                        return Ok(node_info(ap, ap.embedded));
                    }
                }
                if n.properties.is_empty() && !root && !n.embedded {
                    return Ok(Info::dyn_());
                }
                Err(format!("undefined field '{field}'"))
            }
            Sch::None => Ok(Info::dyn_()),
        }
    }

    fn call(
        &mut self,
        call: &kube_cel::cel::common::ast::CallExpr,
        depth: usize,
    ) -> Result<(Info<'n>, u64), String> {
        let name = call.func_name.as_str();
        let mut cost: u64 = 0;
        let mut target = None;
        let mut qualified = None;
        if let Some(t) = &call.target {
            if let Expr::Ident(ns) = &t.expr {
                let q = format!("{ns}.{name}");
                if NAMESPACED.contains(&q.as_str())
                    && !self.scope.iter().any(|(n, _)| n == ns)
                    && ns != "self"
                    && ns != "oldSelf"
                {
                    qualified = Some(q);
                }
            }
            if qualified.is_none() {
                let (i, c) = self.expr(t, depth + 1)?;
                cost = cost.saturating_add(c);
                target = Some(i);
            }
        }
        let mut args = Vec::with_capacity(call.args.len());
        for a in &call.args {
            let (i, c) = self.expr(a, depth + 1)?;
            cost = cost.saturating_add(c);
            args.push(i);
        }
        let fname = qualified.as_deref().unwrap_or(name);
        let is_operator =
            fname.starts_with('_') || fname.starts_with('@') || fname == "!_" || fname == "-_";
        if !is_operator && qualified.is_none() && !FUNCTIONS.contains(&fname) {
            return Err(undeclared(fname));
        }
        let t = target.unwrap_or(Info::of(Kind::Dyn, 1));
        let a0 = args.first().copied().unwrap_or(Info::of(Kind::Dyn, 1));
        let a1 = args.get(1).copied().unwrap_or(Info::of(Kind::Dyn, 1));
        let subject = if target.is_some() { t } else { a0 };
        let (info, own): (Info<'n>, u64) = match fname {
            "_&&_" | "_||_" | "!_" | "@not_strictly_false" => (Info::of(Kind::Bool, 1), 0),
            "_?_:_" => {
                let (x, y) = (a1, args.get(2).copied().unwrap_or(a1));
                let kind = if x.kind == y.kind { x.kind } else { Kind::Dyn };
                (
                    Info {
                        kind,
                        sch: Sch::None,
                        size: x.size.max(y.size),
                        elem: x.elem.max(y.elem),
                    },
                    0,
                )
            }
            "_==_" | "_!=_" | "_<_" | "_<=_" | "_>_" | "_>=_" => {
                (Info::of(Kind::Bool, 1), 1 + tenth(a0.size.min(a1.size)))
            }
            "_+_" => {
                let size = a0.size.saturating_add(a1.size);
                let kind = if a0.kind == a1.kind {
                    a0.kind
                } else if a0.kind == Kind::Dyn {
                    a1.kind
                } else {
                    a0.kind
                };
                (
                    Info {
                        kind,
                        sch: Sch::None,
                        size,
                        elem: a0.elem.max(a1.elem),
                    },
                    1 + tenth(size),
                )
            }
            "_-_" | "_*_" | "_/_" | "_%_" | "-_" => (
                Info::of(
                    if a0.kind == Kind::Dyn {
                        a1.kind
                    } else {
                        a0.kind
                    },
                    1,
                ),
                1,
            ),
            "_[_]" => (self.index(a0), 1),
            "_[?_]" => (
                Info {
                    kind: Kind::Optional,
                    ..self.index(a0)
                },
                1,
            ),
            "_?._" => (Info::of(Kind::Optional, MAX_REQUEST_BYTES), 1),
            "@in" => (
                Info::of(Kind::Bool, 1),
                1 + if a1.kind == Kind::List { a1.size } else { 1 },
            ),
            "size" => (Info::of(Kind::Int, 1), 1),
            "contains" | "startsWith" | "endsWith" => {
                (Info::of(Kind::Bool, 1), 1 + tenth(subject.size))
            }
            "matches" | "find" | "findAll" => {
                let pat = args.last().copied().unwrap_or(a0);
                let kind = match fname {
                    "matches" => Kind::Bool,
                    "find" => Kind::String,
                    _ => Kind::List,
                };
                (
                    Info::of(kind, subject.size),
                    (1 + tenth(subject.size)).saturating_mul(1 + pat.size / 4),
                )
            }
            "lowerAscii"
            | "upperAscii"
            | "trim"
            | "strings.quote"
            | "substring"
            | "charAt"
            | "base64.encode"
            | "base64.decode"
            | "jsonpatch.escapeKey" => (
                Info::of(Kind::String, subject.size.saturating_mul(2)),
                1 + tenth(subject.size),
            ),
            "replace" => {
                let size = subject
                    .size
                    .saturating_mul(args.get(1).map_or(1, |r| r.size.max(1)));
                (Info::of(Kind::String, size), 1 + tenth(size))
            }
            "split" => (
                Info {
                    kind: Kind::List,
                    sch: Sch::None,
                    size: subject.size,
                    elem: subject.size,
                },
                1 + tenth(subject.size),
            ),
            "join" => {
                let size = t.size.saturating_mul(t.elem.saturating_add(a0.size));
                (Info::of(Kind::String, size), 1 + tenth(size))
            }
            "format" => {
                let total = args.iter().fold(t.size, |s, a| s.saturating_add(a.size));
                (Info::of(Kind::String, total), 1 + tenth(total))
            }
            "indexOf" | "lastIndexOf" => (
                Info::of(Kind::Int, 1),
                1 + if subject.kind == Kind::List {
                    subject.size
                } else {
                    tenth(subject.size)
                },
            ),
            "isSorted" | "sum" | "min" | "max" | "first" | "last" | "slice" | "flatten"
            | "reverse" => {
                let kind = match fname {
                    "isSorted" => Kind::Bool,
                    "slice" | "flatten" | "reverse" => subject.kind,
                    _ => Kind::Dyn,
                };
                (Info::of(kind, subject.size), 1 + subject.size)
            }
            "distinct" | "sort" => {
                let n = subject.size;
                let log = 64 - n.leading_zeros() as u64;
                (Info::of(Kind::List, n), 1 + n.saturating_mul(log.max(1)))
            }
            "sets.contains" | "sets.equivalent" | "sets.intersects" => {
                (Info::of(Kind::Bool, 1), 1 + a0.size.saturating_mul(a1.size))
            }
            "lists.range" => {
                let n = match call.args.first().map(|a| &a.expr) {
                    Some(Expr::Literal(LiteralValue::Int(i))) => (*i.inner()).max(0) as u64,
                    _ => MAX_REQUEST_BYTES * 1024,
                };
                (Info::of(Kind::List, n), 1 + n)
            }
            "value" | "orValue" => match subject.sch {
                Sch::Node(..) if subject.kind == Kind::Optional => {
                    let inner = if let Sch::Node(n, r) = subject.sch {
                        node_info(n, r)
                    } else {
                        Info::dyn_()
                    };
                    (inner, 1)
                }
                _ => (Info::dyn_(), 1),
            },
            "hasValue" => (Info::of(Kind::Bool, 1), 1),
            "optional.of" | "optional.none" | "optional.ofNonZeroValue" | "or" => {
                (Info::of(Kind::Optional, a0.size), 1)
            }
            "string" => (
                Info::of(Kind::String, subject.size.max(20)),
                1 + tenth(subject.size),
            ),
            "int" | "uint" | "double" => (
                Info::of(
                    match fname {
                        "int" => Kind::Int,
                        "uint" => Kind::Uint,
                        _ => Kind::Double,
                    },
                    1,
                ),
                1 + tenth(subject.size),
            ),
            "bytes" => (Info::of(Kind::Bytes, subject.size), 1 + tenth(subject.size)),
            "duration" => (Info::of(Kind::Duration, 1), 1 + tenth(subject.size)),
            "timestamp" => (Info::of(Kind::Timestamp, 1), 1 + tenth(subject.size)),
            f if f.starts_with("is") || f == "validate" || f.starts_with("format.") => (
                Info::of(
                    if f.starts_with("is") {
                        Kind::Bool
                    } else {
                        Kind::Dyn
                    },
                    1,
                ),
                1 + tenth(subject.size),
            ),
            _ => {
                let total = args.iter().fold(t.size, |s, a| s.saturating_add(a.size));
                (Info::of(Kind::Dyn, total), 1 + tenth(total))
            }
        };
        Ok((info, cost.saturating_add(own)))
    }

    fn index(&self, container: Info<'n>) -> Info<'n> {
        match container.sch {
            Sch::Node(n, _) if n.ty == Some(Ty::Array) => n
                .items
                .as_deref()
                .map_or(Info::dyn_(), |i| node_info(i, i.embedded)),
            Sch::Node(n, _) => n
                .additional
                .schema()
                .map_or(Info::dyn_(), |a| node_info(a, a.embedded)),
            _ => Info::of(Kind::Dyn, container.elem),
        }
    }
}
