//! What the workspace scenarios share (kplane's `tenancy.kplane.io/v1alpha1` Workspaces,
//! standard REST): Workspace bodies and paths, one watch on the Workspaces of the
//! kubeconfig's logical cluster that tells waiters when a Workspace turns Ready or is gone
//! (and notices a Workspace reported Ready after it was marked for deletion), and creating
//! or deleting many Workspaces with `--concurrency` clients.
//!
//! Waiters register before their request is sent, so no event can be missed; a watch that
//! the server ends is resumed from the last resourceVersion it delivered. A wait that the
//! watch does not end within the request timeout falls back to one GET (a missed event is
//! counted as `watch_missed`, never silently).

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::{Bytes, BytesMut};
use http_body_util::BodyExt as _;
use hyper::Method;
use serde_json::Value;
use tokio::sync::{oneshot, watch};

use crate::client::{Failure, Reply};
use crate::ctx::{Ctx, Scope, RUN_LABEL, SCENARIO_LABEL};
use crate::report::Report;
use crate::setup::join_errors;
use crate::stats::{ErrorCounts, Samples};

/// The Workspaces collection below a cluster prefix.
pub const WORKSPACES: &str = "/apis/tenancy.kplane.io/v1alpha1/workspaces";
/// Longest watch event line accepted.
const MAX_LINE: usize = 16 << 20;

/// `{prefix}/apis/tenancy.kplane.io/v1alpha1/workspaces` of the kubeconfig's cluster.
pub fn collection(ctx: &Ctx) -> String {
    format!("{}{WORKSPACES}", ctx.endpoint.server.path)
}

/// The JSON of a new Workspace `name`, labelled with the run and `scenario`.
pub fn body(ctx: &Ctx, name: &str, scenario: &str) -> Bytes {
    Bytes::from(format!(
        "{{\"apiVersion\":\"tenancy.kplane.io/v1alpha1\",\"kind\":\"Workspace\",\"metadata\":{{\"name\":\"{name}\",\"labels\":{{\"{RUN_LABEL}\":\"{}\",\"{SCENARIO_LABEL}\":\"{scenario}\"}}}}}}",
        ctx.run
    ))
}

/// The scope (`--namespace` in the child cluster) of Workspace `name`, or `None` when the
/// server URL names no logical cluster.
pub fn child_scope(ctx: &Ctx, name: &str, namespace: &str) -> Option<Scope> {
    Some(Scope {
        prefix: ctx.endpoint.server.child_cluster_path(name)?,
        namespace: namespace.to_string(),
    })
}

/// What the watch knows and who waits for what.
#[derive(Default)]
struct State {
    ready_waiters: HashMap<String, oneshot::Sender<Instant>>,
    gone_waiters: HashMap<String, oneshot::Sender<Instant>>,
    /// Workspaces seen marked for deletion: name → uid.
    deleting: HashMap<String, String>,
    /// Events that reported a Workspace Ready after (or while) it was marked for deletion.
    ready_after_delete: u64,
    example: Option<String>,
    events: u64,
    /// resourceVersion of the last event (to resume after the server ends the watch).
    last_rv: String,
}

/// What every workspace scenario starts with: a kubeconfig whose server URL names a
/// logical cluster (kcp-style), and one watch on that cluster's Workspaces. `None`, with the
/// error counted in `report`, when either is missing.
pub async fn start_for(
    ctx: &Arc<Ctx>,
    report: &mut Report,
    scenario: &str,
) -> Option<Arc<WsWatch>> {
    if ctx.endpoint.server.logical_cluster().is_none() {
        report.errors.add(
            "unsupported",
            &format!(
                "the {scenario} scenario needs a server URL ending in /clusters/<name> (kcp-style)"
            ),
        );
        return None;
    }
    WsWatch::start_reported(ctx, report).await
}

/// One watch on the Workspaces of the kubeconfig's cluster.
pub struct WsWatch {
    state: Arc<Mutex<State>>,
    stop: watch::Sender<bool>,
    task: Mutex<Option<tokio::task::JoinHandle<ErrorCounts>>>,
}

impl WsWatch {
    /// [`WsWatch::start`], a failure counted in `report` (`None` then).
    pub async fn start_reported(ctx: &Arc<Ctx>, report: &mut Report) -> Option<Arc<WsWatch>> {
        match WsWatch::start(ctx).await {
            Ok(w) => Some(Arc::new(w)),
            Err(f) => {
                report
                    .errors
                    .add(&f.key(), &format!("watching workspaces: {f}"));
                None
            }
        }
    }

