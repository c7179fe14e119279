//! RBAC through the whole router (no socket): users, groups and cluster-bound
//! ServiceAccounts from a test authenticator, the server's authorizer chain (superusers,
//! then RBAC), stored Roles and bindings, access and rules reviews.

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use kplane_registry::rbac::BOUND_CLUSTER_EXTRA;
use kplane_types::UserInfo;
use serde_json::{json, Value};

use super::auth::{AdminTokenAuthenticator, AuthOutcome, AuthRequest, Authenticator};
use super::authz::{RbacAuthorizer, SuperuserAuthorizer, UnionAuthorizer};
use super::router_tests::{app_with, App};

const ADMIN: &str = "admin-token";

/// Bearer `user:<name>` is that user; `sa:<cluster>:<ns>:<name>` a ServiceAccount whose
/// token is bound to `<cluster>`; the admin token is the admin.
#[derive(Debug)]
pub(super) struct Users(pub(super) AdminTokenAuthenticator);

#[async_trait::async_trait]
impl Authenticator for Users {
    async fn authenticate(&self, req: &AuthRequest<'_>) -> AuthOutcome {
        let token = req.bearer_token.unwrap_or("");
        if let Some(name) = token.strip_prefix("user:") {
            return AuthOutcome::Authenticated(UserInfo {
                username: name.into(),
                groups: vec!["system:authenticated".into()],
                ..Default::default()
            });
        }
        if let Some(sa) = token.strip_prefix("sa:") {
            let mut parts = sa.split('/');
            let (Some(cluster), Some(ns), Some(name)) = (parts.next(), parts.next(), parts.next())
            else {
                return AuthOutcome::NotApplicable;
            };
            return AuthOutcome::Authenticated(UserInfo {
                username: format!("system:serviceaccount:{ns}:{name}"),
                groups: vec![
                    "system:serviceaccounts".into(),
                    format!("system:serviceaccounts:{ns}"),
                    "system:authenticated".into(),
                ],
                extra: [(BOUND_CLUSTER_EXTRA.to_string(), vec![cluster.to_string()])].into(),
                ..Default::default()
            });
        }
        self.0.authenticate(req).await
    }
}

async fn app() -> App {
    app_with(
        Arc::new(Users(AdminTokenAuthenticator::new(ADMIN.into()))),
        |registry| {
            Arc::new(UnionAuthorizer::new(vec![
                Arc::new(SuperuserAuthorizer),
                Arc::new(RbacAuthorizer::new(registry.clone())),
            ]))
        },
        true,
        &["root", "root:a", "root:b"],
    )
    .await
}

/// Sends a request with `token` as its bearer.
async fn send(
    app: &App,
    method: Method,
    uri: &str,
    token: &str,
    body: Option<Value>,
) -> (StatusCode, Value) {
    super::router_tests::send(app, method, uri, Some(token), body).await
}

async fn admin_post(app: &App, uri: &str, body: Value) {
    let (s, b) = send(app, Method::POST, uri, ADMIN, Some(body)).await;
    assert_eq!(s, StatusCode::CREATED, "{uri}: {b}");
}

async fn configmap(app: &App, cluster: &str, name: &str) {
    admin_post(
        app,
        &format!("/clusters/{cluster}/api/v1/namespaces/default/configmaps"),
        json!({"metadata": {"name": name}, "data": {"secret-ish": name}}),
    )
    .await;
}

/// A Role granting `verbs` on configmaps `names` in `default` of `cluster`, bound to `subject`.
async fn grant(app: &App, cluster: &str, verbs: Value, names: Value, subject: Value) {
    let base = format!("/clusters/{cluster}/apis/rbac.authorization.k8s.io/v1/namespaces/default");
    admin_post(
        app,
        &format!("{base}/roles"),
        json!({"metadata": {"name": "cm"}, "rules": [
            {"verbs": verbs, "apiGroups": [""], "resources": ["configmaps"], "resourceNames": names}]}),
    )
    .await;
    admin_post(
        app,
        &format!("{base}/rolebindings"),
        json!({"metadata": {"name": "cm"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "cm"},
            "subjects": [subject]}),
    )
    .await;
}

