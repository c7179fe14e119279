//! Each logical cluster's webhooks, cached: built from the cluster's two configuration
//! resources on first use (configurations sorted by name, as upstream's webhook managers
//! sort them, each configuration's webhooks in order) and dropped whenever one of them
//! changes: synchronously from the configurations' strategy hooks (a client's next write
//! sees its new webhook) and from the shared informer for every other path (another
//! replica's write, a workspace's deletion). A cluster without configurations shares one
//! empty entry, so a write there costs one lookup under a read lock.

use std::sync::{Arc, LazyLock};

use super::model::Webhook;
use crate::cluster_cache::{ClusterCache, ResourceInvalidator};

/// The storage resource of ValidatingWebhookConfigurations.
pub const VALIDATING_RESOURCE: &str =
    "admissionregistration.k8s.io/validatingwebhookconfigurations";
/// The storage resource of MutatingWebhookConfigurations.
pub const MUTATING_RESOURCE: &str = "admissionregistration.k8s.io/mutatingwebhookconfigurations";

/// A cluster's webhooks, in the order they are called.
#[derive(Debug, Default)]
pub struct ClusterWebhooks {
    pub mutating: Vec<Arc<Webhook>>,
    pub validating: Vec<Arc<Webhook>>,
}

impl ClusterWebhooks {
    /// Whether the cluster has no webhook at all.
    pub fn is_empty(&self) -> bool {
        self.mutating.is_empty() && self.validating.is_empty()
    }
}

pub(super) static EMPTY: LazyLock<Arc<ClusterWebhooks>> = LazyLock::new(Arc::default);

/// Webhooks by logical cluster name.
pub type Cache = ClusterCache<Arc<ClusterWebhooks>>;

/// The storage resources of the two configuration kinds.
pub const RESOURCES: &[&str] = &[VALIDATING_RESOURCE, MUTATING_RESOURCE];

/// Invalidates from the shared informer: any change of a webhook configuration.
pub type Invalidator = ResourceInvalidator<Arc<ClusterWebhooks>>;

/// Whether `resource` (a storage resource) holds webhook configurations.
pub fn is_configuration(resource: &str) -> bool {
    RESOURCES.contains(&resource)
}
