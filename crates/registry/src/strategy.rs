//! Per-type strategies: the defaulting, validation and update rules that differ between
//! built-in kinds (namespaces, config maps, secrets, events, leases, RBAC, jobs). Everything
//! generic lives in `meta`; this module holds only what Kubernetes defines per type and
//! dispatches to the kinds with a module of their own (`job`, `crd`, `custom`).

use base64::Engine;
use kplane_types::{validation, Cause};
use serde_json::{json, Value};

use super::catalog::{ResourceType, Strategy};
use super::meta::{self, NameRule};

/// Total size limit of ConfigMap and Secret data (`MaxSecretSize`, 1 MiB).
const MAX_DATA_BYTES: usize = 1024 * 1024;

pub fn name_rule(rt: &ResourceType) -> NameRule {
    match rt.strategy {
        Strategy::Namespace => NameRule::Dns1123Label,
        Strategy::Rbac | Strategy::Custom => NameRule::PathSegment,
        _ => NameRule::Dns1123Subdomain,
    }
}

/// Defaulting on create and update (before validation), then the stored form of the
/// type (`stored_form`: zero values its Go type omits dropped, always-written fields set).
pub fn default(obj: &mut Value, rt: &ResourceType) {
    match rt.strategy {
        Strategy::Secret => default_secret(obj),
        Strategy::Rbac => default_rbac_subjects(obj),
        Strategy::Job => super::job::default(obj),
        Strategy::CustomResourceDefinition => super::crd::default_crd(obj),
        _ => {}
    }
    super::stored_form::canonicalize(obj, rt);
}

/// Type-specific preparation of a new object (after generic metadata is set).
pub fn prepare_create(obj: &mut Value, rt: &ResourceType) {
    match rt.strategy {
        Strategy::CustomResourceDefinition => super::crd::add_cleanup_finalizer(obj),
        Strategy::Namespace => {
            let name = meta::name_of(obj).to_string();
            set_namespace_name_label(obj, &name);
            // PrepareForCreate: the `kubernetes` finalizer is always there.
            if !obj.get("spec").is_some_and(Value::is_object) {
                obj["spec"] = json!({});
            }
            let fins = &mut obj["spec"]["finalizers"];
            if !fins.is_array() {
                *fins = json!([]);
            }
            if let Value::Array(list) = fins {
                if !list.iter().any(|f| f == "kubernetes") {
                    list.push(json!("kubernetes"));
                }
            }
            obj["status"] = json!({"phase": "Active"});
        }
        Strategy::Job => super::job::prepare_create(obj),
        _ => {}
    }
}

/// Type-specific update rules: what the main endpoint may not change.
pub fn prepare_update(new: &mut Value, old: &Value, rt: &ResourceType) {
    if rt.status_subresource {
        match old.get("status") {
            Some(s) => new["status"] = s.clone(),
            None => {
                if let Some(o) = new.as_object_mut() {
                    o.remove("status");
                }
            }
        }
    }
    if rt.strategy == Strategy::Namespace {
        let name = meta::name_of(old).to_string();
        set_namespace_name_label(new, &name);
        match old.get("spec") {
            Some(s) => new["spec"] = s.clone(),
            None => {
                if let Some(o) = new.as_object_mut() {
                    o.remove("spec");
                }
            }
        }
    }
}

/// A write through `/status` (upstream's per-type status strategies, `PrepareForUpdate`).
/// Namespaces, Jobs and CRDs take the request's metadata and status and keep the stored
/// spec (CRDs too: in 1.32 their status strategy's metadata reset is a no-op,
/// kubernetes/kubernetes#137681); custom resources take only the status and keep
/// everything else, metadata included. Generic metadata rules (uid, generation,
/// timestamps) are applied afterwards by `meta::prepare_update`.
pub fn prepare_status_update(new: Value, old: &Value, rt: &ResourceType) -> Value {
    match rt.strategy {
        Strategy::Namespace | Strategy::Job | Strategy::CustomResourceDefinition => {
            let mut out = with_field_from(new, old, "spec");
            if rt.strategy == Strategy::Namespace {
                set_namespace_name_label(&mut out, meta::name_of(old));
            }
            out
        }
        _ => with_field_from(old.clone(), &new, "status"),
    }
}

/// A write through a Namespace's `/finalize`: the request's metadata and spec (its
/// finalizers), the stored status (upstream's `namespaceFinalizeStrategy`).
pub fn prepare_finalize_update(new: Value, old: &Value) -> Value {
    let mut out = with_field_from(new, old, "status");
    set_namespace_name_label(&mut out, meta::name_of(old));
    out
}

