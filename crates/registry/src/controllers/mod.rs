//! Background lifecycle work that Kubernetes' controllers would do: emptying Terminating
//! namespaces, removing the custom resources of deleted CRDs, garbage collection and
//! republishing `kube-root-ca.crt`. Work items are queued by
//! the write path, retried until done, and rediscovered after a restart.

pub mod gc;
mod gc_events;
mod namespace;
pub mod ns_conditions;
mod ns_purge;
pub mod root_ca;

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use kplane_storage::{Key, Precondition, Prefix};
use serde_json::Value;

use crate::crd::{self, CRD_RESOURCE};
use crate::error::{ApiError, ApiResult};
use crate::options::ListParams;
use crate::{meta, Registry, Target};

/// How often unfinished work (content with finalizers) is retried.
const RETRY_EVERY: Duration = Duration::from_secs(2);

/// One unit of lifecycle work.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Work {
    /// Empty and then remove a Terminating namespace.
    Namespace { cluster: String, name: String },
    /// Delete every custom resource of a deleted CRD, then drop its cleanup finalizer.
    CrdCleanup { cluster: String, name: String },
    /// Collect an object whose owners may be gone (or are deleted in the foreground).
    GcDependent(gc::ObjRef),
    /// Honour an owner's `orphan` / `foregroundDeletion` finalizer.
    GcOwner(gc::ObjRef),
    /// Recreate or republish a namespace's `kube-root-ca.crt` (`root_ca`).
    RootCa { cluster: String, namespace: String },
}

