//! `watch`: `--watchers` concurrent watches on one namespace (each on its own connection),
//! while `--concurrency` writers create ConfigMaps at `--watch-rate` per second in total.
//! The latency of a delivery is the time from the writer receiving the create's response
//! (acknowledgement) to a watcher reading the event; an event read before its acknowledgement
//! arrived counts as 0. Every acknowledged write must reach every established watcher: what
//! does not arrive within a grace period is counted as `missed_delivery`.
//!
//! With `--watch-rate 0` nothing is written: the watches are opened, held idle for
//! `--duration` and closed; the report gives the time to establish each watch and, with
//! `--server-pid`, the server's resident memory per idle watch. `--watch-http2` multiplexes
//! the watches over shared HTTP/2 connections instead of one HTTP/1.1 connection each.
//!
//! With `--replica-kubeconfig` (kplane replicas on one store) the writers write through the
//! first server and the watches are spread round-robin over the others, so every delivery
//! crosses servers: the latency is from the write's acknowledgement by one server to its
//! receipt from another (one clock: both ends are in this process). The report then adds
//! each watch server's delivery latency (`delivery_by_server`).
//!
//! [`WatcherSet`] is also used by `mixed`.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf as _, BytesMut};
use http_body_util::BodyExt as _;
use hyper::body::Incoming;
use hyper::Method;
use serde::Deserialize;
use serde_json::json;
use tokio::sync::{mpsc, watch};

use super::{add_errors, rss_mib};
use crate::client::{encode_query, Failure, H2Conn};
use crate::ctx::Ctx;
use crate::report::{Report, Row};
use crate::setup::{cleanup_objects, ensure_namespaces, list_resource_version};
use crate::stats::{ErrorCounts, Samples};

/// How long after the last write the watchers may take to receive everything.
const DELIVERY_GRACE: Duration = Duration::from_secs(10);
/// Receipts kept per watcher (bounds memory; further deliveries are only counted).
const MAX_RECEIPTS: usize = 2_000_000;
/// Bound on a partial event line (a runaway stream must not eat memory).
const MAX_LINE: usize = 64 << 20;
/// Watches opened at the same time (more would only queue TLS handshakes on the server and
/// overflow its listen backlog).
const OPENING_AT_ONCE: usize = 128;
/// Watches per shared HTTP/2 connection (below the server's limit on concurrent streams;
/// kube-apiserver and kplane allow 1,000).
const STREAMS_PER_H2_CONN: u32 = 500;

#[derive(Deserialize)]
struct Event<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(default, borrow)]
    object: Option<EventObject<'a>>,
}

#[derive(Deserialize)]
struct EventObject<'a> {
    #[serde(default, borrow)]
    metadata: Option<EventMeta<'a>>,
}

#[derive(Deserialize)]
struct EventMeta<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
}

/// `(type, object name)` of one watch event line.
fn parse_event(line: &[u8]) -> Result<(String, Option<String>), String> {
    let e: Event<'_> = serde_json::from_slice(line).map_err(|e| e.to_string())?;
    let name = e
        .object
        .and_then(|o| o.metadata)
        .and_then(|m| m.name)
        .map(Cow::into_owned);
    Ok((e.kind.into_owned(), name))
}

/// The write index encoded in `name` if it starts with `marker` (`kb-<run>-w-<idx>`).
fn marker_index(name: &str, marker: &str) -> Option<u64> {
    name.strip_prefix(marker)?.parse().ok()
}

/// What one watcher saw.
#[derive(Default)]
struct WatcherResult {
    /// Index of the server the watch was opened on.
    server: usize,
    receipts: Vec<(u64, Instant)>,
    errors: ErrorCounts,
}

/// The server watch `i` of a set is opened on: round-robin over every server but the first
/// (which the writers use) when there are several, else the only one.
pub fn watch_server(i: usize, servers: usize) -> usize {
    if servers > 1 {
        1 + i % (servers - 1)
    } else {
        0
    }
}

/// A set of running watches.
pub struct WatcherSet {
    stop: watch::Sender<bool>,
    handles: Vec<tokio::task::JoinHandle<WatcherResult>>,
    /// Watches whose response headers arrived (2xx).
    pub established: u64,
    /// Failures to establish.
    pub setup_errors: ErrorCounts,
    /// Time from sending each watch request to its response headers (queueing for a free
    /// opening slot excluded).
    pub setup_latency: Samples,
    /// Events matching the marker, across all watchers (for waiting on delivery).
    pub matched: Arc<AtomicU64>,
    /// All events, across all watchers.
    pub events: Arc<AtomicU64>,
}

