//! RBAC per logical cluster: Kubernetes' role-based access control evaluated from the
//! Role, ClusterRole, RoleBinding and ClusterRoleBinding objects stored in each logical
//! cluster, above the default roles every cluster has ([`defaults`]).
//!
//! - [`rules`]: one PolicyRule and whether it allows a request (upstream's matchers);
//! - [`policy`]: a cluster's compiled objects, indexed by subject, and their evaluation
//!   (`authorize`, the rules of a SelfSubjectRulesReview);
//! - [`cache`]: compiled layers per cluster, built lazily, invalidated by RBAC writes;
//! - [`covers`]: whether held rules cover granted ones (the escalation check's core);
//! - [`owner`]: a Workspace's creator recorded at create and bound as `cluster-admin` of
//!   the new workspace.
//!
//! Scope: bindings in one logical cluster grant access to that cluster only. A request
//! across clusters (`/clusters/*`, `/clusters/root:a:*`) is evaluated against the
//! ClusterRoleBindings of the subtree's root (`root` for `*`): RoleBindings do not count
//! there. A user whose credential is bound to a logical cluster (the extra
//! [`BOUND_CLUSTER_EXTRA`], set on ServiceAccount tokens) is denied everywhere else,
//! whatever any binding says.
//!
//! No HTTP here: the server's authorizer (apiserver `http/authz.rs`) calls
//! [`Rbac::authorize`] and [`Rbac::rules`] (`Registry::rbac`).

pub mod cache;
pub mod chain;
pub mod covers;
pub mod defaults;
pub mod owner;
pub mod policy;
pub mod resources;
pub mod rules;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use kplane_storage::{ListOptions, Prefix};
use kplane_types::{ClusterName, ClusterScope, RequestInfo, UserInfo};
use serde_json::Value;

pub use policy::{Layer, Policy, Role, Verdict};
pub use resources::{CLUSTER_ROLES, CLUSTER_ROLE_BINDINGS, RBAC_RESOURCES, ROLES, ROLE_BINDINGS};
pub use rules::Rule;

use crate::error::{ApiError, ApiResult};
use crate::Registry;

/// The user extra naming the one logical cluster a credential is valid in (ServiceAccount
/// tokens carry it).
pub const BOUND_CLUSTER_EXTRA: &str = "authentication.kplane.io/cluster";

/// Why `user` may not act on `scope` at all: its credential is bound to another logical
/// cluster (or to one, and `scope` spans several). `None` when it may.
pub fn bound_cluster_violation(user: &UserInfo, scope: &ClusterScope) -> Option<String> {
    let bound = user.extra.get(BOUND_CLUSTER_EXTRA)?;
    match scope {
        ClusterScope::One(c) if bound.iter().any(|b| b == c.as_str()) => None,
        _ => Some(format!(
            "kplane: the credential of {:?} is bound to the logical cluster {}",
            user.username,
            bound.join(", ")
        )),
    }
}

impl Registry {
    /// The work of [`Rbac::cache`](crate::rbac::Rbac::cache).
    pub(crate) fn rbac_cache(&self) -> &Arc<cache::Cache> {
        &self.rbac
    }

    /// `cluster`'s compiled RBAC objects, from the cache or (once) from storage.
    pub(crate) async fn rbac_layer(&self, cluster: &ClusterName) -> ApiResult<Arc<Layer>> {
        if let Some(l) = self.rbac.get(cluster.as_str()) {
            return Ok(l);
        }
        let generation = self.rbac.generation();
        let layer = self.load_rbac_layer(cluster).await?;
        Ok(self.rbac.insert(cluster.as_str(), layer, generation))
    }

    /// Reads `cluster`'s four RBAC resources at one revision and compiles them.
    async fn load_rbac_layer(&self, cluster: &ClusterName) -> ApiResult<Layer> {
        let mut at = None;
        let mut read = Vec::with_capacity(4);
        for resource in RBAC_RESOURCES {
            let opts = ListOptions {
                at_revision: at,
                ..Default::default()
            };
            let prefix = Prefix::resource(cluster.as_str(), *resource);
            let res = self.storage.list(&prefix, &opts, None).await?;
            at = Some(res.revision);
            let objs: Vec<Value> = res
                .items
                .iter()
                .filter_map(|kv| serde_json::from_slice::<Value>(&kv.value).ok())
                .collect();
            read.push(objs);
        }
        let [cluster_roles, roles, crbs, rbs]: [Vec<Value>; 4] = read
            .try_into()
            .map_err(|_| ApiError::internal("RBAC read incomplete"))?;
        let cluster_roles = cluster_roles
            .iter()
            .map(|v| Arc::new(Role::from_json(v)))
            .collect();
        let roles = roles
            .iter()
            .map(|v| {
                let ns = v
                    .pointer("/metadata/namespace")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                (ns, Arc::new(Role::from_json(v)))
            })
            .collect();
        Ok(Layer::build(
            cluster_roles,
            roles,
            &crbs,
            &rbs,
            Some(defaults::layer()),
        ))
    }

