//! Paths while walking an object: a stack of segments rendered only when an error needs
//! them, in the two styles Kubernetes uses.
//!
//! kube-openapi names nested values `spec.items[0].name` and map entries `spec.labels.key`;
//! apimachinery's `field.Path` writes map entries as `spec.labels[key]`.

/// One step from a value to a nested value.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Seg<'a> {
    /// A property of an object with declared properties.
    Field(&'a str),
    /// An entry of a map (additionalProperties or unknown fields).
    Key(&'a str),
    /// An array element.
    Index(usize),
}

/// The stack of segments from the validated root to the current value.
#[derive(Default)]
pub(crate) struct PathStack<'a> {
    segs: Vec<Seg<'a>>,
}

impl<'a> PathStack<'a> {
    pub(crate) fn push(&mut self, s: Seg<'a>) {
        self.segs.push(s);
    }

    pub(crate) fn pop(&mut self) {
        self.segs.pop();
    }

    /// Whether this is the validated root.
    pub(crate) fn is_empty(&self) -> bool {
        self.segs.is_empty()
    }

    /// kube-openapi style (`a.b[0].key`), as used in value-validation messages.
    pub(crate) fn openapi(&self) -> String {
        let mut out = String::new();
        for s in &self.segs {
            match s {
                Seg::Field(k) | Seg::Key(k) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                }
                Seg::Index(i) => {
                    out.push('[');
                    out.push_str(&i.to_string());
                    out.push(']');
                }
            }
        }
        out
    }

    /// apimachinery `field.Path` style (`a.b[0][key]`).
    pub(crate) fn field(&self) -> String {
        let mut out = String::new();
        for s in &self.segs {
            match s {
                Seg::Field(k) => {
                    if !out.is_empty() {
                        out.push('.');
                    }
                    out.push_str(k);
                }
                Seg::Key(k) => {
                    out.push('[');
                    out.push_str(k);
                    out.push(']');
                }
                Seg::Index(i) => {
                    out.push('[');
                    out.push_str(&i.to_string());
                    out.push(']');
                }
            }
        }
        out
    }
}

/// `base.child` (or `child` when base is empty), like `field.Path.Child`.
pub(crate) fn join(base: &str, child: &str) -> String {
    match (base.is_empty(), child.is_empty()) {
        (true, _) => child.to_string(),
        (false, true) => base.to_string(),
        (false, false) => format!("{base}.{child}"),
    }
}

/// Deepest nesting the schema walks follow (hostile objects cannot exhaust the stack).
pub(crate) const MAX_WALK_DEPTH: usize = 200;

/// Visits every value of `v` that the schema `n` describes, paired with its schema node,
/// in pre-order (object members in key order, array items in index order), with the
/// value's path on `ps`. The shared traversal of the validation passes that only look at
/// some kinds of nodes (list types, embedded resources).
pub(crate) fn visit<'a, F>(
    n: &crate::node::Node,
    v: &'a serde_json::Value,
    ps: &mut PathStack<'a>,
    f: &mut F,
) where
    F: FnMut(&crate::node::Node, &'a serde_json::Value, &PathStack<'a>),
{
    visit_at(n, v, ps, f, 0);
}

fn visit_at<'a, F>(
    n: &crate::node::Node,
    v: &'a serde_json::Value,
    ps: &mut PathStack<'a>,
    f: &mut F,
    depth: usize,
) where
    F: FnMut(&crate::node::Node, &'a serde_json::Value, &PathStack<'a>),
{
    use serde_json::Value;
    if depth > MAX_WALK_DEPTH {
        return;
    }
    f(n, v, ps);
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                let (child, seg) = match n.property(k) {
                    Some(p) => (p, Seg::Field(k)),
                    None => match n.additional.schema() {
                        Some(ap) => (ap, Seg::Key(k)),
                        None => continue,
                    },
                };
                ps.push(seg);
                visit_at(child, x, ps, f, depth + 1);
                ps.pop();
            }
        }
        Value::Array(a) => {
            if let Some(items) = &n.items {
                for (i, x) in a.iter().enumerate() {
                    ps.push(Seg::Index(i));
                    visit_at(items, x, ps, f, depth + 1);
                    ps.pop();
                }
            }
        }
        _ => {}
    }
}
