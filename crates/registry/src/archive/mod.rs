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

use std::path::Path;

use kplane_types::ClusterName;

use crate::error::ApiResult;
use crate::Registry;

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

/// Export and import of logical clusters (`kplane export`, `kplane import`, the staged
/// imports of a move): what a [`Registry`] offers of [`crate::archive`].
#[derive(Clone, Copy, Debug)]
pub struct Archive<'a>(&'a Registry);

impl Registry {
    /// The registry's export and import operations ([`Archive`]).
    pub fn archive(&self) -> Archive<'_> {
        Archive(self)
    }
}

impl Archive<'_> {
    /// Starts an export of `root` (and, if recursive, its descendants) at one revision
    /// (see the module doc). 404 when `root` does not exist.
    pub async fn export(
        &self,
        root: &ClusterName,
        recursive: bool,
        compress: bool,
    ) -> ApiResult<ExportStream> {
        self.0.export(root, recursive, compress).await
    }

    /// Verifies the archive file in full, then imports it as `target`, atomically visible
    /// (see the module doc). Nothing is written when verification or a check fails.
    pub async fn import(
        &self,
        archive: &Path,
        target: &ClusterName,
        replace: bool,
    ) -> ApiResult<ImportSummary> {
        self.0.import(archive, target, replace).await
    }

    /// Imports the (non-recursive) archive at `archive` as `target`, staged: verified and
    /// written, hidden, waiting for changes and the commit. The target must be new or
    /// empty (a move never replaces content).
    pub async fn import_staged(
        &self,
        archive: &Path,
        target: &ClusterName,
    ) -> ApiResult<StagedImport> {
        self.0.import_staged(archive, target).await
    }

    /// The staged import into `target`; 404 when there is none.
    pub async fn staged_import(&self, target: &ClusterName) -> ApiResult<StagedImport> {
        self.0.staged_import(target).await
    }

    /// Applies the change stream in the file at `changes` (read after source revision
    /// `since`) to the staged import into `target`, and records the revision it is complete
    /// through. 409 when `since` is after what is applied (a gap), 400 for a damaged or
    /// truncated stream or a change of another cluster (what was applied before the
    /// damage stays: applying is idempotent, the recorded revision does not move).
    pub async fn apply_staged_changes(
        &self,
        changes: &Path,
        target: &ClusterName,
        since: u64,
    ) -> ApiResult<AppliedChanges> {
        self.0.apply_staged_changes(changes, target, since).await
    }

    /// Makes the staged import into `target` visible: the import's flip, from the point
    /// of no return on (cut short, it is rolled forward by the leader or at start-up).
    pub async fn commit_staged_import(&self, target: &ClusterName) -> ApiResult<ImportSummary> {
        self.0.commit_staged_import(target).await
    }

    /// Drops the staged import into `target` (a move rolled back). Idempotent.
    pub async fn abort_staged_import(&self, target: &ClusterName) -> ApiResult<()> {
        self.0.abort_staged_import(target).await
    }
}

#[cfg(test)]
mod tests;
