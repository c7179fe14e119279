//! Admission webhooks (admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration and
//! MutatingWebhookConfiguration), as kube-apiserver's `MutatingAdmissionWebhook` and
//! `ValidatingAdmissionWebhook` plugins call them, per logical cluster: a cluster's
//! configurations apply only to the requests of that cluster.
//!
//! - `config`: the configurations' defaults and validation (their strategy's rules);
//! - `model`: a webhook parsed once, its selectors compiled;
//! - `cache`: each cluster's webhooks, built on first use from storage and dropped on any
//!   change of its configurations (the strategy's after-write hooks and the shared
//!   informer), never read per request;
//! - `matching`: rules, `matchPolicy`, namespace and object selectors (then the
//!   compiled `matchConditions`, evaluated in `dispatch` with `kplane_schema::policy`);
//! - `review`: the AdmissionReview sent and the checks of the answer;
//! - `dispatch`: the two admission plugins (mutating webhooks in order, with JSON patches
//!   and one reinvocation round; validating webhooks in parallel).
//!
//! The registry knows no HTTP: a webhook is called through a [`WebhookTransport`], which
//! the server provides (`kplane-apiserver`'s HTTPS client) and tests replace. Each call
//! has its own timeout (`timeoutSeconds`); no lock is held across a call, so one
//! cluster's slow webhook delays only the requests that call it.
//!
//! Writes without a requester (kplane's own controllers and bootstrap) are not sent to
//! webhooks, and neither are writes of the webhook configurations themselves (upstream
//! exempts them too).

#[cfg(test)]
mod admission_tests;
pub mod cache;
pub mod config;
mod dispatch;
#[cfg(test)]
pub(crate) mod fake;
pub mod matching;
pub mod model;
pub mod review;
pub mod transport;

pub use cache::{MUTATING_RESOURCE, VALIDATING_RESOURCE};
pub use dispatch::{MutatingWebhooks, ValidatingWebhooks, MUTATING_PLUGIN, VALIDATING_PLUGIN};
pub use model::{ClientConfig, ServiceRef, Webhook};
pub use transport::{TransportResponse, WebhookTransport};

use std::sync::Arc;

use kplane_types::ClusterName;

use crate::error::ApiResult;
use crate::Registry;
use cache::{Cache, ClusterWebhooks, EMPTY};
use model::parse_configuration;

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
