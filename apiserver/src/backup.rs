//! Scheduled backups (`kplane serve --backup-dir DIR --backup-interval 1h --backup-keep N`):
//! every interval, one archive per existing logical cluster (not recursive: each cluster
//! has its own) at `DIR/<cluster>/<UTC timestamp>.kpa`, zstd-compressed, made by the
//! registry's export (one consistent revision per cluster, streamed, bounded memory).
//!
//! Each archive is written to a hidden temporary name in the cluster's directory, fsynced,
//! renamed into place and the directory fsynced: a crash leaves either the complete
//! archive or a temporary file (removed by the next round). Then the cluster's archives
//! are pruned to the newest N. At most [`CONCURRENCY`] clusters are backed up at once.
//! A failure is one warning (cluster and cause) and counted; the round goes on.
//!
//! Metrics (`/metrics`), without per-cluster labels (there may be 100,000 clusters):
//! `kplane_backup_last_success_timestamp_seconds` (the end of the last round in which
//! every cluster's backup succeeded; 0 before the first) and
//! `kplane_backup_clusters_total{result="success|failure"}`. Restoring one cluster is
//! `kplane import DIR/<cluster>/<timestamp>.kpa`.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt as _;
use kplane_registry::cluster_states::ClusterPhase;
use kplane_registry::Registry;
use kplane_types::ClusterName;
use tokio::io::AsyncWriteExt as _;

/// Clusters backed up at once.
pub const CONCURRENCY: usize = 4;

/// The file name suffix of a backup archive.
const SUFFIX: &str = ".kpa";

/// What `--backup-*` configure.
#[derive(Clone, Debug)]
pub struct BackupConfig {
    pub dir: PathBuf,
    pub interval: Duration,
    /// Archives kept per cluster (at least 1).
    pub keep: usize,
}

/// The backup metrics.
#[derive(Debug, Default)]
pub struct BackupMetrics {
    last_success: AtomicU64,
    success: AtomicU64,
    failure: AtomicU64,
}

impl BackupMetrics {
    /// Appends the backup series to a `/metrics` body.
    pub fn render(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# HELP kplane_backup_last_success_timestamp_seconds End of the last backup round in which every logical cluster's backup succeeded (Unix seconds; 0 before the first).\n# TYPE kplane_backup_last_success_timestamp_seconds gauge\nkplane_backup_last_success_timestamp_seconds {}",
            self.last_success.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP kplane_backup_clusters_total Logical cluster backups by result.\n# TYPE kplane_backup_clusters_total counter\nkplane_backup_clusters_total{{result=\"success\"}} {}\nkplane_backup_clusters_total{{result=\"failure\"}} {}",
            self.success.load(Ordering::Relaxed),
            self.failure.load(Ordering::Relaxed)
        );
    }
}

/// Runs backup rounds every `config.interval` (the first one interval after start-up)
/// until `shutdown` turns true, while this replica leads (`Registry::health().is_leader`).
pub async fn run(
    registry: Arc<Registry>,
    config: BackupConfig,
    metrics: Arc<BackupMetrics>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let start = tokio::time::Instant::now() + config.interval;
    let mut ticks = tokio::time::interval_at(start, config.interval);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = ticks.tick() => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
        if !registry.health().is_leader() {
            // Another replica on the same store takes the backups.
            continue;
        }
        tokio::select! {
            () = round(&registry, &config, &metrics) => {}
            _ = shutdown.wait_for(|s| *s) => return,
        }
    }
}

