//! Field selector labels per type: which labels a type accepts and the error a request
//! naming another one gets (upstream's field label conversion functions), the label each
//! stands for in the stored form (events.k8s.io `regarding.*` read core `involvedObject.*`),
//! and the value an object has for each label (upstream's `ToSelectableFields`/`GetAttrs`).
//! Each type's strategy picks its conversion function and value reader from here.

use kplane_types::fields;
use serde_json::Value;

use super::catalog::ResourceType;

pub mod generic;
pub use generic::{default_convert, generic_value};

/// events.k8s.io/v1 labels and the core/v1 label they read (`pkg/apis/events/v1`).
const EVENTS_V1_LABELS: &[(&str, &str)] = &[
    ("reason", "reason"),
    ("regarding.kind", "involvedObject.kind"),
    ("regarding.namespace", "involvedObject.namespace"),
    ("regarding.name", "involvedObject.name"),
    ("regarding.uid", "involvedObject.uid"),
    ("regarding.apiVersion", "involvedObject.apiVersion"),
    (
        "regarding.resourceVersion",
        "involvedObject.resourceVersion",
    ),
    ("regarding.fieldPath", "involvedObject.fieldPath"),
    ("reportingController", "reportingComponent"),
    ("type", "type"),
    ("metadata.namespace", "metadata.namespace"),
    ("metadata.name", "metadata.name"),
];

/// The stored-form label `label` stands for on `rt`, or the message of the 400 a request
/// naming it gets (the text of the conversion function upstream registers for the kind;
/// each type's strategy says which applies).
pub fn convert(rt: &ResourceType, label: &str) -> Result<String, String> {
    rt.strategy.field_label(rt, label)
}

/// `metadata.name`, `metadata.namespace` and the type's selectable fields (core Events,
/// Secrets).
pub fn meta_or_listed(rt: &ResourceType, label: &str) -> Result<String, String> {
    if label == "metadata.name" || label == "metadata.namespace" || listed(rt, label) {
        Ok(label.to_string())
    } else {
        Err(format!("field label not supported: {label}"))
    }
}

/// batch/v1 Job's conversion function.
pub fn job_convert(rt: &ResourceType, label: &str) -> Result<String, String> {
    if label == "metadata.name" || label == "metadata.namespace" || listed(rt, label) {
        Ok(label.to_string())
    } else {
        Err(format!("field label {label:?} not supported for Job"))
    }
}

/// core/v1 Pod's conversion function: its selectable fields, and `spec.host` (old v1
/// clients) for `spec.nodeName`.
pub fn pod_convert(rt: &ResourceType, label: &str) -> Result<String, String> {
    match label {
        "spec.host" => Ok("spec.nodeName".into()),
        "metadata.name" | "metadata.namespace" => Ok(label.to_string()),
        _ if listed(rt, label) => Ok(label.to_string()),
        _ => Err(format!("field label not supported: {label}")),
    }
}

/// events.k8s.io/v1's labels, as the core labels they read.
pub fn events_v1_convert(label: &str) -> Result<String, String> {
    EVENTS_V1_LABELS
        .iter()
        .find(|(l, _)| *l == label)
        .map(|(_, core)| (*core).to_string())
        .ok_or_else(|| format!("field label not supported: {label}"))
}

fn listed(rt: &ResourceType, label: &str) -> bool {
    rt.selectable_fields.iter().any(|f| f == label)
}

/// Events: `source` is source.component, or the reporting controller without one.
pub fn event_value(obj: &Value, label: &str) -> Option<String> {
    match label {
        "source" => fields::object_field(obj, "source.component")
            .filter(|s| !s.is_empty())
            .or_else(|| fields::object_field(obj, "reportingComponent")),
        _ => generic_value(obj, label),
    }
}

/// Jobs: `status.successful` is the succeeded count (0 when unset).
pub fn job_value(obj: &Value, label: &str) -> Option<String> {
    match label {
        "status.successful" => {
            Some(fields::object_field(obj, "status.succeeded").unwrap_or_else(|| "0".into()))
        }
        _ => generic_value(obj, label),
    }
}

