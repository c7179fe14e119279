//! Server-side apply and `Update` recording over `metadata.managedFields`, with
//! upstream's behaviour around them: metadata fields nobody owns (`stripmeta`), the
//! `kubectl` client-side-apply upgrade (`lastappliedmanager` / `lastappliedupdater`),
//! client-supplied managedFields on updates, and the cap on `Update` entries.

use serde_json::{Map, Value};

use crate::apply_error::ApplyError;
use crate::conflict::{sort_conflicts, Conflict};
use crate::error::MergeError;
use crate::fieldset::{go_json, FieldSet};
use crate::managed::{ManagedFields, ManagedFieldsEntry, Operation, MAX_UPDATE_MANAGERS};
use crate::ssa::{strip_nulls, Walker};
use crate::types::TypeInfo;

/// `kubectl.kubernetes.io/last-applied-configuration`.
pub const LAST_APPLIED_ANNOTATION: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The manager whose applies upgrade client-side-apply ownership (upstream hard-codes it).
const KUBECTL: &str = "kubectl";

/// Who writes, how, and with which type information.
#[derive(Clone, Copy)]
pub struct Request<'a> {
    /// The field manager (`?fieldManager=`, or derived from the User-Agent).
    pub manager: &'a str,
    /// `group/version` (or `v1`) of the request: recorded in entries and conflicts.
    pub api_version: &'a str,
    /// `Some("status")` for writes through a subresource.
    pub subresource: Option<&'a str>,
    /// The time to record, RFC3339 with second precision (`2024-05-01T10:00:00Z`).
    pub now: &'a str,
    pub types: &'a dyn TypeInfo,
    /// Top-level fields this endpoint may not change (upstream `GetResetFields`):
    /// `["status"]` on the main resource of kinds with a status subresource, `["spec"]`
    /// (CRs: `["spec"]` as well) on `/status`. They are owned by nobody through this
    /// request and keep the live object's values in the result.
    pub reset_fields: &'a [&'a str],
}

impl<'a> Request<'a> {
    /// A request on the main resource without reset fields.
    pub fn new(
        manager: &'a str,
        api_version: &'a str,
        now: &'a str,
        types: &'a dyn TypeInfo,
    ) -> Self {
        Request {
            manager,
            api_version,
            subresource: None,
            now,
            types,
            reset_fields: &[],
        }
    }

    fn sub(&self) -> &'a str {
        self.subresource.unwrap_or("")
    }
}

/// Paths no manager owns (upstream `stripmeta.go`).
const STRIPPED: &[&[&str]] = &[
    &["f:apiVersion"],
    &["f:kind"],
    &["f:metadata"],
    &["f:metadata", "f:name"],
    &["f:metadata", "f:namespace"],
    &["f:metadata", "f:creationTimestamp"],
    &["f:metadata", "f:selfLink"],
    &["f:metadata", "f:uid"],
    &["f:metadata", "f:clusterName"],
    &["f:metadata", "f:generation"],
    &["f:metadata", "f:managedFields"],
    &["f:metadata", "f:resourceVersion"],
];

fn unmark(set: &mut FieldSet, path: &[&str]) {
    let Some((first, rest)) = path.split_first() else {
        return;
    };
    let Some(c) = set.child_mut(first) else {
        return;
    };
    if rest.is_empty() {
        c.set_member(false);
    } else {
        unmark(c, rest);
    }
    if !c.is_member() && c.is_empty() {
        set.remove(first);
    }
}

pub(crate) fn strip_meta(set: &mut FieldSet) {
    for p in STRIPPED {
        unmark(set, p);
    }
}

fn remove_top(set: &mut FieldSet, fields: &[&str]) {
    for f in fields {
        set.remove(&format!("f:{f}"));
    }
}

/// A copy of `v` without `metadata.managedFields` (not copied at all: it can be large).
fn without_managed_fields(v: &Value) -> Value {
    let Some(o) = v.as_object() else {
        return v.clone();
    };
    let mut out = Map::new();
    for (k, x) in o {
        match (k.as_str(), x) {
            ("metadata", Value::Object(meta)) => {
                let m: Map<String, Value> = meta
                    .iter()
                    .filter(|(mk, _)| mk.as_str() != "managedFields")
                    .map(|(mk, mv)| (mk.clone(), mv.clone()))
                    .collect();
                out.insert(k.clone(), Value::Object(m));
            }
            _ => {
                out.insert(k.clone(), x.clone());
            }
        }
    }
    Value::Object(out)
}

fn restore_reset(obj: &mut Value, live: Option<&Value>, fields: &[&str]) {
    let Some(o) = obj.as_object_mut() else { return };
    for f in fields {
        match live.and_then(|l| l.get(*f)) {
            Some(v) => {
                o.insert((*f).to_string(), v.clone());
            }
            None => {
                o.remove(*f);
            }
        }
    }
}

