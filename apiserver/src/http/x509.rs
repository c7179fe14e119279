//! The X.509 client-certificate authenticator (kube-apiserver's `x509` request
//! authenticator with its common-name user conversion): a chain the TLS client presented
//! that leads to the client CA, is within its validity period and allows client
//! authentication is the user named by the leaf's subject common name (CN), in the groups
//! named by its organizations (O). The leaf's SHA-256 fingerprint is recorded as the
//! credential id (`authentication.kubernetes.io/credential-id: X509SHA256=<hex>`).
//!
//! A request without a certificate is not its business; a certificate that does not verify
//! is rejected (401), whatever else the request carries.

use std::fmt;
use std::sync::Arc;

use rustls::pki_types::UnixTime;
use rustls::server::danger::ClientCertVerifier;
use rustls::server::WebPkiClientVerifier;
use sha2::{Digest, Sha256};

use kplane_types::UserInfo;

use super::auth::{AuthError, AuthOutcome, AuthRequest, Authenticator};
use crate::client_ca::ClientCa;

/// The extra key of a credential's id (kube-apiserver's `user.CredentialIDKey`).
pub const CREDENTIAL_ID_KEY: &str = "authentication.kubernetes.io/credential-id";

/// Authenticates client certificates signed by the client CA.
pub struct X509Authenticator {
    /// Replaced when the client CA file changes ([`X509Authenticator::reload`]).
    verifier: std::sync::RwLock<Arc<dyn ClientCertVerifier>>,
}

impl fmt::Debug for X509Authenticator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("X509Authenticator").finish_non_exhaustive()
    }
}

impl X509Authenticator {
    /// Trusts the CA certificates of `ca`.
    pub fn new(ca: &ClientCa) -> Result<Self, rustls::Error> {
        Ok(X509Authenticator {
            verifier: std::sync::RwLock::new(verifier(ca)?),
        })
    }

    /// Trusts the CA certificates of `ca` from now on, instead of the previous ones.
    pub fn reload(&self, ca: &ClientCa) -> Result<(), rustls::Error> {
        let new = verifier(ca)?;
        match self.verifier.write() {
            Ok(mut v) => *v = new,
            Err(poisoned) => *poisoned.into_inner() = new,
        }
        Ok(())
    }

    fn current(&self) -> Arc<dyn ClientCertVerifier> {
        match self.verifier.read() {
            Ok(v) => v.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }
}

fn verifier(ca: &ClientCa) -> Result<Arc<dyn ClientCertVerifier>, rustls::Error> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    WebPkiClientVerifier::builder_with_provider(ca.roots.clone(), provider)
        .build()
        .map_err(|e| rustls::Error::General(e.to_string()))
}

#[async_trait::async_trait]
impl Authenticator for X509Authenticator {
    async fn authenticate(&self, req: &AuthRequest<'_>) -> AuthOutcome {
        let Some(chain) = req.peer_certificates else {
            return AuthOutcome::NotApplicable;
        };
        let Some((leaf, intermediates)) = chain.0.split_first() else {
            return AuthOutcome::NotApplicable;
        };
        let fingerprint = hex::encode(Sha256::digest(leaf.as_ref()));
        if let Err(e) = self
            .current()
            .verify_client_cert(leaf, intermediates, UnixTime::now())
        {
            return AuthOutcome::Rejected(AuthError(format!(
                "verifying certificate X509SHA256={fingerprint} failed: {e}"
            )));
        }
        match subject_user(leaf.as_ref()) {
            Ok(Some((username, groups))) => {
                let mut extra = std::collections::BTreeMap::new();
                extra.insert(
                    CREDENTIAL_ID_KEY.to_string(),
                    vec![format!("X509SHA256={fingerprint}")],
                );
                AuthOutcome::Authenticated(UserInfo {
                    username,
                    uid: String::new(),
                    groups,
                    extra,
                })
            }
            // No common name: not a user (upstream lets the next authenticator decide).
            Ok(None) => AuthOutcome::NotApplicable,
            Err(e) => AuthOutcome::Rejected(AuthError(e)),
        }
    }
}

