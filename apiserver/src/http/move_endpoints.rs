//! The server side of the online move (`kplane ws move`, docs/architecture.md "Moving a
//! logical cluster"): non-resource endpoints under a logical cluster, each authorized as
//! its nonResourceURL and verb in that cluster (like every non-resource path, by
//! `http/mod.rs` before it gets here).
//!
//! - `POST /kplane/v1/fence` → the cluster is fenced (writes 429); answers the fence
//!   revision: `{"kind":"Fence","cluster":..,"revision":F}`.
//! - `POST /kplane/v1/unfence` → the fence is lifted (a move rolled back).
//! - `POST /kplane/v1/moved?to=URL` → the cluster has moved to URL (410 from then on).
//! - `GET /kplane/v1/state` → `{"kind":"ClusterState","cluster":..,"state":"Serving"|"Fenced"}`
//!   (a moved cluster answers every request, this one too, with its 410).
//! - `GET /kplane/v1/changes?since=R[&until=U]` → the cluster's change stream
//!   (`application/vnd.kplane.changes`, `kplane_archive::ChangeReader` reads it).

use axum::body::Body;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use kplane_registry::cluster_states::ClusterPhase;
use kplane_registry::error::ApiError;
use kplane_registry::Registry;
use kplane_types::{ClusterName, ClusterScope, RequestInfo};
use serde_json::json;

use super::error::StatusResponse;

/// The paths served here.
const PATHS: [&str; 5] = [
    "/kplane/v1/fence",
    "/kplane/v1/unfence",
    "/kplane/v1/moved",
    "/kplane/v1/state",
    "/kplane/v1/changes",
];

/// Serves `info.path` when it is one of this module's; `None` otherwise.
pub async fn serve(
    registry: &Registry,
    method: &Method,
    info: &RequestInfo,
    query: Option<&str>,
) -> Option<Response> {
    let path = info.path.as_str();
    if !PATHS.contains(&path) {
        return None;
    }
    Some(match handle(registry, method, info, path, query).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    })
}

async fn handle(
    registry: &Registry,
    method: &Method,
    info: &RequestInfo,
    path: &str,
    query: Option<&str>,
) -> Result<Response, ApiError> {
    let ClusterScope::One(cluster) = &info.cluster else {
        return Err(ApiError::bad_request(format!(
            "{path} needs one logical cluster, not {}",
            info.cluster
        )));
    };
    let want = if matches!(path, "/kplane/v1/state" | "/kplane/v1/changes") {
        Method::GET
    } else {
        Method::POST
    };
    if *method != want {
        return Err(ApiError::from(kplane_types::Status::new(
            kplane_types::StatusReason::MethodNotAllowed,
            format!("{path} takes {want}, not {method}"),
        )));
    }
    let params: Vec<(String, String)> = query
        .map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect())
        .unwrap_or_default();
    let param = |k: &str| params.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str());
    let revision = |k: &str| -> Result<Option<u64>, ApiError> {
        param(k)
            .map(|v| {
                v.parse::<u64>().map_err(|_| {
                    ApiError::bad_request(format!(
                        "{k}={v:?} is not a revision (an unsigned integer)"
                    ))
                })
            })
            .transpose()
    };
    match path {
        "/kplane/v1/fence" => {
            let rev = registry.moves().fence(cluster).await?;
            Ok(ok_json(
                json!({"apiVersion": "kplane.io/v1alpha1", "kind": "Fence",
                              "cluster": cluster.as_str(), "revision": rev}),
            ))
        }
        "/kplane/v1/unfence" => {
            registry.moves().unfence(cluster).await?;
            Ok(state(cluster, None))
        }
        "/kplane/v1/moved" => {
            let to = param("to")
                .ok_or_else(|| ApiError::bad_request("the new location (to=URL) is required"))?;
            registry.moves().mark_moved(cluster, to).await?;
            Ok(state(cluster, registry.moves().phase(cluster)))
        }
        "/kplane/v1/state" => Ok(state(cluster, registry.moves().phase(cluster))),
        _ => {
            let since = revision("since")?
                .ok_or_else(|| ApiError::bad_request("since=REVISION is required"))?;
            let until = revision("until")?;
            let mut changes = registry.changes(cluster, since, until).await?;
            // Errors before the first byte are ordinary Statuses.
            let first = changes.next_chunk().await?;
            let stream =
                futures::stream::unfold((first, Some(changes)), |(pending, changes)| async move {
                    if let Some(chunk) = pending {
                        return Some((Ok::<_, std::io::Error>(chunk), (None, changes)));
                    }
                    let mut c = changes?;
                    match c.next_chunk().await {
                        Ok(Some(chunk)) => Some((Ok(chunk), (None, Some(c)))),
                        Ok(None) => None,
                        Err(e) => {
                            tracing::warn!(error = %e.0.message, "change stream cut short");
                            Some((Err(std::io::Error::other(e.0.message)), (None, None)))
                        }
                    }
                });
            let mut resp = (StatusCode::OK, Body::from_stream(stream)).into_response();
            resp.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(kplane_archive::CHANGES_CONTENT_TYPE),
            );
            Ok(resp)
        }
    }
}

