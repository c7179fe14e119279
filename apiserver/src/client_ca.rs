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

use crate::tls_files::{read_optional, write_private, TlsError};

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

pub(crate) fn from_bundle(pem: &str) -> Result<ClientCa, TlsError> {
    let mut roots = RootCertStore::empty();
    for cert in rustls_pemfile::certs(&mut pem.as_bytes()) {
        let cert = cert.map_err(|e| TlsError::Pem(e.to_string()))?;
        roots
            .add(cert)
            .map_err(|e| TlsError::Pem(format!("client CA: {e}")))?;
    }
    if roots.is_empty() {
        return Err(TlsError::Pem(
            "the client CA bundle holds no certificate".into(),
        ));
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
    // rcgen's names hold one value per attribute type: the subject (several O) is put in
    // below, and the certificate signed again.
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, user);
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
    let der = with_subject(cert.der(), &subject_der(user, groups), issuer.key())?;
    Ok(IssuedCert {
        cert_pem: pem_certificate(&der),
        key_pem: leaf_key.serialize_pem(),
    })
}

/// A DER element: tag, definite length, content.
fn der_element(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes: Vec<u8> = len
            .to_be_bytes()
            .into_iter()
            .skip_while(|b| *b == 0)
            .collect();
        out.push(0x80 | bytes.len() as u8);
        out.extend(bytes);
    }
    out.extend_from_slice(content);
    out
}

/// The X.501 name `O=<group>, ..., CN=<user>` (one RDN per attribute, UTF8String values,
/// the order kubeadm and openssl write).
fn subject_der(user: &str, groups: &[String]) -> Vec<u8> {
    const ORGANIZATION: &[u8] = &[0x06, 0x03, 0x55, 0x04, 0x0a];
    const COMMON_NAME: &[u8] = &[0x06, 0x03, 0x55, 0x04, 0x03];
    let rdn = |oid: &[u8], value: &str| {
        let mut attr = oid.to_vec();
        attr.extend(der_element(0x0c, value.as_bytes()));
        der_element(0x31, &der_element(0x30, &attr))
    };
    let mut rdns = Vec::new();
    for g in groups {
        rdns.extend(rdn(ORGANIZATION, g));
    }
    rdns.extend(rdn(COMMON_NAME, user));
    der_element(0x30, &rdns)
}

/// `cert` with its subject replaced by `subject`, signed again by `key` (the key that
/// signed it, so the signature algorithm stays).
fn with_subject(
    cert: &[u8],
    subject: &[u8],
    key: &impl rcgen::SigningKey,
) -> Result<Vec<u8>, TlsError> {
    let bad = |what: &str| TlsError::Pem(format!("re-subjecting a certificate: {what}"));
    let (_, parsed) = x509_parser::parse_x509_certificate(cert).map_err(|e| bad(&e.to_string()))?;
    let tbs: &[u8] = parsed.tbs_certificate.as_ref();
    let old_subject = parsed.tbs_certificate.subject.as_raw();
    let offset_in = |outer: &[u8], inner: &[u8]| {
        (inner.as_ptr() as usize)
            .checked_sub(outer.as_ptr() as usize)
            .filter(|o| o + inner.len() <= outer.len())
    };
    let at = offset_in(tbs, old_subject).ok_or_else(|| bad("subject outside the TBS"))?;
    let header = match tbs.get(1) {
        Some(b) if b & 0x80 == 0 => 2,
        Some(b) => 2 + usize::from(b & 0x7f),
        None => return Err(bad("empty TBS")),
    };
    let mut content = tbs
        .get(header..at)
        .ok_or_else(|| bad("TBS header"))?
        .to_vec();
    content.extend_from_slice(subject);
    content.extend_from_slice(&tbs[at + old_subject.len()..]);
    let new_tbs = der_element(0x30, &content);
    let signature = key.sign(&new_tbs)?;
    let algorithm = cert
        .get(offset_in(cert, tbs).ok_or_else(|| bad("TBS outside"))? + tbs.len()..)
        .and_then(|rest| {
            let short = *rest.get(1)?;
            // An AlgorithmIdentifier is short (`ecdsa-with-SHA256`: 10 bytes).
            (short & 0x80 == 0).then_some(())?;
            rest.get(..2 + usize::from(short))
        })
        .ok_or_else(|| bad("signature algorithm"))?;
    let mut bits = vec![0u8];
    bits.extend(signature);
    let mut body = new_tbs;
    body.extend_from_slice(algorithm);
    body.extend(der_element(0x03, &bits));
    Ok(der_element(0x30, &body))
}

fn pem_certificate(der: &[u8]) -> String {
    use base64::Engine;
    let b64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = String::from("-----BEGIN CERTIFICATE-----\n");
    for line in b64.as_bytes().chunks(64) {
        out.push_str(&String::from_utf8_lossy(line));
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
    out
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
        assert_eq!(bundle.roots.len(), 1);
        assert!(load_bundle(&dir.path().join("missing.crt")).is_err());
        std::fs::write(dir.path().join("empty.crt"), "").unwrap();
        assert!(load_bundle(&dir.path().join("empty.crt")).is_err());
    }
}
