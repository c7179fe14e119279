//! The HTTPS client admission webhooks are called with (the registry's
//! `WebhookTransport`): hyper's pooled client over rustls, one client per distinct
//! trust (the configuration's `caBundle`, or the system's roots without one) and server
//! name, kept for reuse as client-go's `ClientManager` keeps its REST clients.
//!
//! kplane has no Services: a `service` reference is resolved through the server's
//! configuration (`kplane serve --webhook-service NAMESPACE/NAME[:PORT]=HOST:PORT`): the
//! request goes to `HOST:PORT` and the server's certificate is verified for
//! `<name>.<namespace>.svc`, as kube-apiserver verifies it. A reference without such an
//! entry fails as upstream fails for a missing Service (`service "<name>" not found`),
//! under the webhook's failure policy.
//!
//! No lock is held across a call, nor while a client is built (PEM parsing, the system's
//! roots, read once per process, on a blocking thread): the client map is locked only to
//! find or add one. The map is keyed by a digest of the trust and holds at most
//! [`MAX_CLIENTS`] clients, the least recently used dropped first, so tenants' many
//! `caBundle`s cannot grow it without bound.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use kplane_registry::webhooks::{ClientConfig, TransportResponse, WebhookTransport};

/// The largest answer read from a webhook (kube-apiserver reads at most 3 MiB too).
const MAX_RESPONSE: usize = 3 * 1024 * 1024;

type HttpsClient = Client<
    hyper_rustls::HttpsConnector<hyper_util::client::legacy::connect::HttpConnector>,
    Full<Bytes>,
>;

/// A client's key: the SHA-256 of the trusted CA bundle and the server name override.
type ClientKey = ([u8; 32], Option<String>);

/// The most clients kept (each distinct trust and server name has one).
const MAX_CLIENTS: usize = 256;

/// The clients kept, each with the tick it was last used at.
#[derive(Debug, Default)]
struct Clients {
    by_key: HashMap<ClientKey, (HttpsClient, u64)>,
    tick: u64,
}

impl Clients {
    fn get(&mut self, key: &ClientKey) -> Option<HttpsClient> {
        self.tick += 1;
        let tick = self.tick;
        self.by_key.get_mut(key).map(|(c, used)| {
            *used = tick;
            c.clone()
        })
    }

    /// Keeps `client` for `key` (one another request added meanwhile wins), dropping the
    /// least recently used client when full; returns the one kept.
    fn insert(&mut self, key: ClientKey, client: HttpsClient) -> HttpsClient {
        if let Some(c) = self.get(&key) {
            return c;
        }
        if self.by_key.len() >= MAX_CLIENTS {
            let oldest = self
                .by_key
                .iter()
                .min_by_key(|(_, (_, used))| *used)
                .map(|(k, _)| k.clone());
            if let Some(k) = oldest {
                self.by_key.remove(&k);
            }
        }
        self.by_key.insert(key, (client.clone(), self.tick));
        client
    }
}

/// The system's trusted roots, loaded once (the first client without a `caBundle`).
fn native_roots() -> &'static rustls::RootCertStore {
    static ROOTS: OnceLock<rustls::RootCertStore> = OnceLock::new();
    ROOTS.get_or_init(|| {
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_native_certs::load_native_certs().certs {
            let _ = roots.add(cert);
        }
        roots
    })
}

/// A client trusting `ca` (PEM; empty: the system's roots), verifying the server as
/// `server_name` when given (else the URL's host). Blocking (file reads, parsing).
fn build_client(ca: &[u8], server_name: Option<String>) -> Result<HttpsClient, String> {
    let roots = if ca.is_empty() {
        native_roots().clone()
    } else {
        let mut roots = rustls::RootCertStore::empty();
        for cert in rustls_pemfile::certs(&mut &ca[..]) {
            let cert = cert.map_err(|e| format!("tls: failed to parse caBundle: {e}"))?;
            roots
                .add(cert)
                .map_err(|e| format!("tls: failed to parse caBundle: {e}"))?;
        }
        roots
    };
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    let builder = hyper_rustls::HttpsConnectorBuilder::new()
        .with_tls_config(tls)
        .https_only();
    let builder = match server_name {
        Some(name) => {
            let name = rustls::pki_types::ServerName::try_from(name)
                .map_err(|e| format!("invalid server name: {e}"))?;
            builder.with_server_name_resolver(hyper_rustls::FixedServerNameResolver::new(name))
        }
        None => builder,
    };
    let connector = builder.enable_http1().enable_http2().build();
    Ok(Client::builder(TokioExecutor::new())
        .pool_idle_timeout(Duration::from_secs(90))
        .build(connector))
}

