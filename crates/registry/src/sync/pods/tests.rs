//! Who writes Pods, through the registry's verbs with the recommended admission chain:
//! `PodReflection` refuses users (admins included) on create, update, patch, apply and
//! `/status`, and lets them delete; kplane's own writes pass; the syncer identity creates
//! only its target's reflections owned by a Job assigned to it (`SyncerScope` and
//! `SyncChecks::check_pod_owner`), and updates and deletes only those.
#![allow(clippy::unwrap_used)]

use kplane_types::{ClusterName, StatusReason, UserInfo};
use serde_json::{json, Value};

use super::super::{TargetRef, TARGET_ANNOTATION};
use crate::options::WriteParams;
use crate::patch::{Document, PatchType};
use crate::testing::{self, create_namespace, target};
use crate::{DeleteParams, Registry, Target};

const REFUSAL: &str =
    "is forbidden: pods in kplane are reflections of pods on a host cluster, written by its syncer";

fn east() -> TargetRef {
    TargetRef {
        cluster: ClusterName::root(),
        name: "east".into(),
    }
}

fn admin() -> UserInfo {
    UserInfo {
        username: "admin".into(),
        groups: vec!["system:masters".into()],
        ..Default::default()
    }
}

fn as_user(user: Option<UserInfo>) -> WriteParams {
    WriteParams {
        user,
        field_manager: Some("test".into()),
        ..Default::default()
    }
}

fn delete_as(user: UserInfo) -> DeleteParams {
    DeleteParams {
        user: Some(user),
        ..Default::default()
    }
}

/// A pod reflecting one of `to`'s host pods, owned by Job `job` with `uid`.
fn reflection(name: &str, to: &str, job: &str, uid: &str) -> Value {
    json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name,
            "labels": {"job-name": job},
            "annotations": {TARGET_ANNOTATION: to},
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": job, "uid": uid,
                "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}})
}

