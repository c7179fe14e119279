//! A Job's pod failure policy and success policy rules, and the index lists
//! (`"1,3-5"`) of success policies and of the status (`completedIndexes`,
//! `failedIndexes`), as upstream's batch validation checks them.

use std::collections::HashSet;

use kplane_types::{validation, Cause};
use serde_json::{json, Value};

use super::pod_template::{invalid_shown, required};

const MAX_RULES: usize = 20;
const MAX_EXIT_CODES: usize = 255;
const MAX_CONDITION_PATTERNS: usize = 20;
const MAX_SUCCEEDED_INDEXES_LENGTH: usize = 64 * 1024;
const ACTIONS: &[&str] = &["Count", "FailIndex", "FailJob", "Ignore"];
const OPERATORS: &[&str] = &["In", "NotIn"];
const STATUSES: &[&str] = &["False", "True", "Unknown"];

fn list<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    v.get(k)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// `Too many: <n>: must have at most <max> items`.
fn too_many(field: String, n: usize, max: usize) -> Cause {
    Cause::new(
        kplane_types::CauseType::FieldValueTooMany,
        field,
        format!("Too many: {n}: must have at most {max} items"),
    )
}

fn quoted_list(values: &[&str]) -> String {
    let q: Vec<String> = values.iter().map(|v| validation::go_quote(v)).collect();
    format!("[{}]", q.join(" "))
}

/// `validatePodFailurePolicy`.
pub fn validate_pod_failure_policy(spec: &Value, pfp: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let path = "spec.podFailurePolicy.rules";
    let rules = list(pfp, "rules");
    if rules.len() > MAX_RULES {
        causes.push(too_many(path.into(), rules.len(), MAX_RULES));
    }
    let mut containers = HashSet::new();
    for k in ["containers", "initContainers"] {
        for c in spec
            .pointer(&format!("/template/spec/{k}"))
            .and_then(Value::as_array)
            .map_or(&[][..], Vec::as_slice)
        {
            containers.insert(c.get("name").and_then(Value::as_str).unwrap_or(""));
        }
    }
    let per_index = spec
        .get("backoffLimitPerIndex")
        .is_some_and(|v| !v.is_null());
    for (i, rule) in rules.iter().enumerate() {
        let rp = format!("{path}[{i}]");
        let action = rule.get("action").and_then(Value::as_str).unwrap_or("");
        let ap = format!("{rp}.action");
        if action.is_empty() {
            causes.push(required(
                ap,
                &format!("valid values: {}", quoted_list(ACTIONS)),
            ));
        } else if action == "FailIndex" {
            if !per_index {
                causes.push(Cause::invalid(
                    ap,
                    &json!(action),
                    "requires the backoffLimitPerIndex to be set",
                ));
            }
        } else if !ACTIONS.contains(&action) {
            causes.push(Cause::not_supported(ap, &json!(action), ACTIONS));
        }
        let exit = rule.get("onExitCodes").filter(|v| !v.is_null());
        if let Some(e) = exit {
            validate_exit_codes(e, &format!("{rp}.onExitCodes"), &containers, &mut causes);
        }
        let conds = list(rule, "onPodConditions");
        if !conds.is_empty() {
            validate_pod_conditions(conds, &format!("{rp}.onPodConditions"), &mut causes);
        }
        if exit.is_some() && !conds.is_empty() {
            causes.push(Cause::new(
                kplane_types::CauseType::FieldValueInvalid,
                rp.clone(),
                "Invalid value: specifying both OnExitCodes and OnPodConditions is not supported",
            ));
        }
        if exit.is_none() && conds.is_empty() {
            causes.push(Cause::new(
                kplane_types::CauseType::FieldValueInvalid,
                rp,
                "Invalid value: specifying one of OnExitCodes and OnPodConditions is required",
            ));
        }
    }
    causes
}

