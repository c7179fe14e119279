//! The audit policy against kube-apiserver's semantics, the events' shape, rotation and the
//! bounded queue.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;

use axum::http::Method;
use kplane_types::{RequestInfo, UserInfo};
use serde_json::{json, Value};

use super::policy::{Attributes, Level, Policy, Stage};
use super::sink::{backup_name, LogConfig, RotatingFile, Sink};
use super::*;
use crate::http::request_info;

fn info(method: &Method, uri: &str) -> RequestInfo {
    let (path, query) = uri
        .split_once('?')
        .map_or((uri, None), |(p, q)| (p, Some(q)));
    let target = request_info::parse(path).unwrap();
    request_info::request_info(method, &target, query)
}

fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        username: name.into(),
        uid: String::new(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        extra: Default::default(),
    }
}

fn policy(rules: &str) -> Policy {
    Policy::parse(&format!(
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n{rules}"
    ))
    .unwrap()
}

/// Each case: a policy's rules, the user (none: unauthenticated), the request, and the
/// level kube-apiserver's policy checker chooses.
#[test]
fn policy_rules_match_as_upstream() {
    use Level::*;
    let alice = Some(user("alice", &["devs", "system:authenticated"]));
    let bob = Some(user("bob", &["system:authenticated"]));
    let anon: Option<UserInfo> = Option::None;
    let get = Method::GET;
    let post = Method::POST;
    #[rustfmt::skip]
    let cases: Vec<(&str, Option<UserInfo>, &Method, &str, Level)> = vec![
        // An empty rule matches everything, unauthenticated requests too.
        ("- level: Metadata", alice.clone(), &get, "/api/v1/pods", Metadata),
        ("- level: Metadata", anon.clone(), &get, "/version", Metadata),
        // No matching rule: None.
        ("- level: Metadata\n  users: [carol]", alice.clone(), &get, "/api/v1/pods", None),
        // users / userGroups.
        ("- level: Request\n  users: [alice]", alice.clone(), &get, "/api/v1/pods", Request),
        ("- level: Request\n  users: [alice]", bob.clone(), &get, "/api/v1/pods", None),
        ("- level: Request\n  users: [alice]", anon.clone(), &get, "/api/v1/pods", None),
        ("- level: Request\n  userGroups: [devs]", alice.clone(), &get, "/api/v1/pods", Request),
        ("- level: Request\n  userGroups: [devs]", bob.clone(), &get, "/api/v1/pods", None),
        ("- level: Request\n  userGroups: [system:unauthenticated]", anon.clone(), &get, "/version", None),
        // verbs: Kubernetes verbs, not HTTP methods.
        ("- level: Metadata\n  verbs: [list]", alice.clone(), &get, "/api/v1/namespaces/a/pods", Metadata),
        ("- level: Metadata\n  verbs: [get]", alice.clone(), &get, "/api/v1/namespaces/a/pods", None),
        ("- level: Metadata\n  verbs: [watch]", alice.clone(), &get, "/api/v1/namespaces/a/pods?watch=true", Metadata),
        ("- level: Metadata\n  verbs: [create]", alice.clone(), &post, "/api/v1/namespaces/a/pods", Metadata),
        ("- level: Metadata\n  verbs: [get]", alice.clone(), &get, "/version", Metadata),
        // resources: group, resource, subresources, wildcards, names.
        ("- level: Metadata\n  resources: [{group: '', resources: [pods]}]", alice.clone(), &get, "/api/v1/namespaces/a/pods/p", Metadata),
        ("- level: Metadata\n  resources: [{group: '', resources: [pods]}]", alice.clone(), &get, "/apis/apps/v1/namespaces/a/deployments", None),
        ("- level: Metadata\n  resources: [{group: apps}]", alice.clone(), &get, "/apis/apps/v1/namespaces/a/deployments", Metadata),
        ("- level: Metadata\n  resources: [{group: apps}]", alice.clone(), &get, "/api/v1/namespaces/a/pods", None),
        ("- level: Metadata\n  resources: [{group: '', resources: [pods]}]", alice.clone(), &get, "/api/v1/namespaces/a/pods/p/log", None),
        ("- level: Metadata\n  resources: [{group: '', resources: [pods/log]}]", alice.clone(), &get, "/api/v1/namespaces/a/pods/p/log", Metadata),
        ("- level: Metadata\n  resources: [{group: '', resources: [pods/log]}]", alice.clone(), &get, "/api/v1/namespaces/a/pods/p", None),
        ("- level: Metadata\n  resources: [{group: '', resources: ['pods/*']}]", alice.clone(), &get, "/api/v1/namespaces/a/pods/p/status", Metadata),
        ("- level: Metadata\n  resources: [{group: '', resources: ['pods/*']}]", alice.clone(), &get, "/api/v1/namespaces/a/pods/p", Metadata),
        ("- level: Metadata\n  resources: [{group: '', resources: ['*/status']}]", alice.clone(), &get, "/api/v1/namespaces/a/pods/p/status", Metadata),
        ("- level: Metadata\n  resources: [{group: '', resources: ['*/status']}]", alice.clone(), &get, "/api/v1/namespaces/a/pods/p", None),
        ("- level: Metadata\n  resources: [{group: '', resources: ['*']}]", alice.clone(), &get, "/api/v1/namespaces/a/pods/p/log", Metadata),
        ("- level: Metadata\n  resources: [{group: '', resources: ['*']}]", alice.clone(), &get, "/apis/apps/v1/deployments", None),
        ("- level: Metadata\n  resources: [{group: '', resources: [configmaps], resourceNames: [c1]}]", alice.clone(), &get, "/api/v1/namespaces/a/configmaps/c1", Metadata),
        ("- level: Metadata\n  resources: [{group: '', resources: [configmaps], resourceNames: [c1]}]", alice.clone(), &get, "/api/v1/namespaces/a/configmaps/c2", None),
        ("- level: Metadata\n  resources: [{group: '', resources: [configmaps], resourceNames: [c1]}]", alice.clone(), &get, "/api/v1/namespaces/a/configmaps", None),
        // Resource rules never match non-resource requests.
        ("- level: Metadata\n  resources: [{group: ''}]", alice.clone(), &get, "/version", None),
        // namespaces: "" is the cluster scope; a Namespace object is in its own namespace.
        ("- level: Metadata\n  namespaces: [a]", alice.clone(), &get, "/api/v1/namespaces/a/configmaps", Metadata),
        ("- level: Metadata\n  namespaces: [a]", alice.clone(), &get, "/api/v1/namespaces/b/configmaps", None),
        ("- level: Metadata\n  namespaces: [a]", alice.clone(), &get, "/api/v1/namespaces/a", Metadata),
        ("- level: Metadata\n  namespaces: ['']", alice.clone(), &get, "/api/v1/nodes", Metadata),
        ("- level: Metadata\n  namespaces: ['']", alice.clone(), &get, "/api/v1/namespaces/a/pods", None),
        ("- level: Metadata\n  namespaces: [a]", alice.clone(), &get, "/healthz", None),
        // nonResourceURLs: exact, trailing-* prefix, *; never a resource request.
        ("- level: Metadata\n  nonResourceURLs: [/version]", alice.clone(), &get, "/version", Metadata),
        ("- level: Metadata\n  nonResourceURLs: [/version]", alice.clone(), &get, "/versions", None),
        ("- level: Metadata\n  nonResourceURLs: ['/healthz*']", alice.clone(), &get, "/healthz/ping", Metadata),
        ("- level: Metadata\n  nonResourceURLs: ['/healthz*']", alice.clone(), &get, "/healthz", Metadata),
        ("- level: Metadata\n  nonResourceURLs: ['/apis*']", alice.clone(), &get, "/apis/apps/v1/deployments", None),
        ("- level: Metadata\n  nonResourceURLs: ['*']", alice.clone(), &get, "/openapi/v2", Metadata),
        ("- level: Metadata\n  nonResourceURLs: ['*']", alice.clone(), &get, "/api/v1/pods", None),
        // The logical cluster prefix is not part of the path rules see.
        ("- level: Metadata\n  nonResourceURLs: [/version]", alice.clone(), &get, "/clusters/root:a/version", Metadata),
        // First matching rule wins.
        ("- level: None\n  users: [alice]\n- level: RequestResponse", alice.clone(), &get, "/api/v1/pods", None),
        ("- level: None\n  users: [alice]\n- level: RequestResponse", bob.clone(), &get, "/api/v1/pods", RequestResponse),
        ("- level: Request\n  verbs: [create]\n- level: Metadata", alice.clone(), &post, "/api/v1/namespaces/a/configmaps", Request),
        ("- level: Request\n  verbs: [create]\n- level: Metadata", alice.clone(), &get, "/api/v1/namespaces/a/configmaps", Metadata),
        // All of a rule's selectors must match.
        ("- level: Metadata\n  users: [alice]\n  verbs: [get]\n  resources: [{group: '', resources: [secrets]}]", alice.clone(), &get, "/api/v1/namespaces/a/secrets/s", Metadata),
        ("- level: Metadata\n  users: [alice]\n  verbs: [get]\n  resources: [{group: '', resources: [secrets]}]", alice.clone(), &get, "/api/v1/namespaces/a/secrets", None),
        ("- level: Metadata\n  users: [bob]\n  verbs: [get]\n  resources: [{group: '', resources: [secrets]}]", alice.clone(), &get, "/api/v1/namespaces/a/secrets/s", None),
    ];
    for (i, (rules, u, method, uri, want)) in cases.into_iter().enumerate() {
        let p = policy(rules);
        let req = info(method, uri);
        let got = p
            .evaluate(&Attributes {
                user: u.as_ref(),
                request: &req,
            })
            .level;
        assert_eq!(got, want, "case {i}: {rules:?} {method} {uri}");
    }
}

