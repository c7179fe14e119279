//! Logical cluster names (`root`, `root:acme`, `root:acme:team-a`) and the `*` wildcard.

use std::fmt;

/// A validated logical cluster path. Segments are DNS-1123 labels joined by `:`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClusterName(String);

/// The cluster used when a request path has no `/clusters/<name>` prefix.
pub const ROOT: &str = "root";

impl ClusterName {
    /// Parses a cluster path, rejecting anything that is not `seg(:seg)*` with DNS-1123 label
    /// segments, so path-shaped names can never reach storage keys.
    pub fn parse(s: &str) -> Option<ClusterName> {
        if s.is_empty() || s.len() > 253 {
            return None;
        }
        let ok = s.split(':').all(|seg| {
            !seg.is_empty()
                && seg.len() <= 63
                && seg
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                && !seg.starts_with('-')
                && !seg.ends_with('-')
        });
        ok.then(|| ClusterName(s.to_string()))
    }

    pub fn root() -> ClusterName {
        ClusterName(ROOT.to_string())
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The parent workspace's cluster (`root:acme:team-a` → `root:acme`); `None` for a
    /// top-level name such as `root`.
    pub fn parent(&self) -> Option<ClusterName> {
        self.0
            .rsplit_once(':')
            .map(|(parent, _)| ClusterName(parent.to_string()))
    }

    /// The child cluster named `name` (`root:acme` + `team-a` → `root:acme:team-a`), or
    /// `None` when `name` is not one DNS-1123 label or the path would be too long.
    pub fn child(&self, name: &str) -> Option<ClusterName> {
        if name.contains(':') {
            return None;
        }
        ClusterName::parse(&format!("{}:{name}", self.0))
    }

    /// The last segment of the path (`root:acme:team-a` → `team-a`): the name of the
    /// Workspace object that created it in its parent.
    pub fn base_name(&self) -> &str {
        self.0.rsplit(':').next().unwrap_or(&self.0)
    }

    /// Whether this is `root`.
    pub fn is_root(&self) -> bool {
        self.0 == ROOT
    }

    /// Whether `self` is `other` or one of its descendants (`root:a:b` is within `root:a`,
    /// `root:ab` is not).
    pub fn is_within(&self, other: &ClusterName) -> bool {
        self.0 == other.0
            || (self.0.starts_with(&other.0) && self.0.as_bytes().get(other.0.len()) == Some(&b':'))
    }

    /// How many segments the path has (`root` → 1).
    pub fn depth(&self) -> usize {
        self.0.split(':').count()
    }
}

impl std::str::FromStr for ClusterName {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ClusterName::parse(s).ok_or_else(|| format!("invalid logical cluster name {s:?}"))
    }
}

/// For storage keys and prefixes, which take the cluster as a string.
impl From<&ClusterName> for String {
    fn from(c: &ClusterName) -> String {
        c.0.clone()
    }
}

impl From<ClusterName> for String {
    fn from(c: ClusterName) -> String {
        c.0
    }
}

impl AsRef<str> for ClusterName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ClusterName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Which logical cluster(s) a request addresses.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ClusterScope {
    One(ClusterName),
    /// `/clusters/*/...`: every logical cluster (list and watch only).
    Wildcard,
    /// `/clusters/root:acme:*/...`: `root` (here `root:acme`) and every cluster below it
    /// (list and watch only). `pattern` is the path segment as written (`root:acme:*`);
    /// build it with [`ClusterScope::subtree`].
    Subtree {
        root: ClusterName,
        pattern: String,
    },
}

impl ClusterScope {
    /// The subtree of `root`: `root` and its descendants.
    pub fn subtree(root: ClusterName) -> ClusterScope {
        let pattern = format!("{root}:*");
        ClusterScope::Subtree { root, pattern }
    }

    /// Parses a `/clusters/<segment>`: a cluster name, `*`, or `<name>:*`.
    pub fn parse(segment: &str) -> Option<ClusterScope> {
        if segment == "*" {
            return Some(ClusterScope::Wildcard);
        }
        match segment.strip_suffix(":*") {
            Some(root) => ClusterName::parse(root).map(ClusterScope::subtree),
            None => ClusterName::parse(segment).map(ClusterScope::One),
        }
    }

