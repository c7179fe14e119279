//! A CRD stored with a CEL rule over today's per-rule cost limit (as an older kplane, with
//! another estimator, could have stored it): kube-apiserver 1.32 keeps serving it, accepts
//! updates that leave its schema unchanged, and refuses one that changes the schema
//! (`ValidateCustomResourceDefinitionUpdate` with `versionsWithUnchangedSchemas`).

use kplane_storage::Precondition;
use kplane_types::ClusterName;
use serde_json::{json, Value};

use crate::options::WriteParams;
use crate::testing::{fixture, target};
use crate::{Registry, Target};

const NAME: &str = "gadgets.example.com";

const TAIL: &str = "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)";

/// The Gadget schema: `spec.tags`, a list of up to `max_items` short strings that must not
/// be empty (`self != ''` costs 1 per item: 15,000,000 items cost 1.5 times the per-rule
/// limit of 10,000,000 and stay within the per-CRD total of 100,000,000).
fn schema(max_items: u64, rule: &str, message: &str) -> Value {
    json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "tags": {"type": "array", "maxItems": max_items, "items": {
                "type": "string", "maxLength": 2,
                "x-kubernetes-validations": [{"rule": rule, "message": message}]}},
            "size": {"type": "integer"}}},
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}}})
}

fn crd(schema: Value) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": NAME},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "subresources": {"status": {}}, "schema": {"openAPIV3Schema": schema}}]}})
}

async fn read(reg: &Registry, t: &Target, name: &str) -> Value {
    serde_json::from_slice(&reg.get(t, name).await.unwrap()).unwrap()
}

/// Replaces the stored CRD's schema behind the registry's back, as an older server wrote it.
async fn store_schema(reg: &Registry, crds: &Target, schema: Value) {
    let kv = reg.get_current(crds, NAME).await.unwrap().unwrap();
    let mut stored: Value = serde_json::from_slice(&kv.value).unwrap();
    stored["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = schema;
    let key = crds.key(NAME).unwrap();
    let pre = Precondition::ModRevision(kv.mod_revision);
    reg.storage
        .put(key, pre, crate::encode::encoder(stored))
        .await
        .unwrap();
    reg.refresh_catalog(&ClusterName::root()).await.unwrap();
}

/// The causes of a refused write, as `field: message`.
fn causes(e: &crate::error::ApiError) -> Vec<String> {
    assert_eq!(e.code(), 422, "{e:?}");
    e.0.details
        .as_ref()
        .map(|d| {
            d.causes
                .iter()
                .map(|c| format!("{}: {}", c.field, c.message))
                .collect()
        })
        .unwrap_or_default()
}

async fn update(reg: &Registry, t: &Target, obj: Value) -> Result<Value, crate::error::ApiError> {
    let w = WriteParams::default();
    let name = obj["metadata"]["name"].as_str().unwrap().to_string();
    let (bytes, _) = reg.update(t, &name, None, obj, &w).await?;
    Ok(serde_json::from_slice(&bytes).unwrap())
}

#[tokio::test]
async fn a_stored_rule_over_the_cost_limit_is_kept_until_the_schema_changes() {
    let f = fixture().await;
    let reg = &f.reg;
    let w = WriteParams::default();
    let crds = target(
        reg,
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        None,
    );
    let rule_path = "spec.validation.openAPIV3Schema.properties[spec].properties[tags].items.x-kubernetes-validations[0].rule";
    let over = format!(
        "{rule_path}: Forbidden: estimated rule cost exceeds budget by factor of 1.5x {TAIL}"
    );

    // kube-apiserver refuses the rule in a new CRD (one version: the schema's errors name
    // the top-level `spec.validation` it is converted to)
    let expensive = schema(15_000_000, "self != ''", "must not be empty");
    let e = reg
        .create(&crds, crd(expensive.clone()), &w)
        .await
        .unwrap_err();
    assert_eq!(causes(&e), vec![over.clone()]);

    // stored anyway, as an older server accepted it
    reg.create(
        &crds,
        crd(schema(10, "self != ''", "must not be empty")),
        &w,
    )
    .await
    .unwrap();
    store_schema(reg, &crds, expensive.clone()).await;

    // served, with the rule enforced
    crate::testing::create_namespace(reg, "ns").await;
    let catalog = reg.cluster_catalog(&ClusterName::root()).await.unwrap();
    let rt = catalog.get("example.com", "v1", "gadgets").unwrap().clone();
    let gadgets = Target::new(&ClusterName::root(), rt, Some("ns".into()));
    let gadget = |name: &str, tags: Value| {
        json!({"apiVersion": "example.com/v1", "kind": "Gadget",
            "metadata": {"name": name, "namespace": "ns"}, "spec": {"tags": tags}})
    };
    let e = reg
        .create(&gadgets, gadget("bad", json!(["a", ""])), &w)
        .await
        .unwrap_err();
    assert_eq!(
        causes(&e),
        vec!["spec.tags[1]: Invalid value: \"string\": must not be empty"]
    );
    reg.create(&gadgets, gadget("good", json!(["a"])), &w)
        .await
        .unwrap();

    // an update that leaves the schema alone is accepted: metadata, names, the status
    let mut c = read(reg, &crds, NAME).await;
    c["metadata"]["labels"] = json!({"team": "a"});
    c["spec"]["names"]["shortNames"] = json!(["gd"]);
    let c = update(reg, &crds, c).await.unwrap();
    assert_eq!(c["spec"]["names"]["shortNames"], json!(["gd"]));
    assert_eq!(
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"],
        expensive
    );
    let mut st = c.clone();
    st["metadata"]["annotations"] = json!({"note": "status write"});
    reg.update(&crds, NAME, Some("status"), st, &w)
        .await
        .unwrap();

    // any change to the version's schema brings the per-rule limit back: the rule's
    // message alone, or the rule
    for changed in [
        schema(15_000_000, "self != ''", "no empty tags"),
        schema(15_000_000, "self.size() != 0", "must not be empty"),
    ] {
        let mut c = read(reg, &crds, NAME).await;
        c["spec"]["versions"][0]["schema"]["openAPIV3Schema"] = changed;
        let e = update(reg, &crds, c).await.unwrap_err();
        let got = causes(&e);
        assert_eq!(got.len(), 1, "{got:#?}");
        assert!(
            got[0].starts_with(&format!(
                "{rule_path}: Forbidden: estimated rule cost exceeds budget by factor of "
            )),
            "{got:#?}"
        );
    }
    let mut c = read(reg, &crds, NAME).await;
    c["spec"]["versions"][0]["schema"]["openAPIV3Schema"] =
        schema(15_000_000, "self != ''", "no empty tags");
    assert_eq!(
        causes(&update(reg, &crds, c).await.unwrap_err()),
        vec![over]
    );

    // within the limit again: accepted
    let mut c = read(reg, &crds, NAME).await;
    c["spec"]["versions"][0]["schema"]["openAPIV3Schema"] =
        schema(1000, "self != ''", "must not be empty");
    update(reg, &crds, c).await.unwrap();
}
