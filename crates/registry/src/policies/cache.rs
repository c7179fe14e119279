//! Each logical cluster's policies with their bindings, cached as the webhooks are
//! (`webhooks::cache`): built from the cluster's two resources on first use, every
//! expression compiled then, and dropped whenever a policy or binding of the cluster
//! changes (the type's after-write hooks for the writer's next request, the shared
//! informer for every other path). A cluster without policies shares one empty entry.

use std::sync::{Arc, LazyLock};

use serde_json::Value;

use super::model::{parse_binding, parse_policy, Binding, Policy};
use crate::cluster_cache::{ClusterCache, ResourceInvalidator};

/// The storage resource of ValidatingAdmissionPolicies.
pub const POLICY_RESOURCE: &str = "admissionregistration.k8s.io/validatingadmissionpolicies";
/// The storage resource of ValidatingAdmissionPolicyBindings.
pub const BINDING_RESOURCE: &str = "admissionregistration.k8s.io/validatingadmissionpolicybindings";

/// A policy and the bindings naming it, by name.
#[derive(Debug)]
pub struct Bound {
    pub policy: Policy,
    pub bindings: Vec<Binding>,
}

/// A cluster's policies (by name) that have at least one binding.
#[derive(Debug, Default)]
pub struct ClusterPolicies {
    pub policies: Vec<Bound>,
}

pub(super) static EMPTY: LazyLock<Arc<ClusterPolicies>> = LazyLock::new(Arc::default);

/// Policies by logical cluster name.
pub type Cache = ClusterCache<Arc<ClusterPolicies>>;

/// The storage resources of policies and bindings.
pub const RESOURCES: &[&str] = &[POLICY_RESOURCE, BINDING_RESOURCE];

/// Invalidates from the shared informer: any change of a policy or a binding.
pub type Invalidator = ResourceInvalidator<Arc<ClusterPolicies>>;

/// Whether `resource` (a storage resource) holds policies or bindings.
pub fn is_policy_resource(resource: &str) -> bool {
    RESOURCES.contains(&resource)
}

/// The policies that have bindings, each with its bindings (both in name order).
pub fn assemble(policies: &[Value], bindings: &[Value]) -> ClusterPolicies {
    let policy_of = |b: &Value| {
        b.pointer("/spec/policyName")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string()
    };
    let mut out: Vec<Bound> = policies
        .iter()
        .map(parse_policy)
        .filter_map(|policy| {
            let mine: Vec<Binding> = bindings
                .iter()
                .filter(|b| policy_of(b) == policy.name)
                .map(parse_binding)
                .collect();
            (!mine.is_empty()).then_some(Bound {
                policy,
                bindings: mine,
            })
        })
        .collect();
    out.sort_by(|a, b| a.policy.name.cmp(&b.policy.name));
    for p in &mut out {
        p.bindings.sort_by(|a, b| a.name.cmp(&b.name));
    }
    ClusterPolicies { policies: out }
}
