//! Authorization: may this user make this request? An [`Authorizer`] takes the
//! authenticated [`UserInfo`] and the request's [`RequestInfo`] and answers with a
//! [`Decision`] (kube-apiserver's authorizer decisions). A [`UnionAuthorizer`] asks a chain
//! in order; the server's chain always starts with the [`SuperuserAuthorizer`] (the admin
//! and `system:masters` may do everything, as kube-apiserver always allows its privileged
//! group first), then the [`RbacAuthorizer`] (each logical cluster's RBAC objects, see
//! `kplane_registry::rbac`), then whatever `ServerBuilder::authorizer` adds.
//!
//! Authorizers also list what they allow a user ([`Authorizer::rules_for`]), for
//! SelfSubjectRulesReview (`kubectl auth can-i --list`).
//!
//! A request the chain does not allow (denied, or no opinion from anyone) is a 403 with
//! kube-apiserver's message ([`forbidden`]).

use std::fmt;
use std::sync::Arc;

use super::error::StatusResponse;
use axum::response::Response;
use kplane_types::request::SYSTEM_MASTERS;
use kplane_types::{RequestInfo, Status, UserInfo};

use super::auth::ADMIN_USER;
use kplane_registry::error::ApiError;
use kplane_registry::rbac::{Rule, Verdict};
use kplane_registry::Registry;
use kplane_types::ClusterScope;

/// An authorizer's answer, with its reason (shown by access reviews and 403s).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    Allow(Reason),
    Deny(Reason),
    /// Neither allowed nor denied: the next authorizer decides; at the end of the chain
    /// the request is forbidden.
    NoOpinion(Reason),
}

/// Why an authorizer decided as it did (a fixed text in the common case, so that allowing a
/// request allocates nothing).
pub type Reason = std::borrow::Cow<'static, str>;

/// What an authorizer allows a user in one namespace (upstream's `RuleResolver`): the
/// rules, the errors met, and whether the list may miss something.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleSet {
    pub rules: Vec<Rule>,
    pub errors: Vec<String>,
    pub incomplete: bool,
}

/// Decides whether a user may make a request.
#[async_trait::async_trait]
pub trait Authorizer: Send + Sync + fmt::Debug {
    async fn authorize(&self, user: &UserInfo, request: &RequestInfo) -> Decision;

    /// The rules this authorizer allows `user` in `namespace` of `cluster`; an authorizer
    /// that cannot list them answers an incomplete, empty set.
    async fn rules_for(
        &self,
        _user: &UserInfo,
        _cluster: &ClusterScope,
        _namespace: &str,
    ) -> RuleSet {
        RuleSet {
            incomplete: true,
            ..Default::default()
        }
    }
}

/// Asks each authorizer in turn: the first `Allow` or `Deny` decides. When every one has no
/// opinion, so has the chain, with their reasons joined.
#[derive(Debug, Default)]
pub struct UnionAuthorizer {
    chain: Vec<Arc<dyn Authorizer>>,
}

impl UnionAuthorizer {
    pub fn new(chain: Vec<Arc<dyn Authorizer>>) -> Self {
        UnionAuthorizer { chain }
    }
}

#[async_trait::async_trait]
impl Authorizer for UnionAuthorizer {
    async fn authorize(&self, user: &UserInfo, request: &RequestInfo) -> Decision {
        let mut reasons: Vec<Reason> = Vec::new();
        for a in &self.chain {
            match a.authorize(user, request).await {
                Decision::NoOpinion(r) => {
                    if !r.is_empty() {
                        reasons.push(r);
                    }
                }
                decided => return decided,
            }
        }
        Decision::NoOpinion(match reasons.len() {
            0 => Reason::Borrowed(""),
            1 => reasons.swap_remove(0),
            _ => reasons.join("\n").into(),
        })
    }

    async fn rules_for(&self, user: &UserInfo, cluster: &ClusterScope, namespace: &str) -> RuleSet {
        let mut all = RuleSet::default();
        for a in &self.chain {
            let s = a.rules_for(user, cluster, namespace).await;
            for r in s.rules {
                if !all.rules.contains(&r) {
                    all.rules.push(r);
                }
            }
            all.errors.extend(s.errors);
            all.incomplete |= s.incomplete;
        }
        all
    }
}

/// kplane's policy until RBAC: the admin user and members of `system:masters` may do
/// everything; about anyone else it has no opinion.
#[derive(Debug, Default)]
pub struct SuperuserAuthorizer;

#[async_trait::async_trait]
impl Authorizer for SuperuserAuthorizer {
    async fn authorize(&self, user: &UserInfo, _request: &RequestInfo) -> Decision {
        match kplane_registry::rbac::chain::superuser_reason(user) {
            Some(why) => Decision::Allow(Reason::Borrowed(why)),
            None => Decision::NoOpinion(Reason::Borrowed("")),
        }
    }

