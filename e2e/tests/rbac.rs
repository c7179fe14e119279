//! RBAC per logical cluster with the real kubectl, as far as the admin can show it (other
//! users' credentials arrive with token files, client certificates and ServiceAccount
//! tokens): `kubectl auth can-i [--list]`, SubjectAccessReviews about other users answered
//! from each workspace's own Roles and bindings (a Role with resourceNames; a same-named
//! binding in another workspace grants nothing), the default roles every workspace has,
//! and the `workspace-admin` binding of a Workspace's creator in the new workspace.

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::{one_configmap_role, KplaneServer, Kubectl};
use serde_json::Value;

/// Asks `kubectl create` for a SubjectAccessReview of `user` (groups `groups`) for `attrs`
/// (the YAML of resourceAttributes or nonResourceAttributes, indented by 4); answers its
/// status.
fn review(k: &Kubectl, user: &str, groups: &[&str], attrs: &str) -> Result<Value> {
    let groups: String = groups.iter().map(|g| format!("  - {g}\n")).collect();
    let sar = format!(
        "apiVersion: authorization.k8s.io/v1\nkind: SubjectAccessReview\nspec:\n  user: {user}\n  groups:\n{groups}{attrs}"
    );
    let out = k.ok_stdin(&["create", "-f", "-", "-o", "json"], &sar)?;
    let v: Value = serde_json::from_str(&out).with_context(|| out.clone())?;
    Ok(v["status"].clone())
}

fn get_configmap(name: &str) -> String {
    format!("  resourceAttributes:\n    verb: get\n    resource: configmaps\n    namespace: default\n    name: {name}\n")
}

#[test]
fn can_i_as_the_admin_and_reviews_answered_from_each_workspaces_rbac() -> Result<()> {
    let server = KplaneServer::start()?;
    server.create_workspaces(&["root:team", "root:other"])?;
    let team = server.kubectl_for("root:team")?;
    let other = server.kubectl_for("root:other")?;

    // The admin (system:masters) may do everything, and says so.
    ensure!(team.ok(&["auth", "can-i", "delete", "namespaces"])?.trim() == "yes");
    let list = team.ok(&["auth", "can-i", "--list"])?;
    ensure!(
        list.lines()
            .any(|l| l.starts_with("*.*") && l.contains("[*]")),
        "{list}"
    );

    // The creator of a workspace is its cluster-admin.
    let crb: Value = serde_json::from_str(&team.ok(&[
        "get",
        "clusterrolebinding",
        "workspace-admin",
        "-o",
        "json",
    ])?)?;
    ensure!(crb["roleRef"]["name"] == "cluster-admin", "{crb}");
    ensure!(crb["subjects"][0]["kind"] == "User", "{crb}");
    ensure!(crb["subjects"][0]["name"] == "kplane-admin", "{crb}");
    let ws: Value =
        serde_json::from_str(&server.kubectl_ok(&["get", "workspace", "team", "-o", "json"])?)?;
    ensure!(
        ws["metadata"]["annotations"]["tenancy.kplane.io/owner"] == "kplane-admin",
        "{ws}"
    );

    // alice may get configmap "one" in root:team only; bob has the same-named binding in
    // root:other.
    team.ok_stdin(&["apply", "-f", "-"], &one_configmap_role("User", "alice"))?;
    other.ok_stdin(&["apply", "-f", "-"], &one_configmap_role("User", "bob"))?;
    let s = review(
        &team,
        "alice",
        &["system:authenticated"],
        &get_configmap("one"),
    )?;
    ensure!(s["allowed"] == true, "{s}");
    ensure!(
        s["reason"]
            == "RBAC: allowed by RoleBinding \"one-configmap/default\" of Role \"one-configmap\" to User \"alice\"",
        "{s}"
    );
    for (k, user, name) in [
        (&team, "alice", "two"),
        (&other, "alice", "one"),
        (&team, "bob", "one"),
    ] {
        let s = review(k, user, &["system:authenticated"], &get_configmap(name))?;
        ensure!(s["allowed"] == false, "{user} {name}: {s}");
    }
    let s = review(&other, "bob", &[], &get_configmap("one"))?;
    ensure!(s["allowed"] == true, "{s}");

    // The default roles: discovery for every authenticated user, nothing more.
    let api = "  nonResourceAttributes:\n    verb: get\n    path: /apis\n";
    let s = review(&team, "carol", &["system:authenticated"], api)?;
    ensure!(s["allowed"] == true, "{s}");
    ensure!(
        s["reason"]
            .as_str()
            .unwrap_or("")
            .contains("system:discovery"),
        "{s}"
    );
    let s = review(&team, "carol", &["system:unauthenticated"], api)?;
    ensure!(s["allowed"] == false, "{s}");
    let s = review(
        &team,
        "carol",
        &["system:authenticated"],
        &get_configmap("one"),
    )?;
    ensure!(s["allowed"] == false, "{s}");
    Ok(())
}
