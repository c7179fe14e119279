//! GENERATED descriptor table — do not edit by hand.
//!
//! Regenerate with `cargo run -p kplane-protobuf --example gen_descriptors`
//! (see the crate docs); `tests/generated_up_to_date.rs` checks it is current.
//! One entry per protobuf message reachable from the supported kinds:
//! field tags, JSON names (from k8s-openapi), wire kinds and Go presence.

use crate::descriptor::{FieldDesc, Kind, Label, MessageDesc, Presence, Root, Special};

/// All messages of the table; `Kind::Message(i)` indexes this array.
pub(crate) static MESSAGES: [MessageDesc; 275] = [
    // 0
    MessageDesc {
        name: "api.core.v1.Namespace",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "spec", kind: Kind::Message(34), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "status", kind: Kind::Message(35), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 1
    MessageDesc {
        name: "api.core.v1.ConfigMap",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "data", kind: Kind::String, label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "binaryData", kind: Kind::Bytes, label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "immutable", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 2
    MessageDesc {
        name: "api.core.v1.Secret",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "data", kind: Kind::Bytes, label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "type", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "stringData", kind: Kind::String, label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 5, json: "immutable", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 3
    MessageDesc {
        name: "api.core.v1.ServiceAccount",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "secrets", kind: Kind::Message(36), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "imagePullSecrets", kind: Kind::Message(37), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "automountServiceAccountToken", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 4
    MessageDesc {
        name: "api.core.v1.Event",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "involvedObject", kind: Kind::Message(36), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "reason", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "message", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "source", kind: Kind::Message(38), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 6, json: "firstTimestamp", kind: Kind::Message(39), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 7, json: "lastTimestamp", kind: Kind::Message(39), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 8, json: "count", kind: Kind::Int32, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 9, json: "type", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 10, json: "eventTime", kind: Kind::Message(40), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 11, json: "series", kind: Kind::Message(41), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 12, json: "action", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 13, json: "related", kind: Kind::Message(36), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 14, json: "reportingComponent", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 15, json: "reportingInstance", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 5
    MessageDesc {
        name: "api.core.v1.Pod",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "spec", kind: Kind::Message(42), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "status", kind: Kind::Message(43), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 6
    MessageDesc {
        name: "api.core.v1.PodTemplate",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "template", kind: Kind::Message(44), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 7
    MessageDesc {
        name: "api.core.v1.PersistentVolumeClaim",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "spec", kind: Kind::Message(45), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "status", kind: Kind::Message(46), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 8
    MessageDesc {
        name: "api.core.v1.ResourceQuota",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "spec", kind: Kind::Message(47), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "status", kind: Kind::Message(48), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 9
    MessageDesc {
        name: "api.events.v1.Event",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "eventTime", kind: Kind::Message(40), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "series", kind: Kind::Message(49), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "reportingController", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "reportingInstance", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 6, json: "action", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 7, json: "reason", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 8, json: "regarding", kind: Kind::Message(36), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 9, json: "related", kind: Kind::Message(36), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 10, json: "note", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 11, json: "type", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 12, json: "deprecatedSource", kind: Kind::Message(38), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 13, json: "deprecatedFirstTimestamp", kind: Kind::Message(39), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 14, json: "deprecatedLastTimestamp", kind: Kind::Message(39), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 15, json: "deprecatedCount", kind: Kind::Int32, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 10
    MessageDesc {
        name: "api.coordination.v1.Lease",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "spec", kind: Kind::Message(50), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 11
    MessageDesc {
        name: "api.rbac.v1.Role",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "rules", kind: Kind::Message(51), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 12
    MessageDesc {
        name: "api.rbac.v1.RoleBinding",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "subjects", kind: Kind::Message(52), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "roleRef", kind: Kind::Message(53), label: Label::Single, presence: Presence::Required },
        ],
    },
    // 13
    MessageDesc {
        name: "api.rbac.v1.ClusterRole",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "rules", kind: Kind::Message(51), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "aggregationRule", kind: Kind::Message(54), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 14
    MessageDesc {
        name: "api.rbac.v1.ClusterRoleBinding",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "subjects", kind: Kind::Message(52), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "roleRef", kind: Kind::Message(53), label: Label::Single, presence: Presence::Required },
        ],
    },
    // 15
    MessageDesc {
        name: "api.batch.v1.Job",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "spec", kind: Kind::Message(55), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "status", kind: Kind::Message(56), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 16
    MessageDesc {
        name: "api.networking.v1.NetworkPolicy",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "spec", kind: Kind::Message(57), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 17
    MessageDesc {
        name: "api.batch.v1.CronJob",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "spec", kind: Kind::Message(58), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "status", kind: Kind::Message(59), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 18
    MessageDesc {
        name: "api.authorization.v1.SelfSubjectAccessReview",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "spec", kind: Kind::Message(60), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "status", kind: Kind::Message(61), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 19
    MessageDesc {
        name: "api.authorization.v1.SelfSubjectRulesReview",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "spec", kind: Kind::Message(62), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "status", kind: Kind::Message(63), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 20
    MessageDesc {
        name: "api.authorization.v1.SubjectAccessReview",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "spec", kind: Kind::Message(64), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "status", kind: Kind::Message(61), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 21
    MessageDesc {
        name: "api.authorization.v1.LocalSubjectAccessReview",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "spec", kind: Kind::Message(64), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "status", kind: Kind::Message(61), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 22
    MessageDesc {
        name: "api.authentication.v1.SelfSubjectReview",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "status", kind: Kind::Message(65), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 23
    MessageDesc {
        name: "api.authentication.v1.TokenReview",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "spec", kind: Kind::Message(66), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "status", kind: Kind::Message(67), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 24
    MessageDesc {
        name: "api.authentication.v1.TokenRequest",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "spec", kind: Kind::Message(68), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "status", kind: Kind::Message(69), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 25
    MessageDesc {
        name: "apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "spec", kind: Kind::Message(70), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "status", kind: Kind::Message(71), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 26
    MessageDesc {
        name: "api.autoscaling.v1.Scale",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "spec", kind: Kind::Message(72), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "status", kind: Kind::Message(73), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 27
    MessageDesc {
        name: "api.admissionregistration.v1.ValidatingWebhookConfiguration",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "webhooks", kind: Kind::Message(74), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 28
    MessageDesc {
        name: "api.admissionregistration.v1.MutatingWebhookConfiguration",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "webhooks", kind: Kind::Message(75), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 29
    MessageDesc {
        name: "api.admissionregistration.v1.ValidatingAdmissionPolicy",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "spec", kind: Kind::Message(76), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "status", kind: Kind::Message(77), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 30
    MessageDesc {
        name: "api.admissionregistration.v1.ValidatingAdmissionPolicyBinding",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "spec", kind: Kind::Message(78), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 31
    MessageDesc {
        name: "apimachinery.pkg.apis.meta.v1.DeleteOptions",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "gracePeriodSeconds", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 2, json: "preconditions", kind: Kind::Message(79), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "orphanDependents", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 4, json: "propagationPolicy", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 5, json: "dryRun", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 6, json: "ignoreStoreReadErrorWithClusterBreakingPotential", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 32
    MessageDesc {
        name: "apimachinery.pkg.apis.meta.v1.Status",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(80), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "status", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "message", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "reason", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "details", kind: Kind::Message(81), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 6, json: "code", kind: Kind::Int32, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 33
    MessageDesc {
        name: "apimachinery.pkg.apis.meta.v1.ObjectMeta",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "generateName", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "namespace", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "selfLink", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "uid", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 6, json: "resourceVersion", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 7, json: "generation", kind: Kind::Int64, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 8, json: "creationTimestamp", kind: Kind::Message(39), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 9, json: "deletionTimestamp", kind: Kind::Message(39), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 10, json: "deletionGracePeriodSeconds", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 11, json: "labels", kind: Kind::String, label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 12, json: "annotations", kind: Kind::String, label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 13, json: "ownerReferences", kind: Kind::Message(82), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 14, json: "finalizers", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 17, json: "managedFields", kind: Kind::Message(83), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 34
    MessageDesc {
        name: "api.core.v1.NamespaceSpec",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "finalizers", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 35
    MessageDesc {
        name: "api.core.v1.NamespaceStatus",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "phase", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "conditions", kind: Kind::Message(84), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 36
    MessageDesc {
        name: "api.core.v1.ObjectReference",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "kind", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "namespace", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "uid", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "apiVersion", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 6, json: "resourceVersion", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 7, json: "fieldPath", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 37
    MessageDesc {
        name: "api.core.v1.LocalObjectReference",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 38
    MessageDesc {
        name: "api.core.v1.EventSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "component", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "host", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 39
    MessageDesc {
        name: "apimachinery.pkg.apis.meta.v1.Time",
        special: Special::Time,
        fields: &[
            FieldDesc { tag: 1, json: "seconds", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 2, json: "nanos", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 40
    MessageDesc {
        name: "apimachinery.pkg.apis.meta.v1.MicroTime",
        special: Special::MicroTime,
        fields: &[
            FieldDesc { tag: 1, json: "seconds", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 2, json: "nanos", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 41
    MessageDesc {
        name: "api.core.v1.EventSeries",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "count", kind: Kind::Int32, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "lastObservedTime", kind: Kind::Message(40), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 42
    MessageDesc {
        name: "api.core.v1.PodSpec",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "volumes", kind: Kind::Message(85), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "containers", kind: Kind::Message(86), label: Label::Repeated, presence: Presence::Required },
            FieldDesc { tag: 3, json: "restartPolicy", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "terminationGracePeriodSeconds", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 5, json: "activeDeadlineSeconds", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 6, json: "dnsPolicy", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 7, json: "nodeSelector", kind: Kind::String, label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 8, json: "serviceAccountName", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 9, json: "serviceAccount", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 10, json: "nodeName", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 11, json: "hostNetwork", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 12, json: "hostPID", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 13, json: "hostIPC", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 14, json: "securityContext", kind: Kind::Message(88), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 15, json: "imagePullSecrets", kind: Kind::Message(37), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 16, json: "hostname", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 17, json: "subdomain", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 18, json: "affinity", kind: Kind::Message(89), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 19, json: "schedulerName", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 20, json: "initContainers", kind: Kind::Message(86), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 21, json: "automountServiceAccountToken", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 22, json: "tolerations", kind: Kind::Message(90), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 23, json: "hostAliases", kind: Kind::Message(91), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 24, json: "priorityClassName", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 25, json: "priority", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 26, json: "dnsConfig", kind: Kind::Message(92), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 27, json: "shareProcessNamespace", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 28, json: "readinessGates", kind: Kind::Message(93), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 29, json: "runtimeClassName", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 30, json: "enableServiceLinks", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 31, json: "preemptionPolicy", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 32, json: "overhead", kind: Kind::Message(94), label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 33, json: "topologySpreadConstraints", kind: Kind::Message(95), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 34, json: "ephemeralContainers", kind: Kind::Message(87), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 35, json: "setHostnameAsFQDN", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 36, json: "os", kind: Kind::Message(96), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 37, json: "hostUsers", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 38, json: "schedulingGates", kind: Kind::Message(97), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 39, json: "resourceClaims", kind: Kind::Message(98), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 40, json: "resources", kind: Kind::Message(99), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 41, json: "hostnameOverride", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 42, json: "workloadRef", kind: Kind::Message(100), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 43
    MessageDesc {
        name: "api.core.v1.PodStatus",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "phase", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "conditions", kind: Kind::Message(101), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "message", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "reason", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "hostIP", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 6, json: "podIP", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 7, json: "startTime", kind: Kind::Message(39), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 8, json: "containerStatuses", kind: Kind::Message(104), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 9, json: "qosClass", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 10, json: "initContainerStatuses", kind: Kind::Message(104), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 11, json: "nominatedNodeName", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 12, json: "podIPs", kind: Kind::Message(103), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 13, json: "ephemeralContainerStatuses", kind: Kind::Message(104), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 14, json: "resize", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 15, json: "resourceClaimStatuses", kind: Kind::Message(105), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 16, json: "hostIPs", kind: Kind::Message(102), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 17, json: "observedGeneration", kind: Kind::Int64, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 18, json: "extendedResourceClaimStatus", kind: Kind::Message(106), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 19, json: "allocatedResources", kind: Kind::Message(94), label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 20, json: "resources", kind: Kind::Message(99), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 44
    MessageDesc {
        name: "api.core.v1.PodTemplateSpec",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "spec", kind: Kind::Message(42), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 45
    MessageDesc {
        name: "api.core.v1.PersistentVolumeClaimSpec",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "accessModes", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "resources", kind: Kind::Message(108), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "volumeName", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "selector", kind: Kind::Message(107), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 5, json: "storageClassName", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 6, json: "volumeMode", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 7, json: "dataSource", kind: Kind::Message(109), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 8, json: "dataSourceRef", kind: Kind::Message(110), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 9, json: "volumeAttributesClassName", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 46
    MessageDesc {
        name: "api.core.v1.PersistentVolumeClaimStatus",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "phase", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "accessModes", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "capacity", kind: Kind::Message(94), label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "conditions", kind: Kind::Message(111), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 5, json: "allocatedResources", kind: Kind::Message(94), label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 7, json: "allocatedResourceStatuses", kind: Kind::String, label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 8, json: "currentVolumeAttributesClassName", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 9, json: "modifyVolumeStatus", kind: Kind::Message(112), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 47
    MessageDesc {
        name: "api.core.v1.ResourceQuotaSpec",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "hard", kind: Kind::Message(94), label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "scopes", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "scopeSelector", kind: Kind::Message(113), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 48
    MessageDesc {
        name: "api.core.v1.ResourceQuotaStatus",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "hard", kind: Kind::Message(94), label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "used", kind: Kind::Message(94), label: Label::Map, presence: Presence::Optional },
        ],
    },
    // 49
    MessageDesc {
        name: "api.events.v1.EventSeries",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "count", kind: Kind::Int32, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "lastObservedTime", kind: Kind::Message(40), label: Label::Single, presence: Presence::Required },
        ],
    },
    // 50
    MessageDesc {
        name: "api.coordination.v1.LeaseSpec",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "holderIdentity", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 2, json: "leaseDurationSeconds", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 3, json: "acquireTime", kind: Kind::Message(40), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "renewTime", kind: Kind::Message(40), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 5, json: "leaseTransitions", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 6, json: "strategy", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 7, json: "preferredHolder", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 51
    MessageDesc {
        name: "api.rbac.v1.PolicyRule",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "verbs", kind: Kind::String, label: Label::Repeated, presence: Presence::Required },
            FieldDesc { tag: 2, json: "apiGroups", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "resources", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "resourceNames", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 5, json: "nonResourceURLs", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 52
    MessageDesc {
        name: "api.rbac.v1.Subject",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "kind", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "apiGroup", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 4, json: "namespace", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 53
    MessageDesc {
        name: "api.rbac.v1.RoleRef",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "apiGroup", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "kind", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 54
    MessageDesc {
        name: "api.rbac.v1.AggregationRule",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "clusterRoleSelectors", kind: Kind::Message(107), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 55
    MessageDesc {
        name: "api.batch.v1.JobSpec",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "parallelism", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 2, json: "completions", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 3, json: "activeDeadlineSeconds", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 4, json: "selector", kind: Kind::Message(107), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 5, json: "manualSelector", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 6, json: "template", kind: Kind::Message(44), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 7, json: "backoffLimit", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 8, json: "ttlSecondsAfterFinished", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 9, json: "completionMode", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 10, json: "suspend", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 11, json: "podFailurePolicy", kind: Kind::Message(114), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 12, json: "backoffLimitPerIndex", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 13, json: "maxFailedIndexes", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 14, json: "podReplacementPolicy", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 15, json: "managedBy", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 16, json: "successPolicy", kind: Kind::Message(115), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 56
    MessageDesc {
        name: "api.batch.v1.JobStatus",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "conditions", kind: Kind::Message(116), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "startTime", kind: Kind::Message(39), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "completionTime", kind: Kind::Message(39), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "active", kind: Kind::Int32, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "succeeded", kind: Kind::Int32, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 6, json: "failed", kind: Kind::Int32, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 7, json: "completedIndexes", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 8, json: "uncountedTerminatedPods", kind: Kind::Message(117), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 9, json: "ready", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 10, json: "failedIndexes", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 11, json: "terminating", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 57
    MessageDesc {
        name: "api.networking.v1.NetworkPolicySpec",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "podSelector", kind: Kind::Message(107), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "ingress", kind: Kind::Message(118), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "egress", kind: Kind::Message(119), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "policyTypes", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 58
    MessageDesc {
        name: "api.batch.v1.CronJobSpec",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "schedule", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "startingDeadlineSeconds", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 3, json: "concurrencyPolicy", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "suspend", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 5, json: "jobTemplate", kind: Kind::Message(120), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 6, json: "successfulJobsHistoryLimit", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 7, json: "failedJobsHistoryLimit", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 8, json: "timeZone", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 59
    MessageDesc {
        name: "api.batch.v1.CronJobStatus",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "active", kind: Kind::Message(36), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "lastScheduleTime", kind: Kind::Message(39), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 5, json: "lastSuccessfulTime", kind: Kind::Message(39), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 60
    MessageDesc {
        name: "api.authorization.v1.SelfSubjectAccessReviewSpec",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "resourceAttributes", kind: Kind::Message(121), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "nonResourceAttributes", kind: Kind::Message(122), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 61
    MessageDesc {
        name: "api.authorization.v1.SubjectAccessReviewStatus",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "allowed", kind: Kind::Bool, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "reason", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "evaluationError", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "denied", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 62
    MessageDesc {
        name: "api.authorization.v1.SelfSubjectRulesReviewSpec",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "namespace", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 63
    MessageDesc {
        name: "api.authorization.v1.SubjectRulesReviewStatus",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "resourceRules", kind: Kind::Message(123), label: Label::Repeated, presence: Presence::Required },
            FieldDesc { tag: 2, json: "nonResourceRules", kind: Kind::Message(124), label: Label::Repeated, presence: Presence::Required },
            FieldDesc { tag: 3, json: "incomplete", kind: Kind::Bool, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 4, json: "evaluationError", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 64
    MessageDesc {
        name: "api.authorization.v1.SubjectAccessReviewSpec",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "resourceAttributes", kind: Kind::Message(121), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "nonResourceAttributes", kind: Kind::Message(122), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "user", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "groups", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 5, json: "extra", kind: Kind::Message(125), label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 6, json: "uid", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 65
    MessageDesc {
        name: "api.authentication.v1.SelfSubjectReviewStatus",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "userInfo", kind: Kind::Message(126), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 66
    MessageDesc {
        name: "api.authentication.v1.TokenReviewSpec",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "token", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "audiences", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 67
    MessageDesc {
        name: "api.authentication.v1.TokenReviewStatus",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "authenticated", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "user", kind: Kind::Message(126), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "error", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "audiences", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 68
    MessageDesc {
        name: "api.authentication.v1.TokenRequestSpec",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "audiences", kind: Kind::String, label: Label::Repeated, presence: Presence::Required },
            FieldDesc { tag: 3, json: "boundObjectRef", kind: Kind::Message(127), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "expirationSeconds", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 69
    MessageDesc {
        name: "api.authentication.v1.TokenRequestStatus",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "token", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "expirationTimestamp", kind: Kind::Message(39), label: Label::Single, presence: Presence::Required },
        ],
    },
    // 70
    MessageDesc {
        name: "apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionSpec",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "group", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "names", kind: Kind::Message(128), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 4, json: "scope", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 7, json: "versions", kind: Kind::Message(129), label: Label::Repeated, presence: Presence::Required },
            FieldDesc { tag: 9, json: "conversion", kind: Kind::Message(130), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 10, json: "preserveUnknownFields", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 71
    MessageDesc {
        name: "apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionStatus",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "conditions", kind: Kind::Message(131), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "acceptedNames", kind: Kind::Message(128), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "storedVersions", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "observedGeneration", kind: Kind::Int64, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 72
    MessageDesc {
        name: "api.autoscaling.v1.ScaleSpec",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "replicas", kind: Kind::Int32, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 73
    MessageDesc {
        name: "api.autoscaling.v1.ScaleStatus",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "replicas", kind: Kind::Int32, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "selector", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 74
    MessageDesc {
        name: "api.admissionregistration.v1.ValidatingWebhook",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "clientConfig", kind: Kind::Message(132), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "rules", kind: Kind::Message(133), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "failurePolicy", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 5, json: "namespaceSelector", kind: Kind::Message(107), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 6, json: "sideEffects", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 7, json: "timeoutSeconds", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 8, json: "admissionReviewVersions", kind: Kind::String, label: Label::Repeated, presence: Presence::Required },
            FieldDesc { tag: 9, json: "matchPolicy", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 10, json: "objectSelector", kind: Kind::Message(107), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 11, json: "matchConditions", kind: Kind::Message(134), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 75
    MessageDesc {
        name: "api.admissionregistration.v1.MutatingWebhook",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "clientConfig", kind: Kind::Message(132), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "rules", kind: Kind::Message(133), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "failurePolicy", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 5, json: "namespaceSelector", kind: Kind::Message(107), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 6, json: "sideEffects", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 7, json: "timeoutSeconds", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 8, json: "admissionReviewVersions", kind: Kind::String, label: Label::Repeated, presence: Presence::Required },
            FieldDesc { tag: 9, json: "matchPolicy", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 10, json: "reinvocationPolicy", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 11, json: "objectSelector", kind: Kind::Message(107), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 12, json: "matchConditions", kind: Kind::Message(134), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 76
    MessageDesc {
        name: "api.admissionregistration.v1.ValidatingAdmissionPolicySpec",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "paramKind", kind: Kind::Message(135), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "matchConstraints", kind: Kind::Message(136), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "validations", kind: Kind::Message(137), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "failurePolicy", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 5, json: "auditAnnotations", kind: Kind::Message(138), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 6, json: "matchConditions", kind: Kind::Message(134), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 7, json: "variables", kind: Kind::Message(139), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 77
    MessageDesc {
        name: "api.admissionregistration.v1.ValidatingAdmissionPolicyStatus",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "observedGeneration", kind: Kind::Int64, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "typeChecking", kind: Kind::Message(140), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "conditions", kind: Kind::Message(141), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 78
    MessageDesc {
        name: "api.admissionregistration.v1.ValidatingAdmissionPolicyBindingSpec",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "policyName", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "paramRef", kind: Kind::Message(142), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "matchResources", kind: Kind::Message(136), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "validationActions", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 79
    MessageDesc {
        name: "apimachinery.pkg.apis.meta.v1.Preconditions",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "uid", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 2, json: "resourceVersion", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 80
    MessageDesc {
        name: "apimachinery.pkg.apis.meta.v1.ListMeta",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "selfLink", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "resourceVersion", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "continue", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "remainingItemCount", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 81
    MessageDesc {
        name: "apimachinery.pkg.apis.meta.v1.StatusDetails",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "group", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "kind", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "causes", kind: Kind::Message(143), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 5, json: "retryAfterSeconds", kind: Kind::Int32, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 6, json: "uid", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 82
    MessageDesc {
        name: "apimachinery.pkg.apis.meta.v1.OwnerReference",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "kind", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 4, json: "uid", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 5, json: "apiVersion", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 6, json: "controller", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 7, json: "blockOwnerDeletion", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 83
    MessageDesc {
        name: "apimachinery.pkg.apis.meta.v1.ManagedFieldsEntry",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "manager", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "operation", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "apiVersion", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "time", kind: Kind::Message(39), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 6, json: "fieldsType", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 7, json: "fieldsV1", kind: Kind::Message(144), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 8, json: "subresource", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 84
    MessageDesc {
        name: "api.core.v1.NamespaceCondition",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "type", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "status", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 4, json: "lastTransitionTime", kind: Kind::Message(39), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 5, json: "reason", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 6, json: "message", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 85
    MessageDesc {
        name: "api.core.v1.Volume",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "", kind: Kind::Message(145), label: Label::Single, presence: Presence::Inline },
        ],
    },
    // 86
    MessageDesc {
        name: "api.core.v1.Container",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "image", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "command", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "args", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 5, json: "workingDir", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 6, json: "ports", kind: Kind::Message(146), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 7, json: "env", kind: Kind::Message(148), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 8, json: "resources", kind: Kind::Message(99), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 9, json: "volumeMounts", kind: Kind::Message(151), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 10, json: "livenessProbe", kind: Kind::Message(153), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 11, json: "readinessProbe", kind: Kind::Message(153), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 12, json: "lifecycle", kind: Kind::Message(154), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 13, json: "terminationMessagePath", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 14, json: "imagePullPolicy", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 15, json: "securityContext", kind: Kind::Message(155), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 16, json: "stdin", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 17, json: "stdinOnce", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 18, json: "tty", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 19, json: "envFrom", kind: Kind::Message(147), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 20, json: "terminationMessagePolicy", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 21, json: "volumeDevices", kind: Kind::Message(152), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 22, json: "startupProbe", kind: Kind::Message(153), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 23, json: "resizePolicy", kind: Kind::Message(149), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 24, json: "restartPolicy", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 25, json: "restartPolicyRules", kind: Kind::Message(150), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 87
    MessageDesc {
        name: "api.core.v1.EphemeralContainer",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "", kind: Kind::Message(156), label: Label::Single, presence: Presence::Inline },
            FieldDesc { tag: 2, json: "targetContainerName", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 88
    MessageDesc {
        name: "api.core.v1.PodSecurityContext",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "seLinuxOptions", kind: Kind::Message(157), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "runAsUser", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 3, json: "runAsNonRoot", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 4, json: "supplementalGroups", kind: Kind::Int64, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 5, json: "fsGroup", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 6, json: "runAsGroup", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 7, json: "sysctls", kind: Kind::Message(159), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 8, json: "windowsOptions", kind: Kind::Message(158), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 9, json: "fsGroupChangePolicy", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 10, json: "seccompProfile", kind: Kind::Message(160), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 11, json: "appArmorProfile", kind: Kind::Message(161), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 12, json: "supplementalGroupsPolicy", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 13, json: "seLinuxChangePolicy", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 89
    MessageDesc {
        name: "api.core.v1.Affinity",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "nodeAffinity", kind: Kind::Message(162), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "podAffinity", kind: Kind::Message(163), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "podAntiAffinity", kind: Kind::Message(164), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 90
    MessageDesc {
        name: "api.core.v1.Toleration",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "key", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "operator", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "value", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "effect", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "tolerationSeconds", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 91
    MessageDesc {
        name: "api.core.v1.HostAlias",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "ip", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "hostnames", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 92
    MessageDesc {
        name: "api.core.v1.PodDnsConfig",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "nameservers", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "searches", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "options", kind: Kind::Message(165), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 93
    MessageDesc {
        name: "api.core.v1.PodReadinessGate",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "conditionType", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 94
    MessageDesc {
        name: "apimachinery.pkg.api.resource.Quantity",
        special: Special::Quantity,
        fields: &[
            FieldDesc { tag: 1, json: "string", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 95
    MessageDesc {
        name: "api.core.v1.TopologySpreadConstraint",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "maxSkew", kind: Kind::Int32, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "topologyKey", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "whenUnsatisfiable", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 4, json: "labelSelector", kind: Kind::Message(107), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 5, json: "minDomains", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 6, json: "nodeAffinityPolicy", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 7, json: "nodeTaintsPolicy", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 8, json: "matchLabelKeys", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 96
    MessageDesc {
        name: "api.core.v1.PodOs",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 97
    MessageDesc {
        name: "api.core.v1.PodSchedulingGate",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 98
    MessageDesc {
        name: "api.core.v1.PodResourceClaim",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "resourceClaimName", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 4, json: "resourceClaimTemplateName", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 99
    MessageDesc {
        name: "api.core.v1.ResourceRequirements",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "limits", kind: Kind::Message(94), label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "requests", kind: Kind::Message(94), label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "claims", kind: Kind::Message(166), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 100
    MessageDesc {
        name: "api.core.v1.WorkloadReference",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "podGroup", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "podGroupReplicaKey", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 101
    MessageDesc {
        name: "api.core.v1.PodCondition",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "type", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "status", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "lastProbeTime", kind: Kind::Message(39), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "lastTransitionTime", kind: Kind::Message(39), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 5, json: "reason", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 6, json: "message", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 7, json: "observedGeneration", kind: Kind::Int64, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 102
    MessageDesc {
        name: "api.core.v1.HostIp",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "ip", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 103
    MessageDesc {
        name: "api.core.v1.PodIp",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "ip", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 104
    MessageDesc {
        name: "api.core.v1.ContainerStatus",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "state", kind: Kind::Message(167), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "lastState", kind: Kind::Message(167), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "ready", kind: Kind::Bool, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 5, json: "restartCount", kind: Kind::Int32, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 6, json: "image", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 7, json: "imageID", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 8, json: "containerID", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 9, json: "started", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 10, json: "allocatedResources", kind: Kind::Message(94), label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 11, json: "resources", kind: Kind::Message(99), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 12, json: "volumeMounts", kind: Kind::Message(168), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 13, json: "user", kind: Kind::Message(169), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 14, json: "allocatedResourcesStatus", kind: Kind::Message(170), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 15, json: "stopSignal", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 105
    MessageDesc {
        name: "api.core.v1.PodResourceClaimStatus",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "resourceClaimName", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 106
    MessageDesc {
        name: "api.core.v1.PodExtendedResourceClaimStatus",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "requestMappings", kind: Kind::Message(171), label: Label::Repeated, presence: Presence::Required },
            FieldDesc { tag: 2, json: "resourceClaimName", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 107
    MessageDesc {
        name: "apimachinery.pkg.apis.meta.v1.LabelSelector",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "matchLabels", kind: Kind::String, label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "matchExpressions", kind: Kind::Message(172), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 108
    MessageDesc {
        name: "api.core.v1.VolumeResourceRequirements",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "limits", kind: Kind::Message(94), label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "requests", kind: Kind::Message(94), label: Label::Map, presence: Presence::Optional },
        ],
    },
    // 109
    MessageDesc {
        name: "api.core.v1.TypedLocalObjectReference",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "apiGroup", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 2, json: "kind", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 110
    MessageDesc {
        name: "api.core.v1.TypedObjectReference",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "apiGroup", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 2, json: "kind", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 4, json: "namespace", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 111
    MessageDesc {
        name: "api.core.v1.PersistentVolumeClaimCondition",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "type", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "status", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "lastProbeTime", kind: Kind::Message(39), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "lastTransitionTime", kind: Kind::Message(39), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 5, json: "reason", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 6, json: "message", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 112
    MessageDesc {
        name: "api.core.v1.ModifyVolumeStatus",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "targetVolumeAttributesClassName", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "status", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 113
    MessageDesc {
        name: "api.core.v1.ScopeSelector",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "matchExpressions", kind: Kind::Message(173), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 114
    MessageDesc {
        name: "api.batch.v1.PodFailurePolicy",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "rules", kind: Kind::Message(174), label: Label::Repeated, presence: Presence::Required },
        ],
    },
    // 115
    MessageDesc {
        name: "api.batch.v1.SuccessPolicy",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "rules", kind: Kind::Message(175), label: Label::Repeated, presence: Presence::Required },
        ],
    },
    // 116
    MessageDesc {
        name: "api.batch.v1.JobCondition",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "type", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "status", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "lastProbeTime", kind: Kind::Message(39), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "lastTransitionTime", kind: Kind::Message(39), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 5, json: "reason", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 6, json: "message", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 117
    MessageDesc {
        name: "api.batch.v1.UncountedTerminatedPods",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "succeeded", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "failed", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 118
    MessageDesc {
        name: "api.networking.v1.NetworkPolicyIngressRule",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "ports", kind: Kind::Message(176), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "from", kind: Kind::Message(177), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 119
    MessageDesc {
        name: "api.networking.v1.NetworkPolicyEgressRule",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "ports", kind: Kind::Message(176), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "to", kind: Kind::Message(177), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 120
    MessageDesc {
        name: "api.batch.v1.JobTemplateSpec",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "spec", kind: Kind::Message(55), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 121
    MessageDesc {
        name: "api.authorization.v1.ResourceAttributes",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "namespace", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "verb", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "group", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "version", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "resource", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 6, json: "subresource", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 7, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 8, json: "fieldSelector", kind: Kind::Message(178), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 9, json: "labelSelector", kind: Kind::Message(179), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 122
    MessageDesc {
        name: "api.authorization.v1.NonResourceAttributes",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "path", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "verb", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 123
    MessageDesc {
        name: "api.authorization.v1.ResourceRule",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "verbs", kind: Kind::String, label: Label::Repeated, presence: Presence::Required },
            FieldDesc { tag: 2, json: "apiGroups", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "resources", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "resourceNames", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 124
    MessageDesc {
        name: "api.authorization.v1.NonResourceRule",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "verbs", kind: Kind::String, label: Label::Repeated, presence: Presence::Required },
            FieldDesc { tag: 2, json: "nonResourceURLs", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 125
    MessageDesc {
        name: "api.authorization.v1.ExtraValue",
        special: Special::StringList,
        fields: &[
            FieldDesc { tag: 1, json: "items", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 126
    MessageDesc {
        name: "api.authentication.v1.UserInfo",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "username", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "uid", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "groups", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "extra", kind: Kind::Message(180), label: Label::Map, presence: Presence::Optional },
        ],
    },
    // 127
    MessageDesc {
        name: "api.authentication.v1.BoundObjectReference",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "kind", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "apiVersion", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "uid", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 128
    MessageDesc {
        name: "apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionNames",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "plural", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "singular", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "shortNames", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "kind", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 5, json: "listKind", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 6, json: "categories", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 129
    MessageDesc {
        name: "apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionVersion",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "served", kind: Kind::Bool, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "storage", kind: Kind::Bool, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 4, json: "schema", kind: Kind::Message(181), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 5, json: "subresources", kind: Kind::Message(182), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 6, json: "additionalPrinterColumns", kind: Kind::Message(183), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 7, json: "deprecated", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 8, json: "deprecationWarning", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 9, json: "selectableFields", kind: Kind::Message(184), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 130
    MessageDesc {
        name: "apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceConversion",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "strategy", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "webhook", kind: Kind::Message(185), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 131
    MessageDesc {
        name: "apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinitionCondition",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "type", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "status", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "lastTransitionTime", kind: Kind::Message(39), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "reason", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "message", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 6, json: "observedGeneration", kind: Kind::Int64, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 132
    MessageDesc {
        name: "api.admissionregistration.v1.WebhookClientConfig",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "service", kind: Kind::Message(186), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "caBundle", kind: Kind::Bytes, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "url", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 133
    MessageDesc {
        name: "api.admissionregistration.v1.RuleWithOperations",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "operations", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "", kind: Kind::Message(187), label: Label::Single, presence: Presence::Inline },
        ],
    },
    // 134
    MessageDesc {
        name: "api.admissionregistration.v1.MatchCondition",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "expression", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 135
    MessageDesc {
        name: "api.admissionregistration.v1.ParamKind",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "apiVersion", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "kind", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 136
    MessageDesc {
        name: "api.admissionregistration.v1.MatchResources",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "namespaceSelector", kind: Kind::Message(107), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "objectSelector", kind: Kind::Message(107), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "resourceRules", kind: Kind::Message(188), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "excludeResourceRules", kind: Kind::Message(188), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 7, json: "matchPolicy", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 137
    MessageDesc {
        name: "api.admissionregistration.v1.Validation",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "expression", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "message", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "reason", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 4, json: "messageExpression", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 138
    MessageDesc {
        name: "api.admissionregistration.v1.AuditAnnotation",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "key", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "valueExpression", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 139
    MessageDesc {
        name: "api.admissionregistration.v1.Variable",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "expression", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 140
    MessageDesc {
        name: "api.admissionregistration.v1.TypeChecking",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "expressionWarnings", kind: Kind::Message(189), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 141
    MessageDesc {
        name: "apimachinery.pkg.apis.meta.v1.Condition",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "type", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "status", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "observedGeneration", kind: Kind::Int64, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "lastTransitionTime", kind: Kind::Message(39), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 5, json: "reason", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 6, json: "message", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 142
    MessageDesc {
        name: "api.admissionregistration.v1.ParamRef",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "namespace", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "selector", kind: Kind::Message(107), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "parameterNotFoundAction", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 143
    MessageDesc {
        name: "apimachinery.pkg.apis.meta.v1.StatusCause",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "reason", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "message", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "field", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 144
    MessageDesc {
        name: "apimachinery.pkg.apis.meta.v1.FieldsV1",
        special: Special::RawJson,
        fields: &[
            FieldDesc { tag: 1, json: "raw", kind: Kind::Bytes, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 145
    MessageDesc {
        name: "api.core.v1.VolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "hostPath", kind: Kind::Message(190), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "emptyDir", kind: Kind::Message(191), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "gcePersistentDisk", kind: Kind::Message(192), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "awsElasticBlockStore", kind: Kind::Message(193), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 5, json: "gitRepo", kind: Kind::Message(194), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 6, json: "secret", kind: Kind::Message(195), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 7, json: "nfs", kind: Kind::Message(196), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 8, json: "iscsi", kind: Kind::Message(197), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 9, json: "glusterfs", kind: Kind::Message(198), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 10, json: "persistentVolumeClaim", kind: Kind::Message(199), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 11, json: "rbd", kind: Kind::Message(200), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 12, json: "flexVolume", kind: Kind::Message(201), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 13, json: "cinder", kind: Kind::Message(202), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 14, json: "cephfs", kind: Kind::Message(203), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 15, json: "flocker", kind: Kind::Message(204), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 16, json: "downwardAPI", kind: Kind::Message(205), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 17, json: "fc", kind: Kind::Message(206), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 18, json: "azureFile", kind: Kind::Message(207), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 19, json: "configMap", kind: Kind::Message(208), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 20, json: "vsphereVolume", kind: Kind::Message(209), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 21, json: "quobyte", kind: Kind::Message(210), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 22, json: "azureDisk", kind: Kind::Message(211), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 23, json: "photonPersistentDisk", kind: Kind::Message(212), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 24, json: "portworxVolume", kind: Kind::Message(214), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 25, json: "scaleIO", kind: Kind::Message(215), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 26, json: "projected", kind: Kind::Message(213), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 27, json: "storageos", kind: Kind::Message(216), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 28, json: "csi", kind: Kind::Message(217), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 29, json: "ephemeral", kind: Kind::Message(218), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 30, json: "image", kind: Kind::Message(219), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 146
    MessageDesc {
        name: "api.core.v1.ContainerPort",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "hostPort", kind: Kind::Int32, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "containerPort", kind: Kind::Int32, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 4, json: "protocol", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "hostIP", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 147
    MessageDesc {
        name: "api.core.v1.EnvFromSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "prefix", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "configMapRef", kind: Kind::Message(220), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "secretRef", kind: Kind::Message(221), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 148
    MessageDesc {
        name: "api.core.v1.EnvVar",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "value", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "valueFrom", kind: Kind::Message(222), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 149
    MessageDesc {
        name: "api.core.v1.ContainerResizePolicy",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "resourceName", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "restartPolicy", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 150
    MessageDesc {
        name: "api.core.v1.ContainerRestartRule",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "action", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "exitCodes", kind: Kind::Message(223), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 151
    MessageDesc {
        name: "api.core.v1.VolumeMount",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "readOnly", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "mountPath", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 4, json: "subPath", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "mountPropagation", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 6, json: "subPathExpr", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 7, json: "recursiveReadOnly", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 152
    MessageDesc {
        name: "api.core.v1.VolumeDevice",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "devicePath", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 153
    MessageDesc {
        name: "api.core.v1.Probe",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "", kind: Kind::Message(224), label: Label::Single, presence: Presence::Inline },
            FieldDesc { tag: 2, json: "initialDelaySeconds", kind: Kind::Int32, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "timeoutSeconds", kind: Kind::Int32, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "periodSeconds", kind: Kind::Int32, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "successThreshold", kind: Kind::Int32, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 6, json: "failureThreshold", kind: Kind::Int32, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 7, json: "terminationGracePeriodSeconds", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 154
    MessageDesc {
        name: "api.core.v1.Lifecycle",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "postStart", kind: Kind::Message(225), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "preStop", kind: Kind::Message(225), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "stopSignal", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 155
    MessageDesc {
        name: "api.core.v1.SecurityContext",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "capabilities", kind: Kind::Message(226), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "privileged", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 3, json: "seLinuxOptions", kind: Kind::Message(157), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "runAsUser", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 5, json: "runAsNonRoot", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 6, json: "readOnlyRootFilesystem", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 7, json: "allowPrivilegeEscalation", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 8, json: "runAsGroup", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 9, json: "procMount", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 10, json: "windowsOptions", kind: Kind::Message(158), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 11, json: "seccompProfile", kind: Kind::Message(160), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 12, json: "appArmorProfile", kind: Kind::Message(161), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 156
    MessageDesc {
        name: "api.core.v1.EphemeralContainerCommon",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "image", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "command", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "args", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 5, json: "workingDir", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 6, json: "ports", kind: Kind::Message(146), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 7, json: "env", kind: Kind::Message(148), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 8, json: "resources", kind: Kind::Message(99), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 9, json: "volumeMounts", kind: Kind::Message(151), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 10, json: "livenessProbe", kind: Kind::Message(153), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 11, json: "readinessProbe", kind: Kind::Message(153), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 12, json: "lifecycle", kind: Kind::Message(154), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 13, json: "terminationMessagePath", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 14, json: "imagePullPolicy", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 15, json: "securityContext", kind: Kind::Message(155), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 16, json: "stdin", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 17, json: "stdinOnce", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 18, json: "tty", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 19, json: "envFrom", kind: Kind::Message(147), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 20, json: "terminationMessagePolicy", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 21, json: "volumeDevices", kind: Kind::Message(152), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 22, json: "startupProbe", kind: Kind::Message(153), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 23, json: "resizePolicy", kind: Kind::Message(149), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 24, json: "restartPolicy", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 25, json: "restartPolicyRules", kind: Kind::Message(150), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 157
    MessageDesc {
        name: "api.core.v1.SeLinuxOptions",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "user", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "role", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "type", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "level", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 158
    MessageDesc {
        name: "api.core.v1.WindowsSecurityContextOptions",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "gmsaCredentialSpecName", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 2, json: "gmsaCredentialSpec", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 3, json: "runAsUserName", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 4, json: "hostProcess", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 159
    MessageDesc {
        name: "api.core.v1.Sysctl",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "value", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 160
    MessageDesc {
        name: "api.core.v1.SeccompProfile",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "type", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "localhostProfile", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 161
    MessageDesc {
        name: "api.core.v1.AppArmorProfile",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "type", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "localhostProfile", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 162
    MessageDesc {
        name: "api.core.v1.NodeAffinity",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "requiredDuringSchedulingIgnoredDuringExecution", kind: Kind::Message(227), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "preferredDuringSchedulingIgnoredDuringExecution", kind: Kind::Message(228), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 163
    MessageDesc {
        name: "api.core.v1.PodAffinity",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "requiredDuringSchedulingIgnoredDuringExecution", kind: Kind::Message(229), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "preferredDuringSchedulingIgnoredDuringExecution", kind: Kind::Message(230), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 164
    MessageDesc {
        name: "api.core.v1.PodAntiAffinity",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "requiredDuringSchedulingIgnoredDuringExecution", kind: Kind::Message(229), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "preferredDuringSchedulingIgnoredDuringExecution", kind: Kind::Message(230), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 165
    MessageDesc {
        name: "api.core.v1.PodDnsConfigOption",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "value", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 166
    MessageDesc {
        name: "api.core.v1.ResourceClaim",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "request", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 167
    MessageDesc {
        name: "api.core.v1.ContainerState",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "waiting", kind: Kind::Message(231), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "running", kind: Kind::Message(232), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "terminated", kind: Kind::Message(233), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 168
    MessageDesc {
        name: "api.core.v1.VolumeMountStatus",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "mountPath", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "readOnly", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "recursiveReadOnly", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 169
    MessageDesc {
        name: "api.core.v1.ContainerUser",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "linux", kind: Kind::Message(234), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 170
    MessageDesc {
        name: "api.core.v1.ResourceStatus",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "resources", kind: Kind::Message(235), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 171
    MessageDesc {
        name: "api.core.v1.ContainerExtendedResourceRequest",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "containerName", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "resourceName", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "requestName", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 172
    MessageDesc {
        name: "apimachinery.pkg.apis.meta.v1.LabelSelectorRequirement",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "key", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "operator", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "values", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 173
    MessageDesc {
        name: "api.core.v1.ScopedResourceSelectorRequirement",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "scopeName", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "operator", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "values", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 174
    MessageDesc {
        name: "api.batch.v1.PodFailurePolicyRule",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "action", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "onExitCodes", kind: Kind::Message(236), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "onPodConditions", kind: Kind::Message(237), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 175
    MessageDesc {
        name: "api.batch.v1.SuccessPolicyRule",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "succeededIndexes", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 2, json: "succeededCount", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 176
    MessageDesc {
        name: "api.networking.v1.NetworkPolicyPort",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "protocol", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 2, json: "port", kind: Kind::Message(238), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "endPort", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 177
    MessageDesc {
        name: "api.networking.v1.NetworkPolicyPeer",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "podSelector", kind: Kind::Message(107), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "namespaceSelector", kind: Kind::Message(107), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "ipBlock", kind: Kind::Message(239), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 178
    MessageDesc {
        name: "api.authorization.v1.FieldSelectorAttributes",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "rawSelector", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "requirements", kind: Kind::Message(240), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 179
    MessageDesc {
        name: "api.authorization.v1.LabelSelectorAttributes",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "rawSelector", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "requirements", kind: Kind::Message(172), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 180
    MessageDesc {
        name: "api.authentication.v1.ExtraValue",
        special: Special::StringList,
        fields: &[
            FieldDesc { tag: 1, json: "items", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 181
    MessageDesc {
        name: "apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceValidation",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "openAPIV3Schema", kind: Kind::Message(241), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 182
    MessageDesc {
        name: "apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceSubresources",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "status", kind: Kind::Message(242), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "scale", kind: Kind::Message(243), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 183
    MessageDesc {
        name: "apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceColumnDefinition",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "type", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "format", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "description", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "priority", kind: Kind::Int32, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 6, json: "jsonPath", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 184
    MessageDesc {
        name: "apiextensions_apiserver.pkg.apis.apiextensions.v1.SelectableField",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "jsonPath", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 185
    MessageDesc {
        name: "apiextensions_apiserver.pkg.apis.apiextensions.v1.WebhookConversion",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 2, json: "clientConfig", kind: Kind::Message(244), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "conversionReviewVersions", kind: Kind::String, label: Label::Repeated, presence: Presence::Required },
        ],
    },
    // 186
    MessageDesc {
        name: "api.admissionregistration.v1.ServiceReference",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "namespace", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "path", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 4, json: "port", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 187
    MessageDesc {
        name: "api.admissionregistration.v1.Rule",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "apiGroups", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "apiVersions", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "resources", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "scope", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 188
    MessageDesc {
        name: "api.admissionregistration.v1.NamedRuleWithOperations",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "resourceNames", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "", kind: Kind::Message(133), label: Label::Single, presence: Presence::Inline },
        ],
    },
    // 189
    MessageDesc {
        name: "api.admissionregistration.v1.ExpressionWarning",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 2, json: "fieldRef", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "warning", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 190
    MessageDesc {
        name: "api.core.v1.HostPathVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "path", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "type", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 191
    MessageDesc {
        name: "api.core.v1.EmptyDirVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "medium", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "sizeLimit", kind: Kind::Message(94), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 192
    MessageDesc {
        name: "api.core.v1.GcePersistentDiskVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "pdName", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "fsType", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "partition", kind: Kind::Int32, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "readOnly", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 193
    MessageDesc {
        name: "api.core.v1.AwsElasticBlockStoreVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "volumeID", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "fsType", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "partition", kind: Kind::Int32, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "readOnly", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 194
    MessageDesc {
        name: "api.core.v1.GitRepoVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "repository", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "revision", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "directory", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 195
    MessageDesc {
        name: "api.core.v1.SecretVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "secretName", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "items", kind: Kind::Message(245), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "defaultMode", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 4, json: "optional", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 196
    MessageDesc {
        name: "api.core.v1.NfsVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "server", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "path", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "readOnly", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 197
    MessageDesc {
        name: "api.core.v1.IscsiVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "targetPortal", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "iqn", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "lun", kind: Kind::Int32, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 4, json: "iscsiInterface", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "fsType", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 6, json: "readOnly", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 7, json: "portals", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 8, json: "chapAuthDiscovery", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 10, json: "secretRef", kind: Kind::Message(37), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 11, json: "chapAuthSession", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 12, json: "initiatorName", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 198
    MessageDesc {
        name: "api.core.v1.GlusterfsVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "endpoints", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "path", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "readOnly", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 199
    MessageDesc {
        name: "api.core.v1.PersistentVolumeClaimVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "claimName", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "readOnly", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 200
    MessageDesc {
        name: "api.core.v1.RbdVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "monitors", kind: Kind::String, label: Label::Repeated, presence: Presence::Required },
            FieldDesc { tag: 2, json: "image", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "fsType", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "pool", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "user", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 6, json: "keyring", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 7, json: "secretRef", kind: Kind::Message(37), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 8, json: "readOnly", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 201
    MessageDesc {
        name: "api.core.v1.FlexVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "driver", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "fsType", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "secretRef", kind: Kind::Message(37), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "readOnly", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "options", kind: Kind::String, label: Label::Map, presence: Presence::Optional },
        ],
    },
    // 202
    MessageDesc {
        name: "api.core.v1.CinderVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "volumeID", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "fsType", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "readOnly", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "secretRef", kind: Kind::Message(37), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 203
    MessageDesc {
        name: "api.core.v1.CephFsVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "monitors", kind: Kind::String, label: Label::Repeated, presence: Presence::Required },
            FieldDesc { tag: 2, json: "path", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "user", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "secretFile", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "secretRef", kind: Kind::Message(37), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 6, json: "readOnly", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 204
    MessageDesc {
        name: "api.core.v1.FlockerVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "datasetName", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "datasetUUID", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 205
    MessageDesc {
        name: "api.core.v1.DownwardAPIVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "items", kind: Kind::Message(246), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "defaultMode", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 206
    MessageDesc {
        name: "api.core.v1.FcVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "targetWWNs", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "lun", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 3, json: "fsType", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "readOnly", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "wwids", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 207
    MessageDesc {
        name: "api.core.v1.AzureFileVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "secretName", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "shareName", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "readOnly", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 208
    MessageDesc {
        name: "api.core.v1.ConfigMapVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "", kind: Kind::Message(37), label: Label::Single, presence: Presence::Inline },
            FieldDesc { tag: 2, json: "items", kind: Kind::Message(245), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "defaultMode", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 4, json: "optional", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 209
    MessageDesc {
        name: "api.core.v1.VsphereVirtualDiskVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "volumePath", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "fsType", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "storagePolicyName", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "storagePolicyID", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 210
    MessageDesc {
        name: "api.core.v1.QuobyteVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "registry", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "volume", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "readOnly", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "user", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "group", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 6, json: "tenant", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 211
    MessageDesc {
        name: "api.core.v1.AzureDiskVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "diskName", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "diskURI", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "cachingMode", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 4, json: "fsType", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 5, json: "readOnly", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 6, json: "kind", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 212
    MessageDesc {
        name: "api.core.v1.PhotonPersistentDiskVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "pdID", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "fsType", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 213
    MessageDesc {
        name: "api.core.v1.ProjectedVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "sources", kind: Kind::Message(247), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "defaultMode", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 214
    MessageDesc {
        name: "api.core.v1.PortworxVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "volumeID", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "fsType", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "readOnly", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 215
    MessageDesc {
        name: "api.core.v1.ScaleIoVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "gateway", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "system", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "secretRef", kind: Kind::Message(37), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 4, json: "sslEnabled", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "protectionDomain", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 6, json: "storagePool", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 7, json: "storageMode", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 8, json: "volumeName", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 9, json: "fsType", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 10, json: "readOnly", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 216
    MessageDesc {
        name: "api.core.v1.StorageOsVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "volumeName", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "volumeNamespace", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "fsType", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "readOnly", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "secretRef", kind: Kind::Message(37), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 217
    MessageDesc {
        name: "api.core.v1.CSIVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "driver", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "readOnly", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 3, json: "fsType", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 4, json: "volumeAttributes", kind: Kind::String, label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 5, json: "nodePublishSecretRef", kind: Kind::Message(37), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 218
    MessageDesc {
        name: "api.core.v1.EphemeralVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "volumeClaimTemplate", kind: Kind::Message(248), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 219
    MessageDesc {
        name: "api.core.v1.ImageVolumeSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "reference", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "pullPolicy", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 220
    MessageDesc {
        name: "api.core.v1.ConfigMapEnvSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "", kind: Kind::Message(37), label: Label::Single, presence: Presence::Inline },
            FieldDesc { tag: 2, json: "optional", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 221
    MessageDesc {
        name: "api.core.v1.SecretEnvSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "", kind: Kind::Message(37), label: Label::Single, presence: Presence::Inline },
            FieldDesc { tag: 2, json: "optional", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 222
    MessageDesc {
        name: "api.core.v1.EnvVarSource",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "fieldRef", kind: Kind::Message(249), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "resourceFieldRef", kind: Kind::Message(250), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "configMapKeyRef", kind: Kind::Message(251), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "secretKeyRef", kind: Kind::Message(252), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 5, json: "fileKeyRef", kind: Kind::Message(253), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 223
    MessageDesc {
        name: "api.core.v1.ContainerRestartRuleOnExitCodes",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "operator", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "values", kind: Kind::Int32, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 224
    MessageDesc {
        name: "api.core.v1.ProbeHandler",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "exec", kind: Kind::Message(254), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "httpGet", kind: Kind::Message(255), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "tcpSocket", kind: Kind::Message(256), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "grpc", kind: Kind::Message(257), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 225
    MessageDesc {
        name: "api.core.v1.LifecycleHandler",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "exec", kind: Kind::Message(254), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "httpGet", kind: Kind::Message(255), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "tcpSocket", kind: Kind::Message(256), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "sleep", kind: Kind::Message(258), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 226
    MessageDesc {
        name: "api.core.v1.Capabilities",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "add", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "drop", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 227
    MessageDesc {
        name: "api.core.v1.NodeSelector",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "nodeSelectorTerms", kind: Kind::Message(259), label: Label::Repeated, presence: Presence::Required },
        ],
    },
    // 228
    MessageDesc {
        name: "api.core.v1.PreferredSchedulingTerm",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "weight", kind: Kind::Int32, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "preference", kind: Kind::Message(259), label: Label::Single, presence: Presence::Required },
        ],
    },
    // 229
    MessageDesc {
        name: "api.core.v1.PodAffinityTerm",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "labelSelector", kind: Kind::Message(107), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "namespaces", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "topologyKey", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 4, json: "namespaceSelector", kind: Kind::Message(107), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 5, json: "matchLabelKeys", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 6, json: "mismatchLabelKeys", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 230
    MessageDesc {
        name: "api.core.v1.WeightedPodAffinityTerm",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "weight", kind: Kind::Int32, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "podAffinityTerm", kind: Kind::Message(229), label: Label::Single, presence: Presence::Required },
        ],
    },
    // 231
    MessageDesc {
        name: "api.core.v1.ContainerStateWaiting",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "reason", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "message", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 232
    MessageDesc {
        name: "api.core.v1.ContainerStateRunning",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "startedAt", kind: Kind::Message(39), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 233
    MessageDesc {
        name: "api.core.v1.ContainerStateTerminated",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "exitCode", kind: Kind::Int32, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "signal", kind: Kind::Int32, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "reason", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "message", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "startedAt", kind: Kind::Message(39), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 6, json: "finishedAt", kind: Kind::Message(39), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 7, json: "containerID", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 234
    MessageDesc {
        name: "api.core.v1.LinuxContainerUser",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "uid", kind: Kind::Int64, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "gid", kind: Kind::Int64, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "supplementalGroups", kind: Kind::Int64, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 235
    MessageDesc {
        name: "api.core.v1.ResourceHealth",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "resourceID", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "health", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 236
    MessageDesc {
        name: "api.batch.v1.PodFailurePolicyOnExitCodesRequirement",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "containerName", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 2, json: "operator", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "values", kind: Kind::Int32, label: Label::Repeated, presence: Presence::Required },
        ],
    },
    // 237
    MessageDesc {
        name: "api.batch.v1.PodFailurePolicyOnPodConditionsPattern",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "type", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "status", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 238
    MessageDesc {
        name: "apimachinery.pkg.util.intstr.IntOrString",
        special: Special::IntOrString,
        fields: &[
            FieldDesc { tag: 1, json: "type", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 2, json: "int_val", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 3, json: "str_val", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 239
    MessageDesc {
        name: "api.networking.v1.IpBlock",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "cidr", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "except", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 240
    MessageDesc {
        name: "apimachinery.pkg.apis.meta.v1.FieldSelectorRequirement",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "key", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "operator", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "values", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 241
    MessageDesc {
        name: "apiextensions_apiserver.pkg.apis.apiextensions.v1.JsonSchemaProps",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "id", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "$schema", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "$ref", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 4, json: "description", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "type", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 6, json: "format", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 7, json: "title", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 8, json: "default", kind: Kind::Message(260), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 9, json: "maximum", kind: Kind::Double, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 10, json: "exclusiveMaximum", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 11, json: "minimum", kind: Kind::Double, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 12, json: "exclusiveMinimum", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 13, json: "maxLength", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 14, json: "minLength", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 15, json: "pattern", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 16, json: "maxItems", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 17, json: "minItems", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 18, json: "uniqueItems", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 19, json: "multipleOf", kind: Kind::Double, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 20, json: "enum", kind: Kind::Message(260), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 21, json: "maxProperties", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 22, json: "minProperties", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 23, json: "required", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 24, json: "items", kind: Kind::Message(261), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 25, json: "allOf", kind: Kind::Message(241), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 26, json: "oneOf", kind: Kind::Message(241), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 27, json: "anyOf", kind: Kind::Message(241), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 28, json: "not", kind: Kind::Message(241), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 29, json: "properties", kind: Kind::Message(241), label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 30, json: "additionalProperties", kind: Kind::Message(262), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 31, json: "patternProperties", kind: Kind::Message(241), label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 32, json: "dependencies", kind: Kind::Message(263), label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 33, json: "additionalItems", kind: Kind::Message(262), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 34, json: "definitions", kind: Kind::Message(241), label: Label::Map, presence: Presence::Optional },
            FieldDesc { tag: 35, json: "externalDocs", kind: Kind::Message(264), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 36, json: "example", kind: Kind::Message(260), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 37, json: "nullable", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 38, json: "x-kubernetes-preserve-unknown-fields", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 39, json: "x-kubernetes-embedded-resource", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 40, json: "x-kubernetes-int-or-string", kind: Kind::Bool, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 41, json: "x-kubernetes-list-map-keys", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 42, json: "x-kubernetes-list-type", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 43, json: "x-kubernetes-map-type", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 44, json: "x-kubernetes-validations", kind: Kind::Message(265), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 242
    MessageDesc {
        name: "apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceSubresourceStatus",
        special: Special::None,
        fields: &[],
    },
    // 243
    MessageDesc {
        name: "apiextensions_apiserver.pkg.apis.apiextensions.v1.CustomResourceSubresourceScale",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "specReplicasPath", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "statusReplicasPath", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "labelSelectorPath", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 244
    MessageDesc {
        name: "apiextensions_apiserver.pkg.apis.apiextensions.v1.WebhookClientConfig",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "service", kind: Kind::Message(266), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "caBundle", kind: Kind::Bytes, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "url", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 245
    MessageDesc {
        name: "api.core.v1.KeyToPath",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "key", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "path", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "mode", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 246
    MessageDesc {
        name: "api.core.v1.DownwardAPIVolumeFile",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "path", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "fieldRef", kind: Kind::Message(249), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "resourceFieldRef", kind: Kind::Message(250), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "mode", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 247
    MessageDesc {
        name: "api.core.v1.VolumeProjection",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "secret", kind: Kind::Message(267), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "downwardAPI", kind: Kind::Message(268), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 3, json: "configMap", kind: Kind::Message(269), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "serviceAccountToken", kind: Kind::Message(270), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 5, json: "clusterTrustBundle", kind: Kind::Message(271), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 6, json: "podCertificate", kind: Kind::Message(272), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 248
    MessageDesc {
        name: "api.core.v1.PersistentVolumeClaimTemplate",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "metadata", kind: Kind::Message(33), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "spec", kind: Kind::Message(45), label: Label::Single, presence: Presence::Required },
        ],
    },
    // 249
    MessageDesc {
        name: "api.core.v1.ObjectFieldSelector",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "apiVersion", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "fieldPath", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 250
    MessageDesc {
        name: "api.core.v1.ResourceFieldSelector",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "containerName", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "resource", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "divisor", kind: Kind::Message(94), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 251
    MessageDesc {
        name: "api.core.v1.ConfigMapKeySelector",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "", kind: Kind::Message(37), label: Label::Single, presence: Presence::Inline },
            FieldDesc { tag: 2, json: "key", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "optional", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 252
    MessageDesc {
        name: "api.core.v1.SecretKeySelector",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "", kind: Kind::Message(37), label: Label::Single, presence: Presence::Inline },
            FieldDesc { tag: 2, json: "key", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "optional", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 253
    MessageDesc {
        name: "api.core.v1.FileKeySelector",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "volumeName", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "path", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "key", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 4, json: "optional", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 254
    MessageDesc {
        name: "api.core.v1.ExecAction",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "command", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 255
    MessageDesc {
        name: "api.core.v1.HttpGetAction",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "path", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "port", kind: Kind::Message(238), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "host", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "scheme", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "httpHeaders", kind: Kind::Message(273), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 256
    MessageDesc {
        name: "api.core.v1.TcpSocketAction",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "port", kind: Kind::Message(238), label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "host", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 257
    MessageDesc {
        name: "api.core.v1.GrpcAction",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "port", kind: Kind::Int32, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "service", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 258
    MessageDesc {
        name: "api.core.v1.SleepAction",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "seconds", kind: Kind::Int64, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 259
    MessageDesc {
        name: "api.core.v1.NodeSelectorTerm",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "matchExpressions", kind: Kind::Message(274), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "matchFields", kind: Kind::Message(274), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 260
    MessageDesc {
        name: "apiextensions_apiserver.pkg.apis.apiextensions.v1.Json",
        special: Special::RawJson,
        fields: &[
            FieldDesc { tag: 1, json: "raw", kind: Kind::Bytes, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 261
    MessageDesc {
        name: "apiextensions_apiserver.pkg.apis.apiextensions.v1.JsonSchemaPropsOrArray",
        special: Special::SchemaOrArray,
        fields: &[
            FieldDesc { tag: 1, json: "schema", kind: Kind::Message(241), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "jsonSchemas", kind: Kind::Message(241), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 262
    MessageDesc {
        name: "apiextensions_apiserver.pkg.apis.apiextensions.v1.JsonSchemaPropsOrBool",
        special: Special::SchemaOrBool,
        fields: &[
            FieldDesc { tag: 1, json: "allows", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 2, json: "schema", kind: Kind::Message(241), label: Label::Single, presence: Presence::Optional },
        ],
    },
    // 263
    MessageDesc {
        name: "apiextensions_apiserver.pkg.apis.apiextensions.v1.JsonSchemaPropsOrStringArray",
        special: Special::SchemaOrStringArray,
        fields: &[
            FieldDesc { tag: 1, json: "schema", kind: Kind::Message(241), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 2, json: "property", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 264
    MessageDesc {
        name: "apiextensions_apiserver.pkg.apis.apiextensions.v1.ExternalDocumentation",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "description", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "url", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
        ],
    },
    // 265
    MessageDesc {
        name: "apiextensions_apiserver.pkg.apis.apiextensions.v1.ValidationRule",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "rule", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "message", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 3, json: "messageExpression", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 4, json: "reason", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 5, json: "fieldPath", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 6, json: "optionalOldSelf", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 266
    MessageDesc {
        name: "apiextensions_apiserver.pkg.apis.apiextensions.v1.ServiceReference",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "namespace", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "path", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 4, json: "port", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 267
    MessageDesc {
        name: "api.core.v1.SecretProjection",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "", kind: Kind::Message(37), label: Label::Single, presence: Presence::Inline },
            FieldDesc { tag: 2, json: "items", kind: Kind::Message(245), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "optional", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 268
    MessageDesc {
        name: "api.core.v1.DownwardAPIProjection",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "items", kind: Kind::Message(246), label: Label::Repeated, presence: Presence::Optional },
        ],
    },
    // 269
    MessageDesc {
        name: "api.core.v1.ConfigMapProjection",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "", kind: Kind::Message(37), label: Label::Single, presence: Presence::Inline },
            FieldDesc { tag: 2, json: "items", kind: Kind::Message(245), label: Label::Repeated, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "optional", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 270
    MessageDesc {
        name: "api.core.v1.ServiceAccountTokenProjection",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "audience", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 2, json: "expirationSeconds", kind: Kind::Int64, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 3, json: "path", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 271
    MessageDesc {
        name: "api.core.v1.ClusterTrustBundleProjection",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 2, json: "signerName", kind: Kind::String, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 3, json: "labelSelector", kind: Kind::Message(107), label: Label::Single, presence: Presence::Optional },
            FieldDesc { tag: 4, json: "path", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 5, json: "optional", kind: Kind::Bool, label: Label::Single, presence: Presence::Pointer },
        ],
    },
    // 272
    MessageDesc {
        name: "api.core.v1.PodCertificateProjection",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "signerName", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "keyType", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "maxExpirationSeconds", kind: Kind::Int32, label: Label::Single, presence: Presence::Pointer },
            FieldDesc { tag: 4, json: "credentialBundlePath", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 5, json: "keyPath", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 6, json: "certificateChainPath", kind: Kind::String, label: Label::Single, presence: Presence::OmitEmpty },
            FieldDesc { tag: 7, json: "userAnnotations", kind: Kind::String, label: Label::Map, presence: Presence::Optional },
        ],
    },
    // 273
    MessageDesc {
        name: "api.core.v1.HttpHeader",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "name", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "value", kind: Kind::String, label: Label::Single, presence: Presence::Required },
        ],
    },
    // 274
    MessageDesc {
        name: "api.core.v1.NodeSelectorRequirement",
        special: Special::None,
        fields: &[
            FieldDesc { tag: 1, json: "key", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 2, json: "operator", kind: Kind::String, label: Label::Single, presence: Presence::Required },
            FieldDesc { tag: 3, json: "values", kind: Kind::String, label: Label::Repeated, presence: Presence::Optional },
        ],
    },
];

/// Supported kinds: apiVersion (`*` = any), kind, root message index.
pub(crate) static ROOTS: &[Root] = &[
    Root { api_version: "v1", kind: "Namespace", message: 0 },
    Root { api_version: "v1", kind: "ConfigMap", message: 1 },
    Root { api_version: "v1", kind: "Secret", message: 2 },
    Root { api_version: "v1", kind: "ServiceAccount", message: 3 },
    Root { api_version: "v1", kind: "Event", message: 4 },
    Root { api_version: "v1", kind: "Pod", message: 5 },
    Root { api_version: "v1", kind: "PodTemplate", message: 6 },
    Root { api_version: "v1", kind: "PersistentVolumeClaim", message: 7 },
    Root { api_version: "v1", kind: "ResourceQuota", message: 8 },
    Root { api_version: "events.k8s.io/v1", kind: "Event", message: 9 },
    Root { api_version: "coordination.k8s.io/v1", kind: "Lease", message: 10 },
    Root { api_version: "rbac.authorization.k8s.io/v1", kind: "Role", message: 11 },
    Root { api_version: "rbac.authorization.k8s.io/v1", kind: "RoleBinding", message: 12 },
    Root { api_version: "rbac.authorization.k8s.io/v1", kind: "ClusterRole", message: 13 },
    Root { api_version: "rbac.authorization.k8s.io/v1", kind: "ClusterRoleBinding", message: 14 },
    Root { api_version: "batch/v1", kind: "Job", message: 15 },
    Root { api_version: "networking.k8s.io/v1", kind: "NetworkPolicy", message: 16 },
    Root { api_version: "batch/v1", kind: "CronJob", message: 17 },
    Root { api_version: "authorization.k8s.io/v1", kind: "SelfSubjectAccessReview", message: 18 },
    Root { api_version: "authorization.k8s.io/v1", kind: "SelfSubjectRulesReview", message: 19 },
    Root { api_version: "authorization.k8s.io/v1", kind: "SubjectAccessReview", message: 20 },
    Root { api_version: "authorization.k8s.io/v1", kind: "LocalSubjectAccessReview", message: 21 },
    Root { api_version: "authentication.k8s.io/v1", kind: "SelfSubjectReview", message: 22 },
    Root { api_version: "authentication.k8s.io/v1", kind: "TokenReview", message: 23 },
    Root { api_version: "authentication.k8s.io/v1", kind: "TokenRequest", message: 24 },
    Root { api_version: "apiextensions.k8s.io/v1", kind: "CustomResourceDefinition", message: 25 },
    Root { api_version: "autoscaling/v1", kind: "Scale", message: 26 },
    Root { api_version: "admissionregistration.k8s.io/v1", kind: "ValidatingWebhookConfiguration", message: 27 },
    Root { api_version: "admissionregistration.k8s.io/v1", kind: "MutatingWebhookConfiguration", message: 28 },
    Root { api_version: "admissionregistration.k8s.io/v1", kind: "ValidatingAdmissionPolicy", message: 29 },
    Root { api_version: "admissionregistration.k8s.io/v1", kind: "ValidatingAdmissionPolicyBinding", message: 30 },
    Root { api_version: "*", kind: "DeleteOptions", message: 31 },
    Root { api_version: "v1", kind: "Status", message: 32 },
];
