//! Admission webhooks through the registry's write paths, with a [`FakeTransport`]: what a
//! webhook's answer can do to a write, and what one cluster's webhooks must not do to
//! another's.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use kplane_types::ClusterName;
use serde_json::{json, Value};

use super::fake::{allow, as_user, configure, rules, target_in, FakeTransport};
use crate::testing::fixture_with_admission;

fn cluster(c: &str) -> ClusterName {
    ClusterName::parse(c).unwrap()
}

fn crd(plural: &str) -> Value {
    json!({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.example.com")},
        "spec": {"group": "example.com", "scope": "Namespaced",
            "names": {"plural": plural, "kind": "Thing", "listKind": "ThingList"},
            "versions": [{"name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object",
                    "x-kubernetes-preserve-unknown-fields": true}}}]}})
}

/// A CRD write waiting on one cluster's slow webhook holds no lock that another cluster's
/// CRD writes need.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_crd_webhook_does_not_stall_other_clusters_crd_writes() {
    let fake = FakeTransport::new(|url, review| async move {
        if url.ends_with("/slow") {
            tokio::time::sleep(Duration::from_secs(60)).await;
        }
        Ok(allow(&review, None))
    });
    let f = fixture_with_admission(fake.admission()).await;
    let reg = f.reg.clone();
    let (a, b) = (cluster("root:a"), cluster("root:b"));
    for c in [&a, &b] {
        reg.ensure_cluster(c).await.unwrap();
    }
    let crd_rules = rules("apiextensions.k8s.io", &["customresourcedefinitions"]);
    configure(
        &reg,
        &a,
        "Validating",
        "slow",
        "https://hook.test/slow",
        crd_rules.clone(),
        json!({}),
    )
    .await;
    configure(
        &reg,
        &a,
        "Mutating",
        "slow",
        "https://hook.test/slow",
        crd_rules,
        json!({}),
    )
    .await;
    let crds_a = target_in(
        &reg,
        &a,
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        None,
    );
    let crds_b = target_in(
        &reg,
        &b,
        "apiextensions.k8s.io",
        "customresourcedefinitions",
        None,
    );
    // A create, and a delete of a CRD created without a requester, both in the slow webhook.
    reg.create(&crds_a, crd("olds"), &Default::default())
        .await
        .unwrap();
    let stuck = {
        let (reg, t) = (reg.clone(), crds_a.clone());
        tokio::spawn(async move { reg.create(&t, crd("things"), &as_user()).await })
    };
    let stuck_update = {
        let (reg, t) = (reg.clone(), crds_a.clone());
        tokio::spawn(async move {
            let mut obj: Value = serde_json::from_slice(&reg.get(&t, "olds.example.com").await?)
                .map_err(|e| crate::error::ApiError::internal(e.to_string()))?;
            obj["metadata"]["labels"] = json!({"x": "y"});
            reg.update(&t, "olds.example.com", None, obj, &as_user())
                .await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!fake.urls().is_empty(), "the slow webhook was not called");
    let fast = async {
        reg.create(&crds_b, crd("things"), &as_user()).await?;
        reg.delete(&crds_b, "things.example.com", &Default::default())
            .await?;
        reg.create(&crds_b, crd("others"), &as_user()).await
    };
    tokio::time::timeout(Duration::from_secs(10), fast)
        .await
        .expect("another cluster's CRD writes waited for the slow webhook")
        .unwrap();
    assert!(!stuck.is_finished() && !stuck_update.is_finished());
    stuck.abort();
    stuck_update.abort();
    assert_eq!(
        reg.catalogs.crd_write.live(),
        0,
        "an aborted write kept its lock"
    );
}

/// A mutating webhook whose patch copies the object into itself over and over fails the
/// request (an internal error, whatever its failure policy) before the object outgrows the
/// copy limit.
#[tokio::test]
async fn a_webhook_patch_cannot_grow_the_object_without_bound() {
    let fake = FakeTransport::new(|_, review| async move {
        let ops: Vec<Value> = (0..60)
            .map(|i| json!({"op": "copy", "from": "/metadata", "path": format!("/metadata/x{i}")}))
            .collect();
        Ok(allow(&review, Some(Value::Array(ops))))
    });
    let f = fixture_with_admission(fake.admission()).await;
    let reg = &f.reg;
    let root = ClusterName::root();
    let t = crate::testing::create_namespace(reg, "ns").await;
    let extra = json!({"failurePolicy": "Ignore"});
    configure(
        reg,
        &root,
        "Mutating",
        "grow",
        "https://hook.test/grow",
        rules("", &["configmaps"]),
        extra,
    )
    .await;
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "big", "annotations": {"a": "b".repeat(4096)}}});
    let e = reg.create(&t, cm, &as_user()).await.unwrap_err();
    assert_eq!(e.code(), 500, "{e:?}");
    assert!(
        e.0.message
            .contains("Unable to complete the copy, the accumulated size increase of copy is"),
        "{e:?}"
    );
    assert_eq!(reg.get(&t, "big").await.unwrap_err().code(), 404);
}

