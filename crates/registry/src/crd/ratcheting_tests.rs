//! CRD validation ratcheting through the write path: a Gadget stored while its CRD's
//! schema was looser stays updatable as long as the update leaves its now-invalid values
//! unchanged (kube-apiserver 1.32, `CRDValidationRatcheting` on by default), with the
//! stored object read back as upstream reads it (defaulted under today's schema) and the
//! ratcheted CEL failures sent as warnings.

use kplane_types::ClusterName;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::options::WriteParams;
use crate::testing::{fixture, target, Fixture};
use crate::{Registry, Target};

const NAME: &str = "gadgets.example.com";

fn crd(spec_props: Value) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": NAME},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
            "versions": [{"name": "v1", "served": true, "storage": true, "schema": {"openAPIV3Schema":
                {"type": "object", "properties": {"spec": {"type": "object", "properties": spec_props}}}}}]}})
}

/// The Gadgets of namespace `ns`, as the catalog serves them now.
async fn gadgets(reg: &Registry) -> Target {
    let catalog = reg.cluster_catalog(&ClusterName::root()).await.unwrap();
    let rt = catalog.get("example.com", "v1", "gadgets").unwrap().clone();
    Target::new(&ClusterName::root(), rt, Some("ns".into()))
}

/// A registry with Gadget `a` stored with `spec` under `loose`, then the CRD's schema
/// changed to `tight`.
async fn stored_then_tightened(loose: Value, spec: Value, tight: Value) -> Fixture {
    let f = fixture().await;
    let reg = &f.reg;
    let w = WriteParams::default();
    let crds = target(
        reg,
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        None,
    );
    reg.create(&crds, crd(loose), &w).await.unwrap();
    crate::testing::create_namespace(reg, "ns").await;
    let gadget = json!({"apiVersion": "example.com/v1", "kind": "Gadget",
        "metadata": {"name": "a", "namespace": "ns"}, "spec": spec});
    reg.create(&gadgets(reg).await, gadget, &w).await.unwrap();
    let mut c: Value = serde_json::from_slice(&reg.get(&crds, NAME).await.unwrap()).unwrap();
    c["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"] =
        tight;
    reg.update(&crds, NAME, None, c, &w).await.unwrap();
    f
}

/// Updates Gadget `a` with `change` applied to what a GET returns; the warnings sent.
async fn update(reg: &Registry, change: impl Fn(&mut Value)) -> Result<Vec<String>, ApiError> {
    let t = gadgets(reg).await;
    let mut obj: Value = serde_json::from_slice(&reg.get(&t, "a").await.unwrap()).unwrap();
    change(&mut obj);
    let w = WriteParams::default();
    reg.update(&t, "a", None, obj, &w).await?;
    Ok(w.warnings.texts())
}

fn causes(e: &ApiError) -> Vec<String> {
    assert_eq!(e.code(), 422, "{e:?}");
    let d = e.0.details.as_ref();
    d.map(|d| {
        d.causes
            .iter()
            .map(|c| format!("{}: {}", c.field, c.message))
    })
    .into_iter()
    .flatten()
    .collect()
}

#[tokio::test]
async fn an_unchanged_invalid_list_is_kept_against_defaults_added_since() {
    let item = |b: Option<Value>| {
        let mut p = json!({"a": {"type": "string"}});
        if let Some(b) = b {
            p["b"] = b;
        }
        json!({"type": "object", "properties": p})
    };
    let f = stored_then_tightened(
        json!({"tags": {"type": "array", "items": item(None)}, "n": {"type": "integer"}}),
        json!({"tags": [{"a": "1"}, {"a": "2"}], "n": 1}),
        json!({"tags": {"type": "array", "maxItems": 1, "items": item(Some(json!({"type": "string", "default": "x"})))},
            "n": {"type": "integer"}}),
    )
    .await;
    // the request carries the defaulted items; the stored object is compared defaulted too
    let warnings = update(&f.reg, |o| o["spec"]["n"] = json!(2)).await.unwrap();
    assert_eq!(warnings, Vec::<String>::new());
    let e = update(&f.reg, |o| o["spec"]["tags"][0]["a"] = json!("changed"))
        .await
        .unwrap_err();
    assert_eq!(
        causes(&e),
        vec!["spec.tags: Too many: 2: must have at most 1 item"]
    );
}

#[tokio::test]
async fn ratcheted_cel_failures_are_sent_as_warnings() {
    let rule =
        json!([{"rule": "self.startsWith('k8s')", "message": "strings must have k8s prefix"}]);
    let f = stored_then_tightened(
        json!({"name": {"type": "string"}, "n": {"type": "integer"}}),
        json!({"name": "gadget", "n": 1}),
        json!({"name": {"type": "string", "x-kubernetes-validations": rule}, "n": {"type": "integer"}}),
    )
    .await;
    let warnings = update(&f.reg, |o| o["spec"]["n"] = json!(2)).await.unwrap();
    assert_eq!(
        warnings,
        vec!["spec.name: Invalid value: \"string\": strings must have k8s prefix"]
    );
    let e = update(&f.reg, |o| o["spec"]["name"] = json!("widget"))
        .await
        .unwrap_err();
    assert_eq!(
        causes(&e),
        vec!["spec.name: Invalid value: \"string\": strings must have k8s prefix"]
    );
}

#[tokio::test]
async fn set_duplicates_stored_before_are_kept_only_while_the_stored_object_has_some() {
    let list = |t: &str| json!({"type": "array", "x-kubernetes-list-type": t, "items": {"type": "string"}});
    let f = stored_then_tightened(
        json!({"tags": list("atomic"), "n": {"type": "integer"}}),
        json!({"tags": ["x", "x"], "n": 1}),
        json!({"tags": list("set"), "n": {"type": "integer"}}),
    )
    .await;
    update(&f.reg, |o| o["spec"]["n"] = json!(2)).await.unwrap();
    update(&f.reg, |o| o["spec"]["tags"] = json!(["y"]))
        .await
        .unwrap();
    let e = update(&f.reg, |o| o["spec"]["tags"] = json!(["y", "y"]))
        .await
        .unwrap_err();
    assert_eq!(causes(&e), vec!["spec.tags[1]: Duplicate value: \"y\""]);
}
