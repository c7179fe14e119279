//! Pruning (apiextensions `pruning/algorithm.go`): drop every field the schema does not
//! specify, except under `x-kubernetes-preserve-unknown-fields` and the `apiVersion`,
//! `kind` and `metadata` of the resource root and of embedded resources. Embedded
//! resources' `metadata` is reduced to ObjectMeta's fields (apiextensions `objectmeta`
//! coercion). Removed paths are reported like upstream's `ReturnPruned` (`a.b[0].c`).

use serde_json::Value;

use crate::node::Node;

const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// The fields of `metav1.ObjectMeta`.
pub(crate) const OBJECT_META_FIELDS: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

/// Deepest nesting pruning follows into values without a schema.
use crate::path::MAX_WALK_DEPTH;

pub(crate) struct Pruner {
    pub pruned: Vec<String>,
    /// The openapi-style path of the current value (`a.b[0]`).
    path: String,
}

impl Pruner {
    pub(crate) fn new() -> Pruner {
        Pruner {
            pruned: Vec::new(),
            path: String::new(),
        }
    }

    fn push_key(&mut self, k: &str) -> usize {
        let len = self.path.len();
        if !self.path.is_empty() {
            self.path.push('.');
        }
        self.path.push_str(k);
        len
    }

    fn push_index(&mut self, i: usize) -> usize {
        let len = self.path.len();
        self.path.push('[');
        self.path.push_str(&i.to_string());
        self.path.push(']');
        len
    }

    fn record(&mut self, key: &str) {
        let len = self.push_key(key);
        self.pruned.push(self.path.clone());
        self.path.truncate(len);
    }

    /// Prunes `x` against `s`; `resource_root` keeps apiVersion/kind/metadata untouched.
    pub(crate) fn prune(&mut self, x: &mut Value, s: Option<&Node>, resource_root: bool) {
        self.walk(x, s, resource_root, 0);
    }

    fn walk(&mut self, x: &mut Value, s: Option<&Node>, root: bool, depth: usize) {
        if depth > MAX_WALK_DEPTH {
            return;
        }
        if let Some(s) = s {
            if s.preserve_unknown {
                self.skip_prune(x, Some(s), root, depth);
                return;
            }
        }
        match x {
            Value::Object(m) => {
                let Some(s) = s else {
                    let keys: Vec<String> = m.keys().cloned().collect();
                    for k in keys {
                        self.record(&k);
                    }
                    m.clear();
                    return;
                };
                let unknown = self.members(m, s, root, depth);
                for k in unknown {
                    m.remove(&k);
                    self.record(&k);
                }
            }
            Value::Array(a) => {
                let items = s.and_then(|s| s.items.as_deref());
                for (i, v) in a.iter_mut().enumerate() {
                    let len = self.push_index(i);
                    self.walk(v, items, false, depth + 1);
                    self.path.truncate(len);
                }
            }
            _ => {}
        }
    }

    fn skip_prune(&mut self, x: &mut Value, s: Option<&Node>, root: bool, depth: usize) {
        let Some(s) = s else { return };
        if depth > MAX_WALK_DEPTH {
            return;
        }
        match x {
            Value::Object(m) => {
                // Unknown members are kept here (x-kubernetes-preserve-unknown-fields).
                self.members(m, s, root, depth);
            }
            Value::Array(a) => {
                for (i, v) in a.iter_mut().enumerate() {
                    let len = self.push_index(i);
                    self.skip_prune(v, s.items.as_deref(), false, depth + 1);
                    self.path.truncate(len);
                }
            }
            _ => {}
        }
    }

    /// Walks the members of an object with schema `s` (embedded resources keep their
    /// apiVersion/kind/metadata, with metadata reduced to ObjectMeta) and returns the keys
    /// the schema does not declare, for the caller to drop or keep.
    fn members(
        &mut self,
        m: &mut serde_json::Map<String, Value>,
        s: &Node,
        root: bool,
        depth: usize,
    ) -> Vec<String> {
        let embedded = root || s.embedded;
        let mut unknown = Vec::new();
        for (k, v) in m.iter_mut() {
            if embedded && META_FIELDS.contains(&k.as_str()) {
                if k == "metadata" && !root {
                    self.coerce_meta(k, v);
                }
                continue;
            }
            let child = match s.property(k) {
                Some(prop) => Some(prop),
                None if s.additional.is_set() => s.additional.schema(),
                None => {
                    unknown.push(k.clone());
                    continue;
                }
            };
            let len = self.push_key(k);
            self.walk(v, child, false, depth + 1);
            self.path.truncate(len);
        }
        unknown
    }

    /// Reduces an embedded resource's `metadata` to ObjectMeta's fields.
    fn coerce_meta(&mut self, k: &str, v: &mut Value) {
        if let Value::Object(meta) = v {
            let unknown: Vec<String> = meta
                .keys()
                .filter(|f| !OBJECT_META_FIELDS.contains(&f.as_str()))
                .cloned()
                .collect();
            if unknown.is_empty() {
                return;
            }
            let len = self.push_key(k);
            for f in unknown {
                meta.remove(&f);
                self.record(&f);
            }
            self.path.truncate(len);
        }
    }
}

/// Prunes a copy of a default value (`defaulting/prune.go`), for the pruned-default check.
pub(crate) fn pruned_copy(v: &Value, s: &Node) -> Value {
    let mut copy = v.clone();
    let mut p = Pruner::new();
    p.prune(&mut copy, Some(s), s.embedded);
    copy
}

/// `PruneNonNullableNullsWithoutDefaults`: drops `null` values of fields that are neither
/// nullable nor defaulted.
pub(crate) fn prune_nulls(x: &mut Value, s: Option<&Node>, depth: usize) {
    if depth > MAX_WALK_DEPTH {
        return;
    }
    match x {
        Value::Object(m) => {
            let mut drop = Vec::new();
            for (k, v) in m.iter_mut() {
                let schema = s.and_then(|s| s.child_for_key(k));
                if v.is_null() && schema.is_some_and(|c| !c.nullable && c.default.is_none()) {
                    drop.push(k.clone());
                } else {
                    prune_nulls(v, schema, depth + 1);
                }
            }
            for k in drop {
                m.remove(&k);
            }
        }
        Value::Array(a) => {
            let items = s.and_then(|s| s.items.as_deref());
            for v in a.iter_mut() {
                prune_nulls(v, items, depth + 1);
            }
        }
        _ => {}
    }
}
