//! The change stream of one logical cluster (the online move's catch-up, docs/architecture.md
//! "Moving a logical cluster"): every put and delete of the cluster after a revision, in
//! revision order, read from the storage watch (which replays the event log, then follows
//! the live stream), framed as a `kplane_archive` change stream in bounded chunks, and
//! ending at a fixed revision: `until`, or the revision that was current when the stream
//! was opened.

use bytes::Bytes;
use kplane_archive::{Change, ChangeStream, Record};
use kplane_storage::{EventType, Prefix, Revision, WatchEvent, WatchReceiver};
use kplane_types::{ClusterName, Status};

use crate::error::{ApiError, ApiResult};
use crate::Registry;

/// About how many bytes one chunk of the stream holds.
pub const CHANGE_CHUNK: usize = 256 << 10;
/// How often an idle watch reports progress, which ends a stream whose last change is
/// before its end revision.
const PROGRESS_EVERY: std::time::Duration = std::time::Duration::from_millis(20);

/// An open change stream ([`Registry::changes`]).
pub struct Changes {
    rx: Option<WatchReceiver>,
    stream: Option<ChangeStream>,
    cluster: String,
    /// The revision the stream is complete through when it ends.
    end: Revision,
    /// Changes sent so far.
    sent: u64,
}

impl std::fmt::Debug for Changes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Changes")
            .field("cluster", &self.cluster)
            .field("end", &self.end)
            .finish_non_exhaustive()
    }
}

impl Registry {
    /// Opens the change stream of `cluster` after revision `since`, through `until` (the
    /// current revision when `None`; at most the current revision). 410 Expired when
    /// `since` is compacted (the move starts over), 400 when `since` is beyond the end.
    pub async fn changes(
        &self,
        cluster: &ClusterName,
        since: Revision,
        until: Option<Revision>,
    ) -> ApiResult<Changes> {
        let mut current = self.storage.current_revision();
        let end = until.unwrap_or(current);
        if end > current && self.wait_for_revision(end).await.is_ok() {
            // A revision another replica committed (a fence set through it): reached now.
            current = self.storage.current_revision();
        }
        if end > current {
            return Err(ApiError::bad_request(format!(
                "until={end} is beyond the current revision {current}"
            )));
        }
        if since > end {
            return Err(ApiError::bad_request(format!(
                "since={since} is beyond the end of the stream ({end})"
            )));
        }
        let rx = if since < end {
            let prefix = Prefix::cluster(cluster.as_str());
            match self
                .storage
                .watch(&prefix, since, Some(PROGRESS_EVERY))
                .await
            {
                Ok(rx) => Some(rx),
                Err(kplane_storage::Error::Compacted { .. }) => {
                    return Err(ApiError::from(Status::expired(format!(
                        "too old resource version: {since} ({})",
                        self.storage.compacted_revision()
                    ))))
                }
                Err(e) => return Err(e.into()),
            }
        } else {
            None
        };
        Ok(Changes {
            rx,
            stream: Some(ChangeStream::new()),
            cluster: cluster.to_string(),
            end,
            sent: 0,
        })
    }
}

impl Changes {
    /// The revision the stream ends at.
    pub fn end(&self) -> Revision {
        self.end
    }

