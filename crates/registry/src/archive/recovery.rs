//! Who resolves an import journal, and when: only a journal whose owner is gone.
//!
//! Every process working on an import holds its journal's claim (`journal.rs`); a process
//! that dies (or loses its database session) loses it. So a journal whose claim is free
//! was left by an import nobody works on any more, and one whose claim is held belongs to
//! an import in progress on some replica, which is left alone. Resolution runs at
//! start-up ([`Registry::recover_imports`], before anything is served) and, on the leader,
//! every [`RESOLVE_EVERY`] from the moment it leads ([`Registry::resolve_imports_while_leading`]),
//! so the journal of a replica that died is resolved while the others keep running.
//!
//! Resolving one journal: claim it (skip it when held); wait out the claim's grace, in
//! which a previous holder that lost its session without knowing yet stops; read the
//! journal again (it may have been finished or resolved meanwhile); rewrite it, on the
//! condition that it is still at the revision read (so such a previous holder's next
//! update fails, and a read that had not caught up with another replica's last update
//! resolves nothing this round); then roll it back (step `writing`) or forward (later
//! steps), holding the claim throughout.
//!
//! A move's staged import waiting in step `writing` for its changes and commit is never
//! resolved: it waits, hidden, also across restarts, for the move's next call (any
//! replica's), and is dropped only by the move's abort (`staged.rs`). Start-up only
//! hides its targets again.

use std::sync::Arc;
use std::time::Duration;

use kplane_storage::{Claim, Prefix};

use super::journal::{claim_name, Journal, Step, JOURNAL_CLUSTER, JOURNAL_RESOURCE};
use crate::cluster_states::Phase;
use crate::error::ApiResult;
use crate::Registry;

/// How often the leader looks for journals whose owner is gone.
pub(crate) const RESOLVE_EVERY: Duration = Duration::from_secs(5);

/// What a resolution round did with the journals it found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Resolved {
    /// Journals rolled back or forward (their owner was gone).
    pub(crate) resolved: usize,
    /// Journals left alone: claimed by a live owner, or finished meanwhile.
    pub(crate) in_progress: usize,
    /// Staged imports waiting for their move.
    pub(crate) staged: usize,
}

impl Registry {
    /// Resolves the imports whose owner is gone (start-up, before anything is served):
    /// rolled back before the point of no return, forward after it; staged imports wait,
    /// hidden again.
    pub(crate) async fn recover_imports(&self) -> ApiResult<()> {
        self.resolve_orphaned_imports(true).await.map(|_| ())
    }

    /// One resolution round (see the module doc); `starting`: also hide the targets of
    /// waiting staged imports (at start-up, before anything is served).
    pub(crate) async fn resolve_orphaned_imports(&self, starting: bool) -> ApiResult<Resolved> {
        let prefix = Prefix::resource(JOURNAL_CLUSTER, JOURNAL_RESOURCE);
        let res = self
            .storage
            .list(&prefix, &Default::default(), None)
            .await?;
        let mut done = Resolved::default();
        for kv in res.items {
            let j: Journal = match serde_json::from_slice(&kv.value) {
                Ok(j) => j,
                Err(e) => {
                    tracing::warn!(target = %kv.key.name, error = %e, "unreadable import journal; left in place");
                    continue;
                }
            };
            if waits_for_its_move(&j) {
                done.staged += 1;
                if starting {
                    for m in j.clusters.iter().filter(|m| m.staging.is_none()) {
                        self.set_own_phase(&m.target, Some(Phase::Importing));
                    }
                }
                continue;
            }
            if self.resolve_one(&j.target).await? {
                done.resolved += 1;
            } else {
                done.in_progress += 1;
            }
        }
        Ok(done)
    }

    /// Resolves the import into `target` if its owner is gone; `false` when it is in
    /// progress (claimed), finished meanwhile, or a staged import waiting for its move.
    async fn resolve_one(&self, target: &str) -> ApiResult<bool> {
        let Some(claim) = self.storage.claim(&claim_name(target)).await? else {
            tracing::debug!(target = %target, "an import in progress on a live replica; left alone");
            return Ok(false);
        };
        let done = self.resolve_claimed(target, &claim).await;
        claim.release().await;
        done
    }

    /// [`Registry::resolve_one`] once the claim is granted.
    async fn resolve_claimed(&self, target: &str, claim: &Claim) -> ApiResult<bool> {
        if !claim.grace().is_zero() {
            tokio::time::sleep(claim.grace()).await;
        }
        let Some(mut j) = self.get_journal(target).await? else {
            return Ok(false);
        };
        if waits_for_its_move(&j) || !claim.is_held() {
            return Ok(false);
        }
        // Rewritten under the claim: a previous holder's next update fails. If such a
        // holder moved it on meanwhile, the next round looks again.
        match self.put_journal(&mut j, false).await {
            Ok(()) => {}
            Err(e) if e.code() == 409 => return Ok(false),
            Err(e) => return Err(e),
        }
        if j.step == Step::Writing {
            tracing::warn!(target = %j.target, "rolling back an interrupted import (its owner is gone)");
            self.roll_back_import(&j).await?;
        } else {
            tracing::warn!(target = %j.target, step = ?j.step, "finishing an interrupted import (its owner is gone)");
            self.roll_forward_import(j, claim).await?;
        }
        Ok(true)
    }

    /// The leader's resolution: a round at once and every [`RESOLVE_EVERY`], until the
    /// task is dropped (leadership lost).
    pub(crate) async fn resolve_imports_while_leading(self: Arc<Self>) {
        loop {
            match self.resolve_orphaned_imports(false).await {
                Ok(r) if r.resolved > 0 => {
                    tracing::info!(
                        resolved = r.resolved,
                        "resolved imports whose owner was gone"
                    );
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(error = %e.0.message, "resolving interrupted imports failed; retrying");
                }
            }
            tokio::time::sleep(RESOLVE_EVERY).await;
        }
    }
}

/// A move's staged import waiting for its changes and commit: never resolved.
fn waits_for_its_move(j: &Journal) -> bool {
    j.step == Step::Writing && j.staged.is_some()
}