    async fn rules_for(&self, user: &UserInfo, _: &ClusterScope, _: &str) -> RuleSet {
        let mut s = RuleSet::default();
        if user.in_group(SYSTEM_MASTERS) || user.username == ADMIN_USER {
            s.rules = vec![
                Rule::resource(&["*"], &["*"], &["*"]),
                Rule::urls(&["*"], &["*"]),
            ];
        }
        s
    }
}

/// RBAC per logical cluster (`kplane_registry::rbac`): a request is allowed when a rule
/// bound to the user in the request's logical cluster allows it; a credential bound to
/// another logical cluster is denied.
#[derive(Debug)]
pub struct RbacAuthorizer {
    registry: Arc<Registry>,
}

impl RbacAuthorizer {
    pub fn new(registry: Arc<Registry>) -> Self {
        RbacAuthorizer { registry }
    }
}

#[async_trait::async_trait]
impl Authorizer for RbacAuthorizer {
    async fn authorize(&self, user: &UserInfo, request: &RequestInfo) -> Decision {
        match self.registry.rbac().authorize(user, request).await {
            Verdict::Allow(r) => Decision::Allow(r.into()),
            Verdict::NoOpinion(r) => Decision::NoOpinion(r.into()),
            Verdict::Deny(r) => Decision::Deny(r.into()),
        }
    }

    async fn rules_for(&self, user: &UserInfo, cluster: &ClusterScope, namespace: &str) -> RuleSet {
        let ns = Some(namespace).filter(|n| !n.is_empty());
        match self.registry.rbac().rules(cluster, user, ns).await {
            Ok((rules, errors)) => RuleSet {
                incomplete: !errors.is_empty(),
                rules,
                errors,
            },
            Err(e) => RuleSet {
                rules: Vec::new(),
                errors: vec![e.0.message],
                incomplete: true,
            },
        }
    }
}

/// Allows nothing: for tests and for servers that only answer the admin.
#[derive(Debug, Default)]
pub struct DenyAll;

#[async_trait::async_trait]
impl Authorizer for DenyAll {
    async fn authorize(&self, _user: &UserInfo, _request: &RequestInfo) -> Decision {
        Decision::Deny(Reason::Borrowed(""))
    }

    async fn rules_for(&self, _: &UserInfo, _: &ClusterScope, _: &str) -> RuleSet {
        RuleSet::default()
    }
}

/// Checks a request, answering the 403 to send when it is not allowed.
pub async fn check(
    authorizer: &dyn Authorizer,
    user: &UserInfo,
    request: &RequestInfo,
) -> Result<(), Response> {
    decide(authorizer, user, request)
        .await
        .map(|_| ())
        .map_err(|(_, resp)| resp)
}

/// Checks a request: the reason it is allowed, or the reason it is not and the 403 to send
/// (the audit log records the reason either way).
pub async fn decide(
    authorizer: &dyn Authorizer,
    user: &UserInfo,
    request: &RequestInfo,
) -> Result<Reason, (Reason, Response)> {
    match authorizer.authorize(user, request).await {
        Decision::Allow(reason) => Ok(reason),
        Decision::Deny(reason) | Decision::NoOpinion(reason) => {
            let resp = ApiError::from(forbidden(user, request, &reason)).into_response();
            Err((reason, resp))
        }
    }
}

