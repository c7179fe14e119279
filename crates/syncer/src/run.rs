//! The syncer's life: wait for the leader Lease, read the SyncTarget, then run the watches,
//! the workers and the resync while renewing the Lease and heartbeating; drain and stop when
//! the SyncTarget is deleted, release the Lease on shutdown.

use std::collections::HashSet;
use std::future::Future;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use chrono::{SecondsFormat, Utc};
use serde_json::Value;
use tokio::sync::Notify;
use tokio::task::JoinSet;

use crate::clients::{self, KplaneClients};
use crate::error::{Error, Result};
use crate::kinds::SyncedKind;
use crate::lease::LeaderElector;
use crate::metrics::{self, Metrics};
use crate::naming::{HostLayout, TargetRef};
use crate::queue::WorkQueue;
use crate::reconcile::reconcile;
use crate::state::{ObjectKey, State};
use crate::sweep;
use crate::target::{synced_kinds, TargetApi};
use crate::Settings;

/// The running sync machinery (only while this syncer leads).
struct Engine {
    state: Arc<State>,
    tasks: JoinSet<()>,
}

impl Engine {
    fn start(
        settings: &Settings,
        target: TargetRef,
        kplane: KplaneClients,
        host: kube::Client,
        kinds: Vec<Arc<dyn SyncedKind>>,
        chosen: Vec<crate::chosen_pods::Entry>,
        metrics: Arc<Metrics>,
    ) -> Self {
        // Checked at start-up (`run`), so this only fails where that did.
        let pod_api = settings
            .pod_api_access
            .then(|| {
                crate::api_access::PodApi::new(settings.pod_api_server.as_deref(), kplane.config())
                    .ok()
            })
            .flatten();
        let state = Arc::new(State {
            target,
            layout: layout(settings),
            kplane,
            host,
            listed: kinds.iter().map(|_| AtomicBool::new(false)).collect(),
            kinds,
            queue: Arc::new(WorkQueue::new()),
            metrics,
            cache: Mutex::new(Default::default()),
            refs: Mutex::new(Default::default()),
            copy_lock: tokio::sync::Mutex::new(()),
            namespaces: Mutex::new(HashSet::new()),
            synced: Mutex::new(HashSet::new()),
            host_cache: Mutex::new(Default::default()),
            own_source_writes: Mutex::new(Default::default()),
            own_host_writes: Mutex::new(Default::default()),
            host_reachable: AtomicBool::new(true),
            copies_checked: Mutex::new(Default::default()),
            resync: settings.resync,
            pod_api,
            access_checked: Mutex::new(Default::default()),
            policies_checked: Mutex::new(Default::default()),
            policy_lock: tokio::sync::Mutex::new(()),
            pods: Default::default(),
            live: Mutex::new(Default::default()),
        });
        let sweep = Arc::new(Notify::new());
        let mut tasks = JoinSet::new();
        for i in 0..state.kinds.len() {
            tasks.spawn(crate::watch::watch_sources(
                Arc::clone(&state),
                i,
                Arc::clone(&sweep),
            ));
            tasks.spawn(crate::watch::watch_host(Arc::clone(&state), i));
        }
        if settings.pod_reflection && state.kinds.iter().any(|k| k.pod_spec_pointer().is_some()) {
            tasks.spawn(crate::pods::watch_host_pods(Arc::clone(&state)));
            tasks.spawn(crate::pods::watch_reflections(Arc::clone(&state)));
        }
        let mut allowed = Vec::new();
        for entry in chosen {
            if !settings
                .reflect_host_namespaces
                .contains(&entry.host_namespace)
            {
                tracing::warn!(host_namespace = %entry.host_namespace,
                    "spec.reflectPods names a host namespace this syncer may not reflect (--reflect-host-namespaces); skipped");
                continue;
            }
            allowed.push(entry.clone());
            tasks.spawn(crate::chosen_pods::run(Arc::clone(&state), entry));
        }
        if settings.pod_reflection || !allowed.is_empty() {
            tasks.spawn(crate::logs::run(Arc::clone(&state), allowed.clone()));
        }
        tasks.spawn(crate::chosen_pods::remove_stale(
            Arc::clone(&state),
            allowed,
        ));
        for _ in 0..settings.workers.max(1) {
            tasks.spawn(work(Arc::clone(&state)));
        }
        tasks.spawn(resync(Arc::clone(&state), settings.resync, sweep));
        tracing::info!(target = %state.target.annotation(), resources = ?state.kinds.iter().map(|k| k.api_resource().plural).collect::<Vec<_>>(),
            "syncing");
        Engine { state, tasks }
    }

