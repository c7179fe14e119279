//! The OIDC authenticator (`--oidc-*`): a bearer token whose `iss` is the configured
//! issuer is an OpenID Connect ID token, verified with the provider's keys
//! ([`super::oidc_keys`]: a JWKS file or the issuer's discovery document) through the same
//! signature check as ServiceAccount tokens ([`verify_signature`]), then checked as
//! kube-apiserver 1.32 checks it with its legacy `--oidc-*` flags: `iss`, `aud` contains the
//! client id, `exp`, `nbf`, and `email_verified` when the username claim is `email`. The
//! user is the username claim (prefixed, see [`OidcConfig::username_prefix`]) with the
//! groups claim's groups (prefixed by `--oidc-groups-prefix`). Tokens of other issuers are
//! another authenticator's business.

use jsonwebtoken::Algorithm;
use kplane_types::UserInfo;
use serde_json::{Map, Value};

use super::keys::KeyError;
pub use super::oidc_config::OidcConfig;
use super::oidc_keys::ProviderKeys;
use super::token::{go_quoted, unverified_issuer, verify_signature};
use crate::http::auth::{AuthError, AuthOutcome, AuthRequest, Authenticator};

/// How far in the future `nbf` may be, as go-oidc allows.
const NBF_LEEWAY_SECONDS: i64 = 60;

/// Authenticates OIDC ID tokens (see the module doc).
#[derive(Debug)]
pub struct OidcAuthenticator {
    cfg: OidcConfig,
    username_prefix: String,
    keys: ProviderKeys,
}

impl OidcAuthenticator {
    /// Checks the flags and reads the JWKS file or sets up fetching the issuer's keys.
    pub fn new(cfg: OidcConfig) -> Result<OidcAuthenticator, KeyError> {
        cfg.validate()?;
        let keys = ProviderKeys::new(&cfg)?;
        Ok(OidcAuthenticator {
            username_prefix: cfg.username_prefix(),
            cfg,
            keys,
        })
    }

    /// Checks verified `claims` at `now` (Unix seconds): the user, or why not.
    pub fn check(&self, claims: &Map<String, Value>, now: i64) -> Result<UserInfo, String> {
        let cfg = &self.cfg;
        let iss = claims
            .get("iss")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if iss != cfg.issuer_url {
            return Err(format!(
                "oidc: id token issued by a different provider, expected {:?} got {iss:?}",
                cfg.issuer_url
            ));
        }
        let aud: Vec<String> = match claims.get("aud") {
            Some(Value::String(a)) => vec![a.clone()],
            Some(Value::Array(list)) => list
                .iter()
                .filter_map(|a| a.as_str().map(str::to_string))
                .collect(),
            _ => Vec::new(),
        };
        if !aud.contains(&cfg.client_id) {
            return Err(format!(
                "oidc: expected audience {:?} got {}",
                cfg.client_id,
                go_quoted(&aud)
            ));
        }
        // A missing `exp` is the zero time, long expired (go-oidc).
        let exp = numeric_date(claims, "exp")?.unwrap_or(i64::MIN);
        if now > exp {
            return Err(format!(
                "oidc: token is expired (Token Expiry: {})",
                rfc3339(exp)
            ));
        }
        if let Some(nbf) = numeric_date(claims, "nbf")? {
            if now + NBF_LEEWAY_SECONDS < nbf {
                return Err(format!(
                    "oidc: current time {} before the nbf (not before) time: {}",
                    rfc3339(now),
                    rfc3339(nbf)
                ));
            }
        }
        let claim = cfg.username_claim();
        let name = match claims.get(claim) {
            Some(Value::String(s)) if !s.is_empty() => s.clone(),
            Some(Value::String(_)) | None => {
                return Err(format!(
                    "oidc: parse username claims {claim:?}: claim not present"
                ))
            }
            Some(_) => {
                return Err(format!(
                    "oidc: parse username claims {claim:?}: claim is not a string"
                ))
            }
        };
        if claim == "email" {
            match claims.get("email_verified") {
                None | Some(Value::Bool(true)) => {}
                Some(Value::Bool(false)) => return Err("oidc: email not verified".into()),
                Some(_) => return Err("oidc: parse 'email_verified' claim: not a boolean".into()),
            }
        }
        let mut groups = Vec::new();
        if let Some(gc) = cfg.groups_claim.as_deref() {
            let prefix = cfg.groups_prefix.as_deref().unwrap_or_default();
            match claims.get(gc) {
                None => {}
                Some(Value::String(g)) => groups.push(format!("{prefix}{g}")),
                Some(Value::Array(list)) => {
                    for g in list {
                        let Some(g) = g.as_str() else {
                            return Err(format!(
                                "oidc: parse groups claim {gc:?}: not a list of strings"
                            ));
                        };
                        groups.push(format!("{prefix}{g}"));
                    }
                }
                Some(_) => {
                    return Err(format!(
                        "oidc: parse groups claim {gc:?}: not a string or a list of strings"
                    ))
                }
            }
        }
        Ok(UserInfo {
            username: format!("{}{name}", self.username_prefix),
            uid: String::new(),
            groups,
            extra: Default::default(),
        })
    }
}

