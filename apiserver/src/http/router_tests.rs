//! The request path through the whole router (no socket): authentication, then
//! authorization of the request's attributes, then the handlers.

use std::sync::{Arc, Mutex};

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use kplane_storage::{SledStorage, SledStorageOptions, Storage};
use kplane_types::{RequestInfo, UserInfo, Verb};
use serde_json::{json, Value};
use tower::ServiceExt;

use super::auth::{AdminTokenAuthenticator, AuthOutcome, AuthRequest, Authenticator};
use super::authz::{Authorizer, Decision, DenyAll, SuperuserAuthorizer, UnionAuthorizer};
use super::{router, AppState};
use kplane_registry::builtin_types::builtin;
use kplane_registry::catalog::Catalog;
use kplane_registry::Registry;

pub(super) const ADMIN: &str = "admin-token";

/// `Bearer alice` is alice (not a superuser); the admin token is the admin.
#[derive(Debug)]
pub(super) struct Tokens(pub(super) AdminTokenAuthenticator);

#[async_trait::async_trait]
impl Authenticator for Tokens {
    async fn authenticate(&self, req: &AuthRequest<'_>) -> AuthOutcome {
        match req.bearer_token {
            Some("alice") => AuthOutcome::Authenticated(UserInfo {
                username: "alice".into(),
                groups: vec!["system:authenticated".into()],
                ..Default::default()
            }),
            _ => self.0.authenticate(req).await,
        }
    }
}

/// Records what it is asked; forbids secrets, allows the rest.
#[derive(Debug, Default)]
struct Recorder(Mutex<Vec<(String, RequestInfo)>>);

#[async_trait::async_trait]
impl Authorizer for Recorder {
    async fn authorize(&self, user: &UserInfo, request: &RequestInfo) -> Decision {
        if let Ok(mut seen) = self.0.lock() {
            seen.push((user.username.clone(), request.clone()));
        }
        if request.resource == "secrets" {
            Decision::Deny("secrets are off limits".into())
        } else {
            Decision::Allow("".into())
        }
    }
}

pub(super) struct App {
    _dir: tempfile::TempDir,
    /// Kept so that watches run until their timeout (a dropped sender ends them at once).
    _shutdown: tokio::sync::watch::Sender<bool>,
    pub(super) router: axum::Router,
    pub(super) registry: Arc<Registry>,
}

async fn app(authorizer: Arc<dyn Authorizer>) -> App {
    app_with(
        Arc::new(Tokens(AdminTokenAuthenticator::new(ADMIN.into()))),
        |_| authorizer,
        true,
        &["root"],
    )
    .await
}

/// A router over a fresh store with `clusters` bootstrapped, the given authenticator, the
/// authorizer made for its registry, and anonymous requests allowed or not.
pub(super) async fn app_with(
    authenticator: Arc<dyn Authenticator>,
    authorizer: impl FnOnce(&Arc<Registry>) -> Arc<dyn Authorizer>,
    anonymous: bool,
    clusters: &[&str],
) -> App {
    app_with_limits(
        authenticator,
        authorizer,
        anonymous,
        clusters,
        Default::default(),
    )
    .await
}

/// [`app_with`], under the given limits.
pub(super) async fn app_with_limits(
    authenticator: Arc<dyn Authenticator>,
    authorizer: impl FnOnce(&Arc<Registry>) -> Arc<dyn Authorizer>,
    anonymous: bool,
    clusters: &[&str],
    limits: crate::limits::Limits,
) -> App {
    let dir = tempfile::tempdir().unwrap();
    let storage: Arc<dyn Storage> =
        SledStorage::open(dir.path().join("db"), SledStorageOptions::default()).unwrap();
    let catalog = Arc::new(Catalog::new(builtin()));
    let (shutdown_tx, shutdown) = tokio::sync::watch::channel(false);
    let (registry, _queue) = Registry::new(storage, catalog, String::new(), shutdown);
    for c in clusters {
        registry
            .ensure_cluster(&kplane_types::ClusterName::parse(c).unwrap())
            .await
            .unwrap();
    }
    let state = state(
        registry.clone(),
        authenticator,
        authorizer(&registry),
        anonymous,
        limits,
        dir.path(),
    );
    App {
        _dir: dir,
        _shutdown: shutdown_tx,
        router: router(state),
        registry,
    }
}

