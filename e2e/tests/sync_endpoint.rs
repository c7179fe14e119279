//! The sync endpoint with real clients: a ServiceAccount of the SyncTarget's workspace,
//! granted `sync` on `synctargets/east` by the ClusterRole docs/sync.md documents, uses a
//! token from `kubectl create token` with kube-rs against
//! `/services/sync/root:acme/east/...`: it lists and watches east's Jobs across the
//! workspace and its descendant (resuming from a resourceVersion), writes their status,
//! reads the Secret they reference and nothing else; the same token is 403 on the ordinary
//! API, and a user without the grant is 403 on the endpoint.

use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use futures::{StreamExt as _, TryStreamExt as _};
use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kplane_e2e::fixtures::error_code;
use kplane_e2e::KplaneServer;
use kube::api::{ListParams, Patch, PatchParams, WatchEvent, WatchParams};
use kube::{Api, ResourceExt as _};
use serde_json::json;

const TARGET: &str = "root:acme";
const ENDPOINT: &str = "/services/sync/root:acme/east";

/// The grant docs/sync.md shows ("The sync endpoint"), word for word.
pub(crate) const GRANT: &str = r#"apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata:
  name: kplane-syncer-east
rules:
- apiGroups: [sync.kplane.io]
  resources: [synctargets]
  resourceNames: [east]
  verbs: [sync]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: kplane-syncer-east
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: kplane-syncer-east
subjects:
- kind: ServiceAccount
  name: kplane-syncer-east
  namespace: kube-system
"#;

fn job_manifest(name: &str, extra_pod: &str) -> String {
    format!(
        r#"apiVersion: batch/v1
kind: Job
metadata:
  name: {name}
  annotations:
    sync.kplane.io/target: root:acme/east
spec:
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: c
        image: busybox
{extra_pod}"#
    )
}

