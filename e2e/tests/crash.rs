//! Durability: every write acknowledged with a 2xx survives SIGKILL of the server.

use std::collections::BTreeMap;

use anyhow::{ensure, Context as _, Result};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::ConfigMap;
use kplane_e2e::fixtures::{configmap, create_namespace};
use kplane_e2e::KplaneServer;
use kube::api::{ListParams, PostParams};
use kube::{Api, ResourceExt as _};

const WRITES: usize = 200;
const CONCURRENCY: usize = 8;

fn rv_number(rv: Option<String>) -> Result<u64> {
    let rv = rv.context("object without resourceVersion")?;
    rv.parse()
        .with_context(|| format!("resourceVersion {rv:?} is not an integer"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_writes_survive_sigkill_and_resource_versions_keep_growing() -> Result<()> {
    let mut server = KplaneServer::start()?;
    let client = server.client().await?;
    create_namespace(&client, "durable").await?;
    let api: Api<ConfigMap> = Api::namespaced(client, "durable");

    // name -> (value written, resourceVersion acknowledged)
    let acked: BTreeMap<String, (String, u64)> = futures::stream::iter(0..WRITES)
        .map(|i| {
            let api = api.clone();
            async move {
                let name = format!("cm-{i:03}");
                let value = format!("value-{i}");
                let created = api
                    .create(&PostParams::default(), &configmap(&name, &[("v", &value)]))
                    .await
                    .with_context(|| format!("creating {name}"))?;
                let rv = rv_number(created.metadata.resource_version)?;
                anyhow::Ok((name, (value, rv)))
            }
        })
        .buffer_unordered(CONCURRENCY)
        .try_collect()
        .await?;
    // Right after the last acknowledgement: no graceful shutdown, no flush.
    let status = server.kill()?;
    ensure!(
        !status.success(),
        "SIGKILL'd server reported success: {status}"
    );
    let max_seen = acked.values().map(|(_, rv)| *rv).max().unwrap_or(0);

    server.restart()?;
    let client = server.client().await?;
    let api: Api<ConfigMap> = Api::namespaced(client, "durable");
    let list = api.list(&ListParams::default()).await?;
    let stored: BTreeMap<String, String> = list
        .items
        .iter()
        .map(|cm| {
            let v = cm.data.as_ref().and_then(|d| d.get("v")).cloned();
            (cm.name_any(), v.unwrap_or_default())
        })
        .collect();
    let missing: Vec<&String> = acked.keys().filter(|n| !stored.contains_key(*n)).collect();
    ensure!(
        missing.is_empty(),
        "{} of {WRITES} acknowledged writes lost after SIGKILL: {missing:?}",
        missing.len()
    );
    for (name, (value, _)) in &acked {
        assert_eq!(stored.get(name), Some(value), "data of {name}");
    }
    let list_rv = rv_number(list.metadata.resource_version)?;
    ensure!(
        list_rv >= max_seen,
        "list resourceVersion {list_rv} < acknowledged {max_seen}"
    );

    let fresh = api
        .create(
            &PostParams::default(),
            &configmap("after-restart", &[("v", "x")]),
        )
        .await?;
    let fresh_rv = rv_number(fresh.metadata.resource_version)?;
    ensure!(
        fresh_rv > max_seen,
        "write after restart got resourceVersion {fresh_rv}, not above {max_seen} seen before the crash"
    );
    Ok(())
}
