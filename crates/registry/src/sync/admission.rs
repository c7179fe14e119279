//! `SyncAssignment`: which SyncTarget a new object goes to (issue 15's contract).
//!
//! On CREATE of an object whose group and resource a SyncTarget syncs, the applicable
//! targets are, nearest cluster first (`sync::targets`, cached per cluster): the object's
//! own cluster's SyncTargets, then those of each ancestor cluster with
//! `includeDescendants`, by name within a cluster; only targets not being deleted whose
//! `namespaceSelector` (if any) matches the labels of the object's namespace (a
//! cluster-scoped object matches only targets without a selector). The first one wins: the
//! object gets the annotation `sync.kplane.io/target: <target-cluster>/<target-name>` and
//! the finalizer `sync.kplane.io/syncer`, so one object goes to at most one target.
//!
//! A requester may name an applicable target itself (another than the first); naming
//! one that does not apply is a 422. On UPDATE the annotation is immutable: adding,
//! changing or removing it is a 422. The server's own writes (no requester), kplane's
//! internal identities (user names `system:kplane:...`: the sync controllers, the sync
//! endpoint's syncer identity) and members of `system:masters` are not checked: an
//! annotation they set is kept as it is (a host stand-in's copies carry the annotation as
//! the syncer wrote it), and their objects without one are assigned like anyone's.
//!
//! A cluster without applicable SyncTargets costs one cache lookup per create.

use kplane_types::{Cause, Status};
use serde_json::{json, Value};

use crate::admission::chain::{Attributes, MutatingAdmission, Operation, UserInfo};
use crate::error::{ApiError, ApiResult};
use crate::sync::spec::{SYNCER_FINALIZER, TARGET_ANNOTATION};
use crate::{meta, Registry};

/// The user name prefix of kplane's internal identities.
pub const INTERNAL_USER_PREFIX: &str = "system:kplane:";

const FIELD: &str = "metadata.annotations[sync.kplane.io/target]";

#[derive(Debug)]
pub struct SyncAssignment;

#[async_trait::async_trait]
impl MutatingAdmission<Registry> for SyncAssignment {
    fn name(&self) -> &'static str {
        "SyncAssignment"
    }

    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }

    async fn admit(
        &self,
        reg: &Registry,
        a: &Attributes<'_>,
        obj: Option<&mut Value>,
    ) -> ApiResult<()> {
        let Some(obj) = obj else {
            return Ok(());
        };
        if !a.resource.is_stored() {
            return Ok(());
        }
        let privileged = privileged(a.user);
        match a.operation {
            Operation::Create if privileged && annotation(obj).is_some() => Ok(()),
            Operation::Create => assign(reg, a, obj).await,
            Operation::Update if privileged => Ok(()),
            Operation::Update => {
                let before = a.old.and_then(annotation);
                let after = annotation(obj);
                if before == after {
                    return Ok(());
                }
                Err(invalid(
                    a,
                    after.map_or(Value::Null, |v| json!(v)),
                    "field is immutable",
                ))
            }
            _ => Ok(()),
        }
    }
}

/// Whether `user` may set the annotation freely (see the module doc).
pub fn privileged(user: Option<&UserInfo>) -> bool {
    user.is_none_or(|u| {
        u.username.starts_with(INTERNAL_USER_PREFIX) || u.in_group("system:masters")
    })
}

/// The annotation's value on `obj`.
fn annotation(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(TARGET_ANNOTATION))
        .and_then(Value::as_str)
}

async fn assign(reg: &Registry, a: &Attributes<'_>, obj: &mut Value) -> ApiResult<()> {
    let requested = annotation(obj).map(str::to_string);
    let rt = a.resource;
    let namespace = rt.namespaced.then_some(a.namespace);
    let applicable = reg
        .applicable_sync_targets_in(a.cluster, &rt.group, &rt.plural, namespace, a.new_namespace)
        .await?;
    let chosen = match &requested {
        None => match applicable.first() {
            Some(t) => t.reference(),
            None => return Ok(()),
        },
        Some(v) if applicable.iter().any(|t| t.reference() == *v) => v.clone(),
        Some(v) => {
            let detail = match applicable.first() {
                None => "no SyncTarget applies to this object".to_string(),
                Some(_) => format!(
                    "not a SyncTarget that applies to this object (applicable: {})",
                    applicable
                        .iter()
                        .map(|t| t.reference())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            };
            return Err(invalid(a, json!(v), &detail));
        }
    };
    let m = meta::meta_mut(obj)?;
    let annotations = m.entry("annotations").or_insert_with(|| json!({}));
    if !annotations.is_object() {
        *annotations = json!({});
    }
    annotations[TARGET_ANNOTATION] = json!(chosen);
    let fins = m.entry("finalizers").or_insert_with(|| json!([]));
    if !fins.is_array() {
        *fins = json!([]);
    }
    if let Value::Array(f) = fins {
        if !f.iter().any(|x| x == SYNCER_FINALIZER) {
            f.push(json!(SYNCER_FINALIZER));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;

/// A 422 on the annotation.
fn invalid(a: &Attributes<'_>, value: Value, detail: &str) -> ApiError {
    let rt = a.resource;
    ApiError::from(Status::invalid(
        &rt.group,
        &rt.kind,
        a.name,
        vec![Cause::invalid(FIELD, &value, detail)],
    ))
}
