//! The status controller: which kinds a policy is checked against, the warnings for
//! built-ins and custom resources, and the status it applies.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kplane_types::ClusterName;
use serde_json::{json, Value};

use super::{check_policy, types_to_check, ExpressionWarning, MANAGER, MAX_TYPES};
use crate::builtin_types::builtin;
use crate::catalog::Catalog;
use crate::options::WriteParams;
use crate::testing::{fixture, target};
use crate::Registry;

fn policy(rules: Value, validations: Value) -> Value {
    json!({"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
        "metadata": {"name": "p"},
        "spec": {"matchConstraints": {"resourceRules": rules}, "validations": validations}})
}

fn rule(groups: Value, versions: Value, resources: Value) -> Value {
    json!({"operations": ["CREATE"], "apiGroups": groups, "apiVersions": versions,
        "resources": resources})
}

fn kinds(p: &Value, catalog: &Catalog) -> Vec<String> {
    types_to_check(p, catalog)
        .into_iter()
        .map(|((g, v, k), _)| format!("{g}/{v}, Kind={k}"))
        .collect()
}

#[test]
fn wildcards_give_up_and_subresources_are_skipped() {
    let catalog = Catalog::new(builtin());
    let v = json!([{"expression": "true"}]);
    for r in [
        rule(json!(["*"]), json!(["v1"]), json!(["configmaps"])),
        rule(json!([""]), json!(["*"]), json!(["configmaps"])),
        rule(json!([""]), json!(["v1"]), json!(["*", "pods/status"])),
        rule(json!([]), json!(["v1"]), json!(["configmaps"])),
        rule(json!([""]), json!(["v2"]), json!(["configmaps"])),
    ] {
        assert_eq!(
            kinds(&policy(json!([r]), v.clone()), &catalog),
            Vec::<String>::new()
        );
    }
    let r = rule(
        json!([""]),
        json!(["v1"]),
        json!(["pods/status", "pods", "configmap"]),
    );
    assert_eq!(
        kinds(&policy(json!([r]), v), &catalog),
        ["/v1, Kind=ConfigMap", "/v1, Kind=Pod"]
    );
}

/// A rule stops at ten kinds, taken in sorted group, version, resource order; the kinds
/// are checked sorted by group, version and kind.
#[test]
fn at_most_ten_kinds_per_rule() {
    let catalog = Catalog::new(builtin());
    let groups = json!([
        "rbac.authorization.k8s.io",
        "networking.k8s.io",
        "coordination.k8s.io",
        "batch",
        ""
    ]);
    let resources = json!([
        "serviceaccounts",
        "secrets",
        "roles",
        "rolebindings",
        "resourcequotas",
        "pods",
        "networkpolicies",
        "namespaces",
        "leases",
        "jobs",
        "events",
        "configmaps"
    ]);
    let p = policy(
        json!([rule(groups, json!(["v1"]), resources)]),
        json!([{"expression": "true"}]),
    );
    let got = kinds(&p, &catalog);
    assert_eq!(got.len(), MAX_TYPES);
    assert_eq!(
        got,
        [
            "/v1, Kind=ConfigMap",
            "/v1, Kind=Event",
            "/v1, Kind=Namespace",
            "/v1, Kind=Pod",
            "/v1, Kind=ResourceQuota",
            "/v1, Kind=Secret",
            "/v1, Kind=ServiceAccount",
            "batch/v1, Kind=Job",
            "coordination.k8s.io/v1, Kind=Lease",
            "networking.k8s.io/v1, Kind=NetworkPolicy",
        ]
    );
}

fn warnings(p: &Value, catalog: &Catalog) -> Vec<(String, String)> {
    check_policy(p, catalog)
        .into_iter()
        .map(|ExpressionWarning { field_ref, warning }| (field_ref, warning))
        .collect()
}