/// Pods (`pod.ToSelectableFields`): unset strings are "", `spec.hostNetwork` is "true" or
/// "false", `status.podIP` is the first of `status.podIPs`, and `status.podIPs`, which the
/// conversion accepts but the field set lacks, is always "".
pub fn pod_value(obj: &Value, label: &str) -> Option<String> {
    let text = |path: &str| fields::object_field(obj, path).unwrap_or_default();
    Some(match label {
        "spec.hostNetwork" => {
            (obj.pointer("/spec/hostNetwork") == Some(&Value::Bool(true))).to_string()
        }
        "status.podIP" => obj
            .pointer("/status/podIPs/0/ip")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        "status.podIPs" => String::new(),
        "spec.nodeName"
        | "spec.restartPolicy"
        | "spec.schedulerName"
        | "spec.serviceAccountName"
        | "status.phase"
        | "status.nominatedNodeName" => text(label),
        _ => return generic_value(obj, label),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rt(kind: &str, group: &str) -> ResourceType {
        super::super::builtin_types::builtin()
            .into_iter()
            .find(|r| r.kind == kind && r.group == group)
            .unwrap()
    }

    #[test]
    fn each_kind_accepts_its_labels_and_refuses_others_with_upstreams_message() {
        let cases: &[(&str, &str, &str, Result<&str, &str>)] = &[
            ("Event", "", "source", Ok("source")),
            ("Event", "", "involvedObject.uid", Ok("involvedObject.uid")),
            ("Event", "", "reportingComponent", Ok("reportingComponent")),
            ("Event", "", "metadata.namespace", Ok("metadata.namespace")),
            ("Event", "", "regarding.name", Err("field label not supported: regarding.name")),
            ("Event", "events.k8s.io", "regarding.name", Ok("involvedObject.name")),
            ("Event", "events.k8s.io", "reportingController", Ok("reportingComponent")),
            ("Event", "events.k8s.io", "type", Ok("type")),
            ("Event", "events.k8s.io", "source", Err("field label not supported: source")),
            ("Event", "events.k8s.io", "involvedObject.name", Err("field label not supported: involvedObject.name")),
            ("Namespace", "", "status.phase", Ok("status.phase")),
            ("Namespace", "", "metadata.namespace", Err("field label not supported: metadata.namespace")),
            ("Secret", "", "type", Ok("type")),
            ("Secret", "", "data", Err("field label not supported: data")),
            ("Job", "batch", "status.successful", Ok("status.successful")),
            ("Job", "batch", "spec.parallelism", Err("field label \"spec.parallelism\" not supported for Job")),
            ("ConfigMap", "", "metadata.name", Ok("metadata.name")),
            ("ConfigMap", "", "data.x", Err("\"data.x\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"")),
            ("ClusterRole", "rbac.authorization.k8s.io", "metadata.namespace", Ok("metadata.namespace")),
            ("Lease", "coordination.k8s.io", "spec.holderIdentity", Err("\"spec.holderIdentity\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"")),
            ("Pod", "", "status.phase", Ok("status.phase")),
            ("Pod", "", "spec.nodeName", Ok("spec.nodeName")),
            ("Pod", "", "spec.host", Ok("spec.nodeName")),
            ("Pod", "", "status.podIPs", Ok("status.podIPs")),
            ("Pod", "", "metadata.namespace", Ok("metadata.namespace")),
            ("Pod", "", "spec.containers", Err("field label not supported: spec.containers")),
            ("NetworkPolicy", "networking.k8s.io", "metadata.namespace", Ok("metadata.namespace")),
            ("NetworkPolicy", "networking.k8s.io", "spec.podSelector", Err("\"spec.podSelector\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\"")),
        ];
        for (kind, group, label, want) in cases {
            let got = convert(&rt(kind, group), label);
            assert_eq!(
                got.as_deref().map_err(String::as_str),
                *want,
                "{group}/{kind} {label}"
            );
        }
    }

    #[test]
    fn pods_answer_their_selectable_fields_as_upstream() {
        let v = |o: &Value, l: &str| (rt("Pod", "").strategy.field_values())(o, l);
        let bare = json!({"metadata": {"name": "p"}, "spec": {}, "status": {}});
        for label in [
            "spec.nodeName",
            "status.phase",
            "status.podIP",
            "status.podIPs",
        ] {
            assert_eq!(v(&bare, label).as_deref(), Some(""), "{label}");
        }
        assert_eq!(v(&bare, "spec.hostNetwork").as_deref(), Some("false"));
        let pod = json!({"metadata": {"name": "p"},
            "spec": {"nodeName": "n1", "hostNetwork": true, "restartPolicy": "Never",
                "schedulerName": "default-scheduler", "serviceAccountName": "sa"},
            "status": {"phase": "Running", "podIP": "10.0.0.1",
                "podIPs": [{"ip": "10.0.0.2"}, {"ip": "fd00::1"}], "nominatedNodeName": "n2"}});
        for (label, want) in [
            ("spec.nodeName", "n1"),
            ("spec.hostNetwork", "true"),
            ("spec.restartPolicy", "Never"),
            ("spec.schedulerName", "default-scheduler"),
            ("spec.serviceAccountName", "sa"),
            ("status.phase", "Running"),
            ("status.podIP", "10.0.0.2"),
            ("status.podIPs", ""),
            ("status.nominatedNodeName", "n2"),
            ("metadata.name", "p"),
        ] {
            assert_eq!(v(&pod, label).as_deref(), Some(want), "{label}");
        }
    }

    #[test]
    fn event_source_falls_back_to_the_reporting_controller() {
        let both = json!({"source": {"component": "kubelet"}, "reportingComponent": "ctl"});
        let only_reporting = json!({"source": {}, "reportingComponent": "ctl"});
        let neither = json!({"metadata": {"name": "e"}});
        let s = |o: &Value| (rt("Event", "").strategy.field_values())(o, "source");
        assert_eq!(s(&both).as_deref(), Some("kubelet"));
        assert_eq!(s(&only_reporting).as_deref(), Some("ctl"));
        assert_eq!(s(&neither), None);
        assert_eq!(
            (rt("Namespace", "").strategy.field_values())(&neither, "metadata.namespace")
                .as_deref(),
            Some("")
        );
        assert_eq!(
            (rt("Job", "batch").strategy.field_values())(&neither, "status.successful").as_deref(),
            Some("0")
        );
    }
}
