//! The requests that are not one of the verbs on a stored object: reviews (created and
//! answered, never stored) and the `token`, `log` and `scale` subresources.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::Request;
use axum::http::{header, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use kplane_types::{RequestInfo, UserInfo, Verb};

use super::super::negotiation::{self, BodyType, MediaType, Representation};
use super::super::query::OptionsKind;
use super::super::{reviews, AppState};
use super::write::{cr_patch_types_only, patch_document};
use super::{read_body, request_warnings, user_agent, write_params, Call};
use kplane_registry::error::{ApiError, ApiResult};
use kplane_registry::patch::PatchType;
use kplane_registry::ResourceType;

/// A review (a type that is not stored: `TokenReview`, `SubjectAccessReview`, ...): only
/// created, and answered at once.
pub(super) async fn review(
    state: &Arc<AppState>,
    rt: &Arc<ResourceType>,
    info: &RequestInfo,
    user: &UserInfo,
    accept: &[MediaType],
    named: bool,
    req: Request<Body>,
) -> ApiResult<Response> {
    if info.verb != Verb::Create || named {
        return Err(ApiError::from(kplane_types::Status::method_not_allowed(
            req.method().as_str(),
            &rt.plural,
        )));
    }
    let (ct, body) = read_body(req).await?;
    let obj = negotiation::decode_object(&body, negotiation::body_type(ct.as_deref())?)?;
    // Reviews have no Table form: a Table-only Accept is 406 (conformance).
    negotiation::negotiate(accept, false, false).and_then(|r| {
        if r == Representation::Object {
            Ok(())
        } else {
            Err(negotiation::not_acceptable())
        }
    })?;
    let out = reviews::create(state, rt, info, user, obj).await?;
    Ok((
        StatusCode::CREATED,
        [(header::CONTENT_TYPE, "application/json")],
        out.to_string(),
    )
        .into_response())
}

/// `POST .../serviceaccounts/<name>/token` (a TokenRequest).
pub(super) async fn token(c: Call<'_>, name: &str) -> ApiResult<Response> {
    let method = c.req.method().clone();
    if method != Method::POST {
        return Err(ApiError::from(kplane_types::Status::method_not_allowed(
            method.as_str(),
            "serviceaccounts/token",
        )));
    }
    negotiation::negotiate(c.accept, false, false).and_then(|r| {
        if r == Representation::Object {
            Ok(())
        } else {
            Err(negotiation::not_acceptable())
        }
    })?;
    let recorder = request_warnings(&c.req);
    let (ct, body) = read_body(c.req).await?;
    let obj = negotiation::decode_object(&body, negotiation::body_type(ct.as_deref())?)?;
    let state = c.state;
    let (out, warnings) =
        super::super::token_request::create(state, state.registry.as_ref(), &c.target, name, obj)
            .await?;
    for text in warnings.texts() {
        recorder.push(text);
    }
    Ok((
        StatusCode::CREATED,
        [(header::CONTENT_TYPE, "application/json")],
        out.to_string(),
    )
        .into_response())
}

/// `GET .../pods/<name>/log`.
pub(super) async fn log(c: Call<'_>, name: &str) -> ApiResult<Response> {
    let method = c.req.method().clone();
    super::super::pod_log::serve(c.state, &c.target, name, &method, c.req.uri().query()).await
}

/// `GET|PUT|PATCH .../scale` (custom resources with a scale subresource).
pub(super) async fn scale(c: Call<'_>, name: &str) -> ApiResult<Response> {
    negotiation::negotiate(c.accept, false, false)?;
    let (reg, target, q, user) = (&c.state.registry, &c.target, &c.q, c.user);
    let req = c.req;
    let method = req.method().clone();
    let user_agent = user_agent(&req);
    let ua = user_agent.as_deref();
    let json = |code: StatusCode, b: bytes::Bytes| {
        (code, [(header::CONTENT_TYPE, "application/json")], b).into_response()
    };
    match &c.info.verb {
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
