//! `encode` and `watch_frame`: what the server writes must read back, with k8s-pb's
//! prost structs (the oracle for Go's generated decoders) and with `decode`, as the JSON
//! it was made from.
#![allow(clippy::expect_used)]

mod common;

use k8s_pb::api::batch::v1 as batch;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::runtime::Unknown;
use prost::Message;
use serde_json::{json, Value};

use common::decode_ok;

fn encode_ok(v: &Value) -> Vec<u8> {
    match kplane_protobuf::encode(v) {
        Ok(b) => b,
        Err(e) => panic!("encode failed: {e}"),
    }
}

/// The envelope's type and the object's message bytes, read with prost.
fn unwrap_envelope(body: &[u8]) -> (String, String, Vec<u8>) {
    let rest = body.strip_prefix(b"k8s\x00".as_slice()).expect("magic");
    let u = Unknown::decode(rest).expect("Unknown");
    let tm = u.type_meta.expect("typeMeta");
    (
        tm.api_version.unwrap_or_default(),
        tm.kind.unwrap_or_default(),
        u.raw.unwrap_or_default(),
    )
}

#[test]
fn configmap_round_trips_and_reads_with_prost() {
    let cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {
            "name": "a", "namespace": "ns", "uid": "u-1", "resourceVersion": "12",
            "creationTimestamp": "2024-05-01T10:20:30Z",
            "labels": {"b": "2", "a": "1"},
            "annotations": {"kplane.io/x": "y"},
            "managedFields": [{"manager": "m", "operation": "Update", "apiVersion": "v1",
                               "time": "2024-05-01T10:20:30Z", "fieldsType": "FieldsV1",
                               "fieldsV1": {"f:data": {"f:k": {}}}}],
        },
        "data": {"k": "v", "empty": ""},
        "binaryData": {"bin": "AAEC"},
        "immutable": false,
    });
    let body = encode_ok(&cm);
    let (api_version, kind, raw) = unwrap_envelope(&body);
    assert_eq!((api_version.as_str(), kind.as_str()), ("v1", "ConfigMap"));
    let got = core::ConfigMap::decode(raw.as_slice()).expect("ConfigMap");
    let m = got.metadata.expect("metadata");
    assert_eq!(m.name.as_deref(), Some("a"));
    assert_eq!(m.resource_version.as_deref(), Some("12"));
    assert_eq!(
        m.creation_timestamp.and_then(|t| t.seconds),
        Some(1_714_558_830)
    );
    assert_eq!(m.labels.get("a").map(String::as_str), Some("1"));
    assert_eq!(
        got.binary_data.get("bin").map(Vec::as_slice),
        Some([0u8, 1, 2].as_slice())
    );
    assert_eq!(got.immutable, Some(false));
    assert_eq!(decode_ok(&body), cm);
}

#[test]
fn job_with_quantities_int_or_string_and_pointers_round_trips() {
    let job = json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": {"name": "j", "namespace": "ns", "generation": 3},
        "spec": {
            "backoffLimit": 6, "parallelism": -1, "suspend": false,
            "template": {
                "metadata": {"labels": {"job-name": "j"}},
                "spec": {
                    "restartPolicy": "Never",
                    "containers": [{
                        "name": "c", "image": "busybox", "args": ["a", "b"],
                        "resources": {"limits": {"cpu": "500m", "memory": "1Gi"}},
                        "readinessProbe": {"httpGet": {"path": "/", "port": "http"}, "periodSeconds": 10},
                        "livenessProbe": {"tcpSocket": {"port": 8080}},
                    }],
                },
            },
        },
        "status": {"active": 1, "startTime": "2024-05-01T10:20:30Z"},
    });
    let body = encode_ok(&job);
    let (_, _, raw) = unwrap_envelope(&body);
    let got = batch::Job::decode(raw.as_slice()).expect("Job");
    let spec = got.spec.expect("spec");
    assert_eq!(spec.parallelism, Some(-1));
    assert_eq!(spec.suspend, Some(false));
    let decoded = decode_ok(&body);
    assert_eq!(decoded["spec"], job["spec"]);
    assert_eq!(decoded["status"], job["status"]);
}

#[test]
fn status_with_details_round_trips() {
    let status = json!({
        "apiVersion": "v1", "kind": "Status", "metadata": {"resourceVersion": "5"},
        "status": "Failure", "message": "too old resource version: 1 (5)",
        "reason": "Expired", "code": 410,
        "details": {"name": "x", "kind": "configmaps",
                    "causes": [{"reason": "FieldValueInvalid", "message": "bad", "field": "a.b"}]},
    });
    let body = encode_ok(&status);
    let (_, _, raw) = unwrap_envelope(&body);
    let got = meta::Status::decode(raw.as_slice()).expect("Status");
    assert_eq!(got.code, Some(410));
    assert_eq!(got.reason.as_deref(), Some("Expired"));
    assert_eq!(decode_ok(&body), status);
}

#[test]
fn kinds_without_a_message_are_refused() {
    let cr = json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}});
    assert!(matches!(
        kplane_protobuf::encode(&cr),
        Err(kplane_protobuf::Error::UnsupportedKind { .. })
    ));
    let bad = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": 1}});
    assert!(kplane_protobuf::encode(&bad).is_err());
}

#[test]
fn watch_frames_are_length_prefixed_watch_events() {
    let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}});
    let object = encode_ok(&cm);
    let frame = kplane_protobuf::watch_frame("ADDED", &object);
    let (len, event) = frame.split_at(4);
    let len = u32::from_be_bytes([len[0], len[1], len[2], len[3]]) as usize;
    assert_eq!(len, event.len());
    let ev = meta::WatchEvent::decode(event).expect("WatchEvent");
    assert_eq!(ev.r#type.as_deref(), Some("ADDED"));
    let raw = ev.object.and_then(|o| o.raw).expect("object.raw");
    assert_eq!(raw, object);
    assert_eq!(decode_ok(&raw), cm);
}

#[test]
fn empty_lists_are_encoded_as_go_encodes_the_watch_list_blueprint() {
    let body = kplane_protobuf::encode_empty_list("v1", "Secret").expect("encode");
    let (api_version, kind, raw) = unwrap_envelope(&body);
    assert_eq!((api_version.as_str(), kind.as_str()), ("v1", "SecretList"));
    // Go's generated marshaller writes ListMeta's three strings even when empty.
    assert_eq!(raw, [0x0a, 0x06, 0x0a, 0x00, 0x12, 0x00, 0x1a, 0x00]);
    let list = core::SecretList::decode(raw.as_slice()).expect("SecretList");
    assert!(list.items.is_empty());
    assert_eq!(
        list.metadata.and_then(|m| m.resource_version).as_deref(),
        Some("")
    );
    let body = kplane_protobuf::encode_empty_list("batch/v1", "Job").expect("encode");
    assert_eq!(unwrap_envelope(&body).1, "JobList");
    assert!(kplane_protobuf::encode_empty_list("apps/v1", "Deployment").is_err());
}
