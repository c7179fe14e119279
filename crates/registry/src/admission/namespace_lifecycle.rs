//! `NamespaceLifecycle` (upstream `plugin/pkg/admission/namespace/lifecycle`): the
//! namespaces every cluster starts with may not be deleted, and nothing is created in a
//! namespace that does not exist or is being terminated. Namespaces themselves, and
//! cluster-scoped resources, are always admitted. Updates are not checked (kplane never
//! did; upstream refuses them only in a missing namespace, which a stored object's update
//! cannot hit). A namespace written in the same storage batch before the object
//! (`Attributes::new_namespace`) counts as existing.

use kplane_types::{Cause, CauseType, Status, StatusReason};
use serde_json::Value;

use super::chain::{Attributes, MutatingAdmission, Operation};
use crate::error::{ApiError, ApiResult};
use crate::{meta, Registry, Target};

/// Namespaces that may never be deleted.
const IMMORTAL: &[&str] = &["default", "kube-system", "kube-public"];

#[derive(Debug)]
pub struct NamespaceLifecycle;

#[async_trait::async_trait]
impl MutatingAdmission<Registry> for NamespaceLifecycle {
    fn name(&self) -> &'static str {
        "NamespaceLifecycle"
    }

    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Delete)
    }

    async fn admit(
        &self,
        reg: &Registry,
        a: &Attributes<'_>,
        _obj: Option<&mut Value>,
    ) -> ApiResult<()> {
        let rt = a.resource;
        let is_namespace = rt.group.is_empty() && rt.plural == "namespaces";
        if is_namespace {
            if a.operation == Operation::Delete && IMMORTAL.contains(&a.name) {
                return Err(ApiError::from(Status::new(
                    StatusReason::Forbidden,
                    format!(
                        "namespaces \"{}\" is forbidden: this namespace may not be deleted",
                        a.name
                    ),
                )));
            }
            return Ok(());
        }
        if a.operation != Operation::Create || !rt.namespaced {
            return Ok(());
        }
        if let Some(ns) = a.new_namespace {
            // Written just before the object, in the same batch.
            return match meta::is_deleting(ns) {
                true => Err(terminating(a)),
                false => Ok(()),
            };
        }
        let nst = Target {
            cluster: kplane_types::ClusterScope::One(a.cluster.clone()),
            rt: reg.namespace_type()?,
            namespace: None,
        };
        let ns = a.namespace;
        let Some(kv) = reg.get_stored(&nst, ns).await? else {
            return Err(ApiError::from(Status::not_found("", "namespaces", ns)));
        };
        let obj: Value = serde_json::from_slice(&kv.value).map_err(|e| crate::corrupt(&e))?;
        if meta::is_deleting(&obj) {
            return Err(terminating(a));
        }
        Ok(())
    }
}

/// 403 with a `NamespaceTerminating` cause, as upstream.
fn terminating(a: &Attributes<'_>) -> ApiError {
    let (rt, ns, name) = (a.resource, a.namespace, a.name);
    let mut s = Status::new(
        StatusReason::Forbidden,
        format!(
            "{} \"{name}\" is forbidden: unable to create new content in namespace {ns} because it is being terminated",
            rt.plural
        ),
    );
    s.details = Some(kplane_types::status::Details {
        name: name.into(),
        group: rt.group.clone(),
        kind: rt.plural.clone(),
        causes: vec![Cause::new(
            CauseType::NamespaceTerminating,
            "metadata.namespace",
            format!("namespace {ns} is being terminated"),
        )],
        ..Default::default()
    });
    ApiError::from(s)
}
