//! Server-side apply with kubectl: create-on-apply, managedFields, a conflict between two
//! managers, `--force-conflicts`, and removal of fields a manager stops applying.

use anyhow::{ensure, Result};
use kplane_e2e::KplaneServer;

fn cm(data: &str) -> String {
    format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\n  namespace: default\ndata:\n{data}")
}

#[test]
fn server_side_apply_tracks_owners_conflicts_and_removals() -> Result<()> {
    let server = KplaneServer::start()?;
    let out = server.kubectl_stdin(
        &["apply", "--server-side", "-f", "-"],
        &cm("  a: \"1\"\n  b: \"2\"\n"),
    )?;
    ensure!(
        out.success() && out.stdout.contains("serverside-applied"),
        "{out:?}"
    );
    let mf = server.kubectl_ok(&[
        "get",
        "cm",
        "ssa",
        "-o",
        "jsonpath={.metadata.managedFields[0].manager} {.metadata.managedFields[0].operation}",
    ])?;
    ensure!(mf.trim() == "kubectl Apply", "managedFields: {mf}");

    // Another manager changing an owned field conflicts, naming the owner and the field.
    let other = cm("  a: \"other\"\n");
    let out = server.kubectl_stdin(
        &["apply", "--server-side", "--field-manager=other", "-f", "-"],
        &other,
    )?;
    ensure!(
        !out.success()
            && out.stderr.contains("conflict with \"kubectl\"")
            && out.stderr.contains(".data.a"),
        "{out:?}"
    );
    let out = server.kubectl_stdin(
        &[
            "apply",
            "--server-side",
            "--field-manager=other",
            "--force-conflicts",
            "-f",
            "-",
        ],
        &other,
    )?;
    ensure!(out.success(), "{out:?}");

    // kubectl stops applying b (it owned it alone: removed) and a (now owned by other: kept).
    let out = server.kubectl_stdin(&["apply", "--server-side", "-f", "-"], &cm("  c: \"3\"\n"))?;
    ensure!(out.success(), "{out:?}");
    let data = server.kubectl_ok(&["get", "cm", "ssa", "-o", "jsonpath={.data}"])?;
    ensure!(
        data.trim() == r#"{"a":"other","c":"3"}"#,
        "data after the third apply: {data}"
    );
    Ok(())
}

#[test]
fn apply_requires_a_field_manager() -> Result<()> {
    let server = KplaneServer::start()?;
    // kubectl always sends a field manager; ask the API directly without one.
    let url = format!(
        "{}/api/v1/namespaces/default/configmaps/x",
        server.base_url()
    );
    let out = std::process::Command::new("curl")
        .args([
            "-sk",
            "-X",
            "PATCH",
            "-H",
            "Content-Type: application/apply-patch+yaml",
        ])
        .arg("-H")
        .arg(format!("Authorization: Bearer {}", server.token()))
        .args([
            "--data-binary",
            "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"x\"}}",
        ])
        .arg(url)
        .output()?;
    let body = String::from_utf8_lossy(&out.stdout);
    ensure!(
        body.contains("\"code\":422")
            && body.contains("fieldManager: Required value: is required for apply patch"),
        "{body}"
    );
    Ok(())
}
