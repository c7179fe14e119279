//! The import journal and the flip.
//!
//! An import writes one journal record (an ordinary key of the pseudo-cluster
//! [`JOURNAL_CLUSTER`], resource [`JOURNAL_RESOURCE`], named after the target) before it
//! writes any object, and moves it through these steps, each made durable before the
//! work of the next begins:
//!
//! 1. `writing`: objects go into each new target directly (hidden: phase Importing) and
//!    into a staging pseudo-cluster (`~import:<target>`) for each existing target. A crash
//!    or error here **rolls back**: the new targets and the staging ranges are deleted.
//! 2. `deletingOld` (the point of no return): the existing targets are Replacing (503);
//!    their old key ranges are deleted.
//! 3. `copying`: each staging range is copied into its target (a key already copied before
//!    a crash is skipped).
//! 4. `droppingStaging`: the staging ranges are deleted.
//! 5. `finishing`: the floor (the current revision) is written into every target, the
//!    targets exist, their phases end, their catalogs are rebuilt, the Workspace of the
//!    import's target exists in its parent, and the journal record goes.
//!
//! From step 2 on, an interrupted import is **rolled forward** from the recorded step;
//! every step is idempotent.
//!
//! Whoever works on an import holds the claim of its journal's name ([`claim_name`],
//! [`kplane_storage::Storage::claim`]) from before the journal is written until it is
//! deleted; only a journal nobody claims is resolved by another (`recovery.rs`). Each
//! update of the journal is conditional on the revision its writer last wrote or read
//! ([`Journal::revision`]), so a holder that lost its claim (and whose import another
//! replica resolves) fails at its next step instead of undoing the resolution.

use kplane_storage::{
    BatchWrite, Claim, Key, KeyValue, Precondition, Prefix, CLUSTER_DELETE_BATCH,
};
use kplane_types::{ClusterName, ClusterScope, StatusReason};
use serde::{Deserialize, Serialize};
use serde_json::json;

use super::common::IMPORT_BATCH;
use crate::cluster_states::{Phase, FLOOR_NAME, STATE_RESOURCE};
use crate::clusters::last_state_tombstone;
use crate::clusters::FloorRecord;
use crate::controllers::queue::Named;
use crate::controllers::workspace::Workspaces;
use crate::error::{ApiError, ApiResult};
use crate::options::WriteParams;
use crate::{Registry, Target};

/// The pseudo-cluster holding import journal records (never a valid cluster name).
pub(crate) const JOURNAL_CLUSTER: &str = "~kplane";
/// The resource of import journal records.
pub(crate) const JOURNAL_RESOURCE: &str = "kplane.io/imports";

/// An import in progress, as stored.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Journal {
    /// The path the archive's root is imported as.
    pub(crate) target: String,
    pub(crate) step: Step,
    /// Every target cluster, with its staging pseudo-cluster when it replaces one.
    pub(crate) clusters: Vec<Mapped>,
    /// A staged import (the online move, `staged.rs`): it waits in step `writing` for the
    /// source's changes and the commit, also across restarts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) staged: Option<Staged>,
    /// The record's revision as last written or read here (0: not known); not stored.
    #[serde(skip)]
    pub(crate) revision: u64,
}

/// What a staged import knows of its source.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Staged {
    /// The exporting server, as the archive's header names it.
    pub(crate) source_server: String,
    /// The source path of the cluster (the archive's root).
    pub(crate) source_cluster: String,
    /// Every change of the source cluster up to this revision is applied.
    pub(crate) applied: u64,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub(crate) struct Mapped {
    pub(crate) target: String,
    pub(crate) staging: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) enum Step {
    Writing,
    DeletingOld,
    Copying,
    DroppingStaging,
    Finishing,
}

/// The staging pseudo-cluster of `target`.
pub(crate) fn staging_name(target: &str) -> String {
    format!("~import:{target}")
}

impl Mapped {
    /// Where the import writes this cluster's objects.
    pub(crate) fn destination(&self) -> &str {
        self.staging.as_deref().unwrap_or(&self.target)
    }
}

fn journal_key(target: &str) -> Key {
    Key::new(JOURNAL_CLUSTER, JOURNAL_RESOURCE, "", target)
}

/// The name an import into `target` claims ([`kplane_storage::Storage::claim`]).
pub(crate) fn claim_name(target: &str) -> String {
    format!("import:{target}")
}

fn in_progress(target: &str) -> ApiError {
    ApiError::new(
        StatusReason::Conflict,
        format!("an import into logical cluster \"{target}\" is in progress"),
    )
}

/// Fails once `claim` is lost: another replica may resolve the import now, so its holder
/// stops (and leaves the journal to it).
pub(crate) fn still_claimed(claim: &Claim, target: &str) -> ApiResult<()> {
    if claim.is_held() {
        return Ok(());
    }
    Err(ApiError::new(
        StatusReason::ServiceUnavailable,
        format!("the import into logical cluster \"{target}\" lost its claim on the store (the database session ended); it is resolved by whichever replica claims it next"),
    ))
}

