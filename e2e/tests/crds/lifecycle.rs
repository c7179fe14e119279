//! CRD lifecycle: deletion removes the custom resources, recreation starts empty, invalid CRDs
//! are refused with field paths, and name conflicts are reported in status instead of served.

use anyhow::{ensure, Context as _, Result};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kplane_e2e::fixtures::error_code;
use kplane_e2e::{poll_until, KplaneServer, Kubectl, Table};
use kube::api::PostParams;
use kube::Api;
use serde_json::{json, Value};
use std::time::Duration;

use super::{
    apply_crd, apply_yaml, crd_condition, json, server_with_widgets, widget, WAIT_TIMEOUT, WIDGETS,
};

const CRD_GONE_TIMEOUT: Duration = Duration::from_secs(60);

/// The widgets resource is gone from root: its endpoint 404s, discovery lacks it and kubectl
/// cannot resolve it.
fn expect_no_widgets_served(kubectl: &Kubectl) -> Result<()> {
    // kubectl's discovery cache may still map `widgets`: then the list itself must 404.
    let out = kubectl.run(&["get", "widgets"])?;
    ensure!(
        !out.success(),
        "`kubectl get widgets` still works: {}",
        out.stdout
    );
    ensure!(
        out.stderr.contains("NotFound")
            || out
                .stderr
                .contains(r#"the server doesn't have a resource type "widgets""#),
        "unexpected error: {}",
        out.stderr
    );
    // `api-resources` always re-fetches discovery (and refreshes kubectl's cache).
    let resources = kubectl.ok(&["api-resources", "--api-group=example.com", "-o", "name"])?;
    ensure!(
        !resources.contains("widgets"),
        "discovery still lists widgets: {resources}"
    );
    let out = kubectl.run(&["get", "widgets"])?;
    ensure!(
        !out.success()
            && out
                .stderr
                .contains(r#"the server doesn't have a resource type "widgets""#),
        "with fresh discovery: {} {}",
        out.stdout,
        out.stderr
    );
    // (`get --raw` takes an absolute path: the logical cluster is spelled out.)
    let raw = kubectl.run(&[
        "get",
        "--raw",
        "/clusters/root/apis/example.com/v1/namespaces/default/widgets",
    ])?;
    ensure!(
        !raw.success(),
        "the widgets endpoint still answers: {}",
        raw.stdout
    );
    ensure!(
        raw.stderr.contains("NotFound"),
        "expected 404: {}",
        raw.stderr
    );
    Ok(())
}

#[test]
fn deleting_the_crd_removes_its_crs_and_recreating_it_starts_empty() -> Result<()> {
    let server = server_with_widgets()?;
    let kubectl = server.kubectl_root();
    kubectl.ok(&["create", "namespace", "other"])?;
    apply_yaml(kubectl, &widget("w1", "{color: red}"))?;
    kubectl.ok_stdin(
        &["apply", "-n", "other", "-f", "-"],
        &widget("w2", "{color: blue}"),
    )?;
    let old_uid = json(kubectl, &["get", "widget", "w1"])?["metadata"]["uid"].clone();
    let all = Table::parse(&kubectl.ok(&["get", "widgets", "-A"])?)?;
    assert_eq!(all.rows.len(), 2);

    let out = kubectl.ok(&["delete", "crd", WIDGETS, "--timeout=60s"])?;
    ensure!(out.contains("deleted"), "{out}");
    let gone = kubectl.run(&["get", "crd", WIDGETS])?;
    ensure!(
        !gone.success() && gone.stderr.contains("NotFound"),
        "the CRD is still there: {} {}",
        gone.stdout,
        gone.stderr
    );
    expect_no_widgets_served(kubectl)?;

    // Recreate: served again, and none of the old objects came back.
    apply_crd(kubectl, "crds/widgets.yaml", WIDGETS)?;
    let out = kubectl.run(&["get", "widgets", "-A"])?;
    ensure!(out.success(), "get after recreate failed: {}", out.stderr);
    ensure!(
        out.stdout.trim().is_empty() && out.stderr.contains("No resources found"),
        "the recreated CRD is not empty: {}",
        out.stdout
    );
    apply_yaml(kubectl, &widget("w1", "{color: blue}"))?;
    let new = json(kubectl, &["get", "widget", "w1"])?;
    assert_eq!(new["spec"]["color"], "blue");
    assert_ne!(new["metadata"]["uid"], old_uid, "w1 is the old object");
    Ok(())
}

#[test]
fn crd_deletion_waits_for_cr_finalizers_and_refuses_new_crs_meanwhile() -> Result<()> {
    let server = server_with_widgets()?;
    let kubectl = server.kubectl_root();
    apply_yaml(
        kubectl,
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: held\n  \
         finalizers: [example.com/hold]\nspec: {color: red}\n",
    )?;
    kubectl.ok(&["delete", "crd", WIDGETS, "--wait=false"])?;

    // The CRD is terminating, held by its cleanup finalizer until the instance is gone.
    poll_until(Duration::from_secs(30), "the CRD to be Terminating", || {
        let crd = json(kubectl, &["get", "crd", WIDGETS])?;
        Ok(crd_condition(&crd, "Terminating").is_some_and(|c| c["status"] == "True"))
    })?;
    let crd = json(kubectl, &["get", "crd", WIDGETS])?;
    ensure!(
        crd["metadata"]["deletionTimestamp"].is_string(),
        "no deletionTimestamp: {crd}"
    );
    ensure!(
        crd["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| f.contains(&json!("customresourcecleanup.apiextensions.k8s.io"))),
        "no cleanup finalizer: {crd}"
    );
    poll_until(
        Duration::from_secs(30),
        "the held Widget to be deleting",
        || {
            let w = json(kubectl, &["get", "widget", "held"])?;
            Ok(w["metadata"]["deletionTimestamp"].is_string())
        },
    )?;

    let out = kubectl.run_stdin(&["create", "-f", "-"], &widget("late", "{color: red}"))?;
    ensure!(!out.success(), "a CR was created in a terminating CRD");
    ensure!(
        out.stderr.contains("MethodNotAllowed"),
        "expected 405 MethodNotAllowed: {}",
        out.stderr
    );

    // Releasing the instance lets the CRD go.
    kubectl.ok(&[
        "patch",
        "widget",
        "held",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ])?;
    poll_until(CRD_GONE_TIMEOUT, "the CRD to disappear", || {
        let out = kubectl.run(&["get", "crd", WIDGETS])?;
        Ok(!out.success() && out.stderr.contains("NotFound"))
    })?;
    expect_no_widgets_served(kubectl)
}

/// A minimal valid CRD as JSON, to be broken by the caller.
fn valid_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "gears.example.com"},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": "gears", "singular": "gear", "kind": "Gear"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {"teeth": {"type": "integer"}}}
                }}}
            }]
        }
    })
}

