//! The default ClusterRoles and ClusterRoleBindings as objects, with the real kubectl: every
//! logical cluster lists, gets, describes, pages and watches them (shared by content, not
//! stored); `kubectl apply` writes a stored one in a default's place, deleting that brings
//! the default back (and `kubectl delete` returns), a default itself cannot be deleted; a
//! cluster's labelled role shows in the default aggregated roles.

use std::time::Duration;

use anyhow::{ensure, Result};
use kplane_e2e::{poll_until, KplaneServer};
use serde_json::Value;

const DEFAULT_ROLES: &[&str] = &[
    "admin",
    "cluster-admin",
    "edit",
    "system:aggregate-to-view",
    "system:basic-user",
    "system:discovery",
    "system:public-info-viewer",
    "view",
];

fn lines(out: &str) -> Vec<String> {
    out.lines().map(str::to_string).collect()
}

fn json(kubectl: &kplane_e2e::Kubectl, args: &[&str]) -> Result<Value> {
    Ok(serde_json::from_str(&kubectl.ok(args)?)?)
}

fn has_rule_for(role: &Value, resource: &str) -> bool {
    role["rules"].as_array().is_some_and(|rules| {
        rules.iter().any(|r| {
            r["resources"]
                .as_array()
                .is_some_and(|a| a.iter().any(|x| x == resource))
        })
    })
}

#[test]
fn default_roles_are_objects_of_every_cluster() -> Result<()> {
    let server = KplaneServer::start()?;
    server.create_workspaces(&["root:a"])?;
    let a = server.kubectl_for("root:a")?;
    let root = server.kubectl_for("root")?;
    // Own roles before, between and after the default names.
    for name in ["aaa", "edit-mine", "system:b-mine", "zzz"] {
        a.ok(&[
            "create",
            "clusterrole",
            name,
            "--verb=get",
            "--resource=configmaps",
        ])?;
    }
    let all = lines(&a.ok(&["get", "clusterroles", "-o", "name"])?);
    for want in DEFAULT_ROLES.iter().chain(&["aaa", "edit-mine", "zzz"]) {
        let name = format!("clusterrole.rbac.authorization.k8s.io/{want}");
        ensure!(all.contains(&name), "{want} missing from {all:?}");
    }
    let chunked = lines(&a.ok(&["get", "clusterroles", "--chunk-size=3", "-o", "name"])?);
    ensure!(chunked == all, "paged {chunked:?} != unpaged {all:?}");
    let boot = lines(&a.ok(&[
        "get",
        "clusterroles",
        "-l",
        "kubernetes.io/bootstrapping=rbac-defaults",
        "-o",
        "name",
    ])?);
    ensure!(boot.len() == all.len() - 4, "{boot:?}");
    ensure!(!boot.iter().any(|n| n.ends_with("/aaa")), "{boot:?}");

    // One object: labels, annotation, the aggregated rules; its own uid per cluster.
    let yaml = a.ok(&["get", "clusterrole", "admin", "-o", "yaml"])?;
    for want in [
        "kubernetes.io/bootstrapping: rbac-defaults",
        "rbac.authorization.kubernetes.io/autoupdate: \"true\"",
        "rolebindings",
        "secrets",
        "configmaps",
        "creationTimestamp",
        "uid:",
    ] {
        ensure!(yaml.contains(want), "{want} missing from\n{yaml}");
    }
    let in_a = json(&a, &["get", "clusterrole", "admin", "-o", "json"])?;
    let in_root = json(&root, &["get", "clusterrole", "admin", "-o", "json"])?;
    ensure!(in_a["metadata"]["uid"] != in_root["metadata"]["uid"]);
    ensure!(in_a["rules"] == in_root["rules"]);
    let described = a.ok(&["describe", "clusterrole", "edit"])?;
    ensure!(described.contains("deployments.apps"), "{described}");

    // Bindings: the defaults and the workspace's own.
    let table = a.ok(&["get", "clusterrolebindings"])?;
    for want in ["cluster-admin", "system:basic-user", "workspace-admin"] {
        ensure!(table.contains(want), "{want} missing from\n{table}");
    }

    // A watch's initial events include them.
    let events = a.ok(&[
        "get",
        "--raw",
        "/apis/rbac.authorization.k8s.io/v1/clusterroles?watch=true&timeoutSeconds=1",
    ])?;
    let added: Vec<String> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|e| e["type"] == "ADDED")
        .filter_map(|e| e["object"]["metadata"]["name"].as_str().map(str::to_string))
        .collect();
    for want in DEFAULT_ROLES {
        ensure!(added.iter().any(|n| n == want), "{want} not in {added:?}");
    }
    Ok(())
}

