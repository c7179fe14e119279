//! JSON patch as kube-runtime's `finalizer` helper sends it.

use anyhow::{Context as _, Result};
use k8s_openapi::api::core::v1::ConfigMap;
use kplane_e2e::fixtures::{configmap, error_code};
use kplane_e2e::KplaneServer;
use kube::api::{Patch, PatchParams, PostParams};
use kube::Api;
use serde_json::json;

const FINALIZER: &str = "e2e.kplane.dev/cleanup";

/// `test` that `/metadata/finalizers` is null (absent), then `add` the list: what
/// `kube::runtime::finalizer` does for an object that has no finalizers yet.
fn add_first_finalizer() -> Result<Patch<()>> {
    let ops = json!([
        {"op": "test", "path": "/metadata/finalizers", "value": null},
        {"op": "add", "path": "/metadata/finalizers", "value": [FINALIZER]},
    ]);
    Ok(Patch::Json(
        serde_json::from_value(ops).context("json patch")?,
    ))
}

#[tokio::test]
async fn json_patch_test_of_missing_finalizers_against_null_then_add() -> Result<()> {
    let server = KplaneServer::start()?;
    let client = server.client().await?;
    let api: Api<ConfigMap> = Api::namespaced(client, "default");
    api.create(&PostParams::default(), &configmap("guarded", &[("a", "1")]))
        .await?;

    let patched = api
        .patch("guarded", &PatchParams::default(), &add_first_finalizer()?)
        .await
        .context("test(null) on an absent member must succeed")?;
    assert_eq!(
        patched.metadata.finalizers,
        Some(vec![FINALIZER.to_owned()])
    );
    let stored = api.get("guarded").await?;
    assert_eq!(stored.metadata.finalizers, Some(vec![FINALIZER.to_owned()]));

    // Now the member exists and is not null: the same patch's test must fail (422), unchanged.
    let err = api
        .patch("guarded", &PatchParams::default(), &add_first_finalizer()?)
        .await
        .err()
        .context("test(null) against an existing list succeeded")?;
    assert_eq!(error_code(&err), Some(422), "{err}");
    let after = api.get("guarded").await?;
    assert_eq!(
        after.metadata.resource_version,
        stored.metadata.resource_version
    );

    // Clean up the way the helper does on deletion: test the exact list, then remove it.
    let remove = json!([
        {"op": "test", "path": "/metadata/finalizers", "value": [FINALIZER]},
        {"op": "remove", "path": "/metadata/finalizers"},
    ]);
    let patched = api
        .patch(
            "guarded",
            &PatchParams::default(),
            &Patch::<()>::Json(serde_json::from_value(remove)?),
        )
        .await?;
    assert_eq!(patched.metadata.finalizers, None);
    Ok(())
}
