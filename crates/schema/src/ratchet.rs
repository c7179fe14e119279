//! CRD validation ratcheting (`CRDValidationRatcheting`, on by default in Kubernetes 1.32):
//! how an updated object's values are correlated with the old object's, and when a value
//! counts as unchanged, so that the errors it raises can be dropped.
//!
//! Correlation follows apiserver's `cel/common` `CorrelatedObject`: object fields by name
//! (only fields the schema describes, through `properties` or `additionalProperties`),
//! items of `map` lists by their map keys (`MapList`); items of `set` and atomic lists do
//! not correlate. [`Ratchet::unchanged`] is its `CachedDeepEqual`: objects are unchanged
//! when every field correlates with an unchanged old one, `map` lists when every item does
//! (in any order), other lists when they are deep-equal as a whole, scalars when equal.
//!
//! Equality is computed only for values that raised errors, and remembered, so validating a
//! valid update costs nothing here.

use std::cell::RefCell;
use std::collections::HashMap;

use serde_json::{Map, Value};

use crate::node::{ListType, Node};
use crate::path::MAX_WALK_DEPTH;

/// The memory of one validation's equality checks, keyed by the new value's address (a
/// value is always correlated with the same old value within one validation).
#[derive(Debug, Default)]
pub(crate) struct Ratchet {
    memo: RefCell<HashMap<usize, bool>>,
}

impl Ratchet {
    /// Whether `new`, described by `n`, is unchanged from its correlated `old`
    /// (`CachedDeepEqual`).
    pub(crate) fn unchanged(&self, n: &Node, old: &Value, new: &Value) -> bool {
        self.eq(n, old, new, 0)
    }

    fn eq(&self, n: &Node, old: &Value, new: &Value, depth: usize) -> bool {
        let key = std::ptr::from_ref(new) as usize;
        if let Some(known) = self.memo.borrow().get(&key) {
            return *known;
        }
        let same = depth <= MAX_WALK_DEPTH && self.compare(n, old, new, depth);
        self.memo.borrow_mut().insert(key, same);
        same
    }

    fn compare(&self, n: &Node, old: &Value, new: &Value, depth: usize) -> bool {
        match (old, new) {
            (Value::Array(o), Value::Array(a)) => {
                if o.len() != a.len() {
                    return false;
                }
                let (Some(ListType::Map(keys)), Some(items)) = (&n.list_type, n.items.as_deref())
                else {
                    // not correlatable item by item: equal as a whole, or not
                    return json_eq(old, new);
                };
                let old_items = MapList::new(keys, o);
                a.iter().all(|x| {
                    old_items
                        .get(x)
                        .is_some_and(|ox| self.eq(items, ox, x, depth + 1))
                })
            }
            (Value::Object(o), Value::Object(m)) => {
                o.len() == m.len()
                    && m.iter().all(|(k, x)| {
                        match (o.get(k), n.child_for_key(k)) {
                            (Some(ox), Some(child)) => self.eq(child, ox, x, depth + 1),
                            // a field the schema does not describe, or not in the old object
                            _ => false,
                        }
                    })
            }
            (Value::Array(_) | Value::Object(_), _) | (_, Value::Array(_) | Value::Object(_)) => {
                false
            }
            _ => old == new,
        }
    }
}

/// The old value of object field `k`: present in both objects and described by the schema.
pub(crate) fn field<'a>(
    n: &Node,
    old: Option<&'a Map<String, Value>>,
    k: &str,
) -> Option<&'a Value> {
    n.child_for_key(k)?;
    old?.get(k)
}

/// The items of an old `map` list by their keys (`MapList`): an item is found by the values
/// of all its map keys, which must be scalars; the first old item with those values wins.
/// Items without all keys, or with a non-scalar key, correlate with nothing.
#[derive(Debug)]
pub(crate) struct MapList<'a> {
    keys: &'a [String],
    by_key: HashMap<ItemKey, &'a Value>,
}

impl<'a> MapList<'a> {
    pub(crate) fn new(keys: &'a [String], old: &'a [Value]) -> Self {
        let mut by_key = HashMap::with_capacity(old.len());
        if !keys.is_empty() {
            for o in old {
                if let Some(k) = item_key(keys, o) {
                    by_key.entry(k).or_insert(o);
                }
            }
        }
        MapList { keys, by_key }
    }

    /// The map list of `n`'s old value: `None` unless `n` is a `map` list.
    pub(crate) fn of(n: &'a Node, old: Option<&'a Value>) -> Option<Self> {
        match (&n.list_type, old.and_then(Value::as_array)) {
            (Some(ListType::Map(keys)), Some(o)) => Some(MapList::new(keys, o)),
            _ => None,
        }
    }

    /// The old item with the same map keys as `x`.
    pub(crate) fn get(&self, x: &Value) -> Option<&'a Value> {
        if self.keys.is_empty() {
            return None;
        }
        self.by_key.get(&item_key(self.keys, x)?).copied()
    }
}

