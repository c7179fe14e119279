//! One policy evaluated for one request and binding (`policy/validating/validator.go`),
//! synchronously, once per param: `matchConditions` (their own budget), then
//! `validations` under one runtime budget, the failed ones' `messageExpression`s under
//! what is left of it, then `auditAnnotations` under a budget of their own. Evaluation
//! errors go under the policy's failure policy; what comes out is the failures to act on
//! as the binding's actions say, the audit annotations' errors (which refuse the request
//! whatever those actions) and their published values.

use kplane_schema::policy::{
    match_conditions, Authorize, Evaluated, Evaluator, Inputs, Matched, OutOfBudget,
    ResourceAttributes, Values as CelValues, MAX_MESSAGE_BYTES, OUT_OF_BUDGET, RUNTIME_BUDGET,
};
use kplane_types::StatusReason;
use serde_json::Value;

use super::model::{Policy, Validation};

/// A failure to act on (upstream's `PolicyDecision` with action Deny).
#[derive(Clone, Debug, PartialEq)]
pub struct Decision {
    pub message: String,
    pub reason: StatusReason,
    /// The validation's index (0 for a failure that is not one validation's): the
    /// `expressionIndex` of an `Audit` action's annotation.
    pub index: usize,
}

impl Decision {
    fn error(message: String) -> Decision {
        Decision {
            message,
            reason: StatusReason::Invalid,
            index: 0,
        }
    }
}

/// What evaluating a policy for one binding found.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Evaluation {
    /// Failed validations and evaluation errors, for the binding's actions.
    pub decisions: Vec<Decision>,
    /// Errors of the audit annotations' expressions: they refuse the request.
    pub annotation_errors: Vec<Decision>,
    /// The audit annotations to publish (key, value), a value at most
    /// [`MAX_AUDIT_ANNOTATION_VALUE`] bytes.
    pub annotations: Vec<(String, String)>,
}

/// The longest audit annotation value published (upstream's
/// `maxAuditAnnotationValueLength`); longer ones are cut.
pub const MAX_AUDIT_ANNOTATION_VALUE: usize = 10 * 1024;

/// The request's values (JSON) but `params`, and its `authorizer`.
pub struct Values {
    pub object: Option<Value>,
    pub old_object: Option<Value>,
    pub request: Value,
    pub namespace: Option<Value>,
    /// The requester's authorizer and the request's own resource
    /// (`authorizer.requestResource`).
    pub authorizer: Option<(Authorize, ResourceAttributes)>,
}

impl std::fmt::Debug for Values {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Values")
            .field("object", &self.object)
            .field("old_object", &self.old_object)
            .field("request", &self.request)
            .field("namespace", &self.namespace)
            .field("authorizer", &self.authorizer.as_ref().map(|(_, r)| r))
            .finish()
    }
}

/// The failures of `p` for each of `params`, the audit annotations' errors among them.
#[cfg(test)]
pub fn evaluate(p: &Policy, v: &Values, params: &[Option<Value>]) -> Vec<Decision> {
    let e = evaluate_all(p, v, params);
    e.decisions.into_iter().chain(e.annotation_errors).collect()
}

/// What `p` finds for each of `params`.
pub fn evaluate_all(p: &Policy, v: &Values, params: &[Option<Value>]) -> Evaluation {
    let base = Inputs::new(CelValues {
        object: v.object.as_ref(),
        old_object: v.old_object.as_ref(),
        request: Some(&v.request),
        namespace_object: v.namespace.as_ref(),
        params: None,
    });
    let base = match &v.authorizer {
        Some((a, r)) => base.with_authorizer(a.clone(), r.clone()),
        None => base,
    };
    let mut out = Evaluation::default();
    for param in params {
        let inputs = base.with_params(param.as_ref());
        one(p, &inputs, &mut out);
    }
    out
}

/// An evaluation error under the failure policy.
fn failed(p: &Policy, message: String) -> Option<Decision> {
    (!p.ignore_failures).then(|| Decision::error(message))
}

/// What `p` finds with one param, into `into`.
fn one(p: &Policy, inputs: &Inputs, into: &mut Evaluation) {
    match match_conditions(&p.match_conditions, inputs) {
        Matched::No => return,
        Matched::Error(why) => return into.decisions.extend(failed(p, why)),
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
            Err(OutOfBudget) => return into.decisions.extend(failed(p, OUT_OF_BUDGET.into())),
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
            Err(why) => out.extend(failed(p, why).map(|d| Decision { index: i, ..d })),
            Ok(_) => match message(v, &mut messages) {
                Ok(m) => out.push(Decision {
                    message: m,
                    reason: v.reason,
                    index: i,
                }),
                Err(OutOfBudget) => out.extend(
                    failed(p, format!("failed messageExpression: {OUT_OF_BUDGET}"))
                        .map(|d| Decision { index: i, ..d }),
                ),
            },
        }
    }
    // Upstream's audit annotations that run out of budget replace everything this param
    // found with one failure (`validator.go`).
    let (annotations, errors) = (into.annotations.len(), into.annotation_errors.len());
    if audit_annotations(p, inputs, into).is_err() {
        into.annotations.truncate(annotations);
        into.annotation_errors.truncate(errors);
        into.decisions.extend(failed(p, OUT_OF_BUDGET.into()));
        return;
    }
    into.decisions.extend(out);
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

/// The audit annotations' values (a null one is left out) and errors, into `out`; `Err`
/// when they run out of budget.
fn audit_annotations(p: &Policy, inputs: &Inputs, out: &mut Evaluation) -> Result<(), OutOfBudget> {
    if p.audit_annotations.is_empty() {
        return Ok(());
    }
    let mut ev = Evaluator::new(inputs, &p.variables, RUNTIME_BUDGET);
    for a in &p.audit_annotations {
        let r = match &a.expr {
            Ok(e) => ev.eval(e),
            Err(why) => Ok(Err(format!("compilation error: {why}"))),
        };
        match r {
            Err(OutOfBudget) => return Err(OutOfBudget),
            Ok(Ok(Evaluated::String(v))) => {
                let v = v.trim();
                let mut end = v.len().min(MAX_AUDIT_ANNOTATION_VALUE);
                while !v.is_char_boundary(end) {
                    end -= 1;
                }
                if end > 0 {
                    out.annotations.push((a.key.clone(), v[..end].to_string()));
                }
            }
            Ok(Ok(Evaluated::Null)) => {}
            Ok(Ok(Evaluated::Bool(_))) => out
                .annotation_errors
                .push(unsupported(a.source.trim(), "bool")),
            Ok(Ok(Evaluated::Other(t))) => {
                out.annotation_errors.push(unsupported(a.source.trim(), t))
            }
            Ok(Err(why)) => out.annotation_errors.extend(failed(p, why)),
        }
    }
    Ok(())
}

fn unsupported(expr: &str, ty: &str) -> Decision {
    Decision::error(format!(
        "valueExpression '{expr}' resulted in unsupported return type: {ty}. Return type must be either string or null."
    ))
}
