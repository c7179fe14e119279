//! CRD names validated as upstream (`ValidateCustomResourceDefinitionNames`), with the
//! other per-version rules (printer columns, scale paths, deprecation warnings), and the stored
//! form of a CRD (no zero values where the v1 types omit them), so that server-side apply
//! over a client-side-applied CRD finds nothing to conflict on.

use anyhow::{ensure, Result};
use kplane_e2e::KplaneServer;

use super::{json, WAIT_TIMEOUT};

/// A namespaced CRD whose kind is lower-case with dashes, as upstream's conformance tests
/// generate them.
const DASHED: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: e2e-test-foo-crds.crd-publish-openapi-test-foo.example.com
spec:
  group: crd-publish-openapi-test-foo.example.com
  scope: Namespaced
  names:
    plural: e2e-test-foo-crds
    kind: e2e-test-foo-crd
    categories: [e2e-tests]
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          x-kubernetes-preserve-unknown-fields: true
"#;

#[test]
fn a_kind_with_dashes_is_accepted_and_served() -> Result<()> {
    let server = KplaneServer::start()?;
    let kubectl = server.kubectl_root();
    kubectl.ok_stdin(&["apply", "-f", "-"], DASHED)?;
    let name = "crd/e2e-test-foo-crds.crd-publish-openapi-test-foo.example.com";
    kubectl.ok(&["wait", "--for", "condition=established", WAIT_TIMEOUT, name])?;
    let crd = json(kubectl, &["get", name])?;
    // Defaulted as upstream: singular is the lower-cased kind, listKind the kind + "List".
    assert_eq!(crd["spec"]["names"]["singular"], "e2e-test-foo-crd");
    assert_eq!(crd["spec"]["names"]["listKind"], "e2e-test-foo-crdList");
    assert_eq!(crd["status"]["acceptedNames"]["kind"], "e2e-test-foo-crd");

    kubectl.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: crd-publish-openapi-test-foo.example.com/v1\nkind: e2e-test-foo-crd\n\
         metadata: {name: one}\nspec: {bars: [{name: x}]}\n",
    )?;
    let got = json(kubectl, &["get", "e2e-test-foo-crds", "one"])?;
    assert_eq!(got["kind"], "e2e-test-foo-crd");
    assert_eq!(got["spec"]["bars"][0]["name"], "x");
    // Once established the kind is fixed.
    let out = kubectl.run(&[
        "patch",
        name,
        "--type=merge",
        "-p",
        r#"{"spec":{"names":{"kind":"Other"}}}"#,
    ])?;
    ensure!(!out.success(), "the kind changed: {}", out.stdout);
    ensure!(
        out.stderr
            .contains(r#"spec.names.kind: Invalid value: "Other": field is immutable"#),
        "{}",
        out.stderr
    );
    let listed = kubectl.ok(&["get", "e2e-tests", "-o", "name"])?;
    ensure!(
        listed.contains("e2e-test-foo-crd.crd-publish-openapi-test-foo.example.com/one"),
        "the category lists {listed:?}"
    );
    Ok(())
}