/// `base` with its top-level `field` replaced by `from`'s (removed when `from` has none).
fn with_field_from(mut base: Value, from: &Value, field: &str) -> Value {
    if let Some(o) = base.as_object_mut() {
        match from.get(field) {
            Some(v) => {
                o.insert(field.into(), v.clone());
            }
            None => {
                o.remove(field);
            }
        }
    }
    base
}

/// Validation of a `/status` write beyond the object's own rules.
pub fn validate_status_update(obj: &Value, rt: &ResourceType) -> Vec<Cause> {
    match rt.strategy {
        Strategy::Namespace => validate_namespace_phase(obj),
        _ => Vec::new(),
    }
}

/// ValidateNamespaceStatusUpdate: the phase follows the deletion timestamp.
fn validate_namespace_phase(obj: &Value) -> Vec<Cause> {
    let phase = obj
        .pointer("/status/phase")
        .and_then(Value::as_str)
        .unwrap_or("");
    let (want, detail) = if meta::is_deleting(obj) {
        (
            "Terminating",
            "may only be 'Terminating' if `deletionTimestamp` is not empty",
        )
    } else {
        (
            "Active",
            "may only be 'Active' if `deletionTimestamp` is empty",
        )
    };
    if phase == want {
        return Vec::new();
    }
    vec![Cause::invalid("status.Phase", &json!(phase), detail)]
}

fn set_namespace_name_label(obj: &mut Value, name: &str) {
    if let Ok(m) = meta::meta_mut(obj) {
        let labels = m.entry("labels").or_insert_with(|| json!({}));
        if !labels.is_object() {
            *labels = json!({});
        }
        labels["kubernetes.io/metadata.name"] = json!(name);
    }
}

/// Warnings a write of a valid object gets (`WarningsOnCreate`/`WarningsOnUpdate`);
/// `old` is the stored object on update.
pub fn warnings(obj: &Value, old: Option<&Value>, rt: &ResourceType) -> Vec<String> {
    match rt.strategy {
        Strategy::Job => super::job::warnings(obj, old),
        _ => Vec::new(),
    }
}

/// Validation on create and update. `old` is the stored object on update.
pub fn validate(obj: &Value, old: Option<&Value>, rt: &ResourceType) -> Vec<Cause> {
    let mut causes = meta::validate_object_meta(obj, name_rule(rt));
    match rt.strategy {
        Strategy::ConfigMap => causes.extend(validate_config_map(obj, old)),
        Strategy::Secret => causes.extend(validate_secret(obj, old)),
        Strategy::EventsV1Event if old.is_none() => causes.extend(validate_events_v1(obj)),
        Strategy::Rbac => causes.extend(validate_rbac(obj, old, rt)),
        Strategy::Job => causes.extend(super::job::validate(obj, old)),
        Strategy::Custom => causes.extend(super::custom::validate(obj, old, rt)),
        Strategy::CustomResourceDefinition => causes.extend(super::crd::validate_crd(
            obj,
            old,
            super::crd::schema_cache(),
        )),
        _ => {}
    }
    causes
}

fn data_keys_and_size(obj: &Value, field: &str, causes: &mut Vec<Cause>) -> usize {
    let mut size = 0;
    match obj.get(field) {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                for msg in validation::config_map_key_errors(k) {
                    causes.push(Cause::invalid(format!("{field}[{k}]"), &json!(k), &msg));
                }
                match v {
                    Value::String(s) => size += k.len() + s.len(),
                    other => causes.push(Cause::invalid(
                        format!("{field}[{k}]"),
                        other,
                        "must be a string",
                    )),
                }
            }
        }
        Some(other) => causes.push(Cause::invalid(field, other, "must be an object")),
    }
    size
}

fn check_immutable(obj: &Value, old: Option<&Value>, fields: &[&str], causes: &mut Vec<Cause>) {
    let Some(old) = old else { return };
    if old.get("immutable") != Some(&Value::Bool(true)) {
        return;
    }
    for f in fields {
        if obj.get(*f) != old.get(*f) {
            causes.push(Cause::forbidden(
                *f,
                "field is immutable when `immutable` is set",
            ));
        }
    }
    if obj.get("immutable") != Some(&Value::Bool(true)) {
        causes.push(Cause::forbidden(
            "immutable",
            "field is immutable when `immutable` is set",
        ));
    }
}

