//! A Workspace's creator becomes the admin of its logical cluster.
//!
//! [`WorkspaceOwner`] (a mutating admission plugin) records the user who creates a
//! Workspace in the annotation [`OWNER_ANNOTATION`] (whatever the request said; a write
//! without a requesting user, such as a template's, records none) and keeps it as it was
//! on every update: it is immutable. Before the workspace controller reports the Workspace
//! Ready, it creates in the child cluster the ClusterRoleBinding [`OWNER_BINDING`] of that
//! user to the ClusterRole `cluster-admin` ([`Registry::bind_workspace_owner`]); an
//! existing binding of that name is left as it is.

use serde_json::{json, Value};

use crate::admission::chain::{Attributes, MutatingAdmission, Operation};
use crate::error::{ApiError, ApiResult};
use crate::meta;
use crate::strategies::workspace::TENANCY_GROUP;
use crate::{Registry, Target};
use kplane_types::ClusterName;

/// The annotation naming a Workspace's creator.
pub const OWNER_ANNOTATION: &str = "tenancy.kplane.io/owner";
/// The ClusterRoleBinding making the creator `cluster-admin` of the new workspace.
pub const OWNER_BINDING: &str = "workspace-admin";

/// Records and keeps a Workspace's creator.
#[derive(Debug)]
pub struct WorkspaceOwner;

fn owner_of(obj: &Value) -> Option<&str> {
    obj.pointer("/metadata/annotations")
        .and_then(|a| a.get(OWNER_ANNOTATION))
        .and_then(Value::as_str)
}

fn set_owner(obj: &mut Value, owner: Option<&str>) -> ApiResult<()> {
    let m = meta::meta_mut(obj)?;
    match owner {
        Some(o) => {
            let a = m.entry("annotations").or_insert_with(|| json!({}));
            if !a.is_object() {
                *a = json!({});
            }
            a[OWNER_ANNOTATION] = json!(o);
        }
        None => {
            if let Some(Value::Object(a)) = m.get_mut("annotations") {
                a.remove(OWNER_ANNOTATION);
                if a.is_empty() {
                    m.remove("annotations");
                }
            }
        }
    }
    Ok(())
}

#[async_trait::async_trait]
impl MutatingAdmission<Registry> for WorkspaceOwner {
    fn name(&self) -> &'static str {
        "WorkspaceOwner"
    }

    fn handles(&self, op: Operation) -> bool {
        matches!(op, Operation::Create | Operation::Update)
    }

    async fn admit(
        &self,
        _reg: &Registry,
        a: &Attributes<'_>,
        obj: Option<&mut Value>,
    ) -> ApiResult<()> {
        if a.resource.group != TENANCY_GROUP || a.resource.plural != "workspaces" {
            return Ok(());
        }
        let Some(obj) = obj else { return Ok(()) };
        let owner = match (a.operation, a.old) {
            (Operation::Create, _) => a.user.map(|u| u.username.clone()),
            (_, Some(old)) => owner_of(old).map(str::to_string),
            _ => return Ok(()),
        };
        if owner_of(obj) == owner.as_deref() {
            return Ok(());
        }
        set_owner(obj, owner.as_deref().filter(|o| !o.is_empty()))
    }
}

impl Registry {
    /// The `ClusterRoleBinding` that makes the creator of `workspace` (its owner
    /// annotation) `cluster-admin` of its logical cluster `child`, and where it goes; `None`
    /// when the Workspace names no owner.
    pub(crate) fn workspace_owner_binding(
        &self,
        child: &ClusterName,
        workspace: &Value,
    ) -> ApiResult<Option<(Target, Value)>> {
        let Some(owner) = owner_of(workspace).filter(|o| !o.is_empty()) else {
            return Ok(None);
        };
        let rt = self
            .builtin_catalog()
            .get("rbac.authorization.k8s.io", "v1", "clusterrolebindings")
            .cloned()
            .ok_or_else(|| ApiError::internal("clusterrolebindings are not registered"))?;
        let binding = json!({
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "ClusterRoleBinding",
            "metadata": {"name": OWNER_BINDING},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
            "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": owner}],
        });
        Ok(Some((Target::new(child, rt, None), binding)))
    }

    /// Binds the creator of `workspace` (its owner annotation) as `cluster-admin` of its
    /// logical cluster `child`, unless a binding of that name is there already. (The
    /// workspace controller writes the binding with the cluster's default namespaces:
    /// [`Registry::workspace_owner_binding`].)
    #[cfg(test)]
    pub(crate) async fn bind_workspace_owner(
        &self,
        child: &ClusterName,
        workspace: &Value,
        manager: &str,
    ) -> ApiResult<()> {
        let Some((t, binding)) = self.workspace_owner_binding(child, workspace)? else {
            return Ok(());
        };
        match self
            .create(
                &t,
                binding,
                &crate::options::WriteParams::controller_named(manager),
            )
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.code() == 409 => Ok(()),
            Err(e) => Err(e),
        }
    }
}