/// The server's state for tests: `registry` served with `authenticator` and `authorizer`,
/// the import spool under `dir`, everything else as a server's defaults.
pub(super) fn state(
    registry: Arc<Registry>,
    authenticator: Arc<dyn Authenticator>,
    authorizer: Arc<dyn Authorizer>,
    anonymous: bool,
    limits: crate::limits::Limits,
    dir: &std::path::Path,
) -> Arc<AppState> {
    Arc::new(AppState {
        registry,
        surfaces: Default::default(),
        authenticator,
        authorizer,
        anonymous,
        ready: true.into(),
        server_address: "127.0.0.1:6443".into(),
        metrics: Default::default(),
        object_counts: Default::default(),
        event_window: std::time::Duration::from_secs(60),
        version: "{}".into(),
        service_accounts: None,
        audit: None,
        spool_dir: dir.join("import-spool"),
        backup: None,
        pod_logs: Default::default(),
        flow: crate::flowcontrol::FlowControl::new(Default::default()),
        lowered: None,
        limits,
        watches: Default::default(),
    })
}

/// Sends a request; answers its status and JSON body (`null` when not JSON).
pub(super) async fn send(
    app: &App,
    method: Method,
    uri: &str,
    token: Option<&str>,
    body: Option<Value>,
) -> (StatusCode, Value) {
    let mut req = Request::builder().method(method).uri(uri);
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let body = match body {
        Some(b) => {
            req = req.header("content-type", "application/json");
            Body::from(b.to_string())
        }
        None => Body::empty(),
    };
    let resp = app
        .router
        .clone()
        .oneshot(req.body(body).unwrap())
        .await
        .unwrap();
    let status = resp.status();
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

#[tokio::test]
async fn a_deny_all_authorizer_forbids_with_kube_apiservers_message() {
    let app = app(Arc::new(DenyAll)).await;
    let (code, body) = send(
        &app,
        Method::GET,
        "/clusters/root/api/v1/namespaces/y/configmaps",
        Some(ADMIN),
        None,
    )
    .await;
    assert_eq!(code, StatusCode::FORBIDDEN, "{body}");
    assert_eq!(body["kind"], "Status");
    assert_eq!(body["reason"], "Forbidden");
    assert_eq!(body["code"], 403);
    assert_eq!(
        body["message"],
        r#"configmaps is forbidden: User "kplane-admin" cannot list resource "configmaps" in API group "" in the namespace "y""#
    );
    assert_eq!(body["details"], json!({"kind": "configmaps"}));

    let (code, body) = send(
        &app,
        Method::DELETE,
        "/apis/apps/v1/namespaces/y/deployments/d",
        Some(ADMIN),
        None,
    )
    .await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    assert_eq!(
        body["message"],
        r#"deployments.apps "d" is forbidden: User "kplane-admin" cannot delete resource "deployments" in API group "apps" in the namespace "y""#
    );
    let (code, body) = send(&app, Method::GET, "/metrics", Some(ADMIN), None).await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    assert_eq!(
        body["message"],
        r#"forbidden: User "kplane-admin" cannot get path "/metrics""#
    );
    // Authentication comes first; public endpoints need neither.
    let (code, _) = send(&app, Method::GET, "/api/v1/namespaces", None, None).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
    let (code, _) = send(&app, Method::GET, "/api/v1/namespaces", Some("nope"), None).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
    let (code, _) = send(&app, Method::GET, "/readyz", None, None).await;
    assert_eq!(code, StatusCode::OK);
}

#[tokio::test]
async fn the_default_policy_allows_the_admin_only() {
    let app = app(Arc::new(UnionAuthorizer::new(vec![Arc::new(
        SuperuserAuthorizer,
    )])))
    .await;
    let (code, body) = send(
        &app,
        Method::GET,
        "/api/v1/namespaces/default/configmaps",
        Some(ADMIN),
        None,
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["kind"], "ConfigMapList");
    let (code, body) = send(
        &app,
        Method::GET,
        "/clusters/*/api/v1/configmaps",
        Some("alice"),
        None,
    )
    .await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    assert_eq!(
        body["message"],
        "configmaps is forbidden: User \"alice\" cannot list resource \"configmaps\" in API group \"\" at the cluster scope"
    );
}

#[tokio::test]
async fn the_authorizer_sees_the_requests_attributes_and_reviews_ask_it() {
    let recorder = Arc::new(Recorder::default());
    let app = app(recorder.clone()).await;
    let (code, _) = send(
        &app,
        Method::GET,
        "/clusters/root/api/v1/namespaces/default/configmaps?watch=0",
        Some(ADMIN),
        None,
    )
    .await;
    assert_eq!(code, StatusCode::OK);
    let (code, body) = send(
        &app,
        Method::GET,
        "/api/v1/namespaces/default/secrets/s",
        Some("alice"),
        None,
    )
    .await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .ends_with(r#"in the namespace "default": secrets are off limits"#),
        "{body}"
    );
    let seen: Vec<(String, RequestInfo)> = recorder.0.lock().unwrap().drain(..).collect();
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert_eq!(seen[0].0, "kplane-admin");
    assert_eq!(seen[0].1.verb, Verb::List);
    assert_eq!(seen[0].1.path, "/api/v1/namespaces/default/configmaps");
    assert_eq!(seen[1].0, "alice");
    assert_eq!(
        (seen[1].1.verb.clone(), seen[1].1.name.as_deref()),
        (Verb::Get, Some("s"))
    );

    // SelfSubjectAccessReview: the reviewer's own user, the spec's attributes.
    let ssar = |resource: &str| {
        json!({
            "apiVersion": "authorization.k8s.io/v1",
            "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": {
                "verb": "list", "resource": resource, "namespace": "default",
            }},
        })
    };
    let uri = "/clusters/root/apis/authorization.k8s.io/v1/selfsubjectaccessreviews";
    let (code, body) = send(
        &app,
        Method::POST,
        uri,
        Some("alice"),
        Some(ssar("secrets")),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    assert_eq!(
        body["status"],
        json!({"allowed": false, "denied": true, "reason": "secrets are off limits"})
    );
    let (_, body) = send(&app, Method::POST, uri, Some("alice"), Some(ssar("pods"))).await;
    assert_eq!(body["status"]["allowed"], true, "{body}");
    let seen: Vec<(String, RequestInfo)> = recorder.0.lock().unwrap().drain(..).collect();
    // Each review request is authorized itself (create selfsubjectaccessreviews), then
    // asks about its spec for the same user.
    let asked: Vec<(&str, &str, &str)> = seen
        .iter()
        .map(|(u, r)| (u.as_str(), r.verb.as_str(), r.resource.as_str()))
        .collect();
    assert_eq!(
        asked,
        [
            ("alice", "create", "selfsubjectaccessreviews"),
            ("alice", "list", "secrets"),
            ("alice", "create", "selfsubjectaccessreviews"),
            ("alice", "list", "pods"),
        ]
    );

    // TokenReview goes through the authenticator.
    let review = |token: &str| {
        json!({
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenReview",
            "spec": {"token": token},
        })
    };
    let uri = "/apis/authentication.k8s.io/v1/tokenreviews";
    let (code, body) = send(&app, Method::POST, uri, Some(ADMIN), Some(review("alice"))).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    assert_eq!(body["status"]["authenticated"], true);
    assert_eq!(body["status"]["user"]["username"], "alice");
    let (_, body) = send(&app, Method::POST, uri, Some(ADMIN), Some(review("bad"))).await;
    assert_eq!(
        body["status"],
        json!({"authenticated": false, "error": "invalid bearer token"})
    );
}

#[tokio::test]
async fn legacy_watch_paths_are_watches() {
    let app = app(Arc::new(SuperuserAuthorizer)).await;
    // A watch answers its head at once; its body streams until the client leaves.
    let resp = app
        .router
        .clone()
        .oneshot(
            Request::builder()
                .uri("/api/v1/watch/namespaces/default/configmaps")
                .header("authorization", format!("Bearer {ADMIN}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let ct = resp.headers()["content-type"].to_str().unwrap().to_string();
    assert!(ct.contains("watch") || ct.contains("json"), "{ct}");
    // Only GET serves a watch.
    let (code, body) = send(
        &app,
        Method::POST,
        "/api/v1/watch/namespaces/default/configmaps",
        Some(ADMIN),
        Some(json!({})),
    )
    .await;
    assert_eq!(code, StatusCode::METHOD_NOT_ALLOWED, "{body}");
    // A HEAD is a `get` to authorization, but is not served.
    let (code, _) = send(
        &app,
        Method::HEAD,
        "/api/v1/namespaces/default/configmaps",
        Some(ADMIN),
        None,
    )
    .await;
    assert_eq!(code, StatusCode::METHOD_NOT_ALLOWED);
}

/// A logical cluster that does not exist is a 404 Status on every path and verb (resources,
/// discovery, OpenAPI), after authentication and authorization; the wildcard and `root`
/// are unaffected; development mode serves it.
#[tokio::test]
async fn unknown_logical_clusters_are_404_on_every_path() {
    let app = app(Arc::new(UnionAuthorizer::new(vec![Arc::new(
        SuperuserAuthorizer,
    )])))
    .await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    let ns = "/clusters/root:nope/api/v1/namespaces/default/configmaps";
    let named = format!("{ns}/c");
    let requests: Vec<(Method, String, Option<Value>)> = vec![
        (Method::GET, ns.into(), None),
        (Method::GET, format!("{ns}?watch=1"), None),
        (Method::GET, named.clone(), None),
        (Method::POST, ns.into(), Some(cm.clone())),
        (Method::PUT, named.clone(), Some(cm.clone())),
        (Method::PATCH, named.clone(), Some(json!({}))),
        (Method::DELETE, named.clone(), None),
        (Method::DELETE, ns.into(), None),
        (
            Method::GET,
            "/clusters/root:nope/api/v1/configmaps".into(),
            None,
        ),
        (Method::GET, "/clusters/root:nope/api".into(), None),
        (Method::GET, "/clusters/root:nope/api/v1".into(), None),
        (Method::GET, "/clusters/root:nope/apis".into(), None),
        (Method::GET, "/clusters/root:nope/apis/apps/v1".into(), None),
        (Method::GET, "/clusters/root:nope/openapi/v2".into(), None),
        (Method::GET, "/clusters/root:nope/openapi/v3".into(), None),
        (
            Method::GET,
            "/clusters/root:nope/openapi/v3/api/v1".into(),
            None,
        ),
        (
            Method::POST,
            "/clusters/root:nope/apis/authorization.k8s.io/v1/selfsubjectaccessreviews".into(),
            Some(
                json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
                        "spec": {"resourceAttributes": {"verb": "list", "resource": "pods"}}}),
            ),
        ),
    ];
    for (method, uri, body) in &requests {
        let (code, status) = send(&app, method.clone(), uri, Some(ADMIN), body.clone()).await;
        assert_eq!(code, StatusCode::NOT_FOUND, "{method} {uri}: {status}");
        assert_eq!(status["kind"], "Status", "{method} {uri}");
        assert_eq!(status["status"], "Failure");
        assert_eq!(status["reason"], "NotFound");
        assert_eq!(status["code"], 404);
        assert_eq!(
            status["message"], "logical cluster \"root:nope\" does not exist",
            "{method} {uri}"
        );
    }
    // Nothing was written into it.
    let keys = app
        .registry
        .storage_for_tests()
        .count(&kplane_storage::Prefix::cluster("root:nope"))
        .await
        .unwrap();
    assert_eq!(keys, 0);
    // Who may not ask learns nothing about existence.
    let (code, _) = send(&app, Method::GET, ns, None, None).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
    let (code, _) = send(&app, Method::GET, ns, Some("alice"), None).await;
    assert_eq!(code, StatusCode::FORBIDDEN);
    // `root`, with and without the prefix, and the wildcard answer.
    for uri in [
        "/clusters/root/api/v1/namespaces/default/configmaps",
        "/api/v1/namespaces/default/configmaps",
        "/clusters/*/api/v1/configmaps",
        "/clusters/root/api",
    ] {
        let (code, body) = send(&app, Method::GET, uri, Some(ADMIN), None).await;
        assert_eq!(code, StatusCode::OK, "{uri}: {body}");
    }
    // A cluster that exists answers.
    let acme = kplane_types::ClusterName::parse("root:acme").unwrap();
    app.registry.ensure_cluster(&acme).await.unwrap();
    let (code, body) = send(
        &app,
        Method::POST,
        "/clusters/root:acme/api/v1/namespaces/default/configmaps",
        Some(ADMIN),
        Some(cm.clone()),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED, "{body}");

    // Development mode: the unknown cluster answers, and its first write creates it.
    app.registry.logical_clusters().set_auto_create(true);
    let (code, body) = send(&app, Method::GET, ns, Some(ADMIN), None).await;
    assert_eq!(code, StatusCode::OK, "{body}");
    assert_eq!(body["items"], json!([]));
    let (code, body) = send(&app, Method::POST, ns, Some(ADMIN), Some(cm)).await;
    assert_eq!(code, StatusCode::CREATED, "{body}");
    app.registry.logical_clusters().set_auto_create(false);
    let (code, body) = send(&app, Method::GET, &named, Some(ADMIN), None).await;
    assert_eq!(code, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn anonymous_requests_and_impersonation_through_the_router() {
    let recorder = Arc::new(Recorder::default());
    let app = app(recorder.clone()).await;
    // Without credentials: the public endpoints only; they are not authorized.
    let (code, body) = send(&app, Method::GET, "/clusters/root/api", None, None).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
    assert_eq!(
        body,
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": "Unauthorized", "reason": "Unauthorized", "code": 401})
    );
    let (code, _) = send(&app, Method::GET, "/clusters/root/livez", None, None).await;
    assert_eq!(code, StatusCode::OK);
    let (code, _) = send(&app, Method::GET, "/version", None, None).await;
    assert_eq!(code, StatusCode::OK);
    // An unknown token is refused even where anonymous requests are served.
    let (code, _) = send(&app, Method::GET, "/healthz", Some("nope"), None).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
    assert!(recorder.0.lock().unwrap().is_empty());

    // Alice impersonates bob: `impersonate` is asked for alice, the request for bob.
    let req = Request::builder()
        .uri("/clusters/root/api/v1/namespaces/default/configmaps")
        .header("authorization", "Bearer alice")
        .header("impersonate-user", "bob")
        .header("impersonate-group", "qa")
        .body(Body::empty())
        .unwrap();
    let resp = app.router.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let seen: Vec<(String, RequestInfo)> = recorder.0.lock().unwrap().drain(..).collect();
    let asked: Vec<(&str, &str, &str)> = seen
        .iter()
        .map(|(u, r)| (u.as_str(), r.verb.as_str(), r.resource.as_str()))
        .collect();
    assert_eq!(
        asked,
        [
            ("alice", "impersonate", "users"),
            ("alice", "impersonate", "groups"),
            ("bob", "list", "configmaps"),
        ]
    );
}

#[tokio::test]
async fn without_anonymous_requests_every_path_needs_credentials() {
    let app = app_with(
        Arc::new(Tokens(AdminTokenAuthenticator::new(ADMIN.into()))),
        |_| Arc::new(SuperuserAuthorizer),
        false,
        &[],
    )
    .await;
    let (code, _) = send(&app, Method::GET, "/healthz", None, None).await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
    let (code, _) = send(&app, Method::GET, "/healthz", Some(ADMIN), None).await;
    assert_eq!(code, StatusCode::OK);
}

#[tokio::test]
async fn an_invalid_timeout_is_a_400_before_authentication_except_on_watches() {
    let app = app_with(
        Arc::new(Tokens(AdminTokenAuthenticator::new(ADMIN.into()))),
        |_| Arc::new(SuperuserAuthorizer),
        false,
        &["root"],
    )
    .await;
    let want = r#"invalid timeout specified in the request URL - time: invalid duration "invalid""#;
    // Without credentials too: the deadline filter runs before authentication.
    for (uri, token) in [
        ("/version?timeout=invalid", None),
        (
            "/api/v1/namespaces/default/configmaps?timeout=invalid",
            Some(ADMIN),
        ),
        (
            "/api/v1/namespaces/default/configmaps/x?timeout=invalid",
            Some(ADMIN),
        ),
    ] {
        let (code, body) = send(&app, Method::GET, uri, token, None).await;
        assert_eq!(code, StatusCode::BAD_REQUEST, "{uri}");
        assert_eq!(body["reason"], "BadRequest", "{uri}");
        assert_eq!(body["message"], want, "{uri}");
    }
    let (code, body) = send(
        &app,
        Method::POST,
        "/api/v1/namespaces/default/configmaps?timeout=5",
        Some(ADMIN),
        Some(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}})),
    )
    .await;
    assert_eq!(code, StatusCode::BAD_REQUEST);
    assert_eq!(
        body["message"],
        r#"invalid timeout specified in the request URL - time: missing unit in duration "5""#
    );
    // Valid values (over the maximum, or 0s) are served.
    for t in ["3m", "0s"] {
        let uri = format!("/api/v1/namespaces/default/configmaps?timeout={t}");
        let (code, _) = send(&app, Method::GET, &uri, Some(ADMIN), None).await;
        assert_eq!(code, StatusCode::OK, "{t}");
    }
    // A watch is long-running: the parameter is not read.
    let req = Request::get(
        "/api/v1/namespaces/default/configmaps?watch=true&timeout=invalid&timeoutSeconds=1",
    )
    .header("authorization", format!("Bearer {ADMIN}"))
    .body(Body::empty())
    .unwrap();
    let resp = app.router.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
}

#[tokio::test]
async fn a_watch_list_is_never_a_table() {
    let app = app(Arc::new(SuperuserAuthorizer)).await;
    let table = "application/json;as=Table;v=v1;g=meta.k8s.io";
    let watch_list = "/api/v1/namespaces/default/secrets?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1";
    let get = |uri: &str, accept: &str| {
        Request::get(uri)
            .header("authorization", format!("Bearer {ADMIN}"))
            .header("accept", accept)
            .body(Body::empty())
            .unwrap()
    };
    let resp = app
        .router
        .clone()
        .oneshot(get(watch_list, table))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_ACCEPTABLE);
    let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap();
    let body: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(body["reason"], "NotAcceptable");
    assert_eq!(
        body["message"],
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
    );
    // With JSON accepted too, the stream is JSON.
    let resp = app
        .router
        .clone()
        .oneshot(get(watch_list, &format!("{table},application/json")))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.headers()["content-type"], "application/json");
    // An ordinary watch (no initial events) still serves Tables.
    for uri in [
        "/api/v1/namespaces/default/secrets?watch=true&timeoutSeconds=1",
        "/api/v1/namespaces/default/secrets?watch=true&allowWatchBookmarks=true&timeoutSeconds=1",
    ] {
        let resp = app.router.clone().oneshot(get(uri, table)).await.unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{uri}");
    }
}

