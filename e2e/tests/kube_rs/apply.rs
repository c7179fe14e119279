//! A kube-runtime controller that writes with server-side apply (`Patch::Apply`), as
//! controllers built on kube-rs or controller-runtime do: it derives one ConfigMap from
//! another, owns exactly the fields it applies, drops those it stops applying, leaves other
//! managers' fields alone, and meets a conflict (409, one cause per field, naming the owner)
//! when another manager applies a field it owns.

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context as _, Result};
use futures::StreamExt as _;
use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kplane_e2e::fixtures::{create_namespace, error_code, string_map};
use kplane_e2e::{eventually, KplaneServer};
use kube::api::{Patch, PatchParams, PostParams};
use kube::runtime::controller::{Action, Controller};
use kube::runtime::watcher;
use kube::{Api, Resource as _, ResourceExt as _};

const NS: &str = "apply-ctl";
const MANAGER: &str = "derive-controller";
const SETTLE: Duration = Duration::from_secs(20);

/// Applies `<name>-derived` with the source's data, owned by the source.
async fn reconcile(src: Arc<ConfigMap>, api: Arc<Api<ConfigMap>>) -> Result<Action, kube::Error> {
    let name = format!("{}-derived", src.name_any());
    let owner = src.controller_owner_ref(&()).into_iter().collect();
    let derived = ConfigMap {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            owner_references: Some(owner),
            ..Default::default()
        },
        data: src.data.clone(),
        ..Default::default()
    };
    let pp = PatchParams::apply(MANAGER).force();
    api.patch(&name, &pp, &Patch::Apply(&derived)).await?;
    Ok(Action::await_change())
}

fn derived_data(cm: &ConfigMap) -> Vec<(String, String)> {
    cm.data.clone().unwrap_or_default().into_iter().collect()
}

#[tokio::test]
async fn controller_server_side_apply_owns_removes_and_conflicts() -> Result<()> {
    let server = KplaneServer::start()?;
    let client = server.client().await?;
    create_namespace(&client, NS).await?;
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    let shared = Arc::new(api.clone());
    let controller = tokio::spawn(
        Controller::new(
            api.clone(),
            watcher::Config::default().labels("role=source"),
        )
        .run(
            reconcile,
            |_, _, _| Action::requeue(Duration::from_secs(1)),
            shared,
        )
        .for_each(|_| async {}),
    );

    let mut src = ConfigMap {
        metadata: ObjectMeta {
            name: Some("src".into()),
            labels: Some(string_map(&[("role", "source")])),
            ..Default::default()
        },
        data: Some(string_map(&[("a", "1"), ("b", "2")])),
        ..Default::default()
    };
    src = api.create(&PostParams::default(), &src).await?;
    let want = |pairs: &[(&str, &str)]| -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    let expect = want(&[("a", "1"), ("b", "2")]);
    eventually(SETTLE, "the derived object appears", || async {
        Ok(api
            .get_opt("src-derived")
            .await?
            .is_some_and(|d| derived_data(&d) == expect))
    })
    .await?;
    let derived = api.get("src-derived").await?;
    let entries = derived.metadata.managed_fields.clone().unwrap_or_default();
    let mine = entries
        .iter()
        .find(|e| e.manager.as_deref() == Some(MANAGER))
        .context("no managedFields entry for the controller")?;
    assert_eq!(mine.operation.as_deref(), Some("Apply"));
    let owners = derived
        .metadata
        .owner_references
        .clone()
        .unwrap_or_default();
    assert_eq!(owners.len(), 1);
    assert_eq!(owners[0].uid, src.uid().unwrap_or_default());

    // Somebody else applies a field the controller does not manage: it stays.
    let extra = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "src-derived"},
        "data": {"note": "human"},
    });
    api.patch(
        "src-derived",
        &PatchParams::apply("human"),
        &Patch::Apply(&extra),
    )
    .await?;

    // The source drops b and changes a: the controller's apply removes b, keeps note.
    src.data = Some(string_map(&[("a", "10")]));
    api.replace("src", &PostParams::default(), &src).await?;
    let expect = want(&[("a", "10"), ("note", "human")]);
    eventually(SETTLE, "the derived object follows", || async {
        Ok(derived_data(&api.get("src-derived").await?) == expect)
    })
    .await?;

    // Another manager applying a field the controller owns conflicts, naming the owner.
    let grab = serde_json::json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "src-derived"},
        "data": {"a": "stolen", "note": "human"},
    });
    let err = api
        .patch(
            "src-derived",
            &PatchParams::apply("human"),
            &Patch::Apply(&grab),
        )
        .await
        .err()
        .context("applying a field the controller owns succeeded")?;
    assert_eq!(error_code(&err), Some(409), "{err}");
    let text = err.to_string();
    assert!(
        text.contains(&format!("conflict with \"{MANAGER}\"")) && text.contains(".data.a"),
        "{text}"
    );
    assert_eq!(
        derived_data(&api.get("src-derived").await?),
        want(&[("a", "10"), ("note", "human")])
    );
    controller.abort();
    Ok(())
}
