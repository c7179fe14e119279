//! Resource handlers: serve the request's verb (from its `RequestInfo`, computed once in
//! `request_info`) on the resource its path addresses: decode the request, call the
//! registry, encode the answer. No object semantics live here.

use super::error::StatusResponse;
use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use kplane_types::{RequestInfo, StatusReason, UserInfo, Verb};
use serde_json::Value;

use super::negotiation::{self, BodyType, MediaType, Representation, MAX_BODY_BYTES};
use super::query::{self, OptionsKind, Query, WriteParams};
use super::request_info::ResourcePath;
use super::response;
use super::table::TableOptions;
use super::{reviews, AppState};
use kplane_registry::error::{ApiError, ApiResult};
use kplane_registry::patch::PatchType;
use kplane_registry::warnings::Warnings;
use kplane_registry::{DeleteOutcome, DeleteParams, ResourceType, Target};

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
    match handle_inner(state, rp, info, user, accept, req).await {
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

async fn handle_inner(
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
    serve(state, rp, rt, info, user, accept, req).await
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

/// Serves a request for a resolved resource type.
async fn serve(
    state: Arc<AppState>,
    rp: ResourcePath,
    rt: Arc<ResourceType>,
    info: &RequestInfo,
    user: &UserInfo,
    accept: Vec<MediaType>,
    req: Request<Body>,
) -> ApiResult<Response> {
    let q = Query::parse(req.uri().query());
    let user_agent = user_agent(&req);
    let ua = user_agent.as_deref();
    let method = req.method().clone();
    let target = Target {
        cluster: info.cluster.clone(),
        rt: rt.clone(),
        namespace: rp.namespace.clone(),
    };
    let reg = state.registry.clone();

    if !rt.is_stored() {
        if info.verb != Verb::Create || rp.name.is_some() {
            return Err(ApiError::from(kplane_types::Status::method_not_allowed(
                method.as_str(),
                &rt.plural,
            )));
        }
        let (ct, body) = read_body(req).await?;
        let obj = negotiation::decode_object(&body, negotiation::body_type(ct.as_deref())?)?;
        // Reviews have no Table form: a Table-only Accept is 406 (conformance).
        negotiation::negotiate(&accept, false, false).and_then(|r| {
            if r == Representation::Object {
                Ok(())
            } else {
                Err(negotiation::not_acceptable())
            }
        })?;
        let out = reviews::create(&state, &rt, info, user, obj).await?;
        return Ok((
            StatusCode::CREATED,
            [(header::CONTENT_TYPE, "application/json")],
            out.to_string(),
        )
            .into_response());
    }

    if rp.subresource.as_deref() == Some("token") {
        let name = rp.name.as_deref().unwrap_or("");
        if method != Method::POST {
            return Err(ApiError::from(kplane_types::Status::method_not_allowed(
                method.as_str(),
                "serviceaccounts/token",
            )));
        }
        negotiation::negotiate(&accept, false, false).and_then(|r| {
            if r == Representation::Object {
                Ok(())
            } else {
                Err(negotiation::not_acceptable())
            }
        })?;
        let recorder = request_warnings(&req);
        let (ct, body) = read_body(req).await?;
        let obj = negotiation::decode_object(&body, negotiation::body_type(ct.as_deref())?)?;
        let (out, warnings) =
            super::token_request::create(&state, state.registry.as_ref(), &target, name, obj)
                .await?;
        for text in warnings.texts() {
            recorder.push(text);
        }
        return Ok((
            StatusCode::CREATED,
            [(header::CONTENT_TYPE, "application/json")],
            out.to_string(),
        )
            .into_response());
    }

    if rp.subresource.as_deref() == Some("log") {
        let name = rp.name.as_deref().unwrap_or("");
        return super::pod_log::serve(&state, &target, name, &method, req.uri().query()).await;
    }

    if rp.subresource.as_deref() == Some("scale") {
        let name = rp.name.as_deref().unwrap_or("");
        return handle_scale(&reg, &target, name, (&info.verb, user), &q, &accept, req).await;
    }

    // Resources are served to these methods only (a HEAD, which is a `get` to authorization,
    // is not served).
    if !matches!(
        method,
        Method::GET | Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    ) {
        return Err(ApiError::from(kplane_types::Status::method_not_allowed(
            method.as_str(),
            &rt.plural,
        )));
    }

    match (&info.verb, rp.name.as_deref()) {
        (Verb::Get, Some(n)) => {
            // The list options are validated as for any GET.
            super::query::list_params(&q)?;
            let topts = TableOptions::from_query(&q)?;
            require_verb(&rt, "get")?;
            let repr = negotiation::negotiate(&accept, false, false)?;
            let bytes = reg.get(&target, n).await?;
            response::object(StatusCode::OK, &rt, bytes, repr, &topts)
        }
        (Verb::Watch, name) if method == Method::GET => {
            // `watch=true` or the legacy `/watch/` prefix.
            let mut lp = super::query::list_params_watching(&q)?;
            lp.annotation = annotation_filter(&req);
            let topts = TableOptions::from_query(&q)?;
            if let Some(n) = name {
                // Watch of a single object: a field selector on its name.
                lp.field_selector = Some(match lp.field_selector.take() {
                    Some(f) => format!("{f},metadata.name={n}"),
                    None => format!("metadata.name={n}"),
                });
            }
            require_verb(&rt, "watch")?;
            let watch_list = lp.send_initial_events == Some(true) && lp.allow_bookmarks;
            // Custom resources, and kplane's own kinds (CRDs in kcp), have no protobuf.
            let no_protobuf =
                rt.custom.is_some() || !kplane_protobuf::supports(&rt.api_version(), &rt.kind);
            let (repr, encoding) = negotiation::negotiate_watch(&accept, no_protobuf, watch_list)?;
            let blueprint = watch_list
                .then(|| super::watch_list::blueprint(&rt, repr, encoding))
                .transpose()?;
            let permit = watch_permit(&state, user)?;
            let setup = reg.watch(&target, &lp).await?;
            Ok(with_permit(
                response::watch(
                    rt.clone(),
                    setup,
                    (repr, encoding),
                    topts,
                    blueprint,
                    state.metrics.clone(),
                ),
                permit,
            ))
        }
        (Verb::List, None) => {
            let mut lp = super::query::list_params(&q)?;
            lp.annotation = annotation_filter(&req);
            clamp_page(&state, &mut lp);
            let topts = TableOptions::from_query(&q)?;
            require_verb(&rt, "list")?;
            let repr = negotiation::negotiate(&accept, true, false)?;
            let page = reg.list(&target, &lp).await?;
            response::list(&rt, page, repr, &topts).await
        }
        (Verb::Create, None) => {
            require_verb(&rt, "create")?;
            if rt.namespaced && target.namespace.is_none() {
                return Err(ApiError::from(kplane_types::Status::method_not_allowed(
                    "POST", &rt.plural,
                )));
            }
            let mut w = write_params(&q, OptionsKind::Create, ua, user, &req)?;
            let repr = negotiation::negotiate(&accept, false, false)?;
            let (ct, body) = read_body(req).await?;
            let (obj, dups) =
                negotiation::decode_object_checked(&body, negotiation::body_type(ct.as_deref())?)?;
            w.duplicates = dups;
            let bytes = reg.create(&target, obj, &w).await?;
            response::object(
                StatusCode::CREATED,
                &rt,
                bytes,
                repr,
                &TableOptions::default(),
            )
        }
        (Verb::Update, Some(name)) => {
            require_verb(&rt, "update")?;
            let mut w = write_params(&q, OptionsKind::Update, ua, user, &req)?;
            let repr = negotiation::negotiate(&accept, false, false)?;
            let (ct, body) = read_body(req).await?;
            let (obj, dups) =
                negotiation::decode_object_checked(&body, negotiation::body_type(ct.as_deref())?)?;
            w.duplicates = dups;
            let (bytes, created) = reg
                .update(&target, name, rp.subresource.as_deref(), obj, &w)
                .await?;
            let code = if created {
                StatusCode::CREATED
            } else {
                StatusCode::OK
            };
            response::object(code, &rt, bytes, repr, &TableOptions::default())
        }
        (Verb::Patch, Some(name)) => {
            require_verb(&rt, "patch")?;
            let w = write_params(&q, OptionsKind::Patch, ua, user, &req)?;
            if w.force.is_some() {
                let (ct, _) = read_body_type(&req);
                if ct != Some(BodyType::ApplyPatch) {
                    return Err(ApiError::from(kplane_types::Status::invalid(
                        "meta.k8s.io",
                        "PatchOptions",
                        "",
                        vec![kplane_types::Cause::forbidden(
                            "force",
                            "may not be specified for non-apply patch",
                        )],
                    )));
                }
            }
            let repr = negotiation::negotiate(&accept, false, false)?;
            let (ct, body) = read_body(req).await?;
            let body_type = negotiation::body_type(ct.as_deref())?;
            if body_type == BodyType::ApplyPatch {
                let (value, duplicates) = negotiation::parse_apply_body(&body)?;
                let doc = kplane_registry::patch::Document { value, duplicates };
                let (bytes, created) = reg
                    .apply(&target, name, rp.subresource.as_deref(), doc, &w)
                    .await?;
                let code = if created {
                    StatusCode::CREATED
                } else {
                    StatusCode::OK
                };
                return response::object(code, &rt, bytes, repr, &TableOptions::default());
            }
            let ty = match body_type {
                BodyType::JsonPatch => PatchType::Json,
                BodyType::MergePatch => PatchType::Merge,
                BodyType::StrategicMergePatch if !rt.is_custom() => PatchType::Strategic,
                BodyType::StrategicMergePatch => return Err(cr_patch_types_only()),
                _ => {
                    return Err(ApiError::new(
                        StatusReason::UnsupportedMediaType,
                        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/strategic-merge-patch+json",
                    ))
                }
            };
            let doc = patch_document(&body)?;
            let bytes = reg
                .patch(&target, name, rp.subresource.as_deref(), ty, doc, &w)
                .await?;
            response::object(StatusCode::OK, &rt, bytes, repr, &TableOptions::default())
        }
        (Verb::Delete | Verb::DeleteCollection, name) => {
            let warnings = request_warnings(&req);
            let audit = request_audit(&req);
            let (ct, body) = read_body(req).await?;
            let mut d = delete_params(&q, ct.as_deref(), &body)?;
            d.user = Some(user.clone());
            d.warnings = warnings;
            d.audit = audit;
            match name {
                Some(name) => {
                    require_verb(&rt, "delete")?;
                    match reg.delete(&target, name, &d).await? {
                        DeleteOutcome::Deleted(obj) => {
                            let uid = obj
                                .pointer("/metadata/uid")
                                .and_then(Value::as_str)
                                .unwrap_or("");
                            Ok(response::delete_success(&rt, name, uid))
                        }
                        DeleteOutcome::Marked(bytes) => {
                            let repr = negotiation::negotiate(&accept, false, false)?;
                            response::object(
                                StatusCode::OK,
                                &rt,
                                bytes,
                                repr,
                                &TableOptions::default(),
                            )
                        }
                    }
                }
                None => {
                    require_verb(&rt, "deletecollection")?;
                    let lp = super::query::list_params(&q)?;
                    let (items, rv) = reg.delete_collection(&target, &lp, &d).await?;
                    Ok(response::raw_list(&rt, items, rv))
                }
            }
        }
        _ => Err(ApiError::from(kplane_types::Status::method_not_allowed(
            method.as_str(),
            &rt.plural,
        ))),
    }
}

/// A unit of the user's watch count (`--max-watches-per-user`; `system:masters` are
/// exempt, as from kube-apiserver's priority and fairness): a 429 with Retry-After when
/// the user holds the maximum.
fn watch_permit(
    state: &AppState,
    user: &UserInfo,
) -> ApiResult<Option<crate::quotas::Permit<(String, String)>>> {
    if user.groups.iter().any(|g| g == "system:masters") {
        return Ok(None);
    }
    let key = (user.username.clone(), user.uid.clone());
    let max = state.limits.max_watches_per_user;
    match state.watches.acquire(&key, max) {
        Some(p) => Ok(Some(p)),
        None => {
            state
                .metrics
                .limit_refusals
                .count(crate::limits::Refusal::WatchesPerUser);
            let mut e = ApiError::new(
                StatusReason::TooManyRequests,
                format!(
                    "too many watches: user {:?} has {max} open, the limit",
                    user.username
                ),
            );
            e.0.retry_after = Some(1);
            Err(e)
        }
    }
}

/// The watch response, holding its permit until the stream ends.
fn with_permit(
    resp: Response,
    permit: Option<crate::quotas::Permit<(String, String)>>,
) -> Response {
    match permit {
        Some(p) => resp.map(|b| Body::new(crate::conn_timeouts::GuardedBody::new(b, p))),
        None => resp,
    }
}

/// A `limit` above the server's page maximum is served as the maximum: the client gets a
/// continue token for the rest, as it would from any page (docs/security.md, "Limits").
fn clamp_page(state: &AppState, lp: &mut super::query::ListParams) {
    let max = state.limits.max_list_page;
    if lp.limit.is_some_and(|n| n > max) {
        lp.limit = Some(max);
        state
            .metrics
            .limit_refusals
            .count(crate::limits::Refusal::ListPageClamped);
    }
}

/// The request's [`AnnotationFilter`], as list options want it.
fn annotation_filter(req: &Request<Body>) -> Option<(String, String)> {
    req.extensions()
        .get::<AnnotationFilter>()
        .map(|f| (f.0.clone(), f.1.clone()))
}

/// Custom resources accept no strategic merge patch (415, as kube-apiserver answers).
fn cr_patch_types_only() -> ApiError {
    ApiError::new(
        StatusReason::UnsupportedMediaType,
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
    )
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

/// `GET|PUT|PATCH .../scale` (custom resources with a scale subresource).
async fn handle_scale(
    reg: &Arc<kplane_registry::Registry>,
    target: &Target,
    name: &str,
    (verb, user): (&Verb, &UserInfo),
    q: &Query,
    accept: &[MediaType],
    req: Request<Body>,
) -> ApiResult<Response> {
    negotiation::negotiate(accept, false, false)?;
    let method = req.method().clone();
    let user_agent = user_agent(&req);
    let ua = user_agent.as_deref();
    let json = |code: StatusCode, b: bytes::Bytes| {
        (code, [(header::CONTENT_TYPE, "application/json")], b).into_response()
    };
    match verb {
        // A scale is read whatever the `watch` parameter says (its verb is still `watch`).
        Verb::Get | Verb::Watch if method == Method::GET => {
            Ok(json(StatusCode::OK, reg.get_scale(target, name).await?))
        }
        Verb::Update => {
            let mut w = write_params(q, OptionsKind::Update, ua, user, &req)?;
            w.managed_subresource = Some("scale");
            let (ct, body) = read_body(req).await?;
            let scale = negotiation::decode_object(&body, negotiation::body_type(ct.as_deref())?)?;
            let out = reg.update_scale(target, name, scale, &w).await?;
            Ok(json(StatusCode::OK, out))
        }
        Verb::Patch => {
            let mut w = write_params(q, OptionsKind::Patch, ua, user, &req)?;
            w.managed_subresource = Some("scale");
            let (ct, body) = read_body(req).await?;
            let ty = match negotiation::body_type(ct.as_deref())? {
                BodyType::JsonPatch => PatchType::Json,
                BodyType::MergePatch => PatchType::Merge,
                _ => return Err(cr_patch_types_only()),
            };
            let out = reg
                .patch_scale(target, name, ty, patch_document(&body)?, &w)
                .await?;
            Ok(json(StatusCode::OK, out))
        }
        _ => Err(ApiError::from(kplane_types::Status::method_not_allowed(
            method.as_str(),
            "scale",
        ))),
    }
}

/// Decodes a JSON, merge or strategic merge patch body.
fn patch_document(body: &[u8]) -> ApiResult<kplane_registry::patch::Document> {
    let (value, duplicates) = super::json::parse_with_duplicates(body)
        .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?;
    Ok(kplane_registry::patch::Document { value, duplicates })
}

fn read_body_type(req: &Request<Body>) -> (Option<BodyType>, ()) {
    let ct = req
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    (negotiation::body_type(ct).ok(), ())
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

/// DeleteOptions from the body (JSON or protobuf) or, failing that, from the query.
fn delete_params(q: &Query, ct: Option<&str>, body: &[u8]) -> ApiResult<DeleteParams> {
    let mut d = DeleteParams::default();
    let from_body: Option<Value> = if body.iter().all(u8::is_ascii_whitespace) {
        None
    } else {
        Some(negotiation::decode_object(
            body,
            negotiation::body_type(ct)?,
        )?)
    };
    let mut dry: Vec<String> = q
        .get("dryRun")
        .map(|s| vec![s.to_string()])
        .unwrap_or_default();
    d.propagation_policy = q.get("propagationPolicy").map(str::to_string);
    d.grace_period_seconds = q.int("gracePeriodSeconds")?;
    if let Some(b) = &from_body {
        if let Some(kind) = b.get("kind").and_then(Value::as_str) {
            if kind != "DeleteOptions" {
                return Err(ApiError::bad_request(format!(
                    "expected DeleteOptions in the request body, got {kind}"
                )));
            }
        }
        if let Some(Value::Array(a)) = b.get("dryRun") {
            dry = a
                .iter()
                .filter_map(|v| v.as_str().map(str::to_string))
                .collect();
        }
        if let Some(p) = b.get("propagationPolicy").and_then(Value::as_str) {
            d.propagation_policy = Some(p.to_string());
        }
        if let Some(g) = b.get("gracePeriodSeconds").and_then(Value::as_i64) {
            d.grace_period_seconds = Some(g);
        }
        d.precondition_uid = b
            .pointer("/preconditions/uid")
            .and_then(Value::as_str)
            .map(str::to_string);
        d.precondition_rv = b
            .pointer("/preconditions/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string);
    }
    if let Some(p) = &d.propagation_policy {
        if !["Orphan", "Background", "Foreground"].contains(&p.as_str()) {
            return Err(ApiError::from(kplane_types::Status::invalid(
                "meta.k8s.io",
                "DeleteOptions",
                "",
                vec![kplane_types::Cause::not_supported(
                    "propagationPolicy",
                    &Value::String(p.clone()),
                    &["Foreground", "Background", "Orphan", "nil"],
                )],
            )));
        }
    }
    d.dry_run = query::parse_dry_run(&dry, OptionsKind::Delete)?;
    Ok(d)
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
