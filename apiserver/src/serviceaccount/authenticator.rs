//! The ServiceAccount token authenticator: a bearer token issued by this server (its `iss`
//! is one of this server's per-cluster issuers) is checked ([`Tokens::check`]: signature,
//! times, audience), then its ServiceAccount must still exist with the same uid and a
//! Secret it is bound to must too, as the registry answers ([`TokenBindings`]: cached). The user is
//! `system:serviceaccount:<ns>:<name>` in `system:serviceaccounts`,
//! `system:serviceaccounts:<ns>` and `system:authenticated`, with the ServiceAccount's uid,
//! the credential id `JTI=<jti>` and the logical cluster in
//! [`CLUSTER_EXTRA`]. Any other token is not its business; a token of
//! this server that fails a check is rejected (401).
//!
//! A verified token's claims are kept for [`VERIFIED_TTL_SECONDS`] (never past its expiry),
//! keyed by the token's SHA-256, so a client's requests do not pay a signature check each
//! (kube-apiserver caches token authentications for 10 s likewise). The ServiceAccount
//! check runs on every request, so deleting it still revokes at once.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use kplane_registry::token_bindings::TokenBindings;
use kplane_types::request::SYSTEM_AUTHENTICATED;
use kplane_types::UserInfo;

use super::token::{Checked, Claims, Tokens, LEEWAY_SECONDS};
use crate::http::auth::{AuthError, AuthOutcome, AuthRequest, Authenticator};

/// The extra a ServiceAccount user carries: the logical cluster its token is bound to.
pub const CLUSTER_EXTRA: &str = "authentication.kplane.io/cluster";
/// The extra naming the credential (`JTI=<jti>`), as upstream.
pub const CREDENTIAL_ID_EXTRA: &str = "authentication.kubernetes.io/credential-id";

/// How long a verified token's claims are reused without checking its signature again.
pub const VERIFIED_TTL_SECONDS: i64 = 10;

/// At most this many verified tokens are remembered; beyond it the cache starts afresh.
pub const VERIFIED_CACHE_ENTRIES: usize = 4096;

/// A verified token: its claims, its cluster, and until when (unix seconds) they count.
struct Verified {
    claims: Arc<Claims>,
    cluster: kplane_types::ClusterName,
    until: i64,
}

/// Authenticates ServiceAccount tokens (see the module doc).
pub struct ServiceAccountAuthenticator {
    tokens: Arc<Tokens>,
    bindings: Arc<dyn TokenBindings>,
    verified: Mutex<HashMap<[u8; 32], Verified>>,
}

impl std::fmt::Debug for ServiceAccountAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ServiceAccountAuthenticator")
            .field("tokens", &self.tokens)
            .finish_non_exhaustive()
    }
}

impl ServiceAccountAuthenticator {
    pub fn new(tokens: Arc<Tokens>, bindings: Arc<dyn TokenBindings>) -> Self {
        ServiceAccountAuthenticator {
            tokens,
            bindings,
            verified: Mutex::new(HashMap::new()),
        }
    }

    /// The token's claims and cluster: from the cache while they count, else checked.
    fn check(&self, token: &str, now: i64) -> Checked {
        let digest = ring::digest::digest(&ring::digest::SHA256, token.as_bytes());
        let mut key = [0u8; 32];
        key.copy_from_slice(digest.as_ref());
        {
            let cache = self.verified.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(v) = cache.get(&key).filter(|v| now <= v.until) {
                return Checked::Valid(Box::new((*v.claims).clone()), v.cluster.clone());
            }
        }
        let checked = self.tokens.check(token, now);
        if let Checked::Valid(claims, cluster) = &checked {
            let until = (now + VERIFIED_TTL_SECONDS).min(claims.exp + LEEWAY_SECONDS);
            let mut cache = self.verified.lock().unwrap_or_else(PoisonError::into_inner);
            if cache.len() >= VERIFIED_CACHE_ENTRIES {
                cache.clear();
            }
            cache.insert(
                key,
                Verified {
                    claims: Arc::new((**claims).clone()),
                    cluster: cluster.clone(),
                    until,
                },
            );
        }
        checked
    }

