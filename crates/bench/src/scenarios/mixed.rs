//! `mixed`: what a controller does to an API server. Each client repeatedly picks, at random
//! (fixed seed per client): get 50 %, list 10 % (label selector, `limit`), update 25 % (its own
//! pool objects, with resourceVersion), create 8 % and delete 7 % (of objects it created),
//! while up to 10 watchers follow the pool. Reported per verb and overall.

use std::sync::Arc;
use std::time::Instant;

use hyper::Method;
use serde_json::{Map, Value};

use super::crud::resource_version;
use super::watch::WatcherSet;
use super::{add_errors, fill, limits, progress};
use crate::client::{encode_query, Conn, Failure};
use crate::ctx::{Ctx, Rng, Scope};
use crate::report::{Report, Row};
use crate::runner::{drive, Worker};
use crate::setup::{bulk_create, cleanup_objects, ensure_namespaces, list_resource_version};
use crate::stats::Samples;

const VERBS: [&str; 5] = ["get", "list", "update", "create", "delete"];
/// At most this many watchers in the mix.
const MAX_WATCHERS: u32 = 10;

struct Owned {
    scope: Scope,
    name: String,
    rv: Option<String>,
}

struct MixedWorker {
    ctx: Arc<Ctx>,
    conn: Conn,
    rng: Rng,
    id: u64,
    pool: Arc<Vec<(Scope, String)>>,
    list_paths: Arc<Vec<String>>,
    owned: Vec<Owned>,
    next_owned: usize,
    temp: Vec<(Scope, String)>,
    seq: u64,
    n: u64,
    verbs: [Samples; 5],
}

impl MixedWorker {
    async fn get(&mut self) -> Result<(), Failure> {
        let (scope, name) = &self.pool[self.rng.below(self.pool.len() as u64) as usize];
        let path = scope.configmap(name);
        self.conn.call_ok(Method::GET, &path, None).await.map(drop)
    }

    async fn list(&mut self) -> Result<(), Failure> {
        let path = &self.list_paths[self.rng.below(self.list_paths.len() as u64) as usize];
        self.conn.call_ok(Method::GET, path, None).await.map(drop)
    }

    async fn update(&mut self) -> Result<(), Failure> {
        if self.owned.is_empty() {
            return self.get().await;
        }
        let i = self.next_owned % self.owned.len();
        self.next_owned += 1;
        self.n += 1;
        let o = &mut self.owned[i];
        let path = o.scope.configmap(&o.name);
        let rv = match o.rv.take() {
            Some(rv) => rv,
            None => resource_version(&self.conn.call_ok(Method::GET, &path, None).await?)?,
        };
        let body = self
            .ctx
            .update_body(&o.scope, &o.name, "mixed", &rv, self.n);
        let b = self.conn.call_ok(Method::PUT, &path, Some(body)).await?;
        o.rv = Some(resource_version(&b)?);
        Ok(())
    }

    async fn create(&mut self) -> Result<(), Failure> {
        let scopes = &self.ctx.scopes;
        let scope = scopes[((self.id + self.seq) % scopes.len() as u64) as usize].clone();
        let name = self.ctx.name(&format!("mt{}", self.id), self.seq);
        self.seq += 1;
        let body = self.ctx.configmap_body(&scope, &name, "mixed");
        self.conn
            .call_ok(Method::POST, &scope.configmaps(), Some(body))
            .await?;
        self.temp.push((scope, name));
        Ok(())
    }

    async fn delete(&mut self) -> Result<(), Failure> {
        let Some((scope, name)) = self.temp.pop() else {
            return self.create().await;
        };
        self.conn
            .call_ok(Method::DELETE, &scope.configmap(&name), None)
            .await
            .map(drop)
    }
}

impl Worker for MixedWorker {
    async fn op(&mut self, measuring: bool) -> Result<(), Failure> {
        let r = self.rng.below(100);
        let verb = match r {
            0..=49 => 0,
            50..=59 => 1,
            60..=84 => 2,
            85..=92 => 3,
            _ => 4,
        };
        let t0 = Instant::now();
        let res = match verb {
            0 => self.get().await,
            1 => self.list().await,
            2 => self.update().await,
            3 => self.create().await,
            _ => self.delete().await,
        };
        if measuring && res.is_ok() {
            self.verbs[verb].record(t0.elapsed());
        }
        res
    }
}