fn validate_config_map(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let size = data_keys_and_size(obj, "data", &mut causes)
        + data_keys_and_size(obj, "binaryData", &mut causes);
    if let (Some(Value::Object(d)), Some(Value::Object(b))) =
        (obj.get("data"), obj.get("binaryData"))
    {
        for k in d.keys().filter(|k| b.contains_key(*k)) {
            causes.push(Cause::invalid(
                format!("data[{k}]"),
                &json!(k),
                "duplicate of key present in binaryData",
            ));
        }
    }
    if let Some(Value::Object(b)) = obj.get("binaryData") {
        for (k, v) in b {
            if let Some(s) = v.as_str() {
                if base64::engine::general_purpose::STANDARD.decode(s).is_err() {
                    causes.push(Cause::invalid(
                        format!("binaryData[{k}]"),
                        &json!("<value omitted>"),
                        "must be base64",
                    ));
                }
            }
        }
    }
    if size > MAX_DATA_BYTES {
        causes.push(Cause::too_long("", MAX_DATA_BYTES));
    }
    check_immutable(obj, old, &["data", "binaryData"], &mut causes);
    causes
}

/// Folds `stringData` into base64 `data` and defaults `type` to `Opaque`.
fn default_secret(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else { return };
    if let Some(Value::Object(sd)) = o.remove("stringData") {
        let data = o.entry("data").or_insert_with(|| json!({}));
        if !data.is_object() {
            *data = json!({});
        }
        for (k, v) in sd {
            if let Value::String(s) = v {
                data[k.as_str()] =
                    json!(base64::engine::general_purpose::STANDARD.encode(s.as_bytes()));
            }
        }
    }
    match o.get("type") {
        None | Some(Value::Null) => {
            o.insert("type".into(), json!("Opaque"));
        }
        Some(Value::String(s)) if s.is_empty() => {
            o.insert("type".into(), json!("Opaque"));
        }
        _ => {}
    }
}

fn validate_secret(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut causes = Vec::new();
    let mut size = 0;
    match obj.get("data") {
        None | Some(Value::Null) => {}
        Some(Value::Object(m)) => {
            for (k, v) in m {
                for msg in validation::config_map_key_errors(k) {
                    causes.push(Cause::invalid(format!("data[{k}]"), &json!(k), &msg));
                }
                match v
                    .as_str()
                    .map(|s| base64::engine::general_purpose::STANDARD.decode(s))
                {
                    Some(Ok(bytes)) => size += bytes.len(),
                    _ => causes.push(Cause::invalid(
                        format!("data[{k}]"),
                        &json!("<value omitted>"),
                        "illegal base64 data",
                    )),
                }
            }
        }
        Some(other) => causes.push(Cause::invalid("data", other, "must be an object")),
    }
    if size > MAX_DATA_BYTES {
        causes.push(Cause::too_long("data", MAX_DATA_BYTES));
    }
    let ty = obj.get("type").and_then(Value::as_str).unwrap_or("Opaque");
    let required: &[&str] = match ty {
        "kubernetes.io/dockerconfigjson" => &[".dockerconfigjson"],
        "kubernetes.io/dockercfg" => &[".dockercfg"],
        "kubernetes.io/tls" => &["tls.crt", "tls.key"],
        _ => &[],
    };
    for k in required {
        if obj
            .pointer(&format!(
                "/data/{}",
                k.replace('~', "~0").replace('/', "~1")
            ))
            .is_none()
        {
            causes.push(Cause::required(format!("data[{k}]")));
        }
    }
    if ty == "kubernetes.io/service-account-token"
        && obj
            .pointer("/metadata/annotations/kubernetes.io~1service-account.name")
            .is_none()
    {
        causes.push(Cause::required(
            "metadata.annotations[kubernetes.io/service-account.name]",
        ));
    }
    if let Some(old) = old {
        if old.get("type") != obj.get("type") {
            causes.push(Cause::invalid(
                "type",
                obj.get("type").unwrap_or(&Value::Null),
                "field is immutable",
            ));
        }
    }
    check_immutable(obj, old, &["data"], &mut causes);
    causes
}

fn validate_events_v1(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    // The object is in the stored (core) form; report the events.k8s.io field names.
    for (field, shown) in [
        ("eventTime", "eventTime"),
        ("reportingComponent", "reportingController"),
        ("reportingInstance", "reportingInstance"),
        ("action", "action"),
        ("reason", "reason"),
    ] {
        let missing = match obj.get(field) {
            None | Some(Value::Null) => true,
            Some(Value::String(s)) => s.is_empty(),
            _ => false,
        };
        if missing {
            causes.push(Cause::required(shown));
        }
    }
    causes
}