/// Splits a protobuf watch body into its events (type, decoded object).
fn protobuf_events(mut body: &[u8]) -> Vec<(String, Value)> {
    let mut out = Vec::new();
    while body.len() >= 4 {
        let len = u32::from_be_bytes([body[0], body[1], body[2], body[3]]) as usize;
        let (event, rest) = body[4..].split_at(len);
        body = rest;
        // WatchEvent { type = 1; object = 2 { raw = 1 } }: the fields in this order.
        let (ty, object) = read_len_field(event, 1);
        let (raw_ext, _) = read_len_field(object, 2);
        let (raw, _) = read_len_field(raw_ext, 1);
        out.push((
            String::from_utf8(ty.to_vec()).unwrap(),
            kplane_protobuf::decode(raw).unwrap(),
        ));
    }
    assert!(body.is_empty(), "a partial frame is left");
    out
}

/// Reads a length-delimited field `tag` (one-byte tag, varint length) at the start of
/// `b`: its bytes and the rest.
fn read_len_field(b: &[u8], tag: u8) -> (&[u8], &[u8]) {
    assert_eq!(b[0], tag << 3 | 2);
    let (mut len, mut i, mut shift) = (0usize, 1, 0);
    loop {
        len |= ((b[i] & 0x7f) as usize) << shift;
        i += 1;
        if b[i - 1] < 0x80 {
            break;
        }
        shift += 7;
    }
    b[i..].split_at(len)
}

