//! Garbage collection by ownerReferences, driven with kubectl: each propagation policy,
//! owner-less dependents, chained foreground deletion, custom resources as dependents,
//! isolation between logical clusters, and a cascade interrupted by a restart.

mod invalid_owners;
mod namespaces;

use std::time::Duration;

use anyhow::{ensure, Result};
use kplane_e2e::{poll_until, KplaneServer};

pub(crate) const TIMEOUT: Duration = Duration::from_secs(30);

fn uid(server: &KplaneServer, kind: &str, name: &str) -> Result<String> {
    server.kubectl_ok(&["get", kind, name, "-o", "jsonpath={.metadata.uid}"])
}

/// Creates ConfigMap `name` owned by ConfigMap `owner` (which must exist).
fn owned_cm(server: &KplaneServer, name: &str, owner: &str) -> Result<()> {
    let owner_uid = uid(server, "configmap", owner)?;
    let manifest = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  ownerReferences:\n  - apiVersion: v1\n    kind: ConfigMap\n    name: {owner}\n    uid: \"{owner_uid}\"\n    blockOwnerDeletion: true\n"
    );
    let out = server.kubectl_stdin(&["create", "-f", "-"], &manifest)?;
    ensure!(out.success(), "creating {name}: {out:?}");
    Ok(())
}

fn gone(server: &KplaneServer, kind: &str, name: &str) -> Result<bool> {
    let get = server.kubectl(&["get", kind, name])?;
    Ok(!get.success() && get.stderr.contains("not found"))
}

/// Waits until ConfigMap `name` carries a deletionTimestamp (a finalizer holds it).
fn wait_marked(server: &KplaneServer, name: &str) -> Result<()> {
    poll_until(
        TIMEOUT,
        &format!("{name} to be marked for deletion"),
        || {
            let ts = server.kubectl_ok(&[
                "get",
                "configmap",
                name,
                "-o",
                "jsonpath={.metadata.deletionTimestamp}",
            ])?;
            Ok(!ts.trim().is_empty())
        },
    )
}

fn wait_gone(server: &KplaneServer, kind: &str, name: &str) -> Result<()> {
    poll_until(TIMEOUT, &format!("{kind}/{name} to be collected"), || {
        gone(server, kind, name)
    })
}

#[test]
fn background_deletion_collects_dependents() -> Result<()> {
    let server = KplaneServer::start()?;
    server.kubectl_ok(&["create", "configmap", "owner"])?;
    owned_cm(&server, "dep1", "owner")?;
    owned_cm(&server, "dep2", "owner")?;
    server.kubectl_ok(&["delete", "configmap", "owner", "--cascade=background"])?;
    wait_gone(&server, "configmap", "dep1")?;
    wait_gone(&server, "configmap", "dep2")?;
    Ok(())
}

#[test]
fn orphan_deletion_keeps_dependents_without_the_reference() -> Result<()> {
    let server = KplaneServer::start()?;
    server.kubectl_ok(&["create", "configmap", "owner"])?;
    owned_cm(&server, "dep", "owner")?;
    server.kubectl_ok(&["delete", "configmap", "owner", "--cascade=orphan"])?;
    wait_gone(&server, "configmap", "owner")?;
    let refs = server.kubectl_ok(&[
        "get",
        "configmap",
        "dep",
        "-o",
        "jsonpath={.metadata.ownerReferences}",
    ])?;
    ensure!(
        refs.trim().is_empty(),
        "orphaned dependent still references its owner: {refs}"
    );
    // It is not collected later either.
    std::thread::sleep(Duration::from_secs(3));
    ensure!(
        !gone(&server, "configmap", "dep")?,
        "orphaned dependent was collected"
    );
    Ok(())
}

#[test]
fn foreground_deletion_of_a_chain_removes_leaves_first() -> Result<()> {
    let server = KplaneServer::start()?;
    server.kubectl_ok(&["create", "configmap", "a"])?;
    owned_cm(&server, "b", "a")?;
    owned_cm(&server, "c", "b")?;
    // A finalizer on the leaf holds the whole chain.
    server.kubectl_ok(&[
        "patch",
        "configmap",
        "c",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":["e2e/hold"]}}"#,
    ])?;
    server.kubectl_ok(&[
        "delete",
        "configmap",
        "a",
        "--cascade=foreground",
        "--wait=false",
    ])?;
    let fins = server.kubectl_ok(&[
        "get",
        "configmap",
        "a",
        "-o",
        "jsonpath={.metadata.finalizers}",
    ])?;
    ensure!(
        fins.contains("foregroundDeletion"),
        "owner lacks the foregroundDeletion finalizer: {fins}"
    );
    wait_marked(&server, "c")?;
    std::thread::sleep(Duration::from_secs(3));
    ensure!(
        !gone(&server, "configmap", "a")?,
        "owner went before its blocking dependents"
    );
    ensure!(
        !gone(&server, "configmap", "b")?,
        "middle went before the leaf"
    );
    server.kubectl_ok(&[
        "patch",
        "configmap",
        "c",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ])?;
    wait_gone(&server, "configmap", "c")?;
    wait_gone(&server, "configmap", "b")?;
    wait_gone(&server, "configmap", "a")?;
    Ok(())
}

