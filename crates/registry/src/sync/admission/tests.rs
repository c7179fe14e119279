//! `SyncAssignment` over a real registry: which target a new object goes to, what a
//! requester may name, and that the annotation cannot change afterwards.
#![allow(clippy::unwrap_used)]

use kplane_types::{ClusterName, ClusterScope, UserInfo};
use serde_json::{json, Value};

use crate::options::WriteParams;
use crate::patch::{Document, PatchType};
use crate::sync::spec::{SYNCER_FINALIZER, TARGET_ANNOTATION};
use crate::testing::{self, target};
use crate::{DeleteParams, Registry, Target};

fn cluster(s: &str) -> ClusterName {
    ClusterName::parse(s).unwrap()
}

fn in_cluster(reg: &Registry, c: &str, group: &str, plural: &str, ns: Option<&str>) -> Target {
    let mut t = target(reg, group, plural, ns);
    t.cluster = ClusterScope::One(cluster(c));
    t
}

fn alice() -> WriteParams {
    WriteParams {
        user: Some(UserInfo {
            username: "alice".into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn as_user(name: &str, groups: &[&str]) -> WriteParams {
    WriteParams {
        user: Some(UserInfo {
            username: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

async fn sync_target(reg: &Registry, c: &str, name: &str, spec: Value) {
    let t = in_cluster(reg, c, "sync.kplane.io", "synctargets", None);
    let obj = json!({"apiVersion": "sync.kplane.io/v1alpha1", "kind": "SyncTarget",
                     "metadata": {"name": name}, "spec": spec});
    reg.create(&t, obj, &WriteParams::default()).await.unwrap();
}

async fn namespace(reg: &Registry, c: &str, name: &str, labels: Value) {
    let t = in_cluster(reg, c, "", "namespaces", None);
    let obj = json!({"apiVersion": "v1", "kind": "Namespace",
                     "metadata": {"name": name, "labels": labels}});
    reg.create(&t, obj, &WriteParams::default()).await.unwrap();
}

fn job(name: &str, annotations: Value) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": name, "annotations": annotations},
           "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "busybox"}],
                                          "restartPolicy": "Never"}}}})
}

fn configmap(name: &str, annotations: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "annotations": annotations}})
}

/// Creates a Job as alice in `c`/`ns`; returns its assignment and finalizers.
async fn create_job(reg: &Registry, c: &str, ns: &str, name: &str) -> (Option<String>, Value) {
    let t = in_cluster(reg, c, "batch", "jobs", Some(ns));
    let out = reg
        .create(&t, job(name, json!({})), &alice())
        .await
        .unwrap();
    assignment(&out)
}

fn assignment(bytes: &[u8]) -> (Option<String>, Value) {
    let v: Value = serde_json::from_slice(bytes).unwrap();
    let a = v["metadata"]["annotations"][TARGET_ANNOTATION]
        .as_str()
        .map(str::to_string);
    (a, v["metadata"]["finalizers"].clone())
}

async fn clusters(reg: &Registry, names: &[&str]) {
    for c in names {
        reg.ensure_cluster(&cluster(c)).await.unwrap();
    }
}

