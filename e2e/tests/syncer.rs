//! `kplane syncer` end to end: two servers, one the data plane (tenant Jobs, the SyncTarget)
//! and one standing in for the host cluster (it stores the host Jobs; the test plays the
//! host's Job controller by writing their status). The syncer runs as the real binary
//! through the sync endpoint, with the restricted credential docs/sync.md describes: a token
//! (`kubectl create token`) of the ServiceAccount `docs/deploy/kplane-rbac` grants verb
//! `sync` on `synctargets/east`, which is refused on the ordinary API. kplane's
//! SyncAssignment plugin assigns the Jobs, and its sync controllers mark them stale when the
//! heartbeats stop.

use std::collections::BTreeMap;
use std::fs;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _, Result};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kplane_e2e::fixtures::error_code;
use kplane_e2e::{eventually, kplane_bin, poll_until, KplaneServer};
use kube::api::{
    ApiResource, DynamicObject, GroupVersionKind, ListParams, Patch, PatchParams, PostParams,
};
use kube::{Api, Client, ResourceExt as _};
use serde_json::{json, Value};

const TARGET: &str = "east";
/// The SyncTarget's cluster (`includeDescendants: true`).
pub(crate) const TARGET_CLUSTER: &str = "root:t";
/// The tenant whose Jobs are synced: a workspace below the target's.
pub(crate) const TENANT: &str = "root:t:a";
const ASSIGNMENT: &str = "root:t/east";
/// The syncer's ServiceAccount (in kube-system of the target's cluster), as
/// docs/deploy/kplane-rbac names it.
const SYNCER_SA: &str = "kplane-syncer-east";
const TIMEOUT: Duration = Duration::from_secs(60);
/// The SyncTarget's heartbeat timeout, in seconds.
const HEARTBEAT_TIMEOUT: u64 = 8;
/// How long the host stays unreachable, at least (the issue's "host unreachable for 30 s").
const OUTAGE: Duration = Duration::from_secs(30);
/// Jobs created while the first syncer is killed: more than the syncer's 4 workers.
const BURST: usize = 30;

/// One `kplane syncer` process; killed (SIGKILL) and reaped on drop.
pub(crate) struct Syncer {
    child: Option<Child>,
    log: PathBuf,
}

impl Syncer {
    pub(crate) fn start(
        data: &KplaneServer,
        host: &KplaneServer,
        dir: &Path,
        id: &str,
    ) -> Result<Self> {
        Self::start_with(data, host, dir, id, &[])
    }

    pub(crate) fn start_with(
        data: &KplaneServer,
        host: &KplaneServer,
        dir: &Path,
        id: &str,
        extra: &[&str],
    ) -> Result<Self> {
        Self::start_with_host(data, host.kubeconfig(), dir, id, extra)
    }

    /// A syncer whose host is reached with kubeconfig `host`.
    pub(crate) fn start_with_host(
        data: &KplaneServer,
        host: &Path,
        dir: &Path,
        id: &str,
        extra: &[&str],
    ) -> Result<Self> {
        let kubeconfig = syncer_kubeconfig(data, dir, id)?;
        let log = dir.join(format!("syncer-{id}.log"));
        let out = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log)
            .context("opening the syncer log")?;
        let child = Command::new(kplane_bin()?)
            .arg("syncer")
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(["--target", TARGET, "--host-kubeconfig"])
            .arg(host)
            .args([
                "--heartbeat",
                "1s",
                "--resync",
                "3s",
                "--lease-duration",
                "6s",
            ])
            .args(["--id", id, "--metrics-bind", "127.0.0.1:0"])
            .args(extra)
            .env("NO_COLOR", "1")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .spawn()
            .context("starting kplane syncer")?;
        Ok(Syncer {
            child: Some(child),
            log,
        })
    }

    pub(crate) fn log(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// SIGKILL, as `kill -9`.
    fn kill(&mut self) -> Result<()> {
        if let Some(mut child) = self.child.take() {
            child.kill()?;
            child.wait()?;
        }
        Ok(())
    }

    /// Waits for the process to exit on its own; its exit code.
    fn wait_exit(&mut self, timeout: Duration) -> Result<i32> {
        let mut code = None;
        poll_until(timeout, "the syncer to exit", || {
            if let Some(child) = self.child.as_mut() {
                if let Some(status) = child.try_wait()? {
                    code = Some(status.code().unwrap_or(-1));
                }
            }
            Ok(code.is_some())
        })
        .with_context(|| self.log())?;
        self.child = None;
        code.context("no exit code")
    }

    /// The metrics address the syncer logged.
    pub(crate) fn metrics_addr(&self) -> Result<String> {
        let mut addr = String::new();
        poll_until(TIMEOUT, "the syncer's metrics address", || {
            let log = self.log();
            if let Some(line) = log.lines().find(|l| l.contains("serving /metrics")) {
                if let Some(a) = line.split("address=").nth(1) {
                    addr = a.split_whitespace().next().unwrap_or_default().to_owned();
                }
            }
            Ok(!addr.is_empty())
        })?;
        Ok(addr)
    }
}