#[test]
fn stages_and_managed_fields_combine_as_upstream() {
    let p = Policy::parse(
        "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [RequestReceived]\nomitManagedFields: true\nrules:\n- level: Metadata\n  users: [a]\n  omitStages: [ResponseStarted]\n  omitManagedFields: false\n- level: Request\n",
    )
    .unwrap();
    let req = info(&Method::GET, "/api/v1/pods");
    let a = user("a", &[]);
    let d = p.evaluate(&Attributes {
        user: Some(&a),
        request: &req,
    });
    assert!(!d.records(Stage::RequestReceived));
    assert!(!d.records(Stage::ResponseStarted));
    assert!(d.records(Stage::ResponseComplete));
    assert!(!d.omit_managed_fields);
    let b = user("b", &[]);
    let d = p.evaluate(&Attributes {
        user: Some(&b),
        request: &req,
    });
    assert_eq!(d.level, Level::Request);
    assert!(d.omit_managed_fields);
    assert!(!d.records(Stage::RequestReceived));
    assert!(d.records(Stage::ResponseStarted));
}

#[test]
fn invalid_policies_are_refused() {
    let bad = [
        ("kind: Policy\nrules:\n- level: Metadata", "apiVersion"),
        ("apiVersion: audit.k8s.io/v1\nkind: Other\nrules:\n- level: Metadata", "kind"),
        ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []", "no rules"),
        ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything", "invalid"),
        ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- users: [a]", "invalid"),
        ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  omitStages: [Later]", "invalid"),
        ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  nonResourceURLs: [/a]\n  namespaces: [b]", "both"),
        ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  nonResourceURLs: [a]", "must start"),
        ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  nonResourceURLs: ['/a*b']", "only allowed at the end"),
        ("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  resources: [{group: '', resources: ['*'], resourceNames: [x]}]", "resourceNames"),
    ];
    for (text, want) in bad {
        let e = Policy::parse(text).unwrap_err();
        assert!(e.contains(want), "{text:?}: {e}");
    }
    // JSON is YAML too; unknown fields are ignored as upstream's decoder does.
    Policy::parse(
        r#"{"apiVersion":"audit.k8s.io/v1","kind":"Policy","rules":[{"level":"None","extra":1}]}"#,
    )
    .unwrap();
}

