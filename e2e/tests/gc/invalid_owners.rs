//! Owner references that point outside the dependent's namespace, as Kubernetes' collector
//! treats them: a cluster-scoped dependent naming a namespaced owner gets an
//! `OwnerRefInvalidNamespace` Warning and is never collected for it; a namespaced
//! dependent naming an owner in another namespace has an absent owner (it is collected)
//! and gets the same Warning.

use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use kplane_e2e::{poll_until, KplaneServer};
use serde_json::Value;

use super::TIMEOUT;

/// The `OwnerRefInvalidNamespace` events in `ns`.
fn invalid_owner_events(server: &KplaneServer, ns: &str) -> Result<Vec<Value>> {
    let out = server.kubectl_ok(&["get", "events", "-n", ns, "-o", "json"])?;
    let list: Value = serde_json::from_str(&out)?;
    Ok(list["items"]
        .as_array()
        .context("no items")?
        .iter()
        .filter(|e| e["reason"] == "OwnerRefInvalidNamespace")
        .cloned()
        .collect())
}

fn uid(server: &KplaneServer, args: &[&str]) -> Result<String> {
    let mut a = vec!["get"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["-o", "jsonpath={.metadata.uid}"]);
    server.kubectl_ok(&a)
}

fn create(server: &KplaneServer, manifest: &str) -> Result<()> {
    let out = server.kubectl_stdin(&["create", "-f", "-"], manifest)?;
    ensure!(out.success(), "{out:?}");
    Ok(())
}

#[test]
fn cluster_scoped_dependent_of_a_namespaced_owner_warns_and_is_kept() -> Result<()> {
    let server = KplaneServer::start()?;
    server.kubectl_ok(&["create", "configmap", "owner", "-n", "default"])?;
    let owner_uid = uid(&server, &["configmap", "owner", "-n", "default"])?;
    create(
        &server,
        &format!(
            "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: dep-role\n  ownerReferences:\n  - {{apiVersion: v1, kind: ConfigMap, name: owner, uid: \"{owner_uid}\"}}\n"
        ),
    )?;
    let role_uid = uid(&server, &["clusterrole", "dep-role"])?;
    let mut events = Vec::new();
    poll_until(TIMEOUT, "an OwnerRefInvalidNamespace event", || {
        events = invalid_owner_events(&server, "default")?;
        Ok(!events.is_empty())
    })?;
    let ev = &events[0];
    ensure!(ev["type"] == "Warning", "{ev}");
    ensure!(
        ev["message"]
            == format!(
                "ownerRef [v1/ConfigMap, namespace: , name: owner, uid: {owner_uid}] does not exist in namespace \"\""
            ),
        "{ev}"
    );
    ensure!(
        ev["source"]["component"] == "garbage-collector-controller",
        "{ev}"
    );
    let involved = &ev["involvedObject"];
    ensure!(involved["kind"] == "ClusterRole", "{ev}");
    ensure!(involved["name"] == "dep-role", "{ev}");
    ensure!(involved["uid"] == role_uid.as_str(), "{ev}");
    ensure!(involved.get("namespace").is_none(), "{ev}");

    // Not collected for it: neither now nor once the namespaced owner is deleted.
    std::thread::sleep(Duration::from_secs(3));
    ensure!(server
        .kubectl(&["get", "clusterrole", "dep-role"])?
        .success());
    server.kubectl_ok(&["delete", "configmap", "owner", "-n", "default"])?;
    std::thread::sleep(Duration::from_secs(3));
    ensure!(
        server
            .kubectl(&["get", "clusterrole", "dep-role"])?
            .success(),
        "the cluster-scoped dependent was collected"
    );
    Ok(())
}

#[test]
fn namespaced_dependent_of_an_owner_in_another_namespace_is_collected_with_a_warning() -> Result<()>
{
    let server = KplaneServer::start()?;
    server.kubectl_ok(&["create", "namespace", "a"])?;
    server.kubectl_ok(&["create", "namespace", "b"])?;
    server.kubectl_ok(&["create", "configmap", "owner", "-n", "a"])?;
    let owner_uid = uid(&server, &["configmap", "owner", "-n", "a"])?;
    create(
        &server,
        &format!(
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dep\n  namespace: b\n  ownerReferences:\n  - {{apiVersion: v1, kind: ConfigMap, name: owner, uid: \"{owner_uid}\"}}\n"
        ),
    )?;
    poll_until(TIMEOUT, "the dependent in b to be collected", || {
        let get = server.kubectl(&["get", "configmap", "dep", "-n", "b"])?;
        Ok(!get.success() && get.stderr.contains("not found"))
    })?;
    let events = invalid_owner_events(&server, "b")?;
    let ev = events
        .first()
        .context("no OwnerRefInvalidNamespace event in b")?;
    ensure!(
        ev["message"]
            == format!(
                "ownerRef [v1/ConfigMap, namespace: b, name: owner, uid: {owner_uid}] does not exist in namespace \"b\""
            ),
        "{ev}"
    );
    ensure!(ev["involvedObject"]["namespace"] == "b", "{ev}");
    ensure!(
        server
            .kubectl(&["get", "configmap", "owner", "-n", "a"])?
            .success(),
        "the owner in a was touched"
    );
    // An owner that exists nowhere is merely absent: no Warning.
    ensure!(invalid_owner_events(&server, "a")?.is_empty());
    Ok(())
}

#[test]
fn dependent_of_an_unserved_kind_is_collected_once_the_kind_is_served() -> Result<()> {
    let server = KplaneServer::start()?;
    // The owner's kind does not exist yet: the reference cannot be resolved, so the
    // dependent stays.
    create(
        &server,
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: early\n  namespace: default\n  ownerReferences:\n  - {apiVersion: late.example.com/v1, kind: Gadget, name: g, uid: 00000000-0000-0000-0000-000000000001}\n",
    )?;
    std::thread::sleep(Duration::from_secs(2));
    ensure!(
        server.kubectl(&["get", "cm", "early"])?.success(),
        "a dependent of an unserved kind was collected"
    );
    // The kind appears; the owner named does not exist, so the dependent goes.
    create(
        &server,
        "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: gadgets.late.example.com\nspec:\n  group: late.example.com\n  scope: Namespaced\n  names: {plural: gadgets, singular: gadget, kind: Gadget}\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}\n",
    )?;
    poll_until(TIMEOUT, "the dependent is collected", || {
        Ok(!server.kubectl(&["get", "cm", "early"])?.success())
    })
}
