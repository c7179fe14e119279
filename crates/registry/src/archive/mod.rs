//! Server-side export and import of logical clusters (issue 16), over the archive format
//! of `kplane-archive`.
//!
//! - `export.rs`: [`crate::Registry::export`], one consistent revision of a cluster (and
//!   its descendants) streamed as archive bytes in bounded chunks.
//! - `verify.rs`: the full verification pass an import makes before it writes anything
//!   (format and checksum, every record decodes and agrees with its key, every resource
//!   servable once the archive's CRDs exist, CRDs valid).
//! - `import.rs`: [`crate::Registry::import`]: the checks against the target, the write
//!   pass in bounded batches (into the target when it is new, into a hidden staging
//!   pseudo-cluster when it replaces an existing one), rollback on failure.
//! - `journal.rs`: the durable import journal, claimed by whoever works on the import,
//!   and the flip (staging → target, floors, existence, catalogs, the Workspace in the
//!   parent).
//! - `recovery.rs`: the resolution of a journal whose owner is gone, rolled back (before
//!   the point of no return) or forward (after it): at start-up and on the leader.
//! - `staged.rs`: the target side of the online move: a staged import (hidden, kept
//!   across restarts), the source's changes applied to it, then the same flip.
//!
//! The cluster states an import passes through are in `cluster_states.rs`.

pub(crate) mod common;
mod export;
mod import;
mod journal;
mod recovery;
mod staged;
mod verify;

pub use common::{ImportSummary, IMPORT_BATCH};
pub use export::{ExportStream, EXPORT_CHUNK};
#[cfg(test)]
pub(crate) use journal::Step;
pub(crate) use journal::{journal_phases, Journal, JOURNAL_CLUSTER, JOURNAL_RESOURCE};
pub use staged::{AppliedChanges, StagedImport};

#[cfg(test)]
mod tests;