impl Syncer {
    /// The process id, while it runs.
    pub(crate) fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }
}

impl Drop for Syncer {
    fn drop(&mut self) {
        let _ = self.kill();
        eprintln!(
            "---- syncer log {} ----\n{}",
            self.log.display(),
            self.log()
        );
    }
}

/// A token of the syncer's ServiceAccount, from `kubectl create token` in the target's
/// cluster.
pub(crate) fn syncer_token(data: &KplaneServer) -> Result<String> {
    syncer_sa_token(&data.kubectl_for(TARGET_CLUSTER)?, "1h")
}

/// A token (`kubectl create token`, lasting `duration`) of the syncer's ServiceAccount
/// `kube-system/kplane-syncer-east` in the cluster `k` addresses.
pub(crate) fn syncer_sa_token(k: &kplane_e2e::Kubectl, duration: &str) -> Result<String> {
    let token = k.ok(&[
        "-n",
        "kube-system",
        "create",
        "token",
        SYNCER_SA,
        "--duration",
        duration,
    ])?;
    Ok(token.trim().to_owned())
}

/// Writes the syncer's kubeconfig (as docs/deploy/syncer-kubeconfig.sh makes it): the target's
/// cluster on the data plane, kplane's CA, a fresh token of the syncer's ServiceAccount.
fn syncer_kubeconfig(data: &KplaneServer, dir: &Path, id: &str) -> Result<PathBuf> {
    let ca = dir.join("kplane-ca.pem");
    fs::write(&ca, data.ca_pem()?).context("writing kplane's CA")?;
    let text = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "kplane", "cluster": {
            "server": format!("{}/clusters/{TARGET_CLUSTER}", data.base_url()),
            "certificate-authority": ca,
        }}],
        "users": [{"name": SYNCER_SA, "user": {"token": syncer_token(data)?}}],
        "contexts": [{"name": "kplane", "context": {"cluster": "kplane", "user": SYNCER_SA}}],
        "current-context": "kplane",
    });
    let path = dir.join(format!("syncer-{id}.kubeconfig"));
    fs::write(&path, text.to_string()).context("writing the syncer's kubeconfig")?;
    Ok(path)
}

fn synctarget_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("sync.kplane.io", "v1alpha1", "SyncTarget"),
        "synctargets",
    )
}

/// Checks that SyncAssignment assigned Job `name` to the target (annotation + finalizer).
async fn ensure_assigned(jobs: &Api<Job>, name: &str) -> Result<()> {
    let job = jobs.get(name).await?;
    let annotation = job.annotations().get("sync.kplane.io/target").cloned();
    ensure!(
        annotation.as_deref() == Some(ASSIGNMENT)
            && job
                .finalizers()
                .iter()
                .any(|f| f == "sync.kplane.io/syncer"),
        "{name} is not assigned to {ASSIGNMENT}: {annotation:?} {:?}",
        job.finalizers()
    );
    Ok(())
}

/// The condition `ty` of an object's `status.conditions` (JSON): (status, reason).
fn json_condition(object: &Value, ty: &str) -> Option<(String, String)> {
    object
        .pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c["type"] == ty)
        .map(|c| {
            (
                c["status"].as_str().unwrap_or_default().to_owned(),
                c["reason"].as_str().unwrap_or_default().to_owned(),
            )
        })
}

/// The SyncTarget's Ready condition.
async fn target_ready(targets: &Api<DynamicObject>) -> Result<Option<(String, String)>> {
    let t = serde_json::to_value(targets.get(TARGET).await?)?;
    Ok(json_condition(&t, "Ready"))
}

/// A host Job's status as the host's Job controller writes it when the Job succeeded.
fn complete_status() -> Value {
    let t0 = "2026-01-01T00:00:00Z";
    let t1 = "2026-01-01T00:00:05Z";
    json!({"status": {
        "startTime": t0, "completionTime": t1, "succeeded": 1,
        "uncountedTerminatedPods": {},
        "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods", "lastProbeTime": t1, "lastTransitionTime": t1},
            {"type": "Complete", "status": "True", "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods", "lastProbeTime": t1, "lastTransitionTime": t1},
        ],
    }})
}

/// The host Jobs of the target, by source `(cluster, namespace, name)`.
pub(crate) async fn host_jobs(
    host: &Client,
) -> Result<BTreeMap<(String, String, String), Vec<Job>>> {
    let api: Api<Job> = Api::all(host.clone());
    let list = api
        .list(&ListParams::default().labels("sync.kplane.io/target=east"))
        .await?;
    let mut out: BTreeMap<_, Vec<Job>> = BTreeMap::new();
    for job in list.items {
        let a = job.annotations();
        let key = (
            a.get("kplane.io/cluster").cloned().unwrap_or_default(),
            a.get("kplane.io/namespace").cloned().unwrap_or_default(),
            a.get("kplane.io/name").cloned().unwrap_or_default(),
        );
        out.entry(key).or_default().push(job);
    }
    Ok(out)
}

