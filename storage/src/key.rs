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

/// Which logical clusters a [`Prefix`] covers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Clusters {
    /// Every logical cluster (wildcard watches and lists).
    All,
    /// One logical cluster.
    One(String),
    /// One logical cluster and its descendants: every cluster whose name is this one
    /// followed by `:` and more (`root:acme` covers `root:acme:team-a`, not `root:acmex`).
    Subtree(String),
}

impl Clusters {
    /// Whether `cluster` is one of these.
    pub fn contains(&self, cluster: &str) -> bool {
        match self {
            Clusters::All => true,
            Clusters::One(c) => c == cluster,
            Clusters::Subtree(c) => {
                cluster.len() >= c.len()
                    && cluster.starts_with(c.as_str())
                    && matches!(cluster.as_bytes().get(c.len()), None | Some(b':'))
            }
        }
    }

    /// The one cluster, if exactly one is covered.
    pub fn one(&self) -> Option<&str> {
        match self {
            Clusters::One(c) => Some(c),
            _ => None,
        }
    }
}

/// A range of keys: all objects of one resource in some clusters, optionally one namespace.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Prefix {
    pub cluster: Clusters,
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
            cluster: Clusters::One(cluster.into()),
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
            cluster: Clusters::One(cluster.into()),
            resource: Some(resource.into()),
            namespace: Some(namespace.into()),
        }
    }

    /// Everything in one logical cluster.
    pub fn cluster(cluster: impl Into<String>) -> Self {
        Prefix {
            cluster: Clusters::One(cluster.into()),
            resource: None,
            namespace: None,
        }
    }

    /// Everything of `resource` in every logical cluster.
    pub fn all_clusters(resource: impl Into<String>) -> Self {
        Prefix {
            cluster: Clusters::All,
            resource: Some(resource.into()),
            namespace: None,
        }
    }

    /// Whether `key` lies inside this prefix.
    pub fn contains(&self, key: &Key) -> bool {
        self.cluster.contains(&key.cluster)
            && self.resource.as_ref().is_none_or(|r| *r == key.resource)
            && self.namespace.as_ref().is_none_or(|n| *n == key.namespace)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subtrees_hold_their_root_and_descendants_only() {
        let s = Clusters::Subtree("root:acme".into());
        for inside in ["root:acme", "root:acme:a", "root:acme:a:b"] {
            assert!(s.contains(inside), "{inside}");
        }
        for outside in [
            "root",
            "root:acm",
            "root:acmex",
            "root:acme-b",
            "root:acme0",
            "",
        ] {
            assert!(!s.contains(outside), "{outside}");
        }
        assert!(Clusters::All.contains("x"));
        assert!(Clusters::One("a".into()).contains("a"));
        assert!(!Clusters::One("a".into()).contains("a:b"));
        assert_eq!(Clusters::One("a".into()).one(), Some("a"));
        assert_eq!(s.one(), None);
    }
}
