//! The serving certificate is reloaded from its files while the server runs: a new
//! connection gets the new certificate, and a watch opened before keeps its events.

use std::time::Duration;

use anyhow::{bail, Context as _, Result};
use kplane_e2e::KplaneServer;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::CertificateDer;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

/// A TLS connection trusting the server's CA; the certificate it was shown comes with it.
async fn connect(
    server: &KplaneServer,
) -> Result<(tokio_rustls::client::TlsStream<TcpStream>, Vec<u8>)> {
    let tls = crate::tls_client::connect(server, b"http/1.1").await?;
    let leaf = tls
        .get_ref()
        .1
        .peer_certificates()
        .and_then(|c| c.first())
        .context("no server certificate")?
        .to_vec();
    Ok((tls, leaf))
}

/// A serving certificate for 127.0.0.1 signed by the server's CA (`pki/ca.crt`, `ca.key`).
fn new_serving_cert(server: &KplaneServer) -> Result<(String, String)> {
    let pki = server.data_dir().join("pki");
    let ca_key = rcgen::KeyPair::from_pem(&std::fs::read_to_string(pki.join("ca.key"))?)?;
    let issuer =
        rcgen::Issuer::from_ca_cert_pem(&std::fs::read_to_string(pki.join("ca.crt"))?, ca_key)?;
    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".into(), "localhost".into()])?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "kplane-reloaded");
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let key = rcgen::KeyPair::generate()?;
    let cert = params.signed_by(&key, &issuer)?;
    Ok((cert.pem(), key.serialize_pem()))
}

/// Replaces `path` as a certificate manager does: a new file renamed over the old.
fn replace(path: &std::path::Path, contents: &str) -> Result<()> {
    let tmp = path.with_extension("new");
    std::fs::write(&tmp, contents)?;
    std::fs::rename(&tmp, path)?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn certificate_reload_under_a_live_watch() -> Result<()> {
    let server = KplaneServer::start()?;
    let (mut watch, old_leaf) = connect(&server).await?;
    let head = format!(
        "GET /api/v1/namespaces/default/configmaps?watch=true HTTP/1.1\r\nHost: x\r\n\
         Authorization: Bearer {}\r\n\r\n",
        server.token()
    );
    watch.write_all(head.as_bytes()).await?;
    let mut buf = vec![0u8; 64 * 1024];
    let n = watch.read(&mut buf).await?;
    assert!(buf[..n].starts_with(b"HTTP/1.1 200"));

    let (cert, key) = new_serving_cert(&server)?;
    let pki = server.data_dir().join("pki");
    replace(&pki.join("serving.key"), &key)?;
    replace(&pki.join("serving.crt"), &cert)?;
    let new_leaf = CertificateDer::from_pem_slice(cert.as_bytes())?.to_vec();
    assert_ne!(new_leaf, old_leaf);

    // New connections get the new certificate once the server has read the files.
    let mut reloaded = false;
    for _ in 0..120 {
        let (_, leaf) = connect(&server).await?;
        if leaf == new_leaf {
            reloaded = true;
            break;
        }
        assert_eq!(leaf, old_leaf, "neither the old nor the new certificate");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(reloaded, "the new certificate was never served");

    // The watch opened before the reload still gets events.
    server.kubectl_ok(&["create", "configmap", "after-reload"])?;
    let mut seen = String::new();
    while !seen.contains("after-reload") {
        let n = tokio::time::timeout(Duration::from_secs(60), watch.read(&mut buf)).await??;
        if n == 0 {
            bail!("the watch was closed by the reload; it had sent {seen}");
        }
        seen.push_str(&String::from_utf8_lossy(&buf[..n]));
    }
    assert!(server
        .log_tail(200)
        .contains("reloaded the serving certificate"));
    Ok(())
}
