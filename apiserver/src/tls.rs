//! Certificates and TLS: a CA created once per data directory, a serving certificate
//! (a CA:FALSE leaf signed by that CA, with IP and DNS SANs, as rustls clients require),
//! and the rustls server configuration offering HTTP/2 and HTTP/1.1.

use std::path::Path;
use std::sync::Arc;

pub use crate::tls_files::TlsError;
use crate::tls_files::{read_optional, write_private};
use rcgen::{
    BasicConstraints, CertificateParams, DistinguishedName, DnType, ExtendedKeyUsagePurpose, IsCa,
    Issuer, KeyPair, KeyUsagePurpose,
};

/// The serving certificate and key in the PKI directory (`<data-dir>/pki`), written at
/// every start and reloaded when they change (`crate::tls_reload`).
pub const SERVING_CERT_FILE: &str = "serving.crt";
pub const SERVING_KEY_FILE: &str = "serving.key";

/// The CA and serving certificate of a server.
#[derive(Debug)]
pub struct Pki {
    pub ca_pem: String,
    pub serving_cert_pem: String,
    pub serving_key_pem: String,
}

fn ca_params() -> Result<CertificateParams, rcgen::Error> {
    let mut p = CertificateParams::new(Vec::<String>::new())?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "kplane-ca");
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

/// Loads or creates the CA under `dir`, and issues a fresh serving certificate for `sans`.
pub fn load_or_create(dir: &Path, sans: &[String]) -> Result<Pki, TlsError> {
    std::fs::create_dir_all(dir).map_err(|e| TlsError::Io {
        path: dir.display().to_string(),
        source: e,
    })?;
    let ca_cert_path = dir.join("ca.crt");
    let ca_key_path = dir.join("ca.key");
    let (ca_pem, ca_key) = match (read_optional(&ca_cert_path)?, read_optional(&ca_key_path)?) {
        (Some(cert), Some(key)) => (cert, KeyPair::from_pem(&key)?),
        _ => {
            let key = KeyPair::generate()?;
            let cert = ca_params()?.self_signed(&key)?;
            write_private(&ca_key_path, &key.serialize_pem())?;
            write_private(&ca_cert_path, &cert.pem())?;
            (cert.pem(), key)
        }
    };
    let issuer = Issuer::new(ca_params()?, ca_key);
    let mut names: Vec<String> = vec!["127.0.0.1".into(), "::1".into(), "localhost".into()];
    for s in sans {
        if !names.contains(s) {
            names.push(s.clone());
        }
    }
    let mut leaf = CertificateParams::new(names)?;
    let mut dn = DistinguishedName::new();
    dn.push(DnType::CommonName, "kplane");
    leaf.distinguished_name = dn;
    leaf.is_ca = IsCa::ExplicitNoCa;
    leaf.key_usages = vec![
        KeyUsagePurpose::DigitalSignature,
        KeyUsagePurpose::KeyEncipherment,
    ];
    leaf.extended_key_usages = vec![ExtendedKeyUsagePurpose::ServerAuth];
    let leaf_key = KeyPair::generate()?;
    let cert = leaf.signed_by(&leaf_key, &issuer)?;
    let serving_cert_pem = cert.pem();
    let serving_key_pem = leaf_key.serialize_pem();
    write_private(&dir.join(SERVING_KEY_FILE), &serving_key_pem)?;
    write_private(&dir.join(SERVING_CERT_FILE), &serving_cert_pem)?;
    Ok(Pki {
        ca_pem,
        serving_cert_pem,
        serving_key_pem,
    })
}

/// A rustls server configuration for the serving certificate (ALPN h2, http/1.1). With a
/// client CA, clients are asked for a certificate (none is required; see
/// [`crate::client_ca::RequestClientCert`]).
pub fn server_config(
    pki: &Pki,
    client_ca: Option<&crate::client_ca::ClientCa>,
) -> Result<Arc<rustls::ServerConfig>, TlsError> {
    let certs: Vec<_> = rustls_pemfile::certs(&mut pki.serving_cert_pem.as_bytes())
        .collect::<Result<_, _>>()
        .map_err(|e| TlsError::Pem(e.to_string()))?;
    let key = rustls_pemfile::private_key(&mut pki.serving_key_pem.as_bytes())
        .map_err(|e| TlsError::Pem(e.to_string()))?
        .ok_or_else(|| TlsError::Pem("no private key found".into()))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()?;
    let builder = match client_ca {
        Some(ca) => builder.with_client_cert_verifier(Arc::new(
            crate::client_ca::RequestClientCert::new(ca, &provider),
        )),
        None => builder.with_no_client_auth(),
    };
    let mut cfg = builder.with_single_cert(certs, key)?;
    cfg.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// TLS 1.2 and 1.3 only, and only ECDHE key exchange with AEAD ciphers (the suite names
    /// docs/security.md lists).
    #[test]
    fn serves_tls_1_2_and_1_3_with_modern_suites_only() {
        let dir = tempfile::tempdir().unwrap();
        let pki = load_or_create(dir.path(), &[]).unwrap();
        let cfg = server_config(&pki, None).unwrap();
        let suites: Vec<String> = cfg
            .crypto_provider()
            .cipher_suites
            .iter()
            .map(|s| format!("{:?}", s.suite()))
            .collect();
        assert_eq!(
            suites,
            [
                "TLS13_AES_256_GCM_SHA384",
                "TLS13_AES_128_GCM_SHA256",
                "TLS13_CHACHA20_POLY1305_SHA256",
                "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384",
                "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256",
                "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256",
                "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384",
                "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256",
                "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256",
            ]
        );
        for s in &cfg.crypto_provider().cipher_suites {
            assert!(matches!(
                s.version().version,
                rustls::ProtocolVersion::TLSv1_2 | rustls::ProtocolVersion::TLSv1_3
            ));
        }
        assert_eq!(cfg.alpn_protocols, [b"h2".to_vec(), b"http/1.1".to_vec()]);
    }
}