#[tokio::test]
async fn a_role_with_resource_names_grants_those_objects_only() {
    let app = app().await;
    for n in ["one", "two"] {
        configmap(&app, "root:a", n).await;
    }
    let cms = "/clusters/root:a/api/v1/namespaces/default/configmaps";
    let alice = "user:alice";
    let (s, b) = send(&app, Method::GET, &format!("{cms}/one"), alice, None).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    assert_eq!(
        b["message"],
        r#"configmaps "one" is forbidden: User "alice" cannot get resource "configmaps" in API group "" in the namespace "default""#
    );
    assert_eq!(b["reason"], "Forbidden");
    grant(
        &app,
        "root:a",
        json!(["get"]),
        json!(["one"]),
        json!({"kind": "User", "name": "alice"}),
    )
    .await;
    let (s, b) = send(&app, Method::GET, &format!("{cms}/one"), alice, None).await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(b["data"]["secret-ish"], "one");
    let (s, _) = send(&app, Method::GET, &format!("{cms}/two"), alice, None).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    // A list (no name) is not covered by a rule with resourceNames, and leaks nothing.
    for uri in [
        cms.to_string(),
        format!("{cms}?watch=true"),
        "/clusters/root:a/api/v1/configmaps".into(),
    ] {
        let (s, b) = send(&app, Method::GET, &uri, alice, None).await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{uri}");
        assert!(!b.to_string().contains("secret-ish"), "{b}");
        assert!(
            b["message"].as_str().unwrap().contains("cannot list")
                || b["message"].as_str().unwrap().contains("cannot watch"),
            "{b}"
        );
    }
    let (s, _) = send(&app, Method::DELETE, &format!("{cms}/one"), alice, None).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    // Access reviews give the same answers.
    let ssar = |verb: &str, name: &str| {
        json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
        "spec": {"resourceAttributes": {"verb": verb, "resource": "configmaps", "namespace": "default", "name": name}}})
    };
    let reviews = "/clusters/root:a/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    for (verb, name, want) in [
        ("get", "one", true),
        ("get", "two", false),
        ("list", "", false),
        ("delete", "one", false),
    ] {
        let (s, b) = send(&app, Method::POST, reviews, alice, Some(ssar(verb, name))).await;
        assert_eq!(s, StatusCode::CREATED, "{b}");
        assert_eq!(b["status"]["allowed"], want, "{verb} {name}: {b}");
    }
    // The rules review lists the grant and the defaults.
    let (s, b) = send(&app, Method::POST, "/clusters/root:a/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", alice,
        Some(json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": "default"}}))).await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    let rules = b["status"]["resourceRules"].as_array().unwrap();
    assert!(rules.contains(&json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["one"]})), "{b}");
    assert!(
        rules.iter().any(|r| r["resources"]
            .to_string()
            .contains("selfsubjectaccessreviews")),
        "{b}"
    );
    assert!(
        b["status"]["nonResourceRules"]
            .to_string()
            .contains("/version"),
        "{b}"
    );
    assert_eq!(b["status"]["incomplete"], false);
    // Revoking takes effect on the next request.
    let (s, _) = send(
        &app,
        Method::DELETE,
        "/clusters/root:a/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings/cm",
        ADMIN,
        None,
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    let (s, _) = send(&app, Method::GET, &format!("{cms}/one"), alice, None).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn bindings_grant_in_their_own_cluster_only_and_bound_tokens_stay_home() {
    let app = app().await;
    configmap(&app, "root:a", "x").await;
    configmap(&app, "root:b", "x").await;
    let sa = json!({"kind": "ServiceAccount", "name": "robot", "namespace": "default"});
    grant(
        &app,
        "root:a",
        json!(["get", "list"]),
        json!([]),
        sa.clone(),
    )
    .await;
    let robot_a = "sa:root:a/default/robot";
    let get = |c: &str| format!("/clusters/{c}/api/v1/namespaces/default/configmaps/x");
    assert_eq!(
        send(&app, Method::GET, &get("root:a"), robot_a, None)
            .await
            .0,
        StatusCode::OK
    );
    // The same-named binding in root:b: the token bound to root:a is refused there anyway.
    grant(&app, "root:b", json!(["get", "list"]), json!([]), sa).await;
    let (s, b) = send(&app, Method::GET, &get("root:b"), robot_a, None).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    assert!(
        b["message"]
            .as_str()
            .unwrap()
            .contains("bound to the logical cluster root:a"),
        "{b}"
    );
    // ...and the same name bound to root:b gets root:b only.
    let robot_b = "sa:root:b/default/robot";
    assert_eq!(
        send(&app, Method::GET, &get("root:b"), robot_b, None)
            .await
            .0,
        StatusCode::OK
    );
    assert_eq!(
        send(&app, Method::GET, &get("root:a"), robot_b, None)
            .await
            .0,
        StatusCode::FORBIDDEN
    );
    // A user's binding in root:a does not reach root:b.
    grant_cluster_view(&app, "root:a", "carol").await;
    let list = |c: &str| format!("/clusters/{c}/api/v1/configmaps");
    assert_eq!(
        send(&app, Method::GET, &list("root:a"), "user:carol", None)
            .await
            .0,
        StatusCode::OK
    );
    assert_eq!(
        send(&app, Method::GET, &list("root:b"), "user:carol", None)
            .await
            .0,
        StatusCode::FORBIDDEN
    );
    // Wildcards: a bound token never; a user with a cluster-wide grant in the subtree's
    // root (`root` for `*`) only.
    for (who, uri) in [
        (robot_a, "/clusters/*/api/v1/configmaps"),
        (robot_a, "/clusters/root:a:*/api/v1/configmaps"),
        ("user:carol", "/clusters/*/api/v1/configmaps"),
        ("user:carol", "/clusters/root:b:*/api/v1/configmaps"),
    ] {
        let (s, b) = send(&app, Method::GET, uri, who, None).await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{who} {uri}");
        assert!(!b.to_string().contains("secret-ish"), "{b}");
    }
    let (s, b) = send(
        &app,
        Method::GET,
        "/clusters/root:a:*/api/v1/configmaps",
        "user:carol",
        None,
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{b}");
    grant_cluster_view(&app, "root", "carol").await;
    let (s, b) = send(
        &app,
        Method::GET,
        "/clusters/*/api/v1/configmaps",
        "user:carol",
        None,
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert!(b["items"].as_array().unwrap().len() >= 2);
    let (s, _) = send(
        &app,
        Method::GET,
        "/clusters/*/api/v1/configmaps",
        robot_a,
        None,
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    // SubjectAccessReview in root:a about the robot agrees.
    let sar = json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {
        "user": "system:serviceaccount:default:robot", "groups": ["system:serviceaccounts"],
        "resourceAttributes": {"verb": "get", "resource": "configmaps", "namespace": "default", "name": "x"}}});
    let (s, b) = send(
        &app,
        Method::POST,
        "/clusters/root:a/apis/authorization.k8s.io/v1/subjectaccessreviews",
        ADMIN,
        Some(sar),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED);
    assert_eq!(b["status"]["allowed"], true, "{b}");
    assert!(
        b["status"]["reason"]
            .as_str()
            .unwrap()
            .starts_with("RBAC: allowed by RoleBinding \"cm/default\""),
        "{b}"
    );
}

async fn grant_cluster_view(app: &App, cluster: &str, user: &str) {
    admin_post(
        app,
        &format!("/clusters/{cluster}/apis/rbac.authorization.k8s.io/v1/clusterrolebindings"),
        json!({"metadata": {"name": format!("view-{user}")}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}]}),
    )
    .await;
}