fn validate_applied(applied: &Value, req: &Request<'_>) -> Result<(), ApplyError> {
    if !applied.is_object() {
        return Err(ApplyError::BadRequest(
            "the applied configuration must be an object".into(),
        ));
    }
    if applied
        .pointer("/metadata/managedFields")
        .is_some_and(|v| !v.is_null())
    {
        return Err(ApplyError::BadRequest(
            "metadata.managedFields must be nil".into(),
        ));
    }
    if let Some(av) = applied.get("apiVersion").and_then(Value::as_str) {
        if av != req.api_version {
            return Err(ApplyError::BadRequest(format!(
                "Incorrect version specified in apply patch. Specified patch version: {av}, expected: {}",
                req.api_version
            )));
        }
    }
    Ok(())
}

/// Server-side apply: merges `applied` (the manager's whole intent) into `live` (`None`:
/// create-on-apply), removes what the manager applied before and applies no longer (unless
/// someone else owns it), checks the fields it would change against their other owners
/// (unless `force`, which takes them over) and records the manager's `Apply` entry.
///
/// Returns the new object with `metadata.managedFields` set. When the manager is
/// `kubectl` and the live object carries the client-side-apply annotation, conflicts on
/// fields whose live value still matches that annotation are taken over (the upgrade
/// kubectl relies on), and the annotation is refreshed from the applied configuration.
pub fn apply(
    live: Option<&Value>,
    applied: &Value,
    req: &Request<'_>,
    force: bool,
) -> Result<Value, ApplyError> {
    validate_applied(applied, req)?;
    let mut result = match apply_core(live, applied, req, force) {
        Err(ApplyError::Conflicts(cs)) if req.manager == KUBECTL => {
            let Some(allowed) = live.and_then(|l| allowed_from_last_applied(l, req)) else {
                return Err(ApplyError::Conflicts(cs));
            };
            let remaining: Vec<Conflict> =
                cs.into_iter().filter(|c| !allowed.has(&c.path)).collect();
            if !remaining.is_empty() {
                return Err(ApplyError::Conflicts(remaining));
            }
            apply_core(live, applied, req, true)?
        }
        other => other?,
    };
    if req.manager == KUBECTL && has_last_applied(&result) {
        set_last_applied(&mut result, applied);
    }
    Ok(result)
}

fn apply_core(
    live: Option<&Value>,
    applied: &Value,
    req: &Request<'_>,
    force: bool,
) -> Result<Value, ApplyError> {
    let w = Walker { types: req.types };
    let mut managed = live
        .map(ManagedFields::from_object_lenient)
        .unwrap_or_default();
    // The walkers skip metadata.managedFields: neither object needs stripping first.
    let mut new_set = w.field_set(applied, true).map_err(ApplyError::Typed)?;
    remove_top(&mut new_set, req.reset_fields);
    let mut merged = match live {
        Some(l) => w
            .merge(l, applied)
            .map_err(|e| ApplyError::Invalid(format!("failed to merge: {e}")))?,
        None => strip_nulls(&without_managed_fields(applied)),
    };
    restore_reset(&mut merged, live, req.reset_fields);

    let sub = req.sub();
    let own = managed.position(req.manager, Operation::Apply, req.api_version, sub);
    if let Some(i) = own {
        // Only what the manager owned and no longer applies can go.
        let stale = managed.entries[i].fields.difference(&new_set);
        if !stale.is_empty() {
            let mut owned = new_set.clone();
            for (j, e) in managed.entries.iter().enumerate() {
                if j != i {
                    owned.union_with(&e.fields);
                }
            }
            w.prune(&mut merged, &stale, &owned);
        }
    }

    let empty = req.types.empty_object();
    let base = live.unwrap_or(&empty);
    let (changed, removed) = w.compare(base, &merged, req.reset_fields);

    let mut conflicts = Vec::new();
    for (j, e) in managed.entries.iter().enumerate() {
        if Some(j) == own {
            continue;
        }
        let c = e.fields.intersection(&changed);
        conflicts.extend(c.paths().into_iter().map(|p| Conflict::new(e, p)));
    }
    if !force && !conflicts.is_empty() {
        sort_conflicts(&mut conflicts);
        return Err(ApplyError::Conflicts(conflicts));
    }
    for (j, e) in managed.entries.iter_mut().enumerate() {
        if Some(j) != own {
            e.fields.subtract(&changed);
            e.fields.subtract(&removed);
        }
    }

    strip_meta(&mut new_set);
    let object_changed = !changed.is_empty() || !removed.is_empty();
    match own {
        Some(i) => {
            let e = &mut managed.entries[i];
            e.fields = new_set;
            e.api_version = req.api_version.to_string();
            if object_changed {
                e.time = Some(req.now.to_string());
            }
        }
        None => managed.entries.push(ManagedFieldsEntry {
            manager: req.manager.to_string(),
            operation: Operation::Apply,
            api_version: req.api_version.to_string(),
            subresource: sub.to_string(),
            time: object_changed.then(|| req.now.to_string()),
            fields: new_set,
        }),
    }
    managed.drop_empty();
    managed.cap_update_managers(MAX_UPDATE_MANAGERS);
    managed.write_into(&mut merged);
    Ok(merged)
}

