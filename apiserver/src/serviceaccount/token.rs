//! ServiceAccount token claims: issuing a signed JWT for a ServiceAccount of a logical
//! cluster, and checking one (signature with any verification key, issuer, times, audience,
//! the shape of the claims). Pure: the caller passes the time, and whether the
//! ServiceAccount still exists is the authenticator's question (`authenticator`).
//!
//! Claims are upstream's (`iss`, `sub` = `system:serviceaccount:<ns>:<name>`, `aud`, `exp`,
//! `iat`, `nbf`, `jti`, and `kubernetes.io` with the namespace, the ServiceAccount's name and
//! uid, and a bound Secret when there is one) plus [`CLUSTER_CLAIM`], the logical cluster.
//! The issuer is per logical cluster: `<base>/clusters/<path>`.

use std::sync::Arc;

use jsonwebtoken::{Algorithm, Header, Validation};
use kplane_types::ClusterName;
use serde::{Deserialize, Serialize};

use super::keys::{KeyError, KeySet, VerificationKey};

/// The claim naming the logical cluster a token is bound to.
pub const CLUSTER_CLAIM: &str = "kplane.io/cluster";

/// What verification tolerates of clock skew, as upstream (go-jose's default leeway).
pub const LEEWAY_SECONDS: i64 = 60;

/// A reference to an object in the `kubernetes.io` claim.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectRef {
    pub name: String,
    pub uid: String,
}

/// The `kubernetes.io` claim.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct KubernetesClaim {
    pub namespace: String,
    pub serviceaccount: ObjectRef,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<ObjectRef>,
}

/// A token's claims.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claims {
    pub iss: String,
    pub sub: String,
    #[serde(with = "audience")]
    pub aud: Vec<String>,
    pub exp: i64,
    pub iat: i64,
    pub nbf: i64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub jti: String,
    #[serde(rename = "kubernetes.io")]
    pub kubernetes: KubernetesClaim,
    #[serde(rename = "kplane.io/cluster")]
    pub cluster: String,
}

mod audience {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    /// `aud`: one string or a list, as JWTs allow.
    #[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(untagged)]
    enum Audience {
        One(String),
        Many(Vec<String>),
    }

    pub fn serialize<S: Serializer>(aud: &[String], s: S) -> Result<S::Ok, S::Error> {
        aud.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
        Ok(match Audience::deserialize(d)? {
            Audience::One(a) => vec![a],
            Audience::Many(v) => v,
        })
    }
}

/// What a token is issued for.
#[derive(Clone, Debug, Default)]
pub struct Grant {
    pub cluster: Option<ClusterName>,
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub audiences: Vec<String>,
    pub expiration_seconds: i64,
    /// A Secret the token is bound to (name, uid): deleting it revokes the token.
    pub secret: Option<ObjectRef>,
}

/// What checking a token found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Checked {
    /// Not a JWT, or not issued by this server: another authenticator's business.
    NotMine,
    /// Issued by this server and bad (message for TokenReview and the log).
    Invalid(String),
    /// Good, as far as the token itself tells: the claims and the cluster it is bound to.
    Valid(Box<Claims>, ClusterName),
}

/// Issues and checks tokens with one key set and issuer base URL.
#[derive(Clone, Debug)]
pub struct Tokens {
    keys: Arc<KeySet>,
    /// `https://host:port` (no trailing slash): issuers are `<base>/clusters/<path>`.
    base: String,
    /// `--api-audiences`; empty: a token's own issuer is the accepted audience.
    api_audiences: Vec<String>,
}

impl Tokens {
    pub fn new(keys: Arc<KeySet>, base: &str, api_audiences: Vec<String>) -> Tokens {
        Tokens {
            keys,
            base: base.trim_end_matches('/').to_string(),
            api_audiences,
        }
    }

    pub fn keys(&self) -> &KeySet {
        &self.keys
    }

    /// The issuer of `cluster`'s tokens.
    pub fn issuer(&self, cluster: &ClusterName) -> String {
        format!("{}/clusters/{cluster}", self.base)
    }

