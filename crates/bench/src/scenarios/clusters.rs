//! `clusters`: creates `--clusters` logical clusters, each with the `--namespace` namespace
//! and `--objects-per-cluster` ConfigMaps (one operation = one whole cluster, its latency the
//! per-cluster cost), then lists the ConfigMaps of every created cluster once.
//!
//! Logical clusters are kcp-style: the kubeconfig's server URL must end in
//! `/clusters/<name>`; cluster `i` is `<name>:kb-<run>-<i>`, made by creating the Workspace
//! `kb-<run>-<i>` in `<name>` and waiting until it is Ready (part of the operation), then
//! written to. Servers without logical clusters get an `unsupported` error. The Workspaces
//! (and with them everything in their clusters) are deleted at the end unless `--keep`.
//!
//! With `--rbac-token`, every cluster also gets a RoleBinding of `--rbac-user` to `view` in
//! the namespace, that user lists the cluster's ConfigMaps once it is populated (a 403 is
//! an error), and the list phase runs as that user: every cluster's RBAC policy is then
//! compiled and held by the server, as issue 14's memory figure asks.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hyper::Method;
use serde_json::json;

use super::ws::{self, WsWatch};
use super::{add_errors, fill, progress, rss_mib};
use crate::client::{status_failure, Conn, Failure};
use crate::ctx::{Ctx, Scope};
use crate::report::{Report, Row};
use crate::runner::{drive, Limits, Worker};
use crate::stats::ErrorCounts;

struct PopulateWorker {
    ctx: Arc<Ctx>,
    conn: Conn,
    watch: Arc<WsWatch>,
    next: Arc<AtomicU64>,
    created: Arc<Mutex<Vec<Scope>>>,
    /// Workspaces created (deleted at the end).
    workspaces: Arc<Mutex<Vec<String>>>,
    missed: ErrorCounts,
    /// The `--rbac-token` user's connection.
    rbac: Option<Conn>,
}

impl PopulateWorker {
    async fn populate(&mut self, scope: &Scope) -> Result<(), Failure> {
        let body = format!(
            "{{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{{\"name\":\"{}\"}}}}",
            scope.namespace
        );
        let r = self
            .conn
            .call(Method::POST, &scope.namespaces(), Some(body.into()))
            .await?;
        match r.status {
            // The namespace goes with its Workspace.
            200..=299 | 409 => {}
            s => return Err(status_failure(s, &r.body)),
        }
        for j in 0..u64::from(self.ctx.opts.objects_per_cluster) {
            let name = self.ctx.name("k", j);
            let body = self.ctx.configmap_body(scope, &name, "clusters");
            self.conn
                .call_ok(Method::POST, &scope.configmaps(), Some(body))
                .await?;
        }
        if let Some(rbac) = self.rbac.as_mut() {
            let binding = json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
                "metadata": {"name": "kb-reader", "namespace": scope.namespace},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": self.ctx.opts.rbac_user}],
            });
            let path = format!(
                "{}/apis/rbac.authorization.k8s.io/v1/namespaces/{}/rolebindings",
                scope.prefix, scope.namespace
            );
            self.conn
                .call_ok(Method::POST, &path, Some(binding.to_string().into()))
                .await?;
            rbac.call_ok(Method::GET, &scope.configmaps(), None).await?;
        }
        Ok(())
    }
}

impl Worker for PopulateWorker {
    async fn op(&mut self, _measuring: bool) -> Result<(), Failure> {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        let child = format!("kb-{}-{i}", self.ctx.run);
        let prefix = self
            .ctx
            .endpoint
            .server
            .child_cluster_path(&child)
            .ok_or_else(|| Failure::Protocol("server URL names no logical cluster".into()))?;
        let scope = Scope {
            prefix,
            namespace: self.ctx.opts.namespace.clone(),
        };
        let r = ws::create_ready(
            &self.ctx,
            &mut self.conn,
            &self.watch,
            &child,
            "clusters",
            &mut self.missed,
        )
        .await;
        if !matches!(r, Err(Failure::Status(..))) {
            if let Ok(mut v) = self.workspaces.lock() {
                v.push(child);
            }
        }
        r?;
        self.populate(&scope).await?;
        if let Ok(mut v) = self.created.lock() {
            v.push(scope);
        }
        Ok(())
    }
}

struct ListWorker {
    conn: Conn,
    next: Arc<AtomicU64>,
    scopes: Arc<Vec<Scope>>,
}

