//! The rustls client configuration (ring provider, ALPN `http/1.1` or `h2`) built from a
//! kubeconfig endpoint, including the opt-in certificate verifier for `insecure-skip-tls-verify`.

use std::sync::Arc;

use anyhow::{anyhow, bail, Context as _, Result};
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};

use crate::kubeconfig::Endpoint;

/// Builds the client TLS configuration for `ep`, offering only the ALPN protocol `alpn`
/// (`b"http/1.1"` or `b"h2"`).
pub fn client_config(ep: &Endpoint, alpn: &[u8]) -> Result<Arc<ClientConfig>> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .context("TLS protocol versions")?;
    let builder = if ep.insecure {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(AcceptAnyCert(provider)))
    } else {
        let mut roots = RootCertStore::empty();
        let pem = ep
            .ca_pem
            .as_deref()
            .ok_or_else(|| anyhow!("no certificate authority configured"))?;
        let mut n = 0;
        for cert in rustls_pemfile::certs(&mut &pem[..]) {
            roots
                .add(cert.context("reading the CA PEM")?)
                .context("adding a CA certificate")?;
            n += 1;
        }
        if n == 0 {
            bail!("the certificate authority data holds no PEM certificate");
        }
        builder.with_root_certificates(roots)
    };
    let mut config = match &ep.client_identity {
        None => builder.with_no_client_auth(),
        Some((cert_pem, key_pem)) => {
            let certs: Vec<CertificateDer<'static>> = rustls_pemfile::certs(&mut &cert_pem[..])
                .collect::<Result<_, _>>()
                .context("reading the client certificate PEM")?;
            let key: PrivateKeyDer<'static> = rustls_pemfile::private_key(&mut &key_pem[..])
                .context("reading the client key PEM")?
                .ok_or_else(|| anyhow!("the client key data holds no private key"))?;
            builder
                .with_client_auth_cert(certs, key)
                .context("using the client certificate")?
        }
    };
    config.alpn_protocols = vec![alpn.to_vec()];
    Ok(Arc::new(config))
}

/// The name the server certificate is checked against.
pub fn server_name(ep: &Endpoint) -> Result<ServerName<'static>> {
    let name = ep.tls_server_name.as_deref().unwrap_or(&ep.server.host);
    ServerName::try_from(name.to_string()).map_err(|e| anyhow!("bad TLS server name {name:?}: {e}"))
}

/// Accepts any server certificate (only with `insecure-skip-tls-verify: true`), but still
/// checks handshake signatures so the connection is well-formed.
#[derive(Debug)]
struct AcceptAnyCert(Arc<CryptoProvider>);

impl ServerCertVerifier for AcceptAnyCert {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}