/// A NumericDate claim (seconds, possibly fractional): `None` when absent, an error when it
/// is not a number (never a skipped check).
fn numeric_date(claims: &Map<String, Value>, name: &str) -> Result<Option<i64>, String> {
    match claims.get(name) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Ok(Some(i)),
            // Saturating: a float far out of range is clamped, not wrapped.
            (None, Some(f)) => Ok(Some(f as i64)),
            (None, None) => Err(format!("oidc: malformed claims: {name:?} is not a number")),
        },
        Some(_) => Err(format!("oidc: malformed claims: {name:?} is not a number")),
    }
}

/// A Unix time as RFC 3339 (UTC), for messages.
fn rfc3339(t: i64) -> String {
    chrono::DateTime::from_timestamp(t, 0)
        .map(|d| d.to_rfc3339_opts(chrono::SecondsFormat::Secs, true))
        .unwrap_or_else(|| t.to_string())
}

#[async_trait::async_trait]
impl Authenticator for OidcAuthenticator {
    async fn authenticate(&self, req: &AuthRequest<'_>) -> AuthOutcome {
        let Some(token) = req.bearer_token else {
            return AuthOutcome::NotApplicable;
        };
        match unverified_issuer(token) {
            Some(iss) if iss == self.cfg.issuer_url => {}
            _ => return AuthOutcome::NotApplicable,
        }
        let reject = |msg: String| AuthOutcome::Rejected(AuthError(msg));
        let header = match jsonwebtoken::decode_header(token) {
            Ok(h) => h,
            Err(e) => return reject(format!("oidc: malformed jwt: {e}")),
        };
        if !matches!(header.alg, Algorithm::ES256 | Algorithm::RS256) {
            return reject(format!(
                "oidc: id token signed with unsupported algorithm {:?}",
                header.alg
            ));
        }
        let keys = match self.keys.for_kid(header.kid.as_deref()).await {
            Ok(k) => k,
            Err(e) => {
                tracing::warn!(error = %e, issuer = %self.cfg.issuer_url, "OIDC keys");
                return reject(format!("oidc: verify signature: {e}"));
            }
        };
        let claims: Map<String, Value> = match verify_signature(token, &header, &keys) {
            Ok(c) => c,
            Err(e) => return reject(format!("oidc: verify signature: {e}")),
        };
        match self.check(&claims, chrono::Utc::now().timestamp()) {
            Ok(user) => AuthOutcome::Authenticated(user),
            Err(e) => reject(e),
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::serviceaccount::keys::tests::ec_keys;
    use serde_json::json;

    const ISS: &str = "https://idp.example";

    /// An authenticator trusting a fresh key (written as a JWKS file), and that key set.
    fn setup(
        f: impl FnOnce(&mut OidcConfig),
    ) -> (
        OidcAuthenticator,
        crate::serviceaccount::KeySet,
        tempfile::TempDir,
    ) {
        let keys = ec_keys();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("jwks.json");
        std::fs::write(&path, keys.jwks().to_string()).unwrap();
        let mut cfg = OidcConfig {
            issuer_url: ISS.into(),
            client_id: "kplane".into(),
            jwks_file: Some(path),
            ..Default::default()
        };
        f(&mut cfg);
        (OidcAuthenticator::new(cfg).unwrap(), keys, dir)
    }

    fn sign(keys: &crate::serviceaccount::KeySet, claims: &Value) -> String {
        let mut h = jsonwebtoken::Header::new(keys.signing.alg);
        h.kid = Some(keys.signing.kid.clone());
        jsonwebtoken::encode(&h, claims, &keys.signing.encoding).unwrap()
    }

    fn claims(extra: Value) -> Value {
        let now = chrono::Utc::now().timestamp();
        let mut c = json!({"iss": ISS, "aud": "kplane", "sub": "1234", "exp": now + 600,
            "iat": now, "groups": ["dev", "ops"], "email": "a@example.com"});
        for (k, v) in extra.as_object().unwrap() {
            c[k] = v.clone();
        }
        c
    }

    async fn auth(a: &OidcAuthenticator, token: &str) -> Result<UserInfo, String> {
        match a.authenticate(&AuthRequest::token(token)).await {
            AuthOutcome::Authenticated(u) => Ok(u),
            AuthOutcome::Rejected(e) => Err(e.0),
            AuthOutcome::NotApplicable => Err("not applicable".into()),
        }
    }

    #[tokio::test]
    async fn default_claims_prefix_with_the_issuer() {
        let (a, keys, _d) = setup(|c| c.groups_claim = Some("groups".into()));
        let u = auth(&a, &sign(&keys, &claims(json!({})))).await.unwrap();
        assert_eq!(u.username, "https://idp.example#1234");
        assert_eq!(u.groups, ["dev", "ops"]);
    }

    #[tokio::test]
    async fn prefixes_and_email() {
        let (a, keys, _d) = setup(|c| {
            c.username_claim = Some("email".into());
            c.groups_claim = Some("groups".into());
            c.groups_prefix = Some("oidc:".into());
        });
        let u = auth(&a, &sign(&keys, &claims(json!({})))).await.unwrap();
        assert_eq!(u.username, "a@example.com");
        assert_eq!(u.groups, ["oidc:dev", "oidc:ops"]);
        let t = sign(&keys, &claims(json!({"email_verified": false})));
        assert_eq!(auth(&a, &t).await.unwrap_err(), "oidc: email not verified");
        let t = sign(
            &keys,
            &claims(json!({"email_verified": true, "groups": "one"})),
        );
        assert_eq!(auth(&a, &t).await.unwrap().groups, ["oidc:one"]);

        let (a, keys, _d) = setup(|c| c.username_prefix = Some("-".into()));
        let u = auth(&a, &sign(&keys, &claims(json!({})))).await.unwrap();
        assert_eq!((u.username.as_str(), u.groups.len()), ("1234", 0));
        let (a, keys, _d) = setup(|c| c.username_prefix = Some("idp:".into()));
        let u = auth(&a, &sign(&keys, &claims(json!({})))).await.unwrap();
        assert_eq!(u.username, "idp:1234");
    }

    #[tokio::test]
    async fn bad_tokens_are_rejected() {
        let (a, keys, _d) = setup(|_| {});
        let now = chrono::Utc::now().timestamp();
        let t = sign(&keys, &claims(json!({"aud": ["other", "x"]})));
        assert_eq!(
            auth(&a, &t).await.unwrap_err(),
            r#"oidc: expected audience "kplane" got ["other" "x"]"#
        );
        // A list containing the client id is fine.
        let t = sign(&keys, &claims(json!({"aud": ["other", "kplane"]})));
        assert!(auth(&a, &t).await.is_ok());
        let t = sign(&keys, &claims(json!({"exp": now - 5})));
        assert!(auth(&a, &t)
            .await
            .unwrap_err()
            .starts_with("oidc: token is expired"));
        let t = sign(&keys, &claims(json!({"nbf": now + 3600})));
        assert!(auth(&a, &t).await.unwrap_err().contains("before the nbf"));
        let t = sign(&keys, &claims(json!({"nbf": "tomorrow"})));
        assert!(auth(&a, &t).await.unwrap_err().contains("malformed claims"));
        let mut no_exp = claims(json!({}));
        no_exp.as_object_mut().unwrap().remove("exp");
        assert!(auth(&a, &sign(&keys, &no_exp))
            .await
            .unwrap_err()
            .starts_with("oidc: token is expired"));
        let t = sign(&keys, &claims(json!({"exp": (now + 600) as f64 + 0.5})));
        assert!(auth(&a, &t).await.is_ok());
        let t = sign(&keys, &claims(json!({"sub": 7})));
        assert!(auth(&a, &t).await.unwrap_err().contains("not a string"));
        // Signed by another key.
        let other = ec_keys();
        let t = sign(&other, &claims(json!({})));
        assert!(auth(&a, &t).await.is_err());
        // Tampered payload.
        let good = sign(&keys, &claims(json!({})));
        let evil = sign(&other, &claims(json!({"sub": "admin"})));
        let mut parts: Vec<&str> = good.split('.').collect();
        parts[1] = evil.split('.').nth(1).unwrap();
        assert_eq!(
            auth(&a, &parts.join(".")).await.unwrap_err(),
            "oidc: verify signature: invalid signature"
        );
        // Another issuer: not OIDC's business.
        let t = sign(&keys, &claims(json!({"iss": "https://other.example"})));
        assert_eq!(auth(&a, &t).await.unwrap_err(), "not applicable");
        assert_eq!(auth(&a, "opaque").await.unwrap_err(), "not applicable");
    }

    #[test]
    fn flags_are_checked() {
        let bad = |f: fn(&mut OidcConfig)| {
            let mut cfg = OidcConfig {
                issuer_url: ISS.into(),
                client_id: "kplane".into(),
                ..Default::default()
            };
            f(&mut cfg);
            OidcAuthenticator::new(cfg).unwrap_err().0
        };
        assert!(bad(|c| c.issuer_url = "http://idp".into()).contains("https"));
        assert!(bad(|c| c.client_id.clear()).contains("--oidc-client-id"));
        assert!(bad(|c| c.jwks_file = Some("/nonexistent/jwks".into())).contains("jwks"));
    }
}
