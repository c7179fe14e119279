//! The pods of synced Jobs, reflected from the host into the Job's logical cluster by the
//! real `kplane syncer`. The stand-in host (a second kplane, with the plugin that keeps
//! Pods to the syncer turned off, since there the test plays the host's Job controller and
//! kubelet) gets a pod for the host Job; kplane shows it as a Pod the tenant Job's
//! selector matches, owned by the tenant Job, with the host's status kept current;
//! `kubectl delete pod` in kplane deletes the host pod; a host pod that goes takes its
//! reflection along; nobody but the syncer writes Pods in kplane.

use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kplane_e2e::{eventually, KplaneServer, ServerOptions};
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::ResourceExt as _;
use serde_json::{json, Value};

use crate::syncer::{create_target, host_jobs, key, plain_job, Syncer, TENANT};

const TIMEOUT: Duration = Duration::from_secs(60);
/// The admission plugin that keeps Pods to the syncer, off on the stand-in host.
pub(crate) const POD_PLUGIN: &str = "PodReflection";

/// A kplane standing in for a host cluster whose pods the test writes.
pub(crate) fn stand_in_host() -> Result<KplaneServer> {
    KplaneServer::start_with(
        ServerOptions::default().arg(format!("--disable-admission-plugins={POD_PLUGIN}")),
    )
}

/// What the host's Job controller makes for host Job `job`: a pod from its template,
/// named `<job>-<suffix>`, labelled with the Job's uid and name, owned by the Job.
pub(crate) fn host_pod_of(job: &Value, suffix: &str) -> Value {
    let name = job["metadata"]["name"].as_str().unwrap_or_default();
    let uid = job["metadata"]["uid"].as_str().unwrap_or_default();
    let mut labels = job
        .pointer("/spec/template/metadata/labels")
        .cloned()
        .unwrap_or_else(|| json!({}));
    for (k, v) in [
        ("controller-uid", uid),
        ("batch.kubernetes.io/controller-uid", uid),
        ("job-name", name),
        ("batch.kubernetes.io/job-name", name),
    ] {
        labels[k] = json!(v);
    }
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": format!("{name}-{suffix}"),
            "namespace": job["metadata"]["namespace"],
            "labels": labels,
            "annotations": job.pointer("/spec/template/metadata/annotations").cloned().unwrap_or_else(|| json!({})),
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": name, "uid": uid,
                                 "controller": true, "blockOwnerDeletion": true}],
        },
        "spec": job.pointer("/spec/template/spec").cloned().unwrap_or_else(|| json!({})),
    })
}

/// A pod status as a kubelet writes it: `phase` with one container `main`.
pub(crate) fn pod_status(phase: &str) -> Value {
    let t = "2026-11-28T10:00:00Z";
    let (ready, state) = match phase {
        "Running" => (true, json!({"running": {"startedAt": t}})),
        "Succeeded" => (
            false,
            json!({"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": t, "finishedAt": t}}),
        ),
        "Failed" => (
            false,
            json!({"terminated": {"exitCode": 1, "reason": "Error", "startedAt": t, "finishedAt": t}}),
        ),
        _ => (false, json!({"waiting": {"reason": "ContainerCreating"}})),
    };
    json!({
        "phase": phase,
        "startTime": t,
        "podIP": "10.128.0.7",
        "podIPs": [{"ip": "10.128.0.7"}],
        "conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }, "lastTransitionTime": t}],
        "containerStatuses": [{"name": "main", "image": "busybox", "imageID": "", "ready": ready,
                               "restartCount": 0, "started": ready, "state": state}],
    })
}

