//! kplane's sync controllers with the real binary and kubectl, no syncer running: a Job
//! that predates its SyncTarget is assigned to it; without heartbeats the target turns
//! Ready=False and the Job gets Synced=False (stale); a heartbeat written as the syncer
//! would makes it Ready; deleting the target with no live syncer releases the Job
//! (annotation and finalizer gone, Synced=False SyncTargetDeleted) and the target goes.
//! And `ttlSecondsAfterFinished`: a Job marked Complete is deleted once its TTL passed.

use std::time::Duration;

use anyhow::Result;
use kplane_e2e::{poll_until, KplaneServer};
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(60);

fn get(k: &kplane_e2e::Kubectl, args: &[&str]) -> Result<Value> {
    let mut a = vec!["get"];
    a.extend_from_slice(args);
    a.extend_from_slice(&["-o", "json"]);
    Ok(serde_json::from_str(&k.ok(&a)?)?)
}

fn condition<'a>(obj: &'a Value, ty: &str) -> Option<&'a Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == ty)
}

fn has(obj: &Value, ty: &str, status: &str, reason: &str) -> bool {
    condition(obj, ty).is_some_and(|c| c["status"] == status && c["reason"] == reason)
}

fn now() -> String {
    chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

#[test]
fn sync_target_health_staleness_and_drain() -> Result<()> {
    let server = KplaneServer::start()?;
    let k = server.kubectl_root();
    k.ok(&["create", "namespace", "d"])?;
    k.ok(&["create", "job", "j", "-n", "d", "--image=busybox"])?;
    let target = json!({"apiVersion": "sync.kplane.io/v1alpha1", "kind": "SyncTarget",
                        "metadata": {"name": "east"}, "spec": {"heartbeatTimeoutSeconds": 2}});
    k.ok_stdin(&["apply", "-f", "-"], &target.to_string())?;
    let job = || get(k, &["job", "j", "-n", "d"]);
    poll_until(TIMEOUT, "the Job assigned to root/east", || {
        let j = job()?;
        Ok(
            j["metadata"]["annotations"]["sync.kplane.io/target"] == "root/east"
                && j["metadata"]["finalizers"]
                    .as_array()
                    .is_some_and(|f| f.contains(&json!("sync.kplane.io/syncer"))),
        )
    })?;
    poll_until(
        TIMEOUT,
        "Ready=False HeartbeatTimeout, the Job stale",
        || {
            let t = get(k, &["synctarget", "east"])?;
            Ok(has(&t, "Ready", "False", "HeartbeatTimeout")
                && has(&job()?, "Synced", "False", "SyncerHeartbeatTimeout"))
        },
    )?;
    let stale = job()?;
    let msg = condition(&stale, "Synced").unwrap()["message"]
        .as_str()
        .unwrap_or("")
        .to_string();
    anyhow::ensure!(
        msg.starts_with("status is stale: SyncTarget root/east"),
        "{msg}"
    );

    // A heartbeat as the syncer writes it (here as the admin, through /status).
    let t = now();
    let beat = json!({"status": {"lastHeartbeatTime": t, "conditions": [
        {"type": "Ready", "status": "True", "reason": "HeartbeatReceived",
         "message": "syncer heartbeat", "lastTransitionTime": t}]}});
    k.ok(&[
        "patch",
        "synctarget",
        "east",
        "--subresource=status",
        "--type=merge",
        "-p",
        &beat.to_string(),
    ])?;
    let ready = get(k, &["synctarget", "east"])?;
    anyhow::ensure!(has(&ready, "Ready", "True", "HeartbeatReceived"), "{ready}");

    // Deleted with no syncer to drain it: kplane releases the Job, then the target goes.
    k.ok(&["delete", "synctarget", "east", "--wait=false"])?;
    poll_until(TIMEOUT, "the SyncTarget gone", || {
        let out = k.run(&["get", "synctarget", "east"])?;
        Ok(!out.success() && out.stderr.contains("NotFound"))
    })?;
    let j = job()?;
    anyhow::ensure!(
        j["metadata"]["annotations"]
            .get("sync.kplane.io/target")
            .is_none(),
        "{j}"
    );
    anyhow::ensure!(
        !j["metadata"]["finalizers"]
            .as_array()
            .is_some_and(|f| f.contains(&json!("sync.kplane.io/syncer"))),
        "{j}"
    );
    anyhow::ensure!(has(&j, "Synced", "False", "SyncTargetDeleted"), "{j}");
    // Released: it can be deleted like any Job.
    k.ok(&["delete", "job", "j", "-n", "d", "--timeout=60s"])?;
    Ok(())
}

#[test]
fn finished_job_is_deleted_after_its_ttl() -> Result<()> {
    let server = KplaneServer::start()?;
    let k = server.kubectl_root();
    k.ok(&["create", "namespace", "d"])?;
    let job = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "done", "namespace": "d"},
        "spec": {"ttlSecondsAfterFinished": 1, "template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}}});
    k.ok_stdin(&["apply", "-f", "-"], &job.to_string())?;
    let mut kept = job.clone();
    kept["metadata"]["name"] = json!("kept");
    kept["spec"]["ttlSecondsAfterFinished"] = json!(3600);
    k.ok_stdin(&["apply", "-f", "-"], &kept.to_string())?;
    let t = now();
    let complete = json!({"status": {"startTime": t, "completionTime": t, "succeeded": 1,
        "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "lastTransitionTime": t},
            {"type": "Complete", "status": "True", "lastTransitionTime": t}]}});
    for name in ["done", "kept"] {
        k.ok(&[
            "patch",
            "job",
            name,
            "-n",
            "d",
            "--subresource=status",
            "--type=merge",
            "-p",
            &complete.to_string(),
        ])?;
    }
    k.ok(&[
        "wait",
        "--for=delete",
        "job/done",
        "-n",
        "d",
        "--timeout=60s",
    ])?;
    k.ok(&["get", "job", "kept", "-n", "d"])?;
    Ok(())
}
