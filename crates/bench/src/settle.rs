//! What a run leaves the server to do, and what it costs on disk: waiting until the run's
//! cleanup has really finished inside the server (deleted objects and namespaces gone,
//! background queues idle) before the next measurement or the report, and the size of the
//! server's data directory (`--data-dir`, or read from the `--server-pid` process).
//!
//! The server's background work is read from its `/metrics` (kplane's
//! `kplane_lifecycle_queue_depth` and `kplane_storage_compaction_backlog_revisions`); a
//! server without them (kube-apiserver) is waited for only until the objects are gone.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use hyper::Method;
use serde::Deserialize;

use crate::client::{encode_query, Conn, Failure};
use crate::ctx::{Ctx, Scope};
use crate::stats::ErrorCounts;

/// How often the server is polled while waiting.
const POLL: Duration = Duration::from_millis(100);

/// Gauges that must read 0 for the server to count as idle.
const IDLE_GAUGES: &[&str] = &[
    "kplane_lifecycle_queue_depth",
    "kplane_storage_compaction_backlog_revisions",
];

#[derive(Deserialize)]
struct CountOnly {
    #[serde(default)]
    items: Vec<serde::de::IgnoredAny>,
}

/// Scopes of `scopes` that still hold a ConfigMap of this run's `scenario` (a server that
/// cannot be asked counts as done: the failure is reported).
pub async fn objects_left(
    ctx: &Ctx,
    conn: &mut Conn,
    scopes: &[Scope],
    scenario: &str,
    errors: &mut ErrorCounts,
) -> Vec<Scope> {
    let selector = encode_query(&ctx.selector(scenario));
    let mut left = Vec::new();
    for scope in scopes {
        let path = format!("{}?labelSelector={selector}&limit=1", scope.configmaps());
        match conn.call_ok(Method::GET, &path, None).await {
            Ok(body) => match serde_json::from_slice::<CountOnly>(&body) {
                Ok(l) if l.items.is_empty() => {}
                Ok(_) => left.push(scope.clone()),
                Err(_) => errors.add("protocol", "unparsable list while waiting for cleanup"),
            },
            Err(Failure::Status(404, _)) => {}
            Err(f) => errors.add(&f.key(), &format!("waiting for cleanup: {f}")),
        }
    }
    left
}

/// Pause between two cleanup rounds.
pub async fn pause() {
    tokio::time::sleep(POLL).await;
}

/// Waits until each namespace in `scopes` is gone (404).
pub async fn namespaces_gone(conn: &mut Conn, scopes: &[Scope], deadline: Instant) -> ErrorCounts {
    let mut errors = ErrorCounts::default();
    for scope in scopes {
        loop {
            match conn
                .call_discard(Method::GET, &scope.namespace_path())
                .await
            {
                Ok(r) if r.status == 404 => break,
                Ok(r) if (200..300).contains(&r.status) => {}
                Ok(r) => {
                    if let Err(f) = r.ok() {
                        errors.add(&f.key(), &format!("waiting for namespace deletion: {f}"));
                    }
                    break;
                }
                Err(f) => {
                    errors.add(&f.key(), &format!("waiting for namespace deletion: {f}"));
                    break;
                }
            }
            if Instant::now() >= deadline {
                errors.add(
                    "timeout",
                    &format!(
                        "namespace {} still present at the setup timeout",
                        scope.namespace
                    ),
                );
                break;
            }
            tokio::time::sleep(POLL).await;
        }
    }
    errors
}

/// The value of gauge `name` in a Prometheus text body.
fn gauge(text: &str, name: &str) -> Option<f64> {
    text.lines().filter(|l| !l.starts_with('#')).find_map(|l| {
        let (k, v) = l.split_once(' ')?;
        (k == name).then(|| v.trim().parse().ok())?
    })
}

/// Whether every idle gauge the server exposes reads 0; `None` when it exposes none.
fn idle(text: &str) -> Option<bool> {
    let values: Vec<f64> = IDLE_GAUGES.iter().filter_map(|g| gauge(text, g)).collect();
    (!values.is_empty()).then(|| values.iter().all(|v| *v == 0.0))
}

/// Longest wait for the background queues: on a server other clients keep writing to,
/// compaction may never read 0 twice in a row.
const IDLE_WAIT_MAX: Duration = Duration::from_secs(30);