fn auditor_to(dir: &std::path::Path, rules: &str) -> Arc<Auditor> {
    let sink = Sink::start(LogConfig {
        path: dir.join("audit.log"),
        ..Default::default()
    })
    .unwrap();
    Arc::new(Auditor::new(policy(rules), sink))
}

fn close_and_read(auditor: Arc<Auditor>, dir: &std::path::Path) -> Vec<Value> {
    Arc::try_unwrap(auditor).unwrap().close();
    std::fs::read_to_string(dir.join("audit.log"))
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn request(uri: &str) -> axum::http::Request<Body> {
    axum::http::Request::builder()
        .uri(uri)
        .header("user-agent", "kubectl/v1.32.0")
        .header("x-forwarded-for", "10.0.0.1, 10.0.0.2")
        .body(Body::empty())
        .unwrap()
}

#[tokio::test]
async fn a_metadata_event_has_upstreams_shape() {
    let dir = tempfile::tempdir().unwrap();
    let auditor = auditor_to(dir.path(), "- level: Metadata");
    let uri = "/clusters/root:org/api/v1/namespaces/default/configmaps/c1?timeout=32s";
    let req = request(uri);
    let ri = info(&Method::GET, uri);
    let mut t = auditor.begin(&req, Some("127.0.0.1".parse().unwrap()));
    let id = t.id().to_string();
    t.authenticated(&user("alice", &["system:authenticated"]), &ri);
    t.impersonating(&user("bob", &["devs"]));
    t.authorized(true, "RBAC: allowed by RoleBinding \"x/default\"");
    let resp = axum::response::IntoResponse::into_response("{}");
    let resp = t.finish(&ri, resp).await;
    assert_eq!(resp.headers()["audit-id"], id.as_str());
    let events = close_and_read(auditor, dir.path());
    assert_eq!(events.len(), 2, "{events:?}");
    assert_eq!(events[0]["stage"], "RequestReceived");
    assert!(events[0].get("responseStatus").is_none());
    assert!(events[0]
        .get("annotations")
        .unwrap()
        .get(DECISION_ANNOTATION)
        .is_none());
    let mut e = events[1].clone();
    for k in ["requestReceivedTimestamp", "stageTimestamp"] {
        let ts = e[k].as_str().unwrap().to_string();
        // Microsecond RFC 3339 in UTC.
        assert_eq!(ts.len(), "2026-11-24T08:00:00.000000Z".len(), "{ts}");
        assert!(chrono::DateTime::parse_from_rfc3339(&ts).is_ok(), "{ts}");
        e[k] = json!("T");
    }
    assert_eq!(
        e,
        json!({
            "kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata",
            "auditID": id, "stage": "ResponseComplete", "requestURI": uri, "verb": "get",
            "user": {"username": "alice", "groups": ["system:authenticated"]},
            "impersonatedUser": {"username": "bob", "groups": ["devs"]},
            "sourceIPs": ["10.0.0.1", "10.0.0.2", "127.0.0.1"],
            "userAgent": "kubectl/v1.32.0",
            "objectRef": {"resource": "configmaps", "namespace": "default", "name": "c1",
                          "apiVersion": "v1"},
            "responseStatus": {"metadata": {}, "code": 200},
            "requestReceivedTimestamp": "T", "stageTimestamp": "T",
            "annotations": {
                "kplane.io/cluster": "root:org",
                "authorization.k8s.io/decision": "allow",
                "authorization.k8s.io/reason": "RBAC: allowed by RoleBinding \"x/default\"",
            },
        })
    );
}

#[tokio::test]
async fn failures_unauthenticated_requests_and_request_objects() {
    let dir = tempfile::tempdir().unwrap();
    let auditor = auditor_to(
        dir.path(),
        "- level: None\n  users: [quiet]\n- level: RequestResponse\n  omitStages: [RequestReceived]",
    );
    // A 403 carries the Status's reason and message.
    let uri = "/api/v1/namespaces/default/secrets";
    let ri = info(&Method::GET, uri);
    let mut t = auditor.begin(&request(uri), None);
    t.authenticated(&user("alice", &[]), &ri);
    t.authorized(false, "");
    let forbidden = crate::http::authz::forbidden(&user("alice", &[]), &ri, "");
    let resp = crate::http::error::StatusResponse::into_response(
        kplane_registry::error::ApiError::from(forbidden),
    );
    t.finish(&ri, resp).await;
    // A request that failed authentication: one ResponseStarted event, no user.
    let t = auditor.begin(&request("/api"), None);
    let resp = crate::http::auth::unauthorized();
    t.finish(&info(&Method::GET, "/api"), resp).await;
    // A silenced user writes nothing.
    let mut t = auditor.begin(&request(uri), None);
    t.authenticated(&user("quiet", &[]), &ri);
    t.finish(&ri, axum::response::IntoResponse::into_response(""))
        .await;
    // A create at RequestResponse records both objects, managed fields included.
    let uri = "/api/v1/namespaces/default/configmaps";
    let ri = info(&Method::POST, uri);
    let mut t = auditor.begin(&request(uri), None);
    t.authenticated(&user("alice", &[]), &ri);
    let body = json!({"kind": "ConfigMap", "metadata": {"name": "c"}});
    let req = axum::http::Request::builder()
        .method("POST")
        .uri(uri)
        .header("content-type", "application/json")
        .header("content-length", body.to_string().len())
        .body(Body::from(body.to_string()))
        .unwrap();
    let req = keep_request_body(&mut t, req).await;
    let echoed = axum::body::to_bytes(req.into_body(), 1 << 20)
        .await
        .unwrap();
    assert_eq!(
        echoed,
        body.to_string().as_bytes(),
        "the handler gets the same body"
    );
    let mut resp = axum::response::IntoResponse::into_response(
        json!({"kind": "ConfigMap", "metadata": {"name": "c", "uid": "u"}}).to_string(),
    );
    resp.headers_mut().insert(
        axum::http::header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    let resp = t.finish(&ri, resp).await;
    let sent = axum::body::to_bytes(resp.into_body(), 1 << 20)
        .await
        .unwrap();
    assert!(String::from_utf8_lossy(&sent).contains("\"uid\":\"u\""));

    let events = close_and_read(auditor, dir.path());
    assert_eq!(events.len(), 3, "{events:#?}");
    let e = &events[0];
    assert_eq!(e["stage"], "ResponseComplete");
    assert_eq!(e["responseStatus"]["code"], 403);
    assert_eq!(e["responseStatus"]["reason"], "Forbidden");
    assert_eq!(e["responseStatus"]["status"], "Failure");
    assert!(e["responseStatus"]["message"]
        .as_str()
        .unwrap()
        .contains("cannot list resource \"secrets\""));
    assert_eq!(e["annotations"][DECISION_ANNOTATION], "forbid");
    assert!(e.get("responseObject").is_some(), "the 403's Status body");
    let e = &events[1];
    assert_eq!(e["stage"], "ResponseStarted");
    assert_eq!(e["responseStatus"]["code"], 401);
    assert_eq!(e["user"], json!({}));
    assert_eq!(e["annotations"]["kplane.io/cluster"], "root");
    let e = &events[2];
    assert_eq!(e["verb"], "create");
    assert_eq!(e["objectRef"]["name"], "c", "completed from the body");
    assert_eq!(e["requestObject"], body);
    assert_eq!(e["responseObject"]["metadata"]["uid"], "u");
}

#[tokio::test]
async fn a_watch_writes_response_started_then_complete_when_its_body_ends() {
    let dir = tempfile::tempdir().unwrap();
    let auditor = auditor_to(
        dir.path(),
        "- level: Metadata\n  omitStages: [RequestReceived]",
    );
    let uri = "/api/v1/namespaces/default/configmaps?watch=true";
    let ri = info(&Method::GET, uri);
    let mut t = auditor.begin(&request(uri), None);
    t.authenticated(&user("alice", &[]), &ri);
    let resp = t
        .finish(&ri, axum::response::IntoResponse::into_response("{}"))
        .await;
    let body = axum::body::to_bytes(resp.into_body(), 1024).await.unwrap();
    assert_eq!(&body[..], b"{}");
    let events = close_and_read(auditor, dir.path());
    let stages: Vec<&str> = events
        .iter()
        .map(|e| e["stage"].as_str().unwrap())
        .collect();
    assert_eq!(stages, ["ResponseStarted", "ResponseComplete"]);
    assert_eq!(events[0]["auditID"], events[1]["auditID"]);
}

#[test]
fn a_full_queue_drops_and_counts() {
    let (sink, _rx) = Sink::undrained(100);
    let auditor = Arc::new(Auditor::new(policy("- level: Metadata"), sink));
    let uri = "/api/v1/namespaces/default/configmaps";
    let ri = info(&Method::GET, uri);
    for _ in 0..250 {
        let mut t = auditor.begin(&request(uri), None);
        t.authenticated(&user("alice", &[]), &ri);
    }
    let mut text = String::new();
    auditor.render_metrics(&mut text);
    assert!(
        text.contains("\napiserver_audit_event_total 250\n"),
        "{text}"
    );
    assert!(
        text.contains("\napiserver_audit_error_total{plugin=\"log\"} 150\n"),
        "{text}"
    );
}

#[test]
fn the_log_rotates_like_lumberjack() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.log");
    // An old backup beyond the age limit, and a file of another name.
    let old = backup_name(&path, chrono::Utc::now() - chrono::Duration::days(10));
    std::fs::write(&old, "old\n").unwrap();
    std::fs::write(dir.path().join("other.log"), "x\n").unwrap();
    let mut f = RotatingFile::open(&LogConfig {
        path: path.clone(),
        max_size_mb: 1,
        max_backups: 3,
        max_age_days: 7,
    })
    .unwrap();
    f.set_max_size_bytes(100);
    let line = [b'x'; 39];
    let mut line = line.to_vec();
    line.push(b'\n');
    // 40-byte lines, 2 per file: 20 lines make 10 files, of which 1 current + 3 backups stay.
    for _ in 0..20 {
        f.write_line(&line).unwrap();
    }
    f.flush().unwrap();
    let mut names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names.len(), 5, "{names:?}");
    assert!(names.contains(&"audit.log".to_string()));
    assert!(names.contains(&"other.log".to_string()));
    assert!(!old.exists(), "the backup older than maxage was removed");
    for n in names.iter().filter(|n| n.starts_with("audit-")) {
        // audit-2026-11-24T08-00-00.000.log
        let time = n
            .strip_prefix("audit-")
            .unwrap()
            .strip_suffix(".log")
            .unwrap();
        assert!(
            chrono::NaiveDateTime::parse_from_str(time, "%Y-%m-%dT%H-%M-%S%.3f").is_ok(),
            "{n}"
        );
        assert_eq!(std::fs::read(dir.path().join(n)).unwrap().len(), 80, "{n}");
    }
    assert_eq!(std::fs::read(&path).unwrap().len(), 80);
    assert_eq!(
        backup_name(
            std::path::Path::new("/var/log/audit.log"),
            chrono::DateTime::parse_from_rfc3339("2026-11-24T08:00:00Z")
                .unwrap()
                .with_timezone(&chrono::Utc)
        ),
        std::path::Path::new("/var/log/audit-2026-11-24T08-00-00.000.log")
    );
}

#[test]
fn the_queue_is_bounded_by_bytes_too() {
    let (sink, rx) = Sink::undrained(1000);
    let event = |weight: usize| event::Event {
        weight,
        kind: "Event",
        api_version: "audit.k8s.io/v1",
        level: "RequestResponse",
        audit_id: String::new(),
        stage: "ResponseComplete",
        request_uri: String::new(),
        verb: String::new(),
        user: Default::default(),
        impersonated_user: None,
        source_ips: vec![],
        user_agent: String::new(),
        object_ref: None,
        response_status: None,
        request_object: None,
        response_object: None,
        request_received_timestamp: String::new(),
        stage_timestamp: String::new(),
        annotations: Default::default(),
    };
    let big = sink::QUEUE_BYTES / 2 + 1;
    sink.send(event(big));
    sink.send(event(big));
    sink.send(event(1024));
    let c = &sink.counters;
    assert_eq!(c.events.load(std::sync::atomic::Ordering::Relaxed), 3);
    assert_eq!(c.errors.load(std::sync::atomic::Ordering::Relaxed), 1);
    assert_eq!(rx.try_iter().count(), 2);
}
