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