#[tokio::test]
async fn default_roles_let_authenticated_users_discover_and_review_themselves() {
    let app = app().await;
    let u = "user:someone";
    for uri in [
        "/clusters/root/api",
        "/clusters/root/apis",
        "/clusters/root/api/v1",
        "/clusters/root:a/apis",
    ] {
        let (s, b) = send(&app, Method::GET, uri, u, None).await;
        assert_eq!(s, StatusCode::OK, "{uri}: {b}");
    }
    let (s, b) = send(&app, Method::GET, "/clusters/root/metrics", u, None).await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    assert_eq!(
        b["message"],
        r#"forbidden: User "someone" cannot get path "/metrics""#
    );
    let (s, b) = send(
        &app,
        Method::GET,
        "/clusters/root/api/v1/namespaces",
        u,
        None,
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    assert_eq!(
        b["message"],
        r#"namespaces is forbidden: User "someone" cannot list resource "namespaces" in API group "" at the cluster scope"#
    );
    let (s, b) = send(
        &app,
        Method::POST,
        "/clusters/root/apis/authentication.k8s.io/v1/selfsubjectreviews",
        u,
        Some(json!({"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"})),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    // The admin's rules review is everything.
    let (s, b) = send(&app, Method::POST, "/clusters/root/apis/authorization.k8s.io/v1/selfsubjectrulesreviews", ADMIN,
        Some(json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview", "spec": {"namespace": "default"}}))).await;
    assert_eq!(s, StatusCode::CREATED);
    assert!(
        b["status"]["resourceRules"]
            .as_array()
            .unwrap()
            .contains(&json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]})),
        "{b}"
    );
}

/// Sends `body` (archive bytes) with `token`; answers the status and body bytes.
async fn send_bytes(
    app: &App,
    method: Method,
    uri: &str,
    token: &str,
    body: Vec<u8>,
) -> (StatusCode, Vec<u8>) {
    use tower::ServiceExt as _;
    let req = axum::http::Request::builder()
        .method(method)
        .uri(uri)
        .header("authorization", format!("Bearer {token}"))
        .header("content-type", kplane_archive::CONTENT_TYPE)
        .body(axum::body::Body::from(body))
        .unwrap();
    let resp = app.router.clone().oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, bytes.to_vec())
}

