//! `kplane-bench`: load and scale benchmark for Kubernetes API servers.
//!
//! ```text
//! kplane-bench --kubeconfig FILE --scenario create --concurrency 64 --duration 10s [--size 1024] [--json]
//! ```
//!
//! `--replica-kubeconfig` adds servers that share the first one's store (kplane replicas on
//! one database): clients are spread over them, and watches listen on other servers than
//! the writers write through.
//!
//! Runs the chosen scenarios one after another against the kubeconfig's server using only
//! standard Kubernetes REST (so the same command measures kplane and kube-apiserver), prints a
//! table (or, with `--json`, a JSON array with one object per scenario) and exits with status 1
//! if anything failed (every non-2xx answer and transport error is counted and shown), 2 if
//! the run could not start. Everything is bounded in time; objects and namespaces the run
//! created are deleted at the end unless `--keep`.

mod cli;
mod client;
mod ctx;
mod fdlimit;
mod kubeconfig;
mod report;
mod runner;
mod scenarios;
mod settle;
mod setup;
mod stats;
mod tls;

use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use clap::Parser as _;

use crate::cli::Opts;
use crate::ctx::Ctx;
use crate::report::Report;

fn main() -> ExitCode {
    let opts = Opts::parse();
    fdlimit::raise();
    match start(opts) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("kplane-bench: error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn start(opts: Opts) -> anyhow::Result<ExitCode> {
    let endpoint = kubeconfig::load(&opts.kubeconfig, opts.context.as_deref())?;
    let replicas = opts
        .replica_kubeconfig
        .iter()
        .map(|p| kubeconfig::load(p, opts.context.as_deref()))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    let json = opts.json;
    let ctx = Arc::new(Ctx::new(opts, endpoint, &replicas)?);
    let (reports, cleanup) = runtime.block_on(run(ctx));
    // Watch connections may still be closing; do not wait for them.
    runtime.shutdown_background();

    if json {
        let arr: Vec<_> = reports.iter().map(Report::to_json).collect();
        println!("{}", serde_json::Value::Array(arr));
    } else {
        print!("{}", report::table(&reports));
    }
    let mut failed = reports.iter().any(|r| !r.errors.is_empty());
    for (k, n, msg) in cleanup.iter() {
        eprintln!("kplane-bench: cleanup failed [{k}] x{n}: {msg}");
        failed = true;
    }
    if failed {
        eprintln!("kplane-bench: the run had errors (see the errors column/field)");
        Ok(ExitCode::from(1))
    } else {
        Ok(ExitCode::SUCCESS)
    }
}

async fn run(ctx: Arc<Ctx>) -> (Vec<Report>, stats::ErrorCounts) {
    let mut reports = Vec::new();
    // `--cluster-spread`: each spread cluster is made through a Workspace first.
    let spread = if ctx.opts.cluster_spread > 1 {
        match scenarios::ws::SpreadWorkspaces::create(&ctx).await {
            Ok(s) => Some(s),
            Err(errors) => return (reports, errors),
        }
    } else {
        None
    };
    for s in ctx.opts.scenario.clone() {
        let r = scenarios::run(ctx.clone(), s).await;
        if !r.errors.is_empty() {
            runner::note(&format!(
                "{}: {} errors: {}",
                r.scenario,
                r.errors.total(),
                r.errors.short()
            ));
        }
        reports.push(r);
    }
    let started = std::time::Instant::now();
    let mut cleanup = setup::delete_namespaces(&ctx).await;
    cleanup.merge(settle_after_namespaces(&ctx).await);
    if let Some(s) = spread {
        cleanup.merge(s.delete(&ctx).await);
    }
    if let Some(last) = reports.last_mut() {
        last.set(
            "final_cleanup_s",
            (started.elapsed().as_secs_f64() * 100.0).round() / 100.0,
        );
        if let Some(mib) = settle::data_dir(&ctx).and_then(|d| settle::disk_mib(&d)) {
            last.set("server_disk_mib_final", mib);
        }
    }
    (reports, cleanup)
}

/// Waits until the namespaces this run deleted are gone and the server is idle.
async fn settle_after_namespaces(ctx: &Arc<Ctx>) -> stats::ErrorCounts {
    if ctx.opts.keep {
        return stats::ErrorCounts::default();
    }
    let deleted = ctx
        .deleted_namespaces
        .lock()
        .map(|v| v.clone())
        .unwrap_or_default();
    let deadline = std::time::Instant::now() + ctx.opts.setup_timeout;
    let mut conn = ctx.setup_conn();
    let errors = settle::namespaces_gone(&mut conn, &deleted, deadline).await;
    settle::server_idle(&mut conn, deadline).await;
    errors
}
