//! Kubernetes ResourceQuota inside a namespace (issue 31), driven by kubectl and kube-rs
//! as upstream's ResourceQuota e2e specs drive kube-apiserver: the controller reports
//! `status.hard` and `status.used` promptly, object counts (`configmaps` and
//! `count/<resource>`) are admitted up to the limit and refused past it with upstream's
//! 403, a delete releases its usage, and a status written by hand is put back.

use std::time::{Duration, Instant};

use anyhow::{bail, ensure, Context as _, Result};
use k8s_openapi::api::core::v1::{ConfigMap, ResourceQuota};
use kplane_e2e::fixtures::error_code;
use kplane_e2e::KplaneServer;
use kube::api::{Api, DeleteParams, Patch, PatchParams, PostParams};

fn cm(name: &str) -> ConfigMap {
    serde_json::from_value(serde_json::json!({"metadata": {"name": name}})).unwrap_or_default()
}

/// Waits until quota `name`'s `status.used` has `want` for every pair.
async fn wait_used(api: &Api<ResourceQuota>, name: &str, want: &[(&str, &str)]) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let q = api.get(name).await?;
        let used = q
            .status
            .as_ref()
            .and_then(|s| s.used.clone())
            .unwrap_or_default();
        if want
            .iter()
            .all(|(k, v)| used.get(*k).is_some_and(|q| q.0 == *v))
        {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("quota {name} never showed {want:?}: {:?}", q.status);
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test]
async fn resource_quota_counts_objects_and_refuses_past_the_limit() -> Result<()> {
    let server = KplaneServer::start()?;
    server.kubectl_ok(&["create", "namespace", "rq"])?;
    let client = server.client().await?;
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "rq");
    let quotas: Api<ResourceQuota> = Api::namespaced(client, "rq");
    let base = cms.list(&Default::default()).await?.items.len();
    let limit = base + 2;
    server.kubectl_ok(&[
        "create",
        "quota",
        "test-quota",
        "-n",
        "rq",
        &format!("--hard=configmaps={limit},count/secrets=5,resourcequotas=1,services=3,cpu=1"),
    ])?;
    // Promptly calculated, as the conformance spec requires.
    wait_used(
        &quotas,
        "test-quota",
        &[
            ("configmaps", &base.to_string()),
            ("resourcequotas", "1"),
            ("count/secrets", "0"),
            ("services", "0"),
            ("cpu", "0"),
        ],
    )
    .await?;
    let q = quotas.get("test-quota").await?;
    let status = q.status.context("no status")?;
    ensure!(
        status.hard == q.spec.and_then(|s| s.hard),
        "status.hard is not spec.hard"
    );

    for i in 0..2 {
        cms.create(&PostParams::default(), &cm(&format!("c{i}")))
            .await?;
    }
    let err = cms
        .create(&PostParams::default(), &cm("over"))
        .await
        .err()
        .context("a ConfigMap past the quota was admitted")?;
    ensure!(error_code(&err) == Some(403), "{err}");
    let kube::Error::Api(s) = &err else {
        bail!("not a Status: {err}");
    };
    ensure!(
        s.message
            == format!("configmaps \"over\" is forbidden: exceeded quota: test-quota, requested: configmaps=1, used: configmaps={limit}, limited: configmaps={limit}"),
        "{}",
        s.message
    );
    ensure!(s.reason == "Forbidden", "{}", s.reason);
    ensure!(
        cms.get("over").await.is_err(),
        "the refused ConfigMap exists"
    );
    // kubectl shows the same refusal.
    let out = server.kubectl(&["create", "configmap", "over2", "-n", "rq"])?;
    ensure!(
        !out.success() && out.stderr.contains("exceeded quota: test-quota"),
        "{}",
        out.stderr
    );

    // A delete releases its usage; the next create succeeds.
    cms.delete("c0", &DeleteParams::default()).await?;
    wait_used(
        &quotas,
        "test-quota",
        &[("configmaps", &(limit - 1).to_string())],
    )
    .await?;
    cms.create(&PostParams::default(), &cm("again")).await?;
    wait_used(&quotas, "test-quota", &[("configmaps", &limit.to_string())]).await?;

    // A second quota is refused by the first's resourcequotas limit.
    let out = server.kubectl(&["create", "quota", "second", "-n", "rq", "--hard=pods=1"])?;
    ensure!(
        !out.success()
            && out
                .stderr
                .contains("exceeded quota: test-quota, requested: resourcequotas=1"),
        "{}",
        out.stderr
    );

    // A status written by hand is put back to the spec by the controller.
    quotas
        .patch_status(
            "test-quota",
            &PatchParams::default(),
            &Patch::Merge(serde_json::json!({"status": {"hard": {"cpu": "7"}}})),
        )
        .await?;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let q = quotas.get("test-quota").await?;
        let hard = q.status.and_then(|s| s.hard).unwrap_or_default();
        if hard.get("cpu").is_some_and(|c| c.0 == "1") {
            break;
        }
        ensure!(
            Instant::now() < deadline,
            "the status was never put back: {hard:?}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    // kubectl reads it as it reads kube-apiserver's.
    let described = server.kubectl_ok(&["describe", "quota", "test-quota", "-n", "rq"])?;
    ensure!(
        described.contains("configmaps") && described.contains(&limit.to_string()),
        "{described}"
    );
    Ok(())
}

/// A quota naming `count/<plural>.<group>` of a CRD created after it counts the custom
/// resources as soon as the CRD is served (upstream's spec "capture the life of a custom
/// resource"), instead of refusing them as a usage it does not know.
#[tokio::test]
async fn a_quota_counts_custom_resources_of_a_crd_created_after_it() -> Result<()> {
    let server = KplaneServer::start()?;
    server.kubectl_ok(&["create", "namespace", "crq"])?;
    let quotas: Api<ResourceQuota> = Api::namespaced(server.client().await?, "crq");
    server.kubectl_ok(&[
        "create",
        "quota",
        "widgets",
        "-n",
        "crq",
        "--hard=count/widgets.example.com=1,resourcequotas=5",
    ])?;
    wait_used(&quotas, "widgets", &[("resourcequotas", "1")]).await?;
    let crd = r#"apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
"#;
    let out = server.kubectl_stdin(&["apply", "-f", "-"], crd)?;
    ensure!(out.success(), "{}", out.stderr);
    server.kubectl_ok(&[
        "wait",
        "--for=condition=established",
        "crd/widgets.example.com",
        "--timeout=30s",
    ])?;
    wait_used(&quotas, "widgets", &[("count/widgets.example.com", "0")]).await?;
    let widget = |name: &str| {
        format!("apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: {name}\n  namespace: crq\n")
    };
    let out = server.kubectl_stdin(&["create", "-f", "-"], &widget("w1"))?;
    ensure!(out.success(), "{}", out.stderr);
    let out = server.kubectl_stdin(&["create", "-f", "-"], &widget("w2"))?;
    ensure!(
        !out.success()
            && out.stderr.contains(
                "widgets.example.com \"w2\" is forbidden: exceeded quota: widgets, requested: count/widgets.example.com=1, used: count/widgets.example.com=1, limited: count/widgets.example.com=1"
            ),
        "{}",
        out.stderr
    );
    Ok(())
}