#[tokio::test]
async fn invalid_crds_are_rejected_with_422_and_a_field_path() -> Result<()> {
    let server = KplaneServer::start()?;
    let kubectl = server.kubectl_root();
    let crds: Api<CustomResourceDefinition> = Api::all(server.client().await?);

    let non_structural = {
        let mut c = valid_crd();
        let spec = &mut c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
        spec.as_object_mut().context("spec schema")?.remove("type");
        c
    };
    let properties_and_additional = {
        let mut c = valid_crd();
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["additionalProperties"] = json!({"type": "string"});
        c
    };
    let no_storage = {
        let mut c = valid_crd();
        c["spec"]["versions"][0]["storage"] = false.into();
        c
    };
    let bad_name = {
        let mut c = valid_crd();
        c["metadata"]["name"] = "gear.example.com".into();
        c
    };
    // One version: kube-apiserver validates its schema as the top-level `spec.validation`
    // of the internal form, and names that path.
    let cases = [
        (
            "non-structural (no type)",
            non_structural,
            "spec.validation.openAPIV3Schema.properties[spec].type",
            "Required value: must not be empty for specified object fields",
        ),
        (
            "non-structural (properties and additionalProperties)",
            properties_and_additional,
            "spec.validation.openAPIV3Schema.properties[spec].additionalProperties",
            "additionalProperties and properties are mutual exclusive",
        ),
        (
            "no storage version",
            no_storage,
            "spec.versions",
            "must have exactly one version marked as storage version",
        ),
        (
            "name is not <plural>.<group>",
            bad_name,
            "metadata.name",
            r#"must be spec.names.plural+"."+spec.group"#,
        ),
    ];
    for (what, crd, field, message) in cases {
        let name = crd["metadata"]["name"].as_str().context("name")?.to_owned();
        // kubectl prints the field path and the message.
        let out = kubectl.run_stdin(&["create", "-f", "-"], &crd.to_string())?;
        ensure!(!out.success(), "{what}: kubectl create succeeded");
        ensure!(
            out.stderr.contains(&format!(
                r#"The CustomResourceDefinition "{name}" is invalid"#
            )),
            "{what}: {}",
            out.stderr
        );
        ensure!(
            out.stderr.contains(&format!("{field}: ")) && out.stderr.contains(message),
            "{what}: expected {field}: ...{message}... in {}",
            out.stderr
        );
        // kube-rs sees a 422 Invalid with a cause for that field.
        let typed: CustomResourceDefinition = serde_json::from_value(crd)?;
        let err = crds
            .create(&PostParams::default(), &typed)
            .await
            .err()
            .with_context(|| format!("{what}: accepted through kube-rs"))?;
        assert_eq!(error_code(&err), Some(422), "{what}: {err}");
        let kube::Error::Api(status) = &err else {
            anyhow::bail!("{what}: not an API error: {err}");
        };
        assert_eq!(status.reason, "Invalid", "{what}");
        let causes = &status.details.as_ref().context("no details")?.causes;
        ensure!(
            causes.iter().any(|c| c.field == field),
            "{what}: no cause for {field} in {causes:?}"
        );
        // Nothing was stored.
        ensure!(
            !kubectl.run(&["get", "crd", &name])?.success(),
            "{what}: the invalid CRD was stored"
        );
    }
    // The unbroken CRD is fine (the cases above were refused for their one defect).
    kubectl.ok_stdin(&["create", "-f", "-"], &valid_crd().to_string())?;
    Ok(())
}

