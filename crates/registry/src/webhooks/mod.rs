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

pub use dispatch::{MutatingWebhooks, ValidatingWebhooks, MUTATING_PLUGIN, VALIDATING_PLUGIN};
pub use model::{ClientConfig, ServiceRef, Webhook};
pub use transport::{TransportResponse, WebhookTransport};

/// The storage resource of ValidatingWebhookConfigurations.
pub const VALIDATING_RESOURCE: &str =
    "admissionregistration.k8s.io/validatingwebhookconfigurations";
/// The storage resource of MutatingWebhookConfigurations.
pub const MUTATING_RESOURCE: &str = "admissionregistration.k8s.io/mutatingwebhookconfigurations";
