//! RBAC decisions checked against upstream's semantics (`plugin/pkg/auth/authorizer/rbac`:
//! `RuleAllows`, `appliesTo`, the visitor's reasons), the defaults, aggregation, the
//! cache's invalidation and the bound-cluster rule.

use std::collections::BTreeMap;
use std::sync::Arc;

use kplane_types::{ClusterName, ClusterScope, RequestInfo, UserInfo, Verb};
use serde_json::{json, Value};

use super::*;

fn user(name: &str, groups: &[&str]) -> UserInfo {
    UserInfo {
        username: name.into(),
        groups: groups.iter().map(|g| g.to_string()).collect(),
        ..Default::default()
    }
}

/// `verb group/resource[/sub] ns name` as a request.
fn req(verb: &str, group: &str, resource: &str, ns: &str, name: &str) -> RequestInfo {
    let (resource, sub) = match resource.split_once('/') {
        Some((r, s)) => (r, Some(s.to_string())),
        None => (resource, None),
    };
    RequestInfo {
        cluster: ClusterScope::One(ClusterName::root()),
        path: String::new(),
        verb: Verb::parse(verb),
        is_resource_request: true,
        api_group: group.into(),
        api_version: "v1".into(),
        namespace: (!ns.is_empty()).then(|| ns.to_string()),
        resource: resource.into(),
        subresource: sub,
        name: (!name.is_empty()).then(|| name.to_string()),
    }
}

fn path(verb: &str, p: &str) -> RequestInfo {
    RequestInfo::non_resource(ClusterScope::One(ClusterName::root()), Verb::parse(verb), p)
}

fn cluster_role(name: &str, rules: Value) -> Value {
    json!({"metadata": {"name": name}, "rules": rules})
}

fn role(ns: &str, name: &str, rules: Value) -> Value {
    json!({"metadata": {"name": name, "namespace": ns}, "rules": rules})
}

fn crb(name: &str, role: &str, subjects: Value) -> Value {
    json!({"metadata": {"name": name}, "roleRef": {"kind": "ClusterRole", "name": role}, "subjects": subjects})
}

fn rb(ns: &str, name: &str, kind: &str, role: &str, subjects: Value) -> Value {
    json!({"metadata": {"name": name, "namespace": ns}, "roleRef": {"kind": kind, "name": role}, "subjects": subjects})
}

fn layer(objs: &[Value]) -> Layer {
    let (mut crs, mut rs, mut crbs, mut rbs) = (vec![], vec![], vec![], vec![]);
    for o in objs {
        let ns = o
            .pointer("/metadata/namespace")
            .and_then(Value::as_str)
            .map(str::to_string);
        match (o.get("roleRef").is_some(), ns) {
            (false, None) => crs.push(Arc::new(Role::from_json(o))),
            (false, Some(ns)) => rs.push((ns, Arc::new(Role::from_json(o)))),
            (true, None) => crbs.push(o.clone()),
            (true, Some(_)) => rbs.push(o.clone()),
        }
    }
    Layer::build(crs, rs, &crbs, &rbs, Some(defaults::layer()))
}

fn allowed(l: &Layer, u: &UserInfo, r: &RequestInfo) -> bool {
    let p = Policy {
        cluster: l,
        defaults: defaults::layer(),
    };
    matches!(p.authorize(u, r, false), Verdict::Allow(_))
}

