//! Tests of the sync endpoint's registry side: the annotation filter over lists (paged
//! past the batch size) and watches (assignment changes are ADDED/DELETED), the assigned
//! and referenced checks, and what `SyncerScope` lets the endpoint's identity write.
#![allow(clippy::unwrap_used)]

use kplane_types::{ClusterName, StatusReason};
use serde_json::{json, Value};

use super::refs::RefKind;
use super::*;
use crate::options::WriteParams;
use crate::patch::{Document, PatchType};
use crate::testing::{self, create_all, create_namespace, name_of, target};
use crate::WatchType;

fn east() -> TargetRef {
    TargetRef {
        cluster: ClusterName::root(),
        name: "east".into(),
    }
}

fn assigned_cm(name: &str, to: Option<&str>) -> Value {
    let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
    if let Some(t) = to {
        cm["metadata"]["annotations"] = json!({TARGET_ANNOTATION: t});
    }
    cm
}

fn job(name: &str, to: Option<&str>, pod: Value) -> Value {
    let mut spec =
        json!({"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]});
    if let (Some(s), Some(extra)) = (spec.as_object_mut(), pod.as_object()) {
        for (k, v) in extra {
            s.insert(k.clone(), v.clone());
        }
    }
    let mut j = json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {"template": {"spec": spec}}});
    if let Some(t) = to {
        j["metadata"]["annotations"] = json!({TARGET_ANNOTATION: t});
    }
    j
}

fn as_syncer() -> WriteParams {
    WriteParams {
        user: Some(east().user()),
        ..Default::default()
    }
}

#[tokio::test]
async fn lists_serve_only_assigned_objects_and_page_past_the_batch_size() {
    let f = testing::fixture().await;
    let reg = &f.reg;
    let cms = create_namespace(reg, "d").await;
    // 1,201 assigned objects between others assigned elsewhere or not at all.
    let mut objs = Vec::new();
    for i in 0..1201 {
        objs.push(assigned_cm(&format!("a{i:05}"), Some("root/east")));
        if i % 3 == 0 {
            objs.push(assigned_cm(&format!("b{i:05}"), Some("root/west")));
            objs.push(assigned_cm(&format!("c{i:05}"), None));
        }
    }
    create_all(reg, &cms, objs).await;
    let mut p = ListParams::default();
    east().list_filter(&mut p);
    // Whole list (batched internally).
    let all = reg.list(&cms, &p).await.unwrap().collect().await.unwrap();
    assert_eq!(all.items.len(), 1201);
    assert!(all.items.iter().all(|i| name_of(i).starts_with('a')));
    // Pages of 500 over the subtree scope, each item naming its cluster.
    let scope = Target {
        cluster: list_scope(&ClusterName::root()),
        rt: cms.rt.clone(),
        namespace: None,
    };
    p.limit = Some(500);
    let mut names = Vec::new();
    loop {
        let page = reg.list(&scope, &p).await.unwrap();
        let token = page.continue_token().map(str::to_string);
        let c = page.collect().await.unwrap();
        assert!(c.items.len() <= 500);
        for i in &c.items {
            let v: Value = serde_json::from_slice(i).unwrap();
            assert_eq!(v["metadata"]["annotations"]["kplane.io/cluster"], "root");
            names.push(name_of(i));
        }
        match token {
            Some(t) => p.continue_token = Some(t),
            None => break,
        }
    }
    assert_eq!(names.len(), 1201);
    assert!(names.iter().all(|n| n.starts_with('a')));
    names.dedup();
    assert_eq!(names.len(), 1201);
}

