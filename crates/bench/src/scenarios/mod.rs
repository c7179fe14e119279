//! The scenarios and what they share: running the one selected (the names are
//! [`crate::cli::Scenario`]), limits, turning a measured phase into a report, and the optional
//! server memory readings (`--server-pid`).

mod churn;
mod clusters;
mod crud;
mod fairness;
mod list;
mod mixed;
mod watch;
mod wildcard_watch;
mod workspace_delete;
mod workspaces;
pub mod ws;

use std::sync::Arc;

use serde_json::json;

use crate::cli::Scenario;
use crate::ctx::Ctx;
use crate::report::Report;
use crate::runner::{Limits, Phase};
use crate::stats::ErrorCounts;

/// Runs one scenario, including its setup and cleanup, and reports it.
pub async fn run(ctx: Arc<Ctx>, s: Scenario) -> Report {
    crate::runner::note(&format!("running {} (run id {})", s.name(), ctx.run));
    let before = rss_mib(ctx.opts.server_pid);
    let data_dir = crate::settle::data_dir(&ctx);
    let disk_before = data_dir.as_deref().and_then(crate::settle::disk_mib);
    ctx.last_cleanup_ms
        .store(0, std::sync::atomic::Ordering::Relaxed);
    let mut report = match s {
        Scenario::Create => crud::create(&ctx).await,
        Scenario::Get => crud::get(&ctx).await,
        Scenario::Update => crud::update(&ctx).await,
        Scenario::List => list::run(&ctx).await,
        Scenario::Watch => watch::run(&ctx).await,
        Scenario::Mixed => mixed::run(&ctx).await,
        Scenario::Clusters => clusters::run(&ctx).await,
        Scenario::Churn => churn::run(&ctx).await,
        Scenario::Workspaces => workspaces::run(&ctx).await,
        Scenario::WorkspaceDelete => workspace_delete::run(&ctx).await,
        Scenario::WildcardWatch => wildcard_watch::run(&ctx).await,
        Scenario::NoisyNeighbor => fairness::noisy_neighbor(&ctx).await,
        Scenario::TenantShare => fairness::tenant_share(&ctx).await,
    };
    if let Some(b) = before {
        let mut m = report
            .extra
            .get("server_rss_mib")
            .cloned()
            .unwrap_or_else(|| json!({}));
        m["before"] = json!(b);
        if let Some(a) = rss_mib(ctx.opts.server_pid) {
            m["after"] = json!(a);
        }
        report.set("server_rss_mib", m);
    }
    if let Some(b) = disk_before {
        let after = data_dir.as_deref().and_then(crate::settle::disk_mib);
        report.set("server_disk_mib", json!({"before": b, "after": after}));
    }
    let cleanup_ms = ctx
        .last_cleanup_ms
        .load(std::sync::atomic::Ordering::Relaxed);
    if cleanup_ms > 0 {
        report.set("cleanup_s", cleanup_ms as f64 / 1000.0);
    }
    report
}

/// The measurement limits from the options.
fn limits(ctx: &Ctx) -> Limits {
    Limits {
        warmup: ctx.opts.warmup,
        duration: ctx.opts.duration,
        count: ctx.opts.count,
    }
}

fn progress(ctx: &Ctx) -> bool {
    !ctx.opts.no_progress
}

/// Copies a phase's ops, time, latency and errors into `report`; returns the workers.
fn fill<W>(report: &mut Report, phase: Phase<W>) -> Vec<W> {
    report.ops = phase.ops;
    report.seconds = phase.seconds;
    report.latency = phase.samples.summary();
    report.errors.merge(phase.errors);
    phase.workers
}

/// Adds setup or cleanup failures to the report with a prefix, so they are never lost.
fn add_errors(report: &mut Report, errors: ErrorCounts, prefix: &str) {
    report.errors.merge_prefixed(errors, prefix);
}

/// Resident memory of `pid` in KiB, from `/proc/<pid>/status` (Linux only).
pub fn rss_kib(pid: Option<u32>) -> Option<u64> {
    let text = std::fs::read_to_string(format!("/proc/{}/status", pid?)).ok()?;
    let line = text.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// Resident memory of `pid` in MiB, from `/proc/<pid>/status` (Linux only).
pub fn rss_mib(pid: Option<u32>) -> Option<f64> {
    let kib = rss_kib(pid)? as f64;
    Some((kib / 1024.0 * 10.0).round() / 10.0)
}
