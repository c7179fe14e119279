//! `/version`, `/healthz`, `/livez`, `/readyz`: what monitoring and kubectl ask first.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

/// `/version`: the body built once from the server's [`crate::BuildInfo`]. kubectl's
/// version dispatcher picks its own minor from it, so it says 1.32.
pub fn version(body: &str) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Health endpoints: `ok`, or the verbose check list.
pub fn check(path: &str, query: Option<&str>, ready: bool) -> Response {
    let (name, checks): (&str, &[&str]) = match path.trim_end_matches('/') {
        p if p.starts_with("/livez") => ("livez", &["ping", "log", "storage"]),
        p if p.starts_with("/readyz") => (
            "readyz",
            &["ping", "log", "storage", "bootstrap-namespaces"],
        ),
        _ => ("healthz", &["ping", "log", "storage"]),
    };
    let failing = name == "readyz" && !ready;
    if let Some(single) = path.trim_end_matches('/').split('/').nth(2) {
        if !checks.contains(&single) {
            return (StatusCode::NOT_FOUND, "404 page not found\n").into_response();
        }
        let ok = !(failing && single == "bootstrap-namespaces");
        let code = if ok {
            StatusCode::OK
        } else {
            StatusCode::INTERNAL_SERVER_ERROR
        };
        return (
            code,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            if ok { "ok" } else { "not ready" },
        )
            .into_response();
    }
    let verbose = query.is_some_and(|q| {
        q.split('&')
            .any(|p| p == "verbose" || p.starts_with("verbose="))
    });
    let code = if failing {
        StatusCode::INTERNAL_SERVER_ERROR
    } else {
        StatusCode::OK
    };
    let body = if verbose {
        let mut s = String::new();
        for c in checks {
            if failing && *c == "bootstrap-namespaces" {
                s.push_str(&format!("[-]{c} failed: not finished\n"));
            } else {
                s.push_str(&format!("[+]{c} ok\n"));
            }
        }
        s.push_str(&format!(
            "{name} check {}\n",
            if failing { "failed" } else { "passed" }
        ));
        s
    } else if failing {
        format!("[-]bootstrap-namespaces failed: not finished\n{name} check failed\n")
    } else {
        "ok".to_string()
    };
    (
        code,
        [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
        body,
    )
        .into_response()
}