fn validate_exit_codes(e: &Value, path: &str, containers: &HashSet<&str>, causes: &mut Vec<Cause>) {
    let op = e.get("operator").and_then(Value::as_str).unwrap_or("");
    let op_path = format!("{path}.operator");
    if op.is_empty() {
        causes.push(required(
            op_path,
            &format!("valid values: {}", quoted_list(OPERATORS)),
        ));
    } else if !OPERATORS.contains(&op) {
        causes.push(Cause::not_supported(op_path, &json!(op), OPERATORS));
    }
    if let Some(c) = e.get("containerName").and_then(Value::as_str) {
        if !containers.contains(c) {
            causes.push(Cause::invalid(
                format!("{path}.containerName"),
                &json!(c),
                "must be one of the container or initContainer names in the pod template",
            ));
        }
    }
    let vp = format!("{path}.values");
    let values: Vec<i64> = list(e, "values").iter().filter_map(Value::as_i64).collect();
    if values.is_empty() {
        // Go prints a missing list as nil and an empty one as `{}`.
        let shown = if e.get("values").is_some_and(Value::is_array) {
            "[]int32{}"
        } else {
            "[]int32(nil)"
        };
        causes.push(invalid_shown(&vp, shown, "at least one value is required"));
    } else if values.len() > MAX_EXIT_CODES {
        causes.push(too_many(vp.clone(), values.len(), MAX_EXIT_CODES));
    }
    let mut seen = HashSet::new();
    for (j, v) in values.iter().enumerate() {
        let p = format!("{vp}[{j}]");
        if op == "In" && *v == 0 {
            causes.push(Cause::invalid(
                &p,
                &json!(v),
                "must not be 0 for the In operator",
            ));
        }
        if !seen.insert(*v) {
            causes.push(Cause::duplicate(&p, &json!(v)));
        }
    }
    if values.windows(2).any(|w| w[0] > w[1]) {
        let items: Vec<String> = values.iter().map(i64::to_string).collect();
        causes.push(invalid_shown(
            &vp,
            &format!("[]int32{{{}}}", items.join(", ")),
            "must be ordered",
        ));
    }
}

fn validate_pod_conditions(conds: &[Value], path: &str, causes: &mut Vec<Cause>) {
    if conds.len() > MAX_CONDITION_PATTERNS {
        causes.push(too_many(path.into(), conds.len(), MAX_CONDITION_PATTERNS));
    }
    for (j, c) in conds.iter().enumerate() {
        let p = format!("{path}[{j}]");
        let ty = c.get("type").and_then(Value::as_str).unwrap_or("");
        causes.extend(validation::validate_qualified_name(
            ty,
            &format!("{p}.type"),
        ));
        let st = c.get("status").and_then(Value::as_str).unwrap_or("");
        let sp = format!("{p}.status");
        if st.is_empty() {
            causes.push(required(
                sp,
                &format!("valid values: {}", quoted_list(STATUSES)),
            ));
        } else if !STATUSES.contains(&st) {
            causes.push(Cause::not_supported(sp, &json!(st), STATUSES));
        }
    }
}

