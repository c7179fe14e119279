//! Deleting a namespace with thousands of objects: everything without finalizers goes in
//! storage batches, yet a watcher sees one DELETED event per object (each with its own
//! resourceVersion), and an object with a finalizer is still only marked and waited for.

use std::collections::HashSet;
use std::time::Duration;

use anyhow::{bail, ensure, Context as _, Result};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kplane_e2e::fixtures::{configmap, create_namespace};
use kplane_e2e::KplaneServer;
use kube::api::{
    DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::{Api, ResourceExt};

/// Above the purge batch (256), the list batch (500) and the default watch channel (1024).
const OBJECTS: usize = 2_600;

const TIMEOUT: Duration = Duration::from_secs(120);

#[tokio::test]
async fn namespace_of_thousands_empties_with_every_deleted_event_seen() -> Result<()> {
    let server = KplaneServer::start()?;
    let client = server.client().await?;
    create_namespace(&client, "big").await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), "big");
    let names: Vec<String> = (0..OBJECTS).map(|i| format!("cm-{i:05}")).collect();
    let value = "x".repeat(200);
    futures::stream::iter(names.iter().map(|n| {
        let api = api.clone();
        let cm = configmap(n, &[("k", value.as_str())]);
        async move { api.create(&PostParams::default(), &cm).await }
    }))
    .buffer_unordered(16)
    .try_collect::<Vec<_>>()
    .await
    .context("creating the ConfigMaps")?;
    let mut held = configmap("held", &[]);
    held.metadata.finalizers = Some(vec!["example.com/hold".into()]);
    api.create(&PostParams::default(), &held).await?;

    let list = api.list_metadata(&ListParams::default().limit(1)).await?;
    let rv = list
        .metadata
        .resource_version
        .context("list without resourceVersion")?;
    let watch = |from: String| {
        let api = api.clone();
        async move {
            anyhow::Ok(
                api.watch(&WatchParams::default().timeout(290), &from)
                    .await?
                    .boxed(),
            )
        }
    };
    let mut stream = watch(rv).await?;
    // A watcher that falls behind is closed and resumes from its last resourceVersion, as
    // clients do; it must still see every event.
    let mut rewatches = 0;
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces.delete("big", &DeleteParams::default()).await?;

    // Every object without a finalizer: exactly one DELETED event each, with increasing
    // resourceVersions; the held object: MODIFIED (marked), never DELETED yet.
    let mut deleted = HashSet::new();
    let mut last_rv = 0u64;
    let mut held_marked = false;
    let deadline = tokio::time::Instant::now() + TIMEOUT;
    // The namespace's own kube-root-ca.crt goes too.
    let mut want: HashSet<String> = names.iter().cloned().collect();
    want.insert("kube-root-ca.crt".into());
    while deleted.len() < want.len() || !held_marked {
        let ev = match tokio::time::timeout_at(deadline, stream.next()).await {
            Err(_) => bail!(
                "{} of {OBJECTS} DELETED events before the timeout",
                deleted.len()
            ),
            Ok(None) if rewatches < 20 => {
                rewatches += 1;
                stream = watch(last_rv.to_string()).await?;
                continue;
            }
            Ok(None) => bail!("watch ended after {} DELETED events", deleted.len()),
            Ok(Some(ev)) => ev?,
        };
        let (obj, is_delete) = match ev {
            WatchEvent::Deleted(o) => (o, true),
            WatchEvent::Modified(o) => (o, false),
            WatchEvent::Bookmark(_) => continue,
            other => bail!("unexpected event {other:?}"),
        };
        let rv: u64 = obj
            .resource_version()
            .context("no resourceVersion")?
            .parse()?;
        ensure!(rv > last_rv, "resourceVersion {rv} after {last_rv}");
        last_rv = rv;
        if obj.name_any() == "held" {
            ensure!(!is_delete, "held was deleted despite its finalizer");
            held_marked |= obj.metadata.deletion_timestamp.is_some();
            continue;
        }
        ensure!(is_delete, "unexpected MODIFIED of {}", obj.name_any());
        ensure!(
            deleted.insert(obj.name_any()),
            "two DELETED events for {}",
            obj.name_any()
        );
    }
    ensure!(
        deleted == want,
        "DELETED events for other objects than created"
    );
    eprintln!(
        "{} DELETED events seen; the watch was re-established {rewatches} times",
        want.len()
    );
    let ns = namespaces.get("big").await?;
    ensure!(
        ns.status.and_then(|s| s.phase).as_deref() == Some("Terminating"),
        "the namespace must wait for the held object"
    );

    api.patch(
        "held",
        &PatchParams::default(),
        &Patch::Merge(serde_json::json!({"metadata": {"finalizers": null}})),
    )
    .await?;
    loop {
        match tokio::time::timeout_at(deadline, stream.next()).await {
            Err(_) => bail!("no DELETED event for held"),
            Ok(None) => bail!("watch ended before held was deleted"),
            Ok(Some(ev)) => {
                if let WatchEvent::Deleted(o) = ev? {
                    ensure!(o.name_any() == "held", "{} deleted twice", o.name_any());
                    break;
                }
            }
        }
    }
    kplane_e2e::eventually(TIMEOUT, "the namespace to be gone", || {
        let namespaces = namespaces.clone();
        async move { Ok(namespaces.get_opt("big").await?.is_none()) }
    })
    .await?;
    Ok(())
}
