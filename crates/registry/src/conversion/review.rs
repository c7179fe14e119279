//! The ConversionReview a conversion webhook is sent and the checks of its answer, as
//! apiextensions-apiserver's `webhook_converter.go` builds and checks them
//! (`createConversionReviewObjects`, `getConvertedObjectsFromResponse`,
//! `validateConvertedObject`, `restoreObjectMeta`). Pure functions over JSON: the call
//! itself is in the parent module.
//!
//! Every error here is the text after `conversion webhook for <gvk> ` that upstream
//! answers; the caller adds that prefix.

use kplane_types::validation;
use kplane_types::Cause;
use serde_json::{json, Map, Value};

/// The first ConversionReview version of `listed` that kplane knows (`v1` or `v1beta1`),
/// as upstream picks the version it sends.
pub fn review_version(listed: &[String]) -> Option<&'static str> {
    listed.iter().find_map(|v| match v.as_str() {
        "v1" => Some("v1"),
        "v1beta1" => Some("v1beta1"),
        _ => None,
    })
}

/// The ConversionReview of `objects` to `desired` (`<group>/<version>`).
pub fn request(version: &str, uid: &str, desired: &str, objects: &[Value]) -> Value {
    json!({
        "apiVersion": format!("apiextensions.k8s.io/{version}"),
        "kind": "ConversionReview",
        "request": {
            "uid": uid,
            "desiredAPIVersion": desired,
            "objects": objects,
        },
    })
}

/// The converted objects of an answer, after upstream's checks of the review itself:
/// `failed: <reason>` when the answer is not a successful review for `uid`.
pub fn converted_objects(version: &str, uid: &str, answer: &Value) -> Result<Vec<Value>, String> {
    let failed = |m: String| format!("failed: {m}");
    if version == "v1" {
        let got = format!(
            "{}, Kind={}",
            str_at(answer, "/apiVersion"),
            str_at(answer, "/kind")
        );
        if got != "apiextensions.k8s.io/v1, Kind=ConversionReview" {
            return Err(failed(format!(
                "expected webhook response of apiextensions.k8s.io/v1, Kind=ConversionReview, got {}",
                go_gvk(answer)
            )));
        }
    }
    let Some(resp) = answer.get("response").filter(|r| r.is_object()) else {
        return Err(failed("no response provided".into()));
    };
    // v1beta1 answers were never held to the uid (upstream keeps that for compatibility).
    let got_uid = str_at(resp, "/uid");
    if version == "v1" && got_uid != uid {
        return Err(failed(format!(
            "expected response.uid={uid:?}, got {got_uid:?}"
        )));
    }
    let status = str_at(resp, "/result/status");
    if status != "Success" {
        let message = str_at(resp, "/result/message");
        return Err(failed(if message.is_empty() {
            format!("response.result.status was '{status}', not 'Success'")
        } else {
            message.to_string()
        }));
    }
    Ok(resp
        .get("convertedObjects")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default())
}

/// `<apiVersion>, Kind=<kind>` as Go prints a GroupVersionKind (`/v1` without a group is
/// printed `v1`; nothing at all is `, Kind=`).
fn go_gvk(obj: &Value) -> String {
    format!(
        "{}, Kind={}",
        str_at(obj, "/apiVersion"),
        str_at(obj, "/kind")
    )
}

fn str_at<'a>(v: &'a Value, ptr: &str) -> &'a str {
    v.pointer(ptr).and_then(Value::as_str).unwrap_or("")
}

/// Where a converted object sat, for the messages: a list's index, or the one object of
/// a single conversion.
#[derive(Clone, Copy, Debug)]
pub enum Place {
    /// One object converted alone (`returned invalid object...`).
    Single,
    /// The object at this index of the response to a list's review.
    Listed(usize),
}

