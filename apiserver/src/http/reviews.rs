//! Create-only review resources, computed per request and never stored:
//! SelfSubjectReview (`kubectl auth whoami`), SelfSubjectAccessReview and
//! SelfSubjectRulesReview (`kubectl auth can-i`), SubjectAccessReview,
//! LocalSubjectAccessReview and TokenReview.
//!
//! Access reviews ask the server's [`Authorizer`](super::authz::Authorizer) about the
//! attributes in their spec, in the logical cluster of the review request; TokenReview asks
//! its [`Authenticator`](super::auth::Authenticator) about a bare token. A rules review
//! lists what the same authorizer chain allows (`Authorizer::rules_for`).

use serde_json::{json, Value};

use kplane_types::{RequestInfo, UserInfo, Verb};

use super::auth::{AuthOutcome, AuthRequest};
use super::authz::Decision;
use super::AppState;
use kplane_registry::error::{ApiError, ApiResult};
use kplane_registry::meta;
use kplane_registry::ResourceType;

fn user_info_json(u: &UserInfo) -> Value {
    let mut v = json!({"username": u.username, "groups": u.groups});
    if !u.uid.is_empty() {
        v["uid"] = json!(u.uid);
    }
    if !u.extra.is_empty() {
        v["extra"] = json!(u.extra);
    }
    v
}

/// Answers a review request (`request`: the review request's own attributes).
pub async fn create(
    state: &AppState,
    rt: &ResourceType,
    request: &RequestInfo,
    user: &UserInfo,
    mut obj: Value,
) -> ApiResult<Value> {
    meta::check_type(&mut obj, rt)?;
    if !obj.get("metadata").is_some_and(Value::is_object) {
        obj["metadata"] = json!({});
    }
    let ns = request.namespace.as_deref();
    let status = match rt.kind.as_str() {
        "SelfSubjectReview" => json!({"userInfo": user_info_json(user)}),
        "SelfSubjectAccessReview" => {
            let attrs = reviewed_attributes(&obj, request);
            access(state.authorizer.authorize(user, &attrs).await)
        }
        "SelfSubjectRulesReview" => {
            let namespace = obj
                .pointer("/spec/namespace")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            if namespace.is_empty() {
                return Err(ApiError::from(kplane_types::Status::invalid(
                    "authorization.k8s.io",
                    "SelfSubjectRulesReview",
                    "",
                    vec![kplane_types::Cause::required("spec.namespace")],
                )));
            }
            let set = state
                .authorizer
                .rules_for(user, &request.cluster, &namespace)
                .await;
            rules_review(&set)
        }
        "SubjectAccessReview" | "LocalSubjectAccessReview" => {
            let subject = subject(&obj);
            if subject.username.is_empty() && subject.groups.is_empty() {
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
            let attrs = reviewed_attributes(&obj, request);
            access(state.authorizer.authorize(&subject, &attrs).await)
        }
        "TokenReview" => {
            let token = obj
                .pointer("/spec/token")
                .and_then(Value::as_str)
                .unwrap_or("");
            match state
                .authenticator
                .authenticate(&AuthRequest::token(token))
                .await
            {
                AuthOutcome::Authenticated(u) => {
                    json!({"authenticated": true, "user": user_info_json(&u), "audiences": []})
                }
                AuthOutcome::NotApplicable => {
                    json!({"authenticated": false, "error": "invalid bearer token"})
                }
                AuthOutcome::Rejected(e) => json!({"authenticated": false, "error": e.0}),
            }
        }
        other => return Err(ApiError::internal(format!("no review handler for {other}"))),
    };
    obj["status"] = status;
    Ok(obj)
}

/// The subject of a (Local)SubjectAccessReview: `spec.user`, `spec.uid`, `spec.groups`,
/// `spec.extra`.
fn subject(obj: &Value) -> UserInfo {
    let str_at = |p: &str| {
        obj.pointer(p)
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|g| g.as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    };
    UserInfo {
        username: str_at("/spec/user"),
        uid: str_at("/spec/uid"),
        groups: obj.pointer("/spec/groups").map(strings).unwrap_or_default(),
        extra: obj
            .pointer("/spec/extra")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), strings(v))).collect())
            .unwrap_or_default(),
    }
}

