//! Imperative `kubectl create <kind>` and `kubectl create -f`, checked with `kubectl get`.

use anyhow::{ensure, Result};
use kplane_e2e::{base64_encode, KplaneServer, Table};

use super::get_json;

#[test]
fn create_namespace_then_get_shows_status_active() -> Result<()> {
    let server = KplaneServer::start()?;
    let out = server.kubectl_ok(&["create", "namespace", "team-a"])?;
    assert_eq!(out.trim(), "namespace/team-a created");

    let table = Table::parse(&server.kubectl_ok(&["get", "namespace", "team-a"])?)?;
    assert_eq!(table.headers, ["NAME", "STATUS", "AGE"]);
    assert_eq!(table.cell("NAME", "team-a", "STATUS")?, "Active");
    Ok(())
}

#[test]
fn create_configmap_from_literals_then_get_shows_data_count() -> Result<()> {
    let server = KplaneServer::start()?;
    let out = server.kubectl_ok(&[
        "create",
        "configmap",
        "settings",
        "--from-literal=mode=fast",
        "--from-literal=level=3",
    ])?;
    assert_eq!(out.trim(), "configmap/settings created");

    let table = Table::parse(&server.kubectl_ok(&["get", "configmap", "settings"])?)?;
    assert_eq!(table.headers, ["NAME", "DATA", "AGE"]);
    assert_eq!(table.cell("NAME", "settings", "DATA")?, "2");

    let cm = get_json(&server, &["get", "configmap", "settings"])?;
    assert_eq!(cm["data"]["mode"], "fast");
    assert_eq!(cm["data"]["level"], "3");
    Ok(())
}

#[test]
fn create_secret_generic_then_get_shows_type_and_data_count() -> Result<()> {
    let server = KplaneServer::start()?;
    let out = server.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "creds",
        "--from-literal=user=admin",
        "--from-literal=password=s3cr3t",
    ])?;
    assert_eq!(out.trim(), "secret/creds created");

    let table = Table::parse(&server.kubectl_ok(&["get", "secret", "creds"])?)?;
    assert_eq!(table.headers, ["NAME", "TYPE", "DATA", "AGE"]);
    assert_eq!(table.cell("NAME", "creds", "TYPE")?, "Opaque");
    assert_eq!(table.cell("NAME", "creds", "DATA")?, "2");

    let secret = get_json(&server, &["get", "secret", "creds"])?;
    assert_eq!(secret["type"], "Opaque");
    assert_eq!(secret["data"]["password"], base64_encode("s3cr3t"));
    assert_eq!(secret["data"]["user"], base64_encode("admin"));
    Ok(())
}

#[test]
fn create_job_then_get_shows_completions_zero_of_one() -> Result<()> {
    let server = KplaneServer::start()?;
    let out = server.kubectl_ok(&["create", "job", "hello", "--image=busybox"])?;
    assert_eq!(out.trim(), "job.batch/hello created");

    let table = Table::parse(&server.kubectl_ok(&["get", "job", "hello"])?)?;
    assert_eq!(
        table.headers,
        ["NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"]
    );
    assert_eq!(table.cell("NAME", "hello", "COMPLETIONS")?, "0/1");
    // Nothing runs Jobs here: no conditions, so the printer says Running.
    assert_eq!(table.cell("NAME", "hello", "STATUS")?, "Running");

    let job = get_json(&server, &["get", "job", "hello"])?;
    let container = &job["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "busybox");
    assert_eq!(job["spec"]["template"]["spec"]["restartPolicy"], "Never");
    Ok(())
}

const MULTI_DOC: &str = "\
apiVersion: v1
kind: Namespace
metadata:
  name: multi
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: app-config
  namespace: multi
data:
  mode: fast
---
apiVersion: v1
kind: Secret
metadata:
  name: app-secret
  namespace: multi
stringData:
  token: abc
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: reader
  namespace: multi
rules:
- apiGroups: [\"\"]
  resources: [\"configmaps\"]
  verbs: [\"get\", \"list\"]
";

#[test]
fn create_from_multi_document_manifest_creates_every_object() -> Result<()> {
    let server = KplaneServer::start()?;
    let out = server.kubectl_stdin(&["create", "-f", "-"], MULTI_DOC)?;
    ensure!(out.success(), "create -f failed: {}", out.stderr);
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(
        lines,
        [
            "namespace/multi created",
            "configmap/app-config created",
            "secret/app-secret created",
            "role.rbac.authorization.k8s.io/reader created",
        ]
    );

    let names =
        server.kubectl_ok(&["get", "configmap,secret,role", "-n", "multi", "-o", "name"])?;
    for want in [
        "configmap/app-config",
        "secret/app-secret",
        "role.rbac.authorization.k8s.io/reader",
    ] {
        ensure!(
            names.lines().any(|l| l == want),
            "{want} missing from:\n{names}"
        );
    }
    let role = get_json(&server, &["get", "role", "reader", "-n", "multi"])?;
    assert_eq!(role["rules"][0]["resources"][0], "configmaps");
    assert_eq!(
        role["rules"][0]["verbs"],
        serde_json::json!(["get", "list"])
    );
    Ok(())
}

#[test]
fn create_with_server_dry_run_stores_nothing() -> Result<()> {
    let server = KplaneServer::start()?;
    let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dry\ndata:\n  a: \"1\"\n";
    let out = server.kubectl_stdin(&["create", "--dry-run=server", "-f", "-"], manifest)?;
    ensure!(out.success(), "dry-run create failed: {}", out.stderr);
    assert_eq!(out.stdout.trim(), "configmap/dry created (server dry run)");

    let get = server.kubectl(&["get", "configmap", "dry"])?;
    ensure!(
        !get.success() && get.stderr.contains("configmaps \"dry\" not found"),
        "dry-run object was stored: {get:?}"
    );
    // And a real create afterwards is not an AlreadyExists.
    server.kubectl_ok(&["create", "configmap", "dry", "--from-literal=a=1"])?;
    Ok(())
}