/// Checks one converted object against the `original` it was converted from and returns
/// it with the original's metadata, except labels and annotations, which the webhook may
/// change (`restoreObjectMeta`).
pub fn accept(
    original: &Value,
    converted: Value,
    desired: &str,
    at: Place,
) -> Result<Value, String> {
    let (invalid, invalid_meta) = match at {
        Place::Single => (
            "returned invalid object".to_string(),
            "returned invalid metadata".to_string(),
        ),
        Place::Listed(i) => (
            format!("returned invalid converted object at index {i}"),
            format!("returned invalid metadata in object at index {i}"),
        ),
    };
    let converted = match converted {
        Value::Object(m) => m,
        _ => {
            return Err(format!(
                "{invalid}: Object 'Kind' is missing in '{}'",
                converted
            ))
        }
    };
    let got = converted
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or("");
    if got != desired {
        let at0 = match at {
            Place::Single => format!("{invalid} at index 0"),
            Place::Listed(_) => invalid.clone(),
        };
        return Err(format!(
            "{at0}: invalid groupVersion (expected {desired}, received {got})"
        ));
    }
    let kind_of = |m: &Map<String, Value>| {
        m.get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let (want_kind, got_kind) = (str_at(original, "/kind").to_string(), kind_of(&converted));
    if want_kind != got_kind {
        let at0 = match at {
            Place::Single => format!("{invalid} at index 0"),
            Place::Listed(_) => invalid.clone(),
        };
        return Err(format!(
            "{at0}: invalid kind (expected {want_kind}, received {got_kind})"
        ));
    }
    let converted = Value::Object(converted);
    same_identity(original, &converted).map_err(|e| format!("{invalid}: {e}"))?;
    restore_meta(original, converted).map_err(|e| format!("{invalid_meta}: {e}"))
}

/// `validateConvertedObject`: kind, name, namespace and uid must not change.
fn same_identity(original: &Value, converted: &Value) -> Result<(), String> {
    for (ptr, what) in [
        ("/kind", "kind"),
        ("/metadata/name", "name"),
        ("/metadata/namespace", "namespace"),
        ("/metadata/uid", "UID"),
    ] {
        let (e, a) = (str_at(original, ptr), str_at(converted, ptr));
        if e != a {
            return Err(format!("must have the same {what}: {e} != {a}"));
        }
    }
    Ok(())
}

/// `restoreObjectMeta`: the original's metadata with the converted object's labels and
/// annotations (validated when they changed).
fn restore_meta(original: &Value, mut converted: Value) -> Result<Value, String> {
    let response_meta = match converted.get("metadata") {
        None => return Err("missing metadata in converted object".into()),
        Some(Value::Object(m)) => m.clone(),
        Some(other) => {
            return Err(format!(
                "invalid metadata of type {} in converted object",
                go_type(other)
            ))
        }
    };
    let mut meta = match original.get("metadata") {
        Some(Value::Object(m)) => m.clone(),
        _ => Map::new(),
    };
    for field in ["labels", "annotations"] {
        let response = match response_meta.get(field) {
            None | Some(Value::Null) => {
                meta.remove(field);
                continue;
            }
            Some(Value::Object(m)) => m,
            Some(other) => {
                return Err(format!(
                    "invalid metadata.{field} of type {} in converted object",
                    go_type(other)
                ))
            }
        };
        let empty = Map::new();
        let before = meta.get(field).and_then(Value::as_object).unwrap_or(&empty);
        let mut changed = before.len() != response.len();
        for (k, v) in response {
            if !v.is_string() {
                return Err(format!(
                    "metadata.{field}[{k}] must be a string, but is {} in converted object",
                    go_type(v)
                ));
            }
            changed |= before.get(k) != Some(v);
        }
        if changed {
            // Upstream names the annotations' path `metadata.annotation`.
            let causes = if field == "labels" {
                validation::validate_labels(response, "metadata.labels")
            } else {
                validation::validate_annotations(response, "metadata.annotation")
            };
            if !causes.is_empty() {
                return Err(aggregate(&causes));
            }
        }
        meta.insert(field.into(), Value::Object(response.clone()));
    }
    converted["metadata"] = Value::Object(meta);
    Ok(converted)
}

/// A field error list as Go's `ToAggregate().Error()` prints it.
fn aggregate(causes: &[Cause]) -> String {
    match causes {
        [one] => one.render(),
        many => format!(
            "[{}]",
            many.iter()
                .map(Cause::render)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The Go type a JSON value decodes to, as `%T` prints it.
fn go_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_f64() => "float64",
        Value::Number(_) => "int64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

/// client-go's error for a webhook answer outside 2xx (`newUnstructuredResponseError`,
/// `NewGenericServerResponse` for a POST with no resource): a `Status` body's message
/// when the body is one, else the generic text of the code.
pub fn http_error(code: u16, body: &[u8]) -> String {
    if let Ok(v) = serde_json::from_slice::<Value>(body) {
        if v.get("kind").and_then(Value::as_str) == Some("Status") {
            if let Some(m) = v.get("message").and_then(Value::as_str) {
                return m.to_string();
            }
        }
    }
    let text = String::from_utf8_lossy(&body[..body.len().min(1024)])
        .trim()
        .to_string();
    match code {
        409 => "the server reported a conflict".into(),
        404 => "the server could not find the requested resource".into(),
        400 => "the server rejected our request for an unknown reason".into(),
        401 => "the server has asked for the client to provide credentials".into(),
        403 | 415 => text,
        406 if text.is_empty() || text == "unknown" => {
            "the server was unable to respond with a content type that the client supports".into()
        }
        406 => text,
        405 => "the server does not allow this method on the requested resource".into(),
        422 => "the server rejected our request due to an error in our request".into(),
        503 => "the server is currently unable to handle the request".into(),
        504 => "the server was unable to return a response in the time allotted, but may still be processing the request".into(),
        429 => "the server has received too many requests and has asked us to try again later".into(),
        c if c >= 500 => format!(
            "an error on the server ({text:?}) has prevented the request from succeeding"
        ),
        c => format!("the server responded with the status code {c} but did not return more information"),
    }
}

#[cfg(test)]
#[path = "review_tests.rs"]
mod tests;
