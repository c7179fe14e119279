//! A custom resource written in a version other than the storage version is validated in
//! the request's version, as kube-apiserver 1.32 validates it (each served version has its
//! own strategy, with that version's schema; the current object is decoded into the
//! request's version for the update's rules and ratcheting), and converted to the storage
//! version only to be stored.
//!
//! Widgets: `v1` (storage, `spec.hostPort: "host:port"`) and `v2` (`spec.host`,
//! `spec.port`), converted by a webhook (the fake transport); a rule only `v1` has
//! (`hostPort` must not start with `bad`) and constraints only `v2` has (`port` at most
//! 9000, `host` not `old.example`, `status.ready` at most 1). For conversion `None`, a
//! root rule of `v2` on the object's `apiVersion`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kplane_types::ClusterName;
use serde_json::{json, Value};

use crate::error::ApiError;
use crate::options::WriteParams;
use crate::patch::{Document, PatchType};
use crate::testing::{create_namespace, fixture_with_admission, target, Fixture};
use crate::webhooks::fake::FakeTransport;
use crate::{Registry, Target};

const CRD: &str = "widgets.example.com";

fn status_schema(ready: Value) -> Value {
    json!({"type": "object", "properties": {"ready": ready}})
}

/// `v1`'s schema: `hostPort` must not start with `bad` (a rule `v2` does not have).
fn v1_schema() -> Value {
    json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {"hostPort": {"type": "string"}},
            "x-kubernetes-validations": [{"rule": "!self.hostPort.startsWith('bad')", "message": "no bad hosts"}]},
        "status": status_schema(json!({"type": "integer"}))}})
}

/// `v2`'s schema: `port` at most 9000, `host` not `old.example`, `status.ready` at most 1.
fn v2_schema() -> Value {
    json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "host": {"type": "string",
                "x-kubernetes-validations": [{"rule": "self != 'old.example'", "message": "no old hosts"}]},
            "port": {"type": "integer", "maximum": 9000}}},
        "status": status_schema(json!({"type": "integer", "maximum": 1}))}})
}

fn crd(strategy: Value, v1: Value, v2: Value) -> Value {
    let version = |name: &str, storage: bool, schema: Value| {
        json!({"name": name, "served": true, "storage": storage,
            "schema": {"openAPIV3Schema": schema}, "subresources": {"status": {}}})
    };
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": CRD},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
            "versions": [version("v1", true, v1), version("v2", false, v2)],
            "conversion": strategy}})
}

fn webhook() -> Value {
    json!({"strategy": "Webhook", "webhook": {
        "clientConfig": {"url": "https://convert.test/"}, "conversionReviewVersions": ["v1"]}})
}

/// One object converted to `desired`: `hostPort` ↔ `host` and `port`; the rest kept.
fn convert(obj: &Value, desired: &str) -> Value {
    let mut out = obj.clone();
    out["apiVersion"] = json!(desired);
    let spec = obj.get("spec").cloned().unwrap_or_else(|| json!({}));
    out["spec"] = if desired.ends_with("/v2") {
        let hp = spec["hostPort"].as_str().unwrap_or("");
        let (host, port) = hp.rsplit_once(':').unwrap_or((hp, "0"));
        json!({"host": host, "port": port.parse::<i64>().unwrap_or(0)})
    } else {
        let host = spec["host"].as_str().unwrap_or("");
        json!({"hostPort": format!("{host}:{}", spec["port"].as_i64().unwrap_or(0))})
    };
    out
}

/// A registry whose conversion webhook converts Widgets, with their CRD (`strategy`).
async fn setup(strategy: Value, v1: Value, v2: Value) -> (Fixture, std::sync::Arc<FakeTransport>) {
    let fake = FakeTransport::new(|_, review: Value| async move {
        let req = &review["request"];
        let desired = req["desiredAPIVersion"].as_str().unwrap_or("");
        let objects = req["objects"].as_array().cloned().unwrap_or_default();
        let converted: Vec<Value> = objects.iter().map(|o| convert(o, desired)).collect();
        Ok(
            json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "ConversionReview",
            "response": {"uid": req["uid"], "result": {"status": "Success"},
                "convertedObjects": converted}}),
        )
    });
    let f = fixture_with_admission(fake.admission()).await;
    let reg = &f.reg;
    let crds = target(
        reg,
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        None,
    );
    reg.create(&crds, crd(strategy, v1, v2), &WriteParams::default())
        .await
        .unwrap();
    create_namespace(reg, "ns").await;
    (f, fake)
}