impl WatcherSet {
    /// Opens `n` watches of `path` (one connection each, or shared HTTP/2 connections with
    /// `--watch-http2`) and waits, within the setup timeout, until each is established or
    /// failed. Events whose object name starts with `marker` are recorded with their receipt
    /// time.
    pub async fn start(ctx: &Arc<Ctx>, path: String, n: u32, marker: String) -> WatcherSet {
        let (stop, stop_rx) = watch::channel(false);
        let (ready_tx, mut ready_rx) = mpsc::channel::<Result<Duration, Failure>>(n as usize);
        let matched = Arc::new(AtomicU64::new(0));
        let events = Arc::new(AtomicU64::new(0));
        let hard_stop =
            Instant::now() + ctx.opts.setup_timeout * 3 + ctx.opts.duration * 2 + ctx.opts.warmup;
        let path = Arc::new(path);
        let marker = Arc::new(marker);
        let opening = Arc::new(tokio::sync::Semaphore::new(OPENING_AT_ONCE));
        let servers = ctx.servers();
        let shared = if ctx.opts.watch_http2 {
            Some(h2_connections(ctx, n).await)
        } else {
            None
        };
        let mut handles = Vec::with_capacity(n as usize);
        for i in 0..n {
            let (ctx, path, marker) = (ctx.clone(), path.clone(), marker.clone());
            let (mut stop_rx, ready_tx) = (stop_rx.clone(), ready_tx.clone());
            let (matched, events) = (matched.clone(), events.clone());
            let opening = opening.clone();
            let server = watch_server(i as usize, servers);
            let h2 = shared.as_ref().and_then(|c| {
                c.get(server)?
                    .get(nth_on_server(i as usize, servers) / STREAMS_PER_H2_CONN as usize)
                    .cloned()
            });
            handles.push(tokio::spawn(async move {
                let mut res = WatcherResult {
                    server,
                    ..WatcherResult::default()
                };
                let mut conn = ctx.conn_at(server);
                let permit = opening.acquire_owned().await;
                let t0 = Instant::now();
                let opened = match h2 {
                    Some(Ok(h2)) => h2.stream(&path).await,
                    Some(Err(f)) => Err(f),
                    None => conn.stream(&path).await,
                };
                drop(permit);
                let body = match opened {
                    Ok(b) => {
                        let _ = ready_tx.send(Ok(t0.elapsed())).await;
                        b
                    }
                    Err(f) => {
                        let _ = ready_tx.send(Err(f)).await;
                        return res;
                    }
                };
                drop(ready_tx);
                read_events(
                    body,
                    &mut stop_rx,
                    hard_stop,
                    &marker,
                    &matched,
                    &events,
                    &mut res,
                )
                .await;
                drop(conn);
                res
            }));
        }
        drop(ready_tx);
        let mut set = WatcherSet {
            stop,
            handles,
            established: 0,
            setup_errors: ErrorCounts::default(),
            setup_latency: Samples::default(),
            matched,
            events,
        };
        let deadline = tokio::time::Instant::now() + ctx.opts.setup_timeout;
        for _ in 0..n {
            match tokio::time::timeout_at(deadline, ready_rx.recv()).await {
                Ok(Some(Ok(took))) => {
                    set.established += 1;
                    set.setup_latency.record(took);
                }
                Ok(Some(Err(f))) => set
                    .setup_errors
                    .add(&format!("watch {}", f.key()), &f.message()),
                Ok(None) => break,
                Err(_) => {
                    set.setup_errors.add(
                        "watch timeout",
                        "watchers not established within --setup-timeout",
                    );
                    break;
                }
            }
        }
        set
    }

    /// Stops all watchers and collects what they saw.
    async fn finish(self) -> (Vec<WatcherResult>, ErrorCounts) {
        let _ = self.stop.send(true);
        let mut errors = self.setup_errors;
        let mut out = Vec::new();
        for h in self.handles {
            match h.await {
                Ok(r) => out.push(r),
                Err(e) => errors.add("panic", &e.to_string()),
            }
        }
        (out, errors)
    }

    /// Stops all watchers; returns their errors (receipts are dropped).
    pub async fn stop(self) -> ErrorCounts {
        let (results, mut errors) = self.finish().await;
        for r in results {
            errors.merge(r.errors);
        }
        errors
    }
}

