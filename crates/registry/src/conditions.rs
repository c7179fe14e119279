//! `status.conditions` as Kubernetes controllers keep them (`meta.SetStatusCondition`): one
//! entry per type, its `lastTransitionTime` moved only when its status changes, its other
//! fields kept. Every controller and strategy of the registry that writes conditions uses
//! [`set`].

use serde_json::{json, Value};

/// A condition to set.
#[derive(Clone, Copy, Debug)]
pub struct Condition<'a> {
    pub ty: &'a str,
    pub status: &'a str,
    pub reason: &'a str,
    pub message: &'a str,
}

/// Sets `want` in `conds` at time `now` (`probe`: also `lastProbeTime`, as Job conditions
/// have it). Returns whether the condition's status, reason or message changed (a new one
/// counts as changed).
pub fn set(conds: &mut Vec<Value>, want: Condition<'_>, now: &str, probe: bool) -> bool {
    let field = |c: &Value, f: &str| c.get(f).and_then(Value::as_str).map(str::to_string);
    let Some(c) = conds
        .iter_mut()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(want.ty))
    else {
        let mut c = json!({
            "type": want.ty, "status": want.status, "reason": want.reason,
            "message": want.message, "lastTransitionTime": now,
        });
        if probe {
            c["lastProbeTime"] = json!(now);
        }
        conds.push(c);
        return true;
    };
    let status_changed = field(c, "status").as_deref() != Some(want.status);
    let changed = status_changed
        || field(c, "reason").as_deref() != Some(want.reason)
        || field(c, "message").as_deref() != Some(want.message);
    if status_changed || c.get("lastTransitionTime").is_none() {
        c["lastTransitionTime"] = json!(now);
    }
    c["status"] = json!(want.status);
    c["reason"] = json!(want.reason);
    c["message"] = json!(want.message);
    if probe {
        c["lastProbeTime"] = json!(now);
    }
    changed
}

/// [`set`] on `obj.status.conditions`, creating `status` and the list when missing (or not
/// of their types).
pub fn set_in_status(obj: &mut Value, want: Condition<'_>, now: &str, probe: bool) -> bool {
    let Some(o) = obj.as_object_mut() else {
        return false;
    };
    let status = o.entry("status").or_insert_with(|| json!({}));
    if !status.is_object() {
        *status = json!({});
    }
    let conds = &mut status["conditions"];
    if !conds.is_array() {
        *conds = json!([]);
    }
    match conds.as_array_mut() {
        Some(list) => set(list, want, now, probe),
        None => false,
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    const READY: Condition<'static> = Condition {
        ty: "Ready",
        status: "True",
        reason: "Ok",
        message: "fine",
    };

    #[test]
    fn the_transition_time_moves_only_with_the_status() {
        let mut conds = vec![json!({"type": "Other", "status": "False"})];
        assert!(set(&mut conds, READY, "t1", false));
        assert_eq!(conds[1]["lastTransitionTime"], "t1");
        assert!(conds[1].get("lastProbeTime").is_none());
        // Same condition later: nothing changed, the time stays.
        assert!(!set(&mut conds, READY, "t2", false));
        assert_eq!(conds[1]["lastTransitionTime"], "t1");
        // Another message, same status: changed, the time stays.
        let other = Condition {
            message: "still fine",
            ..READY
        };
        assert!(set(&mut conds, other, "t3", false));
        assert_eq!(conds[1]["lastTransitionTime"], "t1");
        assert_eq!(conds[1]["message"], "still fine");
        // Another status: the time moves.
        let down = Condition {
            status: "False",
            ..READY
        };
        assert!(set(&mut conds, down, "t4", true));
        assert_eq!(conds[1]["lastTransitionTime"], "t4");
        assert_eq!(conds[1]["lastProbeTime"], "t4");
        assert_eq!(conds.len(), 2);
        assert_eq!(conds[0], json!({"type": "Other", "status": "False"}));
    }

    #[test]
    fn status_and_conditions_are_made_when_missing() {
        for mut obj in [
            json!({}),
            json!({"status": 3}),
            json!({"status": {"conditions": {}}}),
        ] {
            assert!(set_in_status(&mut obj, READY, "t", false));
            assert_eq!(obj["status"]["conditions"][0]["type"], "Ready");
        }
        assert!(!set_in_status(&mut json!([]), READY, "t", false));
    }
}
