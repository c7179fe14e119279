//! The sync endpoint through the whole router (no socket), with the server's authorizer
//! chain (superusers, then RBAC): a ServiceAccount granted `sync` on `synctargets/east`
//! reaches exactly east's objects and what they reference, and nothing else, neither
//! through the endpoint nor through the ordinary API.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use kplane_registry::options::WriteParams;
use serde_json::{json, Value};
use tower::ServiceExt;

use super::auth::AdminTokenAuthenticator;
use super::authz::{RbacAuthorizer, SuperuserAuthorizer, UnionAuthorizer};
use super::rbac_tests::Users;
use super::router_tests::{app_with, App};

const ADMIN: &str = "admin-token";
/// The syncer's credential: a ServiceAccount token bound to root:acme.
const SYNCER: &str = "sa:root:acme/default/syncer";
const EAST: &str = "/services/sync/root:acme/east";

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
        &["root", "root:acme", "root:acme:team", "root:other"],
    )
    .await
}

/// Sends a request with a body of `content_type`; answers the status and the body (JSON,
/// or the text as a JSON string when it is not JSON, e.g. a watch stream).
async fn call(
    app: &App,
    method: Method,
    uri: &str,
    token: Option<&str>,
    body: Option<(&str, Value)>,
) -> (StatusCode, Value) {
    let mut req = Request::builder().method(method).uri(uri);
    if let Some(t) = token {
        req = req.header("authorization", format!("Bearer {t}"));
    }
    let body = match body {
        Some((ct, b)) => {
            req = req.header("content-type", ct);
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
    let v = serde_json::from_slice(&bytes)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()));
    (status, v)
}

async fn get(app: &App, uri: &str, token: &str) -> (StatusCode, Value) {
    call(app, Method::GET, uri, Some(token), None).await
}

async fn admin_post(app: &App, uri: &str, body: Value) -> Value {
    let (s, b) = call(
        app,
        Method::POST,
        uri,
        Some(ADMIN),
        Some(("application/json", body)),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{uri}: {b}");
    b
}

fn job(name: &str, target: Option<&str>, pod: Value) -> Value {
    let mut spec =
        json!({"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]});
    if let (Some(s), Some(extra)) = (spec.as_object_mut(), pod.as_object()) {
        for (k, v) in extra {
            s.insert(k.clone(), v.clone());
        }
    }
    let mut j = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {"template": {"spec": spec}}});
    if let Some(t) = target {
        j["metadata"]["annotations"] = json!({"sync.kplane.io/target": t});
    }
    j
}

fn jobs_of(cluster: &str) -> String {
    format!("/clusters/{cluster}/apis/batch/v1/namespaces/default/jobs")
}

/// SyncTargets east and west in root:acme (east over its descendants too), east's `sync`
/// granted to the syncer's ServiceAccount, and Jobs assigned to east, to west and to none.
async fn setup(app: &App) {
    let st = "/clusters/root:acme/apis/sync.kplane.io/v1alpha1/synctargets";
    admin_post(
        app,
        st,
        json!({"apiVersion": "sync.kplane.io/v1alpha1", "kind": "SyncTarget",
            "metadata": {"name": "east"}, "spec": {"includeDescendants": true}}),
    )
    .await;
    admin_post(
        app,
        st,
        json!({"apiVersion": "sync.kplane.io/v1alpha1", "kind": "SyncTarget",
            "metadata": {"name": "west"}}),
    )
    .await;
    let rbac = "/clusters/root:acme/apis/rbac.authorization.k8s.io/v1";
    admin_post(
        app,
        &format!("{rbac}/clusterroles"),
        json!({"metadata": {"name": "sync-east"}, "rules": [{"apiGroups": ["sync.kplane.io"],
            "resources": ["synctargets"], "resourceNames": ["east"], "verbs": ["sync"]}]}),
    )
    .await;
    admin_post(
        app,
        &format!("{rbac}/clusterrolebindings"),
        json!({"metadata": {"name": "sync-east"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "sync-east"},
            "subjects": [{"kind": "ServiceAccount", "name": "syncer", "namespace": "default"}]}),
    )
    .await;
    let pod = json!({"serviceAccountName": "runner",
        "volumes": [{"name": "v", "secret": {"secretName": "creds"}}]});
    admin_post(
        app,
        &jobs_of("root:acme"),
        job("a1", Some("root:acme/east"), pod),
    )
    .await;
    admin_post(
        app,
        &jobs_of("root:acme:team"),
        job("t1", Some("root:acme/east"), json!({})),
    )
    .await;
    admin_post(
        app,
        &jobs_of("root:acme"),
        job(
            "w1",
            Some("root:acme/west"),
            json!({"volumes": [{"name": "v", "secret": {"secretName": "west-creds"}}]}),
        ),
    )
    .await;
    admin_post(app, &jobs_of("root:other"), job("o1", None, json!({}))).await;
    for (cluster, name) in [
        ("root:acme", "creds"),
        ("root:acme", "west-creds"),
        ("root:acme", "lonely"),
    ] {
        admin_post(
            app,
            &format!("/clusters/{cluster}/api/v1/namespaces/default/secrets"),
            json!({"metadata": {"name": name}, "stringData": {"k": name}}),
        )
        .await;
    }
}

fn names(list: &Value) -> Vec<String> {
    let mut n: Vec<String> = list["items"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|i| i["metadata"]["name"].as_str().unwrap_or("").to_string())
                .collect()
        })
        .unwrap_or_default();
    n.sort();
    n
}

