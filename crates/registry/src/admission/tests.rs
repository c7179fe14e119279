//! Tests of the admission chain: where it runs in each verb, what plugins see, what a
//! refusal leaves behind, and the recommended chain's NamespaceLifecycle.
#![allow(clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use kplane_types::{CauseType, StatusReason};
use serde_json::{json, Value};

use super::*;
use crate::error::{ApiError, ApiResult};
use crate::options::{ListParams, WriteParams};
use crate::patch::{Document, PatchType};
use crate::testing::{self, create_namespace, fixture_with_admission, target};
use crate::Registry;
use crate::{DeleteOutcome, DeleteParams, Target};

/// What the test plugins were called with, one line per call.
type Log = Arc<Mutex<Vec<String>>>;

fn line(phase: &str, a: &Attributes<'_>, obj: Option<&Value>) -> String {
    let label = obj
        .and_then(|o| o.pointer("/metadata/labels/admitted"))
        .and_then(Value::as_str)
        .unwrap_or("-");
    let prepared = obj.is_some_and(|o| o.pointer("/metadata/uid").is_some());
    format!(
        "{phase} {} {}/{} sub={} old={} user={} dry={} label={label} prepared={prepared}",
        a.operation.as_str(),
        a.namespace,
        a.name,
        a.subresource.unwrap_or("-"),
        a.old.is_some(),
        a.user.map_or("-", |u| u.username.as_str()),
        a.dry_run,
    )
}

/// Labels every created or updated object `admitted: yes`.
#[derive(Debug)]
struct AddLabel(Log);

#[async_trait::async_trait]
impl MutatingAdmission<Registry> for AddLabel {
    fn name(&self) -> &'static str {
        "AddLabel"
    }

    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }

    async fn admit(
        &self,
        _reg: &Registry,
        a: &Attributes<'_>,
        obj: Option<&mut Value>,
    ) -> ApiResult<()> {
        self.0
            .lock()
            .unwrap()
            .push(line("mutate", a, obj.as_deref()));
        if let Some(obj) = obj {
            let meta = obj["metadata"].as_object_mut().unwrap();
            let labels = meta.entry("labels").or_insert_with(|| json!({}));
            labels["admitted"] = json!("yes");
        }
        Ok(())
    }
}

/// Adds a label no object may carry.
#[derive(Debug)]
struct BadLabel;

#[async_trait::async_trait]
impl MutatingAdmission<Registry> for BadLabel {
    fn name(&self) -> &'static str {
        "BadLabel"
    }

    fn handles(&self, op: Operation) -> bool {
        op == Operation::Create
    }

    async fn admit(
        &self,
        _reg: &Registry,
        a: &Attributes<'_>,
        obj: Option<&mut Value>,
    ) -> ApiResult<()> {
        match obj {
            Some(obj) if a.resource.plural == "configmaps" => {
                obj["metadata"]["labels"] = json!({"not a key!": "x"});
            }
            _ => {}
        }
        Ok(())
    }
}

/// Refuses writes of objects labelled `deny: "true"` and deletes of objects labelled
/// `protect: "true"`, and records every call.
#[derive(Debug)]
struct Deny(Log);

#[async_trait::async_trait]
impl ValidatingAdmission<Registry> for Deny {
    fn name(&self) -> &'static str {
        "Deny"
    }

    fn handles(&self, _op: Operation) -> bool {
        true
    }

    async fn validate(
        &self,
        _reg: &Registry,
        a: &Attributes<'_>,
        obj: Option<&Value>,
    ) -> ApiResult<()> {
        self.0.lock().unwrap().push(line("validate", a, obj));
        let label = |o: &Value, l: &str| o["metadata"]["labels"][l] == "true";
        let denied = match (obj, a.old) {
            (Some(new), _) => label(new, "deny"),
            (None, Some(old)) => label(old, "protect"),
            (None, None) => false,
        };
        if denied {
            return Err(forbidden(a, "denied by the test plugin"));
        }
        Ok(())
    }
}

fn log() -> Log {
    Arc::new(Mutex::new(Vec::new()))
}

fn taken(log: &Log) -> Vec<String> {
    std::mem::take(&mut *log.lock().unwrap())
}

fn cm(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "labels": labels}, "data": {"k": "v"}})
}

