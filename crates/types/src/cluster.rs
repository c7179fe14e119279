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
}

impl ClusterScope {
    /// The cluster's name, or `*` for the wildcard.
    pub fn as_str(&self) -> &str {
        match self {
            ClusterScope::One(c) => c.as_str(),
            ClusterScope::Wildcard => "*",
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
