//! NetworkPolicies travel with the Jobs they govern: the real `kplane syncer` carries the
//! NetworkPolicies of a namespace whose Jobs it syncs into the host namespace of those
//! Jobs (hive creates one before each provision Job: egress allowed, no ingress), keeps
//! them up to date, removes one deleted in kplane, and removes them all with the last
//! synced Job of the namespace. Peers naming tenant namespaces are dropped (never
//! widened). With one shared host namespace, the policies select only their own source
//! namespace's pods.

use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kplane_e2e::{eventually, KplaneServer};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::ResourceExt as _;
use serde_json::{json, Value};

use crate::syncer::{create_target, host_jobs, key, plain_job, Syncer, TENANT};

const TIMEOUT: Duration = Duration::from_secs(60);

/// What hive's EnsureNetworkPolicy creates before a provision Job.
fn hive_policy() -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "cd-provision", "labels": {"hive.openshift.io/job-type": "provision"}},
        "spec": {
            "podSelector": {"matchLabels": {"hive.openshift.io/job-type": "provision"}},
            "egress": [{}],
            "policyTypes": ["Egress", "Ingress"],
        },
    })
}

/// A policy with a peer naming tenant namespaces and one naming pods.
fn mixed_policy() -> Value {
    json!({
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {"name": "web"},
        "spec": {
            "podSelector": {},
            "ingress": [
                {"from": [{"namespaceSelector": {"matchLabels": {"team": "a"}}}]},
                {"from": [{"podSelector": {"matchLabels": {"app": "web"}}}], "ports": [{"port": 8080}]},
            ],
        },
    })
}

/// The host's NetworkPolicies made by the syncer, by name.
async fn host_policies(host: &kube::Client) -> Result<Vec<NetworkPolicy>> {
    let api: Api<NetworkPolicy> = Api::all(host.clone());
    Ok(api
        .list(&ListParams::default().labels("sync.kplane.io/target=east"))
        .await?
        .items)
}

