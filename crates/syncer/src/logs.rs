//! Pod logs (docs/sync.md, "Pod logs"): `kubectl logs` of a reflected pod in kplane is read
//! from its host pod here. kplane cannot call the syncer, so the syncer long-polls its sync
//! endpoint for the log requests of its pods (`GET <endpoint>/kplane/v1/logrequests`), and
//! for each one reads the host's `pods/log` with the request's query and posts the answer
//! back in pieces (`POST <endpoint>/kplane/v1/logrequests/<id>`): the host's status code
//! first, then the bytes as they come (coalesced up to [`MAX_PIECE`], at most [`MAX_STREAMS`]
//! at once), an empty piece every
//! [`KEEPALIVE`] while the host is quiet, and the end. It serves only host pods of its own:
//! a synced object's (the target's annotation, and the source cluster and namespace the
//! request names) or one a `spec.reflectPods` entry chooses.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures::{FutureExt as _, StreamExt as _};
use kube::api::{Api, DynamicObject, ListParams};
use serde::Deserialize;
use serde_json::{json, Value};
use tokio::task::JoinSet;

use crate::chosen_pods::Entry;
use crate::error::{is_status, status_code};
use crate::naming::{CLUSTER_ANNOTATION, NAMESPACE_ANNOTATION, TARGET_ANNOTATION};
use crate::pods::resource;
use crate::state::{annotation, State};

/// Host log streams open at once; requests past it are answered 429.
const MAX_STREAMS: usize = 256;
/// The long poll's wait, in seconds (kplane answers sooner when a request comes).
const POLL_SECONDS: u64 = 30;
/// The most bytes one post carries (the sync endpoint takes up to 256 KiB).
const MAX_PIECE: usize = 256 * 1024;
/// A quiet stream is said to be open this often (kplane ends one silent for 60 s).
const KEEPALIVE: Duration = Duration::from_secs(20);
/// An error answer's body is read up to this size.
const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// One log request, as kplane hands it over.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct LogRequest {
    pub id: String,
    pub cluster: String,
    pub namespace: String,
    pub pod: String,
    #[serde(default)]
    pub host_pod: String,
    #[serde(default)]
    pub container: String,
    #[serde(default)]
    pub query: String,
}

#[derive(Debug, Deserialize)]
struct RequestList {
    #[serde(default)]
    items: Vec<LogRequest>,
}

/// Takes the log requests of the target's pods and serves each one, while the syncer leads.
pub async fn run(state: Arc<State>, chosen: Vec<Entry>) {
    let chosen = Arc::new(chosen);
    let mut serving = JoinSet::new();
    let mut backoff = Duration::from_secs(1);
    loop {
        while serving.try_join_next().is_some() {}
        match poll(&state).await {
            Ok(requests) => {
                backoff = Duration::from_secs(1);
                for r in requests {
                    if serving.len() >= MAX_STREAMS {
                        let msg = format!(
                            "the syncer of sync target {} serves {MAX_STREAMS} logs at once already",
                            state.target.annotation()
                        );
                        refuse(&state, &r, 429, "TooManyRequests", &msg).await;
                        continue;
                    }
                    serving.spawn(serve(Arc::clone(&state), Arc::clone(&chosen), r));
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "taking pod log requests failed; retrying");
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(Duration::from_secs(30));
            }
        }
    }
}

async fn poll(state: &State) -> Result<Vec<LogRequest>, String> {
    let client = state.kplane.endpoint().map_err(|e| e.to_string())?;
    let req = http::Request::get(format!(
        "/kplane/v1/logrequests?timeoutSeconds={POLL_SECONDS}"
    ))
    .body(Vec::new())
    .map_err(|e| e.to_string())?;
    let text = client.request_text(req).await.map_err(|e| e.to_string())?;
    let list: RequestList = serde_json::from_str(&text).map_err(|e| e.to_string())?;
    Ok(list.items)
}

/// A `metav1.Status` body for an answer the syncer makes itself.
fn status_body(code: u16, reason: &str, message: &str) -> Bytes {
    Bytes::from(
        json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
               "message": message, "reason": reason, "code": code})
        .to_string(),
    )
}

/// What became of a post.
#[derive(Debug, PartialEq, Eq)]
enum Posted {
    Ok,
    /// The reader has gone (or kplane forgot the request): stop.
    Stop,
}