async fn widgets(reg: &Registry, version: &str) -> Target {
    let cat = reg.cluster_catalog(&ClusterName::root()).await.unwrap();
    let rt = cat.get("example.com", version, "widgets").cloned().unwrap();
    Target::new(&ClusterName::root(), rt, Some("ns".into()))
}

fn v1_widget(name: &str, host_port: &str) -> Value {
    json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name, "namespace": "ns"}, "spec": {"hostPort": host_port}})
}

fn v2_widget(name: &str, host: &str, port: i64) -> Value {
    json!({"apiVersion": "example.com/v2", "kind": "Widget",
        "metadata": {"name": name, "namespace": "ns"}, "spec": {"host": host, "port": port}})
}

/// The 422's message and its causes as `field: message`.
fn invalid(e: &ApiError) -> (String, Vec<String>) {
    assert_eq!(e.code(), 422, "{e:?}");
    let causes =
        e.0.details
            .iter()
            .flat_map(|d| d.causes.iter())
            .map(|c| format!("{}: {}", c.field, c.message))
            .collect();
    (e.0.message.clone(), causes)
}

/// The stored object, as it is in storage.
async fn stored(reg: &Registry, name: &str) -> Value {
    let kv = reg
        .storage
        .get(&kplane_storage::Key::new(
            ClusterName::root(),
            "example.com/widgets",
            "ns",
            name,
        ))
        .await
        .unwrap()
        .unwrap();
    serde_json::from_slice(&kv.value).unwrap()
}

async fn get(reg: &Registry, t: &Target, name: &str) -> Value {
    serde_json::from_slice(&reg.get(t, name).await.unwrap()).unwrap()
}

const PORT_TOO_BIG: &str =
    "spec.port: Invalid value: 9090: spec.port in body should be less than or equal to 9000";

#[tokio::test]
async fn a_create_in_another_version_is_validated_against_that_versions_schema() {
    let (f, _fake) = setup(webhook(), v1_schema(), v2_schema()).await;
    let reg = &f.reg;
    let w = WriteParams::default();
    let v2 = widgets(reg, "v2").await;
    // v2's maximum refuses what v1 (no maximum) would take
    let e = reg
        .create(&v2, v2_widget("a", "a.example", 9090), &w)
        .await
        .unwrap_err();
    assert_eq!(
        invalid(&e),
        (
            format!("Widget.example.com \"a\" is invalid: {PORT_TOO_BIG}"),
            vec![PORT_TOO_BIG.to_string()]
        )
    );
    // v1's rule is not v2's: a host v1 refuses is taken in v2, and stored in v1
    reg.create(&v2, v2_widget("b", "bad.example", 80), &w)
        .await
        .unwrap();
    let b = stored(reg, "b").await;
    assert_eq!(b["apiVersion"], "example.com/v1");
    assert_eq!(b["spec"], json!({"hostPort": "bad.example:80"}));
    // v1's own writes keep v1's rule
    let v1 = widgets(reg, "v1").await;
    let e = reg
        .create(&v1, v1_widget("c", "bad.example:80"), &w)
        .await
        .unwrap_err();
    assert_eq!(
        invalid(&e).1,
        vec!["spec: Invalid value: \"object\": no bad hosts"]
    );
    reg.create(&v1, v1_widget("d", "d.example:9090"), &w)
        .await
        .unwrap();
}

#[tokio::test]
async fn updates_patches_and_applies_in_another_version_are_validated_in_it() {
    let (f, _fake) = setup(webhook(), v1_schema(), v2_schema()).await;
    let reg = &f.reg;
    let w = WriteParams::default();
    let v2 = widgets(reg, "v2").await;
    reg.create(&v2, v2_widget("a", "a.example", 80), &w)
        .await
        .unwrap();
    // PUT
    let mut obj = get(reg, &v2, "a").await;
    obj["spec"]["port"] = json!(9090);
    let e = reg.update(&v2, "a", None, obj, &w).await.unwrap_err();
    assert_eq!(invalid(&e).1, vec![PORT_TOO_BIG]);
    let mut obj = get(reg, &v2, "a").await;
    obj["spec"]["host"] = json!("bad.example");
    reg.update(&v2, "a", None, obj, &w).await.unwrap();
    assert_eq!(
        stored(reg, "a").await["spec"],
        json!({"hostPort": "bad.example:80"})
    );
    // merge patch and JSON patch
    let merge = Document::new(json!({"spec": {"port": 9090}}));
    let e = reg
        .patch(&v2, "a", None, PatchType::Merge, merge, &w)
        .await
        .unwrap_err();
    assert_eq!(invalid(&e).1, vec![PORT_TOO_BIG]);
    let json_patch = Document::new(json!([{"op": "replace", "path": "/spec/port", "value": 9090}]));
    let e = reg
        .patch(&v2, "a", None, PatchType::Json, json_patch, &w)
        .await
        .unwrap_err();
    assert_eq!(invalid(&e).1, vec![PORT_TOO_BIG]);
    let merge = Document::new(json!({"spec": {"port": 8080}}));
    reg.patch(&v2, "a", None, PatchType::Merge, merge, &w)
        .await
        .unwrap();
    // server-side apply
    let applier = WriteParams {
        field_manager: Some("test".into()),
        force: Some(true),
        ..WriteParams::default()
    };
    let e = reg
        .apply(
            &v2,
            "a",
            None,
            Document::new(v2_widget("a", "bad.example", 9090)),
            &applier,
        )
        .await
        .unwrap_err();
    assert_eq!(invalid(&e).1, vec![PORT_TOO_BIG]);
    reg.apply(
        &v2,
        "a",
        None,
        Document::new(v2_widget("a", "bad.example", 8000)),
        &applier,
    )
    .await
    .unwrap();
    assert_eq!(
        stored(reg, "a").await["spec"],
        json!({"hostPort": "bad.example:8000"})
    );
}

