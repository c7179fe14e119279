//! OpenAPI v3 documents for kplane's `/openapi/v3` endpoints.
//!
//! [`OpenApiV3::build`] turns the resources a (logical) cluster serves into one OpenAPI 3.0
//! document per group-version (`api/v1`, `apis/batch/v1`, ...) plus the root index that
//! `GET /openapi/v3` returns. Schemas of built-in kinds are generated from the `k8s-openapi`
//! crate ([`builtin_definitions`]); custom resources bring their CRD structural schema
//! ([`SchemaSource::Custom`]); kplane's own kinds (the Workspace) are declared by hand in
//! [`kplane_kinds`] in the same shape as the generated ones. Documents are serialized
//! once, with sorted keys, and addressed by the uppercase hex SHA-512 of their bytes, as
//! kubectl caches them by that hash.

mod cache;
mod canonical;
mod catalog;
mod convert;
mod custom;
mod document;
mod fixtures;
pub mod kplane_kinds;
mod paths;
pub mod typed;
pub mod v2;

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use cache::GroupVersionDoc;

pub use catalog::builtin_definitions;
pub use fixtures::{builtin_served_resources_for_tests, widget_for_tests};
pub use v2::OpenApiV2;

/// The `info.version` published in every document.
pub const KUBERNETES_VERSION: &str = "v1.32.0";

/// One served resource, as the server's registry describes it.
#[derive(Debug, Clone, PartialEq)]
pub struct ServedResource {
    /// API group; empty for the core (legacy) group.
    pub group: String,
    pub version: String,
    pub kind: String,
    /// Lower-case plural, the URL path segment (e.g. `configmaps`).
    pub plural: String,
    pub namespaced: bool,
    /// Kubernetes verbs: `create`, `delete`, `deletecollection`, `get`, `list`, `patch`,
    /// `update`, `watch`.
    pub verbs: Vec<String>,
    /// Subresource names: `status`, `scale`, `finalize`, `token`, ... (unknown ones are not
    /// published).
    pub subresources: Vec<String>,
    pub schema: SchemaSource,
}

/// Where the schema of a [`ServedResource`] comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum SchemaSource {
    /// A built-in type: the k8s-openapi definition name, e.g. `io.k8s.api.core.v1.ConfigMap`.
    BuiltIn(String),
    /// A CRD's structural schema (`openAPIV3Schema`) for this version.
    Custom { schema: serde_json::Value },
}

/// Why documents could not be built.
#[derive(Debug)]
pub enum Error {
    /// A [`SchemaSource::BuiltIn`] name that is not in [`builtin_definitions`].
    UnknownDefinition { resource: String, name: String },
    /// A resource with an empty version, kind or plural, or an unusable group.
    InvalidResource { resource: String, reason: String },
    /// Two resources with the same group, version and plural.
    DuplicateResource(String),
    /// A custom schema that is not a JSON object.
    InvalidCustomSchema { resource: String, reason: String },
    /// Serializing a document failed.
    Serialize(serde_json::Error),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::UnknownDefinition { resource, name } => {
                write!(
                    f,
                    "resource {resource}: unknown built-in definition {name:?}"
                )
            }
            Error::InvalidResource { resource, reason } => {
                write!(f, "resource {resource}: {reason}")
            }
            Error::DuplicateResource(resource) => write!(f, "resource {resource} is listed twice"),
            Error::InvalidCustomSchema { resource, reason } => {
                write!(f, "resource {resource}: invalid custom schema: {reason}")
            }
            Error::Serialize(e) => write!(f, "serializing an OpenAPI document: {e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Serialize(e) => Some(e),
            _ => None,
        }
    }
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::Serialize(e)
    }
}

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

/// `api/v1` for the core group, `apis/<group>/<version>` otherwise: the key of the index and the
/// suffix of `/openapi/v3/`.
pub fn group_version_path(group: &str, version: &str) -> String {
    if group.is_empty() {
        format!("api/{version}")
    } else {
        format!("apis/{group}/{version}")
    }
}

pub(crate) fn resource_id(resource: &ServedResource) -> String {
    if resource.group.is_empty() {
        format!("{}/{}", resource.version, resource.plural)
    } else {
        format!(
            "{}/{}/{}",
            resource.group, resource.version, resource.plural
        )
    }
}