/// A deletecollection of webhook configurations takes effect on the next request, as a
/// delete of one does (the cluster's cached webhooks are dropped before it answers).
#[tokio::test]
async fn deleted_collections_of_configurations_call_no_webhook() {
    let fake = FakeTransport::new(|_, review| async move {
        Ok(
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": review["request"]["uid"], "allowed": false}}),
        )
    });
    let f = fixture_with_admission(fake.admission()).await;
    let reg = &f.reg;
    let root = ClusterName::root();
    let t = crate::testing::create_namespace(reg, "ns").await;
    for name in ["deny-a", "deny-b"] {
        configure(
            reg,
            &root,
            "Validating",
            name,
            "https://hook.test/deny",
            rules("", &["configmaps"]),
            json!({}),
        )
        .await;
    }
    let cm = |n: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n}});
    assert_eq!(
        reg.create(&t, cm("one"), &as_user())
            .await
            .unwrap_err()
            .code(),
        400
    );
    let calls = fake.urls().len();
    let configs = target_in(
        reg,
        &root,
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
        None,
    );
    let (gone, _) = reg
        .delete_collection(&configs, &Default::default(), &Default::default())
        .await
        .unwrap();
    assert_eq!(gone.len(), 2);
    reg.create(&t, cm("two"), &as_user()).await.unwrap();
    assert_eq!(fake.urls().len(), calls, "a deleted webhook was called");
}

/// A mutating webhook that moves the object to another namespace gets the request refused
/// with upstream's 400, on create and on update; nothing is stored under the wrong key.
#[tokio::test]
async fn a_webhook_cannot_move_an_object_to_another_namespace() {
    let fake = FakeTransport::new(|_, review| async move {
        let moved = review["request"]["object"]["metadata"]["labels"]["move"] == "yes";
        let patch = moved
            .then(|| json!([{"op": "replace", "path": "/metadata/namespace", "value": "other"}]));
        Ok(allow(&review, patch))
    });
    let f = fixture_with_admission(fake.admission()).await;
    let reg = &f.reg;
    let root = ClusterName::root();
    let t = crate::testing::create_namespace(reg, "ns").await;
    crate::testing::create_namespace(reg, "other").await;
    configure(
        reg,
        &root,
        "Mutating",
        "mover",
        "https://hook.test/move",
        rules("", &["configmaps"]),
        json!({}),
    )
    .await;
    let cm = |labels: Value| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "labels": labels}});
    let message =
        "the namespace of the provided object does not match the namespace sent on the request";
    let e = reg
        .create(&t, cm(json!({"move": "yes"})), &as_user())
        .await
        .unwrap_err();
    assert_eq!((e.code(), e.0.message.as_str()), (400, message));
    reg.create(&t, cm(json!({})), &as_user()).await.unwrap();
    let mut obj: Value = serde_json::from_slice(&reg.get(&t, "cm").await.unwrap()).unwrap();
    obj["metadata"]["labels"] = json!({"move": "yes"});
    let e = reg
        .update(&t, "cm", None, obj, &as_user())
        .await
        .unwrap_err();
    assert_eq!((e.code(), e.0.message.as_str()), (400, message));
    let stored: Value = serde_json::from_slice(&reg.get(&t, "cm").await.unwrap()).unwrap();
    assert_eq!(stored["metadata"]["namespace"], "ns");
    assert!(stored["metadata"]
        .get("labels")
        .is_none_or(|l| l.get("move").is_none()));
}

