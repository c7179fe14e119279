//! `ValidatePodCreate`, `ValidatePodUpdate` and `ValidatePodStatusUpdate`
//! (`pkg/apis/core/validation/validation.go`, 1.32), the part a reflected pod meets: the pod
//! spec as a template's is checked (`pod_template`: containers required with names and
//! images, DNS-1123 names, unique container names, restart and DNS policies, ports, env,
//! mounts, resources) plus the pod-only rules (an image without surrounding whitespace, a
//! projected service account token needs a service account, no ephemeral containers on
//! create, no node name while scheduling gates remain); on update the spec is immutable
//! but for images, `activeDeadlineSeconds` (set, or lowered), added tolerations, removed
//! scheduling gates and a negative grace period set to 1; on a status change the QoS class
//! is immutable, custom condition types are qualified names, terminated containers of a
//! pod that does not restart them stay terminated, and pod IPs are valid, one per family.
//!
//! Field paths and messages are upstream's. The one message that cannot be matched is the
//! immutable spec's: upstream appends a `cmp.Diff` of its internal Go structs (whose
//! whitespace go-cmp randomizes on purpose); here the changed fields are listed instead.

use std::collections::HashSet;

use kplane_types::{validation, Cause, CauseType};
use serde_json::{json, Value};

use crate::go_cidr::ip_is_v4;
use crate::pod_template;

/// What `ValidatePodUpdate` lets a pod update change (`updatablePodSpecFields`).
const UPDATABLE: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

fn items<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    v.get(k)
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

fn str_of<'a>(v: &'a Value, k: &str) -> &'a str {
    v.get(k).and_then(Value::as_str).unwrap_or("")
}

/// Validation on create (`old` None) and update; the ObjectMeta rules are the caller's.
/// An update that changes the status is checked as a status update too.
pub fn validate(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let spec = obj.get("spec").unwrap_or(&Value::Null);
    let mut causes = metadata_and_spec(spec);
    let Some(old) = old else {
        causes.extend(create_only(spec));
        return causes;
    };
    let old_spec = old.get("spec").unwrap_or(&Value::Null);
    causes.extend(spec_update(spec, old_spec));
    if obj.get("status") != old.get("status") {
        causes.extend(status_update(obj, old));
    }
    causes
}

/// `validatePodMetadataAndSpec`'s spec part.
fn metadata_and_spec(spec: &Value) -> Vec<Cause> {
    let mut causes = pod_template::validate_pod_spec(spec, "spec");
    if str_of(spec, "serviceAccountName").is_empty() {
        for (vi, v) in items(spec, "volumes").iter().enumerate() {
            let Some(projected) = v.get("projected") else {
                continue;
            };
            for (si, source) in items(projected, "sources").iter().enumerate() {
                if source
                    .get("serviceAccountToken")
                    .is_some_and(|t| !t.is_null())
                {
                    causes.push(Cause::forbidden(
                        format!("spec.volumes[{vi}].projected.sources[{si}].serviceAccountToken"),
                        "must not be specified when serviceAccountName is not set",
                    ));
                }
            }
        }
    }
    for list in ["containers", "initContainers"] {
        for (i, c) in items(spec, list).iter().enumerate() {
            let image = str_of(c, "image");
            if image.trim() != image {
                causes.push(Cause::invalid(
                    format!("spec.{list}[{i}].image"),
                    &json!(image),
                    "must not have leading or trailing whitespace",
                ));
            }
        }
    }
    causes
}

/// `ValidatePodCreate`'s own rules.
fn create_only(spec: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    if !items(spec, "ephemeralContainers").is_empty() {
        causes.push(Cause::forbidden(
            "spec.ephemeralContainers",
            "cannot be set on create",
        ));
    }
    if !str_of(spec, "nodeName").is_empty() && !items(spec, "schedulingGates").is_empty() {
        causes.push(Cause::forbidden(
            "spec.nodeName",
            "cannot be set until all schedulingGates have been cleared",
        ));
    }
    causes
}

/// `ValidatePodUpdate`'s spec rules.
fn spec_update(spec: &Value, old: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    for list in ["containers", "initContainers"] {
        let (new_cs, old_cs) = (items(spec, list), items(old, list));
        if new_cs.len() != old_cs.len() {
            causes.push(Cause::forbidden(
                format!("spec.{list}"),
                "pod updates may not add or remove containers",
            ));
            return causes;
        }
        for (i, c) in new_cs.iter().enumerate() {
            if str_of(c, "image").is_empty() {
                causes.push(Cause::required(format!("spec.{list}[{i}].image")));
            }
        }
    }
    if let Some(stop) = active_deadline_update(spec, old) {
        causes.push(stop);
        return causes;
    }
    causes.extend(tolerations_update(spec, old));
    causes.extend(scheduling_gates_update(spec, old));
    if spec == old {
        return causes;
    }
    let munged = munged(spec, old);
    if munged != *old {
        causes.push(Cause::forbidden(
            "spec",
            &format!(
                "pod updates may not change fields other than {UPDATABLE}\n{}",
                changed_fields(old, &munged)
            ),
        ));
    }
    causes
}

