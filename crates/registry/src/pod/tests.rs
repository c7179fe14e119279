//! The Pod rules: defaults, the QoS class, create and status preparation, the round trip
//! through the internal type, the stored form, validation on create, update and status
//! update with upstream's paths and messages, and the name warning.

use kplane_types::Cause;
use serde_json::{json, Value};

use super::*;
use crate::builtin_types;
use crate::catalog::ResourceType;

fn rt() -> ResourceType {
    builtin_types::builtin()
        .into_iter()
        .find(|r| r.group.is_empty() && r.plural == "pods")
        .unwrap()
}

/// `obj` as a create stores it: defaults, stored form, `PrepareForCreate`.
fn created(mut obj: Value) -> Value {
    let rt = rt();
    rt.strategy.default(&rt, &mut obj);
    rt.strategy.canonicalize(&rt, &mut obj);
    rt.strategy.prepare_for_create(&rt, &mut obj);
    obj
}

fn pod(spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "d"},
        "spec": spec})
}

fn rendered(causes: Vec<Cause>) -> Vec<String> {
    causes.iter().map(Cause::render).collect()
}

fn c(name: &str, image: &str) -> Value {
    json!({"name": name, "image": image})
}

#[test]
fn a_kubectl_run_pod_gets_upstreams_defaults_and_pending_status() {
    let p = created(pod(json!({"containers": [c("x", "busybox")]})));
    assert_eq!(
        p["spec"],
        json!({
            "containers": [{"name": "x", "image": "busybox", "resources": {},
                "terminationMessagePath": "/dev/termination-log",
                "terminationMessagePolicy": "File", "imagePullPolicy": "Always"}],
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 30,
            "dnsPolicy": "ClusterFirst",
            "securityContext": {},
            "schedulerName": "default-scheduler",
            "enableServiceLinks": true
        })
    );
    assert_eq!(
        p["status"],
        json!({"phase": "Pending", "qosClass": "BestEffort"})
    );
}

#[test]
fn limits_default_requests_and_host_network_ports_their_host_ports() {
    let p = created(pod(json!({
        "hostNetwork": true,
        "containers": [{"name": "x", "image": "nginx:1.27",
            "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}},
            "ports": [{"containerPort": 80}, {"containerPort": 81, "hostPort": 8081}]}],
        "initContainers": [{"name": "i", "image": "busybox@sha256:abc",
            "resources": {"limits": {"memory": "64Mi"}}}],
        "serviceAccount": "builder"
    })));
    let x = &p["spec"]["containers"][0];
    assert_eq!(
        x["resources"]["requests"],
        json!({"cpu": "500m", "memory": "1Gi"})
    );
    assert_eq!(x["imagePullPolicy"], "IfNotPresent");
    assert_eq!(
        x["ports"],
        json!([{"containerPort": 80, "hostPort": 80, "protocol": "TCP"},
            {"containerPort": 81, "hostPort": 8081, "protocol": "TCP"}])
    );
    let i = &p["spec"]["initContainers"][0];
    assert_eq!(i["resources"]["requests"], json!({"memory": "64Mi"}));
    assert_eq!(i["imagePullPolicy"], "IfNotPresent");
    // The deprecated alias fills serviceAccountName, and is written as it.
    assert_eq!(p["spec"]["serviceAccountName"], "builder");
    assert_eq!(p["spec"]["serviceAccount"], "builder");
    assert_eq!(p["status"]["qosClass"], "Burstable");
}

#[test]
fn qos_classes_are_computed_as_get_pod_qos() {
    let res = |r: Value| json!({"containers": [{"name": "a", "resources": r}]});
    for (spec, want) in [
        (json!({"containers": [{"name": "a"}]}), "BestEffort"),
        (
            res(json!({"requests": {"ephemeral-storage": "1Gi"}})),
            "BestEffort",
        ),
        (res(json!({"requests": {"cpu": "0"}})), "BestEffort"),
        (res(json!({"requests": {"cpu": "100m"}})), "Burstable"),
        (
            res(
                json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}),
            ),
            "Guaranteed",
        ),
        (
            res(
                json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1000m", "memory": "1024Mi"}}),
            ),
            "Guaranteed",
        ),
        (
            res(
                json!({"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m", "memory": "1Gi"}}),
            ),
            "Burstable",
        ),
        (
            res(json!({"limits": {"cpu": "1"}, "requests": {"cpu": "1"}})),
            "Burstable",
        ),
        (
            json!({"containers": [
                {"name": "a", "resources": {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}},
                {"name": "b"}]}),
            "Burstable",
        ),
    ] {
        assert_eq!(qos_class(&spec), want, "{spec}");
    }
}

