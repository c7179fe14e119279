//! `wildcard-watch`: the issue's check "a wildcard watch over every cluster delivers each
//! write once, in revision order". Makes sure `--workspaces` Workspaces `kb-ww-<i>` exist
//! below the kubeconfig's cluster (creating the missing ones, so a run with `--keep` can be
//! reused by the next), opens one watch on `/clusters/*/api/v1/configmaps` and one on the
//! subtree `/clusters/<cluster>:*/api/v1/configmaps`, then `--concurrency` clients create
//! ConfigMaps (limited by `--count` and `--duration`), write `i` in the `default` namespace
//! of Workspace `i mod N`.
//!
//! For each watch it checks that every acknowledged write arrives exactly once (`missed`,
//! `duplicates`), with the resourceVersion its create returned and the right
//! `kplane.io/cluster` annotation (`wrong_rv`, `wrong_cluster`), and that the resourceVersions
//! of all its events strictly increase (`out_of_order`); any violation is also an error of
//! the report. Delivery latency is from the writer receiving the create's answer to the
//! watcher reading the event (0 if the event came first). A watch the server ends is resumed
//! from the last resourceVersion it delivered (`resumed`). The Workspaces (and so the
//! ConfigMaps) are deleted at the end unless `--keep`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::BytesMut;
use http_body_util::BodyExt as _;
use hyper::Method;
use serde_json::{json, Value};
use tokio::sync::watch;

use super::ws::{self, WsWatch};
use super::{add_errors, fill, limits, progress};
use crate::client::{encode_query, Conn, Failure};
use crate::ctx::{Ctx, SCENARIO_LABEL};
use crate::report::Report;
use crate::runner::{drive, Worker};
use crate::stats::{ErrorCounts, Samples};

const SCENARIO: &str = "wildcard-watch";
/// The annotation naming an object's logical cluster in wildcard reads.
const CLUSTER_ANNOTATION: &str = "kplane.io/cluster";
/// How long after the last write the watches may take to deliver everything.
const DELIVERY_GRACE: Duration = Duration::from_secs(30);
/// After everything arrived, how long to keep reading (a late duplicate is counted).
const SETTLE: Duration = Duration::from_millis(500);
/// Longest watch event line accepted.
const MAX_LINE: usize = 16 << 20;

/// The stable name of the i-th Workspace (stable so `--keep` lets later runs reuse them).
fn ws_name(i: u64) -> String {
    format!("kb-ww-{i}")
}

/// One acknowledged write.
struct Ack {
    idx: u64,
    rv: u64,
    cluster: String,
    at: Instant,
}

struct Writer {
    ctx: Arc<Ctx>,
    conn: Conn,
    next: Arc<AtomicU64>,
    workspaces: u64,
    base: String,
    acks: Vec<Ack>,
}

impl Worker for Writer {
    async fn op(&mut self, _measuring: bool) -> Result<(), Failure> {
        let idx = self.next.fetch_add(1, Ordering::Relaxed);
        let ws = ws_name(idx % self.workspaces);
        let scope = ws::child_scope(&self.ctx, &ws, "default")
            .ok_or_else(|| Failure::Protocol("no logical cluster in the server URL".into()))?;
        let name = self.ctx.name("ww", idx);
        let body = self.ctx.configmap_body(&scope, &name, SCENARIO);
        let reply = self
            .conn
            .call_ok(Method::POST, &scope.configmaps(), Some(body))
            .await?;
        let at = Instant::now();
        let v: Value = serde_json::from_slice(&reply)
            .map_err(|e| Failure::Protocol(format!("create answer: {e}")))?;
        let rv = v["metadata"]["resourceVersion"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| Failure::Protocol("create answer without a numeric rv".into()))?;
        self.acks.push(Ack {
            idx,
            rv,
            cluster: format!("{}:{ws}", self.base),
            at,
        });
        Ok(())
    }
}

/// What one watch saw.
#[derive(Default)]
struct Seen {
    /// Write index → (resourceVersion, cluster annotation, receipt time) of each delivery.
    deliveries: HashMap<u64, Vec<(u64, String, Instant)>>,
    events: u64,
    out_of_order: u64,
    out_of_order_example: Option<String>,
    resumed: u64,
    errors: ErrorCounts,
    /// resourceVersion of the last event or bookmark (resume point).
    last_rv: String,
    /// Largest resourceVersion of an event so far.
    max_rv: u64,
}

