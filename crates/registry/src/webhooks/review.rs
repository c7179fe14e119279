//! The AdmissionReview a webhook is sent (`request/admissionreview.go`,
//! `CreateV1AdmissionReview`) and the checks of its answer (`VerifyAdmissionResponse`).

use base64::Engine as _;
use serde_json::{json, Map, Value};

use crate::admission::chain::{Attributes, Operation, RequestOptions};
use crate::catalog::ResourceType;

/// What a webhook answered, once checked.
#[derive(Debug, Default, PartialEq)]
pub struct Response {
    pub allowed: bool,
    /// The JSON patch (decoded from base64), for a mutating webhook.
    pub patch: Vec<u8>,
    pub patch_type: String,
    /// `response.status`, as sent.
    pub result: Option<Value>,
    pub warnings: Vec<String>,
    /// `response.auditAnnotations` (recorded as `<webhook>/<key>`).
    pub audit_annotations: std::collections::BTreeMap<String, String>,
}

/// The `options` of the review: the request's `CreateOptions`, `UpdateOptions` or
/// `DeleteOptions` in `meta.k8s.io/v1`.
fn options(op: Operation, dry_run: bool, o: &RequestOptions<'_>) -> Value {
    let kind = match op {
        Operation::Create => "CreateOptions",
        Operation::Update => "UpdateOptions",
        Operation::Delete => "DeleteOptions",
        Operation::Connect => return Value::Null,
    };
    let mut m = Map::new();
    m.insert("kind".into(), json!(kind));
    m.insert("apiVersion".into(), json!("meta.k8s.io/v1"));
    if dry_run {
        m.insert("dryRun".into(), json!(["All"]));
    }
    if let Some(f) = o.field_manager.filter(|f| !f.is_empty()) {
        m.insert("fieldManager".into(), json!(f));
    }
    if let Some(g) = o.grace_period_seconds {
        m.insert("gracePeriodSeconds".into(), json!(g));
    }
    if let Some(p) = o.propagation_policy {
        m.insert("propagationPolicy".into(), json!(p));
    }
    Value::Object(m)
}

fn user_info(a: &Attributes<'_>) -> Value {
    let mut m = Map::new();
    if let Some(u) = a.user {
        if !u.username.is_empty() {
            m.insert("username".into(), json!(u.username));
        }
        if !u.uid.is_empty() {
            m.insert("uid".into(), json!(u.uid));
        }
        if !u.groups.is_empty() {
            m.insert("groups".into(), json!(u.groups));
        }
        if !u.extra.is_empty() {
            m.insert("extra".into(), json!(u.extra));
        }
    }
    Value::Object(m)
}

/// The review of `a` for a webhook called through `invoked` (the request's resource or
/// an equivalent one), `object`/`old` in `invoked`'s version, in `version` (`v1` or
/// `v1beta1`: the same shape).
pub fn request(
    uid: &str,
    version: &str,
    a: &Attributes<'_>,
    namespace: &str,
    invoked: &ResourceType,
    object: Option<Value>,
    old: Option<Value>,
) -> Value {
    let sub = a.subresource.unwrap_or("");
    let rt = a.resource;
    let mut req = Map::new();
    req.insert("uid".into(), json!(uid));
    req.insert(
        "kind".into(),
        json!({"group": invoked.group, "version": invoked.version, "kind": invoked.kind}),
    );
    req.insert(
        "resource".into(),
        json!({"group": invoked.group, "version": invoked.version, "resource": invoked.plural}),
    );
    if !sub.is_empty() {
        req.insert("subResource".into(), json!(sub));
    }
    req.insert(
        "requestKind".into(),
        json!({"group": rt.group, "version": rt.version, "kind": rt.kind}),
    );
    req.insert(
        "requestResource".into(),
        json!({"group": rt.group, "version": rt.version, "resource": rt.plural}),
    );
    if !sub.is_empty() {
        req.insert("requestSubResource".into(), json!(sub));
    }
    if !a.name.is_empty() {
        req.insert("name".into(), json!(a.name));
    }
    if !namespace.is_empty() {
        req.insert("namespace".into(), json!(namespace));
    }
    req.insert("operation".into(), json!(a.operation.as_str()));
    req.insert("userInfo".into(), user_info(a));
    req.insert("object".into(), object.unwrap_or(Value::Null));
    req.insert("oldObject".into(), old.unwrap_or(Value::Null));
    req.insert("dryRun".into(), json!(a.dry_run));
    req.insert(
        "options".into(),
        options(a.operation, a.dry_run, &a.options),
    );
    json!({
        "kind": "AdmissionReview",
        "apiVersion": format!("admission.k8s.io/{version}"),
        "request": req,
    })
}

/// `VerifyAdmissionResponse`: the answer's version, uid and patch fields; the message of
/// what is wrong otherwise (`received invalid webhook response: <message>`). A body
/// that is not a review at all is the caller's `failed to call webhook` error.
pub fn verify(uid: &str, version: &str, mutating: bool, body: &Value) -> Result<Response, String> {
    let Some(resp) = body.get("response").filter(|r| !r.is_null()) else {
        return Err("webhook response was absent".into());
    };
    let s = |k: &str| resp.get(k).and_then(Value::as_str).unwrap_or("");
    let patch_b64 = s("patch");
    let patch = if patch_b64.is_empty() {
        Vec::new()
    } else {
        base64::engine::general_purpose::STANDARD
            .decode(patch_b64)
            .map_err(|e| format!("illegal base64 data in response.patch: {e}"))?
    };
    let patch_type = resp.get("patchType").filter(|v| !v.is_null());
    let mut out = Response {
        allowed: resp
            .get("allowed")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        patch: Vec::new(),
        patch_type: String::new(),
        result: resp.get("status").filter(|v| !v.is_null()).cloned(),
        warnings: resp
            .get("warnings")
            .and_then(Value::as_array)
            .map(|w| {
                w.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default(),
        audit_annotations: resp
            .get("auditAnnotations")
            .and_then(Value::as_object)
            .map(|m| {
                m.iter()
                    .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                    .collect()
            })
            .unwrap_or_default(),
    };
    if version == "v1beta1" {
        if mutating && !patch.is_empty() {
            out.patch = patch;
            out.patch_type = "JSONPatch".into();
        }
        return Ok(out);
    }
    if s("uid") != uid {
        return Err(format!("expected response.uid={uid:?}, got {:?}", s("uid")));
    }
    let api_version = body.get("apiVersion").and_then(Value::as_str).unwrap_or("");
    let kind = body.get("kind").and_then(Value::as_str).unwrap_or("");
    if api_version != "admission.k8s.io/v1" || kind != "AdmissionReview" {
        return Err(format!(
            "expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got {api_version}, Kind={kind}"
        ));
    }
    if mutating {
        match (patch.is_empty(), patch_type) {
            (false, None) => {
                return Err("webhook returned response.patch but not response.patchType".into())
            }
            (true, Some(_)) => {
                return Err("webhook returned response.patchType but not response.patch".into())
            }
            _ => {}
        }
        if let Some(t) = patch_type {
            let t = t.as_str().unwrap_or("");
            if t.is_empty() {
                return Err(format!(
                    "webhook returned invalid response.patchType of {t:?}"
                ));
            }
            out.patch_type = t.to_string();
        }
        out.patch = patch;
    } else {
        if !patch.is_empty() {
            return Err("validating webhook may not return response.patch".into());
        }
        if patch_type.is_some() {
            return Err("validating webhook may not return response.patchType".into());
        }
    }
    Ok(out)
}
