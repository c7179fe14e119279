//! The CEL declarations a structural schema yields (apiserver's `SchemaDeclType`), reduced
//! to what the checker and the cost estimator read: which fields CEL can see, the type of
//! each, the most elements a value can hold (`MaxElements`: from `maxLength`, `maxItems`,
//! `maxProperties`, an enum or a format, else what fits in a 3 MiB request) and the
//! smallest JSON it can serialize to (`MinSerializedSize`).
//!
//! Sizes are kept as Kubernetes keeps them (signed, before the estimator reads them as
//! unsigned), so every figure below is the one kube-apiserver computes for the same schema.

use super::escaping::escape;
use crate::node::{Additional, Node, Ty as SchemaTy};

/// Largest request Kubernetes accepts (`celconfig.MaxRequestSizeBytes`).
pub(crate) const MAX_REQUEST_BYTES: i64 = 3 * 1024 * 1024;

/// Where a value's declaration comes from.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Decl<'n> {
    /// A schema node; `true` when it is a resource root (the CRD root or an embedded
    /// resource), which always exposes `apiVersion`, `kind` and `metadata`.
    Node(&'n Node, bool),
    /// A string the resource root adds (`kind`, `apiVersion`, `metadata.name`,
    /// `metadata.generateName`): no limits.
    PlainString,
    /// The `metadata` the resource root adds: an object of `name` and `generateName`.
    Meta,
    /// A map's key: CEL's plain string type, which has no size.
    Key,
}

/// Whether the schema is declared in CEL at all (a `nil` declaration upstream): untyped
/// nodes, arrays of such and maps of such are not.
pub(crate) fn exposed(n: &Node) -> bool {
    if n.int_or_string {
        return true;
    }
    match n.ty {
        None => false,
        Some(SchemaTy::Array) => n.items.as_deref().is_some_and(exposed),
        Some(SchemaTy::Object) => match &n.additional {
            Additional::Schema(ap) => exposed(ap),
            _ => true,
        },
        Some(_) => true,
    }
}

fn raw_format(n: &Node) -> &str {
    n.format.as_ref().map_or("", |(_, raw)| raw)
}

fn checks_i64(n: &Node, f: impl Fn(&crate::node::Checks) -> Option<i64>) -> Option<i64> {
    n.checks.as_deref().and_then(f)
}

/// `MinSerializedSize`: the shortest JSON a value of this schema can be; `root` as in
/// [`Decl::Node`].
pub(crate) fn min_serialized_size(n: &Node, root: bool) -> i64 {
    if n.int_or_string {
        return 1;
    }
    match n.ty {
        Some(SchemaTy::Array) => 2,
        Some(SchemaTy::Object) => {
            if let Additional::Schema(_) = n.additional {
                return 2;
            }
            // `{}` plus, for each required property without a default, `"name":`, its
            // smallest value and a comma
            let required = n.checks.as_deref().map_or(&[][..], |c| &c.required[..]);
            let is_required = |name: &str| required.iter().any(|r| &**r == name);
            let added = root && !declares_type_and_meta(n);
            let mut sum = 2i64;
            for (name, p) in &n.properties {
                if added && matches!(&**name, "kind" | "apiVersion" | "metadata") {
                    continue;
                }
                if exposed(p) && p.default.is_none() && is_required(name) {
                    sum = sum
                        .saturating_add(name.len() as i64)
                        .saturating_add(min_serialized_size(p, p.embedded))
                        .saturating_add(4);
                }
            }
            if added {
                // the added fields: two strings (`""`) and an object (`{}`), no defaults
                for name in ["kind", "apiVersion", "metadata"] {
                    if is_required(name) {
                        sum = sum.saturating_add(name.len() as i64 + 2 + 4);
                    }
                }
            }
            sum
        }
        Some(SchemaTy::String) => match raw_format(n) {
            "duration" => 3,
            "date" => 12,
            "date-time" => 21,
            _ => 2,
        },
        Some(SchemaTy::Boolean) => 4,
        Some(SchemaTy::Integer) | Some(SchemaTy::Number) | None => 1,
    }
}

/// `MaxElements` of a schema node.
fn node_max_elements(n: &Node) -> i64 {
    let zero_if_negative = |v: i64| v.max(0);
    if n.int_or_string {
        return MAX_REQUEST_BYTES - 2;
    }
    match n.ty {
        Some(SchemaTy::Array) => match checks_i64(n, |c| c.max_items) {
            Some(m) => zero_if_negative(m),
            None => {
                let item_min = n
                    .items
                    .as_deref()
                    .map_or(1, |i| min_serialized_size(i, i.embedded));
                (MAX_REQUEST_BYTES - 2) / item_min.saturating_add(1).max(1)
            }
        },
        Some(SchemaTy::Object) => match &n.additional {
            Additional::Schema(ap) => match checks_i64(n, |c| c.max_properties) {
                Some(m) => zero_if_negative(m),
                None => {
                    let min = min_serialized_size(ap, ap.embedded);
                    (MAX_REQUEST_BYTES - 2) / min.saturating_add(6).max(1)
                }
            },
            _ => 0,
        },
        Some(SchemaTy::String) => {
            let max_length = checks_i64(n, |c| c.max_length);
            match raw_format(n) {
                "byte" => max_length.map_or(MAX_REQUEST_BYTES - 2, zero_if_negative),
                "duration" | "date-time" => 32,
                "date" => 12,
                // maxLength counts code points, sizes count bytes: up to 4 per code point
                _ => match max_length {
                    Some(m) => zero_if_negative(m).saturating_mul(4),
                    None => match n.checks.as_deref().and_then(|c| c.enumeration.as_ref()) {
                        Some(e) => e
                            .values
                            .iter()
                            .filter_map(|v| v.as_str())
                            .map(|s| s.len() as i64)
                            .max()
                            .unwrap_or(0),
                        None => MAX_REQUEST_BYTES - 2,
                    },
                },
            }
        }
        _ => 0,
    }
}

