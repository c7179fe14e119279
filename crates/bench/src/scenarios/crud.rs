//! `create`, `get` and `update`: single-object requests, spread over the scopes (logical
//! clusters × namespaces), one connection per client; with `--replica-kubeconfig` the
//! clients are spread over the servers too (fixtures are made through the first).

use std::sync::Arc;

use hyper::Method;
use serde::Deserialize;

use super::{add_errors, fill, limits, progress};
use crate::client::{Conn, Failure};
use crate::ctx::{Ctx, Scope};
use crate::report::Report;
use crate::runner::{drive, Worker};
use crate::setup::{bulk_create, cleanup_objects, ensure_namespaces};

/// Fields every single-object report carries.
fn common(ctx: &Ctx, report: &mut Report) {
    report.set("concurrency", ctx.opts.concurrency);
    report.set("size", ctx.opts.size);
    report.set("namespaces", ctx.opts.namespace_spread);
    report.set("clusters", ctx.opts.cluster_spread);
    report.set("servers", ctx.servers());
}

struct CreateWorker {
    ctx: Arc<Ctx>,
    conn: Conn,
    id: u64,
    seq: u64,
}

impl Worker for CreateWorker {
    async fn op(&mut self, _measuring: bool) -> Result<(), Failure> {
        let scopes = &self.ctx.scopes;
        let scope = &scopes[((self.id + self.seq) % scopes.len() as u64) as usize];
        let name = self.ctx.name(&format!("c{}", self.id), self.seq);
        self.seq += 1;
        let body = self.ctx.configmap_body(scope, &name, "create");
        self.conn
            .call_ok(Method::POST, &scope.configmaps(), Some(body))
            .await
            .map(drop)
    }
}

/// POST ConfigMaps for the duration.
pub async fn create(ctx: &Arc<Ctx>) -> Report {
    let mut report = Report::new("create");
    common(ctx, &mut report);
    add_errors(
        &mut report,
        ensure_namespaces(ctx, &ctx.scopes).await,
        "setup ",
    );
    let workers = (0..u64::from(ctx.opts.concurrency))
        .map(|id| CreateWorker {
            ctx: ctx.clone(),
            conn: ctx.conn_at(id as usize),
            id,
            seq: 0,
        })
        .collect();
    let phase = drive("create", progress(ctx), workers, limits(ctx)).await;
    fill(&mut report, phase);
    add_errors(
        &mut report,
        cleanup_objects(ctx, &ctx.scopes, "create").await,
        "cleanup ",
    );
    report
}

/// `(scope, name)` of `n` fixture objects tagged `tag`, spread over the scopes.
fn fixtures(ctx: &Ctx, tag: &str, n: u64) -> Vec<(Scope, String)> {
    (0..n)
        .map(|i| {
            let scope = ctx.scopes[(i % ctx.scopes.len() as u64) as usize].clone();
            (scope, ctx.name(tag, i))
        })
        .collect()
}

struct GetWorker {
    conn: Conn,
    paths: Arc<Vec<String>>,
    next: usize,
}

impl Worker for GetWorker {
    async fn op(&mut self, _measuring: bool) -> Result<(), Failure> {
        let path = &self.paths[self.next % self.paths.len()];
        self.next = self.next.wrapping_add(1);
        self.conn.call_ok(Method::GET, path, None).await.map(drop)
    }
}

/// GET single objects from a pool of `--pool` ConfigMaps.
pub async fn get(ctx: &Arc<Ctx>) -> Report {
    let mut report = Report::new("get");
    common(ctx, &mut report);
    report.set("pool", ctx.opts.pool);
    add_errors(
        &mut report,
        ensure_namespaces(ctx, &ctx.scopes).await,
        "setup ",
    );
    let items = fixtures(ctx, "g", u64::from(ctx.opts.pool));
    let paths: Arc<Vec<String>> = Arc::new(items.iter().map(|(s, n)| s.configmap(n)).collect());
    add_errors(
        &mut report,
        bulk_create(ctx, Arc::new(items), "get").await,
        "setup ",
    );
    let workers = (0..ctx.opts.concurrency as usize)
        .map(|id| GetWorker {
            conn: ctx.conn_at(id),
            paths: paths.clone(),
            next: id * 7919,
        })
        .collect();
    let phase = drive("get", progress(ctx), workers, limits(ctx)).await;
    fill(&mut report, phase);
    add_errors(
        &mut report,
        cleanup_objects(ctx, &ctx.scopes, "get").await,
        "cleanup ",
    );
    report
}

