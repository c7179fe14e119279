//! Decoding of every supported kind: protobuf bodies built from k8s-pb
//! structs the way client-go writes them, compared with the JSON literal Go
//! produces, and cross-checked against k8s-openapi (serde round-trip of the
//! decoded JSON must give back exactly the same JSON, so no key is unknown
//! to k8s-openapi and every value has the right JSON shape).

mod common;

use common::{body, decode_ok, encode_envelope, go_meta};
use k8s_openapi::serde::{de::DeserializeOwned, Serialize};
use k8s_pb::api::admissionregistration::v1 as admission;
use k8s_pb::api::authentication::v1 as authn;
use k8s_pb::api::authorization::v1 as authz;
use k8s_pb::api::batch::v1 as batch;
use k8s_pb::api::coordination::v1 as coordination;
use k8s_pb::api::core::v1 as core;
use k8s_pb::api::events::v1 as events;
use k8s_pb::api::networking::v1 as networking;
use k8s_pb::api::rbac::v1 as rbac;
use k8s_pb::apiextensions_apiserver::pkg::apis::apiextensions::v1 as apiext;
use k8s_pb::apimachinery::pkg::api::resource::Quantity;
use k8s_pb::apimachinery::pkg::apis::meta::v1 as meta;
use k8s_pb::apimachinery::pkg::util::intstr::IntOrString;
use serde_json::{json, Value};
use std::collections::BTreeMap;

fn s(v: &str) -> Option<String> {
    Some(v.to_string())
}

fn q(v: &str) -> Quantity {
    Quantity { string: s(v) }
}

/// Round-trips `v` through k8s-openapi type `T` and requires no change.
fn oracle<T: DeserializeOwned + Serialize>(v: &Value) {
    let typed: T = match serde_json::from_value(v.clone()) {
        Ok(t) => t,
        Err(e) => panic!("k8s-openapi rejects decoded JSON: {e}\n{v:#}"),
    };
    let back = match serde_json::to_value(&typed) {
        Ok(b) => b,
        Err(e) => panic!("k8s-openapi serialization failed: {e}"),
    };
    assert_eq!(
        integral_floats_as_ints(back),
        *v,
        "k8s-openapi round-trip differs"
    );
}

/// k8s-openapi writes f64 `10.0` where Go writes `10`; compare numerically.
fn integral_floats_as_ints(v: Value) -> Value {
    match v {
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 9e15 => Value::from(f as i64),
            _ => Value::Number(n),
        },
        Value::Array(a) => Value::Array(a.into_iter().map(integral_floats_as_ints).collect()),
        Value::Object(o) => Value::Object(
            o.into_iter()
                .map(|(k, v)| (k, integral_floats_as_ints(v)))
                .collect(),
        ),
        other => other,
    }
}

#[test]
fn namespace() {
    let ns = core::Namespace {
        metadata: Some(meta::ObjectMeta {
            labels: BTreeMap::from([("team".to_string(), "a".to_string())]),
            ..go_meta("demo", "")
        }),
        spec: Some(core::NamespaceSpec::default()),
        status: Some(core::NamespaceStatus {
            phase: s(""),
            ..Default::default()
        }),
    };
    let v = decode_ok(&body("v1", "Namespace", &ns));
    assert_eq!(
        v,
        json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "demo", "labels": {"team": "a"}},
            "spec": {}, "status": {}
        })
    );
    oracle::<k8s_openapi::api::core::v1::Namespace>(&v);
}

#[test]
fn configmap_with_data_and_binary_data() {
    let cm = core::ConfigMap {
        metadata: Some(go_meta("cfg", "default")),
        data: BTreeMap::from([
            ("a".to_string(), "1".to_string()),
            ("empty".to_string(), String::new()),
        ]),
        binary_data: BTreeMap::from([("bin".to_string(), vec![0u8, 1, 2, 255])]),
        immutable: Some(false),
    };
    let v = decode_ok(&body("v1", "ConfigMap", &cm));
    assert_eq!(
        v,
        json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "cfg", "namespace": "default"},
            "data": {"a": "1", "empty": ""},
            "binaryData": {"bin": "AAEC/w=="},
            "immutable": false
        })
    );
    oracle::<k8s_openapi::api::core::v1::ConfigMap>(&v);
}

#[test]
fn secret_bytes_are_base64() {
    let secret = core::Secret {
        metadata: Some(go_meta("creds", "default")),
        data: BTreeMap::from([
            ("password".to_string(), b"s3cr3t".to_vec()),
            ("empty".to_string(), Vec::new()),
        ]),
        string_data: BTreeMap::new(),
        r#type: s("Opaque"),
        immutable: None,
    };
    let v = decode_ok(&body("v1", "Secret", &secret));
    assert_eq!(
        v,
        json!({
            "apiVersion": "v1", "kind": "Secret",
            "metadata": {"name": "creds", "namespace": "default"},
            "data": {"password": "czNjcjN0", "empty": ""},
            "type": "Opaque"
        })
    );
    oracle::<k8s_openapi::api::core::v1::Secret>(&v);
}

#[test]
fn service_account_keeps_pointer_false() {
    let sa = core::ServiceAccount {
        metadata: Some(go_meta("builder", "ci")),
        automount_service_account_token: Some(false),
        image_pull_secrets: vec![core::LocalObjectReference { name: s("reg") }],
        ..Default::default()
    };
    let v = decode_ok(&body("v1", "ServiceAccount", &sa));
    assert_eq!(
        v,
        json!({
            "apiVersion": "v1", "kind": "ServiceAccount",
            "metadata": {"name": "builder", "namespace": "ci"},
            "automountServiceAccountToken": false,
            "imagePullSecrets": [{"name": "reg"}]
        })
    );
    oracle::<k8s_openapi::api::core::v1::ServiceAccount>(&v);
}

/// A container the way `kubectl create job x --image=busybox -- sh -c ...`
/// plus the usual extras writes it: every value field on the wire.
fn go_container() -> core::Container {
    core::Container {
        name: s("main"),
        image: s("busybox"),
        command: vec!["sh".into(), "-c".into(), "echo hi".into()],
        args: vec![],
        working_dir: s(""),
        ports: vec![core::ContainerPort {
            name: s("http"),
            host_port: Some(0),
            container_port: Some(8080),
            protocol: s("TCP"),
            host_ip: s(""),
        }],
        env: vec![
            core::EnvVar {
                name: s("MODE"),
                value: s("fast"),
                value_from: None,
            },
            core::EnvVar {
                name: s("TOKEN"),
                value: s(""),
                value_from: Some(core::EnvVarSource {
                    secret_key_ref: Some(core::SecretKeySelector {
                        local_object_reference: Some(core::LocalObjectReference {
                            name: s("creds"),
                        }),
                        key: s("token"),
                        optional: Some(false),
                    }),
                    ..Default::default()
                }),
            },
        ],
        resources: Some(core::ResourceRequirements {
            limits: BTreeMap::from([
                ("cpu".to_string(), q("500m")),
                ("memory".to_string(), q("128Mi")),
            ]),
            requests: BTreeMap::from([("cpu".to_string(), q("100m"))]),
            claims: vec![],
        }),
        volume_mounts: vec![core::VolumeMount {
            name: s("cfg"),
            read_only: Some(true),
            mount_path: s("/etc/cfg"),
            sub_path: s(""),
            mount_propagation: None,
            sub_path_expr: s(""),
            recursive_read_only: None,
        }],
        liveness_probe: Some(core::Probe {
            handler: Some(core::ProbeHandler {
                http_get: Some(core::HttpGetAction {
                    path: s("/healthz"),
                    port: Some(IntOrString {
                        r#type: Some(0),
                        int_val: Some(8080),
                        str_val: s(""),
                    }),
                    host: s(""),
                    scheme: s("HTTP"),
                    http_headers: vec![],
                }),
                ..Default::default()
            }),
            initial_delay_seconds: Some(5),
            timeout_seconds: Some(0),
            period_seconds: Some(10),
            success_threshold: Some(0),
            failure_threshold: Some(3),
            termination_grace_period_seconds: None,
        }),
        readiness_probe: Some(core::Probe {
            handler: Some(core::ProbeHandler {
                tcp_socket: Some(core::TcpSocketAction {
                    port: Some(IntOrString {
                        r#type: Some(1),
                        int_val: Some(0),
                        str_val: s("http"),
                    }),
                    host: s(""),
                }),
                ..Default::default()
            }),
            ..Default::default()
        }),
        termination_message_path: s("/dev/termination-log"),
        image_pull_policy: s("IfNotPresent"),
        security_context: Some(core::SecurityContext {
            run_as_non_root: Some(false),
            run_as_user: Some(0),
            ..Default::default()
        }),
        stdin: Some(false),
        stdin_once: Some(false),
        tty: Some(false),
        termination_message_policy: s(""),
        ..Default::default()
    }
}

