//! Small helpers over JSON objects: in place, shared by the passes that default objects and
//! bring them to their stored form (`pod_template`, `pod_defaults`, `crd_form`,
//! `stored_form`); and readers of common shapes (`strings`).

use serde_json::{Map, Value};

/// The zero value of an `omitempty` field as Go's `encoding/json` sees it.
pub(super) fn is_zero(v: &Value) -> bool {
    match v {
        Value::Null => true,
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_f64() == Some(0.0),
        Value::String(s) => s.is_empty(),
        Value::Array(a) => a.is_empty(),
        Value::Object(m) => m.is_empty(),
    }
}

/// Sets `k` to `v` when it is absent or null (a defaulting function's "if unset").
pub(super) fn set_default(m: &mut Map<String, Value>, k: &str, v: Value) {
    if m.get(k).is_none_or(Value::is_null) {
        m.insert(k.into(), v);
    }
}

/// The object held at `key`, if it is one.
pub(super) fn object_at<'a>(
    m: &'a mut Map<String, Value>,
    key: &str,
) -> Option<&'a mut Map<String, Value>> {
    m.get_mut(key).and_then(Value::as_object_mut)
}

/// The objects of the array held at `key` (nothing when it is absent or not an array).
pub(super) fn each_object<'a>(
    m: &'a mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    m.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(Value::as_object_mut)
}

/// The items of the array of structs held at `key`, a `null` item made the empty object
/// (Go decodes it into the zero struct, which it encodes as `{}` or with its always-written
/// fields).
pub(super) fn each_struct<'a>(
    m: &'a mut Map<String, Value>,
    key: &str,
) -> impl Iterator<Item = &'a mut Map<String, Value>> {
    m.get_mut(key)
        .and_then(Value::as_array_mut)
        .into_iter()
        .flatten()
        .filter_map(|item| {
            if item.is_null() {
                *item = Value::Object(Map::new());
            }
            item.as_object_mut()
        })
}

/// The strings of a JSON array (other items and a missing or non-array value give none).
pub(crate) fn strings(v: Option<&Value>) -> Vec<String> {
    v.and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn zero_values_are_go_encoding_json_ones() {
        for v in [
            json!(null),
            json!(false),
            json!(0),
            json!(0.0),
            json!(""),
            json!([]),
            json!({}),
        ] {
            assert!(is_zero(&v), "{v}");
        }
        for v in [
            json!(true),
            json!(1),
            json!(-0.5),
            json!("x"),
            json!([0]),
            json!({"a": 0}),
        ] {
            assert!(!is_zero(&v), "{v}");
        }
    }

    #[test]
    fn set_default_fills_only_absent_or_null_fields() {
        let mut m = json!({"a": null, "b": 0})
            .as_object()
            .cloned()
            .unwrap_or_default();
        for k in ["a", "b", "c"] {
            set_default(&mut m, k, json!(7));
        }
        assert_eq!(Value::Object(m), json!({"a": 7, "b": 0, "c": 7}));
    }

    #[test]
    fn each_object_skips_non_objects_and_missing_arrays() {
        let mut m = json!({"l": [{"x": 1}, 2, {"y": 2}], "o": {"z": 3}})
            .as_object()
            .cloned()
            .unwrap_or_default();
        assert_eq!(each_object(&mut m, "l").count(), 2);
        assert_eq!(each_object(&mut m, "missing").count(), 0);
        assert_eq!(each_object(&mut m, "o").count(), 0);
        assert!(object_at(&mut m, "o").is_some());
        assert!(object_at(&mut m, "l").is_none());
    }
}
