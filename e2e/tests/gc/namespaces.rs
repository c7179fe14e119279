//! Namespace deletion honours finalizers on the namespace's contents: the namespace stays
//! Terminating with the namespace controller's conditions naming what blocks it, and
//! finishes once the finalizer is removed.

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::{poll_until, KplaneServer};
use serde_json::Value;

use super::TIMEOUT;

fn namespace_json(server: &KplaneServer, name: &str) -> Result<Option<Value>> {
    let out = server.kubectl(&["get", "namespace", name, "-o", "json"])?;
    if !out.success() {
        ensure!(out.stderr.contains("not found"), "{out:?}");
        return Ok(None);
    }
    Ok(Some(serde_json::from_str(&out.stdout)?))
}

fn condition<'a>(ns: &'a Value, kind: &str) -> Option<&'a Value> {
    ns.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

#[test]
fn namespace_waits_for_content_finalizers_with_upstream_conditions() -> Result<()> {
    let server = KplaneServer::start()?;
    server.kubectl_ok(&["create", "namespace", "doomed"])?;
    let held = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: held\n  namespace: doomed\n  finalizers: [example.com/block]\n";
    let out = server.kubectl_stdin(&["create", "-f", "-"], held)?;
    ensure!(out.success(), "{out:?}");
    server.kubectl_ok(&["create", "configmap", "free", "-n", "doomed"])?;
    server.kubectl_ok(&["delete", "namespace", "doomed", "--wait=false"])?;

    let mut ns = Value::Null;
    poll_until(TIMEOUT, "the namespace to report remaining content", || {
        ns = namespace_json(&server, "doomed")?.context("namespace went too early")?;
        Ok(condition(&ns, "NamespaceFinalizersRemaining").is_some_and(|c| c["status"] == "True"))
    })?;
    ensure!(ns["status"]["phase"] == "Terminating", "{ns}");
    let content = condition(&ns, "NamespaceContentRemaining").context("no content condition")?;
    ensure!(content["status"] == "True", "{content}");
    ensure!(content["reason"] == "SomeResourcesRemain", "{content}");
    ensure!(
        content["message"] == "Some resources are remaining: configmaps. has 1 resource instances",
        "{content}"
    );
    let fins = condition(&ns, "NamespaceFinalizersRemaining").context("no finalizer condition")?;
    ensure!(fins["reason"] == "SomeFinalizersRemain", "{fins}");
    ensure!(
        fins["message"]
            == "Some content in the namespace has finalizers remaining: example.com/block in 1 resource instances",
        "{fins}"
    );
    for (kind, reason) in [
        ("NamespaceDeletionDiscoveryFailure", "ResourcesDiscovered"),
        (
            "NamespaceDeletionGroupVersionParsingFailure",
            "ParsedGroupVersions",
        ),
        ("NamespaceDeletionContentFailure", "ContentDeleted"),
    ] {
        let c = condition(&ns, kind).with_context(|| format!("no {kind} condition: {ns}"))?;
        ensure!(c["status"] == "False" && c["reason"] == reason, "{c}");
    }
    // Content without finalizers is gone; the held object waits, marked for deletion.
    ensure!(!server
        .kubectl(&["get", "configmap", "free", "-n", "doomed"])?
        .success());
    let ts = server.kubectl_ok(&[
        "get",
        "configmap",
        "held",
        "-n",
        "doomed",
        "-o",
        "jsonpath={.metadata.deletionTimestamp}",
    ])?;
    ensure!(!ts.trim().is_empty(), "held is not marked for deletion");

    server.kubectl_ok(&[
        "patch",
        "configmap",
        "held",
        "-n",
        "doomed",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ])?;
    poll_until(TIMEOUT, "the namespace to finish deleting", || {
        Ok(namespace_json(&server, "doomed")?.is_none())
    })?;
    Ok(())
}
