//! [`Registry::import`]: verify the whole archive, check the target, write the objects in
//! bounded batches where no client sees them, then flip (`journal.rs`).
//!
//! The archive's root cluster becomes `target`, its descendants are re-rooted under it.
//! A target that does not exist is written directly while it is hidden (phase
//! Importing: 404, skipped by multi-cluster reads). A target that exists is replaced:
//! refused (409) unless `replace` or it is *empty*, i.e. holds only what a new cluster's
//! bootstrap creates (the default namespaces, their `default` ServiceAccounts and
//! `kube-root-ca.crt` ConfigMaps, the `workspace-admin` binding of the Workspace's creator)
//! and its floor record; its new content is staged in a
//! hidden pseudo-cluster and swapped in at the flip, so the old content is served until
//! then and survives any failure before it. Objects keep everything as stored (uids,
//! creationTimestamps, status, finalizers, ownerReferences, managedFields, generation)
//! except `metadata.resourceVersion`, which the target assigns.

use std::collections::HashMap;
use std::io::BufReader;
use std::path::{Path, PathBuf};

use kplane_archive::{Reader, Record};
use kplane_storage::{BatchWrite, Claim, Key, ListOptions, Precondition, Prefix};
use kplane_types::{ClusterName, Status, StatusReason};

use super::journal::{staging_name, still_claimed, Journal, Mapped, Staged, Step};
use super::verify::{archive_error, verify_archive, Served};
use crate::cluster_states::{Phase, STATE_RESOURCE};
use crate::clusters::no_such_cluster;
use crate::error::{ApiError, ApiResult};
use crate::namespaces::DEFAULT_NAMESPACES;
use crate::rbac::owner::OWNER_BINDING;
use crate::rbac::CLUSTER_ROLE_BINDINGS;
use crate::Registry;

use super::common::{ImportSummary, IMPORT_BATCH};

fn join_error(e: tokio::task::JoinError) -> ApiError {
    ApiError::internal(format!("the archive reader failed: {e}"))
}

impl Registry {
    /// The work of [`Archive::import`](crate::archive::Archive::import).
    pub(crate) async fn import(
        &self,
        archive: &Path,
        target: &ClusterName,
        replace: bool,
    ) -> ApiResult<ImportSummary> {
        let (journal, claim, objects) = self.stage_import(archive, target, replace).await?;
        let names: Vec<String> = journal.clusters.iter().map(|m| m.target.clone()).collect();
        let done = self.roll_forward_import(journal, &claim).await;
        claim.release().await;
        let revision = done?;
        Ok(ImportSummary {
            cluster: target.to_string(),
            clusters: names,
            objects,
            revision,
        })
    }

    /// Everything before the point of no return: verification, the checks, the journal,
    /// the write pass (rolled back on failure). Returns the journal, recording
    /// `deletingOld`, the import's claim (dropping it leaves the import to whoever
    /// resolves it: `recovery.rs`) and the number of objects.
    pub(crate) async fn stage_import(
        &self,
        archive: &Path,
        target: &ClusterName,
        replace: bool,
    ) -> ApiResult<(Journal, Claim, u64)> {
        let (mut journal, claim, objects) =
            self.write_import(archive, target, replace, false).await?;
        journal.step = Step::DeletingOld;
        let moved = match still_claimed(&claim, &journal.target) {
            Ok(()) => self.put_journal(&mut journal, false).await,
            Err(e) => Err(e),
        };
        match moved {
            Ok(()) => Ok((journal, claim, objects)),
            Err(e) => {
                claim.release().await;
                Err(e)
            }
        }
    }

