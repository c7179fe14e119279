//! Logical clusters: `/clusters/<name>/...` are isolated API servers sharing one process.

use std::collections::BTreeSet;
use std::time::Duration;

use anyhow::{bail, ensure, Context as _, Result};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::{ConfigMap, Namespace};
use kplane_e2e::fixtures::{configmap, create_namespace, error_code};
use kplane_e2e::KplaneServer;
use kube::api::{ListParams, PostParams, WatchEvent, WatchParams};
use kube::{Api, Client, ResourceExt};

const DEFAULT_NAMESPACES: [&str; 4] = ["default", "kube-node-lease", "kube-public", "kube-system"];

async fn namespace_names(client: &Client) -> Result<BTreeSet<String>> {
    let list = Api::<Namespace>::all(client.clone())
        .list(&ListParams::default())
        .await?;
    Ok(list.items.iter().map(ResourceExt::name_any).collect())
}

async fn cm_names(client: &Client) -> Result<BTreeSet<String>> {
    let list = Api::<ConfigMap>::namespaced(client.clone(), "default")
        .list(&ListParams::default())
        .await?;
    Ok(list.items.iter().map(ResourceExt::name_any).collect())
}

#[tokio::test]
async fn objects_in_one_logical_cluster_are_invisible_in_another() -> Result<()> {
    let server = KplaneServer::start()?;
    server.create_workspaces(&["root:a", "root:b"])?;
    let a = server.client_for("root:a").await?;
    let b = server.client_for("root:b").await?;
    let cms_a: Api<ConfigMap> = Api::namespaced(a.clone(), "default");
    let cms_b: Api<ConfigMap> = Api::namespaced(b.clone(), "default");

    cms_a
        .create(
            &PostParams::default(),
            &configmap("only-in-a", &[("k", "a")]),
        )
        .await?;
    cms_b
        .create(
            &PostParams::default(),
            &configmap("only-in-b", &[("k", "b")]),
        )
        .await?;

    // get
    let err = cms_b
        .get("only-in-a")
        .await
        .err()
        .context("root:b sees only-in-a")?;
    assert_eq!(error_code(&err), Some(404));
    let err = cms_a
        .get("only-in-b")
        .await
        .err()
        .context("root:a sees only-in-b")?;
    assert_eq!(error_code(&err), Some(404));
    // list
    let (in_a, in_b) = (cm_names(&a).await?, cm_names(&b).await?);
    ensure!(
        in_a.contains("only-in-a") && !in_a.contains("only-in-b"),
        "root:a lists {in_a:?}"
    );
    ensure!(
        in_b.contains("only-in-b") && !in_b.contains("only-in-a"),
        "root:b lists {in_b:?}"
    );
    let root = server.client().await?;
    let in_root = cm_names(&root).await?;
    ensure!(
        !in_root.contains("only-in-a") && !in_root.contains("only-in-b"),
        "root lists objects of its children: {in_root:?}"
    );

    // watch: a watch on root:b sees its own marker but nothing written to root:a.
    let rv = cms_b
        .list(&ListParams::default())
        .await?
        .metadata
        .resource_version
        .context("list without resourceVersion")?;
    let mut watch = cms_b
        .watch(&WatchParams::default().timeout(60), &rv)
        .await?
        .boxed();
    cms_a
        .create(
            &PostParams::default(),
            &configmap("later-in-a", &[("k", "a")]),
        )
        .await?;
    cms_b
        .create(
            &PostParams::default(),
            &configmap("marker-in-b", &[("k", "b")]),
        )
        .await?;
    loop {
        let event = tokio::time::timeout(Duration::from_secs(15), watch.next())
            .await
            .context("no watch event on root:b")?
            .context("root:b watch ended")??;
        match event {
            WatchEvent::Added(cm) if cm.name_any() == "marker-in-b" => break,
            WatchEvent::Bookmark(_) => {}
            other => bail!("root:b watch delivered a foreign event: {other:?}"),
        }
    }
    Ok(())
}