/// The active deadline may be set, or lowered, never removed or raised.
fn active_deadline_update(spec: &Value, old: &Value) -> Option<Cause> {
    let field = "spec.activeDeadlineSeconds";
    let new = spec.get("activeDeadlineSeconds").filter(|v| !v.is_null());
    let old = old.get("activeDeadlineSeconds").filter(|v| !v.is_null());
    match (new.map(|v| v.as_i64().unwrap_or(-1)), old) {
        (Some(n), _) if !(0..=i64::from(i32::MAX)).contains(&n) => Some(Cause::invalid(
            field,
            &json!(n),
            "must be between 0 and 2147483647, inclusive",
        )),
        (Some(n), Some(o)) if o.as_i64().unwrap_or(0) < n => Some(Cause::invalid(
            field,
            &json!(n),
            "must be less than or equal to previous value",
        )),
        // Go shows a nil pointer as the string "null".
        (None, Some(_)) => Some(Cause::invalid(
            field,
            &json!("null"),
            "must not update from a positive integer to nil value",
        )),
        _ => None,
    }
}

/// `validateOnlyAddedTolerations`: every stored toleration is kept (its
/// `tolerationSeconds` may change).
fn tolerations_update(spec: &Value, old: &Value) -> Vec<Cause> {
    let without_seconds = |t: &Value| {
        let mut t = t.clone();
        if let Some(o) = t.as_object_mut() {
            o.remove("tolerationSeconds");
        }
        t
    };
    let new: Vec<Value> = items(spec, "tolerations")
        .iter()
        .map(without_seconds)
        .collect();
    let kept = items(old, "tolerations")
        .iter()
        .all(|t| new.contains(&without_seconds(t)));
    if kept {
        return Vec::new();
    }
    vec![Cause::forbidden(
        "spec.tolerations",
        "existing toleration can not be modified except its tolerationSeconds",
    )]
}

/// `validateOnlyDeletedSchedulingGates`: no new gate.
fn scheduling_gates_update(spec: &Value, old: &Value) -> Vec<Cause> {
    let old_names: HashSet<&str> = items(old, "schedulingGates")
        .iter()
        .map(|g| str_of(g, "name"))
        .collect();
    items(spec, "schedulingGates")
        .iter()
        .enumerate()
        .filter(|(_, g)| !old_names.contains(str_of(g, "name")))
        .map(|(i, g)| {
            Cause::forbidden(
                format!("spec.schedulingGates[{i}].name"),
                &format!(
                    "only deletion is allowed, but found new scheduling gate '{}'",
                    str_of(g, "name")
                ),
            )
        })
        .collect()
}

/// The new spec with the fields an update may change taken from the stored one.
fn munged(spec: &Value, old: &Value) -> Value {
    let mut m = spec.clone();
    let Some(o) = m.as_object_mut() else {
        return m;
    };
    for list in ["containers", "initContainers"] {
        if let Some(Value::Array(cs)) = o.get_mut(list) {
            for (c, old_c) in cs.iter_mut().zip(items(old, list)) {
                if let Some(c) = c.as_object_mut() {
                    match old_c.get("image") {
                        Some(image) => c.insert("image".into(), image.clone()),
                        None => c.remove("image"),
                    };
                }
            }
        }
    }
    for field in ["activeDeadlineSeconds", "schedulingGates", "tolerations"] {
        match old.get(field) {
            Some(v) => o.insert(field.into(), v.clone()),
            None => o.remove(field),
        };
    }
    let negative = old
        .get("terminationGracePeriodSeconds")
        .and_then(Value::as_i64)
        .is_some_and(|g| g < 0);
    if negative && o.get("terminationGracePeriodSeconds") == Some(&json!(1)) {
        o.insert(
            "terminationGracePeriodSeconds".into(),
            old["terminationGracePeriodSeconds"].clone(),
        );
    }
    m
}

/// The top-level spec fields in which `new` differs from `old`, one `-`/`+` pair each.
fn changed_fields(old: &Value, new: &Value) -> String {
    let empty = serde_json::Map::new();
    let (o, n) = (
        old.as_object().unwrap_or(&empty),
        new.as_object().unwrap_or(&empty),
    );
    let mut keys: Vec<&String> = o.keys().chain(n.keys()).collect();
    keys.sort();
    keys.dedup();
    let mut out = String::from("  core.PodSpec{\n");
    for k in keys.into_iter().filter(|k| o.get(*k) != n.get(*k)) {
        for (sign, side) in [("-", o), ("+", n)] {
            if let Some(v) = side.get(k) {
                out.push_str(&format!("{sign} \t{k}: {v},\n"));
            }
        }
    }
    out.push_str("  }\n");
    out
}