async fn post(state: &State, id: &str, code: Option<u16>, bytes: Bytes, end: bool) -> Posted {
    let Ok(client) = state.kplane.endpoint() else {
        return Posted::Stop;
    };
    let mut uri = format!("/kplane/v1/logrequests/{id}");
    let mut sep = '?';
    if let Some(c) = code {
        uri.push_str(&format!("{sep}code={c}"));
        sep = '&';
    }
    if end {
        uri.push_str(&format!("{sep}end=true"));
    }
    let Ok(req) = http::Request::post(uri)
        .header(http::header::CONTENT_TYPE, "application/octet-stream")
        .body(kube::client::Body::from(bytes.to_vec()))
    else {
        return Posted::Stop;
    };
    match client.send(req).await {
        Ok(resp) if resp.status().is_success() => Posted::Ok,
        Ok(resp) => {
            tracing::debug!(id, status = %resp.status(), "a pod log's reader has gone");
            Posted::Stop
        }
        Err(e) => {
            tracing::warn!(id, error = %e, "posting a pod log piece failed");
            Posted::Stop
        }
    }
}

/// Answers request `r` with an error Status and ends it.
async fn refuse(state: &State, r: &LogRequest, code: u16, reason: &str, message: &str) {
    post(
        state,
        &r.id,
        Some(code),
        status_body(code, reason, message),
        true,
    )
    .await;
}

/// Whether host pod `pod` is one whose log request `r` may read: a synced object's pod of
/// the request's cluster and namespace, or one a `spec.reflectPods` entry into that
/// namespace chooses.
async fn is_ours(state: &State, chosen: &[Entry], r: &LogRequest, pod: &Value) -> bool {
    if annotation(pod, TARGET_ANNOTATION) == Some(state.target.annotation().as_str()) {
        return annotation(pod, CLUSTER_ANNOTATION) == Some(r.cluster.as_str())
            && annotation(pod, NAMESPACE_ANNOTATION) == Some(r.namespace.as_str());
    }
    let host_ns = pod
        .pointer("/metadata/namespace")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let name = pod
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    for e in chosen.iter().filter(|e| {
        e.host_namespace == host_ns && e.cluster == r.cluster && e.namespace == r.namespace
    }) {
        let api: Api<DynamicObject> =
            Api::namespaced_with(state.host.clone(), host_ns, &resource());
        let lp = ListParams::default()
            .labels(&e.selector)
            .fields(&format!("metadata.name={name}"));
        if let Ok(list) = api.list(&lp).await {
            if !list.items.is_empty() {
                return true;
            }
        }
    }
    false
}

