//! Discovery, OpenAPI and auth as kubectl sees them.

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::{KplaneServer, Table};

use super::get_json;

#[test]
fn api_resources_lists_served_kinds_and_not_nodes() -> Result<()> {
    let server = KplaneServer::start()?;
    let table = Table::parse(&server.kubectl_ok(&["api-resources"])?)?;
    assert_eq!(
        table.headers,
        ["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"]
    );
    let expected = [
        // name, shortnames, apiVersion, namespaced, kind
        ("configmaps", "cm", "v1", "true", "ConfigMap"),
        ("pods", "po", "v1", "true", "Pod"),
        ("secrets", "", "v1", "true", "Secret"),
        ("namespaces", "ns", "v1", "false", "Namespace"),
        ("serviceaccounts", "sa", "v1", "true", "ServiceAccount"),
        ("events", "ev", "v1", "true", "Event"),
        ("jobs", "", "batch/v1", "true", "Job"),
        ("leases", "", "coordination.k8s.io/v1", "true", "Lease"),
        (
            "networkpolicies",
            "netpol",
            "networking.k8s.io/v1",
            "true",
            "NetworkPolicy",
        ),
        ("roles", "", "rbac.authorization.k8s.io/v1", "true", "Role"),
        (
            "rolebindings",
            "",
            "rbac.authorization.k8s.io/v1",
            "true",
            "RoleBinding",
        ),
        (
            "clusterroles",
            "",
            "rbac.authorization.k8s.io/v1",
            "false",
            "ClusterRole",
        ),
    ];
    for (name, short, version, namespaced, kind) in expected {
        let row = table.row("NAME", name)?;
        assert_eq!(
            row,
            [name, short, version, namespaced, kind],
            "api-resources row for {name}"
        );
    }
    let names = table.values("NAME")?;
    for absent in ["nodes", "services", "deployments"] {
        ensure!(
            !names.contains(&absent),
            "{absent} must not be served: {names:?}"
        );
    }
    Ok(())
}

/// kubectl's explain output with runs of whitespace collapsed.
fn explain(server: &KplaneServer, path: &str) -> Result<String> {
    let out = server.kubectl_ok(&["explain", path])?;
    Ok(out.split_whitespace().collect::<Vec<_>>().join(" "))
}

#[test]
fn explain_configmap_data_and_job_spec_template() -> Result<()> {
    let server = KplaneServer::start()?;
    let data = explain(&server, "configmap.data")?;
    for want in [
        "KIND: ConfigMap",
        "VERSION: v1",
        "FIELD: data <map[string]string>",
        "DESCRIPTION: Data contains the configuration data.",
    ] {
        ensure!(
            data.contains(want),
            "{want:?} missing from explain configmap.data: {data}"
        );
    }

    let template = explain(&server, "job.spec.template")?;
    for want in [
        "GROUP: batch",
        "KIND: Job",
        "VERSION: v1",
        "FIELD: template <PodTemplateSpec>",
        "FIELDS: metadata <ObjectMeta>",
        "spec <PodSpec>",
    ] {
        ensure!(
            template.contains(want),
            "{want:?} missing from explain job.spec.template: {template}"
        );
    }
    Ok(())
}

#[test]
fn auth_whoami_and_can_i_create_configmaps() -> Result<()> {
    let server = KplaneServer::start()?;
    let review = get_json(&server, &["auth", "whoami"])?;
    assert_eq!(review["kind"], "SelfSubjectReview");
    assert_eq!(review["apiVersion"], "authentication.k8s.io/v1");
    let user = &review["status"]["userInfo"];
    let name = user["username"].as_str().context("no username")?;
    ensure!(!name.is_empty(), "empty username: {review}");
    let groups = user["groups"].as_array().context("no groups")?;
    ensure!(
        groups.iter().any(|g| g == "system:authenticated"),
        "system:authenticated missing: {review}"
    );
    let table = server.kubectl_ok(&["auth", "whoami"])?;
    ensure!(
        table
            .lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>() == ["Username", name]),
        "whoami table does not show {name}: {table}"
    );

    let out = server.kubectl(&["auth", "can-i", "create", "configmaps"])?;
    ensure!(out.success(), "can-i exited {}: {}", out.status, out.stderr);
    assert_eq!(out.stdout.trim(), "yes");
    Ok(())
}
