//! Collections larger than the server's list batch (500) and kubectl's page (500), through
//! every reader of a whole collection: LISTs in each representation, watches that start
//! with the current state, deletecollection, namespace deletion and CRD deletion. The
//! server reads such lists in batches; each reader must still see every object.

use std::time::Duration;

use anyhow::{bail, ensure, Context as _, Result};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kplane_e2e::fixtures::{configmap, create_namespace, string_map};
use kplane_e2e::{KplaneServer, Table};
use kube::api::{
    ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ListParams, PostParams, WatchEvent,
    WatchParams,
};
use kube::runtime::watcher;
use kube::{Api, ResourceExt};
use serde_json::Value;

/// Objects per collection: over two server batches and two kubectl pages.
const OBJECTS: usize = 1_201;
/// Creates in flight at once over one client (they share group commits).
const CREATING_AT_ONCE: usize = 64;
/// Generous bound for a whole-collection operation in a debug build on a busy machine.
const WHOLE_COLLECTION: Duration = Duration::from_secs(120);

/// Creates every object of `objs` through `api`, many at a time.
async fn create_all<K>(api: &Api<K>, objs: Vec<K>) -> Result<()>
where
    K: Clone + serde::de::DeserializeOwned + serde::Serialize + std::fmt::Debug,
{
    futures::stream::iter(objs)
        .map(|obj| {
            let api = api.clone();
            async move { api.create(&PostParams::default(), &obj).await }
        })
        .buffer_unordered(CREATING_AT_ONCE)
        .try_collect::<Vec<_>>()
        .await
        .context("creating the collection")?;
    Ok(())
}

/// `cm-00000`.. `cm-<n-1>`, labelled `set=<set>`.
fn configmaps(n: usize, set: &str) -> Vec<ConfigMap> {
    (0..n)
        .map(|i| {
            let mut cm = configmap(&format!("cm-{set}-{i:05}"), &[("k", "v")]);
            cm.metadata.labels = Some(string_map(&[("set", set)]));
            cm
        })
        .collect()
}

/// A server with namespace `ns` holding [`OBJECTS`] ConfigMaps (and `kube-root-ca.crt`);
/// returns the sorted names of every ConfigMap in it.
async fn server_with_configmaps(ns: &str) -> Result<(KplaneServer, Api<ConfigMap>, Vec<String>)> {
    let server = KplaneServer::start()?;
    let client = server.client().await?;
    create_namespace(&client, ns).await?;
    let api: Api<ConfigMap> = Api::namespaced(client, ns);
    let objs = configmaps(OBJECTS, "a");
    let mut names: Vec<String> = objs.iter().map(ResourceExt::name_any).collect();
    names.push("kube-root-ca.crt".into());
    names.sort();
    create_all(&api, objs).await?;
    Ok((server, api, names))
}

/// `got` (any order) is exactly `want` (sorted), reported as counts or the first difference.
fn same_names(mut got: Vec<String>, want: &[String], what: &str) -> Result<()> {
    got.sort();
    ensure!(
        got.len() == want.len(),
        "{what}: {} objects instead of {}",
        got.len(),
        want.len()
    );
    if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
        bail!("{what}: object {i} is {} instead of {}", got[i], want[i]);
    }
    Ok(())
}

/// The events of a raw watch that ends by its `timeoutSeconds`, fetched with
/// `kubectl get --raw` as (type, object).
fn raw_watch(server: &KplaneServer, path: &str) -> Result<Vec<(String, Value)>> {
    let out = server.kubectl_ok(&["get", "--raw", path])?;
    out.lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let v: Value = serde_json::from_str(l).with_context(|| format!("event line {l}"))?;
            let ty = v["type"].as_str().unwrap_or_default().to_string();
            Ok((ty, v["object"].clone()))
        })
        .collect()
}

