//! Create-only review resources, computed per request and never stored:
//! SelfSubjectReview (`kubectl auth whoami`), SelfSubjectAccessReview and
//! SelfSubjectRulesReview (`kubectl auth can-i`), SubjectAccessReview,
//! LocalSubjectAccessReview and TokenReview.
//!
//! RBAC is stored but not enforced yet (security issue): the only credential is the admin
//! token, whose user is in `system:masters` and may do everything.

use serde_json::{json, Value};

use super::auth::UserInfo;
use super::AppState;
use crate::registry::meta;
use crate::registry::ResourceType;
use kplane_registry::error::{ApiError, ApiResult};

fn is_superuser(user: &str, groups: &[String]) -> bool {
    user == "kplane-admin" || groups.iter().any(|g| g == "system:masters")
}

fn user_info_json(u: &UserInfo) -> Value {
    let mut v = json!({"username": u.username, "groups": u.groups});
    if !u.uid.is_empty() {
        v["uid"] = json!(u.uid);
    }
    v
}

/// Answers a review request.
pub fn create(
    state: &AppState,
    rt: &ResourceType,
    ns: Option<&str>,
    user: &UserInfo,
    mut obj: Value,
) -> ApiResult<Value> {
    meta::check_type(&mut obj, rt)?;
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    let status = match rt.kind.as_str() {
        "SelfSubjectReview" => json!({"userInfo": user_info_json(user)}),
        "SelfSubjectAccessReview" => access(is_superuser(&user.username, &user.groups)),
        "SelfSubjectRulesReview" => {
            if obj
                .pointer("/spec/namespace")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
            {
                return Err(ApiError::from(kplane_types::Status::invalid(
                    "authorization.k8s.io",
                    "SelfSubjectRulesReview",
                    "",
                    vec![kplane_types::Cause::required("spec.namespace")],
                )));
            }
            json!({
                "resourceRules": [{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}],
                "nonResourceRules": [{"verbs": ["*"], "nonResourceURLs": ["*"]}],
                "incomplete": false,
            })
        }
        "SubjectAccessReview" | "LocalSubjectAccessReview" => {
            let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
            let subject = spec.get("user").and_then(Value::as_str).unwrap_or("");
            let groups: Vec<String> = spec
                .get("groups")
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(|g| g.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            if subject.is_empty() && groups.is_empty() {
                return Err(ApiError::from(kplane_types::Status::invalid(
                    "authorization.k8s.io",
                    &rt.kind,
                    "",
                    vec![kplane_types::Cause::invalid(
                        "spec.user",
                        &json!(""),
                        "at least one of user or group must be specified",
                    )],
                )));
            }
            if rt.kind == "LocalSubjectAccessReview" {
                let attr_ns = obj
                    .pointer("/spec/resourceAttributes/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or("");
                if attr_ns != ns.unwrap_or("") {
                    return Err(ApiError::bad_request(format!(
                        "spec.resourceAttributes.namespace must match namespace: {}",
                        ns.unwrap_or("")
                    )));
                }
            }
            access(is_superuser(subject, &groups))
        }
        "TokenReview" => {
            let token = obj
                .pointer("/spec/token")
                .and_then(Value::as_str)
                .unwrap_or("");
            let mut headers = axum::http::HeaderMap::new();
            if let Ok(v) = format!("Bearer {token}").parse() {
                headers.insert(axum::http::header::AUTHORIZATION, v);
            }
            match state.auth.authenticate(&headers) {
                Some(u) => {
                    json!({"authenticated": true, "user": user_info_json(&u), "audiences": []})
                }
                None => json!({"authenticated": false, "error": "invalid bearer token"}),
            }
        }
        other => return Err(ApiError::internal(format!("no review handler for {other}"))),
    };
    obj["status"] = status;
    Ok(obj)
}

fn access(allowed: bool) -> Value {
    if allowed {
        json!({"allowed": true, "reason": "kplane: member of system:masters"})
    } else {
        json!({"allowed": false, "reason": "kplane: RBAC is not enforced yet; only the admin user is authorized"})
    }
}
