//! Background lifecycle work that Kubernetes' controllers would do: emptying Terminating
//! namespaces and removing the custom resources of deleted CRDs. Work items are queued by
//! the write path, retried until done, and rediscovered after a restart.

use std::sync::Arc;
use std::time::Duration;

use kplane_storage::{Key, Precondition, Prefix};
use serde_json::{json, Value};

use super::crd::{self, CRD_RESOURCE};
use super::{meta, Registry, Target};
use crate::error::{ApiError, ApiResult};
use crate::http::query::ListParams;

/// How often unfinished work (content with finalizers) is retried.
const RETRY_EVERY: Duration = Duration::from_secs(2);

/// One unit of lifecycle work.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Work {
    /// Empty and then remove a Terminating namespace.
    Namespace { cluster: String, name: String },
    /// Delete every custom resource of a deleted CRD, then drop its cleanup finalizer.
    CrdCleanup { cluster: String, name: String },
}

impl Registry {
    pub(super) fn enqueue(&self, w: Work) {
        let _ = self.work_queue.send(w);
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
    async fn cleanup_crd(&self, cluster: &str, name: &str) -> ApiResult<bool> {
        let key = Key::new(cluster, CRD_RESOURCE, "", name);
        let Some(kv) = self
            .storage
            .get(&key)
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?
        else {
            return Ok(true);
        };
        let obj: Value =
            serde_json::from_slice(&kv.value).map_err(|e| ApiError::internal(e.to_string()))?;
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
            self.delete_collection(&t, &ListParams::default(), &Default::default())
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
        let mut gone = crd::without_cleanup_finalizer(&obj);
        let remaining = meta::finalizers(&gone);
        let enc: kplane_storage::Encoder = Box::new(move |rev| {
            gone["metadata"]["resourceVersion"] = json!(rev.to_string());
            serde_json::to_vec(&gone).map_err(|e| e.to_string())
        });
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
        if !done {
            let r = registry.clone();
            tokio::spawn(async move {
                tokio::time::sleep(RETRY_EVERY).await;
                r.enqueue(work);
            });
        }
    }
}
