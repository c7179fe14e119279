//! `SyncerScope`: the admission plugin that bounds what a sync endpoint's identity
//! (`system:kplane:syncer:<cluster>/<target>`, [`super::TargetRef::user`]) may write,
//! whatever reached the registry. The endpoint refuses everything else before; this is
//! the check that holds at write time, on the object as stored:
//!
//! - create: only Leases (the syncer's leader election);
//! - update (and patch, apply) of a Lease or of a SyncTarget's status: allowed;
//! - update of any other object: the stored object must be assigned to the identity's
//!   target (annotation `sync.kplane.io/target`), and through the main resource the
//!   change may only add or remove the finalizer `sync.kplane.io/syncer`
//!   ([`finalizer_only_change`]), through `/status` only the status
//!   ([`status_only_change`]; the type's status strategy already keeps most of the rest);
//! - delete: never;
//! - but Pods (the reflections of the target's host pods, `super::pods`): created when they
//!   carry the target's annotation and a controller ownerReference to a Job assigned to
//!   the target, updated (also through `/status`) and deleted when they carry the
//!   annotation (before and after an update).

use kplane_types::{Cause, Status};
use serde_json::Value;

use super::pods;
use super::spec::{TargetRef, SYNCER_FINALIZER, SYNC_GROUP, TARGET_ANNOTATION};
use crate::admission::chain::{forbidden, Attributes, Operation, ValidatingAdmission};
use crate::error::{ApiError, ApiResult};
use crate::Registry;

#[derive(Debug)]
pub struct SyncerScope;

/// Whether `a` addresses the syncer's Lease type (`coordination.k8s.io` leases).
fn is_lease(a: &Attributes<'_>) -> bool {
    a.resource.group == "coordination.k8s.io" && a.resource.plural == "leases"
}

fn is_sync_target(a: &Attributes<'_>) -> bool {
    a.resource.group == SYNC_GROUP && a.resource.plural == "synctargets"
}

fn is_pod(a: &Attributes<'_>) -> bool {
    pods::is_pods(&a.resource.group, &a.resource.version, &a.resource.plural)
}

/// A write of a Pod by the syncer of target `id`: only its own target's reflections.
async fn pod_write(
    reg: &Registry,
    a: &Attributes<'_>,
    id: &str,
    obj: Option<&Value>,
) -> ApiResult<()> {
    let reflects = |v: Option<&Value>| v.is_some_and(|v| pods::target_of(v) == id);
    match a.operation {
        Operation::Create => {
            let pod = obj.unwrap_or(&Value::Null);
            reg.sync_checks().check_pod_owner(a.cluster, a.namespace, pod, id)
                .await
        }
        Operation::Update if reflects(a.old) && reflects(obj) => Ok(()),
        Operation::Delete if reflects(a.old) => Ok(()),
        _ => Err(forbidden(
            a,
            &format!("the pod is not a reflection of a pod of the sync target {id} (annotation {TARGET_ANNOTATION})"),
        )),
    }
}

/// The metadata fields the server maintains on every write (never the writer's change).
const SERVER_METADATA: [&str; 3] = ["managedFields", "resourceVersion", "generation"];

