//! Impersonation (kube-apiserver's impersonation filter): the `Impersonate-User`,
//! `Impersonate-Group`, `Impersonate-Uid` and `Impersonate-Extra-<key>` headers make a
//! request act as another user. Each requested attribute is authorized separately, for the
//! authenticated user, with the verb `impersonate` in the request's logical cluster:
//!
//! | header | resource | API group | name |
//! |---|---|---|---|
//! | `Impersonate-User: system:serviceaccount:<ns>:<sa>` | `serviceaccounts` in `<ns>` | `""` | `<sa>` |
//! | `Impersonate-User: <user>` | `users` | `""` | `<user>` |
//! | `Impersonate-Group: <group>` (each) | `groups` | `""` | `<group>` |
//! | `Impersonate-Extra-<key>: <value>` (each) | `userextras/<key>` | `authentication.k8s.io` | `<value>` |
//! | `Impersonate-Uid: <uid>` | `uids` | `authentication.k8s.io` | `<uid>` |
//!
//! The first refusal is a 403 with kube-apiserver's message. The impersonated user gets
//! `system:authenticated` as upstream adds it (unless a given group is
//! `system:authenticated` or `system:unauthenticated`; `system:unauthenticated` for
//! `system:anonymous`); a ServiceAccount without `Impersonate-Group` gets its
//! ServiceAccount groups. The user who impersonates is kept in the request's extensions
//! ([`Impersonator`]) for the audit log.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use kplane_types::request::{SYSTEM_ANONYMOUS, SYSTEM_AUTHENTICATED, SYSTEM_UNAUTHENTICATED};
use kplane_types::validation::{is_dns1123_label, is_dns1123_subdomain};
use kplane_types::{RequestInfo, UserInfo, Verb};

use super::authz::{Authorizer, Decision};
use super::error::StatusResponse;
use kplane_registry::error::ApiError;

const USER: &str = "impersonate-user";
const GROUP: &str = "impersonate-group";
const UID: &str = "impersonate-uid";
const EXTRA_PREFIX: &str = "impersonate-extra-";
const AUTHENTICATION_GROUP: &str = "authentication.k8s.io";

/// The authenticated user behind an impersonated request (in the request's extensions).
#[derive(Clone, Debug)]
pub struct Impersonator(pub Arc<UserInfo>);

/// One attribute a request asks to impersonate (upstream's impersonation requests).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Target {
    ServiceAccount { namespace: String, name: String },
    User(String),
    Group(String),
    Extra { key: String, value: String },
    Uid(String),
}

impl Target {
    /// The authorization attributes of impersonating this, in `cluster`.
    fn attributes(&self, request: &RequestInfo) -> RequestInfo {
        let (group, version, resource, sub, namespace, name) = match self {
            Target::ServiceAccount { namespace, name } => {
                ("", "", "serviceaccounts", None, Some(namespace), name)
            }
            Target::User(n) => ("", "", "users", None, None, n),
            Target::Group(n) => ("", "", "groups", None, None, n),
            Target::Extra { key, value } => (
                AUTHENTICATION_GROUP,
                "v1",
                "userextras",
                Some(key.clone()),
                None,
                value,
            ),
            Target::Uid(n) => (AUTHENTICATION_GROUP, "v1", "uids", None, None, n),
        };
        RequestInfo {
            cluster: request.cluster.clone(),
            path: request.path.clone(),
            verb: Verb::Other("impersonate".into()),
            is_resource_request: true,
            api_group: group.into(),
            api_version: version.into(),
            namespace: namespace.cloned(),
            resource: resource.into(),
            subresource: sub,
            name: Some(name.clone()),
        }
    }

