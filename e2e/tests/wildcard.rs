//! Cross-cluster lists and watches for controllers: kube-rs clients whose base URL ends in
//! `/clusters/*` (every logical cluster) or `/clusters/<root>:*` (a workspace and its
//! descendants), the `kplane.io/cluster` annotation on every object they get, custom
//! resources whose CRD exists in some clusters only, and a `watcher` that keeps going across
//! a server restart. Every logical cluster is created through a Workspace.

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kplane_e2e::fixtures::error_code;
use kplane_e2e::KplaneServer;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt as _;
use kube::{Api, Client, ResourceExt as _};
use serde_json::json;
use tokio::sync::mpsc;

const CLUSTER_ANNOTATION: &str = "kplane.io/cluster";
const TIMEOUT: Duration = Duration::from_secs(30);

/// Creates the Workspaces `names` in `parent` with kubectl and waits until each is Ready.
fn workspaces(server: &KplaneServer, parent: &str, names: &[&str]) -> Result<()> {
    let kubectl = server.kubectl_for(parent)?;
    for name in names {
        let manifest =
            format!("apiVersion: tenancy.kplane.io/v1alpha1\nkind: Workspace\nmetadata:\n  name: \"{name}\"\n");
        let out = kubectl.run_stdin(&["apply", "-f", "-"], &manifest)?;
        ensure!(out.success(), "apply workspace {name}: {}", out.stderr);
    }
    for name in names {
        kubectl.ok(&[
            "wait",
            "--for=jsonpath={.status.phase}=Ready",
            &format!("workspace/{name}"),
            "--timeout=30s",
        ])?;
    }
    Ok(())
}

fn labelled_configmap(name: &str) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {"wildcard-e2e": "yes"}},
        "data": {"k": "v"},
    }))
    .unwrap_or_default()
}

async fn create_configmap(server: &KplaneServer, cluster: &str, name: &str) -> Result<()> {
    let api: Api<ConfigMap> = Api::namespaced(server.client_for(cluster).await?, "default");
    api.create(&PostParams::default(), &labelled_configmap(name))
        .await
        .with_context(|| format!("creating {name} in {cluster}"))?;
    Ok(())
}

/// `(cluster annotation, name)` of an object.
fn mark(obj: &impl kube::Resource) -> (String, String) {
    (
        obj.annotations()
            .get(CLUSTER_ANNOTATION)
            .cloned()
            .unwrap_or_default(),
        obj.name_any(),
    )
}

fn marks(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = pairs
        .iter()
        .map(|(c, n)| ((*c).to_owned(), (*n).to_owned()))
        .collect();
    v.sort();
    v
}

/// What the watcher task reports.
#[derive(Debug)]
enum Seen {
    Object(String, String),
    Deleted(String, String),
    InitDone,
    Error(String),
}

