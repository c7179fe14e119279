//! The stored form of built-in objects: kube-apiserver decodes every object into its Go
//! type and encodes it again with `encoding/json`, so a field tagged `omitempty` disappears
//! when it holds its zero value (`data: {}`, `count: 0`, `apiGroup: ""`), a field without
//! the tag is always written (`rules: null`, `reportingComponent: ""`), and a struct is
//! always written even when tagged `omitempty` (`source: {}`, `spec: {}`, and a zero
//! `metav1.Time` as `null`). This module gives each built-in kind that form, field by field
//! as its v1 type declares it, so that what clients read back (and what server-side apply
//! compares) is what Kubernetes would return; each kind's strategy calls its function
//! (`TypeStrategy::canonicalize`). CRDs have their own (`crd_form`); custom resources are
//! stored as sent.

use super::json_map::{each_struct, is_zero};
use serde_json::{Map, Value};

/// Calls `f` on `obj`'s map (nothing for a non-object).
fn on_object(obj: &mut Value, f: impl FnOnce(&mut Map<String, Value>)) {
    if let Some(o) = obj.as_object_mut() {
        f(o);
    }
}

/// core/v1 ConfigMap.
pub fn config_map(obj: &mut Value) {
    on_object(obj, |o| drop_zero(o, &["data", "binaryData"]));
}

/// core/v1 Secret.
pub fn secret(obj: &mut Value) {
    on_object(obj, |o| drop_zero(o, &["data", "type"]));
}

/// core/v1 ServiceAccount.
pub fn service_account(obj: &mut Value) {
    on_object(obj, |o| drop_zero(o, &["secrets", "imagePullSecrets"]));
}

/// coordination.k8s.io/v1 Lease.
pub fn lease(obj: &mut Value) {
    on_object(obj, |o| always(o, "spec", Value::Object(Map::new())));
}

/// core/v1 Event (the stored form of both Event APIs).
pub fn core_event(obj: &mut Value) {
    on_object(obj, core_event_fields);
}

/// rbac.authorization.k8s.io/v1 objects of `kind`.
pub fn rbac(obj: &mut Value, kind: &str) {
    on_object(obj, |o| rbac_fields(o, kind));
}

/// batch/v1 Job.
pub fn job(obj: &mut Value) {
    on_object(obj, job_fields);
}

/// networking.k8s.io/v1 NetworkPolicy.
pub fn network_policy(obj: &mut Value) {
    on_object(obj, network_policy_fields);
}

/// core/v1 PodTemplate.
pub fn pod_template(obj: &mut Value) {
    on_object(obj, pod_template_fields);
}

/// core/v1 PersistentVolumeClaim.
pub fn persistent_volume_claim(obj: &mut Value) {
    on_object(obj, pvc_fields);
}

