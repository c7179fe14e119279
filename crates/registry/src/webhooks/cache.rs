//! Each logical cluster's webhooks, cached: built from the cluster's two configuration
//! resources on first use (configurations sorted by name, as upstream's webhook managers
//! sort them, each configuration's webhooks in order) and dropped whenever one of them
//! changes: synchronously from the configurations' strategy hooks (a client's next write
//! sees its new webhook) and from the shared informer for every other path (another
//! replica's write, a workspace's deletion). A cluster without configurations shares one
//! empty entry, so a write there costs one lookup under a read lock.

use std::sync::{Arc, LazyLock};

use kplane_types::ClusterName;

use super::model::{parse_configuration, Webhook};
use super::{MUTATING_RESOURCE, VALIDATING_RESOURCE};
use crate::cluster_cache::{ClusterCache, ResourceInvalidator};
use crate::error::ApiResult;
use crate::Registry;

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

static EMPTY: LazyLock<Arc<ClusterWebhooks>> = LazyLock::new(Arc::default);

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

impl Registry {
    /// The webhook cache (shared with the informer's invalidator).
    pub(crate) fn webhook_cache(&self) -> &Arc<Cache> {
        &self.webhooks
    }

    /// The webhooks of `cluster`.
    pub(crate) async fn cluster_webhooks(
        &self,
        cluster: &ClusterName,
    ) -> ApiResult<Arc<ClusterWebhooks>> {
        if let Some(e) = self.webhooks.get(cluster.as_str()) {
            return Ok(e);
        }
        // Taken before any read, so that nothing read before an invalidation is stored.
        let generation = self.webhooks.generation();
        let built = ClusterWebhooks {
            mutating: self.read_webhooks(cluster, MUTATING_RESOURCE).await?,
            validating: self.read_webhooks(cluster, VALIDATING_RESOURCE).await?,
        };
        let entry = if built.is_empty() {
            EMPTY.clone()
        } else {
            Arc::new(built)
        };
        Ok(self.webhooks.insert(cluster.as_str(), entry, generation))
    }

    /// The webhooks of `cluster`'s configurations stored under `resource`, the
    /// configurations in name order.
    async fn read_webhooks(
        &self,
        cluster: &ClusterName,
        resource: &str,
    ) -> ApiResult<Vec<Arc<Webhook>>> {
        Ok(self
            .stored_objects(cluster, resource)
            .await?
            .iter()
            .flat_map(parse_configuration)
            .map(Arc::new)
            .collect())
    }
}
