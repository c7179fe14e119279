//! A raw TLS client of the test server, for tests of what kubectl and kube-rs hide:
//! connection timeouts, unread responses, certificate reloads.

use std::sync::Arc;

use anyhow::{Context as _, Result};
use kplane_e2e::KplaneServer;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;

/// The server's `host:port`.
pub(crate) fn addr(server: &KplaneServer) -> String {
    server.base_url().trim_start_matches("https://").to_string()
}

/// A TLS connection over `tcp` to the server, trusting its CA and offering one ALPN
/// protocol.
pub(crate) async fn connect_over(
    server: &KplaneServer,
    alpn: &[u8],
    tcp: TcpStream,
) -> Result<TlsStream<TcpStream>> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(server.ca_pem()?.as_bytes()) {
        roots.add(cert.context("parsing the CA")?)?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![alpn.to_vec()];
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config))
        .connect(ServerName::try_from("127.0.0.1")?, tcp)
        .await?)
}

/// [`connect_over`] a new TCP connection.
pub(crate) async fn connect(server: &KplaneServer, alpn: &[u8]) -> Result<TlsStream<TcpStream>> {
    connect_over(server, alpn, TcpStream::connect(addr(server)).await?).await
}