    /// The audiences the server accepts for tokens of `cluster` (and gives tokens requested
    /// without audiences): `--api-audiences`, or the cluster's issuer.
    pub fn api_audiences(&self, cluster: &ClusterName) -> Vec<String> {
        if self.api_audiences.is_empty() {
            vec![self.issuer(cluster)]
        } else {
            self.api_audiences.clone()
        }
    }

    /// A signed token for `grant`, issued at `now` (Unix seconds); also its `exp`.
    pub fn issue(&self, grant: &Grant, now: i64) -> Result<(String, i64), KeyError> {
        let cluster = grant.cluster.clone().unwrap_or_else(ClusterName::root);
        let exp = now.saturating_add(grant.expiration_seconds);
        let claims = Claims {
            iss: self.issuer(&cluster),
            sub: format!("system:serviceaccount:{}:{}", grant.namespace, grant.name),
            aud: grant.audiences.clone(),
            exp,
            iat: now,
            nbf: now,
            jti: uuid::Uuid::new_v4().to_string(),
            kubernetes: KubernetesClaim {
                namespace: grant.namespace.clone(),
                serviceaccount: ObjectRef {
                    name: grant.name.clone(),
                    uid: grant.uid.clone(),
                },
                secret: grant.secret.clone(),
            },
            cluster: cluster.to_string(),
        };
        let signing = &self.keys.signing;
        let mut header = Header::new(signing.alg);
        header.typ = None;
        header.kid = Some(signing.kid.clone());
        let token = jsonwebtoken::encode(&header, &claims, &signing.encoding)
            .map_err(|e| KeyError(format!("signing the token failed: {e}")))?;
        Ok((token, exp))
    }

    /// The cluster of an issuer of this server, `None` for any other issuer.
    fn issuer_cluster(&self, iss: &str) -> Option<Option<ClusterName>> {
        let rest = iss
            .strip_prefix(self.base.as_str())?
            .strip_prefix("/clusters/")?;
        Some(ClusterName::parse(rest))
    }

    /// Checks `token` at `now` (Unix seconds).
    pub fn check(&self, token: &str, now: i64) -> Checked {
        // Not a JWS, or another issuer's: not ours to judge.
        let Some(iss) = unverified_issuer(token) else {
            return Checked::NotMine;
        };
        let Some(cluster) = self.issuer_cluster(&iss) else {
            return Checked::NotMine;
        };
        let Some(cluster) = cluster else {
            return Checked::Invalid("token issuer names no valid logical cluster".into());
        };
        let header = match jsonwebtoken::decode_header(token) {
            Ok(h) => h,
            Err(e) => return Checked::Invalid(format!("invalid token header: {e}")),
        };
        if !matches!(header.alg, Algorithm::ES256 | Algorithm::RS256) {
            return Checked::Invalid(format!("unsupported signing algorithm {:?}", header.alg));
        }
        let claims: Claims = match verify_signature(token, &header, &self.keys.verifying) {
            Ok(c) => c,
            Err(msg) => return Checked::Invalid(msg),
        };
        // The times, with upstream's leeway and messages.
        if now - LEEWAY_SECONDS > claims.exp {
            return Checked::Invalid("service account token has expired".into());
        }
        if now + LEEWAY_SECONDS < claims.nbf {
            return Checked::Invalid("service account token is not valid yet".into());
        }
        if now + LEEWAY_SECONDS < claims.iat {
            return Checked::Invalid("service account token is issued in the future".into());
        }
        let accepted = self.api_audiences(&cluster);
        if !claims.aud.iter().any(|a| accepted.contains(a)) {
            return Checked::Invalid(format!(
                "token audiences {} is invalid for the target audiences {}",
                go_quoted(&claims.aud),
                go_quoted(&accepted)
            ));
        }
        let k = &claims.kubernetes;
        let sub = format!(
            "system:serviceaccount:{}:{}",
            k.namespace, k.serviceaccount.name
        );
        if claims.cluster != cluster.as_str()
            || claims.sub != sub
            || k.namespace.is_empty()
            || k.serviceaccount.name.is_empty()
            || k.serviceaccount.uid.is_empty()
        {
            return Checked::Invalid("token could not be validated".into());
        }
        Checked::Valid(Box::new(claims), cluster)
    }
}