    /// Go's `%v` of the upstream `ObjectReference` (Kind Namespace Name UID APIVersion
    /// ResourceVersion FieldPath), for the error naming a request without a user.
    fn go_value(&self) -> String {
        let (kind, ns, name, api_version, field) = match self {
            Target::ServiceAccount { namespace, name } => {
                ("ServiceAccount", namespace.as_str(), name.as_str(), "", "")
            }
            Target::User(n) => ("User", "", n.as_str(), "", ""),
            Target::Group(n) => ("Group", "", n.as_str(), "", ""),
            Target::Extra { key, value } => (
                "UserExtra",
                "",
                value.as_str(),
                "authentication.k8s.io/v1",
                key.as_str(),
            ),
            Target::Uid(n) => ("UID", "", n.as_str(), "authentication.k8s.io/v1", ""),
        };
        format!("{{{kind} {ns} {name}  {api_version}  {field}}}")
    }
}

fn header_text(v: &axum::http::HeaderValue) -> String {
    String::from_utf8_lossy(v.as_bytes()).into_owned()
}

/// `system:serviceaccount:<ns>:<name>` with a valid namespace and name.
fn service_account(username: &str) -> Option<(String, String)> {
    let rest = username.strip_prefix("system:serviceaccount:")?;
    let mut parts = rest.split(':');
    let (ns, name) = (parts.next()?, parts.next()?);
    if parts.next().is_some()
        || !is_dns1123_label(ns).is_empty()
        || !is_dns1123_subdomain(name).is_empty()
    {
        return None;
    }
    Some((ns.to_string(), name.to_string()))
}

/// What the headers ask to impersonate (user, groups, extras by header name, uid), or the
/// error of asking for groups, extras or a uid without a user.
fn targets(headers: &HeaderMap) -> Result<Vec<Target>, String> {
    let mut out = Vec::new();
    let user = headers.get(USER).map(header_text).unwrap_or_default();
    let has_user = !user.is_empty();
    if has_user {
        out.push(match service_account(&user) {
            Some((namespace, name)) => Target::ServiceAccount { namespace, name },
            None => Target::User(user),
        });
    }
    let mut others = false;
    for g in headers.get_all(GROUP) {
        others = true;
        out.push(Target::Group(header_text(g)));
    }
    let mut extra_headers: Vec<&header::HeaderName> = headers
        .keys()
        .filter(|k| k.as_str().starts_with(EXTRA_PREFIX))
        .collect();
    extra_headers.sort_by_key(|k| k.as_str());
    for name in extra_headers {
        let raw = &name.as_str()[EXTRA_PREFIX.len()..];
        let key = match percent_encoding::percent_decode_str(raw).decode_utf8() {
            Ok(k) => k.into_owned(),
            Err(_) => raw.to_string(),
        };
        for v in headers.get_all(name) {
            others = true;
            out.push(Target::Extra {
                key: key.clone(),
                value: header_text(v),
            });
        }
    }
    let uid = headers.get(UID).map(header_text).unwrap_or_default();
    if !uid.is_empty() {
        others = true;
        out.push(Target::Uid(uid));
    }
    if others && !has_user {
        let list: Vec<String> = out.iter().map(Target::go_value).collect();
        return Err(format!(
            "requested [{}] without impersonating a user",
            list.join(" ")
        ));
    }
    Ok(out)
}

/// The user a request acts as: `None` without impersonation headers, the impersonated user
/// when `requestor` may impersonate everything asked for, or the response to send (403, or
/// kube-apiserver's plain-text 500 for groups, extras or a uid without a user).
pub async fn impersonate(
    authorizer: &dyn Authorizer,
    headers: &HeaderMap,
    request: &RequestInfo,
    requestor: &UserInfo,
    request_uri: &str,
) -> Result<Option<UserInfo>, Response> {
    let asked = targets(headers).map_err(|e| internal_error(request_uri, &e))?;
    if asked.is_empty() {
        return Ok(None);
    }
    let groups_specified = headers.contains_key(GROUP);
    let mut user = UserInfo::default();
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for target in &asked {
        let attrs = target.attributes(request);
        match authorizer.authorize(requestor, &attrs).await {
            Decision::Allow(_) => {}
            Decision::Deny(reason) | Decision::NoOpinion(reason) => {
                let status = super::authz::forbidden(requestor, &attrs, &reason);
                return Err(ApiError::from(status).into_response());
            }
        }
        match target {
            Target::ServiceAccount { namespace, name } => {
                user.username = format!("system:serviceaccount:{namespace}:{name}");
                if !groups_specified {
                    user.groups = vec![
                        "system:serviceaccounts".into(),
                        format!("system:serviceaccounts:{namespace}"),
                    ];
                }
            }
            Target::User(name) => user.username = name.clone(),
            Target::Group(g) => user.groups.push(g.clone()),
            Target::Extra { key, value } => {
                extra.entry(key.clone()).or_default().push(value.clone())
            }
            Target::Uid(uid) => user.uid = uid.clone(),
        }
    }
    user.extra = extra;
    if user.username != SYSTEM_ANONYMOUS {
        if !user
            .groups
            .iter()
            .any(|g| g == SYSTEM_AUTHENTICATED || g == SYSTEM_UNAUTHENTICATED)
        {
            user.groups.push(SYSTEM_AUTHENTICATED.into());
        }
    } else if !user.in_group(SYSTEM_UNAUTHENTICATED) {
        user.groups.push(SYSTEM_UNAUTHENTICATED.into());
    }
    Ok(Some(user))
}