/// kube-apiserver's 403 for a request the authorizers did not allow, e.g. `configmaps is
/// forbidden: User "x" cannot list resource "configmaps" in API group "" in the namespace
/// "y"`, with `: <reason>` when there is one.
pub fn forbidden(user: &UserInfo, r: &RequestInfo, reason: &str) -> Status {
    let who = &user.username;
    let verb = r.verb.as_str();
    let mut why = if !r.is_resource_request {
        format!("User {who:?} cannot {verb} path {:?}", r.path)
    } else {
        let resource = match &r.subresource {
            Some(s) => format!("{}/{s}", r.resource),
            None => r.resource.clone(),
        };
        let group = &r.api_group;
        match &r.namespace {
            Some(ns) => format!(
                "User {who:?} cannot {verb} resource {resource:?} in API group {group:?} in the namespace {ns:?}"
            ),
            None => format!(
                "User {who:?} cannot {verb} resource {resource:?} in API group {group:?} at the cluster scope"
            ),
        }
    };
    if !reason.is_empty() {
        why.push_str(": ");
        why.push_str(reason);
    }
    let (group, resource) = if r.is_resource_request {
        (r.api_group.as_str(), r.resource.as_str())
    } else {
        ("", "")
    };
    Status::forbidden(group, resource, r.name.as_deref().unwrap_or(""), &why)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kplane_types::request::SYSTEM_AUTHENTICATED;
    use kplane_types::{ClusterName, ClusterScope, Verb};

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            username: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    fn configmaps(verb: Verb, ns: Option<&str>, name: Option<&str>) -> RequestInfo {
        RequestInfo {
            cluster: ClusterScope::One(ClusterName::root()),
            path: "/api/v1/...".into(),
            verb,
            is_resource_request: true,
            api_group: String::new(),
            api_version: "v1".into(),
            namespace: ns.map(str::to_string),
            resource: "configmaps".into(),
            subresource: None,
            name: name.map(str::to_string),
        }
    }

    #[test]
    fn forbidden_messages_match_kube_apiserver() {
        let x = user("x", &[]);
        let s = forbidden(&x, &configmaps(Verb::List, Some("y"), None), "");
        assert_eq!(s.code, 403);
        assert_eq!(
            s.message,
            r#"configmaps is forbidden: User "x" cannot list resource "configmaps" in API group "" in the namespace "y""#
        );
        let s = forbidden(&x, &configmaps(Verb::Get, None, Some("c")), "no way");
        assert_eq!(
            s.message,
            r#"configmaps "c" is forbidden: User "x" cannot get resource "configmaps" in API group "" at the cluster scope: no way"#
        );
        let mut scale = configmaps(Verb::Update, Some("a"), Some("d"));
        scale.api_group = "apps".into();
        scale.resource = "deployments".into();
        scale.subresource = Some("scale".into());
        assert_eq!(
            forbidden(&x, &scale, "").message,
            r#"deployments.apps "d" is forbidden: User "x" cannot update resource "deployments/scale" in API group "apps" in the namespace "a""#
        );
        let path = RequestInfo::non_resource(ClusterScope::Wildcard, Verb::Get, "/metrics");
        assert_eq!(
            forbidden(&x, &path, "").message,
            r#"forbidden: User "x" cannot get path "/metrics""#
        );
    }

    #[derive(Debug)]
    struct Fixed(Decision);

    #[async_trait::async_trait]
    impl Authorizer for Fixed {
        async fn authorize(&self, _: &UserInfo, _: &RequestInfo) -> Decision {
            self.0.clone()
        }
    }

    #[tokio::test]
    async fn the_chain_stops_at_the_first_decision() {
        let alice = user("alice", &[SYSTEM_AUTHENTICATED]);
        let admin = user(ADMIN_USER, &[SYSTEM_MASTERS, SYSTEM_AUTHENTICATED]);
        let req = configmaps(Verb::Create, Some("a"), None);
        let no = |r: &'static str| Arc::new(Fixed(Decision::NoOpinion(r.into())));
        let chain = UnionAuthorizer::new(vec![
            Arc::new(SuperuserAuthorizer),
            no("first"),
            Arc::new(Fixed(Decision::Deny("denied".into()))),
            Arc::new(Fixed(Decision::Allow("too late".into()))),
        ]);
        assert!(matches!(
            chain.authorize(&admin, &req).await,
            Decision::Allow(_)
        ));
        assert_eq!(
            chain.authorize(&alice, &req).await,
            Decision::Deny("denied".into())
        );
        let undecided = UnionAuthorizer::new(vec![no("a"), no(""), no("b")]);
        assert_eq!(
            undecided.authorize(&alice, &req).await,
            Decision::NoOpinion("a\nb".into())
        );
        assert_eq!(
            UnionAuthorizer::default().authorize(&admin, &req).await,
            Decision::NoOpinion("".into())
        );
    }

    #[tokio::test]
    async fn superusers_are_the_admin_and_system_masters() {
        let req = configmaps(Verb::DeleteCollection, None, None);
        let a = SuperuserAuthorizer;
        for (u, allowed) in [
            (
                user(ADMIN_USER, &[SYSTEM_MASTERS, SYSTEM_AUTHENTICATED]),
                true,
            ),
            (user("someone", &[SYSTEM_MASTERS]), true),
            (user(ADMIN_USER, &[]), true),
            (user("alice", &[SYSTEM_AUTHENTICATED]), false),
        ] {
            let d = a.authorize(&u, &req).await;
            assert_eq!(matches!(d, Decision::Allow(_)), allowed, "{u:?}: {d:?}");
        }
        let admin = user(ADMIN_USER, &[SYSTEM_MASTERS]);
        assert!(check(&a, &admin, &req).await.is_ok());
        let resp = check(&DenyAll, &admin, &req).await.err().unwrap();
        assert_eq!(resp.status(), 403);
    }
}