#[tokio::test]
async fn a_job_goes_to_its_own_clusters_target() {
    let f = testing::fixture().await;
    let reg = &f.reg;
    clusters(reg, &["root:acme"]).await;
    let (a, fins) = create_job(reg, "root:acme", "default", "before").await;
    assert_eq!(a, None);
    assert_eq!(fins, Value::Null);

    sync_target(reg, "root:acme", "east", json!({})).await;
    let (a, fins) = create_job(reg, "root:acme", "default", "j").await;
    assert_eq!(a.as_deref(), Some("root:acme/east"));
    assert_eq!(fins, json!([SYNCER_FINALIZER]));
    // The same through generateName and through server's own writes (no requester).
    let t = in_cluster(reg, "root:acme", "batch", "jobs", Some("default"));
    let mut gen = job("", json!({}));
    gen["metadata"] = json!({"generateName": "g-"});
    let (a, _) = assignment(&reg.create(&t, gen, &alice()).await.unwrap());
    assert_eq!(a.as_deref(), Some("root:acme/east"));
    let (a, _) = assignment(
        &reg.create(&t, job("own", json!({})), &WriteParams::default())
            .await
            .unwrap(),
    );
    assert_eq!(a.as_deref(), Some("root:acme/east"));
    // Other resources are not synced, nor Jobs of other clusters.
    let cms = in_cluster(reg, "root:acme", "", "configmaps", Some("default"));
    let (a, _) = assignment(
        &reg.create(&cms, configmap("c", json!({})), &alice())
            .await
            .unwrap(),
    );
    assert_eq!(a, None);
    let (a, _) = create_job(reg, "root", "default", "r").await;
    assert_eq!(a, None);
}

#[tokio::test]
async fn ancestors_count_only_with_include_descendants() {
    let f = testing::fixture().await;
    let reg = &f.reg;
    clusters(reg, &["root:acme", "root:acme:team", "root:other"]).await;
    sync_target(reg, "root", "plain", json!({})).await;
    let (a, _) = create_job(reg, "root:acme:team", "default", "j1").await;
    assert_eq!(a, None, "an ancestor's target without includeDescendants");

    sync_target(
        reg,
        "root:acme",
        "wide",
        json!({"includeDescendants": true}),
    )
    .await;
    let (a, _) = create_job(reg, "root:acme:team", "default", "j2").await;
    assert_eq!(a.as_deref(), Some("root:acme/wide"));
    let (a, _) = create_job(reg, "root:acme", "default", "j3").await;
    assert_eq!(a.as_deref(), Some("root:acme/wide"));
    let (a, _) = create_job(reg, "root:other", "default", "j4").await;
    assert_eq!(a, None);

    // The nearest cluster wins, whatever the names.
    sync_target(reg, "root:acme:team", "zzz", json!({})).await;
    let (a, _) = create_job(reg, "root:acme:team", "default", "j5").await;
    assert_eq!(a.as_deref(), Some("root:acme:team/zzz"));
    // A wide target at root reaches every cluster below that has no nearer one.
    sync_target(reg, "root", "all", json!({"includeDescendants": true})).await;
    let (a, _) = create_job(reg, "root:other", "default", "j6").await;
    assert_eq!(a.as_deref(), Some("root/all"));
    let (a, _) = create_job(reg, "root", "default", "j7").await;
    assert_eq!(a.as_deref(), Some("root/all"));
}

#[tokio::test]
async fn the_namespace_selector_matches_the_namespaces_labels() {
    let f = testing::fixture().await;
    let reg = &f.reg;
    clusters(reg, &["root:acme"]).await;
    namespace(reg, "root:acme", "synced", json!({"sync": "yes"})).await;
    namespace(reg, "root:acme", "local", json!({"sync": "no"})).await;
    sync_target(
        reg,
        "root:acme",
        "east",
        json!({"namespaceSelector": {"matchExpressions": [
            {"key": "sync", "operator": "In", "values": ["yes"]}]}}),
    )
    .await;
    let (a, fins) = create_job(reg, "root:acme", "synced", "j").await;
    assert_eq!(a.as_deref(), Some("root:acme/east"));
    assert_eq!(fins, json!([SYNCER_FINALIZER]));
    let (a, fins) = create_job(reg, "root:acme", "local", "j").await;
    assert_eq!(a, None);
    assert_eq!(fins, Value::Null);
    let (a, _) = create_job(reg, "root:acme", "default", "j").await;
    assert_eq!(a, None);
}

