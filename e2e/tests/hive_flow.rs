//! hive's split control plane, end to end with a stand-in host: hive's 21 CRDs in a
//! kplane workspace; a test client making the calls hive-controllers makes (informers on
//! Jobs, Pods and NetworkPolicies; the provision NetworkPolicy, the ClusterProvision and
//! its provision Job created as hive's clusterdeployment controller does; the install pod
//! listed by the Job's selector); the real `kplane syncer` running the Job on the host with
//! its pull secret, ServiceAccount, NetworkPolicy and in-cluster API access; the test
//! acting as the host's Job controller and kubelet; a stand-in for `hiveutil
//! install-manager` that uses only the in-cluster configuration the syncer gave the pod
//! (the files and variables as the pod sees them) to update its ClusterProvision and write
//! the admin kubeconfig and password Secrets, refused outside its Role; and the Job
//! completing in kplane when it completes on the host (the status sequence a real
//! kube-controller-manager writes). docs/hive.md walks through the same with hive itself.

use std::collections::BTreeSet;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use futures::StreamExt as _;
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{Pod, Secret};
use k8s_openapi::api::networking::v1::NetworkPolicy;
use kplane_e2e::fixtures::list_refusal;
use kplane_e2e::{eventually, KplaneServer};
use kube::api::{Api, ApiResource, DynamicObject, GroupVersionKind, ListParams, PostParams};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt as _;
use kube::ResourceExt as _;
use serde_json::{json, Value};

use crate::syncer::{create_target, host_jobs, key, Syncer, TENANT};
use crate::syncer_pods::{host_pod_of, set_host_pod_status, stand_in_host};

const TIMEOUT: Duration = Duration::from_secs(90);
const NS: &str = "default";
const CD: &str = "mycluster";

fn hive(kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(
        &GroupVersionKind::gvk("hive.openshift.io", "v1", kind),
        plural,
    )
}

