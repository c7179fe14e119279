//! A real-world-sized CRD: `testdata/hive/clusterdeployments.hive.example.io.yaml`, a
//! ClusterDeployment-like schema of ~2100 lines with nested per-platform sections, enums,
//! patterns, bounds, defaults, keyed lists and a status with conditions.

use anyhow::{ensure, Result};
use kplane_e2e::{KplaneServer, Table};
use serde_json::json;

use super::{apply_crd, json, testdata};

const CD: &str = "clusterdeployments.hive.example.io";

#[test]
fn clusterdeployment_crd_is_established_validates_defaults_and_explains() -> Result<()> {
    let crd_text =
        std::fs::read_to_string(testdata("hive/clusterdeployments.hive.example.io.yaml"))?;
    ensure!(
        crd_text.lines().count() > 2000,
        "the test CRD shrank below 2000 lines"
    );
    let server = KplaneServer::start()?;
    let kubectl = server.kubectl_root();
    apply_crd(kubectl, "hive/clusterdeployments.hive.example.io.yaml", CD)?;
    kubectl.ok(&["create", "namespace", "hive"])?;

    // The schema round-trips, deep keyed-list markers included.
    let crd = json(kubectl, &["get", "crd", CD])?;
    let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    let vsphere = &schema["properties"]["spec"]["properties"]["platform"]["properties"]["vsphere"];
    assert_eq!(
        vsphere["properties"]["failureDomains"]["x-kubernetes-list-map-keys"],
        json!(["name"])
    );
    assert_eq!(
        schema["properties"]["spec"]["properties"]["platform"]["properties"]["gcp"]["properties"]
            ["userTags"]["x-kubernetes-list-map-keys"],
        json!(["parentID", "key"])
    );

    // A valid object is accepted and defaulted.
    let valid = testdata("hive/clusterdeployment-valid.yaml");
    kubectl.ok(&["apply", "-n", "hive", "-f", &valid])?;
    let cd = json(
        kubectl,
        &["get", "clusterdeployment", "prod-eu-1", "-n", "hive"],
    )?;
    let spec = &cd["spec"];
    assert_eq!(spec["clusterName"], "prod-eu-1");
    assert_eq!(spec["installed"], false, "default of spec.installed");
    assert_eq!(
        spec["installAttemptsLimit"], 3,
        "default of installAttemptsLimit"
    );
    assert_eq!(spec["platform"]["aws"]["lbType"], "NLB", "nested default");
    assert_eq!(spec["platform"]["aws"]["propagateUserTags"], false);
    assert_eq!(
        spec["certificateBundles"][0]["generate"], false,
        "default in a list item"
    );
    assert_eq!(spec["certificateBundles"][1]["generate"], true);
    assert_eq!(
        spec["platform"]["aws"]["defaultMachinePlatform"]["rootVolume"]["type"],
        "io2"
    );
    assert_eq!(
        spec["provisioning"]["installerEnv"][1]["valueFrom"]["secretKeyRef"]["key"],
        "url"
    );

    // Printer columns, short names and the category.
    let table = Table::parse(&kubectl.ok(&["get", "cd", "-n", "hive"])?)?;
    assert_eq!(
        table.headers,
        [
            "NAME",
            "INFRAID",
            "BASEDOMAIN",
            "INSTALLED",
            "POWERSTATE",
            "AGE"
        ]
    );
    assert_eq!(
        table.cell("NAME", "prod-eu-1", "BASEDOMAIN")?,
        "clusters.example.com"
    );
    assert_eq!(table.cell("NAME", "prod-eu-1", "INSTALLED")?, "false");
    let hive = Table::parse(&kubectl.ok(&["get", "hive", "-n", "hive"])?)?;
    assert_eq!(hive.values("NAME")?, ["prod-eu-1"]);
    let cdep = Table::parse(&kubectl.ok(&["get", "cdep", "-n", "hive"])?)?;
    assert_eq!(cdep.values("NAME")?, ["prod-eu-1"]);

    // An invalid object is rejected with every violation.
    let invalid = testdata("hive/clusterdeployment-invalid.yaml");
    let out = kubectl.run(&["apply", "-n", "hive", "-f", &invalid])?;
    ensure!(!out.success(), "the invalid ClusterDeployment was accepted");
    for want in [
        r#"The ClusterDeployment "broken" is invalid"#,
        "spec.clusterName: Required value",
        r#"spec.platform.aws.region: Invalid value: "Europe-West": spec.platform.aws.region in body should match"#,
        "spec.platform.aws.defaultMachinePlatform.rootVolume.size: Invalid value: 20000: \
         spec.platform.aws.defaultMachinePlatform.rootVolume.size in body should be less than \
         or equal to 16384",
        r#"spec.platform.aws.defaultMachinePlatform.rootVolume.type: Unsupported value: "ssd": supported values: "gp2", "gp3", "io1", "io2", "st1", "sc1", "standard""#,
        r#"spec.powerState: Unsupported value: "Sleeping": supported values: "Running", "Hibernating""#,
        "spec.ingress[1]: Duplicate value:",
    ] {
        ensure!(
            out.stderr.contains(want),
            "the error lacks {want:?}:\n{}",
            out.stderr
        );
    }

    // Two platforms at once break maxProperties.
    let out = kubectl.run_stdin(
        &["create", "-n", "hive", "-f", "-"],
        &json!({
            "apiVersion": "hive.example.io/v1",
            "kind": "ClusterDeployment",
            "metadata": {"name": "two-platforms"},
            "spec": {"clusterName": "two", "baseDomain": "example.com",
                     "platform": {"none": {}, "aws": {"region": "us-east-1"}}}
        })
        .to_string(),
    )?;
    ensure!(!out.success(), "two platforms were accepted");
    ensure!(
        out.stderr.contains("spec.platform: Too many")
            && out.stderr.contains("must have at most 1 item"),
        "{}",
        out.stderr
    );

    // Status: conditions are a map keyed by type; the status subresource accepts them.
    kubectl.ok(&[
        "patch",
        "cd",
        "prod-eu-1",
        "-n",
        "hive",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"powerState":"Running","installVersion":"4.18.3","conditions":[
            {"type":"Provisioned","status":"True","reason":"InstallSucceeded",
             "lastTransitionTime":"2026-01-02T03:04:05Z"}]}}"#,
    ])?;
    let table = Table::parse(&kubectl.ok(&["get", "cd", "-n", "hive", "-o", "wide"])?)?;
    assert_eq!(table.cell("NAME", "prod-eu-1", "POWERSTATE")?, "Running");
    assert_eq!(table.cell("NAME", "prod-eu-1", "VERSION")?, "4.18.3");
    let out = kubectl.run(&[
        "patch",
        "cd",
        "prod-eu-1",
        "-n",
        "hive",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"conditions":[{"type":"Ready","status":"True"},
            {"type":"Ready","status":"Maybe"}]}}"#,
    ])?;
    ensure!(!out.success(), "duplicate condition types were accepted");
    for want in [
        "status.conditions[1]: Duplicate value:",
        r#"status.conditions[1].status: Unsupported value: "Maybe""#,
    ] {
        ensure!(out.stderr.contains(want), "lacks {want:?}: {}", out.stderr);
    }

    // kubectl explain walks the nested platform sections.
    let aws = kubectl.ok(&["explain", "clusterdeployment.spec.platform.aws"])?;
    for want in [
        "KIND:       ClusterDeployment",
        "FIELD: aws <Object>",
        "Install and run the cluster on Amazon Web Services.",
        "region\t<string> -required-",
        "The AWS region, for example us-east-1.",
        "defaultMachinePlatform\t<Object>",
        "lbType\t<string>",
        "serviceEndpoints\t<[]Object>",
        "userTags\t<map[string]string>",
    ] {
        ensure!(aws.contains(want), "explain ...aws lacks {want:?}:\n{aws}");
    }
    let volume_type = kubectl.ok(&[
        "explain",
        "cd.spec.platform.aws.defaultMachinePlatform.rootVolume.type",
    ])?;
    for want in ["FIELD: type <string>", "The EBS volume type.", "gp3"] {
        ensure!(volume_type.contains(want), "lacks {want:?}:\n{volume_type}");
    }
    let vsphere = kubectl.ok(&[
        "explain",
        "clusterdeployment.spec.platform.vsphere.failureDomains.topology",
    ])?;
    ensure!(
        vsphere.contains("computeCluster\t<string> -required-"),
        "{vsphere}"
    );
    Ok(())
}