fn find<'a>(list: &'a [NetworkPolicy], source_name: &str) -> Option<&'a NetworkPolicy> {
    list.iter()
        .find(|p| p.annotations().get("kplane.io/name").map(String::as_str) == Some(source_name))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_policies_travel_with_the_jobs_they_govern() -> Result<()> {
    let data = KplaneServer::start()?;
    let host = KplaneServer::start()?;
    let scratch = tempfile::tempdir()?;
    create_target(&data).await?;
    let tenant = data.client_for(TENANT).await?;
    let policies: Api<NetworkPolicy> = Api::namespaced(tenant.clone(), "default");
    let jobs: Api<Job> = Api::namespaced(tenant, "default");
    let pp = PostParams::default();
    policies
        .create(&pp, &serde_json::from_value(hive_policy())?)
        .await?;
    policies
        .create(&pp, &serde_json::from_value(mixed_policy())?)
        .await?;
    let mut job = plain_job("provision");
    job["spec"]["template"]["metadata"] =
        json!({"labels": {"hive.openshift.io/job-type": "provision"}});
    jobs.create(&pp, &serde_json::from_value(job)?).await?;

    let syncer = Syncer::start(&data, &host, scratch.path(), "policies")?;
    let hostc = host.client().await?;
    eventually(TIMEOUT, "the Job and both policies on the host", || async {
        // Policies read first: when the Job is there, they were there before it.
        let h = host_policies(&hostc).await?;
        let carried = find(&h, "cd-provision").is_some() && find(&h, "web").is_some();
        let job_there = host_jobs(&hostc).await?.contains_key(&key("provision"));
        ensure!(
            !job_there || carried,
            "the host Job came before its namespace's policies"
        );
        Ok(job_there)
    })
    .await
    .with_context(|| syncer.log())?;
    let job_ns = host_jobs(&hostc).await?[&key("provision")][0]
        .namespace()
        .unwrap_or_default();
    let h = host_policies(&hostc).await?;
    let hive = serde_json::to_value(find(&h, "cd-provision").context("cd-provision")?)?;
    ensure!(hive["metadata"]["namespace"] == job_ns.as_str(), "{hive}");
    ensure!(hive["metadata"]["name"] == "cd-provision", "{hive}");
    ensure!(
        hive["spec"]
            == json!({
                "podSelector": {"matchLabels": {"hive.openshift.io/job-type": "provision"}},
                "egress": [{}],
                "policyTypes": ["Egress", "Ingress"],
            }),
        "{hive}"
    );
    // The peer naming tenant namespaces is gone with its rule; the pod peer stays.
    let web = serde_json::to_value(find(&h, "web").context("web")?)?;
    ensure!(
        web["spec"]["ingress"]
            == json!([{"from": [{"podSelector": {"matchLabels": {"app": "web"}}}],
                       "ports": [{"port": 8080, "protocol": "TCP"}]}]),
        "{web}"
    );

    // A change in kplane reaches the host (at the latest at the next resync).
    policies
        .patch(
            "cd-provision",
            &PatchParams::default(),
            &Patch::Merge(
                &json!({"spec": {"ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/8"}}]}]}}),
            ),
        )
        .await?;
    eventually(TIMEOUT, "the changed policy on the host", || async {
        let h = host_policies(&hostc).await?;
        let p = find(&h, "cd-provision")
            .map(serde_json::to_value)
            .transpose()?;
        Ok(
            p.is_some_and(|p| {
                p["spec"]["ingress"][0]["from"][0]["ipBlock"]["cidr"] == "10.0.0.0/8"
            }),
        )
    })
    .await
    .with_context(|| syncer.log())?;
    // One deleted in kplane goes from the host.
    policies.delete("web", &DeleteParams::default()).await?;
    eventually(TIMEOUT, "the deleted policy gone from the host", || async {
        Ok(find(&host_policies(&hostc).await?, "web").is_none())
    })
    .await
    .with_context(|| syncer.log())?;
    // While another synced Job of the namespace remains, the policies stay.
    jobs.create(&pp, &serde_json::from_value(plain_job("second"))?)
        .await?;
    eventually(TIMEOUT, "the second Job on the host", || async {
        Ok(host_jobs(&hostc).await?.contains_key(&key("second")))
    })
    .await
    .with_context(|| syncer.log())?;
    jobs.delete("provision", &DeleteParams::background())
        .await?;
    eventually(TIMEOUT, "the first host Job gone", || async {
        Ok(!host_jobs(&hostc).await?.contains_key(&key("provision")))
    })
    .await
    .with_context(|| syncer.log())?;
    // Past a resync (3 s) and the sweep, the policy is still there for the second Job.
    tokio::time::sleep(Duration::from_secs(4)).await;
    ensure!(
        find(&host_policies(&hostc).await?, "cd-provision").is_some(),
        "the policy went while a Job of its namespace remains\n{}",
        syncer.log()
    );
    // The last synced Job of the namespace goes: its policies go too.
    jobs.delete("second", &DeleteParams::background()).await?;
    eventually(
        TIMEOUT,
        "the host policies gone with the last Job",
        || async {
            Ok(host_policies(&hostc).await?.is_empty()
                && !host_jobs(&hostc).await?.contains_key(&key("second")))
        },
    )
    .await
    .with_context(|| syncer.log())?;
    ensure!(
        policies.get_opt("cd-provision").await?.is_some(),
        "kplane's own policy stays"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_shared_host_namespace_policies_select_their_own_pods_only() -> Result<()> {
    let data = KplaneServer::start()?;
    let host = KplaneServer::start()?;
    let scratch = tempfile::tempdir()?;
    create_target(&data).await?;
    tokio::task::block_in_place(|| host.kubectl_ok(&["create", "namespace", "synced"]))?;
    let tenant = data.client_for(TENANT).await?;
    let policies: Api<NetworkPolicy> = Api::namespaced(tenant.clone(), "default");
    let jobs: Api<Job> = Api::namespaced(tenant, "default");
    let pp = PostParams::default();
    policies
        .create(&pp, &serde_json::from_value(hive_policy())?)
        .await?;
    jobs.create(&pp, &serde_json::from_value(plain_job("provision"))?)
        .await?;
    let syncer = Syncer::start_with(
        &data,
        &host,
        scratch.path(),
        "shared-policies",
        &["--host-namespace", "synced"],
    )?;
    let hostc = host.client().await?;
    eventually(TIMEOUT, "the Job and the policy on the host", || async {
        let h = host_policies(&hostc).await?;
        Ok(host_jobs(&hostc).await?.contains_key(&key("provision"))
            && find(&h, "cd-provision").is_some())
    })
    .await
    .with_context(|| syncer.log())?;
    let h = host_policies(&hostc).await?;
    let p = serde_json::to_value(find(&h, "cd-provision").context("policy")?)?;
    ensure!(p["metadata"]["namespace"] == "synced", "{p}");
    ensure!(
        p["metadata"]["name"] != "cd-provision",
        "renamed in the shared namespace: {p}"
    );
    let source = p["spec"]["podSelector"]["matchLabels"]["sync.kplane.io/source"].clone();
    ensure!(source.as_str().is_some_and(|s| s.len() == 10), "{p}");
    let job = serde_json::to_value(&host_jobs(&hostc).await?[&key("provision")][0])?;
    ensure!(
        job["spec"]["template"]["metadata"]["labels"]["sync.kplane.io/source"] == source,
        "{job}"
    );
    Ok(())
}
