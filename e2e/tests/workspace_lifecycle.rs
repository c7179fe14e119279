//! The life of a Workspace beyond creation, with the real binary, kubectl and kube-rs:
//! deleting one that holds 10,000 objects while a sibling keeps serving, an extra finalizer
//! holding a deleted Workspace, and isolation of identically named objects and CRDs in two
//! workspaces. Every logical cluster here is made by a Workspace that is waited for until
//! Ready; none comes into being through a first write.
//!
//! Reused rather than repeated: `clusters.rs` covers get/list/watch isolation of differently
//! named ConfigMaps and per-cluster default namespaces; `crds/clusters.rs` covers
//! discovery/OpenAPI isolation of different CRDs, one CRD name with two schemas, and that
//! deleting one cluster's CRD leaves the other's objects listed; `workspaces.rs` covers a
//! held deleted workspace's cluster being 404 across a restart. Here: a finalizer given at
//! creation, the controller's own finalizer going while it stays, and the release.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{bail, ensure, Context as _, Result};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::ConfigMap;
use kplane_e2e::fixtures::{configmap, create_namespace, error_code};
use kplane_e2e::{poll_until, KplaneServer, Kubectl, KubectlOutput};
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams,
    PostParams, WatchEvent, WatchParams,
};
use kube::{Api, Client, ResourceExt};
use serde_json::{json, Value};

use crate::crds::{apply_crd, WIDGETS};

/// ConfigMaps in the workspace that is deleted: far above the storage's range-delete batch
/// (`CLUSTER_DELETE_BATCH`, 256) and the server's list batch (500).
const OBJECTS: usize = 10_000;
/// The namespaces they are spread over.
const NAMESPACES: usize = 4;
/// ConfigMaps of the sibling workspace, more than one page of the counting list.
const SIBLING_OBJECTS: usize = 600;
/// Page size of the counting lists.
const PAGE: u32 = 250;
/// Creates in flight at once over one client.
const CREATING_AT_ONCE: usize = 32;
/// Generous bound for the deletion of the big workspace in a debug build on a busy machine.
const DELETION: Duration = Duration::from_secs(600);
/// The namespaces every logical cluster is bootstrapped with.
const DEFAULT_NAMESPACES: [&str; 4] = ["default", "kube-node-lease", "kube-public", "kube-system"];

fn workspace_manifest(name: &str, finalizers: &[&str]) -> String {
    json!({
        "apiVersion": "tenancy.kplane.io/v1alpha1",
        "kind": "Workspace",
        "metadata": {"name": name, "finalizers": finalizers},
    })
    .to_string()
}

/// Creates Workspace `name` (with extra `finalizers`) through `kubectl` and waits until it is
/// Ready.
fn create_workspace_with_finalizers(
    kubectl: &Kubectl,
    name: &str,
    finalizers: &[&str],
) -> Result<()> {
    let out = kubectl.ok_stdin(
        &["create", "-f", "-"],
        &workspace_manifest(name, finalizers),
    )?;
    ensure!(
        out.contains(&format!("workspace.tenancy.kplane.io/{name} created")),
        "{out}"
    );
    kubectl.ok(&[
        "wait",
        "--for=jsonpath={.status.phase}=Ready",
        &format!("workspace/{name}"),
        "--timeout=60s",
    ])?;
    Ok(())
}

/// The Workspaces of the logical cluster `client` is bound to.
fn workspaces(client: Client) -> Api<DynamicObject> {
    let gvk = GroupVersionKind::gvk("tenancy.kplane.io", "v1alpha1", "Workspace");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "workspaces");
    Api::all_with(client, &ar)
}

fn phase(ws: &DynamicObject) -> Option<&str> {
    ws.data.pointer("/status/phase").and_then(Value::as_str)
}

/// `kubectl <args> -o json`, parsed.
fn kubectl_json(kubectl: &Kubectl, args: &[&str]) -> Result<Value> {
    let mut all = args.to_vec();
    all.extend(["-o", "json"]);
    let out = kubectl.ok(&all)?;
    serde_json::from_str(&out).with_context(|| format!("not JSON: {out}"))
}