fn expected_container() -> Value {
    json!({
        "name": "main",
        "image": "busybox",
        "command": ["sh", "-c", "echo hi"],
        "ports": [{"name": "http", "containerPort": 8080, "protocol": "TCP"}],
        "env": [
            {"name": "MODE", "value": "fast"},
            {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token", "optional": false}}}
        ],
        "resources": {"limits": {"cpu": "500m", "memory": "128Mi"}, "requests": {"cpu": "100m"}},
        "volumeMounts": [{"name": "cfg", "readOnly": true, "mountPath": "/etc/cfg"}],
        "livenessProbe": {
            "httpGet": {"path": "/healthz", "port": 8080, "scheme": "HTTP"},
            "initialDelaySeconds": 5, "periodSeconds": 10, "failureThreshold": 3
        },
        "readinessProbe": {"tcpSocket": {"port": "http"}},
        "terminationMessagePath": "/dev/termination-log",
        "imagePullPolicy": "IfNotPresent",
        "securityContext": {"runAsNonRoot": false, "runAsUser": 0}
    })
}

fn go_pod_spec() -> core::PodSpec {
    core::PodSpec {
        volumes: vec![core::Volume {
            name: s("cfg"),
            volume_source: Some(core::VolumeSource {
                config_map: Some(core::ConfigMapVolumeSource {
                    local_object_reference: Some(core::LocalObjectReference {
                        name: s("app-config"),
                    }),
                    items: vec![core::KeyToPath {
                        key: s("a"),
                        path: s("a.txt"),
                        mode: None,
                    }],
                    default_mode: Some(420),
                    optional: None,
                }),
                ..Default::default()
            }),
        }],
        containers: vec![go_container()],
        restart_policy: s("Never"),
        termination_grace_period_seconds: Some(0),
        dns_policy: s(""),
        service_account_name: s(""),
        service_account: s(""),
        node_name: s(""),
        host_network: Some(false),
        host_pid: Some(false),
        host_ipc: Some(false),
        security_context: Some(core::PodSecurityContext::default()),
        hostname: s(""),
        subdomain: s(""),
        scheduler_name: s(""),
        priority_class_name: s(""),
        ..Default::default()
    }
}

#[test]
fn job_with_full_pod_template() {
    let job = batch::Job {
        metadata: Some(go_meta("x", "default")),
        spec: Some(batch::JobSpec {
            backoff_limit: Some(0),
            template: Some(core::PodTemplateSpec {
                metadata: Some(meta::ObjectMeta {
                    labels: BTreeMap::from([("app".to_string(), "x".to_string())]),
                    ..go_meta("", "")
                }),
                spec: Some(go_pod_spec()),
            }),
            ..Default::default()
        }),
        status: Some(batch::JobStatus {
            active: Some(0),
            succeeded: Some(0),
            failed: Some(0),
            completed_indexes: s(""),
            ..Default::default()
        }),
    };
    let v = decode_ok(&body("batch/v1", "Job", &job));
    assert_eq!(
        v,
        json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "x", "namespace": "default"},
            "spec": {
                "backoffLimit": 0,
                "template": {
                    "metadata": {"labels": {"app": "x"}},
                    "spec": {
                        "volumes": [{"name": "cfg", "configMap": {
                            "name": "app-config",
                            "items": [{"key": "a", "path": "a.txt"}],
                            "defaultMode": 420
                        }}],
                        "containers": [expected_container()],
                        "restartPolicy": "Never",
                        "terminationGracePeriodSeconds": 0,
                        "securityContext": {}
                    }
                }
            },
            "status": {}
        })
    );
    oracle::<k8s_openapi::api::batch::v1::Job>(&v);
}

#[test]
fn persistent_volume_claim_with_status() {
    let pvc = core::PersistentVolumeClaim {
        metadata: Some(go_meta("data", "default")),
        spec: Some(core::PersistentVolumeClaimSpec {
            access_modes: vec!["ReadWriteOnce".into()],
            resources: Some(core::VolumeResourceRequirements {
                requests: BTreeMap::from([("storage".to_string(), Quantity { string: s("1Gi") })]),
                ..Default::default()
            }),
            volume_name: s(""),
            storage_class_name: s("fast"),
            volume_mode: s("Filesystem"),
            ..Default::default()
        }),
        status: Some(core::PersistentVolumeClaimStatus {
            phase: s("Pending"),
            ..Default::default()
        }),
    };
    let v = decode_ok(&body("v1", "PersistentVolumeClaim", &pvc));
    assert_eq!(
        v,
        json!({
            "apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": "data", "namespace": "default"},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
                "storageClassName": "fast",
                "volumeMode": "Filesystem"
            },
            "status": {"phase": "Pending"}
        })
    );
    oracle::<k8s_openapi::api::core::v1::PersistentVolumeClaim>(&v);
}

#[test]
fn pod_template_with_full_pod_spec() {
    let tpl = core::PodTemplate {
        metadata: Some(go_meta("web", "default")),
        template: Some(core::PodTemplateSpec {
            metadata: Some(meta::ObjectMeta {
                labels: BTreeMap::from([("app".to_string(), "web".to_string())]),
                ..go_meta("", "")
            }),
            spec: Some(go_pod_spec()),
        }),
    };
    let v = decode_ok(&body("v1", "PodTemplate", &tpl));
    assert_eq!(
        v,
        json!({
            "apiVersion": "v1", "kind": "PodTemplate",
            "metadata": {"name": "web", "namespace": "default"},
            "template": {
                "metadata": {"labels": {"app": "web"}},
                "spec": {
                    "volumes": [{"name": "cfg", "configMap": {
                        "name": "app-config",
                        "items": [{"key": "a", "path": "a.txt"}],
                        "defaultMode": 420
                    }}],
                    "containers": [expected_container()],
                    "restartPolicy": "Never",
                    "terminationGracePeriodSeconds": 0,
                    "securityContext": {}
                }
            }
        })
    );
    oracle::<k8s_openapi::api::core::v1::PodTemplate>(&v);
}

