//! core/v1 Pod: `printPod` of kube-apiserver 1.32 (`pkg/printers/internalversion/printers.go`):
//! Name, Ready (`ready/total`, restartable init containers counted), Status (the phase, or
//! the reason the containers give: an init container's `Init:<reason>` or `Init:i/n`, a
//! container's waiting or terminated reason, `ExitCode:n`/`Signal:n`, `NotReady`,
//! `SchedulingGated`, `Terminating`), Restarts (`n (<age> ago)` after a restart), Age, and
//! wide: IP, Node, Nominated Node, Readiness Gates. A Succeeded or Failed pod's row carries
//! upstream's `Completed` row condition.

use chrono::{DateTime, Utc};
use serde_json::{json, Value};

use super::{age, at, col, int_at, name, name_col, parse_time, since, str_at, wide, Column, AGE};

pub(crate) const POD_COLUMNS: &[Column] = &[
    name_col(0),
    col(
        "Ready",
        "The aggregate readiness state of this pod for accepting traffic.",
    ),
    col(
        "Status",
        "The aggregate status of the containers in this pod.",
    ),
    col("Restarts", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted."),
    AGE,
    wide("IP", "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated."),
    wide("Node", "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename"),
    wide("Nominated Node", "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled."),
    wide("Readiness Gates", "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates"),
];

/// `node.NodeUnreachablePodReason`.
const NODE_UNREACHABLE_REASON: &str = "NodeLost";

fn items<'a>(obj: &'a Value, path: &[&str]) -> &'a [Value] {
    at(obj, path)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

/// A state field (`waiting`, `running`, `terminated`) that is set (Go's non-nil pointer).
fn state<'a>(status: &'a Value, which: &str, field: &str) -> Option<&'a Value> {
    at(status, &[which, field]).filter(|v| v.is_object())
}

/// The finish time of a container's last termination, if any.
fn last_finished(status: &Value) -> Option<DateTime<Utc>> {
    state(status, "lastState", "terminated").and_then(|t| parse_time(t.get("finishedAt")))
}

/// `podutil.IsRestartableInitContainer`: an init container with `restartPolicy: Always`.
fn restartable(init: &[Value], name: &str) -> bool {
    init.iter()
        .find(|c| str_at(c, &["name"]) == name)
        .is_some_and(|c| str_at(c, &["restartPolicy"]) == "Always")
}

fn condition_true(obj: &Value, ty: &str) -> bool {
    items(obj, &["status", "conditions"])
        .iter()
        .any(|c| str_at(c, &["type"]) == ty && str_at(c, &["status"]) == "True")
}

/// The later of two optional times.
fn later(a: Option<DateTime<Utc>>, b: Option<DateTime<Utc>>) -> Option<DateTime<Utc>> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.max(b)),
        (a, b) => a.or(b),
    }
}

/// The reason a terminated state gives: its reason, else `<prefix>Signal:n` or
/// `<prefix>ExitCode:n`.
fn terminated_reason(t: &Value, prefix: &str) -> String {
    let reason = str_at(t, &["reason"]);
    if !reason.is_empty() {
        return format!("{prefix}{reason}");
    }
    match int_at(t, &["signal"]).unwrap_or(0) {
        0 => format!("{prefix}ExitCode:{}", int_at(t, &["exitCode"]).unwrap_or(0)),
        signal => format!("{prefix}Signal:{signal}"),
    }
}

/// What the pod's containers add up to.
struct Tally {
    reason: String,
    ready: usize,
    total: usize,
    restarts: i64,
    last_restart: Option<DateTime<Utc>>,
}

/// The init containers' part: their restarts, and whether one still initializes (which
/// sets the reason). Returns that, with the restarts of the restartable ones (sidecars)
/// read up to there and the last time one of them restarted.
fn init_containers(obj: &Value, t: &mut Tally) -> (bool, i64, Option<DateTime<Utc>>) {
    let init = items(obj, &["spec", "initContainers"]);
    let statuses = items(obj, &["status", "initContainerStatuses"]);
    let (mut sidecar_restarts, mut sidecar_last) = (0, None);
    for (i, c) in statuses.iter().enumerate() {
        let restarts = int_at(c, &["restartCount"]).unwrap_or(0);
        t.restarts += restarts;
        t.last_restart = later(t.last_restart, last_finished(c));
        let is_sidecar = restartable(init, str_at(c, &["name"]));
        if is_sidecar {
            sidecar_restarts += restarts;
            sidecar_last = later(sidecar_last, last_finished(c));
        }
        let terminated = state(c, "state", "terminated");
        if terminated.is_some_and(|t| int_at(t, &["exitCode"]).unwrap_or(0) == 0) {
            continue;
        }
        if is_sidecar && c.get("started") == Some(&Value::Bool(true)) {
            if c.get("ready") == Some(&Value::Bool(true)) {
                t.ready += 1;
            }
            continue;
        }
        let waiting = state(c, "state", "waiting")
            .map(|w| str_at(w, &["reason"]))
            .filter(|r| !r.is_empty() && *r != "PodInitializing");
        t.reason = match (terminated, waiting) {
            (Some(term), _) => terminated_reason(term, "Init:"),
            (None, Some(w)) => format!("Init:{w}"),
            (None, None) => format!("Init:{i}/{}", init.len()),
        };
        return (true, sidecar_restarts, sidecar_last);
    }
    (false, sidecar_restarts, sidecar_last)
}

