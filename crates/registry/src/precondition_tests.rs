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