/// The leaf's subject: its (last) common name and its organizations, as Go's `pkix.Name`
/// reads them. `None` when there is no common name.
fn subject_user(der: &[u8]) -> Result<Option<(String, Vec<String>)>, String> {
    let (_, cert) = x509_parser::parse_x509_certificate(der)
        .map_err(|e| format!("parsing the client certificate: {e}"))?;
    let subject = cert.subject();
    let cn = subject
        .iter_common_name()
        .filter_map(|a| a.as_str().ok())
        .last()
        .unwrap_or("");
    if cn.is_empty() {
        return Ok(None);
    }
    let groups = subject
        .iter_organization()
        .filter_map(|a| a.as_str().ok())
        .map(str::to_string)
        .collect();
    Ok(Some((cn.to_string(), groups)))
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::client_ca::{self, Signer};
    use crate::http::auth::PeerCertificates;
    use rcgen::{CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, KeyPair};
    use rustls::pki_types::CertificateDer;
    use std::time::Duration;

    fn der(pem: &str) -> CertificateDer<'static> {
        rustls_pemfile::certs(&mut pem.as_bytes())
            .next()
            .unwrap()
            .unwrap()
    }

    async fn outcome(a: &X509Authenticator, chain: Vec<CertificateDer<'static>>) -> AuthOutcome {
        let certs = PeerCertificates(chain.into());
        let headers = axum::http::HeaderMap::new();
        a.authenticate(&AuthRequest::from_headers(&headers, Some(&certs)))
            .await
    }

    fn signer(ca: &ClientCa) -> &Signer {
        ca.signer.as_ref().unwrap()
    }

    /// A certificate signed by `signer` with custom parameters (expired, server-only, ...).
    fn custom(signer: &Signer, edit: impl FnOnce(&mut CertificateParams)) -> String {
        let issuer = rcgen::Issuer::from_ca_cert_pem(
            &signer.cert_pem,
            KeyPair::from_pem(&signer.key_pem).unwrap(),
        )
        .unwrap();
        let mut p = CertificateParams::new(Vec::<String>::new()).unwrap();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, "mallory");
        p.distinguished_name = dn;
        p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
        edit(&mut p);
        p.signed_by(&KeyPair::generate().unwrap(), &issuer)
            .unwrap()
            .pem()
    }

    #[tokio::test]
    async fn maps_cn_and_o_of_certificates_from_the_client_ca() {
        let dir = tempfile::tempdir().unwrap();
        let ca = client_ca::load_or_create(dir.path()).unwrap();
        let a = X509Authenticator::new(&ca).unwrap();
        let groups = vec!["dev".to_string(), "ops".to_string()];
        let alice =
            client_ca::issue(signer(&ca), "alice", &groups, Duration::from_secs(3600)).unwrap();
        let AuthOutcome::Authenticated(u) = outcome(&a, vec![der(&alice.cert_pem)]).await else {
            panic!("alice not authenticated");
        };
        assert_eq!(u.username, "alice");
        assert_eq!(u.groups, groups);
        let id = &u.extra[CREDENTIAL_ID_KEY][0];
        assert!(id.starts_with("X509SHA256=") && id.len() == 11 + 64, "{id}");

        // No certificate: someone else's business.
        let headers = axum::http::HeaderMap::new();
        assert_eq!(
            a.authenticate(&AuthRequest::from_headers(&headers, None))
                .await,
            AuthOutcome::NotApplicable
        );
        assert_eq!(outcome(&a, vec![]).await, AuthOutcome::NotApplicable);
        // No common name: not a user.
        let nameless = custom(signer(&ca), |p| {
            p.distinguished_name = DistinguishedName::new();
        });
        assert_eq!(
            outcome(&a, vec![der(&nameless)]).await,
            AuthOutcome::NotApplicable
        );
    }

    #[tokio::test]
    async fn after_a_reload_only_the_new_client_ca_authenticates() {
        let dir = tempfile::tempdir().unwrap();
        let old = client_ca::load_or_create(&dir.path().join("old")).unwrap();
        let new = client_ca::load_or_create(&dir.path().join("new")).unwrap();
        let a = X509Authenticator::new(&old).unwrap();
        let cert = |ca: &ClientCa| {
            let c = client_ca::issue(signer(ca), "bob", &[], Duration::from_secs(3600)).unwrap();
            vec![der(&c.cert_pem)]
        };
        assert!(matches!(
            outcome(&a, cert(&old)).await,
            AuthOutcome::Authenticated(_)
        ));
        assert!(matches!(
            outcome(&a, cert(&new)).await,
            AuthOutcome::Rejected(_)
        ));
        a.reload(&new).unwrap();
        assert!(matches!(
            outcome(&a, cert(&new)).await,
            AuthOutcome::Authenticated(_)
        ));
        assert!(matches!(
            outcome(&a, cert(&old)).await,
            AuthOutcome::Rejected(_)
        ));
    }

    #[tokio::test]
    async fn refuses_other_cas_expired_and_server_only_certificates() {
        let dir = tempfile::tempdir().unwrap();
        let ca = client_ca::load_or_create(&dir.path().join("a")).unwrap();
        let other = client_ca::load_or_create(&dir.path().join("b")).unwrap();
        let a = X509Authenticator::new(&ca).unwrap();
        let foreign = client_ca::issue(
            signer(&other),
            "mallory",
            &["system:masters".into()],
            Duration::from_secs(3600),
        )
        .unwrap();
        let expired = custom(signer(&ca), |p| {
            p.not_before = rcgen::date_time_ymd(2020, 1, 1);
            p.not_after = rcgen::date_time_ymd(2021, 1, 1);
        });
        let not_yet = custom(signer(&ca), |p| {
            p.not_before = rcgen::date_time_ymd(2999, 1, 1);
            p.not_after = rcgen::date_time_ymd(3000, 1, 1);
        });
        let server_only = custom(signer(&ca), |p| {
            p.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
        });
        for (what, pem) in [
            ("another CA", foreign.cert_pem.as_str()),
            ("expired", &expired),
            ("not yet valid", &not_yet),
            ("server auth only", &server_only),
        ] {
            let out = outcome(&a, vec![der(pem)]).await;
            assert!(
                matches!(&out, AuthOutcome::Rejected(e) if e.0.starts_with("verifying certificate X509SHA256=")),
                "{what}: {out:?}"
            );
        }
        // The CA certificate itself is no client certificate.
        let out = outcome(&a, vec![der(&ca.bundle_pem)]).await;
        assert!(matches!(out, AuthOutcome::Rejected(_)), "{out:?}");
    }
}