/// Serves one log request.
async fn serve(state: Arc<State>, chosen: Arc<Vec<Entry>>, r: LogRequest) {
    let Some((host_ns, host_name)) = host_pod(&r.host_pod) else {
        let msg = format!("the reflection {}/{} names no host pod", r.namespace, r.pod);
        return refuse(&state, &r, 404, "NotFound", &msg).await;
    };
    let api: Api<DynamicObject> = Api::namespaced_with(state.host.clone(), host_ns, &resource());
    let pod = match api.get(host_name).await {
        Ok(p) => serde_json::to_value(p).unwrap_or(Value::Null),
        Err(e) => {
            let code = status_code(&e).unwrap_or(503);
            let (reason, msg) = if is_status(&e, 404) {
                ("NotFound", format!("pods \"{}\" not found", r.pod))
            } else {
                (
                    "ServiceUnavailable",
                    format!("reading host pod {host_ns}/{host_name}: {e}"),
                )
            };
            let code = if code == 404 { 404 } else { 503 };
            return refuse(&state, &r, code, reason, &msg).await;
        }
    };
    if !is_ours(&state, &chosen, &r, &pod).await {
        let msg = format!(
            "host pod {host_ns}/{host_name} is not one the sync target {} reflects into {}/{}",
            state.target.annotation(),
            r.cluster,
            r.namespace
        );
        return refuse(&state, &r, 403, "Forbidden", &msg).await;
    }
    let path = format!(
        "/api/v1/namespaces/{host_ns}/pods/{host_name}/log?{}",
        r.query
    );
    let Ok(req) = http::Request::get(path).body(kube::client::Body::empty()) else {
        return refuse(&state, &r, 500, "InternalError", "invalid log request").await;
    };
    let resp = match state.host.send(req).await {
        Ok(resp) => resp,
        Err(e) => {
            let msg =
                format!("the host did not answer the log request of {host_ns}/{host_name}: {e}");
            return refuse(&state, &r, 503, "ServiceUnavailable", &msg).await;
        }
    };
    let code = resp.status().as_u16();
    let mut body = axum::body::Body::new(resp.into_body()).into_data_stream();
    if !resp_is_success(code) {
        let mut out = Vec::new();
        while let Some(Ok(b)) = body.next().await {
            out.extend_from_slice(&b);
            if out.len() >= ERROR_BODY_LIMIT {
                out.truncate(ERROR_BODY_LIMIT);
                break;
            }
        }
        post(&state, &r.id, Some(code), Bytes::from(out), true).await;
        return;
    }
    if post(&state, &r.id, Some(code), Bytes::new(), false).await == Posted::Stop {
        return;
    }
    loop {
        let piece = match tokio::time::timeout(KEEPALIVE, body.next()).await {
            Err(_) => Bytes::new(),
            Ok(None) | Ok(Some(Err(_))) => break,
            Ok(Some(Ok(first))) => {
                // Whatever else the host has sent already goes in the same post.
                let mut piece = first.to_vec();
                while piece.len() < MAX_PIECE {
                    match body.next().now_or_never() {
                        Some(Some(Ok(more))) => piece.extend_from_slice(&more),
                        _ => break,
                    }
                }
                Bytes::from(piece)
            }
        };
        // An empty piece says the stream is open; a long one goes in posts of at most
        // MAX_PIECE (what the sync endpoint takes).
        let mut rest = piece;
        loop {
            let now = rest.split_to(rest.len().min(MAX_PIECE));
            if post(&state, &r.id, None, now, false).await == Posted::Stop {
                return;
            }
            if rest.is_empty() {
                break;
            }
        }
    }
    post(&state, &r.id, None, Bytes::new(), true).await;
}

/// The host namespace and name of a reflection's `sync.kplane.io/host-pod` annotation,
/// when both are valid names (they become a host API path).
fn host_pod(annotation: &str) -> Option<(&str, &str)> {
    use kplane_types::validation::{is_dns1123_label, is_dns1123_subdomain};
    let (ns, name) = annotation.split_once('/')?;
    (is_dns1123_label(ns).is_empty() && is_dns1123_subdomain(name).is_empty()).then_some((ns, name))
}

fn resp_is_success(code: u16) -> bool {
    (200..300).contains(&code)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_requests_decode_as_kplane_sends_them() {
        let list: RequestList = serde_json::from_value(json!({"kind": "LogRequestList", "items": [
            {"id": "a", "cluster": "root:t:a", "namespace": "default", "pod": "pi-x",
             "hostPod": "kplane-1/pi-x", "container": "main", "query": "container=main&follow=true"},
            {"id": "b", "cluster": "root", "namespace": "hive", "pod": "p"},
        ]}))
        .unwrap();
        assert_eq!(list.items.len(), 2);
        assert_eq!(list.items[0].host_pod, "kplane-1/pi-x");
        assert_eq!(list.items[0].query, "container=main&follow=true");
        assert_eq!(list.items[1].host_pod, "");
        let empty: RequestList = serde_json::from_value(json!({})).unwrap();
        assert!(empty.items.is_empty());
    }

    #[test]
    fn only_valid_host_pod_names_are_asked_for() {
        assert_eq!(host_pod("kplane-1/pi-x"), Some(("kplane-1", "pi-x")));
        for bad in [
            "", "pi-x", "/pi-x", "ns/", "ns/a/b", "ns/..", "../x/y", "NS/x", "ns/x?y",
        ] {
            assert_eq!(host_pod(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_syncers_own_answers_are_statuses() {
        let v: Value = serde_json::from_slice(&status_body(404, "NotFound", "gone")).unwrap();
        assert_eq!(v["kind"], "Status");
        assert_eq!(v["code"], 404);
        assert_eq!(v["reason"], "NotFound");
        assert_eq!(v["message"], "gone");
    }
}
