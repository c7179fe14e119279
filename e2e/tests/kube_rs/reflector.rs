//! kube-runtime `watcher` + `reflector`: the cache a controller reads from follows the server.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Context as _, Result};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kplane_e2e::fixtures::{configmap, create_namespace, string_map};
use kplane_e2e::{eventually, KplaneServer};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::runtime::reflector::{self, Store};
use kube::runtime::watcher;
use kube::{Api, ResourceExt as _};

const SETTLE: Duration = Duration::from_secs(15);

/// `(name, data["n"])` of every object in the store, sorted by name.
fn snapshot(store: &Store<ConfigMap>) -> Vec<(String, String)> {
    let mut items: Vec<(String, String)> = store
        .state()
        .iter()
        .map(|cm| {
            let n = cm
                .data
                .as_ref()
                .and_then(|d| d.get("n"))
                .cloned()
                .unwrap_or_default();
            (cm.name_any(), n)
        })
        .collect();
    items.sort();
    items
}

fn pairs(want: &[(&str, &str)]) -> Vec<(String, String)> {
    want.iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

async fn wait_for_store(
    store: &Store<ConfigMap>,
    errors: &Arc<Mutex<Vec<String>>>,
    want: &[(&str, &str)],
) -> Result<()> {
    let want = pairs(want);
    eventually(SETTLE, &format!("reflector store == {want:?}"), || {
        let matches = snapshot(store) == want;
        async move { Ok(matches) }
    })
    .await
    .with_context(|| {
        format!(
            "store has {:?}; watcher errors: {:?}",
            snapshot(store),
            errors.lock().map(|e| e.clone()).unwrap_or_default()
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reflector_store_follows_create_update_delete() -> Result<()> {
    let server = KplaneServer::start()?;
    let client = server.client().await?;
    create_namespace(&client, "refl").await?;
    let api: Api<ConfigMap> = Api::namespaced(client, "refl");

    let (store, writer) = reflector::store::<ConfigMap>();
    let errors = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&errors);
    let stream = reflector::reflector(
        writer,
        watcher(api.clone(), watcher::Config::default().labels("app=refl")),
    );
    let task = tokio::spawn(async move {
        let mut stream = stream.boxed();
        while let Some(event) = stream.next().await {
            if let Err(e) = event {
                if let Ok(mut errors) = sink.lock() {
                    errors.push(e.to_string());
                }
            }
        }
    });

    for i in 1..=3 {
        let mut cm = configmap(&format!("cm-{i}"), &[("n", &i.to_string())]);
        cm.metadata.labels = Some(string_map(&[("app", "refl")]));
        api.create(&PostParams::default(), &cm).await?;
    }
    // Not labelled: must never show up.
    api.create(&PostParams::default(), &configmap("other", &[("n", "0")]))
        .await?;
    let result = async {
        wait_for_store(
            &store,
            &errors,
            &[("cm-1", "1"), ("cm-2", "2"), ("cm-3", "3")],
        )
        .await?;

        let patch = serde_json::json!({"data": {"n": "updated"}});
        api.patch("cm-2", &PatchParams::default(), &Patch::Merge(&patch))
            .await?;
        wait_for_store(
            &store,
            &errors,
            &[("cm-1", "1"), ("cm-2", "updated"), ("cm-3", "3")],
        )
        .await?;

        api.delete("cm-3", &DeleteParams::default()).await?;
        wait_for_store(&store, &errors, &[("cm-1", "1"), ("cm-2", "updated")]).await
    }
    .await;
    task.abort();
    result
}