#[tokio::test]
async fn of_two_targets_the_first_by_name_wins_and_a_deleting_one_takes_nothing() {
    let f = testing::fixture().await;
    let reg = &f.reg;
    clusters(reg, &["root:acme"]).await;
    sync_target(reg, "root:acme", "west", json!({})).await;
    sync_target(reg, "root:acme", "east", json!({})).await;
    let (a, _) = create_job(reg, "root:acme", "default", "j1").await;
    assert_eq!(a.as_deref(), Some("root:acme/east"));

    // Deleting "east" (held by its drain finalizer): "west" takes the next Job.
    let st = in_cluster(reg, "root:acme", "sync.kplane.io", "synctargets", None);
    reg.delete(&st, "east", &DeleteParams::default())
        .await
        .unwrap();
    let (a, _) = create_job(reg, "root:acme", "default", "j2").await;
    assert_eq!(a.as_deref(), Some("root:acme/west"));
    // A requester may not name it either.
    let t = in_cluster(reg, "root:acme", "batch", "jobs", Some("default"));
    let e = reg
        .create(
            &t,
            job("j3", json!({TARGET_ANNOTATION: "root:acme/east"})),
            &alice(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), 422, "{e:?}");

    // Gone entirely (finalizer released): still nothing for it; "west" remains.
    let patch = Document::new(json!({"metadata": {"finalizers": null}}));
    reg.patch(
        &st,
        "east",
        None,
        PatchType::Merge,
        patch,
        &WriteParams::default(),
    )
    .await
    .unwrap();
    let (a, _) = create_job(reg, "root:acme", "default", "j4").await;
    assert_eq!(a.as_deref(), Some("root:acme/west"));
    reg.delete(&st, "west", &DeleteParams::default())
        .await
        .unwrap();
    let (a, fins) = create_job(reg, "root:acme", "default", "j5").await;
    assert_eq!(a, None);
    assert_eq!(fins, Value::Null);
}

#[tokio::test]
async fn a_requester_may_name_an_applicable_target_only() {
    let f = testing::fixture().await;
    let reg = &f.reg;
    clusters(reg, &["root:acme", "root:other"]).await;
    sync_target(reg, "root:acme", "east", json!({})).await;
    sync_target(reg, "root:acme", "west", json!({})).await;
    sync_target(reg, "root:other", "north", json!({})).await;
    let t = in_cluster(reg, "root:acme", "batch", "jobs", Some("default"));

    let (a, fins) = assignment(
        &reg.create(
            &t,
            job("w", json!({TARGET_ANNOTATION: "root:acme/west"})),
            &alice(),
        )
        .await
        .unwrap(),
    );
    assert_eq!(a.as_deref(), Some("root:acme/west"));
    assert_eq!(fins, json!([SYNCER_FINALIZER]));

    let e = reg
        .create(
            &t,
            job("n", json!({TARGET_ANNOTATION: "root:other/north"})),
            &alice(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), 422);
    assert_eq!(
        e.0.message,
        "Job.batch \"n\" is invalid: metadata.annotations[sync.kplane.io/target]: Invalid value: \"root:other/north\": not a SyncTarget that applies to this object (applicable: root:acme/east, root:acme/west)"
    );
    // An object no target syncs may not carry the annotation.
    let cms = in_cluster(reg, "root:acme", "", "configmaps", Some("default"));
    let e = reg
        .create(
            &cms,
            configmap("c", json!({TARGET_ANNOTATION: "root:acme/east"})),
            &alice(),
        )
        .await
        .unwrap_err();
    assert_eq!(
        e.0.message,
        "ConfigMap \"c\" is invalid: metadata.annotations[sync.kplane.io/target]: Invalid value: \"root:acme/east\": no SyncTarget applies to this object"
    );
    // The server's internal identities and system:masters keep what they set, unchecked.
    for (i, w) in [
        // (Not the sync endpoint's identity: `SyncerScope` lets it create Leases only.)
        as_user("system:kplane:sync-controller", &[]),
        as_user("admin", &["system:masters"]),
        WriteParams::default(),
    ]
    .into_iter()
    .enumerate()
    {
        let (a, fins) = assignment(
            &reg.create(
                &cms,
                configmap(&format!("p{i}"), json!({TARGET_ANNOTATION: "x/y"})),
                &w,
            )
            .await
            .unwrap(),
        );
        assert_eq!(a.as_deref(), Some("x/y"));
        assert_eq!(fins, Value::Null);
    }
}

