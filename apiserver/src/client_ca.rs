//! Client certificates, on the server's side: the client CA (created in the data directory
//! on first start and kept, or a bundle given with `--client-ca-file`), the certificates it
//! issues (the admin's, and users' through `kplane certs issue`), and the TLS layer's
//! client-certificate policy ([`RequestClientCert`]).
//!
//! As kube-apiserver (`tls.RequestClientCert`), the TLS layer asks every client for a
//! certificate but requires none and does not judge the chain: the handshake only proves
//! that the client holds the certificate's key. Whether the chain leads to the client CA,
//! is in its validity period and is meant for client authentication is the X.509
//! authenticator's question (`http/x509.rs`), so a bad certificate is a 401 with a Status,
//! not a failed handshake.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};
use rustls::client::danger::HandshakeSignatureValid;
use rustls::crypto::WebPkiSupportedAlgorithms;
use rustls::pki_types::{CertificateDer, UnixTime};
use rustls::server::danger::{ClientCertVerified, ClientCertVerifier};
use rustls::{DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::tls::{read_optional, write_private, TlsError};

/// The client CA's certificate and key in the PKI directory (`<data-dir>/pki`).
pub const CA_CERT_FILE: &str = "client-ca.crt";
pub const CA_KEY_FILE: &str = "client-ca.key";
/// The admin's client certificate and key (also inlined in `admin.kubeconfig`).
pub const ADMIN_CERT_FILE: &str = "admin.crt";
pub const ADMIN_KEY_FILE: &str = "admin.key";

/// How long the admin's client certificate is valid (a fresh one is issued at every start).
pub const ADMIN_CERT_VALIDITY: Duration = Duration::from_secs(365 * 24 * 3600);

/// The client CA the server trusts.
#[derive(Clone, Debug)]
pub struct ClientCa {
    /// Every trusted CA certificate (PEM bundle).
    pub bundle_pem: String,
    /// The trust anchors parsed from the bundle.
    pub roots: Arc<RootCertStore>,
    /// The CA's own certificate and key when kplane manages it (absent for a
    /// `--client-ca-file` bundle: kplane then cannot issue certificates).
    pub signer: Option<Signer>,
}

/// A CA certificate and its key, able to issue client certificates.
#[derive(Clone)]
pub struct Signer {
    pub cert_pem: String,
    pub key_pem: String,
}

impl std::fmt::Debug for Signer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Signer").finish_non_exhaustive()
    }
}

/// A client certificate and its private key, PEM.
#[derive(Clone, Debug)]
pub struct IssuedCert {
    pub cert_pem: String,
    pub key_pem: String,
}

fn ca_params() -> Result<CertificateParams, rcgen::Error> {
    let mut p = CertificateParams::new(Vec::<String>::new())?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "kplane-client-ca");
    dn.push(DnType::OrganizationName, "kplane");
    p.distinguished_name = dn;
    p.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    p.key_usages = vec![
        KeyUsagePurpose::KeyCertSign,
        KeyUsagePurpose::CrlSign,
        KeyUsagePurpose::DigitalSignature,
    ];
    Ok(p)
}

/// Loads the client CA kept under `pki_dir`, creating it on first use.
pub fn load_or_create(pki_dir: &Path) -> Result<ClientCa, TlsError> {
    std::fs::create_dir_all(pki_dir).map_err(|e| TlsError::Io {
        path: pki_dir.display().to_string(),
        source: e,
    })?;
    let cert_path = pki_dir.join(CA_CERT_FILE);
    let key_path = pki_dir.join(CA_KEY_FILE);
    let signer = match (read_optional(&cert_path)?, read_optional(&key_path)?) {
        (Some(cert_pem), Some(key_pem)) => Signer { cert_pem, key_pem },
        _ => {
            let key = KeyPair::generate()?;
            let cert = ca_params()?.self_signed(&key)?;
            let signer = Signer {
                cert_pem: cert.pem(),
                key_pem: key.serialize_pem(),
            };
            write_private(&key_path, &signer.key_pem)?;
            write_private(&cert_path, &signer.cert_pem)?;
            signer
        }
    };
    let mut ca = from_bundle(&signer.cert_pem)?;
    ca.signer = Some(signer);
    Ok(ca)
}

/// The CA bundle of `--client-ca-file` (one or more PEM certificates).
pub fn load_bundle(path: &Path) -> Result<ClientCa, TlsError> {
    let pem = read_optional(path)?.ok_or_else(|| TlsError::Io {
        path: path.display().to_string(),
        source: std::io::ErrorKind::NotFound.into(),
    })?;
    from_bundle(&pem)
}