pub(crate) fn key(name: &str) -> (String, String, String) {
    key_in(TENANT, name)
}

/// A host Job's key: its source's (cluster, namespace `default`, name).
fn key_in(cluster: &str, name: &str) -> (String, String, String) {
    (cluster.to_owned(), "default".to_owned(), name.to_owned())
}

/// The condition `ty` of a Job's status.
pub(crate) fn condition(job: &Job, ty: &str) -> Option<(String, String)> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == ty)
        .map(|c| (c.status.clone(), c.reason.clone().unwrap_or_default()))
}

pub(crate) fn plain_job(name: &str) -> Value {
    let mut m = job_manifest(name);
    if let Some(spec) = m
        .pointer_mut("/spec/template/spec/containers/0")
        .and_then(Value::as_object_mut)
    {
        spec.remove("envFrom");
    }
    m
}

fn job_manifest(name: &str) -> Value {
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "labels": {"app": name}},
        "spec": {
            "template": {"spec": {
                "restartPolicy": "Never",
                "containers": [{
                    "name": "main", "image": "busybox",
                    "command": ["sh", "-c", "echo $TOKEN"],
                    "envFrom": [{"secretRef": {"name": "creds"}}],
                }],
            }},
        },
    })
}

/// A plain HTTP GET of `path` on `addr`: the body.
pub(crate) fn http_get(addr: &str, path: &str) -> Result<String> {
    let mut s = std::net::TcpStream::connect(addr)?;
    s.set_read_timeout(Some(Duration::from_secs(10)))?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )?;
    let mut text = String::new();
    s.read_to_string(&mut text)?;
    ensure!(text.starts_with("HTTP/1.1 200"), "GET {path}: {text}");
    Ok(text.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_run_on_the_host_and_their_status_comes_back() -> Result<()> {
    let mut data = KplaneServer::start()?;
    let mut host = KplaneServer::start()?;
    let scratch = tempfile::tempdir()?;
    let targets = create_target(&data).await?;
    let created = serde_json::to_value(targets.get(TARGET).await?)?;
    ensure!(
        created.pointer("/metadata/finalizers") == Some(&json!(["sync.kplane.io/drain"])),
        "{created}"
    );

    // The syncer's credential is refused on the ordinary API, even in its own cluster.
    let token = tokio::task::block_in_place(|| syncer_token(&data))?;
    let restricted = data
        .client_with_token(&format!("/clusters/{TARGET_CLUSTER}"), &token)
        .await?;
    let denied = Api::<Job>::all(restricted.clone())
        .list(&ListParams::default())
        .await
        .err();
    ensure!(
        denied.as_ref().and_then(error_code) == Some(403),
        "listing Jobs: {denied:?}"
    );
    let denied = Api::<Secret>::namespaced(restricted, "default")
        .list(&ListParams::default())
        .await
        .err();
    ensure!(
        denied.as_ref().and_then(error_code) == Some(403),
        "listing Secrets: {denied:?}"
    );

    let tenant = data.client_for(TENANT).await?;
    let jobs: Api<Job> = Api::namespaced(tenant.clone(), "default");
    let hostc = host.client().await?;
    let tk = data.kubectl_for(TENANT)?;

    let mut a = Syncer::start(&data, &host, scratch.path(), "syncer-a")?;

    // A Job with a Secret, and one made by `kubectl create job`.
    tokio::task::block_in_place(|| -> Result<()> {
        tk.ok(&[
            "create",
            "secret",
            "generic",
            "creds",
            "--from-literal=TOKEN=s3cret",
        ])?;
        tk.ok_stdin(&["create", "-f", "-"], &job_manifest("pi").to_string())?;
        tk.ok(&["create", "job", "plain", "--image=busybox", "--", "date"])?;
        Ok(())
    })?;
    // SyncAssignment assigned both to the target.
    ensure_assigned(&jobs, "pi").await?;
    ensure_assigned(&jobs, "plain").await?;

    // Both appear on the host, once each, in the host namespace of (tenant, default), with
    // the copied Secret next to them.
    eventually(TIMEOUT, "host Jobs pi and plain", || async {
        let h = host_jobs(&hostc).await?;
        Ok(h.contains_key(&key("pi")) && h.contains_key(&key("plain")))
    })
    .await
    .with_context(|| a.log())?;
    let h = host_jobs(&hostc).await?;
    let host_pi = &h[&key("pi")][0];
    let host_ns = host_pi.namespace().unwrap_or_default();
    ensure!(
        host_ns.starts_with("kplane-") && host_ns.len() == "kplane-".len() + 10,
        "{host_ns}"
    );
    let src_pi = jobs.get("pi").await?;
    ensure!(
        host_pi.annotations().get("kplane.io/uid") == src_pi.metadata.uid.as_ref(),
        "uid annotation {:?}",
        host_pi.annotations()
    );
    ensure!(host_pi.labels().get("app").map(String::as_str) == Some("pi"));
    // The host generated its own selector and controller-uid label, not the source's.
    let host_uid_label = host_pi
        .labels()
        .get("batch.kubernetes.io/controller-uid")
        .cloned();
    ensure!(host_uid_label != src_pi.metadata.uid, "{host_uid_label:?}");
    let ns: Api<Namespace> = Api::all(hostc.clone());
    let namespace = ns.get(&host_ns).await?;
    ensure!(
        namespace
            .labels()
            .get("sync.kplane.io/target")
            .map(String::as_str)
            == Some(TARGET)
    );
    let secrets: Api<Secret> = Api::namespaced(hostc.clone(), &host_ns);
    eventually(TIMEOUT, "the copied Secret", || async {
        Ok(secrets.get_opt("creds").await?.is_some())
    })
    .await?;
    let copied = secrets.get("creds").await?;
    let token = copied
        .data
        .as_ref()
        .and_then(|d| d.get("TOKEN"))
        .map(|b| b.0.clone());
    ensure!(token.as_deref() == Some(b"s3cret".as_slice()), "{token:?}");

    // The source is marked Synced.
    eventually(TIMEOUT, "Synced=True on pi", || async {
        Ok(condition(&jobs.get("pi").await?, "Synced").map(|c| c.0) == Some("True".into()))
    })
    .await
    .with_context(|| a.log())?;

    // The test completes the host Job as the host's Job controller would; kubectl wait in
    // the tenant returns.
    let host_jobs_api: Api<Job> = Api::namespaced(hostc.clone(), &host_ns);
    host_jobs_api
        .patch_status(
            "pi",
            &PatchParams::default(),
            &Patch::Merge(&complete_status()),
        )
        .await?;
    tokio::task::block_in_place(|| {
        tk.ok(&[
            "wait",
            "--for=condition=complete",
            "job/pi",
            "--timeout=60s",
        ])
    })
    .with_context(|| a.log())?;
    let pi = jobs.get("pi").await?;
    let st = pi.status.clone().unwrap_or_default();
    ensure!(st.succeeded == Some(1), "{st:?}");
    ensure!(
        st.completion_time.is_some() && st.start_time.is_some(),
        "{st:?}"
    );
    ensure!(condition(&pi, "Synced") == Some(("True".into(), "Synced".into())));

    // suspend is pushed down.
    jobs.patch(
        "plain",
        &PatchParams::default(),
        &Patch::Merge(&json!({"spec": {"suspend": true}})),
    )
    .await?;
    eventually(TIMEOUT, "suspend on the host Job", || async {
        let j = host_jobs_api.get("plain").await?;
        Ok(j.spec.and_then(|s| s.suspend) == Some(true))
    })
    .await
    .with_context(|| a.log())?;

    // Heartbeats and metrics.
    eventually(TIMEOUT, "a heartbeat", || async {
        let t = serde_json::to_value(targets.get(TARGET).await?)?;
        Ok(
            t.pointer("/status/syncerIdentity") == Some(&json!("syncer-a"))
                && t.pointer("/status/lastHeartbeatTime").is_some()
                && t.pointer("/status/syncedObjects").and_then(Value::as_u64) == Some(2)
                && json_condition(&t, "Ready") == Some(("True".into(), "HeartbeatReceived".into())),
        )
    })
    .await
    .with_context(|| a.log())?;
    let addr = a.metrics_addr()?;
    let metrics = tokio::task::block_in_place(|| http_get(&addr, "/metrics"))?;
    for series in [
        "kplane_syncer_synced_objects 2",
        "kplane_syncer_queue_depth",
        "kplane_syncer_errors_total",
        "kplane_syncer_roundtrip_seconds_count",
    ] {
        ensure!(metrics.contains(series), "{series} missing:\n{metrics}");
    }
    ensure!(tokio::task::block_in_place(|| http_get(&addr, "/healthz"))? == "ok");

    // A second syncer waits while the first holds the Lease.
    let mut b = Syncer::start(&data, &host, scratch.path(), "syncer-b")?;
    poll_until(TIMEOUT, "syncer-b waiting", || {
        Ok(b.log().contains("another syncer holds the leader Lease"))
    })?;

    // A burst of Jobs; the leader is killed (kill -9) while it syncs them; the other takes
    // over once the Lease expires: every Job exactly once on the host.
    let mut names = Vec::new();
    for i in 0..BURST {
        let name = format!("burst-{i:02}");
        jobs.create(
            &PostParams::default(),
            &serde_json::from_value(job_manifest(&name))?,
        )
        .await?;
        names.push(name);
        if i == 5 {
            a.kill()?;
        }
    }
    eventually(TIMEOUT, "every burst Job on the host", || async {
        let h = host_jobs(&hostc).await?;
        Ok(names.iter().all(|n| h.contains_key(&key(n))))
    })
    .await
    .with_context(|| b.log())?;
    ensure!(b.log().contains("acquired the leader Lease"), "{}", b.log());
    let h = host_jobs(&hostc).await?;
    ensure!(h.len() == BURST + 2, "{} host Jobs", h.len());
    for (k, v) in &h {
        ensure!(v.len() == 1, "{k:?} is on the host {} times", v.len());
    }
    eventually(TIMEOUT, "every burst Job Synced", || async {
        let list = jobs.list(&ListParams::default()).await?;
        Ok(list
            .items
            .iter()
            .filter(|j| j.name_any().starts_with("burst-"))
            .all(|j| condition(j, "Synced").map(|c| c.0) == Some("True".into())))
    })
    .await?;

    // The new leader is killed mid-stream too and restarted with its identity: it takes
    // its own Lease back at once and carries on, again without duplicates.
    for i in 0..10 {
        let name = format!("again-{i:02}");
        jobs.create(
            &PostParams::default(),
            &serde_json::from_value(job_manifest(&name))?,
        )
        .await?;
        names.push(name);
        if i == 3 {
            b.kill()?;
            b = Syncer::start(&data, &host, scratch.path(), "syncer-b")?;
        }
    }
    eventually(
        TIMEOUT,
        "every Job on the host after the restart",
        || async {
            let h = host_jobs(&hostc).await?;
            Ok(names.iter().all(|n| h.contains_key(&key(n))))
        },
    )
    .await
    .with_context(|| b.log())?;
    let h = host_jobs(&hostc).await?;
    ensure!(h.len() == names.len() + 2, "{} host Jobs", h.len());
    for (k, v) in &h {
        ensure!(v.len() == 1, "{k:?} is on the host {} times", v.len());
    }

    // The host goes away for at least OUTAGE: no heartbeats while it does not answer, so
    // kplane marks the target not Ready and every Job's status stale after the heartbeat
    // timeout, and they stay so while the host is away; the rest of the status stays as the
    // syncer last saw it. Once the host is back, heartbeats resume and every status is
    // written again.
    ensure_assigned(&jobs, "burst-00").await?;
    let seen = b.log().len();
    let down = Instant::now();
    tokio::task::block_in_place(|| host.stop())?;
    poll_until(TIMEOUT, "the syncer noticing the host outage", || {
        Ok(b.log()
            .get(seen..)
            .unwrap_or_default()
            .contains("the host does not answer"))
    })?;
    let stale = Some(("False".to_owned(), "SyncerHeartbeatTimeout".to_owned()));
    let all_stale = || async {
        let list = jobs.list(&ListParams::default()).await?;
        ensure!(
            list.items.len() == names.len() + 2,
            "{} Jobs",
            list.items.len()
        );
        Ok(list.items.iter().all(|j| condition(j, "Synced") == stale))
    };
    eventually(TIMEOUT, "kplane marking every Job stale", all_stale)
        .await
        .with_context(|| b.log())?;
    let not_ready = Some(("False".to_owned(), "HeartbeatTimeout".to_owned()));
    ensure!(target_ready(&targets).await? == not_ready);
    let pi = jobs.get("pi").await?;
    ensure!(
        condition(&pi, "Complete") == Some(("True".into(), "CompletionsReached".into())),
        "{:?}",
        pi.status
    );
    // The host stays away for OUTAGE in all; the marks stay.
    tokio::time::sleep(OUTAGE.saturating_sub(down.elapsed())).await;
    ensure!(all_stale().await?, "a Job is no longer marked stale");
    ensure!(target_ready(&targets).await? == not_ready);
    let before = serde_json::to_value(targets.get(TARGET).await?)?
        .pointer("/status/lastHeartbeatTime")
        .cloned();
    tokio::task::block_in_place(|| host.restart())?;
    eventually(TIMEOUT, "Synced=True on every Job again", || async {
        let list = jobs.list(&ListParams::default()).await?;
        Ok(list
            .items
            .iter()
            .all(|j| condition(j, "Synced").map(|c| c.0) == Some("True".into())))
    })
    .await
    .with_context(|| b.log())?;
    eventually(TIMEOUT, "heartbeats again", || async {
        let t = serde_json::to_value(targets.get(TARGET).await?)?;
        Ok(t.pointer("/status/lastHeartbeatTime").cloned() != before
            && json_condition(&t, "Ready") == Some(("True".into(), "HeartbeatReceived".into())))
    })
    .await
    .with_context(|| b.log())?;
    ensure!(b.log().contains("the host answers again"), "{}", b.log());

    // kplane restarts: the syncer's watch resumes and a new Job is synced.
    tokio::task::block_in_place(|| data.restart())?;
    jobs.create(
        &PostParams::default(),
        &serde_json::from_value(job_manifest("after-restart"))?,
    )
    .await?;
    ensure_assigned(&jobs, "after-restart").await?;
    names.push("after-restart".to_owned());
    eventually(
        TIMEOUT,
        "the Job created after the kplane restart on the host",
        || async { Ok(host_jobs(&hostc).await?.contains_key(&key("after-restart"))) },
    )
    .await
    .with_context(|| b.log())?;

    // A source that went away while no syncer ran (its finalizer removed, as kplane does
    // when a SyncTarget goes): the next syncer's resync removes the orphaned host Job.
    b.kill()?;
    jobs.patch(
        "after-restart",
        &PatchParams::default(),
        &Patch::Merge(&json!({"metadata": {"finalizers": null}})),
    )
    .await?;
    jobs.delete("after-restart", &Default::default()).await?;
    eventually(TIMEOUT, "after-restart gone in kplane", || async {
        Ok(jobs.get_opt("after-restart").await?.is_none())
    })
    .await?;
    names.retain(|n| n != "after-restart");
    ensure!(host_jobs(&hostc).await?.contains_key(&key("after-restart")));
    b = Syncer::start(&data, &host, scratch.path(), "syncer-b")?;
    eventually(TIMEOUT, "the orphaned host Job removed", || async {
        Ok(!host_jobs(&hostc).await?.contains_key(&key("after-restart")))
    })
    .await
    .with_context(|| b.log())?;
    ensure!(
        b.log()
            .contains("resync: deleted the host Job whose source no longer exists"),
        "{}",
        b.log()
    );

    // Deleting pi: the host Job goes before its finalizer is released; the copied Secret
    // stays while other Jobs use it, and goes with the last of them.
    tokio::task::block_in_place(|| tk.ok(&["delete", "job", "pi", "--wait=false"]))?;
    eventually(TIMEOUT, "pi gone in the tenant and on the host", || async {
        let gone_here = jobs.get_opt("pi").await?.is_none();
        let gone_there = !host_jobs(&hostc).await?.contains_key(&key("pi"));
        Ok(gone_here && gone_there)
    })
    .await
    .with_context(|| b.log())?;
    ensure!(
        secrets.get_opt("creds").await?.is_some(),
        "still used by the burst Jobs"
    );
    tokio::task::block_in_place(|| tk.ok(&["delete", "job", "-l", "app", "--wait=false"]))?;
    eventually(
        TIMEOUT,
        "the tenant's Jobs and the copied Secret gone",
        || async {
            let left = jobs.list(&ListParams::default()).await?.items.len();
            let copy = secrets.get_opt("creds").await?;
            let on_host = host_jobs(&hostc).await?.len();
            Ok(left == 1 && copy.is_none() && on_host == 1)
        },
    )
    .await
    .with_context(|| b.log())?;

    // Deleting the SyncTarget drains it: the syncer removes the host objects and namespace,
    // sets Drained=True and exits; kplane's sync controller then releases the drain
    // finalizer and the SyncTarget goes.
    targets.delete(TARGET, &Default::default()).await?;
    eventually(TIMEOUT, "the drained SyncTarget gone", || async {
        Ok(targets.get_opt(TARGET).await?.is_none())
    })
    .await
    .with_context(|| b.log())?;
    ensure!(
        b.log().contains("drained: every host object is gone"),
        "{}",
        b.log()
    );
    ensure!(host_jobs(&hostc).await?.is_empty());
    let ns_left = ns
        .get_opt(&host_ns)
        .await?
        .map(|n| n.metadata.deletion_timestamp.is_some());
    ensure!(
        ns_left != Some(false),
        "the host namespace is still there: {ns_left:?}"
    );
    let code = tokio::task::block_in_place(|| b.wait_exit(TIMEOUT))?;
    if code != 0 {
        bail!("the syncer exited with {code}: {}", b.log());
    }
    Ok(())
}

/// Creates the workspaces of the target and the tenant, the SyncTarget `east`
/// (`includeDescendants: true`) and the syncer's credential as docs/deploy/kplane-rbac
/// declares it (a ServiceAccount allowed verb `sync` on `synctargets/east`).
pub(crate) async fn create_target(data: &KplaneServer) -> Result<Api<DynamicObject>> {
    tokio::task::block_in_place(|| -> Result<()> {
        data.create_workspaces(&[TARGET_CLUSTER, TENANT])?;
        let rbac = Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/deploy/kplane-rbac");
        let rbac = rbac.to_str().context("the kplane-rbac path")?;
        data.kubectl_for(TARGET_CLUSTER)?
            .ok(&["apply", "-k", rbac])?;
        Ok(())
    })?;
    let targets: Api<DynamicObject> = Api::all_with(
        data.client_for(TARGET_CLUSTER).await?,
        &synctarget_resource(),
    );
    let st: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "sync.kplane.io/v1alpha1",
        "kind": "SyncTarget",
        "metadata": {"name": TARGET},
        // Short, so that the host outage below outlasts it (the syncer beats every second).
        "spec": {"includeDescendants": true, "heartbeatTimeoutSeconds": HEARTBEAT_TIMEOUT},
    }))?;
    targets.create(&PostParams::default(), &st).await?;
    Ok(targets)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_shared_host_namespace_gets_unique_names_and_renamed_references() -> Result<()> {
    let data = KplaneServer::start()?;
    let host = KplaneServer::start()?;
    let scratch = tempfile::tempdir()?;
    create_target(&data).await?;
    tokio::task::block_in_place(|| host.kubectl_ok(&["create", "namespace", "synced"]))?;
    let tk = data.kubectl_for(TENANT)?;
    tokio::task::block_in_place(|| -> Result<()> {
        tk.ok(&[
            "create",
            "secret",
            "generic",
            "creds",
            "--from-literal=TOKEN=one",
        ])?;
        tk.ok(&[
            "create",
            "configmap",
            "settings",
            "--from-literal=mode=fast",
        ])?;
        tk.ok(&["create", "serviceaccount", "runner"])?;
        Ok(())
    })?;
    let jobs: Api<Job> = Api::namespaced(data.client_for(TENANT).await?, "default");
    let mut m = job_manifest("pi");
    m["spec"]["template"]["spec"]["serviceAccountName"] = json!("runner");
    m["spec"]["template"]["spec"]["volumes"] =
        json!([{"name": "settings", "configMap": {"name": "settings"}}]);
    jobs.create(&PostParams::default(), &serde_json::from_value(m)?)
        .await?;
    ensure_assigned(&jobs, "pi").await?;

    let syncer = Syncer::start_with(
        &data,
        &host,
        scratch.path(),
        "shared",
        &["--host-namespace", "synced"],
    )?;
    let hostc = host.client().await?;
    eventually(TIMEOUT, "the host Job", || async {
        Ok(host_jobs(&hostc).await?.contains_key(&key("pi")))
    })
    .await
    .with_context(|| syncer.log())?;
    let h = host_jobs(&hostc).await?;
    let job = &h[&key("pi")][0];
    ensure!(job.namespace().as_deref() == Some("synced"));
    let name = job.name_any();
    let hash = name.strip_prefix("pi-").unwrap_or_default();
    ensure!(
        hash.len() == 8 && hash.bytes().all(|b| b.is_ascii_hexdigit()),
        "{name}"
    );
    // The references name the copies, which exist under those names.
    let pod = job
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.clone())
        .context("no pod spec")?;
    let secret_name = pod.containers[0]
        .env_from
        .as_ref()
        .and_then(|e| e[0].secret_ref.as_ref())
        .map(|r| r.name.clone())
        .unwrap_or_default();
    let cm_name = pod
        .volumes
        .as_ref()
        .and_then(|v| v[0].config_map.as_ref())
        .map(|c| c.name.clone())
        .unwrap_or_default();
    let sa_name = pod.service_account_name.clone().unwrap_or_default();
    for (renamed, original) in [
        (&secret_name, "creds"),
        (&cm_name, "settings"),
        (&sa_name, "runner"),
    ] {
        ensure!(
            renamed.starts_with(&format!("{original}-")) && renamed.len() == original.len() + 9,
            "{original} became {renamed}"
        );
    }
    let secrets: Api<Secret> = Api::namespaced(hostc.clone(), "synced");
    let cms: Api<k8s_openapi::api::core::v1::ConfigMap> = Api::namespaced(hostc.clone(), "synced");
    let sas: Api<k8s_openapi::api::core::v1::ServiceAccount> =
        Api::namespaced(hostc.clone(), "synced");
    eventually(TIMEOUT, "the three copies", || async {
        Ok(secrets.get_opt(&secret_name).await?.is_some()
            && cms.get_opt(&cm_name).await?.is_some()
            && sas.get_opt(&sa_name).await?.is_some())
    })
    .await
    .with_context(|| syncer.log())?;
    let copy = secrets.get(&secret_name).await?;
    ensure!(copy.annotations().get("kplane.io/name").map(String::as_str) == Some("creds"));

    // A change of the Secret in kplane reaches the copy (on resync).
    tokio::task::block_in_place(|| {
        tk.ok(&[
            "patch",
            "secret",
            "creds",
            "--type=merge",
            "-p",
            r#"{"stringData":{"TOKEN":"two"}}"#,
        ])
    })?;
    eventually(TIMEOUT, "the updated copy", || async {
        let s = secrets.get(&secret_name).await?;
        Ok(s.data.and_then(|d| d.get("TOKEN").map(|b| b.0.clone())) == Some(b"two".to_vec()))
    })
    .await
    .with_context(|| syncer.log())?;

    // Deleting the Job removes it and every copy from the shared namespace.
    jobs.delete("pi", &Default::default()).await?;
    eventually(TIMEOUT, "the host Job and the copies gone", || async {
        Ok(host_jobs(&hostc).await?.is_empty()
            && secrets.get_opt(&secret_name).await?.is_none()
            && cms.get_opt(&cm_name).await?.is_none()
            && sas.get_opt(&sa_name).await?.is_none()
            && jobs.get_opt("pi").await?.is_none())
    })
    .await
    .with_context(|| syncer.log())?;
    Ok(())
}