#[tokio::test]
async fn an_update_in_another_version_ratchets_against_the_old_object_in_that_version() {
    let (f, _fake) = setup(webhook(), v1_schema(), v2_schema()).await;
    let reg = &f.reg;
    let w = WriteParams::default();
    // valid in v1, invalid in v2 on both counts
    let v1 = widgets(reg, "v1").await;
    reg.create(&v1, v1_widget("a", "old.example:9090"), &w)
        .await
        .unwrap();
    let v2 = widgets(reg, "v2").await;
    // unchanged values ratchet: no error, the CEL failure as a warning
    let mut obj = get(reg, &v2, "a").await;
    assert_eq!(obj["spec"], json!({"host": "old.example", "port": 9090}));
    obj["metadata"]["labels"] = json!({"x": "y"});
    let warned = WriteParams::default();
    reg.update(&v2, "a", None, obj, &warned).await.unwrap();
    assert_eq!(
        warned.warnings.texts(),
        vec!["spec.host: Invalid value: \"string\": no old hosts"]
    );
    // a changed port is held to v2's maximum; the unchanged host still ratchets
    let merge = Document::new(json!({"spec": {"port": 9500}}));
    let e = reg
        .patch(&v2, "a", None, PatchType::Merge, merge, &w)
        .await
        .unwrap_err();
    assert_eq!(
        invalid(&e).1,
        vec!["spec.port: Invalid value: 9500: spec.port in body should be less than or equal to 9000"]
    );
    // a changed host is held to v2's rule
    let merge = Document::new(json!({"spec": {"host": "new.example"}}));
    reg.patch(&v2, "a", None, PatchType::Merge, merge, &w)
        .await
        .unwrap();
    let merge = Document::new(json!({"spec": {"host": "old.example"}}));
    let e = reg
        .patch(&v2, "a", None, PatchType::Merge, merge, &w)
        .await
        .unwrap_err();
    assert_eq!(
        invalid(&e).1,
        vec!["spec.host: Invalid value: \"string\": no old hosts"]
    );
}

#[tokio::test]
async fn a_status_write_in_another_version_is_validated_in_it() {
    let (f, _fake) = setup(webhook(), v1_schema(), v2_schema()).await;
    let reg = &f.reg;
    let w = WriteParams::default();
    let v1 = widgets(reg, "v1").await;
    reg.create(&v1, v1_widget("a", "a.example:80"), &w)
        .await
        .unwrap();
    let v2 = widgets(reg, "v2").await;
    let mut obj = get(reg, &v2, "a").await;
    obj["status"] = json!({"ready": 2});
    let e = reg
        .update(&v2, "a", Some("status"), obj.clone(), &w)
        .await
        .unwrap_err();
    assert_eq!(
        invalid(&e).1,
        vec!["status.ready: Invalid value: 2: status.ready in body should be less than or equal to 1"]
    );
    // v1 has no such maximum
    let mut in_v1 = get(reg, &v1, "a").await;
    in_v1["status"] = json!({"ready": 2});
    reg.update(&v1, "a", Some("status"), in_v1, &w)
        .await
        .unwrap();
    // in v2 the unchanged status ratchets, a changed one does not
    let merge = Document::new(json!({"metadata": {"labels": {"x": "y"}}}));
    reg.patch(&v2, "a", Some("status"), PatchType::Merge, merge, &w)
        .await
        .unwrap();
    let merge = Document::new(json!({"status": {"ready": 3}}));
    let e = reg
        .patch(&v2, "a", Some("status"), PatchType::Merge, merge, &w)
        .await
        .unwrap_err();
    assert_eq!(
        invalid(&e).1,
        vec!["status.ready: Invalid value: 3: status.ready in body should be less than or equal to 1"]
    );
    assert_eq!(stored(reg, "a").await["status"], json!({"ready": 2}));
}