/// The request an access review asks about: its `spec.resourceAttributes` (a resource
/// request) or `spec.nonResourceAttributes`, in the review request's logical cluster.
fn reviewed_attributes(obj: &Value, request: &RequestInfo) -> RequestInfo {
    let field = |a: &Value, k: &str| a.get(k).and_then(Value::as_str).unwrap_or("").to_string();
    let some = |s: String| (!s.is_empty()).then_some(s);
    if let Some(a) = obj.pointer("/spec/resourceAttributes") {
        RequestInfo {
            cluster: request.cluster.clone(),
            path: String::new(),
            verb: Verb::parse(&field(a, "verb")),
            is_resource_request: true,
            api_group: field(a, "group"),
            api_version: field(a, "version"),
            namespace: some(field(a, "namespace")),
            resource: field(a, "resource"),
            subresource: some(field(a, "subresource")),
            name: some(field(a, "name")),
        }
    } else {
        let a = obj
            .pointer("/spec/nonResourceAttributes")
            .unwrap_or(&Value::Null);
        RequestInfo::non_resource(
            request.cluster.clone(),
            Verb::parse(&field(a, "verb")),
            field(a, "path"),
        )
    }
}

/// A SelfSubjectRulesReview's status (upstream's conversion of policy rules: a rule's
/// resources become a resource rule, its URLs a non-resource rule).
fn rules_review(set: &super::authz::RuleSet) -> Value {
    let mut resource_rules = Vec::new();
    let mut non_resource_rules = Vec::new();
    for r in &set.rules {
        if !r.resources.is_empty() {
            let mut v =
                json!({"verbs": r.verbs, "apiGroups": r.api_groups, "resources": r.resources});
            if !r.resource_names.is_empty() {
                v["resourceNames"] = json!(r.resource_names);
            }
            resource_rules.push(v);
        }
        if !r.non_resource_urls.is_empty() {
            non_resource_rules
                .push(json!({"verbs": r.verbs, "nonResourceURLs": r.non_resource_urls}));
        }
    }
    let mut status = json!({
        "resourceRules": resource_rules,
        "nonResourceRules": non_resource_rules,
        "incomplete": set.incomplete,
    });
    if !set.errors.is_empty() {
        status["evaluationError"] = json!(set.errors.join(", "));
    }
    status
}

/// An access review's status for a decision.
fn access(decision: Decision) -> Value {
    match decision {
        Decision::Allow(reason) => json!({"allowed": true, "reason": reason}),
        Decision::Deny(reason) => json!({"allowed": false, "denied": true, "reason": reason}),
        Decision::NoOpinion(reason) => json!({"allowed": false, "reason": reason}),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kplane_types::{ClusterName, ClusterScope};

    fn review_request() -> RequestInfo {
        RequestInfo {
            cluster: ClusterScope::One(ClusterName::parse("root:a").unwrap()),
            path: "/apis/authorization.k8s.io/v1/subjectaccessreviews".into(),
            verb: Verb::Create,
            is_resource_request: true,
            api_group: "authorization.k8s.io".into(),
            api_version: "v1".into(),
            namespace: None,
            resource: "subjectaccessreviews".into(),
            subresource: None,
            name: None,
        }
    }

    #[test]
    fn access_reviews_ask_about_their_spec() {
        let obj = json!({"spec": {
            "user": "alice", "uid": "u1", "groups": ["g1", 7, "g2"],
            "extra": {"scopes": ["a", "b"]},
            "resourceAttributes": {
                "verb": "deletecollection", "group": "apps", "version": "v1",
                "resource": "deployments", "subresource": "", "namespace": "ns",
            },
        }});
        let u = subject(&obj);
        assert_eq!(
            (u.username.as_str(), u.uid.as_str(), u.groups.len()),
            ("alice", "u1", 2)
        );
        assert_eq!(u.extra["scopes"], ["a", "b"]);
        let a = reviewed_attributes(&obj, &review_request());
        assert!(a.is_resource_request);
        assert_eq!(a.verb, Verb::DeleteCollection);
        assert_eq!(
            (a.api_group.as_str(), a.resource.as_str()),
            ("apps", "deployments")
        );
        assert_eq!(
            (a.namespace.as_deref(), a.subresource, a.name),
            (Some("ns"), None, None)
        );
        assert_eq!(a.cluster, review_request().cluster);

        let obj = json!({"spec": {"nonResourceAttributes": {"verb": "get", "path": "/metrics"}}});
        let a = reviewed_attributes(&obj, &review_request());
        assert!(!a.is_resource_request);
        assert_eq!((a.verb, a.path.as_str()), (Verb::Get, "/metrics"));
    }

    #[test]
    fn decisions_become_review_statuses() {
        assert_eq!(
            access(Decision::Allow("ok".into())),
            json!({"allowed": true, "reason": "ok"})
        );
        assert_eq!(
            access(Decision::Deny("no".into())),
            json!({"allowed": false, "denied": true, "reason": "no"})
        );
        assert_eq!(
            access(Decision::NoOpinion("".into())),
            json!({"allowed": false, "reason": ""})
        );
    }
}
