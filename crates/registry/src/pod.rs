//! The Pod (core/v1) rules, as kube-apiserver 1.32 has them (`pkg/apis/core/v1/defaults.go`,
//! `pkg/registry/core/pod/strategy.go`, `pkg/apis/core/helper/qos`): the defaults of a pod
//! (the pod spec's and containers' own, requests from limits, `enableServiceLinks`, host
//! ports of a host-network pod), `PrepareForCreate` (status Pending with the QoS class, the
//! `SchedulingGated` condition), the status strategy (the stored spec, owner references and
//! deletion timestamp kept, the QoS class backfilled), and the name warning. Validation is
//! in [`validation`].
//!
//! Pods in kplane are reflections of a host cluster's pods, written by its syncer (the
//! `PodReflection` admission plugin refuses other writers); these rules give the
//! reflection the shape kube-apiserver gives a pod.

pub(crate) mod validation;

#[cfg(test)]
mod tests;

use kplane_types::validation::is_dns1123_label;
use serde_json::{json, Map, Value};

use super::json_map::{each_object, object_at, set_default};
use super::meta;
use super::pod_template::{self, quantity_value};

pub use validation::validate;

/// `SetDefaults_Pod`, `SetDefaults_PodSpec` and the container defaults.
pub fn default(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else {
        return;
    };
    if o.get("spec").is_none_or(Value::is_null) {
        o.insert("spec".into(), json!({}));
    }
    let Some(spec) = object_at(o, "spec") else {
        return;
    };
    pod_template::default_pod_spec(spec);
    for list in ["containers", "initContainers"] {
        for c in each_object(spec, list) {
            requests_from_limits(c);
        }
    }
    set_default(spec, "enableServiceLinks", json!(true));
    if spec.get("hostNetwork") == Some(&Value::Bool(true)) {
        for list in ["containers", "initContainers"] {
            for c in each_object(spec, list) {
                for port in each_object(c, "ports") {
                    host_port_from_container_port(port);
                }
            }
        }
    }
}

/// A limit without a request makes the request (`SetDefaults_Pod`).
fn requests_from_limits(c: &mut Map<String, Value>) {
    let Some(resources) = object_at(c, "resources") else {
        return;
    };
    let Some(limits) = resources.get("limits").and_then(Value::as_object).cloned() else {
        return;
    };
    set_default(resources, "requests", json!({}));
    if let Some(requests) = object_at(resources, "requests") {
        for (k, v) in limits {
            requests.entry(k).or_insert(v);
        }
    }
}

/// `defaultHostNetworkPorts`: a port without a host port uses its container port.
fn host_port_from_container_port(port: &mut Map<String, Value>) {
    if port.get("hostPort").and_then(Value::as_i64).unwrap_or(0) == 0 {
        if let Some(p) = port.get("containerPort").cloned() {
            port.insert("hostPort".into(), p);
        }
    }
}

/// What a pod keeps of its trip through the internal type (the v1 conversions): the
/// deprecated `serviceAccount` is an alias of `serviceAccountName`, and `status.podIP` is
/// the first of `status.podIPs` (a `podIP` that differs from it wins, as an older kubelet
/// writes only that).
pub fn round_trip(obj: &mut Value) {
    if let Some(spec) = obj.get_mut("spec").and_then(Value::as_object_mut) {
        service_account_alias(spec);
    }
    let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) else {
        return;
    };
    let pod_ip = status
        .get("podIP")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let first = status
        .get("podIPs")
        .and_then(|ips| ips.pointer("/0/ip"))
        .and_then(Value::as_str)
        .map(str::to_string);
    if !pod_ip.is_empty() && first.as_deref() != Some(pod_ip.as_str()) {
        status.insert("podIPs".into(), json!([{"ip": pod_ip}]));
    } else if let Some(first) = first {
        status.insert("podIP".into(), json!(first));
    }
}

/// What a PodTemplate's pod spec keeps of its trip through the internal type: the
/// deprecated `serviceAccount` alias, as a pod's.
pub fn template_round_trip(obj: &mut Value) {
    if let Some(spec) = obj
        .pointer_mut("/template/spec")
        .and_then(Value::as_object_mut)
    {
        service_account_alias(spec);
    }
}

/// `serviceAccount` is read when `serviceAccountName` is unset, and always written as it.
fn service_account_alias(spec: &mut Map<String, Value>) {
    let name = |k: &str| {
        spec.get(k)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    };
    let sa = name("serviceAccountName").or_else(|| name("serviceAccount"));
    if let Some(sa) = sa {
        spec.insert("serviceAccountName".into(), json!(sa));
        spec.insert("serviceAccount".into(), json!(sa));
    }
}

