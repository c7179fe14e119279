//! ValidatingAdmissionPolicy and ValidatingAdmissionPolicyBinding
//! (admissionregistration.k8s.io/v1), as kube-apiserver's `ValidatingAdmissionPolicy`
//! plugin applies them, per logical cluster: a cluster's policies and bindings apply only
//! to the requests of that cluster.
//!
//! - `config`: the two kinds' defaults and validation (every expression compiled);
//! - `model`: a policy and a binding parsed once, expressions compiled;
//! - `cache`: each cluster's bound policies, built on first use and dropped on any change
//!   (never read per request);
//! - `matching`: `matchConstraints` / `matchResources` (rules, exclusions, resource names,
//!   `matchPolicy`; the selectors are the webhooks');
//! - `evaluate`: match conditions, validations, messages and audit annotations of one
//!   policy for one request and param, under upstream's runtime cost limits;
//! - `dispatch`: the plugin (bindings, params, validation actions, the refusal);
//! - [`status`]: the status controller (`status.typeChecking`, `observedGeneration`).
//!
//! The CEL environment is `kplane_schema::policy`'s.

pub(crate) mod cache;
pub mod config;
mod dispatch;
mod evaluate;
pub mod matching;
pub mod model;
pub mod status;

#[cfg(test)]
mod authz_tests;
#[cfg(test)]
mod tests;

pub use cache::{
    assemble, is_policy_resource, Cache, ClusterPolicies, Invalidator, BINDING_RESOURCE,
    POLICY_RESOURCE, RESOURCES,
};
pub use dispatch::{request_resource, ValidatingAdmissionPolicy, PLUGIN};

use std::sync::Arc;

use kplane_types::ClusterName;

use crate::error::ApiResult;
use crate::Registry;

impl Registry {
    /// The policy cache (shared with the informer's invalidator).
    pub(crate) fn policy_cache(&self) -> &Arc<Cache> {
        &self.policies
    }

    /// The policies of `cluster`.
    pub(crate) async fn cluster_policies(
        &self,
        cluster: &ClusterName,
    ) -> ApiResult<Arc<ClusterPolicies>> {
        if let Some(e) = self.policies.get(cluster.as_str()) {
            return Ok(e);
        }
        // taken before any read, so that nothing read before an invalidation is stored
        let generation = self.policies.generation();
        let bindings = self.stored_objects(cluster, BINDING_RESOURCE).await?;
        let entry = if bindings.is_empty() {
            cache::EMPTY.clone()
        } else {
            let policies = self.stored_objects(cluster, POLICY_RESOURCE).await?;
            Arc::new(assemble(&policies, &bindings))
        };
        Ok(self.policies.insert(cluster.as_str(), entry, generation))
    }
}
