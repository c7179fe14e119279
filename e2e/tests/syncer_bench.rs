//! The syncer's round trip at scale (ignored by default; numbers in docs/performance.md):
//! N Jobs across C logical clusters, created in kplane, synced to a second kplane standing
//! in for the host, completed there by this test playing the host's Job controller, and
//! seen Complete in kplane. Reports the time from each Job's creation to its Complete
//! condition in kplane (p50, p99, max), the wall time of all, and the syncer's memory.
//!
//! With `SYNCER_BENCH_PODS=1` the test also plays the host's kubelet: each host Job gets a
//! pod (Succeeded) before it completes, and a Job counts once it is Complete in kplane and
//! its pod is reflected there as Succeeded; the syncer then issues each pod's in-cluster
//! API token and reflects the pod. With `SYNCER_BENCH_PODS=0` (the default) the syncer runs
//! with `--no-pod-api-access --no-pod-reflection`, so the two runs give the extra cost.
//! `SYNCER_BENCH_WORKERS` is the syncer's `--workers` (default 8 here; the syncer's own
//! default is 32): every figure depends on it, so the commands set it.
//!
//! ```sh no-run
//! cargo build --release -p kplane
//! SYNCER_BENCH_WORKERS=8 SYNCER_BENCH_JOBS=1000 SYNCER_BENCH_CLUSTERS=100 \
//!   KPLANE_BIN=$PWD/target/release/kplane \
//!   cargo test -p kplane-e2e --test e2e -- --ignored syncer_bench --nocapture
//! SYNCER_BENCH_WORKERS=8 SYNCER_BENCH_PODS=1 SYNCER_BENCH_JOBS=1000 SYNCER_BENCH_CLUSTERS=100 \
//!   KPLANE_BIN=$PWD/target/release/kplane \
//!   cargo test -p kplane-e2e --test e2e -- --ignored syncer_bench --nocapture
//! ```

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{ensure, Context as _, Result};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::batch::v1::Job;
use kplane_e2e::{eventually, KplaneServer};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt as _;
use kube::{Api, ResourceExt as _};
use serde_json::json;

use crate::syncer::{create_target, plain_job, Syncer, TARGET_CLUSTER};

