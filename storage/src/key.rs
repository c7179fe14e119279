//! Storage keys: `(cluster, resource, namespace, name)`, encoded so that one logical
//! cluster, one resource within it, and one namespace within that are each a contiguous
//! range of the key space.

/// The full address of one stored object.
///
/// `resource` is `"<group>/<resource>"` (core group: `"/configmaps"`). Cluster-scoped
/// objects use an empty `namespace`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Key {
    pub cluster: String,
    pub resource: String,
    pub namespace: String,
    pub name: String,
}

/// A range of keys: all objects of one resource in one cluster, optionally one namespace.
/// `cluster: None` means every logical cluster (wildcard watches and lists).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Prefix {
    pub cluster: Option<String>,
    pub resource: Option<String>,
    pub namespace: Option<String>,
}

impl Key {
    pub fn new(
        cluster: impl Into<String>,
        resource: impl Into<String>,
        namespace: impl Into<String>,
        name: impl Into<String>,
    ) -> Self {
        Key {
            cluster: cluster.into(),
            resource: resource.into(),
            namespace: namespace.into(),
            name: name.into(),
        }
    }
}

impl Prefix {
    /// Everything of `resource` in `cluster`, across namespaces.
    pub fn resource(cluster: impl Into<String>, resource: impl Into<String>) -> Self {
        Prefix {
            cluster: Some(cluster.into()),
            resource: Some(resource.into()),
            namespace: None,
        }
    }

    /// Everything of `resource` in one namespace of `cluster`.
    pub fn namespace(
        cluster: impl Into<String>,
        resource: impl Into<String>,
        namespace: impl Into<String>,
    ) -> Self {
        Prefix {
            cluster: Some(cluster.into()),
            resource: Some(resource.into()),
            namespace: Some(namespace.into()),
        }
    }

    /// Everything in one logical cluster.
    pub fn cluster(cluster: impl Into<String>) -> Self {
        Prefix {
            cluster: Some(cluster.into()),
            resource: None,
            namespace: None,
        }
    }

    /// Whether `key` lies inside this prefix.
    pub fn contains(&self, key: &Key) -> bool {
        self.cluster.as_ref().is_none_or(|c| *c == key.cluster)
            && self.resource.as_ref().is_none_or(|r| *r == key.resource)
            && self.namespace.as_ref().is_none_or(|n| *n == key.namespace)
    }
}
