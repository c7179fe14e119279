//! Authentication: who a request comes from. An [`Authenticator`] looks at what a request
//! presents ([`AuthRequest`]: its headers, its bearer token, the client's certificate chain
//! from the TLS layer) and answers with an [`AuthOutcome`]. A [`UnionAuthenticator`] asks a
//! chain in order; the server's chain always starts with the [`AdminTokenAuthenticator`]
//! (the token written into `admin.kubeconfig`), and `ServerBuilder::authenticator` adds
//! one after it; `kplane serve` adds the client-certificate authenticator (`x509`) and the
//! static token file (`token_file`). The whole chain is wrapped in the
//! [`AuthenticatedGroupAdder`] (every authenticated user is in `system:authenticated`).
//!
//! A request that presents no credential is anonymous ([`anonymous_user`]) and reaches only
//! the public endpoints ([`is_public_path`]: health, `/version`, OIDC discovery); anywhere
//! else it is a 401, as is a presented credential that no authenticator accepts (no
//! fallback to anonymous), as kube-apiserver answers.

use std::fmt;
use std::sync::Arc;

use super::error::StatusResponse;
use axum::http::HeaderMap;
use axum::response::Response;
use kplane_types::request::{
    SYSTEM_ANONYMOUS, SYSTEM_AUTHENTICATED, SYSTEM_MASTERS, SYSTEM_UNAUTHENTICATED,
};
use kplane_types::{Status, StatusReason, UserInfo};

use kplane_registry::error::ApiError;

/// The user the admin token authenticates as.
pub const ADMIN_USER: &str = kplane_registry::rbac::chain::ADMIN_USER;

/// The certificate chain a TLS client presented (leaf first, DER), which the connection
/// adds to each of its requests' extensions when there is one (the TLS layer asks for one,
/// see `client_ca::RequestClientCert`, and the X.509 authenticator judges it).
#[derive(Clone, Debug)]
pub struct PeerCertificates(pub Arc<[rustls::pki_types::CertificateDer<'static>]>);

/// What a request presents to authenticators.
#[derive(Clone, Copy, Debug, Default)]
pub struct AuthRequest<'a> {
    /// The request's headers (absent when only a token is presented: TokenReview).
    pub headers: Option<&'a HeaderMap>,
    /// The `Authorization: Bearer <token>` token, already extracted.
    pub bearer_token: Option<&'a str>,
    pub peer_certificates: Option<&'a PeerCertificates>,
}

impl<'a> AuthRequest<'a> {
    /// What an HTTP request presents.
    pub fn from_headers(
        headers: &'a HeaderMap,
        peer_certificates: Option<&'a PeerCertificates>,
    ) -> Self {
        AuthRequest {
            headers: Some(headers),
            bearer_token: bearer_token(headers),
            peer_certificates,
        }
    }

    /// A bare token (a TokenReview's `spec.token`): only token authenticators apply.
    pub fn token(token: &'a str) -> Self {
        AuthRequest {
            headers: None,
            bearer_token: Some(token),
            peer_certificates: None,
        }
    }
}

/// The token of an `Authorization: Bearer <token>` header.
fn bearer_token(headers: &HeaderMap) -> Option<&str> {
    let value = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let token = value
        .strip_prefix("Bearer ")
        .or_else(|| value.strip_prefix("bearer "))?
        .trim();
    // An empty token is no token (upstream's bearer-token authenticator).
    (!token.is_empty()).then_some(token)
}

/// The paths a request without credentials may reach (after any `/clusters/<name>`
/// prefix): health, `/version` (`system:public-info-viewer`) and the OIDC discovery
/// documents of ServiceAccount token issuers. Authorization does not apply to them.
pub fn is_public_path(path: &str) -> bool {
    matches!(
        path,
        "/version"
            | "/version/"
            | "/healthz"
            | "/livez"
            | "/readyz"
            | "/.well-known/openid-configuration"
            | "/openid/v1/jwks"
    ) || path.starts_with("/healthz/")
        || path.starts_with("/livez/")
        || path.starts_with("/readyz/")
}

/// The user of a request without credentials (kube-apiserver's anonymous authenticator).
pub fn anonymous_user() -> UserInfo {
    UserInfo {
        username: SYSTEM_ANONYMOUS.into(),
        uid: String::new(),
        groups: vec![SYSTEM_UNAUTHENTICATED.into()],
        extra: Default::default(),
    }
}

/// Adds `system:authenticated` to every user the inner authenticator accepts, unless the
/// user is `system:anonymous` or already in `system:authenticated` or
/// `system:unauthenticated` (kube-apiserver's authenticated group adder).
#[derive(Debug)]
pub struct AuthenticatedGroupAdder(pub Arc<dyn Authenticator>);

#[async_trait::async_trait]
impl Authenticator for AuthenticatedGroupAdder {
    async fn authenticate(&self, req: &AuthRequest<'_>) -> AuthOutcome {
        match self.0.authenticate(req).await {
            AuthOutcome::Authenticated(mut u) => {
                let marked = u.username == SYSTEM_ANONYMOUS
                    || u.groups
                        .iter()
                        .any(|g| g == SYSTEM_AUTHENTICATED || g == SYSTEM_UNAUTHENTICATED);
                if !marked {
                    u.groups.push(SYSTEM_AUTHENTICATED.into());
                }
                AuthOutcome::Authenticated(u)
            }
            other => other,
        }
    }
}

/// Why a credential was refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AuthError(pub String);

/// What an authenticator makes of a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AuthOutcome {
    /// The credentials are good and belong to this user.
    Authenticated(UserInfo),
    /// The request carries no credential this authenticator understands.
    NotApplicable,
    /// The request carries a credential of this authenticator's kind, and it is bad.
    Rejected(AuthError),
}

