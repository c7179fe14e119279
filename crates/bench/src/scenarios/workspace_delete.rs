//! `workspace-delete`: deletion of `--workspaces` Workspaces, each holding
//! `--objects-per-cluster` ConfigMaps, while another tenant is served.
//!
//! Setup: a tenant Workspace with one ConfigMap, then the Workspaces to delete (each Ready)
//! and their ConfigMaps (in the child's `default` namespace). Measured: first the tenant's
//! GET latency alone for `--duration` (one client), then, while that GET loop keeps
//! running, every Workspace is deleted with `--concurrency` clients; the phase ends when the
//! watch has seen every Workspace gone. Reports the total time (`seconds`), each
//! Workspace's time from its DELETE until gone (latency), the tenant's GET p99 idle and
//! during the deletion and their ratio, and checks afterwards that every deleted cluster
//! holds no ConfigMap (404 or an empty list) and that no watch event reported a Workspace
//! Ready after it was marked for deletion (`deleted_workspace_ready` errors).

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::Method;
use serde::Deserialize;
use serde_json::json;

use super::ws::{self, WsWatch};
use super::{add_errors, progress};
use crate::client::{Conn, Failure};
use crate::ctx::{Ctx, Scope};
use crate::report::{Report, Row};
use crate::runner::{drive, Limits, Worker};
use crate::setup::{bulk_create, join_errors};
use crate::stats::{ErrorCounts, Samples};

const SCENARIO: &str = "workspace-delete";
/// The namespace (bootstrapped in every Workspace) the ConfigMaps go to.
const NAMESPACE: &str = "default";

struct TenantGet {
    conn: Conn,
    path: String,
}

impl Worker for TenantGet {
    async fn op(&mut self, _measuring: bool) -> Result<(), Failure> {
        self.conn
            .call_ok(Method::GET, &self.path, None)
            .await
            .map(drop)
    }
}

#[derive(Deserialize)]
struct CountOnly {
    #[serde(default)]
    items: Vec<serde::de::IgnoredAny>,
}

/// The workspace-delete scenario.
pub async fn run(ctx: &Arc<Ctx>) -> Report {
    let mut report = Report::new(SCENARIO);
    let n = ctx.opts.workspaces as usize;
    let m = ctx.opts.objects_per_cluster;
    report.set("workspaces", n);
    report.set("objects_per_workspace", m);
    report.set("concurrency", ctx.opts.concurrency);
    let Some(watch) = super::ws::start_for(ctx, &mut report, "workspace-delete").await else {
        return report;
    };
    let tenant = ctx.name("tenant", 0);
    let names: Arc<Vec<String>> = Arc::new((0..n as u64).map(|i| ctx.name("d", i)).collect());

    // Setup: the tenant, the Workspaces and their ConfigMaps.
    crate::runner::note(&format!(
        "workspace-delete: creating {n} workspaces with {m} ConfigMaps each"
    ));
    let setup_started = Instant::now();
    let all = Arc::new(
        std::iter::once(tenant.clone())
            .chain(names.iter().cloned())
            .collect::<Vec<_>>(),
    );
    let mut setup_errors = ws::create_all(ctx, &watch, all, SCENARIO).await;
    let scope = |name: &str| ws::child_scope(ctx, name, NAMESPACE);
    let mut items = Vec::with_capacity(n * m as usize + 1);
    if let Some(s) = scope(&tenant) {
        items.push((s, ctx.name("t", 0)));
    }
    for name in names.iter() {
        if let Some(s) = scope(name) {
            items.extend((0..u64::from(m)).map(|j| (s.clone(), ctx.name("k", j))));
        }
    }
    setup_errors.merge(bulk_create(ctx, Arc::new(items), SCENARIO).await);
    report.set(
        "setup_s",
        (setup_started.elapsed().as_secs_f64() * 100.0).round() / 100.0,
    );
    let setup_failed = !setup_errors.is_empty();
    add_errors(&mut report, setup_errors, "setup ");
    let Some(tenant_scope) = scope(&tenant) else {
        return report;
    };
    let get_path = tenant_scope.configmap(&ctx.name("t", 0));

    if !setup_failed {
        measure(ctx, &mut report, &watch, &names, &get_path).await;
    }

    // Cleanup: the tenant (and whatever a failed run left).
    if !ctx.opts.keep {
        let started = Instant::now();
        let mut left = vec![tenant];
        if setup_failed {
            left.extend(names.iter().cloned());
        }
        let errors = ws::delete_all(ctx, &watch, Arc::new(left)).await.errors;
        add_errors(&mut report, errors, "cleanup ");
        let ms = started.elapsed().as_millis() as u64;
        ctx.last_cleanup_ms.store(ms.max(1), Ordering::Relaxed);
    }
    let errors = watch.stop().await;
    add_errors(&mut report, errors, "");
    report
}