#[test]
fn kubectl_apply_overrides_a_default_and_delete_brings_it_back() -> Result<()> {
    let server = KplaneServer::start()?;
    server.create_workspaces(&["root:a"])?;
    let a = server.kubectl_for("root:a")?;
    let root = server.kubectl_for("root")?;
    let manifest = "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: system:basic-user\nrules:\n- apiGroups: [\"\"]\n  resources: [\"configmaps\"]\n  verbs: [\"get\"]\n";
    let default = json(
        &a,
        &["get", "clusterrole", "system:basic-user", "-o", "json"],
    )?;
    a.ok_stdin(&["apply", "-f", "-"], manifest)?;
    let stored = json(
        &a,
        &["get", "clusterrole", "system:basic-user", "-o", "json"],
    )?;
    ensure!(has_rule_for(&stored, "configmaps"), "{stored}");
    ensure!(
        !has_rule_for(&stored, "selfsubjectaccessreviews"),
        "{stored}"
    );
    // Only in its own cluster.
    let elsewhere = json(
        &root,
        &["get", "clusterrole", "system:basic-user", "-o", "json"],
    )?;
    ensure!(has_rule_for(&elsewhere, "selfsubjectaccessreviews"));
    let listed = lines(&a.ok(&["get", "clusterroles", "-o", "name"])?);
    let n = listed
        .iter()
        .filter(|l| l.ends_with("/system:basic-user"))
        .count();
    ensure!(n == 1, "{listed:?}");
    // Deleting it returns (kubectl waits for the deletion) and the default is back.
    a.ok(&[
        "delete",
        "clusterrole",
        "system:basic-user",
        "--timeout=20s",
    ])?;
    let back = json(
        &a,
        &["get", "clusterrole", "system:basic-user", "-o", "json"],
    )?;
    ensure!(back == default, "{back} != {default}");
    // A default itself cannot be deleted.
    let out = a.run(&["delete", "clusterrole", "edit"])?;
    ensure!(!out.success());
    ensure!(
        out.stderr.contains("Forbidden") && out.stderr.contains("may not be deleted"),
        "{}",
        out.stderr
    );
    // Creating one of a default's names: it exists.
    let out = a.run(&[
        "create",
        "clusterrole",
        "view",
        "--verb=get",
        "--resource=configmaps",
    ])?;
    ensure!(out.stderr.contains("AlreadyExists"), "{}", out.stderr);
    // `kubectl auth reconcile` adds the missing rules to the default.
    a.ok_stdin(&["auth", "reconcile", "-f", "-"], manifest)?;
    let reconciled = json(
        &a,
        &["get", "clusterrole", "system:basic-user", "-o", "json"],
    )?;
    ensure!(has_rule_for(&reconciled, "configmaps"), "{reconciled}");
    ensure!(
        has_rule_for(&reconciled, "selfsubjectaccessreviews"),
        "{reconciled}"
    );
    Ok(())
}

#[test]
fn a_labelled_role_shows_in_the_default_aggregated_roles() -> Result<()> {
    let server = KplaneServer::start()?;
    server.create_workspaces(&["root:a"])?;
    let a = server.kubectl_for("root:a")?;
    let root = server.kubectl_for("root")?;
    a.ok(&[
        "create",
        "clusterrole",
        "leases-view",
        "--verb=get",
        "--resource=leases.coordination.k8s.io",
    ])?;
    a.ok(&[
        "label",
        "clusterrole",
        "leases-view",
        "rbac.authorization.k8s.io/aggregate-to-view=true",
    ])?;
    for name in ["view", "edit", "admin"] {
        poll_until(
            Duration::from_secs(30),
            &format!("{name} to show the leases rule"),
            || {
                let v = json(&a, &["get", "clusterrole", name, "-o", "json"])?;
                Ok(has_rule_for(&v, "leases"))
            },
        )?;
    }
    let other = json(&root, &["get", "clusterrole", "view", "-o", "json"])?;
    ensure!(!has_rule_for(&other, "leases"), "not in root");
    Ok(())
}