fn state(cluster: &ClusterName, phase: Option<ClusterPhase>) -> Response {
    let (state, location) = match phase {
        None => ("Serving", None),
        Some(ClusterPhase::Fenced) => ("Fenced", None),
        Some(ClusterPhase::Moved { location }) => ("Moved", Some(location)),
    };
    let mut body = json!({"apiVersion": "kplane.io/v1alpha1", "kind": "ClusterState",
                          "cluster": cluster.as_str(), "state": state});
    if let Some(l) = location {
        body["location"] = json!(l);
    }
    ok_json(body)
}

fn ok_json(v: serde_json::Value) -> Response {
    let mut resp = (StatusCode::OK, serde_json::to_vec(&v).unwrap_or_default()).into_response();
    resp.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    resp
}

/// `POST /kplane/v1/import?staged=true`: the move's bulk copy into a hidden, staged
/// import (`kplane_registry::archive::staged`). 201 `kind: StagedImport`.
pub(super) async fn import_staged(
    state: &super::AppState,
    target: &ClusterName,
    body: Body,
) -> Response {
    let spool = match super::spool::spool_body(&state.spool_dir, body).await {
        Ok(s) => s,
        Err(e) => return e.into_response(),
    };
    match state
        .registry
        .archive()
        .import_staged(&spool.0, target)
        .await
    {
        Ok(s) => created_json(s.to_json()),
        Err(e) => e.into_response(),
    }
}

/// A staged import's endpoints under `/kplane/v1/import/`: `GET staged` (its state),
/// `POST changes?since=R` (body: a change stream), `POST commit`, `POST abort`.
pub(super) async fn staged(
    state: &super::AppState,
    target: &ClusterName,
    path: &str,
    method: &Method,
    query: Option<&str>,
    body: Body,
) -> Response {
    let reg = &state.registry;
    let r = match (path, method) {
        ("/kplane/v1/import/staged", &Method::GET) => reg
            .archive()
            .staged_import(target)
            .await
            .map(|s| ok_json(s.to_json())),
        ("/kplane/v1/import/changes", &Method::POST) => {
            let since = query
                .and_then(|q| {
                    form_urlencoded::parse(q.as_bytes())
                        .find(|(k, _)| k == "since")
                        .map(|(_, v)| v.into_owned())
                })
                .and_then(|v| v.parse::<u64>().ok());
            match since {
                None => Err(ApiError::bad_request("since=REVISION is required")),
                Some(since) => match super::spool::spool_body(&state.spool_dir, body).await {
                    Err(e) => Err(e),
                    Ok(spool) => reg
                        .archive()
                        .apply_staged_changes(&spool.0, target, since)
                        .await
                        .map(|a| ok_json(a.to_json())),
                },
            }
        }
        ("/kplane/v1/import/commit", &Method::POST) => reg
            .archive()
            .commit_staged_import(target)
            .await
            .map(|s| ok_json(s.to_json())),
        ("/kplane/v1/import/abort", &Method::POST) => {
            reg.archive().abort_staged_import(target).await.map(|()| {
                ok_json(
                    json!({"apiVersion": "kplane.io/v1alpha1", "kind": "StagedImport",
                                      "cluster": target.as_str(), "aborted": true}),
                )
            })
        }
        (p, m) => Err(ApiError::from(kplane_types::Status::new(
            kplane_types::StatusReason::NotFound,
            format!("no {m} {p} for a staged import"),
        ))),
    };
    r.unwrap_or_else(|e| e.into_response())
}

fn created_json(v: serde_json::Value) -> Response {
    let mut resp = ok_json(v);
    *resp.status_mut() = StatusCode::CREATED;
    resp
}