#[test]
fn built_in_kinds_are_typed_by_their_openapi_definitions() {
    let catalog = Catalog::new(builtin());
    let cm = json!([rule(json!([""]), json!(["v1"]), json!(["configmaps"]))]);
    let p = policy(
        cm.clone(),
        json!([{"expression": "object.data.foo > 1"},
               {"expression": "object.data.foo == 'x'",
                "messageExpression": "'got ' + object.metadata.name + object.metadata.generation"},
               {"expression": "object.metadata.labels.all(k, k.size() < 10) && object.immutable"}]),
    );
    assert_eq!(
        warnings(&p, &catalog),
        [
            (
                "spec.validations[0].expression".into(),
                "/v1, Kind=ConfigMap: ERROR: <input>: found no matching overload for '_>_' applied to '(string, int)'\n".into()
            ),
            (
                "spec.validations[1].messageExpression".into(),
                "/v1, Kind=ConfigMap: ERROR: <input>: found no matching overload for '_+_' applied to '(string, int)'\n".into()
            ),
        ]
    );
    // nested definitions (the pod's containers) and a kind of another group
    let pods = json!([rule(
        json!(["", "batch"]),
        json!(["v1"]),
        json!(["pods", "jobs"])
    )]);
    let p = policy(
        pods,
        json!([{"expression": "has(object.spec) && object.spec.containers.all(c, c.image > 1)"},
               {"expression": "object.spec.parallelism > '1'"},
               {"expression": "object.metadata.creationTimestamp < timestamp('2030-01-01T00:00:00Z')"}]),
    );
    let got = warnings(&p, &catalog);
    assert_eq!(got.len(), 2, "{got:#?}");
    assert_eq!(got[0].0, "spec.validations[0].expression");
    assert_eq!(
        got[0].1,
        "/v1, Kind=Pod: ERROR: <input>: found no matching overload for '_>_' applied to '(string, int)'\n\nbatch/v1, Kind=Job: ERROR: <input>: undefined field 'containers'\n"
    );
    assert_eq!(got[1].0, "spec.validations[1].expression");
    assert!(got[1].1.starts_with("/v1, Kind=Pod: ERROR: <input>: undefined field 'parallelism'\n\nbatch/v1, Kind=Job: ERROR: <input>: found no matching overload for '_>_' applied to '(int, string)'\n"), "{}", got[1].1);
    // params of a built-in kind, variables
    let mut p = policy(
        cm,
        json!([{"expression": "object.data.size() < params.data.max"},
               {"expression": "variables.n + 1 > 0"}]),
    );
    p["spec"]["paramKind"] = json!({"apiVersion": "v1", "kind": "Secret"});
    p["spec"]["variables"] = json!([{"name": "n", "expression": "object.data.size()"}]);
    let got = warnings(&p, &catalog);
    assert_eq!(got.len(), 1, "{got:#?}");
    assert!(
        got[0].1.ends_with("'_<_' applied to '(int, bytes)'\n"),
        "{got:#?}"
    );
}

fn crontab_crd(group: &str) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("crontabs.{group}")},
        "spec": {"group": group, "scope": "Namespaced",
            "names": {"plural": "crontabs", "singular": "crontab", "kind": "CronTab",
                      "listKind": "CronTabList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                    "spec": {"type": "object", "properties": {
                        "cronSpec": {"type": "string"},
                        "image": {"type": "string"},
                        "replicas": {"type": "integer"}}}}}}}]}})
}

async fn stored_policy(reg: &Registry, name: &str) -> Value {
    let t = target(
        reg,
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
        None,
    );
    serde_json::from_slice(&reg.get(&t, name).await.unwrap()).unwrap()
}

