//! [`Registry::export`]: one logical cluster (and, if recursive, its existing descendants,
//! in pre-order) as archive bytes, every object read at one revision `R` with
//! [`kplane_storage::Storage::scan`] and written exactly as stored. Inside each cluster
//! the CRDs come first (one scan of their resource), then every other key in key order
//! (one scan of the cluster). A counting pass at `R` comes first, so the header carries
//! the exact object count. Memory is bounded: one page of a scan and about one
//! [`EXPORT_CHUNK`] of encoded bytes at a time, whatever the cluster's size; the cluster
//! keeps serving reads and writes meanwhile (an export that outlasts the event window
//! fails with 410, as a long list does).
//!
//! Not exported: what is not the cluster's own stored data (built-in objects rendered on
//! read, such as the default ClusterRoles) and the server's per-cluster state records.

use std::collections::VecDeque;
use std::sync::Arc;

use bytes::Bytes;
use kplane_archive::{Header, Record, Writer, CRD_RESOURCE, FORMAT_VERSION};
use kplane_storage::{KeyValue, Prefix, RangeScan, Revision, Storage};
use kplane_types::ClusterName;

use crate::cluster_states::STATE_RESOURCE;
use crate::error::{ApiError, ApiResult};
use crate::Registry;

/// The size of the chunks [`ExportStream::next_chunk`] hands out (a chunk may exceed it
/// by one record).
pub const EXPORT_CHUNK: usize = 256 * 1024;

/// Keys read from storage per page of an export's scans.
const EXPORT_PAGE: usize = 500;

/// One scan of an export: a cluster's CRDs, or the rest of its keys.
#[derive(Clone, Debug)]
struct Range {
    cluster: String,
    crds: bool,
}

impl Range {
    fn prefix(&self) -> Prefix {
        if self.crds {
            Prefix::resource(self.cluster.as_str(), CRD_RESOURCE)
        } else {
            Prefix::cluster(self.cluster.as_str())
        }
    }

    /// Whether the scan's `kv` belongs in the archive (the rest skips the CRDs, which
    /// came first, and the server's state records).
    fn exports(&self, kv: &KeyValue) -> bool {
        kv.key.resource != STATE_RESOURCE && (self.crds || kv.key.resource != CRD_RESOURCE)
    }
}

/// An export in progress: call [`ExportStream::next_chunk`] until it returns `None`.
pub struct ExportStream {
    header: Header,
    storage: Arc<dyn Storage>,
    ranges: VecDeque<Range>,
    scan: Option<(Range, Box<dyn RangeScan>)>,
    writer: Option<Writer<Vec<u8>>>,
}

impl std::fmt::Debug for ExportStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportStream")
            .field("cluster", &self.header.cluster)
            .field("revision", &self.header.revision)
            .finish_non_exhaustive()
    }
}

fn format_error(e: &kplane_archive::Error) -> ApiError {
    ApiError::internal(format!("writing the archive: {e}"))
}

impl ExportStream {
    /// The archive's header (cluster, revision, object count, ...).
    pub fn header(&self) -> &Header {
        &self.header
    }

    /// The next chunk of encoded archive bytes (about [`EXPORT_CHUNK`]), or `None` once
    /// the trailer was handed out. An error ends the export (the archive is incomplete and
    /// a reader refuses it).
    pub async fn next_chunk(&mut self) -> ApiResult<Option<Bytes>> {
        loop {
            let Some(writer) = self.writer.as_mut() else {
                return Ok(None);
            };
            if writer.get_mut().len() >= EXPORT_CHUNK {
                return Ok(Some(Bytes::from(std::mem::take(writer.get_mut()))));
            }
            if self.scan.is_none() {
                let Some(range) = self.ranges.pop_front() else {
                    return self.finish().map(Some);
                };
                let scan = self
                    .storage
                    .scan(&range.prefix(), Some(self.header.revision), EXPORT_PAGE)
                    .await?;
                self.scan = Some((range, scan));
            }
            let Some((range, scan)) = self.scan.as_mut() else {
                continue;
            };
            let Some(page) = scan.next_page().await? else {
                self.scan = None;
                continue;
            };
            for kv in page.into_iter().filter(|kv| range.exports(kv)) {
                let rec = Record {
                    cluster: kv.key.cluster,
                    resource: kv.key.resource,
                    namespace: kv.key.namespace,
                    name: kv.key.name,
                    value: kv.value.to_vec(),
                };
                writer.write(&rec).map_err(|e| format_error(&e))?;
            }
        }
    }

    /// Writes the trailer and hands out what is left.
    fn finish(&mut self) -> ApiResult<Bytes> {
        let writer = self
            .writer
            .take()
            .ok_or_else(|| ApiError::internal("the export already finished"))?;
        let (rest, _) = writer.finish_into_inner().map_err(|e| format_error(&e))?;
        Ok(Bytes::from(rest))
    }
}

impl Registry {
    /// The work of [`Archive::export`](crate::archive::Archive::export).
    pub(crate) async fn export(
        &self,
        root: &ClusterName,
        recursive: bool,
        compress: bool,
    ) -> ApiResult<ExportStream> {
        self.require_cluster(root)?;
        self.clusters.table.check_request(root)?;
        let revision = self.storage.current_revision();
        let mut clusters = vec![root.clone()];
        if recursive {
            clusters.extend(self.existing_descendants(root));
        }
        let ranges: VecDeque<Range> = clusters
            .iter()
            .flat_map(|c| {
                [true, false].map(|crds| Range {
                    cluster: c.to_string(),
                    crds,
                })
            })
            .collect();
        let mut object_count = 0;
        let mut resources = std::collections::BTreeSet::new();
        for range in &ranges {
            object_count += self.count_range(range, revision, &mut resources).await?;
        }
        // What the archive holds in the clear that the store keeps encrypted.
        let decrypted = resources
            .into_iter()
            .filter(|r| self.storage.encrypts(r))
            .collect();
        let header = Header {
            format_version: FORMAT_VERSION,
            kplane_version: self.server_version(),
            source_server: self.external_url().unwrap_or_default().to_string(),
            cluster: root.to_string(),
            recursive,
            revision,
            object_count,
            created: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            decrypted,
        };
        let writer = Writer::new(Vec::with_capacity(EXPORT_CHUNK), &header, compress)
            .map_err(|e| format_error(&e))?;
        Ok(ExportStream {
            header,
            storage: self.storage.clone(),
            ranges,
            scan: None,
            writer: Some(writer),
        })
    }

    /// How many keys of `range` an export at `revision` writes; their storage resources
    /// are added to `resources`.
    async fn count_range(
        &self,
        range: &Range,
        revision: Revision,
        resources: &mut std::collections::BTreeSet<String>,
    ) -> ApiResult<u64> {
        let mut scan = self
            .storage
            .scan(&range.prefix(), Some(revision), EXPORT_PAGE)
            .await?;
        let mut n = 0;
        while let Some(page) = scan.next_page().await? {
            for kv in page.iter().filter(|kv| range.exports(kv)) {
                n += 1;
                if !resources.contains(&kv.key.resource) {
                    resources.insert(kv.key.resource.clone());
                }
            }
        }
        Ok(n)
    }
}
