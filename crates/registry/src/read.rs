//! The read path: get and list (with selectors, paging over a consistent snapshot, and
//! the resourceVersion/resourceVersionMatch rules). Stored bytes are returned as they are
//! whenever the client's version is the storage version, so a LIST does not re-encode.
//! A list without `limit` is read in batches at one revision as it is consumed: a
//! [`ListPage`] hands out its items only as a whole ([`ListPage::collect`]) or batch by
//! batch to the end ([`ListPage::next_batch`]), so a response body, a watch's initial
//! events and a deletecollection all see every item with bounded memory.

use bytes::Bytes;
use kplane_storage::{Key, KeyValue, ListOptions, Prefix, Revision, Storage};
use std::sync::Arc;

use super::builtins::Overlay;
use super::continue_token;
use super::selection::Selection;
use super::{storage_error, too_large_rv, Registry, ResourceType, Target};
use crate::cluster_states::ClusterTable;
use crate::error::{ApiError, ApiResult};
use crate::options::{ListParams, RvMatch};
use kplane_types::Status;

/// Items read from storage at a time for a list without `limit`. A batch of 1 KiB objects
/// (~0.8 MB) stays in the CPU caches while it is encoded and sent; collecting a 30,000-item
/// list first made its cost per item grow with its length.
pub const LIST_BATCH: usize = 500;

/// A list as the registry read it: its revision, its continue token (for a `limit` page),
/// and its items, of which only the first batch has been read yet.
///
/// The items are private on purpose. A list without `limit` is read [`LIST_BATCH`] items
/// at a time, so the items read so far are not the list: the only ways to reach them are
/// [`ListPage::collect`] (every item, in memory) and [`ListPage::next_batch`] until it
/// returns `None` (bounded memory). A consumer cannot see the first batch alone by
/// accident, which is how internal callers used to lose everything after item 500.
#[must_use = "a list's items are only reached through collect() or next_batch()"]
#[derive(Debug)]
pub struct ListPage {
    revision: Revision,
    continue_token: Option<String>,
    /// How many items follow a `limit` page (`remainingItemCount`), when known.
    remaining: Option<u64>,
    /// The batch read eagerly (so that its errors still become a Status), until taken.
    first: Option<Vec<Bytes>>,
    /// The batches still to read; `None` when `first` is everything. Boxed: most lists
    /// have none, and the page is moved around by value.
    rest: Option<Box<ListRest>>,
}

/// The 410 for a continuation from `start` whose snapshot is gone: the rest of the list can
/// still be had, at the latest revision, with the token the Status offers (etcd3's store).
fn inconsistent_continue(start: &Key) -> ApiError {
    let token = continue_token::encode(continue_token::LATEST, start, None);
    ApiError::from(Status::expired(INCONSISTENT_CONTINUE).with_continue(token))
}

/// etcd3's store's answer to a continue token whose snapshot was compacted away.
const INCONSISTENT_CONTINUE: &str = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.";

/// Every item of a list, read into memory ([`ListPage::collect`]).
#[derive(Debug)]
pub struct CompleteList {
    pub items: Vec<Bytes>,
    pub revision: Revision,
    pub continue_token: Option<String>,
    /// How many items follow this page (`remainingItemCount`), when known.
    pub remaining: Option<u64>,
}

impl ListPage {
    /// A list whose items are all known (the objects a deletecollection removed).
    pub fn from_items(items: Vec<Bytes>, revision: Revision) -> ListPage {
        ListPage {
            revision,
            continue_token: None,
            remaining: None,
            first: Some(items),
            rest: None,
        }
    }

    /// The list's `resourceVersion`.
    pub fn revision(&self) -> Revision {
        self.revision
    }

    /// The continue token of a `limit` page with more items after it.
    pub fn continue_token(&self) -> Option<&str> {
        self.continue_token.as_deref()
    }

    /// How many items follow a `limit` page (its `remainingItemCount`). As upstream, known
    /// only for a list without label or field selectors (the count is of stored keys);
    /// `None` too for a list of several clusters and for built-in objects merged in.
    pub fn remaining_item_count(&self) -> Option<u64> {
        self.remaining
    }