/// A CRD `<plural>.example.com` with the given kind and short names; singular and listKind are
/// derived from the plural, so only kind and short names can conflict with other CRDs.
fn named_crd(plural: &str, kind: &str, short_names: &[&str]) -> String {
    let singular = plural.trim_end_matches('s');
    let list_kind = format!("{}{}List", singular[..1].to_uppercase(), &singular[1..]);
    json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.com")},
        "spec": {
            "group": "example.com",
            "scope": "Namespaced",
            "names": {"plural": plural, "singular": singular, "kind": kind,
                      "listKind": list_kind, "shortNames": short_names},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}
            }]
        }
    })
    .to_string()
}

/// Waits until the CRD `name` reports `NamesAccepted=False` and returns its JSON.
fn wait_names_refused(kubectl: &Kubectl, name: &str) -> Result<Value> {
    kubectl.ok(&[
        "wait",
        "--for=condition=NamesAccepted=False",
        WAIT_TIMEOUT,
        &format!("crd/{name}"),
    ])?;
    json(kubectl, &["get", "crd", name])
}

#[test]
fn conflicting_names_in_a_group_are_refused_in_status_and_not_served() -> Result<()> {
    let server = server_with_widgets()?;
    let kubectl = server.kubectl_root();
    apply_yaml(kubectl, &widget("w1", "{color: red}"))?;

    // Same kind as widgets.example.com.
    apply_yaml(kubectl, &named_crd("sprockets", "Widget", &[]))?;
    let crd = wait_names_refused(kubectl, "sprockets.example.com")?;
    let names = crd_condition(&crd, "NamesAccepted").context("NamesAccepted")?;
    assert_eq!(names["reason"], "KindConflict", "{names}");
    ensure!(
        crd_condition(&crd, "Established").is_none_or(|c| c["status"] != "True"),
        "a conflicting CRD is Established: {crd}"
    );

    // Same short name as widgets.example.com.
    apply_yaml(kubectl, &named_crd("cogs", "Cog", &["wd"]))?;
    let crd = wait_names_refused(kubectl, "cogs.example.com")?;
    let names = crd_condition(&crd, "NamesAccepted").context("NamesAccepted")?;
    assert_eq!(names["reason"], "ShortNamesConflict", "{names}");

    // Neither is served; the original still is, unaffected.
    let resources = kubectl.ok(&["api-resources", "--api-group=example.com", "-o", "name"])?;
    assert_eq!(resources.trim(), "widgets.example.com", "{resources}");
    let out = kubectl.run(&["get", "sprockets"])?;
    ensure!(!out.success(), "sprockets are served: {}", out.stdout);
    let raw = kubectl.run(&[
        "get",
        "--raw",
        "/clusters/root/apis/example.com/v1/namespaces/default/sprockets",
    ])?;
    ensure!(
        !raw.success() && raw.stderr.contains("NotFound"),
        "sprockets endpoint: {} {}",
        raw.stdout,
        raw.stderr
    );
    let table = Table::parse(&kubectl.ok(&["get", "wd"])?)?;
    assert_eq!(table.values("NAME")?, ["w1"]);

    // The names that do not conflict are still accepted in status; the kind is not.
    let crd = json(kubectl, &["get", "crd", "sprockets.example.com"])?;
    let accepted = &crd["status"]["acceptedNames"];
    assert_eq!(accepted["plural"], "sprockets", "{accepted}");
    assert_eq!(accepted["singular"], "sprocket", "{accepted}");
    assert_eq!(accepted["listKind"], "SprocketList", "{accepted}");
    ensure!(
        accepted["kind"].as_str().unwrap_or_default().is_empty(),
        "the conflicting kind was accepted: {accepted}"
    );
    Ok(())
}

#[test]
fn a_refused_crd_is_accepted_once_the_conflicting_crd_is_deleted() -> Result<()> {
    let server = server_with_widgets()?;
    let kubectl = server.kubectl_root();
    apply_yaml(kubectl, &named_crd("sprockets", "Widget", &[]))?;
    wait_names_refused(kubectl, "sprockets.example.com")?;

    kubectl.ok(&["delete", "crd", WIDGETS, "--timeout=60s"])?;
    kubectl.ok(&[
        "wait",
        "--for",
        "condition=established",
        WAIT_TIMEOUT,
        "crd/sprockets.example.com",
    ])?;
    let crd = json(kubectl, &["get", "crd", "sprockets.example.com"])?;
    let names = crd_condition(&crd, "NamesAccepted").context("NamesAccepted")?;
    assert_eq!(names["status"], "True", "{names}");
    assert_eq!(crd["status"]["acceptedNames"]["kind"], "Widget");
    apply_yaml(
        kubectl,
        "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: s1}\nspec: {any: thing}\n",
    )?;
    let got = json(kubectl, &["get", "sprockets", "s1"])?;
    assert_eq!(got["spec"]["any"], "thing");
    Ok(())
}
