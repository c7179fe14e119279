//! The validated flags of `kplane syncer` ([`Settings`]).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

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