fn finalizers(obj: &Value) -> Vec<&str> {
    obj.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// The first field in which `new` differs from `old` (`spec`, `metadata.labels`, ...),
/// leaving out the top-level fields `skip` and the metadata fields `skip_meta`.
fn first_change(old: &Value, new: &Value, skip: &[&str], skip_meta: &[&str]) -> Option<String> {
    let empty = serde_json::Map::new();
    let fields = |v: &Value, at: &str| -> Vec<String> {
        v.pointer(at)
            .and_then(Value::as_object)
            .unwrap_or(&empty)
            .keys()
            .cloned()
            .collect()
    };
    let mut keys = fields(old, "");
    keys.extend(fields(new, ""));
    keys.sort();
    keys.dedup();
    for k in keys.iter().filter(|k| !skip.contains(&k.as_str())) {
        if k != "metadata" {
            if old.get(k) != new.get(k) {
                return Some(k.clone());
            }
            continue;
        }
        let mut meta = fields(old, "/metadata");
        meta.extend(fields(new, "/metadata"));
        meta.sort();
        meta.dedup();
        for mk in meta.iter().filter(|k| !skip_meta.contains(&k.as_str())) {
            let at = |v: &'_ Value| v.get("metadata").and_then(|m| m.get(mk)).cloned();
            if at(old) != at(new) {
                return Some(format!("metadata.{mk}"));
            }
        }
    }
    None
}

/// Checks that `new` differs from `old` only in the finalizer `sync.kplane.io/syncer`
/// (added or removed) and in the fields the server maintains; otherwise names the first
/// field that changed (`spec`, `metadata.labels`, `metadata.finalizers`, ...).
pub fn finalizer_only_change(old: &Value, new: &Value) -> Result<(), String> {
    let others = |v: &Value| -> Vec<String> {
        finalizers(v)
            .into_iter()
            .filter(|n| *n != SYNCER_FINALIZER)
            .map(str::to_string)
            .collect()
    };
    if others(old) != others(new) {
        return Err("metadata.finalizers".into());
    }
    let mut skip_meta = SERVER_METADATA.to_vec();
    skip_meta.push("finalizers");
    match first_change(old, new, &[], &skip_meta) {
        None => Ok(()),
        Some(field) => Err(field),
    }
}

/// Checks that `new` differs from `old` only in `status` and in the fields the server
/// maintains (what a write through `/status` may change); otherwise names the field.
pub fn status_only_change(old: &Value, new: &Value) -> Result<(), String> {
    match first_change(old, new, &["status"], &SERVER_METADATA) {
        None => Ok(()),
        Some(field) => Err(field),
    }
}

#[async_trait::async_trait]
impl ValidatingAdmission<Registry> for SyncerScope {
    fn name(&self) -> &'static str {
        "SyncerScope"
    }

    fn handles(&self, _op: Operation) -> bool {
        true
    }

    async fn validate(
        &self,
        reg: &Registry,
        a: &Attributes<'_>,
        obj: Option<&Value>,
    ) -> ApiResult<()> {
        let Some(id) = a.user.and_then(TargetRef::id_of_user) else {
            return Ok(());
        };
        if is_pod(a) {
            return pod_write(reg, a, id, obj).await;
        }
        match a.operation {
            Operation::Create if is_lease(a) => Ok(()),
            Operation::Update if is_lease(a) => Ok(()),
            Operation::Update if is_sync_target(a) && a.subresource == Some("status") => Ok(()),
            Operation::Update if !is_sync_target(a) => {
                let old = a.old.unwrap_or(&Value::Null);
                let assigned = old
                    .pointer("/metadata/annotations")
                    .and_then(|m| m.get(TARGET_ANNOTATION))
                    .and_then(Value::as_str)
                    == Some(id);
                if !assigned {
                    return Err(forbidden(
                        a,
                        &format!("the object is not assigned to the sync target {id}"),
                    ));
                }
                let new = obj.unwrap_or(&Value::Null);
                let (checked, what) = match a.subresource {
                    None => (
                        finalizer_only_change(old, new),
                        format!("only the finalizer {SYNCER_FINALIZER} may be added or removed, and the status written through /status"),
                    ),
                    Some(_) => (
                        status_only_change(old, new),
                        "only the status may be written through /status".to_string(),
                    ),
                };
                match checked {
                    Ok(()) => Ok(()),
                    Err(field) => Err(ApiError::from(Status::invalid(
                        &a.resource.group,
                        &a.resource.kind,
                        a.name,
                        vec![Cause::forbidden(
                            field,
                            &format!("may not be changed through the sync endpoint: {what}"),
                        )],
                    ))),
                }
            }
            op => Err(forbidden(
                a,
                &format!(
                    "the sync endpoint's identity may not {} this resource",
                    op.as_str().to_lowercase()
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(finalizers: &[&str]) -> Value {
        json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "j", "namespace": "d", "resourceVersion": "5",
                "annotations": {"sync.kplane.io/target": "root/east"},
                "finalizers": finalizers},
            "spec": {"suspend": false, "template": {"spec": {"containers": [{"name": "c"}]}}},
            "status": {"active": 1}
        })
    }

    #[test]
    fn only_the_syncer_finalizer_may_change() {
        let old = job(&["a", SYNCER_FINALIZER]);
        // Removing it, adding it back, and server-maintained fields changing: fine.
        let mut new = job(&["a"]);
        new["metadata"]["resourceVersion"] = json!("6");
        new["metadata"]["managedFields"] = json!([{"manager": "syncer"}]);
        assert_eq!(finalizer_only_change(&old, &new), Ok(()));
        assert_eq!(finalizer_only_change(&new, &old), Ok(()));
        assert_eq!(finalizer_only_change(&old, &old.clone()), Ok(()));
        // Another finalizer, a label, the annotation, the spec, the status: refused.
        let f = job(&[SYNCER_FINALIZER]);
        assert_eq!(
            finalizer_only_change(&old, &f).unwrap_err(),
            "metadata.finalizers"
        );
        let mut l = old.clone();
        l["metadata"]["labels"] = json!({"x": "y"});
        assert_eq!(
            finalizer_only_change(&old, &l).unwrap_err(),
            "metadata.labels"
        );
        let mut an = old.clone();
        an["metadata"]["annotations"] = json!({});
        assert_eq!(
            finalizer_only_change(&old, &an).unwrap_err(),
            "metadata.annotations"
        );
        let mut s = old.clone();
        s["spec"]["suspend"] = json!(true);
        assert_eq!(finalizer_only_change(&old, &s).unwrap_err(), "spec");
        let mut st = old.clone();
        st["status"] = json!({"succeeded": 1});
        assert_eq!(finalizer_only_change(&old, &st).unwrap_err(), "status");
        let mut gone = old.clone();
        gone.as_object_mut().unwrap().remove("spec");
        assert_eq!(finalizer_only_change(&old, &gone).unwrap_err(), "spec");
    }

    #[test]
    fn only_the_status_may_change_through_status() {
        let old = job(&[SYNCER_FINALIZER]);
        let mut st = old.clone();
        st["status"] = json!({"succeeded": 1});
        st["metadata"]["resourceVersion"] = json!("9");
        assert_eq!(status_only_change(&old, &st), Ok(()));
        let mut an = st.clone();
        an["metadata"]["annotations"] = json!({});
        assert_eq!(
            status_only_change(&old, &an).unwrap_err(),
            "metadata.annotations"
        );
        let mut f = st.clone();
        f["metadata"]["finalizers"] = json!([]);
        assert_eq!(
            status_only_change(&old, &f).unwrap_err(),
            "metadata.finalizers"
        );
        let mut sp = st;
        sp["spec"]["suspend"] = json!(true);
        assert_eq!(status_only_change(&old, &sp).unwrap_err(), "spec");
    }
}
