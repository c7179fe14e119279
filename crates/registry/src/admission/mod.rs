//! The admission chain, as kube-apiserver's: after a write request is decoded and before
//! it is stored, mutating plugins may change the object and validating plugins may refuse
//! it. The order within a write follows upstream's handlers and `registry.Store`:
//!
//! 1. defaulting and the writer's managedFields entry,
//! 2. **mutating admission** (`MutatingAdmission::admit`, in chain order),
//! 3. the type's strategy (`PrepareForCreate`/`PrepareForUpdate`), generic metadata rules
//!    and validation, so that whatever a mutating plugin did is validated,
//! 4. **validating admission** (`ValidatingAdmission::validate`, in chain order) on the
//!    object exactly as it would be stored,
//! 5. dry-run returns here; otherwise storage.
//!
//! A delete (and each object of a deletecollection) runs both phases on the stored object
//! after its preconditions are checked, before it is marked or removed. Create, update,
//! patch and server-side apply all reach storage through the same create and update steps,
//! so they all pass the chain; a retried write (a generated name taken, a conflict) passes
//! it again. Dry-run requests run the chain (plugins see `Attributes::dry_run`) and store
//! nothing.
//!
//! The chain is part of the [`Registry`] (`Registry::with_admission`, chosen by the server
//! builder); [`Admission::recommended`] is the default: the plugins whose checks the write
//! path has always made ([`NamespaceLifecycle`]), the refusal of pod writes but the
//! syncers' ([`PodReflection`]), the recording of a Workspace's creator
//! (`crate::rbac::owner::WorkspaceOwner`), the assignment of new objects to SyncTargets
//! ([`SyncAssignment`]) and RBAC's escalation checks ([`RbacEscalation`]).

pub(crate) mod chain;
mod namespace_lifecycle;
mod pod_reflection;
mod rbac_escalation;

#[cfg(test)]
mod tests;

use std::sync::Arc;

use crate::Registry;

pub use chain::{
    forbidden, Attributes, MutatingAdmission, Operation, RequestOptions, UserInfo,
    ValidatingAdmission,
};

/// kplane's admission chain ([`chain::Admission`] for the [`Registry`]).
pub type Admission = chain::Admission<Registry>;

pub use crate::sync::admission::SyncAssignment;
pub use namespace_lifecycle::NamespaceLifecycle;
pub use pod_reflection::{PodReflection, REFUSAL as POD_REFUSAL};
pub use rbac_escalation::RbacEscalation;

impl Admission {
    /// The default chain: [`NamespaceLifecycle`], then [`PodReflection`] (only syncers
    /// write pods), then `WorkspaceOwner` (a Workspace's creator, `rbac::owner`), then
    /// [`SyncAssignment`] (which SyncTarget a new object goes to), then the validating
    /// [`RbacEscalation`] (RBAC's escalation and bind checks), `SyncerScope` (what the
    /// sync endpoint's identity may write, `crate::sync`) and `ResourceQuota` (Kubernetes
    /// ResourceQuotas' object counts, `crate::resource_quota::admission`).
    pub fn recommended() -> Self {
        Self::none()
            .with_mutating(Arc::new(NamespaceLifecycle))
            .with_mutating(Arc::new(PodReflection))
            .with_mutating(Arc::new(crate::rbac::owner::WorkspaceOwner))
            .with_mutating(Arc::new(SyncAssignment))
            .with_validating(Arc::new(RbacEscalation))
            .with_validating(Arc::new(crate::sync::SyncerScope))
            .with_validating(Arc::new(
                crate::resource_quota::admission::ResourceQuotaAdmission::default(),
            ))
    }

    /// Appends the admission webhook plugins (`MutatingAdmissionWebhook` last among the
    /// mutating plugins; `ValidatingAdmissionPolicy` then `ValidatingAdmissionWebhook`
    /// last among the validating ones but `ResourceQuota`, which stays last, as
    /// kube-apiserver orders them, so that a request a webhook refuses is not counted),
    /// calling webhooks through `transport`.
    pub fn with_webhooks(mut self, transport: Arc<dyn crate::webhooks::WebhookTransport>) -> Self {
        self.transport = Some(transport.clone());
        let quota = crate::resource_quota::admission::PLUGIN;
        let last: Vec<_> = self
            .validating
            .iter()
            .filter(|p| p.name() == quota)
            .cloned()
            .collect();
        self.validating.retain(|p| p.name() != quota);
        let mut chain = self
            .with_mutating(Arc::new(crate::webhooks::MutatingWebhooks::new(
                transport.clone(),
            )))
            .with_validating(Arc::new(crate::policies::ValidatingAdmissionPolicy))
            .with_validating(Arc::new(crate::webhooks::ValidatingWebhooks::new(
                transport,
            )));
        chain.validating.extend(last);
        chain
    }
}