/// Creates ConfigMap `name` in `namespace` for every pair, many at a time.
async fn create_configmaps(client: &Client, objs: Vec<(String, String)>) -> Result<()> {
    futures::stream::iter(objs)
        .map(|(ns, name)| {
            let api: Api<ConfigMap> = Api::namespaced(client.clone(), &ns);
            async move {
                api.create(&PostParams::default(), &configmap(&name, &[("k", "v")]))
                    .await
                    .with_context(|| format!("creating {ns}/{name}"))
            }
        })
        .buffer_unordered(CREATING_AT_ONCE)
        .try_collect::<Vec<_>>()
        .await?;
    Ok(())
}

/// `namespace/name` of every ConfigMap `api` lists, read in pages of [`PAGE`].
async fn list_paged(api: &Api<ConfigMap>) -> Result<Vec<String>> {
    let mut names = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut lp = ListParams::default().limit(PAGE);
        if let Some(t) = &token {
            lp = lp.continue_token(t);
        }
        let page = api.list(&lp).await.context("listing a page")?;
        ensure!(page.items.len() <= PAGE as usize, "a page over the limit");
        names.extend(
            page.items
                .iter()
                .map(|cm| format!("{}/{}", cm.namespace().unwrap_or_default(), cm.name_any())),
        );
        match page.metadata.continue_.filter(|t| !t.is_empty()) {
            Some(t) => token = Some(t),
            None => return Ok(names),
        }
    }
}

/// `err` is the 403 refusing a write into `cluster`, whose Workspace is Terminating.
fn check_terminating_refusal(err: &kube::Error, cluster: &str) -> Result<()> {
    let kube::Error::Api(status) = err else {
        bail!("not an API error: {err}");
    };
    assert_eq!(status.code, 403, "{status:?}");
    assert_eq!(status.reason, "Forbidden", "{status:?}");
    assert_eq!(
        status.message,
        format!(
            "unable to write to logical cluster \"{cluster}\" because workspace \"{cluster}\" \
             is being deleted"
        )
    );
    Ok(())
}

/// The GETs and writes a sibling tenant keeps making: read a ConfigMap, create one, patch
/// one; until `stop`. Returns the number of rounds; the first error ends it.
async fn keep_serving(
    api: Api<ConfigMap>,
    stop: Arc<AtomicBool>,
    rounds: Arc<AtomicU64>,
) -> Result<u64> {
    let mut i = 0u64;
    while !stop.load(Ordering::SeqCst) {
        let got = api.get("cm-0").await.context("GET in the sibling")?;
        ensure!(got
            .data
            .is_some_and(|d| d.get("k").is_some_and(|v| v == "v")));
        api.create(
            &PostParams::default(),
            &configmap(&format!("loop-{i}"), &[("i", &i.to_string())]),
        )
        .await
        .with_context(|| format!("creating loop-{i} in the sibling"))?;
        api.patch(
            "cm-1",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"last": i.to_string()}})),
        )
        .await
        .context("patching cm-1 in the sibling")?;
        i += 1;
        rounds.store(i, Ordering::SeqCst);
    }
    Ok(i)
}

/// Every event of Workspace `name` from resourceVersion `rv` until its `DELETED` one (the
/// watch is reopened where it ended if the server closes it): `(type, phase, deleting)`.
async fn watch_until_deleted(
    api: Api<DynamicObject>,
    name: String,
    mut rv: String,
) -> Result<Vec<(&'static str, Option<String>, bool)>> {
    let mut seen = Vec::new();
    loop {
        let mut stream = api
            .watch(&WatchParams::default().timeout(290), &rv)
            .await?
            .boxed();
        while let Some(event) = stream.try_next().await? {
            let (kind, obj) = match event {
                WatchEvent::Added(o) => ("ADDED", o),
                WatchEvent::Modified(o) => ("MODIFIED", o),
                WatchEvent::Deleted(o) => ("DELETED", o),
                WatchEvent::Bookmark(b) => {
                    rv = b.metadata.resource_version;
                    continue;
                }
                WatchEvent::Error(e) => bail!("watch error: {e:?}"),
            };
            rv = obj.resource_version().unwrap_or_default();
            if obj.name_any() != name {
                continue;
            }
            let deleting = obj.metadata.deletion_timestamp.is_some();
            seen.push((kind, phase(&obj).map(str::to_owned), deleting));
            if kind == "DELETED" {
                return Ok(seen);
            }
        }
    }
}