/// core/v1 Pod.
pub fn pod(obj: &mut Value) {
    on_object(obj, pod_fields);
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

fn core_event_fields(o: &mut Map<String, Value>) {
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
fn rbac_fields(o: &mut Map<String, Value>, kind: &str) {
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
fn job_fields(o: &mut Map<String, Value>) {
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
        template_meta_fields(template);
    }
}

/// A PodTemplateSpec's metadata is a struct, always written, with a `null` creation time.
fn template_meta_fields(template: &mut Map<String, Value>) {
    always(template, "metadata", Value::Object(Map::new()));
    if let Some(Value::Object(meta)) = template.get_mut("metadata") {
        always(meta, "creationTimestamp", Value::Null);
    }
}

/// core/v1 PodTemplate: the template, its metadata (with a `null` creation time) and its
/// spec are structs, always written; the spec is written as a pod's.
fn pod_template_fields(o: &mut Map<String, Value>) {
    always(o, "template", Value::Object(Map::new()));
    let Some(Value::Object(template)) = o.get_mut("template") else {
        return;
    };
    template_meta_fields(template);
    always(template, "spec", Value::Object(Map::new()));
    if let Some(Value::Object(spec)) = template.get_mut("spec") {
        pod_spec_fields(spec);
    }
}

/// core/v1 PersistentVolumeClaim: `spec`, its `resources` and `status` are structs, always
/// written; `omitempty` lists, maps and strings are dropped when empty, pointers when
/// null; a data source's `apiGroup` and a condition's times are always written.
fn pvc_fields(o: &mut Map<String, Value>) {
    always(o, "spec", Value::Object(Map::new()));
    always(o, "status", Value::Object(Map::new()));
    if let Some(Value::Object(spec)) = o.get_mut("spec") {
        drop_zero(spec, &["accessModes", "volumeName"]);
        drop_null(
            spec,
            &[
                "selector",
                "storageClassName",
                "volumeMode",
                "dataSource",
                "dataSourceRef",
                "volumeAttributesClassName",
            ],
        );
        always(spec, "resources", Value::Object(Map::new()));
        if let Some(Value::Object(r)) = spec.get_mut("resources") {
            drop_zero(r, &["limits", "requests"]);
        }
        for source in ["dataSource", "dataSourceRef"] {
            if let Some(Value::Object(d)) = spec.get_mut(source) {
                always(d, "apiGroup", Value::Null);
            }
        }
    }
    if let Some(Value::Object(status)) = o.get_mut("status") {
        drop_zero(
            status,
            &[
                "phase",
                "accessModes",
                "capacity",
                "conditions",
                "allocatedResources",
                "allocatedResourceStatuses",
            ],
        );
        drop_null(
            status,
            &["currentVolumeAttributesClassName", "modifyVolumeStatus"],
        );
        for c in each_struct(status, "conditions") {
            always(c, "lastProbeTime", Value::Null);
            always(c, "lastTransitionTime", Value::Null);
            drop_zero(c, &["reason", "message"]);
        }
    }
}

/// core/v1 Pod: `spec` and `status` are structs, always written, and so is the spec's
/// `containers` (not `omitempty`); the spec's and the containers' `omitempty` scalars and
/// lists are dropped when zero, their pointers when null; a container's `name` and
/// `resources` are always written. In the status, a condition's times and a container
/// status's name, states, readiness, restart count and images are always written (a zero
/// time as `null`).
fn pod_fields(o: &mut Map<String, Value>) {
    always(o, "spec", Value::Object(Map::new()));
    always(o, "status", Value::Object(Map::new()));
    if let Some(Value::Object(spec)) = o.get_mut("spec") {
        pod_spec_fields(spec);
    }
    if let Some(Value::Object(status)) = o.get_mut("status") {
        pod_status_fields(status);
    }
}

const POD_SPEC_OMITEMPTY: &[&str] = &[
    "volumes",
    "initContainers",
    "ephemeralContainers",
    "restartPolicy",
    "dnsPolicy",
    "nodeSelector",
    "serviceAccountName",
    "serviceAccount",
    "nodeName",
    "hostNetwork",
    "hostPID",
    "hostIPC",
    "imagePullSecrets",
    "hostname",
    "subdomain",
    "schedulerName",
    "tolerations",
    "hostAliases",
    "priorityClassName",
    "readinessGates",
    "overhead",
    "topologySpreadConstraints",
    "schedulingGates",
    "resourceClaims",
];

const POD_SPEC_POINTERS: &[&str] = &[
    "terminationGracePeriodSeconds",
    "activeDeadlineSeconds",
    "automountServiceAccountToken",
    "shareProcessNamespace",
    "securityContext",
    "affinity",
    "priority",
    "dnsConfig",
    "runtimeClassName",
    "enableServiceLinks",
    "preemptionPolicy",
    "setHostnameAsFQDN",
    "os",
    "hostUsers",
    "resources",
];

const CONTAINER_OMITEMPTY: &[&str] = &[
    "image",
    "command",
    "args",
    "workingDir",
    "ports",
    "envFrom",
    "env",
    "resizePolicy",
    "volumeMounts",
    "volumeDevices",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "imagePullPolicy",
    "stdin",
    "stdinOnce",
    "tty",
];

const CONTAINER_POINTERS: &[&str] = &[
    "restartPolicy",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "securityContext",
];

fn pod_spec_fields(spec: &mut Map<String, Value>) {
    always(spec, "containers", Value::Null);
    drop_zero(spec, POD_SPEC_OMITEMPTY);
    drop_null(spec, POD_SPEC_POINTERS);
    for list in ["containers", "initContainers", "ephemeralContainers"] {
        for c in each_struct(spec, list) {
            always(c, "name", Value::String(String::new()));
            always(c, "resources", Value::Object(Map::new()));
            drop_zero(c, CONTAINER_OMITEMPTY);
            drop_null(c, CONTAINER_POINTERS);
            drop_zero(c, &["targetContainerName"]);
        }
    }
}

fn pod_status_fields(status: &mut Map<String, Value>) {
    drop_zero(
        status,
        &[
            "observedGeneration",
            "phase",
            "conditions",
            "message",
            "reason",
            "nominatedNodeName",
            "hostIP",
            "hostIPs",
            "podIP",
            "podIPs",
            "initContainerStatuses",
            "containerStatuses",
            "qosClass",
            "ephemeralContainerStatuses",
            "resize",
            "resourceClaimStatuses",
        ],
    );
    drop_null(status, &["startTime"]);
    for c in each_struct(status, "conditions") {
        always(c, "type", Value::String(String::new()));
        always(c, "status", Value::String(String::new()));
        always(c, "lastProbeTime", Value::Null);
        always(c, "lastTransitionTime", Value::Null);
        drop_zero(c, &["observedGeneration", "reason", "message"]);
    }
    for list in [
        "initContainerStatuses",
        "containerStatuses",
        "ephemeralContainerStatuses",
    ] {
        for c in each_struct(status, list) {
            container_status_fields(c);
        }
    }
}

fn container_status_fields(c: &mut Map<String, Value>) {
    always(c, "name", Value::String(String::new()));
    always(c, "ready", Value::Bool(false));
    always(c, "restartCount", Value::from(0));
    always(c, "image", Value::String(String::new()));
    always(c, "imageID", Value::String(String::new()));
    drop_zero(
        c,
        &[
            "containerID",
            "allocatedResources",
            "volumeMounts",
            "allocatedResourcesStatus",
        ],
    );
    drop_null(c, &["started", "resources", "user", "stopSignal"]);
    for state in ["state", "lastState"] {
        always(c, state, Value::Object(Map::new()));
        let Some(Value::Object(st)) = c.get_mut(state) else {
            continue;
        };
        drop_null(st, &["waiting", "running", "terminated"]);
        if let Some(Value::Object(w)) = st.get_mut("waiting") {
            drop_zero(w, &["reason", "message"]);
        }
        if let Some(Value::Object(r)) = st.get_mut("running") {
            always(r, "startedAt", Value::Null);
        }
        if let Some(Value::Object(t)) = st.get_mut("terminated") {
            always(t, "exitCode", Value::from(0));
            always(t, "startedAt", Value::Null);
            always(t, "finishedAt", Value::Null);
            drop_zero(t, &["signal", "reason", "message", "containerID"]);
        }
    }
}

/// networking.k8s.io/v1 NetworkPolicy: `spec` and its `podSelector` are structs, always
/// written; the rule lists and their ports and peers are `omitempty`; a port's protocol,
/// port and end port and a peer's selectors and IP block are pointers; an IP block's
/// `cidr` is always written.
fn network_policy_fields(o: &mut Map<String, Value>) {
    always(o, "spec", Value::Object(Map::new()));
    let Some(Value::Object(spec)) = o.get_mut("spec") else {
        return;
    };
    always(spec, "podSelector", Value::Object(Map::new()));
    if let Some(Value::Object(sel)) = spec.get_mut("podSelector") {
        label_selector_fields(sel);
    }
    drop_zero(spec, &["ingress", "egress", "policyTypes"]);
    if let Some(Value::Array(types)) = spec.get_mut("policyTypes") {
        for t in types.iter_mut().filter(|t| t.is_null()) {
            *t = Value::String(String::new());
        }
    }
    for (rules, peers) in [("ingress", "from"), ("egress", "to")] {
        for rule in each_struct(spec, rules) {
            drop_zero(rule, &["ports", peers]);
            for port in each_struct(rule, "ports") {
                drop_null(port, &["protocol", "port", "endPort"]);
            }
            for peer in each_struct(rule, peers) {
                drop_null(peer, &["podSelector", "namespaceSelector", "ipBlock"]);
                for sel in ["podSelector", "namespaceSelector"] {
                    if let Some(Value::Object(sel)) = peer.get_mut(sel) {
                        label_selector_fields(sel);
                    }
                }
                if let Some(Value::Object(block)) = peer.get_mut("ipBlock") {
                    always(block, "cidr", Value::String(String::new()));
                    drop_zero(block, &["except"]);
                }
            }
        }
    }
}

/// `metav1.LabelSelector`: both fields `omitempty`; an expression's key and operator
/// always written, its values `omitempty`.
fn label_selector_fields(sel: &mut Map<String, Value>) {
    drop_zero(sel, &["matchLabels", "matchExpressions"]);
    for e in each_struct(sel, "matchExpressions") {
        always(e, "key", Value::String(String::new()));
        always(e, "operator", Value::String(String::new()));
        drop_zero(e, &["values"]);
    }
}

#[cfg(test)]
mod tests {
    use crate::builtin_types;
    use crate::catalog::ResourceType;
    use serde_json::{json, Value};

    fn rt(group: &str, kind: &str) -> ResourceType {
        builtin_types::builtin()
            .into_iter()
            .find(|r| r.group == group && r.kind == kind)
            .unwrap()
    }

    /// `obj` canonicalized by the strategy of the built-in `group`/`kind`.
    fn canonical(group: &str, kind: &str, mut obj: Value) -> Value {
        let rt = rt(group, kind);
        rt.strategy.canonicalize(&rt, &mut obj);
        obj
    }

    #[test]
    fn empty_maps_and_lists_of_omitempty_fields_go() {
        assert_eq!(
            canonical(
                "",
                "ConfigMap",
                json!({"data": {}, "binaryData": {}, "immutable": false})
            ),
            json!({"immutable": false})
        );
        assert_eq!(
            canonical(
                "",
                "ServiceAccount",
                json!({"secrets": [], "imagePullSecrets": [], "automountServiceAccountToken": false})
            ),
            json!({"automountServiceAccountToken": false})
        );
    }

    #[test]
    fn core_events_always_carry_their_struct_and_non_omitempty_fields() {
        let obj = json!({"involvedObject": {"kind": "Pod"}, "reason": "R", "count": 0, "type": "", "series": null});
        let want = json!({"involvedObject": {"kind": "Pod"}, "reason": "R", "source": {},
            "firstTimestamp": null, "lastTimestamp": null, "eventTime": null,
            "reportingComponent": "", "reportingInstance": ""});
        assert_eq!(canonical("", "Event", obj.clone()), want);
        // events.k8s.io Events are stored in the core form too.
        assert_eq!(canonical("events.k8s.io", "Event", obj), want);
    }

    #[test]
    fn rbac_rules_are_always_written_and_subject_api_groups_omitted_when_empty() {
        let rbac = "rbac.authorization.k8s.io";
        assert_eq!(
            canonical(rbac, "Role", json!({"metadata": {}})),
            json!({"metadata": {}, "rules": null})
        );
        assert_eq!(
            canonical(
                rbac,
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
                "batch",
                "Job",
                json!({"spec": {"template": {"spec": {}}}, "status": {"active": 0, "ready": null}})
            ),
            json!({"spec": {"template": {"metadata": {"creationTimestamp": null}, "spec": {}}}, "status": {}})
        );
    }

    #[test]
    fn network_policies_keep_their_structs_and_drop_empty_lists_and_null_pointers() {
        let np = "networking.k8s.io";
        assert_eq!(
            canonical(np, "NetworkPolicy", json!({"metadata": {}})),
            json!({"metadata": {}, "spec": {"podSelector": {}}})
        );
        let obj = json!({"spec": {
            "podSelector": {"matchLabels": {}, "matchExpressions": []},
            "ingress": [
                {"ports": [], "from": []},
                null,
                {"ports": [{"protocol": "TCP", "port": null, "endPort": null}],
                 "from": [{"podSelector": null, "namespaceSelector": {"matchExpressions": [{"key": "k", "operator": "Exists", "values": []}]}},
                          {"ipBlock": {"except": []}}]}
            ],
            "egress": [],
            "policyTypes": ["Ingress", null]
        }});
        assert_eq!(
            canonical(np, "NetworkPolicy", obj),
            json!({"spec": {
                "podSelector": {},
                "ingress": [
                    {},
                    {},
                    {"ports": [{"protocol": "TCP"}],
                     "from": [{"namespaceSelector": {"matchExpressions": [{"key": "k", "operator": "Exists"}]}},
                              {"ipBlock": {"cidr": ""}}]}
                ],
                "policyTypes": ["Ingress", ""]
            }})
        );
    }

    #[test]
    fn leases_always_carry_a_spec_and_namespaces_are_left_as_they_are() {
        assert_eq!(
            canonical("coordination.k8s.io", "Lease", json!({"spec": null})),
            json!({"spec": {}})
        );
        let ns = json!({"spec": {}, "status": {}});
        assert_eq!(canonical("", "Namespace", ns.clone()), ns);
    }
}
