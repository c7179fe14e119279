//! One policy evaluated for one request and binding (`policy/validating/validator.go`),
//! synchronously, once per param: `matchConditions` (their own budget), then
//! `validations` under one runtime budget, the failed ones' `messageExpression`s under
//! what is left of it, then `auditAnnotations` under a budget of their own (their values
//! are dropped; an error still counts). Evaluation errors go under the policy's failure
//! policy; what comes out is the list of failures to act on.

use kplane_schema::policy::{
    match_conditions, Evaluated, Evaluator, Inputs, Matched, OutOfBudget, Values as CelValues,
    MAX_MESSAGE_BYTES, OUT_OF_BUDGET, RUNTIME_BUDGET,
};
use kplane_types::StatusReason;
use serde_json::Value;

use super::model::{Policy, Validation};

/// A failure to act on (upstream's `PolicyDecision` with action Deny).
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub message: String,
    pub reason: StatusReason,
}

impl Decision {
    fn error(message: String) -> Decision {
        Decision {
            message,
            reason: StatusReason::Invalid,
        }
    }
}

/// The request's values (JSON) but `params`.
#[derive(Debug)]
pub struct Values {
    pub object: Option<Value>,
    pub old_object: Option<Value>,
    pub request: Value,
    pub namespace: Option<Value>,
}

/// The failures of `p` for each of `params`.
pub fn evaluate(p: &Policy, v: &Values, params: &[Option<Value>]) -> Vec<Decision> {
    let base = Inputs::new(CelValues {
        object: v.object.as_ref(),
        old_object: v.old_object.as_ref(),
        request: Some(&v.request),
        namespace_object: v.namespace.as_ref(),
        params: None,
    });
    let mut out = Vec::new();
    for param in params {
        let inputs = base.with_params(param.as_ref());
        out.extend(one(p, &inputs));
    }
    out
}

/// An evaluation error under the failure policy.
fn failed(p: &Policy, message: String) -> Option<Decision> {
    (!p.ignore_failures).then(|| Decision::error(message))
}

/// The failures of `p` with one param.
fn one(p: &Policy, inputs: &Inputs) -> Vec<Decision> {
    match match_conditions(&p.match_conditions, inputs) {
        Matched::No => return Vec::new(),
        Matched::Error(why) => return failed(p, why).into_iter().collect(),
        Matched::Yes => {}
    }
    let mut ev = Evaluator::new(inputs, &p.variables, RUNTIME_BUDGET);
    let mut outcomes: Vec<(usize, Result<bool, String>)> = Vec::new();
    for (i, v) in p.validations.iter().enumerate() {
        let r = match &v.expr {
            Ok(e) => ev.eval(e),
            Err(why) => Ok(Err(format!("compilation error: {why}"))),
        };
        match r {
            Err(OutOfBudget) => return failed(p, OUT_OF_BUDGET.into()).into_iter().collect(),
            Ok(Ok(Evaluated::Bool(true))) => {}
            Ok(Ok(_)) => outcomes.push((i, Ok(false))),
            Ok(Err(why)) => outcomes.push((i, Err(why))),
        }
    }
    let mut messages = Evaluator::new(inputs, &[], ev.remaining());
    let mut out = Vec::new();
    for (i, outcome) in outcomes {
        let v = &p.validations[i];
        match outcome {
            Err(why) => out.extend(failed(p, why)),
            Ok(_) => match message(v, &mut messages) {
                Ok(m) => out.push(Decision {
                    message: m,
                    reason: v.reason,
                }),
                Err(OutOfBudget) => out.extend(failed(
                    p,
                    format!("failed messageExpression: {OUT_OF_BUDGET}"),
                )),
            },
        }
    }
    out.extend(audit_annotations(p, inputs));
    out
}

/// The message of a failed validation: its `messageExpression`'s (trimmed, at most 5 KiB,
/// one line), else its `message`, else `failed expression: <expression>`.
fn message(v: &Validation, ev: &mut Evaluator<'_>) -> Result<String, OutOfBudget> {
    if let Some(Ok(e)) = &v.message_expr {
        if let Ok(Evaluated::String(s)) = ev.eval(e)? {
            let t = s.trim();
            if !t.is_empty() && t.len() <= MAX_MESSAGE_BYTES && !t.contains('\n') {
                return Ok(t.to_string());
            }
        }
    }
    let m = v.message.trim();
    if !m.is_empty() {
        return Ok(m.to_string());
    }
    Ok(format!("failed expression: {}", v.source.trim()))
}

/// The errors of the audit annotations' value expressions (the values are not recorded).
fn audit_annotations(p: &Policy, inputs: &Inputs) -> Vec<Decision> {
    if p.audit_annotations.is_empty() {
        return Vec::new();
    }
    let mut ev = Evaluator::new(inputs, &p.variables, RUNTIME_BUDGET);
    let mut out = Vec::new();
    for a in &p.audit_annotations {
        let r = match &a.expr {
            Ok(e) => ev.eval(e),
            Err(why) => Ok(Err(format!("compilation error: {why}"))),
        };
        match r {
            Err(OutOfBudget) => return failed(p, OUT_OF_BUDGET.into()).into_iter().collect(),
            Ok(Ok(Evaluated::String(_) | Evaluated::Null)) => {}
            Ok(Ok(Evaluated::Bool(_))) => out.push(unsupported(a.source.trim(), "bool")),
            Ok(Ok(Evaluated::Other(t))) => out.push(unsupported(a.source.trim(), t)),
            Ok(Err(why)) => out.extend(failed(p, why)),
        }
    }
    out
}

fn unsupported(expr: &str, ty: &str) -> Decision {
    Decision::error(format!(
        "valueExpression '{expr}' resulted in unsupported return type: {ty}. Return type must be either string or null."
    ))
}