/// On a Namespace's create, a webhook's namespaceSelector sees the labels an earlier
/// webhook patched onto the namespace itself (upstream reads the current object).
#[tokio::test]
async fn a_namespace_selector_sees_labels_an_earlier_webhook_added_to_the_namespace() {
    let fake = FakeTransport::new(|url, review| async move {
        let patch = url.ends_with("/label").then(
            || json!([{"op": "add", "path": "/metadata/labels", "value": {"hooked": "yes"}}]),
        );
        Ok(allow(&review, patch))
    });
    let f = fixture_with_admission(fake.admission()).await;
    let reg = &f.reg;
    let root = ClusterName::root();
    let ns_rules = rules("", &["namespaces"]);
    let unlabelled = json!({"namespaceSelector": {"matchExpressions": [{"key": "hooked", "operator": "DoesNotExist"}]}});
    configure(
        reg,
        &root,
        "Mutating",
        "a-label",
        "https://hook.test/label",
        ns_rules.clone(),
        unlabelled,
    )
    .await;
    let labelled = json!({"namespaceSelector": {"matchLabels": {"hooked": "yes"}}});
    configure(
        reg,
        &root,
        "Mutating",
        "b-check",
        "https://hook.test/check",
        ns_rules,
        labelled,
    )
    .await;
    let nst = target_in(reg, &root, "", "namespaces", None);
    let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fresh"}});
    reg.create(&nst, ns, &as_user()).await.unwrap();
    assert_eq!(
        fake.urls(),
        ["https://hook.test/label", "https://hook.test/check"]
    );
}

/// `matchConditions` run after the rules and selectors, against the object (as earlier
/// webhooks left it) and the request; all must be true for the webhook to be called. An
/// erroring condition refuses the write with 403 under `Fail` and skips the webhook under
/// `Ignore`; a false condition wins over an error.
#[tokio::test]
async fn match_conditions_decide_whether_a_webhook_is_called() {
    let fake = FakeTransport::new(|_, review| async move { Ok(allow(&review, None)) });
    let f = fixture_with_admission(fake.admission()).await;
    let reg = &f.reg;
    let root = ClusterName::root();
    let t = crate::testing::create_namespace(reg, "ns").await;
    let conditions = |c: Value| json!({"matchConditions": c});
    configure(
        reg,
        &root,
        "Validating",
        "checked",
        "https://hook.test/checked",
        rules("", &["configmaps"]),
        conditions(json!([
            {"name": "prefix", "expression": "object.metadata.name.startsWith('checked-')"},
            {"name": "request", "expression": "request.userInfo.username == 'alice' && request.kind.kind == 'ConfigMap' && request.resource.resource == 'configmaps' && request.operation == 'CREATE' && oldObject == null"},
        ])),
    )
    .await;
    configure(
        reg,
        &root,
        "Validating",
        "strict",
        "https://hook.test/strict",
        rules("", &["configmaps"]),
        conditions(json!([
            {"name": "labelled", "expression": "object.metadata.labels.strict == 'yes'"},
            {"name": "erroring", "expression": "object.data.missing == 'x'"},
        ])),
    )
    .await;
    configure(
        reg,
        &root,
        "Validating",
        "lenient",
        "https://hook.test/lenient",
        rules("", &["configmaps"]),
        json!({"failurePolicy": "Ignore", "matchConditions": [
            {"name": "erroring", "expression": "object.data.missing == 'x'"}]}),
    )
    .await;
    let cm = |name: &str, labels: Value| {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels}})
    };
    // "strict"'s two conditions both fail to evaluate: the errors aggregated, no call
    let e = reg
        .create(&t, cm("plain", json!({})), &as_user())
        .await
        .unwrap_err();
    assert_eq!(
        e.0.message,
        "configmaps \"plain\" is forbidden: [expression 'object.metadata.labels.strict == 'yes'' resulted in error: no such key: labels, expression 'object.data.missing == 'x'' resulted in error: no such key: data]"
    );
    let builds = reg.webhook_cache().builds();
    // a false condition wins over the error: "strict" is not called and refuses nothing
    reg.create(&t, cm("plain", json!({"strict": "no"})), &as_user())
        .await
        .unwrap();
    assert!(fake.urls().is_empty(), "{:?}", fake.urls());
    reg.create(&t, cm("checked-1", json!({"strict": "no"})), &as_user())
        .await
        .unwrap();
    assert_eq!(fake.urls(), ["https://hook.test/checked"]);
    let e = reg
        .create(&t, cm("other", json!({"strict": "yes"})), &as_user())
        .await
        .unwrap_err();
    assert_eq!(e.code(), 403);
    assert_eq!(
        e.0.message,
        "configmaps \"other\" is forbidden: expression 'object.data.missing == 'x'' resulted in error: no such key: data"
    );
    assert_eq!(fake.urls().len(), 1, "a webhook was called");
    assert_eq!(
        reg.webhook_cache().builds(),
        builds,
        "conditions recompiled"
    );
}

