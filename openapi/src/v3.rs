//! The OpenAPI v3 documents of `/openapi/v3`: one per served group-version, built (or shared
//! through the cache) from the resources, plus the root index.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::cache::{self, GroupVersionDoc};
use crate::served::{group_version_path, resource_id};
use crate::{canonical, document, Error, ServedResource};

#[derive(Debug)]
struct Inner {
    index: Arc<[u8]>,
    docs: BTreeMap<String, Arc<GroupVersionDoc>>,
}

/// All served group-versions' documents, built once from the resources; cheap to clone.
///
/// Documents identical to those of another live `OpenApiV3` (e.g. the built-in group-versions of
/// every logical cluster) are shared, not rebuilt.
#[derive(Debug, Clone)]
pub struct OpenApiV3 {
    inner: Arc<Inner>,
}

impl OpenApiV3 {
    /// Builds the document of every group-version that `resources` mention, and the index.
    pub fn build(resources: &[ServedResource]) -> Result<OpenApiV3, Error> {
        let mut by_gv: BTreeMap<String, Vec<&ServedResource>> = BTreeMap::new();
        let mut seen = std::collections::BTreeSet::new();
        for resource in resources {
            document::validate(resource)?;
            let id = resource_id(resource);
            if !seen.insert(id.clone()) {
                return Err(Error::DuplicateResource(id));
            }
            by_gv
                .entry(group_version_path(&resource.group, &resource.version))
                .or_default()
                .push(resource);
        }

        let mut docs = BTreeMap::new();
        let mut index_paths = serde_json::Map::new();
        for (gv_path, members) in by_gv {
            let doc = cache::get_or_build(&members, || {
                let json = canonical::to_json(&document::build(&members)?)?;
                let hash = canonical::hash(&json);
                Ok(GroupVersionDoc {
                    json: json.into(),
                    hash,
                })
            })?;
            let url = format!("/openapi/v3/{gv_path}?hash={}", doc.hash);
            index_paths.insert(
                gv_path.clone(),
                serde_json::json!({"serverRelativeURL": url}),
            );
            docs.insert(gv_path, doc);
        }
        let index = canonical::to_json(&serde_json::json!({"paths": index_paths}))?;
        Ok(OpenApiV3 {
            inner: Arc::new(Inner {
                index: index.into(),
                docs,
            }),
        })
    }

    /// The `/openapi/v3` root index body:
    /// `{"paths":{"api/v1":{"serverRelativeURL":"/openapi/v3/api/v1?hash=<H>"},...}}`.
    pub fn index_json(&self) -> Arc<[u8]> {
        Arc::clone(&self.inner.index)
    }

    /// The document for `api/v1` / `apis/batch/v1` (no leading slash): its JSON bytes and
    /// hash.
    pub fn group_version(&self, gv_path: &str) -> Option<(Arc<[u8]>, &str)> {
        self.inner
            .docs
            .get(gv_path)
            .map(|doc| (Arc::clone(&doc.json), doc.hash.as_str()))
    }

    /// The group-version paths that have a document, sorted.
    pub fn group_version_paths(&self) -> impl Iterator<Item = &str> {
        self.inner.docs.keys().map(String::as_str)
    }
}