#[tokio::test]
async fn each_logical_cluster_gets_its_own_default_namespaces() -> Result<()> {
    let server = KplaneServer::start()?;
    server.create_workspaces(&["root:a", "root:b"])?;
    let a = server.client_for("root:a").await?;
    let b = server.client_for("root:b").await?;
    create_namespace(&a, "team-a").await?;
    create_namespace(&b, "team-b").await?;

    let (names_a, names_b) = (namespace_names(&a).await?, namespace_names(&b).await?);
    for ns in DEFAULT_NAMESPACES {
        ensure!(names_a.contains(ns), "root:a lacks {ns}: {names_a:?}");
        ensure!(names_b.contains(ns), "root:b lacks {ns}: {names_b:?}");
    }
    ensure!(
        names_a.contains("team-a") && !names_a.contains("team-b"),
        "{names_a:?}"
    );
    ensure!(
        names_b.contains("team-b") && !names_b.contains("team-a"),
        "{names_b:?}"
    );

    // Distinct objects, not one shared namespace shown twice.
    let uid_a = Api::<Namespace>::all(a).get("default").await?.metadata.uid;
    let uid_b = Api::<Namespace>::all(b).get("default").await?.metadata.uid;
    let uid_root = Api::<Namespace>::all(server.client().await?)
        .get("default")
        .await?
        .metadata
        .uid;
    ensure!(uid_a.is_some() && uid_b.is_some(), "default without uid");
    ensure!(
        uid_a != uid_b && uid_a != uid_root && uid_b != uid_root,
        "default namespaces share a uid: a={uid_a:?} b={uid_b:?} root={uid_root:?}"
    );
    Ok(())
}

#[tokio::test]
async fn root_prefix_and_unprefixed_path_are_the_same_cluster() -> Result<()> {
    let server = KplaneServer::start()?;
    ensure!(
        server.server_url().ends_with("/clusters/root"),
        "kubeconfig server URL {}",
        server.server_url()
    );
    let root = server.client().await?;
    let bare = server.client_unprefixed().await?;
    let via_root: Api<ConfigMap> = Api::namespaced(root.clone(), "default");
    let via_bare: Api<ConfigMap> = Api::namespaced(bare.clone(), "default");

    let created = via_bare
        .create(
            &PostParams::default(),
            &configmap("via-bare", &[("k", "1")]),
        )
        .await?;
    let seen = via_root.get("via-bare").await?;
    assert_eq!(seen.metadata.uid, created.metadata.uid);
    let created = via_root
        .create(
            &PostParams::default(),
            &configmap("via-root", &[("k", "2")]),
        )
        .await?;
    let seen = via_bare.get("via-root").await?;
    assert_eq!(seen.metadata.uid, created.metadata.uid);
    assert_eq!(namespace_names(&root).await?, namespace_names(&bare).await?);
    Ok(())
}

#[tokio::test]
async fn invalid_logical_cluster_name_is_bad_request() -> Result<()> {
    let server = KplaneServer::start()?;
    let bare = server.client_unprefixed().await?;
    for name in [
        "Root",
        "root:UPPER",
        "root:under_score",
        "root::double",
        "root:a-",
    ] {
        let path = format!("/clusters/{name}/api/v1/namespaces");
        let request = kube::core::Request::new(path).list(&ListParams::default())?;
        match bare.request_text(request).await {
            Ok(body) => bail!("cluster name {name:?} was accepted: {body}"),
            Err(e) => assert_eq!(error_code(&e), Some(400), "cluster name {name:?}: {e}"),
        }
    }
    // A valid name of a cluster that does not exist is not a client error: it is a 404.
    let request = kube::core::Request::new("/clusters/root:fresh/api/v1/namespaces")
        .list(&ListParams::default())?;
    match bare.request_text(request).await {
        Ok(body) => bail!("a cluster that does not exist answered: {body}"),
        Err(e) => assert_eq!(error_code(&e), Some(404), "{e}"),
    }
    Ok(())
}
