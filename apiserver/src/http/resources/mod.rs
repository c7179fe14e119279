//! Resource handlers: serve the request's verb (from its `RequestInfo`, computed once in
//! `request_info`) on the resource its path addresses: decode the request, call the
//! registry, encode the answer. No object semantics live here. This module resolves the
//! resource type and dispatches; one module per verb group serves it: [`read`] (get, list,
//! watch), [`write`] (create, update, patch and apply), [`delete`] (delete,
//! deletecollection) and [`special`] (reviews, which are never stored, and the token, log
//! and scale subresources).

mod delete;
mod read;
mod special;
mod write;

use super::error::StatusResponse;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, Method};
use axum::response::Response;
use kplane_types::{RequestInfo, StatusReason, UserInfo, Verb};

use super::negotiation::{MediaType, MAX_BODY_BYTES};
use super::query::{OptionsKind, Query, WriteParams};
use super::request_info::ResourcePath;
use super::AppState;
use kplane_registry::error::{ApiError, ApiResult};
use kplane_registry::warnings::Warnings;
use kplane_registry::{ResourceType, Target};

/// A request extension: lists and watches serve only objects whose annotation (key, value)
/// has this value (set by the sync endpoint for the objects assigned to its target).
#[derive(Clone, Debug)]
pub struct AnnotationFilter(pub String, pub String);

/// Handles one resource request.
pub async fn handle(
    state: Arc<AppState>,
    rp: ResourcePath,
    info: &RequestInfo,
    user: &UserInfo,
    accept: Vec<MediaType>,
    req: Request<Body>,
) -> Response {
    match serve(state, rp, info, user, accept, req).await {
        Ok(r) => r,
        Err(e) => e.into_response(),
    }
}

async fn read_body(req: Request<Body>) -> ApiResult<(Option<String>, bytes::Bytes)> {
    let ct = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string);
    if let Some(len) = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok())
    {
        if len > MAX_BODY_BYTES {
            // Read and discard a moderately oversized body so the client, still sending,
            // gets the 413 instead of a reset connection (as Go's server does).
            if len <= DRAIN_LIMIT {
                let _ = axum::body::to_bytes(req.into_body(), DRAIN_LIMIT).await;
            }
            return Err(too_large());
        }
    }
    let body = axum::body::to_bytes(req.into_body(), MAX_BODY_BYTES)
        .await
        .map_err(|e| body_error(&e))?;
    Ok((ct, body))
}

/// A body that could not be read: too slow (`crate::conn_timeouts::TimedBody`: upstream's
/// answer to a request cut by its timeout) or too large.
pub(super) fn body_error(e: &axum::Error) -> ApiError {
    if crate::conn_timeouts::is_body_timeout(e) {
        ApiError::new(
            StatusReason::Timeout,
            "Timeout: request did not complete within the allotted timeout",
        )
    } else {
        too_large()
    }
}

/// Oversized bodies up to this size are drained before the 413 is sent.
const DRAIN_LIMIT: usize = 16 * 1024 * 1024;

fn too_large() -> ApiError {
    ApiError::new(
        StatusReason::RequestEntityTooLarge,
        "the request is too large",
    )
}

/// The request's warnings (the recorder `dispatch` put in its extensions, whose texts
/// every response carries; a detached one when there is none).
fn request_warnings(req: &Request<Body>) -> Warnings {
    req.extensions()
        .get::<Warnings>()
        .cloned()
        .unwrap_or_default()
}

/// The request's audit annotations (the recorder `dispatch` put in its extensions; a
/// detached one when there is none).
fn request_audit(req: &Request<Body>) -> kplane_registry::audit_annotations::AuditAnnotations {
    req.extensions()
        .get::<kplane_registry::audit_annotations::AuditAnnotations>()
        .cloned()
        .unwrap_or_default()
}

/// One request for a resolved resource type, as the verb handlers take it.
struct Call<'a> {
    state: &'a Arc<AppState>,
    rt: Arc<ResourceType>,
    /// Where the request points (the type, the cluster, the namespace).
    target: Target,
    subresource: Option<String>,
    info: &'a RequestInfo,
    user: &'a UserInfo,
    accept: &'a [MediaType],
    q: Query,
    req: Request<Body>,
}

