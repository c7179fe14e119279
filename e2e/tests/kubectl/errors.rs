//! What kubectl prints when the server refuses a request.

use anyhow::{ensure, Result};
use kplane_e2e::KplaneServer;

#[test]
fn get_nodes_reports_unknown_resource_type() -> Result<()> {
    let server = KplaneServer::start()?;
    let out = server.kubectl(&["get", "nodes"])?;
    ensure!(!out.success(), "get nodes succeeded: {}", out.stdout);
    ensure!(
        out.stderr
            .contains("the server doesn't have a resource type \"nodes\""),
        "unexpected error: {}",
        out.stderr
    );
    Ok(())
}

#[test]
fn create_configmap_with_invalid_key_is_rejected_as_invalid() -> Result<()> {
    let server = KplaneServer::start()?;
    let manifest =
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad-key\ndata:\n  \"a b\": x\n";
    let out = server.kubectl_stdin(&["create", "-f", "-"], manifest)?;
    ensure!(!out.success(), "invalid key accepted: {}", out.stdout);
    ensure!(
        out.stderr.contains("The ConfigMap \"bad-key\" is invalid")
            && out.stderr.contains("data[a b]: Invalid value"),
        "unexpected error: {}",
        out.stderr
    );
    let get = server.kubectl(&["get", "configmap", "bad-key"])?;
    ensure!(!get.success(), "the invalid ConfigMap was stored");
    Ok(())
}

#[test]
fn malformed_label_selector_is_bad_request() -> Result<()> {
    let server = KplaneServer::start()?;
    let out = server.kubectl(&["get", "configmaps", "--selector", "a in (x"])?;
    ensure!(
        !out.success(),
        "malformed selector accepted: {}",
        out.stdout
    );
    ensure!(
        out.stderr.contains("Error from server (BadRequest)"),
        "unexpected error: {}",
        out.stderr
    );
    Ok(())
}

#[test]
fn unsupported_field_selector_is_rejected() -> Result<()> {
    let server = KplaneServer::start()?;
    let out = server.kubectl(&["get", "configmaps", "--field-selector", "spec.foo=x"])?;
    ensure!(
        !out.success(),
        "unsupported field selector accepted: {}",
        out.stdout
    );
    ensure!(
        out.stderr.contains("Error from server (BadRequest)")
            && out.stderr.contains(
                r#""spec.foo" is not a known field selector: only "metadata.name", "metadata.namespace""#
            ),
        "unexpected error: {}",
        out.stderr
    );
    // Supported fields work.
    server.kubectl_ok(&["create", "configmap", "target"])?;
    let ok = server.kubectl_ok(&[
        "get",
        "configmaps",
        "--field-selector",
        "metadata.name=target",
        "-o",
        "name",
    ])?;
    assert_eq!(ok.trim(), "configmap/target");
    Ok(())
}

#[test]
fn finalizer_names_are_validated_as_upstream() -> Result<()> {
    let server = KplaneServer::start()?;
    let out = server.kubectl_stdin(
        &["create", "-f", "-"],
        r#"{"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "finalizers": ["example.com/ok", "bad name"]}}"#,
    )?;
    ensure!(
        !out.success(),
        "a bad finalizer was accepted: {}",
        out.stdout
    );
    ensure!(
        out.stderr.contains(
            r#"metadata.finalizers: Invalid value: "bad name": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"#
        ),
        "{}",
        out.stderr
    );
    let out = server.kubectl_stdin(
        &["create", "-f", "-"],
        r#"{"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "c", "finalizers": ["orphan", "foregroundDeletion"]}}"#,
    )?;
    ensure!(
        !out.success(),
        "orphan with foregroundDeletion was accepted"
    );
    ensure!(
        out.stderr.contains(
            r#"metadata.finalizers: Invalid value: []string{"orphan", "foregroundDeletion"}: finalizer orphan and foregroundDeletion cannot be both set"#
        ),
        "{}",
        out.stderr
    );
    Ok(())
}
