//! What kube-apiserver's `system:basic-user` ClusterRole grants every authenticated user,
//! kept as a fixed policy until RBAC (which bootstraps that role) decides it: `create` of
//! the self reviews (`selfsubjectreviews` — `kubectl auth whoami` —,
//! `selfsubjectaccessreviews`, `selfsubjectrulesreviews`). About anything else it has no
//! opinion. Once RBAC serves `system:basic-user`, this authorizer is redundant.

use kplane_types::{RequestInfo, UserInfo};

use super::authz::{Authorizer, Decision, Reason};

/// Allows authenticated users to ask about themselves (see the module doc).
#[derive(Debug, Default)]
pub struct SelfReviewAuthorizer;

#[async_trait::async_trait]
impl Authorizer for SelfReviewAuthorizer {
    async fn authorize(&self, user: &UserInfo, r: &RequestInfo) -> Decision {
        if kplane_registry::rbac::chain::is_self_review(user, r) {
            Decision::Allow(Reason::Borrowed(""))
        } else {
            Decision::NoOpinion(Reason::Borrowed(""))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kplane_types::request::SYSTEM_AUTHENTICATED;
    use kplane_types::{ClusterName, ClusterScope, Verb};

    fn req(group: &str, resource: &str, verb: Verb) -> RequestInfo {
        RequestInfo {
            cluster: ClusterScope::One(ClusterName::root()),
            path: String::new(),
            verb,
            is_resource_request: true,
            api_group: group.into(),
            api_version: "v1".into(),
            namespace: None,
            resource: resource.into(),
            subresource: None,
            name: None,
        }
    }

    #[tokio::test]
    async fn only_self_reviews_of_authenticated_users() {
        let a = SelfReviewAuthorizer;
        let sa = UserInfo {
            username: "system:serviceaccount:default:default".into(),
            groups: vec![SYSTEM_AUTHENTICATED.into()],
            ..Default::default()
        };
        let anonymous = UserInfo {
            username: "system:anonymous".into(),
            groups: vec!["system:unauthenticated".into()],
            ..Default::default()
        };
        let whoami = req("authentication.k8s.io", "selfsubjectreviews", Verb::Create);
        assert!(matches!(
            a.authorize(&sa, &whoami).await,
            Decision::Allow(_)
        ));
        assert!(matches!(
            a.authorize(&anonymous, &whoami).await,
            Decision::NoOpinion(_)
        ));
        for other in [
            req("authentication.k8s.io", "selfsubjectreviews", Verb::List),
            req("authentication.k8s.io", "tokenreviews", Verb::Create),
            req("authorization.k8s.io", "subjectaccessreviews", Verb::Create),
            req("", "configmaps", Verb::Create),
        ] {
            assert!(matches!(
                a.authorize(&sa, &other).await,
                Decision::NoOpinion(_)
            ));
        }
        let can_i = req(
            "authorization.k8s.io",
            "selfsubjectaccessreviews",
            Verb::Create,
        );
        assert!(matches!(a.authorize(&sa, &can_i).await, Decision::Allow(_)));
    }
}