#[tokio::test]
async fn protobuf_watches_as_client_go_asks_for_them() {
    let app = app(Arc::new(SuperuserAuthorizer)).await;
    let (code, _) = send(
        &app,
        Method::POST,
        "/api/v1/namespaces/default/configmaps",
        Some(ADMIN),
        Some(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": "v"}})),
    )
    .await;
    assert_eq!(code, StatusCode::CREATED);
    let watch = |uri: &str, accept: &str| {
        Request::get(uri)
            .header("authorization", format!("Bearer {ADMIN}"))
            .header("accept", accept)
            .body(Body::empty())
            .unwrap()
    };
    let uri = "/api/v1/namespaces/default/configmaps?watch=true&resourceVersion=0&allowWatchBookmarks=true&timeoutSeconds=1";
    for accept in [
        "application/vnd.kubernetes.protobuf",
        "application/vnd.kubernetes.protobuf;stream=watch",
        "application/vnd.kubernetes.protobuf,application/json",
    ] {
        let resp = app
            .router
            .clone()
            .oneshot(watch(uri, accept))
            .await
            .unwrap();
        assert_eq!(resp.status(), StatusCode::OK, "{accept}");
        assert_eq!(
            resp.headers()["content-type"],
            "application/vnd.kubernetes.protobuf;stream=watch",
            "{accept}"
        );
        let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap();
        let events = protobuf_events(&body);
        let (ty, obj) = &events[0];
        assert_eq!(ty, "ADDED", "{accept}");
        assert_eq!(obj["kind"], "ConfigMap");
        assert_eq!(obj["metadata"]["name"], "a");
        assert_eq!(obj["data"]["k"], "v");
    }
    // JSON first: JSON.
    let resp = app
        .router
        .clone()
        .oneshot(watch(
            uri,
            "application/json,application/vnd.kubernetes.protobuf",
        ))
        .await
        .unwrap();
    assert_eq!(resp.headers()["content-type"], "application/json");
    // kplane's own kinds, like custom resources, have no protobuf.
    let resp = app
        .router
        .clone()
        .oneshot(watch(
            "/apis/tenancy.kplane.io/v1alpha1/workspaces?watch=true&timeoutSeconds=1",
            "application/vnd.kubernetes.protobuf",
        ))
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::NOT_ACCEPTABLE);
}