    /// Whether what the token is bound to still exists.
    async fn still_bound(&self, cluster: &str, claims: &Claims) -> Result<(), String> {
        let k = &claims.kubernetes;
        let sa = &k.serviceaccount;
        match self
            .bindings
            .service_account_uid(cluster, &k.namespace, &sa.name)
            .await
        {
            Ok(Some(uid)) if uid == sa.uid => {}
            Ok(Some(uid)) => {
                return Err(format!(
                    "service account UID ({uid}) does not match claim ({})",
                    sa.uid
                ))
            }
            Ok(None) => return Err("service account token has been invalidated".into()),
            Err(e) => {
                tracing::warn!(error = %e.0.message, "reading a ServiceAccount for its token");
                return Err("service account token could not be validated".into());
            }
        }
        if let Some(secret) = &k.secret {
            let uid = match self
                .bindings
                .secret_uid(cluster, &k.namespace, &secret.name)
                .await
            {
                Ok(uid) => uid,
                Err(e) => {
                    tracing::warn!(error = %e.0.message, "reading a Secret for its token");
                    return Err("service account token could not be validated".into());
                }
            };
            match uid {
                Some(uid) if uid == secret.uid => {}
                Some(uid) => {
                    return Err(format!(
                        "secret UID ({uid}) does not match service account secret ref claim ({})",
                        secret.uid
                    ))
                }
                None => return Err("service account token has been invalidated".into()),
            }
        }
        Ok(())
    }
}

/// The user a valid token of `cluster` stands for.
pub fn user_info(claims: &Claims, cluster: &str) -> UserInfo {
    let k = &claims.kubernetes;
    let mut extra = std::collections::BTreeMap::new();
    extra.insert(CLUSTER_EXTRA.to_string(), vec![cluster.to_string()]);
    if !claims.jti.is_empty() {
        extra.insert(
            CREDENTIAL_ID_EXTRA.to_string(),
            vec![format!("JTI={}", claims.jti)],
        );
    }
    UserInfo {
        username: format!(
            "system:serviceaccount:{}:{}",
            k.namespace, k.serviceaccount.name
        ),
        uid: k.serviceaccount.uid.clone(),
        groups: vec![
            "system:serviceaccounts".into(),
            format!("system:serviceaccounts:{}", k.namespace),
            SYSTEM_AUTHENTICATED.into(),
        ],
        extra,
    }
}

