//! admissionregistration.k8s.io/v1 ValidatingWebhookConfiguration and
//! MutatingWebhookConfiguration (`pkg/registry/admissionregistration/*webhookconfiguration`):
//! the rules are in `webhooks::config` (defaults, validation); this is how they plug into
//! the write path. A generation counting changes of `webhooks`, no status, and after every
//! write the cluster's cached webhooks are dropped (`webhooks::cache`), so the writer's
//! next request already goes through the new configuration.

use kplane_types::Cause;
use serde_json::Value;

use crate::catalog::ResourceType;
use crate::strategy::TypeStrategy;
use crate::webhooks::config::{self, Kind};

/// The strategy of both configuration kinds.
#[derive(Debug)]
pub struct WebhookConfiguration(pub Kind);

impl TypeStrategy for WebhookConfiguration {
    fn has_generation(&self) -> bool {
        true
    }

    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        config::default(self.0, obj);
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        config::validate(self.0, obj, old)
    }
}