#[tokio::test]
async fn a_watch_sees_assignment_changes_as_added_and_deleted() {
    let f = testing::fixture().await;
    let reg = &f.reg;
    let cms = create_namespace(reg, "d").await;
    let w = WriteParams::default();
    reg.create(&cms, assigned_cm("before", Some("root/east")), &w)
        .await
        .unwrap();
    let mut p = ListParams {
        resource_version: Some(reg.storage().current_revision().to_string()),
        watch: true,
        ..Default::default()
    };
    east().list_filter(&mut p);
    let mut watch = reg.watch(&cms, &p).await.unwrap();
    let patch = |name: &'static str, v: Value| {
        let doc = Document {
            value: v,
            duplicates: vec![],
        };
        let cms = cms.clone();
        let w = w.clone();
        async move {
            reg.patch(&cms, name, None, PatchType::Merge, doc, &w)
                .await
                .unwrap();
        }
    };
    // Not assigned: nothing. Assigned later: ADDED. Changed: MODIFIED. Moved: DELETED.
    reg.create(&cms, assigned_cm("x", None), &w).await.unwrap();
    reg.create(&cms, assigned_cm("other", Some("root/west")), &w)
        .await
        .unwrap();
    let ann = |v: &str| json!({"metadata": {"annotations": {TARGET_ANNOTATION: v}}});
    patch("x", ann("root/east")).await;
    patch("x", json!({"data": {"k": "v"}})).await;
    patch("x", ann("root/west")).await;
    patch("before", ann("root/west")).await;
    let mut seen = Vec::new();
    for _ in 0..4 {
        let item = watch.next().await.unwrap();
        seen.push(format!("{} {}", item.ty.as_str(), name_of(&item.object)));
    }
    assert_eq!(
        seen,
        ["ADDED x", "MODIFIED x", "DELETED x", "DELETED before"]
    );
    // Deleting an object not assigned to the target is not an event either; deleting an
    // assigned one is.
    reg.create(&cms, assigned_cm("last", Some("root/east")), &w)
        .await
        .unwrap();
    reg.delete(&cms, "other", &Default::default())
        .await
        .unwrap();
    reg.delete(&cms, "last", &Default::default()).await.unwrap();
    let a = watch.next().await.unwrap();
    let d = watch.next().await.unwrap();
    assert_eq!(
        (a.ty, name_of(&a.object)),
        (WatchType::Added, "last".into())
    );
    assert_eq!(
        (d.ty, name_of(&d.object)),
        (WatchType::Deleted, "last".into())
    );
}

#[tokio::test]
async fn assigned_and_referenced_checks() {
    let f = testing::fixture().await;
    let reg = &f.reg;
    create_namespace(reg, "d").await;
    create_namespace(reg, "other").await;
    let jobs = target(reg, "batch", "jobs", Some("d"));
    let w = WriteParams::default();
    let pod = json!({"serviceAccountName": "runner", "volumes": [{"name": "v", "secret": {"secretName": "creds"}}],
        "containers": [{"name": "c", "image": "busybox", "envFrom": [{"configMapRef": {"name": "settings"}}]}]});
    reg.create(&jobs, job("mine", Some("root/east"), pod.clone()), &w)
        .await
        .unwrap();
    let other_pod = json!({"volumes": [{"name": "v", "secret": {"secretName": "theirs"}}]});
    reg.create(&jobs, job("theirs", Some("root/west"), other_pod), &w)
        .await
        .unwrap();
    reg.create(
        &jobs,
        job(
            "nobody",
            None,
            json!({"imagePullSecrets": [{"name": "pull"}]}),
        ),
        &w,
    )
    .await
    .unwrap();
    let t = east();
    reg.sync_checks()
        .check_assigned(&jobs, "mine", &t)
        .await
        .unwrap();
    for name in ["theirs", "nobody", "missing"] {
        let e = reg
            .sync_checks()
            .check_assigned(&jobs, name, &t)
            .await
            .unwrap_err();
        assert_eq!(e.code(), 404, "{name}");
        assert_eq!(e.0.message, format!("jobs.batch \"{name}\" not found"));
    }
    let spec = TargetSpec::of(&json!({"spec": {}}));
    let root = ClusterName::root();
    let check = |ns: &'static str, kind, name: &'static str| {
        let (spec, t, root) = (spec.clone(), t.clone(), root.clone());
        async move {
            reg.sync_checks()
                .check_referenced(&root, ns, kind, name, &t, &spec)
                .await
        }
    };
    check("d", RefKind::Secret, "creds").await.unwrap();
    check("d", RefKind::ConfigMap, "settings").await.unwrap();
    check("d", RefKind::ServiceAccount, "runner").await.unwrap();
    for (ns, kind, name) in [
        ("d", RefKind::Secret, "theirs"),
        ("d", RefKind::Secret, "pull"),
        ("d", RefKind::ConfigMap, "creds"),
        ("d", RefKind::ServiceAccount, "default"),
        ("other", RefKind::Secret, "creds"),
    ] {
        let e = check(ns, kind, name).await.unwrap_err();
        assert_eq!(e.code(), 404, "{ns} {kind:?} {name}");
    }
    // Every answer above came from reading the Jobs: no informer feeds the index here.
    assert_eq!(reg.sync_ref_index().hits(), 0);
    // Fed with the stored Jobs (as the informer does), the index answers the hits; the
    // misses still read the Jobs and still say 404.
    let stored = reg
        .storage()
        .list(&jobs.prefix(), &Default::default(), None)
        .await
        .unwrap();
    for kv in &stored.items {
        reg.sync_ref_index().observe(kv, false);
    }
    check("d", RefKind::Secret, "creds").await.unwrap();
    check("d", RefKind::ServiceAccount, "runner").await.unwrap();
    assert_eq!(reg.sync_ref_index().hits(), 2);
    let e = check("d", RefKind::Secret, "theirs").await.unwrap_err();
    assert_eq!(e.code(), 404);
    assert_eq!(reg.sync_ref_index().hits(), 2);
    // A target whose resources do not include Jobs refers to nothing.
    let none = TargetSpec::of(
        &json!({"spec": {"resources": [{"group": "apps", "version": "v1", "resource": "deployments"}]}}),
    );
    let e = reg
        .sync_checks()
        .check_referenced(&root, "d", RefKind::Secret, "creds", &t, &none)
        .await
        .unwrap_err();
    assert_eq!(e.code(), 404);
}

