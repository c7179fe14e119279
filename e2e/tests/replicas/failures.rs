//! Replicas under failure: kill -9 of replica A during 500 concurrent writes loses no
//! acknowledged write (B serves every one); the database stopped and started again under
//! load gives clients errors that are `Status` objects (5xx), never hangs, and both
//! replicas recover without a restart; a watch resumed on B from the last resourceVersion
//! seen on A sees no gap.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, ensure, Context as _, Result};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::core::v1::ConfigMap;
use kplane_e2e::{eventually, poll_until, KplaneServer};
use kube::api::{ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::Api;

use super::{Replicas, CONVERGE_TIMEOUT};

/// Concurrent writers through the replica that is killed.
const WRITERS: usize = 500;
/// Acknowledged writes before the kill (so the kill lands while writes are in flight).
const KILL_AFTER: usize = 1_000;
/// A generous bound for phases that normally take seconds (against hangs, not timing).
const PHASE_TIMEOUT: Duration = Duration::from_secs(180);
/// The clients' bound on one request: above the backend's 30 s statement timeout and
/// 10 s connection wait, so only a hanging request reaches it.
const CLIENT_TIMEOUT: Duration = Duration::from_secs(75);
/// Sequential updates of one object while its watch moves from A to B.
const UPDATES: usize = 300;
/// The update after which the watch on A is dropped and resumed on B.
const SWITCH_AT: usize = 100;

fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting a runtime")
}

fn configmap(name: &str, data: &[(&str, &str)]) -> ConfigMap {
    let mut cm = ConfigMap::default();
    cm.metadata.name = Some(name.to_owned());
    cm.data = Some(
        data.iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect(),
    );
    cm
}

/// A client of `server`'s admin kubeconfig whose every request ends within
/// [`CLIENT_TIMEOUT`] and is not retried.
async fn bounded_client(server: &KplaneServer) -> Result<kube::Client> {
    let kubeconfig = Kubeconfig::read_from(server.kubeconfig())?;
    let mut config =
        kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default()).await?;
    config.connect_timeout = Some(CLIENT_TIMEOUT);
    config.read_timeout = Some(CLIENT_TIMEOUT);
    config.write_timeout = Some(CLIENT_TIMEOUT);
    // Every answer reaches the test (kube-rs would retry 503/504 with backoff).
    config.default_retry = false;
    kube::Client::try_from(config).context("building a client")
}

/// Every ConfigMap name in `namespace`, read in pages of 500.
async fn all_names(api: &Api<ConfigMap>) -> Result<BTreeSet<String>> {
    let mut names = BTreeSet::new();
    let mut params = ListParams::default().limit(500);
    loop {
        let page = api.list(&params).await?;
        names.extend(page.items.into_iter().filter_map(|cm| cm.metadata.name));
        match page.metadata.continue_ {
            Some(token) if !token.is_empty() => params = params.continue_token(&token),
            _ => return Ok(names),
        }
    }
}

/// Writer `w`: creates `w<w>-<i>` through `api` until a request fails without a Status
/// (the replica is gone); records each acknowledged name.
async fn write_until_gone(api: Api<ConfigMap>, w: usize, acked: Arc<Mutex<Vec<String>>>) {
    for i in 0.. {
        let name = format!("w{w}-{i}");
        match api
            .create(&PostParams::default(), &configmap(&name, &[("i", "1")]))
            .await
        {
            Ok(_) => acked
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(name),
            // A Status (e.g. a 5xx under load): the replica is alive, go on.
            Err(kube::Error::Api(_)) => tokio::time::sleep(Duration::from_millis(20)).await,
            Err(_) => return,
        }
    }
}