    /// The write pass of an import: verification, the checks, the journal (step
    /// `writing`), the objects (rolled back on failure). With `staged` (the online move,
    /// `staged.rs`) the journal records the source and the revision the archive is at,
    /// and the import waits there, hidden, for the source's changes and the commit.
    /// The import's claim is taken before the journal is written and returned with it.
    pub(crate) async fn write_import(
        &self,
        archive: &Path,
        target: &ClusterName,
        replace: bool,
        staged: bool,
    ) -> ApiResult<(Journal, Claim, u64)> {
        let builtin = Served::builtin(self.builtin_catalog());
        let path = archive.to_path_buf();
        let plan = tokio::task::spawn_blocking(move || verify_archive(&path, &builtin))
            .await
            .map_err(join_error)??;
        let root = plan.header.cluster.clone();
        let mut sources = plan.clusters.clone();
        if sources.first() != Some(&root) {
            sources.insert(0, root.clone());
        }
        let mut routes = HashMap::new();
        let mut clusters = Vec::new();
        for src in &sources {
            let mapped = format!("{target}{}", &src[root.len().min(src.len())..]);
            let Some(name) = ClusterName::parse(&mapped) else {
                return Err(ApiError::new(
                    StatusReason::Invalid,
                    format!("logical cluster \"{src}\" of the archive would be imported as \"{mapped}\", which is not a valid logical cluster name"),
                ));
            };
            let staging = self.prepare_target(&name, replace).await?;
            let m = Mapped {
                target: mapped,
                staging,
            };
            routes.insert(src.clone(), m.destination().to_string());
            clusters.push(m);
        }
        if let Some(parent) = target.parent() {
            if !self.cluster_exists(&parent) {
                return Err(no_such_cluster(&parent));
            }
        }
        if staged && plan.header.recursive {
            return Err(ApiError::bad_request(
                "a staged import (a move) takes one logical cluster, not a recursive archive",
            ));
        }
        let journal = Journal {
            target: target.to_string(),
            step: Step::Writing,
            clusters,
            staged: staged.then(|| Staged {
                source_server: plan.header.source_server.clone(),
                source_cluster: root.clone(),
                applied: plan.header.revision,
            }),
            revision: 0,
        };
        let claim = self.claim_import(target.as_str()).await?;
        match self
            .begin_import(journal, archive, &routes, &claim, staged)
            .await
        {
            Ok(journal) => Ok((journal, claim, plan.objects)),
            Err(e) => {
                claim.release().await;
                Err(e)
            }
        }
    }

    /// Under the import's claim: the journal (step `writing`), the phases, the write pass
    /// (rolled back on failure, unless the claim was lost).
    async fn begin_import(
        &self,
        mut journal: Journal,
        archive: &Path,
        routes: &HashMap<String, String>,
        claim: &Claim,
        staged: bool,
    ) -> ApiResult<Journal> {
        let target = journal.target.clone();
        self.put_journal(&mut journal, true).await?;
        for m in journal.clusters.iter().filter(|m| m.staging.is_none()) {
            self.set_own_phase(&m.target, Some(Phase::Importing));
        }
        if let Err(e) = self.write_records(archive, routes, claim, &target).await {
            // A lost claim leaves the rollback to whoever claims the journal next.
            if claim.is_held() {
                if let Err(undo) = self.roll_back_import(&journal).await {
                    let retry = if staged {
                        "the move's abort"
                    } else {
                        "the leader"
                    };
                    tracing::error!(target = %target, error = %undo.0.message, "rolling back a failed import failed; {retry} retries it");
                }
            }
            return Err(e);
        }
        Ok(journal)
    }

    /// Checks that `target` may be imported into; `Some(staging)` when it exists and is
    /// replaced, `None` when it is new.
    async fn prepare_target(
        &self,
        target: &ClusterName,
        replace: bool,
    ) -> ApiResult<Option<String>> {
        if self.clusters.table.phase(target.as_str()).is_some() {
            return Err(ApiError::new(
                StatusReason::Conflict,
                format!("an import into logical cluster \"{target}\" is in progress"),
            ));
        }
        self.refuse_if_terminating(target)?;
        if !self.cluster_exists(target) {
            return Ok(None);
        }
        if !replace && !self.holds_only_bootstrap(target).await? {
            let mut s = Status::new(
                StatusReason::AlreadyExists,
                format!("logical cluster \"{target}\" already exists and is not empty (import with replace to overwrite it)"),
            );
            s.details = Some(kplane_types::status::Details {
                name: target.to_string(),
                kind: "logicalclusters".into(),
                ..Default::default()
            });
            return Err(ApiError::from(s));
        }
        Ok(Some(staging_name(target.as_str())))
    }