/// One round: every existing cluster (not a moved one), [`CONCURRENCY`] at a time.
pub async fn round(registry: &Arc<Registry>, config: &BackupConfig, metrics: &BackupMetrics) {
    let clusters: Vec<ClusterName> = registry
        .logical_clusters()
        .existing()
        .into_iter()
        .filter(|c| !matches!(registry.moves().phase(c), Some(ClusterPhase::Moved { .. })))
        .collect();
    let failures = AtomicU64::new(0);
    futures::stream::iter(clusters)
        .for_each_concurrent(CONCURRENCY, |cluster| {
            let failures = &failures;
            async move {
                match backup_one(registry, config, &cluster).await {
                    Ok(_) => {
                        metrics.success.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => {
                        tracing::warn!(%cluster, error = %e, "backup of a logical cluster failed");
                        metrics.failure.fetch_add(1, Ordering::Relaxed);
                        failures.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        })
        .await;
    if failures.load(Ordering::Relaxed) == 0 {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        metrics.last_success.store(now, Ordering::Relaxed);
    }
}

/// Writes one archive of `cluster` and prunes its directory; answers the archive's path.
async fn backup_one(
    registry: &Registry,
    config: &BackupConfig,
    cluster: &ClusterName,
) -> Result<PathBuf, String> {
    let dir = config.dir.join(cluster.as_str());
    tokio::fs::create_dir_all(&dir)
        .await
        .map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let name = format!(
        "{}{SUFFIX}",
        chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ")
    );
    let tmp = dir.join(format!(".{name}.tmp"));
    let done = dir.join(&name);
    let written = write_archive(registry, cluster, &tmp).await;
    if let Err(e) = written {
        let _ = tokio::fs::remove_file(&tmp).await;
        return Err(e);
    }
    tokio::fs::rename(&tmp, &done)
        .await
        .map_err(|e| format!("renaming {} into place: {e}", tmp.display()))?;
    sync_dir(&dir).await?;
    prune(&dir, config.keep).await?;
    Ok(done)
}

/// Streams the export of `cluster` into `path`, then fsyncs it.
async fn write_archive(
    registry: &Registry,
    cluster: &ClusterName,
    path: &Path,
) -> Result<(), String> {
    let mut export = registry
        .archive()
        .export(cluster, false, true)
        .await
        .map_err(|e| format!("export: {}", e.0.message))?;
    let mut file = tokio::fs::File::create(path)
        .await
        .map_err(|e| format!("creating {}: {e}", path.display()))?;
    while let Some(chunk) = export
        .next_chunk()
        .await
        .map_err(|e| format!("export: {}", e.0.message))?
    {
        file.write_all(&chunk)
            .await
            .map_err(|e| format!("writing {}: {e}", path.display()))?;
    }
    file.flush()
        .await
        .map_err(|e| format!("writing {}: {e}", path.display()))?;
    file.sync_all()
        .await
        .map_err(|e| format!("syncing {}: {e}", path.display()))
}

async fn sync_dir(dir: &Path) -> Result<(), String> {
    let d = dir.to_path_buf();
    tokio::task::spawn_blocking(move || std::fs::File::open(&d).and_then(|f| f.sync_all()))
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| format!("syncing {}: {e}", dir.display()))
}

/// Removes the archives of `dir` beyond the newest `keep`, and temporary files left by
/// interrupted rounds.
async fn prune(dir: &Path, keep: usize) -> Result<(), String> {
    let mut entries = tokio::fs::read_dir(dir)
        .await
        .map_err(|e| format!("listing {}: {e}", dir.display()))?;
    let mut names = Vec::new();
    while let Some(e) = entries
        .next_entry()
        .await
        .map_err(|e| format!("listing {}: {e}", dir.display()))?
    {
        if let Ok(n) = e.file_name().into_string() {
            names.push(n);
        }
    }
    for n in to_prune(names, keep) {
        let p = dir.join(&n);
        tokio::fs::remove_file(&p)
            .await
            .map_err(|e| format!("removing {}: {e}", p.display()))?;
    }
    Ok(())
}

/// Of the file names of a cluster's backup directory, those to remove: archives beyond
/// the newest `keep` (names are UTC timestamps, so name order is age order) and
/// temporary files. Other files are left alone.
fn to_prune(mut names: Vec<String>, keep: usize) -> Vec<String> {
    let keep = keep.max(1);
    let (tmp, mut archives): (Vec<String>, Vec<String>) = {
        names.retain(|n| n.ends_with(SUFFIX) || (n.starts_with('.') && n.ends_with(".tmp")));
        names.into_iter().partition(|n| n.starts_with('.'))
    };
    archives.sort();
    let old = archives.len().saturating_sub(keep);
    archives.truncate(old);
    archives.into_iter().chain(tmp).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        // Out of order, as a directory listing may be.
        (0..n)
            .rev()
            .map(|i| format!("20261124T{:06}.000Z.kpa", i))
            .collect()
    }

    #[test]
    fn pruning_keeps_the_newest_n_around_n_and_ten_times_it() {
        let keep = 3;
        for n in [0, 1, keep - 1, keep, keep + 1, 10 * keep] {
            let mut all = names(n);
            all.push("notes.txt".into());
            all.push(".20261124T000099.000Z.kpa.tmp".into());
            let gone = to_prune(all.clone(), keep);
            let kept: Vec<&String> = all.iter().filter(|a| !gone.contains(a)).collect();
            let archives: Vec<&&String> = kept.iter().filter(|k| k.ends_with(SUFFIX)).collect();
            assert_eq!(archives.len(), n.min(keep), "n {n}");
            // The newest ones.
            for i in n.saturating_sub(keep)..n {
                let want = format!("20261124T{:06}.000Z.kpa", i);
                assert!(kept.contains(&&want), "n {n}: {want} pruned");
            }
            assert!(kept.contains(&&"notes.txt".to_string()));
            assert!(gone.contains(&".20261124T000099.000Z.kpa.tmp".to_string()));
        }
        assert_eq!(to_prune(names(5), 0).len(), 4, "keep at least one");
    }

    #[test]
    fn metrics_render_without_per_cluster_labels() {
        let m = BackupMetrics::default();
        m.success.fetch_add(3, Ordering::Relaxed);
        m.failure.fetch_add(1, Ordering::Relaxed);
        let mut out = String::new();
        m.render(&mut out);
        assert!(out.contains("kplane_backup_clusters_total{result=\"success\"} 3"));
        assert!(out.contains("kplane_backup_clusters_total{result=\"failure\"} 1"));
        assert!(out.contains("kplane_backup_last_success_timestamp_seconds 0"));
    }

    /// Rounds over a registry: one archive per cluster, pruned to `keep` over more rounds
    /// than that; every archive verifies.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn rounds_write_one_verified_archive_per_cluster_and_prune() {
        let fx = kplane_registry::testing::fixture().await;
        let reg = fx.reg.clone();
        for c in ["root:a", "root:b"] {
            reg.ensure_cluster(&ClusterName::parse(c).unwrap())
                .await
                .unwrap();
        }
        let dir = tempfile::tempdir().unwrap();
        let config = BackupConfig {
            dir: dir.path().to_path_buf(),
            interval: Duration::from_secs(3600),
            keep: 2,
        };
        let metrics = BackupMetrics::default();
        for _ in 0..5 {
            round(&reg, &config, &metrics).await;
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        assert_eq!(metrics.failure.load(Ordering::Relaxed), 0);
        assert!(metrics.last_success.load(Ordering::Relaxed) > 0);
        for c in ["root", "root:a", "root:b"] {
            let files: Vec<_> = std::fs::read_dir(dir.path().join(c))
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            assert_eq!(files.len(), 2, "{c}: {files:?}");
            for f in files {
                let (header, _) = kplane_archive::verify(std::fs::File::open(&f).unwrap()).unwrap();
                assert_eq!(header.cluster, c);
                assert!(!header.recursive);
            }
        }
    }

    /// A round over ten times [`CONCURRENCY`] clusters (plus root): every one gets its
    /// archive, none is skipped or written twice by the bounded concurrency.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_round_over_ten_times_its_concurrency_backs_up_every_cluster_once() {
        let fx = kplane_registry::testing::fixture().await;
        let reg = fx.reg.clone();
        let n = 10 * CONCURRENCY;
        for i in 0..n {
            reg.ensure_cluster(&ClusterName::parse(&format!("root:c{i}")).unwrap())
                .await
                .unwrap();
        }
        let dir = tempfile::tempdir().unwrap();
        let config = BackupConfig {
            dir: dir.path().to_path_buf(),
            interval: Duration::from_secs(3600),
            keep: 1,
        };
        let metrics = BackupMetrics::default();
        round(&reg, &config, &metrics).await;
        assert_eq!(metrics.success.load(Ordering::Relaxed), n as u64 + 1);
        assert_eq!(metrics.failure.load(Ordering::Relaxed), 0);
        for c in std::iter::once("root".to_string()).chain((0..n).map(|i| format!("root:c{i}"))) {
            let files: Vec<_> = std::fs::read_dir(dir.path().join(&c))
                .unwrap()
                .map(|e| e.unwrap().path())
                .collect();
            assert_eq!(files.len(), 1, "{c}: {files:?}");
            let (header, _) =
                kplane_archive::verify(std::fs::File::open(&files[0]).unwrap()).unwrap();
            assert_eq!(header.cluster, c);
        }
    }
}