/// kube-apiserver's `responsewriters.InternalError`: a plain-text 500.
fn internal_error(request_uri: &str, err: &str) -> Response {
    let text = format!("Internal Server Error: {request_uri:?}: {err}")
        .replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;");
    (
        StatusCode::INTERNAL_SERVER_ERROR,
        [
            (header::CONTENT_TYPE, "text/plain; charset=utf-8"),
            (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        ],
        format!("{text}\n"),
    )
        .into_response()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::http::authz::{Reason, SuperuserAuthorizer};
    use kplane_types::request::SYSTEM_MASTERS;
    use kplane_types::{ClusterName, ClusterScope};

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(
                header::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                v.parse().unwrap(),
            );
        }
        h
    }

    fn request() -> RequestInfo {
        RequestInfo::non_resource(
            ClusterScope::One(ClusterName::root()),
            Verb::Get,
            "/api/v1/namespaces",
        )
    }

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            username: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    /// Allows impersonating everything but the group `forbidden` and the extra key `secret`.
    #[derive(Debug)]
    struct Picky;

    #[async_trait::async_trait]
    impl Authorizer for Picky {
        async fn authorize(&self, _: &UserInfo, r: &RequestInfo) -> Decision {
            assert_eq!(r.verb.as_str(), "impersonate");
            let refused = (r.resource == "groups" && r.name.as_deref() == Some("forbidden"))
                || r.subresource.as_deref() == Some("secret");
            if refused {
                Decision::NoOpinion(Reason::Borrowed(""))
            } else {
                Decision::Allow(Reason::Borrowed(""))
            }
        }
    }

    async fn run(
        a: &dyn Authorizer,
        who: &UserInfo,
        pairs: &[(&str, &str)],
    ) -> Result<Option<UserInfo>, Response> {
        impersonate(a, &headers(pairs), &request(), who, "/api/v1/namespaces").await
    }

    async fn message(resp: Response) -> (u16, String) {
        let code = resp.status().as_u16();
        let body = axum::body::to_bytes(resp.into_body(), 1 << 20)
            .await
            .unwrap();
        let text = String::from_utf8(body.to_vec()).unwrap();
        match serde_json::from_str::<serde_json::Value>(&text) {
            Ok(v) => (code, v["message"].as_str().unwrap_or("").to_string()),
            Err(_) => (code, text),
        }
    }

    #[tokio::test]
    async fn no_headers_no_impersonation() {
        let alice = user("alice", &[]);
        assert_eq!(run(&Picky, &alice, &[]).await.unwrap(), None);
        assert_eq!(
            run(&Picky, &alice, &[("impersonate-user", "")])
                .await
                .unwrap(),
            None
        );
    }

    #[tokio::test]
    async fn builds_the_impersonated_user() {
        let alice = user("alice", &[]);
        let u = run(
            &Picky,
            &alice,
            &[
                ("impersonate-user", "bob"),
                ("impersonate-group", "dev"),
                ("impersonate-group", "ops"),
                ("impersonate-uid", "u-1"),
                ("impersonate-extra-scopes", "view"),
                ("impersonate-extra-scopes", "edit"),
                ("impersonate-extra-example.com%2fteam", "blue"),
            ],
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(u.username, "bob");
        assert_eq!(u.uid, "u-1");
        assert_eq!(u.groups, ["dev", "ops", SYSTEM_AUTHENTICATED]);
        assert_eq!(u.extra["scopes"], ["view", "edit"]);
        assert_eq!(u.extra["example.com/team"], ["blue"]);

        // A ServiceAccount gets its groups unless groups are given.
        let sa = run(
            &Picky,
            &alice,
            &[("impersonate-user", "system:serviceaccount:ns1:robot")],
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(
            sa.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:ns1",
                SYSTEM_AUTHENTICATED
            ]
        );
        let sa = run(
            &Picky,
            &alice,
            &[
                ("impersonate-user", "system:serviceaccount:ns1:robot"),
                ("impersonate-group", SYSTEM_UNAUTHENTICATED),
            ],
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(sa.groups, [SYSTEM_UNAUTHENTICATED]);
        // An invalid ServiceAccount name is a plain user.
        let plain = run(
            &Picky,
            &alice,
            &[("impersonate-user", "system:serviceaccount:NS:robot")],
        )
        .await
        .unwrap()
        .unwrap();
        assert_eq!(plain.groups, [SYSTEM_AUTHENTICATED]);
        let anon = run(&Picky, &alice, &[("impersonate-user", SYSTEM_ANONYMOUS)])
            .await
            .unwrap()
            .unwrap();
        assert_eq!(anon.groups, [SYSTEM_UNAUTHENTICATED]);
    }

    #[tokio::test]
    async fn each_attribute_is_authorized_with_upstream_messages() {
        let alice = user("alice", &[SYSTEM_AUTHENTICATED]);
        let resp = run(&SuperuserAuthorizer, &alice, &[("impersonate-user", "bob")])
            .await
            .unwrap_err();
        let (code, msg) = message(resp).await;
        assert_eq!(code, 403);
        assert!(
            msg.starts_with(r#"users "bob" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope"#),
            "{msg}"
        );
        let resp = run(
            &SuperuserAuthorizer,
            &alice,
            &[("impersonate-user", "system:serviceaccount:ns1:robot")],
        )
        .await
        .unwrap_err();
        assert!(message(resp).await.1.starts_with(
            r#"serviceaccounts "robot" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "ns1""#
        ));
        let cases = [
            (
                ("impersonate-group", "forbidden"),
                r#"groups "forbidden" is forbidden: User "alice" cannot impersonate resource "groups" in API group "" at the cluster scope"#,
            ),
            (
                ("impersonate-extra-secret", "x"),
                r#"userextras.authentication.k8s.io "x" is forbidden: User "alice" cannot impersonate resource "userextras/secret" in API group "authentication.k8s.io" at the cluster scope"#,
            ),
        ];
        for (h, want) in cases {
            let resp = run(&Picky, &alice, &[("impersonate-user", "bob"), h])
                .await
                .unwrap_err();
            assert_eq!(message(resp).await, (403, want.to_string()));
        }
        // system:masters may impersonate anyone.
        let admin = user("root", &[SYSTEM_MASTERS]);
        let u = run(&SuperuserAuthorizer, &admin, &[("impersonate-user", "bob")])
            .await
            .unwrap()
            .unwrap();
        assert_eq!(u.username, "bob");
    }

    #[tokio::test]
    async fn groups_without_a_user_are_a_500() {
        let alice = user("alice", &[]);
        let resp = run(
            &Picky,
            &alice,
            &[("impersonate-group", "admins"), ("impersonate-uid", "u<1>")],
        )
        .await
        .unwrap_err();
        assert_eq!(
            message(resp).await,
            (
                500,
                "Internal Server Error: \"/api/v1/namespaces\": requested [{Group  admins    } {UID  u&lt;1&gt;  authentication.k8s.io/v1  }] without impersonating a user\n".to_string()
            )
        );
    }
}
