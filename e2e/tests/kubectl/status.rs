//! Writes through `/status` (and a Namespace's `/finalize`) take from the request what
//! upstream's status strategies take, and the main endpoint ignores the status:
//! Namespaces, Jobs and CRDs apply the request's metadata and status and keep the spec;
//! custom resources apply only the status.

use std::path::PathBuf;

use anyhow::{ensure, Result};
use kplane_e2e::KplaneServer;
use serde_json::{json, Value};

use super::get_json;

fn patch_status(server: &KplaneServer, target: &[&str], patch: &str) -> Result<String> {
    let mut args = vec!["patch"];
    args.extend(target);
    args.extend(["--subresource=status", "--type=merge", "-p", patch]);
    server.kubectl_ok(&args)
}

#[test]
fn namespace_status_patch_applies_labels_and_annotations_and_keeps_the_spec() -> Result<()> {
    let server = KplaneServer::start()?;
    server.kubectl_ok(&["create", "namespace", "team-a"])?;
    patch_status(
        &server,
        &["namespace", "team-a"],
        r#"{"metadata":{"labels":{"tier":"gold"},"annotations":{"note":"x"}},
            "spec":{"finalizers":[]},
            "status":{"conditions":[{"type":"Custom","status":"True"}]}}"#,
    )?;
    let ns = get_json(&server, &["get", "namespace", "team-a"])?;
    assert_eq!(ns["metadata"]["labels"]["tier"], "gold", "{ns}");
    // The name label is kept even though a status write replaces the labels.
    assert_eq!(
        ns["metadata"]["labels"]["kubernetes.io/metadata.name"],
        "team-a"
    );
    assert_eq!(ns["metadata"]["annotations"]["note"], "x");
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]), "{ns}");
    assert_eq!(ns["status"]["conditions"][0]["type"], "Custom");
    assert_eq!(ns["status"]["phase"], "Active");

    // Removing a label through /status works as well (JSON patch on the metadata).
    server.kubectl_ok(&[
        "patch",
        "namespace",
        "team-a",
        "--subresource=status",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/labels/tier"}]"#,
    ])?;
    let ns = get_json(&server, &["get", "namespace", "team-a"])?;
    ensure!(ns["metadata"]["labels"].get("tier").is_none(), "{ns}");

    // The phase follows the deletion timestamp (ValidateNamespaceStatusUpdate).
    let out = server.kubectl(&[
        "patch",
        "namespace",
        "team-a",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Terminating"}}"#,
    ])?;
    ensure!(!out.success(), "phase Terminating accepted: {}", out.stdout);
    ensure!(
        out.stderr.contains(
            r#"status.Phase: Invalid value: "Terminating": may only be 'Active' if `deletionTimestamp` is empty"#
        ),
        "{}",
        out.stderr
    );

    // The request's metadata may not change the uid.
    let out = server.kubectl(&[
        "patch",
        "namespace",
        "team-a",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"metadata":{"uid":"not-the-uid"}}"#,
    ])?;
    ensure!(!out.success(), "a new uid was accepted: {}", out.stdout);
    ensure!(
        out.stderr
            .contains(r#"metadata.uid: Invalid value: "not-the-uid": field is immutable"#),
        "{}",
        out.stderr
    );

    // The main endpoint ignores status (and spec.finalizers).
    server.kubectl_ok(&[
        "patch",
        "namespace",
        "team-a",
        "--type=merge",
        "-p",
        r#"{"metadata":{"labels":{"main":"yes"}},"status":{"phase":"Terminating"},"spec":{"finalizers":[]}}"#,
    ])?;
    let ns = get_json(&server, &["get", "namespace", "team-a"])?;
    assert_eq!(ns["metadata"]["labels"]["main"], "yes");
    assert_eq!(ns["status"]["phase"], "Active");
    assert_eq!(ns["spec"]["finalizers"], json!(["kubernetes"]));
    Ok(())
}

