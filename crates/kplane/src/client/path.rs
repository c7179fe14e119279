//! Workspace paths (`root`, `root:acme:team-a`) and how the targets of `kplane ws use`
//! resolve against the current workspace: absolute paths, relative child names, `..`,
//! `-` (the previous workspace) and `~` (home, `root`).
//!
//! Knows nothing about kubeconfigs or HTTP: where a workspace path sits in a server URL is
//! here too ([`split_server_url`], [`server_url`]), as plain string work.

use std::fmt;

/// The top of every workspace tree, and the home workspace `~` resolves to.
pub const ROOT: &str = "root";

/// Longest logical cluster path the server accepts (a DNS subdomain's length).
const MAX_PATH_LEN: usize = 253;

/// Why a path or a `use` target could not be resolved.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum PathError {
    #[error("{0:?} is not a workspace path: {1}")]
    Invalid(String, &'static str),
    #[error("the current workspace is {0:?}, which has no parent")]
    AboveRoot(String),
    #[error(
        "there is no previous workspace to go back to (no `kplane ws use` in this context yet)"
    )]
    NoPrevious,
}

/// A logical cluster path: `:`-separated DNS-1123 labels starting with `root`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WsPath(String);

impl WsPath {
    /// The root workspace.
    pub fn root() -> Self {
        Self(ROOT.to_owned())
    }