#[tokio::test]
async fn a_granted_service_account_reaches_its_targets_objects_only() {
    let app = app().await;
    setup(&app).await;
    let jobs = format!("{EAST}/clusters/*/apis/batch/v1/jobs");

    // East's Jobs across root:acme and its descendant, each naming its cluster.
    let (s, list) = get(&app, &jobs, SYNCER).await;
    assert_eq!(s, StatusCode::OK, "{list}");
    assert_eq!(names(&list), ["a1", "t1"]);
    let clusters: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            i["metadata"]["annotations"]["kplane.io/cluster"]
                .as_str()
                .unwrap()
        })
        .collect();
    assert!(clusters.contains(&"root:acme") && clusters.contains(&"root:acme:team"));

    // 401 without credentials; 403 without the grant, and for another target.
    let (s, _) = call(&app, Method::GET, &jobs, None, None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    let (s, b) = get(&app, &jobs, "user:mallory").await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    assert_eq!(
        b["message"],
        r#"synctargets.sync.kplane.io "east" is forbidden: User "mallory" cannot sync resource "synctargets" in API group "sync.kplane.io" at the cluster scope"#
    );
    let (s, b) = get(
        &app,
        "/services/sync/root:acme/west/clusters/*/apis/batch/v1/jobs",
        SYNCER,
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{b}");
    // A token bound to another cluster is refused too.
    let (s, _) = get(&app, &jobs, "sa:root:other/default/syncer").await;
    assert_eq!(s, StatusCode::FORBIDDEN);

    // 404 for everything outside the allowlist or not assigned / not referenced.
    let acme = format!("{EAST}/clusters/root:acme");
    for uri in [
        format!("{EAST}/clusters/*/api/v1/secrets"),
        format!("{acme}/api/v1/namespaces/default/secrets"),
        format!("{acme}/api/v1/namespaces/default/secrets/lonely"),
        format!("{acme}/api/v1/namespaces/default/secrets/west-creds"),
        format!("{acme}/apis/batch/v1/namespaces/default/jobs/w1"),
        format!("{acme}/apis/batch/v1/namespaces/default/jobs/nope"),
        format!("{EAST}/clusters/root:other/apis/batch/v1/namespaces/default/jobs/o1"),
        format!("{acme}/api/v1/namespaces/default/configmaps"),
        format!("{acme}/apis"),
        format!("{acme}/apis/sync.kplane.io/v1alpha1/synctargets/west"),
        "/services/sync/root:acme/nosuch/clusters/*/apis/batch/v1/jobs".to_string(),
    ] {
        let (s, b) = get(
            &app,
            &uri,
            if uri.contains("nosuch") {
                ADMIN
            } else {
                SYNCER
            },
        )
        .await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{uri}: {b}");
        assert_eq!(b["kind"], "Status", "{uri}");
    }

    // Reads: an assigned Job (also in a descendant), what it references, the target.
    for uri in [
        format!("{acme}/apis/batch/v1/namespaces/default/jobs/a1"),
        format!("{EAST}/clusters/root:acme:team/apis/batch/v1/namespaces/default/jobs/t1"),
        format!("{acme}/api/v1/namespaces/default/secrets/creds"),
        format!("{acme}/apis/sync.kplane.io/v1alpha1/synctargets/east"),
        format!("{EAST}/version"),
    ] {
        let (s, b) = get(&app, &uri, SYNCER).await;
        assert_eq!(s, StatusCode::OK, "{uri}: {b}");
    }
    // Methods an allowed path does not serve: 405.
    let (s, _) = call(
        &app,
        Method::DELETE,
        &format!("{acme}/apis/batch/v1/namespaces/default/jobs/a1"),
        Some(SYNCER),
        None,
    )
    .await;
    assert_eq!(s, StatusCode::METHOD_NOT_ALLOWED);

    // The same credential on the ordinary API: 403 (its RBAC grants nothing else).
    for uri in [
        jobs_of("root:acme"),
        format!("{}/a1", jobs_of("root:acme")),
        "/clusters/root:acme/api/v1/namespaces/default/secrets/creds".to_string(),
        "/clusters/root:acme/apis/sync.kplane.io/v1alpha1/synctargets/east".to_string(),
    ] {
        let (s, b) = get(&app, &uri, SYNCER).await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{uri}: {b}");
    }
}

#[tokio::test]
async fn the_syncer_writes_status_and_its_finalizer_but_not_the_spec() {
    let app = app().await;
    setup(&app).await;
    let a1 = format!("{EAST}/clusters/root:acme/apis/batch/v1/namespaces/default/jobs/a1");
    let merge = "application/merge-patch+json";
    // Status.
    let (s, b) = call(
        &app,
        Method::PATCH,
        &format!("{a1}/status"),
        Some(SYNCER),
        Some((merge, json!({"status": {"active": 1}}))),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(b["status"]["active"], 1);
    // Its finalizer, added and removed.
    for f in [json!(["sync.kplane.io/syncer"]), json!([])] {
        let (s, b) = call(
            &app,
            Method::PATCH,
            &a1,
            Some(SYNCER),
            Some((merge, json!({"metadata": {"finalizers": f}}))),
        )
        .await;
        assert_eq!(s, StatusCode::OK, "{b}");
    }
    // The spec, a label, the assignment: refused, naming the field.
    for (patch, field) in [
        (json!({"spec": {"suspend": true}}), "spec"),
        (
            json!({"metadata": {"labels": {"x": "y"}}}),
            "metadata.labels",
        ),
        (
            json!({"metadata": {"annotations": {"sync.kplane.io/target": "root:acme/west"}}}),
            "metadata.annotations",
        ),
    ] {
        let (s, b) = call(&app, Method::PATCH, &a1, Some(SYNCER), Some((merge, patch))).await;
        assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{field}: {b}");
        assert!(b["message"].as_str().unwrap().contains(field), "{b}");
    }
    // A PUT of the whole object with a changed spec too.
    let (_, mut obj) = get(&app, &a1, SYNCER).await;
    obj["spec"]["parallelism"] = json!(3);
    let (s, b) = call(
        &app,
        Method::PUT,
        &a1,
        Some(SYNCER),
        Some(("application/json", obj)),
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
    let (_, stored) = get(&app, &format!("{}/a1", jobs_of("root:acme")), ADMIN).await;
    assert_eq!(stored["spec"]["parallelism"], 1, "{stored}");
    assert_eq!(stored["status"]["active"], 1);

    // The heartbeat: the target's status.
    let st = format!("{EAST}/clusters/root:acme/apis/sync.kplane.io/v1alpha1/synctargets/east");
    let (s, b) = call(
        &app,
        Method::PATCH,
        &format!("{st}/status"),
        Some(SYNCER),
        Some((
            merge,
            json!({"status": {"syncerIdentity": "pod-1", "syncedObjects": 2}}),
        )),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(b["status"]["syncedObjects"], 2);
    let (s, _) = call(
        &app,
        Method::PATCH,
        &st,
        Some(SYNCER),
        Some((merge, json!({"spec": {"includeDescendants": false}}))),
    )
    .await;
    assert_eq!(s, StatusCode::METHOD_NOT_ALLOWED);

    // The Lease: its own name only.
    let leases = format!(
        "{EAST}/clusters/root:acme/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
    );
    let lease = |name: &str| {
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name}, "spec": {"holderIdentity": "pod-1"}})
    };
    let (s, b) = call(
        &app,
        Method::POST,
        &leases,
        Some(SYNCER),
        Some(("application/json", lease("other"))),
    )
    .await;
    assert_eq!(s, StatusCode::FORBIDDEN, "{b}");
    let (s, b) = call(
        &app,
        Method::POST,
        &leases,
        Some(SYNCER),
        Some(("application/json", lease("kplane-syncer-east"))),
    )
    .await;
    assert_eq!(s, StatusCode::CREATED, "{b}");
    let (s, b) = call(
        &app,
        Method::PATCH,
        &format!("{leases}/kplane-syncer-east"),
        Some(SYNCER),
        Some((merge, json!({"spec": {"holderIdentity": "pod-2"}}))),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(b["spec"]["holderIdentity"], "pod-2");
}

#[tokio::test]
async fn watches_resume_and_lists_page_over_1201_assigned_jobs() {
    let app = app().await;
    setup(&app).await;
    let jobs = format!("{EAST}/clusters/*/apis/batch/v1/jobs");
    let (_, list) = get(&app, &jobs, SYNCER).await;
    let rv = list["metadata"]["resourceVersion"]
        .as_str()
        .unwrap()
        .to_string();

    // After the list: one new assigned Job, one unassigned, one moved away from east.
    let reg = &app.registry;
    let target = |cluster: &str| {
        let rt = reg
            .builtin_catalog()
            .get("batch", "v1", "jobs")
            .unwrap()
            .clone();
        kplane_registry::Target::new(
            &kplane_types::ClusterName::parse(cluster).unwrap(),
            rt,
            Some("default".into()),
        )
    };
    let w = WriteParams::default();
    let acme = target("root:acme");
    reg.create(&acme, job("late", Some("root:acme/east"), json!({})), &w)
        .await
        .unwrap();
    reg.create(&target("root:other"), job("o2", None, json!({})), &w)
        .await
        .unwrap();
    reg.patch(
        &target("root:acme:team"),
        "t1",
        None,
        kplane_registry::patch::PatchType::Merge,
        kplane_registry::patch::Document {
            value: json!({"metadata": {"annotations": {"sync.kplane.io/target": "root:acme/west"}}}),
            duplicates: vec![],
        },
        &w,
    )
    .await
    .unwrap();
    // A watch resumed from the list's resourceVersion sees exactly those of east's.
    let (s, body) = get(
        &app,
        &format!("{jobs}?watch=true&resourceVersion={rv}&timeoutSeconds=1"),
        SYNCER,
    )
    .await;
    assert_eq!(s, StatusCode::OK);
    let events: Vec<(String, String)> = body
        .as_str()
        .unwrap()
        .lines()
        .map(|l| {
            let e: Value = serde_json::from_str(l).unwrap();
            (
                e["type"].as_str().unwrap().to_string(),
                e["object"]["metadata"]["name"]
                    .as_str()
                    .unwrap()
                    .to_string(),
            )
        })
        .collect();
    assert_eq!(
        events,
        [
            ("ADDED".into(), "late".into()),
            ("DELETED".into(), "t1".into())
        ]
    );

    // 1,201 more assigned Jobs (and others between them), read in pages of 500.
    let mut objs = Vec::new();
    for i in 0..1201 {
        objs.push(job(&format!("p{i:05}"), Some("root:acme/east"), json!({})));
        if i % 4 == 0 {
            objs.push(job(&format!("q{i:05}"), Some("root:acme/west"), json!({})));
        }
    }
    for chunk in objs.chunks(128) {
        let creates = chunk.iter().map(|o| reg.create(&acme, o.clone(), &w));
        for r in futures::future::join_all(creates).await {
            r.unwrap();
        }
    }
    let mut seen = Vec::new();
    let mut next = format!("{jobs}?limit=500");
    loop {
        let (s, page) = get(&app, &next, SYNCER).await;
        assert_eq!(s, StatusCode::OK, "{page}");
        let items = names(&page);
        assert!(items.len() <= 500);
        seen.extend(items);
        match page["metadata"]["continue"].as_str() {
            Some(c) if !c.is_empty() => next = format!("{jobs}?limit=500&continue={c}"),
            _ => break,
        }
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 1201 + 2, "a1, late and the p jobs");
    assert!(seen
        .iter()
        .all(|n| n.starts_with('p') || n == "a1" || n == "late"));
}

#[tokio::test]
async fn a_target_of_a_custom_resource_serves_it_and_its_references() {
    let app = app().await;
    admin_post(
        &app,
        "/clusters/root:acme/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "runners.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "runners", "singular": "runner", "kind": "Runner"},
                "versions": [{"name": "v1", "served": true, "storage": true,
                    "subresources": {"status": {}},
                    "schema": {"openAPIV3Schema": {"type": "object",
                        "x-kubernetes-preserve-unknown-fields": true}}}]}}),
    )
    .await;
    admin_post(
        &app,
        "/clusters/root:acme/apis/sync.kplane.io/v1alpha1/synctargets",
        json!({"apiVersion": "sync.kplane.io/v1alpha1", "kind": "SyncTarget",
            "metadata": {"name": "runs"},
            "spec": {"resources": [{"group": "example.com", "version": "v1", "resource": "runners"}]}}),
    )
    .await;
    admin_post(
        &app,
        "/clusters/root:acme/apis/example.com/v1/namespaces/default/runners",
        json!({"apiVersion": "example.com/v1", "kind": "Runner", "metadata": {"name": "r1"},
            "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox",
                "envFrom": [{"configMapRef": {"name": "r1-config"}}]}]}}}}),
    )
    .await;
    admin_post(
        &app,
        "/clusters/root:acme/api/v1/namespaces/default/configmaps",
        json!({"metadata": {"name": "r1-config"}, "data": {"k": "v"}}),
    )
    .await;
    let base = "/services/sync/root:acme/runs";
    // The admin (a superuser, so allowed `sync`) sees what the target's identity sees.
    let (s, list) = get(
        &app,
        &format!("{base}/clusters/*/apis/example.com/v1/runners"),
        ADMIN,
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{list}");
    assert_eq!(names(&list), ["r1"], "assigned by SyncAssignment: {list}");
    assert_eq!(
        list["items"][0]["metadata"]["annotations"]["sync.kplane.io/target"],
        "root:acme/runs"
    );
    let (s, _) = get(
        &app,
        &format!("{base}/clusters/*/apis/batch/v1/jobs"),
        ADMIN,
    )
    .await;
    assert_eq!(
        s,
        StatusCode::NOT_FOUND,
        "Jobs are not this target's resources"
    );
    let (s, cm) = get(
        &app,
        &format!("{base}/clusters/root:acme/api/v1/namespaces/default/configmaps/r1-config"),
        ADMIN,
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{cm}");
    let (s, b) = call(
        &app,
        Method::PATCH,
        &format!(
            "{base}/clusters/root:acme/apis/example.com/v1/namespaces/default/runners/r1/status"
        ),
        Some(ADMIN),
        Some((
            "application/merge-patch+json",
            json!({"status": {"phase": "Running"}}),
        )),
    )
    .await;
    assert_eq!(s, StatusCode::OK, "{b}");
    assert_eq!(b["status"]["phase"], "Running");
    let (s, b) = call(
        &app,
        Method::PATCH,
        &format!("{base}/clusters/root:acme/apis/example.com/v1/namespaces/default/runners/r1"),
        Some(ADMIN),
        Some(("application/merge-patch+json", json!({"spec": {"x": 1}}))),
    )
    .await;
    assert_eq!(s, StatusCode::UNPROCESSABLE_ENTITY, "{b}");
}
