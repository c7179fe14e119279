//! Graceful shutdown: SIGTERM ends open watches cleanly and the process exits 0.

use std::time::Duration;

use anyhow::{bail, ensure, Context as _, Result};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use kplane_e2e::fixtures::configmap;
use kplane_e2e::KplaneServer;
use kube::api::{ListParams, PostParams, WatchEvent, WatchParams};
use kube::{Api, ResourceExt as _};

const EXIT_WITHIN: Duration = Duration::from_secs(5);

#[tokio::test]
async fn sigterm_with_an_open_watch_ends_the_stream_and_exits_zero() -> Result<()> {
    let mut server = KplaneServer::start()?;
    let client = server.client().await?;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    let rv = api
        .list(&ListParams::default())
        .await?
        .metadata
        .resource_version
        .context("list without resourceVersion")?;
    let mut watch = api
        .watch(&WatchParams::default().timeout(290), &rv)
        .await?
        .boxed();

    // Prove the watch is live before shutting down.
    api.create(
        &PostParams::default(),
        &configmap("before-sigterm", &[("k", "v")]),
    )
    .await?;
    loop {
        match tokio::time::timeout(Duration::from_secs(15), watch.next()).await {
            Err(_) => bail!("the watch delivered nothing for the create"),
            Ok(None) => bail!("the watch ended before SIGTERM"),
            Ok(Some(event)) => match event? {
                WatchEvent::Added(cm) if cm.name_any() == "before-sigterm" => break,
                _ => {}
            },
        }
    }

    server.sigterm()?;
    // The stream must end (not error, not hang) once the server shuts down.
    loop {
        match tokio::time::timeout(EXIT_WITHIN, watch.next()).await {
            Err(_) => bail!("the watch stayed open {EXIT_WITHIN:?} after SIGTERM"),
            Ok(None) => break,
            Ok(Some(Ok(WatchEvent::Bookmark(_)))) => {}
            Ok(Some(Ok(WatchEvent::Error(status)))) => {
                bail!("the watch ended with an ERROR event: {status:?}")
            }
            Ok(Some(Ok(other))) => bail!("unexpected event after SIGTERM: {other:?}"),
            Ok(Some(Err(e))) => bail!("the watch broke instead of ending cleanly: {e}"),
        }
    }
    let status = server
        .wait_for_exit(EXIT_WITHIN)?
        .with_context(|| format!("the server still runs {EXIT_WITHIN:?} after SIGTERM"))?;
    ensure!(
        status.success(),
        "the server exited with {status} after SIGTERM"
    );
    Ok(())
}