    /// Lists once for a resourceVersion and starts watching from it.
    pub async fn start(ctx: &Arc<Ctx>) -> Result<WsWatch, Failure> {
        let mut conn = ctx.setup_conn();
        let list = conn
            .call_ok(Method::GET, &format!("{}?limit=1", collection(ctx)), None)
            .await?;
        let rv = crate::setup::list_resource_version(&list)?;
        let state = Arc::new(Mutex::new(State {
            last_rv: rv,
            ..State::default()
        }));
        let (stop, stop_rx) = watch::channel(false);
        let task = tokio::spawn(run_watch(ctx.clone(), state.clone(), stop_rx));
        Ok(WsWatch {
            state,
            stop,
            task: Mutex::new(Some(task)),
        })
    }

    fn state(&self) -> MutexGuard<'_, State> {
        lock(&self.state)
    }

    /// Registers interest in `name` turning Ready (call before creating it).
    pub fn expect_ready(&self, name: &str) -> oneshot::Receiver<Instant> {
        let (tx, rx) = oneshot::channel();
        self.state().ready_waiters.insert(name.to_string(), tx);
        rx
    }

    /// Registers interest in `name` being gone (call before deleting it).
    pub fn expect_gone(&self, name: &str) -> oneshot::Receiver<Instant> {
        let (tx, rx) = oneshot::channel();
        self.state().gone_waiters.insert(name.to_string(), tx);
        rx
    }

    /// Forgets the waiters of `name` (its request failed).
    pub fn cancel(&self, name: &str) {
        let mut s = self.state();
        s.ready_waiters.remove(name);
        s.gone_waiters.remove(name);
    }

    /// Events that reported a deleted Workspace Ready, with an example.
    pub fn ready_after_delete(&self) -> (u64, Option<String>) {
        let s = self.state();
        (s.ready_after_delete, s.example.clone())
    }

    /// Watch events received.
    pub fn events(&self) -> u64 {
        self.state().events
    }

    /// Ends the watch; returns its failures.
    pub async fn stop(&self) -> ErrorCounts {
        let _ = self.stop.send(true);
        let task = self.task.lock().ok().and_then(|mut t| t.take());
        let Some(task) = task else {
            return ErrorCounts::default();
        };
        match task.await {
            Ok(e) => e,
            Err(e) => {
                let mut errors = ErrorCounts::default();
                errors.add("panic", &e.to_string());
                errors
            }
        }
    }
}

fn lock(m: &Mutex<State>) -> MutexGuard<'_, State> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Watches until stopped, resuming from the last resourceVersion when the server ends the
/// watch (at most 1,000 times: a server that keeps ending it is reported, not hammered).
async fn run_watch(
    ctx: Arc<Ctx>,
    state: Arc<Mutex<State>>,
    mut stop: watch::Receiver<bool>,
) -> ErrorCounts {
    let mut errors = ErrorCounts::default();
    let mut conn = ctx.conn();
    for _ in 0..1000 {
        if *stop.borrow() {
            break;
        }
        let rv = lock(&state).last_rv.clone();
        let path = format!(
            "{}?watch=1&allowWatchBookmarks=true&resourceVersion={}",
            collection(&ctx),
            crate::client::encode_query(&rv)
        );
        let body = tokio::select! {
            _ = stop.changed() => break,
            b = conn.stream(&path) => b,
        };
        let mut body = match body {
            Ok(b) => b,
            Err(f) => {
                errors.add(&format!("watch {}", f.key()), &f.message());
                tokio::time::sleep(Duration::from_millis(200)).await;
                continue;
            }
        };
        let mut buf = BytesMut::new();
        loop {
            let frame = tokio::select! {
                _ = stop.changed() => return errors,
                f = body.frame() => f,
            };
            let data = match frame {
                None => break,
                Some(Err(e)) => {
                    errors.add("watch transport", &e.to_string());
                    break;
                }
                Some(Ok(f)) => match f.into_data() {
                    Ok(d) => d,
                    Err(_) => continue,
                },
            };
            buf.extend_from_slice(&data);
            while let Some(pos) = buf.iter().position(|&b| b == b'\n') {
                let line = buf.split_to(pos + 1);
                if let Err(e) = handle_event(&state, &line[..pos]) {
                    errors.add("watch protocol", &e);
                }
            }
            if buf.len() > MAX_LINE {
                errors.add("watch protocol", "event line longer than 16 MiB");
                break;
            }
        }
        // A new connection for the resumed watch.
        conn = ctx.conn();
    }
    errors
}