/// `validateSuccessPolicy` (for an Indexed Job).
pub fn validate_success_policy(spec: &Value, sp: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let path = "spec.successPolicy.rules";
    let rules = list(sp, "rules");
    if rules.is_empty() {
        causes.push(required(
            path,
            "at least one rules must be specified when the successPolicy is specified",
        ));
    }
    if rules.len() > MAX_RULES {
        causes.push(too_many(path.into(), rules.len(), MAX_RULES));
    }
    let completions = spec.get("completions").and_then(Value::as_i64).unwrap_or(0);
    for (i, rule) in rules.iter().enumerate() {
        let rp = format!("{path}[{i}]");
        let indexes = rule.get("succeededIndexes").and_then(Value::as_str);
        let count = rule.get("succeededCount").and_then(Value::as_i64);
        if indexes.is_none() && count.is_none() {
            causes.push(required(
                &rp,
                "at least one of succeededCount or succeededIndexes must be specified",
            ));
        }
        let mut total = 0;
        if let Some(ix) = indexes {
            let ip = format!("{rp}.succeededIndexes");
            if ix.len() > MAX_SUCCEEDED_INDEXES_LENGTH {
                causes.push(Cause::too_long(&ip, MAX_SUCCEEDED_INDEXES_LENGTH));
            }
            match indexes_total(ix, completions) {
                Ok(t) => total = t,
                Err(e) => causes.push(Cause::invalid(
                    ip,
                    &json!(ix),
                    &format!("error parsing succeededIndexes: {e}"),
                )),
            }
        }
        if let Some(c) = count {
            let cp = format!("{rp}.succeededCount");
            if c < 0 {
                causes.push(Cause::invalid(
                    &cp,
                    &json!(c),
                    "must be greater than or equal to 0",
                ));
            }
            if c > completions {
                causes.push(Cause::invalid(
                    &cp,
                    &json!(c),
                    &format!("must be less than or equal to {completions} (the number of specified completions)"),
                ));
            }
            if indexes.is_some() && c > total {
                causes.push(Cause::invalid(
                    &cp,
                    &json!(c),
                    &format!("must be less than or equal to {total} (the number of indexes in the specified succeededIndexes field)"),
                ));
            }
        }
    }
    causes
}

/// One `x` or `x-y` interval of an index list, checked against `completions`.
pub fn parse_interval(s: &str, completions: i64) -> Result<(i64, i64), String> {
    let parts: Vec<&str> = s.split('-').collect();
    if parts.len() > 2 {
        return Err(format!(
            "the fragment {} violates the requirement that an index interval can have at most two parts separated by '-'",
            validation::go_quote(s)
        ));
    }
    let num = |p: &str| -> Result<i64, String> {
        let x: i64 = p.parse().map_err(|_| {
            format!(
                "cannot convert string to integer for index: {}",
                validation::go_quote(p)
            )
        })?;
        if x >= completions {
            return Err(format!("too large index: {}", validation::go_quote(p)));
        }
        Ok(x)
    };
    let x = num(parts[0])?;
    match parts.get(1) {
        None => Ok((x, x)),
        Some(p) => {
            let y = num(p)?;
            if x >= y {
                return Err(format!("non-increasing order, previous: {x}, current: {y}"));
            }
            Ok((x, y))
        }
    }
}

/// `validateIndexesFormat`: the number of indexes in a list, or why it is malformed.
pub fn indexes_total(s: &str, completions: i64) -> Result<i64, String> {
    if s.is_empty() {
        return Ok(0);
    }
    let mut last: Option<i64> = None;
    let mut total = 0;
    for part in s.split(',') {
        let (x, y) = parse_interval(part, completions)?;
        if let Some(l) = last {
            if l >= x {
                return Err(format!("non-increasing order, previous: {l}, current: {x}"));
            }
        }
        total += y - x + 1;
        last = Some(y);
    }
    Ok(total)
}

