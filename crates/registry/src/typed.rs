//! Typed decoding of built-in objects: unknown fields are pruned (never stored) and, per
//! `fieldValidation`, rejected (Strict) or warned about (Warn); duplicate fields likewise;
//! values of the wrong JSON type are always a 400, as Go's typed decode makes them.

use kplane_types::{Cause, Status};
use serde_json::Value;

use super::catalog::ResourceType;
use crate::error::{ApiError, ApiResult};
use crate::options::{FieldValidation, WriteParams};

fn cannot_handle(rt: &ResourceType, detail: &str) -> ApiError {
    ApiError::bad_request(format!(
        "{kind} in version \"{v}\" cannot be handled as a {kind}: {detail}",
        kind = rt.kind,
        v = rt.version
    ))
}

/// Checks and prunes `obj` (in `rt`'s API version) against its schema: the CRD's
/// structural schema for custom resources, the built-in definition otherwise.
pub fn typed_decode(
    rt: &ResourceType,
    obj: &mut Value,
    w: &WriteParams,
    duplicates: &[String],
) -> ApiResult<()> {
    let unknown = prune(rt, obj)?;
    report_field_problems(rt, w, &unknown, duplicates)
}

/// [`typed_decode`] of the result of a JSON, merge or strategic merge patch: strict
/// decoding problems are reported as kube-apiserver's patch handler words them (422 on
/// the field `patch`, with the patched object as the value).
pub fn typed_decode_patched(
    rt: &ResourceType,
    obj: &mut Value,
    w: &WriteParams,
    duplicates: &[String],
) -> ApiResult<()> {
    let patched = match w.field_validation {
        FieldValidation::Strict => serde_json::to_string(&*obj).unwrap_or_default(),
        _ => String::new(),
    };
    let unknown = prune(rt, obj)?;
    enforce(w, problems(&unknown, duplicates), |joined| {
        ApiError::from(Status::invalid(
            "",
            "",
            "",
            vec![Cause::invalid(
                "patch",
                &Value::String(patched),
                &format!("strict decoding error: {joined}"),
            )],
        ))
    })
}

/// Prunes undeclared fields (returning their paths); wrong JSON types are a 400.
fn prune(rt: &ResourceType, obj: &mut Value) -> ApiResult<Vec<String>> {
    if rt.custom.is_some() {
        return super::custom::prune(rt, obj);
    }
    let report = kplane_openapi::typed::prune_and_check(&rt.schema_name, obj);
    if let Some(first) = report.type_errors.first() {
        return Err(cannot_handle(
            rt,
            &format!("json: cannot unmarshal {first}"),
        ));
    }
    Ok(report.unknown)
}

fn problems(unknown: &[String], duplicates: &[String]) -> Vec<String> {
    unknown
        .iter()
        .map(|p| format!("unknown field \"{p}\""))
        .chain(
            duplicates
                .iter()
                .map(|p| format!("duplicate field \"{p}\"")),
        )
        .collect()
}

/// Applies `fieldValidation` to pruned (unknown) and duplicated fields: Strict fails with
/// `strict decoding error`, Warn adds Warning headers, Ignore does nothing.
pub fn report_field_problems(
    rt: &ResourceType,
    w: &WriteParams,
    unknown: &[String],
    duplicates: &[String],
) -> ApiResult<()> {
    enforce(w, problems(unknown, duplicates), |joined| {
        cannot_handle(rt, &format!("strict decoding error: {joined}"))
    })
}

/// Applies `fieldValidation` to strict-decoding `problems`: Strict fails with the error
/// `strict` makes of them (joined with ", "), Warn adds a Warning header per problem,
/// Ignore does nothing.
pub fn enforce(
    w: &WriteParams,
    problems: Vec<String>,
    strict: impl FnOnce(&str) -> ApiError,
) -> ApiResult<()> {
    if problems.is_empty() {
        return Ok(());
    }
    match w.field_validation {
        FieldValidation::Strict => Err(strict(&problems.join(", "))),
        FieldValidation::Warn => {
            for p in problems {
                w.warnings.push(p);
            }
            Ok(())
        }
        FieldValidation::Ignore => Ok(()),
    }
}