#[tokio::test]
async fn the_syncer_identity_may_only_move_its_finalizer_and_write_status() {
    let f = testing::fixture().await;
    let reg = &f.reg;
    create_namespace(reg, "d").await;
    let jobs = target(reg, "batch", "jobs", Some("d"));
    let w = WriteParams::default();
    let mut j = job("mine", Some("root/east"), json!({}));
    j["metadata"]["finalizers"] = json!([SYNCER_FINALIZER]);
    reg.create(&jobs, j, &w).await.unwrap();
    reg.create(&jobs, job("theirs", Some("root/west"), json!({})), &w)
        .await
        .unwrap();
    let doc = |v: Value| Document {
        value: v,
        duplicates: vec![],
    };
    let s = as_syncer();
    // A spec change, a label, another finalizer: 422 naming the field.
    for (patch, field) in [
        (json!({"spec": {"suspend": true}}), "spec"),
        (
            json!({"metadata": {"labels": {"a": "b"}}}),
            "metadata.labels",
        ),
        (
            json!({"metadata": {"finalizers": [SYNCER_FINALIZER, "x/y"]}}),
            "metadata.finalizers",
        ),
        (
            json!({"metadata": {"annotations": {TARGET_ANNOTATION: "root/other"}}}),
            "metadata.annotations",
        ),
    ] {
        let e = reg
            .patch(&jobs, "mine", None, PatchType::Merge, doc(patch), &s)
            .await
            .unwrap_err();
        assert_eq!(e.0.reason, StatusReason::Invalid, "{field}");
        assert!(e.0.message.contains(field), "{}", e.0.message);
    }
    // Removing the finalizer, then adding it back: fine.
    let out = reg
        .patch(
            &jobs,
            "mine",
            None,
            PatchType::Json,
            doc(json!([{"op": "remove", "path": "/metadata/finalizers/0"}])),
            &s,
        )
        .await
        .unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert!(
        v["metadata"]
            .get("finalizers")
            .is_none_or(|f| f == &json!([])),
        "{v}"
    );
    reg.patch(
        &jobs,
        "mine",
        None,
        PatchType::Merge,
        doc(json!({"metadata": {"finalizers": [SYNCER_FINALIZER]}})),
        &s,
    )
    .await
    .unwrap();
    // Status through /status.
    let out = reg
        .patch(
            &jobs,
            "mine",
            Some("status"),
            PatchType::Merge,
            doc(json!({"status": {"active": 1}})),
            &s,
        )
        .await
        .unwrap();
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["status"]["active"], 1);
    // Not assigned to this target: 403, even through /status.
    for sub in [None, Some("status")] {
        let e = reg
            .patch(
                &jobs,
                "theirs",
                sub,
                PatchType::Merge,
                doc(json!({"status": {"active": 1}})),
                &s,
            )
            .await
            .unwrap_err();
        assert_eq!(e.code(), 403, "{sub:?}: {}", e.0.message);
    }
    // No creates but Leases, no deletes.
    let e = reg
        .create(&jobs, job("new", Some("root/east"), json!({})), &s)
        .await
        .unwrap_err();
    assert_eq!(e.code(), 403);
    let d = crate::DeleteParams {
        user: Some(east().user()),
        ..Default::default()
    };
    assert_eq!(reg.delete(&jobs, "mine", &d).await.unwrap_err().code(), 403);
    let leases = target(reg, "coordination.k8s.io", "leases", Some("kube-system"));
    let lease = json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
        "metadata": {"name": lease_name("east")}, "spec": {"holderIdentity": "a"}});
    reg.create(&leases, lease, &s).await.unwrap();
    reg.patch(
        &leases,
        &lease_name("east"),
        None,
        PatchType::Merge,
        doc(json!({"spec": {"holderIdentity": "b"}})),
        &s,
    )
    .await
    .unwrap();
}