/// client-go's typed clients send protobuf bodies for every built-in kind, admission
/// policies and webhook configurations included (upstream's "should support
/// ValidatingAdmissionPolicy API operations"): they are decoded and stored as their JSON.
#[tokio::test]
async fn admission_configuration_bodies_in_protobuf_are_accepted() {
    let app = app(Arc::new(SuperuserAuthorizer)).await;
    let objects = [
        (
            "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
            json!({"apiVersion": "admissionregistration.k8s.io/v1",
                   "kind": "ValidatingAdmissionPolicy", "metadata": {"name": "p"},
                   "spec": {
                       "matchConstraints": {"resourceRules": [{
                           "operations": ["CREATE"], "apiGroups": [""],
                           "apiVersions": ["v1"], "resources": ["configmaps"]}]},
                       "variables": [{"name": "n", "expression": "object.metadata.name"}],
                       "validations": [{"expression": "variables.n != 'forbidden'"}]}}),
        ),
        (
            "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
            json!({"apiVersion": "admissionregistration.k8s.io/v1",
                   "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": "b"},
                   "spec": {"policyName": "p", "validationActions": ["Deny"]}}),
        ),
        (
            "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations",
            json!({"apiVersion": "admissionregistration.k8s.io/v1",
                   "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "w"},
                   "webhooks": [{"name": "w.example.com",
                       "clientConfig": {"url": "https://127.0.0.1:1/validate"},
                       "rules": [{"operations": ["CREATE"], "apiGroups": ["example.com"],
                                  "apiVersions": ["v1"], "resources": ["things"]}],
                       "sideEffects": "None", "admissionReviewVersions": ["v1"]}]}),
        ),
    ];
    for (uri, obj) in objects {
        let body = kplane_protobuf::encode(&obj).unwrap();
        let req = Request::post(uri)
            .header("authorization", format!("Bearer {ADMIN}"))
            .header("content-type", "application/vnd.kubernetes.protobuf")
            .header("accept", "application/json")
            .body(Body::from(body))
            .unwrap();
        let resp = app.router.clone().oneshot(req).await.unwrap();
        let code = resp.status();
        let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap();
        assert_eq!(
            code,
            StatusCode::CREATED,
            "{uri}: {}",
            String::from_utf8_lossy(&body)
        );
        let stored: Value = serde_json::from_slice(&body).unwrap();
        assert_eq!(stored["kind"], obj["kind"]);
    }
    let (code, policy) = send(
        &app,
        Method::GET,
        "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies/p",
        Some(ADMIN),
        None,
    )
    .await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(
        policy["spec"]["matchConstraints"]["resourceRules"][0]["resources"],
        json!(["configmaps"])
    );
    assert_eq!(policy["spec"]["variables"][0]["name"], "n");
    let (code, hooks) = send(
        &app,
        Method::GET,
        "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/w",
        Some(ADMIN),
        None,
    )
    .await;
    assert_eq!(code, StatusCode::OK);
    assert_eq!(
        hooks["webhooks"][0]["clientConfig"]["url"],
        "https://127.0.0.1:1/validate"
    );
}