/// Decides who a request comes from.
#[async_trait::async_trait]
pub trait Authenticator: Send + Sync + fmt::Debug {
    async fn authenticate(&self, req: &AuthRequest<'_>) -> AuthOutcome;
}

/// Asks each authenticator in turn: the first to authenticate the request wins. When none
/// does, the rejections are combined (kube-apiserver's union authenticator), or, with none,
/// the request is [`AuthOutcome::NotApplicable`].
#[derive(Debug, Default)]
pub struct UnionAuthenticator {
    chain: Vec<Arc<dyn Authenticator>>,
}

impl UnionAuthenticator {
    pub fn new(chain: Vec<Arc<dyn Authenticator>>) -> Self {
        UnionAuthenticator { chain }
    }
}

#[async_trait::async_trait]
impl Authenticator for UnionAuthenticator {
    async fn authenticate(&self, req: &AuthRequest<'_>) -> AuthOutcome {
        let mut errors: Vec<String> = Vec::new();
        for a in &self.chain {
            match a.authenticate(req).await {
                AuthOutcome::Authenticated(u) => return AuthOutcome::Authenticated(u),
                AuthOutcome::NotApplicable => {}
                AuthOutcome::Rejected(e) => errors.push(e.0),
            }
        }
        match errors.len() {
            0 => AuthOutcome::NotApplicable,
            1 => AuthOutcome::Rejected(AuthError(errors.remove(0))),
            _ => AuthOutcome::Rejected(AuthError(format!("[{}]", errors.join(", ")))),
        }
    }
}

/// The admin token (kplane's own credential, in `admin.kubeconfig`): its bearer is
/// [`ADMIN_USER`] in `system:masters`. Any other token is not its business.
pub struct AdminTokenAuthenticator {
    token: String,
}

impl fmt::Debug for AdminTokenAuthenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AdminTokenAuthenticator")
            .finish_non_exhaustive()
    }
}

impl AdminTokenAuthenticator {
    pub fn new(token: String) -> Self {
        AdminTokenAuthenticator { token }
    }
}