/// The Role hive gives its install pods (`cluster-installer`, pkg/controller/utils/sa.go).
const INSTALLER_RBAC: &str = "apiVersion: v1
kind: ServiceAccount
metadata:
  name: cluster-installer
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: cluster-installer
rules:
- apiGroups: [\"\"]
  resources: [secrets, configmaps]
  verbs: [create, delete, get, list, update]
- apiGroups: [hive.openshift.io]
  resources: [clusterdeployments, clusterdeployments/finalizers, clusterdeployments/status]
  verbs: [get, update]
- apiGroups: [hive.openshift.io]
  resources: [clusterprovisions, clusterprovisions/finalizers, clusterprovisions/status]
  verbs: [get, list, update, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: cluster-installer
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: Role
  name: cluster-installer
subjects:
- kind: ServiceAccount
  name: cluster-installer
";

/// Records the names a watcher of `api` has seen (hive's informers).
fn informer<K>(api: Api<K>) -> Arc<Mutex<BTreeSet<String>>>
where
    K: kube::Resource + Clone + std::fmt::Debug + serde::de::DeserializeOwned + Send + 'static,
{
    let seen: Arc<Mutex<BTreeSet<String>>> = Arc::default();
    let out = Arc::clone(&seen);
    tokio::spawn(async move {
        let mut stream = watcher::watcher(api, watcher::Config::default())
            .default_backoff()
            .boxed();
        while let Some(ev) = stream.next().await {
            if let Ok(Event::Apply(o) | Event::InitApply(o)) = ev {
                if let Ok(mut s) = out.lock() {
                    s.insert(o.name_any());
                }
            }
        }
    });
    seen
}

fn saw(seen: &Arc<Mutex<BTreeSet<String>>>, name: &str) -> bool {
    seen.lock().map(|s| s.contains(name)).unwrap_or(false)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hive_provisions_through_kplane_with_its_job_on_the_host() -> Result<()> {
    let data = KplaneServer::start()?;
    let host = stand_in_host()?;
    let scratch = tempfile::tempdir()?;
    create_target(&data).await?;
    let tk = data.kubectl_for(TENANT)?;
    let crds = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/fixtures/hive/crds");
    ensure!(
        crds.is_dir(),
        "{} is missing (../shared beside the checkout)",
        crds.display()
    );
    tokio::task::block_in_place(|| -> Result<()> {
        tk.ok(&[
            "apply",
            "--server-side",
            "-f",
            crds.to_str().context("path")?,
        ])?;
        tk.ok(&[
            "wait",
            "--for=condition=established",
            "--timeout=60s",
            "crd",
            "--all",
        ])?;
        tk.ok_stdin(&["apply", "-f", "-"], INSTALLER_RBAC)?;
        // What the user brings: the pull secret, install config and credentials.
        tk.ok(&[
            "create",
            "secret",
            "docker-registry",
            "pull-secret",
            "--docker-server=quay.io",
            "--docker-username=u",
            "--docker-password=p",
        ])?;
        tk.ok(&[
            "create",
            "secret",
            "generic",
            "install-config",
            "--from-literal=install-config.yaml=apiVersion: v1",
        ])?;
        tk.ok(&[
            "create",
            "secret",
            "generic",
            "creds",
            "--from-literal=token=t",
        ])?;
        Ok(())
    })?;
    let tenant = data.client_for(TENANT).await?;
    let pp = PostParams::default();
    let imagesets: Api<DynamicObject> =
        Api::all_with(tenant.clone(), &hive("ClusterImageSet", "clusterimagesets"));
    imagesets
        .create(
            &pp,
            &serde_json::from_value(json!({
                "apiVersion": "hive.openshift.io/v1", "kind": "ClusterImageSet",
                "metadata": {"name": "openshift-v4.17.0"},
                "spec": {"releaseImage": "quay.io/openshift-release-dev/ocp-release:4.17.0-x86_64"},
            }))?,
        )
        .await?;
    let cds: Api<DynamicObject> = Api::namespaced_with(
        tenant.clone(),
        NS,
        &hive("ClusterDeployment", "clusterdeployments"),
    );
    let cd = cds
        .create(&pp, &serde_json::from_value(json!({
            "apiVersion": "hive.openshift.io/v1", "kind": "ClusterDeployment",
            "metadata": {"name": CD},
            "spec": {
                "baseDomain": "example.com", "clusterName": CD,
                "platform": {"none": {}},
                "pullSecretRef": {"name": "pull-secret"},
                "provisioning": {"imageSetRef": {"name": "openshift-v4.17.0"}, "installConfigSecretRef": {"name": "install-config"}},
            },
        }))?)
        .await
        .context("creating the ClusterDeployment")?;

    // hive's informers.
    let jobs: Api<Job> = Api::namespaced(tenant.clone(), NS);
    let pods: Api<Pod> = Api::namespaced(tenant.clone(), NS);
    let netpols: Api<NetworkPolicy> = Api::namespaced(tenant.clone(), NS);
    let seen_jobs = informer(jobs.clone());
    let seen_pods = informer(pods.clone());
    let seen_netpols = informer(netpols.clone());

    // hive's clusterdeployment controller: the provision NetworkPolicy, the
    // ClusterProvision, its Job (controllerutils.EnsureNetworkPolicy, clusterprovisions.go).
    netpols
        .create(&pp, &serde_json::from_value(json!({
            "metadata": {"name": format!("{CD}-provision"), "labels": {"hive.openshift.io/job-type": "provision"}},
            "spec": {
                "podSelector": {"matchLabels": {"hive.openshift.io/job-type": "provision"}},
                "egress": [{}], "policyTypes": ["Egress", "Ingress"],
            },
        }))?)
        .await?;
    let provisions: Api<DynamicObject> = Api::namespaced_with(
        tenant.clone(),
        NS,
        &hive("ClusterProvision", "clusterprovisions"),
    );
    let provision = format!("{CD}-0-abcde");
    let cd_uid = cd.uid().context("cd uid")?;
    provisions
        .create(&pp, &serde_json::from_value(json!({
            "apiVersion": "hive.openshift.io/v1", "kind": "ClusterProvision",
            "metadata": {"name": provision, "labels": {"hive.openshift.io/cluster-deployment-name": CD},
                         "ownerReferences": [{"apiVersion": "hive.openshift.io/v1", "kind": "ClusterDeployment", "name": CD, "uid": cd_uid, "controller": true}]},
            "spec": {"attempt": 0, "stage": "initializing", "clusterDeploymentRef": {"name": CD},
                     "podSpec": {"containers": [{"name": "installer", "image": "quay.io/openshift/installer"}]}},
        }))?)
        .await
        .context("creating the ClusterProvision")?;
    let job_name = format!("{provision}-provision");
    jobs.create(&pp, &serde_json::from_value(json!({
        "metadata": {"name": job_name, "labels": {
            "hive.openshift.io/cluster-deployment-name": CD, "hive.openshift.io/job-type": "provision",
            "hive.openshift.io/cluster-provision": provision}},
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": {"hive.openshift.io/job-type": "provision", "hive.openshift.io/cluster-provision": provision}},
                "spec": {
                    "restartPolicy": "Never",
                    "serviceAccountName": "cluster-installer",
                    "imagePullSecrets": [{"name": "pull-secret"}],
                    "containers": [{"name": "hive", "image": "quay.io/openshift/hive",
                                    "command": ["/usr/bin/hiveutil", "install-manager", "--work-dir", "/output", NS, &provision],
                                    "env": [{"name": "INSTALL_CONFIG", "valueFrom": {"secretKeyRef": {"name": "install-config", "key": "install-config.yaml"}}}],
                                    "envFrom": [{"secretRef": {"name": "creds"}}]}],
                },
            },
        },
    }))?)
    .await?;

    // The syncer runs it on the host with everything it needs.
    let syncer = Syncer::start(&data, &host, scratch.path(), "hive")?;
    let hostc = host.client().await?;
    eventually(TIMEOUT, "the provision Job on the host", || async {
        Ok(host_jobs(&hostc).await?.contains_key(&key(&job_name)))
    })
    .await
    .with_context(|| syncer.log())?;
    let host_job = serde_json::to_value(&host_jobs(&hostc).await?[&key(&job_name)][0])?;
    let host_ns = host_job["metadata"]["namespace"]
        .as_str()
        .context("ns")?
        .to_owned();
    let host_secrets: Api<Secret> = Api::namespaced(hostc.clone(), &host_ns);
    let host_netpols: Api<NetworkPolicy> = Api::namespaced(hostc.clone(), &host_ns);
    let access = format!("{job_name}-kplane-api-access");
    eventually(
        TIMEOUT,
        "the Job's Secrets, ServiceAccount and NetworkPolicy on the host",
        || async {
            let sa: Api<k8s_openapi::api::core::v1::ServiceAccount> =
                Api::namespaced(hostc.clone(), &host_ns);
            Ok(host_secrets.get_opt("pull-secret").await?.is_some()
                && host_secrets.get_opt("install-config").await?.is_some()
                && host_secrets.get_opt("creds").await?.is_some()
                && host_secrets.get_opt(&access).await?.is_some()
                && sa.get_opt("cluster-installer").await?.is_some()
                && host_netpols
                    .get_opt(&format!("{CD}-provision"))
                    .await?
                    .is_some())
        },
    )
    .await
    .with_context(|| syncer.log())?;

    // The host's Job controller and kubelet: the install pod runs.
    let host_pods: Api<Pod> = Api::namespaced(hostc.clone(), &host_ns);
    let pod_name = format!("{job_name}-x7k2p");
    host_pods
        .create(
            &pp,
            &serde_json::from_value(host_pod_of(&host_job, "x7k2p"))?,
        )
        .await?;
    set_host_pod_status(&host_pods, &pod_name, "Running").await?;

    // hive lists the install pod by the Job's selector and reads its status.
    let selector = jobs
        .get(&job_name)
        .await?
        .spec
        .and_then(|s| s.selector)
        .and_then(|s| s.match_labels)
        .context("the Job's selector")?
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    eventually(
        TIMEOUT,
        "the install pod Running, found by the Job's selector",
        || async {
            let list = pods.list(&ListParams::default().labels(&selector)).await?;
            Ok(list.items.len() == 1
                && list.items[0]
                    .status
                    .as_ref()
                    .and_then(|s| s.phase.as_deref())
                    == Some("Running"))
        },
    )
    .await
    .with_context(|| syncer.log())?;

    // install-manager in that pod: only its in-cluster configuration, as the pod sees it.
    let files = host_secrets.get(&access).await?.data.unwrap_or_default();
    let file = |f: &str| -> Result<Vec<u8>> {
        Ok(files
            .get(f)
            .with_context(|| format!("{f} in the Secret"))?
            .0
            .clone())
    };
    let container = &host_job["spec"]["template"]["spec"]["containers"][0];
    let env = |n: &str| -> Option<String> {
        container["env"]
            .as_array()?
            .iter()
            .find(|e| e["name"] == n)?["value"]
            .as_str()
            .map(str::to_owned)
    };
    let server = format!(
        "https://{}:{}",
        env("KUBERNETES_SERVICE_HOST").context("KUBERNETES_SERVICE_HOST")?,
        env("KUBERNETES_SERVICE_PORT").context("KUBERNETES_SERVICE_PORT")?
    );
    let sa_dir = scratch.path().join("serviceaccount");
    std::fs::create_dir_all(&sa_dir)?;
    std::fs::write(sa_dir.join("token"), file("token")?)?;
    for f in ["ca.crt", "namespace"] {
        std::fs::write(sa_dir.join(f), file(f)?)?;
    }
    let pod_client = crate::in_cluster::pod_client(&server, &sa_dir)?;
    let my_provisions: Api<DynamicObject> = Api::default_namespaced_with(
        pod_client.clone(),
        &hive("ClusterProvision", "clusterprovisions"),
    );
    let my_secrets: Api<Secret> = Api::default_namespaced(pod_client.clone());
    for (suffix, key, value) in [
        ("admin-kubeconfig", "kubeconfig", "apiVersion: v1"),
        ("admin-password", "password", "s3cret"),
    ] {
        my_secrets
            .create(
                &pp,
                &serde_json::from_value(json!({
                    "metadata": {"name": format!("{provision}-{suffix}")},
                    "stringData": {key: value},
                }))?,
            )
            .await
            .with_context(|| format!("install-manager writing the {suffix} Secret"))?;
    }
    let mut cp = serde_json::to_value(my_provisions.get(&provision).await?)?;
    cp["spec"]["infraID"] = json!("mycluster-x7k2p");
    cp["spec"]["clusterID"] = json!("3b1f6a3e-5c1d-4d8e-9f5e-2a7b6c8d9e0f");
    cp["spec"]["adminKubeconfigSecretRef"] =
        json!({"name": format!("{provision}-admin-kubeconfig")});
    cp["spec"]["adminPasswordSecretRef"] = json!({"name": format!("{provision}-admin-password")});
    my_provisions
        .replace(&provision, &pp, &serde_json::from_value(cp)?)
        .await
        .context("install-manager updating its ClusterProvision")?;
    // Its Role allows nothing else: not the Jobs, not another namespace.
    let api = Api::<Job>::default_namespaced(pod_client.clone());
    let code = list_refusal(&api).await;
    ensure!(code == Some(403), "{code:?}");
    let api = Api::<Secret>::namespaced(pod_client, "kube-system");
    let code = list_refusal(&api).await;
    ensure!(code == Some(403), "{code:?}");

    // hive sees what install-manager wrote.
    let cp = provisions.get(&provision).await?;
    ensure!(
        cp.data["spec"]["infraID"] == "mycluster-x7k2p",
        "{:?}",
        cp.data
    );
    tokio::task::block_in_place(|| {
        tk.ok(&[
            "get",
            "secret",
            &format!("{provision}-admin-kubeconfig"),
            &format!("{provision}-admin-password"),
        ])
    })?;

    // The install pod finishes; the host's Job controller completes the Job as a real one
    // does (../shared/fixtures/job-status/succeeded.json); kplane's Job completes.
    set_host_pod_status(&host_pods, &pod_name, "Succeeded").await?;
    let recorded: Vec<Value> = serde_json::from_str(&std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../shared/fixtures/job-status/succeeded.json"),
    )?)?;
    let host_job_api: Api<Job> = Api::namespaced(hostc.clone(), &host_ns);
    let host_name = host_job["metadata"]["name"]
        .as_str()
        .context("name")?
        .to_owned();
    for step in &recorded {
        let mut current = serde_json::to_value(host_job_api.get(&host_name).await?)?;
        current["status"] = step.clone();
        host_job_api
            .replace_status(&host_name, &pp, &serde_json::from_value::<Job>(current)?)
            .await?;
    }
    tokio::task::block_in_place(|| {
        tk.ok(&[
            "wait",
            "--for=condition=complete",
            &format!("job/{job_name}"),
            "--timeout=60s",
        ])
    })
    .with_context(|| syncer.log())?;
    eventually(TIMEOUT, "the install pod Succeeded in kplane", || async {
        let p = pods.get(&pod_name).await?;
        Ok(p.status.and_then(|s| s.phase).as_deref() == Some("Succeeded"))
    })
    .await
    .with_context(|| syncer.log())?;

    // hive's informers saw it all.
    ensure!(saw(&seen_jobs, &job_name), "the Job informer");
    ensure!(saw(&seen_pods, &pod_name), "the Pod informer");
    ensure!(
        saw(&seen_netpols, &format!("{CD}-provision")),
        "the NetworkPolicy informer"
    );
    Ok(())
}