#[test]
fn pod_with_status() {
    let ts = |sec| meta::Time {
        seconds: Some(sec),
        nanos: Some(0),
    };
    let status = |name: &str, state: core::ContainerState| core::ContainerStatus {
        name: s(name),
        state: Some(state),
        last_state: Some(core::ContainerState::default()),
        ready: Some(false),
        restart_count: Some(0),
        image: s("busybox"),
        image_id: s("docker.io/library/busybox@sha256:0"),
        container_id: s("containerd://1"),
        started: Some(false),
        ..Default::default()
    };
    let pod = core::Pod {
        metadata: Some(go_meta("x-abcde", "default")),
        spec: Some(go_pod_spec()),
        status: Some(core::PodStatus {
            phase: s("Failed"),
            conditions: vec![core::PodCondition {
                r#type: s("Ready"),
                status: s("False"),
                last_probe_time: Some(meta::Time::default()),
                last_transition_time: Some(ts(1_700_000_000)),
                reason: s("PodFailed"),
                message: s(""),
                observed_generation: Some(0),
            }],
            host_ip: s("10.0.0.1"),
            pod_ip: s("10.1.0.7"),
            pod_ips: vec![core::PodIp { ip: s("10.1.0.7") }],
            start_time: Some(ts(1_700_000_000)),
            container_statuses: vec![status(
                "main",
                core::ContainerState {
                    terminated: Some(core::ContainerStateTerminated {
                        exit_code: Some(1),
                        signal: Some(0),
                        reason: s("Error"),
                        message: s(""),
                        started_at: Some(ts(1_700_000_001)),
                        finished_at: Some(ts(1_700_000_002)),
                        container_id: s("containerd://1"),
                    }),
                    ..Default::default()
                },
            )],
            qos_class: s("BestEffort"),
            ..Default::default()
        }),
    };
    let v = decode_ok(&body("v1", "Pod", &pod));
    assert_eq!(v["spec"]["containers"][0], expected_container());
    assert_eq!(
        v["status"],
        json!({
            "phase": "Failed",
            // A zero time is left out (the stored form writes it as null).
            "conditions": [{"type": "Ready", "status": "False",
                "lastTransitionTime": "2023-11-14T22:13:20Z", "reason": "PodFailed"}],
            "hostIP": "10.0.0.1",
            "podIP": "10.1.0.7",
            "podIPs": [{"ip": "10.1.0.7"}],
            "startTime": "2023-11-14T22:13:20Z",
            "containerStatuses": [{
                "name": "main",
                "state": {"terminated": {"exitCode": 1, "reason": "Error",
                    "startedAt": "2023-11-14T22:13:21Z", "finishedAt": "2023-11-14T22:13:22Z",
                    "containerID": "containerd://1"}},
                "lastState": {},
                "ready": false,
                "restartCount": 0,
                "image": "busybox",
                "imageID": "docker.io/library/busybox@sha256:0",
                "containerID": "containerd://1",
                "started": false
            }],
            "qosClass": "BestEffort"
        })
    );
    oracle::<k8s_openapi::api::core::v1::Pod>(&v);
}

#[test]
fn cronjob() {
    let cj = batch::CronJob {
        metadata: Some(go_meta("nightly", "default")),
        spec: Some(batch::CronJobSpec {
            schedule: s("0 3 * * *"),
            suspend: Some(false),
            concurrency_policy: s(""),
            job_template: Some(batch::JobTemplateSpec {
                metadata: Some(go_meta("", "")),
                spec: Some(batch::JobSpec {
                    template: Some(core::PodTemplateSpec {
                        metadata: Some(go_meta("", "")),
                        spec: Some(core::PodSpec {
                            containers: vec![core::Container {
                                name: s("c"),
                                image: s("busybox"),
                                ..Default::default()
                            }],
                            restart_policy: s("OnFailure"),
                            ..Default::default()
                        }),
                    }),
                    ..Default::default()
                }),
            }),
            ..Default::default()
        }),
        status: Some(batch::CronJobStatus::default()),
    };
    let v = decode_ok(&body("batch/v1", "CronJob", &cj));
    assert_eq!(
        v,
        json!({
            "apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "nightly", "namespace": "default"},
            "spec": {
                "schedule": "0 3 * * *",
                "suspend": false,
                "jobTemplate": {"metadata": {}, "spec": {"template": {"metadata": {}, "spec": {
                    "containers": [{"name": "c", "image": "busybox"}],
                    "restartPolicy": "OnFailure"
                }}}}
            },
            "status": {}
        })
    );
    oracle::<k8s_openapi::api::batch::v1::CronJob>(&v);
}

#[test]
fn lease_micro_time() {
    let t = |nanos| meta::MicroTime {
        seconds: Some(1_136_214_245),
        nanos: Some(nanos),
    };
    let lease = coordination::Lease {
        metadata: Some(go_meta("leader", "kube-system")),
        spec: Some(coordination::LeaseSpec {
            holder_identity: s("node-a_1234"),
            lease_duration_seconds: Some(15),
            acquire_time: Some(t(0)),
            renew_time: Some(t(123_456_789)),
            lease_transitions: Some(0),
            ..Default::default()
        }),
    };
    let v = decode_ok(&body("coordination.k8s.io/v1", "Lease", &lease));
    assert_eq!(
        v,
        json!({
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "leader", "namespace": "kube-system"},
            "spec": {
                "holderIdentity": "node-a_1234",
                "leaseDurationSeconds": 15,
                "acquireTime": "2006-01-02T15:04:05.000000Z",
                "renewTime": "2006-01-02T15:04:05.123456Z",
                "leaseTransitions": 0
            }
        })
    );
    oracle::<k8s_openapi::api::coordination::v1::Lease>(&v);

    // Released lease: holderIdentity "" is a pointer to "" and is kept.
    let released = coordination::Lease {
        metadata: Some(go_meta("leader", "kube-system")),
        spec: Some(coordination::LeaseSpec {
            holder_identity: s(""),
            ..Default::default()
        }),
    };
    let v = decode_ok(&body("coordination.k8s.io/v1", "Lease", &released));
    assert_eq!(v["spec"], json!({"holderIdentity": ""}));
}

#[test]
fn network_policy_ports_peers_and_ip_blocks() {
    let int_port = |n| IntOrString {
        r#type: Some(0),
        int_val: Some(n),
        str_val: s(""),
    };
    let named_port = |name: &str| IntOrString {
        r#type: Some(1),
        int_val: Some(0),
        str_val: s(name),
    };
    let selector = |k: &str, v: &str| meta::LabelSelector {
        match_labels: BTreeMap::from([(k.to_string(), v.to_string())]),
        match_expressions: vec![],
    };
    let np = networking::NetworkPolicy {
        metadata: Some(go_meta("db", "default")),
        spec: Some(networking::NetworkPolicySpec {
            pod_selector: Some(selector("app", "db")),
            ingress: vec![networking::NetworkPolicyIngressRule {
                ports: vec![
                    networking::NetworkPolicyPort {
                        protocol: s("TCP"),
                        port: Some(int_port(5432)),
                        end_port: Some(5440),
                    },
                    networking::NetworkPolicyPort {
                        protocol: None,
                        port: Some(named_port("metrics")),
                        end_port: None,
                    },
                ],
                from: vec![
                    networking::NetworkPolicyPeer {
                        pod_selector: Some(meta::LabelSelector::default()),
                        namespace_selector: Some(selector("team", "a")),
                        ip_block: None,
                    },
                    networking::NetworkPolicyPeer {
                        ip_block: Some(networking::IpBlock {
                            cidr: s("10.0.0.0/8"),
                            except: vec!["10.1.0.0/16".into()],
                        }),
                        ..Default::default()
                    },
                ],
            }],
            egress: vec![networking::NetworkPolicyEgressRule {
                ports: vec![],
                to: vec![networking::NetworkPolicyPeer {
                    ip_block: Some(networking::IpBlock {
                        cidr: s(""),
                        except: vec![],
                    }),
                    ..Default::default()
                }],
            }],
            policy_types: vec!["Ingress".into(), "Egress".into()],
        }),
    };
    let v = decode_ok(&body("networking.k8s.io/v1", "NetworkPolicy", &np));
    assert_eq!(
        v,
        json!({
            "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
            "metadata": {"name": "db", "namespace": "default"},
            "spec": {
                "podSelector": {"matchLabels": {"app": "db"}},
                "ingress": [{
                    "ports": [
                        {"protocol": "TCP", "port": 5432, "endPort": 5440},
                        {"port": "metrics"}
                    ],
                    "from": [
                        {"podSelector": {}, "namespaceSelector": {"matchLabels": {"team": "a"}}},
                        {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}
                    ]
                }],
                "egress": [{"to": [{"ipBlock": {"cidr": ""}}]}],
                "policyTypes": ["Ingress", "Egress"]
            }
        })
    );
    oracle::<k8s_openapi::api::networking::v1::NetworkPolicy>(&v);

    // The pod selector is a value struct: written even when empty; an empty spec too.
    let bare = networking::NetworkPolicy {
        metadata: Some(go_meta("all", "default")),
        spec: Some(networking::NetworkPolicySpec {
            pod_selector: Some(meta::LabelSelector::default()),
            ..Default::default()
        }),
    };
    let v = decode_ok(&body("networking.k8s.io/v1", "NetworkPolicy", &bare));
    assert_eq!(v["spec"], json!({"podSelector": {}}));
}