#[test]
fn kill_9_of_a_replica_during_concurrent_writes_loses_no_acknowledged_write() -> Result<()> {
    let mut r = Replicas::start()?;
    r.a.kubectl_ok(&["create", "namespace", "load"])?;
    let rt = runtime()?;
    let acked = Arc::new(Mutex::new(Vec::new()));
    let api_a: Api<ConfigMap> = Api::namespaced(rt.block_on(r.a.client())?, "load");
    let writers: Vec<_> = (0..WRITERS)
        .map(|w| rt.spawn(write_until_gone(api_a.clone(), w, acked.clone())))
        .collect();
    let count = || {
        acked
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .len()
    };
    poll_until(PHASE_TIMEOUT, "acknowledged writes before the kill", || {
        Ok(count() >= KILL_AFTER)
    })?;
    r.a.kill()?;
    rt.block_on(async {
        for w in writers {
            tokio::time::timeout(PHASE_TIMEOUT, w)
                .await
                .context("a writer did not end after the kill")??;
        }
        anyhow::Ok(())
    })?;
    let acked: Vec<String> = acked
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .clone();
    ensure!(acked.len() >= KILL_AFTER, "{} acknowledged", acked.len());
    // Every acknowledged write is served by B (once B's tailer has read the log's end).
    let api_b: Api<ConfigMap> = Api::namespaced(rt.block_on(r.b.client())?, "load");
    let missing = rt.block_on(async {
        let deadline = tokio::time::Instant::now() + CONVERGE_TIMEOUT;
        loop {
            let names = all_names(&api_b).await?;
            let missing: Vec<&String> = acked.iter().filter(|n| !names.contains(*n)).collect();
            if missing.is_empty() || tokio::time::Instant::now() > deadline {
                return anyhow::Ok(missing);
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    })?;
    ensure!(
        missing.is_empty(),
        "{} of {} acknowledged writes are missing on B, e.g. {:?}",
        missing.len(),
        acked.len(),
        missing.iter().take(5).collect::<Vec<_>>()
    );
    Ok(())
}

/// What the load saw while the database went away and came back.
#[derive(Debug, Default)]
struct Outcomes {
    writes: usize,
    reads: usize,
    /// Errors that were a Status: `(code, reason)` -> count.
    statuses: BTreeMap<(u16, String), usize>,
    /// Errors without a Status: a hang (client timeout), a broken connection.
    other: Vec<String>,
}

impl Outcomes {
    fn record<T>(&mut self, write: bool, result: kube::Result<T>) {
        match result {
            Ok(_) if write => self.writes += 1,
            Ok(_) => self.reads += 1,
            Err(kube::Error::Api(s)) => {
                *self.statuses.entry((s.code, s.reason.clone())).or_default() += 1;
            }
            Err(e) => self.other.push(e.to_string()),
        }
    }

    fn errors(&self) -> usize {
        self.statuses.values().sum()
    }
}

/// Writes (through `writes`) or lists and gets (through `reads`) until `stop`.
async fn load(
    api: Api<ConfigMap>,
    id: usize,
    write: bool,
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Outcomes>>,
) {
    let mut i = 0;
    while !stop.load(Ordering::Acquire) {
        let result = if write {
            let name = format!("l{id}-{i}");
            api.create(&PostParams::default(), &configmap(&name, &[]))
                .await
                .map(drop)
        } else if i % 2 == 0 {
            api.list(&ListParams::default().limit(10)).await.map(drop)
        } else {
            api.get("anchor").await.map(drop)
        };
        seen.lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .record(write, result);
        i += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[test]
fn database_restart_under_load_gives_status_errors_and_recovers() -> Result<()> {
    let mut r = Replicas::start()?;
    r.a.kubectl_ok(&["create", "namespace", "db"])?;
    r.a.kubectl_ok(&["create", "configmap", "anchor", "-n", "db"])?;
    let rt = runtime()?;
    let api_a: Api<ConfigMap> = Api::namespaced(rt.block_on(bounded_client(&r.a))?, "db");
    let api_b: Api<ConfigMap> = Api::namespaced(rt.block_on(bounded_client(&r.b))?, "db");
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Mutex::new(Outcomes::default()));
    let tasks: Vec<_> = (0..12)
        .map(|id| {
            let (api, write) = if id < 8 {
                (api_a.clone(), true)
            } else {
                (api_b.clone(), false)
            };
            rt.spawn(load(api, id, write, stop.clone(), seen.clone()))
        })
        .collect();
    let outcomes = |f: &dyn Fn(&Outcomes) -> bool| {
        f(&seen
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner))
    };
    poll_until(PHASE_TIMEOUT, "writes before the database stops", || {
        Ok(outcomes(&|o| o.writes >= 50 && o.reads >= 10))
    })?;
    r.pg.stop();
    poll_until(PHASE_TIMEOUT, "errors while the database is down", || {
        Ok(outcomes(&|o| o.errors() >= 20 || !o.other.is_empty()))
    })?;
    r.pg.resume();
    // Both replicas recover by themselves: a write through A is served by B.
    rt.block_on(eventually(
        PHASE_TIMEOUT,
        "a write through A after the restart",
        || {
            let api_a = api_a.clone();
            async move {
                Ok(api_a
                    .create(&PostParams::default(), &configmap("after", &[]))
                    .await
                    .is_ok()
                    || api_a.get("after").await.is_ok())
            }
        },
    ))?;
    rt.block_on(eventually(PHASE_TIMEOUT, "B to serve the write", || {
        let api_b = api_b.clone();
        async move { Ok(api_b.get("after").await.is_ok()) }
    }))?;
    stop.store(true, Ordering::Release);
    rt.block_on(async {
        for t in tasks {
            tokio::time::timeout(PHASE_TIMEOUT, t)
                .await
                .context("a load task did not end")??;
        }
        anyhow::Ok(())
    })?;
    let seen = seen
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    ensure!(
        seen.other.is_empty(),
        "requests failed without a Status (a hang ends at the client timeout): {:?}; {seen:?}",
        seen.other.iter().take(5).collect::<Vec<_>>()
    );
    ensure!(
        seen.errors() > 0,
        "no request failed while the database was down"
    );
    for (code, reason) in seen.statuses.keys() {
        ensure!(
            matches!(code, 500 | 503 | 504) && !reason.is_empty(),
            "an error that is not a 5xx Status: {code} {reason:?}; {seen:?}"
        );
    }
    Ok(())
}

/// The `data.n` of a watched ConfigMap event, with its resourceVersion.
fn counter_of(event: WatchEvent<ConfigMap>) -> Result<Option<(usize, String)>> {
    let cm = match event {
        WatchEvent::Modified(cm) => cm,
        WatchEvent::Bookmark(_) => return Ok(None),
        other => bail!("unexpected watch event {other:?}"),
    };
    let n = cm
        .data
        .as_ref()
        .and_then(|d| d.get("n"))
        .context("no data.n")?
        .parse()?;
    let rv = cm.metadata.resource_version.context("no resourceVersion")?;
    Ok(Some((n, rv)))
}

#[test]
fn a_watch_resumed_on_the_other_replica_from_the_last_resource_version_sees_no_gap() -> Result<()> {
    let r = Replicas::start()?;
    r.a.kubectl_ok(&["create", "namespace", "resume"])?;
    let rt = runtime()?;
    let api_a: Api<ConfigMap> = Api::namespaced(rt.block_on(r.a.client())?, "resume");
    let api_b: Api<ConfigMap> = Api::namespaced(rt.block_on(r.b.client())?, "resume");
    let resumed = async {
        let created = api_a
            .create(&PostParams::default(), &configmap("counter", &[("n", "0")]))
            .await?;
        let mut rv = created
            .metadata
            .resource_version
            .context("no resourceVersion")?;
        let params = WatchParams::default().fields("metadata.name=counter");
        // Watch on A from the create, while updates go on through A.
        let mut on_a = api_a.watch(&params, &rv).await?.boxed();
        let writer_api = api_a.clone();
        let writer = tokio::spawn(async move {
            for n in 1..=UPDATES {
                let patch = serde_json::json!({"data": {"n": n.to_string()}});
                writer_api
                    .patch("counter", &PatchParams::default(), &Patch::Merge(&patch))
                    .await?;
            }
            anyhow::Ok(())
        });
        let mut seen = Vec::new();
        while seen.last().copied().unwrap_or(0) < SWITCH_AT {
            let event = on_a.try_next().await?.context("A's watch ended")?;
            if let Some((n, at)) = counter_of(event)? {
                seen.push(n);
                rv = at;
            }
        }
        drop(on_a);
        // Resume on B from the last resourceVersion A delivered.
        let mut on_b = api_b.watch(&params, &rv).await?.boxed();
        while seen.last().copied().unwrap_or(0) < UPDATES {
            let event = on_b.try_next().await?.context("B's watch ended")?;
            if let Some((n, _)) = counter_of(event)? {
                seen.push(n);
            }
        }
        writer.await??;
        anyhow::Ok(seen)
    };
    let seen = rt
        .block_on(async { tokio::time::timeout(PHASE_TIMEOUT, resumed).await })
        .context("the watches did not deliver every update")??;
    let expected: Vec<usize> = (1..=UPDATES).collect();
    ensure!(
        seen == expected,
        "the watch moved from A to B saw {} events, first differences: {:?}",
        seen.len(),
        seen.iter()
            .zip(&expected)
            .filter(|(a, b)| a != b)
            .take(5)
            .collect::<Vec<_>>()
    );
    Ok(())
}
