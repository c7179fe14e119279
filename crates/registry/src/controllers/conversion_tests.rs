//! The server's own controllers never call a CRD's conversion webhook: with the webhook
//! down, a CRD whose objects are stored in an older version is still deleted with them,
//! and the garbage collector still removes a dangling owner reference.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kplane_storage::Prefix;
use kplane_types::ClusterName;
use serde_json::{json, Value};

use super::ObjRef;
use crate::options::WriteParams;
use crate::testing::{create_namespace, fixture_with_admission, target, Fixture};
use crate::webhooks::fake::FakeTransport;
use crate::{Registry, Target};

const CRD: &str = "widgets.example.com";

fn version(name: &str, storage: bool) -> Value {
    json!({"name": name, "served": true, "storage": storage,
        "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}}})
}

/// A registry whose conversion webhook is down and a CRD of widgets stored in `v1`.
async fn setup() -> (Fixture, std::sync::Arc<FakeTransport>) {
    let fake = FakeTransport::new(|_, _| async {
        Err("dial tcp 127.0.0.1:1: connect: connection refused".into())
    });
    let f = fixture_with_admission(fake.admission()).await;
    let reg = &f.reg;
    let crd = json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [version("v1", true), version("v2", false)],
            "conversion": {"strategy": "Webhook", "webhook": {
                "clientConfig": {"url": "https://convert.test/"}, "conversionReviewVersions": ["v1"]}}}});
    reg.create(&crds(reg), crd, &WriteParams::default())
        .await
        .unwrap();
    create_namespace(reg, "ns").await;
    (f, fake)
}

fn crds(reg: &Registry) -> Target {
    target(
        reg,
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        None,
    )
}

/// Creates `objects` in `v1`, then makes `v2` the storage version: they stay stored in
/// `v1`, which reads in `v2` convert through the webhook.
async fn store_in_old_version(reg: &Registry, objects: Vec<Value>) {
    let v1 = widgets(reg, "v1").await;
    for o in objects {
        reg.create(&v1, o, &WriteParams::default()).await.unwrap();
    }
    let mut crd: Value = serde_json::from_slice(&reg.get(&crds(reg), CRD).await.unwrap()).unwrap();
    crd["spec"]["versions"] = json!([version("v1", false), version("v2", true)]);
    reg.update(&crds(reg), CRD, None, crd, &WriteParams::default())
        .await
        .unwrap();
}

async fn widgets(reg: &Registry, version: &str) -> Target {
    let cat = reg.cluster_catalog(&ClusterName::root()).await.unwrap();
    let rt = cat.get("example.com", version, "widgets").cloned().unwrap();
    Target::new(&ClusterName::root(), rt, Some("ns".into()))
}

fn widget(name: &str, owners: Value) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name, "ownerReferences": owners}, "spec": {"size": 1}})
}

#[tokio::test]
async fn a_crd_whose_conversion_webhook_is_down_goes_away_with_its_objects() {
    let (f, fake) = setup().await;
    let reg = &f.reg;
    store_in_old_version(reg, vec![widget("a", json!([])), widget("b", json!([]))]).await;
    reg.delete(&crds(reg), CRD, &Default::default())
        .await
        .unwrap();
    assert!(
        crate::controllers::crd_cleanup::cleanup_crd(reg, &ClusterName::root(), CRD)
            .await
            .unwrap()
    );
    assert_eq!(reg.get(&crds(reg), CRD).await.unwrap_err().code(), 404);
    let left = reg
        .storage
        .count(&Prefix::resource(
            ClusterName::root(),
            "example.com/widgets",
        ))
        .await
        .unwrap();
    assert_eq!(left, 0);
    assert_eq!(fake.urls(), Vec::<String>::new());
}

/// The collector drops a dangling owner reference of an object stored in an older
/// version without converting it: it stays in that version, otherwise unchanged.
#[tokio::test]
async fn the_collector_calls_no_conversion_webhook() {
    let (f, fake) = setup().await;
    let reg = &f.reg;
    let cms = target(reg, "", "configmaps", Some("ns"));
    let owner: Value = serde_json::from_slice(
        &reg.create(
            &cms,
            crate::testing::configmap("owner", "g"),
            &WriteParams::default(),
        )
        .await
        .unwrap(),
    )
    .unwrap();
    let owner_ref = |name: &str, uid: &Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "name": name, "uid": uid});
    let refs = json!([
        owner_ref("owner", &owner["metadata"]["uid"]),
        owner_ref("gone", &json!("no-such-uid"))
    ]);
    store_in_old_version(reg, vec![widget("w", refs)]).await;
    let r = ObjRef {
        cluster: ClusterName::root(),
        resource: "example.com/widgets".into(),
        namespace: "ns".into(),
        name: "w".into(),
    };
    assert!(crate::controllers::gc::gc_dependent(reg, &r).await.unwrap());
    assert_eq!(fake.urls(), Vec::<String>::new());
    let kv = reg
        .storage
        .get(&kplane_storage::Key::new(
            ClusterName::root(),
            "example.com/widgets",
            "ns",
            "w",
        ))
        .await
        .unwrap()
        .unwrap();
    let stored: Value = serde_json::from_slice(&kv.value).unwrap();
    assert_eq!(stored["apiVersion"], "example.com/v1");
    assert_eq!(stored["spec"], json!({"size": 1}));
    let refs = stored["metadata"]["ownerReferences"].as_array().unwrap();
    assert_eq!(refs.len(), 1);
    assert_eq!(refs[0]["name"], "owner");
}
