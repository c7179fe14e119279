//! The server's built-in authorizer chain, synchronously: the superusers, the self reviews
//! every authenticated user may make, then RBAC. The apiserver's authorizers ask
//! [`superuser_reason`] and [`is_self_review`]; CEL's `authorizer` library (admission
//! policies' expressions and webhooks' `matchConditions`) asks [`decide`], which answers
//! each check as the chain answers a SubjectAccessReview about the requesting user (or
//! the service account of `authorizer.serviceAccount`) in the request's logical cluster,
//! with the same reasons. The cluster's compiled RBAC is fetched once before evaluation
//! ([`Registry::cel_authorizer`]), so a check is a synchronous lookup. An authorizer a
//! server adds to its chain (`ServerBuilder::authorizer`) is not asked.

use std::sync::Arc;

use kplane_schema::policy::{Authorize, AuthzDecision, AuthzRequest, Target};
use kplane_types::request::{SYSTEM_AUTHENTICATED, SYSTEM_MASTERS};
use kplane_types::{ClusterName, ClusterScope, RequestInfo, UserInfo, Verb};

use super::{bound_cluster_violation, defaults, Layer, Policy, Verdict};
use crate::Registry;

/// The server's admin user (allowed everything, as `system:masters`).
pub const ADMIN_USER: &str = "kplane-admin";

/// Why a superuser may do anything (kplane's first authorizer): `None` for anyone else.
pub fn superuser_reason(user: &UserInfo) -> Option<&'static str> {
    if user.in_group(SYSTEM_MASTERS) {
        Some("kplane: member of system:masters")
    } else if user.username == ADMIN_USER {
        Some("kplane: the kplane-admin user")
    } else {
        None
    }
}

/// Whether `r` is one of the self reviews every authenticated user may create
/// (`system:basic-user`): `selfsubjectreviews`, `selfsubjectaccessreviews`,
/// `selfsubjectrulesreviews`.
pub fn is_self_review(user: &UserInfo, r: &RequestInfo) -> bool {
    r.is_resource_request
        && r.verb == Verb::Create
        && r.subresource.is_none()
        && matches!(
            (r.api_group.as_str(), r.resource.as_str()),
            ("authentication.k8s.io", "selfsubjectreviews")
                | ("authorization.k8s.io", "selfsubjectaccessreviews")
                | ("authorization.k8s.io", "selfsubjectrulesreviews")
        )
        && user.in_group(SYSTEM_AUTHENTICATED)
}

/// `serviceaccount.ServiceAccountInfo.UserInfo()`: the user a service account acts as.
fn service_account_user(namespace: &str, name: &str) -> UserInfo {
    UserInfo {
        username: format!("system:serviceaccount:{namespace}:{name}"),
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{namespace}"),
        ],
        ..Default::default()
    }
}

/// The attributes of a check (`AttributesRecord`: version `*` for resources).
fn request_info(cluster: &ClusterName, r: &AuthzRequest) -> RequestInfo {
    let scope = ClusterScope::One(cluster.clone());
    let verb = Verb::parse(&r.verb);
    let some = |s: &str| (!s.is_empty()).then(|| s.to_string());
    match &r.target {
        Target::Path(p) => RequestInfo::non_resource(scope, verb, p.clone()),
        Target::Resource(a) => RequestInfo {
            cluster: scope,
            path: String::new(),
            verb,
            is_resource_request: true,
            api_group: a.group.clone(),
            api_version: "*".into(),
            namespace: some(&a.namespace),
            resource: a.resource.clone(),
            subresource: some(&a.subresource),
            name: some(&a.name),
        },
    }
}

fn decision(allowed: bool, reason: impl Into<String>) -> AuthzDecision {
    AuthzDecision {
        allowed,
        reason: reason.into(),
        error: None,
    }
}

