//! The catalog of served resources: for each group/version/resource, the facts discovery,
//! OpenAPI and the generic registry need (kind, scope, verbs, short names, subresources,
//! selectable fields), the type's strategy (`strategies`: everything a write does that is
//! particular to the type) and, for a type served in another form than it is stored in, its
//! version conversion.
//!
//! Built-in types are listed in `builtin_types.rs`; custom resources (`crd/served.rs`) add
//! entries of the same shape, so one code path serves both.

use std::collections::HashMap;
use std::sync::Arc;

use crate::strategy::{Conversion, TypeStrategy};

/// One served resource at one version.
#[derive(Clone)]
pub struct ResourceType {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub list_kind: String,
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub verbs: Vec<&'static str>,
    /// Subresources with their verbs, e.g. `("status", ["get","patch","update"])`.
    pub subresources: Vec<(String, Vec<&'static str>)>,
    /// The OpenAPI definition name of the kind.
    pub schema_name: String,
    /// The storage key resource (`"<group>/<plural>"`); two API groups may share one store.
    pub storage_resource: String,
    /// Everything a write does that is particular to the type.
    pub strategy: Arc<dyn TypeStrategy>,
    /// How the served form is converted from and to the stored one; `None` when the type
    /// is stored as served (reads hand out the stored bytes).
    pub conversion: Option<Arc<dyn Conversion>>,
    /// The main endpoint keeps the stored `.status`; `/status` changes only `.status`.
    pub status_subresource: bool,
    /// Field selector labels beyond `metadata.name` / `metadata.namespace` (how each kind
    /// accepts and refuses labels is in `field_labels`).
    pub selectable_fields: Vec<String>,
    /// What a custom resource's CRD says (schema, columns, scale); `None` for built-ins.
    pub custom: Option<Arc<crate::crd::info::CustomInfo>>,
}

impl std::fmt::Debug for ResourceType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceType")
            .field("group", &self.group)
            .field("version", &self.version)
            .field("plural", &self.plural)
            .field("strategy", &self.strategy)
            .finish_non_exhaustive()
    }
}

impl ResourceType {
    /// Whether kube-apiserver serves the kind as a Go type (a Kubernetes built-in): its list
    /// items then carry no `apiVersion` and `kind`. Custom resources and kplane's own kinds
    /// (`*.kplane.io`, CRDs in kcp) are served unstructured.
    pub fn is_typed(&self) -> bool {
        self.custom.is_none() && !self.group.ends_with(".kplane.io")
    }

    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn has_verb(&self, verb: &str) -> bool {
        self.verbs.contains(&verb)
    }

    pub fn has_subresource(&self, sub: &str) -> bool {
        self.subresources.iter().any(|(s, _)| s == sub)
    }

    /// Whether objects of the type are stored (create-only reviews are not).
    pub fn is_stored(&self) -> bool {
        self.strategy.is_stored()
    }

    /// Whether the type is a custom resource served from a CRD.
    pub fn is_custom(&self) -> bool {
        self.custom.is_some()
    }
}

/// Lookup of served resources by group/version/plural, by kind, and by group.
#[derive(Debug, Default)]
pub struct Catalog {
    by_gvr: HashMap<(String, String, String), Arc<ResourceType>>,
    ordered: Vec<Arc<ResourceType>>,
    fingerprint: String,
}

impl Catalog {
    pub fn new(types: Vec<ResourceType>) -> Self {
        Self::from_arcs(types.into_iter().map(Arc::new).collect(), "builtin".into())
    }

    /// A catalog of already-shared types; `fingerprint` identifies its content.
    pub fn from_arcs(types: Vec<Arc<ResourceType>>, fingerprint: String) -> Self {
        let mut c = Catalog {
            fingerprint,
            ..Default::default()
        };
        for t in types {
            c.by_gvr.insert(
                (t.group.clone(), t.version.clone(), t.plural.clone()),
                t.clone(),
            );
            c.ordered.push(t);
        }
        c
    }

    /// Identifies the served set: equal fingerprints serve identical APIs, so discovery and
    /// OpenAPI documents are shared across logical clusters.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<ResourceType>> {
        self.by_gvr
            .get(&(group.to_string(), version.to_string(), plural.to_string()))
    }

    /// All resources in discovery order.
    pub fn all(&self) -> &[Arc<ResourceType>] {
        &self.ordered
    }

    /// The group names in discovery order (core group `""` first).
    pub fn groups(&self) -> Vec<String> {
        let mut seen = Vec::<String>::new();
        for t in &self.ordered {
            if !seen.contains(&t.group) {
                seen.push(t.group.clone());
            }
        }
        seen
    }

    /// The versions served for `group`, preferred first.
    pub fn versions(&self, group: &str) -> Vec<String> {
        let mut seen = Vec::<String>::new();
        for t in self.ordered.iter().filter(|t| t.group == group) {
            if !seen.contains(&t.version) {
                seen.push(t.version.clone());
            }
        }
        seen
    }

    pub fn in_group_version<'a>(
        &'a self,
        group: &'a str,
        version: &'a str,
    ) -> impl Iterator<Item = &'a Arc<ResourceType>> + 'a {
        self.ordered
            .iter()
            .filter(move |t| t.group == group && t.version == version)
    }

    /// Stored, namespaced resources (for namespace deletion), one per storage resource.
    pub fn namespaced_storage(&self) -> Vec<Arc<ResourceType>> {
        let mut seen = Vec::<String>::new();
        let mut out = Vec::new();
        for t in &self.ordered {
            if t.namespaced && t.is_stored() && !seen.contains(&t.storage_resource) {
                seen.push(t.storage_resource.clone());
                out.push(t.clone());
            }
        }
        out
    }
}