impl Registry {
    /// Claims the import into `target` for this process (see the module doc): 409 while
    /// another holds it (an import, a step of a move, or a resolution is in progress).
    pub(crate) async fn claim_import(&self, target: &str) -> ApiResult<Claim> {
        self.storage
            .claim(&claim_name(target))
            .await?
            .ok_or_else(|| in_progress(target))
    }

    /// The stored journal record of `target`, as this replica's store has it (it may lag
    /// behind another replica's last update by the store's delivery delay: whatever is
    /// decided from it is confirmed by a rewrite conditional on its revision).
    async fn journal_record(&self, target: &str) -> ApiResult<Option<KeyValue>> {
        Ok(self.storage.get(&journal_key(target)).await?)
    }

    /// The journal of an import into `target`, if one is in progress (see `journal_record`).
    pub(crate) async fn get_journal(&self, target: &str) -> ApiResult<Option<Journal>> {
        match self.journal_record(target).await? {
            None => Ok(None),
            Some(kv) => serde_json::from_slice::<Journal>(&kv.value)
                .map(|j| {
                    Some(Journal {
                        revision: kv.mod_revision,
                        ..j
                    })
                })
                .map_err(|e| ApiError::internal(format!("unreadable import journal: {e}"))),
        }
    }

    /// Stores the journal: created (409 when an import into the target runs) or updated,
    /// if it is still at the revision `j` knows (409 otherwise: another replica took the
    /// import over); `j` learns its new revision.
    pub(crate) async fn put_journal(&self, j: &mut Journal, create: bool) -> ApiResult<()> {
        let bytes = serde_json::to_vec(&*j).map_err(|e| ApiError::internal(e.to_string()))?;
        let pre = match (create, j.revision) {
            (true, _) => Precondition::MustNotExist,
            (false, 0) => Precondition::MustExist,
            (false, rev) => Precondition::ModRevision(rev),
        };
        match self
            .storage
            .put(journal_key(&j.target), pre, Box::new(move |_| Ok(bytes)))
            .await
        {
            Ok(kv) => {
                j.revision = kv.mod_revision;
                Ok(())
            }
            Err(kplane_storage::Error::AlreadyExists) => Err(in_progress(&j.target)),
            Err(kplane_storage::Error::Conflict { .. } | kplane_storage::Error::NotFound) => {
                Err(ApiError::new(
                    StatusReason::Conflict,
                    format!(
                        "the import into logical cluster \"{}\" changed meanwhile (through another replica, or resolved by one); try again",
                        j.target
                    ),
                ))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Deletes the journal; its deletion event carries its last state, so that every
    /// replica learns which targets' phases end (`derived.rs`).
    async fn delete_journal(&self, target: &str) -> ApiResult<()> {
        let Some(kv) = self.journal_record(target).await? else {
            return Ok(());
        };
        let last = kv.value.to_vec();
        let tomb = Box::new(move |_| Ok(last));
        match self
            .storage
            .delete(
                journal_key(target),
                Precondition::ModRevision(kv.mod_revision),
                tomb,
            )
            .await
        {
            Ok(_) | Err(kplane_storage::Error::NotFound) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }

    async fn drop_range(&self, cluster: &str) -> ApiResult<()> {
        self.storage
            .delete_cluster(cluster, CLUSTER_DELETE_BATCH, last_state_tombstone())
            .await?;
        Ok(())
    }

    /// Undoes an import that did not reach the point of no return: its new targets and
    /// staging ranges are deleted, the phases end, the journal goes.
    pub(crate) async fn roll_back_import(&self, j: &Journal) -> ApiResult<()> {
        for m in &j.clusters {
            self.drop_range(m.destination()).await?;
            self.set_own_phase(&m.target, None);
        }
        self.delete_journal(&j.target).await
    }

    /// Finishes an import from the step its journal records (see the module doc); returns
    /// the floor the targets got.
    pub(crate) async fn roll_forward_import(&self, j: Journal, claim: &Claim) -> ApiResult<u64> {
        self.advance_import(j, claim, None)
            .await?
            .ok_or_else(|| ApiError::internal("the import stopped before it finished"))
    }

    /// Moves an import forward step by step, each recorded before the next begins, while
    /// `claim` (the import's) holds; stops (`Ok(None)`) once the journal records `stop`
    /// (tests interrupt it there, as a crash would), or finishes and returns the floor.
    pub(crate) async fn advance_import(
        &self,
        mut j: Journal,
        claim: &Claim,
        stop: Option<Step>,
    ) -> ApiResult<Option<u64>> {
        for m in j.clusters.iter().filter(|m| m.staging.is_some()) {
            self.set_own_phase(&m.target, Some(Phase::Replacing));
        }
        loop {
            still_claimed(claim, &j.target)?;
            let next = match j.step {
                Step::Writing => Step::DeletingOld,
                Step::DeletingOld => {
                    for m in j.clusters.iter().filter(|m| m.staging.is_some()) {
                        self.drop_range(&m.target).await?;
                    }
                    Step::Copying
                }
                Step::Copying => {
                    for m in &j.clusters {
                        if let Some(staging) = &m.staging {
                            self.copy_range(staging, &m.target).await?;
                        }
                    }
                    Step::DroppingStaging
                }
                Step::DroppingStaging => {
                    for m in &j.clusters {
                        if let Some(staging) = &m.staging {
                            self.drop_range(staging).await?;
                        }
                    }
                    Step::Finishing
                }
                Step::Finishing => return self.finish_import(&j).await.map(Some),
            };
            j.step = next;
            self.put_journal(&mut j, false).await?;
            if stop == Some(next) {
                return Ok(None);
            }
        }
    }

    /// Copies every key of `from` into `to` (same resource, namespace, name), in batches;
    /// keys already there (copied before a crash) are kept.
    async fn copy_range(&self, from: &str, to: &str) -> ApiResult<()> {
        let mut scan = self
            .storage
            .scan(&Prefix::cluster(from), None, IMPORT_BATCH)
            .await?;
        while let Some(page) = scan.next_page().await? {
            let writes = page
                .into_iter()
                .map(|kv| {
                    let value = kv.value;
                    BatchWrite {
                        key: Key::new(to, kv.key.resource, kv.key.namespace, kv.key.name),
                        delete: false,
                        precondition: Precondition::MustNotExist,
                        encode: Box::new(move |rev| {
                            super::common::with_resource_version(&value, rev)
                        }),
                    }
                })
                .collect();
            for r in self.storage.write_batch(writes).await {
                match r {
                    Ok(_) | Err(kplane_storage::Error::AlreadyExists) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(())
    }

    /// The last step: floors, existence, phases, catalogs, the Workspace, the journal.
    async fn finish_import(&self, j: &Journal) -> ApiResult<u64> {
        let floor = self.storage.current_revision() + 1;
        for m in &j.clusters {
            self.write_floor(&m.target, floor).await?;
        }
        for m in &j.clusters {
            if let Some(c) = ClusterName::parse(&m.target) {
                self.mark_cluster(&c);
                self.clusters.table.raise_floor(&m.target, floor);
                self.set_own_phase(&m.target, None);
                self.refresh_catalog(&c).await?;
            }
        }
        if let Some(target) = ClusterName::parse(&j.target) {
            self.ensure_workspace_of(&target).await?;
        }
        // The descendants' Workspaces came with the archive (in their parents, also
        // imported): the controller re-checks them (this server's URL, Ready).
        for c in j
            .clusters
            .iter()
            .skip(1)
            .filter_map(|m| ClusterName::parse(&m.target))
        {
            if let Some(parent) = c.parent() {
                self.enqueue::<Workspaces>(Named::new(parent, c.base_name().to_string()));
            }
        }
        self.delete_journal(&j.target).await?;
        Ok(floor)
    }

    /// Stores `cluster`'s floor record (replacing one that is there).
    async fn write_floor(&self, cluster: &str, floor: u64) -> ApiResult<()> {
        let key = Key::new(cluster, STATE_RESOURCE, "", FLOOR_NAME);
        let bytes = serde_json::to_vec(&FloorRecord { floor })
            .map_err(|e| ApiError::internal(e.to_string()))?;
        let pre = match self.storage.get(&key).await? {
            Some(kv) => Precondition::ModRevision(kv.mod_revision),
            None => Precondition::MustNotExist,
        };
        self.storage
            .put(key, pre, Box::new(move |_| Ok(bytes)))
            .await?;
        Ok(())
    }

    /// Creates the Workspace of `target` in its parent when it is missing; the workspace
    /// controller then makes it Ready with this server's URL.
    async fn ensure_workspace_of(&self, target: &ClusterName) -> ApiResult<()> {
        let Some(parent) = target.parent() else {
            return Ok(());
        };
        let t = Target {
            cluster: ClusterScope::One(parent.clone()),
            rt: crate::controllers::workspace::workspace_type(self)?,
            namespace: None,
        };
        let obj = json!({"apiVersion": "tenancy.kplane.io/v1alpha1", "kind": "Workspace",
                         "metadata": {"name": target.base_name()}});
        match self.create(&t, obj, &WriteParams::controller()).await {
            Ok(_) => Ok(()),
            Err(e) if e.code() == 409 => {
                // There already: the controller re-checks it (URL, Ready).
                self.enqueue::<Workspaces>(Named::new(parent, target.base_name().to_string()));
                Ok(())
            }
            Err(e) => Err(e),
        }
    }
}

/// The phases the stored journal `j` gives its targets (`deleted`: none any more):
/// a new target is Importing until the journal goes, an existing one Replacing from
/// the point of no return on (served as usual before it).
pub(crate) fn journal_phases(j: &Journal, deleted: bool) -> Vec<(&str, Option<Phase>)> {
    j.clusters
        .iter()
        .filter_map(|m| {
            let phase = match (&m.staging, deleted) {
                (_, true) => None,
                (None, false) => Some(Phase::Importing),
                (Some(_), false) if j.step != Step::Writing => Some(Phase::Replacing),
                (Some(_), false) => return None,
            };
            Some((m.target.as_str(), phase))
        })
        .collect()
}
