//! The stored form of built-in objects: kube-apiserver decodes every object into its Go
//! type and encodes it again with `encoding/json`, so a field tagged `omitempty` disappears
//! when it holds its zero value (`data: {}`, `count: 0`, `apiGroup: ""`), a field without
//! the tag is always written (`rules: null`, `reportingComponent: ""`), and a struct is
//! always written even when tagged `omitempty` (`source: {}`, `spec: {}`, and a zero
//! `metav1.Time` as `null`). This module gives each built-in kind that form, field by field
//! as its v1 type declares it, so that what clients read back (and what server-side apply
//! compares) is what Kubernetes would return. CRDs have their own (`crd_form`); custom
//! resources are stored as sent.

use super::json_map::is_zero;
use serde_json::{Map, Value};

use super::catalog::{ResourceType, Strategy};

/// Brings `obj` (in its stored form) to the form its v1 type encodes.
pub fn canonicalize(obj: &mut Value, rt: &ResourceType) {
    let Some(o) = obj.as_object_mut() else { return };
    match rt.strategy {
        Strategy::ConfigMap => drop_zero(o, &["data", "binaryData"]),
        Strategy::Secret => drop_zero(o, &["data", "type"]),
        Strategy::ServiceAccount => drop_zero(o, &["secrets", "imagePullSecrets"]),
        Strategy::CoreEvent | Strategy::EventsV1Event => core_event(o),
        Strategy::Lease => {
            always(o, "spec", Value::Object(Map::new()));
        }
        Strategy::Rbac => rbac(o, &rt.kind),
        Strategy::Job => job(o),
        _ => {}
    }
}

/// Drops the `omitempty` fields that hold their zero value.
fn drop_zero(o: &mut Map<String, Value>, fields: &[&str]) {
    for f in fields {
        if o.get(*f).is_some_and(is_zero) {
            o.remove(*f);
        }
    }
}

/// Drops pointer fields that are `null`.
fn drop_null(o: &mut Map<String, Value>, fields: &[&str]) {
    for f in fields {
        if o.get(*f).is_some_and(Value::is_null) {
            o.remove(*f);
        }
    }
}

/// A field the type always writes: `zero` when absent (or `null` for a non-nullable one).
fn always(o: &mut Map<String, Value>, field: &str, zero: Value) {
    match o.get(field) {
        None => {
            o.insert(field.to_string(), zero);
        }
        Some(Value::Null) if !zero.is_null() => {
            o.insert(field.to_string(), zero);
        }
        _ => {}
    }
}

/// core/v1 Event (the stored form of both Event APIs).
fn core_event(o: &mut Map<String, Value>) {
    drop_zero(o, &["reason", "message", "count", "type", "action"]);
    drop_null(o, &["series", "related"]);
    always(o, "involvedObject", Value::Object(Map::new()));
    always(o, "source", Value::Object(Map::new()));
    for t in ["firstTimestamp", "lastTimestamp", "eventTime"] {
        always(o, t, Value::Null);
    }
    for s in ["reportingComponent", "reportingInstance"] {
        always(o, s, Value::String(String::new()));
    }
    if let Some(Value::Object(src)) = o.get_mut("source") {
        drop_zero(src, &["component", "host"]);
    }
}

/// rbac.authorization.k8s.io/v1: `rules` is always written; a subject's `apiGroup` and
/// `namespace` are omitted when empty (a ServiceAccount's `apiGroup` defaults to "").
fn rbac(o: &mut Map<String, Value>, kind: &str) {
    match kind {
        "Role" | "ClusterRole" => {
            always(o, "rules", Value::Null);
            drop_null(o, &["aggregationRule"]);
            if let Some(Value::Array(rules)) = o.get_mut("rules") {
                for r in rules.iter_mut().filter_map(Value::as_object_mut) {
                    always(r, "verbs", Value::Null);
                    drop_zero(
                        r,
                        &["apiGroups", "resources", "resourceNames", "nonResourceURLs"],
                    );
                }
            }
        }
        _ => {
            drop_zero(o, &["subjects"]);
            if let Some(Value::Array(subjects)) = o.get_mut("subjects") {
                for s in subjects.iter_mut().filter_map(Value::as_object_mut) {
                    drop_zero(s, &["apiGroup", "namespace"]);
                }
            }
        }
    }
}