impl Worker for ListWorker {
    async fn op(&mut self, _measuring: bool) -> Result<(), Failure> {
        let i = self.next.fetch_add(1, Ordering::Relaxed) as usize;
        let scope = &self.scopes[i % self.scopes.len().max(1)];
        self.conn
            .call_ok(Method::GET, &scope.configmaps(), None)
            .await
            .map(drop)
    }
}

/// The clusters scenario.
pub async fn run(ctx: &Arc<Ctx>) -> Report {
    let mut report = Report::new("clusters");
    let n = u64::from(ctx.opts.clusters);
    report.set("clusters_requested", n);
    report.set("objects_per_cluster", ctx.opts.objects_per_cluster);
    report.set("concurrency", ctx.opts.concurrency);
    report.set("size", ctx.opts.size);
    report.set("rbac_user", ctx.rbac_target.is_some());
    let Some(watch) = super::ws::start_for(ctx, &mut report, "clusters").await else {
        return report;
    };
    let rss_before = rss_mib(ctx.opts.server_pid);
    crate::runner::note(&format!(
        "clusters: creating {n} logical clusters with {} objects each",
        ctx.opts.objects_per_cluster
    ));
    let created = Arc::new(Mutex::new(Vec::new()));
    let workspaces = Arc::new(Mutex::new(Vec::new()));
    let next = Arc::new(AtomicU64::new(0));
    let workers = (0..ctx.opts.concurrency)
        .map(|_| PopulateWorker {
            ctx: ctx.clone(),
            conn: ctx.conn(),
            watch: watch.clone(),
            next: next.clone(),
            created: created.clone(),
            workspaces: workspaces.clone(),
            missed: ErrorCounts::default(),
            rbac: ctx.rbac_conn(),
        })
        .collect();
    // One operation per cluster: the count is the number of clusters, there is no warm-up.
    let lim = Limits {
        warmup: std::time::Duration::ZERO,
        duration: ctx.opts.duration,
        count: Some(n),
    };
    let phase = drive("clusters", progress(ctx), workers, lim).await;
    for w in fill(&mut report, phase) {
        report.errors.merge(w.missed);
    }
    let scopes: Vec<Scope> = created.lock().map(|v| v.clone()).unwrap_or_default();
    let made = scopes.len() as u64;
    report.set("clusters_created", made);
    report.set("complete", made == n);
    if let Some(mean) = report.latency.mean {
        report.set("per_cluster_ms", (mean * 1000.0).round() / 1000.0);
    }
    let objects = made * (u64::from(ctx.opts.objects_per_cluster) + 1);
    report.set(
        "objects_per_second",
        (objects as f64 / report.seconds.max(1e-6)).round(),
    );
    if let (Some(b), Some(a)) = (rss_before, rss_mib(ctx.opts.server_pid)) {
        report.set("server_rss_mib", json!({ "populated": a }));
        if made > 0 {
            let kib = (a - b) * 1024.0 / made as f64;
            report.set("server_rss_kib_per_cluster", kib.round());
        }
    }

    if made > 0 {
        let scopes = Arc::new(scopes);
        let next = Arc::new(AtomicU64::new(0));
        let workers = (0..ctx.opts.concurrency)
            .map(|_| ListWorker {
                conn: ctx.rbac_conn().unwrap_or_else(|| ctx.conn()),
                next: next.clone(),
                scopes: scopes.clone(),
            })
            .collect();
        let lim = Limits {
            warmup: std::time::Duration::ZERO,
            duration: ctx.opts.duration,
            count: Some(made),
        };
        let phase = drive("clusters list", progress(ctx), workers, lim).await;
        let row = Row {
            label: "list per cluster".into(),
            ops: phase.ops,
            seconds: phase.seconds,
            latency: phase.samples.summary(),
            errors: phase.errors.short(),
        };
        report.set("list_latency_ms", row.latency.to_json());
        report.rows.push(row);
        add_errors(&mut report, phase.errors, "list ");
    }

    let names: Vec<String> = workspaces.lock().map(|v| v.clone()).unwrap_or_default();
    if !ctx.opts.keep && !names.is_empty() {
        let started = std::time::Instant::now();
        let errors = ws::delete_all(ctx, &watch, Arc::new(names)).await.errors;
        add_errors(&mut report, errors, "cleanup ");
        let ms = started.elapsed().as_millis() as u64;
        ctx.last_cleanup_ms.store(ms.max(1), Ordering::Relaxed);
    }
    let errors = watch.stop().await;
    add_errors(&mut report, errors, "");
    report
}
