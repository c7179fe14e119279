//! core/v1 PersistentVolumeClaim, stored as data (nothing provisions or binds volumes
//! here): upstream's defaults (`volumeMode: Filesystem`, a `Pending` phase), what a create
//! and an update keep of the status, and `ValidatePersistentVolumeClaim`/`-Update` with
//! upstream's paths and messages (access modes, the storage request, class names, volume
//! mode, the selector, quantities, the spec fixed after creation except a first
//! `volumeName`, a storage request that may not shrink below the capacity). The
//! `VolumeAttributesClass` fields are dropped as 1.32 drops them with its gate off. Data
//! sources are not checked; what is left out is listed in docs/compatibility.md.

use kplane_types::{validation, Cause};
use serde_json::{json, Value};

use super::json_map::set_default;
use super::label_selector::validate_label_selector;
use super::quantity::{self, Quantity};
use super::stored_form;

const ACCESS_MODES: &[&str] = &[
    "ReadOnlyMany",
    "ReadWriteMany",
    "ReadWriteOnce",
    "ReadWriteOncePod",
];
const VOLUME_MODES: &[&str] = &["Block", "Filesystem"];

/// `SetDefaults_PersistentVolumeClaim` and `-Spec`: a volume mode of `Filesystem`, a
/// `Pending` phase.
pub fn default(obj: &mut Value) {
    let Some(o) = obj.as_object_mut() else {
        return;
    };
    for field in ["spec", "status"] {
        if o.get(field).is_none_or(|v| !v.is_object()) {
            o.insert(field.into(), json!({}));
        }
    }
    if let Some(spec) = o.get_mut("spec").and_then(Value::as_object_mut) {
        set_default(spec, "volumeMode", json!("Filesystem"));
    }
    if let Some(status) = o.get_mut("status").and_then(Value::as_object_mut) {
        default_phase(status);
    }
}

/// A claim's phase is `Pending` until something sets another.
fn default_phase(status: &mut serde_json::Map<String, Value>) {
    if status
        .get("phase")
        .and_then(Value::as_str)
        .unwrap_or("")
        .is_empty()
    {
        status.insert("phase".into(), json!("Pending"));
    }
}

/// `PrepareForCreate`: the status is the client's to read, not to write; a new claim is
/// `Pending` (as its defaults show it on every read upstream). A volume attributes class
/// is dropped (`DropDisabledFields`: the gate is off in 1.32).
pub fn prepare_create(obj: &mut Value) {
    if let Some(o) = obj.as_object_mut() {
        o.insert("status".into(), json!({"phase": "Pending"}));
    }
    drop_disabled(obj, None, "/spec", "volumeAttributesClassName");
}

/// `PrepareForUpdate`'s `DropDisabledFields`: a volume attributes class only if the stored
/// claim has one.
pub fn prepare_update(obj: &mut Value, old: &Value) {
    drop_disabled(obj, Some(old), "/spec", "volumeAttributesClassName");
}

/// The status strategy's `DropDisabledFieldsFromStatus`: the volume attributes class
/// status fields only if the stored claim has them.
pub fn prepare_status_update(obj: &mut Value, old: &Value) {
    for field in ["currentVolumeAttributesClassName", "modifyVolumeStatus"] {
        drop_disabled(obj, Some(old), "/status", field);
    }
}

fn drop_disabled(obj: &mut Value, old: Option<&Value>, at: &str, field: &str) {
    let kept = old
        .and_then(|o| o.pointer(at))
        .and_then(|v| v.get(field))
        .is_some_and(|v| !v.is_null());
    if !kept {
        if let Some(m) = obj.pointer_mut(at).and_then(Value::as_object_mut) {
            m.remove(field);
        }
    }
}