#[tokio::test]
async fn a_granted_service_account_syncs_through_the_endpoint_with_kube_rs() -> Result<()> {
    let server = KplaneServer::start()?;
    server.create_workspaces(&[TARGET, "root:acme:team"])?;
    let acme = server.kubectl_for(TARGET)?;
    let team = server.kubectl_for("root:acme:team")?;
    acme.ok_stdin(
        &["apply", "-f", "-"],
        "apiVersion: sync.kplane.io/v1alpha1\nkind: SyncTarget\nmetadata:\n  name: east\nspec:\n  includeDescendants: true\n",
    )?;
    acme.ok(&[
        "-n",
        "kube-system",
        "create",
        "serviceaccount",
        "kplane-syncer-east",
    ])?;
    acme.ok_stdin(&["apply", "-f", "-"], GRANT)?;
    acme.ok(&["create", "secret", "generic", "creds", "--from-literal=k=v"])?;
    acme.ok(&[
        "create",
        "secret",
        "generic",
        "lonely",
        "--from-literal=k=v",
    ])?;
    acme.ok_stdin(
        &["apply", "-f", "-"],
        &job_manifest(
            "a1",
            "      volumes:\n      - name: v\n        secret:\n          secretName: creds\n",
        ),
    )?;
    team.ok_stdin(&["apply", "-f", "-"], &job_manifest("t1", ""))?;
    // A Job of another workspace, not assigned to anything.
    server.create_workspace("root:other")?;
    server
        .kubectl_for("root:other")?
        .ok(&["create", "job", "o1", "--image=busybox"])?;
    let token = crate::syncer::syncer_sa_token(&acme, "10m")?;

    // List: east's Jobs of root:acme and root:acme:team, each naming its cluster.
    let all = server
        .client_with_token(&format!("{ENDPOINT}/clusters/*"), &token)
        .await?;
    let jobs: Api<Job> = Api::all(all.clone());
    let list = jobs.list(&ListParams::default()).await?;
    let mut seen: Vec<(String, String)> = list
        .items
        .iter()
        .map(|j| {
            let cluster = j.annotations().get("kplane.io/cluster").cloned();
            (cluster.unwrap_or_default(), j.name_any())
        })
        .collect();
    seen.sort();
    ensure!(
        seen == [
            ("root:acme".to_string(), "a1".to_string()),
            ("root:acme:team".to_string(), "t1".to_string())
        ],
        "{seen:?}"
    );
    let rv = list.metadata.resource_version.clone().context("list rv")?;

    // Watch resumed from the list: a Job created after it (by plain `kubectl create job`,
    // assigned to east by the SyncAssignment admission) arrives.
    acme.ok(&["create", "job", "a2", "--image=busybox"])?;
    let mut events = jobs
        .watch(&WatchParams::default().timeout(20), &rv)
        .await?
        .boxed();
    let first = tokio::time::timeout(Duration::from_secs(30), events.try_next())
        .await
        .context("no watch event")??;
    match first {
        Some(WatchEvent::Added(j)) => ensure!(
            j.name_any() == "a2"
                && j.annotations()
                    .get("sync.kplane.io/target")
                    .map(String::as_str)
                    == Some("root:acme/east"),
            "{j:?}"
        ),
        other => anyhow::bail!("unexpected first event {other:?}"),
    }

    // One workspace's objects: status of an assigned Job, the Secret it references.
    let one = server
        .client_with_token(&format!("{ENDPOINT}/clusters/{TARGET}"), &token)
        .await?;
    let ns_jobs: Api<Job> = Api::namespaced(one.clone(), "default");
    let patched = ns_jobs
        .patch_status(
            "a1",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"active": 1}})),
        )
        .await?;
    ensure!(
        patched.status.and_then(|s| s.active) == Some(1),
        "status not written"
    );
    let e = ns_jobs
        .patch(
            "a1",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"parallelism": 2}})),
        )
        .await
        .expect_err("a spec change through the endpoint");
    ensure!(error_code(&e) == Some(422), "{e}");
    let secrets: Api<Secret> = Api::namespaced(one.clone(), "default");
    ensure!(secrets.get("creds").await?.name_any() == "creds");
    for e in [
        secrets.get("lonely").await.expect_err("lonely"),
        secrets
            .list(&ListParams::default())
            .await
            .expect_err("list"),
    ] {
        ensure!(error_code(&e) == Some(404), "{e}");
    }
    let cms: Api<ConfigMap> = Api::namespaced(one, "default");
    let e = cms.get("kube-root-ca.crt").await.expect_err("configmap");
    ensure!(error_code(&e) == Some(404), "{e}");

    // The same token on the ordinary API: 403.
    let plain = server
        .client_with_token(&format!("/clusters/{TARGET}"), &token)
        .await?;
    let e = Api::<Job>::namespaced(plain.clone(), "default")
        .list(&ListParams::default())
        .await
        .expect_err("ordinary list");
    ensure!(error_code(&e) == Some(403), "{e}");
    let e = Api::<Secret>::namespaced(plain, "default")
        .get("creds")
        .await
        .expect_err("ordinary get");
    ensure!(error_code(&e) == Some(403), "{e}");

    // Another ServiceAccount of the workspace, without the grant: 403 on the endpoint.
    acme.ok(&["create", "serviceaccount", "other"])?;
    let other = acme
        .ok(&["create", "token", "other", "--duration", "10m"])?
        .trim()
        .to_string();
    let denied = server
        .client_with_token(&format!("{ENDPOINT}/clusters/*"), &other)
        .await?;
    let e = Api::<Job>::all(denied)
        .list(&ListParams::default())
        .await
        .expect_err("no grant");
    ensure!(error_code(&e) == Some(403), "{e}");
    ensure!(
        e.to_string().contains(
            r#"synctargets.sync.kplane.io "east" is forbidden: User "system:serviceaccount:default:other" cannot sync resource "synctargets""#
        ),
        "{e}"
    );
    Ok(())
}