async fn read_events(
    mut body: Incoming,
    stop: &mut watch::Receiver<bool>,
    hard_stop: Instant,
    marker: &str,
    matched: &AtomicU64,
    events: &AtomicU64,
    res: &mut WatcherResult,
) {
    let mut buf = BytesMut::new();
    let hard_stop = tokio::time::Instant::from_std(hard_stop);
    loop {
        let frame = tokio::select! {
            _ = stop.changed() => return,
            _ = tokio::time::sleep_until(hard_stop) => {
                res.errors.add("watch timeout", "watch still running at the hard stop");
                return;
            }
            f = body.frame() => f,
        };
        let data = match frame {
            None => {
                if !*stop.borrow() {
                    res.errors
                        .add("watch_closed", "the server ended a watch early");
                }
                return;
            }
            Some(Err(e)) => {
                res.errors.add("watch transport", &e.to_string());
                return;
            }
            Some(Ok(f)) => match f.into_data() {
                Ok(d) => d,
                Err(_) => continue, // trailers
            },
        };
        let now = Instant::now();
        buf.extend_from_slice(&data);
        while let Some(pos) = buf.iter().position(|&b| b == b'\n') {
            let line = buf.split_to(pos + 1);
            let line = &line[..pos];
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            events.fetch_add(1, Ordering::Relaxed);
            match parse_event(line) {
                Ok((kind, _)) if kind == "ERROR" => {
                    res.errors
                        .add("watch_error_event", &String::from_utf8_lossy(line));
                }
                Ok((_, Some(name))) => {
                    if let Some(i) = marker_index(&name, marker) {
                        matched.fetch_add(1, Ordering::Relaxed);
                        if res.receipts.len() < MAX_RECEIPTS {
                            res.receipts.push((i, now));
                        }
                    }
                }
                Ok((_, None)) => {}
                Err(e) => res
                    .errors
                    .add("watch protocol", &format!("bad event line: {e}")),
            }
        }
        if buf.len() > MAX_LINE {
            res.errors
                .add("watch protocol", "event line longer than 64 MiB");
            return;
        }
        if buf.is_empty() {
            buf.clear();
        } else if buf.capacity() > 4 * buf.len() + (1 << 20) {
            let rest = buf.copy_to_bytes(buf.len());
            buf = BytesMut::from(&rest[..]);
        }
    }
}

/// The position of watch `i` among the watches on its server.
fn nth_on_server(i: usize, servers: usize) -> usize {
    if servers > 1 {
        i / (servers - 1)
    } else {
        i
    }
}

/// The shared HTTP/2 connections for `n` watches, per server (`STREAMS_PER_H2_CONN`
/// watches each), opened one after another; a connection that failed is reported by every
/// watch meant for it.
async fn h2_connections(ctx: &Ctx, n: u32) -> Vec<Vec<Result<H2Conn, Failure>>> {
    let servers = ctx.servers();
    let mut per_server = vec![0u32; servers];
    for i in 0..n as usize {
        per_server[watch_server(i, servers)] += 1;
    }
    let mut conns = Vec::new();
    for (s, count) in per_server.into_iter().enumerate() {
        let mut v = Vec::new();
        for _ in 0..count.div_ceil(STREAMS_PER_H2_CONN) {
            v.push(H2Conn::connect(ctx.targets[s].clone()).await);
        }
        conns.push(v);
    }
    conns
}

/// Connections the watches of this run need (file descriptors on both sides).
fn watch_connections(ctx: &Ctx) -> u64 {
    let w = ctx.opts.watchers;
    let conns = if ctx.opts.watch_http2 {
        w.div_ceil(STREAMS_PER_H2_CONN) + ctx.servers() as u32
    } else {
        w
    };
    u64::from(conns) + u64::from(ctx.opts.concurrency)
}

