//! Typed decoding of built-in objects against their schemas, as Go's typed decode does:
//! fields the schema does not know are pruned (and reported, for `fieldValidation`), and
//! values of the wrong JSON type are errors (`cannot unmarshal ...`). Custom resources
//! get their own structural pruning later; this walker serves built-in definitions.

use serde_json::{Map, Value};

use crate::builtin_definitions;

/// What a typed decode found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct TypedReport {
    /// Paths (`spec.foo`, `metadata.bar`) of fields that were pruned.
    pub unknown: Vec<String>,
    /// Type mismatches, as `<path>: expected <type>, got <type>` messages.
    pub type_errors: Vec<String>,
}

/// Deepest nesting the walker follows (objects this deep are refused earlier by the decoder).
const MAX_DEPTH: usize = 128;

/// Prunes unknown fields of `obj` in place against the definition `name`
/// (e.g. `io.k8s.api.core.v1.ConfigMap`) and reports them with any type errors.
/// Unknown definitions are treated as "anything goes".
pub fn prune_and_check(name: &str, obj: &mut Value) -> TypedReport {
    let mut report = TypedReport::default();
    let defs = builtin_definitions();
    if let Some(schema) = defs.get(name) {
        walk(schema, obj, &mut String::new(), &mut report, 0);
    }
    report
}

/// Follows `$ref` and the `allOf: [{$ref}]` wrapper to the schema that describes a value.
fn resolve(schema: &Value) -> &Value {
    let mut s = schema;
    for _ in 0..8 {
        if let Some(r) = s.get("$ref").and_then(Value::as_str) {
            match r
                .strip_prefix("#/components/schemas/")
                .and_then(|n| builtin_definitions().get(n))
            {
                Some(next) => s = next,
                None => return s,
            }
        } else if let Some([only]) = s.get("allOf").and_then(Value::as_array).map(Vec::as_slice) {
            s = only;
        } else {
            return s;
        }
    }
    s
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn child_path(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

fn walk(schema: &Value, v: &mut Value, path: &mut String, report: &mut TypedReport, depth: usize) {
    if depth > MAX_DEPTH || v.is_null() {
        return;
    }
    let schema = resolve(schema);
    if schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true)) {
        return;
    }
    // int-or-string and Quantity accept either form.
    if schema.get("x-kubernetes-int-or-string") == Some(&Value::Bool(true))
        || schema.get("oneOf").is_some()
    {
        if !matches!(v, Value::String(_) | Value::Number(_)) {
            report.type_errors.push(format!(
                "{path}: expected string or number, got {}",
                json_type(v)
            ));
        }
        return;
    }
    let Some(ty) = schema.get("type").and_then(Value::as_str) else {
        return;
    };
    let ok = match (ty, &*v) {
        ("object", Value::Object(_))
        | ("array", Value::Array(_))
        | ("string", Value::String(_)) => true,
        ("boolean", Value::Bool(_)) => true,
        ("integer", Value::Number(n)) => n.is_i64() || n.is_u64(),
        ("number", Value::Number(_)) => true,
        _ => false,
    };
    if !ok {
        let shown = if path.is_empty() {
            "<root>"
        } else {
            path.as_str()
        };
        report
            .type_errors
            .push(format!("{shown}: expected {ty}, got {}", json_type(v)));
        return;
    }
    match v {
        Value::Object(m) => walk_object(schema, m, path, report, depth),
        Value::Array(items) => {
            if let Some(item_schema) = schema.get("items") {
                for (i, item) in items.iter_mut().enumerate() {
                    let saved = path.len();
                    path.push_str(&format!("[{i}]"));
                    walk(item_schema, item, path, report, depth + 1);
                    path.truncate(saved);
                }
            }
        }
        _ => {}
    }
}

fn walk_object(
    schema: &Value,
    m: &mut Map<String, Value>,
    path: &mut String,
    report: &mut TypedReport,
    depth: usize,
) {
    let props = schema.get("properties").and_then(Value::as_object);
    let additional = schema.get("additionalProperties");
    if props.is_none() && additional.is_none() {
        // A free-form object (RawExtension, FieldsV1, JSON).
        return;
    }
    let mut unknown = Vec::new();
    for (k, child) in m.iter_mut() {
        let child_schema = props.and_then(|p| p.get(k)).or(match additional {
            Some(Value::Bool(true)) => None,
            Some(s @ Value::Object(_)) => Some(s),
            _ => None,
        });
        match child_schema {
            Some(cs) => {
                let saved = path.len();
                if saved > 0 {
                    path.push('.');
                }
                path.push_str(k);
                walk(cs, child, path, report, depth + 1);
                path.truncate(saved);
            }
            None if additional == Some(&Value::Bool(true)) => {}
            None => unknown.push(k.clone()),
        }
    }
    for k in unknown {
        m.remove(&k);
        report.unknown.push(child_path(path, &k));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prunes_unknown_fields_and_reports_paths() {
        let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "bogus": 1},
            "data": {"k": "v"}, "spec": {"x": 1}});
        let r = prune_and_check("io.k8s.api.core.v1.ConfigMap", &mut cm);
        assert_eq!(
            r.unknown,
            vec!["metadata.bogus".to_string(), "spec".to_string()]
        );
        assert!(r.type_errors.is_empty());
        assert!(cm.get("spec").is_none());
        assert!(cm["metadata"].get("bogus").is_none());
        assert_eq!(cm["data"]["k"], "v");
    }

    #[test]
    fn nested_unknown_in_job_template() {
        let mut job = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i", "imagee": "typo"}]}}}});
        let r = prune_and_check("io.k8s.api.batch.v1.Job", &mut job);
        assert_eq!(
            r.unknown,
            vec!["spec.template.spec.containers[0].imagee".to_string()]
        );
    }

    #[test]
    fn type_errors_are_reported() {
        let mut cm = json!({"data": {"k": 1}, "immutable": "yes"});
        let r = prune_and_check("io.k8s.api.core.v1.ConfigMap", &mut cm);
        assert_eq!(r.type_errors.len(), 2, "{:?}", r.type_errors);
    }

    #[test]
    fn int_or_string_and_quantities_accept_both() {
        let mut job = json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i",
            "resources": {"limits": {"cpu": 1, "memory": "1Gi"}},
            "livenessProbe": {"httpGet": {"port": "http"}}}]}}}});
        let r = prune_and_check("io.k8s.api.batch.v1.Job", &mut job);
        assert_eq!(r, TypedReport::default());
    }
}
