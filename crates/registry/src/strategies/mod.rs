//! Each type's implementation of [`TypeStrategy`] (the contract is `strategy.rs`), calling
//! the type's own modules where it has them (`job`, `network_policy`, `pod`, `crd`,
//! `custom`, `stored_form`). A new type (a Workspace, a SyncTarget) is a new
//! implementation, not a new branch of the generic path.

mod admission_policy;
mod config_map;
mod core_event;
mod crd;
mod custom;
mod events_v1;
mod job;
mod lease;
mod namespace;
mod network_policy;
mod pod;
mod pod_template;
mod pvc;
mod rbac;
mod resource_quota;
mod review;
mod secret;
mod service_account;
mod webhook_configuration;
pub mod workspace;
pub mod workspace_template;

pub use crate::sync::strategy::SyncTarget;
pub use admission_policy::{AdmissionPolicy, PolicyKind};
pub use config_map::ConfigMap;
pub use core_event::CoreEvent;
pub use crd::CustomResourceDefinition;
pub use custom::{Custom, CustomConversion};
pub use events_v1::{EventsV1Conversion, EventsV1Event};
pub use job::Job;
pub use lease::Lease;
pub use namespace::Namespace;
pub use network_policy::NetworkPolicy;
pub use pod::Pod;
pub use pod_template::PodTemplate;
pub use pvc::PersistentVolumeClaim;
pub use rbac::Rbac;
pub use resource_quota::ResourceQuota;
pub use review::Review;
pub use secret::Secret;
pub use service_account::ServiceAccount;
pub use webhook_configuration::WebhookConfiguration;
pub use workspace::Workspace;
pub use workspace_template::WorkspaceTemplate;