/// Waits until the server's background queues are idle (two readings in a row, so that
/// work queued by the last deletes is seen), at most [`IDLE_WAIT_MAX`]. Returns false when
/// the server shows no such figures, `/metrics` cannot be read, or it did not go idle.
pub async fn server_idle(conn: &mut Conn, deadline: Instant) -> bool {
    let deadline = deadline.min(Instant::now() + IDLE_WAIT_MAX);
    let mut quiet = 0;
    loop {
        let Ok(body) = conn.call_ok(Method::GET, "/metrics", None).await else {
            return false;
        };
        match idle(&String::from_utf8_lossy(&body)) {
            None => return false,
            Some(true) => quiet += 1,
            Some(false) => quiet = 0,
        }
        if quiet >= 2 || Instant::now() >= deadline {
            return quiet >= 2;
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The server's data directory: `--data-dir`, else the `--data-dir` argument (or
/// `KPLANE_DATA_DIR`, or kplane's default `./kplane-data`) of the `--server-pid` process.
pub fn data_dir(ctx: &Ctx) -> Option<PathBuf> {
    if let Some(d) = &ctx.opts.data_dir {
        return Some(d.clone());
    }
    let pid = ctx.opts.server_pid?;
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
    let args: Vec<String> = cmdline
        .split(|b| *b == 0)
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let from_args = args.iter().enumerate().find_map(|(i, a)| {
        a.strip_prefix("--data-dir=")
            .map(str::to_string)
            .or_else(|| (a == "--data-dir").then(|| args.get(i + 1).cloned())?)
    });
    let from_env = || {
        let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
        env.split(|b| *b == 0).find_map(|e| {
            String::from_utf8_lossy(e)
                .strip_prefix("KPLANE_DATA_DIR=")
                .map(str::to_string)
        })
    };
    let dir = PathBuf::from(
        from_args
            .or_else(from_env)
            .unwrap_or_else(|| "./kplane-data".into()),
    );
    if dir.is_absolute() {
        return Some(dir);
    }
    let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok()?;
    Some(cwd.join(dir))
}

/// Disk space taken by everything under `path` (allocated blocks, as `du` counts), in MiB
/// to the KiB (a small part of the data directory, such as a fresh store's latest values,
/// is a few KiB and must not round to zero).
pub fn disk_mib(path: &Path) -> Option<f64> {
    let bytes = allocated_bytes(path).ok()?;
    Some((bytes as f64 / 1024.0).round() / 1024.0)
}

fn allocated_bytes(path: &Path) -> std::io::Result<u64> {
    let meta = std::fs::symlink_metadata(path)?;
    let mut total = file_bytes(&meta);
    if meta.is_dir() {
        for entry in std::fs::read_dir(path)? {
            total += allocated_bytes(&entry?.path()).unwrap_or(0);
        }
    }
    Ok(total)
}

#[cfg(unix)]
fn file_bytes(meta: &std::fs::Metadata) -> u64 {
    use std::os::unix::fs::MetadataExt as _;
    meta.blocks() * 512
}

#[cfg(not(unix))]
fn file_bytes(meta: &std::fs::Metadata) -> u64 {
    meta.len()
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn idle_reads_kplane_gauges_and_ignores_other_servers() {
        let busy = "# HELP x\nkplane_lifecycle_queue_depth 3\nkplane_storage_compaction_backlog_revisions 0\n";
        let quiet =
            "kplane_lifecycle_queue_depth 0\nkplane_storage_compaction_backlog_revisions 0\n";
        assert_eq!(idle(busy), Some(false));
        assert_eq!(idle(quiet), Some(true));
        assert_eq!(idle("apiserver_request_total{code=\"200\"} 5\n"), None);
        assert_eq!(gauge(busy, "kplane_lifecycle_queue_depth"), Some(3.0));
    }

    #[test]
    fn disk_usage_counts_files_below_a_directory() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("sub")).unwrap();
        std::fs::write(dir.path().join("sub/f"), vec![1u8; 3 * 1024 * 1024]).unwrap();
        let mib = disk_mib(dir.path()).unwrap();
        assert!((3.0..3.5).contains(&mib), "{mib}");
        assert!(disk_mib(&dir.path().join("missing")).is_none());
        std::fs::write(dir.path().join("small"), vec![1u8; 8 * 1024]).unwrap();
        let with_small = disk_mib(dir.path()).unwrap();
        assert!(with_small > mib, "{with_small} after adding 8 KiB to {mib}");
    }
}
