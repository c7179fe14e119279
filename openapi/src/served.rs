//! What a (logical) cluster serves, as the documents see it: the [`ServedResource`]s, where
//! their schemas come from, their group-version paths, and the Kubernetes version every
//! document publishes.

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
