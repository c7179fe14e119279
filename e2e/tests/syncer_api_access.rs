//! A synced Job's pods reach their own logical cluster through in-cluster configuration:
//! the real `kplane syncer` rewrites the host pod template (the host's token not mounted,
//! a host Secret with a token of the Job's ServiceAccount issued by kplane, kplane's CA and
//! the tenant namespace mounted where a pod looks for them, `KUBERNETES_SERVICE_HOST`/`_PORT`
//! naming kplane). The test plays the kubelet: it lays the Secret's files and the
//! variables out exactly as a pod would see them and runs the Python client's in-cluster
//! loader and kube-rs over them; RBAC in the tenant decides. `automountServiceAccountToken:
//! false` (on the pod spec or the ServiceAccount) gets no token.

use std::ffi::OsString;
use std::fs;
use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kplane_e2e::fixtures::list_refusal;
use kplane_e2e::{eventually, KplaneServer};
use kube::api::{Api, ListParams, PostParams};
use kube::ResourceExt as _;
use serde_json::{json, Value};

use crate::in_cluster::{pod_client, ROLE};
use crate::python::run_script;
use crate::syncer::{create_target, host_jobs, key, plain_job, Syncer, TENANT};

const TIMEOUT: Duration = Duration::from_secs(60);
const MOUNT_PATH: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// The value of env var `name` in the first container of a host Job's pod template.
fn env_of(job: &Value, name: &str) -> Option<String> {
    job.pointer("/spec/template/spec/containers/0/env")?
        .as_array()?
        .iter()
        .find(|e| e["name"] == name)
        .and_then(|e| e["value"].as_str())
        .map(str::to_owned)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn synced_pods_reach_their_own_logical_cluster_in_cluster() -> Result<()> {
    let data = KplaneServer::start()?;
    let host = KplaneServer::start()?;
    let scratch = tempfile::tempdir()?;
    create_target(&data).await?;
    let tk = data.kubectl_for(TENANT)?;
    tokio::task::block_in_place(|| -> Result<()> {
        data.kubectl_ok(&["create", "configmap", "in-root", "--from-literal=a=b"])?;
        tk.ok(&["create", "serviceaccount", "runner"])?;
        tk.ok(&["create", "serviceaccount", "quiet"])?;
        tk.ok(&[
            "patch",
            "serviceaccount",
            "quiet",
            "-p",
            r#"{"automountServiceAccountToken": false}"#,
        ])?;
        tk.ok_stdin(&["apply", "-f", "-"], ROLE)?;
        tk.ok(&["create", "configmap", "in-home", "--from-literal=a=b"])?;
        Ok(())
    })?;
    let jobs: Api<Job> = Api::namespaced(data.client_for(TENANT).await?, "default");
    let with_sa = |name: &str, sa: &str, automount: Option<bool>| -> Result<Job> {
        let mut m = plain_job(name);
        m["spec"]["template"]["spec"]["serviceAccountName"] = json!(sa);
        if let Some(a) = automount {
            m["spec"]["template"]["spec"]["automountServiceAccountToken"] = json!(a);
        }
        Ok(serde_json::from_value(m)?)
    };
    let pp = PostParams::default();
    jobs.create(&pp, &with_sa("installer", "runner", None)?)
        .await?;
    jobs.create(&pp, &with_sa("no-token", "runner", Some(false))?)
        .await?;
    jobs.create(&pp, &with_sa("quiet-sa", "quiet", None)?)
        .await?;
    jobs.create(&pp, &with_sa("quiet-but-asked", "quiet", Some(true))?)
        .await?;

    let syncer = Syncer::start(&data, &host, scratch.path(), "access")?;
    let hostc = host.client().await?;
    let names = ["installer", "no-token", "quiet-sa", "quiet-but-asked"];
    eventually(TIMEOUT, "every Job on the host", || async {
        let h = host_jobs(&hostc).await?;
        Ok(names.iter().all(|n| h.contains_key(&key(n))))
    })
    .await
    .with_context(|| syncer.log())?;
    let h = host_jobs(&hostc).await?;
    let host_job = |n: &str| -> Result<Value> { Ok(serde_json::to_value(&h[&key(n)][0])?) };

    // No token: the host's own is not mounted either, and nothing of kplane's is.
    for n in ["no-token", "quiet-sa"] {
        let j = host_job(n)?;
        let spec = &j["spec"]["template"]["spec"];
        ensure!(spec["automountServiceAccountToken"] == false, "{n}: {spec}");
        ensure!(spec.get("volumes").is_none(), "{n}: {spec}");
        ensure!(
            env_of(&j, "KUBERNETES_SERVICE_HOST").is_none(),
            "{n}: {spec}"
        );
    }

    // The installer's pods lead to kplane.
    let j = host_job("installer")?;
    let host_ns = j["metadata"]["namespace"]
        .as_str()
        .context("namespace")?
        .to_owned();
    let spec = &j["spec"]["template"]["spec"];
    ensure!(spec["automountServiceAccountToken"] == false, "{spec}");
    let secret_name = format!(
        "{}-kplane-api-access",
        j["metadata"]["name"].as_str().unwrap_or_default()
    );
    ensure!(
        spec["volumes"]
            .as_array()
            .is_some_and(|v| v.iter().any(|v| v["name"] == "kplane-api-access"
                && v["secret"]["secretName"] == secret_name.as_str())),
        "{spec}"
    );
    ensure!(
        spec["containers"][0]["volumeMounts"]
            .as_array()
            .is_some_and(|m| m.contains(
                &json!({"name": "kplane-api-access", "mountPath": MOUNT_PATH, "readOnly": true})
            )),
        "{spec}"
    );
    let (want_host, want_port) = data
        .base_url()
        .trim_start_matches("https://")
        .rsplit_once(':')
        .context("the server's host and port")?;
    let env_host = env_of(&j, "KUBERNETES_SERVICE_HOST").context("KUBERNETES_SERVICE_HOST")?;
    let env_port = env_of(&j, "KUBERNETES_SERVICE_PORT").context("KUBERNETES_SERVICE_PORT")?;
    ensure!(
        env_host == want_host && env_port == want_port,
        "{env_host}:{env_port}"
    );
    let quiet_asked = host_job("quiet-but-asked")?;
    ensure!(
        env_of(&quiet_asked, "KUBERNETES_SERVICE_HOST").is_some(),
        "the pod spec's automountServiceAccountToken: true wins over the ServiceAccount's false"
    );

    // The Secret, as the kubelet would mount it.
    let secrets: Api<Secret> = Api::namespaced(hostc.clone(), &host_ns);
    eventually(TIMEOUT, "the in-cluster API Secret on the host", || async {
        Ok(secrets.get_opt(&secret_name).await?.is_some())
    })
    .await
    .with_context(|| syncer.log())?;
    let secret = secrets.get(&secret_name).await?;
    ensure!(
        secret
            .owner_references()
            .iter()
            .any(|o| o.kind == "Job"
                && Some(&o.uid) == h[&key("installer")][0].metadata.uid.as_ref()),
        "{:?}",
        secret.metadata
    );
    ensure!(
        secret
            .annotations()
            .contains_key("sync.kplane.io/token-expires"),
        "{:?}",
        secret.metadata
    );
    let files = secret.data.clone().unwrap_or_default();
    let sa_dir = scratch.path().join("serviceaccount");
    fs::create_dir_all(&sa_dir)?;
    for f in ["token", "ca.crt", "namespace"] {
        let bytes = files.get(f).with_context(|| format!("{f} in the Secret"))?;
        fs::write(sa_dir.join(f), &bytes.0)?;
    }
    ensure!(fs::read_to_string(sa_dir.join("namespace"))? == "default");
    ensure!(fs::read_to_string(sa_dir.join("ca.crt"))? == data.ca_pem()?);

    // The Python client's in-cluster loader over those files: its own tenant's ConfigMaps
    // read and written, Secrets refused.
    let env: Vec<(&str, OsString)> = vec![
        ("KUBERNETES_SERVICE_HOST", env_host.clone().into()),
        ("KUBERNETES_SERVICE_PORT", env_port.clone().into()),
        ("KPLANE_SA_DIR", sa_dir.clone().into()),
        ("KPLANE_HOME", TENANT.into()),
    ];
    tokio::task::block_in_place(|| run_script("incluster.py", &env))?;

    // kube-rs over the same files.
    let pod = pod_client(&format!("https://{env_host}:{env_port}"), &sa_dir)?;
    let cms: Api<ConfigMap> = Api::default_namespaced(pod.clone());
    cms.create(
        &pp,
        &serde_json::from_value(json!({"metadata": {"name": "from-installer"}}))?,
    )
    .await?;
    let api = Api::<Secret>::default_namespaced(pod);
    let code = list_refusal(&api).await;
    ensure!(code == Some(403), "{code:?}");
    tokio::task::block_in_place(|| -> Result<()> {
        tk.ok(&["get", "configmap", "from-installer", "from-python"])?;
        let out = data.kubectl(&["get", "configmap", "from-installer"])?;
        ensure!(!out.success() && out.stderr.contains("NotFound"), "{out:?}");
        Ok(())
    })?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lost_token_secret_is_issued_again_in_a_shared_host_namespace() -> Result<()> {
    let data = KplaneServer::start()?;
    let host = KplaneServer::start()?;
    let scratch = tempfile::tempdir()?;
    create_target(&data).await?;
    tokio::task::block_in_place(|| -> Result<()> {
        host.kubectl_ok(&["create", "namespace", "synced"])?;
        data.kubectl_for(TENANT)?
            .ok(&["create", "serviceaccount", "runner"])?;
        Ok(())
    })?;
    let jobs: Api<Job> = Api::namespaced(data.client_for(TENANT).await?, "default");
    let mut m = plain_job("installer");
    m["spec"]["template"]["spec"]["serviceAccountName"] = json!("runner");
    jobs.create(&PostParams::default(), &serde_json::from_value(m)?)
        .await?;
    let syncer = Syncer::start_with(
        &data,
        &host,
        scratch.path(),
        "shared-access",
        &["--host-namespace", "synced"],
    )?;
    let hostc = host.client().await?;
    eventually(TIMEOUT, "the host Job", || async {
        Ok(host_jobs(&hostc).await?.contains_key(&key("installer")))
    })
    .await
    .with_context(|| syncer.log())?;
    let j = serde_json::to_value(&host_jobs(&hostc).await?[&key("installer")][0])?;
    // The host pod runs as the renamed copy of the ServiceAccount...
    let host_sa = j["spec"]["template"]["spec"]["serviceAccountName"]
        .as_str()
        .unwrap_or_default()
        .to_owned();
    ensure!(
        host_sa.starts_with("runner-") && host_sa != "runner",
        "{host_sa}"
    );
    let secret = format!(
        "{}-kplane-api-access",
        j["metadata"]["name"].as_str().unwrap_or_default()
    );
    let secrets: Api<Secret> = Api::namespaced(hostc.clone(), "synced");
    eventually(TIMEOUT, "the in-cluster API Secret", || async {
        Ok(secrets.get_opt(&secret).await?.is_some())
    })
    .await
    .with_context(|| syncer.log())?;
    // ...but its token is kplane's, of the tenant's `runner`: lost, it is issued again at
    // the next check (a renewal takes the same path).
    secrets.delete(&secret, &Default::default()).await?;
    eventually(TIMEOUT, "the Secret issued again", || async {
        Ok(secrets.get_opt(&secret).await?.is_some())
    })
    .await
    .with_context(|| syncer.log())?;
    let token = secrets.get(&secret).await?.data.unwrap_or_default();
    let token = String::from_utf8(token.get("token").context("token")?.0.clone())?;
    // It authenticates as the tenant's `runner` (a stranger to its Secrets: no Role).
    let as_runner = data
        .client_with_token(&format!("/clusters/{TENANT}"), &token)
        .await?;
    let denied = Api::<Secret>::namespaced(as_runner, "default")
        .list(&ListParams::default())
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    ensure!(
        denied.contains("system:serviceaccount:default:runner"),
        "{denied}"
    );
    Ok(())
}