/// The regular containers' part, read from the last status to the first (the first
/// container's reason wins).
fn containers(obj: &Value, t: &mut Tally) {
    let mut running = false;
    for c in items(obj, &["status", "containerStatuses"]).iter().rev() {
        t.restarts += int_at(c, &["restartCount"]).unwrap_or(0);
        t.last_restart = later(t.last_restart, last_finished(c));
        let waiting = state(c, "state", "waiting").map(|w| str_at(w, &["reason"]));
        let terminated = state(c, "state", "terminated");
        if let Some(w) = waiting.filter(|w| !w.is_empty()) {
            t.reason = w.to_string();
        } else if let Some(term) = terminated {
            t.reason = terminated_reason(term, "");
        } else if c.get("ready") == Some(&Value::Bool(true))
            && state(c, "state", "running").is_some()
        {
            running = true;
            t.ready += 1;
        }
    }
    if t.reason == "Completed" && running {
        t.reason = if condition_true(obj, "Ready") {
            "Running".into()
        } else {
            "NotReady".into()
        };
    }
}

/// `printPod`'s Ready, Status and Restarts cells.
fn tally(obj: &Value) -> Tally {
    let phase = str_at(obj, &["status", "phase"]);
    let mut reason = match str_at(obj, &["status", "reason"]) {
        "" => phase.to_string(),
        r => r.to_string(),
    };
    if items(obj, &["status", "conditions"]).iter().any(|c| {
        str_at(c, &["type"]) == "PodScheduled" && str_at(c, &["reason"]) == "SchedulingGated"
    }) {
        reason = "SchedulingGated".into();
    }
    let init = items(obj, &["spec", "initContainers"]);
    let sidecars = init
        .iter()
        .filter(|c| str_at(c, &["restartPolicy"]) == "Always")
        .count();
    let mut t = Tally {
        reason,
        ready: 0,
        total: items(obj, &["spec", "containers"]).len() + sidecars,
        restarts: 0,
        last_restart: None,
    };
    let (initializing, sidecar_restarts, sidecar_last) = init_containers(obj, &mut t);
    if !initializing || condition_true(obj, "Initialized") {
        // Past the init containers: only the sidecars' restarts count with the containers'.
        t.restarts = sidecar_restarts;
        t.last_restart = sidecar_last;
        containers(obj, &mut t);
    }
    let deleting = at(obj, &["metadata", "deletionTimestamp"]).is_some_and(|v| !v.is_null());
    if deleting && str_at(obj, &["status", "reason"]) == NODE_UNREACHABLE_REASON {
        t.reason = "Unknown".into();
    } else if deleting && !matches!(phase, "Succeeded" | "Failed") {
        t.reason = "Terminating".into();
    }
    t
}

fn or_none(v: &str) -> Value {
    Value::String(if v.is_empty() { "<none>" } else { v }.to_string())
}

/// The cells of a pod's row, wide.
pub(crate) fn cells(obj: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let t = tally(obj);
    let restarts = match t.last_restart {
        Some(last) if t.restarts != 0 => format!("{} ({} ago)", t.restarts, since(Some(last), now)),
        _ => t.restarts.to_string(),
    };
    let ip = items(obj, &["status", "podIPs"])
        .first()
        .map_or("", |ip| str_at(ip, &["ip"]));
    let gates = items(obj, &["spec", "readinessGates"]);
    let readiness = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let conditions = items(obj, &["status", "conditions"]);
        let ready = gates
            .iter()
            .filter(|g| {
                let ty = str_at(g, &["conditionType"]);
                conditions
                    .iter()
                    .find(|c| str_at(c, &["type"]) == ty)
                    .is_some_and(|c| str_at(c, &["status"]) == "True")
            })
            .count();
        format!("{ready}/{}", gates.len())
    };
    vec![
        name(obj),
        json!(format!("{}/{}", t.ready, t.total)),
        Value::String(t.reason),
        Value::String(restarts),
        age(obj, now),
        or_none(ip),
        or_none(str_at(obj, &["spec", "nodeName"])),
        or_none(str_at(obj, &["status", "nominatedNodeName"])),
        Value::String(readiness),
    ]
}

/// The row conditions of a finished pod (`podSuccessConditions`, `podFailedConditions`).
pub(crate) fn row_conditions(obj: &Value) -> Option<Value> {
    let (reason, message) = match str_at(obj, &["status", "phase"]) {
        "Succeeded" => ("Succeeded", "The pod has completed successfully."),
        "Failed" => ("Failed", "The pod failed."),
        _ => return None,
    };
    Some(json!([{"type": "Completed", "status": "True", "reason": reason, "message": message}]))
}

#[cfg(test)]
mod tests;
