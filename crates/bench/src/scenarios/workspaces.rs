//! `workspaces`: creates `--workspaces` Workspaces in the kubeconfig's logical cluster with
//! `--concurrency` clients; one operation = create + wait until `.status.phase == Ready`
//! (seen on one watch of the Workspaces). Reports creations-to-Ready per second, their
//! latency and, with `--server-pid`, the server's resident memory before and after, as
//! bytes per Workspace. The Workspaces are deleted at the end unless `--keep` (the time
//! until all are gone is `cleanup_s`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use serde_json::json;

use super::ws::{self, WsWatch};
use super::{add_errors, fill, progress, rss_kib};
use crate::client::{Conn, Failure};
use crate::ctx::Ctx;
use crate::report::Report;
use crate::runner::{drive, Limits, Worker};
use crate::stats::ErrorCounts;

const SCENARIO: &str = "workspaces";

/// The next Workspace number of this process: a scenario repeated in one run (to measure
/// memory at growing sizes) creates new Workspaces.
static NEXT: AtomicU64 = AtomicU64::new(0);

struct CreateWorker {
    ctx: Arc<Ctx>,
    conn: Conn,
    watch: Arc<WsWatch>,
    created: Arc<Mutex<Vec<String>>>,
    missed: ErrorCounts,
}

impl Worker for CreateWorker {
    async fn op(&mut self, _measuring: bool) -> Result<(), Failure> {
        let name = self.ctx.name("w", NEXT.fetch_add(1, Ordering::Relaxed));
        let r = ws::create_ready(
            &self.ctx,
            &mut self.conn,
            &self.watch,
            &name,
            SCENARIO,
            &mut self.missed,
        )
        .await;
        if !matches!(r, Err(Failure::Status(..))) {
            // Created (Ready or not): deleted at the end.
            if let Ok(mut v) = self.created.lock() {
                v.push(name);
            }
        }
        r
    }
}

/// The workspaces scenario.
pub async fn run(ctx: &Arc<Ctx>) -> Report {
    let mut report = Report::new(SCENARIO);
    let n = u64::from(ctx.opts.workspaces);
    report.set("workspaces_requested", n);
    report.set("concurrency", ctx.opts.concurrency);
    let Some(watch) = super::ws::start_for(ctx, &mut report, "workspaces").await else {
        return report;
    };
    let rss_before = rss_kib(ctx.opts.server_pid);
    crate::runner::note(&format!("workspaces: creating {n} workspaces"));
    let created = Arc::new(Mutex::new(Vec::new()));
    let workers = (0..ctx.opts.concurrency)
        .map(|_| CreateWorker {
            ctx: ctx.clone(),
            conn: ctx.conn(),
            watch: watch.clone(),
            created: created.clone(),
            missed: ErrorCounts::default(),
        })
        .collect();
    // One operation per Workspace: no warm-up, the count is the number of Workspaces.
    let lim = Limits {
        warmup: std::time::Duration::ZERO,
        duration: ctx.opts.duration,
        count: Some(n),
    };
    let phase = drive(SCENARIO, progress(ctx), workers, lim).await;
    for w in fill(&mut report, phase) {
        report.errors.merge(w.missed);
    }
    let names: Vec<String> = created.lock().map(|v| v.clone()).unwrap_or_default();
    report.set("workspaces_ready", report.ops);
    report.set("complete", report.ops == n);
    report.set(
        "creations_to_ready_per_second",
        (report.ops as f64 / report.seconds.max(1e-6)).round(),
    );
    if let (Some(b), Some(a)) = (rss_before, rss_kib(ctx.opts.server_pid)) {
        report.set(
            "server_rss_mib",
            json!({"workspaces_ready": (a as f64 / 102.4).round() / 10.0}),
        );
        if report.ops > 0 {
            let per = (a as f64 - b as f64) * 1024.0 / report.ops as f64;
            report.set("server_rss_bytes_per_workspace", per.round());
        }
    }
    let (bad, example) = watch.ready_after_delete();
    if bad > 0 {
        report
            .errors
            .add_n("deleted_workspace_ready", bad, &example.unwrap_or_default());
    }

    if !ctx.opts.keep && !names.is_empty() {
        let started = Instant::now();
        let errors = ws::delete_all(ctx, &watch, Arc::new(names)).await.errors;
        add_errors(&mut report, errors, "cleanup ");
        let ms = started.elapsed().as_millis() as u64;
        ctx.last_cleanup_ms.store(ms.max(1), Ordering::Relaxed);
    }
    report.set("watch_events", watch.events());
    let errors = watch.stop().await;
    add_errors(&mut report, errors, "");
    report
}