/// A webhook's `auditAnnotations` are recorded as `<webhook>/<key>` whether it allows the
/// request or not, and a key already recorded keeps its first value.
#[tokio::test]
async fn webhook_audit_annotations_are_recorded_under_the_webhooks_name() {
    let fake = FakeTransport::new(|url, review| async move {
        let allowed = url.ends_with("/allow");
        Ok(
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": review["request"]["uid"], "allowed": allowed,
                "auditAnnotations": {"checked": "yes", "by": url}}}),
        )
    });
    let f = fixture_with_admission(fake.admission()).await;
    let reg = &f.reg;
    let root = ClusterName::root();
    let t = crate::testing::create_namespace(reg, "ns").await;
    configure(
        reg,
        &root,
        "Validating",
        "allow",
        "https://hook.test/allow",
        rules("", &["configmaps"]),
        json!({}),
    )
    .await;
    let cm = |n: &str| json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": n}});
    let w = as_user();
    reg.create(&t, cm("one"), &w).await.unwrap();
    let got = w.audit.all();
    assert_eq!(got["allow.kplane.test/checked"], "yes", "{got:?}");
    assert_eq!(got["allow.kplane.test/by"], "https://hook.test/allow");
    configure(
        reg,
        &root,
        "Validating",
        "deny",
        "https://hook.test/deny",
        rules("", &["configmaps"]),
        json!({}),
    )
    .await;
    let w = as_user();
    assert!(reg.create(&t, cm("two"), &w).await.is_err());
    let got = w.audit.all();
    assert_eq!(got["deny.kplane.test/checked"], "yes", "{got:?}");
}