/// The issue's "a SyncTarget with includeDescendants over 3 workspaces": the target in
/// root:t, Jobs in root:t:a, root:t:b and the grandchild root:t:a:c each run in their own
/// host namespace and complete in their tenant; a Job of the sibling root:u is not synced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn include_descendants_syncs_three_workspaces_and_nothing_outside() -> Result<()> {
    let data = KplaneServer::start()?;
    let host = KplaneServer::start()?;
    let scratch = tempfile::tempdir()?;
    create_target(&data).await?;
    let tenants = [TENANT, "root:t:b", "root:t:a:c"];
    let outside = "root:u";
    tokio::task::block_in_place(|| data.create_workspaces(&["root:t:b", "root:t:a:c", outside]))?;
    let syncer = Syncer::start(&data, &host, scratch.path(), "tree")?;

    tokio::task::block_in_place(|| -> Result<()> {
        for cluster in tenants.iter().chain([&outside]) {
            data.kubectl_for(cluster)?.ok(&[
                "create",
                "job",
                "work",
                "--image=busybox",
                "--",
                "true",
            ])?;
        }
        Ok(())
    })?;
    for cluster in tenants {
        let jobs: Api<Job> = Api::namespaced(data.client_for(cluster).await?, "default");
        ensure_assigned(&jobs, "work")
            .await
            .with_context(|| cluster.to_owned())?;
    }
    let outside_jobs: Api<Job> = Api::namespaced(data.client_for(outside).await?, "default");
    let o = outside_jobs.get("work").await?;
    ensure!(
        !o.annotations().contains_key("sync.kplane.io/target") && o.finalizers().is_empty(),
        "{:?} {:?}",
        o.annotations(),
        o.finalizers()
    );

    // Each on the host once, in a host namespace of its own.
    let hostc = host.client().await?;
    eventually(TIMEOUT, "the three host Jobs", || async {
        let h = host_jobs(&hostc).await?;
        Ok(tenants.iter().all(|c| h.contains_key(&key_in(c, "work"))))
    })
    .await
    .with_context(|| syncer.log())?;
    let h = host_jobs(&hostc).await?;
    let mut namespaces = std::collections::BTreeSet::new();
    for cluster in tenants {
        let copies = &h[&key_in(cluster, "work")];
        ensure!(copies.len() == 1, "{cluster}: {} host Jobs", copies.len());
        namespaces.insert(copies[0].namespace().unwrap_or_default());
    }
    ensure!(namespaces.len() == 3, "host namespaces {namespaces:?}");

    // The host completes them; each tenant sees its Job Complete (and Synced).
    for cluster in tenants {
        let ns = h[&key_in(cluster, "work")][0]
            .namespace()
            .unwrap_or_default();
        Api::<Job>::namespaced(hostc.clone(), &ns)
            .patch_status(
                "work",
                &PatchParams::default(),
                &Patch::Merge(&complete_status()),
            )
            .await?;
    }
    for cluster in tenants {
        tokio::task::block_in_place(|| {
            data.kubectl_for(cluster)?.ok(&[
                "wait",
                "--for=condition=complete",
                "job/work",
                "--timeout=60s",
            ])
        })
        .with_context(|| format!("{cluster}: {}", syncer.log()))?;
        let jobs: Api<Job> = Api::namespaced(data.client_for(cluster).await?, "default");
        let job = jobs.get("work").await?;
        ensure!(
            condition(&job, "Synced") == Some(("True".into(), "Synced".into())),
            "{cluster}: {:?}",
            job.status
        );
    }

    // By now the syncer has seen every assigned Job: the one outside the subtree is not on
    // the host, and not synced.
    let h = host_jobs(&hostc).await?;
    ensure!(
        h.len() == 3 && !h.contains_key(&key_in(outside, "work")),
        "host Jobs {:?}",
        h.keys().collect::<Vec<_>>()
    );
    let o = outside_jobs.get("work").await?;
    ensure!(condition(&o, "Synced").is_none(), "{:?}", o.status);
    Ok(())
}