fn env_usize(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The syncer's resident and peak memory (kB), from /proc.
fn memory_kb(pid: u32) -> (u64, u64) {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

/// The CPU time (user + system) process `pid` has used, in seconds, from /proc.
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // The fields after the command name (which may hold spaces) start after the last ')'.
    let rest = stat.rsplit_once(')').map(|(_, r)| r).unwrap_or_default();
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of stat, 12 and 13 after the name.
    (ticks(11) + ticks(12)) / 100.0
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "benchmark: run explicitly (see the module docs)"]
async fn syncer_bench() -> Result<()> {
    let jobs_n = env_usize("SYNCER_BENCH_JOBS", 1000);
    let clusters_n = env_usize("SYNCER_BENCH_CLUSTERS", 100).max(1);
    let with_pods = env_usize("SYNCER_BENCH_PODS", 0) == 1;
    let data = KplaneServer::start()?;
    let host = crate::syncer_pods::stand_in_host()?;
    let scratch = tempfile::tempdir()?;
    create_target(&data).await?;

    // The tenant clusters: Workspaces below the target's cluster, created at once, waited for together.
    let ws_resource = ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("tenancy.kplane.io", "v1alpha1", "Workspace"),
        "workspaces",
    );
    let workspaces: Api<DynamicObject> =
        Api::all_with(data.client_for(TARGET_CLUSTER).await?, &ws_resource);
    let names: Vec<String> = (0..clusters_n).map(|i| format!("b{i:03}")).collect();
    futures::stream::iter(names.iter().map(|n| {
        let api = workspaces.clone();
        async move {
            let ws: DynamicObject = serde_json::from_value(json!({
                "apiVersion": "tenancy.kplane.io/v1alpha1", "kind": "Workspace",
                "metadata": {"name": n},
            }))?;
            api.create(&PostParams::default(), &ws).await?;
            anyhow::Ok(())
        }
    }))
    .buffer_unordered(16)
    .try_collect::<Vec<()>>()
    .await?;
    eventually(
        Duration::from_secs(300),
        "every Workspace Ready",
        || async {
            let list = workspaces.list(&Default::default()).await?;
            let ready = list
                .items
                .iter()
                .filter(|w| w.data.pointer("/status/phase") == Some(&json!("Ready")))
                .count();
            Ok(ready >= clusters_n)
        },
    )
    .await?;

    let syncer = Syncer::start_with(
        &data,
        &host,
        scratch.path(),
        "bench",
        &[
            &[
                "--workers",
                &env_usize("SYNCER_BENCH_WORKERS", 8).to_string(),
            ][..],
            if with_pods {
                &[]
            } else {
                &["--no-pod-api-access", "--no-pod-reflection"]
            },
        ]
        .concat(),
    )?;

    // The host's Job controller: every new host Job completes at once.
    let hostc = host.client().await?;
    let host_jobs: Api<Job> = Api::all(hostc.clone());
    let completer = tokio::spawn(async move {
        let config = watcher::Config::default().labels("sync.kplane.io/target=east");
        let mut stream = watcher::watcher(host_jobs, config)
            .default_backoff()
            .boxed();
        let mut done = std::collections::HashSet::new();
        while let Some(ev) = stream.next().await {
            let Ok(Event::Apply(job) | Event::InitApply(job)) = ev else {
                continue;
            };
            let (Some(ns), name) = (job.namespace(), job.name_any()) else {
                continue;
            };
            if !done.insert((ns.clone(), name.clone())) {
                continue;
            }
            // Concurrently, as a Job controller's workers would.
            let api: Api<Job> = Api::namespaced(hostc.clone(), &ns);
            let pods: Api<k8s_openapi::api::core::v1::Pod> = Api::namespaced(hostc.clone(), &ns);
            let job_value = serde_json::to_value(&job).unwrap_or_default();
            tokio::spawn(async move {
                if with_pods {
                    // The kubelet's part: the Job's pod, run to completion.
                    let pod = crate::syncer_pods::host_pod_of(&job_value, "bench");
                    let Ok(pod) = serde_json::from_value(pod) else {
                        return;
                    };
                    if pods.create(&PostParams::default(), &pod).await.is_err() {
                        return;
                    }
                    let pod_name = format!("{name}-bench");
                    let _ = crate::syncer_pods::set_host_pod_status(&pods, &pod_name, "Succeeded")
                        .await;
                }
                let t = chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string();
                let status = json!({"status": {
                    "startTime": t, "completionTime": t, "succeeded": 1,
                    "conditions": [
                        {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached", "lastProbeTime": t, "lastTransitionTime": t},
                        {"type": "Complete", "status": "True", "reason": "CompletionsReached", "lastProbeTime": t, "lastTransitionTime": t},
                    ],
                }});
                let _ = api
                    .patch_status(&name, &PatchParams::default(), &Patch::Merge(&status))
                    .await;
            });
        }
    });

    // kplane's side: when each Job's pod is reflected as Succeeded (with pods).
    let reflected: Arc<Mutex<HashMap<(String, String), Instant>>> = Arc::default();
    let seen_pods = Arc::clone(&reflected);
    let wild_pods: Api<k8s_openapi::api::core::v1::Pod> = Api::all(data.client_for("*").await?);
    let pod_observer = tokio::spawn(async move {
        let mut stream = watcher::watcher(wild_pods, watcher::Config::default())
            .default_backoff()
            .boxed();
        while let Some(ev) = stream.next().await {
            let Ok(Event::Apply(pod) | Event::InitApply(pod)) = ev else {
                continue;
            };
            if pod.status.as_ref().and_then(|s| s.phase.as_deref()) != Some("Succeeded") {
                continue;
            }
            let cluster = pod
                .annotations()
                .get("kplane.io/cluster")
                .cloned()
                .unwrap_or_default();
            let job = pod.labels().get("job-name").cloned().unwrap_or_default();
            if let Ok(mut m) = seen_pods.lock() {
                m.entry((cluster, job)).or_insert_with(Instant::now);
            }
        }
    });

    // kplane's side: when each Job turns Complete.
    let completed: Arc<Mutex<HashMap<(String, String), Instant>>> = Arc::default();
    let seen = Arc::clone(&completed);
    let wild: Api<Job> = Api::all(data.client_for("*").await?);
    let observer = tokio::spawn(async move {
        let mut stream = watcher::watcher(wild, watcher::Config::default())
            .default_backoff()
            .boxed();
        while let Some(ev) = stream.next().await {
            let Ok(Event::Apply(job) | Event::InitApply(job)) = ev else {
                continue;
            };
            let complete = job
                .status
                .as_ref()
                .and_then(|s| s.conditions.as_ref())
                .is_some_and(|cs| {
                    cs.iter()
                        .any(|c| c.type_ == "Complete" && c.status == "True")
                });
            if complete {
                let cluster = job
                    .annotations()
                    .get("kplane.io/cluster")
                    .cloned()
                    .unwrap_or_default();
                if let Ok(mut m) = seen.lock() {
                    m.entry((cluster, job.name_any()))
                        .or_insert_with(Instant::now);
                }
            }
        }
    });

    // Create the Jobs, 32 at a time, round-robin over the clusters.
    let mut clients = Vec::new();
    for n in &names {
        clients.push(data.client_for(&format!("{TARGET_CLUSTER}:{n}")).await?);
    }
    let created: Arc<Mutex<HashMap<(String, String), Instant>>> = Arc::default();
    let start = Instant::now();
    futures::stream::iter((0..jobs_n).map(|i| {
        let cluster = format!("{TARGET_CLUSTER}:{}", names[i % clusters_n]);
        let client = clients[i % clusters_n].clone();
        let created = Arc::clone(&created);
        async move {
            let name = format!("job-{i:05}");
            // SyncAssignment assigns it to the target.
            let m = plain_job(&name);
            let api: Api<Job> = Api::namespaced(client, "default");
            let t = Instant::now();
            api.create(&PostParams::default(), &serde_json::from_value(m)?)
                .await
                .with_context(|| format!("creating {name} in {cluster}"))?;
            if let Ok(mut c) = created.lock() {
                c.insert((cluster, name), t);
            }
            anyhow::Ok(())
        }
    }))
    .buffer_unordered(32)
    .try_collect::<Vec<()>>()
    .await?;
    let created_all = start.elapsed();

    eventually(
        Duration::from_secs(600),
        "every Job Complete in kplane (and its pod reflected, with pods)",
        || async {
            let jobs_done = completed.lock().map(|m| m.len()).unwrap_or(0) >= jobs_n;
            let pods_done = !with_pods || reflected.lock().map(|m| m.len()).unwrap_or(0) >= jobs_n;
            Ok(jobs_done && pods_done)
        },
    )
    .await
    .with_context(|| {
        syncer
            .log()
            .lines()
            .rev()
            .take(40)
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    let wall = start.elapsed();
    completer.abort();
    observer.abort();
    pod_observer.abort();

    let created = created.lock().map(|c| c.clone()).unwrap_or_default();
    let completed = completed.lock().map(|c| c.clone()).unwrap_or_default();
    let reflected = reflected.lock().map(|c| c.clone()).unwrap_or_default();
    // A Job's round trip ends when it is Complete and (with pods) its pod reflected.
    let mut trips: Vec<Duration> = created
        .iter()
        .filter_map(|(k, t)| {
            let done = completed.get(k)?;
            let done = if with_pods {
                (*done).max(*reflected.get(k)?)
            } else {
                *done
            };
            Some(done.saturating_duration_since(*t))
        })
        .collect();
    trips.sort();
    ensure!(
        trips.len() == jobs_n,
        "{} of {jobs_n} round trips",
        trips.len()
    );
    let cpu = |pid: Option<u32>| pid.map(cpu_seconds).unwrap_or_default();
    let (syncer_cpu, data_cpu, host_cpu) = (cpu(syncer.pid()), cpu(data.pid()), cpu(host.pid()));
    let (rss, hwm) = syncer.pid().map(memory_kb).unwrap_or_default();
    // And once the work is over (a resync included): what it keeps.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (settled, _) = syncer.pid().map(memory_kb).unwrap_or_default();
    let metrics = crate::syncer::http_get(&syncer.metrics_addr()?, "/metrics")?;
    let synced = metrics
        .lines()
        .find(|l| l.starts_with("kplane_syncer_synced_objects "))
        .unwrap_or_default()
        .to_owned();
    println!(
        "syncer bench (pods {with_pods}): {jobs_n} Jobs in {clusters_n} clusters: created in {:.1}s, all Complete in kplane after {:.1}s; \
         round trip p50 {:.0} ms, p99 {:.0} ms, max {:.0} ms; syncer RSS {} MiB (peak {} MiB), 5 s later {} MiB; {synced}; \
         CPU seconds (whole run): syncer {syncer_cpu:.2}, kplane {data_cpu:.2}, host {host_cpu:.2}",
        created_all.as_secs_f64(),
        wall.as_secs_f64(),
        percentile(&trips, 0.5).as_secs_f64() * 1e3,
        percentile(&trips, 0.99).as_secs_f64() * 1e3,
        percentile(&trips, 1.0).as_secs_f64() * 1e3,
        rss / 1024,
        hwm / 1024,
        settled / 1024,
    );
    Ok(())
}