/// batch/v1 Job: `status` and the pod template's `metadata` are structs, always written
/// (a template without a creation time shows `creationTimestamp: null`); the status
/// counters are `omitempty`.
fn job(o: &mut Map<String, Value>) {
    always(o, "spec", Value::Object(Map::new()));
    always(o, "status", Value::Object(Map::new()));
    if let Some(Value::Object(status)) = o.get_mut("status") {
        drop_zero(
            status,
            &[
                "conditions",
                "active",
                "succeeded",
                "failed",
                "completedIndexes",
            ],
        );
        drop_null(
            status,
            &[
                "startTime",
                "completionTime",
                "terminating",
                "failedIndexes",
                "uncountedTerminatedPods",
                "ready",
            ],
        );
    }
    let Some(Value::Object(spec)) = o.get_mut("spec") else {
        return;
    };
    always(spec, "template", Value::Object(Map::new()));
    if let Some(Value::Object(template)) = spec.get_mut("template") {
        always(template, "metadata", Value::Object(Map::new()));
        if let Some(Value::Object(meta)) = template.get_mut("metadata") {
            always(meta, "creationTimestamp", Value::Null);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn rt(strategy: Strategy, kind: &str) -> ResourceType {
        let mut rt = super::super::catalog::builtin()
            .into_iter()
            .find(|r| r.strategy == strategy)
            .unwrap();
        rt.kind = kind.to_string();
        rt
    }

    fn canonical(strategy: Strategy, kind: &str, mut obj: Value) -> Value {
        canonicalize(&mut obj, &rt(strategy, kind));
        obj
    }

    #[test]
    fn empty_maps_and_lists_of_omitempty_fields_go() {
        assert_eq!(
            canonical(
                Strategy::ConfigMap,
                "ConfigMap",
                json!({"data": {}, "binaryData": {}, "immutable": false})
            ),
            json!({"immutable": false})
        );
        assert_eq!(
            canonical(
                Strategy::ServiceAccount,
                "ServiceAccount",
                json!({"secrets": [], "imagePullSecrets": [], "automountServiceAccountToken": false})
            ),
            json!({"automountServiceAccountToken": false})
        );
    }

    #[test]
    fn core_events_always_carry_their_struct_and_non_omitempty_fields() {
        let e = canonical(
            Strategy::CoreEvent,
            "Event",
            json!({"involvedObject": {"kind": "Pod"}, "reason": "R", "count": 0, "type": "", "series": null}),
        );
        assert_eq!(
            e,
            json!({"involvedObject": {"kind": "Pod"}, "reason": "R", "source": {},
                "firstTimestamp": null, "lastTimestamp": null, "eventTime": null,
                "reportingComponent": "", "reportingInstance": ""})
        );
    }

    #[test]
    fn rbac_rules_are_always_written_and_subject_api_groups_omitted_when_empty() {
        assert_eq!(
            canonical(Strategy::Rbac, "Role", json!({"metadata": {}})),
            json!({"metadata": {}, "rules": null})
        );
        assert_eq!(
            canonical(
                Strategy::Rbac,
                "RoleBinding",
                json!({"subjects": [{"kind": "ServiceAccount", "apiGroup": "", "name": "a", "namespace": "n"}]})
            ),
            json!({"subjects": [{"kind": "ServiceAccount", "name": "a", "namespace": "n"}]})
        );
    }

    #[test]
    fn jobs_show_an_empty_status_and_a_null_template_creation_time() {
        assert_eq!(
            canonical(
                Strategy::Job,
                "Job",
                json!({"spec": {"template": {"spec": {}}}, "status": {"active": 0, "ready": null}})
            ),
            json!({"spec": {"template": {"metadata": {"creationTimestamp": null}, "spec": {}}}, "status": {}})
        );
    }
}