#[test]
fn invalid_names_are_refused_with_upstream_messages() -> Result<()> {
    let server = KplaneServer::start()?;
    let kubectl = server.kubectl_root();
    let bad = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: 9lives.example.com
spec:
  group: example.com
  scope: Namespaced
  names:
    plural: 9lives
    singular: Cat
    kind: Cat_9
    listKind: Cat_9
    shortNames: [ok, c_t]
    categories: [Pets]
  versions:
    - name: 1v
      served: true
      storage: true
      schema:
        openAPIV3Schema: {type: object}
"#;
    let out = kubectl.run_stdin(&["apply", "-f", "-"], bad)?;
    ensure!(!out.success(), "the CRD was accepted: {}", out.stdout);
    let dns1035 = "a DNS-1035 label must consist of lower case alphanumeric characters or '-', \
                   start with an alphabetic character, and end with an alphanumeric character \
                   (e.g. 'my-name',  or 'abc-123', regex used for validation is \
                   '[a-z]([-a-z0-9]*[a-z0-9])?')";
    let mixed = format!("may have mixed case, but should otherwise match: {dns1035}");
    for want in [
        r#"The CustomResourceDefinition "9lives.example.com" is invalid"#.to_string(),
        format!(r#"spec.versions[0].name: Invalid value: "1v": {dns1035}"#),
        format!(r#"spec.names.plural: Invalid value: "9lives": {dns1035}"#),
        format!(r#"spec.names.singular: Invalid value: "Cat": {dns1035}"#),
        format!(r#"spec.names.kind: Invalid value: "Cat_9": {mixed}"#),
        format!(r#"spec.names.listKind: Invalid value: "Cat_9": {mixed}"#),
        format!(r#"spec.names.shortNames[1]: Invalid value: "c_t": {dns1035}"#),
        r#"spec.names.listKind: Invalid value: "Cat_9": kind and listKind may not be the same"#
            .to_string(),
        format!(r#"spec.names.categories[0]: Invalid value: "Pets": {dns1035}"#),
    ] {
        ensure!(
            out.stderr.contains(&want),
            "kubectl's error lacks {want:?}:\n{}",
            out.stderr
        );
    }
    let gone = kubectl.run(&["get", "crd", "9lives.example.com"])?;
    ensure!(!gone.success(), "the refused CRD was stored");
    Ok(())
}

/// A CRD with a printer column without `priority`, `format` or `description`.
const COLUMNS: &str = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: sprockets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: sprockets, kind: Sprocket}
  versions:
    - name: v1
      served: true
      storage: true
      additionalPrinterColumns:
        - {name: Size, type: integer, jsonPath: .spec.size}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                size: {type: integer}
"#;

#[test]
fn client_side_then_server_side_apply_of_a_crd_does_not_conflict() -> Result<()> {
    let server = KplaneServer::start()?;
    let kubectl = server.kubectl_root();
    kubectl.ok_stdin(&["apply", "-f", "-"], COLUMNS)?;
    let crd = json(kubectl, &["get", "crd", "sprockets.example.com"])?;
    assert_eq!(
        crd["spec"]["versions"][0]["additionalPrinterColumns"],
        serde_json::json!([{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}])
    );

    // The same file again, server-side: ownership moves to the applier without conflict.
    let out = kubectl.run_stdin(&["apply", "--server-side", "-f", "-"], COLUMNS)?;
    ensure!(
        out.success(),
        "server-side apply conflicted: {}{}",
        out.stdout,
        out.stderr
    );
    ensure!(
        out.stdout.contains("serverside-applied"),
        "kubectl printed {:?}",
        out.stdout
    );
    let crd = json(
        kubectl,
        &[
            "get",
            "crd",
            "sprockets.example.com",
            "--show-managed-fields",
        ],
    )?;
    let managers: Vec<&str> = crd["metadata"]["managedFields"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|e| e["fieldsV1"]["f:spec"].is_object())
        .filter_map(|e| e["manager"].as_str())
        .collect();
    assert_eq!(
        managers,
        ["kubectl"],
        "{}",
        crd["metadata"]["managedFields"]
    );
    Ok(())
}

#[test]
fn zero_values_the_v1_types_omit_are_not_stored() -> Result<()> {
    let server = KplaneServer::start()?;
    let kubectl = server.kubectl_root();
    let with_zeros = COLUMNS
        .replace(
            "        - {name: Size, type: integer, jsonPath: .spec.size}\n",
            "        - {name: Size, type: integer, jsonPath: .spec.size, priority: 0, \
             format: \"\", description: \"\"}\n",
        )
        .replace("      storage: true\n", "      storage: true\n      deprecated: false\n")
        .replace(
            "              type: object\n              properties:",
            "              type: object\n              required: []\n              nullable: false\n              properties:",
        );
    kubectl.ok_stdin(&["create", "-f", "-"], &with_zeros)?;
    let crd = json(kubectl, &["get", "crd", "sprockets.example.com"])?;
    let version = &crd["spec"]["versions"][0];
    assert_eq!(
        version["additionalPrinterColumns"],
        serde_json::json!([{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}])
    );
    ensure!(version.get("deprecated").is_none(), "{version}");
    let spec = &version["schema"]["openAPIV3Schema"]["properties"]["spec"];
    ensure!(
        spec.get("required").is_none() && spec.get("nullable").is_none(),
        "{spec}"
    );
    // Non-omitempty and pointer fields keep their values.
    assert_eq!(version["served"], true);
    assert_eq!(
        crd["spec"]["conversion"],
        serde_json::json!({"strategy": "None"})
    );
    Ok(())
}

#[test]
fn invalid_columns_scale_paths_and_warnings_are_refused_with_upstream_messages() -> Result<()> {
    let server = KplaneServer::start()?;
    let kubectl = server.kubectl_root();
    let bad = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: bolts.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: bolts, kind: Bolt}
  versions:
    - name: v1
      served: true
      storage: true
      deprecationWarning: "old"
      subresources:
        scale:
          specReplicasPath: .status.replicas
          statusReplicasPath: status.replicas
          labelSelectorPath: .spec.selector
      additionalPrinterColumns:
        - {name: A, type: text, format: huge, jsonPath: a}
        - {name: B, jsonPath: .b}
      schema:
        openAPIV3Schema: {type: object}
"#;
    let out = kubectl.run_stdin(&["create", "-f", "-"], bad)?;
    ensure!(!out.success(), "the CRD was accepted: {}", out.stdout);
    // One version: its subresources and columns are validated as the top-level fields the
    // internal form holds them in (its deprecation warning stays per version).
    let (v, top) = ("spec.versions[0]", "spec");
    for want in [
        format!(
            r#"{v}.deprecationWarning: Invalid value: "old": can only be set for deprecated versions"#
        ),
        format!(
            r#"{top}.subresources.scale.specReplicasPath: Invalid value: ".status.replicas": should be a json path under .spec"#
        ),
        format!(
            r#"{top}.subresources.scale.statusReplicasPath: Invalid value: "status.replicas": must be a simple json path starting with ."#
        ),
        format!(
            r#"{top}.subresources.scale.labelSelectorPath: Invalid value: ".spec.selector": should be a json path under .status"#
        ),
        format!(
            r#"{top}.additionalPrinterColumns[0].type: Invalid value: "text": must be one of boolean,date,integer,number,string"#
        ),
        format!(
            r#"{top}.additionalPrinterColumns[0].format: Invalid value: "huge": must be one of byte,date,date-time,double,float,int32,int64,password"#
        ),
        format!(
            r#"{top}.additionalPrinterColumns[0].JSONPath: Invalid value: "a": must be a simple json path starting with ."#
        ),
        format!(
            r#"{top}.additionalPrinterColumns[1].type: Required value: must be one of boolean,date,integer,number,string"#
        ),
    ] {
        ensure!(
            out.stderr.contains(&want),
            "kubectl's error lacks {want:?}:\n{}",
            out.stderr
        );
    }
    Ok(())
}
