//! The Event TTL: Events expire `--event-ttl` after they were last written, as
//! kube-apiserver's storage lease does. A sweeper reads every logical cluster's Events a
//! page at a time and deletes the expired ones through the registry's bulk delete of
//! already-read objects (`bulk_delete`): a storage batch per `BULK_DELETE_BATCH`, each
//! Event its own revision and DELETED event, and an Event changed since it was read stays.
//! Like a lease expiry (and unlike an API delete), finalizers do not hold an expired Event.

use std::sync::Arc;
use std::time::Duration;

use kplane_storage::{Error as StorageError, Prefix};
use serde_json::Value;

use super::write_failed;
use crate::bulk_delete::{Doomed, BULK_DELETE_BATCH};
use crate::error::{ApiError, ApiResult};
use crate::{storage_error, Registry};

/// The controller's name in logs.
const CONTROLLER: &str = "event-ttl";

/// Most events one sweep deletes (the rest wait for the next sweep).
pub(crate) const EVENT_SWEEP_BATCH: usize = 10_000;

/// Events read from storage at a time by a sweep.
pub(crate) const EVENT_SWEEP_PAGE: usize = 1000;

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

/// Deletes Events older than `ttl` in every logical cluster; at most
/// `EVENT_SWEEP_BATCH` per call. Returns how many were deleted.
pub async fn sweep_events(reg: &Registry, ttl: Duration) -> ApiResult<usize> {
    sweep_events_in(reg, ttl, EVENT_SWEEP_PAGE, EVENT_SWEEP_BATCH).await
}

/// [`sweep_events`] reading `page` Events at a time and deleting at most
/// `most` (the sizes are parameters so that tests can cross them cheaply).
pub(crate) async fn sweep_events_in(
    reg: &Registry,
    ttl: Duration,
    page: usize,
    most: usize,
) -> ApiResult<usize> {
    let cutoff =
        chrono::Utc::now() - chrono::Duration::from_std(ttl).unwrap_or(chrono::Duration::zero());
    let prefix = Prefix {
        cluster: kplane_storage::Clusters::All,
        resource: Some("/events".into()),
        namespace: None,
    };
    let mut opts = kplane_storage::ListOptions {
        limit: Some(page),
        ..Default::default()
    };
    let mut deleted = 0;
    loop {
        let read = reg.list_by_prefix(&prefix, &opts, None).await?;
        let expired: Vec<Doomed> = read
            .items
            .iter()
            .filter_map(|kv| {
                let ev = serde_json::from_slice::<Value>(&kv.value).ok()?;
                event_last_written(&ev)
                    .is_some_and(|t| t < cutoff)
                    .then(|| Doomed {
                        key: kv.key.clone(),
                        revision: kv.mod_revision,
                        obj: ev,
                    })
            })
            .take(most - deleted)
            .collect();
        let mut expired = expired.into_iter().peekable();
        while expired.peek().is_some() {
            let batch: Vec<Doomed> = expired.by_ref().take(BULK_DELETE_BATCH).collect();
            deleted += expire_events(reg, batch).await?;
        }
        if deleted >= most {
            return Ok(deleted);
        }
        match (read.more, read.items.last()) {
            (true, Some(last)) => opts.start_after = Some(last.key.clone()),
            _ => return Ok(deleted),
        }
    }
}

/// Deletes one batch of expired Events; returns how many went. An Event changed since
/// it was read is kept (the next sweep looks at it again); gone ones are not counted.
async fn expire_events(reg: &Registry, batch: Vec<Doomed>) -> ApiResult<usize> {
    let rt = reg
        .builtin_catalog()
        .get("", "v1", "events")
        .cloned()
        .ok_or_else(|| ApiError::internal("events are not registered"))?;
    let keys: Vec<_> = batch.iter().map(|d| d.key.clone()).collect();
    let mut deleted = 0;
    let mut failed = None;
    for (key, res) in keys.iter().zip(reg.delete_stored_batch(batch).await?) {
        match res {
            Ok(_) => deleted += 1,
            Err(StorageError::NotFound) => {}
            Err(e) => {
                let conflict = matches!(e, StorageError::Conflict { .. });
                let e = storage_error(e, &rt, &key.name);
                write_failed(CONTROLLER, &key.cluster, &rt, &key.namespace, &key.name, &e);
                if !conflict {
                    failed = Some(e);
                }
            }
        }
    }
    match failed {
        // The store refuses writes: this sweep stops (the next one tries again).
        Some(e) => Err(e),
        None => Ok(deleted),
    }
}

/// Sweeps expired Events periodically (every minute, or twice per TTL when it is short).
pub async fn run(registry: Arc<Registry>, ttl: Duration) {
    let every = (ttl / 2).clamp(Duration::from_secs(1), Duration::from_secs(60));
    loop {
        tokio::time::sleep(every).await;
        match sweep_events(&registry, ttl).await {
            Ok(0) => {}
            Ok(n) => tracing::debug!(deleted = n, "expired events removed"),
            Err(e) => tracing::warn!(error = %e.0.message, "event sweep failed"),
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
