//! CEL's `authorizer` in policies and webhooks' `matchConditions`, through the registry's
//! write paths: checks are decided by the logical cluster's RBAC for the requester (or a
//! service account).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use kplane_types::{ClusterName, UserInfo};
use serde_json::{json, Value};

use crate::options::WriteParams;
use crate::testing::{create_namespace, fixture_with_admission, target};
use crate::webhooks::fake::{allow, configure, FakeTransport};
use crate::Registry;

fn as_user(name: &str) -> WriteParams {
    WriteParams {
        user: Some(UserInfo {
            username: name.into(),
            groups: vec!["system:authenticated".into()],
            ..Default::default()
        }),
        ..Default::default()
    }
}

fn cm(name: &str, labels: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "ConfigMap",
           "metadata": {"name": name, "namespace": "ns", "labels": labels}})
}

/// Stores a Role in `ns` allowing `verbs` on `resources`, bound to `subject`.
async fn grant(reg: &Registry, name: &str, verbs: &[&str], resources: &[&str], subject: Value) {
    let roles = target(reg, "rbac.authorization.k8s.io", "roles", Some("ns"));
    let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": name, "namespace": "ns"},
        "rules": [{"apiGroups": [""], "resources": resources, "verbs": verbs}]});
    reg.create(&roles, role, &WriteParams::default())
        .await
        .unwrap();
    let bindings = target(reg, "rbac.authorization.k8s.io", "rolebindings", Some("ns"));
    let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": "ns"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name},
        "subjects": [subject]});
    reg.create(&bindings, binding, &WriteParams::default())
        .await
        .unwrap();
}

fn user(name: &str) -> Value {
    json!({"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": name})
}

/// Stores a policy on ConfigMap creates with `spec` merged in, and its `Deny` binding.
async fn policy(reg: &Registry, name: &str, spec: Value) {
    let mut s = json!({"matchConstraints": {"resourceRules": [{"apiGroups": [""],
        "apiVersions": ["v1"], "operations": ["CREATE"], "resources": ["configmaps"]}]}});
    if let (Some(m), Value::Object(extra)) = (s.as_object_mut(), spec) {
        m.extend(extra);
    }
    let pt = target(
        reg,
        "admissionregistration.k8s.io",
        "validatingadmissionpolicies",
        None,
    );
    let p = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicy", "metadata": {"name": name}, "spec": s});
    reg.create(&pt, p, &WriteParams::default()).await.unwrap();
    let bt = target(
        reg,
        "admissionregistration.k8s.io",
        "validatingadmissionpolicybindings",
        None,
    );
    let b = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": "ValidatingAdmissionPolicyBinding", "metadata": {"name": name},
        "spec": {"policyName": name, "validationActions": ["Deny"]}});
    reg.create(&bt, b, &WriteParams::default()).await.unwrap();
}

/// A policy asking whether the requester may read Secrets in the object's namespace
/// admits a user RBAC lets read them and refuses one it does not; the decision's reason
/// is RBAC's (a SubjectAccessReview's). A service account's check asks about the service
/// account, whatever the requester may do.
#[tokio::test]
async fn policies_check_the_requester_and_service_accounts_against_rbac() {
    let fake = FakeTransport::new(|_, review| async move { Ok(allow(&review, None)) });
    let f = fixture_with_admission(fake.admission()).await;
    let reg = &f.reg;
    let t = create_namespace(reg, "ns").await;
    grant(reg, "secret-reader", &["get"], &["secrets"], user("alice")).await;
    let sa = json!({"kind": "ServiceAccount", "name": "builder", "namespace": "ns"});
    grant(reg, "sa-reader", &["get"], &["secrets"], sa).await;
    let reads = "authorizer.group('').resource('secrets').namespace(object.metadata.namespace)";
    policy(
        reg,
        "secret-readers",
        json!({"validations": [
            {"expression": format!("{reads}.check('get').allowed()"),
             "message": "only secret readers may create config maps"},
            {"expression": format!("!{reads}.check('get').allowed() || {reads}.check('get').reason() == 'RBAC: allowed by RoleBinding \"secret-reader/ns\" of Role \"secret-reader\" to User \"alice\"'"),
             "message": "unexpected reason"},
        ]}),
    )
    .await;
    policy(
        reg,
        "service-accounts",
        json!({"matchConditions": [{"name": "sa", "expression": "has(object.metadata.labels) && 'sa' in object.metadata.labels"}],
            "validations": [{"expression": format!("authorizer.serviceAccount('ns', object.metadata.labels.sa).group('').resource('secrets').namespace('ns').check('get').allowed()"),
                "message": "the service account may not read secrets"}]}),
    )
    .await;
    reg.create(&t, cm("a", json!({})), &as_user("alice"))
        .await
        .unwrap();
    let e = reg
        .create(&t, cm("b", json!({})), &as_user("bob"))
        .await
        .unwrap_err();
    assert_eq!(e.code(), 422);
    assert_eq!(
        e.0.message,
        "configmaps \"b\" is forbidden: ValidatingAdmissionPolicy 'secret-readers' with binding 'secret-readers' denied request: only secret readers may create config maps"
    );
    reg.create(&t, cm("c", json!({"sa": "builder"})), &as_user("alice"))
        .await
        .unwrap();
    let e = reg
        .create(&t, cm("d", json!({"sa": "other"})), &as_user("alice"))
        .await
        .unwrap_err();
    assert!(
        e.0.message
            .ends_with("denied request: the service account may not read secrets"),
        "{}",
        e.0.message
    );
    // writes without a requester are not checked
    reg.create(&t, cm("e", json!({})), &WriteParams::default())
        .await
        .unwrap();
    assert!(fake.urls().is_empty());
}

/// A webhook whose `matchConditions` ask `authorizer.requestResource.check('delete')` is
/// called only for requesters RBAC lets delete the object they create.
#[tokio::test]
async fn webhook_match_conditions_check_the_request_resource() {
    let fake = FakeTransport::new(|_, review| async move { Ok(allow(&review, None)) });
    let f = fixture_with_admission(fake.admission()).await;
    let reg = &f.reg;
    let t = create_namespace(reg, "ns").await;
    grant(reg, "deleter", &["delete"], &["configmaps"], user("alice")).await;
    configure(
        reg,
        &ClusterName::root(),
        "Validating",
        "deleters",
        "https://hook.test/deleters",
        crate::webhooks::fake::rules("", &["configmaps"]),
        json!({"matchConditions": [{"name": "may-delete",
            "expression": "authorizer.requestResource.check('delete').allowed()"}]}),
    )
    .await;
    reg.create(&t, cm("by-bob", json!({})), &as_user("bob"))
        .await
        .unwrap();
    assert!(fake.urls().is_empty(), "{:?}", fake.urls());
    reg.create(&t, cm("by-alice", json!({})), &as_user("alice"))
        .await
        .unwrap();
    assert_eq!(fake.urls(), ["https://hook.test/deleters"]);
}