/// The form the v1 type encodes ([`stored_form::persistent_volume_claim`]), with the
/// phase defaulted on every write (`SetDefaults_PersistentVolumeClaim` runs on each
/// request's decoding, `/status` ones too).
pub fn stored_form(obj: &mut Value) {
    stored_form::persistent_volume_claim(obj);
    if let Some(status) = obj.get_mut("status").and_then(Value::as_object_mut) {
        default_phase(status);
    }
}

/// Every quantity of the claim must parse (upstream's decoder refuses the request
/// otherwise): the spec's requests and limits, the status's capacity and allocations.
fn validate_quantities(obj: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    for (at, path) in [
        ("/spec/resources/requests", "spec.resources.requests"),
        ("/spec/resources/limits", "spec.resources.limits"),
        ("/status/capacity", "status.capacity"),
        ("/status/allocatedResources", "status.allocatedResources"),
    ] {
        let Some(list) = obj.pointer(at).and_then(Value::as_object) else {
            continue;
        };
        for (name, v) in list {
            // The storage request has its own rule (`spec.resources[storage]`).
            if path == "spec.resources.requests" && name == "storage" {
                continue;
            }
            if quantity::parse_value(v).is_none() {
                causes.push(Cause::invalid(
                    format!("{path}[{name}]"),
                    v,
                    quantity::FORMAT_ERROR,
                ));
            }
        }
    }
    causes
}

/// `ValidatePersistentVolumeClaim`, and on update `ValidatePersistentVolumeClaimUpdate`.
pub fn validate(obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let empty = json!({});
    let spec = obj.get("spec").unwrap_or(&empty);
    let mut causes = validate_spec(spec);
    causes.extend(validate_quantities(obj));
    if let Some(old) = old {
        // `ValidatePersistentVolumeClaimUpdate` validates the claim again: spec errors are
        // listed twice on an update, as upstream lists them.
        causes.extend(validate_spec(spec));
        causes.extend(validate_quantities(obj));
        causes.extend(validate_update(obj, old));
    }
    causes
}

fn validate_spec(spec: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let modes: Vec<&str> = spec
        .get("accessModes")
        .and_then(Value::as_array)
        .map(|a| a.iter().map(|m| m.as_str().unwrap_or("")).collect())
        .unwrap_or_default();
    if modes.is_empty() {
        causes.push(Cause::new(
            kplane_types::CauseType::FieldValueRequired,
            "spec.accessModes",
            "Required value: at least 1 access mode is required",
        ));
    }
    if let Some(sel) = spec.get("selector").filter(|s| !s.is_null()) {
        causes.extend(validate_label_selector(sel, "spec.selector", false));
    }
    let (mut once_pod, mut others) = (false, false);
    for mode in &modes {
        if !ACCESS_MODES.contains(mode) {
            causes.push(Cause::not_supported(
                "spec.accessModes",
                &json!(mode),
                ACCESS_MODES,
            ));
        } else if *mode == "ReadWriteOncePod" {
            once_pod = true;
        } else {
            others = true;
        }
    }
    if once_pod && others {
        causes.push(Cause::forbidden(
            "spec.accessModes",
            "may not use ReadWriteOncePod with other access modes",
        ));
    }
    let storage_path = "spec.resources[storage]";
    match spec.pointer("/resources/requests/storage") {
        None => causes.push(Cause::required(storage_path)),
        Some(v) => match quantity::parse_value(v) {
            None => causes.push(Cause::invalid(storage_path, v, quantity::FORMAT_ERROR)),
            Some(q) if Some(&q) <= zero().as_ref() => causes.push(Cause::invalid(
                storage_path,
                &json!(q.to_string()),
                "must be greater than zero",
            )),
            Some(_) => {}
        },
    }
    let class = spec
        .get("storageClassName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !class.is_empty() {
        for msg in validation::is_dns1123_subdomain(class) {
            causes.push(Cause::invalid("spec.storageClassName", &json!(class), &msg));
        }
    }
    if let Some(mode) = spec.get("volumeMode").and_then(Value::as_str) {
        if !VOLUME_MODES.contains(&mode) {
            causes.push(Cause::not_supported(
                "spec.volumeMode",
                &json!(mode),
                VOLUME_MODES,
            ));
        }
    }
    causes
}