#[async_trait::async_trait]
impl Authenticator for ServiceAccountAuthenticator {
    async fn authenticate(&self, req: &AuthRequest<'_>) -> AuthOutcome {
        let Some(token) = req.bearer_token else {
            return AuthOutcome::NotApplicable;
        };
        let now = chrono::Utc::now().timestamp();
        match self.check(token, now) {
            Checked::NotMine => AuthOutcome::NotApplicable,
            Checked::Invalid(msg) => AuthOutcome::Rejected(AuthError(msg)),
            Checked::Valid(claims, cluster) => {
                match self.still_bound(cluster.as_str(), &claims).await {
                    Ok(()) => AuthOutcome::Authenticated(user_info(&claims, cluster.as_str())),
                    Err(msg) => AuthOutcome::Rejected(AuthError(msg)),
                }
            }
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::serviceaccount::keys::tests::ec_keys;
    use crate::serviceaccount::token::Grant;
    use kplane_registry::error::ApiResult;

    /// ServiceAccounts and Secrets by (cluster, namespace, name), with their uids.
    #[derive(Default)]
    struct Bindings(Mutex<HashMap<(String, String, String), String>>);

    impl Bindings {
        fn set(&self, cluster: &str, ns: &str, name: &str, uid: Option<&str>) {
            let key = (cluster.to_string(), ns.to_string(), name.to_string());
            let mut m = self.0.lock().unwrap();
            match uid {
                Some(u) => m.insert(key, u.to_string()),
                None => m.remove(&key),
            };
        }

        fn get(&self, cluster: &str, ns: &str, name: &str) -> Option<String> {
            let key = (cluster.to_string(), ns.to_string(), name.to_string());
            self.0.lock().unwrap().get(&key).cloned()
        }
    }

    #[async_trait::async_trait]
    impl TokenBindings for Bindings {
        async fn service_account_uid(
            &self,
            cluster: &str,
            ns: &str,
            name: &str,
        ) -> ApiResult<Option<String>> {
            Ok(self.get(cluster, ns, &format!("sa/{name}")))
        }

        async fn secret_uid(
            &self,
            cluster: &str,
            ns: &str,
            name: &str,
        ) -> ApiResult<Option<String>> {
            Ok(self.get(cluster, ns, &format!("secret/{name}")))
        }
    }

    const BASE: &str = "https://kplane.test";

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn tokens_authenticate_until_their_account_goes() {
        let bindings = Arc::new(Bindings::default());
        bindings.set("root:acme", "ci", "sa/bot", Some("u-7"));
        let tokens = Arc::new(Tokens::new(Arc::new(ec_keys()), BASE, vec![]));
        let a = ServiceAccountAuthenticator::new(tokens.clone(), bindings.clone());
        let now = chrono::Utc::now().timestamp();
        let cluster = kplane_types::ClusterName::parse("root:acme").unwrap();
        let grant = Grant {
            cluster: Some(cluster.clone()),
            namespace: "ci".into(),
            name: "bot".into(),
            uid: "u-7".into(),
            audiences: tokens.api_audiences(&cluster),
            expiration_seconds: 600,
            secret: None,
        };
        let (token, _) = tokens.issue(&grant, now).unwrap();
        let AuthOutcome::Authenticated(u) = a.authenticate(&AuthRequest::token(&token)).await
        else {
            panic!("not authenticated");
        };
        assert_eq!(u.username, "system:serviceaccount:ci:bot");
        assert_eq!(u.uid, "u-7");
        assert_eq!(
            u.groups,
            [
                "system:serviceaccounts",
                "system:serviceaccounts:ci",
                "system:authenticated"
            ]
        );
        assert_eq!(u.extra[CLUSTER_EXTRA], ["root:acme"]);
        assert!(u.extra[CREDENTIAL_ID_EXTRA][0].starts_with("JTI="));
        // A token for an older incarnation (another uid) is refused.
        let mut stale = grant.clone();
        stale.uid = "u-old".into();
        let (old, _) = tokens.issue(&stale, now).unwrap();
        assert_eq!(
            a.authenticate(&AuthRequest::token(&old)).await,
            AuthOutcome::Rejected(AuthError(
                "service account UID (u-7) does not match claim (u-old)".into()
            ))
        );
        // Other tokens are another authenticator's business.
        assert_eq!(
            a.authenticate(&AuthRequest::token("admin")).await,
            AuthOutcome::NotApplicable
        );
        // A Secret-bound token needs its Secret, with the claimed uid.
        let mut bound = grant.clone();
        bound.secret = Some(super::super::token::ObjectRef {
            name: "bot-token".into(),
            uid: "s-1".into(),
        });
        let (legacy, _) = tokens.issue(&bound, now).unwrap();
        assert_eq!(
            a.authenticate(&AuthRequest::token(&legacy)).await,
            AuthOutcome::Rejected(AuthError(
                "service account token has been invalidated".into()
            ))
        );
        bindings.set("root:acme", "ci", "secret/bot-token", Some("s-2"));
        assert_eq!(
            a.authenticate(&AuthRequest::token(&legacy)).await,
            AuthOutcome::Rejected(AuthError(
                "secret UID (s-2) does not match service account secret ref claim (s-1)".into()
            ))
        );
        bindings.set("root:acme", "ci", "secret/bot-token", Some("s-1"));
        assert!(matches!(
            a.authenticate(&AuthRequest::token(&legacy)).await,
            AuthOutcome::Authenticated(_)
        ));
        // Deleted: refused.
        bindings.set("root:acme", "ci", "sa/bot", None);
        assert_eq!(
            a.authenticate(&AuthRequest::token(&token)).await,
            AuthOutcome::Rejected(AuthError(
                "service account token has been invalidated".into()
            ))
        );
    }

    /// A verified token is reused for at most VERIFIED_TTL_SECONDS and never past its
    /// expiry (an expired token is checked again and refused); the cache stays bounded
    /// above VERIFIED_CACHE_ENTRIES distinct tokens.
    #[test]
    fn verified_tokens_are_reused_briefly_and_the_cache_is_bounded() {
        let tokens = Arc::new(Tokens::new(Arc::new(ec_keys()), BASE, vec![]));
        let a = ServiceAccountAuthenticator::new(tokens.clone(), Arc::new(Bindings::default()));
        let now = chrono::Utc::now().timestamp();
        let cluster = kplane_types::ClusterName::parse("root:acme").unwrap();
        let grant = |name: String| Grant {
            cluster: Some(cluster.clone()),
            namespace: "ci".into(),
            name,
            uid: "u-7".into(),
            audiences: tokens.api_audiences(&cluster),
            expiration_seconds: 600,
            secret: None,
        };
        let (token, _) = tokens.issue(&grant("bot".into()), now).unwrap();
        assert!(matches!(a.check(&token, now), Checked::Valid(..)));
        assert_eq!(a.verified.lock().unwrap().len(), 1);
        assert!(matches!(
            a.check(&token, now + VERIFIED_TTL_SECONDS),
            Checked::Valid(..)
        ));
        // Past its expiry the cached entry does not count: the full check refuses it.
        assert!(matches!(
            a.check(&token, now + 600 + LEEWAY_SECONDS + 1),
            Checked::Invalid(_)
        ));
        for i in 0..VERIFIED_CACHE_ENTRIES + 10 {
            let (t, _) = tokens.issue(&grant(format!("bot-{i}")), now).unwrap();
            assert!(matches!(a.check(&t, now), Checked::Valid(..)));
            assert!(a.verified.lock().unwrap().len() <= VERIFIED_CACHE_ENTRIES);
        }
    }
}
