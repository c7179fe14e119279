//! Hostile and malformed input: every case must return an error (or a
//! harmless value), never panic, recurse without bound or allocate from an
//! untrusted length.

mod common;

use common::{body, encode_envelope, go_meta};
use k8s_pb::api::batch::v1 as batch;
use k8s_pb::api::core::v1 as core;
use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use kplane_protobuf::{decode, Error};
use prost::Message;

fn job_body() -> Vec<u8> {
    let job = batch::Job {
        metadata: Some(go_meta("x", "default")),
        spec: Some(batch::JobSpec {
            template: Some(core::PodTemplateSpec {
                metadata: Some(go_meta("", "")),
                spec: Some(core::PodSpec {
                    containers: vec![core::Container {
                        name: Some("c".into()),
                        image: Some("busybox".into()),
                        command: vec!["sh".into(), "-c".into(), "sleep 1".into()],
                        ..Default::default()
                    }],
                    restart_policy: Some("Never".into()),
                    ..Default::default()
                }),
            }),
            ..Default::default()
        }),
        status: Some(batch::JobStatus::default()),
    };
    body("batch/v1", "Job", &job)
}

/// Small deterministic PRNG (xorshift64*), so failures reproduce.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

#[test]
fn empty_and_wrong_magic() {
    assert!(matches!(decode(b""), Err(Error::Empty)));
    assert!(matches!(decode(b"k8s"), Err(Error::BadMagic)));
    assert!(matches!(decode(b"k8s\x01\x0a\x00"), Err(Error::BadMagic)));
    assert!(matches!(
        decode(br#"{"kind":"ConfigMap","apiVersion":"v1"}"#),
        Err(Error::BadMagic)
    ));
    // Magic alone: no kind in the envelope.
    let err = decode(b"k8s\x00").err();
    assert!(matches!(err, Some(Error::Envelope(_))), "{err:?}");
    assert!(err
        .map(|e| e.to_string())
        .unwrap_or_default()
        .contains("kind"));
}

#[test]
fn every_truncation_of_a_valid_body_is_handled() {
    let full = job_body();
    assert!(decode(&full).is_ok());
    // The raw object is the tail of the envelope.
    let raw_len = k8s_pb::apimachinery::pkg::runtime::Unknown::decode(&full[4..])
        .ok()
        .and_then(|u| u.raw)
        .map(|r| r.len())
        .unwrap_or(0);
    assert!(raw_len > 50);
    let raw_start = full.len() - raw_len;
    for cut in 0..full.len() {
        let result = decode(&full[..cut]);
        if cut >= raw_start {
            assert!(result.is_err(), "prefix of {cut} bytes decoded");
        }
    }
}

#[test]
fn truncated_varints_and_huge_lengths() {
    // Envelope: field 1 with an unterminated length varint.
    assert!(matches!(
        decode(b"k8s\x00\x0a\x80"),
        Err(Error::Envelope(_))
    ));
    // Envelope: raw with length 2^62.
    let mut b = b"k8s\x00".to_vec();
    b.extend_from_slice(&[0x12, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40]);
    assert!(matches!(decode(&b), Err(Error::Envelope(_))));
    // Envelope: varint longer than 10 bytes.
    let mut b = b"k8s\x00".to_vec();
    b.push(0x18);
    b.extend_from_slice(&[0xff; 12]);
    assert!(matches!(decode(&b), Err(Error::Envelope(_))));
    // Inside the object: metadata with length u64::MAX.
    let raw = [
        0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01,
    ];
    let err = decode(&encode_envelope("v1", "ConfigMap", &raw)).err();
    assert!(matches!(err, Some(Error::Wire { .. })), "{err:?}");
    let text = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(
        text.contains("ConfigMap") && text.contains("end of data"),
        "{text}"
    );
    // Inside a map entry: truncated key.
    let raw = [0x12, 0x03, 0x0a, 0x05, b'a'];
    assert!(decode(&encode_envelope("v1", "ConfigMap", &raw)).is_err());
    // Truncated varint in a nested int field (metadata.generation).
    let raw = [0x0a, 0x02, 0x38, 0x80];
    assert!(decode(&encode_envelope("v1", "ConfigMap", &raw)).is_err());
}

#[test]
fn wrong_wire_types_are_errors() {
    // ConfigMap.metadata (message) as a varint.
    let err = decode(&encode_envelope("v1", "ConfigMap", &[0x08, 0x01])).err();
    let text = err.map(|e| e.to_string()).unwrap_or_default();
    assert!(text.contains("wire type varint"), "{text}");
    // ConfigMap.immutable (bool) as length-delimited.
    assert!(decode(&encode_envelope("v1", "ConfigMap", &[0x22, 0x00])).is_err());
    // Groups are not supported.
    assert!(decode(&encode_envelope("v1", "ConfigMap", &[0x0b, 0x0c])).is_err());
    // Envelope typeMeta as a varint.
    assert!(decode(b"k8s\x00\x08\x01").is_err());
}

#[test]
fn invalid_special_values_are_errors() {
    // FieldsV1 holding invalid JSON.
    let cm = core::ConfigMap {
        metadata: Some(meta::ObjectMeta {
            managed_fields: vec![meta::ManagedFieldsEntry {
                fields_v1: Some(meta::FieldsV1 {
                    raw: Some(b"{not json".to_vec()),
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    let err = decode(&body("v1", "ConfigMap", &cm)).err();
    assert!(
        err.map(|e| e.to_string())
            .unwrap_or_default()
            .contains("raw JSON"),
        "invalid FieldsV1 accepted"
    );
    // Time far outside Go's range.
    let cm = core::ConfigMap {
        metadata: Some(meta::ObjectMeta {
            creation_timestamp: Some(meta::Time {
                seconds: Some(i64::MAX),
                nanos: Some(0),
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    assert!(decode(&body("v1", "ConfigMap", &cm)).is_err());
    // IntOrString with an impossible type.
    let probe_port = k8s_pb::apimachinery::pkg::util::intstr::IntOrString {
        r#type: Some(7),
        int_val: None,
        str_val: None,
    };
    let pod_spec = core::PodSpec {
        containers: vec![core::Container {
            liveness_probe: Some(core::Probe {
                handler: Some(core::ProbeHandler {
                    tcp_socket: Some(core::TcpSocketAction {
                        port: Some(probe_port),
                        host: None,
                    }),
                    ..Default::default()
                }),
                ..Default::default()
            }),
            ..Default::default()
        }],
        ..Default::default()
    };
    let job = batch::Job {
        spec: Some(batch::JobSpec {
            template: Some(core::PodTemplateSpec {
                metadata: None,
                spec: Some(pod_spec),
            }),
            ..Default::default()
        }),
        ..Default::default()
    };
    let err = decode(&body("batch/v1", "Job", &job)).err();
    assert!(err
        .map(|e| e.to_string())
        .unwrap_or_default()
        .contains("IntOrString"));
    // NaN double in a CRD schema.
    let crd = apiext::CustomResourceDefinition {
        spec: Some(apiext::CustomResourceDefinitionSpec {
            versions: vec![apiext::CustomResourceDefinitionVersion {
                schema: Some(apiext::CustomResourceValidation {
                    open_apiv3_schema: Some(apiext::JsonSchemaProps {
                        maximum: Some(f64::NAN),
                        ..Default::default()
                    }),
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    assert!(decode(&body(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        &crd
    ))
    .is_err());
}

#[test]
fn unsupported_envelope_encodings() {
    let unknown = k8s_pb::apimachinery::pkg::runtime::Unknown {
        type_meta: Some(k8s_pb::apimachinery::pkg::runtime::TypeMeta {
            api_version: Some("v1".into()),
            kind: Some("ConfigMap".into()),
        }),
        raw: Some(vec![]),
        content_encoding: Some("gzip".into()),
        content_type: None,
    };
    let mut b = b"k8s\x00".to_vec();
    b.extend(unknown.encode_to_vec());
    assert!(matches!(decode(&b), Err(Error::Envelope(_))));
}

fn nested_schema(depth: usize) -> apiext::JsonSchemaProps {
    let mut schema = apiext::JsonSchemaProps {
        r#type: Some("string".into()),
        ..Default::default()
    };
    for _ in 0..depth {
        schema = apiext::JsonSchemaProps {
            not: Some(Box::new(schema)),
            ..Default::default()
        };
    }
    schema
}

fn crd_with_schema(schema: apiext::JsonSchemaProps) -> Vec<u8> {
    let crd = apiext::CustomResourceDefinition {
        spec: Some(apiext::CustomResourceDefinitionSpec {
            versions: vec![apiext::CustomResourceDefinitionVersion {
                schema: Some(apiext::CustomResourceValidation {
                    open_apiv3_schema: Some(schema),
                }),
                ..Default::default()
            }],
            ..Default::default()
        }),
        ..Default::default()
    };
    body("apiextensions.k8s.io/v1", "CustomResourceDefinition", &crd)
}

#[test]
fn nesting_depth_is_bounded() {
    let ok = decode(&crd_with_schema(nested_schema(40)));
    assert!(ok.is_ok(), "{ok:?}");
    let deep = decode(&crd_with_schema(nested_schema(200)));
    assert!(matches!(deep, Err(Error::TooDeep(_))), "{deep:?}");

    // Hand-built 5000-deep nesting (no prost recursion involved): the
    // decoder must stop at MAX_DEPTH instead of overflowing the stack.
    let mut inner: Vec<u8> = Vec::new();
    for _ in 0..5_000 {
        // JSONSchemaProps.not = field 28, length-delimited.
        let mut next = vec![0xe2, 0x01];
        let mut len = inner.len();
        loop {
            let byte = (len & 0x7f) as u8;
            len >>= 7;
            if len == 0 {
                next.push(byte);
                break;
            }
            next.push(byte | 0x80);
        }
        next.extend_from_slice(&inner);
        inner = next;
    }
    let mut schema_bytes = inner;
    // Wrap: validation.openAPIV3Schema(1) <- version.schema(4) <- spec.versions(7) <- crd.spec(2)
    for tag in [0x0a_u8, 0x22, 0x3a, 0x12] {
        let mut wrapped = vec![tag];
        let mut len = schema_bytes.len();
        loop {
            let byte = (len & 0x7f) as u8;
            len >>= 7;
            if len == 0 {
                wrapped.push(byte);
                break;
            }
            wrapped.push(byte | 0x80);
        }
        wrapped.extend_from_slice(&schema_bytes);
        schema_bytes = wrapped;
    }
    let deep = decode(&encode_envelope(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        &schema_bytes,
    ));
    assert!(matches!(deep, Err(Error::TooDeep(_))), "{deep:?}");
}

/// The deepest input accepted (MAX_DEPTH levels, via schema `properties`
/// maps, the deepest decoder path) fits in a 1 MiB stack even in debug
/// builds, so server worker threads (2 MiB) are safe.
#[test]
fn max_depth_fits_a_small_stack() {
    let mut schema = apiext::JsonSchemaProps {
        r#type: Some("string".into()),
        ..Default::default()
    };
    // CRD, spec, version, validation = 4 levels; each schema 1 level.
    for _ in 0..kplane_protobuf::MAX_DEPTH - 5 {
        schema = apiext::JsonSchemaProps {
            properties: std::collections::BTreeMap::from([("p".to_string(), schema)]),
            ..Default::default()
        };
    }
    let input = crd_with_schema(schema);
    let handle = std::thread::Builder::new()
        .stack_size(1 << 20)
        .spawn(move || decode(&input).map(|_| ()).map_err(|e| e.to_string()));
    let result = handle.map(|h| h.join());
    assert!(matches!(result, Ok(Ok(Ok(())))), "{result:?}");
}

#[test]
fn random_bytes_never_panic() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let kinds = [
        ("v1", "ConfigMap"),
        ("batch/v1", "Job"),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ("coordination.k8s.io/v1", "Lease"),
        ("v1", "DeleteOptions"),
    ];
    for i in 0..20_000 {
        let len = rng.below(256);
        let bytes: Vec<u8> = (0..len).map(|_| rng.next() as u8).collect();
        let input = match i % 3 {
            0 => bytes,
            1 => {
                let mut b = b"k8s\x00".to_vec();
                b.extend(bytes);
                b
            }
            _ => {
                let (api_version, kind) = kinds[rng.below(kinds.len())];
                encode_envelope(api_version, kind, &bytes)
            }
        };
        let _ = decode(&input);
    }
}

#[test]
fn mutated_valid_bodies_never_panic() {
    let mut rng = Rng(42);
    let bodies = [job_body(), crd_with_schema(nested_schema(5))];
    for i in 0..20_000 {
        let mut b = bodies[i % bodies.len()].clone();
        for _ in 0..1 + rng.below(4) {
            let pos = 4 + rng.below(b.len() - 4);
            match rng.below(3) {
                0 => b[pos] ^= 1 << rng.below(8),
                1 => b[pos] = rng.next() as u8,
                _ => {
                    b.remove(pos);
                }
            }
        }
        let _ = decode(&b);
    }
}

#[test]
fn output_size_is_proportional_to_input() {
    // 50k empty containers: each is two bytes on the wire.
    let mut pod_spec = Vec::new();
    for _ in 0..50_000 {
        pod_spec.extend_from_slice(&[0x12, 0x00]);
    }
    let mut template = vec![0x12];
    let mut len = pod_spec.len();
    while len >= 0x80 {
        template.push((len as u8) | 0x80);
        len >>= 7;
    }
    template.push(len as u8);
    template.extend_from_slice(&pod_spec);
    let mut job_spec = vec![0x32];
    let mut len = template.len();
    while len >= 0x80 {
        job_spec.push((len as u8) | 0x80);
        len >>= 7;
    }
    job_spec.push(len as u8);
    job_spec.extend_from_slice(&template);
    let mut job = vec![0x12];
    let mut len = job_spec.len();
    while len >= 0x80 {
        job.push((len as u8) | 0x80);
        len >>= 7;
    }
    job.push(len as u8);
    job.extend_from_slice(&job_spec);
    let input = encode_envelope("batch/v1", "Job", &job);
    let v = match decode(&input) {
        Ok(v) => v,
        Err(e) => panic!("{e}"),
    };
    let containers = v["spec"]["template"]["spec"]["containers"]
        .as_array()
        .map(Vec::len);
    assert_eq!(containers, Some(50_000));
    let out = serde_json::to_vec(&v).map(|o| o.len()).unwrap_or(0);
    assert!(out < input.len() * 16, "{} bytes from {}", out, input.len());
}
