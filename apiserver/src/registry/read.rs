//! The read path: get and list (with selectors, paging over a consistent snapshot, and
//! the resourceVersion/resourceVersionMatch rules). Stored bytes are returned as they are
//! whenever the client's version is the storage version, so a LIST does not re-encode.

use base64::Engine;
use bytes::Bytes;
use kplane_storage::{Key, KeyValue, ListOptions, Revision};
use serde_json::json;

use super::selection::Selection;
use super::{storage_error, too_large_rv, Registry, Target};
use crate::error::{ApiError, ApiResult};
use crate::http::query::{ListParams, RvMatch};
use kplane_types::Status;

/// One page of a list.
#[derive(Debug)]
pub struct ListPage {
    pub items: Vec<Bytes>,
    pub revision: Revision,
    pub continue_token: Option<String>,
}

/// The decoded form of a continue token.
struct ContinueToken {
    rv: Revision,
    start: Key,
}

fn encode_continue(rv: Revision, last: &Key) -> String {
    let body = json!({"v": "meta.k8s.io/v1", "rv": rv, "c": last.cluster, "ns": last.namespace, "n": last.name});
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(body.to_string())
}

fn decode_continue(token: &str, resource: &str) -> ApiResult<ContinueToken> {
    let bad = || {
        ApiError::bad_request("continue key is not valid: incorrect encoded start resourceVersion (version meta.k8s.io/v1)")
    };
    let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| bad())?;
    let v: serde_json::Value = serde_json::from_slice(&raw).map_err(|_| bad())?;
    let s = |k: &str| v.get(k).and_then(|x| x.as_str()).map(str::to_string);
    Ok(ContinueToken {
        rv: v.get("rv").and_then(|x| x.as_u64()).ok_or_else(bad)?,
        start: Key::new(
            s("c").ok_or_else(bad)?,
            resource,
            s("ns").ok_or_else(bad)?,
            s("n").ok_or_else(bad)?,
        ),
    })
}

fn parse_rv(s: &str) -> ApiResult<Revision> {
    s.parse::<Revision>()
        .map_err(|_| ApiError::bad_request(format!("invalid resource version {s:?}")))
}

impl Registry {
    /// Reads one object in the target's API version.
    pub async fn get(&self, t: &Target, name: &str) -> ApiResult<Bytes> {
        let key = t.key(name)?;
        match self
            .storage
            .get(&key)
            .await
            .map_err(|e| storage_error(e, &t.rt, name))?
        {
            Some(kv) => self.to_api(&t.rt, kv.value),
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

    /// Reads and decodes one stored object by key (background workers, which address
    /// objects by key rather than by request target).
    pub(super) async fn get_decoded(
        &self,
        key: &kplane_storage::Key,
    ) -> ApiResult<Option<(KeyValue, serde_json::Value)>> {
        let Some(kv) = self
            .storage
            .get(key)
            .await
            .map_err(|e| ApiError::internal(e.to_string()))?
        else {
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

    /// Lists one page.
    pub async fn list(&self, t: &Target, p: &ListParams) -> ApiResult<ListPage> {
        let selection = Selection::new(
            &t.rt,
            p.label_selector.as_deref(),
            p.field_selector.as_deref(),
        )?;
        let mut opts = ListOptions {
            limit: p.limit,
            ..Default::default()
        };
        if let Some(tok) = &p.continue_token {
            if p.resource_version.as_deref().is_some_and(|rv| rv != "0") {
                return Err(ApiError::bad_request(
                    "specifying resource version is not allowed when using continue",
                ));
            }
            let c = decode_continue(tok, &t.rt.storage_resource)?;
            if c.rv <= self.storage.compacted_revision() {
                return Err(ApiError::from(Status::expired(
                    "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter.",
                )));
            }
            opts.at_revision = Some(c.rv);
            opts.start_after = Some(c.start);
        } else if let Some(rv) = p.resource_version.as_deref() {
            let n = parse_rv(rv)?;
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
        let filter = |kv: &KeyValue| selection.matches_bytes(&kv.value);
        let res = self
            .storage
            .list(&t.prefix(), &opts, if selection.is_everything() { None } else { Some(&filter) })
            .await
            .map_err(|e| match e {
                kplane_storage::Error::Compacted { requested, compacted } => ApiError::from(Status::expired(format!(
                    "The resourceVersion for the provided list is too old: {requested} ({compacted})"
                ))),
                other => storage_error(other, &t.rt, ""),
            })?;
        let continue_token = match (res.more, res.items.last()) {
            (true, Some(last)) => Some(encode_continue(res.revision, &last.key)),
            _ => None,
        };
        let mut items = Vec::with_capacity(res.items.len());
        for kv in res.items {
            items.push(self.to_api(&t.rt, kv.value)?);
        }
        Ok(ListPage {
            items,
            revision: res.revision,
            continue_token,
        })
    }
}