fn as_user(name: &str) -> WriteParams {
    WriteParams {
        user: Some(UserInfo {
            username: name.into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

async fn stored(reg: &Registry, t: &Target, name: &str) -> Option<Value> {
    match reg.get(t, name).await {
        Ok(b) => Some(serde_json::from_slice(&b).unwrap()),
        Err(e) if e.code() == 404 => None,
        Err(e) => panic!("get {name}: {e:?}"),
    }
}

fn labels(obj: &Value) -> Value {
    obj["metadata"]["labels"].clone()
}

fn assert_forbidden(e: &ApiError, name: &str) {
    assert_eq!(e.code(), 403, "{e:?}");
    assert_eq!(e.0.reason, StatusReason::Forbidden);
    assert_eq!(
        e.0.message,
        format!("configmaps \"{name}\" is forbidden: denied by the test plugin")
    );
    let d = e.0.details.as_ref().unwrap();
    assert_eq!((d.name.as_str(), d.kind.as_str()), (name, "configmaps"));
}

#[tokio::test]
async fn mutations_are_stored_by_create_update_patch_and_apply() {
    let seen = log();
    let f =
        fixture_with_admission(Admission::none().with_mutating(Arc::new(AddLabel(seen.clone()))))
            .await;
    let reg = &f.reg;
    let t = create_namespace(reg, "ns").await;
    taken(&seen);

    reg.create(&t, cm("a", json!({"app": "x"})), &as_user("alice"))
        .await
        .unwrap();
    assert_eq!(
        labels(&stored(reg, &t, "a").await.unwrap()),
        json!({"app": "x", "admitted": "yes"})
    );
    // An update without the label gets it back.
    reg.update(&t, "a", None, cm("a", json!({"app": "y"})), &as_user("bob"))
        .await
        .unwrap();
    assert_eq!(
        labels(&stored(reg, &t, "a").await.unwrap()),
        json!({"app": "y", "admitted": "yes"})
    );
    // So does a patch removing it.
    let patch = Document::new(json!({"metadata": {"labels": {"admitted": null}}}));
    reg.patch(
        &t,
        "a",
        None,
        PatchType::Merge,
        patch,
        &WriteParams::default(),
    )
    .await
    .unwrap();
    assert_eq!(
        labels(&stored(reg, &t, "a").await.unwrap())["admitted"],
        "yes"
    );
    // And a server-side apply creating an object.
    let w = WriteParams {
        field_manager: Some("tester".into()),
        ..WriteParams::default()
    };
    let applied = Document::new(json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "b", "namespace": "ns"}, "data": {"k": "v"}}));
    let (_, created) = reg.apply(&t, "b", None, applied, &w).await.unwrap();
    assert!(created);
    assert_eq!(
        labels(&stored(reg, &t, "b").await.unwrap())["admitted"],
        "yes"
    );

    // Mutating plugins see the request before the strategy prepares it (no uid yet on
    // create), with the requester and, on update, the stored object.
    assert_eq!(
        taken(&seen),
        [
            "mutate CREATE ns/a sub=- old=false user=alice dry=false label=- prepared=false",
            "mutate UPDATE ns/a sub=- old=true user=bob dry=false label=- prepared=false",
            "mutate UPDATE ns/a sub=- old=true user=- dry=false label=- prepared=true",
            "mutate CREATE ns/b sub=- old=false user=- dry=false label=- prepared=false",
        ]
    );
}

#[tokio::test]
async fn validating_plugins_see_the_mutated_and_validated_object_and_refusals_store_nothing() {
    let seen = log();
    let f = fixture_with_admission(
        Admission::none()
            .with_mutating(Arc::new(AddLabel(seen.clone())))
            .with_validating(Arc::new(Deny(seen.clone()))),
    )
    .await;
    let reg = &f.reg;
    let t = create_namespace(reg, "ns").await;
    taken(&seen);

    // Refused on create: nothing stored.
    let e = reg
        .create(&t, cm("no", json!({"deny": "true"})), &as_user("alice"))
        .await
        .unwrap_err();
    assert_forbidden(&e, "no");
    assert!(stored(reg, &t, "no").await.is_none());
    assert_eq!(
        taken(&seen),
        [
            "mutate CREATE ns/no sub=- old=false user=alice dry=false label=- prepared=false",
            // After mutation and after the strategy prepared the object (uid set).
            "validate CREATE ns/no sub=- old=false user=alice dry=false label=yes prepared=true",
        ]
    );

    // Refused on update: the stored object is unchanged.
    reg.create(&t, cm("yes", json!({})), &WriteParams::default())
        .await
        .unwrap();
    let before = stored(reg, &t, "yes").await.unwrap();
    let e = reg
        .update(
            &t,
            "yes",
            None,
            cm("yes", json!({"deny": "true"})),
            &WriteParams::default(),
        )
        .await
        .unwrap_err();
    assert_forbidden(&e, "yes");
    assert_eq!(stored(reg, &t, "yes").await.unwrap(), before);
    let patch = Document::new(json!({"metadata": {"labels": {"deny": "true"}}}));
    let e = reg
        .patch(
            &t,
            "yes",
            None,
            PatchType::Merge,
            patch,
            &WriteParams::default(),
        )
        .await
        .unwrap_err();
    assert_forbidden(&e, "yes");
    assert_eq!(stored(reg, &t, "yes").await.unwrap(), before);
    taken(&seen);

    // An invalid object is refused by validation before validating admission runs.
    let invalid = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "bad"}, "data": {"not a key!": "v"}});
    let e = reg
        .create(&t, invalid, &WriteParams::default())
        .await
        .unwrap_err();
    assert_eq!(e.code(), 422, "{e:?}");
    let calls = taken(&seen);
    assert!(calls.iter().all(|c| c.starts_with("mutate")), "{calls:?}");
}

