//! core/v1 PersistentVolumeClaims through the real kubectl: apply, the Table, upstream's
//! defaults, `/status` written with `kubectl patch --subresource=status`, and the 422s of
//! a claim without access modes and of a changed spec.

use anyhow::{ensure, Result};
use kplane_e2e::{KplaneServer, Table};

use super::get_json;

const DATA: &str = r#"
apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: data
spec:
  accessModes: [ReadWriteOnce]
  storageClassName: fast
  resources:
    requests: {storage: 1Gi}
status:
  phase: Bound
"#;

#[test]
fn kubectl_applies_prints_binds_and_refuses_persistent_volume_claims() -> Result<()> {
    let server = KplaneServer::start()?;
    let k = server.kubectl_root();
    let out = k.ok_stdin(&["apply", "-f", "-"], DATA)?;
    assert_eq!(out.trim(), "persistentvolumeclaim/data created");

    // A new claim is Pending whatever status it was sent with; the volume mode defaults.
    let pvc = get_json(&server, &["get", "pvc", "data"])?;
    assert_eq!(pvc["status"], serde_json::json!({"phase": "Pending"}));
    assert_eq!(pvc["spec"]["volumeMode"], "Filesystem");
    let table = Table::parse(&server.kubectl_ok(&["get", "persistentvolumeclaims"])?)?;
    assert_eq!(
        table.headers,
        [
            "NAME",
            "STATUS",
            "VOLUME",
            "CAPACITY",
            "ACCESS MODES",
            "STORAGECLASS",
            "VOLUMEATTRIBUTESCLASS",
            "AGE"
        ]
    );
    assert_eq!(table.cell("NAME", "data", "STATUS")?, "Pending");
    assert_eq!(table.cell("NAME", "data", "STORAGECLASS")?, "fast");
    assert_eq!(
        table.cell("NAME", "data", "VOLUMEATTRIBUTESCLASS")?,
        "<unset>"
    );

    // Binding as a volume controller would: the volume name once, then the status.
    k.ok(&[
        "patch",
        "pvc",
        "data",
        "--type=merge",
        "-p",
        r#"{"spec":{"volumeName":"pv-1"}}"#,
    ])?;
    k.ok(&[
        "patch",
        "pvc",
        "data",
        "--subresource=status",
        "--type=merge",
        "-p",
        r#"{"status":{"phase":"Bound","accessModes":["ReadWriteOnce"],"capacity":{"storage":"1Gi"}}}"#,
    ])?;
    let table = Table::parse(&server.kubectl_ok(&["get", "pvc", "-o", "wide"])?)?;
    assert_eq!(table.cell("NAME", "data", "STATUS")?, "Bound");
    assert_eq!(table.cell("NAME", "data", "VOLUME")?, "pv-1");
    assert_eq!(table.cell("NAME", "data", "CAPACITY")?, "1Gi");
    assert_eq!(table.cell("NAME", "data", "ACCESS MODES")?, "RWO");
    assert_eq!(table.cell("NAME", "data", "VOLUMEMODE")?, "Filesystem");

    // A second volume name is a changed spec; a claim without access modes is refused.
    let out = k.run(&[
        "patch",
        "pvc",
        "data",
        "--type=merge",
        "-p",
        r#"{"spec":{"volumeName":"pv-2"}}"#,
    ])?;
    ensure!(!out.success(), "the volume name changed twice");
    ensure!(
        out.stderr.contains("spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"),
        "{}",
        out.stderr
    );
    let out = k.run_stdin(
        &["apply", "-f", "-"],
        "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: empty}\nspec: {resources: {requests: {storage: 1Gi}}}\n",
    )?;
    ensure!(!out.success(), "a claim without access modes was accepted");
    assert_eq!(
        out.stderr,
        "The PersistentVolumeClaim \"empty\" is invalid: spec.accessModes: Required value: at least 1 access mode is required\n"
    );
    Ok(())
}