#[tokio::test]
async fn the_annotation_cannot_change_on_update_except_by_the_server() {
    let f = testing::fixture().await;
    let reg = &f.reg;
    clusters(reg, &["root:acme"]).await;
    sync_target(reg, "root:acme", "east", json!({})).await;
    sync_target(reg, "root:acme", "west", json!({})).await;
    create_job(reg, "root:acme", "default", "j").await;
    let t = in_cluster(reg, "root:acme", "batch", "jobs", Some("default"));
    let patch =
        |v: Value| Document::new(json!({"metadata": {"annotations": {TARGET_ANNOTATION: v}}}));

    for (value, shown) in [
        (json!("root:acme/west"), "\"root:acme/west\""),
        (Value::Null, "null"),
    ] {
        let e = reg
            .patch(
                &t,
                "j",
                None,
                PatchType::Merge,
                patch(value.clone()),
                &alice(),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code(), 422, "{e:?}");
        assert_eq!(
            e.0.message,
            format!("Job.batch \"j\" is invalid: metadata.annotations[sync.kplane.io/target]: Invalid value: {shown}: field is immutable")
        );
        // Not through /status either.
        let e = reg
            .patch(
                &t,
                "j",
                Some("status"),
                PatchType::Merge,
                patch(value),
                &alice(),
            )
            .await
            .unwrap_err();
        assert_eq!(e.code(), 422, "{e:?}");
    }
    // Other changes pass.
    let labels = Document::new(json!({"metadata": {"labels": {"x": "y"}}}));
    reg.patch(&t, "j", None, PatchType::Merge, labels, &alice())
        .await
        .unwrap();
    // Adding one to an unassigned object is a change too.
    let cms = in_cluster(reg, "root:acme", "", "configmaps", Some("default"));
    reg.create(&cms, configmap("c", json!({})), &alice())
        .await
        .unwrap();
    let e = reg
        .patch(
            &cms,
            "c",
            None,
            PatchType::Merge,
            patch(json!("root:acme/east")),
            &alice(),
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), 422);

    // The sync controllers (in-process, no requester) and internal identities may.
    let (a, _) = assignment(
        &reg.patch(
            &t,
            "j",
            None,
            PatchType::Merge,
            patch(json!("root:acme/west")),
            &WriteParams::default(),
        )
        .await
        .unwrap(),
    );
    assert_eq!(a.as_deref(), Some("root:acme/west"));
    let w = as_user("system:kplane:sync-controller", &[]);
    let (a, _) = assignment(
        &reg.patch(&t, "j", None, PatchType::Merge, patch(Value::Null), &w)
            .await
            .unwrap(),
    );
    assert_eq!(a, None);
}