/// The objects of the decision table: a little of everything upstream's tests cover.
fn fixture() -> Layer {
    layer(&[
        cluster_role(
            "cm-reader",
            json!([{"verbs": ["get", "list", "watch"], "apiGroups": [""], "resources": ["configmaps"]}]),
        ),
        cluster_role(
            "named",
            json!([{"verbs": ["get", "update"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["one", "two"]}]),
        ),
        cluster_role(
            "scaler",
            json!([{"verbs": ["update"], "apiGroups": ["*"], "resources": ["*/scale"]}]),
        ),
        cluster_role(
            "status-writer",
            json!([{"verbs": ["patch"], "apiGroups": [""], "resources": ["configmaps/status"]}]),
        ),
        cluster_role(
            "apps-all",
            json!([{"verbs": ["*"], "apiGroups": ["apps"], "resources": ["*"]}]),
        ),
        cluster_role(
            "urls",
            json!([{"verbs": ["get"], "nonResourceURLs": ["/metrics", "/logs/*"]}, {"verbs": ["post"], "nonResourceURLs": ["/hooks"]}]),
        ),
        cluster_role(
            "verb-star",
            json!([{"verbs": ["*"], "apiGroups": [""], "resources": ["secrets"]}]),
        ),
        role(
            "team",
            "deployer",
            json!([{"verbs": ["create", "delete"], "apiGroups": ["apps"], "resources": ["deployments"]}]),
        ),
        role(
            "other",
            "deployer",
            json!([{"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]}]),
        ),
        crb(
            "alice-cm",
            "cm-reader",
            json!([{"kind": "User", "name": "alice"}]),
        ),
        crb(
            "devs-named",
            "named",
            json!([{"kind": "Group", "name": "devs"}]),
        ),
        crb(
            "scalers",
            "scaler",
            json!([{"kind": "User", "name": "scaler"}]),
        ),
        crb(
            "status",
            "status-writer",
            json!([{"kind": "User", "name": "st"}]),
        ),
        crb("urls", "urls", json!([{"kind": "Group", "name": "ops"}])),
        crb(
            "sa-apps",
            "apps-all",
            json!([{"kind": "ServiceAccount", "name": "robot", "namespace": "ci"}]),
        ),
        crb(
            "sa-without-ns",
            "apps-all",
            json!([{"kind": "ServiceAccount", "name": "ghost"}]),
        ),
        crb(
            "missing",
            "no-such-role",
            json!([{"kind": "User", "name": "mallory"}]),
        ),
        rb(
            "team",
            "deployers",
            "Role",
            "deployer",
            json!([{"kind": "User", "name": "bob"}]),
        ),
        rb(
            "team",
            "secrets",
            "ClusterRole",
            "verb-star",
            json!([{"kind": "ServiceAccount", "name": "builder"}]),
        ),
        rb(
            "team",
            "viewers",
            "ClusterRole",
            "view",
            json!([{"kind": "Group", "name": "viewers"}]),
        ),
        rb(
            "team",
            "editors",
            "ClusterRole",
            "edit",
            json!([{"kind": "User", "name": "ed"}]),
        ),
        rb(
            "team",
            "admins",
            "ClusterRole",
            "admin",
            json!([{"kind": "User", "name": "ad"}]),
        ),
        rb(
            "team",
            "dangling",
            "Role",
            "gone",
            json!([{"kind": "User", "name": "dan"}]),
        ),
    ])
}

#[test]
fn decision_table() {
    let l = fixture();
    let alice = user("alice", &["system:authenticated"]);
    let dev = user("dev1", &["devs", "system:authenticated"]);
    let scaler = user("scaler", &[]);
    let st = user("st", &[]);
    let ops = user("o", &["ops"]);
    let robot = user(
        "system:serviceaccount:ci:robot",
        &["system:serviceaccounts"],
    );
    let robot_other_ns = user("system:serviceaccount:cd:robot", &[]);
    let ghost = user("system:serviceaccount::ghost", &[]);
    let bob = user("bob", &[]);
    let builder = user("system:serviceaccount:team:builder", &[]);
    let builder_elsewhere = user("system:serviceaccount:other:builder", &[]);
    let viewer = user("v", &["viewers"]);
    let ed = user("ed", &[]);
    let ad = user("ad", &[]);
    let anon = user("system:anonymous", &["system:unauthenticated"]);
    let authn = user("nobody", &["system:authenticated"]);
    let master = user("root-user", &["system:masters"]);
    let nobody = user("nobody", &[]);
    let mallory = user("mallory", &[]);
    let dan = user("dan", &[]);
    #[rustfmt::skip]
    let table: Vec<(&UserInfo, RequestInfo, bool)> = vec![
        // Verbs, groups, resources.
        (&alice, req("get", "", "configmaps", "a", "x"), true),
        (&alice, req("list", "", "configmaps", "", ""), true),
        (&alice, req("watch", "", "configmaps", "b", ""), true),
        (&alice, req("create", "", "configmaps", "a", ""), false),
        (&alice, req("delete", "", "configmaps", "a", "x"), false),
        (&alice, req("get", "apps", "configmaps", "a", "x"), false),
        (&alice, req("get", "", "secrets", "a", "x"), false),
        // A rule for configmaps covers no subresource of it.
        (&alice, req("get", "", "configmaps/status", "a", "x"), false),
        // resourceNames: only requests naming one of them.
        (&dev, req("get", "", "configmaps", "a", "one"), true),
        (&dev, req("update", "", "configmaps", "a", "two"), true),
        (&dev, req("get", "", "configmaps", "a", "three"), false),
        (&dev, req("list", "", "configmaps", "a", ""), false),
        (&dev, req("create", "", "configmaps", "a", ""), false),
        (&dev, req("delete", "", "configmaps", "a", "one"), false),
        // */scale covers every resource's scale, nothing else.
        (&scaler, req("update", "apps", "deployments/scale", "a", "d"), true),
        (&scaler, req("update", "", "replicationcontrollers/scale", "a", "r"), true),
        (&scaler, req("update", "apps", "deployments", "a", "d"), false),
        (&scaler, req("update", "apps", "deployments/status", "a", "d"), false),
        (&scaler, req("get", "apps", "deployments/scale", "a", "d"), false),
        // resource/subresource exactly.
        (&st, req("patch", "", "configmaps/status", "a", "x"), true),
        (&st, req("patch", "", "configmaps", "a", "x"), false),
        (&st, req("patch", "", "secrets/status", "a", "x"), false),
        // resources "*" covers subresources too; verbs "*" every verb.
        (&robot, req("delete", "apps", "deployments", "x", "d"), true),
        (&robot, req("update", "apps", "deployments/scale", "x", "d"), true),
        (&robot, req("escalate", "apps", "statefulsets", "", ""), true),
        (&robot, req("get", "batch", "jobs", "x", "j"), false),
        // A ServiceAccount subject names one namespace's account.
        (&robot_other_ns, req("get", "apps", "deployments", "x", "d"), false),
        // ...and a ClusterRoleBinding's without a namespace names none.
        (&ghost, req("get", "apps", "deployments", "x", "d"), false),
        // Non-resource URLs, exact and by prefix.
        (&ops, path("get", "/metrics"), true),
        (&ops, path("get", "/logs/a/b"), true),
        (&ops, path("get", "/logs/"), true),
        (&ops, path("get", "/logs"), false),
        (&ops, path("post", "/metrics"), false),
        (&ops, path("post", "/hooks"), true),
        (&ops, path("get", "/hooks"), false),
        (&ops, req("get", "", "metrics", "", ""), false),
        // RoleBinding to a Role: its namespace only.
        (&bob, req("create", "apps", "deployments", "team", ""), true),
        (&bob, req("delete", "apps", "deployments", "team", "d"), true),
        (&bob, req("create", "apps", "deployments", "other", ""), false),
        (&bob, req("create", "apps", "deployments", "", ""), false),
        (&bob, req("get", "apps", "deployments", "team", "d"), false),
        // RoleBinding to a ClusterRole: its rules, in the binding's namespace only; the
        // subject's namespace defaults to the binding's.
        (&builder, req("get", "", "secrets", "team", "s"), true),
        (&builder, req("list", "", "secrets", "other", ""), false),
        (&builder, req("list", "", "secrets", "", ""), false),
        (&builder_elsewhere, req("get", "", "secrets", "team", "s"), false),
        // Aggregated defaults in a namespace.
        (&viewer, req("list", "", "configmaps", "team", ""), true),
        (&viewer, req("get", "apps", "deployments/scale", "team", "d"), true),
        (&viewer, req("get", "", "secrets", "team", "s"), false),
        (&viewer, req("create", "", "configmaps", "team", ""), false),
        (&ed, req("create", "", "configmaps", "team", ""), true),
        (&ed, req("get", "", "secrets", "team", "s"), true),
        (&ed, req("list", "", "configmaps", "team", ""), true),
        (&ed, req("create", "rbac.authorization.k8s.io", "roles", "team", ""), false),
        (&ad, req("create", "rbac.authorization.k8s.io", "rolebindings", "team", ""), true),
        (&ad, req("delete", "batch", "jobs", "team", "j"), true),
        (&ad, req("create", "", "namespaces", "", ""), false),
        (&ad, req("list", "", "configmaps", "default", ""), false),
        // A binding to a missing role grants nothing.
        (&mallory, req("get", "", "configmaps", "a", "x"), false),
        (&dan, req("get", "apps", "deployments", "team", "d"), false),
        // The default bindings.
        (&authn, path("get", "/apis/apps/v1"), true),
        (&authn, path("get", "/version"), true),
        (&authn, path("get", "/metrics"), false),
        (&authn, req("create", "authorization.k8s.io", "selfsubjectaccessreviews", "", ""), true),
        (&authn, req("create", "authorization.k8s.io", "selfsubjectrulesreviews", "", ""), true),
        (&authn, req("create", "authentication.k8s.io", "selfsubjectreviews", "", ""), true),
        (&authn, req("create", "authorization.k8s.io", "subjectaccessreviews", "", ""), false),
        (&authn, req("list", "", "configmaps", "", ""), false),
        (&anon, path("get", "/healthz"), true),
        (&anon, path("get", "/api"), false),
        (&anon, req("create", "authorization.k8s.io", "selfsubjectaccessreviews", "", ""), false),
        (&master, req("delete", "", "namespaces", "", "kube-system"), true),
        (&master, path("put", "/anything"), true),
        (&nobody, path("get", "/version"), false),
    ];
    assert!(table.len() >= 60, "{}", table.len());
    for (i, (u, r, want)) in table.iter().enumerate() {
        assert_eq!(allowed(&l, u, r), *want, "row {i}: {} {r:?}", u.username);
    }
}

#[test]
fn reasons_name_the_binding_as_upstream() {
    let l = fixture();
    let p = Policy {
        cluster: &l,
        defaults: defaults::layer(),
    };
    let alice = user("alice", &[]);
    assert_eq!(
        p.authorize(&alice, &req("get", "", "configmaps", "a", "x"), false),
        Verdict::Allow(
            r#"RBAC: allowed by ClusterRoleBinding "alice-cm" of ClusterRole "cm-reader" to User "alice""#
                .into()
        )
    );
    let builder = user("system:serviceaccount:team:builder", &[]);
    assert_eq!(
        p.authorize(&builder, &req("get", "", "secrets", "team", "s"), false),
        Verdict::Allow(
            r#"RBAC: allowed by RoleBinding "secrets/team" of ClusterRole "verb-star" to ServiceAccount "builder/team""#
                .into()
        )
    );
    assert_eq!(
        p.authorize(
            &user("mallory", &[]),
            &req("get", "", "configmaps", "a", "x"),
            false
        ),
        Verdict::NoOpinion(
            r#"RBAC: clusterrole.rbac.authorization.k8s.io "no-such-role" not found"#.into()
        )
    );
    assert_eq!(
        p.authorize(&alice, &req("create", "", "configmaps", "a", ""), false),
        Verdict::NoOpinion(String::new())
    );
    // Across clusters, RoleBindings do not count.
    assert!(matches!(
        p.authorize(&builder, &req("get", "", "secrets", "team", "s"), true),
        Verdict::NoOpinion(_)
    ));
}

#[test]
fn stored_objects_take_the_place_of_defaults_and_join_aggregation() {
    let authn = user("u", &["system:authenticated"]);
    let discovery = path("get", "/apis");
    // A stored binding named like a default hides it.
    let l = layer(&[crb(
        "system:discovery",
        "system:discovery",
        json!([{"kind": "Group", "name": "someone-else"}]),
    )]);
    assert!(!allowed(&l, &authn, &discovery));
    assert!(allowed(&layer(&[]), &authn, &discovery));
    // A stored ClusterRole named like a default replaces it.
    let l = layer(&[
        cluster_role("system:discovery", json!([])),
        crb(
            "x",
            "system:discovery",
            json!([{"kind": "User", "name": "u"}]),
        ),
    ]);
    assert!(!allowed(&l, &authn, &discovery));
    // A labelled ClusterRole joins view, edit and admin.
    let crontabs = req("list", "stable.example.com", "crontabs", "team", "");
    let labelled = json!({
        "metadata": {"name": "crontab-reader", "labels": {defaults::AGGREGATE_TO_VIEW: "true"}},
        "rules": [{"verbs": ["list"], "apiGroups": ["stable.example.com"], "resources": ["crontabs"]}],
    });
    for (granted, want) in [("view", true), ("edit", true), ("admin", true)] {
        let binding = rb(
            "team",
            "b",
            "ClusterRole",
            granted,
            json!([{"kind": "User", "name": "u"}]),
        );
        let with = layer(&[labelled.clone(), binding.clone()]);
        assert_eq!(allowed(&with, &authn, &crontabs), want, "{granted}");
        assert!(!allowed(&layer(&[binding]), &authn, &crontabs), "{granted}");
    }
    // A stored aggregated ClusterRole gathers its selection.
    let l = layer(&[
        labelled,
        json!({"metadata": {"name": "mine"}, "aggregationRule": {"clusterRoleSelectors": [
            {"matchLabels": {defaults::AGGREGATE_TO_VIEW: "true"}}]}}),
        crb("m", "mine", json!([{"kind": "User", "name": "u"}])),
    ]);
    assert!(allowed(&l, &authn, &crontabs));
    let p = Policy {
        cluster: &l,
        defaults: defaults::layer(),
    };
    // The defaults' view rules and the labelled role's.
    assert_eq!(
        p.cluster_role_rules("mine").map(<[Rule]>::len),
        Some(defaults::layer_view_rules() + 1)
    );
}

#[test]
fn default_aggregation_nests_view_into_edit_into_admin() {
    let p = Policy {
        cluster: &Layer::default(),
        defaults: defaults::layer(),
    };
    let n = |r: &str| p.cluster_role_rules(r).map_or(0, <[Rule]>::len);
    let view = defaults::layer_view_rules();
    assert!(view > 5);
    assert!(n("edit") > view);
    assert!(n("admin") > n("edit"));
    assert_eq!(n("cluster-admin"), 2);
    assert_eq!(n("no-such"), 0);
}

#[test]
fn rules_for_lists_every_granted_rule() {
    let l = fixture();
    let p = Policy {
        cluster: &l,
        defaults: defaults::layer(),
    };
    let bob = user("bob", &["system:authenticated"]);
    let (rules, errors) = p.rules_for(&bob, Some("team"));
    assert!(errors.is_empty());
    assert!(rules.iter().any(|r| r.resources == ["deployments"]));
    assert!(rules
        .iter()
        .any(|r| r.non_resource_urls.contains(&"/api".to_string())));
    let (rules, _) = p.rules_for(&bob, Some("other"));
    assert!(!rules.iter().any(|r| r.resources == ["deployments"]));
    let (_, errors) = p.rules_for(&user("dan", &[]), Some("team"));
    assert_eq!(
        errors,
        [r#"role.rbac.authorization.k8s.io "gone" not found"#]
    );
}

#[test]
fn bound_credentials_act_in_their_cluster_only() {
    let mut sa = user("system:serviceaccount:default:robot", &[]);
    let a = ClusterName::parse("root:a").unwrap();
    let b = ClusterName::parse("root:b").unwrap();
    assert!(bound_cluster_violation(&sa, &ClusterScope::Wildcard).is_none());
    sa.extra = BTreeMap::from([(BOUND_CLUSTER_EXTRA.to_string(), vec!["root:a".to_string()])]);
    assert!(bound_cluster_violation(&sa, &ClusterScope::One(a.clone())).is_none());
    assert!(bound_cluster_violation(&sa, &ClusterScope::One(b)).is_some());
    assert!(bound_cluster_violation(&sa, &ClusterScope::Wildcard).is_some());
    assert!(bound_cluster_violation(&sa, &ClusterScope::subtree(a)).is_some());
}

mod with_registry {
    use super::*;
    use crate::builtin_types::builtin;
    use crate::catalog::Catalog;
    use crate::options::WriteParams;
    use crate::{Registry, Target};
    use kplane_storage::Storage;

    async fn registry() -> Arc<Registry> {
        let storage: Arc<dyn Storage> = crate::testing::memory_store();
        let (_tx, shutdown) = tokio::sync::watch::channel(false);
        let (reg, _queue) = Registry::new(
            storage,
            Arc::new(Catalog::new(builtin())),
            String::new(),
            shutdown,
        );
        reg.set_auto_create_clusters(true);
        reg
    }

    fn target(reg: &Registry, cluster: &ClusterName, plural: &str, ns: Option<&str>) -> Target {
        let rt = reg
            .builtin_catalog()
            .get("rbac.authorization.k8s.io", "v1", plural)
            .cloned()
            .unwrap();
        Target::new(cluster, rt, ns.map(str::to_string))
    }

    fn in_cluster(c: &ClusterName, mut r: RequestInfo) -> RequestInfo {
        r.cluster = ClusterScope::One(c.clone());
        r
    }

    #[tokio::test]
    async fn the_cache_is_built_once_and_invalidated_by_writes_in_its_cluster_only() {
        let reg = registry().await;
        let a = ClusterName::parse("root:a").unwrap();
        let b = ClusterName::parse("root:b").unwrap();
        let alice = user("alice", &["system:authenticated"]);
        let get = req("get", "", "configmaps", "default", "x");
        let allowed = |v: Verdict| matches!(v, Verdict::Allow(_));
        assert!(!allowed(
            reg.rbac_authorize(&alice, &in_cluster(&a, get.clone()))
                .await
        ));
        assert!(!allowed(
            reg.rbac_authorize(&alice, &in_cluster(&b, get.clone()))
                .await
        ));
        let builds = reg.rbac_cache().builds();
        for _ in 0..3 {
            reg.rbac_authorize(&alice, &in_cluster(&a, get.clone()))
                .await;
        }
        assert_eq!(reg.rbac_cache().builds(), builds, "served from the cache");
        // Role and binding in a (same names as nothing in b).
        let w = WriteParams::default();
        reg.create(
            &target(&reg, &a, "roles", Some("default")),
            role("default", "r", json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["x"]}])),
            &w,
        )
        .await
        .unwrap();
        reg.create(
            &target(&reg, &a, "rolebindings", Some("default")),
            rb(
                "default",
                "rb",
                "Role",
                "r",
                json!([{"kind": "User", "name": "alice"}]),
            ),
            &w,
        )
        .await
        .unwrap();
        assert!(allowed(
            reg.rbac_authorize(&alice, &in_cluster(&a, get.clone()))
                .await
        ));
        let other = req("get", "", "configmaps", "default", "y");
        assert!(!allowed(
            reg.rbac_authorize(&alice, &in_cluster(&a, other)).await
        ));
        assert!(!allowed(
            reg.rbac_authorize(&alice, &in_cluster(&b, get.clone()))
                .await
        ));
        // Deleting the role takes the grant away at once.
        reg.delete(
            &target(&reg, &a, "roles", Some("default")),
            "r",
            &Default::default(),
        )
        .await
        .unwrap();
        let v = reg
            .rbac_authorize(&alice, &in_cluster(&a, get.clone()))
            .await;
        assert_eq!(
            v,
            Verdict::NoOpinion(r#"RBAC: role.rbac.authorization.k8s.io "r" not found"#.into())
        );
        // Many bindings (more than a storage page): only the matching one counts.
        for i in 0..1200 {
            reg.create(
                &target(&reg, &b, "clusterrolebindings", None),
                crb(
                    &format!("b{i}"),
                    "view",
                    json!([{"kind": "User", "name": format!("user-{i}")}]),
                ),
                &w,
            )
            .await
            .unwrap();
        }
        let list = req("list", "", "configmaps", "", "");
        assert!(allowed(
            reg.rbac_authorize(&user("user-1199", &[]), &in_cluster(&b, list.clone()))
                .await
        ));
        assert!(!allowed(
            reg.rbac_authorize(&user("user-1200", &[]), &in_cluster(&b, list))
                .await
        ));
    }

    #[tokio::test]
    async fn wildcard_requests_need_a_cluster_wide_grant_in_root() {
        let reg = registry().await;
        let root = ClusterName::root();
        let w = WriteParams::default();
        reg.create(
            &target(&reg, &root, "clusterrolebindings", None),
            crb("lister", "view", json!([{"kind": "User", "name": "carol"}])),
            &w,
        )
        .await
        .unwrap();
        reg.create(
            &target(&reg, &root, "rolebindings", Some("default")),
            rb(
                "default",
                "ns-view",
                "ClusterRole",
                "view",
                json!([{"kind": "User", "name": "dave"}]),
            ),
            &w,
        )
        .await
        .unwrap();
        let mut list = req("list", "", "configmaps", "", "");
        list.cluster = ClusterScope::Wildcard;
        let allowed = |v: Verdict| matches!(v, Verdict::Allow(_));
        assert!(allowed(
            reg.rbac_authorize(&user("carol", &[]), &list).await
        ));
        assert!(!allowed(
            reg.rbac_authorize(&user("dave", &[]), &list).await
        ));
        let mut in_ns = list.clone();
        in_ns.namespace = Some("default".into());
        assert!(!allowed(
            reg.rbac_authorize(&user("dave", &[]), &in_ns).await
        ));
        let mut bound = user("carol", &[]);
        bound
            .extra
            .insert(BOUND_CLUSTER_EXTRA.into(), vec!["root".into()]);
        assert!(matches!(
            reg.rbac_authorize(&bound, &list).await,
            Verdict::Deny(_)
        ));
        let mut sub = list.clone();
        sub.cluster = ClusterScope::subtree(ClusterName::parse("root:a").unwrap());
        assert!(!allowed(
            reg.rbac_authorize(&user("carol", &[]), &sub).await
        ));
    }

    #[tokio::test]
    async fn a_workspace_records_its_creator_immutably() {
        let reg = registry().await;
        let root = ClusterName::root();
        let rt = reg
            .builtin_catalog()
            .get("tenancy.kplane.io", "v1alpha1", "workspaces")
            .cloned()
            .unwrap();
        let t = Target::new(&root, rt, None);
        let w = WriteParams {
            user: Some(user("erin", &[])),
            ..Default::default()
        };
        let ws = json!({"apiVersion": "tenancy.kplane.io/v1alpha1", "kind": "Workspace",
            "metadata": {"name": "team", "annotations": {owner::OWNER_ANNOTATION: "forged"}}});
        let out: Value = serde_json::from_slice(&reg.create(&t, ws, &w).await.unwrap()).unwrap();
        assert_eq!(
            out["metadata"]["annotations"][owner::OWNER_ANNOTATION],
            "erin"
        );
        let mut next = out.clone();
        next["metadata"]["annotations"][owner::OWNER_ANNOTATION] = json!("mallory");
        let w2 = WriteParams {
            user: Some(user("mallory", &[])),
            ..Default::default()
        };
        let (stored, _) = reg.update(&t, "team", None, next, &w2).await.unwrap();
        let stored: Value = serde_json::from_slice(&stored).unwrap();
        assert_eq!(
            stored["metadata"]["annotations"][owner::OWNER_ANNOTATION],
            "erin"
        );
        // The controller's binding makes erin cluster-admin of root:team.
        let child = ClusterName::parse("root:team").unwrap();
        reg.bind_workspace_owner(&child, &stored, "test")
            .await
            .unwrap();
        reg.bind_workspace_owner(&child, &stored, "test")
            .await
            .unwrap();
        let del = in_cluster(&child, req("delete", "", "namespaces", "", "x"));
        assert!(matches!(
            reg.rbac_authorize(&user("erin", &[]), &del).await,
            Verdict::Allow(_)
        ));
        assert!(!matches!(
            reg.rbac_authorize(&user("mallory", &[]), &del).await,
            Verdict::Allow(_)
        ));
        let root_del = req("delete", "", "namespaces", "", "x");
        assert!(!matches!(
            reg.rbac_authorize(&user("erin", &[]), &root_del).await,
            Verdict::Allow(_)
        ));
    }

    /// The escalation and bind checks (admission `RbacEscalation`), as upstream's
    /// policybased storage: what a writer may put into roles and bindings.
    #[tokio::test]
    async fn roles_and_bindings_grant_only_what_their_writer_holds() {
        let reg = registry().await;
        let a = ClusterName::parse("root:a").unwrap();
        let admin = WriteParams::default();
        let bob_groups = ["system:authenticated"];
        let as_user = |u: UserInfo| WriteParams {
            user: Some(u),
            ..Default::default()
        };
        let bob = as_user(user("bob", &bob_groups));
        let roles = target(&reg, &a, "roles", Some("default"));
        let rbs = target(&reg, &a, "rolebindings", Some("default"));
        let crs = target(&reg, &a, "clusterroles", None);
        let crbs = target(&reg, &a, "clusterrolebindings", None);
        let cm_rw =
            json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["configmaps"]}]);
        reg.create(&crs, cluster_role("cm-rw", cm_rw.clone()), &admin)
            .await
            .unwrap();
        reg.create(
            &rbs,
            rb(
                "default",
                "bob",
                "ClusterRole",
                "cm-rw",
                json!([{"kind": "User", "name": "bob"}]),
            ),
            &admin,
        )
        .await
        .unwrap();
        let secrets = json!([{"verbs": ["get"], "apiGroups": [""], "resources": ["secrets"]}]);
        let refused = |e: crate::error::ApiError, want: &str| {
            assert_eq!(e.0.code, 403, "{}", e.0.message);
            assert_eq!(e.0.message, want);
        };
        let not_held = "user \"bob\" (groups=[\"system:authenticated\"]) is attempting to grant RBAC permissions not currently held:\n";

        // Roles: within what bob holds in default, yes; more, no.
        reg.create(&roles, role("default", "ok", cm_rw.clone()), &bob)
            .await
            .unwrap();
        let e = reg
            .create(&roles, role("default", "x", secrets.clone()), &bob)
            .await
            .unwrap_err();
        refused(e, &format!("roles.rbac.authorization.k8s.io \"x\" is forbidden: {not_held}{{APIGroups:[\"\"], Resources:[\"secrets\"], Verbs:[\"get\"]}}"));
        // In another namespace bob holds nothing; cluster-wide neither.
        let other = target(&reg, &a, "roles", Some("kube-public"));
        let e = reg
            .create(&other, role("kube-public", "ok", cm_rw.clone()), &bob)
            .await
            .unwrap_err();
        assert!(
            e.0.message.contains("Verbs:[\"get\" \"list\"]"),
            "{}",
            e.0.message
        );
        let e = reg
            .create(&crs, cluster_role("c", cm_rw.clone()), &bob)
            .await
            .unwrap_err();
        assert!(
            e.0.message.starts_with(
                "clusterroles.rbac.authorization.k8s.io \"c\" is forbidden: user \"bob\""
            ),
            "{}",
            e.0.message
        );
        // An update that grows a role is checked; a label-only one within bob's rights passes.
        let stored: Value = serde_json::from_slice(&reg.get(&roles, "ok").await.unwrap()).unwrap();
        let mut grown = stored.clone();
        grown["rules"] = secrets.clone();
        assert_eq!(
            reg.update(&roles, "ok", None, grown, &bob)
                .await
                .unwrap_err()
                .0
                .code,
            403
        );
        let mut labelled = stored.clone();
        labelled["metadata"]["labels"] = json!({"x": "y"});
        reg.update(&roles, "ok", None, labelled, &bob)
            .await
            .unwrap();

        // Bindings: to a role bob holds, yes; to one he does not, or a missing one, no.
        let to = |name: &str, kind: &str, role: &str| {
            rb(
                "default",
                name,
                kind,
                role,
                json!([{"kind": "User", "name": "carol"}]),
            )
        };
        reg.create(&rbs, to("b1", "Role", "ok"), &bob)
            .await
            .unwrap();
        let e = reg
            .create(&rbs, to("b2", "ClusterRole", "admin"), &bob)
            .await
            .unwrap_err();
        assert!(
            e.0.message.starts_with(&format!(
                "rolebindings.rbac.authorization.k8s.io \"b2\" is forbidden: {not_held}"
            )),
            "{}",
            e.0.message
        );
        let e = reg
            .create(&rbs, to("b3", "ClusterRole", "nope"), &bob)
            .await
            .unwrap_err();
        refused(e, "rolebindings.rbac.authorization.k8s.io \"b3\" is forbidden: clusterroles.rbac.authorization.k8s.io \"nope\" not found");
        let e = reg
            .create(
                &crbs,
                crb("c1", "cm-rw", json!([{"kind": "User", "name": "carol"}])),
                &bob,
            )
            .await
            .unwrap_err();
        assert_eq!(e.0.code, 403);

        // `escalate` on roles and `bind` on the admin ClusterRole lift the checks.
        reg.create(
            &crs,
            cluster_role("powers", json!([
                {"verbs": ["escalate"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["roles"]},
                {"verbs": ["bind"], "apiGroups": ["rbac.authorization.k8s.io"], "resources": ["clusterroles"], "resourceNames": ["admin"]},
            ])),
            &admin,
        )
        .await
        .unwrap();
        reg.create(
            &rbs,
            rb(
                "default",
                "bob-powers",
                "ClusterRole",
                "powers",
                json!([{"kind": "User", "name": "bob"}]),
            ),
            &admin,
        )
        .await
        .unwrap();
        reg.create(&roles, role("default", "x", secrets.clone()), &bob)
            .await
            .unwrap();
        reg.create(&rbs, to("b2", "ClusterRole", "admin"), &bob)
            .await
            .unwrap();
        // bind on admin only: view is still checked.
        let e = reg
            .create(&rbs, to("b4", "ClusterRole", "view"), &bob)
            .await
            .unwrap_err();
        assert_eq!(e.0.code, 403);
        // ClusterRoles are still checked (escalate was granted on roles only).
        assert_eq!(
            reg.create(&crs, cluster_role("c", cm_rw.clone()), &bob)
                .await
                .unwrap_err()
                .0
                .code,
            403
        );

        // system:masters skip the checks, an aggregationRule needs every permission.
        let masters = as_user(user("root", &["system:masters"]));
        reg.create(&crs, cluster_role("c", secrets.clone()), &masters)
            .await
            .unwrap();
        let wide = json!([{"verbs": ["*"], "apiGroups": [""], "resources": ["*"]}]);
        reg.create(&crs, cluster_role("wide", wide), &admin)
            .await
            .unwrap();
        reg.create(
            &crbs,
            crb("dan", "wide", json!([{"kind": "User", "name": "dan"}])),
            &admin,
        )
        .await
        .unwrap();
        let mut agg = cluster_role("agg", json!([]));
        agg["aggregationRule"] = json!({"clusterRoleSelectors": [{"matchLabels": {"x": "y"}}]});
        let dan = as_user(user("dan", &[]));
        let e = reg.create(&crs, agg, &dan).await.unwrap_err();
        refused(e, "clusterroles.rbac.authorization.k8s.io \"agg\" is forbidden: must have cluster-admin privileges to use the aggregationRule");
    }
}