#[test]
fn core_event() {
    let ts = |sec| meta::Time {
        seconds: Some(sec),
        nanos: Some(0),
    };
    let ev = core::Event {
        metadata: Some(go_meta("pod-a.17f", "default")),
        involved_object: Some(core::ObjectReference {
            kind: s("Pod"),
            namespace: s("default"),
            name: s("pod-a"),
            uid: s("1234"),
            api_version: s("v1"),
            resource_version: s(""),
            field_path: s(""),
        }),
        reason: s("Started"),
        message: s("Started container"),
        source: Some(core::EventSource {
            component: s("kubelet"),
            host: s(""),
        }),
        first_timestamp: Some(ts(1_136_214_245)),
        last_timestamp: Some(ts(1_136_214_305)),
        count: Some(2),
        r#type: s("Normal"),
        event_time: Some(meta::MicroTime::default()),
        series: None,
        action: s(""),
        related: None,
        reporting_component: None,
        reporting_instance: s(""),
    };
    let v = decode_ok(&body("v1", "Event", &ev));
    assert_eq!(
        v,
        json!({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": "pod-a.17f", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "pod-a", "uid": "1234", "apiVersion": "v1"},
            "reason": "Started",
            "message": "Started container",
            "source": {"component": "kubelet"},
            "firstTimestamp": "2006-01-02T15:04:05Z",
            "lastTimestamp": "2006-01-02T15:05:05Z",
            "count": 2,
            "type": "Normal",
            "reportingComponent": "",
            "reportingInstance": ""
        })
    );
    oracle::<k8s_openapi::api::core::v1::Event>(&v);
}

#[test]
fn events_v1_event() {
    let ev = events::Event {
        metadata: Some(go_meta("e1", "default")),
        event_time: Some(meta::MicroTime {
            seconds: Some(1_700_000_000),
            nanos: Some(5_000),
        }),
        series: None,
        reporting_controller: s("example.com/ctrl"),
        reporting_instance: s("ctrl-1"),
        action: s("Reconcile"),
        reason: s("Synced"),
        regarding: Some(core::ObjectReference {
            kind: s("ConfigMap"),
            name: s("cfg"),
            namespace: s("default"),
            ..Default::default()
        }),
        related: None,
        note: s("all good"),
        r#type: s("Normal"),
        deprecated_source: Some(core::EventSource {
            component: s(""),
            host: s(""),
        }),
        deprecated_first_timestamp: Some(meta::Time::default()),
        deprecated_last_timestamp: Some(meta::Time::default()),
        deprecated_count: Some(0),
    };
    let v = decode_ok(&body("events.k8s.io/v1", "Event", &ev));
    assert_eq!(
        v,
        json!({
            "apiVersion": "events.k8s.io/v1", "kind": "Event",
            "metadata": {"name": "e1", "namespace": "default"},
            "eventTime": "2023-11-14T22:13:20.000005Z",
            "reportingController": "example.com/ctrl",
            "reportingInstance": "ctrl-1",
            "action": "Reconcile",
            "reason": "Synced",
            "regarding": {"kind": "ConfigMap", "name": "cfg", "namespace": "default"},
            "note": "all good",
            "type": "Normal",
            "deprecatedSource": {}
        })
    );
    oracle::<k8s_openapi::api::events::v1::Event>(&v);
}

#[test]
fn role_binding() {
    let rb = rbac::RoleBinding {
        metadata: Some(go_meta("read-pods", "default")),
        subjects: vec![
            rbac::Subject {
                kind: s("User"),
                api_group: s("rbac.authorization.k8s.io"),
                name: s("jane"),
                namespace: s(""),
            },
            rbac::Subject {
                kind: s("ServiceAccount"),
                api_group: s(""),
                name: s("default"),
                namespace: s("ci"),
            },
        ],
        role_ref: Some(rbac::RoleRef {
            api_group: s("rbac.authorization.k8s.io"),
            kind: s("Role"),
            name: s("pod-reader"),
        }),
    };
    let v = decode_ok(&body("rbac.authorization.k8s.io/v1", "RoleBinding", &rb));
    assert_eq!(
        v,
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
            "metadata": {"name": "read-pods", "namespace": "default"},
            "subjects": [
                {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": "jane"},
                {"kind": "ServiceAccount", "name": "default", "namespace": "ci"}
            ],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "pod-reader"}
        })
    );
    oracle::<k8s_openapi::api::rbac::v1::RoleBinding>(&v);
}

#[test]
fn role_and_cluster_role_binding() {
    let role = rbac::Role {
        metadata: Some(go_meta("pod-reader", "default")),
        rules: vec![rbac::PolicyRule {
            verbs: vec!["get".into(), "list".into()],
            api_groups: vec![String::new()],
            resources: vec!["pods".into()],
            ..Default::default()
        }],
    };
    let v = decode_ok(&body("rbac.authorization.k8s.io/v1", "Role", &role));
    assert_eq!(
        v["rules"],
        json!([{"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods"]}])
    );
    oracle::<k8s_openapi::api::rbac::v1::Role>(&v);

    let crb = rbac::ClusterRoleBinding {
        metadata: Some(go_meta("admins", "")),
        subjects: vec![rbac::Subject {
            kind: s("Group"),
            api_group: s("rbac.authorization.k8s.io"),
            name: s("admins"),
            namespace: s(""),
        }],
        role_ref: Some(rbac::RoleRef {
            api_group: s("rbac.authorization.k8s.io"),
            kind: s("ClusterRole"),
            name: s("cluster-admin"),
        }),
    };
    let v = decode_ok(&body(
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        &crb,
    ));
    assert_eq!(v["metadata"], json!({"name": "admins"}));
    oracle::<k8s_openapi::api::rbac::v1::ClusterRoleBinding>(&v);
}