#[derive(Deserialize)]
struct RvOnly {
    metadata: RvMeta,
}

#[derive(Deserialize)]
struct RvMeta {
    #[serde(rename = "resourceVersion")]
    resource_version: String,
}

/// `metadata.resourceVersion` of an object body.
pub fn resource_version(body: &[u8]) -> Result<String, Failure> {
    serde_json::from_slice::<RvOnly>(body)
        .map(|o| o.metadata.resource_version)
        .map_err(|e| Failure::Protocol(format!("no metadata.resourceVersion: {e}")))
}

/// A client that owns one object and updates it with its last known resourceVersion.
pub struct UpdateWorker {
    pub ctx: Arc<Ctx>,
    pub conn: Conn,
    pub scope: Scope,
    pub name: String,
    pub rv: Option<String>,
    pub n: u64,
    pub scenario: &'static str,
}

impl UpdateWorker {
    /// PUT with the current resourceVersion; on a conflict the version is re-read (and the
    /// conflict is still reported).
    pub async fn update(&mut self) -> Result<(), Failure> {
        let path = self.scope.configmap(&self.name);
        let rv = match self.rv.take() {
            Some(rv) => rv,
            None => resource_version(&self.conn.call_ok(Method::GET, &path, None).await?)?,
        };
        self.n += 1;
        let body = self
            .ctx
            .update_body(&self.scope, &self.name, self.scenario, &rv, self.n);
        match self.conn.call_ok(Method::PUT, &path, Some(body)).await {
            Ok(b) => {
                self.rv = Some(resource_version(&b)?);
                Ok(())
            }
            Err(f) => Err(f), // rv stays None: re-read before the next attempt.
        }
    }
}

impl Worker for UpdateWorker {
    async fn op(&mut self, _measuring: bool) -> Result<(), Failure> {
        self.update().await
    }
}

/// PUT: each client updates its own ConfigMap (no conflicts by design).
pub async fn update(ctx: &Arc<Ctx>) -> Report {
    let mut report = Report::new("update");
    common(ctx, &mut report);
    add_errors(
        &mut report,
        ensure_namespaces(ctx, &ctx.scopes).await,
        "setup ",
    );
    let items = fixtures(ctx, "u", u64::from(ctx.opts.concurrency));
    add_errors(
        &mut report,
        bulk_create(ctx, Arc::new(items.clone()), "update").await,
        "setup ",
    );
    let mut workers = Vec::new();
    let mut setup_errors = crate::stats::ErrorCounts::default();
    for (i, (scope, name)) in items.into_iter().enumerate() {
        let mut conn = ctx.conn_at(i);
        // Read the starting resourceVersion outside the measurement.
        let rv = match conn
            .call_ok(Method::GET, &scope.configmap(&name), None)
            .await
        {
            Ok(b) => resource_version(&b).ok(),
            Err(f) => {
                setup_errors.add(&f.key(), &f.message());
                None
            }
        };
        workers.push(UpdateWorker {
            ctx: ctx.clone(),
            conn,
            scope,
            name,
            rv,
            n: 0,
            scenario: "update",
        });
    }
    add_errors(&mut report, setup_errors, "setup ");
    let phase = drive("update", progress(ctx), workers, limits(ctx)).await;
    fill(&mut report, phase);
    add_errors(
        &mut report,
        cleanup_objects(ctx, &ctx.scopes, "update").await,
        "cleanup ",
    );
    report
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn reads_resource_version() {
        assert_eq!(
            resource_version(br#"{"metadata":{"name":"a","resourceVersion":"12"}}"#).unwrap(),
            "12"
        );
        assert!(resource_version(b"{}").is_err());
    }
}
