//! Parses a request path into what it addresses: logical cluster, API group/version,
//! namespace, resource, name and subresource (like kube-apiserver's RequestInfoFactory,
//! plus kcp's `/clusters/<name>` prefix, which is stripped here and nowhere else), and
//! computes the request's [`RequestInfo`] (its Kubernetes verb included) once per request:
//! [`request_info`]. Everything after reads that value (authorization, metrics, the request
//! log, the handlers); nothing derives the verb again.

use axum::http::Method;
pub use kplane_types::ClusterScope;
use kplane_types::{ClusterName, RequestInfo, Verb};

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
    /// Addressed through the legacy `/watch/` prefix (`/api/v1/watch/namespaces/a/pods`):
    /// the request is a watch whatever its query says.
    pub watch_prefix: bool,
}

/// The parsed path of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestTarget {
    pub cluster: ClusterScope,
    /// Whether the path named the cluster (`/clusters/<name>/...`); a path without the
    /// prefix addresses `root`, or the home cluster of a ServiceAccount token
    /// ([`RequestTarget::route_home`]).
    pub explicit: bool,
    /// The path with the cluster prefix removed (always starts with `/`).
    pub rest: String,
    pub api: Option<ApiPath>,
}

/// Splits off `/clusters/<name>` and parses the remainder.
pub fn parse(path: &str) -> Result<RequestTarget, String> {
    let (cluster, rest, explicit) = match path.strip_prefix("/clusters/") {
        Some(after) => {
            let (name, rest) = match after.find('/') {
                Some(i) => (&after[..i], &after[i..]),
                None => (after, "/"),
            };
            let scope = ClusterScope::parse(&decode_cluster_segment(name))
                .ok_or_else(|| format!("invalid logical cluster name {name:?}"))?;
            (scope, rest.to_string(), true)
        }
        None => (
            ClusterScope::One(ClusterName::root()),
            path.to_string(),
            false,
        ),
    };
    let api = parse_api(&rest);
    Ok(RequestTarget {
        cluster,
        explicit,
        rest,
        api,
    })
}

impl RequestTarget {
    /// A path without the `/clusters/` prefix, sent with a ServiceAccount token, addresses
    /// the logical cluster the token is bound to (`home`, from the authenticated user's
    /// extra): that is how a pod's in-cluster configuration, which has a host and no path,
    /// reaches its own logical cluster. Whether the target changed.
    pub fn route_home(&mut self, home: Option<&str>) -> bool {
        let Some(home) = home.filter(|_| !self.explicit) else {
            return false;
        };
        let Some(name) = ClusterName::parse(home) else {
            return false;
        };
        let scope = ClusterScope::One(name);
        if self.cluster == scope {
            return false;
        }
        self.cluster = scope;
        true
    }
}

/// The cluster segment with the percent-escapes a client may send for `*` and `:`
/// (`root%3Aacme%3A%2A` is `root:acme:*`) decoded; nothing else in it is ever escaped.
pub(super) fn decode_cluster_segment(name: &str) -> std::borrow::Cow<'_, str> {
    if !name.contains('%') {
        return std::borrow::Cow::Borrowed(name);
    }
    let mut out = String::with_capacity(name.len());
    let mut rest = name;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let esc = rest.get(i..i + 3).unwrap_or(&rest[i..]);
        match esc.to_ascii_uppercase().as_str() {
            "%2A" => out.push('*'),
            "%3A" => out.push(':'),
            // Left as is: the name then fails validation.
            _ => out.push_str(esc),
        }
        rest = &rest[i + esc.len()..];
    }
    out.push_str(rest);
    std::borrow::Cow::Owned(out)
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
    // `watch` before the resource is the legacy watch prefix (a special verb upstream), as
    // long as something follows it.
    let (tail, watch_prefix) = match tail {
        ["watch", rest @ ..] if !rest.is_empty() => (rest, true),
        _ => (tail, false),
    };
    let mut path = plain_resource_path(group, version, tail)?;
    path.watch_prefix = watch_prefix;
    Some(ApiPath::Resource(path))
}

