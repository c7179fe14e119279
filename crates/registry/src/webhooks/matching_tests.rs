#![allow(clippy::unwrap_used)]
//! Rules, match policy and selectors as upstream's predicates decide them.

use super::*;
use crate::webhooks::model::parse_configuration;
use serde_json::json;

fn req(
    op: Operation,
    group: &'static str,
    resource: &'static str,
    sub: &'static str,
    ns: &'static str,
) -> Request<'static> {
    Request {
        operation: op,
        group,
        version: "v1",
        resource,
        subresource: sub,
        namespace: ns,
        is_namespace: group.is_empty() && resource == "namespaces",
    }
}

fn rule(ops: &[&str], groups: &[&str], resources: &[&str], scope: &str) -> Rule {
    let s = |l: &[&str]| l.iter().map(|x| x.to_string()).collect();
    Rule {
        operations: s(ops),
        api_groups: s(groups),
        api_versions: s(&["*"]),
        resources: s(resources),
        scope: scope.into(),
    }
}

#[test]
fn rules_match_operations_groups_resources_and_subresources() {
    let cm = req(Operation::Create, "", "configmaps", "", "default");
    assert!(rule_matches(
        &rule(&["CREATE"], &[""], &["configmaps"], "*"),
        &cm
    ));
    assert!(rule_matches(&rule(&["*"], &["*"], &["*"], "*"), &cm));
    assert!(!rule_matches(
        &rule(&["UPDATE"], &[""], &["configmaps"], "*"),
        &cm
    ));
    assert!(!rule_matches(
        &rule(&["CREATE"], &["apps"], &["configmaps"], "*"),
        &cm
    ));
    assert!(!rule_matches(
        &rule(&["CREATE"], &[""], &["secrets"], "*"),
        &cm
    ));
    // A subresource matches only `res/sub`, `res/*`, `*/sub` or `*/*`.
    let status = req(Operation::Update, "batch", "jobs", "status", "default");
    assert!(!rule_matches(
        &rule(&["*"], &["*"], &["jobs"], "*"),
        &status
    ));
    assert!(!rule_matches(&rule(&["*"], &["*"], &["*"], "*"), &status));
    for r in ["jobs/status", "jobs/*", "*/status", "*/*"] {
        assert!(
            rule_matches(&rule(&["*"], &["*"], &[r], "*"), &status),
            "{r}"
        );
    }
    assert!(!rule_matches(
        &rule(&["*"], &["*"], &["jobs/scale"], "*"),
        &status
    ));
    assert!(rule_matches(&rule(&["*"], &["*"], &["*/*"], "*"), &cm));
}

#[test]
fn scopes_treat_namespaces_as_cluster_scoped() {
    let cm = req(Operation::Create, "", "configmaps", "", "default");
    let role = req(
        Operation::Create,
        "rbac.authorization.k8s.io",
        "clusterroles",
        "",
        "",
    );
    let ns = req(Operation::Create, "", "namespaces", "", "team");
    let namespaced = rule(&["*"], &["*"], &["*"], "Namespaced");
    let cluster = rule(&["*"], &["*"], &["*"], "Cluster");
    assert!(rule_matches(&namespaced, &cm));
    assert!(!rule_matches(&namespaced, &role));
    assert!(!rule_matches(&namespaced, &ns));
    assert!(!rule_matches(&cluster, &cm));
    assert!(rule_matches(&cluster, &role));
    assert!(rule_matches(&cluster, &ns));
}

fn webhook(extra: serde_json::Value) -> Webhook {
    let mut h = json!({"name": "a.b.c", "sideEffects": "None", "admissionReviewVersions": ["v1"],
        "clientConfig": {"url": "https://h"},
        "rules": [{"operations": ["CREATE"], "apiGroups": ["events.k8s.io"], "apiVersions": ["v1"], "resources": ["events"]}]});
    if let (Some(o), serde_json::Value::Object(e)) = (h.as_object_mut(), extra) {
        o.extend(e);
    }
    parse_configuration(&json!({"metadata": {"name": "c"}, "webhooks": [h]}))
        .pop()
        .unwrap()
}