/// Records a non-apply write (create, update, JSON/merge/strategic patch): the fields that
/// changed from `old` (`None`: a create) to `new` become the manager's (its `Update` entry
/// for this API version and subresource) and are taken from every other owner; removed
/// fields are dropped from every entry. Writes the result into `new`'s managedFields.
///
/// As upstream, managedFields the client sent in `new` are honoured on the main resource
/// when they decode and are non-empty (how kubectl's client-side-apply upgrade rewrites
/// ownership), `[{}]` clears them, and otherwise (and always through a subresource) the
/// old object's are kept.
pub fn record_update(
    old: Option<&Value>,
    new: &mut Value,
    req: &Request<'_>,
) -> Result<(), MergeError> {
    if !new.is_object() {
        return Err(MergeError::bad_request("the object must be a JSON object"));
    }
    let from_old = || {
        old.map(ManagedFields::from_object_lenient)
            .unwrap_or_default()
    };
    let supplied = new.pointer("/metadata/managedFields").cloned();
    let mut managed = match supplied {
        _ if req.subresource.is_some() => from_old(),
        Some(v) if is_reset_managed_fields(&v) => ManagedFields::default(),
        Some(v) => match ManagedFields::decode(&v) {
            Ok(m) if !m.entries.is_empty() => m,
            _ => from_old(),
        },
        None => from_old(),
    };
    if let Some(Value::Object(meta)) = new.get_mut("metadata") {
        meta.remove("managedFields");
    }
    restore_reset(new, old, req.reset_fields);
    let empty = req.types.empty_object();
    let base = old.unwrap_or(&empty);
    let w = Walker { types: req.types };
    let (changed, removed) = w.compare(base, new, req.reset_fields);
    for e in &mut managed.entries {
        e.fields.subtract(&changed);
        e.fields.subtract(&removed);
    }
    let mut own = changed;
    strip_meta(&mut own);
    if !own.is_empty() {
        let sub = req.sub();
        match managed.position(req.manager, Operation::Update, req.api_version, sub) {
            Some(i) => {
                let e = &mut managed.entries[i];
                e.fields.union_with(&own);
                e.time = Some(req.now.to_string());
            }
            None => managed.entries.push(ManagedFieldsEntry {
                manager: req.manager.to_string(),
                operation: Operation::Update,
                api_version: req.api_version.to_string(),
                subresource: sub.to_string(),
                time: Some(req.now.to_string()),
                fields: own,
            }),
        }
    }
    managed.drop_empty();
    managed.cap_update_managers(MAX_UPDATE_MANAGERS);
    managed.write_into(new);
    Ok(())
}

/// `[{}]`: the client asks to clear managedFields.
fn is_reset_managed_fields(v: &Value) -> bool {
    matches!(v.as_array().map(Vec::as_slice), Some([Value::Object(m)]) if m.is_empty())
}

fn last_applied(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/annotations")?
        .get(LAST_APPLIED_ANNOTATION)?
        .as_str()
}

fn has_last_applied(obj: &Value) -> bool {
    last_applied(obj).is_some_and(|s| !s.is_empty())
}

/// Fields of the last-applied annotation whose live values still match it: conflicts on
/// them are client-side-apply ownership `kubectl` may take over.
fn allowed_from_last_applied(live: &Value, req: &Request<'_>) -> Option<FieldSet> {
    let text = last_applied(live).filter(|s| !s.is_empty())?;
    let la: Value = serde_json::from_str(text).ok()?;
    if la.get("apiVersion").and_then(Value::as_str) != Some(req.api_version) {
        return None;
    }
    let w = Walker { types: req.types };
    let set = w.field_set(&la, false).ok()?;
    let (changed, removed) = w.compare(&la, live, &[]);
    let mut allowed = set.difference(&changed);
    allowed.subtract(&removed);
    Some(allowed)
}

/// Sets the annotation to the applied configuration (without the annotation itself),
/// encoded as kubectl and the apiserver encode it (Go JSON, trailing newline).
fn set_last_applied(result: &mut Value, applied: &Value) {
    let mut cfg = applied.clone();
    if let Some(Value::Object(ann)) = cfg.pointer_mut("/metadata/annotations") {
        ann.remove(LAST_APPLIED_ANNOTATION);
    }
    let text = format!("{}\n", go_json(&cfg));
    let Some(meta) = result.get_mut("metadata").and_then(Value::as_object_mut) else {
        return;
    };
    let ann = meta
        .entry("annotations")
        .or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(ann) = ann {
        ann.insert(LAST_APPLIED_ANNOTATION.to_string(), Value::String(text));
    }
}