fn plain_resource_path(group: &str, version: &str, tail: &[&str]) -> Option<ResourcePath> {
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
    Some(ResourcePath {
        group: group.to_string(),
        version: version.to_string(),
        namespace,
        resource,
        name,
        subresource,
        watch_prefix: false,
    })
}

fn is_namespace_subresource(seg: &str, more: &[&str]) -> bool {
    more.is_empty() && matches!(seg, "status" | "finalize")
}

/// kube-apiserver's long-running requests (`BasicLongRunningRequestCheck` with the verbs
/// `watch`, `proxy` and the subresources `attach`, `exec`, `proxy`, `log`, `portforward`):
/// no request deadline applies to them, and audit ends them when their body does.
pub fn is_long_running(info: &RequestInfo) -> bool {
    matches!(&info.verb, Verb::Watch)
        || matches!(&info.verb, Verb::Other(v) if v == "proxy")
        || (info.is_resource_request
            && matches!(
                info.subresource.as_deref(),
                Some("log" | "exec" | "attach" | "portforward" | "proxy")
            ))
}

/// The request's attributes, from its method, parsed path and query, with kube-apiserver's
/// verb rules:
/// - a resource request's verb comes from the method: `POST` create, `GET`/`HEAD` get,
///   `PUT` update, `PATCH` patch, `DELETE` delete (any other method: the empty verb);
/// - a get of a collection is a `list`, or a `watch` with `watch=true` (Go's boolean
///   spellings; the first `watch` parameter counts, as the list options read it);
/// - the legacy `/watch/` prefix makes any request a `watch`;
/// - a delete of a collection is a `deletecollection`;
/// - a non-resource request's verb is the lower-cased method.
///
/// One deliberate difference: kplane serves `watch=true` on a named GET as a watch of that
/// object (kube-apiserver ignores the parameter there), so its verb is `watch`, which is
/// what the same watch through the `/watch/` prefix is upstream too.
pub fn request_info(method: &Method, target: &RequestTarget, query: Option<&str>) -> RequestInfo {
    let Some(ApiPath::Resource(rp)) = &target.api else {
        return RequestInfo::non_resource(
            target.cluster.clone(),
            non_resource_verb(method),
            target.rest.clone(),
        );
    };
    let mut verb = if rp.watch_prefix {
        Verb::Watch
    } else {
        match *method {
            Method::POST => Verb::Create,
            Method::GET | Method::HEAD => Verb::Get,
            Method::PUT => Verb::Update,
            Method::PATCH => Verb::Patch,
            Method::DELETE => Verb::Delete,
            _ => Verb::Other(String::new()),
        }
    };
    if verb == Verb::Get {
        verb = if watch_requested(query) {
            Verb::Watch
        } else if rp.name.is_none() {
            Verb::List
        } else {
            Verb::Get
        };
    }
    if verb == Verb::Delete && rp.name.is_none() {
        verb = Verb::DeleteCollection;
    }
    // `/namespaces/<ns>` and its subresources concern namespace `<ns>` (upstream's rule:
    // the path's namespace segment, whatever follows it).
    let namespace = match (&rp.namespace, rp.resource.as_str(), &rp.name) {
        (None, "namespaces", Some(name)) => Some(name.clone()),
        (ns, _, _) => ns.clone(),
    };
    RequestInfo {
        cluster: target.cluster.clone(),
        path: target.rest.clone(),
        verb,
        is_resource_request: true,
        api_group: rp.group.clone(),
        api_version: rp.version.clone(),
        namespace,
        resource: rp.resource.clone(),
        subresource: rp.subresource.clone(),
        name: rp.name.clone(),
    }
}

/// The lower-cased method, as a verb.
fn non_resource_verb(method: &Method) -> Verb {
    match *method {
        Method::GET => Verb::Get,
        Method::POST => Verb::Post,
        Method::PUT => Verb::Put,
        Method::PATCH => Verb::Patch,
        Method::DELETE => Verb::Delete,
        Method::HEAD => Verb::Head,
        Method::OPTIONS => Verb::Options,
        ref other => Verb::Other(other.as_str().to_ascii_lowercase()),
    }
}

