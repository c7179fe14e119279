//! Rules on a change of a Job's status (`ValidateJobStatusUpdate` with the options
//! kube-apiserver 1.32 uses, `JobManagedBy` being on): counters, conditions, times and
//! index lists must stay consistent, terminal conditions stay, counters never decrease.
//! Each consistency rule applies only when a field it reads changed, so old objects that
//! predate a rule can still be written.

use kplane_types::{Cause, CauseType};
use serde_json::{json, Value};

use super::job_policies::{first_overlap, indexes_total};
use super::pod_template::{invalid_shown, required};

/// What the rules read from one Job.
struct View<'a> {
    spec: &'a Value,
    status: &'a Value,
}

impl<'a> View<'a> {
    fn of(job: &'a Value) -> View<'a> {
        static EMPTY: Value = Value::Null;
        View {
            spec: job.get("spec").unwrap_or(&EMPTY),
            status: job.get("status").unwrap_or(&EMPTY),
        }
    }

    fn count(&self, k: &str) -> i64 {
        self.status.get(k).and_then(Value::as_i64).unwrap_or(0)
    }

    fn opt(&self, k: &str) -> Option<&'a Value> {
        self.status.get(k).filter(|v| !v.is_null())
    }

    fn cond(&self, ty: &str) -> bool {
        self.status
            .get("conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter().any(|c| {
                    c.get("type").and_then(Value::as_str) == Some(ty)
                        && c.get("status").and_then(Value::as_str) == Some("True")
                })
            })
    }

    fn complete(&self) -> bool {
        self.cond("Complete")
    }

    fn failed(&self) -> bool {
        self.cond("Failed")
    }

    fn finished(&self) -> bool {
        self.complete() || self.failed()
    }

    fn completed_indexes(&self) -> &'a str {
        self.status
            .get("completedIndexes")
            .and_then(Value::as_str)
            .unwrap_or("")
    }

    fn failed_indexes(&self) -> Option<&'a str> {
        self.opt("failedIndexes").and_then(Value::as_str)
    }

    fn completions(&self) -> Option<i64> {
        self.spec.get("completions").and_then(Value::as_i64)
    }

    fn uncounted(&self) -> (Vec<&'a str>, Vec<&'a str>) {
        let list = |k: &str| -> Vec<&'a str> {
            self.status
                .pointer(&format!("/uncountedTerminatedPods/{k}"))
                .and_then(Value::as_array)
                .map_or(Vec::new(), |a| {
                    a.iter().map(|v| v.as_str().unwrap_or("")).collect()
                })
        };
        (list("succeeded"), list("failed"))
    }
}

fn conditions(detail: &str) -> Cause {
    Cause::new(
        CauseType::FieldValueInvalid,
        "status.conditions",
        format!("Invalid value: {detail}"),
    )
}

fn shown(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "null".into(),
        Some(Value::String(s)) => kplane_types::validation::go_quote(s),
        Some(other) => other.to_string(),
    }
}

/// `ValidateJobStatusUpdate` for a status that changed from `old`'s.
pub fn validate_status_update(job: &Value, old: &Value) -> Vec<Cause> {
    let (n, o) = (View::of(job), View::of(old));
    let mut causes = validate_status(&n, &o);
    for ty in ["Failed", "Complete", "FailureTarget"] {
        if o.cond(ty) && !n.cond(ty) {
            causes.push(conditions(&format!(
                "cannot disable the terminal {ty}=True condition"
            )));
        }
    }
    if n.count("failed") < o.count("failed") {
        causes.push(Cause::invalid(
            "status.failed",
            &json!(n.count("failed")),
            "cannot decrease the failed counter",
        ));
    }
    let indexed = n.spec.get("completionMode").and_then(Value::as_str) == Some("Indexed");
    let elastic = indexed && n.spec.get("completions") == n.spec.get("parallelism");
    if !elastic && n.count("succeeded") < o.count("succeeded") {
        causes.push(Cause::invalid(
            "status.succeeded",
            &json!(n.count("succeeded")),
            "cannot decrease the succeeded counter",
        ));
    }
    if let (Some(nc), Some(oc)) = (n.opt("completionTime"), o.opt("completionTime")) {
        if nc != oc {
            causes.push(Cause::invalid(
                "status.completionTime",
                nc,
                "completionTime cannot be mutated",
            ));
        }
    }
    let start_changed = n.opt("startTime") != o.opt("startTime");
    let suspended = n.spec.get("suspend") == Some(&Value::Bool(true));
    if start_changed && o.opt("startTime").is_some() && !suspended {
        causes.push(required(
            "status.startTime",
            "startTime cannot be removed for unsuspended job",
        ));
    }
    let met = |v: &View| v.cond("SuccessCriteriaMet");
    if met(&o) && !met(&n) {
        causes.push(conditions(
            "cannot disable the SuccessCriteriaMet=True condition",
        ));
    }
    if o.complete() && !met(&o) && met(&n) {
        causes.push(conditions(
            "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions",
        ));
    }
    causes
}