#[test]
fn equivalent_resources_match_unless_the_policy_is_exact() {
    let catalog = Catalog::new(crate::builtin_types::builtin());
    let core = catalog.get("", "v1", "events").unwrap().clone();
    let r = req(Operation::Create, "", "events", "", "default");
    let equivalent = webhook(json!({}));
    let got = matched_resource(&equivalent, &r, &core, Some(&catalog)).unwrap();
    assert_eq!(
        (got.group.as_str(), got.kind.as_str()),
        ("events.k8s.io", "Event")
    );
    // Without the catalog (not read yet) only the request's own resource matches.
    assert!(matched_resource(&equivalent, &r, &core, None).is_none());
    let exact = webhook(json!({"matchPolicy": "Exact"}));
    assert!(matched_resource(&exact, &r, &core, Some(&catalog)).is_none());
    // A ConfigMap has no equivalent.
    let cm = catalog.get("", "v1", "configmaps").unwrap().clone();
    let rc = req(Operation::Create, "", "configmaps", "", "default");
    assert!(matched_resource(&equivalent, &rc, &cm, Some(&catalog)).is_none());
}

#[test]
fn selectors_match_new_or_old_labels_and_namespaces_only_when_needed() {
    let h = webhook(json!({"objectSelector": {"matchLabels": {"hook": "on"}},
                           "namespaceSelector": {"matchExpressions": [{"key": "env", "operator": "In", "values": ["prod"]}]}}));
    let on = json!({"metadata": {"labels": {"hook": "on"}}});
    let off = json!({"metadata": {"labels": {"hook": "off"}}});
    assert!(object_selector_matches(&h.object_selector, Some(&on), None));
    assert!(object_selector_matches(
        &h.object_selector,
        Some(&off),
        Some(&on)
    ));
    assert!(!object_selector_matches(
        &h.object_selector,
        Some(&off),
        None
    ));
    assert!(!object_selector_matches(&h.object_selector, None, None));
    let all = webhook(json!({}));
    assert!(object_selector_matches(&all.object_selector, None, None));
    let cluster_scoped = req(
        Operation::Create,
        "rbac.authorization.k8s.io",
        "clusterroles",
        "",
        "",
    );
    let ns = req(Operation::Create, "", "namespaces", "", "team");
    let cm = req(Operation::Create, "", "configmaps", "", "default");
    assert!(!needs_namespace_labels(
        &h.namespace_selector,
        &cluster_scoped
    ));
    assert!(needs_namespace_labels(&h.namespace_selector, &ns));
    assert!(needs_namespace_labels(&h.namespace_selector, &cm));
    assert!(!needs_namespace_labels(&all.namespace_selector, &cm));
    let mut prod = serde_json::Map::new();
    prod.insert("env".into(), json!("prod"));
    assert!(h.namespace_selector.matches(&prod));
    assert!(!h.namespace_selector.matches(&serde_json::Map::new()));
}

#[test]
fn parsed_webhooks_keep_their_policies() {
    let h = webhook(
        json!({"failurePolicy": "Ignore", "timeoutSeconds": 3, "reinvocationPolicy": "IfNeeded",
        "admissionReviewVersions": ["v2", "v1beta1", "v1"], "sideEffects": "Some",
        "clientConfig": {"url": "https://h/x", "caBundle": "UEVN"}}),
    );
    assert!(h.ignore_failures && h.reinvoke && !h.dry_run_safe && !h.exact);
    assert_eq!(h.timeout, std::time::Duration::from_secs(3));
    assert_eq!(h.review_version, Some("v1beta1"));
    assert_eq!(h.client.ca_bundle, b"PEM");
    assert_eq!(h.uid, "c/0");
    assert_eq!(h.client.display_url(h.timeout), "https://h/x?timeout=3s");
}