fn default_rbac_subjects(obj: &mut Value) {
    // SetDefaults_RoleBinding / _ClusterRoleBinding.
    if let Some(Value::Object(role_ref)) = obj.get_mut("roleRef") {
        if role_ref
            .get("apiGroup")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            role_ref.insert("apiGroup".into(), json!("rbac.authorization.k8s.io"));
        }
    }
    let Some(Value::Array(subjects)) = obj.get_mut("subjects") else {
        return;
    };
    for s in subjects.iter_mut() {
        let kind = s
            .get("kind")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let has_group = s
            .get("apiGroup")
            .and_then(Value::as_str)
            .is_some_and(|g| !g.is_empty());
        if !has_group && s.is_object() {
            // A ServiceAccount's group defaults to "", which the stored form omits.
            if matches!(kind.as_str(), "User" | "Group") {
                s["apiGroup"] = json!("rbac.authorization.k8s.io");
            }
        }
    }
}

fn validate_rbac(obj: &Value, old: Option<&Value>, rt: &ResourceType) -> Vec<Cause> {
    let mut causes = Vec::new();
    if rt.kind.ends_with("Binding") {
        match obj.get("roleRef") {
            Some(Value::Object(r)) => {
                let kind = r.get("kind").and_then(Value::as_str).unwrap_or("");
                let allowed: &[&str] = if rt.kind == "RoleBinding" {
                    &["Role", "ClusterRole"]
                } else {
                    &["ClusterRole"]
                };
                if !allowed.contains(&kind) {
                    causes.push(Cause::not_supported("roleRef.kind", &json!(kind), allowed));
                }
                if r.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .is_empty()
                {
                    causes.push(Cause::required("roleRef.name"));
                }
            }
            _ => causes.push(Cause::required("roleRef")),
        }
        if let Some(old) = old {
            if old.get("roleRef") != obj.get("roleRef") {
                causes.push(Cause::invalid(
                    "roleRef",
                    obj.get("roleRef").unwrap_or(&Value::Null),
                    "cannot change roleRef",
                ));
            }
        }
        if let Some(Value::Array(subjects)) = obj.get("subjects") {
            for (i, s) in subjects.iter().enumerate() {
                let kind = s.get("kind").and_then(Value::as_str).unwrap_or("");
                if !["User", "Group", "ServiceAccount"].contains(&kind) {
                    causes.push(Cause::not_supported(
                        format!("subjects[{i}].kind"),
                        &json!(kind),
                        &["ServiceAccount", "User", "Group"],
                    ));
                }
                if s.get("name")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .is_empty()
                {
                    causes.push(Cause::required(format!("subjects[{i}].name")));
                }
            }
        }
    } else if let Some(Value::Array(rules)) = obj.get("rules") {
        for (i, r) in rules.iter().enumerate() {
            let empty = |f: &str| {
                r.get(f)
                    .and_then(Value::as_array)
                    .is_none_or(|a| a.is_empty())
            };
            if empty("verbs") {
                causes.push(Cause::required(format!("rules[{i}].verbs")));
            }
            if empty("nonResourceURLs") && r.get("apiGroups").is_none() {
                causes.push(Cause::required(format!("rules[{i}].apiGroups")));
            }
        }
    }
    causes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_map_and_secret_data_are_limited_to_one_mebibyte() {
        for (size, ok) in [
            (MAX_DATA_BYTES - 1, true),
            (MAX_DATA_BYTES, true),
            (MAX_DATA_BYTES + 1, false),
            (10 * MAX_DATA_BYTES, false),
        ] {
            // Two keys, so that the limit is on the sum; a ConfigMap counts its keys too
            // (as upstream does), a Secret only its decoded values.
            let half = size / 2;
            let (a, b) = ("a".repeat(half), "b".repeat(size - half));
            let cm = json!({"metadata": {"name": "c"}, "data": {"a": &a[1..], "b": &b[1..]}});
            let too_long = |c: &Vec<Cause>| c.iter().any(|c| c.message.contains("Too long"));
            assert_eq!(
                !too_long(&validate_config_map(&cm, None)),
                ok,
                "ConfigMap of {size}"
            );
            let enc = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
            let secret = json!({"metadata": {"name": "s"}, "data": {"a": enc(&a), "b": enc(&b)}});
            assert_eq!(
                !too_long(&validate_secret(&secret, None)),
                ok,
                "Secret of {size}"
            );
        }
    }
}