/// `validateJobStatus` with the options derived from what changed between `o` and `n`.
fn validate_status(n: &View, o: &View) -> Vec<Cause> {
    let mut causes = Vec::new();
    for k in ["active", "succeeded", "failed", "ready", "terminating"] {
        if let Some(v) = n.opt(k).and_then(Value::as_i64).filter(|v| *v < 0) {
            causes.push(Cause::invalid(
                format!("status.{k}"),
                &json!(v),
                "must be greater than or equal to 0",
            ));
        }
    }
    let (succ, fail) = n.uncounted();
    let mut seen = std::collections::HashSet::new();
    for (which, list) in [("succeeded", &succ), ("failed", &fail)] {
        for (i, uid) in list.iter().enumerate() {
            let p = format!("status.uncountedTerminatedPods.{which}[{i}]");
            if uid.is_empty() {
                causes.push(Cause::invalid(p, &json!(uid), "must not be empty"));
            } else if !seen.insert(*uid) {
                causes.push(Cause::duplicate(p, &json!(uid)));
            }
        }
    }
    let changed = |f: &dyn Fn(&View) -> bool| f(n) != f(o);
    let complete_ch = changed(&|v| v.complete());
    let failed_ch = changed(&|v| v.failed());
    let finished_ch = changed(&|v| v.finished());
    let target_ch = changed(&|v| v.cond("FailureTarget"));
    let met_ch = changed(&|v| v.cond("SuccessCriteriaMet"));
    let completed_ch = n.completed_indexes() != o.completed_indexes();
    let failed_ix_ch = n.failed_indexes() != o.failed_indexes();
    let active_ch = n.count("active") != o.count("active");
    let start_ch = n.opt("startTime") != o.opt("startTime");
    let completion_ch = n.opt("completionTime") != o.opt("completionTime");
    let uncounted_ch = n.uncounted() != o.uncounted();
    let ready_ch = n.opt("ready") != o.opt("ready");
    let terminating_ch = n.opt("terminating") != o.opt("terminating");

    if (complete_ch || failed_ch) && n.complete() && n.failed() {
        causes.push(conditions(
            "cannot set Complete=True and Failed=true conditions",
        ));
    }
    if (complete_ch || target_ch) && n.complete() && n.cond("FailureTarget") {
        causes.push(conditions(
            "cannot set Complete=True and FailureTarget=true conditions",
        ));
    }
    let completion = n.opt("completionTime");
    if (complete_ch || completion_ch) && completion.is_some() && !n.complete() {
        causes.push(invalid_shown(
            "status.completionTime",
            &shown(completion),
            "cannot set completionTime when there is no Complete=True condition",
        ));
    }
    if (complete_ch || completion_ch) && completion.is_none() && n.complete() {
        causes.push(required(
            "status.completionTime",
            "completionTime is required for Complete jobs",
        ));
    }
    if start_ch || completion_ch {
        if let (Some(s), Some(c)) = (
            n.opt("startTime").and_then(Value::as_str),
            completion.and_then(Value::as_str),
        ) {
            if before(c, s) {
                causes.push(invalid_shown(
                    "status.completionTime",
                    &shown(completion),
                    "completionTime cannot be set before startTime",
                ));
            }
        }
    }
    if (failed_ch || failed_ix_ch) && n.failed() && !n.cond("FailureTarget") {
        causes.push(conditions(
            "cannot set Failed=True condition without the FailureTarget=true condition",
        ));
    }
    if (complete_ch || met_ch) && n.complete() && !n.cond("SuccessCriteriaMet") {
        causes.push(conditions(
            "cannot set Complete=True condition without the SuccessCriteriaMet=true condition",
        ));
    }
    let finished = n.finished();
    if (finished_ch || active_ch) && n.count("active") > 0 && finished {
        causes.push(Cause::invalid(
            "status.active",
            &json!(n.count("active")),
            "active>0 is invalid for finished job",
        ));
    }
    if (finished_ch || start_ch) && n.opt("startTime").is_none() && finished {
        causes.push(required(
            "status.startTime",
            "startTime is required for finished job",
        ));
    }
    if (finished_ch || uncounted_ch) && finished && (!succ.is_empty() || !fail.is_empty()) {
        causes.push(invalid_shown(
            "status.uncountedTerminatedPods",
            &shown(n.opt("uncountedTerminatedPods")),
            "uncountedTerminatedPods needs to be empty for finished job",
        ));
    }
    causes.extend(index_rules(n, completed_ch, failed_ix_ch));
    if (finished_ch || terminating_ch)
        && n.opt("terminating").and_then(Value::as_i64).unwrap_or(0) > 0
        && finished
    {
        causes.push(Cause::invalid(
            "status.terminating",
            n.opt("terminating").unwrap_or(&Value::Null),
            "terminating>0 is invalid for finished job",
        ));
    }
    if ready_ch || active_ch {
        if let Some(r) = n.opt("ready").and_then(Value::as_i64) {
            if r > n.count("active") {
                causes.push(Cause::invalid(
                    "status.ready",
                    &json!(r),
                    "cannot set more ready pods than active",
                ));
            }
        }
    }
    let met = n.cond("SuccessCriteriaMet");
    if met && n.failed() {
        causes.push(conditions(
            "cannot set SuccessCriteriaMet=True and Failed=true conditions",
        ));
    }
    if met && n.cond("FailureTarget") {
        causes.push(conditions(
            "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions",
        ));
    }
    let has_policy = n.spec.get("successPolicy").is_some_and(|v| !v.is_null());
    if has_policy && !met && n.complete() {
        causes.push(conditions(
            "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True",
        ));
    }
    causes
}

