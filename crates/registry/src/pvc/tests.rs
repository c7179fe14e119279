//! PersistentVolumeClaim defaults and validation against upstream's paths and messages,
//! and the strategy through a real registry (stored form, status kept, 422s).
#![allow(clippy::unwrap_used)]

use kplane_types::Cause;
use serde_json::{json, Value};

use super::{default, validate};
use crate::options::WriteParams;
use crate::testing::{self, target};

fn rendered(causes: &[Cause]) -> Vec<String> {
    causes.iter().map(Cause::render).collect()
}

fn claim(spec: Value) -> Value {
    json!({"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": "data", "namespace": "default"}, "spec": spec})
}

fn ok_spec() -> Value {
    json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}})
}

#[test]
fn claims_default_to_a_filesystem_volume_and_a_pending_phase() {
    let mut c = claim(ok_spec());
    default(&mut c);
    assert_eq!(c["spec"]["volumeMode"], "Filesystem");
    assert_eq!(c["status"], json!({"phase": "Pending"}));
    let mut block = claim(json!({"volumeMode": "Block"}));
    default(&mut block);
    assert_eq!(block["spec"]["volumeMode"], "Block");
}

#[test]
fn spec_errors_have_upstreams_paths_and_messages() {
    let cases: &[(&str, Value, &[&str])] = &[
        ("valid", ok_spec(), &[]),
        (
            "nothing",
            json!({}),
            &[
                "spec.accessModes: Required value: at least 1 access mode is required",
                "spec.resources[storage]: Required value",
            ],
        ),
        (
            "modes",
            json!({"accessModes": ["ReadWriteOncePod", "ReadWriteOnce", "Sometimes"],
                   "resources": {"requests": {"storage": "1Gi"}}}),
            &[
                "spec.accessModes: Unsupported value: \"Sometimes\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\"",
                "spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes",
            ],
        ),
        (
            "zero storage, a bad class and mode",
            json!({"accessModes": ["ReadWriteMany"], "resources": {"requests": {"storage": "0"}},
                   "storageClassName": "Fast_SSD", "volumeMode": "Tape"}),
            &[
                "spec.resources[storage]: Invalid value: \"0\": must be greater than zero",
                "spec.storageClassName: Invalid value: \"Fast_SSD\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
                "spec.volumeMode: Unsupported value: \"Tape\": supported values: \"Block\", \"Filesystem\"",
            ],
        ),
        (
            "a storage request that is not a quantity",
            json!({"accessModes": ["ReadOnlyMany"], "resources": {"requests": {"storage": "lots"}}}),
            &["spec.resources[storage]: Invalid value: \"lots\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"],
        ),
        (
            "a selector",
            json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                   "selector": {"matchExpressions": [{"key": "tier", "operator": "Near"}]}}),
            &["spec.selector.matchExpressions[0].operator: Invalid value: \"Near\": not a valid selector operator"],
        ),
    ];
    for (what, spec, want) in cases {
        let got = rendered(&validate(&claim(spec.clone()), None));
        assert_eq!(got, *want, "{what}");
    }
}

#[test]
fn the_spec_is_fixed_after_creation_but_a_first_volume_name() {
    let mut old = claim(ok_spec());
    default(&mut old);
    // Binding: a first volumeName is allowed; a second change is not.
    let mut bound = old.clone();
    bound["spec"]["volumeName"] = json!("pv-1");
    assert!(validate(&bound, Some(&old)).is_empty());
    let mut rebound = bound.clone();
    rebound["spec"]["volumeName"] = json!("pv-2");
    assert_eq!(
        rendered(&validate(&rebound, Some(&bound))),
        ["spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"]
    );
    // The same size written another way is no change.
    let mut same = old.clone();
    same["spec"]["resources"]["requests"]["storage"] = json!("1024Mi");
    assert!(validate(&same, Some(&old)).is_empty());
    // A pending claim cannot grow; no claim can shrink; the mode is immutable.
    let mut grown = old.clone();
    grown["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
    assert_eq!(
        rendered(&validate(&grown, Some(&old))),
        ["spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"]
    );
    let mut bound_old = old.clone();
    bound_old["status"]["phase"] = json!("Bound");
    let mut bound_grown = grown.clone();
    bound_grown["status"]["phase"] = json!("Bound");
    assert!(validate(&bound_grown, Some(&bound_old)).is_empty());
    let mut shrunk = bound_old.clone();
    shrunk["spec"]["resources"]["requests"]["storage"] = json!("512Mi");
    assert_eq!(
        rendered(&validate(&shrunk, Some(&bound_old))),
        ["spec.resources.requests.storage: Forbidden: field can not be less than previous value"]
    );
    let mut block = old.clone();
    block["spec"]["volumeMode"] = json!("Block");
    assert_eq!(
        rendered(&validate(&block, Some(&old))),
        [
            "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
            "volumeMode: Invalid value: \"Block\": field is immutable",
        ]
    );
}

#[tokio::test]
async fn written_claims_are_pending_and_keep_their_status_on_update() {
    let fx = testing::fixture().await;
    let reg = &fx.reg;
    let t = target(reg, "", "persistentvolumeclaims", Some("default"));
    let w = WriteParams::default();
    let mut body = claim(ok_spec());
    body["status"] = json!({"phase": "Bound", "capacity": {"storage": "1Gi"}});
    let created: Value = serde_json::from_slice(&reg.create(&t, body, &w).await.unwrap()).unwrap();
    assert_eq!(created["status"], json!({"phase": "Pending"}));
    assert_eq!(
        created["spec"],
        json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
               "volumeMode": "Filesystem"})
    );
    // The status subresource sets the status and keeps the spec; the main endpoint keeps
    // the status.
    let mut bound = created.clone();
    bound["status"] = json!({"phase": "Bound", "accessModes": ["ReadWriteOnce"],
                             "capacity": {"storage": "1Gi"}});
    bound["spec"]["volumeName"] = json!("ignored-here");
    let after: Value = serde_json::from_slice(
        &reg.update(&t, "data", Some("status"), bound, &w)
            .await
            .unwrap()
            .0,
    )
    .unwrap();
    assert_eq!(after["status"]["phase"], "Bound");
    assert!(after["spec"].get("volumeName").is_none());
    let mut relabelled = after.clone();
    relabelled["metadata"]["labels"] = json!({"a": "b"});
    relabelled["status"] = json!({"phase": "Lost"});
    let after: Value = serde_json::from_slice(
        &reg.update(&t, "data", None, relabelled, &w)
            .await
            .unwrap()
            .0,
    )
    .unwrap();
    assert_eq!(after["status"]["phase"], "Bound");

    let err = reg
        .create(&t, claim(json!({"accessModes": []})), &w)
        .await
        .err()
        .unwrap();
    assert_eq!(err.code(), 422);
    assert_eq!(
        err.0.message,
        "PersistentVolumeClaim \"data\" is invalid: [spec.accessModes: Required value: at least 1 access mode is required, spec.resources[storage]: Required value]"
    );
}
