//! admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy and
//! ValidatingAdmissionPolicyBinding (`pkg/registry/admissionregistration/
//! validatingadmissionpolicy*`): the rules are in `policies::config`; this is how they
//! plug into the write path. A policy has a generation and a `/status` (a new policy's
//! status is empty; the main endpoint keeps the stored one); after every write the
//! cluster's cached policies are dropped (`policies::cache`), so the writer's next request
//! already goes through the new policy or binding.

use kplane_types::Cause;
use serde_json::Value;

use crate::catalog::ResourceType;
use crate::policies::config;
use crate::strategy::TypeStrategy;

/// Which of the two kinds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyKind {
    Policy,
    Binding,
}

/// The strategy of both kinds.
#[derive(Debug)]
pub struct AdmissionPolicy(pub PolicyKind);

impl TypeStrategy for AdmissionPolicy {
    fn has_generation(&self) -> bool {
        true
    }

    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        match self.0 {
            PolicyKind::Policy => config::default_policy(obj),
            PolicyKind::Binding => config::default_binding(obj),
        }
    }

    fn prepare_for_create(&self, _rt: &ResourceType, obj: &mut Value) {
        if self.0 == PolicyKind::Policy {
            if let Some(o) = obj.as_object_mut() {
                o.remove("status");
            }
        }
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        match self.0 {
            PolicyKind::Policy => config::validate_policy(obj, old),
            PolicyKind::Binding => config::validate_binding(obj),
        }
    }
}