#[test]
fn a_gated_pod_is_created_unscheduled() {
    let p = created(pod(json!({"containers": [c("x", "busybox")],
        "schedulingGates": [{"name": "example.com/wait"}]})));
    let cond = &p["status"]["conditions"][0];
    assert_eq!(cond["type"], "PodScheduled");
    assert_eq!(cond["status"], "False");
    assert_eq!(cond["reason"], "SchedulingGated");
    assert_eq!(
        cond["message"],
        "Scheduling is blocked due to non-empty scheduling gates"
    );
    assert!(cond["lastProbeTime"].is_null());
}

#[test]
fn status_writes_keep_the_stored_spec_owners_deletion_and_qos_class() {
    let mut old = created(pod(json!({"containers": [c("x", "busybox")]})));
    old["metadata"]["ownerReferences"] = json!([{"apiVersion": "batch/v1", "kind": "Job",
        "name": "j", "uid": "u", "controller": true}]);
    let mut new = old.clone();
    new["spec"]["nodeName"] = json!("elsewhere");
    new["metadata"]["ownerReferences"] = json!([]);
    new["metadata"]["deletionTimestamp"] = json!("2024-01-01T00:00:00Z");
    new["metadata"]["labels"] = json!({"a": "b"});
    new["status"] = json!({"phase": "Running"});
    let out = prepare_status_update(new, &old);
    assert_eq!(out["spec"], old["spec"]);
    assert_eq!(
        out["metadata"]["ownerReferences"],
        old["metadata"]["ownerReferences"]
    );
    assert!(out["metadata"].get("deletionTimestamp").is_none());
    assert_eq!(out["metadata"]["labels"], json!({"a": "b"}));
    assert_eq!(
        out["status"],
        json!({"phase": "Running", "qosClass": "BestEffort"})
    );
}

#[test]
fn the_round_trip_aligns_pod_ip_and_pod_ips() {
    let rt = rt();
    let canonical = |status: Value| {
        let mut p = pod(json!({"containers": [c("x", "busybox")]}));
        p["status"] = status;
        rt.strategy.canonicalize(&rt, &mut p);
        p["status"].clone()
    };
    assert_eq!(
        canonical(json!({"podIP": "10.0.0.1"})),
        json!({"podIP": "10.0.0.1", "podIPs": [{"ip": "10.0.0.1"}]})
    );
    assert_eq!(
        canonical(json!({"podIPs": [{"ip": "10.0.0.2"}, {"ip": "fd00::2"}]})),
        json!({"podIP": "10.0.0.2", "podIPs": [{"ip": "10.0.0.2"}, {"ip": "fd00::2"}]})
    );
    // A podIP that differs from podIPs[0] wins (an older kubelet writes only that).
    assert_eq!(
        canonical(json!({"podIP": "10.0.0.3", "podIPs": [{"ip": "10.0.0.2"}]})),
        json!({"podIP": "10.0.0.3", "podIPs": [{"ip": "10.0.0.3"}]})
    );
}