/// Export is authorized as `get` of the non-resource URL `/kplane/v1/export` in the
/// exported cluster; import as `post` of `/kplane/v1/import` in the target's parent.
#[tokio::test]
async fn archive_endpoints_are_authorized_as_non_resource_urls() {
    let app = app().await;
    configmap(&app, "root:a", "x").await;
    let crb = "/clusters/root:a/apis/rbac.authorization.k8s.io/v1";
    admin_post(
        &app,
        &format!("{crb}/clusterroles"),
        json!({"metadata": {"name": "archives"}, "rules": [
            {"verbs": ["get"], "nonResourceURLs": ["/kplane/v1/export"]},
            {"verbs": ["post"], "nonResourceURLs": ["/kplane/v1/import"]}]}),
    )
    .await;
    admin_post(
        &app,
        &format!("{crb}/clusterrolebindings"),
        json!({"metadata": {"name": "archives"},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "archives"},
               "subjects": [{"kind": "User", "name": "porter", "apiGroup": "rbac.authorization.k8s.io"}]}),
    )
    .await;
    let user = "user:porter";
    let (code, archive) = send_bytes(
        &app,
        Method::GET,
        "/clusters/root:a/kplane/v1/export",
        user,
        vec![],
    )
    .await;
    assert_eq!(
        code,
        StatusCode::OK,
        "{}",
        String::from_utf8_lossy(&archive)
    );
    let (code, _) = send_bytes(
        &app,
        Method::GET,
        "/clusters/root:b/kplane/v1/export",
        user,
        vec![],
    )
    .await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    // root:a:copy's parent is root:a, where the user may import.
    let (code, body) = send_bytes(
        &app,
        Method::POST,
        "/clusters/root:a:copy/kplane/v1/import",
        user,
        archive.clone(),
    )
    .await;
    assert_eq!(
        code,
        StatusCode::CREATED,
        "{}",
        String::from_utf8_lossy(&body)
    );
    let result: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(result["kind"], "ImportResult");
    assert_eq!(result["clusters"], json!(["root:a:copy"]));
    let (code, cm) = send(
        &app,
        Method::GET,
        "/clusters/root:a:copy/api/v1/namespaces/default/configmaps/x",
        ADMIN,
        None,
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{cm}");
    assert_eq!(cm["data"]["secret-ish"], "x");
    // Not in root:b, and not into root:a itself (its parent is root).
    for target in ["root:b:copy", "root:a"] {
        let uri = format!("/clusters/{target}/kplane/v1/import");
        let (code, _) = send_bytes(&app, Method::POST, &uri, user, archive.clone()).await;
        assert_eq!(code, StatusCode::FORBIDDEN, "{target}");
    }
    // A wrong method is a 405; a body that is no archive a 400 naming the problem.
    let (code, _) = send_bytes(
        &app,
        Method::PUT,
        "/clusters/root:a/kplane/v1/export",
        ADMIN,
        vec![],
    )
    .await;
    assert_eq!(code, StatusCode::METHOD_NOT_ALLOWED);
    let (code, body) = send_bytes(
        &app,
        Method::POST,
        "/clusters/root:a:junk/kplane/v1/import",
        ADMIN,
        b"junk".to_vec(),
    )
    .await;
    assert_eq!(
        code,
        StatusCode::BAD_REQUEST,
        "{}",
        String::from_utf8_lossy(&body)
    );
    let (code, _) = send(
        &app,
        Method::GET,
        "/clusters/root:a:junk/api/v1/namespaces",
        ADMIN,
        None,
    )
    .await;
    assert_eq!(code, StatusCode::NOT_FOUND);
}