/// Applies one watch event line to `state`.
fn handle_event(state: &Mutex<State>, line: &[u8]) -> Result<(), String> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return Ok(());
    }
    let ev: Value = serde_json::from_slice(line).map_err(|e| format!("bad event line: {e}"))?;
    let kind = ev["type"].as_str().unwrap_or_default();
    let obj = &ev["object"];
    if kind == "ERROR" {
        return Err(format!("watch error event: {obj}"));
    }
    let meta = &obj["metadata"];
    let mut s = lock(state);
    if let Some(rv) = meta["resourceVersion"].as_str() {
        s.last_rv = rv.to_string();
    }
    if kind == "BOOKMARK" {
        return Ok(());
    }
    s.events += 1;
    let name = meta["name"].as_str().unwrap_or_default().to_string();
    let uid = meta["uid"].as_str().unwrap_or_default().to_string();
    let phase = obj["status"]["phase"].as_str().unwrap_or_default();
    let marked = meta.get("deletionTimestamp").is_some_and(|d| !d.is_null());
    if kind == "DELETED" {
        s.deleting.remove(&name);
        if let Some(tx) = s.gone_waiters.remove(&name) {
            let _ = tx.send(Instant::now());
        }
        return Ok(());
    }
    let was_deleting = s.deleting.get(&name).is_some_and(|u| *u == uid);
    if phase == "Ready" && (marked || was_deleting) {
        s.ready_after_delete += 1;
        if s.example.is_none() {
            s.example = Some(String::from_utf8_lossy(line).chars().take(600).collect());
        }
    }
    if marked || phase == "Terminating" {
        s.deleting.insert(name.clone(), uid);
    } else if phase == "Ready" {
        if let Some(tx) = s.ready_waiters.remove(&name) {
            let _ = tx.send(Instant::now());
        }
    }
    Ok(())
}

/// Waits for `rx` within the request timeout; then asks the server once (`check`: the GET
/// reply of the Workspace says the wait is over) and counts a missed event.
pub async fn wait(
    ctx: &Ctx,
    conn: &mut crate::client::Conn,
    rx: oneshot::Receiver<Instant>,
    name: &str,
    check: fn(&Reply) -> bool,
    missed: &mut ErrorCounts,
) -> Result<(), Failure> {
    if let Ok(Ok(_)) = tokio::time::timeout(ctx.opts.request_timeout, rx).await {
        return Ok(());
    }
    let r = conn
        .call(Method::GET, &format!("{}/{name}", collection(ctx)), None)
        .await?;
    if check(&r) {
        missed.add(
            "watch_missed",
            "the watch did not report a change a GET saw",
        );
        Ok(())
    } else {
        Err(Failure::Timeout)
    }
}

/// The GET of a Workspace shows it Ready.
pub fn is_ready(r: &Reply) -> bool {
    r.status == 200
        && serde_json::from_slice::<Value>(&r.body).is_ok_and(|v| {
            v["status"]["phase"] == "Ready" && v["metadata"]["deletionTimestamp"].is_null()
        })
}

/// The GET of a Workspace says it is gone.
pub fn is_gone(r: &Reply) -> bool {
    r.status == 404
}

/// Creates Workspace `name` and waits until it is Ready.
pub async fn create_ready(
    ctx: &Ctx,
    conn: &mut crate::client::Conn,
    watch: &WsWatch,
    name: &str,
    scenario: &str,
    missed: &mut ErrorCounts,
) -> Result<(), Failure> {
    let rx = watch.expect_ready(name);
    if let Err(f) = conn
        .call_ok(
            Method::POST,
            &collection(ctx),
            Some(body(ctx, name, scenario)),
        )
        .await
    {
        watch.cancel(name);
        return Err(f);
    }
    wait(ctx, conn, rx, name, is_ready, missed).await
}

