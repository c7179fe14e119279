//! Fairness between tenants (logical clusters), for kplane's per-cluster fair queuing
//! (docs/security.md, "Fair queuing"). Both scenarios create their tenants as Workspaces
//! below the kubeconfig's cluster and delete them at the end.
//!
//! - `noisy-neighbor`: a quiet tenant's GETs (`--quiet-concurrency` clients) alone for
//!   `--duration`, then again while a noisy tenant's `--concurrency` clients alternate
//!   creates and full LISTs of a namespace of `--list-size` ConfigMaps as fast as they can.
//!   Reports the quiet tenant's throughput and latency in both phases and their ratios
//!   (`quiet_p99_ratio`, `quiet_throughput_ratio`), and what the noisy tenant got done
//!   (its refusals are counted as errors, by status). The quiet tenant's clients run on a
//!   thread and runtime of their own in both phases, as another tenant's clients run in
//!   another process: their latency is the server's, not time queued in this process
//!   behind the noisy tenant's 1 MB responses.
//! - `tenant-share`: `--workspaces` tenants, one client each, GET as fast as they can for
//!   `--duration`; reports each tenant's throughput spread and Jain's fairness index
//!   (`jain_index`: 1 when all get the same, 1/n when one gets everything).
//!
//! Run them with the credentials of an ordinary user (one not in `system:masters`, whom
//! fair queuing exempts), e.g. a `--token-auth-file` user bound to cluster-admin.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use hyper::Method;

use super::ws::{self, WsWatch};
use super::{add_errors, limits, progress};
use crate::client::{Conn, Failure};
use crate::ctx::{Ctx, Scope};
use crate::report::{Report, Row};
use crate::runner::{drive, drive_apart, Phase, Worker};
use crate::setup::bulk_create;

const NOISY: &str = "noisy-neighbor";
const SHARE: &str = "tenant-share";
/// The namespace (bootstrapped in every Workspace) the ConfigMaps go to.
const NAMESPACE: &str = "default";

/// GETs one ConfigMap.
struct Get {
    conn: Conn,
    path: String,
}

impl Worker for Get {
    async fn op(&mut self, _measuring: bool) -> Result<(), Failure> {
        self.conn
            .call_ok(Method::GET, &self.path, None)
            .await
            .map(drop)
    }
}

/// Alternates creating a ConfigMap and listing the whole namespace.
struct Noisy {
    ctx: Arc<Ctx>,
    conn: Conn,
    scope: Scope,
    client: u64,
    n: u64,
    creates: Arc<AtomicU64>,
    lists: Arc<AtomicU64>,
}