    /// The one cluster addressed, `None` for the wildcard and subtrees.
    pub fn one(&self) -> Option<&ClusterName> {
        match self {
            ClusterScope::One(c) => Some(c),
            ClusterScope::Wildcard | ClusterScope::Subtree { .. } => None,
        }
    }

    /// Whether this addresses more than one cluster (the wildcard or a subtree): list and
    /// watch only, each object annotated with its cluster.
    pub fn is_multi(&self) -> bool {
        self.one().is_none()
    }

    /// The cluster's name, `*` for the wildcard, `<root>:*` for a subtree.
    pub fn as_str(&self) -> &str {
        match self {
            ClusterScope::One(c) => c.as_str(),
            ClusterScope::Wildcard => "*",
            ClusterScope::Subtree { pattern, .. } => pattern,
        }
    }
}

impl fmt::Display for ClusterScope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parent_child_and_ancestry() {
        let c = ClusterName::parse("root:acme:team-a").unwrap();
        assert_eq!(c.parent().unwrap().as_str(), "root:acme");
        assert_eq!(c.parent().unwrap().parent().unwrap(), ClusterName::root());
        assert!(ClusterName::root().parent().is_none());
        assert_eq!(c.base_name(), "team-a");
        assert_eq!(ClusterName::root().base_name(), "root");
        assert_eq!(c.depth(), 3);
        assert!(ClusterName::root().is_root() && !c.is_root());
        let acme = ClusterName::parse("root:acme").unwrap();
        assert_eq!(acme.child("team-a").unwrap(), c);
        assert!(acme.child("a:b").is_none(), "one segment only");
        assert!(acme.child("Bad").is_none());
        assert!(acme.child("").is_none());
        let mut deep = ClusterName::parse(&format!("root:{}", "a".repeat(63))).unwrap();
        for _ in 0..2 {
            deep = deep.child(&"b".repeat(63)).unwrap();
        }
        assert_eq!(deep.as_str().len(), 4 + 3 * 64);
        assert!(
            deep.child(&"c".repeat(63)).is_none(),
            "longer than 253 characters"
        );
        assert_eq!(deep.child(&"c".repeat(56)).unwrap().as_str().len(), 253);
        assert!(c.is_within(&acme) && c.is_within(&c) && acme.is_within(&ClusterName::root()));
        let acme2 = ClusterName::parse("root:acme2").unwrap();
        assert!(!acme2.is_within(&acme), "a name prefix is not an ancestor");
        assert!(!acme.is_within(&c));
        assert_eq!("root:x".parse::<ClusterName>().unwrap().as_str(), "root:x");
        assert!("root:".parse::<ClusterName>().is_err());
    }

    #[test]
    fn parses_scopes() {
        assert_eq!(ClusterScope::parse("*"), Some(ClusterScope::Wildcard));
        let acme = ClusterName::parse("root:acme").unwrap();
        let s = ClusterScope::parse("root:acme:*").unwrap();
        assert_eq!(s, ClusterScope::subtree(acme.clone()));
        assert_eq!(
            (s.as_str(), s.to_string()),
            ("root:acme:*", "root:acme:*".into())
        );
        assert!(s.one().is_none() && s.is_multi());
        assert_eq!(
            ClusterScope::parse("root:acme"),
            Some(ClusterScope::One(acme.clone()))
        );
        assert!(!ClusterScope::parse("root:acme").unwrap().is_multi());
        assert_eq!(
            ClusterScope::parse("root:*"),
            Some(ClusterScope::subtree(ClusterName::root()))
        );
        for bad in [
            ":*", "root:*:*", "root*", "root:a*", "*:root", "**", "root:", "",
        ] {
            assert_eq!(ClusterScope::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn parses_paths() {
        assert!(ClusterName::parse("root").is_some());
        assert!(ClusterName::parse("root:acme:team-a").is_some());
        assert!(ClusterName::parse("root::a").is_none());
        assert!(ClusterName::parse("Root").is_none());
        assert!(ClusterName::parse("root/../x").is_none());
        assert!(ClusterName::parse("-a").is_none());
        assert!(ClusterName::parse("").is_none());
    }
}
