//! The move's endpoints through the whole router: fence, the 429s of a fenced cluster,
//! the change stream, the moved state's 410 and their authorization as nonResourceURLs.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use kplane_archive::ChangeReader;
use serde_json::json;
use tower::ServiceExt;

use super::auth::AdminTokenAuthenticator;
use super::authz::{Authorizer, SuperuserAuthorizer};
use super::router_tests::{app_with, send};

const ADMIN: &str = "admin-token";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fence_changes_and_moved_through_the_router() {
    let app = app_with(
        Arc::new(AdminTokenAuthenticator::new(ADMIN.into())),
        |_| Arc::new(SuperuserAuthorizer) as Arc<dyn Authorizer>,
        false,
        &["root", "root:a"],
    )
    .await;
    let cms = "/clusters/root:a/api/v1/namespaces/default/configmaps";
    let cm = |n: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n}});
    let (code, _) = send(&app, Method::POST, cms, Some(ADMIN), Some(cm("one"))).await;
    assert_eq!(code, StatusCode::CREATED);
    let since = app.registry.storage_for_tests().current_revision();
    let (code, _) = send(&app, Method::POST, cms, Some(ADMIN), Some(cm("two"))).await;
    assert_eq!(code, StatusCode::CREATED);

    // Only a superuser (here) may: without credentials it is a 401.
    let (code, _) = send(
        &app,
        Method::POST,
        "/clusters/root:a/kplane/v1/fence",
        None,
        None,
    )
    .await;
    assert_eq!(code, StatusCode::UNAUTHORIZED);
    let (code, _) = send(
        &app,
        Method::GET,
        "/clusters/root:a/kplane/v1/fence",
        Some(ADMIN),
        None,
    )
    .await;
    assert_eq!(code, StatusCode::METHOD_NOT_ALLOWED);
    let (code, body) = send(
        &app,
        Method::POST,
        "/clusters/root:a/kplane/v1/fence",
        Some(ADMIN),
        None,
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    let fence = body["revision"].as_u64().unwrap();
    let (code, body) = send(
        &app,
        Method::GET,
        "/clusters/root:a/kplane/v1/state",
        Some(ADMIN),
        None,
    )
    .await;
    assert_eq!(
        (code, body["state"].as_str()),
        (StatusCode::OK, Some("Fenced"))
    );

    // A write is a 429 with Retry-After; reads work.
    let req = Request::post(cms)
        .header("authorization", format!("Bearer {ADMIN}"))
        .header("content-type", "application/json")
        .body(Body::from(cm("three").to_string()))
        .unwrap();
    let resp = app.router.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(resp.headers()["retry-after"], "1");
    let (code, body) = send(&app, Method::GET, cms, Some(ADMIN), None).await;
    assert_eq!(code, StatusCode::OK);
    let names: Vec<&str> = body["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert!(
        names.contains(&"two") && !names.contains(&"three"),
        "{names:?}"
    );

    // The change stream: "two" only, complete through the fence.
    let uri = format!("/clusters/root:a/kplane/v1/changes?since={since}&until={fence}");
    let req = Request::get(uri)
        .header("authorization", format!("Bearer {ADMIN}"))
        .body(Body::empty())
        .unwrap();
    let resp = app.router.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(
        resp.headers()["content-type"],
        kplane_archive::CHANGES_CONTENT_TYPE
    );
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap();
    let mut r = ChangeReader::open(&bytes[..]).unwrap();
    let c = r.next().unwrap().unwrap();
    assert_eq!((c.record.name.as_str(), c.delete), ("two", false));
    assert!(r.next().unwrap().is_none());
    assert_eq!(r.through(), Some(fence));
    let (code, _) = send(
        &app,
        Method::GET,
        "/clusters/root:a/kplane/v1/changes?since=x",
        Some(ADMIN),
        None,
    )
    .await;
    assert_eq!(code, StatusCode::BAD_REQUEST);

    // Moved: every request is a 410 naming the new location.
    let to = "https://other.example:6443/clusters/root:b";
    let (code, body) = send(
        &app,
        Method::POST,
        &format!("/clusters/root:a/kplane/v1/moved?to={to}"),
        Some(ADMIN),
        None,
    )
    .await;
    assert_eq!(code, StatusCode::OK, "{body}");
    for (method, uri) in [
        (Method::GET, cms.to_string()),
        (Method::GET, "/clusters/root:a/api".to_string()),
        (Method::GET, "/clusters/root:a/kplane/v1/state".to_string()),
        (Method::POST, cms.to_string()),
    ] {
        let (code, body) = send(&app, method, &uri, Some(ADMIN), Some(cm("x"))).await;
        assert_eq!(code, StatusCode::GONE, "{uri}");
        assert_eq!(body["reason"], "Gone");
        assert_eq!(
            body["message"],
            format!("logical cluster \"root:a\" has moved to {to}")
        );
        assert_eq!(body["details"]["causes"][0]["message"], to);
    }
}