/// Verifies the signature of the compact JWS `token` (whose decoded `header` the caller
/// has checked names an accepted algorithm) with `keys` — the key the header's `kid` names
/// first, then every other key of the algorithm — and decodes its claims. Only the
/// signature is checked: times, issuer and audience are the caller's. Shared by
/// ServiceAccount tokens and OIDC ID tokens (`super::oidc`).
pub fn verify_signature<C: serde::de::DeserializeOwned>(
    token: &str,
    header: &Header,
    keys: &[VerificationKey],
) -> Result<C, String> {
    let mut last = String::from("no key to verify the token with");
    let mut keys: Vec<_> = keys.iter().filter(|k| k.alg == header.alg).collect();
    keys.sort_by_key(|k| header.kid.as_deref() != Some(k.kid.as_str()));
    for key in keys {
        let mut v = Validation::new(key.alg);
        v.required_spec_claims.clear();
        v.validate_exp = false;
        v.validate_nbf = false;
        v.validate_aud = false;
        v.leeway = 0;
        match jsonwebtoken::decode::<C>(token, &key.decoding, &v) {
            Ok(data) => return Ok(data.claims),
            Err(e) => match e.kind() {
                jsonwebtoken::errors::ErrorKind::InvalidSignature => {
                    last = "invalid signature".into();
                }
                _ => return Err(format!("invalid token: {e}")),
            },
        }
    }
    Err(last)
}

/// `iss` of a compact JWS, read without verification (to tell whose token it is).
pub fn unverified_issuer(token: &str) -> Option<String> {
    use base64::Engine;
    let mut parts = token.split('.');
    let (_, payload, _, None) = (parts.next()?, parts.next()?, parts.next()?, parts.next()) else {
        return None;
    };
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload)
        .ok()?;
    #[derive(Deserialize)]
    struct Iss {
        iss: String,
    }
    serde_json::from_slice::<Iss>(&bytes).ok().map(|i| i.iss)
}

