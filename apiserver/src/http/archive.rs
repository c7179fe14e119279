//! The archive endpoints of a logical cluster (issue 16): `GET .../kplane/v1/export`
//! streams the registry's export, `POST .../kplane/v1/import` spools the body to a file
//! under the data dir and hands it to the registry's import. Both are non-resource paths
//! under the cluster; an import is authorized in the target's parent (in `root` for
//! `root`), since it creates the target ([`authorization_info`]), and skips the
//! existence check of the target.

use axum::body::Body;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use kplane_registry::ApiError;
use kplane_types::{ClusterName, ClusterScope, RequestInfo, StatusReason};

use super::error::StatusResponse;
use super::spool::spool_body;
pub use super::spool::IMPORT_BODY_LIMIT;
use super::AppState;

/// The export endpoint's path inside a cluster.
pub const EXPORT_PATH: &str = "/kplane/v1/export";
/// The import endpoint's path inside a cluster.
pub const IMPORT_PATH: &str = "/kplane/v1/import";

/// The attributes an archive request is authorized with, when they differ from the
/// request's: an import is a `post` of [`IMPORT_PATH`] in the target's parent.
pub fn authorization_info(info: &RequestInfo) -> Option<RequestInfo> {
    if !is_import_path(&info.path) {
        return None;
    }
    let ClusterScope::One(target) = &info.cluster else {
        return None;
    };
    let parent = target.parent()?;
    let mut i = info.clone();
    i.cluster = ClusterScope::One(parent);
    Some(i)
}

/// Whether `path` is an archive endpoint (served by [`serve`]).
pub fn is_archive_path(path: &str) -> bool {
    path == EXPORT_PATH || is_import_path(path)
}

/// Whether `path` is the import endpoint or one of a staged import's
/// (`/kplane/v1/import/...`, the online move: `move_endpoints`): authorized in the
/// target's parent, without the target's existence check.
pub fn is_import_path(path: &str) -> bool {
    path == IMPORT_PATH
        || path
            .strip_prefix(IMPORT_PATH)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// Serves an archive endpoint.
pub async fn serve(
    state: &AppState,
    info: &RequestInfo,
    method: &Method,
    query: Option<&str>,
    body: Body,
) -> Response {
    let ClusterScope::One(cluster) = &info.cluster else {
        return ApiError::new(
            StatusReason::MethodNotAllowed,
            "export and import address one logical cluster",
        )
        .into_response();
    };
    let flag = |name: &str| query_flag(query, name);
    match (info.path.as_str(), method) {
        (EXPORT_PATH, &Method::GET) => {
            export(
                state,
                cluster,
                flag("recursive") == Some(true),
                flag("compress") != Some(false),
            )
            .await
        }
        (IMPORT_PATH, &Method::POST) if flag("staged") == Some(true) => {
            super::move_endpoints::import_staged(state, cluster, body).await
        }
        (IMPORT_PATH, &Method::POST) => {
            import(state, cluster, flag("replace") == Some(true), body).await
        }
        (p, _) if p != IMPORT_PATH && is_import_path(p) => {
            super::move_endpoints::staged(state, cluster, p, method, query, body).await
        }
        _ => ApiError::new(
            StatusReason::MethodNotAllowed,
            format!("the server does not allow this method on {}", info.path),
        )
        .into_response(),
    }
}

/// `true`/`false` for `name=true|false` in the query (`None` when absent or other).
fn query_flag(query: Option<&str>, name: &str) -> Option<bool> {
    query?
        .split('&')
        .filter_map(|kv| kv.split_once('=').or(Some((kv, "true"))))
        .find(|(k, _)| *k == name)
        .and_then(|(_, v)| match v {
            "true" | "1" => Some(true),
            "false" | "0" => Some(false),
            _ => None,
        })
}

async fn export(
    state: &AppState,
    cluster: &ClusterName,
    recursive: bool,
    compress: bool,
) -> Response {
    let stream = match state
        .registry
        .archive()
        .export(cluster, recursive, compress)
        .await
    {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    let body = futures::stream::unfold(Some(stream), |s| async move {
        let mut s = s?;
        match s.next_chunk().await {
            Ok(Some(chunk)) => Some((Ok(chunk), Some(s))),
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(error = %e.0.message, "export failed after the response began; the body is aborted");
                Some((Err(std::io::Error::other(e.0.message)), None))
            }
        }
    });
    let mut resp = (StatusCode::OK, Body::from_stream(body)).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(kplane_archive::CONTENT_TYPE),
    );
    resp
}

async fn import(state: &AppState, target: &ClusterName, replace: bool, body: Body) -> Response {
    let spool = match spool_body(&state.spool_dir, body).await {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    match state
        .registry
        .archive()
        .import(&spool.0, target, replace)
        .await
    {
        Ok(summary) => {
            let mut resp = (StatusCode::CREATED, summary.to_json().to_string()).into_response();
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            resp
        }
        Err(e) => e.into_response(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_and_authorization_in_the_parent() {
        assert_eq!(
            query_flag(Some("recursive=true&compress=false"), "compress"),
            Some(false)
        );
        assert_eq!(query_flag(Some("recursive"), "recursive"), Some(true));
        assert_eq!(query_flag(None, "replace"), None);
        let c = |s: &str| ClusterScope::One(ClusterName::parse(s).unwrap());
        let info = RequestInfo::non_resource(c("root:a:b"), kplane_types::Verb::Post, IMPORT_PATH);
        assert_eq!(authorization_info(&info).unwrap().cluster, c("root:a"));
        let root = RequestInfo::non_resource(c("root"), kplane_types::Verb::Post, IMPORT_PATH);
        assert!(
            authorization_info(&root).is_none(),
            "root is authorized in root"
        );
        let export = RequestInfo::non_resource(c("root:a"), kplane_types::Verb::Get, EXPORT_PATH);
        assert!(authorization_info(&export).is_none());
    }
}