/// The request's warnings travel with every response, a refusal's too
/// (`WithWarningRecorder`): an unknown field under `fieldValidation=Warn` is a `Warning`
/// header of the 422 that the invalid name gets, and of a success.
#[tokio::test]
async fn warnings_are_sent_with_refusals_too() {
    let app = app(Arc::new(Recorder::default())).await;
    let post = |name: &str| {
        let body = json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name}, "bogus": 1});
        Request::builder()
            .method(Method::POST)
            .uri("/api/v1/namespaces/default/configmaps?fieldValidation=Warn")
            .header("authorization", format!("Bearer {ADMIN}"))
            .header("content-type", "application/json")
            .body(Body::from(body.to_string()))
            .unwrap()
    };
    for (name, code) in [("Bad_Name", 422), ("good", 201)] {
        let resp = app.router.clone().oneshot(post(name)).await.unwrap();
        assert_eq!(resp.status().as_u16(), code, "{name}");
        let warnings: Vec<_> = resp
            .headers()
            .get_all("warning")
            .iter()
            .map(|v| v.to_str().unwrap().to_string())
            .collect();
        assert_eq!(warnings, [r#"299 - "unknown field \"bogus\"""#], "{name}");
    }
}

#[tokio::test]
async fn a_panicking_handler_answers_kube_apiservers_500_and_the_server_goes_on() {
    let app = app(Arc::new(Recorder::default())).await;
    let req = Request::builder()
        .uri(format!("/clusters/root{}", super::chain::PANIC_PATH))
        .header("authorization", format!("Bearer {ADMIN}"))
        .body(Body::empty())
        .unwrap();
    let resp = app.router.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::INTERNAL_SERVER_ERROR);
    assert_eq!(resp.headers()["content-type"], "text/plain; charset=utf-8");
    assert_eq!(resp.headers()["x-content-type-options"], "nosniff");
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap();
    assert_eq!(
        &bytes[..],
        b"This request caused apiserver to panic. Look in the logs for details.\n"
    );
    let (code, body) = send(
        &app,
        Method::GET,
        "/clusters/root/api/v1/namespaces/default/configmaps",
        Some(ADMIN),
        None,
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{body}");
}
