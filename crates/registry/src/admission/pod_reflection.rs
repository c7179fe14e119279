//! `PodReflection`: Pods in kplane are reflections of pods on a host cluster, written by
//! the syncer of the SyncTarget whose Job they belong to (docs/sync.md). A create, update,
//! patch or apply of a pod, or of its status, is refused with 403 Forbidden unless it comes
//! from a sync endpoint identity (`system:kplane:syncer:<cluster>/<target>`, which
//! `SyncerScope` confines to its own target's pods) or from kplane itself (a write without
//! a requester: the garbage collector dropping an owner reference). Deletes are left to
//! RBAC: deleting a reflected pod is how a user restarts it (the syncer then deletes the
//! host pod, and the host's Job controller makes a new one).
//!
//! A mutating-phase plugin that changes nothing, as upstream's `NodeRestriction`, so that
//! the refusal comes before validation: a user's pod is refused for who writes it, not for
//! what it says.

use serde_json::Value;

use super::chain::{forbidden, Attributes, MutatingAdmission, Operation};
use crate::error::ApiResult;
use crate::sync::TargetRef;
use crate::Registry;

/// Why a pod write is refused (after `pods "<name>" is forbidden: `).
pub const REFUSAL: &str =
    "pods in kplane are reflections of pods on a host cluster, written by its syncer";

#[derive(Debug)]
pub struct PodReflection;

#[async_trait::async_trait]
impl MutatingAdmission<Registry> for PodReflection {
    fn name(&self) -> &'static str {
        "PodReflection"
    }

    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }

    async fn admit(
        &self,
        _reg: &Registry,
        a: &Attributes<'_>,
        _obj: Option<&mut Value>,
    ) -> ApiResult<()> {
        let is_pod = a.resource.group.is_empty() && a.resource.plural == "pods";
        match a.user {
            Some(user) if is_pod && TargetRef::id_of_user(user).is_none() => {
                Err(forbidden(a, REFUSAL))
            }
            _ => Ok(()),
        }
    }
}