/// The watch scenario.
pub async fn run(ctx: &Arc<Ctx>) -> Report {
    let mut report = Report::new("watch");
    let scope = ctx.base_scope();
    let w = ctx.opts.watchers;
    let rate = f64::from(ctx.opts.watch_rate);
    report.set("watchers", w);
    report.set("write_rate", ctx.opts.watch_rate);
    let writers = if ctx.opts.watch_rate == 0 {
        0
    } else {
        ctx.opts.concurrency
    };
    report.set("writers", writers);
    report.set("size", ctx.opts.size);
    report.set("servers", ctx.servers());
    add_errors(
        &mut report,
        ensure_namespaces(ctx, std::slice::from_ref(&scope)).await,
        "setup ",
    );

    let selector = encode_query(&ctx.selector("watch"));
    let mut conn = ctx.conn();
    let list = format!("{}?labelSelector={selector}", scope.configmaps());
    let rv = match conn
        .call_ok(Method::GET, &list, None)
        .await
        .and_then(|b| list_resource_version(&b))
    {
        Ok(rv) => rv,
        Err(f) => {
            report
                .errors
                .add(&format!("setup {}", f.key()), &f.message());
            return report;
        }
    };
    let timeout_secs = (ctx.opts.duration + ctx.opts.setup_timeout * 2).as_secs() + 60;
    let path = format!("{list}&watch=true&resourceVersion={rv}&timeoutSeconds={timeout_secs}");
    if let Some(w) = crate::fdlimit::shortfall(crate::fdlimit::soft_limit(), watch_connections(ctx))
    {
        crate::runner::note(&format!("watch: warning: {w}"));
    }
    crate::runner::note(&format!("watch: opening {w} watches"));
    let marker = format!("kb-{}-w-", ctx.run);
    let mut rss = json!({});
    if let Some(m) = rss_mib(ctx.opts.server_pid) {
        rss["watchers_opening"] = json!(m);
    }
    let opening = Instant::now();
    let set = WatcherSet::start(ctx, path, w, marker).await;
    let opening_seconds = opening.elapsed().as_secs_f64();
    let established = set.established;
    report.set("watchers_established", established);
    report.set("http2", ctx.opts.watch_http2);
    if let Some(m) = rss_mib(ctx.opts.server_pid) {
        rss["watchers_established"] = json!(m);
    }
    report.set("server_rss_mib", rss);
    if ctx.opts.watch_rate == 0 {
        hold_idle(ctx, &mut report, set, opening_seconds).await;
        add_errors(
            &mut report,
            cleanup_objects(ctx, &[scope], "watch").await,
            "cleanup ",
        );
        return report;
    }

    // Writers: writer k sends its j-th write (global index j*C+k) at start + (j*C+k)/rate.
    let c = u64::from(ctx.opts.concurrency);
    let start = Instant::now();
    let deadline = start + ctx.opts.duration;
    let max_writes = ctx.opts.count.unwrap_or(u64::MAX);
    let mut handles = Vec::new();
    for k in 0..c {
        let ctx = ctx.clone();
        let scope = scope.clone();
        handles.push(tokio::spawn(async move {
            // The first server: the watches are on the others.
            let mut conn = ctx.conn_at(0);
            let mut acks: Vec<(u64, Instant)> = Vec::new();
            let mut lat = Samples::default();
            let mut errors = ErrorCounts::default();
            let mut j = 0u64;
            loop {
                let idx = j * c + k;
                j += 1;
                if idx >= max_writes {
                    break;
                }
                let at = start + Duration::from_secs_f64(idx as f64 / rate);
                if at >= deadline {
                    break;
                }
                tokio::time::sleep_until(tokio::time::Instant::from_std(at)).await;
                let name = format!("kb-{}-w-{idx}", ctx.run);
                let body = ctx.configmap_body(&scope, &name, "watch");
                let t0 = Instant::now();
                match conn
                    .call_ok(Method::POST, &scope.configmaps(), Some(body))
                    .await
                {
                    Ok(_) => {
                        let t1 = Instant::now();
                        lat.record(t1 - t0);
                        acks.push((idx, t1));
                    }
                    Err(f) => errors.add(&f.key(), &f.message()),
                }
            }
            (acks, lat, errors)
        }));
    }
    let mut acks: Vec<(u64, Instant)> = Vec::new();
    let mut write_lat = Samples::default();
    for h in handles {
        match h.await {
            Ok((a, l, e)) => {
                acks.extend(a);
                write_lat.merge(l);
                report.errors.merge(e);
            }
            Err(e) => report.errors.add("panic", &e.to_string()),
        }
    }
    let write_seconds = start.elapsed().as_secs_f64();
    let writes = acks.len() as u64;
    let expected = writes * established;

    // Wait (bounded) until every watcher has seen every acknowledged write.
    let grace_end = Instant::now() + DELIVERY_GRACE;
    while set.matched.load(Ordering::Relaxed) < expected && Instant::now() < grace_end {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (results, watch_errors) = set.finish().await;
    report.errors.merge(watch_errors);

    let max_idx = acks.iter().map(|a| a.0).max().unwrap_or(0) as usize;
    let mut ack_at: Vec<Option<Instant>> = vec![None; max_idx + 1];
    for (i, t) in &acks {
        if let Some(slot) = ack_at.get_mut(*i as usize) {
            *slot = Some(*t);
        }
    }
    let mut deliveries = Samples::default();
    let mut by_server: Vec<Samples> = vec![Samples::default(); ctx.servers()];
    let mut delivered = 0u64;
    for r in results {
        let mut seen = vec![false; ack_at.len()];
        for (i, t) in r.receipts {
            let i = i as usize;
            if let (Some(Some(ack)), Some(s)) = (ack_at.get(i), seen.get_mut(i)) {
                if !*s {
                    *s = true;
                    delivered += 1;
                    let d = t.saturating_duration_since(*ack);
                    deliveries.record(d);
                    if let Some(b) = by_server.get_mut(r.server) {
                        b.record(d);
                    }
                }
            }
        }
        report.errors.merge(r.errors);
    }
    if ctx.servers() > 1 {
        let per: serde_json::Map<String, serde_json::Value> = by_server
            .into_iter()
            .enumerate()
            .skip(1)
            .map(|(s, samples)| (s.to_string(), samples.summary().to_json()))
            .collect();
        report.set("delivery_by_server", serde_json::Value::Object(per));
    }
    let missed = expected.saturating_sub(delivered);
    report.errors.add_n(
        "missed_delivery",
        missed,
        "acknowledged writes not delivered to every watcher within the grace period",
    );
    report.ops = writes;
    report.seconds = write_seconds;
    report.latency = deliveries.summary();
    report.set("deliveries", delivered);
    report.set("expected_deliveries", expected);
    let write_summary = write_lat.summary();
    report.set("write_latency_ms", write_summary.to_json());
    report.rows.push(Row {
        label: "write (ack)".into(),
        ops: writes,
        seconds: write_seconds,
        latency: write_summary,
        errors: String::new(),
    });
    add_errors(
        &mut report,
        cleanup_objects(ctx, &[scope], "watch").await,
        "cleanup ",
    );
    report
}

/// `--watch-rate 0`: keeps the established watches idle for `--duration`, then reads the
/// server's memory and closes them. Ops are the established watches, seconds the time it
/// took to open them all, latency the time each took to establish.
async fn hold_idle(ctx: &Ctx, report: &mut Report, mut set: WatcherSet, opening_seconds: f64) {
    let established = set.established;
    let setup_latency = std::mem::take(&mut set.setup_latency);
    crate::runner::note(&format!(
        "watch: {established} watches established; holding them idle for {:?}",
        ctx.opts.duration
    ));
    tokio::time::sleep(ctx.opts.duration).await;
    if let Some(m) = rss_mib(ctx.opts.server_pid) {
        let mut rss = report
            .extra
            .get("server_rss_mib")
            .cloned()
            .unwrap_or_else(|| json!({}));
        rss["idle_end"] = json!(m);
        if let (Some(open), true) = (rss["watchers_opening"].as_f64(), established > 0) {
            let per_watch = (m - open) * 1024.0 / established as f64;
            report.set(
                "server_rss_kib_per_watch",
                (per_watch * 10.0).round() / 10.0,
            );
        }
        report.set("server_rss_mib", rss);
    }
    let events = set.events.load(Ordering::Relaxed);
    report.errors.merge(set.stop().await);
    report.ops = established;
    report.seconds = opening_seconds;
    report.latency = setup_latency.summary();
    report.set("idle", true);
    report.set("events", events);
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn watches_go_to_the_servers_but_the_first() {
        let on =
            |servers: usize| -> Vec<usize> { (0..6).map(|i| watch_server(i, servers)).collect() };
        assert_eq!(on(1), vec![0; 6]);
        assert_eq!(on(2), vec![1; 6]);
        assert_eq!(on(3), vec![1, 2, 1, 2, 1, 2]);
        let nth: Vec<usize> = (0..6).map(|i| nth_on_server(i, 3)).collect();
        assert_eq!(nth, vec![0, 0, 1, 1, 2, 2]);
        assert_eq!(nth_on_server(5, 1), 5);
    }

    #[test]
    fn parses_events() {
        let (k, n) = parse_event(br#"{"type":"ADDED","object":{"kind":"ConfigMap","metadata":{"name":"kb-ab-w-12","labels":{"name":"x"}},"data":{"name":"y"}}}"#).unwrap();
        assert_eq!((k.as_str(), n.as_deref()), ("ADDED", Some("kb-ab-w-12")));
        assert_eq!(marker_index("kb-ab-w-12", "kb-ab-w-"), Some(12));
        assert_eq!(marker_index("kb-ab-x-12", "kb-ab-w-"), None);
        assert_eq!(marker_index("kb-ab-w-1x", "kb-ab-w-"), None);
        let (k, n) =
            parse_event(br#"{"type":"ERROR","object":{"kind":"Status","code":410}}"#).unwrap();
        assert_eq!((k.as_str(), n), ("ERROR", None));
        let (k, _) =
            parse_event(br#"{"type":"BOOKMARK","object":{"metadata":{"resourceVersion":"5"}}}"#)
                .unwrap();
        assert_eq!(k, "BOOKMARK");
        assert!(parse_event(b"{").is_err());
    }
}