/// With conversion `None` the object is relabelled, and validated under the request's
/// apiVersion with the request version's rules: a root rule of v2 on `apiVersion` holds
/// for writes in v2, and v2's limit on `size` applies to them alone.
#[tokio::test]
async fn conversion_none_validates_the_object_in_the_request_version() {
    let schema = |version: &str, size_rule: Option<&str>| {
        let mut spec = json!({"type": "object", "properties": {"size": {"type": "integer"}}});
        if let Some(rule) = size_rule {
            spec["x-kubernetes-validations"] = json!([{"rule": rule}]);
        }
        json!({"type": "object", "properties": {"spec": spec},
            "x-kubernetes-validations": [{"rule": format!("self.apiVersion == 'example.com/{version}'")}]})
    };
    let (f, fake) = setup(
        json!({"strategy": "None"}),
        schema("v1", None),
        schema("v2", Some("self.size < 5")),
    )
    .await;
    let reg = &f.reg;
    let w = WriteParams::default();
    let widget = |version: &str, name: &str, size: i64| {
        json!({"apiVersion": format!("example.com/{version}"), "kind": "Widget",
            "metadata": {"name": name, "namespace": "ns"}, "spec": {"size": size}})
    };
    let v2 = widgets(reg, "v2").await;
    reg.create(&v2, widget("v2", "a", 1), &w).await.unwrap();
    assert_eq!(stored(reg, "a").await["apiVersion"], "example.com/v1");
    let e = reg.create(&v2, widget("v2", "b", 7), &w).await.unwrap_err();
    assert_eq!(
        invalid(&e).1,
        vec!["spec: Invalid value: \"object\": failed rule: self.size < 5"]
    );
    // v1 has no limit on size
    let v1 = widgets(reg, "v1").await;
    reg.create(&v1, widget("v1", "b", 7), &w).await.unwrap();
    // updated in v2: the stored object is read in v2; its unchanged size ratchets the rule
    let mut obj = get(reg, &v2, "b").await;
    obj["metadata"]["labels"] = json!({"x": "y"});
    let warned = WriteParams::default();
    reg.update(&v2, "b", None, obj, &warned).await.unwrap();
    assert_eq!(
        warned.warnings.texts(),
        vec!["spec: Invalid value: \"object\": failed rule: self.size < 5"]
    );
    let merge = Document::new(json!({"spec": {"size": 2}}));
    reg.patch(&v2, "b", None, PatchType::Merge, merge, &w)
        .await
        .unwrap();
    assert_eq!(stored(reg, "b").await["spec"], json!({"size": 2}));
    assert_eq!(fake.urls(), Vec::<String>::new());
}

/// Writes in the storage version call no webhook; a patch in another version converts the
/// current object to it once (validation reuses what the patch read), the result to the
/// storage version, and the stored object back for the answer.
#[tokio::test]
async fn conversions_of_a_write() {
    let (f, fake) = setup(webhook(), v1_schema(), v2_schema()).await;
    let reg = &f.reg;
    let w = WriteParams::default();
    let v1 = widgets(reg, "v1").await;
    reg.create(&v1, v1_widget("a", "a.example:80"), &w)
        .await
        .unwrap();
    let merge = Document::new(json!({"spec": {"hostPort": "a.example:81"}}));
    reg.patch(&v1, "a", None, PatchType::Merge, merge, &w)
        .await
        .unwrap();
    let mut obj = get(reg, &v1, "a").await;
    obj["spec"]["hostPort"] = json!("a.example:82");
    reg.update(&v1, "a", None, obj, &w).await.unwrap();
    assert_eq!(fake.urls().len(), 0);
    let desired = |fake: &FakeTransport| -> Vec<String> {
        let calls = fake.calls.lock().unwrap();
        calls
            .iter()
            .map(|(_, r)| {
                r["request"]["desiredAPIVersion"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    };
    let v2 = widgets(reg, "v2").await;
    let merge = Document::new(json!({"spec": {"port": 83}}));
    reg.patch(&v2, "a", None, PatchType::Merge, merge, &w)
        .await
        .unwrap();
    assert_eq!(
        desired(&fake),
        ["example.com/v2", "example.com/v1", "example.com/v2"]
    );
    assert_eq!(
        stored(reg, "a").await["spec"],
        json!({"hostPort": "a.example:83"})
    );
}