/// Creates Job `name` assigned to `to` (a write of kplane's own); returns its uid.
async fn job(reg: &Registry, jobs: &Target, name: &str, to: &str) -> String {
    let j = json!({"apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": name, "annotations": {TARGET_ANNOTATION: to}},
        "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}}});
    let out = reg.create(jobs, j, &WriteParams::default()).await.unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    v["metadata"]["uid"].as_str().unwrap().to_string()
}

fn doc(v: Value) -> Document {
    Document::new(v)
}

#[tokio::test]
async fn users_may_not_write_pods_but_may_delete_them() {
    let f = testing::fixture().await;
    let reg = &f.reg;
    create_namespace(reg, "d").await;
    let pods = target(reg, "", "pods", Some("d"));
    let jobs = target(reg, "batch", "jobs", Some("d"));
    let uid = job(reg, &jobs, "j", "root/east").await;
    let admin_w = as_user(Some(admin()));
    // Create, with a name or a generated one: 403 before validation.
    let e = reg
        .create(&pods, reflection("p", "root/east", "j", &uid), &admin_w)
        .await
        .unwrap_err();
    assert_eq!(e.code(), 403);
    assert_eq!(e.0.reason, StatusReason::Forbidden);
    assert_eq!(e.0.message, format!("pods \"p\" {REFUSAL}"));
    let details = e.0.details.clone().unwrap();
    assert_eq!(
        (details.kind.as_str(), details.name.as_str()),
        ("pods", "p")
    );
    let invalid = json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"generateName": "x-"}, "spec": {"containers": []}});
    let e = reg.create(&pods, invalid, &admin_w).await.unwrap_err();
    assert_eq!(e.0.message, format!("pods {REFUSAL}"));
    // kplane's own write (no requester) passes.
    reg.create(
        &pods,
        reflection("p", "root/east", "j", &uid),
        &WriteParams::default(),
    )
    .await
    .unwrap();
    // Update, patch, apply, and the status: 403.
    let stored: Value = serde_json::from_slice(&reg.get(&pods, "p").await.unwrap()).unwrap();
    let mut changed = stored.clone();
    changed["metadata"]["labels"]["x"] = json!("y");
    let e = reg
        .update(&pods, "p", None, changed.clone(), &admin_w)
        .await
        .unwrap_err();
    assert_eq!(e.0.message, format!("pods \"p\" {REFUSAL}"));
    let e = reg
        .update(&pods, "p", Some("status"), changed, &admin_w)
        .await
        .unwrap_err();
    assert_eq!(e.code(), 403);
    for sub in [None, Some("status")] {
        let e = reg
            .patch(
                &pods,
                "p",
                sub,
                PatchType::Merge,
                doc(json!({"status": {"phase": "Running"}})),
                &admin_w,
            )
            .await
            .unwrap_err();
        assert_eq!(e.code(), 403, "{sub:?}");
    }
    let applied = doc(json!({"apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "p", "labels": {"mine": "yes"}}}));
    let e = reg
        .apply(&pods, "p", None, applied, &admin_w)
        .await
        .unwrap_err();
    assert_eq!(e.code(), 403);
    // A user without special groups too.
    let bob = UserInfo {
        username: "bob".into(),
        ..Default::default()
    };
    let e = reg
        .patch(
            &pods,
            "p",
            None,
            PatchType::Merge,
            doc(json!({"metadata": {"labels": {"a": "b"}}})),
            &as_user(Some(bob)),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), 403);
    // Delete is left to RBAC.
    reg.delete(&pods, "p", &delete_as(admin())).await.unwrap();
    assert_eq!(reg.get(&pods, "p").await.unwrap_err().code(), 404);
}

#[tokio::test]
async fn the_syncer_creates_only_reflections_owned_by_its_assigned_jobs() {
    let f = testing::fixture().await;
    let reg = &f.reg;
    create_namespace(reg, "d").await;
    let pods = target(reg, "", "pods", Some("d"));
    let jobs = target(reg, "batch", "jobs", Some("d"));
    let mine = job(reg, &jobs, "mine", "root/east").await;
    let theirs = job(reg, &jobs, "theirs", "root/west").await;
    let s = as_user(Some(east().user()));
    let refused = |pod: Value, why: &'static str| {
        let s = s.clone();
        let pods = pods.clone();
        async move {
            let e = reg.create(&pods, pod, &s).await.unwrap_err();
            assert_eq!(e.code(), 403, "{why}: {}", e.0.message);
            assert!(e.0.message.contains(why), "{}", e.0.message);
        }
    };
    refused(
        reflection("a", "root/west", "mine", &mine),
        "must carry the annotation sync.kplane.io/target: root/east",
    )
    .await;
    refused(
        reflection("a", "root/east", "theirs", &theirs),
        "the owner Job d/theirs (uid ",
    )
    .await;
    refused(
        reflection("a", "root/east", "mine", "another-uid"),
        "is not a Job assigned to the sync target root/east",
    )
    .await;
    refused(
        reflection("a", "root/east", "missing", &mine),
        "the owner Job d/missing",
    )
    .await;
    let mut not_controller = reflection("a", "root/east", "mine", &mine);
    not_controller["metadata"]["ownerReferences"][0]["controller"] = json!(false);
    refused(
        not_controller,
        "must have a controller ownerReference to a batch/v1 Job",
    )
    .await;
    // The owner check as the endpoint asks it.
    let e = reg
        .sync_checks()
        .check_pod_owner(
            &ClusterName::root(),
            "d",
            &reflection("a", "root/east", "theirs", &theirs),
            "root/east",
        )
        .await
        .unwrap_err();
    assert_eq!(
        e.0.message,
        format!("pods \"a\" is forbidden: the owner Job d/theirs (uid {theirs}) is not a Job assigned to the sync target root/east")
    );
    // A reflection of its own: created, its status written, relabelled, deleted.
    reg.create(&pods, reflection("a", "root/east", "mine", &mine), &s)
        .await
        .unwrap();
    let out = reg
        .patch(
            &pods,
            "a",
            Some("status"),
            PatchType::Merge,
            doc(json!({"status": {"phase": "Running", "podIP": "10.0.0.5"}})),
            &s,
        )
        .await
        .unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["status"]["phase"], "Running");
    assert_eq!(v["status"]["podIPs"], json!([{"ip": "10.0.0.5"}]));
    assert_eq!(v["status"]["qosClass"], "BestEffort");
    reg.patch(
        &pods,
        "a",
        None,
        PatchType::Merge,
        doc(json!({"metadata": {"labels": {"x": "y"}}})),
        &s,
    )
    .await
    .unwrap();
    // It may not hand the pod to another target.
    let e = reg
        .patch(
            &pods,
            "a",
            None,
            PatchType::Merge,
            doc(json!({"metadata": {"annotations": {TARGET_ANNOTATION: "root/west"}}})),
            &s,
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), 403);
    // Another target's pod (written by kplane itself here): not its to update or delete.
    reg.create(
        &pods,
        reflection("b", "root/west", "theirs", &theirs),
        &WriteParams::default(),
    )
    .await
    .unwrap();
    let e = reg
        .patch(
            &pods,
            "b",
            Some("status"),
            PatchType::Merge,
            doc(json!({"status": {"phase": "Failed"}})),
            &s,
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), 403);
    let e = reg
        .delete(&pods, "b", &delete_as(east().user()))
        .await
        .unwrap_err();
    assert_eq!(e.code(), 403);
    reg.delete(&pods, "a", &delete_as(east().user()))
        .await
        .unwrap();
}