impl<'n> Decl<'n> {
    /// `MaxElements`: the most characters (bytes), items or entries a value can have; zero
    /// for objects and scalars.
    pub(crate) fn max_elements(self) -> i64 {
        match self {
            Decl::Node(n, _) => node_max_elements(n),
            Decl::PlainString => MAX_REQUEST_BYTES - 2,
            Decl::Meta | Decl::Key => 0,
        }
    }

    /// The declaration of field `field` (a CEL identifier, escaped), if CEL declares it.
    pub(crate) fn field(self, field: &str) -> Option<Decl<'n>> {
        match self {
            Decl::Node(n, root) => {
                if root && !declares_type_and_meta(n) {
                    match field {
                        "kind" | "apiVersion" => return Some(Decl::PlainString),
                        "metadata" => return Some(Decl::Meta),
                        _ => {}
                    }
                }
                if n.int_or_string
                    || n.ty != Some(SchemaTy::Object)
                    || n.additional.schema().is_some()
                {
                    return None;
                }
                n.properties
                    .iter()
                    .find(|(k, p)| exposed(p) && escape(k).as_deref() == Some(field))
                    .map(|(_, p)| Decl::Node(p, p.embedded))
            }
            Decl::Meta => match field {
                "name" | "generateName" => Some(Decl::PlainString),
                _ => None,
            },
            Decl::PlainString | Decl::Key => None,
        }
    }

    /// The declaration of a list's items or a map's values.
    pub(crate) fn elem(self) -> Option<Decl<'n>> {
        match self {
            Decl::Node(n, _) if !n.int_or_string => match n.ty {
                Some(SchemaTy::Array) => n.items.as_deref().map(|i| Decl::Node(i, i.embedded)),
                Some(SchemaTy::Object) => n.additional.schema().map(|a| Decl::Node(a, a.embedded)),
                _ => None,
            },
            _ => None,
        }
    }

    /// The declaration of a map's keys.
    fn key(self) -> Option<Decl<'n>> {
        match self {
            Decl::Node(n, _) if !n.int_or_string && n.ty == Some(SchemaTy::Object) => {
                n.additional.schema().map(|_| Decl::Key)
            }
            _ => None,
        }
    }

    /// The size estimate of the value a cost path leads to (`sizeEstimator.EstimateSize`):
    /// the path's first element (the variable) is skipped, the rest walks fields,
    /// `@items`/`@values` and `@keys` from this declaration (the rule's `self`). `None`
    /// when the path is empty or leaves the declarations.
    pub(crate) fn size_at(self, path: &[std::rc::Rc<str>]) -> Option<u64> {
        let (_, rest) = path.split_first()?;
        let mut d = self;
        for step in rest {
            d = match &**step {
                "@items" | "@values" => d.elem()?,
                "@keys" => d.key()?,
                name => d.field(name)?,
            };
        }
        Some(d.max_elements() as u64)
    }
}

/// Whether a resource root's schema already declares `kind` and `apiVersion` as strings
/// and `metadata` as an object with string `name` and `generateName` (then it is used as
/// it is; otherwise those three are replaced by limitless strings and a two-field object).
fn declares_type_and_meta(n: &Node) -> bool {
    let is = |n: Option<&Node>, t: SchemaTy| n.is_some_and(|n| n.ty == Some(t));
    let meta = n.property("metadata");
    is(n.property("kind"), SchemaTy::String)
        && is(n.property("apiVersion"), SchemaTy::String)
        && is(meta, SchemaTy::Object)
        && meta.is_some_and(|m| {
            is(m.property("name"), SchemaTy::String)
                && is(m.property("generateName"), SchemaTy::String)
        })
}

/// The factor by which a schema multiplies how often its children can occur
/// (`extractMaxElements`): `maxItems`/`maxProperties` of lists and maps, `None` when those
/// are unbounded, 1 for everything else.
pub(crate) fn cardinality_factor(n: &Node) -> Option<u64> {
    let bound = |m: Option<i64>| m.map(|m| m.max(0) as u64);
    match n.ty {
        Some(SchemaTy::Object) if n.additional.is_set() => {
            bound(checks_i64(n, |c| c.max_properties))
        }
        Some(SchemaTy::Object) => Some(1),
        Some(SchemaTy::Array) => bound(checks_i64(n, |c| c.max_items)),
        _ => Some(1),
    }
}

/// How often a rule on `n` can run when some list or map above it is unbounded
/// (`maxCardinality`): as many of its smallest serializations as fit in a request, each
/// followed by a comma.
pub(crate) fn unbounded_cardinality(n: &Node, root: bool) -> u64 {
    (MAX_REQUEST_BYTES / min_serialized_size(n, root).saturating_add(1).max(1)) as u64
}