fn from_bundle(pem: &str) -> Result<ClientCa, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut pem.as_bytes()) {
        let cert = cert.map_err(|e| TlsError::Pem(e.to_string()))?;
        roots
            .add(cert)
            .map_err(|e| TlsError::Pem(format!("client CA: {e}")))?;
    }
    if roots.is_empty() {
        return Err(TlsError::Pem("the client CA bundle holds no certificate".into()));
    }
    Ok(ClientCa {
        bundle_pem: pem.to_string(),
        roots: Arc::new(roots),
        signer: None,
    })
}

/// Issues a client certificate: CN = `user`, one O per group (what the X.509 authenticator
/// maps to the user name and groups), valid from now for `validity`.
pub fn issue(
    signer: &Signer,
    user: &str,
    groups: &[String],
    validity: Duration,
) -> Result<IssuedCert, TlsError> {
    let key = KeyPair::from_pem(&signer.key_pem)?;
    let issuer = Issuer::from_ca_cert_pem(&signer.cert_pem, key)?;
    let mut params = CertificateParams::new(Vec::<String>::new())?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, user);
    for g in groups {
        dn.push(DnType::OrganizationName, g.as_str());
    }
    params.distinguished_name = dn;
    params.is_ca = IsCa::ExplicitNoCa;
    params.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    params.extended_key_usages = vec![ExtendedKeyUsagePurpose::ClientAuth];
    let now = time::OffsetDateTime::now_utc();
    // A minute of slack for clocks slightly behind ours.
    params.not_before = now - time::Duration::minutes(1);
    params.not_after = now + validity;
    let mut serial: [u8; 16] = rand::random();
    serial[0] &= 0x7f;
    params.serial_number = Some(rcgen::SerialNumber::from_slice(&serial));
    let leaf_key = KeyPair::generate()?;
    let cert = params.signed_by(&leaf_key, &issuer)?;
    Ok(IssuedCert {
        cert_pem: cert.pem(),
        key_pem: leaf_key.serialize_pem(),
    })
}

/// The TLS layer's policy for client certificates (kube-apiserver's
/// `tls.RequestClientCert`): ask for one, naming the client CAs, accept a handshake with
/// or without one, and leave the judgement of the chain to the X.509 authenticator. The
/// handshake signature is still verified, so a presented certificate is one whose key the
/// client holds.
#[derive(Debug)]
pub struct RequestClientCert {
    hints: Vec<rustls::DistinguishedName>,
    algorithms: WebPkiSupportedAlgorithms,
}

impl RequestClientCert {
    pub fn new(ca: &ClientCa, provider: &rustls::crypto::CryptoProvider) -> Self {
        RequestClientCert {
            hints: ca.roots.subjects(),
            algorithms: provider.signature_verification_algorithms,
        }
    }
}

impl ClientCertVerifier for RequestClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        false
    }

    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        &self.hints
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: UnixTime,
    ) -> Result<ClientCertVerified, rustls::Error> {
        // Judged per request by the X.509 authenticator (see the module docs).
        Ok(ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Writes the admin's client certificate (CN `kplane-admin`, O `system:masters`) and key
/// into `pki_dir`, issued afresh by the managed client CA.
pub fn issue_admin(signer: &Signer, pki_dir: &Path) -> Result<IssuedCert, TlsError> {
    let cert = issue(
        signer,
        crate::http::auth::ADMIN_USER,
        &[kplane_types::request::SYSTEM_MASTERS.to_string()],
        ADMIN_CERT_VALIDITY,
    )?;
    write_private(&pki_dir.join(ADMIN_KEY_FILE), &cert.key_pem)?;
    write_private(&pki_dir.join(ADMIN_CERT_FILE), &cert.cert_pem)?;
    Ok(cert)
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn the_client_ca_is_created_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let a = load_or_create(dir.path()).unwrap();
        let b = load_or_create(dir.path()).unwrap();
        assert_eq!(a.bundle_pem, b.bundle_pem);
        assert!(a.signer.is_some());
        assert_eq!(a.roots.len(), 1);
        // A bundle file is trusted but cannot issue.
        let bundle = load_bundle(&dir.path().join(CA_CERT_FILE)).unwrap();
        assert!(bundle.signer.is_none());
        assert_eq!(bundle.roots.subjects(), a.roots.subjects());
        assert!(load_bundle(&dir.path().join("missing.crt")).is_err());
        std::fs::write(dir.path().join("empty.crt"), "").unwrap();
        assert!(load_bundle(&dir.path().join("empty.crt")).is_err());
    }
}