impl Worker for Noisy {
    async fn op(&mut self, _measuring: bool) -> Result<(), Failure> {
        self.n += 1;
        if self.n.is_multiple_of(2) {
            self.conn
                .call_discard(Method::GET, &self.scope.configmaps())
                .await?
                .ok()?;
            self.lists.fetch_add(1, Ordering::Relaxed);
        } else {
            let name = self.ctx.name(&format!("n{}", self.client), self.n);
            let body = self.ctx.configmap_body(&self.scope, &name, NOISY);
            self.conn
                .call_ok(Method::POST, &self.scope.configmaps(), Some(body))
                .await?;
            self.creates.fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }
}

fn row<W>(label: &str, phase: &Phase<W>) -> Row {
    Row {
        label: label.into(),
        ops: phase.ops,
        seconds: phase.seconds,
        latency: phase.samples.clone().summary(),
        errors: phase.errors.short(),
    }
}

fn round2(v: f64) -> f64 {
    (v * 100.0).round() / 100.0
}

/// Creates Workspaces `names` and one ConfigMap (named `ctx.name("t", 0)`) in each; `None`
/// (with the errors in `report`) when that failed.
async fn tenants(
    ctx: &Arc<Ctx>,
    report: &mut Report,
    watch: &Arc<WsWatch>,
    names: &Arc<Vec<String>>,
    scenario: &'static str,
) -> Option<Vec<Scope>> {
    let started = Instant::now();
    let mut errors = ws::create_all(ctx, watch, names.clone(), scenario).await;
    let scopes: Vec<Scope> = names
        .iter()
        .filter_map(|n| ws::child_scope(ctx, n, NAMESPACE))
        .collect();
    let items = scopes
        .iter()
        .map(|s| (s.clone(), ctx.name("t", 0)))
        .collect::<Vec<_>>();
    errors.merge(bulk_create(ctx, Arc::new(items), scenario).await);
    report.set("setup_s", round2(started.elapsed().as_secs_f64()));
    let ok = errors.is_empty() && scopes.len() == names.len();
    add_errors(report, errors, "setup ");
    ok.then_some(scopes)
}

/// Deletes the tenants (unless `--keep`).
async fn cleanup(
    ctx: &Arc<Ctx>,
    report: &mut Report,
    watch: Arc<WsWatch>,
    names: Arc<Vec<String>>,
) {
    if !ctx.opts.keep {
        let started = Instant::now();
        let errors = ws::delete_all(ctx, &watch, names).await.errors;
        add_errors(report, errors, "cleanup ");
        let ms = started.elapsed().as_millis() as u64;
        ctx.last_cleanup_ms.store(ms.max(1), Ordering::Relaxed);
    }
    let errors = watch.stop().await;
    add_errors(report, errors, "");
}

/// The noisy-neighbor scenario.
pub async fn noisy_neighbor(ctx: &Arc<Ctx>) -> Report {
    let mut report = Report::new(NOISY);
    report.set("noisy_concurrency", ctx.opts.concurrency);
    report.set("quiet_concurrency", ctx.opts.quiet_concurrency);
    report.set("list_size", ctx.opts.list_size);
    let Some(watch) = ws::start_for(ctx, &mut report, NOISY).await else {
        return report;
    };
    let names = Arc::new(vec![ctx.name("noisy", 0), ctx.name("quiet", 0)]);
    if let Some(scopes) = tenants(ctx, &mut report, &watch, &names, NOISY).await {
        let (noisy, quiet) = (scopes[0].clone(), scopes[1].clone());
        crate::runner::note(&format!(
            "noisy-neighbor: {} ConfigMaps for the noisy tenant to list",
            ctx.opts.list_size
        ));
        let items = (0..u64::from(ctx.opts.list_size))
            .map(|i| (noisy.clone(), ctx.name("l", i)))
            .collect::<Vec<_>>();
        let errors = bulk_create(ctx, Arc::new(items), NOISY).await;
        let failed = !errors.is_empty();
        add_errors(&mut report, errors, "setup ");
        if !failed {
            measure_noisy(ctx, &mut report, &noisy, &quiet).await;
        }
    }
    cleanup(ctx, &mut report, watch, names).await;
    report
}

async fn measure_noisy(ctx: &Arc<Ctx>, report: &mut Report, noisy: &Scope, quiet: &Scope) {
    let path = quiet.configmap(&ctx.name("t", 0));
    let quiet_workers = || {
        (0..ctx.opts.quiet_concurrency as usize)
            .map(|i| Get {
                conn: ctx.conn_at(i),
                path: path.clone(),
            })
            .collect::<Vec<_>>()
    };
    let idle = drive_apart(
        "quiet get (idle)",
        progress(ctx),
        quiet_workers(),
        limits(ctx),
    )
    .await;

    let (creates, lists) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let noisy_workers = (0..ctx.opts.concurrency as usize)
        .map(|i| Noisy {
            ctx: ctx.clone(),
            conn: ctx.conn_at(i),
            scope: noisy.clone(),
            client: i as u64,
            n: 0,
            creates: creates.clone(),
            lists: lists.clone(),
        })
        .collect::<Vec<_>>();
    // The noisy tenant starts first and runs a little longer than the quiet phase.
    let mut noisy_limits = limits(ctx);
    noisy_limits.warmup += std::time::Duration::from_secs(1);
    noisy_limits.duration += std::time::Duration::from_secs(1);
    let storm = tokio::spawn(drive("noisy tenant", false, noisy_workers, noisy_limits));
    tokio::time::sleep(std::time::Duration::from_secs(1)).await;
    let during = drive_apart(
        "quiet get (noisy)",
        progress(ctx),
        quiet_workers(),
        limits(ctx),
    )
    .await;
    let storm = storm.await;

    let (idle_row, during_row) = (
        row("quiet get idle", &idle),
        row("quiet get noisy", &during),
    );
    if let (Some(i), Some(d)) = (idle_row.latency.p99, during_row.latency.p99) {
        report.set("quiet_p99_ratio", round2(d / i.max(1e-6)));
    }
    let rate = |r: &Row| r.ops as f64 / r.seconds.max(1e-6);
    report.set(
        "quiet_throughput_ratio",
        round2(rate(&during_row) / rate(&idle_row).max(1e-6)),
    );
    report.ops = during.ops;
    report.seconds = during.seconds;
    report.latency = during.samples.summary();
    report.set("quiet_idle", idle_row.to_json());
    report.set("quiet_noisy", during_row.to_json());
    add_errors(report, idle.errors, "quiet idle ");
    add_errors(report, during.errors, "quiet noisy ");
    report.rows.push(idle_row);
    report.rows.push(during_row);
    match storm {
        Ok(phase) => {
            let r = row("noisy create+list", &phase);
            report.set("noisy_creates", creates.load(Ordering::Relaxed));
            report.set("noisy_lists", lists.load(Ordering::Relaxed));
            report.set("noisy_refused", phase.errors.total());
            // The noisy tenant's refusals are the point; they are reported, not failures.
            report.set("noisy_errors", phase.errors.short());
            report.set("noisy", r.to_json());
            report.rows.push(r);
        }
        Err(e) => report.errors.add("panic", &e.to_string()),
    }
}

/// The tenant-share scenario.
pub async fn tenant_share(ctx: &Arc<Ctx>) -> Report {
    let mut report = Report::new(SHARE);
    let n = ctx.opts.workspaces as usize;
    report.set("tenants", n);
    let Some(watch) = ws::start_for(ctx, &mut report, SHARE).await else {
        return report;
    };
    let names: Arc<Vec<String>> = Arc::new((0..n as u64).map(|i| ctx.name("s", i)).collect());
    crate::runner::note(&format!("tenant-share: creating {n} tenants"));
    if let Some(scopes) = tenants(ctx, &mut report, &watch, &names, SHARE).await {
        let workers = scopes
            .iter()
            .enumerate()
            .map(|(i, s)| Get {
                conn: ctx.conn_at(i),
                path: s.configmap(&ctx.name("t", 0)),
            })
            .collect::<Vec<_>>();
        let phase = drive("tenant gets", progress(ctx), workers, limits(ctx)).await;
        let per_tenant: Vec<f64> = phase.per_worker_ops.iter().map(|o| *o as f64).collect();
        report.set("jain_index", round2(jain(&per_tenant) * 100.0) / 100.0);
        let mut sorted = per_tenant.clone();
        sorted.sort_by(|a, b| a.total_cmp(b));
        let secs = phase.seconds.max(1e-6);
        if let (Some(min), Some(max)) = (sorted.first(), sorted.last()) {
            report.set(
                "per_tenant_ops_per_s",
                serde_json::json!({
                    "min": round2(min / secs),
                    "median": round2(sorted[sorted.len() / 2] / secs),
                    "max": round2(max / secs),
                }),
            );
        }
        report.ops = phase.ops;
        report.seconds = phase.seconds;
        report.latency = phase.samples.summary();
        report.errors.merge(phase.errors);
    }
    cleanup(ctx, &mut report, watch, names).await;
    report
}

/// Jain's fairness index of `xs`: (Σx)² / (n·Σx²).
fn jain(xs: &[f64]) -> f64 {
    let sum: f64 = xs.iter().sum();
    let squares: f64 = xs.iter().map(|x| x * x).sum();
    if xs.is_empty() || squares == 0.0 {
        return 0.0;
    }
    sum * sum / (xs.len() as f64 * squares)
}

#[cfg(test)]
mod tests {
    use super::jain;

    #[test]
    fn jain_index_is_one_for_equal_shares_and_one_over_n_for_one_taker() {
        assert!((jain(&[5.0, 5.0, 5.0, 5.0]) - 1.0).abs() < 1e-9);
        assert!((jain(&[8.0, 0.0, 0.0, 0.0]) - 0.25).abs() < 1e-9);
        assert!((jain(&[1.0, 2.0]) - 0.9).abs() < 1e-9);
        assert_eq!(jain(&[]), 0.0);
    }
}