    async fn stop(mut self) {
        self.state.queue.close();
        self.tasks.shutdown().await;
    }
}

fn layout(settings: &Settings) -> HostLayout {
    match &settings.host_namespace {
        Some(ns) => HostLayout::Shared(ns.clone()),
        None => HostLayout::PerNamespace,
    }
}

fn now() -> String {
    Utc::now().to_rfc3339_opts(SecondsFormat::Secs, true)
}

/// Runs the syncer until `shutdown` resolves or the SyncTarget is drained (both `Ok`).
/// Errors are start-up errors (kubeconfigs, URLs, the metrics address); a lost Lease only
/// stops the syncing until this syncer leads again.
pub async fn run(
    settings: Settings,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let config =
        clients::from_kubeconfig(&settings.kubeconfig, settings.context.as_deref()).await?;
    let (cluster, base) = clients::sync_base(&config.cluster_url, &settings.target)?;
    if settings.pod_api_access {
        let api = crate::api_access::PodApi::new(settings.pod_api_server.as_deref(), &config)?;
        if api.ca_pem.is_empty() {
            tracing::warn!(
                "the kubeconfig names no CA for kplane: synced pods get an empty ca.crt"
            );
        }
    }
    let host = clients::host_client(settings.host_kubeconfig.as_deref()).await?;
    let target = TargetRef {
        cluster,
        name: settings.target.clone(),
    };
    tracing::info!(target = %target.annotation(), kplane = %base, identity = %settings.identity, "kplane syncer starting");
    let metrics = Arc::new(Metrics::default());
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let mut background = JoinSet::new();
    if let Some(addr) = settings.metrics_bind {
        let mut rx = stop_rx.clone();
        let serve = metrics::serve(addr, Arc::clone(&metrics), async move {
            let _ = rx.wait_for(|stop| *stop).await;
        })
        .await?;
        background.spawn(async move {
            if let Err(e) = serve.await {
                tracing::warn!(error = %e, "the metrics endpoint failed");
            }
        });
    }
    let result = lead(&settings, target, base, config, host, metrics, shutdown).await;
    let _ = stop_tx.send(true);
    background.shutdown().await;
    result
}

async fn lead(
    settings: &Settings,
    target: TargetRef,
    base: String,
    config: kube::Config,
    host: kube::Client,
    metrics: Arc<Metrics>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<()> {
    let kplane_for_target = KplaneClients::new(config.clone(), &base);
    let target_client = kplane_for_target.cluster(&target.cluster)?;
    let mut elector = LeaderElector::new(
        target_client.clone(),
        target.lease_name(),
        settings.identity.clone(),
        settings.lease_duration,
    );
    tokio::pin!(shutdown);
    let target_api = TargetApi::new(target_client, &target.name);
    loop {
        tokio::select! {
            _ = &mut shutdown => return Ok(()),
            r = elector.acquire() => r?,
        }
        let leading = Leading {
            settings,
            target: &target,
            base: &base,
            config: &config,
            host: &host,
            metrics: &metrics,
            target_api: &target_api,
        };
        match leading.run(&mut elector, shutdown.as_mut()).await {
            Err(Error::LostLease(lease)) => {
                // Stopped before another syncer could take over; lead again when possible.
                tracing::warn!(%lease, "lost the leader Lease: stopped syncing, waiting to lead again");
            }
            other => {
                elector.release().await;
                return other;
            }
        }
    }
}

/// What one term as leader needs.
struct Leading<'a> {
    settings: &'a Settings,
    target: &'a TargetRef,
    base: &'a str,
    config: &'a kube::Config,
    host: &'a kube::Client,
    metrics: &'a Arc<Metrics>,
    target_api: &'a TargetApi,
}

