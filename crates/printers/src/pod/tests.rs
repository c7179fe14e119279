//! upstream's `TestPrintPod`, `TestPrintPodWithRestartableInitContainer`,
//! `TestPrintPodwide` and `TestPrintPodConditions` cases, as JSON objects.

use chrono::{DateTime, Duration, TimeZone as _, Utc};
use serde_json::{json, Value};

use super::*;

fn now() -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2024, 5, 1, 12, 0, 0).unwrap()
}

/// An RFC 3339 time `secs` before [`now`].
fn ago(secs: i64) -> String {
    (now() - Duration::seconds(secs))
        .format("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

const DAY: i64 = 24 * 3600;

/// A pod named `name` with `n` unnamed containers, `init` init containers and `status`.
fn pod(name: &str, n: usize, init: Value, status: Value) -> Value {
    json!({"metadata": {"name": name},
        "spec": {"containers": vec![json!({}); n], "initContainers": init},
        "status": status})
}

fn running(ready: bool, restarts: i64) -> Value {
    json!({"ready": ready, "restartCount": restarts, "state": {"running": {}}})
}

/// A status restarted `secs` ago (its last termination finished then).
fn restarted(mut status: Value, secs: i64) -> Value {
    status["lastState"] = json!({"terminated": {"finishedAt": ago(secs)}});
    status
}

fn five(obj: &Value) -> Vec<Value> {
    cells(obj, now())[..5].to_vec()
}

fn row(name: &str, ready: &str, status: &str, restarts: &str) -> Vec<Value> {
    vec![
        json!(name),
        json!(ready),
        json!(status),
        json!(restarts),
        json!("<unknown>"),
    ]
}

#[test]
fn columns_are_upstreams() {
    let cols: Vec<_> = POD_COLUMNS.iter().map(|c| (c.name, c.priority)).collect();
    assert_eq!(
        cols,
        [
            ("Name", 0),
            ("Ready", 0),
            ("Status", 0),
            ("Restarts", 0),
            ("Age", 0),
            ("IP", 1),
            ("Node", 1),
            ("Nominated Node", 1),
            ("Readiness Gates", 1)
        ]
    );
}

#[test]
fn print_pod() {
    let waiting = |r: &str| json!({"state": {"waiting": {"reason": r}}, "restartCount": 3});
    let init_running_restarted = restarted(running(false, 3), 10);
    let not_running = json!({"ready": false, "state": {"waiting": {}}});
    let cases: Vec<(Value, Vec<Value>)> = vec![
        (
            pod(
                "test1",
                2,
                json!([]),
                json!({"phase": "podPhase",
                "containerStatuses": [running(true, 3), {"restartCount": 3}]}),
            ),
            row("test1", "1/2", "podPhase", "6"),
        ),
        (
            pod(
                "test2",
                2,
                json!([]),
                json!({"phase": "podPhase",
                "containerStatuses": [running(true, 3), waiting("ContainerWaitingReason")]}),
            ),
            row("test2", "1/2", "ContainerWaitingReason", "6"),
        ),
        (
            pod(
                "test3",
                2,
                json!([]),
                json!({"phase": "podPhase",
                "containerStatuses": [waiting("ContainerWaitingReason"),
                    {"state": {"terminated": {"reason": "ContainerTerminatedReason"}}, "restartCount": 3}]}),
            ),
            row("test3", "0/2", "ContainerWaitingReason", "6"),
        ),
        (
            pod(
                "test4",
                2,
                json!([]),
                json!({"phase": "podPhase",
                "containerStatuses": [running(true, 3), {"ready": true, "restartCount": 3}]}),
            ),
            row("test4", "1/2", "podPhase", "6"),
        ),
        (
            pod(
                "test5",
                2,
                json!([]),
                json!({"phase": "podPhase", "reason": "podReason",
                "containerStatuses": [running(true, 3), {"ready": true, "restartCount": 3}]}),
            ),
            row("test5", "1/2", "podReason", "6"),
        ),
        (
            pod(
                "test6",
                2,
                json!([]),
                json!({"phase": "Running",
                "containerStatuses": [
                    {"ready": true, "restartCount": 3, "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
                    running(true, 3)]}),
            ),
            row("test6", "1/2", "NotReady", "6"),
        ),
        (
            pod(
                "test6",
                2,
                json!([]),
                json!({"phase": "Running",
                "containerStatuses": [
                    {"ready": true, "restartCount": 3, "state": {"terminated": {"reason": "Completed", "exitCode": 0}}},
                    running(true, 3)],
                "conditions": [{"type": "Ready", "status": "True"}]}),
            ),
            row("test6", "1/2", "Running", "6"),
        ),
        (
            pod(
                "test7",
                1,
                json!([{}]),
                json!({"phase": "podPhase",
                "initContainerStatuses": [init_running_restarted.clone()],
                "containerStatuses": [not_running.clone()]}),
            ),
            row("test7", "0/1", "Init:0/1", "3 (10s ago)"),
        ),
        (
            pod(
                "test8",
                1,
                json!([{}, {}]),
                json!({"phase": "podPhase",
                "initContainerStatuses": [init_running_restarted.clone(), not_running.clone()],
                "containerStatuses": [not_running.clone()]}),
            ),
            row("test8", "0/1", "Init:0/2", "3 (10s ago)"),
        ),
        (
            pod(
                "test9",
                1,
                json!([{}, {}]),
                json!({"phase": "podPhase",
                "initContainerStatuses": [{"ready": false, "state": {"terminated": {}}},
                    init_running_restarted.clone()],
                "containerStatuses": [not_running.clone()]}),
            ),
            row("test9", "0/1", "Init:1/2", "3 (10s ago)"),
        ),
        (
            pod(
                "test10",
                1,
                json!([{}, {}]),
                json!({"phase": "podPhase",
                "initContainerStatuses": [
                    restarted(json!({"restartCount": 2, "state": {"terminated": {}}}), 120),
                    init_running_restarted.clone()],
                "containerStatuses": [not_running.clone()]}),
            ),
            row("test10", "0/1", "Init:1/2", "5 (10s ago)"),
        ),
        (
            pod(
                "test11",
                1,
                json!([{}]),
                json!({"phase": "Running",
                "initContainerStatuses": [
                    restarted(json!({"restartCount": 2, "state": {"terminated": {}}}), 120)],
                "containerStatuses": [restarted(running(false, 4), 20)]}),
            ),
            row("test11", "0/1", "Running", "4 (20s ago)"),
        ),
        (
            pod(
                "test12",
                1,
                json!([]),
                json!({"phase": "Running",
                "containerStatuses": [restarted(running(true, 3), 5 * DAY)]}),
            ),
            row("test12", "1/1", "Running", "3 (5d ago)"),
        ),
        (
            pod(
                "test13",
                2,
                json!([]),
                json!({"phase": "Running",
                "containerStatuses": [running(true, 0), restarted(running(true, 3), 10 * DAY)]}),
            ),
            row("test13", "2/2", "Running", "3 (10d ago)"),
        ),
        (
            pod(
                "test14",
                2,
                json!([]),
                json!({"phase": "Running",
                "containerStatuses": [restarted(running(true, 6), 5 * DAY),
                    restarted(running(true, 3), 20 * DAY)]}),
            ),
            row("test14", "2/2", "Running", "9 (5d ago)"),
        ),
        (
            pod(
                "test15",
                2,
                json!([]),
                json!({"phase": "podPhase",
                "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}]}),
            ),
            row("test15", "0/2", "SchedulingGated", "0"),
        ),
        (
            pod(
                "test16",
                1,
                json!([]),
                json!({"phase": "Succeeded",
                "containerStatuses": [{"ready": false, "restartCount": 0,
                    "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}]}),
            ),
            row("test16", "0/1", "Completed", "0"),
        ),
        (
            pod(
                "test17",
                1,
                json!([]),
                json!({"phase": "Failed",
                "containerStatuses": [{"ready": false, "restartCount": 0,
                    "state": {"terminated": {"reason": "Error", "exitCode": 1}}}]}),
            ),
            row("test17", "0/1", "Error", "0"),
        ),
    ];
    for (obj, want) in &cases {
        assert_eq!(five(obj), *want, "{obj}");
    }
    // Deleted: Terminating unless finished.
    let deleting = |mut p: Value| {
        p["metadata"]["deletionTimestamp"] = json!(ago(10));
        p
    };
    let completed = json!({"ready": false, "restartCount": 0,
        "state": {"terminated": {"reason": "Completed", "exitCode": 0}}});
    let p = deleting(pod(
        "test18",
        1,
        json!([]),
        json!({"phase": "Succeeded", "containerStatuses": [completed]}),
    ));
    assert_eq!(five(&p), row("test18", "0/1", "Completed", "0"));
    let p = deleting(pod(
        "test19",
        1,
        json!([]),
        json!({"phase": "Running", "containerStatuses": [running(false, 0)]}),
    ));
    assert_eq!(five(&p), row("test19", "0/1", "Terminating", "0"));
    let p = deleting(pod("test20", 1, json!([]), json!({"phase": "Pending"})));
    assert_eq!(five(&p), row("test20", "0/1", "Terminating", "0"));
    let p = deleting(pod(
        "lost",
        1,
        json!([]),
        json!({"phase": "Running", "reason": "NodeLost"}),
    ));
    assert_eq!(five(&p), row("lost", "0/1", "Unknown", "0"));
    // Exit codes and signals without a reason.
    let p = pod(
        "codes",
        2,
        json!([]),
        json!({"phase": "Running", "containerStatuses": [
        {"state": {"terminated": {"exitCode": 2}}}, {"state": {"terminated": {"exitCode": 0, "signal": 9}}}]}),
    );
    assert_eq!(five(&p)[2], json!("ExitCode:2"));
    let p = pod(
        "init",
        1,
        json!([{}]),
        json!({"phase": "Pending", "initContainerStatuses": [
        {"state": {"terminated": {"exitCode": 3}}}]}),
    );
    assert_eq!(five(&p)[2], json!("Init:ExitCode:3"));
    let p = pod(
        "init",
        1,
        json!([{}]),
        json!({"phase": "Pending", "initContainerStatuses": [
        {"state": {"waiting": {"reason": "ErrImagePull"}}}]}),
    );
    assert_eq!(five(&p)[2], json!("Init:ErrImagePull"));
}

#[test]
fn restartable_init_containers() {
    let sidecars = json!([{"name": "restartable-init-1", "restartPolicy": "Always"},
        {"name": "restartable-init-2", "restartPolicy": "Always"}]);
    let first = |started: bool| {
        let mut s = restarted(running(false, 3), 10);
        s["name"] = json!("restartable-init-1");
        s["started"] = json!(started);
        s
    };
    let second = |st: Value, started: bool| json!({"name": "restartable-init-2", "ready": false, "state": st, "started": started});
    let waiting = json!({"ready": false, "restartCount": 0, "state": {"waiting": {}}});
    let initialized = |s: &str| json!([{"type": "Initialized", "status": s}]);
    let p = pod(
        "test1",
        1,
        sidecars.clone(),
        json!({"phase": "Pending",
        "initContainerStatuses": [first(false), second(json!({"waiting": {}}), false)],
        "containerStatuses": [waiting.clone()], "conditions": initialized("False")}),
    );
    assert_eq!(five(&p), row("test1", "0/3", "Init:0/2", "3 (10s ago)"));
    let p = pod(
        "test1",
        1,
        sidecars.clone(),
        json!({"phase": "Pending",
        "initContainerStatuses": [first(true), second(json!({"running": {}}), false)],
        "containerStatuses": [waiting], "conditions": initialized("False")}),
    );
    assert_eq!(five(&p), row("test1", "0/3", "Init:1/2", "3 (10s ago)"));
    let p = pod(
        "test2",
        1,
        sidecars.clone(),
        json!({"phase": "Running",
        "initContainerStatuses": [first(true), second(json!({"running": {}}), true)],
        "containerStatuses": [restarted(running(true, 4), 20)], "conditions": initialized("True")}),
    );
    assert_eq!(five(&p), row("test2", "1/3", "Running", "7 (10s ago)"));
    let error = json!({"terminated": {"reason": "Error", "exitCode": 137}});
    let mut failed_first = first(false);
    failed_first["state"] = error.clone();
    let p = pod(
        "test3",
        1,
        sidecars,
        json!({"phase": "Succeeded",
        "initContainerStatuses": [failed_first, second(error, false)],
        "containerStatuses": [restarted(json!({"ready": false, "restartCount": 4,
            "state": {"terminated": {"reason": "Completed", "exitCode": 0}}}), 20)],
        "conditions": initialized("True")}),
    );
    assert_eq!(five(&p), row("test3", "0/3", "Completed", "7 (10s ago)"));
    assert_eq!(
        row_conditions(&p),
        Some(
            json!([{"type": "Completed", "status": "True", "reason": "Succeeded",
            "message": "The pod has completed successfully."}])
        )
    );
    let p = json!({"metadata": {"name": "test4"},
        "spec": {"initContainers": [{"name": "init1", "image": "initimage"},
            {"name": "sidecar1", "image": "sidecarimage", "restartPolicy": "Always"}],
            "containers": [{"name": "container1", "image": "containerimage"}]},
        "status": {"phase": "Running",
            "initContainerStatuses": [{"name": "initinvalid"}, {"name": "init1"}, {"name": "sidecar1"}],
            "containerStatuses": [{"name": "containerinvalid"}, {"name": "container1"}]}});
    assert_eq!(five(&p), row("test4", "0/2", "Init:0/2", "0"));
}

#[test]
fn wide_columns() {
    let gates = json!([{"conditionType": "condition1"}, {"conditionType": "condition2"},
        {"conditionType": "condition3"}]);
    let status = |ips: Value| {
        json!({"phase": "podPhase", "podIPs": ips, "nominatedNodeName": "node1",
        "conditions": [{"type": "condition1", "status": "False"}, {"type": "condition2", "status": "True"}],
        "containerStatuses": [running(true, 3), {"restartCount": 3}]})
    };
    for ips in [
        json!([{"ip": "1.1.1.1"}]),
        json!([{"ip": "1.1.1.1"}, {"ip": "2001:db8::"}]),
    ] {
        let p = json!({"metadata": {"name": "test1"},
            "spec": {"containers": [{}, {}], "nodeName": "test1", "readinessGates": gates},
            "status": status(ips)});
        assert_eq!(
            cells(&p, now()),
            vec![
                json!("test1"),
                json!("1/2"),
                json!("podPhase"),
                json!("6"),
                json!("<unknown>"),
                json!("1.1.1.1"),
                json!("test1"),
                json!("node1"),
                json!("1/3")
            ]
        );
    }
    let p = json!({"metadata": {"name": "test2", "creationTimestamp": ago(90)},
        "spec": {"containers": [{}, {}]},
        "status": {"phase": "podPhase", "containerStatuses": [running(true, 3),
            {"state": {"waiting": {"reason": "ContainerWaitingReason"}}, "restartCount": 3}]}});
    assert_eq!(
        cells(&p, now()),
        vec![
            json!("test2"),
            json!("1/2"),
            json!("ContainerWaitingReason"),
            json!("6"),
            json!("90s"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>"),
            json!("<none>")
        ]
    );
}

#[test]
fn finished_pods_carry_a_completed_row_condition() {
    let with = |phase: &str| {
        pod(
            "test1",
            2,
            json!([]),
            json!({"phase": phase,
            "containerStatuses": [running(true, 3), {"restartCount": 3}]}),
        )
    };
    assert_eq!(row_conditions(&with("Running")), None);
    assert_eq!(five(&with("Running")), row("test1", "1/2", "Running", "6"));
    assert_eq!(
        five(&with("Succeeded")),
        row("test1", "1/2", "Succeeded", "6")
    );
    assert_eq!(
        row_conditions(&with("Failed")),
        Some(
            json!([{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}])
        )
    );
}
