//! `kplane syncer`: runs the Jobs (and later other types) assigned to one SyncTarget on a
//! real Kubernetes cluster, the host, and carries their status back to kplane.
//!
//! The syncer talks to kplane only through the target's sync endpoint
//! (`/services/sync/<cluster>/<target>`, an ordinary Kubernetes API below it) with kube-rs,
//! and to the host with the standard APIs (batch/v1 Jobs, v1 Namespaces, Secrets,
//! ConfigMaps, ServiceAccounts). Its design:
//!
//! - **One leader** per target ([`lease`]): a Lease in the target's cluster; a second syncer
//!   waits and takes over when the Lease expires.
//! - **Level-triggered**: watches ([`watch`]) fill a cache of the assigned objects and queue
//!   keys ([`queue`]); workers reconcile a key from the cache against the host
//!   ([`reconcile`]), whatever event brought it. Host objects have deterministic names and
//!   carry the source's uid ([`naming`]), so a restart finds them instead of creating them
//!   again; a resync ([`sweep`]) removes what no source needs any more.
//! - **Type-specific rules in one place** ([`kinds`]): what the host sets itself, what is
//!   pushed down, what status comes back. The rest works on `DynamicObject`s.
//! - The pod template's references (`kplane_types::pod_refs`) are copied first ([`copies`]).
//! - Heartbeats and the drain on deletion are the SyncTarget's status ([`target`]);
//!   progress is on `/metrics` ([`metrics`]).
//! - Pods are reflected from the host ([`pods`], [`chosen_pods`]); their logs are read there
//!   for kplane's log requests ([`logs`]).

pub mod api_access;
pub mod chosen_pods;
pub mod clients;
pub mod copies;
pub mod error;
pub mod kinds;
pub mod lease;
pub mod logs;
pub mod metrics;
pub mod naming;
pub mod pods;
pub mod policies;
pub mod queue;
pub mod reconcile;
pub mod run;
pub mod state;
pub mod sweep;
pub mod target;
pub mod watch;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

pub use error::{Error, Result};
pub use run::run;

/// What `kplane syncer` was asked to do (validated flags).
#[derive(Debug, Clone)]
pub struct Settings {
    /// kubeconfig of the logical cluster that holds the SyncTarget.
    pub kubeconfig: PathBuf,
    /// Its context (default: the current one).
    pub context: Option<String>,
    /// The SyncTarget's name.
    pub target: String,
    /// The host's kubeconfig; `None`: in-cluster config.
    pub host_kubeconfig: Option<PathBuf>,
    /// One host namespace for everything (names made unique), instead of one per source
    /// namespace.
    pub host_namespace: Option<String>,
    /// Where `/metrics` and `/healthz` are served.
    pub metrics_bind: Option<SocketAddr>,
    pub resync: Duration,
    pub heartbeat: Duration,
    pub lease_duration: Duration,
    /// The Lease holder identity (the pod name in a Deployment).
    pub identity: String,
    /// `syncerVersion` in the SyncTarget's status.
    pub version: String,
    /// Concurrent reconciles.
    pub workers: usize,
    /// Whether synced pods' in-cluster API is their logical cluster (docs/sync.md).
    pub pod_api_access: bool,
    /// Whether the host pods of synced objects are reflected into kplane (docs/sync.md).
    pub pod_reflection: bool,
    /// The host namespaces whose pods a SyncTarget's `spec.reflectPods` may reflect (the
    /// host's operator decides, not the tenant who writes the SyncTarget); empty: none.
    pub reflect_host_namespaces: Vec<String>,
    /// The URL under which host pods reach kplane (`https://HOST[:PORT]`); default: the
    /// kubeconfig's server URL.
    pub pod_api_server: Option<String>,
}