#[tokio::test]
async fn what_a_mutating_plugin_does_is_validated() {
    let f = fixture_with_admission(Admission::none().with_mutating(Arc::new(BadLabel))).await;
    let reg = &f.reg;
    let t = create_namespace(reg, "ns").await;
    let e = reg
        .create(&t, cm("a", json!({})), &WriteParams::default())
        .await
        .unwrap_err();
    assert_eq!(e.code(), 422, "{e:?}");
    assert!(e.0.message.contains("metadata.labels"), "{}", e.0.message);
    assert!(stored(reg, &t, "a").await.is_none());
}

#[tokio::test]
async fn dry_run_writes_pass_the_chain_and_store_nothing() {
    let seen = log();
    let f = fixture_with_admission(
        Admission::none()
            .with_mutating(Arc::new(AddLabel(seen.clone())))
            .with_validating(Arc::new(Deny(seen.clone()))),
    )
    .await;
    let reg = &f.reg;
    let t = create_namespace(reg, "ns").await;
    let dry = WriteParams {
        dry_run: true,
        ..WriteParams::default()
    };
    taken(&seen);

    let out = reg.create(&t, cm("a", json!({})), &dry).await.unwrap();
    let out: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(labels(&out)["admitted"], "yes");
    assert!(stored(reg, &t, "a").await.is_none());
    // A dry-run the chain refuses is refused.
    let e = reg
        .create(&t, cm("b", json!({"deny": "true"})), &dry)
        .await
        .unwrap_err();
    assert_forbidden(&e, "b");

    reg.create(&t, cm("c", json!({})), &WriteParams::default())
        .await
        .unwrap();
    let before = stored(reg, &t, "c").await.unwrap();
    reg.update(&t, "c", None, cm("c", json!({"x": "y"})), &dry)
        .await
        .unwrap();
    let d = DeleteParams {
        dry_run: true,
        ..DeleteParams::default()
    };
    reg.delete(&t, "c", &d).await.unwrap();
    assert_eq!(stored(reg, &t, "c").await.unwrap(), before);
    let calls = taken(&seen);
    let dry_calls: Vec<&String> = calls.iter().filter(|c| c.contains("dry=true")).collect();
    assert_eq!(
        dry_calls,
        [
            "mutate CREATE ns/a sub=- old=false user=- dry=true label=- prepared=false",
            "validate CREATE ns/a sub=- old=false user=- dry=true label=yes prepared=true",
            "mutate CREATE ns/b sub=- old=false user=- dry=true label=- prepared=false",
            "validate CREATE ns/b sub=- old=false user=- dry=true label=yes prepared=true",
            "mutate UPDATE ns/c sub=- old=true user=- dry=true label=- prepared=false",
            "validate UPDATE ns/c sub=- old=true user=- dry=true label=yes prepared=true",
            "validate DELETE ns/c sub=- old=true user=- dry=true label=- prepared=false",
        ]
    );
}

#[tokio::test]
async fn deletes_and_deletecollections_pass_the_chain() {
    let seen = log();
    let f = fixture_with_admission(Admission::none().with_validating(Arc::new(Deny(seen.clone()))))
        .await;
    let reg = &f.reg;
    let t = create_namespace(reg, "ns").await;
    let w = WriteParams::default();
    for (name, protect) in [("a", "false"), ("b", "true"), ("c", "false")] {
        reg.create(&t, cm(name, json!({"protect": protect, "set": "s"})), &w)
            .await
            .unwrap();
    }
    taken(&seen);

    let e = reg
        .delete(&t, "b", &DeleteParams::default())
        .await
        .unwrap_err();
    assert_forbidden(&e, "b");
    assert!(stored(reg, &t, "b").await.is_some());
    let d = DeleteParams {
        user: Some(UserInfo {
            username: "carol".into(),
            ..Default::default()
        }),
        ..DeleteParams::default()
    };
    assert!(matches!(
        reg.delete(&t, "a", &d).await.unwrap(),
        DeleteOutcome::Deleted(_)
    ));
    assert_eq!(
        taken(&seen),
        [
            "validate DELETE ns/b sub=- old=true user=- dry=false label=- prepared=false",
            "validate DELETE ns/a sub=- old=true user=carol dry=false label=- prepared=false",
        ]
    );

    // A deletecollection (storage batches) asks for each object; the refused one stays
    // and the refusal is the answer.
    let p = ListParams {
        label_selector: Some("set=s".into()),
        ..ListParams::default()
    };
    let e = reg
        .delete_collection(&t, &p, &DeleteParams::default())
        .await
        .unwrap_err();
    assert_forbidden(&e, "b");
    assert!(stored(reg, &t, "b").await.is_some());
    let calls = taken(&seen);
    assert!(
        calls.contains(
            &"validate DELETE ns/b sub=- old=true user=- dry=false label=- prepared=false"
                .to_string()
        ),
        "{calls:?}"
    );
}

