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

mod cache;
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

pub use cache::{assemble, is_policy_resource, Cache, ClusterPolicies, Invalidator, RESOURCES};
pub use dispatch::{request_resource, ValidatingAdmissionPolicy, PLUGIN};

/// The storage resource of ValidatingAdmissionPolicies.
pub const POLICY_RESOURCE: &str = "admissionregistration.k8s.io/validatingadmissionpolicies";
/// The storage resource of ValidatingAdmissionPolicyBindings.
pub const BINDING_RESOURCE: &str = "admissionregistration.k8s.io/validatingadmissionpolicybindings";
