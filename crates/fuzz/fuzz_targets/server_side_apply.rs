//! Server-side apply's merge and managedFields bookkeeping (`kplane-merge`, as the
//! registry's apply and update paths call it). Input: an apply configuration (YAML or
//! JSON, as `application/apply-patch+yaml` bodies are read), then optionally a 0xFF byte
//! and a live object (YAML or JSON, managedFields included). Each configuration is applied
//! to a ConfigMap and a Job (the live object, else a fixed one, and a create), with and
//! without force, through the main resource and `/status`, as one manager and then a
//! second; the result is then updated by a third manager as a PUT would. The property:
//! nothing panics.
#![no_main]
use kplane_apiserver::http::negotiation;
use kplane_registry::catalog::ResourceType;
use kplane_registry::managed::{record_update, type_info};
use kplane_registry::options::WriteParams;
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

/// Two managers: one the merge treats specially (client-side apply's last-applied
/// configuration counts as its ownership), one ordinary.
const MANAGERS: [&str; 2] = ["kubectl", "fuzz-b"];

fuzz_target!(|data: &[u8]| {
    let (body, live) = match data.iter().position(|&b| b == 0xFF) {
        Some(i) => (&data[..i], Some(&data[i + 1..])),
        None => (data, None),
    };
    let Ok((applied, _duplicates)) = negotiation::parse_apply_body(body) else {
        return;
    };
    let live = live.and_then(|l| negotiation::parse_yaml(l).ok());
    let types = kplane_registry::builtin_types::builtin();
    for plural in ["configmaps", "jobs"] {
        let Some(rt) = types.iter().find(|t| t.plural == plural) else {
            continue;
        };
        let fixed = fixed_object(plural);
        let live = live.as_ref().unwrap_or(&fixed);
        for force in [false, true] {
            for sub in [None, Some("status")] {
                let _ = apply(rt, None, &applied, MANAGERS[0], sub, force);
                let Ok(first) = apply(rt, Some(live), &applied, MANAGERS[0], sub, force) else {
                    continue;
                };
                let second = apply(rt, Some(&first), &applied, MANAGERS[1], sub, force);
                let mut updated = second.unwrap_or_else(|_| applied.clone());
                let w = WriteParams {
                    field_manager: Some("fuzz-update".into()),
                    ..WriteParams::default()
                };
                record_update(rt, Some(&first), &mut updated, sub, &w);
            }
        }
    }
});

/// One apply as the registry makes it (`Registry::apply`), without storage.
fn apply(
    rt: &ResourceType,
    live: Option<&Value>,
    applied: &Value,
    manager: &str,
    sub: Option<&str>,
    force: bool,
) -> Result<Value, kplane_merge::ApplyError> {
    let types = type_info(rt);
    let api_version = rt.api_version();
    let req = kplane_merge::Request {
        manager,
        api_version: &api_version,
        subresource: sub,
        now: "2026-11-29T10:00:00Z",
        types: &*types,
        reset_fields: rt.strategy.reset_fields(rt, sub),
    };
    kplane_merge::apply(live, applied, &req, force)
}

/// The live object when the input has none: owned in part by each manager.
fn fixed_object(plural: &str) -> Value {
    let managed = |manager: &str, operation: &str, fields: Value| {
        json!({"manager": manager, "operation": operation, "apiVersion": "v1",
               "time": "2026-11-29T09:00:00Z", "fieldsType": "FieldsV1", "fieldsV1": fields})
    };
    if plural == "jobs" {
        let mut managed_fields = vec![managed(
            "fuzz-b",
            "Apply",
            json!({"f:spec": {"f:template": {"f:spec": {"f:containers": {
                "k:{\"name\":\"a\"}": {".": {}, "f:image": {}, "f:name": {}}}}}}}),
        )];
        managed_fields[0]["apiVersion"] = json!("batch/v1");
        return json!({"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "default", "managedFields": managed_fields},
            "spec": {"template": {"spec": {
                "containers": [{"name": "a", "image": "x", "env": [{"name": "E", "value": "1"}]}],
                "restartPolicy": "Never"}}},
            "status": {"active": 1}});
    }
    json!({"apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default", "labels": {"a": "b"},
            "annotations": {"kubectl.kubernetes.io/last-applied-configuration":
                "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"c\"},\"data\":{\"k\":\"v\"}}"},
            "managedFields": [
                managed("fuzz-b", "Apply", json!({"f:data": {"f:k": {}}})),
                managed("kubectl", "Update", json!({"f:metadata": {"f:labels": {"f:a": {}}}})),
            ]},
        "data": {"k": "v", "l": "w"}})
}