impl Leading<'_> {
    /// Syncs while this syncer holds the Lease: until shutdown, the drain, or the loss of the
    /// Lease (`Err(LostLease)`).
    async fn run<F: Future<Output = ()>>(
        &self,
        elector: &mut LeaderElector,
        mut shutdown: std::pin::Pin<&mut F>,
    ) -> Result<()> {
        let Leading {
            settings,
            target,
            base,
            config,
            host,
            metrics,
            target_api,
        } = *self;
        let mut engine: Option<Engine> = None;
        let period = elector.retry_period().max(Duration::from_millis(100));
        let mut renew = tokio::time::interval(period);
        let mut beat = tokio::time::interval(settings.heartbeat);
        let mut renewed = Instant::now();
        let mut kinds_for_drain: Vec<Arc<dyn SyncedKind>> = Vec::new();
        // The spec.resources the running engine was started with.
        let mut engine_resources = Value::Null;
        let mut host_was_down = false;
        let result = loop {
            tokio::select! {
                _ = &mut shutdown => {
                    tracing::info!("shutting down");
                    break Ok(());
                }
                _ = renew.tick() => match tokio::time::timeout(period, elector.renew()).await {
                    Ok(Ok(true)) => renewed = Instant::now(),
                    Ok(Ok(false)) => break Err(Error::LostLease(elector.name().to_owned())),
                    Ok(Err(e)) => {
                        tracing::warn!(error = %e, "renewing the leader Lease failed");
                        if renewed.elapsed() > elector.renew_deadline() {
                            break Err(Error::LostLease(elector.name().to_owned()));
                        }
                    }
                    Err(_) => {
                        tracing::warn!("renewing the leader Lease timed out");
                        if renewed.elapsed() > elector.renew_deadline() {
                            break Err(Error::LostLease(elector.name().to_owned()));
                        }
                    }
                },
                _ = beat.tick() => {
                    let current = match tokio::time::timeout(settings.heartbeat, target_api.get()).await {
                        Ok(Ok(Some(t))) => t,
                        Ok(Ok(None)) => {
                            tracing::warn!(target = %target.annotation(), "the SyncTarget does not exist (yet); waiting");
                            continue;
                        }
                        Ok(Err(e)) => {
                            tracing::warn!(error = %e, "reading the SyncTarget failed");
                            continue;
                        }
                        Err(_) => {
                            tracing::warn!("reading the SyncTarget timed out");
                            continue;
                        }
                    };
                    if current.pointer("/metadata/deletionTimestamp").is_some() {
                        if let Some(e) = engine.take() {
                            tracing::info!(target = %target.annotation(), "the SyncTarget is being deleted: draining");
                            e.stop().await;
                        }
                        if kinds_for_drain.is_empty() {
                            kinds_for_drain = synced_kinds(&current);
                        }
                        let kplane = KplaneClients::new(config.clone(), base);
                        match drain(host, &kplane, target, &layout(settings), &kinds_for_drain).await {
                            Ok(()) => match target_api.drained(&current, &now()).await {
                                Ok(()) => {
                                    tracing::info!(target = %target.annotation(), "drained: every host object is gone");
                                    break Ok(());
                                }
                                Err(e) => tracing::warn!(error = %e, "setting Drained on the SyncTarget failed"),
                            },
                            Err(e) => tracing::warn!(error = %e, "draining failed; trying again"),
                        }
                        continue;
                    }
                    let resources = serde_json::json!([
                        current.pointer("/spec/resources"),
                        current.pointer("/spec/reflectPods"),
                    ]);
                    if engine.is_some() && resources != engine_resources {
                        tracing::info!(target = %target.annotation(), "spec.resources or spec.reflectPods changed: restarting the watches");
                        if let Some(e) = engine.take() {
                            e.stop().await;
                        }
                    }
                    if engine.is_none() {
                        engine_resources = resources;
                        let kinds = synced_kinds(&current);
                        kinds_for_drain = kinds.clone();
                        engine = Some(Engine::start(
                            settings,
                            target.clone(),
                            KplaneClients::new(config.clone(), base),
                            host.clone(),
                            kinds,
                            crate::chosen_pods::entries(&current, &target.cluster),
                            Arc::clone(metrics),
                        ));
                    }
                    // Heartbeats only while the host answers: without them kplane marks the
                    // target not Ready and its objects' status stale.
                    match tokio::time::timeout(settings.heartbeat, host.apiserver_version()).await {
                        Ok(Ok(_)) => {
                            if let Some(e) = &engine {
                                e.state.set_host_reachable(true);
                            }
                            if host_was_down {
                                tracing::info!("the host answers again; heartbeats resume");
                                host_was_down = false;
                            }
                        }
                        Ok(Err(e)) => {
                            if let Some(e) = &engine {
                                e.state.set_host_reachable(false);
                            }
                            if !host_was_down {
                                tracing::warn!(error = %e, "the host does not answer; no heartbeat until it does");
                                host_was_down = true;
                            }
                            continue;
                        }
                        Err(_) => {
                            if let Some(e) = &engine {
                                e.state.set_host_reachable(false);
                            }
                            if !host_was_down {
                                tracing::warn!("the host does not answer in time; no heartbeat until it does");
                                host_was_down = true;
                            }
                            continue;
                        }
                    }
                    let synced = engine.as_ref().map(|e| e.state.synced_count()).unwrap_or(0);
                    let at = now();
                    let write = target_api.heartbeat(
                        &current,
                        &settings.identity,
                        &settings.version,
                        synced,
                        &at,
                    );
                    match tokio::time::timeout(settings.heartbeat, write).await {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => tracing::warn!(error = %e, "writing the heartbeat failed"),
                        Err(_) => tracing::warn!("writing the heartbeat timed out"),
                    }
                }
            }
        };
        if let Some(e) = engine.take() {
            e.stop().await;
        }
        result
    }
}