#[test]
fn dependents_of_missing_or_replaced_owners_are_collected() -> Result<()> {
    let server = KplaneServer::start()?;
    let ghost = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lonely\n  ownerReferences:\n  - {apiVersion: v1, kind: ConfigMap, name: ghost, uid: \"00000000-0000-0000-0000-000000000000\"}\n";
    ensure!(server
        .kubectl_stdin(&["create", "-f", "-"], ghost)?
        .success());
    wait_gone(&server, "configmap", "lonely")?;
    // An owner of the same name but another uid does not own it.
    server.kubectl_ok(&["create", "configmap", "ghost"])?;
    ensure!(server
        .kubectl_stdin(&["create", "-f", "-"], &ghost.replace("lonely", "lonely2"))?
        .success());
    wait_gone(&server, "configmap", "lonely2")?;
    ensure!(!gone(&server, "configmap", "ghost")?);
    Ok(())
}

#[test]
fn owner_references_are_validated() -> Result<()> {
    let server = KplaneServer::start()?;
    let two_controllers = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  ownerReferences:\n  - {apiVersion: v1, kind: ConfigMap, name: a, uid: \"1\", controller: true}\n  - {apiVersion: v1, kind: ConfigMap, name: b, uid: \"2\", controller: true}\n";
    let out = server.kubectl_stdin(&["create", "-f", "-"], two_controllers)?;
    ensure!(
        !out.success()
            && out
                .stderr
                .contains("Only one reference can have Controller set to true"),
        "{out:?}"
    );
    Ok(())
}

#[test]
fn collection_never_crosses_logical_clusters() -> Result<()> {
    let server = KplaneServer::start()?;
    server.create_workspace("root:other")?;
    let other = server.kubectl_for("root:other")?;
    server.kubectl_ok(&["create", "configmap", "owner"])?;
    let owner_uid = uid(&server, "configmap", "owner")?;
    // A dependent in another cluster naming the root owner's uid: its owner does not
    // exist *there*, so it is collected, while root's owner is untouched.
    let manifest = format!(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dep\n  namespace: default\n  ownerReferences:\n  - {{apiVersion: v1, kind: ConfigMap, name: owner, uid: \"{owner_uid}\"}}\n"
    );
    let out = other.run_stdin(&["create", "-f", "-"], &manifest)?;
    ensure!(out.success(), "{out:?}");
    poll_until(
        TIMEOUT,
        "the other cluster's dependent to be collected",
        || {
            let get = other.run(&["get", "configmap", "dep"])?;
            Ok(!get.success() && get.stderr.contains("not found"))
        },
    )?;
    ensure!(!gone(&server, "configmap", "owner")?);
    Ok(())
}

#[test]
fn a_cascade_interrupted_by_a_restart_finishes() -> Result<()> {
    let mut server = KplaneServer::start()?;
    server.kubectl_ok(&["create", "configmap", "owner"])?;
    for i in 0..20 {
        owned_cm(&server, &format!("dep{i}"), "owner")?;
    }
    // dep0 holds the foreground cascade open across the restart.
    server.kubectl_ok(&[
        "patch",
        "configmap",
        "dep0",
        "--type=merge",
        "-p",
        r#"{"metadata":{"finalizers":["e2e/hold"]}}"#,
    ])?;
    server.kubectl_ok(&[
        "delete",
        "configmap",
        "owner",
        "--cascade=foreground",
        "--wait=false",
    ])?;
    wait_marked(&server, "dep0")?;
    server.kill()?;
    server.restart()?;
    ensure!(
        !gone(&server, "configmap", "owner")?,
        "owner went while dep0 still blocks it"
    );
    server.kubectl_ok(&[
        "patch",
        "configmap",
        "dep0",
        "--type=json",
        "-p",
        r#"[{"op":"remove","path":"/metadata/finalizers"}]"#,
    ])?;
    for i in 0..20 {
        wait_gone(&server, "configmap", &format!("dep{i}"))?;
    }
    wait_gone(&server, "configmap", "owner")?;
    Ok(())
}

#[test]
fn events_expire_after_their_ttl() -> Result<()> {
    let server = KplaneServer::start_with(
        kplane_e2e::ServerOptions::default()
            .arg("--event-ttl-seconds")
            .arg("3"),
    )?;
    let event = |name: &str| {
        let now = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ");
        format!(
            "apiVersion: v1\nkind: Event\nmetadata:\n  name: {name}\ninvolvedObject:\n  kind: ConfigMap\n  name: x\n  namespace: default\nreason: Test\nmessage: hello\ntype: Normal\nfirstTimestamp: \"{now}\"\nlastTimestamp: \"{now}\"\ncount: 1\n"
        )
    };
    ensure!(server
        .kubectl_stdin(&["create", "-f", "-"], &event("old"))?
        .success());
    wait_gone(&server, "event", "old")?;
    // A fresh event is still there right after creation.
    ensure!(server
        .kubectl_stdin(&["create", "-f", "-"], &event("fresh"))?
        .success());
    ensure!(
        !gone(&server, "event", "fresh")?,
        "a fresh event was removed at once"
    );
    Ok(())
}
