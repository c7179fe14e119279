//! Per-logical-cluster quotas, enforced at write time (issue 31): how many objects a
//! logical cluster may hold (in all, and per resource) and how many bytes they may take.
//!
//! The limits of a cluster are its Workspace's `spec.quota` (set in the parent cluster,
//! so the tenant cannot raise them), field by field over the server's default
//! (`kplane serve --quota-objects`, `--quota-bytes`, `--quota-resource`); `root` has no
//! parent and no limit. The usage of a cluster is counted once from storage, on the first
//! write into it after start-up, and then maintained by [`QuotaStorage`], the storage
//! decorator every write of the registry passes: a create reserves its slot and bytes
//! inside the storage writer, at the moment its revision is assigned (so two concurrent
//! creates can never both take the last slot), a failed write gives them back, an update
//! moves the bytes by its size change, a delete frees both. Reads pass through untouched.
//!
//! This module owns the limits, the counts and the refusal's wording (upstream's
//! ResourceQuota admission: `exceeded quota: <name>, requested: <r>=1, used: <r>=N,
//! limited: <r>=N`); `storage.rs` owns the decorator.

mod model;
mod status;
mod storage;
#[cfg(test)]
mod tests;
mod workspaces;

pub use model::{
    resource_name, Limits, Quotas, Usage, BYTES, DEFAULT_QUOTA, OBJECTS, WORKSPACE_QUOTA,
};
pub(crate) use status::run as status_controller;
pub use status::STATUS_EVERY;
pub use storage::QuotaStorage;