    /// The next batch of items, in key order; `None` once every item has been returned.
    /// An error means the list could not be completed (its snapshot was compacted while it
    /// was read): the consumer must not treat what it got so far as the list.
    pub async fn next_batch(&mut self) -> ApiResult<Option<Vec<Bytes>>> {
        if let Some(first) = self.first.take() {
            return Ok(Some(first));
        }
        match self.rest.as_mut() {
            Some(rest) => {
                let batch = rest.next_batch().await?;
                if batch.is_none() {
                    self.rest = None;
                }
                Ok(batch)
            }
            None => Ok(None),
        }
    }

    /// Every item of the list, read into memory (for representations built whole, such as
    /// Table, and for callers that need the whole set).
    pub async fn collect(mut self) -> ApiResult<CompleteList> {
        let mut items = Vec::new();
        while let Some(batch) = self.next_batch().await? {
            if items.is_empty() {
                items = batch;
            } else {
                items.extend(batch);
            }
        }
        Ok(CompleteList {
            items,
            revision: self.revision,
            continue_token: self.continue_token,
            remaining: self.remaining,
        })
    }

    /// The complete list without a storage read when nothing is left to read; otherwise
    /// the page itself, to be read with [`ListPage::next_batch`].
    pub fn into_complete(self) -> Result<CompleteList, ListPage> {
        match (self.rest.is_none(), self.first) {
            (true, first) => Ok(CompleteList {
                items: first.unwrap_or_default(),
                revision: self.revision,
                continue_token: self.continue_token,
                remaining: self.remaining,
            }),
            (false, first) => Err(ListPage { first, ..self }),
        }
    }
}

impl From<CompleteList> for ListPage {
    fn from(c: CompleteList) -> ListPage {
        ListPage {
            revision: c.revision,
            continue_token: c.continue_token,
            remaining: c.remaining,
            first: Some(c.items),
            rest: None,
        }
    }
}

/// Which state the batches after the first read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum BatchReads {
    /// The state at the list's revision: the whole list is one consistent snapshot (the
    /// same reads a client's `continue` pages make). Fails once the revision is compacted,
    /// i.e. when reading the list takes longer than the storage's event window.
    AtListRevision,
    /// The latest state after the last key returned. For work that changes the listed
    /// objects as it goes and may outlast the event window (deleting a collection): every
    /// object present from the start to the end of the work is returned exactly once.
    Latest,
}

/// The unread part of a list: the next batches, after the last key returned. A batch that
/// fails aborts the consumer (a response body is aborted, never cut short silently).
struct ListRest {
    storage: Arc<dyn Storage>,
    rt: Arc<ResourceType>,
    prefix: Prefix,
    selection: Selection,
    revision: Revision,
    reads: BatchReads,
    /// The last key returned; `None` once the list is complete.
    after: Option<Key>,
    /// The built-in objects merged in.
    overlay: Option<Overlay>,
    /// A multi-cluster list skips the clusters this table hides.
    hide: Option<Arc<ClusterTable>>,
    /// Conversion webhooks' transport (custom resources with one).
    transport: Option<Arc<dyn crate::webhooks::WebhookTransport>>,
}

impl std::fmt::Debug for ListRest {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ListRest")
            .field("revision", &self.revision)
            .field("reads", &self.reads)
            .field("after", &self.after)
            .finish_non_exhaustive()
    }
}

impl ListRest {
    /// The next batch, or `None` once the list is complete.
    async fn next_batch(&mut self) -> ApiResult<Option<Vec<Bytes>>> {
        let Some(after) = self.after.take() else {
            return Ok(None);
        };
        let opts = ListOptions {
            at_revision: (self.reads == BatchReads::AtListRevision).then_some(self.revision),
            start_after: Some(after),
            limit: Some(LIST_BATCH),
        };
        let read = read_page(
            Source {
                storage: &*self.storage,
                transport: self.transport.as_deref(),
            },
            &self.prefix,
            &self.rt,
            &self.selection,
            &opts,
            self.overlay.as_ref(),
            self.hide.as_deref(),
        )
        .await?;
        self.after = read.last;
        Ok(Some(read.items))
    }
}

/// One storage read of a list, in the API's representation.
struct Read {
    items: Vec<Bytes>,
    revision: Revision,
    /// The last key returned when more items follow it.
    last: Option<Key>,
}

/// Reads the items of `prefix` that `selection` matches, as `opts` says (the one storage
/// read behind a page and behind every batch of a streamed list), with the built-in
/// objects of `overlay` merged in, without the objects of the clusters `hide` hides.
/// Where a page is read from, and how its custom resources reach the request's version.
struct Source<'a> {
    storage: &'a dyn Storage,
    /// Conversion webhooks' transport.
    transport: Option<&'a dyn crate::webhooks::WebhookTransport>,
}