/// The completed/failed index list rules.
fn index_rules(n: &View, completed_ch: bool, failed_ch: bool) -> Vec<Cause> {
    let mut causes = Vec::new();
    let completed = n.completed_indexes();
    let failed = n.failed_indexes();
    let per_index = n
        .spec
        .get("backoffLimitPerIndex")
        .is_some_and(|v| !v.is_null());
    let indexed = n.spec.get("completionMode").and_then(Value::as_str) == Some("Indexed");
    if let Some(c) = n.completions() {
        if completed_ch {
            if let Err(e) = indexes_total(completed, c) {
                causes.push(Cause::invalid(
                    "status.completedIndexes",
                    &json!(completed),
                    &format!("error parsing completedIndexes: {e}"),
                ));
            }
        }
        if let (true, true, Some(f)) = (failed_ch, per_index, failed) {
            if let Err(e) = indexes_total(f, c) {
                causes.push(Cause::invalid(
                    "status.failedIndexes",
                    &json!(f),
                    &format!("error parsing failedIndexes: {e}"),
                ));
            }
        }
    }
    if completed_ch && !completed.is_empty() && !indexed {
        causes.push(Cause::invalid(
            "status.completedIndexes",
            &json!(completed),
            "cannot set non-empty completedIndexes when non-indexed completion mode",
        ));
    }
    if let (true, false, Some(f)) = (failed_ch, per_index, failed) {
        causes.push(Cause::invalid(
            "status.failedIndexes",
            &json!(f),
            "cannot set non-null failedIndexes when backoffLimitPerIndex is null",
        ));
    }
    if failed_ch || completed_ch {
        if let (Some(c), Some(f)) = (n.completions(), failed) {
            if let Some(ix) = first_overlap(completed, f, c) {
                causes.push(Cause::invalid(
                    "status.failedIndexes",
                    &json!(f),
                    &format!("failedIndexes and completedIndexes overlap at index: {ix}"),
                ));
            }
        }
    }
    causes
}

