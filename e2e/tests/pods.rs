//! Pods as reflections of a host cluster's pods, written only by a syncer: an admin's
//! `kubectl run` and `kubectl create -f pod.yaml` are refused 403; through the sync endpoint,
//! with the syncer's credential (a token of the ServiceAccount the SyncTarget's grant
//! names, as in sync_endpoint.rs), a pod owned by an assigned Job is created and its status
//! written, while a pod owned by no assigned Job is refused; kubectl shows upstream's
//! columns and statuses (`get`, `-o wide`, `-l job-name=`, `-w`, `describe`), kube-rs
//! selects by `status.phase`; the admin deletes a pod; deleting the Job deletes its pods.

use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use kplane_e2e::fixtures::error_code;
use kplane_e2e::{eventually, KplaneServer, Table};
use kube::api::{ListParams, Patch, PatchParams, PostParams};
use kube::{Api, ResourceExt as _};
use serde_json::{json, Value};

use crate::sync_endpoint::GRANT;

const TARGET: &str = "root:acme";
const ENDPOINT: &str = "/services/sync/root:acme/east";
const ASSIGNMENT: &str = "root:acme/east";
const REFUSAL: &str =
    "is forbidden: pods in kplane are reflections of pods on a host cluster, written by its syncer";
const TIMEOUT: Duration = Duration::from_secs(30);

/// A reflection of host pod `name` of Job `job` (with `uid`), as a syncer writes it.
fn reflection(name: &str, job: &str, uid: &str) -> Result<Pod> {
    Ok(serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {
            "name": name,
            "labels": {"job-name": job, "batch.kubernetes.io/job-name": job,
                "controller-uid": uid, "batch.kubernetes.io/controller-uid": uid},
            "annotations": {"sync.kplane.io/target": ASSIGNMENT},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job,
                "uid": uid, "controller": true, "blockOwnerDeletion": true}]
        },
        "spec": {"restartPolicy": "Never", "nodeName": "host-node-1",
            "containers": [{"name": "main", "image": "busybox", "command": ["true"]}]}
    }))?)
}

/// A container status of container `main` in `state`.
fn main_status(ready: bool, state: Value) -> Value {
    json!([{"name": "main", "ready": ready, "restartCount": 0, "image": "busybox",
        "imageID": "docker.io/library/busybox@sha256:0", "state": state,
        "started": ready}])
}

async fn set_status(pods: &Api<Pod>, name: &str, status: Value) -> Result<Pod> {
    let patch = Patch::Merge(json!({"status": status}));
    Ok(pods
        .patch_status(name, &PatchParams::default(), &patch)
        .await?)
}

/// The `kubectl get pods` row of `name`: READY, STATUS, RESTARTS.
fn row(table: &Table, name: &str) -> Result<(String, String, String)> {
    let cell = |c: &str| table.cell("NAME", name, c).map(str::to_owned);
    Ok((cell("READY")?, cell("STATUS")?, cell("RESTARTS")?))
}

