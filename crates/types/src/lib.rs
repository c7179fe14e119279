//! kplane-types: the shared vocabulary of kplane, with no IO.
//!
//! Holds what every layer talks about: `metav1.Status` and field errors, logical cluster
//! names, label and field selectors, Kubernetes name/label validation, the references of a
//! pod spec (`pod_refs`), and the attributes of a request (who asks, for what: `UserInfo`,
//! `RequestInfo`, `Verb`). It must never depend on the HTTP stack, on storage, or on any
//! runtime.

pub mod cluster;
pub mod fields;
pub mod labels;
pub mod pod_refs;
pub mod request;
pub mod status;
pub mod validation;

pub use cluster::{ClusterName, ClusterScope};
pub use request::{RequestInfo, UserInfo, Verb};
pub use status::{Cause, CauseType, Status, StatusReason};