/// The names of the leading ADDED events, and the events after them.
fn initial_added(events: &[(String, Value)]) -> (Vec<String>, &[(String, Value)]) {
    let added: Vec<String> = events
        .iter()
        .take_while(|(ty, _)| ty == "ADDED")
        .map(|(_, o)| {
            o["metadata"]["name"]
                .as_str()
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    let n = added.len();
    (added, &events[n..])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watches_that_start_with_the_current_state_send_every_object() -> Result<()> {
    let (server, api, names) = server_with_configmaps("big").await?;

    // kube-rs' streaming list (sendInitialEvents=true): every object, then InitDone.
    let mut stream = watcher(api.clone(), watcher::Config::default().streaming_lists()).boxed();
    let mut initial = Vec::new();
    loop {
        let event = tokio::time::timeout(WHOLE_COLLECTION, stream.next())
            .await
            .context("streaming list stalled")?
            .context("streaming list ended")??;
        match event {
            watcher::Event::Init => {}
            watcher::Event::InitApply(cm) => initial.push(cm.name_any()),
            watcher::Event::InitDone => break,
            other => bail!("unexpected event before InitDone: {other:?}"),
        }
    }
    same_names(initial, &names, "kube-rs streaming list")?;
    drop(stream);

    // The same over raw HTTP: ADDED for every object, then the initial-events-end bookmark.
    let base = "/api/v1/namespaces/big/configmaps?watch=true&timeoutSeconds=2";
    let events = raw_watch(
        &server,
        &format!(
            "{base}&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"
        ),
    )?;
    let (added, rest) = initial_added(&events);
    same_names(added, &names, "sendInitialEvents watch")?;
    let (ty, end) = rest
        .first()
        .context("no bookmark after the initial events")?;
    ensure!(
        ty == "BOOKMARK" && end["metadata"]["annotations"]["k8s.io/initial-events-end"] == "true",
        "after the initial events: {ty} {end}"
    );

    // From resourceVersion 0 and without a resourceVersion: every object as ADDED.
    for (what, path) in [
        (
            "resourceVersion=0 watch",
            format!("{base}&resourceVersion=0"),
        ),
        ("watch without resourceVersion", base.to_string()),
    ] {
        let events = raw_watch(&server, &path)?;
        let (added, rest) = initial_added(&events);
        same_names(added, &names, what)?;
        ensure!(rest.is_empty(), "{what}: unexpected events {rest:?}");
    }
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_without_limit_return_every_object_in_every_representation() -> Result<()> {
    let (server, api, names) = server_with_configmaps("big").await?;

    // kubectl pages by 500 by default; --chunk-size=0 asks for the whole list at once.
    for chunk in ["--chunk-size=500", "--chunk-size=0"] {
        let out = server.kubectl_ok(&["get", "configmaps", "-n", "big", "-o", "name", chunk])?;
        let got = out
            .lines()
            .map(|l| l.trim_start_matches("configmap/").to_string())
            .collect();
        same_names(got, &names, &format!("kubectl get -o name {chunk}"))?;
    }
    // The Table kubectl prints, in one response.
    let table =
        Table::parse(&server.kubectl_ok(&["get", "configmaps", "-n", "big", "--chunk-size=0"])?)?;
    let col = table.column("NAME")?;
    let got = table.rows.iter().map(|r| r[col].clone()).collect();
    same_names(got, &names, "Table (kubectl get --chunk-size=0)")?;
    // Across all namespaces.
    let out = server.kubectl_ok(&["get", "configmaps", "-A", "-o", "name", "--chunk-size=0"])?;
    let in_big = out
        .lines()
        .filter(|l| l.starts_with("configmap/cm-a-"))
        .count();
    ensure!(
        in_big == OBJECTS,
        "-A lists {in_big} of the {OBJECTS} ConfigMaps"
    );

    // kube-rs: the full objects and PartialObjectMetadataList.
    let full = api.list(&ListParams::default()).await?;
    same_names(
        full.items.iter().map(ResourceExt::name_any).collect(),
        &names,
        "kube-rs list",
    )?;
    let meta = api.list_metadata(&ListParams::default()).await?;
    same_names(
        meta.items.iter().map(ResourceExt::name_any).collect(),
        &names,
        "PartialObjectMetadataList",
    )?;
    Ok(())
}

/// The number of ConfigMaps in `ns` labelled `set=<set>`.
async fn count_set(api: &Api<ConfigMap>, set: &str) -> Result<usize> {
    let lp = ListParams::default().labels(&format!("set={set}"));
    Ok(api.list_metadata(&lp).await?.items.len())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_collection_deletes_every_object() -> Result<()> {
    let (server, api, _) = server_with_configmaps("big").await?;
    create_all(&api, configmaps(OBJECTS, "b")).await?;

    // deletecollection through kube-rs, with a selector.
    let deleted = api
        .delete_collection(
            &DeleteParams::default(),
            &ListParams::default().labels("set=a"),
        )
        .await?;
    let listed = deleted
        .left()
        .context("deletecollection answered with a Status")?;
    ensure!(
        listed.items.len() == OBJECTS,
        "deletecollection returned {} of {OBJECTS} objects",
        listed.items.len()
    );
    ensure!(count_set(&api, "a").await? == 0, "set a is not empty");
    ensure!(count_set(&api, "b").await? == OBJECTS, "set b was touched");

    // `kubectl delete --all` lists in pages of 500 and deletes each object. (Without
    // `--wait=false` it then polls every object at its client-side limit of 5 requests a
    // second: four minutes for this collection, against any server.)
    let out = server.kubectl_ok(&["delete", "configmaps", "--all", "-n", "big", "--wait=false"])?;
    let lines = out.lines().filter(|l| l.contains("deleted")).count();
    ensure!(lines == OBJECTS + 1, "kubectl deleted {lines} objects");
    ensure!(count_set(&api, "b").await? == 0, "set b is not empty");

    // deletecollection through kubectl.
    create_all(&api, configmaps(OBJECTS, "c")).await?;
    server.kubectl_ok(&["delete", "--raw", "/api/v1/namespaces/big/configmaps"])?;
    ensure!(count_set(&api, "c").await? == 0, "set c is not empty");
    Ok(())
}

/// A condition of a namespace that says content was left behind.
fn content_left(ns: &Namespace) -> Option<String> {
    ns.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| {
            c.status == "True"
                && matches!(
                    c.type_.as_str(),
                    "NamespaceContentRemaining" | "NamespaceDeletionContentFailure"
                )
        })
        .map(|c| format!("{}: {}", c.type_, c.message.clone().unwrap_or_default()))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_namespace_of_many_objects_empties_it_in_one_pass() -> Result<()> {
    let (server, _api, _) = server_with_configmaps("big").await?;
    let client = server.client().await?;
    let namespaces: Api<Namespace> = Api::all(client);
    let rv = namespaces
        .get("big")
        .await?
        .resource_version()
        .context("namespace without resourceVersion")?;
    let params = WatchParams::default()
        .fields("metadata.name=big")
        .timeout(120);
    let mut events = namespaces.watch(&params, &rv).await?.boxed();
    let kubectl = server.kubectl_root().clone();
    let delete = tokio::task::spawn_blocking(move || {
        kubectl.ok(&["delete", "namespace", "big", "--timeout=120s"])
    });
    // The namespace's status while it is emptied: never any content left over.
    loop {
        let event = tokio::time::timeout(WHOLE_COLLECTION, events.next())
            .await
            .context("no namespace event")?
            .context("namespace watch ended before the namespace was deleted")??;
        match event {
            WatchEvent::Modified(ns) => {
                if let Some(left) = content_left(&ns) {
                    bail!("the namespace deleter left content behind: {left}");
                }
            }
            WatchEvent::Deleted(_) => break,
            WatchEvent::Bookmark(_) | WatchEvent::Added(_) => {}
            WatchEvent::Error(e) => bail!("namespace watch error: {e:?}"),
        }
    }
    delete.await??;
    let out = server.kubectl_ok(&["get", "configmaps", "-n", "big", "-o", "name"])?;
    ensure!(
        out.trim().is_empty(),
        "left in the deleted namespace: {out}"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_a_crd_deletes_all_its_many_instances() -> Result<()> {
    let server = crate::crds::server_with_widgets()?;
    let client = server.client().await?;
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    let widgets: Api<DynamicObject> = Api::namespaced_with(client, "default", &ar);
    let objs = (0..OBJECTS)
        .map(|i| {
            DynamicObject::new(&format!("w-{i:05}"), &ar)
                .data(serde_json::json!({"spec": {"color": "blue"}}))
        })
        .collect();
    create_all(&widgets, objs).await?;
    let listed = widgets.list_metadata(&ListParams::default()).await?;
    ensure!(
        listed.items.len() == OBJECTS,
        "{} widgets",
        listed.items.len()
    );

    let kubectl = server.kubectl_root().clone();
    tokio::task::spawn_blocking(move || {
        kubectl.ok(&["delete", "crd", crate::crds::WIDGETS, "--timeout=120s"])
    })
    .await??;
    // Recreated, the CRD serves no instance of its earlier life.
    let crd = server.kubectl_root().clone();
    tokio::task::spawn_blocking(move || {
        crate::crds::apply_crd(&crd, "crds/widgets.yaml", crate::crds::WIDGETS)
    })
    .await??;
    let left = widgets.list_metadata(&ListParams::default()).await?;
    ensure!(
        left.items.is_empty(),
        "{} widgets survived their CRD",
        left.items.len()
    );
    Ok(())
}
