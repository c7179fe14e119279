//! `sync-jobs`: the round trip of Jobs through a syncer (issue 15). Creates `--workspaces`
//! Workspaces below the kubeconfig's logical cluster, then `--jobs` Jobs spread over them
//! (namespace `default`) with `--concurrency` clients, while
//! - this process plays the host's job controller: one watch on the host's Jobs
//!   (`--host-kubeconfig`), and every Job that appears there is completed at once (a status
//!   write with SuccessCriteriaMet and Complete, as kube-controller-manager writes it);
//! - one watch on the subtree of the kubeconfig's cluster (`/clusters/<name>:*`) sees each
//!   Job turn Complete in its tenant.
//!
//! One operation is one Job: from just before its create request to the watch event that
//! shows it Complete in the tenant. Reports the time until all are Complete and the
//! latency percentiles. A SyncTarget covering the Workspaces (`includeDescendants: true`)
//! and a syncer running against both servers are the caller's (`crates/bench/scripts/sync.sh`).
//! The Workspaces (and so the Jobs) are deleted at the end unless `--keep`.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt as _;
use hyper::Method;
use serde_json::{json, Value};
use tokio::sync::{mpsc, watch};

use super::add_errors;
use super::ws;
use crate::client::{Conn, Target};
use crate::ctx::{Ctx, RUN_LABEL, SCENARIO_LABEL};
use crate::report::Report;
use crate::setup::{encode_query, join_errors, list_resource_version};
use crate::stats::{ErrorCounts, Samples};

const SCENARIO: &str = "sync-jobs";
const JOBS: &str = "/apis/batch/v1/jobs";
/// The annotation naming an object's cluster in multi-cluster reads.
const CLUSTER_ANNOTATION: &str = "kplane.io/cluster";
/// Longest watch event line accepted.
const MAX_LINE: usize = 16 << 20;
/// Concurrent status writers playing the host's job controller.
const COMPLETERS: usize = 8;

/// Jobs waiting to be seen Complete: `<cluster>/<name>` → when their create was sent.
#[derive(Default)]
struct Pending {
    started: HashMap<String, Instant>,
    samples: Samples,
    done: usize,
    last: Option<Instant>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The Job `name` in namespace `default`, labelled with the run.
fn job_body(ctx: &Ctx, name: &str) -> Bytes {
    Bytes::from(
        json!({
            "apiVersion": "batch/v1",
            "kind": "Job",
            "metadata": {
                "name": name,
                "namespace": "default",
                "labels": {RUN_LABEL: ctx.run, SCENARIO_LABEL: SCENARIO},
            },
            "spec": {"template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{"name": "c", "image": "busybox", "command": ["true"]}],
            }}},
        })
        .to_string(),
    )
}

/// The status the host's job controller writes when a one-pod Job succeeded.
fn complete_status() -> Bytes {
    let now = now_rfc3339();
    let cond = |t: &str| {
        json!({"type": t, "status": "True", "reason": "CompletionsReached",
               "message": "Reached expected number of succeeded pods",
               "lastProbeTime": now, "lastTransitionTime": now})
    };
    Bytes::from(
        json!({"status": {
            "startTime": now, "completionTime": now, "active": 0, "ready": 0,
            "terminating": 0, "succeeded": 1, "uncountedTerminatedPods": {},
            "conditions": [cond("SuccessCriteriaMet"), cond("Complete")],
        }})
        .to_string(),
    )
}