/// Creates the Workspaces `names` and waits until each is Ready, with `--concurrency`
/// clients, within the setup timeout. Returns the failures.
pub async fn create_all(
    ctx: &Arc<Ctx>,
    watch: &Arc<WsWatch>,
    names: Arc<Vec<String>>,
    scenario: &'static str,
) -> ErrorCounts {
    let next = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + ctx.opts.setup_timeout;
    let mut handles = Vec::new();
    for _ in 0..(ctx.opts.concurrency as usize).min(names.len()) {
        let (ctx, watch, names, next) = (ctx.clone(), watch.clone(), names.clone(), next.clone());
        handles.push(tokio::spawn(async move {
            let mut errors = ErrorCounts::default();
            let mut conn = ctx.conn();
            while Instant::now() < deadline {
                let Some(name) = names.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    break;
                };
                if let Err(f) =
                    create_ready(&ctx, &mut conn, &watch, name, scenario, &mut errors).await
                {
                    errors.add(&f.key(), &format!("creating workspace {name}: {f}"));
                }
            }
            errors
        }));
    }
    join_errors(handles).await
}

/// What [`delete_all`] measured.
pub struct Deleted {
    /// From the first DELETE until the last Workspace was gone.
    pub seconds: f64,
    /// When every DELETE request had been answered (the rest is the server's background
    /// work).
    pub requests_done: Instant,
    /// Each Workspace's time from its DELETE until it was gone.
    pub per_workspace: Samples,
    pub errors: ErrorCounts,
}

/// Deletes the Workspaces `names` with `--concurrency` clients (requests only; the server
/// deletes their clusters in the background), then waits until every one is gone, within
/// the setup timeout.
pub async fn delete_all(ctx: &Arc<Ctx>, watch: &Arc<WsWatch>, names: Arc<Vec<String>>) -> Deleted {
    let start = Instant::now();
    let deadline = start + ctx.opts.setup_timeout;
    let next = Arc::new(AtomicUsize::new(0));
    let pending = Arc::new(Mutex::new(Vec::with_capacity(names.len())));
    let mut handles = Vec::new();
    for _ in 0..(ctx.opts.concurrency as usize).min(names.len()) {
        let (ctx, watch, names, next, pending) = (
            ctx.clone(),
            watch.clone(),
            names.clone(),
            next.clone(),
            pending.clone(),
        );
        handles.push(tokio::spawn(async move {
            let mut errors = ErrorCounts::default();
            let mut conn = ctx.conn();
            while Instant::now() < deadline {
                let Some(name) = names.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    break;
                };
                let rx = watch.expect_gone(name);
                let sent = Instant::now();
                let path = format!("{}/{name}", collection(&ctx));
                match conn.call(Method::DELETE, &path, None).await {
                    Ok(r) if (200..300).contains(&r.status) || r.status == 404 => {
                        if let Ok(mut p) = pending.lock() {
                            p.push((name.clone(), sent, rx));
                        }
                    }
                    Ok(r) => {
                        watch.cancel(name);
                        let f = crate::client::status_failure(r.status, &r.body);
                        errors.add(&f.key(), &format!("deleting workspace {name}: {f}"));
                    }
                    Err(f) => {
                        watch.cancel(name);
                        errors.add(&f.key(), &format!("deleting workspace {name}: {f}"));
                    }
                }
            }
            errors
        }));
    }
    let mut errors = join_errors(handles).await;
    let requests_done = Instant::now();
    let pending = pending
        .lock()
        .map(|mut p| std::mem::take(&mut *p))
        .unwrap_or_default();
    let mut samples = Samples::default();
    let mut last = start;
    let mut conn = ctx.setup_conn();
    for (name, sent, rx) in pending {
        let left = deadline.saturating_duration_since(Instant::now());
        let gone = match tokio::time::timeout(left, rx).await {
            Ok(Ok(at)) => Some(at),
            _ => {
                // The watch said nothing in time: ask once.
                let path = format!("{}/{name}", collection(ctx));
                match conn.call(Method::GET, &path, None).await {
                    Ok(r) if is_gone(&r) => {
                        errors.add("watch_missed", "the watch did not report a deletion");
                        Some(Instant::now())
                    }
                    Ok(_) => {
                        errors.add("timeout", &format!("workspace {name} still there"));
                        None
                    }
                    Err(f) => {
                        errors.add(&f.key(), &format!("checking workspace {name}: {f}"));
                        None
                    }
                }
            }
        };
        if let Some(at) = gone {
            last = last.max(at);
            samples.record(at.saturating_duration_since(sent));
        }
    }
    Deleted {
        seconds: (last - start).as_secs_f64(),
        requests_done,
        per_workspace: samples,
        errors,
    }
}