#[async_trait::async_trait]
impl Authenticator for AdminTokenAuthenticator {
    async fn authenticate(&self, req: &AuthRequest<'_>) -> AuthOutcome {
        match req.bearer_token {
            Some(t) if constant_time_eq(t.as_bytes(), self.token.as_bytes()) => {
                AuthOutcome::Authenticated(UserInfo {
                    username: ADMIN_USER.into(),
                    uid: String::new(),
                    groups: vec![SYSTEM_MASTERS.into(), SYSTEM_AUTHENTICATED.into()],
                    extra: Default::default(),
                })
            }
            _ => AuthOutcome::NotApplicable,
        }
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// 401 `Unauthorized`, as kubectl expects it (why is not told to the client).
pub fn unauthorized() -> Response {
    ApiError::from(Status::new(StatusReason::Unauthorized, "Unauthorized")).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(auth: Option<&str>) -> HeaderMap {
        let mut h = HeaderMap::new();
        if let Some(a) = auth {
            h.insert("authorization", a.parse().unwrap());
        }
        h
    }

    async fn user(a: &dyn Authenticator, auth: Option<&str>) -> AuthOutcome {
        let h = headers(auth);
        a.authenticate(&AuthRequest::from_headers(&h, None)).await
    }

    #[tokio::test]
    async fn bearer_token_checked() {
        let a = AdminTokenAuthenticator::new("secret".into());
        assert_eq!(user(&a, None).await, AuthOutcome::NotApplicable);
        assert_eq!(
            user(&a, Some("Bearer wrong")).await,
            AuthOutcome::NotApplicable
        );
        assert_eq!(
            user(&a, Some("Basic secret")).await,
            AuthOutcome::NotApplicable
        );
        assert_eq!(
            user(&a, Some("Bearer secre")).await,
            AuthOutcome::NotApplicable
        );
        assert_eq!(user(&a, Some("Bearer  ")).await, AuthOutcome::NotApplicable);
        for good in ["Bearer secret", "bearer secret", "Bearer  secret "] {
            let AuthOutcome::Authenticated(u) = user(&a, Some(good)).await else {
                panic!("{good} not authenticated");
            };
            assert_eq!(u.username, ADMIN_USER);
            assert!(u.in_group(SYSTEM_MASTERS) && u.in_group(SYSTEM_AUTHENTICATED));
        }
        // A bare token (TokenReview) goes through the same check.
        let out = a.authenticate(&AuthRequest::token("secret")).await;
        assert!(matches!(out, AuthOutcome::Authenticated(_)), "{out:?}");
        assert_eq!(
            a.authenticate(&AuthRequest::token("other")).await,
            AuthOutcome::NotApplicable
        );
    }

    /// Authenticates `token` as `user`, rejects any other token, ignores requests without.
    #[derive(Debug)]
    struct Fixed {
        token: &'static str,
        user: &'static str,
    }

    #[async_trait::async_trait]
    impl Authenticator for Fixed {
        async fn authenticate(&self, req: &AuthRequest<'_>) -> AuthOutcome {
            match req.bearer_token {
                None => AuthOutcome::NotApplicable,
                Some(t) if t == self.token => AuthOutcome::Authenticated(UserInfo {
                    username: self.user.into(),
                    ..Default::default()
                }),
                Some(_) => AuthOutcome::Rejected(AuthError(format!("not {}", self.user))),
            }
        }
    }

    #[tokio::test]
    async fn the_chain_takes_the_first_user_and_combines_rejections() {
        let chain = UnionAuthenticator::new(vec![
            Arc::new(AdminTokenAuthenticator::new("admin".into())),
            Arc::new(Fixed {
                token: "a",
                user: "alice",
            }),
            Arc::new(Fixed {
                token: "b",
                user: "bob",
            }),
        ]);
        let name = |o: AuthOutcome| match o {
            AuthOutcome::Authenticated(u) => u.username,
            other => format!("{other:?}"),
        };
        assert_eq!(name(user(&chain, Some("Bearer admin")).await), ADMIN_USER);
        // Alice's authenticator rejects bob's token; bob's accepts it.
        assert_eq!(name(user(&chain, Some("Bearer a")).await), "alice");
        assert_eq!(name(user(&chain, Some("Bearer b")).await), "bob");
        assert_eq!(
            user(&chain, Some("Bearer c")).await,
            AuthOutcome::Rejected(AuthError("[not alice, not bob]".into()))
        );
        assert_eq!(user(&chain, None).await, AuthOutcome::NotApplicable);
        assert_eq!(
            UnionAuthenticator::default()
                .authenticate(&AuthRequest::token("admin"))
                .await,
            AuthOutcome::NotApplicable
        );
        let one = UnionAuthenticator::new(vec![Arc::new(Fixed {
            token: "a",
            user: "alice",
        })]);
        assert_eq!(
            user(&one, Some("Bearer x")).await,
            AuthOutcome::Rejected(AuthError("not alice".into()))
        );
    }

    #[tokio::test]
    async fn authenticated_users_join_system_authenticated_once() {
        let adder = AuthenticatedGroupAdder(Arc::new(Fixed {
            token: "a",
            user: "alice",
        }));
        let AuthOutcome::Authenticated(u) = adder.authenticate(&AuthRequest::token("a")).await
        else {
            panic!("not authenticated");
        };
        assert_eq!(u.groups, [SYSTEM_AUTHENTICATED]);
        let admin = AuthenticatedGroupAdder(Arc::new(AdminTokenAuthenticator::new("t".into())));
        let AuthOutcome::Authenticated(u) = admin.authenticate(&AuthRequest::token("t")).await
        else {
            panic!("not authenticated");
        };
        assert_eq!(u.groups, [SYSTEM_MASTERS, SYSTEM_AUTHENTICATED]);
        assert_eq!(
            adder.authenticate(&AuthRequest::token("b")).await,
            AuthOutcome::Rejected(AuthError("not alice".into()))
        );
        assert_eq!(anonymous_user().groups, [SYSTEM_UNAUTHENTICATED]);
    }

    #[test]
    fn public_paths() {
        for p in [
            "/healthz",
            "/livez/ping",
            "/readyz",
            "/version",
            "/.well-known/openid-configuration",
            "/openid/v1/jwks",
        ] {
            assert!(is_public_path(p), "{p}");
        }
        for p in [
            "/",
            "/api",
            "/apis",
            "/metrics",
            "/openapi/v2",
            "/healthzx",
            "/version/x",
        ] {
            assert!(!is_public_path(p), "{p}");
        }
    }
}