/// `validateFailedIndexesNotOverlapCompleted`: the first index in both lists, if any
/// (malformed intervals are skipped; the format check reports them).
pub fn first_overlap(completed: &str, failed: &str, completions: i64) -> Option<i64> {
    if completed.is_empty() || failed.is_empty() {
        return None;
    }
    let c: Vec<_> = completed
        .split(',')
        .map(|s| parse_interval(s, completions))
        .collect();
    let f: Vec<_> = failed
        .split(',')
        .map(|s| parse_interval(s, completions))
        .collect();
    let (mut i, mut j) = (0, 0);
    while i < c.len() && j < f.len() {
        match (&c[i], &f[j]) {
            (Err(_), _) => i += 1,
            (_, Err(_)) => j += 1,
            (Ok((cx, cy)), Ok((fx, fy))) => {
                if cx <= fy && fx <= cy {
                    return Some(*cx.max(fx));
                }
                if cx <= fx {
                    i += 1;
                } else {
                    j += 1;
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_lists_parse_count_and_overlap_as_upstream() {
        assert_eq!(indexes_total("", 5), Ok(0));
        assert_eq!(indexes_total("0,2-4", 5), Ok(4));
        assert_eq!(
            indexes_total("1,1", 5),
            Err("non-increasing order, previous: 1, current: 1".into())
        );
        assert_eq!(
            indexes_total("3-2", 5),
            Err("non-increasing order, previous: 3, current: 2".into())
        );
        assert_eq!(indexes_total("5", 5), Err("too large index: \"5\"".into()));
        assert_eq!(
            indexes_total("a", 5),
            Err("cannot convert string to integer for index: \"a\"".into())
        );
        assert_eq!(
            indexes_total("1-2-3", 5),
            Err("the fragment \"1-2-3\" violates the requirement that an index interval can have at most two parts separated by '-'".into())
        );
        assert_eq!(first_overlap("0-2,6", "3-5,6", 10), Some(6));
        assert_eq!(first_overlap("0-2", "3-5", 10), None);
        assert_eq!(first_overlap("x,1-4", "4", 10), Some(4));
    }

    #[test]
    fn missing_and_empty_exit_code_lists_print_as_go_does() {
        let spec = json!({});
        let msg = |values: Option<Value>| {
            let mut e = json!({"operator": "NotIn"});
            if let Some(v) = values {
                e["values"] = v;
            }
            let pfp = json!({"rules": [{"action": "Ignore", "onExitCodes": e}]});
            validate_pod_failure_policy(&spec, &pfp)
                .iter()
                .map(Cause::render)
                .collect::<Vec<_>>()
        };
        let p = "spec.podFailurePolicy.rules[0].onExitCodes.values";
        assert_eq!(
            msg(None),
            [format!(
                "{p}: Invalid value: []int32(nil): at least one value is required"
            )]
        );
        assert_eq!(
            msg(Some(json!([]))),
            [format!(
                "{p}: Invalid value: []int32{{}}: at least one value is required"
            )]
        );
    }

    #[test]
    fn pod_failure_policy_rules_report_upstreams_messages() {
        let spec = json!({"template": {"spec": {"containers": [{"name": "main"}]}}});
        let pfp = json!({"rules": [
            {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [0, 3, 3, 1]}},
            {"action": "Explode", "onPodConditions": [{"type": "DisruptionTarget", "status": "Maybe"}]},
            {"action": "FailIndex", "onExitCodes": {"containerName": "other", "operator": "NotIn", "values": [1]}, "onPodConditions": [{"type": "X", "status": "True"}]},
            {"action": ""},
        ]});
        let got: Vec<String> = validate_pod_failure_policy(&spec, &pfp)
            .iter()
            .map(Cause::render)
            .collect();
        let p = "spec.podFailurePolicy.rules";
        assert_eq!(got, [
            format!("{p}[0].onExitCodes.values[0]: Invalid value: 0: must not be 0 for the In operator"),
            format!("{p}[0].onExitCodes.values[2]: Duplicate value: 3"),
            format!("{p}[0].onExitCodes.values: Invalid value: []int32{{0, 3, 3, 1}}: must be ordered"),
            format!("{p}[1].action: Unsupported value: \"Explode\": supported values: \"Count\", \"FailIndex\", \"FailJob\", \"Ignore\""),
            format!("{p}[1].onPodConditions[0].status: Unsupported value: \"Maybe\": supported values: \"False\", \"True\", \"Unknown\""),
            format!("{p}[2].action: Invalid value: \"FailIndex\": requires the backoffLimitPerIndex to be set"),
            format!("{p}[2].onExitCodes.containerName: Invalid value: \"other\": must be one of the container or initContainer names in the pod template"),
            format!("{p}[2]: Invalid value: specifying both OnExitCodes and OnPodConditions is not supported"),
            format!("{p}[3].action: Required value: valid values: [\"Count\" \"FailIndex\" \"FailJob\" \"Ignore\"]"),
            format!("{p}[3]: Invalid value: specifying one of OnExitCodes and OnPodConditions is required"),
        ]);
    }
}