#[test]
fn cluster_role_with_aggregation_rule() {
    let cr = rbac::ClusterRole {
        metadata: Some(go_meta("monitoring", "")),
        rules: vec![rbac::PolicyRule {
            verbs: vec!["get".into()],
            non_resource_ur_ls: vec!["/metrics".into()],
            ..Default::default()
        }],
        aggregation_rule: Some(rbac::AggregationRule {
            cluster_role_selectors: vec![meta::LabelSelector {
                match_labels: BTreeMap::from([(
                    "rbac.example.com/aggregate-to-monitoring".to_string(),
                    "true".to_string(),
                )]),
                match_expressions: vec![meta::LabelSelectorRequirement {
                    key: s("tier"),
                    operator: s("In"),
                    values: vec!["a".into(), "b".into()],
                }],
            }],
        }),
    };
    let v = decode_ok(&body("rbac.authorization.k8s.io/v1", "ClusterRole", &cr));
    assert_eq!(
        v,
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": "monitoring"},
            "rules": [{"verbs": ["get"], "nonResourceURLs": ["/metrics"]}],
            "aggregationRule": {"clusterRoleSelectors": [{
                "matchLabels": {"rbac.example.com/aggregate-to-monitoring": "true"},
                "matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]
            }]}
        })
    );
    oracle::<k8s_openapi::api::rbac::v1::ClusterRole>(&v);
}

#[test]
fn delete_options_under_any_api_version() {
    let opts = meta::DeleteOptions {
        grace_period_seconds: Some(0),
        preconditions: Some(meta::Preconditions {
            uid: s("5d2c-uid"),
            resource_version: s("42"),
        }),
        orphan_dependents: None,
        propagation_policy: s("Background"),
        dry_run: vec!["All".into()],
        ignore_store_read_error_with_cluster_breaking_potential: None,
    };
    for api_version in ["v1", "meta.k8s.io/v1", "batch/v1", "coordination.k8s.io/v1"] {
        assert!(kplane_protobuf::supports(api_version, "DeleteOptions"));
        let v = decode_ok(&body(api_version, "DeleteOptions", &opts));
        assert_eq!(
            v,
            json!({
                "apiVersion": api_version, "kind": "DeleteOptions",
                "gracePeriodSeconds": 0,
                "preconditions": {"uid": "5d2c-uid", "resourceVersion": "42"},
                "propagationPolicy": "Background",
                "dryRun": ["All"]
            })
        );
        oracle::<k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions>(&v);
    }
    // Empty DeleteOptions (client-go's default Delete call).
    let v = decode_ok(&body(
        "v1",
        "DeleteOptions",
        &meta::DeleteOptions::default(),
    ));
    assert_eq!(v, json!({"apiVersion": "v1", "kind": "DeleteOptions"}));
}

#[test]
fn self_subject_access_review() {
    let review = authz::SelfSubjectAccessReview {
        metadata: Some(go_meta("", "")),
        spec: Some(authz::SelfSubjectAccessReviewSpec {
            resource_attributes: Some(authz::ResourceAttributes {
                namespace: s("default"),
                verb: s("create"),
                group: s(""),
                version: s(""),
                resource: s("deployments"),
                subresource: s(""),
                name: s(""),
                field_selector: None,
                label_selector: None,
            }),
            non_resource_attributes: None,
        }),
        status: Some(authz::SubjectAccessReviewStatus {
            allowed: Some(false),
            denied: Some(false),
            reason: s(""),
            evaluation_error: s(""),
        }),
    };
    let v = decode_ok(&body(
        "authorization.k8s.io/v1",
        "SelfSubjectAccessReview",
        &review,
    ));
    assert_eq!(
        v,
        json!({
            "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "metadata": {},
            "spec": {"resourceAttributes": {"namespace": "default", "verb": "create", "resource": "deployments"}},
            "status": {"allowed": false}
        })
    );
    oracle::<k8s_openapi::api::authorization::v1::SelfSubjectAccessReview>(&v);
}

#[test]
fn subject_access_reviews_and_rules_review() {
    let spec = authz::SubjectAccessReviewSpec {
        non_resource_attributes: Some(authz::NonResourceAttributes {
            path: s("/healthz"),
            verb: s("get"),
        }),
        user: s("jane"),
        groups: vec!["dev".into()],
        extra: BTreeMap::from([(
            "scopes".to_string(),
            authz::ExtraValue {
                items: vec!["a".into(), "b".into()],
            },
        )]),
        uid: s(""),
        ..Default::default()
    };
    let sar = authz::SubjectAccessReview {
        metadata: Some(go_meta("", "")),
        spec: Some(spec.clone()),
        status: None,
    };
    let v = decode_ok(&body(
        "authorization.k8s.io/v1",
        "SubjectAccessReview",
        &sar,
    ));
    assert_eq!(
        v["spec"],
        json!({
            "nonResourceAttributes": {"path": "/healthz", "verb": "get"},
            "user": "jane", "groups": ["dev"], "extra": {"scopes": ["a", "b"]}
        })
    );
    oracle::<k8s_openapi::api::authorization::v1::SubjectAccessReview>(&v);

    let lsar = authz::LocalSubjectAccessReview {
        metadata: Some(go_meta("", "ns1")),
        spec: Some(spec),
        status: None,
    };
    let v = decode_ok(&body(
        "authorization.k8s.io/v1",
        "LocalSubjectAccessReview",
        &lsar,
    ));
    assert_eq!(v["metadata"], json!({"namespace": "ns1"}));
    oracle::<k8s_openapi::api::authorization::v1::LocalSubjectAccessReview>(&v);

    let ssrr = authz::SelfSubjectRulesReview {
        metadata: Some(go_meta("", "")),
        spec: Some(authz::SelfSubjectRulesReviewSpec {
            namespace: s("default"),
        }),
        status: Some(authz::SubjectRulesReviewStatus {
            incomplete: Some(false),
            evaluation_error: s(""),
            ..Default::default()
        }),
    };
    let v = decode_ok(&body(
        "authorization.k8s.io/v1",
        "SelfSubjectRulesReview",
        &ssrr,
    ));
    assert_eq!(
        v,
        json!({
            "apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectRulesReview",
            "metadata": {},
            "spec": {"namespace": "default"},
            "status": {"resourceRules": [], "nonResourceRules": [], "incomplete": false}
        })
    );
    oracle::<k8s_openapi::api::authorization::v1::SelfSubjectRulesReview>(&v);
}

#[test]
fn token_request() {
    let tr = authn::TokenRequest {
        metadata: Some(go_meta("", "")),
        spec: Some(authn::TokenRequestSpec {
            audiences: vec!["https://kubernetes.default.svc".into()],
            expiration_seconds: Some(3600),
            bound_object_ref: Some(authn::BoundObjectReference {
                kind: s("Pod"),
                api_version: s("v1"),
                name: s("pod-a"),
                u_id: s(""),
            }),
        }),
        status: Some(authn::TokenRequestStatus {
            token: s(""),
            expiration_timestamp: Some(meta::Time::default()),
        }),
    };
    let v = decode_ok(&body("authentication.k8s.io/v1", "TokenRequest", &tr));
    // Go renders the zero required expirationTimestamp as null.
    assert_eq!(
        v,
        json!({
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
            "metadata": {},
            "spec": {
                "audiences": ["https://kubernetes.default.svc"],
                "expirationSeconds": 3600,
                "boundObjectRef": {"kind": "Pod", "apiVersion": "v1", "name": "pod-a"}
            },
            "status": {"token": "", "expirationTimestamp": null}
        })
    );
    // Without status (what k8s-openapi can represent) the oracle applies.
    let mut without_status = v.clone();
    if let Some(o) = without_status.as_object_mut() {
        o.remove("status");
    }
    oracle::<k8s_openapi::api::authentication::v1::TokenRequest>(&without_status);
}