/// Whether the query asks for a watch: its first `watch` parameter is one of Go's `true`
/// spellings (`ListParams` reads the same parameter the same way; a value that is not a
/// boolean makes the request a 400 there).
fn watch_requested(query: Option<&str>) -> bool {
    let Some(q) = query else {
        return false;
    };
    form_urlencoded::parse(q.as_bytes())
        .find(|(k, _)| k == "watch")
        .is_some_and(|(_, v)| matches!(&*v, "1" | "t" | "T" | "true" | "TRUE" | "True"))
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
    fn a_service_account_token_routes_a_path_without_prefix_home() {
        let mut t = parse("/api/v1/namespaces/default/configmaps").unwrap();
        assert!(!t.explicit);
        assert!(t.route_home(Some("root:acme:team")));
        assert_eq!(
            t.cluster,
            ClusterScope::One(ClusterName::parse("root:acme:team").unwrap())
        );
        let info = request_info(&Method::GET, &t, None);
        assert_eq!(info.cluster, t.cluster);
        assert_eq!(info.path, "/api/v1/namespaces/default/configmaps");
        // No token cluster, the root cluster, an explicit prefix or a malformed extra: no
        // change.
        let mut t = parse("/api/v1/namespaces").unwrap();
        assert!(!t.route_home(None));
        assert!(!t.route_home(Some("root")));
        assert!(!t.route_home(Some("Bad_Name")));
        assert!(!t.route_home(Some("*")));
        assert_eq!(t.cluster, ClusterScope::One(ClusterName::root()));
        let mut t = parse("/clusters/root:other/api/v1/namespaces").unwrap();
        assert!(t.explicit);
        assert!(!t.route_home(Some("root:acme")));
        assert_eq!(
            t.cluster,
            ClusterScope::One(ClusterName::parse("root:other").unwrap())
        );
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
        let acme = ClusterName::parse("root:acme").unwrap();
        for path in [
            "/clusters/root:acme:*/api/v1/configmaps",
            "/clusters/root%3Aacme%3A%2A/api/v1/configmaps",
            "/clusters/root:acme:%2a/api/v1/configmaps",
        ] {
            let t = parse(path).unwrap();
            assert_eq!(t.cluster, ClusterScope::subtree(acme.clone()), "{path}");
            assert_eq!(t.rest, "/api/v1/configmaps");
        }
        assert_eq!(
            parse("/clusters/%2A/api/v1/configmaps").unwrap().cluster,
            ClusterScope::Wildcard
        );
        for bad in [
            "/clusters/root%2/api",
            "/clusters/root%/api",
            "/clusters/root%41/api",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(parse("/apis").unwrap().api, Some(ApiPath::GroupsRoot));
    }

    /// `METHOD path[?query]` → `verb namespace resource subresource name` (`-`: none).
    #[test]
    fn verbs_follow_kube_apiserver() {
        let rows = [
            "GET /api/v1/namespaces/a/configmaps => list a configmaps - -",
            "GET /api/v1/namespaces/a/configmaps?watch=true => watch a configmaps - -",
            "GET /api/v1/namespaces/a/configmaps?watch=1&limit=5 => watch a configmaps - -",
            "GET /api/v1/namespaces/a/configmaps?watch=false => list a configmaps - -",
            "GET /api/v1/namespaces/a/configmaps?watch=0 => list a configmaps - -",
            // The first value counts, as the list options read it.
            "GET /api/v1/namespaces/a/configmaps?watch=0&watch=1 => list a configmaps - -",
            "GET /api/v1/namespaces/a/configmaps?watch=maybe => list a configmaps - -",
            "HEAD /api/v1/namespaces/a/configmaps => list a configmaps - -",
            "GET /api/v1/namespaces/a/configmaps/x => get a configmaps - x",
            // kplane serves a named watch (see `request_info`).
            "GET /api/v1/namespaces/a/configmaps/x?watch=true => watch a configmaps - x",
            "GET /api/v1/watch/namespaces/a/configmaps => watch a configmaps - -",
            "GET /api/v1/watch/namespaces/a/configmaps/x => watch a configmaps - x",
            "GET /apis/apps/v1/watch/deployments?watch=false => watch - deployments - -",
            "POST /api/v1/namespaces/a/configmaps => create a configmaps - -",
            "PUT /api/v1/namespaces/a/configmaps/x => update a configmaps - x",
            "PATCH /api/v1/namespaces/a/configmaps/x => patch a configmaps - x",
            "DELETE /api/v1/namespaces/a/configmaps/x => delete a configmaps - x",
            "DELETE /api/v1/namespaces/a/configmaps => deletecollection a configmaps - -",
            "DELETE /api/v1/configmaps => deletecollection - configmaps - -",
            // A method without a Kubernetes verb: the empty verb.
            "OPTIONS /api/v1/namespaces/a/configmaps =>  a configmaps - -",
            // Subresources.
            "GET /apis/apps/v1/namespaces/a/deployments/d/scale => get a deployments scale d",
            "PUT /apis/batch/v1/namespaces/a/jobs/j/status => update a jobs status j",
            "PATCH /apis/batch/v1/namespaces/a/jobs/j/status => patch a jobs status j",
            // A namespace concerns itself; so do its subresources.
            "GET /api/v1/namespaces => list - namespaces - -",
            "GET /api/v1/namespaces/a => get a namespaces - a",
            "PUT /api/v1/namespaces/a/finalize => update a namespaces finalize a",
            "DELETE /api/v1/namespaces/a => delete a namespaces - a",
            "POST /clusters/root:x/apis/authorization.k8s.io/v1/selfsubjectaccessreviews => create - selfsubjectaccessreviews - -",
        ];
        for row in rows {
            let (request, want) = row.split_once(" => ").unwrap();
            let (method, uri) = request.split_once(' ').unwrap();
            let (path, query) = match uri.split_once('?') {
                Some((p, q)) => (p, Some(q)),
                None => (uri, None),
            };
            let t = parse(path).unwrap();
            let info = request_info(&method.parse().unwrap(), &t, query);
            assert!(info.is_resource_request, "{request}");
            assert_eq!(info.path, t.rest, "{request}");
            let dash = |o: &Option<String>| o.clone().unwrap_or_else(|| "-".into());
            let got = format!(
                "{} {} {} {} {}",
                info.verb,
                dash(&info.namespace),
                info.resource,
                dash(&info.subresource),
                dash(&info.name)
            );
            assert_eq!(got, want, "{request}");
        }
    }

    #[test]
    fn non_resource_verbs_are_the_method() {
        for (method, path, verb) in [
            ("GET", "/version", "get"),
            ("GET", "/api", "get"),
            ("GET", "/api/v1", "get"),
            ("GET", "/apis/apps", "get"),
            ("GET", "/apis/apps/v1", "get"),
            ("GET", "/openapi/v3/apis/apps/v1", "get"),
            ("GET", "/clusters/root:a/metrics", "get"),
            ("POST", "/metrics", "post"),
            ("PUT", "/healthz", "put"),
            ("DELETE", "/apis", "delete"),
            ("HEAD", "/healthz", "head"),
            ("OPTIONS", "/api", "options"),
            ("TRACE", "/api", "trace"),
        ] {
            let t = parse(path).unwrap();
            let info = request_info(&method.parse().unwrap(), &t, Some("watch=true"));
            assert!(!info.is_resource_request, "{method} {path}");
            assert_eq!(info.verb.as_str(), verb, "{method} {path}");
            assert_eq!(info.path, t.rest, "{method} {path}");
            assert_eq!((info.resource.as_str(), info.name), ("", None));
        }
        let info = request_info(&Method::GET, &parse("/clusters/*/api").unwrap(), None);
        assert_eq!(info.cluster, ClusterScope::Wildcard);
        assert_eq!(info.path, "/api");
    }

    #[test]
    fn a_lone_watch_segment_is_a_resource() {
        let r = res("/api/v1/watch");
        assert_eq!((r.resource.as_str(), r.watch_prefix), ("watch", false));
        let r = res("/api/v1/watch/configmaps");
        assert_eq!((r.resource.as_str(), r.watch_prefix), ("configmaps", true));
    }
}