async fn read_page(
    src: Source<'_>,
    prefix: &Prefix,
    rt: &ResourceType,
    selection: &Selection,
    opts: &ListOptions,
    overlay: Option<&Overlay>,
    hide: Option<&ClusterTable>,
) -> ApiResult<Read> {
    let Source { storage, transport } = src;
    let filter = |kv: &KeyValue| {
        hide.is_none_or(|h| !h.hides(&kv.key.cluster)) && selection.matches_bytes(&kv.value)
    };
    let filter: Option<kplane_storage::Filter<'_>> = if selection.is_everything() && hide.is_none()
    {
        None
    } else {
        Some(&filter)
    };
    let res = storage
        .list(prefix, opts, filter)
        .await
        .map_err(|e| list_error(e, rt))?;
    let last = match (res.more, res.items.last()) {
        (true, Some(last)) => Some(last.key.clone()),
        _ => None,
    };
    if let Some(ov) = overlay {
        return merge_builtins(res.items, res.revision, last, rt, selection, opts, ov);
    }
    // Objects of a multi-cluster list name their cluster; one cluster's are sent as read.
    let annotate = prefix.cluster.one().is_none();
    let (keys, values): (Vec<Key>, Vec<Bytes>) =
        res.items.into_iter().map(|kv| (kv.key, kv.value)).unzip();
    let converted = crate::conversion::paths::api_list(transport, rt, values).await?;
    let items = keys
        .into_iter()
        .zip(converted)
        .map(|(key, obj)| {
            if annotate {
                crate::wildcard::annotate(&obj, &key.cluster)
            } else {
                Ok(obj)
            }
        })
        .collect::<ApiResult<Vec<_>>>()?;
    Ok(Read {
        items,
        revision: res.revision,
        last,
    })
}

/// A page of stored items (in key order, `last` set when more follow) with the built-in
/// objects of `ov` that fall in its range merged in by name, cut at `opts.limit`.
fn merge_builtins(
    stored: Vec<KeyValue>,
    revision: Revision,
    last: Option<Key>,
    rt: &ResourceType,
    selection: &Selection,
    opts: &ListOptions,
    ov: &Overlay,
) -> ApiResult<Read> {
    let after = opts.start_after.as_ref().map(|k| k.name.as_str());
    // With more stored items to come, only the built-ins up to the last one read belong
    // here; the rest come with the pages that reach them.
    let upto: Option<String> = last.as_ref().map(|k| k.name.clone());
    let mut builtins = ov
        .names_between(after, upto.as_deref())
        .filter_map(|n| Some((n.to_string(), ov.render(rt, n)?)))
        .filter(|(_, b)| selection.matches_bytes(b))
        .peekable();
    let mut stored = stored.into_iter().peekable();
    let mut merged: Vec<(String, Bytes)> = Vec::new();
    loop {
        let take_stored = match (stored.peek(), builtins.peek()) {
            (Some(kv), Some((n, _))) => kv.key.name < *n,
            (Some(_), None) => true,
            (None, Some(_)) => false,
            (None, None) => break,
        };
        if take_stored {
            if let Some(kv) = stored.next() {
                merged.push((kv.key.name, super::to_api(rt, kv.value)?));
            }
        } else if let Some(b) = builtins.next() {
            merged.push(b);
        }
    }
    let mut last = last;
    if let Some(limit) = opts.limit.filter(|l| merged.len() > *l && *l > 0) {
        merged.truncate(limit);
        last = merged.last().map(|(name, _)| {
            Key::new(
                ov.cluster.as_str(),
                rt.storage_resource.as_str(),
                "",
                name.as_str(),
            )
        });
    }
    Ok(Read {
        items: merged.into_iter().map(|(_, b)| b).collect(),
        revision,
        last,
    })
}

fn list_error(e: kplane_storage::Error, rt: &ResourceType) -> ApiError {
    match e {
        kplane_storage::Error::Compacted {
            requested,
            compacted,
        } => ApiError::from(Status::expired(format!(
            "The resourceVersion for the provided list is too old: {requested} ({compacted})"
        ))),
        other => storage_error(other, rt, ""),
    }
}

