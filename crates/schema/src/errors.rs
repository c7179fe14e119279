//! Field errors in the exact shape apimachinery's `field.Error` renders them, and the Go
//! value formatting (`%v`, `%q`, `%#v`) those messages embed.
//!
//! Kubernetes prints the offending value of a field error by its Go type: strings quoted
//! (`%q`), numbers and booleans plain (`%v`, with Go's float formatting such as `1e+06`),
//! `null` for nil, and anything compound in Go syntax (`map[string]interface {}{...}`).

use kplane_types::validation::go_quote;
use kplane_types::{Cause, CauseType};
use serde_json::Value;

/// Go's `%v` for a `float64`: shortest round-trip digits, `%e` form when the decimal
/// exponent is below -4 or at least 6 (`1e+06`, `1.5e-07`), plain otherwise.
pub(crate) fn go_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    if f == 0.0 {
        return if f.is_sign_negative() {
            "-0".into()
        } else {
            "0".into()
        };
    }
    // `{:e}` gives the shortest round-trip digits as d.ddddde<exp>.
    let sci = format!("{:e}", f);
    let (mantissa, exp) = match sci.split_once('e') {
        Some((m, e)) => (m, e.parse::<i32>().unwrap_or(0)),
        None => return sci,
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    let mut s = format!("{f}");
    if s.contains('.') {
        while s.ends_with('0') {
            s.pop();
        }
        if s.ends_with('.') {
            s.pop();
        }
    }
    s
}

/// Whether a JSON number is an integer in Go's unstructured sense (decoded as `int64`).
pub(crate) fn as_go_int(n: &serde_json::Number) -> Option<i64> {
    n.as_i64()
}

/// A JSON number as Go's `%v` prints it (`int64` plain, `float64` Go-style).
pub(crate) fn go_number(n: &serde_json::Number) -> String {
    match as_go_int(n) {
        Some(i) => i.to_string(),
        None => go_float(n.as_f64().unwrap_or(f64::NAN)),
    }
}

/// The rendering of a field error's bad value (apimachinery `ErrorBody`).
pub(crate) fn go_value(v: &Value) -> String {
    match v {
        Value::Null => "\"null\"".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => go_number(n),
        Value::String(s) => go_quote(s),
        other => go_sharp_v(other),
    }
}

/// Go's `%#v` of an unstructured value.
pub(crate) fn go_sharp_v(v: &Value) -> String {
    let mut out = String::new();
    sharp_v_into(v, &mut out, 0);
    out
}

fn sharp_v_into(v: &Value, out: &mut String, depth: usize) {
    if depth > 64 {
        out.push_str("...");
        return;
    }
    match v {
        Value::Null => out.push_str("interface {}(nil)"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&go_number(n)),
        Value::String(s) => out.push_str(&go_quote(s)),
        Value::Array(a) => {
            out.push_str("[]interface {}{");
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                sharp_v_into(x, out, depth + 1);
            }
            out.push('}');
        }
        Value::Object(m) => {
            out.push_str("map[string]interface {}{");
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&go_quote(k));
                out.push(':');
                if let Some(x) = m.get(k) {
                    sharp_v_into(x, out, depth + 1);
                }
            }
            out.push('}');
        }
    }
}

/// `Invalid value: <repr>: <detail>` (`field.Invalid`).
pub(crate) fn invalid(field: impl Into<String>, repr: &str, detail: &str) -> Cause {
    Cause::new(
        CauseType::FieldValueInvalid,
        field,
        with_detail(format!("Invalid value: {repr}"), detail),
    )
}

/// `Invalid value: <repr>: <detail>` with reason `FieldValueTypeInvalid` (`field.TypeInvalid`).
pub(crate) fn type_invalid(field: impl Into<String>, repr: &str, detail: &str) -> Cause {
    Cause::new(
        CauseType::FieldValueTypeInvalid,
        field,
        with_detail(format!("Invalid value: {repr}"), detail),
    )
}

/// `Required value[: detail]` (`field.Required`).
pub(crate) fn required(field: impl Into<String>, detail: &str) -> Cause {
    Cause::new(
        CauseType::FieldValueRequired,
        field,
        with_detail("Required value".into(), detail),
    )
}

/// `Forbidden: <detail>` (`field.Forbidden`).
pub(crate) fn forbidden(field: impl Into<String>, detail: &str) -> Cause {
    Cause::new(
        CauseType::FieldValueForbidden,
        field,
        with_detail("Forbidden".into(), detail),
    )
}

/// `Unsupported value: <repr>: supported values: "a", "b"` (`field.NotSupported`).
pub(crate) fn not_supported<S: AsRef<str>>(
    field: impl Into<String>,
    repr: &str,
    supported: &[S],
) -> Cause {
    let list: Vec<String> = supported.iter().map(|s| go_quote(s.as_ref())).collect();
    let detail = if list.is_empty() {
        String::new()
    } else {
        format!("supported values: {}", list.join(", "))
    };
    Cause::new(
        CauseType::FieldValueNotSupported,
        field,
        with_detail(format!("Unsupported value: {repr}"), &detail),
    )
}

/// `Duplicate value: <repr>` (`field.Duplicate`).
pub(crate) fn duplicate(field: impl Into<String>, repr: &str) -> Cause {
    Cause::new(
        CauseType::FieldValueDuplicate,
        field,
        format!("Duplicate value: {repr}"),
    )
}

/// `Too long: may not be more than N bytes` (`field.TooLong`).
pub(crate) fn too_long(field: impl Into<String>, max: i64) -> Cause {
    let unit = if max == 1 { "byte" } else { "bytes" };
    Cause::new(
        CauseType::FieldValueTooLong,
        field,
        format!("Too long: may not be more than {max} {unit}"),
    )
}

/// `Too many: <actual>: must have at most N items` (`field.TooMany`).
pub(crate) fn too_many(field: impl Into<String>, actual: i64, max: i64) -> Cause {
    let unit = if max == 1 { "item" } else { "items" };
    Cause::new(
        CauseType::FieldValueTooMany,
        field,
        format!("Too many: {actual}: must have at most {max} {unit}"),
    )
}

fn with_detail(mut head: String, detail: &str) -> String {
    if !detail.is_empty() {
        head.push_str(": ");
        head.push_str(detail);
    }
    head
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn go_floats() {
        assert_eq!(go_float(10.0), "10");
        assert_eq!(go_float(1.5), "1.5");
        assert_eq!(go_float(123456.0), "123456");
        assert_eq!(go_float(1e6), "1e+06");
        assert_eq!(go_float(1234567.0), "1.234567e+06");
        assert_eq!(go_float(0.0001), "0.0001");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(go_float(-2.5), "-2.5");
    }

    #[test]
    fn go_values() {
        assert_eq!(go_value(&json!("x")), "\"x\"");
        assert_eq!(go_value(&json!(null)), "\"null\"");
        assert_eq!(go_value(&json!(3)), "3");
        assert_eq!(
            go_value(&json!({"b": 1, "a": "x"})),
            "map[string]interface {}{\"a\":\"x\", \"b\":1}"
        );
        assert_eq!(go_value(&json!([1, "a"])), "[]interface {}{1, \"a\"}");
    }
}
