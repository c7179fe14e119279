//! Each logical cluster's webhooks, cached: built from the cluster's two configuration
//! resources on first use (configurations sorted by name, as upstream's webhook managers
//! sort them, each configuration's webhooks in order) and dropped whenever one of them
//! changes: synchronously from the configurations' strategy hooks (a client's next write
//! sees its new webhook) and from the shared informer for every other path (another
//! replica's write, a workspace's deletion). A cluster without configurations shares one
//! empty entry, so a write there costs one lookup under a read lock.

use std::sync::{Arc, LazyLock};

use kplane_storage::{KeyValue, ListOptions, Prefix};
use kplane_types::ClusterName;
use serde_json::Value;

use super::model::{parse_configuration, Webhook};
use super::{MUTATING_RESOURCE, VALIDATING_RESOURCE};
use crate::cluster_cache::ClusterCache;
use crate::controllers::informer::InformerHandler;
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
#[derive(Debug, Default)]
pub struct Cache(ClusterCache<Arc<ClusterWebhooks>>);

impl Cache {
    /// Forgets `cluster`'s webhooks.
    pub fn invalidate(&self, cluster: &str) {
        self.0.invalidate(cluster);
    }

    /// Entries built from storage so far (tests).
    pub fn builds(&self) -> u64 {
        self.0.builds()
    }
}

/// Invalidates from the shared informer: any change of a webhook configuration.
#[derive(Debug)]
pub struct Invalidator(pub Arc<Cache>);

impl InformerHandler for Invalidator {
    fn on_resync(&self) {
        self.0 .0.clear();
    }

    fn on_object(&self, kv: &KeyValue, _deleted: bool, replay: bool) {
        if !replay && is_configuration(&kv.key.resource) {
            self.0.invalidate(&kv.key.cluster);
        }
    }
}

/// Whether `resource` (a storage resource) holds webhook configurations.
pub fn is_configuration(resource: &str) -> bool {
    resource == VALIDATING_RESOURCE || resource == MUTATING_RESOURCE
}

impl Registry {
    /// The webhook cache (shared with the informer's invalidator).
    pub fn webhook_cache(&self) -> &Arc<Cache> {
        &self.webhooks
    }

    /// The webhooks of `cluster`.
    pub async fn cluster_webhooks(&self, cluster: &ClusterName) -> ApiResult<Arc<ClusterWebhooks>> {
        if let Some(e) = self.webhooks.0.get(cluster.as_str()) {
            return Ok(e);
        }
        // Taken before any read, so that nothing read before an invalidation is stored.
        let generation = self.webhooks.0.generation();
        let built = ClusterWebhooks {
            mutating: self.read_webhooks(cluster, MUTATING_RESOURCE).await?,
            validating: self.read_webhooks(cluster, VALIDATING_RESOURCE).await?,
        };
        let entry = if built.is_empty() {
            EMPTY.clone()
        } else {
            Arc::new(built)
        };
        Ok(self.webhooks.0.insert(cluster.as_str(), entry, generation))
    }

    /// The webhooks of `cluster`'s configurations stored under `resource`, the
    /// configurations by name (storage lists in key order, which is name order).
    async fn read_webhooks(
        &self,
        cluster: &ClusterName,
        resource: &str,
    ) -> ApiResult<Vec<Arc<Webhook>>> {
        let prefix = Prefix::resource(cluster.as_str(), resource);
        let res = self
            .storage
            .list(&prefix, &ListOptions::default(), None)
            .await?;
        let mut configs: Vec<Value> = res
            .items
            .iter()
            .filter_map(|kv| serde_json::from_slice::<Value>(&kv.value).ok())
            .collect();
        configs.sort_by(|a, b| {
            let name = |o: &Value| {
                o.pointer("/metadata/name")
                    .and_then(Value::as_str)
                    .map(str::to_string)
            };
            name(a).cmp(&name(b))
        });
        Ok(configs
            .iter()
            .flat_map(parse_configuration)
            .map(Arc::new)
            .collect())
    }
}