/// The update rules: the spec is fixed after creation except a first `volumeName` (and,
/// for a bound claim, the storage request and volume attributes class); the storage
/// request never shrinks; the volume mode is immutable.
fn validate_update(obj: &Value, old: &Value) -> Vec<Cause> {
    let mut causes = Vec::new();
    let empty = json!({});
    let new_spec = obj.get("spec").unwrap_or(&empty);
    let old_spec = old.get("spec").unwrap_or(&empty);
    let mut comparable_new = new_spec.clone();
    let mut comparable_old = old_spec.clone();
    let old_volume = old_spec
        .get("volumeName")
        .and_then(Value::as_str)
        .unwrap_or("");
    if old_volume.is_empty() {
        set_field(
            &mut comparable_old,
            "volumeName",
            new_spec.get("volumeName"),
        );
    }
    let bound = obj.pointer("/status/phase").and_then(Value::as_str) == Some("Bound");
    if bound {
        if let Some(requests) = comparable_new
            .pointer_mut("/resources/requests")
            .and_then(Value::as_object_mut)
        {
            match old_spec.pointer("/resources/requests/storage") {
                Some(v) => {
                    requests.insert("storage".into(), v.clone());
                }
                None => {
                    requests.remove("storage");
                }
            }
        }
        if comparable_new.get("volumeAttributesClassName").is_some() {
            set_field(
                &mut comparable_new,
                "volumeAttributesClassName",
                old_spec.get("volumeAttributesClassName"),
            );
        }
    }
    if !same_spec(&comparable_new, &comparable_old) {
        causes.push(Cause::forbidden(
            "spec",
            "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims",
        ));
    }
    let size = |v: &Value, at: &str| v.pointer(at).and_then(quantity::parse_value).or_else(zero);
    let new_size = size(new_spec, "/resources/requests/storage");
    // `RecoverVolumeExpansionFailure` (on in 1.32): a request may come back down, to just
    // above the capacity the volume reached.
    if new_size < size(old_spec, "/resources/requests/storage")
        && new_size <= size(old, "/status/capacity/storage")
    {
        causes.push(Cause::forbidden(
            "spec.resources.requests.storage",
            "field can not be less than status.capacity",
        ));
    }
    let mode = |s: &Value| s.get("volumeMode").cloned().unwrap_or(Value::Null);
    if mode(new_spec) != mode(old_spec) {
        causes.push(Cause::invalid(
            "volumeMode",
            &mode(new_spec),
            "field is immutable",
        ));
    }
    causes
}

fn zero() -> Option<Quantity> {
    Quantity::parse("0")
}

fn set_field(spec: &mut Value, field: &str, value: Option<&Value>) {
    if let Some(o) = spec.as_object_mut() {
        match value {
            Some(v) => {
                o.insert(field.into(), v.clone());
            }
            None => {
                o.remove(field);
            }
        }
    }
}

/// `Semantic.DeepEqual` of two specs as JSON holds them: in the form the type encodes
/// (a null or empty field is an absent one), quantities by value.
fn same_spec(a: &Value, b: &Value) -> bool {
    let canon = |s: &Value| {
        let mut claim = json!({"spec": s.clone()});
        stored_form::persistent_volume_claim(&mut claim);
        let mut s = claim["spec"].take();
        for list in ["requests", "limits"] {
            if let Some(m) = s
                .pointer_mut(&format!("/resources/{list}"))
                .and_then(Value::as_object_mut)
            {
                for v in m.values_mut() {
                    if let Some(c) = quantity::canonical(v) {
                        *v = Value::String(c);
                    }
                }
            }
        }
        s
    };
    canon(a) == canon(b)
}

#[cfg(test)]
mod tests;
