//! The `scale` and `status` subresources of custom resources, `metadata.generation`, and the
//! patch types a custom resource accepts.

use anyhow::{ensure, Context as _, Result};
use serde_json::Value;

use super::{apply_yaml, json, server_with_widgets, widget};

fn generation(obj: &Value) -> Result<i64> {
    obj["metadata"]["generation"]
        .as_i64()
        .with_context(|| format!("no metadata.generation in {obj}"))
}

#[test]
fn kubectl_scale_updates_spec_replicas_through_the_scale_subresource() -> Result<()> {
    let server = server_with_widgets()?;
    let kubectl = server.kubectl_root();
    apply_yaml(kubectl, &widget("s1", "{color: red, replicas: 1}"))?;

    let out = kubectl.ok(&["scale", "widget", "s1", "--replicas=3"])?;
    ensure!(out.contains("widget.example.com/s1 scaled"), "{out}");
    let stored = json(kubectl, &["get", "widget", "s1"])?;
    assert_eq!(stored["spec"]["replicas"], 3, "{stored}");
    assert_eq!(generation(&stored)?, 2, "scaling changes the spec");

    // The Scale object maps specReplicasPath and statusReplicasPath.
    kubectl.ok(&[
        "patch",
        "widget",
        "s1",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"replicas":2}}"#,
    ])?;
    let scale = json(kubectl, &["get", "widget", "s1", "--subresource=scale"])?;
    assert_eq!(scale["apiVersion"], "autoscaling/v1", "{scale}");
    assert_eq!(scale["kind"], "Scale", "{scale}");
    assert_eq!(scale["metadata"]["name"], "s1", "{scale}");
    assert_eq!(scale["spec"]["replicas"], 3, "{scale}");
    assert_eq!(scale["status"]["replicas"], 2, "{scale}");

    // A precondition on the current replica count is honoured.
    let out = kubectl.run(&[
        "scale",
        "widget",
        "s1",
        "--current-replicas=7",
        "--replicas=5",
    ])?;
    ensure!(
        !out.success(),
        "scale with a wrong --current-replicas succeeded"
    );
    let stored = json(kubectl, &["get", "widget", "s1"])?;
    assert_eq!(stored["spec"]["replicas"], 3);
    Ok(())
}

#[test]
fn status_subresource_separates_spec_and_status_and_generation_tracks_spec() -> Result<()> {
    let server = server_with_widgets()?;
    let kubectl = server.kubectl_root();
    apply_yaml(kubectl, &widget("st", "{color: red}"))?;
    let created = json(kubectl, &["get", "widget", "st"])?;
    assert_eq!(generation(&created)?, 1);

    // PUT on the main endpoint: a status change is ignored, spec changes apply.
    let mut obj = created.clone();
    obj["status"] = serde_json::json!({"phase": "Hacked"});
    obj["spec"]["color"] = "blue".into();
    kubectl.ok_stdin(&["replace", "-f", "-"], &obj.to_string())?;
    let after_put = json(kubectl, &["get", "widget", "st"])?;
    assert_eq!(after_put["spec"]["color"], "blue");
    ensure!(
        after_put["status"]["phase"].is_null(),
        "the main endpoint changed .status: {after_put}"
    );
    assert_eq!(generation(&after_put)?, 2, "spec change bumps generation");

    // PUT on /status: status changes, a spec change is ignored, generation stays.
    let mut obj = after_put.clone();
    obj["status"] = serde_json::json!({"phase": "Ready", "replicas": 1});
    obj["spec"]["color"] = "red".into();
    kubectl.ok_stdin(
        &["replace", "--subresource=status", "-f", "-"],
        &obj.to_string(),
    )?;
    let after_status = json(kubectl, &["get", "widget", "st"])?;
    assert_eq!(after_status["status"]["phase"], "Ready", "{after_status}");
    assert_eq!(after_status["status"]["replicas"], 1);
    assert_eq!(
        after_status["spec"]["color"], "blue",
        "/status changed the spec"
    );
    assert_eq!(
        generation(&after_status)?,
        2,
        "a status update bumped generation"
    );
    ensure!(
        after_status["metadata"]["resourceVersion"] != after_put["metadata"]["resourceVersion"],
        "status update kept the resourceVersion"
    );

    // Merge patch of .status on the main endpoint: ignored, no generation bump.
    kubectl.ok(&[
        "patch",
        "widget",
        "st",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Broken"}}"#,
    ])?;
    let obj = json(kubectl, &["get", "widget", "st"])?;
    assert_eq!(obj["status"]["phase"], "Ready");
    assert_eq!(generation(&obj)?, 2);

    // Merge patch of /status: applied, no generation bump.
    kubectl.ok(&[
        "patch",
        "widget",
        "st",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Degraded"}}"#,
    ])?;
    let obj = json(kubectl, &["get", "widget", "st"])?;
    assert_eq!(obj["status"]["phase"], "Degraded");
    assert_eq!(generation(&obj)?, 2);

    // Metadata-only changes do not bump generation either; spec changes do.
    kubectl.ok(&["label", "widget", "st", "tier=gold"])?;
    kubectl.ok(&["annotate", "widget", "st", "note=hello"])?;
    let obj = json(kubectl, &["get", "widget", "st"])?;
    assert_eq!(obj["metadata"]["labels"]["tier"], "gold");
    assert_eq!(generation(&obj)?, 2, "metadata change bumped generation");
    kubectl.ok(&[
        "patch",
        "widget",
        "st",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":3}}"#,
    ])?;
    let obj = json(kubectl, &["get", "widget", "st"])?;
    assert_eq!(generation(&obj)?, 3);
    assert_eq!(
        obj["status"]["phase"], "Degraded",
        "spec patch reset status"
    );

    // The status subresource is visible to kubectl get --subresource=status.
    let status = json(kubectl, &["get", "widget", "st", "--subresource=status"])?;
    assert_eq!(status["kind"], "Widget");
    assert_eq!(status["status"]["phase"], "Degraded");
    Ok(())
}

