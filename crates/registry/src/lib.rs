//! The registry: Kubernetes object semantics over the storage trait.
//!
//! Handlers call the registry with an already-routed target (cluster, resource type,
//! namespace) and decoded JSON; the registry applies metadata rules, the type's strategy
//! ([`TypeStrategy`]), the admission chain ([`admission::Admission`]), preconditions and
//! conversions, and talks to storage only through [`Storage`].
//! It knows nothing about HTTP: errors are [`ApiError`]s (a `metav1.Status`), options are
//! [`options`]' plain structs, request bodies arrive decoded.

pub mod admission;
pub mod apply;
pub mod archive;
pub mod audit_annotations;
pub mod builtin_types;
pub mod builtins;
mod bulk_delete;
pub mod catalog;
pub mod catalogs;
pub mod changes;
pub mod cluster_cache;
pub mod cluster_states;
pub mod clusters;
pub mod conditions;
pub mod continue_token;
pub mod controllers;
pub mod conversion;
pub mod crd;
mod crd_form;
pub mod custom;
mod derived;
mod encode;
pub mod error;
pub mod events;
pub mod field_labels;
mod go_cidr;
mod job;
mod job_policies;
mod job_status;
mod json_map;
mod key_order;
mod label_selector;
pub mod managed;
pub mod meta;
pub mod name_rule;
pub mod namespaces;
mod network_policy;
pub mod options;
pub mod patch;
mod pod;
mod pod_defaults;
pub mod pod_logs;
mod pod_template;
pub mod policies;
mod precondition;
#[cfg(test)]
mod precondition_tests;
mod pvc;
pub mod quantity;
pub mod quota;
pub mod rbac;
mod read;
pub mod resource_quota;
pub mod selection;
pub use store_status::StoreFigures;
mod store_status;
mod stored_form;
pub mod strategies;
pub mod strategy;
pub mod sync;
pub mod token_bindings;
pub mod token_request;
pub mod typed;
pub mod warnings;
mod watch;
pub mod webhooks;
pub mod wildcard;
mod write;

#[cfg(test)]
mod fault_tests;
#[cfg(test)]
mod replica_tests;
#[cfg(test)]
mod size_tests;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

mod assembly;
pub mod hooks;
mod registry;
mod target;

pub(crate) use registry::{corrupt, to_api};
pub use registry::{storage_error, Registry};
pub use target::Target;

pub use catalog::{Catalog, ResourceType};
pub use error::{ApiError, ApiResult};
pub use read::{CompleteList, ListPage, LIST_BATCH};
pub use strategy::{Conversion, TypeStrategy};
pub use watch::{WatchItem, WatchSetup, WatchType};
pub use write::{DeleteOutcome, DeleteParams};

pub use crate::error::too_large_rv;