fn parse_rv(s: &str) -> ApiResult<Revision> {
    s.parse::<Revision>()
        .map_err(|_| ApiError::bad_request(format!("invalid resource version {s:?}")))
}

impl Registry {
    /// Reads one object in the target's API version (a built-in one when none is stored).
    pub async fn get(&self, t: &Target, name: &str) -> ApiResult<Bytes> {
        match self.get_current(t, name).await? {
            Some(kv) => self.api_bytes(&t.rt, kv.value).await,
            None => Err(ApiError::from(Status::not_found(
                &t.rt.group,
                &t.rt.plural,
                name,
            ))),
        }
    }

    /// Reads one stored object (storage form) with its revisions.
    pub(super) async fn get_stored(&self, t: &Target, name: &str) -> ApiResult<Option<KeyValue>> {
        let key = t.key(name)?;
        self.storage
            .get(&key)
            .await
            .map_err(|e| storage_error(e, &t.rt, name))
    }

    /// Reads one stored object by key, as stored (the controllers, which address objects
    /// by key rather than by request target).
    pub(crate) async fn get_by_key(
        &self,
        key: &kplane_storage::Key,
    ) -> ApiResult<Option<KeyValue>> {
        self.storage.get(key).await.map_err(ApiError::from)
    }

    /// One page of the stored objects under `prefix`, as stored, of those `filter` keeps
    /// (the controllers' scans).
    pub(crate) async fn list_by_prefix(
        &self,
        prefix: &kplane_storage::Prefix,
        opts: &kplane_storage::ListOptions,
        filter: Option<kplane_storage::Filter<'_>>,
    ) -> ApiResult<kplane_storage::ListResult> {
        self.storage
            .list(prefix, opts, filter)
            .await
            .map_err(ApiError::from)
    }

    /// How many objects are stored under `prefix` (the controllers' checks).
    pub(crate) async fn count_by_prefix(&self, prefix: &kplane_storage::Prefix) -> ApiResult<u64> {
        self.storage.count(prefix).await.map_err(ApiError::from)
    }

    /// Reads and decodes one stored object by key (background workers, which address
    /// objects by key rather than by request target).
    pub(crate) async fn get_decoded(
        &self,
        key: &kplane_storage::Key,
    ) -> ApiResult<Option<(KeyValue, serde_json::Value)>> {
        let Some(kv) = self.storage.get(key).await.map_err(ApiError::from)? else {
            return Ok(None);
        };
        let obj =
            serde_json::from_slice(&kv.value).map_err(|e| ApiError::internal(e.to_string()))?;
        Ok(Some((kv, obj)))
    }

    /// Waits briefly for a resourceVersion the store has not reached yet.
    pub(super) async fn wait_for_revision(&self, rv: Revision) -> ApiResult<()> {
        for _ in 0..30 {
            if self.storage.current_revision() >= rv {
                return Ok(());
            }
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        }
        Err(too_large_rv())
    }

    /// Lists what `p` asks for: a `limit` page with its continue token, or without
    /// `limit` the whole list as one snapshot, read in batches as it is consumed.
    pub async fn list(&self, t: &Target, p: &ListParams) -> ApiResult<ListPage> {
        self.list_reading(t, p, BatchReads::AtListRevision, true)
            .await
    }

    /// Like [`Registry::list`] without `limit`, but every batch after the first reads the
    /// latest state ([`BatchReads::Latest`]): for deleting a collection, which changes the
    /// objects it lists and may take longer than the storage's event window.
    pub(super) async fn list_to_delete(&self, t: &Target, p: &ListParams) -> ApiResult<ListPage> {
        let mut lp = p.clone();
        lp.limit = None;
        lp.continue_token = None;
        // Built-in objects cannot be deleted: a collection's deletion leaves them.
        self.list_reading(t, &lp, BatchReads::Latest, false).await
    }

