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
    // A bound claim's request may come back down to just above the capacity it reached
    // (`RecoverVolumeExpansionFailure`, on in 1.32), not to it or below.
    let mut expanding = bound_old.clone();
    expanding["spec"]["resources"]["requests"]["storage"] = json!("4Gi");
    expanding["status"]["capacity"] = json!({"storage": "1Gi"});
    let mut back = expanding.clone();
    back["spec"]["resources"]["requests"]["storage"] = json!("2Gi");
    assert!(validate(&back, Some(&expanding)).is_empty());
    let mut shrunk = expanding.clone();
    shrunk["spec"]["resources"]["requests"]["storage"] = json!("1Gi");
    assert_eq!(
        rendered(&validate(&shrunk, Some(&expanding))),
        ["spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"]
    );
    // A field written as null is no field: the spec is the same.
    let mut with_null = old.clone();
    with_null["spec"]["storageClassName"] = Value::Null;
    with_null["spec"]["selector"] = Value::Null;
    assert!(validate(&old, Some(&with_null)).is_empty());
    assert!(validate(&with_null, Some(&old)).is_empty());
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

#[test]
fn update_errors_list_the_spec_twice_and_every_quantity_must_parse() {
    let mut old = claim(ok_spec());
    default(&mut old);
    let mut bad = old.clone();
    bad["spec"]["accessModes"] = json!(["Sometimes"]);
    bad["spec"]["resources"]["limits"] = json!({"storage": "x"});
    let once = [
        "spec.accessModes: Unsupported value: \"Sometimes\": supported values: \"ReadOnlyMany\", \"ReadWriteMany\", \"ReadWriteOnce\", \"ReadWriteOncePod\"",
        "spec.resources.limits[storage]: Invalid value: \"x\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
    ];
    assert_eq!(rendered(&validate(&bad, None)), once);
    let immutable = "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims";
    let want: Vec<&str> = once
        .iter()
        .chain(once.iter())
        .copied()
        .chain([immutable])
        .collect();
    assert_eq!(rendered(&validate(&bad, Some(&old))), want);
    let mut odd_status = old.clone();
    odd_status["status"]["capacity"] = json!({"storage": "lots"});
    assert_eq!(
        rendered(&validate(&odd_status, None)),
        ["status.capacity[storage]: Invalid value: \"lots\": quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"]
    );
}

#[tokio::test]
async fn claims_are_stored_as_the_v1_type_encodes_them_without_a_volume_attributes_class() {
    let fx = testing::fixture().await;
    let reg = &fx.reg;
    let t = target(reg, "", "persistentvolumeclaims", Some("default"));
    let w = WriteParams::default();
    let mut body = claim(json!({"accessModes": ["ReadWriteOnce"], "selector": null,
        "storageClassName": null, "volumeName": "", "volumeAttributesClassName": "gold",
        "resources": {"requests": {"storage": "1Gi"}, "limits": {}},
        "dataSource": {"kind": "PersistentVolumeClaim", "name": "src"}}));
    body["status"] = Value::Null;
    let created: Value = serde_json::from_slice(&reg.create(&t, body, &w).await.unwrap()).unwrap();
    assert_eq!(
        created["spec"],
        json!({"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
               "volumeMode": "Filesystem",
               "dataSource": {"apiGroup": null, "kind": "PersistentVolumeClaim", "name": "src"}})
    );
    // An update that leaves out what was written as null or empty changes no spec.
    let mut relabelled = created.clone();
    relabelled["metadata"]["labels"] = json!({"a": "b"});
    relabelled["spec"]
        .as_object_mut()
        .unwrap()
        .remove("dataSource");
    relabelled["spec"]["dataSource"] = json!({"kind": "PersistentVolumeClaim", "name": "src"});
    let relabelled: Value = serde_json::from_slice(
        &reg.update(&t, "data", None, relabelled, &w)
            .await
            .unwrap()
            .0,
    )
    .unwrap();
    // A status write without a phase is Pending, and the class status fields go.
    let mut status = relabelled.clone();
    status["status"] = json!({"currentVolumeAttributesClassName": "gold"});
    let after: Value = serde_json::from_slice(
        &reg.update(&t, "data", Some("status"), status, &w)
            .await
            .unwrap()
            .0,
    )
    .unwrap();
    assert_eq!(after["status"], json!({"phase": "Pending"}));
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
