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
mod object;
mod pod_api;
mod pod_state;
pub mod pods;
pub mod policies;
pub mod queue;
pub mod reconcile;
pub mod run;
mod settings;
pub mod state;
pub mod sweep;
pub mod target;
pub mod watch;

pub use error::{Error, Result};
pub use run::run;
pub use settings::Settings;
