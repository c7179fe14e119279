//! kplane-apiserver: a Kubernetes-compatible API server with kcp-style logical clusters.
//!
//! Layers, each with one job (see docs/architecture.md):
//! - [`http`]: routing (including the `/clusters/<name>` prefix), authentication, content
//!   negotiation, request decoding, response encoding. No object semantics.
//! - registry (`kplane-registry`): object semantics (metadata, per-type strategies, preconditions,
//!   finalizers, namespaces, watches), over the `Storage` trait only.
//! - storage (`kplane-storage`): revisioned, durable, watchable bytes.
//!
//! Embed it with [`Server::builder`]; the `kplane` binary is a thin CLI over it.

pub mod audit;
pub mod backup;
pub mod client_ca;
pub(crate) mod conn_timeouts;
mod connection;
pub mod flowcontrol;
pub mod health_metrics;
pub mod http;
pub mod limits;
pub mod metrics;
pub mod pod_logs;
pub mod quotas;
pub mod server;
pub mod serviceaccount;
pub mod shared_credentials;
pub mod tls;
mod tls_files;
mod tls_reload;
/// Public only so that the fuzz target `tls_stream` (`crates/fuzz`) can drive the accept
/// path; the server's connection handling is its user.
#[doc(hidden)]
pub mod tls_stream;
pub mod version;
pub mod watchdog;
pub mod webhook_client;

pub use server::{Server, ServerBuilder, ServerConfig, ServerError};
pub use version::BuildInfo;

/// The registry crate, re-exported for embedders and tests.
pub use kplane_registry as registry;