    async fn list_reading(
        &self,
        t: &Target,
        p: &ListParams,
        reads: BatchReads,
        with_builtins: bool,
    ) -> ApiResult<ListPage> {
        let selection = Selection::for_params(&t.rt, p)?;
        // Without a limit the list is read in batches (see `ListRest`).
        let batched = p.limit.is_none();
        let mut opts = ListOptions {
            limit: p.limit.or(Some(LIST_BATCH)),
            ..Default::default()
        };
        let prefix = t.prefix();
        // The count of what follows the previous page, when its token carries one.
        let mut carried = None;
        // Where a consistent continuation starts: should its snapshot go while the page is
        // read, the 410 offers the inconsistent continuation from there.
        let mut continued_after = None;
        if let Some(tok) = &p.continue_token {
            if p.resource_version.as_deref().is_some_and(|rv| rv != "0") {
                return Err(ApiError::bad_request(
                    "specifying resource version is not allowed when using continue",
                ));
            }
            let c = continue_token::decode(tok, &t.rt.storage_resource)?;
            if c.rv != continue_token::LATEST {
                self.clusters.table.check_rv(&t.prefix().cluster, c.rv)?;
                if c.rv < self.storage.compacted_revision() {
                    return Err(inconsistent_continue(&c.start));
                }
                opts.at_revision = Some(c.rv);
                continued_after = Some(c.start.clone());
                // A count is carried only for the range it was counted in.
                if prefix.contains(&c.start) {
                    carried = c.remaining;
                }
            }
            opts.start_after = Some(c.start);
        } else if let Some(rv) = p.resource_version.as_deref() {
            let n = parse_rv(rv)?;
            if n != 0 {
                self.clusters.table.check_rv(&t.prefix().cluster, n)?;
            }
            match p.rv_match {
                Some(RvMatch::Exact) => {
                    if n > self.storage.current_revision() {
                        self.wait_for_revision(n).await?;
                    }
                    opts.at_revision = Some(n);
                }
                _ if n == 0 => {}
                _ => self.wait_for_revision(n).await?,
            }
        }
        // Built-in objects are merged at one revision (a stored object of the same name
        // at that revision hides one), so the read is pinned first.
        let overlay = match with_builtins && self.builtins_of(t).is_some() {
            true => {
                let rev = *opts
                    .at_revision
                    .get_or_insert_with(|| self.storage.current_revision());
                self.list_overlay(t, rev).await?
            }
            false => None,
        };
        let hide = prefix
            .cluster
            .one()
            .is_none()
            .then(|| self.clusters.table.clone());
        let read = read_page(
            Source {
                storage: &*self.storage,
                transport: self.conversion_transport(),
            },
            &prefix,
            &t.rt,
            &selection,
            &opts,
            overlay.as_ref(),
            hide.as_deref(),
        )
        .await
        .map_err(|e| match &continued_after {
            Some(start) if e.code() == 410 => inconsistent_continue(start),
            _ => e,
        })?;
        // etcd's count of the rest of the range: exact only when every key is an item. A
        // continued list's count is the previous page's less this page's items, carried
        // in the token; the first page counts the rest once. The count is optional: a
        // page whose count fails is sent without one.
        let counted = !batched && selection.is_everything() && overlay.is_none() && hide.is_none();
        let remaining = match (&read.last, carried) {
            (Some(_), Some(before)) if counted => {
                Some(before.saturating_sub(read.items.len() as u64))
            }
            (Some(last), None) if counted => {
                match self.storage.count_after(&prefix, last, read.revision).await {
                    Ok(n) => Some(n),
                    Err(e) => {
                        tracing::debug!(error = %e, "remainingItemCount not counted");
                        None
                    }
                }
            }
            _ => None,
        };
        // Keys created after the snapshot can make a store report more after a page that
        // in fact ends the list: a count of none left ends it, as etcd's does.
        let (last, remaining) = match remaining {
            Some(0) => (None, None),
            _ => (read.last, remaining),
        };
        let (continue_token, rest) = match last {
            Some(after) if batched => (
                None,
                Some(Box::new(ListRest {
                    storage: self.storage.clone(),
                    rt: t.rt.clone(),
                    prefix,
                    selection,
                    revision: read.revision,
                    reads,
                    after: Some(after),
                    overlay,
                    hide,
                    transport: self.admission.webhook_transport().cloned(),
                })),
            ),
            Some(last) => (
                Some(continue_token::encode(read.revision, &last, remaining)),
                None,
            ),
            None => (None, None),
        };
        Ok(ListPage {
            revision: read.revision,
            continue_token,
            remaining,
            first: Some(read.items),
            rest,
        })
    }
}