/// upstream's e2e "should type check a CRD", and a policy with nothing to check.
#[tokio::test]
async fn the_status_of_policies_over_a_crd() {
    let f = fixture().await;
    let reg = &f.reg;
    let root = ClusterName::root();
    let w = WriteParams::default();
    let crds = target(
        reg,
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        None,
    );
    reg.create(&crds, crontab_crd("stable.example.com"), &w)
        .await
        .unwrap();
    let policies = target(
        reg,
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
        None,
    );
    let rules = json!([rule(
        json!(["stable.example.com"]),
        json!(["v1"]),
        json!(["crontabs"])
    )]);
    let mut good = policy(
        rules.clone(),
        json!([{"expression": "object.spec.replicas > 1"}]),
    );
    good["metadata"]["name"] = json!("good");
    let mut bad = policy(
        rules,
        json!([{"expression": "object.spec.replicas > '1'"},
               {"expression": "object.spec.maxRetries < 10"}]),
    );
    bad["metadata"]["name"] = json!("bad");
    let mut wild = policy(
        json!([rule(json!(["*"]), json!(["*"]), json!(["*"]))]),
        json!([{"expression": "object.spec.replicas > '1'"}]),
    );
    wild["metadata"]["name"] = json!("wild");
    for p in [good, bad, wild] {
        reg.create(&policies, p, &w).await.unwrap();
    }
    for name in ["good", "bad", "wild"] {
        assert!(
            crate::policies::status::sync_policy_status(reg, &root, name)
                .await
                .unwrap()
        );
    }

    let good = stored_policy(reg, "good").await;
    assert_eq!(
        good["status"],
        json!({"observedGeneration": 1, "typeChecking": {}})
    );
    let managers = good["metadata"]["managedFields"].as_array().unwrap();
    let status_entry = managers
        .iter()
        .find(|m| m["manager"] == MANAGER)
        .expect("the controller's entry");
    assert_eq!(status_entry["operation"], "Apply");
    assert_eq!(status_entry["subresource"], "status");
    let wild = stored_policy(reg, "wild").await;
    assert_eq!(
        wild["status"],
        json!({"observedGeneration": 1, "typeChecking": {}})
    );

    let bad = stored_policy(reg, "bad").await;
    assert_eq!(bad["status"]["observedGeneration"], 1);
    let found = bad["status"]["typeChecking"]["expressionWarnings"]
        .as_array()
        .unwrap();
    assert_eq!(found.len(), 2, "{found:#?}");
    assert_eq!(found[0]["fieldRef"], "spec.validations[0].expression");
    assert_eq!(
        found[0]["warning"],
        "stable.example.com/v1, Kind=CronTab: ERROR: <input>: found no matching overload for '_>_' applied to '(int, string)'\n"
    );
    assert_eq!(found[1]["fieldRef"], "spec.validations[1].expression");
    assert_eq!(
        found[1]["warning"],
        "stable.example.com/v1, Kind=CronTab: ERROR: <input>: undefined field 'maxRetries'\n"
    );

    // Nothing to do once observed; a new generation is checked again (the warnings go:
    // the forced apply owns the whole list).
    let rv = bad["metadata"]["resourceVersion"].clone();
    assert!(
        crate::policies::status::sync_policy_status(reg, &root, "bad")
            .await
            .unwrap()
    );
    let again = stored_policy(reg, "bad").await;
    assert_eq!(again["metadata"]["resourceVersion"], rv);
    assert_eq!(
        again["metadata"]["generation"], 1,
        "a status write is no new generation"
    );
    let mut fixed = bad.clone();
    fixed["spec"]["validations"] =
        json!([{"expression": "object.spec.replicas > 1 && object.metadata.namespace != ''"}]);
    reg.update(&policies, "bad", None, fixed, &w).await.unwrap();
    assert!(
        crate::policies::status::sync_policy_status(reg, &root, "bad")
            .await
            .unwrap()
    );
    let fixed = stored_policy(reg, "bad").await;
    assert_eq!(fixed["metadata"]["generation"], 2);
    // As server-side apply does upstream: the warnings the manager no longer applies are
    // removed, and the map they emptied goes with them (structured-merge-diff's removal).
    assert_eq!(fixed["status"], json!({"observedGeneration": 2}));
    // a policy gone meanwhile is done with
    assert!(
        crate::policies::status::sync_policy_status(reg, &root, "nope")
            .await
            .unwrap()
    );
}

/// The work is queued by the informer handler for a policy whose generation is not yet
/// observed, never for one that is.
#[test]
fn only_unobserved_generations_need_a_check() {
    let p = |generation: i64, observed: Option<i64>| {
        let mut v = json!({"metadata": {"generation": generation}});
        if let Some(o) = observed {
            v["status"] = json!({"observedGeneration": o});
        }
        super::needs_check(&v)
    };
    assert!(p(1, None));
    assert!(p(2, Some(1)));
    assert!(!p(1, Some(1)));
    assert!(!p(1, Some(2)));
}
