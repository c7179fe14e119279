//! `/version`, `/healthz`, `/livez`, `/readyz`: what monitoring and kubectl ask first.

use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};

use crate::health_metrics::HealthChecks;

/// `/version`: the body built once from the server's [`crate::BuildInfo`]. kubectl's
/// version dispatcher picks its own minor from it, so it says 1.32.
pub fn version(body: &str) -> Response {
    (
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Health endpoints: `ok`, or the verbose check list. `ready`: the start-up work is done
/// (`/readyz` only); `storage`: the store's own verdict ([`kplane_storage::Storage::health`]).
/// As kube-apiserver: a failing check makes the answer 500 with every check listed and the
/// failing one's reason withheld (it is logged; the endpoints are public), and a single
/// check (`/livez/storage`) gives its reason. Each check of a whole list is recorded in
/// `slis` (`/metrics/slis`).
pub fn check(
    path: &str,
    query: Option<&str>,
    ready: bool,
    storage: Result<(), String>,
    slis: &HealthChecks,
) -> Response {
    let (name, checks): (&str, &[&str]) = match path.trim_end_matches('/') {
        p if p.starts_with("/livez") => ("livez", &["ping", "log", "storage"]),
        p if p.starts_with("/readyz") => (
            "readyz",
            &["ping", "log", "storage", "bootstrap-namespaces"],
        ),
        _ => ("healthz", &["ping", "log", "storage"]),
    };
    let verdict = |c: &str| -> Result<(), String> {
        match c {
            "storage" => storage.clone(),
            "bootstrap-namespaces" if !ready => Err("not finished".to_string()),
            _ => Ok(()),
        }
    };
    let text = |code: StatusCode, body: String| {
        (
            code,
            [(header::CONTENT_TYPE, "text/plain; charset=utf-8")],
            body,
        )
            .into_response()
    };
    if let Some(single) = path.trim_end_matches('/').split('/').nth(2) {
        if !checks.contains(&single) {
            return (StatusCode::NOT_FOUND, "404 page not found\n").into_response();
        }
        return match verdict(single) {
            Ok(()) => text(StatusCode::OK, "ok".to_string()),
            Err(e) => text(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("internal server error: {e}\n"),
            ),
        };
    }
    let verbose = query.is_some_and(|q| {
        q.split('&')
            .any(|p| p == "verbose" || p.starts_with("verbose="))
    });
    let mut lines = String::new();
    let mut failed = Vec::new();
    for c in checks {
        let v = verdict(c);
        slis.observe(name, c, v.is_ok());
        match v {
            Ok(()) => lines.push_str(&format!("[+]{c} ok\n")),
            Err(e) => {
                lines.push_str(&format!("[-]{c} failed: reason withheld\n"));
                failed.push(format!("{c}: {e}"));
            }
        }
    }
    if !failed.is_empty() {
        tracing::warn!(check = name, failed = %failed.join("; "), "health check failed");
        return text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("{lines}{name} check failed\n"),
        );
    }
    if verbose {
        text(StatusCode::OK, format!("{lines}{name} check passed\n"))
    } else {
        text(StatusCode::OK, "ok".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn answer(path: &str, query: Option<&str>, storage: Result<(), String>) -> (u16, String) {
        let resp = check(path, query, true, storage, &HealthChecks::default());
        let code = resp.status().as_u16();
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap();
        (code, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn a_stuck_store_fails_livez_and_readyz_with_the_reason_withheld() {
        let stuck =
            || Err("the storage writer has not come back from one step for 31 s".to_string());
        assert_eq!(answer("/livez", None, Ok(())).await, (200, "ok".into()));
        let (code, body) = answer("/livez", None, stuck()).await;
        assert_eq!(code, 500);
        assert_eq!(
            body,
            "[+]ping ok\n[+]log ok\n[-]storage failed: reason withheld\nlivez check failed\n"
        );
        let (code, body) = answer("/readyz", Some("verbose"), stuck()).await;
        assert_eq!(code, 500);
        assert!(body.ends_with("[-]storage failed: reason withheld\n[+]bootstrap-namespaces ok\nreadyz check failed\n"), "{body}");
        let (code, body) = answer("/livez/storage", None, stuck()).await;
        assert_eq!(code, 500);
        assert_eq!(
            body,
            "internal server error: the storage writer has not come back from one step for 31 s\n"
        );
        assert_eq!(
            answer("/livez/ping", None, stuck()).await,
            (200, "ok".into())
        );
        let (code, body) = answer("/healthz", Some("verbose"), Ok(())).await;
        assert_eq!(
            (code, body.as_str()),
            (
                200,
                "[+]ping ok\n[+]log ok\n[+]storage ok\nhealthz check passed\n"
            )
        );
    }
}
