//! Workspaces (`tenancy.kplane.io/v1alpha1`) with the real kubectl: a Workspace creates a
//! child logical cluster served under `/clusters/<parent>:<name>`, reports Ready with its
//! URL, and deleting it removes every object of the child (and of its descendants).

use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::KplaneServer;
use serde_json::Value;

const WORKSPACE: &str = "apiVersion: tenancy.kplane.io/v1alpha1
kind: Workspace
metadata:
  name: NAME
";

fn manifest(name: &str) -> String {
    WORKSPACE.replace("NAME", name)
}

fn json(out: &str) -> Result<Value> {
    serde_json::from_str(out).with_context(|| format!("not JSON: {out}"))
}

#[test]
fn a_workspace_is_created_waited_for_listed_written_into_and_deleted_with_kubectl() -> Result<()> {
    let server = KplaneServer::start()?;
    let out = server.kubectl_stdin(&["create", "-f", "-"], &manifest("x"))?;
    ensure!(out.success(), "create: {}", out.stderr);
    ensure!(
        out.stdout.contains("workspace.tenancy.kplane.io/x created"),
        "{}",
        out.stdout
    );
    server.kubectl_ok(&[
        "wait",
        "--for=jsonpath={.status.phase}=Ready",
        "workspace/x",
        "--timeout=30s",
    ])?;
    let ws = json(&server.kubectl_ok(&["get", "ws", "x", "-o", "json"])?)?;
    let url = format!("{}/clusters/root:x", server.base_url());
    assert_eq!(ws["status"]["URL"], url.as_str(), "{ws}");
    assert_eq!(ws["status"]["conditions"][0]["type"], "Ready", "{ws}");
    assert_eq!(ws["status"]["conditions"][0]["status"], "True", "{ws}");
    assert_eq!(
        ws["metadata"]["finalizers"],
        serde_json::json!(["tenancy.kplane.io/workspace"])
    );

    // Table columns.
    let table = server.kubectl_ok(&["get", "ws"])?;
    let mut lines = table.lines();
    let header: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(header, ["NAME", "PHASE", "URL", "AGE"], "{table}");
    let row: Vec<&str> = lines
        .next()
        .unwrap_or_default()
        .split_whitespace()
        .collect();
    assert_eq!(&row[..3], ["x", "Ready", url.as_str()], "{table}");

    let described = server.kubectl_ok(&["describe", "ws", "x"])?;
    for want in ["Name:", "Ready", url.as_str(), "LogicalClusterReady"] {
        ensure!(
            described.contains(want),
            "describe lacks {want}: {described}"
        );
    }

    // The child cluster serves writes; its default namespaces exist.
    let child = server.kubectl_for("root:x")?;
    child.ok(&["get", "namespace", "default"])?;
    child.ok(&["create", "configmap", "in-x", "--from-literal=k=v"])?;
    child.ok(&["create", "namespace", "team"])?;
    child.ok(&["create", "configmap", "in-team", "-n", "team"])?;
    // A nested workspace, with an object of its own.
    let out = child.run_stdin(&["create", "-f", "-"], &manifest("nested"))?;
    ensure!(out.success(), "nested create: {}", out.stderr);
    child.ok(&[
        "wait",
        "--for=jsonpath={.status.phase}=Ready",
        "workspace/nested",
        "--timeout=30s",
    ])?;
    let grandchild = server.kubectl_for("root:x:nested")?;
    grandchild.ok(&["create", "configmap", "deep"])?;
    // The root cluster does not see them.
    let out = server.kubectl(&["get", "configmap", "in-x"])?;
    ensure!(!out.success(), "root sees the child's configmap");

    // kubectl delete waits until the Workspace is gone: by then the child is empty.
    let out = server.kubectl_ok(&["delete", "ws", "x", "--timeout=60s"])?;
    ensure!(out.contains("deleted"), "{out}");
    let out = server.kubectl(&["get", "ws", "x"])?;
    ensure!(
        !out.success() && out.stderr.contains("NotFound"),
        "{}",
        out.stderr
    );
    for (k, args) in [
        (&child, vec!["get", "configmap", "in-x"]),
        (&child, vec!["get", "configmap", "in-team", "-n", "team"]),
        (&child, vec!["get", "namespace", "team"]),
        (&child, vec!["get", "workspace", "nested"]),
        (&grandchild, vec!["get", "configmap", "deep"]),
    ] {
        let out = k.run(&args)?;
        ensure!(
            !out.success() && out.stderr.contains("NotFound"),
            "{args:?} after the delete: {} {}",
            out.stdout,
            out.stderr
        );
    }
    let out = child.ok(&["get", "namespaces", "-o", "name"])?;
    ensure!(out.trim().is_empty(), "namespaces left in root:x: {out}");

    // The name can be used again and the new cluster starts empty.
    let out = server.kubectl_stdin(&["create", "-f", "-"], &manifest("x"))?;
    ensure!(out.success(), "re-create: {}", out.stderr);
    server.kubectl_ok(&[
        "wait",
        "--for=jsonpath={.status.phase}=Ready",
        "workspace/x",
        "--timeout=30s",
    ])?;
    let out = child.run(&["get", "configmap", "in-x"])?;
    ensure!(!out.success() && out.stderr.contains("NotFound"));
    Ok(())
}