/// `ValidatePodStatusUpdate` (its metadata rules are the caller's).
fn status_update(obj: &Value, old: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let status = obj.get("status").unwrap_or(&Value::Null);
    let old_status = old.get("status").unwrap_or(&Value::Null);
    for (i, c) in items(status, "conditions").iter().enumerate() {
        let ty = str_of(c, "type");
        if !matches!(ty, "PodScheduled" | "Ready" | "Initialized") {
            causes.extend(validation::validate_qualified_name(
                ty,
                &format!("metadata.conditions[{i}].Type"),
            ));
        }
    }
    if obj.pointer("/spec/nodeName") != old.pointer("/spec/nodeName") {
        causes.push(Cause::forbidden(
            "status.nodeName",
            "may not be changed directly",
        ));
    }
    let nominated = str_of(status, "nominatedNodeName");
    if !nominated.is_empty() && nominated != str_of(old_status, "nominatedNodeName") {
        for msg in validation::is_dns1123_subdomain(nominated) {
            causes.push(Cause::invalid(
                "status.nominatedNodeName",
                &json!(nominated),
                &msg,
            ));
        }
    }
    let qos = str_of(status, "qosClass");
    if qos != str_of(old_status, "qosClass") {
        causes.push(Cause::invalid(
            "status.qosClass",
            &json!(qos),
            "field is immutable",
        ));
    }
    let old_spec = old.get("spec").unwrap_or(&Value::Null);
    let restart = str_of(old_spec, "restartPolicy");
    for (list, policy) in [
        ("containerStatuses", restart),
        ("initContainerStatuses", restart),
        ("ephemeralContainerStatuses", "Never"),
    ] {
        let sidecars = if list == "initContainerStatuses" {
            restartable_init_containers(old_spec)
        } else {
            HashSet::new()
        };
        causes.extend(state_transitions(
            items(status, list),
            items(old_status, list),
            &format!("status.{list}"),
            policy,
            &sidecars,
        ));
    }
    causes.extend(pod_ips(items(status, "podIPs")));
    causes
}

fn restartable_init_containers(spec: &Value) -> HashSet<&str> {
    items(spec, "initContainers")
        .iter()
        .filter(|c| str_of(c, "restartPolicy") == "Always")
        .map(|c| str_of(c, "name"))
        .collect()
}

/// `ValidateContainerStateTransition`: a pod that does not restart its containers keeps a
/// terminated one terminated (`OnFailure` restarts the failed ones; restartable init
/// containers restart).
fn state_transitions(
    new: &[Value],
    old: &[Value],
    path: &str,
    restart_policy: &str,
    restartable: &HashSet<&str>,
) -> Vec<Cause> {
    if restart_policy == "Always" {
        return Vec::new();
    }
    let terminated = |s: &Value| s.pointer("/state/terminated").is_some_and(Value::is_object);
    let mut causes = Vec::new();
    for (i, o) in old.iter().enumerate() {
        if !terminated(o) {
            continue;
        }
        let exit = o
            .pointer("/state/terminated/exitCode")
            .and_then(Value::as_i64)
            .unwrap_or(0);
        let name = str_of(o, "name");
        if (exit != 0 && restart_policy == "OnFailure") || restartable.contains(name) {
            continue;
        }
        for n in new {
            if str_of(n, "name") == name && !terminated(n) {
                causes.push(Cause::forbidden(
                    format!("{path}[{i}].state"),
                    "may not be transitioned to non-terminated state",
                ));
            }
        }
    }
    causes
}

/// `validatePodIPs`: valid addresses, at most one per family, no duplicates.
fn pod_ips(ips: &[Value]) -> Vec<Cause> {
    let path = "status.podIPs";
    let mut causes = Vec::new();
    let mut families = Vec::new();
    for (i, ip) in ips.iter().enumerate() {
        let addr = str_of(ip, "ip");
        match ip_is_v4(addr) {
            Some(v4) => families.push(v4),
            None => causes.push(Cause::invalid(
                format!("{path}[{i}]"),
                &json!(addr),
                "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)",
            )),
        }
    }
    if ips.len() > 1 {
        let dual = families.len() == 2 && families[0] != families[1];
        if !dual || ips.len() > 2 {
            let shown: Vec<String> = ips.iter().map(go_pod_ip).collect();
            causes.push(pod_template::invalid_shown(
                path,
                &format!("[]core.PodIP{{{}}}", shown.join(", ")),
                "may specify no more than one IP for each IP family",
            ));
        }
        let mut seen = HashSet::new();
        for (i, ip) in ips.iter().enumerate() {
            if !seen.insert(str_of(ip, "ip")) {
                causes.push(Cause::new(
                    CauseType::FieldValueDuplicate,
                    format!("{path}[{i}]"),
                    format!("Duplicate value: {}", go_pod_ip(ip)),
                ));
            }
        }
    }
    causes
}

/// A pod IP as Go's `%#v` prints the internal struct.
fn go_pod_ip(ip: &Value) -> String {
    format!(
        "core.PodIP{{IP:{}}}",
        validation::go_quote(str_of(ip, "ip"))
    )
}