    /// The next chunk of the encoded stream; `None` after the chunk with the end frame.
    /// An error after the first chunk means the stream is cut short (its receiver sees no
    /// end frame and must not take it as complete).
    pub async fn next_chunk(&mut self) -> ApiResult<Option<Bytes>> {
        let Some(stream) = self.stream.as_mut() else {
            return Ok(None);
        };
        let mut out = Vec::new();
        let mut done = self.rx.is_none();
        while !done && out.len() < CHANGE_CHUNK {
            let Some(rx) = self.rx.as_mut() else {
                break;
            };
            match rx.recv().await {
                Some(WatchEvent::Event(ev)) => {
                    let rev = ev.kv.mod_revision;
                    if rev > self.end {
                        done = true;
                        break;
                    }
                    let k = &ev.kv.key;
                    let change = Change {
                        revision: rev,
                        delete: ev.event_type == EventType::Deleted,
                        record: Record {
                            cluster: k.cluster.clone(),
                            resource: k.resource.clone(),
                            namespace: k.namespace.clone(),
                            name: k.name.clone(),
                            value: ev.kv.value.to_vec(),
                        },
                    };
                    stream
                        .push(&mut out, &change)
                        .map_err(|e| ApiError::internal(e.to_string()))?;
                    self.sent += 1;
                    done = rev == self.end;
                }
                Some(WatchEvent::Progress(rev)) => done = rev >= self.end,
                Some(WatchEvent::Closed(reason)) => {
                    return Err(ApiError::internal(format!(
                        "the change stream of {} ended early ({reason:?}) after {} changes",
                        self.cluster, self.sent
                    )))
                }
                None => {
                    return Err(ApiError::internal(format!(
                        "the change stream of {} ended early after {} changes",
                        self.cluster, self.sent
                    )))
                }
            }
        }
        if done {
            self.rx = None;
            if let Some(stream) = self.stream.take() {
                stream
                    .end(&mut out, self.end)
                    .map_err(|e| ApiError::internal(e.to_string()))?;
            }
        }
        Ok(Some(Bytes::from(out)))
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kplane_archive::ChangeReader;
    use kplane_storage::Storage;
    use serde_json::json;

    use super::*;
    use crate::builtin_types::builtin;
    use crate::catalog::Catalog;
    use crate::options::WriteParams;
    use crate::Target;

    fn name(s: &str) -> ClusterName {
        ClusterName::parse(s).unwrap()
    }

    async fn collect(mut c: Changes) -> (Vec<Change>, u64) {
        let mut bytes = Vec::new();
        while let Some(chunk) = c.next_chunk().await.unwrap() {
            bytes.extend_from_slice(&chunk);
        }
        let mut r = ChangeReader::open(bytes.as_slice()).unwrap();
        let mut v = Vec::new();
        while let Some(ch) = r.next().unwrap() {
            v.push(ch);
        }
        (v, r.through().unwrap())
    }

    /// The stream holds exactly the cluster's changes after `since` through its end (puts
    /// and deletes, in order; not a neighbour's, not later ones), above the chunk size.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_stream_holds_the_clusters_changes_after_since_through_the_end() {
        let storage: Arc<dyn Storage> = crate::testing::memory_store();
        let (_tx, shutdown) = tokio::sync::watch::channel(false);
        let (reg, _q) = Registry::new(
            storage.clone(),
            Arc::new(Catalog::new(builtin())),
            String::new(),
            shutdown,
        );
        reg.set_auto_create_clusters(true);
        let rt = reg
            .builtin_catalog()
            .get("", "v1", "configmaps")
            .unwrap()
            .clone();
        let a = Target::new(&name("root:a"), rt.clone(), Some("default".into()));
        let ab = Target::new(&name("root:ab"), rt, Some("default".into()));
        let big = "x".repeat(4096);
        let cm = |n: String| {
            json!({"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": n}, "data": {"big": big}})
        };
        reg.create(&a, cm("old".into()), &WriteParams::default())
            .await
            .unwrap();
        reg.create(&ab, cm("x".into()), &WriteParams::default())
            .await
            .unwrap();
        let since = storage.current_revision();
        // Ten times the chunk size in changes.
        let n = 10 * CHANGE_CHUNK / 4096;
        for i in 0..n {
            reg.create(&a, cm(format!("c{i}")), &WriteParams::default())
                .await
                .unwrap();
            reg.create(&ab, cm(format!("c{i}")), &WriteParams::default())
                .await
                .unwrap();
        }
        reg.delete(&a, "old", &Default::default()).await.unwrap();
        let end = storage.current_revision();
        let (changes, through) =
            collect(reg.changes(&name("root:a"), since, None).await.unwrap()).await;
        reg.create(&a, cm("later".into()), &WriteParams::default())
            .await
            .unwrap();
        assert_eq!(through, end);
        assert_eq!(changes.len(), n + 1);
        assert!(changes.iter().all(|c| c.record.cluster == "root:a"));
        assert!(changes.windows(2).all(|w| w[0].revision < w[1].revision));
        assert!(changes
            .iter()
            .all(|c| c.revision > since && c.revision <= end));
        let last = changes.last().unwrap();
        assert!(last.delete);
        assert_eq!(last.record.name, "old");
        assert_eq!(changes.iter().filter(|c| c.delete).count(), 1);

        // `until` cuts it; an empty range is just the end frame.
        let until = changes[9].revision;
        let (part, through) = collect(
            reg.changes(&name("root:a"), since, Some(until))
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(through, until);
        assert_eq!(part, changes[..10]);
        let (none, through) =
            collect(reg.changes(&name("root:a"), end, Some(end)).await.unwrap()).await;
        assert!(none.is_empty());
        assert_eq!(through, end);
        // The stream ends at the current revision even when the cluster is idle.
        let now = storage.current_revision();
        let (tail, through) =
            collect(reg.changes(&name("root:ab"), end, None).await.unwrap()).await;
        assert_eq!(tail.len(), 0, "{tail:?}");
        assert_eq!(through, now);
        let e = reg
            .changes(&name("root:a"), 0, Some(now + 1))
            .await
            .unwrap_err();
        assert_eq!(e.code(), 400);
    }
}