/// The idle and the deletion phases.
async fn measure(
    ctx: &Arc<Ctx>,
    report: &mut Report,
    watch: &Arc<WsWatch>,
    names: &Arc<Vec<String>>,
    get_path: &str,
) {
    // The tenant alone.
    let idle = drive(
        "tenant get (idle)",
        progress(ctx),
        vec![TenantGet {
            conn: ctx.conn(),
            path: get_path.to_string(),
        }],
        Limits {
            warmup: Duration::ZERO,
            duration: ctx.opts.duration,
            count: None,
        },
    )
    .await;
    let idle_row = Row {
        label: "tenant get idle".into(),
        ops: idle.ops,
        seconds: idle.seconds,
        latency: idle.samples.summary(),
        errors: idle.errors.short(),
    };
    add_errors(report, idle.errors, "tenant idle ");

    // The tenant while every Workspace is deleted.
    crate::runner::note(&format!(
        "workspace-delete: deleting {} workspaces",
        names.len()
    ));
    let stop = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let tenant_loop = {
        let (stop, mut conn, path) = (stop.clone(), ctx.conn(), get_path.to_string());
        let deadline = Instant::now() + ctx.opts.setup_timeout;
        tokio::spawn(async move {
            let mut samples = Vec::new();
            let mut errors = ErrorCounts::default();
            let started = Instant::now();
            while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                let t0 = Instant::now();
                match conn.call_ok(Method::GET, &path, None).await {
                    Ok(_) => samples.push((t0, t0.elapsed())),
                    Err(f) => errors.add(&f.key(), &f.message()),
                }
            }
            (samples, errors, started.elapsed().as_secs_f64())
        })
    };
    let deleted = ws::delete_all(ctx, watch, names.clone()).await;
    let (seconds, per_workspace, errors) = (deleted.seconds, deleted.per_workspace, deleted.errors);
    stop.store(true, Ordering::Relaxed);
    let (during_samples, during_errors, during_secs) = match tenant_loop.await {
        Ok(r) => r,
        Err(e) => {
            let mut errors = ErrorCounts::default();
            errors.add("panic", &e.to_string());
            (Vec::new(), errors, 0.0)
        }
    };
    // The tenant's GETs while the DELETE requests were served, and afterwards (the
    // server's background deletion alone).
    let (mut in_requests, mut in_background) = (Samples::default(), Samples::default());
    let mut during_all = Samples::default();
    for (t0, d) in during_samples {
        during_all.record(d);
        if t0 < deleted.requests_done {
            in_requests.record(d);
        } else {
            in_background.record(d);
        }
    }
    let during_samples = during_all;
    report.set(
        "delete_requests_s",
        (deleted
            .requests_done
            .saturating_duration_since(started)
            .as_secs_f64()
            * 1000.0)
            .round()
            / 1000.0,
    );
    report.set(
        "tenant_get_during_requests_latency_ms",
        in_requests.summary().to_json(),
    );
    report.set(
        "tenant_get_during_background_latency_ms",
        in_background.summary().to_json(),
    );
    report.ops = per_workspace.len() as u64;
    report.seconds = seconds.max(1e-6);
    report.latency = per_workspace.summary();
    report.errors.merge(errors);
    report.set("complete", report.ops == names.len() as u64);
    report.set(
        "deletions_per_second",
        (report.ops as f64 / report.seconds).round(),
    );
    let during_row = Row {
        label: "tenant get deleting".into(),
        ops: during_samples.len() as u64,
        seconds: during_secs.max(1e-6),
        latency: during_samples.summary(),
        errors: during_errors.short(),
    };
    add_errors(report, during_errors, "tenant during ");
    let (idle_p99, during_p99) = (idle_row.latency.p99, during_row.latency.p99);
    report.set("tenant_get_idle_latency_ms", idle_row.latency.to_json());
    report.set("tenant_get_during_latency_ms", during_row.latency.to_json());
    if let (Some(i), Some(d)) = (idle_p99, during_p99) {
        report.set(
            "tenant_p99_ratio",
            (d / i.max(1e-6) * 100.0).round() / 100.0,
        );
    }
    report.rows.push(idle_row);
    report.rows.push(during_row);

    let (bad, example) = watch.ready_after_delete();
    report.set("deleted_workspaces_reported_ready", bad);
    if bad > 0 {
        report
            .errors
            .add_n("deleted_workspace_ready", bad, &example.unwrap_or_default());
    }
    let not_empty = clusters_not_empty(ctx, names).await;
    report.set("clusters_not_empty", not_empty.total());
    add_errors(report, not_empty, "");
    report.set("watch_events", json!(watch.events()));
}

/// Checks with `--concurrency` clients that the cluster of every deleted Workspace holds no
/// ConfigMap (404: the cluster does not exist, or an empty list).
async fn clusters_not_empty(ctx: &Arc<Ctx>, names: &Arc<Vec<String>>) -> ErrorCounts {
    let next = Arc::new(AtomicUsize::new(0));
    let mut handles = Vec::new();
    for _ in 0..(ctx.opts.concurrency as usize).min(names.len()) {
        let (ctx, names, next) = (ctx.clone(), names.clone(), next.clone());
        handles.push(tokio::spawn(async move {
            let mut errors = ErrorCounts::default();
            let mut conn = ctx.conn();
            while let Some(name) = names.get(next.fetch_add(1, Ordering::Relaxed)) {
                let Some(prefix) = ctx.endpoint.server.child_cluster_path(name) else {
                    break;
                };
                let all = Scope {
                    prefix,
                    namespace: String::new(),
                };
                let path = format!("{}/api/v1/configmaps?limit=1", all.prefix);
                match conn.call(Method::GET, &path, None).await {
                    Ok(r) if r.status == 404 => {}
                    Ok(r) if r.status == 200 => {
                        match serde_json::from_slice::<CountOnly>(&r.body) {
                            Ok(l) if l.items.is_empty() => {}
                            Ok(_) => errors.add(
                                "cluster_not_empty",
                                &format!(
                                    "the cluster of deleted workspace {name} holds ConfigMaps"
                                ),
                            ),
                            Err(e) => errors.add("protocol", &format!("listing {path}: {e}")),
                        }
                    }
                    Ok(r) => {
                        let f = crate::client::status_failure(r.status, &r.body);
                        errors.add(&f.key(), &format!("listing {path}: {f}"));
                    }
                    Err(f) => errors.add(&f.key(), &format!("listing {path}: {f}")),
                }
            }
            errors
        }));
    }
    join_errors(handles).await
}
