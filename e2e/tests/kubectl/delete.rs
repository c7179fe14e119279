//! Deleting with kubectl: namespaces with contents, protected namespaces, finalizers.

use std::time::Duration;

use anyhow::{ensure, Result};
use kplane_e2e::{poll_until, KplaneServer};

use super::get_json;

const GONE_TIMEOUT: Duration = Duration::from_secs(30);

#[test]
fn delete_namespace_removes_it_and_its_contents() -> Result<()> {
    let server = KplaneServer::start()?;
    server.kubectl_ok(&["create", "namespace", "doomed"])?;
    server.kubectl_ok(&[
        "create",
        "configmap",
        "c1",
        "-n",
        "doomed",
        "--from-literal=a=1",
    ])?;
    server.kubectl_ok(&[
        "create",
        "secret",
        "generic",
        "s1",
        "-n",
        "doomed",
        "--from-literal=b=2",
    ])?;

    // kubectl waits (--wait=true) until the namespace is gone.
    let out = server.kubectl_ok(&["delete", "namespace", "doomed"])?;
    assert_eq!(out.trim(), "namespace \"doomed\" deleted");
    poll_until(GONE_TIMEOUT, "namespace doomed to disappear", || {
        let get = server.kubectl(&["get", "namespace", "doomed"])?;
        Ok(!get.success() && get.stderr.contains("namespaces \"doomed\" not found"))
    })?;

    let left = server.kubectl_ok(&["get", "configmaps,secrets", "-n", "doomed", "-o", "name"])?;
    ensure!(left.trim().is_empty(), "contents survived: {left}");

    // A namespace of the same name starts empty: nothing is resurrected.
    server.kubectl_ok(&["create", "namespace", "doomed"])?;
    for (kind, name) in [("configmap", "c1"), ("secret", "s1")] {
        let get = server.kubectl(&["get", kind, name, "-n", "doomed"])?;
        ensure!(
            !get.success() && get.stderr.contains("not found"),
            "{kind}/{name} survived namespace deletion: {get:?}"
        );
    }
    Ok(())
}

#[test]
fn delete_default_namespace_is_forbidden() -> Result<()> {
    let server = KplaneServer::start()?;
    let out = server.kubectl(&["delete", "namespace", "default", "--wait=false"])?;
    ensure!(!out.success(), "deleting default succeeded: {}", out.stdout);
    ensure!(
        out.stderr.contains("Error from server (Forbidden)")
            && out.stderr.contains("namespaces \"default\" is forbidden"),
        "unexpected error: {}",
        out.stderr
    );
    let ns = get_json(&server, &["get", "namespace", "default"])?;
    ensure!(
        ns["metadata"].get("deletionTimestamp").is_none(),
        "default was marked for deletion: {ns}"
    );
    assert_eq!(ns["status"]["phase"], "Active");
    Ok(())
}

#[test]
fn finalizer_keeps_object_until_removed_by_json_patch() -> Result<()> {
    let server = KplaneServer::start()?;
    let manifest = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  finalizers:\n  \
                    - example.com/hold\ndata:\n  a: \"1\"\n";
    server.kubectl_stdin(&["create", "-f", "-"], manifest)?;

    let out = server.kubectl_ok(&["delete", "configmap", "held", "--wait=false"])?;
    assert_eq!(out.trim(), "configmap \"held\" deleted");
    let cm = get_json(&server, &["get", "configmap", "held"])?;
    ensure!(
        cm["metadata"]["deletionTimestamp"].is_string(),
        "no deletionTimestamp on a finalized object after delete: {cm}"
    );
    assert_eq!(
        cm["metadata"]["finalizers"],
        serde_json::json!(["example.com/hold"])
    );

    let out = server.kubectl_ok(&[
        "patch",
        "configmap",
        "held",
        "--type",
        "json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ])?;
    assert_eq!(out.trim(), "configmap/held patched");
    poll_until(GONE_TIMEOUT, "configmap held to disappear", || {
        let get = server.kubectl(&["get", "configmap", "held"])?;
        Ok(!get.success() && get.stderr.contains("configmaps \"held\" not found"))
    })?;
    Ok(())
}