/// The mixed scenario.
pub async fn run(ctx: &Arc<Ctx>) -> Report {
    let mut report = Report::new("mixed");
    let c = u64::from(ctx.opts.concurrency);
    let pool_size = u64::from(ctx.opts.pool).max(c);
    let watchers = ctx.opts.watchers.min(MAX_WATCHERS);
    report.set("concurrency", c);
    report.set("servers", ctx.servers());
    report.set("pool", pool_size);
    report.set("watchers", watchers);
    report.set("size", ctx.opts.size);
    add_errors(
        &mut report,
        ensure_namespaces(ctx, &ctx.scopes).await,
        "setup ",
    );
    let pool: Vec<(Scope, String)> = (0..pool_size)
        .map(|i| {
            let scope = ctx.scopes[(i % ctx.scopes.len() as u64) as usize].clone();
            (scope, ctx.name("m", i))
        })
        .collect();
    let pool = Arc::new(pool);
    add_errors(
        &mut report,
        bulk_create(ctx, pool.clone(), "mixed").await,
        "setup ",
    );

    let selector = encode_query(&ctx.selector("mixed"));
    let limit = if ctx.opts.page_size > 0 {
        ctx.opts.page_size
    } else {
        500
    };
    let list_paths: Arc<Vec<String>> = Arc::new(
        ctx.scopes
            .iter()
            .map(|s| format!("{}?labelSelector={selector}&limit={limit}", s.configmaps()))
            .collect(),
    );

    // Watchers on the first scope.
    let first = ctx.scopes[0].clone();
    let mut conn = ctx.conn();
    let list = format!("{}?labelSelector={selector}&limit=1", first.configmaps());
    let set = match conn
        .call_ok(Method::GET, &list, None)
        .await
        .and_then(|b| list_resource_version(&b))
    {
        Ok(rv) => {
            let secs =
                (ctx.opts.duration + ctx.opts.warmup + ctx.opts.setup_timeout).as_secs() + 60;
            let path = format!(
                "{}?labelSelector={selector}&watch=true&resourceVersion={rv}&timeoutSeconds={secs}",
                first.configmaps()
            );
            Some(WatcherSet::start(ctx, path, watchers, format!("kb-{}-m-", ctx.run)).await)
        }
        Err(f) => {
            report
                .errors
                .add(&format!("setup {}", f.key()), &f.message());
            None
        }
    };

    let workers = (0..c)
        .map(|id| {
            let owned = pool
                .iter()
                .enumerate()
                .filter(|(i, _)| *i as u64 % c == id)
                .map(|(_, (scope, name))| Owned {
                    scope: scope.clone(),
                    name: name.clone(),
                    rv: None,
                })
                .collect();
            MixedWorker {
                ctx: ctx.clone(),
                conn: ctx.conn_at(id as usize),
                rng: Rng::new(id + 1),
                id,
                pool: pool.clone(),
                list_paths: list_paths.clone(),
                owned,
                next_owned: 0,
                temp: Vec::new(),
                seq: 0,
                n: 0,
                verbs: Default::default(),
            }
        })
        .collect();
    let phase = drive("mixed", progress(ctx), workers, limits(ctx)).await;
    let seconds = phase.seconds;
    let workers = fill(&mut report, phase);
    let mut per_verb: [Samples; 5] = Default::default();
    for w in workers {
        for (acc, s) in per_verb.iter_mut().zip(w.verbs) {
            acc.merge(s);
        }
    }
    let mut verbs = Map::new();
    for (name, s) in VERBS.iter().zip(per_verb) {
        let row = Row {
            label: (*name).to_string(),
            ops: s.len() as u64,
            seconds,
            latency: s.summary(),
            errors: String::new(),
        };
        verbs.insert((*name).to_string(), row.to_json());
        report.rows.push(row);
    }
    report.set("verbs", Value::Object(verbs));
    if let Some(set) = set {
        let events = set.events.load(std::sync::atomic::Ordering::Relaxed);
        report.set("watchers_established", set.established);
        report.set("watch_events", events);
        add_errors(&mut report, set.stop().await, "");
    }
    add_errors(
        &mut report,
        cleanup_objects(ctx, &ctx.scopes, "mixed").await,
        "cleanup ",
    );
    report
}