impl Seen {
    /// Applies one event line; `marker` is the name prefix of this run's writes.
    fn apply(&mut self, line: &[u8], marker: &str, now: Instant) {
        let ev: Value = match serde_json::from_slice(line) {
            Ok(v) => v,
            Err(e) => {
                self.errors
                    .add("watch protocol", &format!("bad event line: {e}"));
                return;
            }
        };
        let kind = ev["type"].as_str().unwrap_or_default();
        let meta = &ev["object"]["metadata"];
        if kind == "ERROR" {
            self.errors
                .add("watch_error_event", &ev["object"].to_string());
            return;
        }
        let rv_text = meta["resourceVersion"].as_str().unwrap_or_default();
        if !rv_text.is_empty() {
            self.last_rv = rv_text.to_string();
        }
        if kind == "BOOKMARK" {
            return;
        }
        self.events += 1;
        let Ok(rv) = rv_text.parse::<u64>() else {
            self.errors
                .add("watch protocol", "event without a numeric resourceVersion");
            return;
        };
        if rv <= self.max_rv {
            self.out_of_order += 1;
            if self.out_of_order_example.is_none() {
                self.out_of_order_example = Some(format!("rv {rv} after {} ({kind})", self.max_rv));
            }
        }
        self.max_rv = self.max_rv.max(rv);
        let name = meta["name"].as_str().unwrap_or_default();
        if let Some(idx) = name.strip_prefix(marker).and_then(|s| s.parse().ok()) {
            if kind == "ADDED" {
                let cluster = meta["annotations"][CLUSTER_ANNOTATION]
                    .as_str()
                    .unwrap_or_default()
                    .to_string();
                self.deliveries
                    .entry(idx)
                    .or_default()
                    .push((rv, cluster, now));
            }
        }
    }

    fn delivered(&self) -> u64 {
        self.deliveries.values().map(|v| v.len() as u64).sum()
    }
}

/// A running watch of `path` (resumed from its last resourceVersion when the server ends it).
struct Watcher {
    label: &'static str,
    stop: watch::Sender<bool>,
    delivered: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<Seen>,
}

impl Watcher {
    /// Lists once for a resourceVersion, then watches from it.
    async fn start(
        ctx: &Arc<Ctx>,
        label: &'static str,
        path: String,
        marker: String,
    ) -> Result<Watcher, Failure> {
        let list = ctx
            .setup_conn()
            .call_ok(Method::GET, &format!("{path}?limit=1"), None)
            .await?;
        let rv = crate::setup::list_resource_version(&list)?;
        let (stop, stop_rx) = watch::channel(false);
        let delivered = Arc::new(AtomicU64::new(0));
        let seen = Seen {
            last_rv: rv,
            ..Seen::default()
        };
        let task = tokio::spawn(run_watch(
            ctx.clone(),
            path,
            marker,
            seen,
            delivered.clone(),
            stop_rx,
        ));
        Ok(Watcher {
            label,
            stop,
            delivered,
            task,
        })
    }

    async fn finish(self) -> Seen {
        let _ = self.stop.send(true);
        match self.task.await {
            Ok(s) => s,
            Err(e) => {
                let mut s = Seen::default();
                s.errors.add("panic", &e.to_string());
                s
            }
        }
    }
}