/// The chain's decision on `r` asked by `requester` in `cluster`, whose RBAC is `layer`
/// (`Err`: why it could not be read, RBAC's no-opinion reason).
pub fn decide(
    layer: &Result<Arc<Layer>, String>,
    cluster: &ClusterName,
    requester: &UserInfo,
    r: &AuthzRequest,
) -> AuthzDecision {
    let account;
    let user = match &r.service_account {
        Some((ns, name)) => {
            account = service_account_user(ns, name);
            &account
        }
        None => requester,
    };
    let info = request_info(cluster, r);
    if let Some(why) = superuser_reason(user) {
        return decision(true, why);
    }
    if is_self_review(user, &info) {
        return decision(true, "");
    }
    if let Some(why) = bound_cluster_violation(user, &info.cluster) {
        return decision(false, why);
    }
    let layer = match layer {
        Ok(l) => l,
        Err(why) => return decision(false, format!("RBAC: {why}")),
    };
    let policy = Policy {
        cluster: layer,
        defaults: defaults::layer(),
    };
    match policy.authorize(user, &info, false) {
        Verdict::Allow(why) => decision(true, why),
        Verdict::NoOpinion(why) | Verdict::Deny(why) => decision(false, why),
    }
}

impl Registry {
    /// The `authorizer` of CEL expressions evaluated for a request of `user` in
    /// `cluster`: the cluster's RBAC read now (from the cache), decisions as [`decide`].
    pub(crate) async fn cel_authorizer(&self, cluster: &ClusterName, user: &UserInfo) -> Authorize {
        let layer = self.rbac_layer(cluster).await.map_err(|e| e.0.message);
        let cluster = cluster.clone();
        let user = user.clone();
        Arc::new(move |r: &AuthzRequest| decide(&layer, &cluster, &user, r))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kplane_schema::policy::ResourceAttributes;

    fn user(name: &str, groups: &[&str]) -> UserInfo {
        UserInfo {
            username: name.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..Default::default()
        }
    }

    fn secrets(verb: &str, ns: &str, sa: Option<(&str, &str)>) -> AuthzRequest {
        AuthzRequest {
            service_account: sa.map(|(n, s)| (n.to_string(), s.to_string())),
            verb: verb.into(),
            target: Target::Resource(ResourceAttributes {
                resource: "secrets".into(),
                namespace: ns.into(),
                ..Default::default()
            }),
        }
    }

    #[test]
    fn decisions_are_the_chains() {
        let root = ClusterName::root();
        let empty = Ok(Arc::new(Layer::build(
            Vec::new(),
            Vec::new(),
            &[],
            &[],
            Some(defaults::layer()),
        )));
        let admin = user("someone", &[SYSTEM_MASTERS]);
        let d = decide(&empty, &root, &admin, &secrets("get", "a", None));
        assert_eq!(d, decision(true, "kplane: member of system:masters"));
        // a service account is asked about, not the requester
        let d = decide(
            &empty,
            &root,
            &admin,
            &secrets("get", "a", Some(("a", "sa"))),
        );
        assert_eq!(d, decision(false, ""));
        let alice = user("alice", &[SYSTEM_AUTHENTICATED]);
        assert_eq!(
            decide(&empty, &root, &alice, &secrets("get", "a", None)),
            decision(false, "")
        );
        let review = AuthzRequest {
            service_account: None,
            verb: "create".into(),
            target: Target::Resource(ResourceAttributes {
                group: "authorization.k8s.io".into(),
                resource: "selfsubjectaccessreviews".into(),
                ..Default::default()
            }),
        };
        assert_eq!(decide(&empty, &root, &alice, &review), decision(true, ""));
        // the default roles: system:discovery lets everyone get /version
        let path = AuthzRequest {
            service_account: None,
            verb: "get".into(),
            target: Target::Path("/version".into()),
        };
        assert!(decide(&empty, &root, &alice, &path).allowed);
        let broken = Err("storage unavailable".to_string());
        assert_eq!(
            decide(&broken, &root, &alice, &secrets("get", "a", None)),
            decision(false, "RBAC: storage unavailable")
        );
    }
}