    /// Whether `cluster` holds nothing but what its bootstrap creates (see the module doc).
    async fn holds_only_bootstrap(&self, cluster: &ClusterName) -> ApiResult<bool> {
        // The bootstrap's keys: each default namespace with its ServiceAccount and root-CA
        // ConfigMap, the owner's binding of a Workspace's creator, and the floor.
        let bootstrap_keys = 3 * DEFAULT_NAMESPACES.len() + 2;
        let opts = ListOptions {
            limit: Some(bootstrap_keys + 1),
            ..Default::default()
        };
        let res = self
            .storage
            .list(&Prefix::cluster(cluster.as_str()), &opts, None)
            .await?;
        Ok(!res.more && res.items.iter().all(|kv| is_bootstrap(&kv.key)))
    }

    /// The write pass: the records, read again from the verified file on a blocking
    /// thread, written in batches of [`IMPORT_BATCH`] to their routes' destinations.
    async fn write_records(
        &self,
        archive: &Path,
        routes: &HashMap<String, String>,
        claim: &Claim,
        target: &str,
    ) -> ApiResult<()> {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<ApiResult<Vec<Record>>>(2);
        let reader = read_batches(archive.to_path_buf(), tx);
        let reader = tokio::task::spawn_blocking(reader);
        while let Some(batch) = rx.recv().await {
            still_claimed(claim, target)?;
            let writes = batch?
                .into_iter()
                .map(|rec| {
                    let cluster = routes.get(&rec.cluster).cloned().ok_or_else(|| {
                        ApiError::internal(format!("no route for logical cluster {}", rec.cluster))
                    })?;
                    let value = rec.value;
                    Ok(BatchWrite {
                        key: Key::new(cluster, rec.resource, rec.namespace, rec.name),
                        delete: false,
                        precondition: Precondition::MustNotExist,
                        encode: Box::new(move |rev| {
                            super::common::with_resource_version(&value, rev)
                        }),
                    })
                })
                .collect::<ApiResult<Vec<_>>>()?;
            for r in self.storage.write_batch(writes).await {
                r?;
            }
        }
        reader.await.map_err(join_error)
    }
}

/// Reads the archive at `path` and sends its records in batches of [`IMPORT_BATCH`].
fn read_batches(
    path: PathBuf,
    tx: tokio::sync::mpsc::Sender<ApiResult<Vec<Record>>>,
) -> impl FnOnce() + Send + 'static {
    move || {
        let run = || -> ApiResult<()> {
            let file = std::fs::File::open(&path)
                .map_err(|e| ApiError::internal(format!("reading the spooled archive: {e}")))?;
            let mut reader = Reader::open(BufReader::new(file)).map_err(|e| archive_error(&e))?;
            let mut batch = Vec::with_capacity(IMPORT_BATCH);
            while let Some(rec) = reader.next().map_err(|e| archive_error(&e))? {
                if rec.resource == STATE_RESOURCE {
                    continue;
                }
                batch.push(rec);
                if batch.len() == IMPORT_BATCH {
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(IMPORT_BATCH));
                    if tx.blocking_send(Ok(full)).is_err() {
                        return Ok(());
                    }
                }
            }
            if !batch.is_empty() {
                let _ = tx.blocking_send(Ok(batch));
            }
            Ok(())
        };
        if let Err(e) = run() {
            let _ = tx.blocking_send(Err(e));
        }
    }
}

/// Whether `key` is one a cluster's bootstrap creates, or its floor record.
fn is_bootstrap(key: &Key) -> bool {
    let default_ns = |ns: &str| DEFAULT_NAMESPACES.contains(&ns);
    match key.resource.as_str() {
        "/namespaces" => default_ns(&key.name),
        "/serviceaccounts" => default_ns(&key.namespace) && key.name == "default",
        "/configmaps" => default_ns(&key.namespace) && key.name == "kube-root-ca.crt",
        CLUSTER_ROLE_BINDINGS => key.name == OWNER_BINDING,
        r => r == STATE_RESOURCE,
    }
}