/// A webhook answer whose `auditAnnotations` hold a value that is not a string fails to
/// decode (upstream's `map[string]string`); under `Ignore` the request goes on and the
/// audit annotation `failed-open.validating.webhook.admission.k8s.io/round_0_index_<i>`
/// names the webhook, `<i>` its place among the webhooks called.
#[tokio::test]
async fn a_failed_call_under_ignore_is_recorded_as_failed_open() {
    let fake = FakeTransport::new(|url, review| async move {
        let value = if url.ends_with("/number") {
            json!(1)
        } else {
            json!("ok")
        };
        Ok(
            json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
            "response": {"uid": review["request"]["uid"], "allowed": true,
                "auditAnnotations": {"k": value}}}),
        )
    });
    let f = fixture_with_admission(fake.admission()).await;
    let reg = &f.reg;
    let root = ClusterName::root();
    let t = crate::testing::create_namespace(reg, "ns").await;
    for (name, url, policy) in [
        ("a-good", "https://hook.test/good", "Fail"),
        ("b-number", "https://hook.test/number", "Ignore"),
    ] {
        configure(
            reg,
            &root,
            "Validating",
            name,
            url,
            rules("", &["configmaps"]),
            json!({"failurePolicy": policy}),
        )
        .await;
    }
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}});
    let w = as_user();
    reg.create(&t, cm.clone(), &w).await.unwrap();
    let got = w.audit.all();
    assert_eq!(got["a-good.kplane.test/k"], "ok", "{got:?}");
    assert!(!got.contains_key("b-number.kplane.test/k"), "{got:?}");
    assert_eq!(
        got["failed-open.validating.webhook.admission.k8s.io/round_0_index_1"],
        "b-number.kplane.test",
        "{got:?}"
    );
    // Under Fail the same answer refuses the request.
    configure(
        reg,
        &root,
        "Validating",
        "c-number",
        "https://hook.test/number",
        rules("", &["configmaps"]),
        json!({"failurePolicy": "Fail"}),
    )
    .await;
    let e = reg
        .create(
            &t,
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "d"}}),
            &as_user(),
        )
        .await
        .unwrap_err();
    assert!(
        e.0.message.contains("cannot unmarshal number into Go struct field AdmissionResponse.response.auditAnnotations of type string"),
        "{}",
        e.0.message
    );
}

/// Each mutating call records `mutation.webhook.admission.k8s.io/round_<r>_index_<i>`
/// (whether it changed the object) and, for a patch, `patch.webhook.admission.k8s.io/...`
/// with the patch, which audit events carry only at the `Request` level and above.
#[tokio::test]
async fn mutating_calls_record_upstreams_mutation_and_patch_annotations() {
    let fake = FakeTransport::new(|url, review| async move {
        let patch = url.ends_with("/label").then(
            || json!([{"value": {"hooked": "yes"}, "path": "/metadata/labels", "op": "add"}]),
        );
        Ok(allow(&review, patch))
    });
    let f = fixture_with_admission(fake.admission()).await;
    let reg = &f.reg;
    let root = ClusterName::root();
    let t = crate::testing::create_namespace(reg, "ns").await;
    for (name, url) in [
        ("a-label", "https://hook.test/label"),
        ("b-noop", "https://hook.test/noop"),
    ] {
        configure(
            reg,
            &root,
            "Mutating",
            name,
            url,
            rules("", &["configmaps"]),
            json!({}),
        )
        .await;
    }
    let w = as_user();
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m"}});
    reg.create(&t, cm, &w).await.unwrap();
    let got = w.audit.all();
    assert_eq!(
        got["mutation.webhook.admission.k8s.io/round_0_index_0"],
        r#"{"configuration":"a-label","webhook":"a-label.kplane.test","mutated":true}"#,
        "{got:?}"
    );
    assert_eq!(
        got["mutation.webhook.admission.k8s.io/round_0_index_1"],
        r#"{"configuration":"b-noop","webhook":"b-noop.kplane.test","mutated":false}"#
    );
    let patch = "patch.webhook.admission.k8s.io/round_0_index_0";
    assert_eq!(
        got[patch],
        r#"{"configuration":"a-label","webhook":"a-label.kplane.test","patch":[{"op":"add","path":"/metadata/labels","value":{"hooked":"yes"}}],"patchType":"JSONPatch"}"#
    );
    assert!(!got.contains_key("patch.webhook.admission.k8s.io/round_0_index_1"));
    // The patch is kept only for the Request level and above.
    assert!(!w.audit.at_level(false).contains_key(patch));
    assert!(w
        .audit
        .at_level(false)
        .contains_key("mutation.webhook.admission.k8s.io/round_0_index_0"));
}