/// Resolves the request's resource type in its cluster's catalog and serves it: the
/// handler of its verb (or of its subresource).
async fn serve(
    state: Arc<AppState>,
    rp: ResourcePath,
    info: &RequestInfo,
    user: &UserInfo,
    accept: Vec<MediaType>,
    req: Request<Body>,
) -> ApiResult<Response> {
    let catalog = state.registry.catalog_for(&info.cluster).await?;
    let Some(rt) = catalog.get(&rp.group, &rp.version, &rp.resource).cloned() else {
        return Err(ApiError::not_found_path());
    };
    if !rt.namespaced && rp.namespace.is_some() {
        return Err(ApiError::not_found_path());
    }
    if let Some(sub) = &rp.subresource {
        if !rt.has_subresource(sub) {
            return Err(ApiError::not_found_path());
        }
    }
    let deprecation = rt
        .custom
        .as_ref()
        .and_then(|c| c.deprecation_warning.clone());
    if let Some(text) = deprecation {
        request_warnings(&req).push(text);
    }
    if !rt.is_stored() {
        return special::review(&state, &rt, info, user, &accept, rp.name.is_some(), req).await;
    }
    let method = req.method().clone();
    let c = Call {
        state: &state,
        target: Target {
            cluster: info.cluster.clone(),
            rt: rt.clone(),
            namespace: rp.namespace.clone(),
        },
        rt,
        subresource: rp.subresource.clone(),
        info,
        user,
        accept: &accept,
        q: Query::parse(req.uri().query()),
        req,
    };
    let name = rp.name.as_deref();
    match rp.subresource.as_deref() {
        Some("token") => return special::token(c, name.unwrap_or("")).await,
        Some("log") => return special::log(c, name.unwrap_or("")).await,
        Some("scale") => return special::scale(c, name.unwrap_or("")).await,
        _ => {}
    }

    // Resources are served to these methods only (a HEAD, which is a `get` to authorization,
    // is not served).
    if !matches!(
        method,
        Method::GET | Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    ) {
        return Err(ApiError::from(kplane_types::Status::method_not_allowed(
            method.as_str(),
            &c.rt.plural,
        )));
    }

    match (&info.verb, name) {
        (Verb::Get, Some(n)) => read::get(c, n).await,
        (Verb::Watch, name) if method == Method::GET => read::watch(c, name).await,
        (Verb::List, None) => read::list(c).await,
        (Verb::Create, None) => write::create(c).await,
        (Verb::Update, Some(n)) => write::update(c, n).await,
        (Verb::Patch, Some(n)) => write::patch(c, n).await,
        (Verb::Delete | Verb::DeleteCollection, Some(n)) => delete::one(c, n).await,
        (Verb::Delete | Verb::DeleteCollection, None) => delete::collection(c).await,
        _ => Err(ApiError::from(kplane_types::Status::method_not_allowed(
            method.as_str(),
            &c.rt.plural,
        ))),
    }
}

/// Write options from the query, with the User-Agent's default field manager, the
/// requester (for admission) and the request's warnings.
fn write_params(
    q: &Query,
    kind: OptionsKind,
    ua: Option<&str>,
    user: &UserInfo,
    req: &Request<Body>,
) -> ApiResult<WriteParams> {
    let mut w = super::query::write_params(q, kind)?.with_user_agent(ua);
    w.user = Some(user.clone());
    w.warnings = request_warnings(req);
    w.audit = request_audit(req);
    Ok(w)
}

/// The request's User-Agent (the default field manager of its writes).
fn user_agent(req: &Request<Body>) -> Option<String> {
    req.headers()
        .get(header::USER_AGENT)
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

fn require_verb(rt: &ResourceType, verb: &str) -> ApiResult<()> {
    if rt.has_verb(verb) {
        Ok(())
    } else {
        Err(ApiError::from(kplane_types::Status::method_not_allowed(
            verb, &rt.plural,
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn body_of(size: usize, with_length: bool) -> ApiResult<usize> {
        let mut req = Request::builder().method(Method::POST).uri("/");
        if with_length {
            req = req.header(header::CONTENT_LENGTH, size);
        }
        let req = req.body(Body::from(vec![b' '; size])).unwrap();
        read_body(req).await.map(|(_, b)| b.len())
    }

    #[tokio::test]
    async fn request_bodies_are_limited_to_three_mebibytes() {
        for (size, ok) in [
            (MAX_BODY_BYTES - 1, true),
            (MAX_BODY_BYTES, true),
            (MAX_BODY_BYTES + 1, false),
            // Past the drain limit too: refused without reading it.
            (10 * MAX_BODY_BYTES, false),
        ] {
            for with_length in [true, false] {
                match body_of(size, with_length).await {
                    Ok(n) => assert!(ok && n == size, "{size} bytes (length {with_length})"),
                    Err(e) => assert!(
                        !ok && e.code() == 413,
                        "{size} bytes (length {with_length}): {}",
                        e.code()
                    ),
                }
            }
        }
        const { assert!(10 * MAX_BODY_BYTES > DRAIN_LIMIT) };
    }
}