#[test]
fn the_stored_form_is_what_the_go_type_encodes() {
    let rt = rt();
    let mut p = json!({"metadata": {"name": "p"},
        "spec": {"containers": [{"name": "x", "image": "busybox", "command": [], "tty": false,
            "livenessProbe": null}],
            "nodeName": "", "hostNetwork": false, "tolerations": [], "priority": null},
        "status": {"phase": "Running", "message": "", "podIPs": [],
            "conditions": [{"type": "Ready", "status": "True", "reason": ""}],
            "containerStatuses": [{"name": "x", "ready": true, "restartCount": 0, "image": "busybox",
                "imageID": "", "started": null,
                "state": {"running": {}, "waiting": null},
                "lastState": {"terminated": {"reason": "", "finishedAt": "2024-01-01T00:00:00Z"}}}]}});
    rt.strategy.canonicalize(&rt, &mut p);
    assert_eq!(
        p,
        json!({"metadata": {"name": "p"},
            "spec": {"containers": [{"name": "x", "image": "busybox", "resources": {}}]},
            "status": {"phase": "Running",
                "conditions": [{"type": "Ready", "status": "True", "lastProbeTime": null,
                    "lastTransitionTime": null}],
                "containerStatuses": [{"name": "x", "ready": true, "restartCount": 0,
                    "image": "busybox", "imageID": "",
                    "state": {"running": {"startedAt": null}},
                    "lastState": {"terminated": {"exitCode": 0, "startedAt": null,
                        "finishedAt": "2024-01-01T00:00:00Z"}}}]}})
    );
    let mut bare = json!({"metadata": {"name": "p"}});
    rt.strategy.canonicalize(&rt, &mut bare);
    assert_eq!(
        bare,
        json!({"metadata": {"name": "p"}, "spec": {"containers": null}, "status": {}})
    );
}

#[test]
fn create_validation_reports_upstreams_paths_and_messages() {
    let check = |spec: Value| rendered(validate(&created(pod(spec)), None));
    assert!(check(json!({"containers": [c("x", "busybox")]})).is_empty());
    assert_eq!(
        check(json!({"containers": []})),
        ["spec.containers: Required value"]
    );
    assert_eq!(
        check(json!({"containers": [{"name": "Bad_Name"}, c("ok", " busybox")]})),
        [
            "spec.containers[0].name: Invalid value: \"Bad_Name\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
            "spec.containers[0].image: Required value",
            "spec.containers[1].image: Invalid value: \" busybox\": must not have leading or trailing whitespace",
        ]
    );
    assert_eq!(
        check(json!({"containers": [c("x", "a"), c("x", "b")], "restartPolicy": "Sometimes"})),
        [
            "spec.containers[1].name: Duplicate value: \"x\"",
            "spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\"",
        ]
    );
    assert_eq!(
        check(json!({"containers": [c("x", "a")], "ephemeralContainers": [c("e", "a")],
            "nodeName": "n1", "schedulingGates": [{"name": "g"}],
            "volumes": [{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}]})),
        [
            "spec.volumes[0].projected.sources[0].serviceAccountToken: Forbidden: must not be specified when serviceAccountName is not set",
            "spec.ephemeralContainers: Forbidden: cannot be set on create",
            "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared",
        ]
    );
}

fn updated(old: &Value, change: impl FnOnce(&mut Value)) -> Vec<String> {
    let rt = rt();
    let mut new = old.clone();
    change(&mut new);
    rt.strategy.default(&rt, &mut new);
    rt.strategy.canonicalize(&rt, &mut new);
    rendered(validate(&new, Some(old)))
}