#[test]
fn workspaces_are_discovered_explained_applied_and_validated() -> Result<()> {
    let server = KplaneServer::start()?;
    let out = server.kubectl_ok(&["api-resources", "--api-group=tenancy.kplane.io"])?;
    let row = out
        .lines()
        .find(|l| l.starts_with("workspaces"))
        .with_context(|| format!("no workspaces in {out}"))?;
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(
        cols,
        [
            "workspaces",
            "ws",
            "tenancy.kplane.io/v1alpha1",
            "false",
            "Workspace"
        ],
        "{out}"
    );
    // OpenAPI v3 describes it.
    let out = server.kubectl_ok(&["explain", "workspace.status"])?;
    for field in ["phase", "URL", "conditions"] {
        ensure!(out.contains(field), "explain lacks {field}: {out}");
    }
    let out = server.kubectl_ok(&["explain", "workspace.spec.template"])?;
    ensure!(out.contains("string"), "{out}");

    // Server-side apply, and a change of the spec by a second apply.
    let applied = format!("{}spec:\n  template: base\n", manifest("applied"));
    let out = server.kubectl_stdin(&["apply", "--server-side", "-f", "-"], &applied)?;
    ensure!(out.success(), "apply: {}", out.stderr);
    let ws = json(&server.kubectl_ok(&[
        "get",
        "ws",
        "applied",
        "-o",
        "json",
        "--show-managed-fields",
    ])?)?;
    assert_eq!(ws["spec"]["template"], "base", "{ws}");
    let managers: Vec<&str> = ws["metadata"]["managedFields"]
        .as_array()
        .map(|a| a.iter().filter_map(|m| m["manager"].as_str()).collect())
        .unwrap_or_default();
    ensure!(managers.contains(&"kubectl"), "{managers:?}");

    // A name that is no DNS-1123 label: 422 Invalid.
    let out = server.kubectl_stdin(&["create", "-f", "-"], &manifest("Bad_Name"))?;
    ensure!(!out.success());
    ensure!(
        out.stderr.contains(
            "The Workspace \"Bad_Name\" is invalid: metadata.name: Invalid value: \"Bad_Name\""
        ),
        "{}",
        out.stderr
    );
    // Watch: a kubectl watch sees the workspace turn Ready.
    let mut watch = server.kubectl_root().spawn_watch(&[
        "get",
        "ws",
        "--watch",
        "--no-headers",
        "-o",
        "custom-columns=NAME:.metadata.name,PHASE:.status.phase",
    ])?;
    let out = server.kubectl_stdin(&["create", "-f", "-"], &manifest("watched"))?;
    ensure!(out.success(), "{}", out.stderr);
    watch.wait_for_line(Duration::from_secs(20), "watched Ready", |l| {
        let cols: Vec<&str> = l.split_whitespace().collect();
        cols == ["watched", "Ready"]
    })?;
    Ok(())
}
