//! Paged lists, selector watches and streaming lists (`sendInitialEvents`) through kube-rs.

use std::time::Duration;

use anyhow::{bail, ensure, Context as _, Result};
use futures::{Stream, StreamExt as _};
use k8s_openapi::api::core::v1::ConfigMap;
use kplane_e2e::fixtures::{configmap, create_namespace, string_map};
use kplane_e2e::KplaneServer;
use kube::api::{ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::runtime::watcher;
use kube::{Api, ResourceExt};

const EVENT_TIMEOUT: Duration = Duration::from_secs(15);

fn labelled(name: &str, labels: &[(&str, &str)]) -> ConfigMap {
    let mut cm = configmap(name, &[("k", "v")]);
    cm.metadata.labels = Some(string_map(labels));
    cm
}

/// The next item of `stream`, failing after [`EVENT_TIMEOUT`] or at the end of the stream.
async fn next<S, T, E>(stream: &mut S, what: &str) -> Result<T>
where
    S: Stream<Item = Result<T, E>> + Unpin,
    E: std::error::Error + Send + Sync + 'static,
{
    match tokio::time::timeout(EVENT_TIMEOUT, stream.next()).await {
        Err(_) => bail!("no event within {EVENT_TIMEOUT:?} while waiting for {what}"),
        Ok(None) => bail!("stream ended while waiting for {what}"),
        Ok(Some(item)) => item.with_context(|| format!("stream error while waiting for {what}")),
    }
}

/// The next non-bookmark event of a raw watch.
async fn next_change<S>(stream: &mut S, what: &str) -> Result<WatchEvent<ConfigMap>>
where
    S: Stream<Item = Result<WatchEvent<ConfigMap>, kube::Error>> + Unpin,
{
    loop {
        match next(stream, what).await? {
            WatchEvent::Bookmark(_) => {}
            event => return Ok(event),
        }
    }
}

#[tokio::test]
async fn list_with_limit_pages_through_all_objects_in_order() -> Result<()> {
    let server = KplaneServer::start()?;
    let client = server.client().await?;
    create_namespace(&client, "paged").await?;
    let api: Api<ConfigMap> = Api::namespaced(client, "paged");
    let names: Vec<String> = (0..5).map(|i| format!("page-{i}")).collect();
    // Created out of order: lists are ordered by name, not by creation.
    for i in [3, 0, 4, 1, 2] {
        api.create(
            &PostParams::default(),
            &labelled(&names[i], &[("paged", "yes")]),
        )
        .await?;
    }

    let mut seen = Vec::new();
    let mut sizes = Vec::new();
    let mut token: Option<String> = None;
    loop {
        let mut params = ListParams::default().labels("paged=yes").limit(2);
        if let Some(t) = &token {
            params = params.continue_token(t);
        }
        let page = api.list(&params).await?;
        sizes.push(page.items.len());
        seen.extend(page.items.iter().map(ResourceExt::name_any));
        token = page.metadata.continue_.filter(|t| !t.is_empty());
        if token.is_none() {
            break;
        }
        ensure!(
            sizes.len() < 10,
            "paging does not terminate: {sizes:?} {seen:?}"
        );
    }
    assert_eq!(seen, names, "page sizes {sizes:?}");
    assert_eq!(sizes, [2, 2, 1]);
    Ok(())
}

#[tokio::test]
async fn selector_watch_reports_objects_leaving_as_deleted_and_entering_as_added() -> Result<()> {
    let server = KplaneServer::start()?;
    let client = server.client().await?;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.create(
        &PostParams::default(),
        &labelled("chameleon", &[("color", "blue")]),
    )
    .await?;

    let list = api
        .list(&ListParams::default().labels("color=blue"))
        .await?;
    ensure!(list.items.len() == 1, "selector list: {:?}", list.items);
    let rv = list
        .metadata
        .resource_version
        .context("list without resourceVersion")?;
    let params = WatchParams::default().labels("color=blue").timeout(60);
    let mut events = api.watch(&params, &rv).await?.boxed();

    let recolor = |color: &str| serde_json::json!({"metadata": {"labels": {"color": color}}});
    let patched = api
        .patch(
            "chameleon",
            &PatchParams::default(),
            &Patch::Merge(recolor("red")),
        )
        .await?;
    match next_change(&mut events, "DELETED after the label stopped matching").await? {
        WatchEvent::Deleted(cm) => {
            assert_eq!(cm.name_any(), "chameleon");
            // The object as it is now (no longer matching), at the update's resourceVersion.
            assert_eq!(cm.resource_version(), patched.resource_version());
            assert_eq!(cm.labels().get("color").map(String::as_str), Some("red"));
        }
        other => bail!("expected DELETED for chameleon, got {other:?}"),
    }

    // An unrelated non-matching change is invisible; matching again is ADDED.
    api.create(
        &PostParams::default(),
        &labelled("bystander", &[("color", "green")]),
    )
    .await?;
    api.patch(
        "chameleon",
        &PatchParams::default(),
        &Patch::Merge(recolor("blue")),
    )
    .await?;
    match next_change(&mut events, "ADDED after the label matched again").await? {
        WatchEvent::Added(cm) => assert_eq!(cm.name_any(), "chameleon"),
        other => bail!("expected ADDED for chameleon, got {other:?}"),
    }
    Ok(())
}

#[tokio::test]
async fn streaming_list_watcher_delivers_initial_objects_then_init_done() -> Result<()> {
    let server = KplaneServer::start()?;
    let client = server.client().await?;
    create_namespace(&client, "streamed").await?;
    let api: Api<ConfigMap> = Api::namespaced(client, "streamed");
    for name in ["s-1", "s-2", "s-3"] {
        api.create(
            &PostParams::default(),
            &labelled(name, &[("stream", "yes")]),
        )
        .await?;
    }

    let config = watcher::Config::default()
        .labels("stream=yes")
        .streaming_lists();
    let mut stream = watcher(api.clone(), config).boxed();
    let mut initial = Vec::new();
    loop {
        match next(&mut stream, "the initial events of a streaming list").await? {
            watcher::Event::Init => {}
            watcher::Event::InitApply(cm) => initial.push(cm.name_any()),
            watcher::Event::InitDone => break,
            other => bail!("unexpected event before InitDone: {other:?}"),
        }
    }
    initial.sort();
    assert_eq!(initial, ["s-1", "s-2", "s-3"]);

    // Live events continue on the same stream.
    api.create(
        &PostParams::default(),
        &labelled("s-4", &[("stream", "yes")]),
    )
    .await?;
    match next(&mut stream, "the live event for s-4").await? {
        watcher::Event::Apply(cm) => assert_eq!(cm.name_any(), "s-4"),
        other => bail!("expected Apply(s-4), got {other:?}"),
    }
    Ok(())
}

#[tokio::test]
async fn lists_larger_than_the_storage_cache_are_complete() -> Result<()> {
    // A 1 MiB page cache and ~2.4 MB of ConfigMaps: the list reads pages back from the
    // data files, and must still return every object intact.
    let server = KplaneServer::start_with(
        kplane_e2e::ServerOptions::default()
            .arg("--storage-cache-mb")
            .arg("1"),
    )?;
    let client = server.client().await?;
    create_namespace(&client, "big").await?;
    let api: Api<ConfigMap> = Api::namespaced(client, "big");
    let payload = |i: usize| format!("{i:05}-{}", "p".repeat(8 * 1024));
    let creates = (0..300).map(|i| {
        let api = api.clone();
        let value = payload(i);
        async move {
            api.create(
                &PostParams::default(),
                &configmap(&format!("cm-{i:03}"), &[("v", &value)]),
            )
            .await
        }
    });
    for r in futures::future::join_all(creates).await {
        r?;
    }
    let list = api.list(&ListParams::default()).await?;
    // Every namespace also holds kube-root-ca.crt.
    let items: Vec<&ConfigMap> = list
        .items
        .iter()
        .filter(|c| c.name_any().starts_with("cm-"))
        .collect();
    ensure!(items.len() == 300, "{} items", items.len());
    for (i, cm) in items.iter().enumerate() {
        ensure!(
            cm.name_any() == format!("cm-{i:03}"),
            "item {i}: {}",
            cm.name_any()
        );
        let v = cm
            .data
            .as_ref()
            .and_then(|d| d.get("v"))
            .cloned()
            .unwrap_or_default();
        ensure!(
            v == payload(i),
            "item {i} has a damaged value ({} bytes)",
            v.len()
        );
    }
    Ok(())
}