/// Drains `rx` until `want` objects have been seen (each counted), failing after TIMEOUT.
async fn collect(
    rx: &mut mpsc::UnboundedReceiver<Seen>,
    seen: &mut BTreeMap<(String, String), usize>,
    inits: &mut usize,
    errors: &mut Vec<String>,
    want: &[(String, String)],
) -> Result<()> {
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    while !want.iter().all(|k| seen.contains_key(k)) {
        let got = tokio::time::timeout_at(deadline, rx.recv())
            .await
            .with_context(|| format!("waiting for {want:?}; seen {seen:?}; errors {errors:?}"))?;
        match got.context("the watcher ended")? {
            Seen::Object(c, n) => *seen.entry((c, n)).or_default() += 1,
            Seen::Deleted(c, n) => errors.push(format!("unexpected delete of {c}/{n}")),
            Seen::InitDone => *inits += 1,
            Seen::Error(e) => errors.push(e),
        }
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_kube_rs_watcher_over_every_cluster_sees_each_object_once_across_a_restart() -> Result<()>
{
    let mut server = KplaneServer::start()?;
    workspaces(&server, "root", &["a", "b", "c"])?;
    let clusters = ["root:a", "root:b", "root:c"];
    for c in clusters {
        create_configmap(&server, c, "before").await?;
    }

    // A client whose base URL ends in `/clusters/*`, as a controller's would.
    let wild = server.client_for("*").await?;
    let api: Api<ConfigMap> = Api::all(wild.clone());
    let listed = api
        .list(&ListParams::default().labels("wildcard-e2e=yes"))
        .await?;
    let got: Vec<(String, String)> = {
        let mut v: Vec<_> = listed.items.iter().map(mark).collect();
        v.sort();
        v
    };
    assert_eq!(
        got,
        marks(&[
            ("root:a", "before"),
            ("root:b", "before"),
            ("root:c", "before")
        ])
    );
    // Every item carries the annotation, also the ones the server writes itself.
    let everything = api.list(&ListParams::default()).await?;
    assert!(everything.items.len() >= 6, "{:?}", everything.items.len());
    for cm in &everything.items {
        let (c, n) = mark(cm);
        assert!(
            c == "root" || clusters.contains(&c.as_str()),
            "{n} has cluster annotation {c:?}"
        );
    }

    let (tx, mut rx) = mpsc::unbounded_channel();
    let watcher_task = tokio::spawn(async move {
        let config = watcher::Config::default().labels("wildcard-e2e=yes");
        let mut stream = watcher::watcher(api, config).default_backoff().boxed();
        while let Some(ev) = stream.next().await {
            let seen = match ev {
                Ok(Event::Apply(cm) | Event::InitApply(cm)) => {
                    let (c, n) = mark(&cm);
                    Seen::Object(c, n)
                }
                Ok(Event::Delete(cm)) => {
                    let (c, n) = mark(&cm);
                    Seen::Deleted(c, n)
                }
                Ok(Event::InitDone) => Seen::InitDone,
                Ok(Event::Init) => continue,
                Err(e) => Seen::Error(e.to_string()),
            };
            if tx.send(seen).is_err() {
                return;
            }
        }
    });

    let mut seen = BTreeMap::new();
    let mut inits = 0;
    let mut errors = Vec::new();
    let mut want = marks(&[
        ("root:a", "before"),
        ("root:b", "before"),
        ("root:c", "before"),
    ]);
    collect(&mut rx, &mut seen, &mut inits, &mut errors, &want).await?;

    for c in clusters {
        create_configmap(&server, c, "live").await?;
        want.push((c.to_owned(), "live".to_owned()));
    }
    collect(&mut rx, &mut seen, &mut inits, &mut errors, &want).await?;

    tokio::task::block_in_place(|| server.restart())?;
    for c in clusters {
        create_configmap(&server, c, "after-restart").await?;
        want.push((c.to_owned(), "after-restart".to_owned()));
    }
    collect(&mut rx, &mut seen, &mut inits, &mut errors, &want).await?;
    // Whatever else is still on its way arrives within a moment.
    while let Ok(Some(s)) = tokio::time::timeout(Duration::from_millis(500), rx.recv()).await {
        match s {
            Seen::Object(c, n) => *seen.entry((c, n)).or_default() += 1,
            Seen::Deleted(c, n) => errors.push(format!("unexpected delete of {c}/{n}")),
            Seen::InitDone => inits += 1,
            Seen::Error(_) => {}
        }
    }
    watcher_task.abort();
    want.sort();
    assert_eq!(seen.keys().cloned().collect::<Vec<_>>(), want);
    assert!(
        seen.values().all(|n| *n == 1),
        "every object exactly once (the watch resumed, no re-list): {seen:?}"
    );
    assert_eq!(inits, 1, "one initial list only; errors: {errors:?}");
    assert!(
        errors.iter().all(|e| !e.contains("410")),
        "the resourceVersion stayed valid across the restart: {errors:?}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn custom_resources_of_crds_in_two_clusters_are_listed_and_watched_across_clusters(
) -> Result<()> {
    let server = KplaneServer::start()?;
    workspaces(&server, "root", &["x", "y", "z"])?;
    let crd = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gizmos.wild.example.com
spec:
  group: wild.example.com
  scope: Namespaced
  names: {plural: gizmos, singular: gizmo, kind: Gizmo, listKind: GizmoList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        x-kubernetes-preserve-unknown-fields: true
"#;
    let gvk = GroupVersionKind::gvk("wild.example.com", "v1", "Gizmo");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "gizmos");
    let wild = server.client_for("*").await?;
    let all: Api<DynamicObject> = Api::all_with(wild.clone(), &ar);
    // No cluster has the CRD yet: 404, as for any unknown resource.
    let e = all.list(&ListParams::default()).await.unwrap_err();
    assert_eq!(error_code(&e), Some(404), "{e:?}");

    for c in ["root:x", "root:y"] {
        let kubectl = server.kubectl_for(c)?;
        let out = kubectl.run_stdin(&["apply", "-f", "-"], crd)?;
        ensure!(out.success(), "apply CRD in {c}: {}", out.stderr);
        kubectl.ok(&[
            "wait",
            "--for=condition=Established",
            "crd/gizmos.wild.example.com",
            "--timeout=30s",
        ])?;
        let gizmo = format!(
            "apiVersion: wild.example.com/v1\nkind: Gizmo\nmetadata:\n  name: g1\n  namespace: default\nspec:\n  in: {c}\n"
        );
        let out = kubectl.run_stdin(&["apply", "-f", "-"], &gizmo)?;
        ensure!(out.success(), "apply gizmo in {c}: {}", out.stderr);
    }

    // kubectl discovers the type under `/clusters/*` and lists it across clusters.
    let out = server
        .kubectl_for("*")?
        .ok(&["get", "gizmos", "-A", "-o", "json"])?;
    let list: serde_json::Value = serde_json::from_str(&out)?;
    let got: Vec<(String, String)> = list["items"]
        .as_array()
        .context("items")?
        .iter()
        .map(|o| {
            (
                o["metadata"]["annotations"][CLUSTER_ANNOTATION]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
                o["spec"]["in"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    assert_eq!(got, marks(&[("root:x", "root:x"), ("root:y", "root:y")]));

    // kube-rs: list, then a watcher that sees a later write in either cluster.
    let listed = all.list(&ListParams::default()).await?;
    let mut got: Vec<_> = listed.items.iter().map(mark).collect();
    got.sort();
    assert_eq!(got, marks(&[("root:x", "g1"), ("root:y", "g1")]));

    let mut stream = watcher::watcher(all.clone(), watcher::Config::default())
        .applied_objects()
        .boxed();
    let mut seen = Vec::new();
    let y_api: Api<DynamicObject> =
        Api::namespaced_with(server.client_for("root:y").await?, "default", &ar);
    let mut g2 = DynamicObject::new("g2", &ar).within("default");
    g2.data = json!({"spec": {"in": "root:y"}});
    y_api.create(&PostParams::default(), &g2).await?;
    tokio::time::timeout(TIMEOUT, async {
        while seen.len() < 3 {
            match stream.next().await {
                Some(Ok(o)) => seen.push(mark(&o)),
                Some(Err(e)) => return Err(anyhow::anyhow!("watcher: {e}")),
                None => return Err(anyhow::anyhow!("the watcher ended")),
            }
        }
        Ok(())
    })
    .await
    .context("waiting for three gizmos")??;
    seen.sort();
    assert_eq!(
        seen,
        marks(&[("root:x", "g1"), ("root:y", "g1"), ("root:y", "g2")])
    );

    // Only list and watch across clusters.
    let e = all.get("g1").await.unwrap_err();
    assert_eq!(error_code(&e), Some(405), "{e:?}");
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subtree_wildcard_lists_and_watches_one_workspace_and_its_descendants() -> Result<()> {
    let server = KplaneServer::start()?;
    workspaces(&server, "root", &["acme", "acme-b", "acmex"])?;
    workspaces(&server, "root:acme", &["team-a", "team-b"])?;
    workspaces(&server, "root:acme:team-a", &["deep"])?;
    let inside = [
        "root:acme",
        "root:acme:team-a",
        "root:acme:team-b",
        "root:acme:team-a:deep",
    ];
    let outside = ["root", "root:acme-b", "root:acmex"];
    for c in inside.iter().chain(&outside) {
        create_configmap(&server, c, "one").await?;
    }

    let sub = server.client_for("root:acme:*").await?;
    let api: Api<ConfigMap> = Api::all(sub.clone());
    let lp = ListParams::default().labels("wildcard-e2e=yes");
    let mut got: Vec<_> = api.list(&lp).await?.items.iter().map(mark).collect();
    got.sort();
    let want: Vec<(&str, &str)> = inside.iter().map(|c| (*c, "one")).collect();
    assert_eq!(got, marks(&want));

    // Paged with a limit across the root and its descendants.
    let mut paged = Vec::new();
    let mut lp_page = lp.clone().limit(1);
    loop {
        let page = api.list(&lp_page).await?;
        paged.extend(page.items.iter().map(mark));
        match page.metadata.continue_ {
            Some(c) if !c.is_empty() => lp_page = lp_page.continue_token(&c),
            _ => break,
        }
    }
    paged.sort();
    assert_eq!(paged, marks(&want));

    // A deeper subtree; a namespace within the subtree.
    let team_a: Api<ConfigMap> = Api::all(server.client_for("root:acme:team-a:*").await?);
    let mut got: Vec<_> = team_a.list(&lp).await?.items.iter().map(mark).collect();
    got.sort();
    assert_eq!(
        got,
        marks(&[
            ("root:acme:team-a", "one"),
            ("root:acme:team-a:deep", "one")
        ])
    );
    let in_default: Api<ConfigMap> = Api::namespaced(sub.clone(), "default");
    assert_eq!(in_default.list(&lp).await?.items.len(), inside.len());

    // The watch sees writes inside the subtree only.
    let mut stream = watcher::watcher(
        api.clone(),
        watcher::Config::default().labels("wildcard-e2e=yes"),
    )
    .applied_objects()
    .boxed();
    let mut seen = Vec::new();
    for c in [
        "root:acmex",
        "root:acme-b",
        "root",
        "root:acme:team-b",
        "root:acme",
    ] {
        create_configmap(&server, c, "two").await?;
    }
    tokio::time::timeout(TIMEOUT, async {
        while seen.len() < inside.len() + 2 {
            match stream.next().await {
                Some(Ok(o)) => seen.push(mark(&o)),
                Some(Err(e)) => return Err(anyhow::anyhow!("watcher: {e}")),
                None => return Err(anyhow::anyhow!("the watcher ended")),
            }
        }
        Ok(())
    })
    .await
    .context("waiting for the subtree's objects")??;
    // Nothing from outside arrives later either.
    let late = tokio::time::timeout(Duration::from_millis(500), stream.next()).await;
    assert!(late.is_err(), "unexpected event {late:?}");
    seen.sort();
    let mut want2 = want.clone();
    want2.extend([("root:acme:team-b", "two"), ("root:acme", "two")]);
    assert_eq!(seen, marks(&want2));

    // Wildcards are list and watch only.
    let e = Api::<ConfigMap>::namespaced(sub.clone(), "default")
        .create(&PostParams::default(), &labelled_configmap("nope"))
        .await
        .unwrap_err();
    assert_eq!(error_code(&e), Some(405), "{e:?}");
    Ok(())
}

/// Percent-encoded wildcards in raw paths, and discovery under the wildcard.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn encoded_wildcards_and_discovery() -> Result<()> {
    let server = KplaneServer::start()?;
    workspaces(&server, "root", &["p"])?;
    create_configmap(&server, "root:p", "enc").await?;
    let bare: Client = server.client_unprefixed().await?;
    let lp = ListParams::default().labels("wildcard-e2e=yes");
    for path in [
        "/clusters/%2A/api/v1/configmaps",
        "/clusters/root%3Ap%3A%2A/api/v1/configmaps",
        "/clusters/root:p:*/api/v1/configmaps",
    ] {
        let req = kube::core::Request::new(path).list(&lp)?;
        let v: serde_json::Value = bare.request(req).await.context(path)?;
        let items = v["items"].as_array().context("items")?;
        assert_eq!(items.len(), 1, "{path}: {v}");
        assert_eq!(
            items[0]["metadata"]["annotations"][CLUSTER_ANNOTATION], "root:p",
            "{path}"
        );
    }
    // Table rows' objects and PartialObjectMetadata carry the annotation too.
    let mut req = kube::core::Request::new("/clusters/*/api/v1/configmaps").list(&lp)?;
    req.headers_mut().insert(
        "accept",
        "application/json;as=Table;v=v1;g=meta.k8s.io".parse()?,
    );
    let table: serde_json::Value = bare.request(req).await?;
    assert_eq!(table["kind"], "Table", "{table}");
    let rows = table["rows"].as_array().context("rows")?;
    assert_eq!(rows.len(), 1, "{table}");
    assert_eq!(
        rows[0]["object"]["metadata"]["annotations"][CLUSTER_ANNOTATION], "root:p",
        "{table}"
    );
    let meta: Api<ConfigMap> = Api::all(server.client_for("root:p:*").await?);
    let listed = meta.list_metadata(&lp).await?;
    let got: Vec<_> = listed.items.iter().map(mark).collect();
    assert_eq!(got, marks(&[("root:p", "enc")]));

    // Discovery under the wildcard serves the built-ins.
    let wild = server.client_for("*").await?;
    let core = wild.list_core_api_resources("v1").await?;
    ensure!(
        core.resources.iter().any(|r| r.name == "configmaps"),
        "{core:?}"
    );
    Ok(())
}