#[test]
fn target_spec_defaults_and_scope() {
    let s = TargetSpec::of(&json!({"spec": {}}));
    assert!(s.syncs("batch", "v1", "jobs"));
    assert!(!s.syncs("apps", "v1", "deployments"));
    assert!(!s.include_descendants);
    let root = ClusterName::root();
    let acme = ClusterName::parse("root:acme").unwrap();
    assert!(covers(&s, &root, &root));
    assert!(!covers(&s, &root, &acme));
    let d = TargetSpec::of(&json!({"spec": {"includeDescendants": true,
        "resources": [{"group": "apps", "version": "v1", "resource": "deployments"}]}}));
    assert!(covers(&d, &root, &acme));
    assert!(!covers(&d, &acme, &root));
    assert!(d.syncs("apps", "v1", "deployments"));
    assert!(!d.syncs("batch", "v1", "jobs"));
    assert_eq!(east().id(), "root/east");
    assert_eq!(east().user().username, "system:kplane:syncer:root/east");
    assert_eq!(TargetRef::id_of_user(&east().user()), Some("root/east"));
}

#[test]
fn the_endpoint_issues_only_short_default_audience_unbound_tokens() {
    use super::check_token_request;
    let ok =
        |spec: serde_json::Value| check_token_request(&serde_json::json!({"spec": spec}), "runner");
    assert!(ok(serde_json::json!({})).is_ok());
    assert!(ok(serde_json::json!({"expirationSeconds": 3600})).is_ok());
    assert!(ok(serde_json::json!({"expirationSeconds": 600, "audiences": []})).is_ok());
    assert!(check_token_request(&serde_json::json!({}), "runner").is_ok());
    for (spec, why) in [
        (
            serde_json::json!({"expirationSeconds": 3601}),
            "spec.expirationSeconds must be at most 3600",
        ),
        (
            serde_json::json!({"expirationSeconds": "1h"}),
            "spec.expirationSeconds must be at most 3600",
        ),
        (
            serde_json::json!({"audiences": ["vault"]}),
            "spec.audiences must be empty",
        ),
        (
            serde_json::json!({"boundObjectRef": {"kind": "Secret", "name": "s"}}),
            "spec.boundObjectRef must be empty",
        ),
    ] {
        let e = ok(spec.clone()).unwrap_err();
        assert_eq!(e.code(), 403, "{spec}");
        let msg = e.0.message.clone();
        assert!(
            msg.starts_with("serviceaccounts/token \"runner\" is forbidden: the sync endpoint issues only tokens for synced pods: ")
                && msg.contains(why),
            "{msg}"
        );
    }
}
