//! Test helpers: build Kubernetes protobuf bodies from k8s-pb structs the
//! way client-go does (Go writes every non-pointer field, zero or not).

#![allow(dead_code)]

use k8s_pb::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use k8s_pb::apimachinery::pkg::runtime::{TypeMeta, Unknown};
use prost::Message;

/// Wraps a raw object message in the `k8s\0` + `runtime.Unknown` envelope.
pub fn encode_envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
    let unknown = Unknown {
        type_meta: Some(TypeMeta {
            api_version: Some(api_version.to_string()),
            kind: Some(kind.to_string()),
        }),
        raw: Some(raw.to_vec()),
        content_encoding: None,
        content_type: None,
    };
    let mut out = b"k8s\x00".to_vec();
    out.extend(unknown.encode_to_vec());
    out
}

/// Encodes `msg` and wraps it in the envelope.
pub fn body<M: Message>(api_version: &str, kind: &str, msg: &M) -> Vec<u8> {
    encode_envelope(api_version, kind, &msg.encode_to_vec())
}

/// ObjectMeta as client-go puts it on the wire for a new object: every
/// value field present (empty strings, generation 0) and the zero
/// creationTimestamp as an empty message.
pub fn go_meta(name: &str, namespace: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        generate_name: Some(String::new()),
        namespace: Some(namespace.to_string()),
        self_link: Some(String::new()),
        uid: Some(String::new()),
        resource_version: Some(String::new()),
        generation: Some(0),
        creation_timestamp: Some(Time::default()),
        ..Default::default()
    }
}

/// Decodes and panics with the error on failure (tests only).
pub fn decode_ok(body: &[u8]) -> serde_json::Value {
    match kplane_protobuf::decode(body) {
        Ok(v) => v,
        Err(e) => panic!("decode failed: {e}"),
    }
}
