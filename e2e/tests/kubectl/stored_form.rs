//! Built-in objects read back in the form kube-apiserver returns them: zero values of
//! `omitempty` fields dropped, struct and non-omitempty fields always present, defaults set.

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::KplaneServer;
use serde_json::{json, Value};

use super::get_json;

/// `kubectl create -f -` of a JSON manifest, then the object as `kubectl get -o json` reads it.
fn create_and_get(server: &KplaneServer, manifest: Value, get: &[&str]) -> Result<Value> {
    server
        .kubectl_root()
        .ok_stdin(&["create", "-f", "-"], &manifest.to_string())?;
    get_json(server, get)
}

#[test]
fn builtins_read_back_in_upstreams_stored_form() -> Result<()> {
    let server = KplaneServer::start()?;

    let cm = create_and_get(
        &server,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "labels": {}},
            "data": {}, "binaryData": {}, "immutable": false}),
        &["get", "configmap", "c"],
    )?;
    ensure!(
        cm.get("data").is_none() && cm.get("binaryData").is_none(),
        "{cm}"
    );
    ensure!(cm["metadata"].get("labels").is_none(), "{cm}");
    assert_eq!(cm["immutable"], false, "a pointer keeps its false");

    let sa = create_and_get(
        &server,
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "sa"},
            "secrets": [], "imagePullSecrets": []}),
        &["get", "serviceaccount", "sa"],
    )?;
    ensure!(
        sa.get("secrets").is_none() && sa.get("imagePullSecrets").is_none(),
        "{sa}"
    );

    let ev = create_and_get(
        &server,
        json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
            "involvedObject": {"kind": "ConfigMap", "name": "c"}, "reason": "R",
            "message": "m", "count": 0, "type": ""}),
        &["get", "event", "e"],
    )?;
    for (field, want) in [
        ("source", json!({})),
        ("firstTimestamp", Value::Null),
        ("lastTimestamp", Value::Null),
        ("eventTime", Value::Null),
        ("reportingComponent", json!("")),
        ("reportingInstance", json!("")),
    ] {
        assert_eq!(ev.get(field), Some(&want), "{field} in {ev}");
    }
    ensure!(
        ev.get("count").is_none() && ev.get("type").is_none(),
        "{ev}"
    );
    let ev1 = get_json(&server, &["get", "events.v1.events.k8s.io", "e"])?;
    for (field, want) in [
        ("deprecatedSource", json!({})),
        ("deprecatedFirstTimestamp", Value::Null),
        ("deprecatedLastTimestamp", Value::Null),
        ("eventTime", Value::Null),
    ] {
        assert_eq!(ev1.get(field), Some(&want), "{field} in {ev1}");
    }
    ensure!(
        ev1.get("reportingController").is_none() && ev1.get("deprecatedCount").is_none(),
        "{ev1}"
    );

    let lease = create_and_get(
        &server,
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "l"}}),
        &["get", "lease", "l"],
    )?;
    assert_eq!(lease["spec"], json!({}), "{lease}");

    let role = create_and_get(
        &server,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role", "metadata": {"name": "r"}}),
        &["get", "role", "r"],
    )?;
    assert_eq!(role.get("rules"), Some(&Value::Null), "{role}");
    let rb = create_and_get(
        &server,
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "rb"}, "roleRef": {"kind": "Role", "name": "r"},
            "subjects": [{"kind": "ServiceAccount", "name": "sa", "namespace": "default"},
                         {"kind": "User", "name": "u"}]}),
        &["get", "rolebinding", "rb"],
    )?;
    assert_eq!(
        rb["roleRef"],
        json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"})
    );
    assert_eq!(
        rb["subjects"],
        json!([{"kind": "ServiceAccount", "name": "sa", "namespace": "default"},
               {"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "u"}])
    );

    server.kubectl_ok(&["create", "job", "j", "--image=busybox:1.36", "--", "true"])?;
    let job = get_json(&server, &["get", "job", "j", "--show-managed-fields"])?;
    assert_eq!(job["status"], json!({}), "{job}");
    assert_eq!(
        job["spec"]["template"]["metadata"].get("creationTimestamp"),
        Some(&Value::Null),
        "{job}"
    );
    // The always-written null is nobody's field.
    let template = &job["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:template"];
    ensure!(
        template.get("f:metadata").is_none(),
        "the creator owns the template's metadata: {template}"
    );
    // An update that leaves the null out is not a spec change.
    server.kubectl_ok(&["label", "job", "j", "a=b"])?;
    let job = get_json(&server, &["get", "job", "j"])?;
    assert_eq!(job["metadata"]["generation"], 1);
    let status = job.get("status").context("no status")?;
    assert_eq!(status, &json!({}));
    Ok(())
}

#[test]
fn job_and_namespace_defaults_are_upstreams() -> Result<()> {
    let server = KplaneServer::start()?;
    let job = create_and_get(
        &server,
        json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"},
        "spec": {
            "podFailurePolicy": {"rules": [{"action": "Ignore",
                "onPodConditions": [{"type": "DisruptionTarget"}]}]},
            "template": {
                "metadata": {"labels": {"app": "batch"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{"name": "c", "image": "busybox:1.36",
                        "readinessProbe": {"httpGet": {"port": 8080}},
                        "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]}],
                    "volumes": [{"name": "scratch"}, {"name": "cfg", "configMap": {"name": "c"}}]
                }
            }
        }}),
        &["get", "job", "j"],
    )?;
    // SetDefaults_Job: labels from the template, pod failure policy pattern status, and
    // pod replacement policy Failed with a pod failure policy.
    assert_eq!(job["metadata"]["labels"]["app"], "batch", "{job}");
    assert_eq!(
        job["spec"]["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"],
        "True"
    );
    assert_eq!(job["spec"]["podReplacementPolicy"], "Failed");
    let pod = &job["spec"]["template"]["spec"];
    assert_eq!(
        pod["containers"][0]["readinessProbe"],
        json!({"httpGet": {"port": 8080, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
            "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
    );
    assert_eq!(
        pod["containers"][0]["env"][0]["valueFrom"]["fieldRef"]["apiVersion"],
        "v1"
    );
    assert_eq!(
        pod["volumes"],
        json!([{"name": "scratch", "emptyDir": {}},
               {"name": "cfg", "configMap": {"name": "c", "defaultMode": 420}}])
    );

    // PrepareForCreate adds the `kubernetes` finalizer to the ones a namespace asks for.
    let ns = create_and_get(
        &server,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "held"},
            "spec": {"finalizers": ["example.com/hold"]}}),
        &["get", "namespace", "held"],
    )?;
    assert_eq!(
        ns["spec"]["finalizers"],
        json!(["example.com/hold", "kubernetes"])
    );
    Ok(())
}