/// Every ConfigMap and namespace of a freshly made cluster: only the defaults and their
/// `kube-root-ca.crt` (which may still be on its way).
fn starts_empty(kubectl: &Kubectl) -> Result<()> {
    let namespaces = kubectl.ok(&["get", "namespaces", "--no-headers", "-o", "name"])?;
    let namespaces: Vec<&str> = namespaces.lines().collect();
    let want: Vec<String> = DEFAULT_NAMESPACES
        .iter()
        .map(|n| format!("namespace/{n}"))
        .collect();
    assert_eq!(namespaces, want);
    let cms = kubectl.ok(&[
        "get",
        "configmaps",
        "-A",
        "--no-headers",
        "-o",
        "custom-columns=NS:.metadata.namespace,NAME:.metadata.name",
    ])?;
    for line in cms.lines() {
        let cols: Vec<&str> = line.split_whitespace().collect();
        ensure!(
            cols.len() == 2
                && DEFAULT_NAMESPACES.contains(&cols[0])
                && cols[1] == "kube-root-ca.crt",
            "a ConfigMap in a fresh cluster: {line}"
        );
    }
    Ok(())
}

/// `out` is kubectl's failure on logical cluster `cluster`, which no longer exists.
fn no_such_cluster(out: &KubectlOutput, cluster: &str) -> Result<()> {
    ensure!(
        !out.success()
            && out
                .stderr
                .contains(&format!("logical cluster \"{cluster}\" does not exist")),
        "{} {}",
        out.stdout,
        out.stderr
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deleting_a_workspace_with_10000_objects_keeps_its_sibling_serving_and_intact() -> Result<()>
{
    let server = KplaneServer::start()?;
    server.create_workspaces(&["root:big", "root:sibling"])?;
    let big = server.client_for("root:big").await?;
    let sibling = server.client_for("root:sibling").await?;

    let mut big_names = Vec::with_capacity(OBJECTS);
    for n in 0..NAMESPACES {
        create_namespace(&big, &format!("ns-{n}")).await?;
    }
    let objs: Vec<(String, String)> = (0..OBJECTS)
        .map(|i| (format!("ns-{}", i % NAMESPACES), format!("cm-{i}")))
        .collect();
    big_names.extend(objs.iter().map(|(ns, n)| format!("{ns}/{n}")));
    create_configmaps(&big, objs).await?;
    create_namespace(&sibling, "apps").await?;
    let sib_objs: Vec<(String, String)> = (0..SIBLING_OBJECTS)
        .map(|i| ("apps".to_owned(), format!("cm-{i}")))
        .collect();
    create_configmaps(&sibling, sib_objs).await?;
    let listed: BTreeSet<String> = list_paged(&Api::all(big.clone()))
        .await?
        .into_iter()
        .collect();
    for name in &big_names {
        ensure!(
            listed.contains(name),
            "{name} missing in root:big before the delete"
        );
    }

    // Watch the Workspaces of root from now on.
    let root_ws = workspaces(server.client().await?);
    let rv = root_ws
        .list(&ListParams::default())
        .await?
        .metadata
        .resource_version
        .context("a list without resourceVersion")?;
    let watch = tokio::spawn(watch_until_deleted(root_ws.clone(), "big".into(), rv));

    // The sibling tenant keeps reading and writing throughout.
    let apps: Api<ConfigMap> = Api::namespaced(sibling.clone(), "apps");
    let stop = Arc::new(AtomicBool::new(false));
    let rounds = Arc::new(AtomicU64::new(0));
    let serving = tokio::spawn(keep_serving(apps.clone(), stop.clone(), rounds.clone()));
    let started = Duration::from_secs(60);
    kplane_e2e::eventually(started, "the sibling's first round", || {
        let rounds = rounds.clone();
        async move { Ok(rounds.load(Ordering::SeqCst) > 0) }
    })
    .await?;

    // Terminating at once: the delete answers with the marked object.
    let marked = root_ws
        .delete("big", &DeleteParams::default())
        .await?
        .left()
        .context("the Workspace was removed at once, not marked Terminating")?;
    let rounds_at_delete = rounds.load(Ordering::SeqCst);
    assert_eq!(phase(&marked), Some("Terminating"), "{marked:?}");
    ensure!(marked.metadata.deletion_timestamp.is_some(), "{marked:?}");
    // Writes into it are refused with a clear Status (the refusal is checked before any
    // other step of a create or delete).
    let in_big: Api<ConfigMap> = Api::namespaced(big.clone(), "ns-0");
    let err = in_big
        .create(&PostParams::default(), &configmap("late", &[]))
        .await
        .err()
        .context("a create in the Terminating workspace was accepted")?;
    check_terminating_refusal(&err, "root:big")?;
    let err = in_big
        .delete("cm-0", &DeleteParams::default())
        .await
        .err()
        .context("a delete in the Terminating workspace was accepted")?;
    check_terminating_refusal(&err, "root:big")?;

    let events = tokio::time::timeout(DELETION, watch)
        .await
        .context("root:big was not deleted in time")???;
    let rounds_at_gone = rounds.load(Ordering::SeqCst);
    stop.store(true, Ordering::SeqCst);
    let loops = serving.await??;
    // The sibling served while the deletion ran (no round failed, and rounds completed
    // between the delete and the Workspace's disappearance).
    ensure!(
        rounds_at_gone > rounds_at_delete,
        "no sibling round completed during the deletion ({rounds_at_delete} before, \
         {rounds_at_gone} after)"
    );

    // Every observed state after the delete is Terminating; never Ready again.
    let (first_kind, first_phase, first_deleting) = events.first().cloned().context("no events")?;
    ensure!(
        first_kind == "MODIFIED" && first_phase.as_deref() == Some("Terminating") && first_deleting,
        "{events:?}"
    );
    for (kind, phase, deleting) in &events {
        ensure!(
            phase.as_deref() == Some("Terminating") && *deleting,
            "a {kind} event with phase {phase:?} (deleting: {deleting}): {events:?}"
        );
    }
    ensure!(
        events.last().is_some_and(|e| e.0 == "DELETED"),
        "{events:?}"
    );
    let out = server.kubectl(&["get", "ws", "big"])?;
    ensure!(
        !out.success() && out.stderr.contains("NotFound"),
        "{}",
        out.stderr
    );

    // The sibling's objects are all there: its own and every one the loop wrote.
    let mut want: BTreeSet<String> = (0..SIBLING_OBJECTS)
        .map(|i| format!("apps/cm-{i}"))
        .chain((0..loops).map(|i| format!("apps/loop-{i}")))
        .collect();
    want.insert("apps/kube-root-ca.crt".into());
    let got: Vec<String> = list_paged(&apps).await?;
    ensure!(
        got.len() == want.len(),
        "{} ConfigMaps in the sibling, want {}",
        got.len(),
        want.len()
    );
    assert_eq!(got.into_iter().collect::<BTreeSet<_>>(), want);
    let cm1 = apps.get("cm-1").await?;
    assert_eq!(
        cm1.data.and_then(|d| d.get("last").cloned()),
        Some((loops - 1).to_string())
    );
    server.create_workspace("root:sibling:still-served")?;

    // The name can be used again and the new cluster starts empty.
    server.create_workspace("root:big")?;
    starts_empty(&server.kubectl_for("root:big")?)?;
    let err = in_big.get("cm-0").await.err().context("cm-0 came back")?;
    assert_eq!(error_code(&err), Some(404));
    Ok(())
}

#[test]
fn a_finalizer_holds_a_deleted_workspace_after_its_cluster_is_emptied_until_it_is_removed(
) -> Result<()> {
    const HOLD: &str = "example.com/hold";
    let server = KplaneServer::start()?;
    let root = server.kubectl_root();
    create_workspace_with_finalizers(root, "held", &[HOLD])?;
    let ws = kubectl_json(root, &["get", "ws", "held"])?;
    assert_eq!(
        ws["metadata"]["finalizers"],
        json!([HOLD, "tenancy.kplane.io/workspace"])
    );
    let child = server.kubectl_for("root:held")?;
    child.ok(&["create", "namespace", "team"])?;
    child.ok(&["create", "configmap", "in-team", "-n", "team"])?;
    child.ok(&["create", "configmap", "in-default"])?;

    let out = root.ok(&["delete", "ws", "held", "--wait=false"])?;
    assert_eq!(out, "workspace.tenancy.kplane.io \"held\" deleted\n");
    let ws = kubectl_json(root, &["get", "ws", "held"])?;
    assert_eq!(ws["status"]["phase"], "Terminating", "{ws}");
    ensure!(ws["metadata"]["deletionTimestamp"].is_string(), "{ws}");

    // The controller empties the cluster and drops its own finalizer; ours holds the object.
    poll_until(
        Duration::from_secs(60),
        "the workspace finalizer dropped",
        || {
            let ws = kubectl_json(root, &["get", "ws", "held"])?;
            Ok(ws["metadata"]["finalizers"] == json!([HOLD]))
        },
    )?;
    // The emptied cluster no longer exists: nothing can be read or written there.
    let out = child.run(&["get", "namespaces"])?;
    ensure!(
        !out.success() && out.stderr.contains("(NotFound)"),
        "{} {}",
        out.stdout,
        out.stderr
    );
    no_such_cluster(&child.run(&["create", "configmap", "late"])?, "root:held")?;
    let ws = kubectl_json(root, &["get", "ws", "held"])?;
    assert_eq!(ws["status"]["phase"], "Terminating", "{ws}");
    ensure!(ws["metadata"]["deletionTimestamp"].is_string(), "{ws}");
    let row = root.ok(&["get", "ws", "held", "--no-headers"])?;
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(&cols[..2], ["held", "Terminating"], "{row}");

    // Removing the finalizer lets it go.
    root.ok(&[
        "patch",
        "ws",
        "held",
        "--type=json",
        "-p",
        r#"[{"op": "remove", "path": "/metadata/finalizers"}]"#,
    ])?;
    let out = root.run(&["get", "ws", "held"])?;
    ensure!(
        !out.success() && out.stderr.contains("NotFound"),
        "{} {}",
        out.stdout,
        out.stderr
    );
    // A new Workspace of the name gets a fresh, empty cluster that takes writes.
    server.create_workspace("root:held")?;
    starts_empty(&child)?;
    child
        .ok(&["create", "configmap", "late"])
        .context("a write into the new workspace")?;
    Ok(())
}

/// A Widget `w1` in namespace `shop` of colour `color`.
fn shop_widget(color: &str) -> String {
    format!(
        "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w1\n  namespace: shop\n\
         spec:\n  color: {color}\n"
    )
}

fn widget_resources(kubectl: &Kubectl) -> Result<Vec<String>> {
    let out = kubectl.ok(&["api-resources", "--api-group=example.com", "-o", "name"])?;
    Ok(out.lines().map(str::to_owned).collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identically_named_objects_and_crds_of_two_workspaces_never_meet() -> Result<()> {
    let server = KplaneServer::start()?;
    server.create_workspaces(&["root:a", "root:b"])?;
    let (ka, kb) = (server.kubectl_for("root:a")?, server.kubectl_for("root:b")?);
    for (k, owner, color) in [(&ka, "a", "red"), (&kb, "b", "blue")] {
        k.ok(&["create", "namespace", "shop"])?;
        k.ok(&[
            "create",
            "configmap",
            "settings",
            "-n",
            "shop",
            &format!("--from-literal=owner={owner}"),
        ])?;
        apply_crd(k, "crds/widgets.yaml", WIDGETS)?;
        k.ok_stdin(&["apply", "-f", "-"], &shop_widget(color))?;
    }
    // Same names, distinct objects with their own contents.
    let mut uids = BTreeSet::new();
    for (k, owner, color) in [(&ka, "a", "red"), (&kb, "b", "blue")] {
        let cm = kubectl_json(k, &["get", "configmap", "settings", "-n", "shop"])?;
        assert_eq!(cm["data"]["owner"], owner, "{cm}");
        let w = kubectl_json(k, &["get", "widget", "w1", "-n", "shop"])?;
        assert_eq!(w["spec"]["color"], color, "{w}");
        for obj in [
            cm,
            w,
            kubectl_json(k, &["get", "namespace", "shop"])?,
            kubectl_json(k, &["get", "crd", WIDGETS])?,
        ] {
            let uid = obj["metadata"]["uid"]
                .as_str()
                .context("no uid")?
                .to_owned();
            ensure!(uids.insert(uid), "a uid shared across workspaces: {obj}");
        }
    }

    // A watch on every ConfigMap of root:a sees nothing of root:b's writes.
    let a = server.client_for("root:a").await?;
    let b = server.client_for("root:b").await?;
    let cms_a: Api<ConfigMap> = Api::all(a.clone());
    let rv = cms_a
        .list(&ListParams::default())
        .await?
        .metadata
        .resource_version
        .context("a list without resourceVersion")?;
    let mut watch = cms_a
        .watch(&WatchParams::default().timeout(60), &rv)
        .await?
        .boxed();
    let shop_b: Api<ConfigMap> = Api::namespaced(b.clone(), "shop");
    shop_b
        .patch(
            "settings",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"owner": "b2"}})),
        )
        .await?;
    shop_b
        .create(&PostParams::default(), &configmap("extra", &[("k", "b")]))
        .await?;
    shop_b.delete("settings", &DeleteParams::default()).await?;
    // A new namespace in root:b gets its kube-root-ca.crt there, not in root:a.
    create_namespace(&b, "later").await?;
    poll_until(
        Duration::from_secs(30),
        "kube-root-ca.crt in root:b's later",
        || {
            Ok(kb
                .run(&["get", "configmap", "kube-root-ca.crt", "-n", "later"])?
                .success())
        },
    )?;
    Api::<ConfigMap>::namespaced(a.clone(), "shop")
        .create(&PostParams::default(), &configmap("marker", &[("k", "a")]))
        .await?;
    loop {
        let event = tokio::time::timeout(Duration::from_secs(30), watch.next())
            .await
            .context("no watch event in root:a")?
            .context("the root:a watch ended")??;
        match event {
            WatchEvent::Added(cm) if cm.name_any() == "marker" => break,
            WatchEvent::Bookmark(_) => {}
            other => bail!("the root:a watch delivered a foreign event: {other:?}"),
        }
    }
    let cm = kubectl_json(&ka, &["get", "configmap", "settings", "-n", "shop"])?;
    assert_eq!(cm["data"]["owner"], "a", "{cm}");

    // Deleting the CRD in root:b: its Widgets go there; root:a still serves the type and
    // keeps its Widget.
    kb.ok(&["delete", "crd", WIDGETS, "--timeout=60s"])?;
    assert!(widget_resources(&kb)?.is_empty());
    let out = kb.run(&[
        "get",
        "--raw",
        "/clusters/root:b/apis/example.com/v1/namespaces/shop/widgets",
    ])?;
    ensure!(
        !out.success() && out.stderr.contains("NotFound"),
        "{}",
        out.stderr
    );
    assert_eq!(widget_resources(&ka)?, ["widgets.example.com"]);
    let group = ka.ok(&["get", "--raw", "/clusters/root:a/apis/example.com/v1"])?;
    ensure!(group.contains("\"name\":\"widgets\""), "{group}");
    let w = kubectl_json(&ka, &["get", "widget", "w1", "-n", "shop"])?;
    assert_eq!(w["spec"]["color"], "red", "{w}");
    // The same CRD again in root:b starts without Widgets.
    apply_crd(&kb, "crds/widgets.yaml", WIDGETS)?;
    let out = kb.ok(&["get", "widgets", "-A", "-o", "name"])?;
    ensure!(out.trim().is_empty(), "root:b's Widgets came back: {out}");
    let w = kubectl_json(&ka, &["get", "widget", "w1", "-n", "shop"])?;
    assert_eq!(w["spec"]["color"], "red", "{w}");
    Ok(())
}