#[tokio::test]
async fn pods_are_reflections_the_syncer_writes_and_kubectl_reads() -> Result<()> {
    let server = KplaneServer::start()?;
    server.create_workspace(TARGET)?;
    let acme = server.kubectl_for(TARGET)?;
    acme.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: sync.kplane.io/v1alpha1\nkind: SyncTarget\nmetadata:\n  name: east\n",
    )?;
    acme.ok(&[
        "-n",
        "kube-system",
        "create",
        "serviceaccount",
        "kplane-syncer-east",
    ])?;
    acme.ok_stdin(&["apply", "-f", "-"], GRANT)?;
    let token = crate::syncer::syncer_sa_token(&acme, "10m")?;

    // An admin's pods: refused, whichever way they come.
    let run = acme.run(&["run", "x", "--image=busybox"])?;
    ensure!(!run.success(), "kubectl run succeeded: {}", run.stdout);
    ensure!(
        run.stderr.contains(&format!(
            "Error from server (Forbidden): pods \"x\" {REFUSAL}"
        )),
        "{}",
        run.stderr
    );
    let manifest = "apiVersion: v1\nkind: Pod\nmetadata:\n  name: manual\nspec:\n  containers:\n  - name: c\n    image: busybox\n";
    let created = acme.run_stdin(&["create", "-f", "-"], manifest)?;
    ensure!(
        !created.success(),
        "create -f succeeded: {}",
        created.stdout
    );
    ensure!(
        created
            .stderr
            .contains(&format!("pods \"manual\" {REFUSAL}")),
        "{}",
        created.stderr
    );

    // A Job, assigned to east by SyncAssignment.
    acme.ok(&["create", "job", "j", "--image=busybox"])?;
    let admin = server.client_for(TARGET).await?;
    let jobs: Api<Job> = Api::namespaced(admin.clone(), "default");
    let job = jobs.get("j").await?;
    ensure!(
        job.annotations()
            .get("sync.kplane.io/target")
            .map(String::as_str)
            == Some(ASSIGNMENT),
        "not assigned: {:?}",
        job.annotations()
    );
    let uid = job.uid().context("job uid")?;

    // The syncer reflects three host pods of it through the endpoint.
    let syncer = server
        .client_with_token(&format!("{ENDPOINT}/clusters/{TARGET}"), &token)
        .await?;
    let synced: Api<Pod> = Api::namespaced(syncer.clone(), "default");
    for name in ["j-aaaaa", "j-bbbbb", "j-ccccc"] {
        let pod = synced
            .create(&PostParams::default(), &reflection(name, "j", &uid)?)
            .await?;
        ensure!(
            pod.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Pending"),
            "{pod:?}"
        );
    }
    // Not owned by an assigned Job (another uid, no owner): refused through the endpoint.
    for pod in [reflection("stray", "j", "not-the-uid")?, {
        let mut p = reflection("orphan", "j", &uid)?;
        p.metadata.owner_references = None;
        p
    }] {
        let e = synced
            .create(&PostParams::default(), &pod)
            .await
            .expect_err("a pod without an assigned owner");
        ensure!(error_code(&e) == Some(403), "{e}");
    }
    let table = Table::parse(&acme.ok(&["get", "pods"])?)?;
    ensure!(
        table.headers == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"],
        "{:?}",
        table.headers
    );
    ensure!(
        row(&table, "j-aaaaa")? == ("0/1".into(), "Pending".into(), "0".into()),
        "{table:?}"
    );

    // Status written back: kubectl's STATUS follows it, and a watch sees the change.
    let mut watch = acme.spawn_watch(&["get", "pods", "-w"])?;
    watch.wait_for_line(TIMEOUT, "j-aaaaa Pending", |l| {
        l.starts_with("j-aaaaa") && l.contains("Pending")
    })?;
    set_status(
        &synced,
        "j-aaaaa",
        json!({"phase": "Pending", "containerStatuses":
            main_status(false, json!({"waiting": {"reason": "ContainerCreating"}}))}),
    )
    .await?;
    watch.wait_for_line(TIMEOUT, "j-aaaaa ContainerCreating", |l| {
        l.starts_with("j-aaaaa") && l.contains("ContainerCreating")
    })?;
    set_status(
        &synced,
        "j-aaaaa",
        json!({"phase": "Running", "podIP": "10.1.2.3", "startTime": "2024-01-01T00:00:00Z",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": main_status(true, json!({"running": {"startedAt": "2024-01-01T00:00:01Z"}}))}),
    )
    .await?;
    watch.wait_for_line(TIMEOUT, "j-aaaaa 1/1 Running", |l| {
        l.starts_with("j-aaaaa") && l.contains("1/1") && l.contains("Running")
    })?;
    set_status(
        &synced,
        "j-bbbbb",
        json!({"phase": "Failed", "containerStatuses": main_status(false,
            json!({"terminated": {"exitCode": 1, "reason": "Error"}}))}),
    )
    .await?;
    set_status(
        &synced,
        "j-ccccc",
        json!({"phase": "Succeeded", "containerStatuses": main_status(false,
            json!({"terminated": {"exitCode": 0, "reason": "Completed"}}))}),
    )
    .await?;
    let table = Table::parse(&acme.ok(&["get", "pods", "-l", "job-name=j"])?)?;
    for (name, want) in [
        ("j-aaaaa", ("1/1", "Running")),
        ("j-bbbbb", ("0/1", "Error")),
        ("j-ccccc", ("0/1", "Completed")),
    ] {
        let (ready, status, restarts) = row(&table, name)?;
        ensure!(
            (ready.as_str(), status.as_str(), restarts.as_str()) == (want.0, want.1, "0"),
            "{name}: {table:?}"
        );
    }
    let none = acme.run(&["get", "pods", "-l", "job-name=other"])?;
    ensure!(
        none.stderr
            .contains("No resources found in default namespace."),
        "{none:?}"
    );
    let wide = Table::parse(&acme.ok(&["get", "pods", "-o", "wide"])?)?;
    ensure!(
        wide.headers
            == [
                "NAME",
                "READY",
                "STATUS",
                "RESTARTS",
                "AGE",
                "IP",
                "NODE",
                "NOMINATED NODE",
                "READINESS GATES"
            ],
        "{:?}",
        wide.headers
    );
    ensure!(wide.cell("NAME", "j-aaaaa", "IP")? == "10.1.2.3");
    ensure!(wide.cell("NAME", "j-aaaaa", "NODE")? == "host-node-1");
    let described = acme.ok(&["describe", "pod", "j-aaaaa"])?;
    for want in [
        "Name:",
        "j-aaaaa",
        "Node:",
        "host-node-1",
        "Status:",
        "Running",
        "IP:",
        "10.1.2.3",
        "Controlled By:",
        "Job/j",
        "QoS Class:",
        "BestEffort",
    ] {
        ensure!(described.contains(want), "{want:?} missing:\n{described}");
    }

    // Field selectors as upstream's (kube-rs as the admin).
    let pods: Api<Pod> = Api::namespaced(admin.clone(), "default");
    let names = |list: kube::core::ObjectList<Pod>| {
        let mut n: Vec<String> = list.items.iter().map(|p| p.name_any()).collect();
        n.sort();
        n
    };
    let running = pods
        .list(&ListParams::default().fields("status.phase=Running"))
        .await?;
    ensure!(names(running) == ["j-aaaaa"]);
    let on_node = pods
        .list(&ListParams::default().fields("spec.nodeName=host-node-1,status.phase!=Running"))
        .await?;
    ensure!(names(on_node) == ["j-bbbbb", "j-ccccc"]);
    let e = pods
        .list(&ListParams::default().fields("spec.containers=x"))
        .await
        .expect_err("an unknown field label");
    ensure!(error_code(&e) == Some(400), "{e}");

    // The admin may not change a pod, but may delete one.
    let e = pods
        .patch(
            "j-aaaaa",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"x": "y"}}})),
        )
        .await
        .expect_err("an admin's patch");
    ensure!(error_code(&e) == Some(403), "{e}");
    acme.ok(&["delete", "pod", "j-bbbbb"])?;
    ensure!(error_code(&pods.get("j-bbbbb").await.expect_err("deleted")) == Some(404));

    // Deleting the Job deletes its pods, once the syncer released the Job.
    acme.ok(&["delete", "job", "j", "--wait=false"])?;
    let synced_jobs: Api<Job> = Api::namespaced(syncer, "default");
    synced_jobs
        .patch(
            "j",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"finalizers": null}})),
        )
        .await?;
    eventually(TIMEOUT, "the Job's pods to be deleted", || async {
        Ok(pods.list(&ListParams::default()).await?.items.is_empty())
    })
    .await?;
    drop(watch);
    Ok(())
}