    /// Parses an absolute path (`root` or `root:...`).
    pub fn parse(s: &str) -> Result<Self, PathError> {
        let invalid = |why| PathError::Invalid(s.to_owned(), why);
        if s.len() > MAX_PATH_LEN {
            return Err(invalid("longer than 253 characters"));
        }
        let mut segments = s.split(':');
        if segments.next() != Some(ROOT) {
            return Err(invalid("an absolute path starts with `root`"));
        }
        for segment in segments {
            check_label(segment).map_err(invalid)?;
        }
        Ok(Self(s.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The parent path; `None` for `root`.
    pub fn parent(&self) -> Option<Self> {
        self.0.rsplit_once(':').map(|(p, _)| Self(p.to_owned()))
    }

    /// The last segment (`team-a` of `root:acme:team-a`).
    pub fn name(&self) -> &str {
        self.0.rsplit_once(':').map_or(self.0.as_str(), |(_, n)| n)
    }

    /// `self:rel`, where `rel` is one or more `:`-separated labels.
    pub fn join(&self, rel: &str) -> Result<Self, PathError> {
        let invalid = |why| PathError::Invalid(rel.to_owned(), why);
        for segment in rel.split(':') {
            check_label(segment).map_err(invalid)?;
        }
        let joined = format!("{}:{rel}", self.0);
        if joined.len() > MAX_PATH_LEN {
            return Err(PathError::Invalid(joined, "longer than 253 characters"));
        }
        Ok(Self(joined))
    }
}

impl fmt::Display for WsPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A DNS-1123 label: 1-63 lower-case alphanumerics or `-`, alphanumeric at both ends.
fn check_label(s: &str) -> Result<(), &'static str> {
    if s.is_empty() {
        return Err("empty segment");
    }
    if s.len() > 63 {
        return Err("a segment is longer than 63 characters");
    }
    let ok = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    if !s.chars().all(|c| ok(c) || c == '-') {
        return Err("segments are lower-case letters, digits and '-'");
    }
    if !s.starts_with(ok) || !s.ends_with(ok) {
        return Err("segments start and end with a letter or digit");
    }
    Ok(())
}

/// Resolves a `kplane ws use` (or `--parent`, `kplane kubeconfig`) target: `root...` is
/// absolute, `..` the parent, `-` the previous workspace, `~` home (`root`), `.` the
/// current one, anything else a path relative to `current` (`team-a`, `team-a:dev`).
pub fn resolve(
    target: &str,
    current: &WsPath,
    previous: Option<&WsPath>,
) -> Result<WsPath, PathError> {
    match target {
        "~" => Ok(WsPath::root()),
        "." => Ok(current.clone()),
        ".." => current
            .parent()
            .ok_or_else(|| PathError::AboveRoot(current.to_string())),
        "-" => previous.cloned().ok_or(PathError::NoPrevious),
        t if t == ROOT || t.starts_with("root:") => WsPath::parse(t),
        t => current.join(t),
    }
}

/// Splits a kubeconfig server URL into its base (scheme, host, port and any prefix) and the
/// workspace path of its `/clusters/<path>` suffix. A URL without that suffix is `root`,
/// as the server serves un-prefixed paths from `root`.
pub fn split_server_url(server: &str) -> Result<(String, WsPath), PathError> {
    let trimmed = server.trim_end_matches('/');
    match trimmed.rfind("/clusters/") {
        Some(i) => {
            let path = &trimmed[i + "/clusters/".len()..];
            Ok((trimmed[..i].to_owned(), WsPath::parse(path)?))
        }
        None => Ok((trimmed.to_owned(), WsPath::root())),
    }
}

/// `<base>/clusters/<path>`.
pub fn server_url(base: &str, path: &WsPath) -> String {
    format!("{base}/clusters/{path}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> WsPath {
        WsPath::parse(s).unwrap()
    }

    #[test]
    fn targets_resolve_against_the_current_and_previous_workspace() {
        let cur = p("root:acme");
        let prev = p("root:other:x");
        let cases = [
            ("root", "root"),
            ("root:b:c", "root:b:c"),
            ("team-a", "root:acme:team-a"),
            ("team-a:dev", "root:acme:team-a:dev"),
            ("..", "root"),
            ("-", "root:other:x"),
            ("~", "root"),
            (".", "root:acme"),
        ];
        for (target, want) in cases {
            assert_eq!(
                resolve(target, &cur, Some(&prev)).unwrap().as_str(),
                want,
                "{target}"
            );
        }
    }

    #[test]
    fn dot_dot_at_root_and_dash_without_previous_are_errors() {
        let err = resolve("..", &WsPath::root(), None).unwrap_err();
        assert_eq!(err, PathError::AboveRoot("root".into()));
        assert!(err.to_string().contains("has no parent"), "{err}");
        assert_eq!(
            resolve("-", &p("root:a"), None).unwrap_err(),
            PathError::NoPrevious
        );
    }

    #[test]
    fn invalid_names_are_refused_with_the_reason() {
        let cur = WsPath::root();
        for bad in [
            "Team",
            "a_b",
            "-a",
            "a-",
            "a::b",
            "",
            "root:",
            "root:Acme",
            "a:",
        ] {
            let err = resolve(bad, &cur, None);
            assert!(
                matches!(err, Err(PathError::Invalid(..))),
                "{bad:?}: {err:?}"
            );
        }
        assert!(WsPath::parse("acme").is_err());
        // Only `root` itself starts an absolute path.
        assert_eq!(
            resolve("rooty:x", &cur, None).unwrap().as_str(),
            "root:rooty:x"
        );
        assert!(resolve(&"a".repeat(64), &cur, None).is_err());
        let long = format!("root:{}", ["abcdefghij"; 23].join(":"));
        assert!(long.len() > 253);
        assert!(WsPath::parse(&long).is_err());
        assert!(resolve(&long[5..], &cur, None).is_err());
    }

    #[test]
    fn parent_and_name() {
        assert_eq!(p("root:a:b").parent(), Some(p("root:a")));
        assert_eq!(p("root:a:b").name(), "b");
        assert_eq!(WsPath::root().parent(), None);
        assert_eq!(WsPath::root().name(), "root");
    }

    #[test]
    fn server_urls_split_into_base_and_path() {
        let (base, path) = split_server_url("https://127.0.0.1:6443/clusters/root:acme").unwrap();
        assert_eq!(
            (base.as_str(), path.as_str()),
            ("https://127.0.0.1:6443", "root:acme")
        );
        let (base, path) = split_server_url("https://h/prefix/clusters/root/").unwrap();
        assert_eq!((base.as_str(), path.as_str()), ("https://h/prefix", "root"));
        let (base, path) = split_server_url("https://h:1").unwrap();
        assert_eq!((base.as_str(), path.as_str()), ("https://h:1", "root"));
        assert!(split_server_url("https://h/clusters/*").is_err());
        assert_eq!(
            server_url("https://h:1", &p("root:x")),
            "https://h:1/clusters/root:x"
        );
    }
}