#[tokio::test]
async fn subresource_writes_name_their_subresource() {
    let seen = log();
    let f = fixture_with_admission(Admission::none().with_validating(Arc::new(Deny(seen.clone()))))
        .await;
    let reg = &f.reg;
    create_namespace(reg, "ns").await;
    let nst = target(reg, "", "namespaces", None);
    let mut ns: Value = serde_json::from_slice(&reg.get(&nst, "ns").await.unwrap()).unwrap();
    ns["status"]["phase"] = json!("Active");
    taken(&seen);
    reg.update(&nst, "ns", Some("status"), ns, &WriteParams::default())
        .await
        .unwrap();
    assert_eq!(
        taken(&seen),
        ["validate UPDATE /ns sub=status old=true user=- dry=false label=- prepared=true"]
    );
}

#[tokio::test]
async fn namespace_lifecycle_guards_new_content_and_the_default_namespaces() {
    let f = testing::fixture().await;
    let reg = &f.reg;
    assert_eq!(
        reg.admission().plugin_names(),
        [
            "NamespaceLifecycle",
            "PodReflection",
            "WorkspaceOwner",
            "SyncAssignment",
            "RBACEscalation",
            "SyncerScope",
            "ResourceQuota"
        ]
    );
    let w = WriteParams::default();

    // Nothing is created in a namespace that does not exist.
    let missing = target(reg, "", "configmaps", Some("missing"));
    let e = reg
        .create(&missing, cm("a", json!({})), &w)
        .await
        .unwrap_err();
    assert_eq!(e.code(), 404, "{e:?}");

    // Nor in one being terminated (no namespace worker runs here: it stays Terminating).
    let t = create_namespace(reg, "going").await;
    let nst = target(reg, "", "namespaces", None);
    reg.delete(&nst, "going", &DeleteParams::default())
        .await
        .unwrap();
    let e = reg.create(&t, cm("a", json!({})), &w).await.unwrap_err();
    assert_eq!(e.code(), 403, "{e:?}");
    assert_eq!(
        e.0.message,
        "configmaps \"a\" is forbidden: unable to create new content in namespace going because it is being terminated"
    );
    let causes = &e.0.details.as_ref().unwrap().causes;
    assert_eq!(causes[0].reason, CauseType::NamespaceTerminating);

    // The default namespaces may not be deleted, not even in a dry run.
    for (name, dry_run) in [
        ("default", false),
        ("kube-system", true),
        ("kube-public", false),
    ] {
        let d = DeleteParams {
            dry_run,
            ..DeleteParams::default()
        };
        let e = reg.delete(&nst, name, &d).await.unwrap_err();
        assert_eq!(e.code(), 403, "{e:?}");
        assert_eq!(
            e.0.message,
            format!("namespaces \"{name}\" is forbidden: this namespace may not be deleted")
        );
    }
    assert!(stored(reg, &nst, "default").await.is_some());
}

#[tokio::test]
async fn without_namespace_lifecycle_the_write_path_does_not_check_namespaces() {
    let f = fixture_with_admission(Admission::none()).await;
    let reg = &f.reg;
    let missing = target(reg, "", "configmaps", Some("missing"));
    reg.create(&missing, cm("a", json!({})), &WriteParams::default())
        .await
        .unwrap();
    assert!(stored(reg, &missing, "a").await.is_some());
}

#[test]
fn plugins_can_be_disabled_by_name_and_unknown_names_are_refused() {
    let chain = Admission::recommended()
        .without(&["SyncAssignment".to_string(), "SyncerScope".to_string()])
        .unwrap();
    let mut expected = Admission::recommended().plugin_names();
    expected.retain(|n| *n != "SyncAssignment" && *n != "SyncerScope");
    assert_eq!(chain.plugin_names(), expected);
    assert!(expected.contains(&"NamespaceLifecycle") && expected.len() >= 3);
    let e = Admission::recommended()
        .without(&["NoSuchPlugin".to_string()])
        .unwrap_err();
    assert!(e.starts_with("NoSuchPlugin is not an admission plugin of this server; the plugins are NamespaceLifecycle, "), "{e}");
    assert_eq!(
        Admission::recommended()
            .without(&[])
            .unwrap()
            .plugin_names(),
        Admission::recommended().plugin_names()
    );
}