#[test]
fn token_review_and_self_subject_review() {
    let tr = authn::TokenReview {
        metadata: Some(go_meta("", "")),
        spec: Some(authn::TokenReviewSpec {
            token: s("abc.def"),
            audiences: vec![],
        }),
        status: Some(authn::TokenReviewStatus {
            authenticated: Some(false),
            user: Some(authn::UserInfo {
                username: s(""),
                uid: s(""),
                ..Default::default()
            }),
            audiences: vec![],
            error: s(""),
        }),
    };
    let v = decode_ok(&body("authentication.k8s.io/v1", "TokenReview", &tr));
    assert_eq!(
        v,
        json!({
            "apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview",
            "metadata": {}, "spec": {"token": "abc.def"}, "status": {"user": {}}
        })
    );
    oracle::<k8s_openapi::api::authentication::v1::TokenReview>(&v);

    let ssr = authn::SelfSubjectReview {
        metadata: Some(go_meta("", "")),
        status: Some(authn::SelfSubjectReviewStatus {
            user_info: Some(authn::UserInfo::default()),
        }),
    };
    let v = decode_ok(&body("authentication.k8s.io/v1", "SelfSubjectReview", &ssr));
    assert_eq!(
        v,
        json!({
            "apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview",
            "metadata": {}, "status": {"userInfo": {}}
        })
    );
    oracle::<k8s_openapi::api::authentication::v1::SelfSubjectReview>(&v);
}

#[test]
fn scale_and_resource_quota() {
    let scale = k8s_pb::api::autoscaling::v1::Scale {
        metadata: Some(go_meta("web", "default")),
        spec: Some(k8s_pb::api::autoscaling::v1::ScaleSpec { replicas: Some(3) }),
        status: Some(k8s_pb::api::autoscaling::v1::ScaleStatus {
            replicas: Some(0),
            selector: s(""),
        }),
    };
    let v = decode_ok(&body("autoscaling/v1", "Scale", &scale));
    assert_eq!(
        v,
        json!({
            "apiVersion": "autoscaling/v1", "kind": "Scale",
            "metadata": {"name": "web", "namespace": "default"},
            "spec": {"replicas": 3}, "status": {"replicas": 0}
        })
    );
    oracle::<k8s_openapi::api::autoscaling::v1::Scale>(&v);

    let rq = core::ResourceQuota {
        metadata: Some(go_meta("quota", "default")),
        spec: Some(core::ResourceQuotaSpec {
            hard: BTreeMap::from([
                ("pods".to_string(), q("10")),
                ("requests.memory".to_string(), q("1Gi")),
            ]),
            ..Default::default()
        }),
        status: Some(core::ResourceQuotaStatus::default()),
    };
    let v = decode_ok(&body("v1", "ResourceQuota", &rq));
    assert_eq!(
        v["spec"],
        json!({"hard": {"pods": "10", "requests.memory": "1Gi"}})
    );
    oracle::<k8s_openapi::api::core::v1::ResourceQuota>(&v);
}

/// A rule as Go nests it: `NamedRuleWithOperations` embeds `RuleWithOperations`, which
/// embeds `Rule`, all three `json:",inline"`.
fn named_rule(resources: &[&str]) -> admission::NamedRuleWithOperations {
    admission::NamedRuleWithOperations {
        resource_names: vec![],
        rule_with_operations: Some(admission::RuleWithOperations {
            operations: vec!["CREATE".into(), "UPDATE".into()],
            rule: Some(admission::Rule {
                api_groups: vec!["apps".into()],
                api_versions: vec!["v1".into()],
                resources: resources.iter().map(|r| r.to_string()).collect(),
                scope: None,
            }),
        }),
    }
}

#[test]
fn validating_admission_policy_and_binding() {
    let policy = admission::ValidatingAdmissionPolicy {
        metadata: Some(go_meta("replicas", "")),
        spec: Some(admission::ValidatingAdmissionPolicySpec {
            param_kind: None,
            match_constraints: Some(admission::MatchResources {
                namespace_selector: Some(meta::LabelSelector::default()),
                object_selector: Some(meta::LabelSelector::default()),
                resource_rules: vec![named_rule(&["deployments"])],
                exclude_resource_rules: vec![],
                match_policy: s("Equivalent"),
            }),
            validations: vec![admission::Validation {
                expression: s("variables.oddReplicas"),
                message: s(""),
                reason: None,
                message_expression: s(""),
            }],
            failure_policy: s("Fail"),
            audit_annotations: vec![],
            match_conditions: vec![],
            variables: vec![admission::Variable {
                name: s("oddReplicas"),
                expression: s("object.spec.replicas % 2 == 1"),
            }],
        }),
        status: Some(admission::ValidatingAdmissionPolicyStatus {
            observed_generation: Some(0),
            type_checking: None,
            conditions: vec![],
        }),
    };
    let v = decode_ok(&body(
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicy",
        &policy,
    ));
    assert_eq!(
        v,
        json!({
            "apiVersion": "admissionregistration.k8s.io/v1",
            "kind": "ValidatingAdmissionPolicy",
            "metadata": {"name": "replicas"},
            "spec": {
                "matchConstraints": {
                    "namespaceSelector": {},
                    "objectSelector": {},
                    "resourceRules": [{
                        "operations": ["CREATE", "UPDATE"],
                        "apiGroups": ["apps"],
                        "apiVersions": ["v1"],
                        "resources": ["deployments"]
                    }],
                    "matchPolicy": "Equivalent"
                },
                "validations": [{"expression": "variables.oddReplicas"}],
                "failurePolicy": "Fail",
                "variables": [
                    {"name": "oddReplicas", "expression": "object.spec.replicas % 2 == 1"}
                ]
            },
            "status": {}
        })
    );
    oracle::<k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicy>(&v);

    let binding = admission::ValidatingAdmissionPolicyBinding {
        metadata: Some(go_meta("replicas-binding", "")),
        spec: Some(admission::ValidatingAdmissionPolicyBindingSpec {
            policy_name: s("replicas"),
            param_ref: Some(admission::ParamRef {
                name: s("limits"),
                namespace: s(""),
                selector: None,
                parameter_not_found_action: s("Deny"),
            }),
            match_resources: Some(admission::MatchResources {
                namespace_selector: Some(meta::LabelSelector {
                    match_labels: BTreeMap::from([("env".to_string(), "test".to_string())]),
                    match_expressions: vec![],
                }),
                object_selector: None,
                resource_rules: vec![],
                exclude_resource_rules: vec![named_rule(&["replicasets"])],
                match_policy: None,
            }),
            validation_actions: vec!["Deny".into(), "Audit".into()],
        }),
    };
    let v = decode_ok(&body(
        "admissionregistration.k8s.io/v1",
        "ValidatingAdmissionPolicyBinding",
        &binding,
    ));
    assert_eq!(
        v["spec"],
        json!({
            "policyName": "replicas",
            "paramRef": {"name": "limits", "parameterNotFoundAction": "Deny"},
            "matchResources": {
                "namespaceSelector": {"matchLabels": {"env": "test"}},
                "excludeResourceRules": [{
                    "operations": ["CREATE", "UPDATE"],
                    "apiGroups": ["apps"],
                    "apiVersions": ["v1"],
                    "resources": ["replicasets"]
                }]
            },
            "validationActions": ["Deny", "Audit"]
        })
    );
    oracle::<k8s_openapi::api::admissionregistration::v1::ValidatingAdmissionPolicyBinding>(&v);
}

