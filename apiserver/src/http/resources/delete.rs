//! The deleting verbs: delete and deletecollection.

use axum::body::Body;
use axum::extract::Request;
use axum::http::StatusCode;
use axum::response::Response;
use kplane_types::UserInfo;
use serde_json::Value;

use super::super::negotiation;
use super::super::query::{self, OptionsKind, Query};
use super::super::response;
use super::super::table::TableOptions;
use super::{read_body, request_audit, request_warnings, require_verb, Call};
use kplane_registry::error::{ApiError, ApiResult};
use kplane_registry::{DeleteOutcome, DeleteParams};

/// A `DELETE` of one object: the object gone (a Status) or marked (the object).
pub(super) async fn one(c: Call<'_>, name: &str) -> ApiResult<Response> {
    let d = params(c.req, &c.q, c.user).await?;
    let rt = &c.rt;
    require_verb(rt, "delete")?;
    match c.state.registry.delete(&c.target, name, &d).await? {
        DeleteOutcome::Deleted(obj) => {
            let uid = obj
                .pointer("/metadata/uid")
                .and_then(Value::as_str)
                .unwrap_or("");
            Ok(response::delete_success(rt, name, uid))
        }
        DeleteOutcome::Marked(bytes) => {
            let repr = negotiation::negotiate(c.accept, false, false)?;
            response::object(StatusCode::OK, rt, bytes, repr, &TableOptions::default())
        }
    }
}

/// A `DELETE` of a collection: the objects deleted or marked.
pub(super) async fn collection(c: Call<'_>) -> ApiResult<Response> {
    let d = params(c.req, &c.q, c.user).await?;
    require_verb(&c.rt, "deletecollection")?;
    let lp = super::super::query::list_params(&c.q)?;
    let (items, rv) = c
        .state
        .registry
        .delete_collection(&c.target, &lp, &d)
        .await?;
    Ok(response::raw_list(&c.rt, items, rv))
}

/// The request's body read and its delete options decoded, with the requester, warnings
/// and audit annotations.
async fn params(req: Request<Body>, q: &Query, user: &UserInfo) -> ApiResult<DeleteParams> {
    let warnings = request_warnings(&req);
    let audit = request_audit(&req);
    let (ct, body) = read_body(req).await?;
    let mut d = delete_params(q, ct.as_deref(), &body)?;
    d.user = Some(user.clone());
    d.warnings = warnings;
    d.audit = audit;
    Ok(d)
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
