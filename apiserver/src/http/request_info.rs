//! Parses a request path into what it addresses: logical cluster, API group/version,
//! namespace, resource, name and subresource (like kube-apiserver's RequestInfoFactory,
//! plus kcp's `/clusters/<name>` prefix, which is stripped here and nowhere else).

use kplane_types::ClusterName;

/// Which logical cluster(s) a request addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ClusterScope {
    One(ClusterName),
    /// `/clusters/*/...`: every logical cluster (list and watch only).
    Wildcard,
}

/// What a path under `/api` or `/apis` addresses.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ApiPath {
    /// `/api`
    CoreRoot,
    /// `/apis`
    GroupsRoot,
    /// `/apis/<group>`
    Group { group: String },
    /// `/api/v1`, `/apis/<g>/<v>`
    GroupVersion { group: String, version: String },
    /// A resource path.
    Resource(ResourcePath),
}

/// `/api[s]/<g>/<v>/[namespaces/<ns>/]<resource>[/<name>[/<subresource>]]`
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ResourcePath {
    pub group: String,
    pub version: String,
    pub namespace: Option<String>,
    pub resource: String,
    pub name: Option<String>,
    pub subresource: Option<String>,
}

/// The parsed path of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestTarget {
    pub cluster: ClusterScope,
    /// The path with the cluster prefix removed (always starts with `/`).
    pub rest: String,
    pub api: Option<ApiPath>,
}

/// Splits off `/clusters/<name>` and parses the remainder.
pub fn parse(path: &str) -> Result<RequestTarget, String> {
    let (cluster, rest) = match path.strip_prefix("/clusters/") {
        Some(after) => {
            let (name, rest) = match after.find('/') {
                Some(i) => (&after[..i], &after[i..]),
                None => (after, "/"),
            };
            let scope = if name == "*" {
                ClusterScope::Wildcard
            } else {
                ClusterScope::One(
                    ClusterName::parse(name)
                        .ok_or_else(|| format!("invalid logical cluster name {name:?}"))?,
                )
            };
            (scope, rest.to_string())
        }
        None => (ClusterScope::One(ClusterName::root()), path.to_string()),
    };
    let api = parse_api(&rest);
    Ok(RequestTarget { cluster, rest, api })
}

fn parse_api(rest: &str) -> Option<ApiPath> {
    let trimmed = rest.trim_end_matches('/');
    let segs: Vec<&str> = trimmed.split('/').skip(1).collect();
    match segs.as_slice() {
        ["api"] => Some(ApiPath::CoreRoot),
        ["apis"] => Some(ApiPath::GroupsRoot),
        ["api", v] => Some(ApiPath::GroupVersion {
            group: String::new(),
            version: v.to_string(),
        }),
        ["apis", g] => Some(ApiPath::Group {
            group: g.to_string(),
        }),
        ["apis", g, v] => Some(ApiPath::GroupVersion {
            group: g.to_string(),
            version: v.to_string(),
        }),
        ["api", v, tail @ ..] => resource_path("", v, tail),
        ["apis", g, v, tail @ ..] => resource_path(g, v, tail),
        _ => None,
    }
}

fn resource_path(group: &str, version: &str, tail: &[&str]) -> Option<ApiPath> {
    if tail.iter().any(|s| s.is_empty()) {
        return None;
    }
    // `/namespaces/<ns>/<resource>...` is namespaced, unless it addresses a namespace
    // itself: `/namespaces/<ns>` or `/namespaces/<ns>/<subresource of a namespace>`.
    let (namespace, rest) = match tail {
        ["namespaces", ns, res, more @ ..] if !is_namespace_subresource(res, more) => {
            (Some(ns.to_string()), &tail[2..])
        }
        _ => (None, tail),
    };
    let (resource, name, subresource) = match rest {
        [r] => (r.to_string(), None, None),
        [r, n] => (r.to_string(), Some(n.to_string()), None),
        [r, n, s] => (r.to_string(), Some(n.to_string()), Some(s.to_string())),
        _ => return None,
    };
    Some(ApiPath::Resource(ResourcePath {
        group: group.to_string(),
        version: version.to_string(),
        namespace,
        resource,
        name,
        subresource,
    }))
}

fn is_namespace_subresource(seg: &str, more: &[&str]) -> bool {
    more.is_empty() && matches!(seg, "status" | "finalize")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn res(path: &str) -> ResourcePath {
        match parse(path).unwrap().api {
            Some(ApiPath::Resource(r)) => r,
            other => panic!("not a resource path: {other:?}"),
        }
    }

    #[test]
    fn parses_resource_paths() {
        let r = res("/api/v1/namespaces/default/configmaps/x");
        assert_eq!(r.namespace.as_deref(), Some("default"));
        assert_eq!(r.resource, "configmaps");
        assert_eq!(r.name.as_deref(), Some("x"));
        let r = res("/api/v1/namespaces/default");
        assert_eq!(r.resource, "namespaces");
        assert_eq!(r.name.as_deref(), Some("default"));
        let r = res("/api/v1/namespaces/ns1/finalize");
        assert_eq!(r.resource, "namespaces");
        assert_eq!(r.subresource.as_deref(), Some("finalize"));
        let r = res("/apis/batch/v1/namespaces/a/jobs/j/status");
        assert_eq!(
            (r.group.as_str(), r.subresource.as_deref()),
            ("batch", Some("status"))
        );
        let r = res("/api/v1/configmaps");
        assert_eq!((r.namespace, r.resource.as_str()), (None, "configmaps"));
    }

    #[test]
    fn parses_cluster_prefix() {
        let t = parse("/clusters/root:acme/api/v1/namespaces").unwrap();
        assert_eq!(
            t.cluster,
            ClusterScope::One(ClusterName::parse("root:acme").unwrap())
        );
        assert_eq!(t.rest, "/api/v1/namespaces");
        assert_eq!(
            parse("/clusters/*/api/v1/configmaps").unwrap().cluster,
            ClusterScope::Wildcard
        );
        assert!(parse("/clusters/Bad_Name/api").is_err());
        assert_eq!(parse("/apis").unwrap().api, Some(ApiPath::GroupsRoot));
    }
}