async fn run_watch(
    ctx: Arc<Ctx>,
    path: String,
    marker: String,
    mut seen: Seen,
    delivered: Arc<AtomicU64>,
    mut stop: watch::Receiver<bool>,
) -> Seen {
    for attempt in 0..1000u32 {
        if *stop.borrow() {
            break;
        }
        if attempt > 0 {
            seen.resumed += 1;
        }
        let mut conn = ctx.conn();
        let url = format!(
            "{path}?watch=1&allowWatchBookmarks=true&resourceVersion={}",
            encode_query(&seen.last_rv)
        );
        let body = tokio::select! {
            _ = stop.changed() => break,
            b = conn.stream(&url) => b,
        };
        let mut body = match body {
            Ok(b) => b,
            Err(f) => {
                seen.errors.add(&format!("watch {}", f.key()), &f.message());
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let mut buf = BytesMut::new();
        loop {
            let frame = tokio::select! {
                _ = stop.changed() => return seen,
                f = body.frame() => f,
            };
            let data = match frame {
                None => break,
                Some(Err(e)) => {
                    seen.errors.add("watch transport", &e.to_string());
                    break;
                }
                Some(Ok(f)) => match f.into_data() {
                    Ok(d) => d,
                    Err(_) => continue,
                },
            };
            let now = Instant::now();
            buf.extend_from_slice(&data);
            while let Some(pos) = buf.iter().position(|&b| b == b'\n') {
                let line = buf.split_to(pos + 1);
                let line = &line[..pos];
                if !line.iter().all(u8::is_ascii_whitespace) {
                    seen.apply(line, &marker, now);
                }
            }
            delivered.store(seen.delivered(), Ordering::Relaxed);
            if buf.len() > MAX_LINE {
                seen.errors
                    .add("watch protocol", "event line longer than 16 MiB");
                break;
            }
        }
    }
    seen
}

/// What [`check`] found for one watch.
#[derive(Debug, Default, PartialEq, Eq)]
struct Verdict {
    deliveries: u64,
    duplicates: u64,
    missed: u64,
    wrong_rv: u64,
    wrong_cluster: u64,
    /// Deliveries of writes whose create got no answer (not counted as errors).
    unacknowledged: u64,
}

/// Compares the acknowledged writes with one watch's deliveries.
fn check(acks: &[Ack], seen: &Seen, latency: &mut Samples) -> Verdict {
    let mut v = Verdict {
        deliveries: seen.delivered(),
        ..Verdict::default()
    };
    let mut acked = std::collections::HashSet::with_capacity(acks.len());
    for a in acks {
        acked.insert(a.idx);
        let Some(ds) = seen.deliveries.get(&a.idx) else {
            v.missed += 1;
            continue;
        };
        v.duplicates += ds.len() as u64 - 1;
        for (rv, cluster, _) in ds {
            if *rv != a.rv {
                v.wrong_rv += 1;
            }
            if *cluster != a.cluster {
                v.wrong_cluster += 1;
            }
        }
        if let Some((_, _, at)) = ds.first() {
            latency.record(at.saturating_duration_since(a.at));
        }
    }
    v.unacknowledged = seen
        .deliveries
        .iter()
        .filter(|(i, _)| !acked.contains(i))
        .map(|(_, d)| d.len() as u64)
        .sum();
    v
}

/// Lists the Workspaces of this scenario that are Ready (paged); returns their names.
async fn existing(ctx: &Ctx) -> Result<std::collections::HashSet<String>, Failure> {
    let mut conn = ctx.setup_conn();
    let mut names = std::collections::HashSet::new();
    let mut cont = String::new();
    loop {
        let mut path = format!(
            "{}?limit=500&labelSelector={}",
            ws::collection(ctx),
            encode_query(&format!("{SCENARIO_LABEL}={SCENARIO}"))
        );
        if !cont.is_empty() {
            path.push_str(&format!("&continue={}", encode_query(&cont)));
        }
        let body = conn.call_ok(Method::GET, &path, None).await?;
        let v: Value = serde_json::from_slice(&body)
            .map_err(|e| Failure::Protocol(format!("workspace list: {e}")))?;
        for it in v["items"].as_array().into_iter().flatten() {
            let ready =
                it["status"]["phase"] == "Ready" && it["metadata"]["deletionTimestamp"].is_null();
            if let (true, Some(n)) = (ready, it["metadata"]["name"].as_str()) {
                names.insert(n.to_string());
            }
        }
        match v["metadata"]["continue"].as_str() {
            Some(c) if !c.is_empty() => cont = c.to_string(),
            _ => return Ok(names),
        }
    }
}

/// The wildcard-watch scenario.
pub async fn run(ctx: &Arc<Ctx>) -> Report {
    let mut report = Report::new(SCENARIO);
    let n = u64::from(ctx.opts.workspaces);
    report.set("workspaces", n);
    report.set("concurrency", ctx.opts.concurrency);
    let Some((prefix, base)) = ctx
        .endpoint
        .server
        .logical_cluster()
        .map(|(p, b)| (p.to_string(), b.to_string()))
    else {
        report.errors.add(
            "unsupported",
            "the wildcard-watch scenario needs a server URL ending in /clusters/<name> (kcp-style)",
        );
        return report;
    };
    let Some(wsw) = WsWatch::start_reported(ctx, &mut report).await else {
        return report;
    };

    // Setup: the N Workspaces (reused if Ready from an earlier run with --keep).
    let started = Instant::now();
    let have = match existing(ctx).await {
        Ok(h) => h,
        Err(f) => {
            report
                .errors
                .add(&f.key(), &format!("listing workspaces: {f}"));
            add_errors(&mut report, wsw.stop().await, "");
            return report;
        }
    };
    let all: Vec<String> = (0..n).map(ws_name).collect();
    let missing: Vec<String> = all.iter().filter(|w| !have.contains(*w)).cloned().collect();
    report.set("workspaces_reused", n - missing.len() as u64);
    report.set("workspaces_created", missing.len() as u64);
    if !missing.is_empty() {
        crate::runner::note(&format!(
            "wildcard-watch: creating {} workspaces",
            missing.len()
        ));
        let made = missing.len() as f64;
        let errors = ws::create_all(ctx, &wsw, Arc::new(missing), SCENARIO).await;
        let secs = started.elapsed().as_secs_f64();
        report.set("setup_s", (secs * 10.0).round() / 10.0);
        report.set(
            "setup_creations_per_second",
            (made / secs.max(1e-6)).round(),
        );
        if !errors.is_empty() {
            add_errors(&mut report, errors, "setup ");
            cleanup(ctx, &wsw, &all, &mut report).await;
            return report;
        }
    }

    // The watches, then the writes.
    // The name prefix of this run's writes (`Ctx::name("ww", i)`).
    let marker = format!("kb-{}-ww-", ctx.run);
    let mut watchers = Vec::new();
    for (label, path) in [
        ("all", format!("{prefix}/clusters/*/api/v1/configmaps")),
        (
            "subtree",
            format!("{prefix}/clusters/{base}:*/api/v1/configmaps"),
        ),
    ] {
        match Watcher::start(ctx, label, path, marker.clone()).await {
            Ok(w) => watchers.push(w),
            Err(f) => report
                .errors
                .add(&f.key(), &format!("starting the {label} watch: {f}")),
        }
    }
    let next = Arc::new(AtomicU64::new(0));
    let writers = (0..ctx.opts.concurrency)
        .map(|_| Writer {
            ctx: ctx.clone(),
            conn: ctx.conn(),
            next: next.clone(),
            workspaces: n.max(1),
            base: base.clone(),
            acks: Vec::new(),
        })
        .collect();
    crate::runner::note("wildcard-watch: writing");
    let phase = drive(SCENARIO, progress(ctx), writers, limits(ctx)).await;
    let acks: Vec<Ack> = fill(&mut report, phase)
        .into_iter()
        .flat_map(|w| w.acks)
        .collect();
    let writes = acks.len() as u64;
    report.set("writes", writes);
    report.set("clusters_written", writes.min(n));

    // Wait until every watch has every write (or the grace period is over).
    let deadline = Instant::now() + DELIVERY_GRACE;
    while Instant::now() < deadline
        && watchers
            .iter()
            .any(|w| w.delivered.load(Ordering::Relaxed) < writes)
    {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(SETTLE).await;
    for w in watchers {
        let label = w.label;
        let seen = w.finish().await;
        let mut latency = Samples::default();
        let v = check(&acks, &seen, &mut latency);
        let key = |k: &str| format!("{label}_{k}");
        for (k, count, what) in [
            (
                "missed",
                v.missed,
                "acknowledged writes the watch did not deliver",
            ),
            (
                "duplicates",
                v.duplicates,
                "writes delivered more than once",
            ),
            (
                "out_of_order",
                seen.out_of_order,
                "events whose resourceVersion did not increase",
            ),
            (
                "wrong_rv",
                v.wrong_rv,
                "events whose resourceVersion differs from the create's",
            ),
            (
                "wrong_cluster",
                v.wrong_cluster,
                "events with a wrong kplane.io/cluster annotation",
            ),
        ] {
            report.set(&key(k), count);
            if count > 0 {
                let example = if k == "out_of_order" {
                    seen.out_of_order_example.clone().unwrap_or_default()
                } else {
                    String::new()
                };
                report
                    .errors
                    .add_n(&key(k), count, &format!("{label} watch: {what} {example}"));
            }
        }
        report.set(&key("deliveries"), v.deliveries);
        report.set(&key("unacknowledged_deliveries"), v.unacknowledged);
        report.set(&key("events"), seen.events);
        report.set(&key("resumed"), seen.resumed);
        report.set(&key("delivery_latency_ms"), latency.summary().to_json());
        add_errors(&mut report, seen.errors, &format!("{label} "));
    }
    if !ctx.opts.keep {
        cleanup(ctx, &wsw, &all, &mut report).await;
    }
    add_errors(&mut report, wsw.stop().await, "");
    report.set(
        "scope",
        json!({"all": "/clusters/*", "subtree": format!("/clusters/{base}:*")}),
    );
    report
}

/// Deletes the Workspaces (and with them the ConfigMaps); records the time.
async fn cleanup(ctx: &Arc<Ctx>, wsw: &Arc<WsWatch>, all: &[String], report: &mut Report) {
    let started = Instant::now();
    let errors = ws::delete_all(ctx, wsw, Arc::new(all.to_vec()))
        .await
        .errors;
    add_errors(report, errors, "cleanup ");
    let ms = started.elapsed().as_millis() as u64;
    ctx.last_cleanup_ms.store(ms.max(1), Ordering::Relaxed);
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    fn event(kind: &str, name: &str, rv: u64, cluster: &str) -> String {
        json!({"type": kind, "object": {"metadata": {"name": name,
            "resourceVersion": rv.to_string(),
            "annotations": {CLUSTER_ANNOTATION: cluster}}}})
        .to_string()
    }

    #[test]
    fn duplicates_misses_order_rv_and_cluster_are_counted() {
        let t = Instant::now();
        let mut s = Seen::default();
        let m = "kb-x-ww-";
        s.apply(event("ADDED", "kb-x-ww-0", 5, "root:a").as_bytes(), m, t);
        s.apply(event("ADDED", "other", 6, "root:b").as_bytes(), m, t);
        s.apply(event("ADDED", "kb-x-ww-1", 7, "root:b").as_bytes(), m, t);
        s.apply(event("ADDED", "kb-x-ww-1", 7, "root:b").as_bytes(), m, t);
        s.apply(
            br#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"9"}}}"#,
            m,
            t,
        );
        s.apply(event("ADDED", "kb-x-ww-3", 8, "root:c").as_bytes(), m, t);
        s.apply(event("ADDED", "kb-x-ww-9", 10, "root:c").as_bytes(), m, t);
        assert_eq!(s.events, 6);
        assert_eq!(s.out_of_order, 1);
        assert_eq!(s.last_rv, "10");
        let ack = |idx, rv, c: &str| Ack {
            idx,
            rv,
            cluster: c.into(),
            at: t,
        };
        let acks = [
            ack(0, 5, "root:a"),
            ack(1, 7, "root:b"),
            ack(2, 8, "root:a"),
            ack(3, 8, "root:x"),
        ];
        let mut lat = Samples::default();
        let v = check(&acks, &s, &mut lat);
        assert_eq!(
            v,
            Verdict {
                deliveries: 5,
                duplicates: 1,
                missed: 1,
                wrong_rv: 0,
                wrong_cluster: 1,
                unacknowledged: 1,
            }
        );
        assert_eq!(lat.len(), 3);
        let v = check(&[ack(0, 4, "root:a")], &s, &mut lat);
        assert_eq!(v.wrong_rv, 1);
        s.apply(b"nope", m, t);
        s.apply(br#"{"type":"ERROR","object":{}}"#, m, t);
        assert_eq!(s.errors.total(), 2);
    }
}
