//! The body's uid through the registry's verbs (create, update, update-as-create, apply),
//! as kube-apiserver answers each.
#![allow(clippy::unwrap_used)]

use serde_json::{json, Value};

use crate::options::WriteParams;
use crate::patch::Document;
use crate::testing::{create_namespace, fixture, target};

fn cm(name: &str, uid: Option<&str>) -> Value {
    let mut o = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
    if let Some(u) = uid {
        o["metadata"]["uid"] = json!(u);
    }
    o
}

fn uid_of(b: &[u8]) -> String {
    let v: Value = serde_json::from_slice(b).unwrap();
    v["metadata"]["uid"].as_str().unwrap().to_string()
}

fn storage_conflict(name: &str, key: &str, uid: &str, stored: &str) -> String {
    format!("Operation cannot be fulfilled on configmaps \"{name}\": StorageError: invalid object, Code: 4, Key: {key}, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: {uid}, UID in object meta: {stored}")
}

#[tokio::test]
async fn create_replaces_the_body_s_uid() {
    let f = fixture().await;
    let t = create_namespace(&f.reg, "ns").await;
    let out = f
        .reg
        .create(&t, cm("a", Some("not-mine")), &WriteParams::default())
        .await
        .unwrap();
    let uid = uid_of(&out);
    assert!(!uid.is_empty() && uid != "not-mine", "{uid}");
}

#[tokio::test]
async fn put_of_a_missing_object_with_a_uid_is_a_precondition_conflict() {
    let f = fixture().await;
    let t = create_namespace(&f.reg, "ns").await;
    // ConfigMaps are not created on update: without a uid this is a 404; with one, the
    // precondition fails first.
    let w = WriteParams::default();
    let e = f
        .reg
        .update(&t, "a", None, cm("a", None), &w)
        .await
        .unwrap_err();
    assert_eq!(e.code(), 404);
    let e = f
        .reg
        .update(&t, "a", None, cm("a", Some("u1")), &w)
        .await
        .unwrap_err();
    assert_eq!(e.code(), 409);
    assert_eq!(
        e.0.message,
        storage_conflict("a", "/registry/configmaps/ns/a", "u1", "")
    );
    // Leases are created on update, but not with a uid.
    let leases = target(&f.reg, "coordination.k8s.io", "leases", Some("ns"));
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                       "metadata": {"name": "l", "uid": "u2"}});
    let e = f
        .reg
        .update(&leases, "l", None, lease, &w)
        .await
        .unwrap_err();
    assert_eq!(e.code(), 409);
    assert!(
        e.0.message.contains("Key: /registry/leases/ns/l,"),
        "{}",
        e.0.message
    );
    assert!(
        f.reg.get(&leases, "l").await.is_err(),
        "nothing was created"
    );
}

#[tokio::test]
async fn put_with_another_uid_is_a_precondition_conflict() {
    let f = fixture().await;
    let t = create_namespace(&f.reg, "ns").await;
    let w = WriteParams::default();
    let uid = uid_of(&f.reg.create(&t, cm("a", None), &w).await.unwrap());
    let e = f
        .reg
        .update(&t, "a", None, cm("a", Some("other")), &w)
        .await
        .unwrap_err();
    assert_eq!(e.code(), 409);
    assert_eq!(
        e.0.message,
        storage_conflict("a", "/registry/configmaps/ns/a", "other", &uid)
    );
    // The right uid (and none) pass.
    let mut same = cm("a", Some(&uid));
    same["data"] = json!({"k": "v"});
    f.reg.update(&t, "a", None, same, &w).await.unwrap();
    f.reg
        .update(&t, "a", None, cm("a", None), &w)
        .await
        .unwrap();
}

