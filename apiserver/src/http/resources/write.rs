//! The writing verbs: create, update, and patch (server-side apply among them).

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, StatusCode};
use axum::response::Response;
use kplane_types::StatusReason;

use super::super::negotiation::{self, BodyType};
use super::super::query::OptionsKind;
use super::super::response;
use super::super::table::TableOptions;
use super::{read_body, require_verb, user_agent, write_params, Call};
use kplane_registry::error::{ApiError, ApiResult};
use kplane_registry::patch::PatchType;

/// A `POST` to a collection.
pub(super) async fn create(c: Call<'_>) -> ApiResult<Response> {
    let rt = &c.rt;
    require_verb(rt, "create")?;
    if rt.namespaced && c.target.namespace.is_none() {
        return Err(ApiError::from(kplane_types::Status::method_not_allowed(
            "POST", &rt.plural,
        )));
    }
    let ua = user_agent(&c.req);
    let mut w = write_params(&c.q, OptionsKind::Create, ua.as_deref(), c.user, &c.req)?;
    let repr = negotiation::negotiate(c.accept, false, false)?;
    let (ct, body) = read_body(c.req).await?;
    let (obj, dups) =
        negotiation::decode_object_checked(&body, negotiation::body_type(ct.as_deref())?)?;
    w.duplicates = dups;
    let bytes = c.state.registry.create(&c.target, obj, &w).await?;
    response::object(
        StatusCode::CREATED,
        rt,
        bytes,
        repr,
        &TableOptions::default(),
    )
}

/// A `PUT` of one object (or of its status).
pub(super) async fn update(c: Call<'_>, name: &str) -> ApiResult<Response> {
    require_verb(&c.rt, "update")?;
    let ua = user_agent(&c.req);
    let mut w = write_params(&c.q, OptionsKind::Update, ua.as_deref(), c.user, &c.req)?;
    let repr = negotiation::negotiate(c.accept, false, false)?;
    let (ct, body) = read_body(c.req).await?;
    let (obj, dups) =
        negotiation::decode_object_checked(&body, negotiation::body_type(ct.as_deref())?)?;
    w.duplicates = dups;
    let (bytes, created) = c
        .state
        .registry
        .update(&c.target, name, c.subresource.as_deref(), obj, &w)
        .await?;
    let code = if created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    response::object(code, &c.rt, bytes, repr, &TableOptions::default())
}

/// A `PATCH` of one object (or of its status): JSON, merge or strategic merge patch, or
/// server-side apply.
pub(super) async fn patch(c: Call<'_>, name: &str) -> ApiResult<Response> {
    let rt = &c.rt;
    require_verb(rt, "patch")?;
    let ua = user_agent(&c.req);
    let w = write_params(&c.q, OptionsKind::Patch, ua.as_deref(), c.user, &c.req)?;
    if w.force.is_some() {
        let (ct, _) = read_body_type(&c.req);
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
    let repr = negotiation::negotiate(c.accept, false, false)?;
    let (ct, body) = read_body(c.req).await?;
    let body_type = negotiation::body_type(ct.as_deref())?;
    let reg = &c.state.registry;
    let subresource = c.subresource.as_deref();
    if body_type == BodyType::ApplyPatch {
        let (value, duplicates) = negotiation::parse_apply_body(&body)?;
        let doc = kplane_registry::patch::Document { value, duplicates };
        let (bytes, created) = reg.apply(&c.target, name, subresource, doc, &w).await?;
        let code = if created {
            StatusCode::CREATED
        } else {
            StatusCode::OK
        };
        return response::object(code, rt, bytes, repr, &TableOptions::default());
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
    let bytes = reg.patch(&c.target, name, subresource, ty, doc, &w).await?;
    response::object(StatusCode::OK, rt, bytes, repr, &TableOptions::default())
}

/// Custom resources accept no strategic merge patch (415, as kube-apiserver answers).
pub(super) fn cr_patch_types_only() -> ApiError {
    ApiError::new(
        StatusReason::UnsupportedMediaType,
        "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
    )
}

/// Decodes a JSON, merge or strategic merge patch body.
pub(super) fn patch_document(body: &[u8]) -> ApiResult<kplane_registry::patch::Document> {
    let (value, duplicates) = super::super::json::parse_with_duplicates(body)
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