/// Where a `service` reference's requests go: `namespace/name:port` → `host:port`.
pub type ServiceAddresses = HashMap<(String, String, u16), String>;

/// Parses one `--webhook-service` entry, `NAMESPACE/NAME[:PORT]=HOST:PORT` (port 443
/// when left out).
pub fn parse_service_address(entry: &str) -> Result<((String, String, u16), String), String> {
    let bad = || format!("{entry:?}: want NAMESPACE/NAME[:PORT]=HOST:PORT");
    let (service, target) = entry.split_once('=').ok_or_else(bad)?;
    let (namespace, rest) = service.split_once('/').ok_or_else(bad)?;
    let (name, port) = match rest.split_once(':') {
        Some((n, p)) => (n, p.parse::<u16>().map_err(|_| bad())?),
        None => (rest, 443),
    };
    if namespace.is_empty() || name.is_empty() || !target.contains(':') {
        return Err(bad());
    }
    Ok(((namespace.into(), name.into(), port), target.into()))
}

/// The webhook transport of the server.
#[derive(Debug, Default)]
pub struct HttpsTransport {
    services: ServiceAddresses,
    clients: Mutex<Clients>,
    /// The runtime the transport was made on (the server's own), where every call runs
    /// ([`HttpsTransport::new`]).
    runtime: Option<tokio::runtime::Handle>,
}

impl HttpsTransport {
    /// A transport resolving `service` references through `services`. Its calls run on
    /// the runtime it is made on, whichever runtime asks for them: the pooled
    /// connections they open serve every tenant's later calls, so they must not be
    /// opened (their sockets driven) by the lowered-priority threads that run the
    /// requests of a cluster past its share (`crate::flowcontrol::lowered`).
    pub fn new(services: ServiceAddresses) -> Self {
        HttpsTransport {
            services,
            clients: Mutex::default(),
            runtime: tokio::runtime::Handle::try_current().ok(),
        }
    }