/// The Workspaces behind `--cluster-spread`'s clusters (`kb-<run>-s<i>`).
pub struct SpreadWorkspaces {
    watch: Arc<WsWatch>,
    names: Arc<Vec<String>>,
}

impl SpreadWorkspaces {
    /// Creates the Workspaces of the spread clusters and waits until each is Ready.
    pub async fn create(ctx: &Arc<Ctx>) -> Result<SpreadWorkspaces, ErrorCounts> {
        let watch = match WsWatch::start(ctx).await {
            Ok(w) => Arc::new(w),
            Err(f) => {
                let mut errors = ErrorCounts::default();
                errors.add(&f.key(), &format!("watching workspaces: {f}"));
                return Err(errors);
            }
        };
        let names: Arc<Vec<String>> = Arc::new(
            (0..ctx.opts.cluster_spread)
                .map(|i| format!("kb-{}-s{i}", ctx.run))
                .collect(),
        );
        let errors = create_all(ctx, &watch, names.clone(), "spread").await;
        let spread = SpreadWorkspaces { watch, names };
        if errors.is_empty() {
            Ok(spread)
        } else {
            let mut errors = errors;
            errors.merge(spread.delete(ctx).await);
            Err(errors)
        }
    }

    /// Deletes them (unless `--keep`) and waits until they are gone.
    pub async fn delete(self, ctx: &Arc<Ctx>) -> ErrorCounts {
        let mut errors = if ctx.opts.keep {
            ErrorCounts::default()
        } else {
            delete_all(ctx, &self.watch, self.names.clone())
                .await
                .errors
        };
        errors.merge(self.watch.stop().await);
        errors
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn events_wake_waiters_and_a_deleted_workspace_reported_ready_is_counted() {
        let state = Mutex::new(State::default());
        let (tx, mut ready) = oneshot::channel::<Instant>();
        lock(&state).ready_waiters.insert("a".into(), tx);
        let (tx, mut gone) = oneshot::channel::<Instant>();
        lock(&state).gone_waiters.insert("a".into(), tx);
        let ev = |t: &str, phase: &str, del: bool, uid: &str| {
            let d = if del {
                ",\"deletionTimestamp\":\"2024-01-01T00:00:00Z\""
            } else {
                ""
            };
            format!("{{\"type\":\"{t}\",\"object\":{{\"metadata\":{{\"name\":\"a\",\"uid\":\"{uid}\",\"resourceVersion\":\"7\"{d}}},\"status\":{{\"phase\":\"{phase}\"}}}}}}")
        };
        handle_event(&state, ev("ADDED", "Initializing", false, "u1").as_bytes()).unwrap();
        assert!(ready.try_recv().is_err());
        handle_event(&state, ev("MODIFIED", "Ready", false, "u1").as_bytes()).unwrap();
        assert!(ready.try_recv().is_ok());
        handle_event(&state, ev("MODIFIED", "Terminating", true, "u1").as_bytes()).unwrap();
        assert_eq!(lock(&state).ready_after_delete, 0);
        // Ready again for the same uid after the mark: a violation.
        handle_event(&state, ev("MODIFIED", "Ready", false, "u1").as_bytes()).unwrap();
        assert_eq!(lock(&state).ready_after_delete, 1);
        handle_event(&state, ev("MODIFIED", "Ready", true, "u1").as_bytes()).unwrap();
        assert_eq!(lock(&state).ready_after_delete, 2);
        assert!(gone.try_recv().is_err());
        handle_event(&state, ev("DELETED", "Terminating", true, "u1").as_bytes()).unwrap();
        assert!(gone.try_recv().is_ok());
        // A new Workspace of the same name may be Ready.
        handle_event(&state, ev("ADDED", "Ready", false, "u2").as_bytes()).unwrap();
        assert_eq!(lock(&state).ready_after_delete, 2);
        assert_eq!(lock(&state).last_rv, "7");
        assert!(handle_event(&state, b"{\"type\":\"ERROR\",\"object\":{}}").is_err());
        assert!(handle_event(&state, b"nope").is_err());
    }
}