#[test]
fn webhook_configurations() {
    let client_config = admission::WebhookClientConfig {
        url: None,
        service: Some(admission::ServiceReference {
            namespace: s("hive"),
            name: s("hiveadmission"),
            path: s("/apis/admission.hive.openshift.io/v1/clusterdeploymentvalidators"),
            port: Some(443),
        }),
        ca_bundle: Some(b"CA".to_vec()),
    };
    let rule = admission::RuleWithOperations {
        operations: vec!["CREATE".into()],
        rule: Some(admission::Rule {
            api_groups: vec!["hive.openshift.io".into()],
            api_versions: vec!["v1".into()],
            resources: vec!["clusterdeployments".into()],
            scope: s("*"),
        }),
    };
    let validating = admission::ValidatingWebhookConfiguration {
        metadata: Some(go_meta("clusterdeploymentvalidators", "")),
        webhooks: vec![admission::ValidatingWebhook {
            name: s("clusterdeploymentvalidators.admission.hive.openshift.io"),
            client_config: Some(client_config.clone()),
            rules: vec![rule.clone()],
            failure_policy: s("Fail"),
            match_policy: s("Equivalent"),
            namespace_selector: Some(meta::LabelSelector::default()),
            object_selector: Some(meta::LabelSelector::default()),
            side_effects: s("None"),
            timeout_seconds: Some(10),
            admission_review_versions: vec!["v1".into()],
            match_conditions: vec![admission::MatchCondition {
                name: s("not-system"),
                expression: s("!request.userInfo.username.startsWith('system:')"),
            }],
        }],
    };
    let v = decode_ok(&body(
        "admissionregistration.k8s.io/v1",
        "ValidatingWebhookConfiguration",
        &validating,
    ));
    assert_eq!(
        v["webhooks"],
        json!([{
            "name": "clusterdeploymentvalidators.admission.hive.openshift.io",
            "clientConfig": {
                "service": {
                    "namespace": "hive", "name": "hiveadmission",
                    "path": "/apis/admission.hive.openshift.io/v1/clusterdeploymentvalidators",
                    "port": 443
                },
                "caBundle": "Q0E="
            },
            "rules": [{
                "operations": ["CREATE"],
                "apiGroups": ["hive.openshift.io"],
                "apiVersions": ["v1"],
                "resources": ["clusterdeployments"],
                "scope": "*"
            }],
            "failurePolicy": "Fail",
            "matchPolicy": "Equivalent",
            "namespaceSelector": {},
            "objectSelector": {},
            "sideEffects": "None",
            "timeoutSeconds": 10,
            "admissionReviewVersions": ["v1"],
            "matchConditions": [{
                "name": "not-system",
                "expression": "!request.userInfo.username.startsWith('system:')"
            }]
        }])
    );
    oracle::<k8s_openapi::api::admissionregistration::v1::ValidatingWebhookConfiguration>(&v);

    let mutating = admission::MutatingWebhookConfiguration {
        metadata: Some(go_meta("defaults", "")),
        webhooks: vec![admission::MutatingWebhook {
            name: s("defaults.example.com"),
            client_config: Some(admission::WebhookClientConfig {
                url: s("https://127.0.0.1:9443/mutate"),
                service: None,
                ca_bundle: None,
            }),
            rules: vec![rule],
            failure_policy: s("Ignore"),
            match_policy: None,
            namespace_selector: None,
            object_selector: None,
            side_effects: s("NoneOnDryRun"),
            timeout_seconds: None,
            admission_review_versions: vec!["v1".into(), "v1beta1".into()],
            reinvocation_policy: s("IfNeeded"),
            match_conditions: vec![],
        }],
    };
    let v = decode_ok(&body(
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
        &mutating,
    ));
    assert_eq!(
        v["webhooks"][0]["clientConfig"],
        json!({"url": "https://127.0.0.1:9443/mutate"})
    );
    assert_eq!(v["webhooks"][0]["reinvocationPolicy"], json!("IfNeeded"));
    assert_eq!(v["webhooks"][0]["rules"][0]["scope"], json!("*"));
    oracle::<k8s_openapi::api::admissionregistration::v1::MutatingWebhookConfiguration>(&v);

    // `sideEffects` is a Go pointer without `omitempty`: absent, it is absent (validation
    // then says it is required), never an empty string
    let mut without = mutating.clone();
    without.webhooks[0].side_effects = None;
    let v = decode_ok(&body(
        "admissionregistration.k8s.io/v1",
        "MutatingWebhookConfiguration",
        &without,
    ));
    assert!(v["webhooks"][0].get("sideEffects").is_none(), "{v}");
}

#[test]
fn managed_fields_and_owner_references() {
    let cm = core::ConfigMap {
        metadata: Some(meta::ObjectMeta {
            owner_references: vec![meta::OwnerReference {
                api_version: s("apps/v1"),
                kind: s("Deployment"),
                name: s("web"),
                uid: s("u-1"),
                controller: Some(true),
                block_owner_deletion: Some(false),
            }],
            managed_fields: vec![meta::ManagedFieldsEntry {
                manager: s("kubectl"),
                operation: s("Update"),
                api_version: s("v1"),
                time: Some(meta::Time {
                    seconds: Some(0),
                    nanos: Some(0),
                }),
                fields_type: s("FieldsV1"),
                fields_v1: Some(meta::FieldsV1 {
                    raw: Some(br#"{"f:data":{".":{},"f:a":{}}}"#.to_vec()),
                }),
                subresource: s(""),
            }],
            deletion_timestamp: None,
            ..go_meta("cfg", "default")
        }),
        ..Default::default()
    };
    let v = decode_ok(&body("v1", "ConfigMap", &cm));
    assert_eq!(
        v["metadata"],
        json!({
            "name": "cfg", "namespace": "default",
            "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "uid": "u-1", "controller": true, "blockOwnerDeletion": false}],
            "managedFields": [{
                "manager": "kubectl", "operation": "Update", "apiVersion": "v1",
                "time": "1970-01-01T00:00:00Z",
                "fieldsType": "FieldsV1",
                "fieldsV1": {"f:data": {".": {}, "f:a": {}}}
            }]
        })
    );
    oracle::<k8s_openapi::api::core::v1::ConfigMap>(&v);
}

#[test]
fn custom_resource_definition() {
    let mut props = BTreeMap::new();
    props.insert(
        "replicas".to_string(),
        apiext::JsonSchemaProps {
            r#type: s("integer"),
            maximum: Some(10.0),
            minimum: Some(0.0),
            default: Some(apiext::Json {
                raw: Some(b"1".to_vec()),
            }),
            ..Default::default()
        },
    );
    props.insert(
        "tags".to_string(),
        apiext::JsonSchemaProps {
            r#type: s("array"),
            items: Some(Box::new(apiext::JsonSchemaPropsOrArray {
                schema: Some(Box::new(apiext::JsonSchemaProps {
                    r#type: s("string"),
                    r#enum: vec![
                        apiext::Json {
                            raw: Some(br#""a""#.to_vec()),
                        },
                        apiext::Json {
                            raw: Some(br#""b""#.to_vec()),
                        },
                    ],
                    ..Default::default()
                })),
                j_son_schemas: vec![],
            })),
            ..Default::default()
        },
    );
    props.insert(
        "labels".to_string(),
        apiext::JsonSchemaProps {
            r#type: s("object"),
            additional_properties: Some(Box::new(apiext::JsonSchemaPropsOrBool {
                allows: Some(true),
                schema: Some(Box::new(apiext::JsonSchemaProps {
                    r#type: s("string"),
                    ..Default::default()
                })),
            })),
            ..Default::default()
        },
    );
    props.insert(
        "free".to_string(),
        apiext::JsonSchemaProps {
            r#type: s("object"),
            x_kubernetes_preserve_unknown_fields: Some(true),
            additional_properties: Some(Box::new(apiext::JsonSchemaPropsOrBool {
                allows: Some(false),
                schema: None,
            })),
            ..Default::default()
        },
    );
    let crd = apiext::CustomResourceDefinition {
        metadata: Some(go_meta("widgets.example.com", "")),
        spec: Some(apiext::CustomResourceDefinitionSpec {
            group: s("example.com"),
            names: Some(apiext::CustomResourceDefinitionNames {
                plural: s("widgets"),
                singular: s("widget"),
                kind: s("Widget"),
                list_kind: s(""),
                short_names: vec!["wg".into()],
                categories: vec![],
            }),
            scope: s("Namespaced"),
            versions: vec![apiext::CustomResourceDefinitionVersion {
                name: s("v1"),
                served: Some(true),
                storage: Some(true),
                deprecated: Some(false),
                schema: Some(apiext::CustomResourceValidation {
                    open_apiv3_schema: Some(apiext::JsonSchemaProps {
                        r#type: s("object"),
                        properties: BTreeMap::from([(
                            "spec".to_string(),
                            apiext::JsonSchemaProps {
                                r#type: s("object"),
                                properties: props,
                                required: vec!["replicas".into()],
                                ..Default::default()
                            },
                        )]),
                        ..Default::default()
                    }),
                }),
                subresources: Some(apiext::CustomResourceSubresources {
                    status: Some(apiext::CustomResourceSubresourceStatus {}),
                    scale: None,
                }),
                ..Default::default()
            }],
            preserve_unknown_fields: Some(false),
            conversion: None,
        }),
        status: Some(apiext::CustomResourceDefinitionStatus {
            accepted_names: Some(apiext::CustomResourceDefinitionNames::default()),
            ..Default::default()
        }),
    };
    let v = decode_ok(&body(
        "apiextensions.k8s.io/v1",
        "CustomResourceDefinition",
        &crd,
    ));
    assert_eq!(
        v,
        json!({
            "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {
                "group": "example.com",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wg"]},
                "scope": "Namespaced",
                "versions": [{
                    "name": "v1", "served": true, "storage": true,
                    "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
                        "type": "object",
                        "required": ["replicas"],
                        "properties": {
                            "replicas": {"type": "integer", "maximum": 10, "minimum": 0, "default": 1},
                            "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b"]}},
                            "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true, "additionalProperties": false}
                        }
                    }}}},
                    "subresources": {"status": {}}
                }]
            },
            "status": {"acceptedNames": {"plural": "", "kind": ""}}
        })
    );
    // k8s-openapi requires status.storedVersions; check the rest.
    let mut v = v;
    if let Some(o) = v.as_object_mut() {
        o.remove("status");
    }
    oracle::<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition>(&v);
}