impl crate::Registry {
    /// The stored objects of `resource` (a storage resource) in `cluster`, decoded, in
    /// key order (which is name order): what a configuration cache is built from.
    pub(crate) async fn stored_objects(
        &self,
        cluster: &kplane_types::ClusterName,
        resource: &str,
    ) -> crate::error::ApiResult<Vec<serde_json::Value>> {
        let prefix = kplane_storage::Prefix::resource(cluster.as_str(), resource);
        let res = self
            .storage
            .list(&prefix, &kplane_storage::ListOptions::default(), None)
            .await?;
        Ok(res
            .items
            .iter()
            .filter_map(|kv| serde_json::from_slice(&kv.value).ok())
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin_types::builtin;
    use crate::catalog::Catalog;
    use crate::options::WriteParams;
    use crate::DeleteParams;

    use serde_json::json;

    async fn registry() -> (Arc<Registry>, Target) {
        let storage: Arc<dyn Storage> = crate::testing::memory_store();
        let catalog = Arc::new(Catalog::new(builtin()));
        let (_tx, shutdown) = tokio::sync::watch::channel(false);
        let (reg, _queue) = Registry::new(storage, catalog.clone(), String::new(), shutdown);
        reg.ensure_cluster(&kplane_types::ClusterName::root())
            .await
            .unwrap();
        let rt = catalog.get("", "v1", "configmaps").unwrap().clone();
        let target = Target {
            cluster: kplane_types::ClusterScope::One(kplane_types::ClusterName::root()),
            rt,
            namespace: Some("default".into()),
        };
        (reg, target)
    }

    /// A registry holding `n` ConfigMaps `cm-00000`.. with data `v: value`, labelled
    /// `odd=<odd(i)>`.
    async fn with_configmaps(
        n: usize,
        value: &str,
        odd: impl Fn(usize) -> bool,
    ) -> (tempfile::TempDir, Arc<Registry>, Target) {
        let dir = tempfile::tempdir().unwrap();
        let (reg, t) = registry().await;
        let w = WriteParams::default();
        for i in 0..n {
            reg.create(&t, cm(&format!("cm-{i:05}"), value, odd(i)), &w)
                .await
                .unwrap();
        }
        (dir, reg, t)
    }

    fn cm(name: &str, value: &str, odd: bool) -> serde_json::Value {
        json!({"apiVersion": "v1", "kind": "ConfigMap",
               "metadata": {"name": name, "labels": {"odd": odd.to_string()}},
               "data": {"v": value}})
    }

    /// The test's ConfigMaps (not the namespace's kube-root-ca.crt), as (name, data.v).
    fn names_and_values(items: &[Bytes]) -> Vec<(String, String)> {
        items
            .iter()
            .filter_map(|b| {
                let v: serde_json::Value = serde_json::from_slice(b).unwrap();
                let s = |p: &str| v.pointer(p).and_then(|x| x.as_str()).map(str::to_string);
                Some((s("/metadata/name")?, s("/data/v")?))
            })
            .collect()
    }

    #[tokio::test]
    async fn a_list_without_limit_is_read_in_batches_of_one_snapshot() {
        let n = 2 * LIST_BATCH + 100;
        let (_dir, reg, t) = with_configmaps(n, "old", |i| i % 2 == 1).await;
        let w = WriteParams::default();
        let page = reg.list(&t, &ListParams::default()).await.unwrap();
        assert_eq!(
            page.first.as_ref().map(Vec::len),
            Some(LIST_BATCH),
            "the first batch is read eagerly"
        );
        assert!(page.rest.is_some() && page.continue_token.is_none());
        // Changes after the list's revision, in batches not read yet, must not show.
        let last = format!("cm-{:05}", n - 1);
        reg.delete(&t, &last, &DeleteParams::default())
            .await
            .unwrap();
        reg.update(&t, "cm-00900", None, cm("cm-00900", "new", false), &w)
            .await
            .unwrap();
        reg.create(&t, cm("cm-99999", "new", false), &w)
            .await
            .unwrap();
        let page = page.collect().await.unwrap();
        let got = names_and_values(&page.items);
        let want: Vec<_> = (0..n)
            .map(|i| (format!("cm-{i:05}"), "old".to_string()))
            .collect();
        assert_eq!(got, want, "the whole list is the state at its revision");
        // A new list sees them.
        let now = reg.list(&t, &ListParams::default()).await.unwrap();
        let now = names_and_values(&now.collect().await.unwrap().items);
        assert_eq!(now.len(), n);
        assert!(now.contains(&("cm-99999".into(), "new".into())));
        assert!(now.contains(&("cm-00900".into(), "new".into())));
        assert!(!now.iter().any(|(name, _)| *name == last));
    }

    #[tokio::test]
    async fn batches_count_only_selected_items_and_limit_still_pages() {
        let n = 3 * LIST_BATCH;
        let (_dir, reg, t) = with_configmaps(n, "v", |i| i % 3 == 0).await;
        let selected = ListParams {
            label_selector: Some("odd=true".into()),
            ..Default::default()
        };
        let page = reg
            .list(&t, &selected)
            .await
            .unwrap()
            .collect()
            .await
            .unwrap();
        let got = names_and_values(&page.items);
        assert_eq!(got.len(), n / 3);
        assert!(got
            .iter()
            .enumerate()
            .all(|(k, (name, _))| *name == format!("cm-{:05}", 3 * k)));
        // An explicit limit is a page with a continue token, as before.
        let limited = ListParams {
            limit: Some(700),
            ..Default::default()
        };
        let page = reg.list(&t, &limited).await.unwrap();
        assert!(page.rest.is_none() && page.continue_token.is_some());
        assert_eq!(page.collect().await.unwrap().items.len(), 700);
    }

    #[tokio::test]
    async fn limit_pages_count_what_follows_them_at_their_snapshot() {
        let n = kplane_storage::COUNT_CHUNK + LIST_BATCH + 3;
        let (_dir, reg, t) = with_configmaps(n, "v", |i| i % 2 == 1).await;
        let total = reg
            .list(&t, &ListParams::default())
            .await
            .unwrap()
            .collect()
            .await
            .unwrap()
            .items
            .len();
        assert!(total >= n);
        let mut params = ListParams {
            limit: Some(17),
            ..Default::default()
        };
        let first = reg.list(&t, &params).await.unwrap();
        assert_eq!(first.remaining_item_count(), Some((total - 17) as u64));
        // Deleting after the first page changes nothing the pages of its snapshot count.
        for name in ["cm-00100", "cm-00101"] {
            reg.delete(&t, name, &DeleteParams::default())
                .await
                .unwrap();
        }
        let mut seen = 17;
        let mut token = first.continue_token().map(str::to_string);
        params.limit = Some(400);
        while let Some(tok) = token {
            params.continue_token = Some(tok);
            let page = reg.list(&t, &params).await.unwrap();
            token = page.continue_token().map(str::to_string);
            let remaining = page.remaining_item_count();
            seen += page.collect().await.unwrap().items.len();
            match token {
                Some(_) => assert_eq!(remaining, Some((total - seen) as u64)),
                None => assert_eq!(remaining, None),
            }
        }
        assert_eq!(seen, total);
        // Selectors make the count unknowable without reading every object: none.
        let selected = ListParams {
            limit: Some(17),
            label_selector: Some("odd=true".into()),
            ..Default::default()
        };
        let page = reg.list(&t, &selected).await.unwrap();
        assert!(page.continue_token().is_some());
        assert_eq!(page.remaining_item_count(), None);
        // Its token carries no count: a continuation without the selector counts the rest
        // at the token's snapshot, which is after the two deletes. The selected page ended
        // at the 17th odd name, cm-00033: 34 names up to it.
        let token = page.continue_token().map(str::to_string);
        let page = reg
            .list(
                &t,
                &ListParams {
                    limit: Some(10),
                    continue_token: token,
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        assert_eq!(
            page.remaining_item_count(),
            Some((total - 2 - 34 - 10) as u64)
        );
        // A page that ends the list has no count either.
        let everything = ListParams {
            limit: Some(total + 1),
            ..Default::default()
        };
        let page = reg.list(&t, &everything).await.unwrap();
        assert_eq!(page.continue_token(), None);
        assert_eq!(page.remaining_item_count(), None);
    }

    #[tokio::test]
    async fn a_compacted_continue_offers_an_inconsistent_continuation_at_the_latest_revision() {
        let mem = kplane_storage::memory::MemoryStorage::new(Default::default());
        let storage: Arc<dyn Storage> = mem.clone();
        let catalog = Arc::new(Catalog::new(builtin()));
        let (_tx, shutdown) = tokio::sync::watch::channel(false);
        let (reg, _queue) = Registry::new(storage, catalog.clone(), String::new(), shutdown);
        reg.ensure_cluster(&kplane_types::ClusterName::root())
            .await
            .unwrap();
        let t = Target {
            cluster: kplane_types::ClusterScope::One(kplane_types::ClusterName::root()),
            rt: catalog.get("", "v1", "configmaps").unwrap().clone(),
            namespace: Some("default".into()),
        };
        let w = WriteParams::default();
        for i in 0..30 {
            reg.create(&t, cm(&format!("cm-{i:05}"), "v", false), &w)
                .await
                .unwrap();
        }
        let first = reg
            .list(
                &t,
                &ListParams {
                    limit: Some(10),
                    ..Default::default()
                },
            )
            .await
            .unwrap();
        let first_rv = first.revision();
        let token = first.continue_token().unwrap().to_string();
        // A change after the first page, then its snapshot is compacted away.
        reg.delete(&t, "cm-00015", &DeleteParams::default())
            .await
            .unwrap();
        mem.compact_to(mem.current_revision());
        let mut params = ListParams {
            limit: Some(10),
            continue_token: Some(token),
            ..Default::default()
        };
        let err = reg.list(&t, &params).await.err().unwrap();
        assert_eq!(err.code(), 410);
        assert_eq!(err.0.message, INCONSISTENT_CONTINUE);
        let body = err.0.to_json();
        let inconsistent = body["metadata"]["continue"].as_str().unwrap().to_string();
        assert_eq!(
            continue_token::decode(&inconsistent, &t.rt.storage_resource)
                .unwrap()
                .rv,
            continue_token::LATEST
        );
        // The rest, from where the first page stopped, at the latest revision: the delete
        // shows; the pages after it keep that revision and count what follows.
        params.continue_token = Some(inconsistent);
        let second = reg.list(&t, &params).await.unwrap();
        assert!(second.revision() > first_rv);
        let second_rv = second.revision();
        let remaining = second.remaining_item_count();
        params.continue_token = second.continue_token().map(str::to_string);
        let names = names_and_values(&second.collect().await.unwrap().items);
        let want: Vec<String> = (10..21)
            .filter(|i| *i != 15)
            .map(|i| format!("cm-{i:05}"))
            .collect();
        assert_eq!(names.into_iter().map(|(n, _)| n).collect::<Vec<_>>(), want);
        let third = reg.list(&t, &params).await.unwrap();
        assert_eq!(third.revision(), second_rv);
        let third = names_and_values(&third.collect().await.unwrap().items);
        assert_eq!(
            remaining,
            Some(third.len() as u64 + 1),
            "kube-root-ca.crt too"
        );
        assert_eq!(third.first().map(|(n, _)| n.as_str()), Some("cm-00021"));
    }

    #[tokio::test]
    async fn a_page_that_ends_the_snapshot_has_no_token_and_a_count_is_kept_to_its_range() {
        use crate::testing::{configmap, create_all, create_namespace};
        let f = crate::testing::fixture_with(Default::default()).await;
        let reg = &f.reg;
        let a = create_namespace(reg, "a").await;
        let b = create_namespace(reg, "b").await;
        // Names that sort before kube-root-ca.crt, which each namespace also holds.
        let names = |n: usize| {
            (0..n)
                .map(|i| configmap(&format!("a-{i:02}"), "x"))
                .collect()
        };
        create_all(reg, &a, names(20)).await;
        create_all(reg, &b, names(30)).await;
        let ten = |token: Option<String>| ListParams {
            limit: Some(10),
            continue_token: token,
            ..Default::default()
        };
        let first = reg.list(&a, &ten(None)).await.unwrap();
        assert_eq!(first.remaining_item_count(), Some(11));
        let token = first.continue_token().map(str::to_string);
        // A name created after the snapshot, after everything the snapshot holds.
        create_all(reg, &a, vec![configmap("z-new", "x")]).await;
        // The rest of the snapshot exactly fills the next page (ten names and
        // kube-root-ca.crt); the store sees the new name after it, but the count says the
        // snapshot ends: no token, no count.
        let mut eleven = ten(token.clone());
        eleven.limit = Some(11);
        let second = reg.list(&a, &eleven).await.unwrap();
        assert_eq!(second.continue_token(), None);
        assert_eq!(second.remaining_item_count(), None);
        assert_eq!(second.collect().await.unwrap().items.len(), 11);

        // The first token of namespace `a`, sent for `b`: the page starts after a key of
        // `a`, so at b's first name, and its count is b's own (31 - 10), not the carried
        // one (11 - 10).
        let in_b = reg.list(&b, &ten(token)).await.unwrap();
        assert_eq!(in_b.remaining_item_count(), Some(21), "counted in b");
    }
}