/// `PrepareForCreate`: the status is Pending with the pod's QoS class, and a pod with
/// scheduling gates is not scheduled (`SchedulingGated`).
pub fn prepare_create(obj: &mut Value) {
    let spec = obj.get("spec").cloned().unwrap_or(Value::Null);
    let mut status = json!({"phase": "Pending", "qosClass": qos_class(&spec)});
    let gated = spec
        .get("schedulingGates")
        .and_then(Value::as_array)
        .is_some_and(|g| !g.is_empty());
    if gated {
        status["conditions"] = json!([{
            "type": "PodScheduled",
            "status": "False",
            "lastProbeTime": null,
            "lastTransitionTime": meta::now_time(),
            "reason": "SchedulingGated",
            "message": "Scheduling is blocked due to non-empty scheduling gates",
        }]);
    }
    if let Some(o) = obj.as_object_mut() {
        o.insert("status".into(), status);
    }
}

/// The status strategy's `PrepareForUpdate`: the request's status and metadata, with the
/// stored spec, owner references and deletion timestamp; a status without a QoS class keeps
/// the stored one.
pub fn prepare_status_update(mut new: Value, old: &Value) -> Value {
    if let Some(o) = new.as_object_mut() {
        match old.get("spec") {
            Some(spec) => o.insert("spec".into(), spec.clone()),
            None => o.remove("spec"),
        };
    }
    if let Ok(m) = meta::meta_mut(&mut new) {
        for field in ["ownerReferences", "deletionTimestamp"] {
            match old.pointer(&format!("/metadata/{field}")) {
                Some(v) => m.insert(field.into(), v.clone()),
                None => m.remove(field),
            };
        }
    }
    let qos = |v: &Value| {
        v.pointer("/status/qosClass")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    if qos(&new).is_empty() && !qos(old).is_empty() {
        if let Some(o) = new.as_object_mut() {
            let status = o.entry("status").or_insert_with(|| json!({}));
            if status.is_object() {
                status["qosClass"] = json!(qos(old));
            }
        }
    }
    new
}

/// `WarningsOnCreate`'s name rule (the pod's hostname comes from it).
pub fn warnings(obj: &Value, old: Option<&Value>) -> Vec<String> {
    if old.is_some() {
        return Vec::new();
    }
    let msgs = is_dns1123_label(meta::name_of(obj));
    if msgs.is_empty() {
        return Vec::new();
    }
    vec![format!(
        "metadata.name: this is used in the Pod's hostname, which can result in surprising behavior; a DNS label is recommended: [{}]",
        msgs.join(" ")
    )]
}

/// `qos.GetPodQOS`: `BestEffort` without CPU or memory requests and limits, `Guaranteed`
/// when every container limits both and every request equals its limit, `Burstable`
/// otherwise (init containers included).
pub fn qos_class(spec: &Value) -> &'static str {
    let mut requests: Map<String, Value> = Map::new();
    let mut limits: Map<String, Value> = Map::new();
    let mut guaranteed = true;
    let containers = ["containers", "initContainers"]
        .into_iter()
        .flat_map(|l| spec.get(l).and_then(Value::as_array).into_iter().flatten());
    for c in containers {
        let resources = c.get("resources").unwrap_or(&Value::Null);
        add_positive(&mut requests, resources.get("requests"));
        let found = add_positive(&mut limits, resources.get("limits"));
        if !(found.contains(&"cpu") && found.contains(&"memory")) {
            guaranteed = false;
        }
    }
    if requests.is_empty() && limits.is_empty() {
        return "BestEffort";
    }
    let total = |m: &Map<String, Value>, k: &str| m.get(k).and_then(Value::as_f64);
    if guaranteed
        && requests
            .keys()
            .all(|k| total(&limits, k).is_some() && total(&limits, k) == total(&requests, k))
        && requests.len() == limits.len()
    {
        return "Guaranteed";
    }
    "Burstable"
}

/// Adds the positive CPU and memory quantities of `list` to `sums`; returns the names found.
fn add_positive(sums: &mut Map<String, Value>, list: Option<&Value>) -> Vec<&'static str> {
    let mut found = Vec::new();
    let Some(list) = list.and_then(Value::as_object) else {
        return found;
    };
    for name in ["cpu", "memory"] {
        let Some(v) = list.get(name).and_then(quantity_value).filter(|v| *v > 0.0) else {
            continue;
        };
        found.push(name);
        let sum = sums.get(name).and_then(Value::as_f64).unwrap_or(0.0) + v;
        sums.insert(name.into(), json!(sum));
    }
    found
}
