//! What a request is, as every layer sees it: who makes it ([`UserInfo`]) and what it asks
//! for ([`RequestInfo`]: logical cluster, [`Verb`], API group/version/resource/subresource,
//! namespace, name). The HTTP layer computes both once per request; authorization, metrics,
//! the request log and the handlers read them, and the registry may take them without
//! knowing about HTTP.

use std::collections::BTreeMap;
use std::fmt;

use crate::cluster::ClusterScope;

/// The group of users allowed everything (kube-apiserver's `system:masters`).
pub const SYSTEM_MASTERS: &str = "system:masters";

/// The group every authenticated user is in.
pub const SYSTEM_AUTHENTICATED: &str = "system:authenticated";

/// The user of a request without credentials (kube-apiserver's `user.Anonymous`).
pub const SYSTEM_ANONYMOUS: &str = "system:anonymous";

/// The group of requests without credentials (kube-apiserver's `user.AllUnauthenticated`).
pub const SYSTEM_UNAUTHENTICATED: &str = "system:unauthenticated";

/// Who is making a request (`authentication.k8s.io/v1` `UserInfo`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct UserInfo {
    pub username: String,
    pub uid: String,
    pub groups: Vec<String>,
    /// Additional attributes an authenticator recorded (e.g. a token's credential id).
    pub extra: BTreeMap<String, Vec<String>>,
}

impl UserInfo {
    /// Whether the user is in `group`.
    pub fn in_group(&self, group: &str) -> bool {
        self.groups.iter().any(|g| g == group)
    }
}

/// The Kubernetes verb of a request (authorization's verb, not the HTTP method).
///
/// Resource requests: `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`,
/// `deletecollection`. Non-resource requests use the lower-cased HTTP method (`get`, `post`,
/// `put`, `patch`, `delete`, `head`, `options`, ...). Authorization rules and reviews name
/// further verbs (`use`, `bind`, `escalate`, `impersonate`, `*`, ...): [`Verb::Other`].
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Verb {
    Get,
    List,
    Watch,
    Create,
    Update,
    Patch,
    Delete,
    DeleteCollection,
    /// A non-resource `POST`.
    Post,
    /// A non-resource `PUT`.
    Put,
    /// A non-resource `HEAD`.
    Head,
    /// A non-resource `OPTIONS`.
    Options,
    /// Any other verb, as written (empty for a resource request whose HTTP method has no
    /// Kubernetes verb, as kube-apiserver leaves it).
    Other(String),
}

impl Verb {
    /// The verb as Kubernetes spells it (lower case).
    pub fn as_str(&self) -> &str {
        match self {
            Verb::Get => "get",
            Verb::List => "list",
            Verb::Watch => "watch",
            Verb::Create => "create",
            Verb::Update => "update",
            Verb::Patch => "patch",
            Verb::Delete => "delete",
            Verb::DeleteCollection => "deletecollection",
            Verb::Post => "post",
            Verb::Put => "put",
            Verb::Head => "head",
            Verb::Options => "options",
            Verb::Other(v) => v,
        }
    }

    /// The verb Kubernetes spells `s` (the inverse of [`Verb::as_str`]).
    pub fn parse(s: &str) -> Verb {
        match s {
            "get" => Verb::Get,
            "list" => Verb::List,
            "watch" => Verb::Watch,
            "create" => Verb::Create,
            "update" => Verb::Update,
            "patch" => Verb::Patch,
            "delete" => Verb::Delete,
            "deletecollection" => Verb::DeleteCollection,
            "post" => Verb::Post,
            "put" => Verb::Put,
            "head" => Verb::Head,
            "options" => Verb::Options,
            other => Verb::Other(other.to_string()),
        }
    }
}

impl fmt::Display for Verb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a request asks for (the model is kube-apiserver's `request.RequestInfo`, plus the
/// logical cluster).
///
/// For a resource request the API fields are set; for a non-resource request (discovery,
/// `/version`, `/metrics`, `/openapi/...`) only `verb` and `path` mean anything.
/// `namespace` is the namespace the request concerns for authorization: for a Namespace
/// object itself (`/api/v1/namespaces/<ns>[/status]`) that is `<ns>`, as upstream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestInfo {
    /// The logical cluster(s) addressed.
    pub cluster: ClusterScope,
    /// The URL path without the `/clusters/<name>` prefix.
    pub path: String,
    pub verb: Verb,
    pub is_resource_request: bool,
    /// `""` for the core group.
    pub api_group: String,
    pub api_version: String,
    pub namespace: Option<String>,
    /// The resource (plural), e.g. `configmaps`.
    pub resource: String,
    pub subresource: Option<String>,
    pub name: Option<String>,
}

impl RequestInfo {
    /// A non-resource request: only `verb` and `path` are set.
    pub fn non_resource(cluster: ClusterScope, verb: Verb, path: impl Into<String>) -> Self {
        RequestInfo {
            cluster,
            path: path.into(),
            verb,
            is_resource_request: false,
            api_group: String::new(),
            api_version: String::new(),
            namespace: None,
            resource: String::new(),
            subresource: None,
            name: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verbs_round_trip() {
        for v in [
            Verb::Get,
            Verb::List,
            Verb::Watch,
            Verb::Create,
            Verb::Update,
            Verb::Patch,
            Verb::Delete,
            Verb::DeleteCollection,
            Verb::Post,
            Verb::Put,
            Verb::Head,
            Verb::Options,
            Verb::Other("impersonate".into()),
            Verb::Other("*".into()),
        ] {
            assert_eq!(Verb::parse(v.as_str()), v, "{v}");
        }
        assert_eq!(Verb::DeleteCollection.to_string(), "deletecollection");
    }

    #[test]
    fn group_membership() {
        let u = UserInfo {
            username: "alice".into(),
            groups: vec![SYSTEM_AUTHENTICATED.into()],
            ..Default::default()
        };
        assert!(u.in_group(SYSTEM_AUTHENTICATED));
        assert!(!u.in_group(SYSTEM_MASTERS));
    }
}