/// Whether RFC 3339 time `a` is before `b` (false when either does not parse).
fn before(a: &str, b: &str) -> bool {
    match (
        chrono::DateTime::parse_from_rfc3339(a),
        chrono::DateTime::parse_from_rfc3339(b),
    ) {
        (Ok(a), Ok(b)) => a < b,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(status: Value) -> Value {
        json!({"spec": {"completions": 3, "parallelism": 3, "completionMode": "NonIndexed"}, "status": status})
    }

    fn check(old: Value, new: Value) -> Vec<String> {
        validate_status_update(&job(new), &job(old))
            .iter()
            .map(Cause::render)
            .collect()
    }

    #[test]
    fn status_rules_apply_to_what_changed() {
        let t0 = "2024-01-01T00:00:00Z";
        let t1 = "2024-01-01T00:01:00Z";
        let cases: &[(&str, Value, Value, &[&str])] = &[
            ("a running job gets counts", json!({}), json!({"active": 2, "ready": 1, "startTime": t0}), &[]),
            ("negative counter", json!({}), json!({"active": -1}), &["status.active: Invalid value: -1: must be greater than or equal to 0"]),
            ("more ready than active", json!({"active": 1}), json!({"active": 1, "ready": 2}), &["status.ready: Invalid value: 2: cannot set more ready pods than active"]),
            ("succeeded decreases", json!({"succeeded": 2}), json!({"succeeded": 1}), &["status.succeeded: Invalid value: 1: cannot decrease the succeeded counter"]),
            (
                "complete without its companions",
                json!({"startTime": t0}),
                json!({"startTime": t0, "active": 1, "conditions": [{"type": "Complete", "status": "True"}]}),
                &[
                    "status.completionTime: Required value: completionTime is required for Complete jobs",
                    "status.conditions: Invalid value: cannot set Complete=True condition without the SuccessCriteriaMet=true condition",
                    "status.active: Invalid value: 1: active>0 is invalid for finished job",
                ],
            ),
            (
                "a proper completion",
                json!({"startTime": t0, "succeeded": 2}),
                json!({"startTime": t0, "succeeded": 3, "completionTime": t1, "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}),
                &[],
            ),
            (
                "completion before start",
                json!({"startTime": t1}),
                json!({"startTime": t1, "completionTime": t0, "conditions": [{"type": "SuccessCriteriaMet", "status": "True"}, {"type": "Complete", "status": "True"}]}),
                &["status.completionTime: Invalid value: \"2024-01-01T00:00:00Z\": completionTime cannot be set before startTime"],
            ),
            (
                "failed without failure target",
                json!({"startTime": t0}),
                json!({"startTime": t0, "conditions": [{"type": "Failed", "status": "True"}]}),
                &["status.conditions: Invalid value: cannot set Failed=True condition without the FailureTarget=true condition"],
            ),
            (
                "terminal condition removed",
                json!({"startTime": t0, "conditions": [{"type": "FailureTarget", "status": "True"}]}),
                json!({"startTime": t0}),
                &["status.conditions: Invalid value: cannot disable the terminal FailureTarget=True condition"],
            ),
            (
                "start time removed",
                json!({"startTime": t0}),
                json!({}),
                &["status.startTime: Required value: startTime cannot be removed for unsuspended job"],
            ),
            (
                "completed indexes on a non-indexed job",
                json!({}),
                json!({"completedIndexes": "0-1"}),
                &["status.completedIndexes: Invalid value: \"0-1\": cannot set non-empty completedIndexes when non-indexed completion mode"],
            ),
        ];
        for (what, old, new, want) in cases {
            assert_eq!(check(old.clone(), new.clone()), *want, "{what}");
        }
    }
}
