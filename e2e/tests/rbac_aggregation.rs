//! Aggregated ClusterRoles with the real kubectl: a ClusterRole with an `aggregationRule`
//! shows, in `kubectl get clusterrole -o json`, the rules of the ClusterRoles its selector
//! matches, picks up a labelled ClusterRole created later and drops one deleted, in its own
//! logical cluster only; and a user bound to it gets what it shows.

use std::time::Duration;

use anyhow::Result;
use kplane_e2e::{poll_until, KplaneServer};
use serde_json::{json, Value};

const LABEL: &str = "example.com/aggregate-to-monitoring";

fn rules(kubectl: &kplane_e2e::Kubectl, name: &str) -> Result<Value> {
    let out = kubectl.ok(&["get", "clusterrole", name, "-o", "json"])?;
    let v: Value = serde_json::from_str(&out)?;
    // `null` when empty, as upstream (`rules` has no omitempty).
    Ok(match v.get("rules") {
        None | Some(Value::Null) => json!([]),
        Some(r) => r.clone(),
    })
}

fn wait_for_rules(kubectl: &kplane_e2e::Kubectl, name: &str, want: &Value) -> Result<()> {
    poll_until(
        Duration::from_secs(30),
        &format!("clusterrole {name} to have rules {want}"),
        || Ok(&rules(kubectl, name)? == want),
    )
}

#[test]
fn aggregated_cluster_role_picks_up_labelled_roles() -> Result<()> {
    let server = KplaneServer::start()?;
    server.create_workspaces(&["root:a", "root:b"])?;
    let a = server.kubectl_for("root:a")?;
    let b = server.kubectl_for("root:b")?;
    let aggregated = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
        "metadata": {"name": "monitoring"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {LABEL: "true"}}]},
    });
    for k in [&a, &b] {
        let out = k.run_stdin(&["apply", "-f", "-"], &aggregated.to_string())?;
        anyhow::ensure!(out.success(), "{}", out.stderr);
    }
    a.ok(&[
        "create",
        "clusterrole",
        "read-cm",
        "--verb=get,list",
        "--resource=configmaps",
    ])?;
    a.ok(&["label", "clusterrole", "read-cm", &format!("{LABEL}=true")])?;
    let cm_rule = json!({"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list"]});
    wait_for_rules(&a, "monitoring", &json!([cm_rule]))?;

    // A labelled role created later is picked up, after the earlier one (name order).
    a.ok(&[
        "create",
        "clusterrole",
        "read-secrets",
        "--verb=get",
        "--resource=secrets",
    ])?;
    a.ok(&[
        "label",
        "clusterrole",
        "read-secrets",
        &format!("{LABEL}=true"),
    ])?;
    let secret_rule = json!({"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]});
    wait_for_rules(&a, "monitoring", &json!([cm_rule, secret_rule]))?;

    // A user bound to it may do what it shows.
    a.ok(&[
        "create",
        "clusterrolebinding",
        "mon",
        "--clusterrole=monitoring",
        "--user=mona",
    ])?;
    let can = a.run(&["auth", "can-i", "get", "secrets", "--as", "mona"])?;
    anyhow::ensure!(can.stdout.trim() == "yes", "{} {}", can.stdout, can.stderr);

    // A deleted one is dropped.
    a.ok(&["delete", "clusterrole", "read-cm"])?;
    wait_for_rules(&a, "monitoring", &json!([secret_rule]))?;

    // The other cluster's role of the same name aggregates its own cluster's roles only.
    let rb = rules(&b, "monitoring")?;
    anyhow::ensure!(rb == json!([]), "root:b got {rb}");
    let a_managers = a.ok(&[
        "get",
        "clusterrole",
        "monitoring",
        "--show-managed-fields",
        "-o",
        "jsonpath={.metadata.managedFields[*].manager}",
    ])?;
    anyhow::ensure!(
        a_managers.contains("clusterrole-aggregation-controller"),
        "{a_managers}"
    );
    Ok(())
}