#[test]
fn unknown_fields_are_skipped_and_repeated_messages_merge() {
    use prost::Message;
    // ConfigMap with an unknown field 99 (varint) and metadata split in two
    // occurrences (protobuf merge semantics).
    let mut raw = Vec::new();
    let m1 = meta::ObjectMeta {
        name: s("a"),
        ..Default::default()
    }
    .encode_to_vec();
    let m2 = meta::ObjectMeta {
        namespace: s("ns"),
        ..Default::default()
    }
    .encode_to_vec();
    for m in [&m1, &m2] {
        raw.push(0x0a);
        raw.push(m.len() as u8);
        raw.extend_from_slice(m);
    }
    raw.extend_from_slice(&[0x98, 0x06, 0x01]); // field 99, varint 1
    let v = decode_ok(&encode_envelope("v1", "ConfigMap", &raw));
    assert_eq!(
        v,
        json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "ns"}})
    );
}

#[test]
fn packed_and_unpacked_repeated_ints() {
    use prost::Message;
    let sc = core::PodSecurityContext {
        supplemental_groups: vec![1, 2, 300],
        ..Default::default()
    };
    let unpacked = sc.encode_to_vec();
    // Packed form of field 4: tag (4<<3)|2, len, varints.
    let packed = vec![0x22, 0x04, 0x01, 0x02, 0xac, 0x02];
    for bytes in [unpacked, packed] {
        let spec = core::PodSpec::default().encode_to_vec();
        let mut pod_spec = spec;
        pod_spec.push(0x72); // field 14 (securityContext), LEN
        pod_spec.push(bytes.len() as u8);
        pod_spec.extend_from_slice(&bytes);
        let template = core::PodTemplateSpec::default().encode_to_vec();
        let mut template = template;
        template.push(0x12);
        template.push(pod_spec.len() as u8);
        template.extend_from_slice(&pod_spec);
        let mut job_spec = Vec::new();
        job_spec.push(0x32); // JobSpec.template = 6
        job_spec.push(template.len() as u8);
        job_spec.extend_from_slice(&template);
        let mut job = Vec::new();
        job.push(0x12);
        job.push(job_spec.len() as u8);
        job.extend_from_slice(&job_spec);
        let v = decode_ok(&encode_envelope("batch/v1", "Job", &job));
        assert_eq!(
            v["spec"]["template"]["spec"]["securityContext"],
            json!({"supplementalGroups": [1, 2, 300]})
        );
    }
}

#[test]
fn supports_lists_exactly_the_table() {
    for (api_version, kind) in [
        ("v1", "Namespace"),
        ("v1", "ConfigMap"),
        ("v1", "Secret"),
        ("v1", "ServiceAccount"),
        ("v1", "Event"),
        ("v1", "Pod"),
        ("events.k8s.io/v1", "Event"),
        ("coordination.k8s.io/v1", "Lease"),
        ("rbac.authorization.k8s.io/v1", "Role"),
        ("rbac.authorization.k8s.io/v1", "RoleBinding"),
        ("rbac.authorization.k8s.io/v1", "ClusterRole"),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"),
        ("batch/v1", "Job"),
        ("networking.k8s.io/v1", "NetworkPolicy"),
        ("meta.k8s.io/v1", "DeleteOptions"),
        ("authorization.k8s.io/v1", "SelfSubjectAccessReview"),
        ("authorization.k8s.io/v1", "SelfSubjectRulesReview"),
        ("authorization.k8s.io/v1", "SubjectAccessReview"),
        ("authorization.k8s.io/v1", "LocalSubjectAccessReview"),
        ("authentication.k8s.io/v1", "SelfSubjectReview"),
        ("authentication.k8s.io/v1", "TokenReview"),
        ("authentication.k8s.io/v1", "TokenRequest"),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ("autoscaling/v1", "Scale"),
        (
            "admissionregistration.k8s.io/v1",
            "ValidatingWebhookConfiguration",
        ),
        (
            "admissionregistration.k8s.io/v1",
            "MutatingWebhookConfiguration",
        ),
        (
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicy",
        ),
        (
            "admissionregistration.k8s.io/v1",
            "ValidatingAdmissionPolicyBinding",
        ),
    ] {
        assert!(
            kplane_protobuf::supports(api_version, kind),
            "{api_version} {kind}"
        );
    }
    assert!(!kplane_protobuf::supports("v1", "Service"));
    assert!(!kplane_protobuf::supports("events.k8s.io/v1", "Lease"));
    assert!(!kplane_protobuf::supports("v2", "ConfigMap"));
    let err = kplane_protobuf::decode(&encode_envelope("v1", "Service", &[])).err();
    assert!(
        matches!(err, Some(kplane_protobuf::Error::UnsupportedKind { ref kind, .. }) if kind == "Service"),
        "{err:?}"
    );
}