/// The identity of a map-list item: with one key its scalar value, with several the values
/// joined as upstream's `multiKeyStrategy` writes them (floats as `%f`, strings quoted).
#[derive(Debug, PartialEq, Eq, Hash)]
enum ItemKey {
    Bool(bool),
    Int(i64),
    /// A float's bits (JSON has no NaN).
    Float(u64),
    Str(String),
    Composite(String),
}

fn scalar(v: &Value) -> Option<ItemKey> {
    Some(match v {
        Value::Bool(b) => ItemKey::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => ItemKey::Int(i),
            None => ItemKey::Float(n.as_f64()?.to_bits()),
        },
        Value::String(s) => ItemKey::Str(s.clone()),
        _ => return None,
    })
}

fn item_key(keys: &[String], x: &Value) -> Option<ItemKey> {
    let m = x.as_object()?;
    if let [only] = keys {
        return scalar(m.get(only)?);
    }
    let mut out = String::new();
    for k in keys {
        out.push('\0');
        match scalar(m.get(k)?)? {
            ItemKey::Bool(b) => out.push_str(if b { "true" } else { "false" }),
            ItemKey::Int(i) => out.push_str(&i.to_string()),
            ItemKey::Float(bits) => out.push_str(&format!("{:.6}", f64::from_bits(bits))),
            ItemKey::Str(s) => out.push_str(&kplane_types::validation::go_quote(&s)),
            ItemKey::Composite(_) => return None,
        }
    }
    Some(ItemKey::Composite(out))
}

/// Deep equality of JSON values that gives up (answers `false`) beyond a nesting depth, so
/// hostile objects cannot exhaust the stack.
fn json_eq(a: &Value, b: &Value) -> bool {
    fn eq(a: &Value, b: &Value, depth: usize) -> bool {
        if depth > 200 {
            return false;
        }
        match (a, b) {
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(p, q)| eq(p, q, depth + 1))
            }
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len()
                    && x.iter()
                        .all(|(k, p)| y.get(k).is_some_and(|q| eq(p, q, depth + 1)))
            }
            (Value::Array(_) | Value::Object(_), _) | (_, Value::Array(_) | Value::Object(_)) => {
                false
            }
            _ => a == b,
        }
    }
    eq(a, b, 0)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// A `map` list of objects with the given (key) properties.
    fn map_list(keys: &[&str]) -> Node {
        let item = Node {
            properties: keys
                .iter()
                .map(|k| (Box::from(*k), Node::default()))
                .collect(),
            ..Default::default()
        };
        Node {
            list_type: Some(ListType::Map(keys.iter().map(|k| k.to_string()).collect())),
            items: Some(Box::new(item)),
            ..Default::default()
        }
    }

    #[test]
    fn map_list_items_are_found_by_all_their_scalar_keys() {
        let keys = vec!["name".to_string(), "port".to_string()];
        let old = vec![
            json!({"name": "a", "port": 1, "v": "first"}),
            json!({"name": "a", "port": 1, "v": "second"}),
            json!({"name": "b"}),
            json!({"name": {"x": 1}, "port": 2}),
        ];
        let l = MapList::new(&keys, &old);
        // the first old item with the keys wins
        assert_eq!(l.get(&json!({"port": 1, "name": "a"})), Some(&old[0]));
        // a missing key or a non-scalar key correlates with nothing
        assert_eq!(l.get(&json!({"name": "b"})), None);
        assert_eq!(l.get(&json!({"name": {"x": 1}, "port": 2})), None);
        // an integer and a float are different keys, as in Go's unstructured values
        assert_eq!(l.get(&json!({"name": "a", "port": 1.0})), None);
    }

    #[test]
    fn map_lists_are_unchanged_whatever_the_order_other_lists_only_when_equal() {
        let n = map_list(&["name"]);
        let old = json!([{"name": "a"}, {"name": "b"}]);
        let reordered = json!([{"name": "b"}, {"name": "a"}]);
        let renamed = json!([{"name": "b"}, {"name": "c"}]);
        assert!(Ratchet::default().unchanged(&n, &old, &reordered));
        assert!(!Ratchet::default().unchanged(&n, &old, &renamed));
        let atomic = Node {
            items: Some(Box::new(Node::default())),
            ..Default::default()
        };
        let (old, reordered, same) = (json!([1, 2]), json!([2, 1]), json!([1, 2]));
        assert!(!Ratchet::default().unchanged(&atomic, &old, &reordered));
        assert!(Ratchet::default().unchanged(&atomic, &old, &same));
    }

    #[test]
    fn objects_with_fields_the_schema_does_not_describe_are_never_unchanged() {
        let n = Node::default();
        let (v, w) = (json!({"x": 1}), json!({"x": 1}));
        assert!(!Ratchet::default().unchanged(&n, &v, &w));
        let (null, one, one_f) = (json!(null), json!(1), json!(1.0));
        assert!(Ratchet::default().unchanged(&n, &null, &null));
        assert!(Ratchet::default().unchanged(&n, &one, &one));
        assert!(!Ratchet::default().unchanged(&n, &one, &one_f));
    }
}