    /// The work of [`Rbac::authorize`](crate::rbac::Rbac::authorize).
    pub(crate) async fn rbac_authorize(&self, user: &UserInfo, request: &RequestInfo) -> Verdict {
        if let Some(why) = bound_cluster_violation(user, &request.cluster) {
            return Verdict::Deny(why);
        }
        let (cluster, cluster_wide_only) = match &request.cluster {
            ClusterScope::One(c) => (c.clone(), false),
            ClusterScope::Wildcard => (ClusterName::root(), true),
            ClusterScope::Subtree { root, .. } => (root.clone(), true),
        };
        match self.rbac_layer(&cluster).await {
            Ok(layer) => Policy {
                cluster: &layer,
                defaults: defaults::layer(),
            }
            .authorize(user, request, cluster_wide_only),
            Err(e) => Verdict::NoOpinion(format!("RBAC: {}", e.0.message)),
        }
    }

    /// The rules of the role a binding in `cluster` refers to (`kind` `Role` or
    /// `ClusterRole`; a Role in `namespace`): `Err(text)` when it does not exist.
    pub(crate) async fn rbac_role_ref_rules(
        &self,
        cluster: &ClusterName,
        kind: &str,
        name: &str,
        namespace: Option<&str>,
    ) -> ApiResult<Result<Vec<Rule>, String>> {
        let layer = self.rbac_layer(cluster).await?;
        Ok(Policy {
            cluster: &layer,
            defaults: defaults::layer(),
        }
        .role_ref_rules(kind, name, namespace)
        .map(<[Rule]>::to_vec))
    }

    /// The work of [`Rbac::rules`](crate::rbac::Rbac::rules).
    pub(crate) async fn rbac_rules(
        &self,
        cluster: &ClusterScope,
        user: &UserInfo,
        namespace: Option<&str>,
    ) -> ApiResult<(Vec<Rule>, Vec<String>)> {
        if bound_cluster_violation(user, cluster).is_some() {
            return Ok((Vec::new(), Vec::new()));
        }
        let (c, namespace) = match cluster {
            ClusterScope::One(c) => (c.clone(), namespace),
            ClusterScope::Wildcard => (ClusterName::root(), None),
            ClusterScope::Subtree { root, .. } => (root.clone(), None),
        };
        let layer = self.rbac_layer(&c).await?;
        Ok(Policy {
            cluster: &layer,
            defaults: defaults::layer(),
        }
        .rules_for(user, namespace))
    }
}

/// RBAC as the authorizer and the self-reviews ask it: what a [`Registry`] offers of
/// [`crate::rbac`].
#[derive(Clone, Copy, Debug)]
pub struct Rbac<'a>(&'a Registry);

impl Registry {
    /// The registry's RBAC authorizer ([`Rbac`]).
    pub fn rbac(&self) -> Rbac<'_> {
        Rbac(self)
    }
}

impl Rbac<'_> {
    /// RBAC's decision on `request` by `user` (see the module doc for the scope rules).
    pub async fn authorize(&self, user: &UserInfo, request: &RequestInfo) -> Verdict {
        self.0.rbac_authorize(user, request).await
    }

    /// The rules RBAC grants `user` in `namespace` of `cluster`, and the errors met (roles
    /// that bindings name but that do not exist): a SelfSubjectRulesReview's answer.
    pub async fn rules(
        &self,
        cluster: &ClusterScope,
        user: &UserInfo,
        namespace: Option<&str>,
    ) -> ApiResult<(Vec<Rule>, Vec<String>)> {
        self.0.rbac_rules(cluster, user, namespace).await
    }

    /// The RBAC layer cache (shared with the informer's invalidator).
    pub fn cache(&self) -> &Arc<cache::Cache> {
        self.0.rbac_cache()
    }
}