/// A list as Go's `%q` prints a `[]string`: `["a" "b"]`.
pub fn go_quoted(v: &[String]) -> String {
    let items: Vec<String> = v
        .iter()
        .map(|s| serde_json::Value::String(s.clone()).to_string())
        .collect();
    format!("[{}]", items.join(" "))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::serviceaccount::keys::{self, tests::ec_keys};
    use base64::Engine;

    const BASE: &str = "https://127.0.0.1:6443";
    const NOW: i64 = 1_700_000_000;

    fn grant(cluster: &str) -> Grant {
        Grant {
            cluster: ClusterName::parse(cluster),
            namespace: "default".into(),
            name: "builder".into(),
            uid: "u-1".into(),
            audiences: vec![format!("{BASE}/clusters/{cluster}")],
            expiration_seconds: 3600,
            secret: None,
        }
    }

    fn valid(c: Checked) -> (Claims, ClusterName) {
        match c {
            Checked::Valid(claims, cluster) => (*claims, cluster),
            other => panic!("not valid: {other:?}"),
        }
    }

    fn invalid(c: Checked) -> String {
        match c {
            Checked::Invalid(m) => m,
            other => panic!("not invalid: {other:?}"),
        }
    }

    fn payload(token: &str) -> serde_json::Value {
        let p = token.split('.').nth(1).unwrap();
        serde_json::from_slice(
            &base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(p)
                .unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn claims_are_upstreams_plus_the_cluster() {
        let t = Tokens::new(Arc::new(ec_keys()), BASE, vec![]);
        let (token, exp) = t.issue(&grant("root:acme"), NOW).unwrap();
        assert_eq!(exp, NOW + 3600);
        let p = payload(&token);
        assert_eq!(p["iss"], "https://127.0.0.1:6443/clusters/root:acme");
        assert_eq!(p["sub"], "system:serviceaccount:default:builder");
        assert_eq!(
            p["aud"],
            serde_json::json!([format!("{BASE}/clusters/root:acme")])
        );
        assert_eq!(
            (p["iat"].as_i64(), p["nbf"].as_i64()),
            (Some(NOW), Some(NOW))
        );
        assert_eq!(p["exp"].as_i64(), Some(NOW + 3600));
        assert_eq!(
            p["kubernetes.io"],
            serde_json::json!({"namespace": "default", "serviceaccount": {"name": "builder", "uid": "u-1"}})
        );
        assert_eq!(p["kplane.io/cluster"], "root:acme");
        assert_eq!(p["jti"].as_str().unwrap().len(), 36);
        let header = jsonwebtoken::decode_header(&token).unwrap();
        assert_eq!(header.alg, Algorithm::ES256);
        assert_eq!(header.kid.as_deref(), Some(t.keys().signing.kid.as_str()));
        let (claims, cluster) = valid(t.check(&token, NOW + 10));
        assert_eq!(cluster.as_str(), "root:acme");
        assert_eq!(claims.kubernetes.serviceaccount.uid, "u-1");
    }

    #[test]
    fn expiry_and_not_before_with_leeway() {
        let t = Tokens::new(Arc::new(ec_keys()), BASE, vec![]);
        let (token, exp) = t.issue(&grant("root"), NOW).unwrap();
        valid(t.check(&token, exp));
        valid(t.check(&token, exp + LEEWAY_SECONDS));
        assert_eq!(
            invalid(t.check(&token, exp + LEEWAY_SECONDS + 1)),
            "service account token has expired"
        );
        valid(t.check(&token, NOW - LEEWAY_SECONDS));
        assert_eq!(
            invalid(t.check(&token, NOW - LEEWAY_SECONDS - 1)),
            "service account token is not valid yet"
        );
    }

    #[test]
    fn audience_must_be_accepted() {
        let t = Tokens::new(Arc::new(ec_keys()), BASE, vec![]);
        let mut g = grant("root:acme");
        g.audiences = vec!["vault".into()];
        let (token, _) = t.issue(&g, NOW).unwrap();
        assert_eq!(
            invalid(t.check(&token, NOW)),
            "token audiences [\"vault\"] is invalid for the target audiences [\"https://127.0.0.1:6443/clusters/root:acme\"]"
        );
        // A token with the API audience among others is accepted.
        g.audiences = vec!["vault".into(), format!("{BASE}/clusters/root:acme")];
        let (token, _) = t.issue(&g, NOW).unwrap();
        valid(t.check(&token, NOW));
        // Another cluster's issuer is not this cluster's audience.
        g.audiences = vec![format!("{BASE}/clusters/root:other")];
        let (token, _) = t.issue(&g, NOW).unwrap();
        invalid(t.check(&token, NOW));
        // --api-audiences replaces the issuer as the accepted audience.
        let t = Tokens::new(t.keys.clone(), BASE, vec!["api".into(), "vault".into()]);
        g.audiences = vec!["vault".into()];
        let (token, _) = t.issue(&g, NOW).unwrap();
        valid(t.check(&token, NOW));
        assert_eq!(t.api_audiences(&ClusterName::root()), ["api", "vault"]);
    }

    #[test]
    fn tampered_tokens_and_foreign_keys_are_rejected() {
        let t = Tokens::new(Arc::new(ec_keys()), BASE, vec![]);
        let (token, _) = t.issue(&grant("root:acme"), NOW).unwrap();
        // Another namespace in the payload, the original signature.
        let mut p = payload(&token);
        p["kubernetes.io"]["namespace"] = "kube-system".into();
        p["sub"] = "system:serviceaccount:kube-system:builder".into();
        let forged = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(p.to_string());
        let parts: Vec<&str> = token.split('.').collect();
        let tampered = format!("{}.{forged}.{}", parts[0], parts[2]);
        assert_eq!(invalid(t.check(&tampered, NOW)), "invalid signature");
        // A different cluster in the issuer is also caught by the signature.
        p = payload(&token);
        p["iss"] = format!("{BASE}/clusters/root:other").into();
        let forged = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(p.to_string());
        invalid(t.check(&format!("{}.{forged}.{}", parts[0], parts[2]), NOW));
        // A token signed by a key the server does not know.
        let stranger = Tokens::new(Arc::new(ec_keys()), BASE, vec![]);
        let (theirs, _) = stranger.issue(&grant("root:acme"), NOW).unwrap();
        assert_eq!(invalid(t.check(&theirs, NOW)), "invalid signature");
        // `alg: none` and HMAC are refused outright.
        let none = format!(
            "{}.{}.",
            base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(r#"{"alg":"none"}"#),
            parts[1]
        );
        invalid(t.check(&none, NOW));
        let hs = jsonwebtoken::encode(
            &Header::new(Algorithm::HS256),
            &payload(&token),
            &jsonwebtoken::EncodingKey::from_secret(b"k"),
        )
        .unwrap();
        assert!(invalid(t.check(&hs, NOW)).contains("unsupported"));
    }

    #[test]
    fn other_issuers_and_non_jwts_are_not_mine() {
        let t = Tokens::new(Arc::new(ec_keys()), BASE, vec![]);
        assert_eq!(t.check("admin-token", NOW), Checked::NotMine);
        assert_eq!(t.check("a.b.c", NOW), Checked::NotMine);
        let other = Tokens::new(Arc::new(ec_keys()), "https://elsewhere", vec![]);
        let (token, _) = other.issue(&grant("root"), NOW).unwrap();
        assert_eq!(t.check(&token, NOW), Checked::NotMine);
        // Same host, a path outside `/clusters/`.
        let other = Tokens::new(Arc::new(ec_keys()), &format!("{BASE}/x"), vec![]);
        let (token, _) = other.issue(&grant("root"), NOW).unwrap();
        assert_eq!(t.check(&token, NOW), Checked::NotMine);
    }

    #[test]
    fn rotation_old_keys_verify_while_listed() {
        let old = ec_keys();
        let new = ec_keys();
        let before = Tokens::new(Arc::new(old.clone()), BASE, vec![]);
        let (token, _) = before.issue(&grant("root"), NOW).unwrap();
        // New signing key, the old public key still listed: the old token verifies.
        let after = Tokens::new(
            Arc::new(keys::KeySet::new(
                new.signing.clone(),
                vec![old.signing.public.clone()],
            )),
            BASE,
            vec![],
        );
        valid(after.check(&token, NOW));
        assert_eq!(after.keys().jwks()["keys"].as_array().unwrap().len(), 2);
        // New tokens are signed by the new key.
        let (fresh, _) = after.issue(&grant("root"), NOW).unwrap();
        assert_eq!(
            jsonwebtoken::decode_header(&fresh).unwrap().kid,
            Some(new.signing.kid.clone())
        );
        // Once the old key is dropped, its tokens stop verifying.
        let dropped = Tokens::new(Arc::new(new), BASE, vec![]);
        assert_eq!(invalid(dropped.check(&token, NOW)), "invalid signature");
        valid(dropped.check(&fresh, NOW));
    }

    #[test]
    fn rsa_keys_sign_and_verify() {
        // A fixed 2048-bit RSA test key (PKCS#8), generated for this test only.
        let Ok(pem) = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src/serviceaccount/testdata/rsa.pem"
        )) else {
            panic!("testdata/rsa.pem missing");
        };
        let signing = keys::signing_key_from_pem(&pem, "rsa").unwrap();
        assert_eq!(signing.alg, Algorithm::RS256);
        let t = Tokens::new(Arc::new(keys::KeySet::new(signing, vec![])), BASE, vec![]);
        let (token, _) = t.issue(&grant("root"), NOW).unwrap();
        valid(t.check(&token, NOW));
        let jwk = &t.keys().jwks()["keys"][0];
        assert_eq!(
            (jwk["kty"].as_str(), jwk["e"].as_str()),
            (Some("RSA"), Some("AQAB"))
        );
        assert_eq!(t.keys().algorithms(), ["RS256"]);
        // The public key file describes the same key (same kid), and verifies alone.
        let Ok(public) = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/src/serviceaccount/testdata/rsa.pub.pem"
        )) else {
            panic!("testdata/rsa.pub.pem missing");
        };
        let listed = keys::verification_keys_from_pem(&public, "rsa.pub").unwrap();
        assert_eq!(listed[0].kid, t.keys().signing.kid);
        // The same id as `openssl pkey -pubin -outform DER | sha256 | base64url` gives:
        // the SubjectPublicKeyInfo is encoded as Go's MarshalPKIXPublicKey encodes it.
        assert_eq!(listed[0].kid, "6DQAAeOMlT_IdO3ZyBKuZ3MS4f1bd6_d111bn666f8s");
        let verifier_only = Tokens::new(
            Arc::new(keys::KeySet::new(ec_keys().signing, listed)),
            BASE,
            vec![],
        );
        valid(verifier_only.check(&token, NOW));
    }
}