    fn clients(&self) -> std::sync::MutexGuard<'_, Clients> {
        self.clients.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The client trusting `ca` (PEM; empty: the system's roots), verifying the server as
    /// `server_name` when given (else the URL's host); built on a blocking thread, without
    /// the map's lock, when none is kept for them.
    async fn client(&self, ca: &[u8], server_name: Option<String>) -> Result<HttpsClient, String> {
        use sha2::Digest as _;
        let key: ClientKey = (sha2::Sha256::digest(ca).into(), server_name.clone());
        if let Some(c) = self.clients().get(&key) {
            return Ok(c);
        }
        let ca = ca.to_vec();
        let client = tokio::task::spawn_blocking(move || build_client(&ca, server_name))
            .await
            .map_err(|e| format!("building the webhook client: {e}"))??;
        Ok(self.clients().insert(key, client))
    }

    /// The URL to POST to and the name to verify the server as.
    fn endpoint(
        &self,
        cc: &ClientConfig,
        timeout: Duration,
    ) -> Result<(String, Option<String>), String> {
        let query = format!("?timeout={}s", timeout.as_secs());
        if let Some(url) = &cc.url {
            return Ok((format!("{url}{query}"), None));
        }
        let Some(s) = &cc.service else {
            return Err("no url or service".into());
        };
        let key = (s.namespace.clone(), s.name.clone(), s.port);
        let Some(target) = self.services.get(&key) else {
            return Err(format!("service {:?} not found", s.name));
        };
        let server_name = format!("{}.{}.svc", s.name, s.namespace);
        Ok((
            format!("https://{target}{}{query}", s.path),
            Some(server_name),
        ))
    }
}

/// Go's words for the common transport failures (`dial tcp <addr>: connect: connection
/// refused`), else the error chain joined.
fn describe(e: &hyper_util::client::legacy::Error, authority: &str) -> String {
    let mut source: Option<&(dyn std::error::Error + 'static)> = Some(e);
    let mut parts = Vec::new();
    while let Some(s) = source {
        if let Some(io) = s.downcast_ref::<std::io::Error>() {
            if io.kind() == std::io::ErrorKind::ConnectionRefused {
                return format!("dial tcp {authority}: connect: connection refused");
            }
        }
        let text = s.to_string();
        if !parts.contains(&text) {
            parts.push(text);
        }
        source = s.source();
    }
    parts.join(": ")
}

#[async_trait::async_trait]
impl WebhookTransport for HttpsTransport {
    async fn post(
        &self,
        cc: &ClientConfig,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<TransportResponse, String> {
        let (url, server_name) = self.endpoint(cc, timeout)?;
        let client = self.client(&cc.ca_bundle, server_name).await?;
        let uri: hyper::Uri = url.parse().map_err(|e| format!("parse {url:?}: {e}"))?;
        let authority = uri.authority().map(|a| a.to_string()).unwrap_or_default();
        let req = hyper::Request::post(uri)
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .header(hyper::header::ACCEPT, "application/json, */*")
            .body(Full::new(Bytes::from(body)))
            .map_err(|e| e.to_string())?;
        let exchange = async move {
            let resp = client
                .request(req)
                .await
                .map_err(|e| describe(&e, &authority))?;
            let status = resp.status().as_u16();
            let body = Limited::new(resp.into_body(), MAX_RESPONSE)
                .collect()
                .await
                .map_err(|e| e.to_string())?
                .to_bytes();
            Ok(TransportResponse {
                status,
                body: body.to_vec(),
            })
        };
        match &self.runtime {
            Some(runtime) => crate::flowcontrol::lowered::run_on(runtime, exchange)
                .await
                .map_err(|e| format!("the webhook call ended: {e}"))?,
            None => exchange.await,
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// Clients are kept per distinct trust, at most [`MAX_CLIENTS`], the least recently
    /// used dropped first.
    #[tokio::test]
    async fn clients_are_kept_per_trust_within_a_bound() {
        let t = HttpsTransport::default();
        let ca = |i: usize| format!("not a certificate {i}").into_bytes();
        for i in 0..MAX_CLIENTS + 50 {
            t.client(&ca(i), None).await.unwrap();
            // The first one stays in use.
            t.client(&ca(0), None).await.unwrap();
        }
        let c = t.clients();
        assert_eq!(c.by_key.len(), MAX_CLIENTS);
        use sha2::Digest as _;
        let key = |i: usize| -> ClientKey { (sha2::Sha256::digest(ca(i)).into(), None) };
        assert!(c.by_key.contains_key(&key(0)));
        assert!(!c.by_key.contains_key(&key(1)));
        assert!(c.by_key.contains_key(&key(MAX_CLIENTS + 49)));
    }

    #[test]
    fn service_addresses_parse() {
        assert_eq!(
            parse_service_address("ns/hook=127.0.0.1:8443").unwrap(),
            (("ns".into(), "hook".into(), 443), "127.0.0.1:8443".into())
        );
        assert_eq!(
            parse_service_address("ns/hook:8443=h:1").unwrap().0 .2,
            8443
        );
        for bad in [
            "ns/hook",
            "hook=h:1",
            "ns/=h:1",
            "ns/hook:x=h:1",
            "ns/hook=h",
        ] {
            assert!(parse_service_address(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn services_without_an_entry_are_not_found() {
        let t = HttpsTransport::default();
        let cc = ClientConfig {
            url: None,
            service: Some(kplane_registry::webhooks::ServiceRef {
                namespace: "ns".into(),
                name: "hook".into(),
                path: "/x".into(),
                port: 443,
            }),
            ca_bundle: Vec::new(),
        };
        assert_eq!(
            t.endpoint(&cc, Duration::from_secs(10)).unwrap_err(),
            "service \"hook\" not found"
        );
        let mut services = ServiceAddresses::new();
        services.insert(("ns".into(), "hook".into(), 443), "127.0.0.1:9".into());
        let t = HttpsTransport::new(services);
        assert_eq!(
            t.endpoint(&cc, Duration::from_secs(10)).unwrap(),
            (
                "https://127.0.0.1:9/x?timeout=10s".into(),
                Some("hook.ns.svc".into())
            )
        );
    }
}
