//! The request limits through the whole router (no socket): the query-string and selector
//! limits answer a Status before authentication, a LIST `limit` above the page maximum is
//! served as the maximum with a continue token, and each is counted in
//! `kplane_limit_refusals_total`.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use serde_json::{json, Value};
use tower::ServiceExt;

use super::auth::AdminTokenAuthenticator;
use super::authz::SuperuserAuthorizer;
use super::router_tests::{app_with_limits, send, App, Tokens, ADMIN};
use crate::limits::Limits;

/// The page maximum the tests use, with more ConfigMaps than ten pages of it.
const MAX_PAGE: usize = 3;

async fn app(limits: Limits) -> App {
    app_with_limits(
        Arc::new(Tokens(AdminTokenAuthenticator::new(ADMIN.into()))),
        |_| Arc::new(SuperuserAuthorizer),
        true,
        &["root"],
        limits,
    )
    .await
}

/// `kplane_limit_refusals_total{limit="<limit>"}` from `/metrics`.
async fn refusals(app: &App, limit: &str) -> u64 {
    let req = Request::builder()
        .uri("/metrics")
        .header("authorization", format!("Bearer {ADMIN}"))
        .body(Body::empty())
        .unwrap();
    let resp = app.router.clone().oneshot(req).await.unwrap();
    let bytes = axum::body::to_bytes(resp.into_body(), usize::MAX)
        .await
        .unwrap();
    let text = String::from_utf8(bytes.to_vec()).unwrap();
    let prefix = format!("kplane_limit_refusals_total{{limit=\"{limit}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&prefix))
        .unwrap_or_else(|| panic!("no {limit} counter in {text}"))
        .parse()
        .unwrap()
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_limit_above_the_page_maximum_is_served_as_the_maximum_with_a_continue_token() {
    let app = app(Limits {
        max_list_page: MAX_PAGE,
        ..Limits::default()
    })
    .await;
    let uri = "/api/v1/namespaces/default/configmaps";
    // kube-root-ca.crt is there already: 10 pages and one more object in all.
    for i in 0..10 * MAX_PAGE {
        let cm = json!({"metadata": {"name": format!("cm-{i:03}")}});
        let (code, body) = send(&app, Method::POST, uri, Some(ADMIN), Some(cm)).await;
        assert_eq!(code, StatusCode::CREATED, "{body}");
    }
    let (_, all) = send(&app, Method::GET, uri, Some(ADMIN), None).await;
    let all = names(&all);
    assert_eq!(
        all.len(),
        10 * MAX_PAGE + 1,
        "a list without limit is whole"
    );
    assert_eq!(refusals(&app, "max_list_page").await, 0);

    for (limit, clamped) in [
        (MAX_PAGE - 1, false),
        (MAX_PAGE, false),
        (MAX_PAGE + 1, true),
        (10 * MAX_PAGE, true),
        (100 * MAX_PAGE, true),
    ] {
        let before = refusals(&app, "max_list_page").await;
        let (code, page) = send(
            &app,
            Method::GET,
            &format!("{uri}?limit={limit}"),
            Some(ADMIN),
            None,
        )
        .await;
        assert_eq!(code, StatusCode::OK, "{page}");
        let got = names(&page);
        assert_eq!(got, all[..limit.min(MAX_PAGE)], "limit={limit}");
        assert!(page["metadata"]["continue"]
            .as_str()
            .is_some_and(|c| !c.is_empty()));
        assert_eq!(
            refusals(&app, "max_list_page").await - before,
            u64::from(clamped)
        );
    }

    // Following the continue tokens of clamped pages walks the whole list.
    let mut walked = Vec::new();
    let mut next = format!("{uri}?limit={}", 10 * MAX_PAGE);
    loop {
        let (_, page) = send(&app, Method::GET, &next, Some(ADMIN), None).await;
        walked.extend(names(&page));
        match page["metadata"]["continue"].as_str() {
            Some(c) if !c.is_empty() => {
                next = format!("{uri}?limit={}&continue={c}", 10 * MAX_PAGE)
            }
            _ => break,
        }
    }
    assert_eq!(walked, all);
}

#[tokio::test]
async fn query_and_selector_limits_answer_a_status_before_authentication() {
    let app = app(Limits::default()).await;
    let long = format!("/api/v1/namespaces?x={}", "a".repeat(40 * 1024));
    let (code, status) = send(&app, Method::GET, &long, None, None).await;
    assert_eq!(code, StatusCode::URI_TOO_LONG, "{status}");
    assert_eq!(status["kind"], "Status");
    assert_eq!(status["code"], 414);
    assert_eq!(refusals(&app, "max_query_length").await, 1);

    let selector: Vec<String> = (0..101).map(|i| format!("k{i}=v")).collect();
    let uri = format!("/api/v1/configmaps?labelSelector={}", selector.join(","));
    let (code, status) = send(&app, Method::GET, &uri, None, None).await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{status}");
    assert_eq!(
        status["message"],
        "labelSelector has 101 requirements, more than the limit of 100"
    );
    assert_eq!(refusals(&app, "selector_complexity").await, 1);

    // At the limit the request goes on (here to the admin's list).
    let uri = format!(
        "/api/v1/configmaps?labelSelector={}",
        selector[..100].join(",")
    );
    let (code, body) = send(&app, Method::GET, &uri, Some(ADMIN), None).await;
    assert_eq!(code, StatusCode::OK, "{body}");
}

#[tokio::test]
async fn the_sync_endpoint_applies_the_selector_limit_too() {
    let app = app(Limits::default()).await;
    let selector: Vec<String> = (0..101).map(|i| format!("k{i}=v")).collect();
    let uri = format!(
        "/services/sync/root/east/clusters/*/apis/batch/v1/jobs?labelSelector={}",
        selector.join(",")
    );
    let (code, status) = send(&app, Method::GET, &uri, None, None).await;
    assert_eq!(code, StatusCode::BAD_REQUEST, "{status}");
    assert_eq!(
        status["message"],
        "labelSelector has 101 requirements, more than the limit of 100"
    );
    assert_eq!(refusals(&app, "selector_complexity").await, 1);
}
