//! Scheduled backups (`kplane serve --backup-dir --backup-interval --backup-keep`): one
//! archive per logical cluster each round, pruned to the newest N, with the metrics; one
//! restored into a second server with `kplane import` holds the same objects.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _, Result};
use k8s_openapi::api::core::v1::ConfigMap;
use kplane_e2e::{fixtures, kplane_bin, KplaneServer, ServerOptions};
use kube::api::{ListParams, PostParams};
use kube::Api;

fn archives(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "kpa"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

async fn objects(
    server: &KplaneServer,
    cluster: &str,
) -> Result<BTreeMap<String, (String, String)>> {
    let api: Api<ConfigMap> = Api::namespaced(server.client_for(cluster).await?, "default");
    Ok(api
        .list(&ListParams::default())
        .await?
        .items
        .into_iter()
        .map(|c| {
            let d = c
                .data
                .unwrap_or_default()
                .get("v")
                .cloned()
                .unwrap_or_default();
            (
                c.metadata.name.unwrap_or_default(),
                (c.metadata.uid.unwrap_or_default(), d),
            )
        })
        .collect())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scheduled_backups_are_pruned_and_restore_with_import() -> Result<()> {
    let backups = tempfile::tempdir()?;
    let server = KplaneServer::start_with(
        ServerOptions::default()
            .arg("--backup-dir")
            .arg(backups.path())
            .arg("--backup-interval")
            .arg("2s")
            .arg("--backup-keep")
            .arg("2"),
    )?;
    server.create_workspace("root:team")?;
    let api: Api<ConfigMap> = Api::namespaced(server.client_for("root:team").await?, "default");
    for i in 0..30 {
        api.create(
            &PostParams::default(),
            &fixtures::configmap(&format!("cm-{i}"), &[("v", &i.to_string())]),
        )
        .await?;
    }
    let want = objects(&server, "root:team").await?;
    // Rounds run every 2 s: wait for more rounds than kept, made after the writes.
    let team = backups.path().join("root:team");
    let started = Instant::now();
    let mut seen = std::collections::BTreeSet::new();
    while seen.len() < 4 {
        ensure!(
            started.elapsed() < Duration::from_secs(60),
            "archives: {seen:?}"
        );
        seen.extend(archives(&team));
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let kept = archives(&team);
    ensure!(kept.len() <= 2, "not pruned to 2: {kept:?}");
    ensure!(
        !archives(&backups.path().join("root")).is_empty(),
        "root has no archive"
    );
    let metrics = server.kubectl_ok(&["get", "--raw", "/metrics"])?;
    ensure!(
        metrics.contains("kplane_backup_clusters_total{result=\"success\"}")
            && !metrics.contains("kplane_backup_last_success_timestamp_seconds 0\n"),
        "{}",
        metrics
            .lines()
            .filter(|l| l.contains("backup"))
            .collect::<Vec<_>>()
            .join("\n")
    );

    // Restore the newest into a second server.
    let newest = kept.last().context("no archive")?.clone();
    let other = KplaneServer::start()?;
    let home = tempfile::tempdir()?;
    let out = Command::new(kplane_bin()?)
        .args(["import", newest.to_str().unwrap_or("")])
        .env("KUBECONFIG", other.kubeconfig())
        .env("HOME", home.path())
        .output()?;
    ensure!(
        out.status.success(),
        "kplane import: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    ensure!(
        objects(&other, "root:team").await? == want,
        "the restored cluster differs"
    );
    Ok(())
}
