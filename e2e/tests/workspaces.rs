//! Workspaces (`tenancy.kplane.io/v1alpha1`) with the real kubectl: a Workspace creates a
//! child logical cluster served under `/clusters/<parent>:<name>`, reports Ready with its
//! URL, and deleting it removes every object of the child (and of its descendants). A
//! logical cluster that no Workspace created (or whose Workspace is deleted) is a 404.

use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::{KplaneServer, ServerOptions};
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

/// One `curl -X method` of `path` as the admin: (status code, JSON body or `null`).
fn raw(server: &KplaneServer, method: &str, path: &str) -> Result<(u16, Value)> {
    let dir = tempfile::tempdir()?;
    let body = dir.path().join("body");
    let out = std::process::Command::new("curl")
        .args(["-sk", "-X", method, "-w", "%{http_code}", "-o"])
        .arg(&body)
        .arg("-H")
        .arg(format!("Authorization: Bearer {}", server.token()))
        .arg(format!("{}{path}", server.base_url()))
        .output()?;
    ensure!(
        out.status.success(),
        "curl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let code = String::from_utf8_lossy(&out.stdout).trim().parse()?;
    let body = std::fs::read(&body).unwrap_or_default();
    Ok((code, serde_json::from_slice(&body).unwrap_or(Value::Null)))
}

/// The Status of a request into logical cluster `cluster` that does not exist.
fn check_no_such_cluster(code: u16, status: &Value, cluster: &str) -> Result<()> {
    ensure!(code == 404, "{code}: {status}");
    ensure!(status["kind"] == "Status", "{status}");
    ensure!(status["reason"] == "NotFound", "{status}");
    ensure!(status["code"] == 404, "{status}");
    let message = format!("logical cluster \"{cluster}\" does not exist");
    ensure!(status["message"] == message.as_str(), "{status}");
    Ok(())
}

#[test]
fn an_unknown_logical_cluster_is_404_for_kubectl_and_raw_requests() -> Result<()> {
    let server = KplaneServer::start()?;
    let nope = server.kubectl_for("root:nope")?;
    // kubectl's discovery gets the 404 first and prints client-go's generic text for it.
    let out = nope.run(&["get", "cm"])?;
    ensure!(!out.success(), "get in root:nope: {}", out.stdout);
    ensure!(
        out.stderr.contains(
            "Error from server (NotFound): the server could not find the requested resource"
        ),
        "{}",
        out.stderr
    );
    // A request prints the Status' message.
    let out = nope.run(&["create", "configmap", "x"])?;
    ensure!(
        !out.success()
            && out.stderr.contains(
                r#"error: failed to create configmap: logical cluster "root:nope" does not exist"#
            ),
        "{} {}",
        out.stdout,
        out.stderr
    );
    // Raw requests: resources (every verb), discovery, OpenAPI.
    for (method, path) in [
        (
            "GET",
            "/clusters/root:nope/api/v1/namespaces/default/configmaps",
        ),
        (
            "GET",
            "/clusters/root:nope/api/v1/namespaces/default/configmaps/x",
        ),
        (
            "DELETE",
            "/clusters/root:nope/api/v1/namespaces/default/configmaps/x",
        ),
        ("GET", "/clusters/root:nope/api"),
        ("GET", "/clusters/root:nope/apis"),
        ("GET", "/clusters/root:nope/apis/tenancy.kplane.io/v1alpha1"),
        ("GET", "/clusters/root:nope/openapi/v2"),
        ("GET", "/clusters/root:nope/openapi/v3"),
        ("GET", "/clusters/root:a:b/api/v1/namespaces"),
    ] {
        let (code, status) = raw(&server, method, path)?;
        let cluster = if path.contains("root:a:b") {
            "root:a:b"
        } else {
            "root:nope"
        };
        check_no_such_cluster(code, &status, cluster)
            .with_context(|| format!("{method} {path}"))?;
    }
    // The wildcard and root are unaffected.
    for path in [
        "/clusters/*/api/v1/configmaps",
        "/clusters/root/api/v1/namespaces",
        "/api",
    ] {
        let (code, body) = raw(&server, "GET", path)?;
        ensure!(code == 200, "{path}: {code} {body}");
    }
    // Nothing was created: the cluster still does not exist.
    let (code, status) = raw(&server, "GET", "/clusters/root:nope/api/v1/namespaces")?;
    check_no_such_cluster(code, &status, "root:nope")
}

/// Clusters survive a restart: those made by Workspaces, and those a server in development
/// mode (`--auto-create-clusters`, as older kplane versions did) created by a first write.
#[test]
fn logical_clusters_still_exist_after_a_restart() -> Result<()> {
    let data = tempfile::tempdir()?;
    {
        let server = KplaneServer::start_with(
            ServerOptions::default()
                .arg("--auto-create-clusters")
                .data_dir(data.path()),
        )?;
        server.create_workspace("root:kept")?;
        server
            .kubectl_for("root:kept")?
            .ok(&["create", "configmap", "in-kept"])?;
        // Development mode: a first write creates the cluster.
        server
            .kubectl_for("root:adhoc")?
            .ok(&["create", "configmap", "in-adhoc"])?;
    }
    let mut server = KplaneServer::start_with(ServerOptions::default().data_dir(data.path()))?;
    for _ in 0..2 {
        for (cluster, cm) in [("root:kept", "in-kept"), ("root:adhoc", "in-adhoc")] {
            let k = server.kubectl_for(cluster)?;
            k.ok(&["get", "configmap", cm])?;
            k.ok(&[
                "create",
                "configmap",
                &format!("{cm}-{}", server.pid().unwrap_or(0)),
            ])?;
        }
        let ws = json(&server.kubectl_ok(&["get", "ws", "kept", "-o", "json"])?)?;
        ensure!(ws["status"]["phase"] == "Ready", "{ws}");
        // Without the flag an unknown cluster is a 404 again.
        let out = server
            .kubectl_for("root:other")?
            .run(&["create", "configmap", "x"])?;
        ensure!(
            !out.success()
                && out
                    .stderr
                    .contains(r#"logical cluster "root:other" does not exist"#),
            "{}",
            out.stderr
        );
        server.restart()?;
    }
    Ok(())
}

/// Deleting a workspace refuses writes into its cluster at once; once the deletion is done
/// the cluster is a 404, also after a restart.
#[test]
fn a_deleted_workspace_cluster_is_refused_then_404_also_after_a_restart() -> Result<()> {
    let mut server = KplaneServer::start()?;
    server.create_workspaces(&["root:gone", "root:gone:inner"])?;
    let gone = server.kubectl_for("root:gone")?;
    gone.ok(&["create", "configmap", "x"])?;
    // A finalizer of someone else keeps the Workspace (Terminating) after its cluster went.
    server.kubectl_ok(&[
        "patch",
        "ws",
        "gone",
        "--type=json",
        "-p",
        r#"[{"op":"add","path":"/metadata/finalizers/-","value":"example.com/hold"}]"#,
    ])?;
    server.kubectl_ok(&["delete", "ws", "gone", "--wait=false"])?;
    // Refused (403) or already gone (404): never written.
    let out = gone.run(&["create", "configmap", "y"])?;
    ensure!(
        !out.success()
            && (out.stderr.contains("is being deleted") || out.stderr.contains("does not exist")),
        "{} {}",
        out.stdout,
        out.stderr
    );
    kplane_e2e::poll_until(
        Duration::from_secs(30),
        "root:gone to stop existing",
        || {
            let (code, _) = raw(&server, "GET", "/clusters/root:gone/api/v1/namespaces")?;
            Ok(code == 404)
        },
    )?;
    let ws = json(&server.kubectl_ok(&["get", "ws", "gone", "-o", "json"])?)?;
    ensure!(ws["status"]["phase"] == "Terminating", "{ws}");
    server.restart()?;
    for cluster in ["root:gone", "root:gone:inner"] {
        let (code, status) = raw(
            &server,
            "GET",
            &format!("/clusters/{cluster}/api/v1/namespaces"),
        )?;
        check_no_such_cluster(code, &status, cluster)?;
        let (code, status) = raw(
            &server,
            "POST",
            &format!("/clusters/{cluster}/api/v1/namespaces/default/configmaps"),
        )?;
        ensure!(code == 403 || code == 404, "{cluster}: {code} {status}");
    }
    let ws = json(&server.kubectl_ok(&["get", "ws", "gone", "-o", "json"])?)?;
    ensure!(ws["status"]["phase"] == "Terminating", "{ws}");
    // Releasing the other finalizer removes the Workspace; the name can be used again.
    server.kubectl_ok(&[
        "patch",
        "ws",
        "gone",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":null}}"#,
    ])?;
    kplane_e2e::poll_until(Duration::from_secs(30), "workspace gone to go", || {
        Ok(!server.kubectl(&["get", "ws", "gone"])?.success())
    })?;
    server.create_workspace("root:gone")?;
    let gone = server.kubectl_for("root:gone")?;
    let out = gone.run(&["get", "configmap", "x"])?;
    ensure!(
        !out.success() && out.stderr.contains("NotFound"),
        "{}",
        out.stderr
    );
    gone.ok(&["create", "configmap", "y"])?;
    Ok(())
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
    // The deleted workspace's cluster no longer exists.
    let out = child.run(&["create", "configmap", "again"])?;
    ensure!(
        !out.success()
            && out
                .stderr
                .contains(r#"logical cluster "root:x" does not exist"#),
        "{} {}",
        out.stdout,
        out.stderr
    );
    let (code, status) = raw(&server, "GET", "/clusters/root:x:nested/api/v1/namespaces")?;
    ensure!(code == 404, "{code} {status}");

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