#[tokio::test]
async fn apply_creating_an_object_with_a_uid_is_a_uid_mismatch() {
    let f = fixture().await;
    let t = create_namespace(&f.reg, "ns").await;
    let w = WriteParams {
        field_manager: Some("m".into()),
        ..Default::default()
    };
    let e = f
        .reg
        .apply(&t, "a", None, Document::new(cm("a", Some("u1"))), &w)
        .await
        .unwrap_err();
    assert_eq!(e.code(), 409);
    assert_eq!(
        e.0.message,
        "Operation cannot be fulfilled on configmaps \"a\": uid mismatch: the provided object specified uid u1, and no existing object was found"
    );
    assert!(f.reg.get(&t, "a").await.is_err(), "nothing was created");
    // Applying with the live object's uid updates it.
    let (out, created) = f
        .reg
        .apply(&t, "a", None, Document::new(cm("a", None)), &w)
        .await
        .unwrap();
    assert!(created);
    let uid = uid_of(&out);
    let (_, created) = f
        .reg
        .apply(&t, "a", None, Document::new(cm("a", Some(&uid))), &w)
        .await
        .unwrap();
    assert!(!created);
}

/// An update cannot start a deletion nor change its grace period (`ValidateObjectMetaUpdate`):
/// a `deletionTimestamp` on an object that has none, or another
/// `deletionGracePeriodSeconds`, is 422 `field is immutable` with upstream's value
/// printing; once the object is being deleted, an update keeps its timestamp whatever the
/// body says and its grace period when the body leaves it out.
#[tokio::test]
async fn an_update_cannot_start_a_deletion_or_change_its_grace_period() {
    let f = fixture().await;
    let t = create_namespace(&f.reg, "ns").await;
    let mut obj = cm("d", None);
    obj["metadata"]["finalizers"] = json!(["example.com/hold"]);
    f.reg
        .create(&t, obj.clone(), &WriteParams::default())
        .await
        .unwrap();

    let mut starting = obj.clone();
    starting["metadata"]["deletionTimestamp"] = json!("2026-11-29T14:00:00.5+02:00");
    let e = f
        .reg
        .update(&t, "d", None, starting, &WriteParams::default())
        .await
        .unwrap_err();
    assert_eq!(e.code(), 422);
    assert_eq!(
        e.0.message,
        "ConfigMap \"d\" is invalid: metadata.deletionTimestamp: Invalid value: 2026-11-29 12:00:00.5 +0000 UTC: field is immutable"
    );
    let mut grace = obj.clone();
    grace["metadata"]["deletionGracePeriodSeconds"] = json!(30);
    let e = f
        .reg
        .update(&t, "d", None, grace, &WriteParams::default())
        .await
        .unwrap_err();
    assert_eq!(
        e.0.message,
        "ConfigMap \"d\" is invalid: metadata.deletionGracePeriodSeconds: Invalid value: 30: field is immutable"
    );
    let stored: Value = serde_json::from_slice(&f.reg.get(&t, "d").await.unwrap()).unwrap();
    assert!(stored["metadata"].get("deletionTimestamp").is_none());

    // being deleted (the finalizer holds it): the timestamp and grace period stay
    f.reg
        .delete(&t, "d", &crate::write::DeleteParams::default())
        .await
        .unwrap();
    let marked: Value = serde_json::from_slice(&f.reg.get(&t, "d").await.unwrap()).unwrap();
    let since = marked["metadata"]["deletionTimestamp"].clone();
    assert!(since.is_string(), "{marked}");
    let mut other = obj.clone();
    other["metadata"]["deletionTimestamp"] = json!("2030-01-01T00:00:00Z");
    other["data"] = json!({"k": "v"});
    let (out, _) = f
        .reg
        .update(&t, "d", None, other, &WriteParams::default())
        .await
        .unwrap();
    let out: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(out["metadata"]["deletionTimestamp"], since);
    assert_eq!(
        out["metadata"]["deletionGracePeriodSeconds"],
        marked["metadata"]["deletionGracePeriodSeconds"]
    );
    let mut regrace = obj;
    regrace["metadata"]["deletionGracePeriodSeconds"] = json!(5);
    let e = f
        .reg
        .update(&t, "d", None, regrace, &WriteParams::default())
        .await
        .unwrap_err();
    assert!(
        e.0.message
            .ends_with("metadata.deletionGracePeriodSeconds: Invalid value: 5: field is immutable"),
        "{}",
        e.0.message
    );
}
