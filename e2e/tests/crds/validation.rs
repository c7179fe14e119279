//! Schema validation, pruning of unknown fields and defaulting of custom resources.

use std::collections::BTreeSet;

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::fixtures::error_code;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, PostParams};
use kube::Api;
use serde_json::json;

use super::{apply_yaml, json, server_with_widgets, widget};

const INVALID: &str = "{color: green, size: 11, code: A1, parts: [{count: 1}]}";

#[tokio::test]
async fn invalid_custom_resource_reports_all_causes_together() -> Result<()> {
    let server = server_with_widgets()?;
    let kubectl = server.kubectl_root();

    let out = kubectl.run_stdin(&["apply", "-f", "-"], &widget("bad", INVALID))?;
    ensure!(
        !out.success(),
        "an invalid Widget was accepted: {}",
        out.stdout
    );
    for want in [
        r#"The Widget "bad" is invalid"#,
        r#"spec.color: Unsupported value: "green": supported values: "red", "blue""#,
        "spec.size: Invalid value: 11: spec.size in body should be less than or equal to 10",
        r#"spec.code: Invalid value: "A1": spec.code in body should match '^[a-z]+$'"#,
        "spec.parts[0].name: Required value",
    ] {
        ensure!(
            out.stderr.contains(want),
            "kubectl's error lacks {want:?}:\n{}",
            out.stderr
        );
    }
    let missing = kubectl.run(&["get", "widget", "bad"])?;
    ensure!(!missing.success(), "the rejected Widget was stored");

    // The same request through kube-rs: one 422 Status with one cause per violation.
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let api: Api<DynamicObject> = Api::namespaced_with(
        server.client().await?,
        "default",
        &ApiResource::from_gvk(&gvk),
    );
    let mut obj = DynamicObject::new("bad", &ApiResource::from_gvk(&gvk));
    obj.data =
        json!({"spec": {"color": "green", "size": 11, "code": "A1", "parts": [{"count": 1}]}});
    let err = api
        .create(&PostParams::default(), &obj)
        .await
        .err()
        .context("the invalid Widget was accepted through kube-rs")?;
    assert_eq!(error_code(&err), Some(422), "{err}");
    let kube::Error::Api(status) = &err else {
        anyhow::bail!("not an API error: {err}");
    };
    assert_eq!(status.reason, "Invalid");
    let details = status.details.as_ref().context("422 without details")?;
    assert_eq!(details.kind, "Widget");
    assert_eq!(details.group, "example.com");
    assert_eq!(details.name, "bad");
    let causes: BTreeSet<(&str, &str)> = details
        .causes
        .iter()
        .map(|c| (c.field.as_str(), c.reason.as_str()))
        .collect();
    let want: BTreeSet<(&str, &str)> = [
        ("spec.code", "FieldValueInvalid"),
        ("spec.color", "FieldValueNotSupported"),
        ("spec.parts[0].name", "FieldValueRequired"),
        ("spec.size", "FieldValueInvalid"),
    ]
    .into_iter()
    .collect();
    assert_eq!(causes, want, "causes: {:?}", details.causes);
    Ok(())
}

#[test]
fn unknown_fields_fail_strict_apply_and_are_pruned_without_validation() -> Result<()> {
    let server = server_with_widgets()?;
    let kubectl = server.kubectl_root();
    let manifest = widget("extra", "{color: red, extra: 1}");

    // kubectl apply sends fieldValidation=Strict: the unknown field is an error.
    let out = kubectl.run_stdin(&["apply", "-f", "-"], &manifest)?;
    ensure!(!out.success(), "strict apply accepted an unknown field");
    ensure!(
        out.stderr
            .contains(r#"strict decoding error: unknown field "spec.extra""#),
        "unexpected error: {}",
        out.stderr
    );
    ensure!(
        !kubectl.run(&["get", "widget", "extra"])?.success(),
        "the strictly rejected Widget was stored"
    );

    // --validate=false (fieldValidation=Ignore): accepted, the field pruned from storage.
    kubectl.ok_stdin(&["apply", "--validate=false", "-f", "-"], &manifest)?;
    let stored = json(kubectl, &["get", "widget", "extra"])?;
    assert_eq!(stored["spec"]["color"], "red");
    ensure!(
        stored["spec"].get("extra").is_none(),
        "spec.extra survived pruning: {stored}"
    );
    // Unknown top-level and metadata fields are pruned as well.
    kubectl.ok_stdin(
        &["create", "--validate=false", "-f", "-"],
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: top, bogus: x}\n\
         spec: {color: blue}\nsurplus: {a: 1}\n",
    )?;
    let top = json(kubectl, &["get", "widget", "top"])?;
    ensure!(top.get("surplus").is_none(), "surplus survived: {top}");
    ensure!(
        top["metadata"].get("bogus").is_none(),
        "metadata.bogus survived: {top}"
    );

    // --validate=warn (fieldValidation=Warn): accepted with a warning naming the field.
    let out = kubectl.run_stdin(
        &["create", "--validate=warn", "-f", "-"],
        &widget("warned", "{color: red, extra: 1}"),
    )?;
    ensure!(out.success(), "warn create failed: {}", out.stderr);
    ensure!(
        out.stderr.contains(r#"unknown field "spec.extra""#),
        "no warning naming spec.extra: {}",
        out.stderr
    );
    Ok(())
}

#[test]
fn defaults_are_applied_on_create_and_update() -> Result<()> {
    let server = server_with_widgets()?;
    let kubectl = server.kubectl_root();
    apply_yaml(kubectl, &widget("d1", "{color: red}"))?;
    let stored = json(kubectl, &["get", "widget", "d1"])?;
    assert_eq!(stored["spec"]["size"], 5, "{stored}");
    assert_eq!(stored["spec"]["mode"], "auto", "{stored}");

    // Explicit values win over defaults.
    apply_yaml(
        kubectl,
        &widget("d2", "{color: red, size: 7, mode: manual}"),
    )?;
    let stored = json(kubectl, &["get", "widget", "d2"])?;
    assert_eq!(stored["spec"]["size"], 7);
    assert_eq!(stored["spec"]["mode"], "manual");

    // An update that drops a defaulted field gets the default again.
    let mut obj = json(kubectl, &["get", "widget", "d2"])?;
    let spec = obj["spec"].as_object_mut().context("spec")?;
    spec.remove("size");
    spec.remove("mode");
    kubectl.ok_stdin(&["replace", "-f", "-"], &obj.to_string())?;
    let stored = json(kubectl, &["get", "widget", "d2"])?;
    assert_eq!(stored["spec"]["size"], 5, "{stored}");
    assert_eq!(stored["spec"]["mode"], "auto", "{stored}");
    Ok(())
}