/// Drains twice: the second pass must find nothing left. Then the target's pod
/// reflections in kplane go too (they reflect host pods that are gone).
async fn drain(
    host: &kube::Client,
    kplane: &KplaneClients,
    target: &TargetRef,
    layout: &HostLayout,
    kinds: &[Arc<dyn SyncedKind>],
) -> Result<()> {
    sweep::drain(host, target, layout, kinds).await?;
    let left = sweep::drain(host, target, layout, kinds).await?;
    if left > 0 {
        return Err(Error::Retry(format!("{left} host objects are still there")));
    }
    crate::pods::remove_all_reflections(kplane).await
}

/// One worker: reconciles keys until the queue closes.
async fn work(state: Arc<State>) {
    while let Some((key, since)) = state.queue.next().await {
        state.metrics.set_queue_depth(state.queue.len());
        match reconcile(&state, &key).await {
            Ok(()) => {
                state.queue.done(&key, true);
                state.metrics.observe_roundtrip(since.elapsed());
            }
            Err(e) => {
                state.queue.done(&key, false);
                let failures = state.queue.retry(key.clone());
                match &e {
                    // Every key fails while the host is away; the heartbeat says so once.
                    Error::HostUnreachable => {
                        tracing::debug!(cluster = %key.cluster, namespace = %key.namespace, name = %key.name,
                            "the host does not answer; reconciling again later")
                    }
                    Error::Retry(_) => {
                        tracing::info!(cluster = %key.cluster, namespace = %key.namespace, name = %key.name,
                        reason = %e, "reconciling again shortly")
                    }
                    // The first failure and every tenth of a key at warn, the rest at debug:
                    // a host outage fails every key, over and over.
                    _ if failures == 1 || failures % 10 == 0 => {
                        tracing::warn!(cluster = %key.cluster, namespace = %key.namespace, name = %key.name,
                            failures, error = %e, "reconcile failed; retrying with backoff");
                        state.metrics.error();
                    }
                    _ => {
                        tracing::debug!(cluster = %key.cluster, namespace = %key.namespace, name = %key.name,
                            failures, error = %e, "reconcile failed; retrying with backoff");
                        state.metrics.error();
                    }
                }
            }
        }
        state.metrics.set_queue_depth(state.queue.len());
    }
}

/// Every `every` (and after each full list): the sweep, then every cached object queued
/// again, so copies and status catch up with anything a watch missed.
async fn resync(state: Arc<State>, every: Duration, sweep: Arc<Notify>) {
    loop {
        tokio::select! {
            _ = tokio::time::sleep(every) => {
                let keys: Vec<ObjectKey> = state.cache.lock().map(|c| c.keys().cloned().collect()).unwrap_or_default();
                for k in keys {
                    state.queue.add(k);
                }
            }
            _ = sweep.notified() => {}
        }
        if let Err(e) = sweep::sweep(&state).await {
            tracing::warn!(error = %e, "resync sweep failed");
            state.metrics.error();
        }
    }
}
