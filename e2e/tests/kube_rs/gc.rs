//! Garbage collection driven by kube-rs: each `DeleteParams` propagation policy, dependents
//! whose owner never existed, and a chain (custom resource owns ConfigMap owns Secret)
//! deleted in the foreground.

use std::time::Duration;

use anyhow::{ensure, Context as _, Result};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kplane_e2e::fixtures::{configmap, error_code};
use kplane_e2e::{eventually, KplaneServer};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::core::ObjectMeta;
use kube::runtime::wait::{await_condition, conditions};
use kube::{Api, Client, CustomResource, CustomResourceExt, Resource, ResourceExt};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::json;

const TIMEOUT: Duration = Duration::from_secs(30);
const NS: &str = "default";
const HOLD: &str = "e2e.kplane.dev/hold";

/// A custom resource to own things.
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "gc.kplane.example.io",
    version = "v1",
    kind = "Widget",
    namespaced
)]
pub struct WidgetSpec {
    pub size: i32,
}

async fn install_widget_crd(client: &Client) -> Result<()> {
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    crds.create(&PostParams::default(), &Widget::crd()).await?;
    tokio::time::timeout(
        TIMEOUT,
        await_condition(
            crds,
            "widgets.gc.kplane.example.io",
            conditions::is_crd_established(),
        ),
    )
    .await
    .context("the Widget CRD was not Established in time")??;
    Ok(())
}

/// A ConfigMap owned by `owner` (blocking, as a controller reference).
fn owned_cm(name: &str, owner: OwnerReference) -> ConfigMap {
    let mut cm = configmap(name, &[("k", "v")]);
    cm.metadata.owner_references = Some(vec![owner]);
    cm
}

fn owner_ref<K: Resource<DynamicType = ()>>(obj: &K) -> Result<OwnerReference> {
    obj.controller_owner_ref(&()).context("owner without uid")
}

async fn hold(api: &Api<ConfigMap>, name: &str) -> Result<()> {
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": [HOLD]}})),
    )
    .await?;
    Ok(())
}

async fn release<K>(api: &Api<K>, name: &str) -> Result<()>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    api.patch(
        name,
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await?;
    Ok(())
}

/// Waits until `name` is gone (404).
async fn gone<K>(api: &Api<K>, name: &str) -> Result<()>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    eventually(TIMEOUT, &format!("{name} to be collected"), || async {
        match api.get(name).await {
            Err(e) if error_code(&e) == Some(404) => Ok(true),
            Err(e) => Err(e.into()),
            Ok(_) => Ok(false),
        }
    })
    .await
}