impl Registry {
    pub(super) fn enqueue(&self, w: Work) {
        if self.work_queue.send(w).is_ok() {
            self.queued_work.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Lifecycle work items queued or running (namespace emptying, CRD cleanup, garbage
    /// collection); items waiting to be retried are not counted. For `/metrics`.
    pub fn queued_work(&self) -> u64 {
        self.queued_work.load(Ordering::Relaxed)
    }

    /// Queues work left unfinished by an earlier run (Terminating namespaces, deleted CRDs).
    pub async fn resume_pending_work(&self) -> ApiResult<()> {
        for (resource, make) in [
            (
                "/namespaces",
                (|cluster, name| Work::Namespace { cluster, name }) as fn(String, String) -> Work,
            ),
            (CRD_RESOURCE, |cluster, name| Work::CrdCleanup {
                cluster,
                name,
            }),
        ] {
            let prefix = Prefix {
                cluster: None,
                resource: Some(resource.into()),
                namespace: None,
            };
            let res = self
                .storage
                .list(&prefix, &Default::default(), None)
                .await
                .map_err(|e| ApiError::internal(e.to_string()))?;
            for kv in res.items {
                if serde_json::from_slice::<Value>(&kv.value).is_ok_and(|v| meta::is_deleting(&v)) {
                    self.enqueue(make(kv.key.cluster.clone(), kv.key.name.clone()));
                }
            }
        }
        Ok(())
    }

    /// Deletes every instance of a deleted CRD, then lets the CRD go.
    /// Returns false when instances with finalizers remain.
    pub(super) async fn cleanup_crd(&self, cluster: &str, name: &str) -> ApiResult<bool> {
        let key = Key::new(cluster, CRD_RESOURCE, "", name);
        let Some((kv, obj)) = self.get_decoded(&key).await? else {
            return Ok(true);
        };
        if !meta::is_deleting(&obj) {
            return Ok(true);
        }
        let catalog = self.catalog_for(Some(cluster)).await?;
        let group = obj
            .pointer("/spec/group")
            .and_then(Value::as_str)
            .unwrap_or("");
        let plural = obj
            .pointer("/status/acceptedNames/plural")
            .and_then(Value::as_str)
            .unwrap_or("");
        let storage_resource = format!("{group}/{plural}");
        let rt = catalog
            .all()
            .iter()
            .find(|rt| rt.storage_resource == storage_resource)
            .cloned();
        if let Some(rt) = rt {
            let t = Target {
                cluster: Some(cluster.to_string()),
                rt,
                namespace: None,
            };
            self.delete_all(&t, &ListParams::default(), &Default::default())
                .await?;
        }
        let left = self
            .storage
            .count(&Prefix::resource(cluster, storage_resource))
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?;
        if left > 0 {
            return Ok(false);
        }
        let gone = crd::without_cleanup_finalizer(&obj);
        let remaining = meta::finalizers(&gone);
        let enc = crate::write::encoder(gone);
        let pre = Precondition::ModRevision(kv.mod_revision);
        let res = if remaining.is_empty() {
            self.storage.delete(key, pre, enc).await
        } else {
            self.storage.put(key, pre, enc).await
        };
        match res {
            Ok(_) | Err(kplane_storage::Error::NotFound) => {
                if remaining.is_empty() {
                    self.recheck_crd_names(cluster).await?;
                } else {
                    self.refresh_catalog(cluster).await?;
                }
                Ok(remaining.is_empty())
            }
            Err(kplane_storage::Error::Conflict { .. }) => Ok(false),
            Err(e) => Err(ApiError::internal(e.to_string())),
        }
    }

    async fn run_one(&self, w: &Work) -> ApiResult<bool> {
        match w {
            Work::Namespace { cluster, name } => self.finalize_namespace(cluster, name).await,
            Work::CrdCleanup { cluster, name } => self.cleanup_crd(cluster, name).await,
            Work::GcDependent(r) => self.gc_dependent(r).await,
            Work::GcOwner(r) => self.gc_owner(r).await,
            Work::RootCa { cluster, namespace } => self.sync_root_ca(cluster, namespace).await,
        }
    }
}

/// Runs lifecycle work until the queue closes; unfinished items are retried.
pub async fn run_worker(
    registry: Arc<Registry>,
    mut queue: tokio::sync::mpsc::UnboundedReceiver<Work>,
) {
    while let Some(work) = queue.recv().await {
        let done = match registry.run_one(&work).await {
            Ok(done) => done,
            Err(e) => {
                tracing::warn!(?work, error = %e.0, "lifecycle work failed; retrying");
                false
            }
        };
        registry.queued_work.fetch_sub(1, Ordering::Relaxed);
        if !done {
            let r = registry.clone();
            tokio::spawn(async move {
                tokio::time::sleep(RETRY_EVERY).await;
                r.enqueue(work);
            });
        }
    }
}

/// Most events one sweep deletes (the rest wait for the next sweep).
pub(super) const EVENT_SWEEP_BATCH: usize = 10_000;

/// Events read from storage at a time by a sweep.
pub(super) const EVENT_SWEEP_PAGE: usize = 1000;

/// The last time an Event was written, as Kubernetes' storage TTL counts it (the TTL
/// restarts on every update): the latest of its timestamps.
fn event_last_written(ev: &Value) -> Option<chrono::DateTime<chrono::Utc>> {
    [
        "/lastTimestamp",
        "/eventTime",
        "/series/lastObservedTime",
        "/metadata/creationTimestamp",
    ]
    .iter()
    .filter_map(|p| ev.pointer(p).and_then(Value::as_str))
    .filter_map(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
    .map(|t| t.with_timezone(&chrono::Utc))
    .max()
}

impl Registry {
    /// Deletes Events older than `ttl` in every logical cluster; at most
    /// [`EVENT_SWEEP_BATCH`] per call. Returns how many were deleted.
    pub async fn sweep_events(&self, ttl: Duration) -> ApiResult<usize> {
        self.sweep_events_in(ttl, EVENT_SWEEP_PAGE, EVENT_SWEEP_BATCH)
            .await
    }

    /// [`Registry::sweep_events`] reading `page` Events at a time and deleting at most
    /// `most` (the sizes are parameters so that tests can cross them cheaply).
    pub(super) async fn sweep_events_in(
        &self,
        ttl: Duration,
        page: usize,
        most: usize,
    ) -> ApiResult<usize> {
        let cutoff = chrono::Utc::now()
            - chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::zero());
        let prefix = Prefix {
            cluster: None,
            resource: Some("/events".into()),
            namespace: None,
        };
        let mut opts = kplane_storage::ListOptions {
            limit: Some(page),
            ..Default::default()
        };
        let mut deleted = 0;
        loop {
            let page = self
                .storage
                .list(&prefix, &opts, None)
                .await
                .map_err(|e| ApiError::internal(e.to_string()))?;
            for kv in &page.items {
                let Ok(ev) = serde_json::from_slice::<Value>(&kv.value) else {
                    continue;
                };
                if event_last_written(&ev).is_none_or(|t| t >= cutoff) {
                    continue;
                }
                let enc = crate::write::encoder(ev);
                match self
                    .storage
                    .delete(
                        kv.key.clone(),
                        Precondition::ModRevision(kv.mod_revision),
                        enc,
                    )
                    .await
                {
                    Ok(_) => deleted += 1,
                    Err(
                        kplane_storage::Error::Conflict { .. } | kplane_storage::Error::NotFound,
                    ) => {}
                    Err(e) => return Err(ApiError::internal(e.to_string())),
                }
                if deleted >= most {
                    return Ok(deleted);
                }
            }
            match (page.more, page.items.last()) {
                (true, Some(last)) => opts.start_after = Some(last.key.clone()),
                _ => return Ok(deleted),
            }
        }
    }
}

/// Sweeps expired Events periodically (every minute, or twice per TTL when it is short).
pub async fn run_event_sweeper(registry: Arc<Registry>, ttl: Duration) {
    let every = (ttl / 2).clamp(Duration::from_secs(1), Duration::from_secs(60));
    loop {
        tokio::time::sleep(every).await;
        match registry.sweep_events(ttl).await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(deleted = n, "expired events removed"),
            Err(e) => tracing::warn!(error = %e.0, "event sweep failed"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn event_age_counts_from_the_latest_timestamp() {
        let ev = json!({"metadata": {"creationTimestamp": "2024-01-01T00:00:00Z"},
            "lastTimestamp": "2024-01-01T05:00:00Z", "series": {"lastObservedTime": "2024-01-01T06:00:00.000000Z"}});
        let t = event_last_written(&ev).unwrap();
        assert_eq!(t.to_rfc3339(), "2024-01-01T06:00:00+00:00");
        assert!(event_last_written(&json!({"metadata": {}})).is_none());
    }
}