#[test]
fn patch_without_type_is_rejected_as_unsupported_and_merge_patch_works() -> Result<()> {
    let server = server_with_widgets()?;
    let kubectl = server.kubectl_root();
    apply_yaml(kubectl, &widget("p1", "{color: red, size: 2}"))?;
    let before = json(kubectl, &["get", "widget", "p1"])?;

    // No --type: kubectl sends a strategic merge patch, which custom resources do not support.
    let out = kubectl.run(&[
        "patch",
        "widget",
        "p1",
        "-p",
        r#"{"spec":{"size":3}}"#,
        "-v=6",
    ])?;
    ensure!(!out.success(), "strategic merge patch of a CR succeeded");
    ensure!(
        out.stderr.contains("415 Unsupported Media Type"),
        "the PATCH was not answered 415:\n{}",
        out.stderr
    );
    ensure!(
        out.stderr
            .contains("application/strategic-merge-patch+json is not supported"),
        "unexpected error:\n{}",
        out.stderr
    );
    let after = json(kubectl, &["get", "widget", "p1"])?;
    assert_eq!(
        after["metadata"]["resourceVersion"],
        before["metadata"]["resourceVersion"]
    );

    kubectl.ok(&[
        "patch",
        "widget",
        "p1",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":3}}"#,
    ])?;
    let obj = json(kubectl, &["get", "widget", "p1"])?;
    assert_eq!(obj["spec"]["size"], 3);
    assert_eq!(obj["spec"]["color"], "red");

    kubectl.ok(&[
        "patch",
        "widget",
        "p1",
        "--type=json",
        "-p",
        r#"[{"op":"replace","path":"/spec/color","value":"blue"}]"#,
    ])?;
    let obj = json(kubectl, &["get", "widget", "p1"])?;
    assert_eq!(obj["spec"]["color"], "blue");

    // A merge patch that violates the schema is rejected like a create.
    let out = kubectl.run(&[
        "patch",
        "widget",
        "p1",
        "--type=merge",
        "-p",
        r#"{"spec":{"size":99}}"#,
    ])?;
    ensure!(!out.success(), "schema-violating patch succeeded");
    ensure!(
        out.stderr.contains("should be less than or equal to 10"),
        "{}",
        out.stderr
    );
    Ok(())
}