async fn exists<K>(api: &Api<K>, name: &str) -> Result<bool>
where
    K: Clone + serde::de::DeserializeOwned + std::fmt::Debug,
{
    Ok(api.get_opt(name).await?.is_some())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn background_policy_collects_dependents_after_the_owner() -> Result<()> {
    let server = KplaneServer::start()?;
    let cms: Api<ConfigMap> = Api::namespaced(server.client().await?, NS);
    let owner = cms
        .create(&PostParams::default(), &configmap("owner", &[]))
        .await?;
    for name in ["dep1", "dep2"] {
        cms.create(&PostParams::default(), &owned_cm(name, owner_ref(&owner)?))
            .await?;
    }
    let res = cms.delete("owner", &DeleteParams::background()).await?;
    ensure!(
        res.is_right(),
        "background delete did not remove the owner at once"
    );
    ensure!(!exists(&cms, "owner").await?);
    gone(&cms, "dep1").await?;
    gone(&cms, "dep2").await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreground_policy_keeps_a_custom_resource_owner_until_its_dependents_are_gone(
) -> Result<()> {
    let server = KplaneServer::start()?;
    let client = server.client().await?;
    install_widget_crd(&client).await?;
    let widgets: Api<Widget> = Api::namespaced(client.clone(), NS);
    let cms: Api<ConfigMap> = Api::namespaced(client, NS);
    let w = widgets
        .create(
            &PostParams::default(),
            &Widget::new("w", WidgetSpec { size: 1 }),
        )
        .await?;
    cms.create(&PostParams::default(), &owned_cm("part", owner_ref(&w)?))
        .await?;
    hold(&cms, "part").await?;

    let res = widgets.delete("w", &DeleteParams::foreground()).await?;
    let marked = res
        .left()
        .context("foreground delete removed the owner at once")?;
    ensure!(marked.meta().deletion_timestamp.is_some());
    ensure!(marked
        .finalizers()
        .iter()
        .any(|f| f == "foregroundDeletion"));
    eventually(TIMEOUT, "the dependent to be deleted", || async {
        Ok(cms.get("part").await?.meta().deletion_timestamp.is_some())
    })
    .await?;
    tokio::time::sleep(Duration::from_secs(2)).await;
    ensure!(
        exists(&widgets, "w").await?,
        "owner went before its dependent"
    );

    release(&cms, "part").await?;
    gone(&cms, "part").await?;
    gone(&widgets, "w").await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orphan_policy_keeps_dependents_and_drops_the_reference() -> Result<()> {
    let server = KplaneServer::start()?;
    let cms: Api<ConfigMap> = Api::namespaced(server.client().await?, NS);
    let owner = cms
        .create(&PostParams::default(), &configmap("owner", &[]))
        .await?;
    cms.create(&PostParams::default(), &owned_cm("dep", owner_ref(&owner)?))
        .await?;
    cms.delete("owner", &DeleteParams::orphan()).await?;
    gone(&cms, "owner").await?;
    let dep = cms.get("dep").await?;
    ensure!(
        dep.owner_references().is_empty(),
        "orphaned dependent still references its owner: {:?}",
        dep.owner_references()
    );
    tokio::time::sleep(Duration::from_secs(3)).await;
    ensure!(
        exists(&cms, "dep").await?,
        "orphaned dependent was collected"
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dependents_whose_owner_never_existed_are_collected() -> Result<()> {
    let server = KplaneServer::start()?;
    let secrets: Api<Secret> = Api::namespaced(server.client().await?, NS);
    let orphan = Secret {
        metadata: ObjectMeta {
            name: Some("lonely".into()),
            owner_references: Some(vec![OwnerReference {
                api_version: "v1".into(),
                kind: "ConfigMap".into(),
                name: "nobody".into(),
                uid: "6b1d1f38-0000-4000-8000-000000000000".into(),
                ..Default::default()
            }]),
            ..Default::default()
        },
        ..Default::default()
    };
    secrets.create(&PostParams::default(), &orphan).await?;
    gone(&secrets, "lonely").await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreground_chain_a_owns_b_owns_c_goes_leaf_first() -> Result<()> {
    let server = KplaneServer::start()?;
    let client = server.client().await?;
    install_widget_crd(&client).await?;
    let widgets: Api<Widget> = Api::namespaced(client.clone(), NS);
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let secrets: Api<Secret> = Api::namespaced(client, NS);
    let a = widgets
        .create(
            &PostParams::default(),
            &Widget::new("a", WidgetSpec { size: 1 }),
        )
        .await?;
    let b = cms
        .create(&PostParams::default(), &owned_cm("b", owner_ref(&a)?))
        .await?;
    let c = Secret {
        metadata: ObjectMeta {
            name: Some("c".into()),
            owner_references: Some(vec![owner_ref(&b)?]),
            finalizers: Some(vec![HOLD.into()]),
            ..Default::default()
        },
        ..Default::default()
    };
    secrets.create(&PostParams::default(), &c).await?;

    widgets.delete("a", &DeleteParams::foreground()).await?;
    eventually(TIMEOUT, "the leaf to be deleted", || async {
        Ok(secrets.get("c").await?.meta().deletion_timestamp.is_some())
    })
    .await?;
    // The middle waits in the foreground too, and the root waits for it.
    let b_now = cms.get("b").await?;
    ensure!(
        b_now.meta().deletion_timestamp.is_some(),
        "middle not deleting"
    );
    ensure!(
        b_now.finalizers().iter().any(|f| f == "foregroundDeletion"),
        "middle is not deleted in the foreground: {:?}",
        b_now.finalizers()
    );
    tokio::time::sleep(Duration::from_secs(2)).await;
    ensure!(exists(&widgets, "a").await?, "root went before the chain");
    ensure!(exists(&cms, "b").await?, "middle went before the leaf");

    release(&secrets, "c").await?;
    gone(&secrets, "c").await?;
    gone(&cms, "b").await?;
    gone(&widgets, "a").await?;
    Ok(())
}
