//! `kube-root-ca.crt`: published in every namespace of every logical cluster, recreated when
//! deleted and put back when edited (upstream's root-CA publisher).

use std::time::Duration;

use anyhow::{Context as _, Result};
use kplane_e2e::{poll_until, KplaneServer, Kubectl};
use serde_json::Value;

const DESCRIPTION: &str = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. No other usage is guaranteed across distributions of Kubernetes clusters.";
const WAIT: Duration = Duration::from_secs(10);

fn root_ca(k: &Kubectl, ns: &str) -> Result<Option<Value>> {
    let out = k.run(&["get", "cm", "kube-root-ca.crt", "-n", ns, "-o", "json"])?;
    if !out.success() {
        return Ok(None);
    }
    serde_json::from_str(&out.stdout)
        .map(Some)
        .context("kubectl get output is not JSON")
}

/// Whether the ConfigMap holds exactly the CA with upstream's description.
fn published(cm: &Value, ca: &str) -> bool {
    cm["data"].as_object().is_some_and(|d| d.len() == 1)
        && cm["data"]["ca.crt"] == ca
        && cm["metadata"]["annotations"]["kubernetes.io/description"] == DESCRIPTION
}

fn wait_published(k: &Kubectl, ns: &str, ca: &str, what: &str) -> Result<Value> {
    let mut last = None;
    poll_until(WAIT, what, || {
        last = root_ca(k, ns)?;
        Ok(last.as_ref().is_some_and(|cm| published(cm, ca)))
    })?;
    last.context("no ConfigMap")
}

#[test]
fn root_ca_is_recreated_when_deleted_and_reverted_when_edited() -> Result<()> {
    let server = KplaneServer::start()?;
    let ca = server.ca_pem()?;
    let root = server.kubectl_root();
    root.ok(&["create", "namespace", "pub"])?;
    let first = wait_published(root, "pub", &ca, "the new namespace's kube-root-ca.crt")?;

    let out = root.ok(&["delete", "cm", "kube-root-ca.crt", "-n", "pub"])?;
    assert_eq!(out.trim(), "configmap \"kube-root-ca.crt\" deleted");
    let again = wait_published(root, "pub", &ca, "kube-root-ca.crt to come back")?;
    assert_ne!(
        again["metadata"]["uid"], first["metadata"]["uid"],
        "a new object"
    );

    // Data edits are reverted; the user's label and other annotations stay.
    root.ok(&[
        "patch", "cm", "kube-root-ca.crt", "-n", "pub", "--type=merge", "-p",
        r#"{"metadata":{"labels":{"mine":"yes"},"annotations":{"note":"kept"}},"data":{"ca.crt":"tampered","extra":"x"}}"#,
    ])?;
    let fixed = wait_published(root, "pub", &ca, "the edited data to be reverted")?;
    assert_eq!(fixed["metadata"]["labels"]["mine"], "yes");
    assert_eq!(fixed["metadata"]["annotations"]["note"], "kept");

    // The description annotation is put back too.
    root.ok(&[
        "annotate",
        "cm",
        "kube-root-ca.crt",
        "-n",
        "pub",
        "kubernetes.io/description-",
    ])?;
    wait_published(root, "pub", &ca, "the description to be put back")?;

    // Another logical cluster (a workspace) is published the same way.
    server.create_workspace("root:other")?;
    let other = server.kubectl_for("root:other")?;
    other.ok(&["create", "namespace", "elsewhere"])?;
    wait_published(&other, "elsewhere", &ca, "kube-root-ca.crt in root:other")?;
    other.ok(&["delete", "cm", "kube-root-ca.crt", "-n", "default"])?;
    wait_published(
        &other,
        "default",
        &ca,
        "root:other default's kube-root-ca.crt",
    )?;

    // A deleted namespace is not given a new one: its deletion completes.
    root.ok(&["delete", "namespace", "pub", "--timeout=20s"])?;
    let out = root.run(&["get", "namespace", "pub"])?;
    assert!(!out.success(), "namespace pub still exists: {}", out.stdout);
    Ok(())
}