fn now_rfc3339() -> String {
    chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

fn is_complete(obj: &Value) -> bool {
    obj["status"]["conditions"].as_array().is_some_and(|cs| {
        cs.iter()
            .any(|c| c["type"] == "Complete" && c["status"] == "True")
    })
}

/// Watches `collection` on `target` from a fresh list's resourceVersion until stopped,
/// resuming where the server ended it, and hands every event object to `on_event`.
async fn watch_events(
    target: Arc<Target>,
    collection: String,
    mut stop: watch::Receiver<bool>,
    mut on_event: impl FnMut(&str, &Value) + Send,
) -> ErrorCounts {
    let mut errors = ErrorCounts::default();
    let mut conn = Conn::new(target.clone());
    let mut rv = match conn
        .call_ok(Method::GET, &format!("{collection}?limit=1"), None)
        .await
        .and_then(|b| list_resource_version(&b))
    {
        Ok(rv) => rv,
        Err(f) => {
            errors.add(&f.key(), &format!("listing {collection}: {f}"));
            return errors;
        }
    };
    for _ in 0..1000 {
        if *stop.borrow() {
            break;
        }
        let path = format!(
            "{collection}?watch=1&allowWatchBookmarks=true&resourceVersion={}",
            encode_query(&rv)
        );
        let body = tokio::select! {
            _ = stop.changed() => break,
            b = conn.stream(&path) => b,
        };
        let mut body = match body {
            Ok(b) => b,
            Err(f) => {
                errors.add(&format!("watch {}", f.key()), &f.message());
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let mut buf = BytesMut::new();
        loop {
            let frame = tokio::select! {
                _ = stop.changed() => return errors,
                f = body.frame() => f,
            };
            let data = match frame {
                None => break,
                Some(Err(e)) => {
                    errors.add("watch transport", &e.to_string());
                    break;
                }
                Some(Ok(f)) => match f.into_data() {
                    Ok(d) => d,
                    Err(_) => continue,
                },
            };
            buf.extend_from_slice(&data);
            while let Some(pos) = buf.iter().position(|&b| b == b'\n') {
                let line = buf.split_to(pos + 1);
                if line[..pos].iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let ev: Value = match serde_json::from_slice(&line[..pos]) {
                    Ok(v) => v,
                    Err(e) => {
                        errors.add("watch protocol", &format!("bad event line: {e}"));
                        continue;
                    }
                };
                let kind = ev["type"].as_str().unwrap_or_default();
                if kind == "ERROR" {
                    errors.add("watch error event", &ev["object"].to_string());
                    continue;
                }
                if let Some(v) = ev["object"]["metadata"]["resourceVersion"].as_str() {
                    rv = v.to_string();
                }
                if kind != "BOOKMARK" {
                    on_event(kind, &ev["object"]);
                }
            }
            if buf.len() > MAX_LINE {
                errors.add("watch protocol", "event line longer than 16 MiB");
                break;
            }
        }
        conn = Conn::new(target.clone());
    }
    errors
}

/// Plays the host's job controller: completes every Job that appears on the host.
fn host_controller(
    host: Arc<Target>,
    stop: watch::Receiver<bool>,
) -> Vec<tokio::task::JoinHandle<ErrorCounts>> {
    let (tx, rx) = mpsc::unbounded_channel::<String>();
    let rx = Arc::new(tokio::sync::Mutex::new(rx));
    let mut handles = Vec::new();
    for _ in 0..COMPLETERS {
        let (host, rx) = (host.clone(), rx.clone());
        handles.push(tokio::spawn(async move {
            let mut errors = ErrorCounts::default();
            let mut conn = Conn::new(host);
            loop {
                let next = rx.lock().await.recv().await;
                let Some(path) = next else { break };
                let r = conn
                    .call_typed(
                        Method::PATCH,
                        &path,
                        Some(complete_status()),
                        "application/merge-patch+json",
                    )
                    .await
                    .and_then(crate::client::Reply::ok);
                if let Err(f) = r {
                    errors.add(&format!("host status {}", f.key()), &format!("{path}: {f}"));
                }
            }
            errors
        }));
    }
    let mut seen: HashSet<String> = HashSet::new();
    handles.push(tokio::spawn(watch_events(
        host,
        JOBS.to_string(),
        stop,
        move |kind, obj| {
            if kind == "DELETED" || is_complete(obj) {
                return;
            }
            let meta = &obj["metadata"];
            let uid = meta["uid"].as_str().unwrap_or_default().to_string();
            if !seen.insert(uid) {
                return;
            }
            let (ns, name) = (
                meta["namespace"].as_str().unwrap_or_default(),
                meta["name"].as_str().unwrap_or_default(),
            );
            let _ = tx.send(format!("/apis/batch/v1/namespaces/{ns}/jobs/{name}/status"));
        },
    )));
    handles
}

/// The sync-jobs scenario.
pub async fn run(ctx: &Arc<Ctx>) -> Report {
    let mut report = Report::new(SCENARIO);
    let jobs = ctx.opts.jobs as usize;
    let spaces = ctx.opts.workspaces as usize;
    report.set("jobs_requested", jobs as u64);
    report.set("workspaces", spaces as u64);
    report.set("concurrency", ctx.opts.concurrency);
    let Some(host_kc) = ctx.opts.host_kubeconfig.clone() else {
        report.errors.add(
            "usage",
            "sync-jobs needs --host-kubeconfig (the cluster the syncer launches the Jobs on)",
        );
        return report;
    };
    let Some((prefix, cluster)) = ctx
        .endpoint
        .server
        .logical_cluster()
        .map(|(p, c)| (p.to_string(), c.to_string()))
    else {
        report.errors.add(
            "usage",
            "sync-jobs needs a kubeconfig whose server URL ends in /clusters/<name>",
        );
        return report;
    };
    let host = match crate::kubeconfig::load(&host_kc, None)
        .and_then(|ep| Target::new(&ep, ctx.opts.request_timeout))
    {
        Ok(t) => Arc::new(t),
        Err(e) => {
            report
                .errors
                .add("host kubeconfig", &format!("{}: {e:#}", host_kc.display()));
            return report;
        }
    };

    // The tenants.
    let Some(wswatch) = ws::start_for(ctx, &mut report, SCENARIO).await else {
        return report;
    };
    let names: Arc<Vec<String>> = Arc::new(
        (0..spaces)
            .map(|i| format!("kb-{}-j{i}", ctx.run))
            .collect(),
    );
    crate::runner::note(&format!("sync-jobs: creating {spaces} workspaces"));
    let errors = ws::create_all(ctx, &wswatch, names.clone(), SCENARIO).await;
    let setup_failed = !errors.is_empty();
    add_errors(&mut report, errors, "setup ");

    let (stop_tx, stop) = watch::channel(false);
    let pending = Arc::new(Mutex::new(Pending::default()));
    let mut handles = Vec::new();
    if !setup_failed {
        handles = host_controller(host, stop.clone());
        let p = pending.clone();
        handles.push(tokio::spawn(watch_events(
            ctx.target.clone(),
            format!("{prefix}/clusters/{cluster}:*{JOBS}"),
            stop.clone(),
            move |kind, obj| {
                if kind == "DELETED" || !is_complete(obj) {
                    return;
                }
                let meta = &obj["metadata"];
                let key = format!(
                    "{}/{}",
                    meta["annotations"][CLUSTER_ANNOTATION]
                        .as_str()
                        .unwrap_or_default(),
                    meta["name"].as_str().unwrap_or_default()
                );
                let mut p = lock(&p);
                if let Some(t) = p.started.remove(&key) {
                    let now = Instant::now();
                    p.samples.record(now - t);
                    p.done += 1;
                    p.last = Some(now);
                }
            },
        )));
        // Let both watches start before the first Job.
        tokio::time::sleep(Duration::from_millis(500)).await;

        crate::runner::note(&format!("sync-jobs: creating {jobs} jobs"));
        let started = Instant::now();
        let next = Arc::new(AtomicUsize::new(0));
        let mut creators = Vec::new();
        for _ in 0..(ctx.opts.concurrency as usize).min(jobs.max(1)) {
            let (ctx, names, next, pending) =
                (ctx.clone(), names.clone(), next.clone(), pending.clone());
            let (prefix, cluster) = (prefix.clone(), cluster.clone());
            creators.push(tokio::spawn(async move {
                let mut errors = ErrorCounts::default();
                let mut conn = ctx.conn();
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= jobs {
                        break;
                    }
                    let ws_name = &names[i % names.len()];
                    let tenant = format!("{cluster}:{ws_name}");
                    let name = ctx.name("job", i as u64);
                    let key = format!("{tenant}/{name}");
                    lock(&pending).started.insert(key.clone(), Instant::now());
                    let path =
                        format!("{prefix}/clusters/{tenant}/apis/batch/v1/namespaces/default/jobs");
                    if let Err(f) = conn
                        .call_ok(Method::POST, &path, Some(job_body(&ctx, &name)))
                        .await
                    {
                        lock(&pending).started.remove(&key);
                        errors.add(&f.key(), &format!("creating job {key}: {f}"));
                    }
                }
                errors
            }));
        }
        let errors = join_errors(creators).await;
        add_errors(&mut report, errors, "");
        report.set("create_seconds", started.elapsed().as_secs_f64());
        // Wait for the round trips (bounded by --duration from the first create).
        let deadline = started + ctx.opts.duration;
        loop {
            let left = lock(&pending).started.len();
            if left == 0 || Instant::now() >= deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let mut p = lock(&pending);
        report.ops = p.done as u64;
        report.seconds = p
            .last
            .map_or(0.0, |l| l.duration_since(started).as_secs_f64());
        report.latency = std::mem::take(&mut p.samples).summary();
        let left = p.started.len() as u64;
        if left > 0 {
            let example = p.started.keys().next().cloned().unwrap_or_default();
            report.errors.add_n(
                "not_complete",
                left,
                &format!("not Complete in the tenant within --duration, e.g. {example}"),
            );
        }
        report.set("complete", left == 0 && report.ops == jobs as u64);
    }
    let _ = stop_tx.send(true);
    let errors = join_errors(handles).await;
    add_errors(&mut report, errors, "");

    if !ctx.opts.keep {
        let started = Instant::now();
        let errors = ws::delete_all(ctx, &wswatch, names).await.errors;
        add_errors(&mut report, errors, "cleanup ");
        let ms = started.elapsed().as_millis() as u64;
        ctx.last_cleanup_ms.store(ms.max(1), Ordering::Relaxed);
    }
    let errors = wswatch.stop().await;
    add_errors(&mut report, errors, "");
    report
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_are_rfc3339_seconds() {
        let t = now_rfc3339();
        assert_eq!(t.len(), 20, "{t}");
        assert!(t.ends_with('Z'), "{t}");
    }

    #[test]
    fn completion_is_the_complete_condition() {
        assert!(is_complete(
            &json!({"status": {"conditions": [{"type": "Complete", "status": "True"}]}})
        ));
        assert!(!is_complete(
            &json!({"status": {"conditions": [{"type": "Complete", "status": "False"}]}})
        ));
        assert!(!is_complete(&json!({"status": {}})));
        let s: Value = serde_json::from_slice(&complete_status()).unwrap();
        assert!(is_complete(&s));
    }
}