#[test]
fn job_status_patch_applies_metadata_and_keeps_the_spec() -> Result<()> {
    let server = KplaneServer::start()?;
    server.kubectl_ok(&["create", "job", "j1", "--image=busybox:1.36", "--", "true"])?;
    patch_status(
        &server,
        &["job", "j1"],
        r#"{"metadata":{"labels":{"synced":"yes"},"annotations":{"syncer":"a"}},
            "spec":{"parallelism":5},
            "status":{"active":1}}"#,
    )?;
    let job = get_json(&server, &["get", "job", "j1"])?;
    assert_eq!(job["metadata"]["labels"]["synced"], "yes", "{job}");
    assert_eq!(job["metadata"]["annotations"]["syncer"], "a");
    assert_eq!(job["spec"]["parallelism"], 1, "{job}");
    assert_eq!(job["status"]["active"], 1);
    assert_eq!(job["metadata"]["generation"], 1);

    // Status counters are never negative.
    let out = server.kubectl(&[
        "patch",
        "job",
        "j1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"failed":-1}}"#,
    ])?;
    ensure!(
        !out.success(),
        "a negative count was accepted: {}",
        out.stdout
    );
    ensure!(
        out.stderr
            .contains("status.failed: Invalid value: -1: must be greater than or equal to 0"),
        "{}",
        out.stderr
    );

    // The main endpoint ignores status.
    server.kubectl_ok(&[
        "patch",
        "job",
        "j1",
        "--type=merge",
        "-p",
        r#"{"metadata":{"labels":{"main":"yes"}},"status":{"active":7}}"#,
    ])?;
    let job = get_json(&server, &["get", "job", "j1"])?;
    assert_eq!(job["metadata"]["labels"]["main"], "yes");
    assert_eq!(job["status"]["active"], 1);
    Ok(())
}

fn widgets_yaml() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("testdata/crds/widgets.yaml")
        .to_string_lossy()
        .into_owned()
}

#[test]
fn crd_and_custom_resource_status_writes_follow_their_strategies() -> Result<()> {
    let server = KplaneServer::start()?;
    server.kubectl_ok(&["apply", "-f", &widgets_yaml()])?;
    server.kubectl_ok(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=30s",
        "crd/widgets.example.com",
    ])?;
    // CRD /status: metadata from the request (1.32's CRD status strategy resets nothing of
    // it), the spec kept.
    patch_status(
        &server,
        &["crd", "widgets.example.com"],
        r#"{"metadata":{"labels":{"owner":"team-a"}},"spec":{"scope":"Cluster"}}"#,
    )?;
    let crd = get_json(&server, &["get", "crd", "widgets.example.com"])?;
    assert_eq!(crd["metadata"]["labels"]["owner"], "team-a", "{crd}");
    assert_eq!(crd["spec"]["scope"], "Namespaced");

    // Custom resource /status: only the status is taken.
    server.kubectl_root().ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w1}\nspec: {color: red}\n",
    )?;
    patch_status(
        &server,
        &["widget", "w1"],
        r#"{"metadata":{"labels":{"ignored":"yes"}},"spec":{"color":"blue"},"status":{"phase":"Ready"}}"#,
    )?;
    let w: Value = get_json(&server, &["get", "widget", "w1"])?;
    assert_eq!(w["status"]["phase"], "Ready", "{w}");
    assert_eq!(w["spec"]["color"], "red");
    ensure!(
        w["metadata"]
            .get("labels")
            .is_none_or(|l| l.get("ignored").is_none()),
        "a custom resource's /status write changed its labels: {w}"
    );
    // And the main endpoint ignores its status.
    server.kubectl_ok(&[
        "patch",
        "widget",
        "w1",
        "--type=merge",
        "-p",
        r#"{"metadata":{"labels":{"main":"yes"}},"status":{"phase":"Gone"}}"#,
    ])?;
    let w: Value = get_json(&server, &["get", "widget", "w1"])?;
    assert_eq!(w["metadata"]["labels"]["main"], "yes");
    assert_eq!(w["status"]["phase"], "Ready");
    Ok(())
}

/// Without a status subresource the status is part of the object: writing it through the
/// main endpoint works and bumps the generation (upstream's custom resource strategy).
#[test]
fn custom_resource_without_status_subresource_counts_status_in_its_generation() -> Result<()> {
    let server = KplaneServer::start()?;
    let kubectl = server.kubectl_root();
    kubectl.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n\
         metadata: {name: doohickeys.example.com}\n\
         spec:\n  group: example.com\n  scope: Namespaced\n  names: {plural: doohickeys, kind: Doohickey}\n\
         \x20 versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n\
         \x20     openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}\n",
    )?;
    kubectl.ok(&[
        "wait",
        "--for",
        "condition=established",
        "--timeout=30s",
        "crd/doohickeys.example.com",
    ])?;
    kubectl.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: example.com/v1\nkind: Doohickey\nmetadata: {name: d}\nspec: {a: 1}\n",
    )?;
    let patch = |p: &str| kubectl.ok(&["patch", "doohickey", "d", "--type=merge", "-p", p]);
    patch(r#"{"metadata":{"labels":{"x":"y"}}}"#)?;
    let d = get_json(&server, &["get", "doohickey", "d"])?;
    assert_eq!(d["metadata"]["generation"], 1, "{d}");
    patch(r#"{"status":{"phase":"Ready"}}"#)?;
    let d = get_json(&server, &["get", "doohickey", "d"])?;
    assert_eq!(d["status"]["phase"], "Ready", "{d}");
    assert_eq!(d["metadata"]["generation"], 2, "{d}");
    Ok(())
}