/// Sets the status of host pod `name` as a kubelet would.
pub(crate) async fn set_host_pod_status(api: &Api<Pod>, name: &str, phase: &str) -> Result<()> {
    let mut pod = serde_json::to_value(api.get(name).await?)?;
    pod["status"] = pod_status(phase);
    api.replace_status(
        name,
        &PostParams::default(),
        &serde_json::from_value::<Pod>(pod)?,
    )
    .await
    .with_context(|| format!("setting the status of host pod {name}"))?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pods_of_synced_jobs_are_reflected_from_the_host() -> Result<()> {
    let data = KplaneServer::start()?;
    let host = stand_in_host()?;
    let scratch = tempfile::tempdir()?;
    let targets = create_target(&data).await?;
    let tenant = data.client_for(TENANT).await?;
    let jobs: Api<Job> = Api::namespaced(tenant.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(tenant, "default");
    let tk = data.kubectl_for(TENANT)?;
    jobs.create(
        &PostParams::default(),
        &serde_json::from_value(plain_job("pi"))?,
    )
    .await?;
    let syncer = Syncer::start(&data, &host, scratch.path(), "pods")?;
    let hostc = host.client().await?;
    eventually(TIMEOUT, "the host Job", || async {
        Ok(host_jobs(&hostc).await?.contains_key(&key("pi")))
    })
    .await
    .with_context(|| syncer.log())?;
    let host_job = serde_json::to_value(&host_jobs(&hostc).await?[&key("pi")][0])?;
    let host_ns = host_job["metadata"]["namespace"]
        .as_str()
        .context("ns")?
        .to_owned();
    let host_pods: Api<Pod> = Api::namespaced(hostc.clone(), &host_ns);
    ensure!(
        host_job.pointer("/spec/template/metadata/labels/sync.kplane.io~1target")
            == Some(&json!("east")),
        "the host pods are found by the target's label: {host_job}"
    );

    // The host's Job controller makes a pod; the kubelet starts it.
    host_pods
        .create(
            &PostParams::default(),
            &serde_json::from_value(host_pod_of(&host_job, "x7k2p"))?,
        )
        .await?;
    set_host_pod_status(&host_pods, "pi-x7k2p", "Running").await?;
    let tenant_uid = jobs.get("pi").await?.uid().context("uid")?;
    eventually(TIMEOUT, "the reflection Running in kplane", || async {
        let p = pods.get_opt("pi-x7k2p").await?;
        Ok(p.and_then(|p| p.status).and_then(|s| s.phase).as_deref() == Some("Running"))
    })
    .await
    .with_context(|| syncer.log())?;
    let p = serde_json::to_value(pods.get("pi-x7k2p").await?)?;
    ensure!(
        p["metadata"]["labels"]["batch.kubernetes.io/controller-uid"] == tenant_uid.as_str(),
        "{p}"
    );
    ensure!(p["metadata"]["labels"]["job-name"] == "pi", "{p}");
    ensure!(
        p["metadata"]["labels"]
            .get("sync.kplane.io/target")
            .is_none(),
        "{p}"
    );
    ensure!(
        p["metadata"]["ownerReferences"][0]["uid"] == tenant_uid.as_str()
            && p["metadata"]["ownerReferences"][0]["kind"] == "Job",
        "{p}"
    );
    ensure!(
        p["metadata"]["annotations"]["sync.kplane.io/host-pod"]
            == format!("{host_ns}/pi-x7k2p").as_str(),
        "{p}"
    );
    ensure!(p["status"]["podIP"] == "10.128.0.7", "{p}");
    // The tenant Job's selector finds it, as kubectl and operators ask.
    let selector = "batch.kubernetes.io/controller-uid=".to_owned() + &tenant_uid;
    let by_selector = pods.list(&ListParams::default().labels(&selector)).await?;
    ensure!(by_selector.items.len() == 1, "{:?}", by_selector.items);
    let table = tokio::task::block_in_place(|| tk.ok(&["get", "pods", "-l", "job-name=pi"]))?;
    ensure!(
        table
            .lines()
            .next()
            .is_some_and(|h| h.split_whitespace().collect::<Vec<_>>()
                == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"])
            && table.contains("pi-x7k2p")
            && table.contains("1/1")
            && table.contains("Running"),
        "{table}"
    );

    // The pod finishes on the host: the reflection follows.
    set_host_pod_status(&host_pods, "pi-x7k2p", "Succeeded").await?;
    eventually(TIMEOUT, "the reflection Succeeded", || async {
        let p = pods.get("pi-x7k2p").await?;
        Ok(p.status.and_then(|s| s.phase).as_deref() == Some("Succeeded"))
    })
    .await
    .with_context(|| syncer.log())?;

    // Nobody but the syncer writes Pods in kplane.
    let denied = tokio::task::block_in_place(|| {
        tk.run(&["run", "intruder", "--image=busybox", "--restart=Never"])
    })?;
    ensure!(
        !denied.success() && denied.stderr.contains("forbidden"),
        "{denied:?}"
    );

    // `kubectl delete pod` in kplane deletes the host pod; the host's new pod is reflected.
    tokio::task::block_in_place(|| tk.ok(&["delete", "pod", "pi-x7k2p", "--wait=false"]))?;
    eventually(TIMEOUT, "the host pod deleted", || async {
        Ok(host_pods.get_opt("pi-x7k2p").await?.is_none())
    })
    .await
    .with_context(|| syncer.log())?;
    host_pods
        .create(
            &PostParams::default(),
            &serde_json::from_value(host_pod_of(&host_job, "q9w8e"))?,
        )
        .await?;
    eventually(
        TIMEOUT,
        "the new pod reflected, the old one gone",
        || async {
            let names: Vec<String> = pods
                .list(&ListParams::default())
                .await?
                .items
                .iter()
                .map(|p| p.name_any())
                .collect();
            Ok(names == ["pi-q9w8e"])
        },
    )
    .await
    .with_context(|| syncer.log())?;
    // A host pod that goes takes its reflection along.
    host_pods
        .delete("pi-q9w8e", &DeleteParams::default())
        .await?;
    eventually(TIMEOUT, "the reflection gone with the host pod", || async {
        Ok(pods.list(&ListParams::default()).await?.items.is_empty())
    })
    .await
    .with_context(|| syncer.log())?;
    // The SyncTarget goes: the drain takes the host objects and the reflections along.
    host_pods
        .create(
            &PostParams::default(),
            &serde_json::from_value(host_pod_of(&host_job, "z1z2z"))?,
        )
        .await?;
    eventually(TIMEOUT, "the third pod reflected", || async {
        Ok(pods.get_opt("pi-z1z2z").await?.is_some())
    })
    .await
    .with_context(|| syncer.log())?;
    targets.delete("east", &DeleteParams::default()).await?;
    eventually(TIMEOUT, "the reflections gone with the drain", || async {
        Ok(targets.get_opt("east").await?.is_none()
            && pods.list(&ListParams::default()).await?.items.is_empty())
    })
    .await
    .with_context(|| syncer.log())?;
    Ok(())
}

/// An operator's own pod on the host (hive-controllers'), as its Deployment makes it.
fn operator_pod(name: &str, labels: Value) -> Value {
    json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": "hive", "labels": labels},
        "spec": {
            "nodeSelector": {"node-role.kubernetes.io/infra": ""},
            "tolerations": [{"key": "node-role.kubernetes.io/infra", "operator": "Exists", "effect": "NoSchedule"}],
            "containers": [{"name": "manager", "image": "quay.io/openshift/hive:latest"}],
        },
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_target_reflects_an_operators_own_pod() -> Result<()> {
    let data = KplaneServer::start()?;
    let host = stand_in_host()?;
    let scratch = tempfile::tempdir()?;
    let targets = create_target(&data).await?;
    // hive reads its own Pod (POD_NAME, POD_NAMESPACE) in its logical cluster.
    targets
        .patch(
            "east",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&json!({"spec": {"reflectPods": [
                {
                    "hostNamespace": "hive",
                    "selector": {"matchLabels": {"control-plane": "controller-manager"}},
                    "cluster": TENANT,
                },
                // A host namespace the syncer is not allowed to reflect.
                {"hostNamespace": "kube-system", "selector": {}, "cluster": TENANT, "namespace": "hive"},
            ]}})),
        )
        .await?;
    let tk = data.kubectl_for(TENANT)?;
    tokio::task::block_in_place(|| -> Result<()> {
        tk.ok(&["create", "namespace", "hive"])?;
        host.kubectl_ok(&["create", "namespace", "hive"])?;
        host.kubectl_ok(&["create", "namespace", "kube-system"])
            .ok();
        Ok(())
    })?;
    let hostc = host.client().await?;
    let host_pods: Api<Pod> = Api::namespaced(hostc.clone(), "hive");
    let pp = PostParams::default();
    host_pods
        .create(
            &pp,
            &serde_json::from_value(operator_pod(
                "hive-controllers-7d9f",
                json!({"control-plane": "controller-manager"}),
            ))?,
        )
        .await?;
    host_pods
        .create(
            &pp,
            &serde_json::from_value(operator_pod(
                "hive-operator-1a2b",
                json!({"control-plane": "hive-operator"}),
            ))?,
        )
        .await?;
    set_host_pod_status(&host_pods, "hive-controllers-7d9f", "Running").await?;
    let system_pods: Api<Pod> = Api::namespaced(hostc.clone(), "kube-system");
    let mut secret_pod = operator_pod("etcd-0", json!({"tier": "control-plane"}));
    secret_pod["metadata"]["namespace"] = json!("kube-system");
    system_pods
        .create(&pp, &serde_json::from_value(secret_pod)?)
        .await?;
    // The host's operator allows the namespace (a tenant writes the SyncTarget).
    let syncer = Syncer::start_with(
        &data,
        &host,
        scratch.path(),
        "chosen",
        &["--reflect-host-namespaces", "hive"],
    )?;
    let pods: Api<Pod> = Api::namespaced(data.client_for(TENANT).await?, "hive");
    eventually(
        TIMEOUT,
        "hive-controllers' pod reflected, Running",
        || async {
            let p = pods.get_opt("hive-controllers-7d9f").await?;
            Ok(p.and_then(|p| p.status).and_then(|s| s.phase).as_deref() == Some("Running"))
        },
    )
    .await
    .with_context(|| syncer.log())?;
    // What hive copies into its Jobs.
    let p = serde_json::to_value(pods.get("hive-controllers-7d9f").await?)?;
    ensure!(
        p["spec"]["nodeSelector"] == json!({"node-role.kubernetes.io/infra": ""})
            && p["spec"]["tolerations"][0]["key"] == "node-role.kubernetes.io/infra",
        "{p}"
    );
    ensure!(
        p["metadata"]["annotations"]["sync.kplane.io/host-pod"] == "hive/hive-controllers-7d9f",
        "{p}"
    );
    ensure!(
        pods.get_opt("hive-operator-1a2b").await?.is_none(),
        "a pod the selector does not match"
    );
    ensure!(
        pods.get_opt("etcd-0").await?.is_none(),
        "a host namespace not allowed"
    );
    ensure!(
        syncer
            .log()
            .contains("spec.reflectPods names a host namespace this syncer may not reflect"),
        "{}",
        syncer.log()
    );
    // A reflection deleted in kplane comes back (the operator's pod is never deleted for it).
    pods.delete("hive-controllers-7d9f", &DeleteParams::default())
        .await?;
    eventually(TIMEOUT, "the reflection written again", || async {
        Ok(pods.get_opt("hive-controllers-7d9f").await?.is_some())
    })
    .await
    .with_context(|| syncer.log())?;
    ensure!(host_pods.get_opt("hive-controllers-7d9f").await?.is_some());
    // The host pod goes (a rollout): its reflection goes too.
    host_pods
        .delete("hive-controllers-7d9f", &DeleteParams::default())
        .await?;
    eventually(TIMEOUT, "the reflection gone with the host pod", || async {
        Ok(pods.get_opt("hive-controllers-7d9f").await?.is_none())
    })
    .await
    .with_context(|| syncer.log())?;
    // An entry taken out of spec.reflectPods takes its reflections along.
    host_pods
        .create(
            &pp,
            &serde_json::from_value(operator_pod(
                "hive-controllers-8e0a",
                json!({"control-plane": "controller-manager"}),
            ))?,
        )
        .await?;
    eventually(TIMEOUT, "the new operator pod reflected", || async {
        Ok(pods.get_opt("hive-controllers-8e0a").await?.is_some())
    })
    .await
    .with_context(|| syncer.log())?;
    targets
        .patch(
            "east",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(&json!({"spec": {"reflectPods": null}})),
        )
        .await?;
    eventually(TIMEOUT, "the reflection gone with its entry", || async {
        Ok(pods.get_opt("hive-controllers-8e0a").await?.is_none())
    })
    .await
    .with_context(|| syncer.log())?;
    // Through the sync endpoint, the syncer's credential may write an ownerless pod only
    // in a namespace spec.reflectPods names.
    let token = tokio::task::block_in_place(|| crate::syncer::syncer_token(&data))?;
    let endpoint = data
        .client_with_token(
            &format!("/services/sync/root:t/east/clusters/{TENANT}"),
            &token,
        )
        .await?;
    let mut stray = operator_pod("stray", json!({}));
    stray["metadata"]["namespace"] = json!("default");
    stray["metadata"]["annotations"] = json!({"sync.kplane.io/target": "root:t/east"});
    let refused = Api::<Pod>::namespaced(endpoint, "default")
        .create(&pp, &serde_json::from_value(stray)?)
        .await
        .err();
    ensure!(
        refused.as_ref().and_then(kplane_e2e::fixtures::error_code) == Some(403),
        "{refused:?}"
    );
    Ok(())
}