#[test]
fn the_spec_is_immutable_but_for_images_deadlines_and_added_tolerations() {
    let old = created(pod(json!({"containers": [c("x", "busybox:1")],
        "activeDeadlineSeconds": 100,
        "tolerations": [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}]})));
    // Allowed: a new image, a lower deadline, an added toleration, a new tolerationSeconds.
    assert!(updated(&old, |p| {
        p["spec"]["containers"][0]["image"] = json!("busybox:2");
        p["spec"]["activeDeadlineSeconds"] = json!(50);
        p["spec"]["tolerations"] = json!([
            {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 9},
            {"key": "other", "operator": "Exists"}]);
        p["metadata"]["labels"] = json!({"a": "b"});
    })
    .is_empty());
    let refused = updated(&old, |p| p["spec"]["restartPolicy"] = json!("Never"));
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert!(
        refused[0].starts_with("spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)\n"),
        "{refused:?}"
    );
    assert!(
        refused[0].contains("- \trestartPolicy: \"Always\",\n+ \trestartPolicy: \"Never\","),
        "{refused:?}"
    );
    assert_eq!(
        updated(&old, |p| p["spec"]["containers"]
            .as_array_mut()
            .unwrap()
            .push(c("y", "busybox"))),
        ["spec.containers: Forbidden: pod updates may not add or remove containers"]
    );
    assert_eq!(
        updated(&old, |p| p["spec"]["activeDeadlineSeconds"] = json!(200)),
        ["spec.activeDeadlineSeconds: Invalid value: 200: must be less than or equal to previous value"]
    );
    assert_eq!(
        updated(&old, |p| {
            p["spec"].as_object_mut().unwrap().remove("activeDeadlineSeconds");
        }),
        ["spec.activeDeadlineSeconds: Invalid value: \"null\": must not update from a positive integer to nil value"]
    );
    assert_eq!(
        updated(&old, |p| p["spec"]["tolerations"] = json!([])),
        ["spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"]
    );
    assert_eq!(
        updated(&old, |p| p["spec"]["containers"][0]["image"] = json!("")),
        [
            "spec.containers[0].image: Required value",
            "spec.containers[0].image: Required value"
        ]
    );
    let gated = created(pod(
        json!({"containers": [c("x", "a")], "schedulingGates": [{"name": "a"}]}),
    ));
    assert!(updated(&gated, |p| p["spec"]["schedulingGates"] = json!([])).is_empty());
    assert_eq!(
        updated(&gated, |p| p["spec"]["schedulingGates"] = json!([{"name": "a"}, {"name": "b"}])),
        ["spec.schedulingGates[1].name: Forbidden: only deletion is allowed, but found new scheduling gate 'b'"]
    );
}

#[test]
fn status_updates_keep_the_qos_class_terminated_containers_and_valid_ips() {
    let mut old = created(pod(
        json!({"restartPolicy": "Never", "containers": [c("x", "a")]}),
    ));
    old["status"]["containerStatuses"] = json!([{"name": "x",
        "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]);
    let status = |s: Value| {
        updated(&old, |p| {
            p["status"] = s;
        })
    };
    assert!(status(json!({"phase": "Failed", "qosClass": "BestEffort",
        "podIPs": [{"ip": "10.0.0.1"}, {"ip": "fd00::1"}],
        "conditions": [{"type": "Ready", "status": "False"}, {"type": "example.com/gate", "status": "True"}],
        "containerStatuses": [{"name": "x", "state": {"terminated": {"exitCode": 1}}}]}))
    .is_empty());
    assert_eq!(
        status(json!({"phase": "Running", "qosClass": "Burstable",
            "conditions": [{"type": "not a name!", "status": "True"}],
            "containerStatuses": [{"name": "x", "state": {"running": {}}}]})),
        [
            "metadata.conditions[0].Type: Invalid value: \"not a name!\": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')",
            "status.qosClass: Invalid value: \"Burstable\": field is immutable",
            "status.containerStatuses[0].state: Forbidden: may not be transitioned to non-terminated state",
        ]
    );
    assert_eq!(
        status(json!({"qosClass": "BestEffort",
            "podIPs": [{"ip": "10.0.0.1"}, {"ip": "10.0.0.1"}, {"ip": "nope"}]})),
        [
            "status.podIPs[2]: Invalid value: \"nope\": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            "status.podIPs: Invalid value: []core.PodIP{core.PodIP{IP:\"10.0.0.1\"}, core.PodIP{IP:\"10.0.0.1\"}, core.PodIP{IP:\"nope\"}}: may specify no more than one IP for each IP family",
            "status.podIPs[1]: Duplicate value: core.PodIP{IP:\"10.0.0.1\"}",
        ]
    );
}

#[test]
fn a_name_that_is_not_a_dns_label_is_warned_about_on_create() {
    let mut p = pod(json!({"containers": [c("x", "a")]}));
    assert!(warnings(&p, None).is_empty());
    p["metadata"]["name"] = json!("a.b");
    assert_eq!(
        warnings(&p, None),
        ["metadata.name: this is used in the Pod's hostname, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]"]
    );
    assert!(warnings(&p, Some(&p)).is_empty());
}