#[tokio::test]
async fn a_cluster_without_targets_is_read_once_and_heartbeats_keep_the_cache() {
    let f = testing::fixture().await;
    let reg = &f.reg;
    clusters(reg, &["root:acme", "root:acme:team"]).await;
    let cache = reg.sync_target_cache();
    create_job(reg, "root:acme:team", "default", "j1").await;
    let builds = cache.builds();
    assert_eq!(
        builds, 3,
        "root, root:acme and root:acme:team each read once"
    );
    for i in 0..5 {
        create_job(reg, "root:acme:team", "default", &format!("k{i}")).await;
    }
    assert_eq!(cache.builds(), builds);

    sync_target(
        reg,
        "root:acme",
        "east",
        json!({"includeDescendants": true}),
    )
    .await;
    assert!(
        cache.get("root:acme:team").is_none(),
        "a new target drops the subtree"
    );
    assert!(cache.get("root").is_some());
    let (a, _) = create_job(reg, "root:acme:team", "default", "j2").await;
    assert_eq!(a.as_deref(), Some("root:acme/east"));
    let builds = cache.builds();
    // The child holds the parent's target itself, not a copy.
    let (parent, child) = (
        cache.get("root:acme").unwrap(),
        cache.get("root:acme:team").unwrap(),
    );
    assert!(std::sync::Arc::ptr_eq(&parent[0], &child[0]));

    // A heartbeat through /status leaves the cache as it is.
    let st = in_cluster(reg, "root:acme", "sync.kplane.io", "synctargets", None);
    let hb = Document::new(json!({"status": {"syncedObjects": 1,
        "lastHeartbeatTime": "2026-11-24T10:00:00Z"}}));
    reg.patch(
        &st,
        "east",
        Some("status"),
        PatchType::Merge,
        hb,
        &WriteParams::default(),
    )
    .await
    .unwrap();
    create_job(reg, "root:acme:team", "default", "j3").await;
    assert_eq!(cache.builds(), builds);

    // A spec change does not.
    let spec = Document::new(json!({"spec": {"includeDescendants": false}}));
    reg.patch(
        &st,
        "east",
        None,
        PatchType::Merge,
        spec,
        &WriteParams::default(),
    )
    .await
    .unwrap();
    let (a, _) = create_job(reg, "root:acme:team", "default", "j4").await;
    assert_eq!(a, None);
    let (a, _) = create_job(reg, "root:acme", "default", "j5").await;
    assert_eq!(a.as_deref(), Some("root:acme/east"));
}

#[tokio::test]
async fn deployments_or_any_listed_resource_are_assigned_too() {
    let f = testing::fixture().await;
    let reg = &f.reg;
    sync_target(
        reg,
        "root",
        "cms",
        json!({"resources": [{"group": "", "version": "v1", "resource": "configmaps"}]}),
    )
    .await;
    let cms = target(reg, "", "configmaps", Some("default"));
    let (a, fins) = assignment(
        &reg.create(&cms, configmap("c", json!({})), &alice())
            .await
            .unwrap(),
    );
    assert_eq!(a.as_deref(), Some("root/cms"));
    assert_eq!(fins, json!([SYNCER_FINALIZER]));
    let (a, _) = create_job(reg, "root", "default", "j").await;
    assert_eq!(a, None, "the target lists configmaps only");
}

#[tokio::test]
async fn a_cluster_scoped_object_matches_only_targets_without_a_namespace_selector() {
    let f = testing::fixture().await;
    let reg = &f.reg;
    let roles = json!({"resources": [
        {"group": "rbac.authorization.k8s.io", "version": "v1", "resource": "clusterroles"}]});
    let mut selective = roles.clone();
    selective["namespaceSelector"] = json!({"matchLabels": {"a": "b"}});
    sync_target(reg, "root", "a-selective", selective).await;
    sync_target(reg, "root", "b-any", roles).await;
    let root = cluster("root");
    let names = |v: Vec<std::sync::Arc<crate::sync::targets::Applicable>>| -> Vec<String> {
        v.iter().map(|t| t.reference()).collect()
    };
    let got = reg
        .applicable_sync_targets(&root, "rbac.authorization.k8s.io", "clusterroles", None)
        .await
        .unwrap();
    assert_eq!(names(got), ["root/b-any"]);
    // In a namespace with the label both apply, by name.
    namespace(reg, "root", "labelled", json!({"a": "b"})).await;
    let got = reg
        .applicable_sync_targets(
            &root,
            "rbac.authorization.k8s.io",
            "clusterroles",
            Some("labelled"),
        )
        .await
        .unwrap();
    assert_eq!(names(got), ["root/a-selective", "root/b-any"]);
    let t = target(reg, "rbac.authorization.k8s.io", "clusterroles", None);
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                      "metadata": {"name": "r"}, "rules": []});
    let (a, _) = assignment(&reg.create(&t, role, &alice()).await.unwrap());
    assert_eq!(a.as_deref(), Some("root/b-any"));
}
