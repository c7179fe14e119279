//! An OIDC provider's signing keys: read once from `--oidc-jwks-file`, or fetched from the
//! issuer — `<issuer>/.well-known/openid-configuration` (its `issuer` must be the
//! configured one), then its `jwks_uri` — over HTTPS trusting `--oidc-ca-file` or the
//! system's roots. Fetched keys are cached; a token naming a `kid` the cache lacks makes
//! one refetch, at most one every [`REFETCH_INTERVAL`] (so a stream of tokens with made-up
//! key ids cannot make kplane hammer the provider), and each fetch is bounded in time and
//! size.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_util::rt::TokioIo;
use serde_json::Value;

use super::keys::{keys_from_jwks, KeyError, VerificationKey};
use super::oidc_config::OidcConfig;

/// The least time between two fetches of the provider's keys.
pub const REFETCH_INTERVAL: Duration = Duration::from_secs(10);
/// How long one HTTPS request to the provider may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// The largest discovery document or JWKS read.
const MAX_BODY: usize = 1 << 20;

type Keys = Arc<Vec<VerificationKey>>;

/// Where the keys come from.
#[derive(Debug)]
pub enum ProviderKeys {
    /// `--oidc-jwks-file`.
    Static(Keys),
    /// The issuer's discovery document.
    Remote(Remote),
}

/// Keys fetched from the issuer, cached.
pub struct Remote {
    issuer: String,
    tls: Arc<rustls::ClientConfig>,
    cached: RwLock<Keys>,
    /// [`REFETCH_INTERVAL`] (tests shorten it).
    refetch_interval: Duration,
    /// When the last fetch started; held while fetching so concurrent misses fetch once.
    last_fetch: tokio::sync::Mutex<Option<Instant>>,
}

impl std::fmt::Debug for Remote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Remote")
            .field("issuer", &self.issuer)
            .finish_non_exhaustive()
    }
}

impl ProviderKeys {
    pub fn new(cfg: &OidcConfig) -> Result<ProviderKeys, KeyError> {
        if let Some(path) = &cfg.jwks_file {
            let doc = std::fs::read(path)
                .map_err(|e| KeyError(format!("--oidc-jwks-file {}: {e}", path.display())))?;
            let keys = keys_from_jwks(&doc)
                .map_err(|e| KeyError(format!("--oidc-jwks-file {}: {e}", path.display())))?;
            return Ok(ProviderKeys::Static(Arc::new(keys)));
        }
        let mut roots = rustls::RootCertStore::empty();
        if let Some(path) = &cfg.ca_file {
            let pem = std::fs::read(path)
                .map_err(|e| KeyError(format!("--oidc-ca-file {}: {e}", path.display())))?;
            for cert in rustls_pemfile::certs(&mut pem.as_slice()) {
                let cert =
                    cert.map_err(|e| KeyError(format!("--oidc-ca-file {}: {e}", path.display())))?;
                roots
                    .add(cert)
                    .map_err(|e| KeyError(format!("--oidc-ca-file {}: {e}", path.display())))?;
            }
            if roots.is_empty() {
                return Err(KeyError(format!(
                    "--oidc-ca-file {}: no certificate",
                    path.display()
                )));
            }
        } else {
            let native = rustls_native_certs::load_native_certs();
            for e in &native.errors {
                tracing::warn!(error = %e, "reading the system's CA certificates");
            }
            roots.add_parsable_certificates(native.certs);
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let tls = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| KeyError(format!("TLS client configuration: {e}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        Ok(ProviderKeys::Remote(Remote {
            issuer: cfg.issuer_url.trim_end_matches('/').to_string(),
            tls: Arc::new(tls),
            cached: RwLock::new(Arc::new(Vec::new())),
            refetch_interval: REFETCH_INTERVAL,
            last_fetch: tokio::sync::Mutex::new(None),
        }))
    }

    /// The keys to verify a token whose header names `kid` with: the cached ones when they
    /// include it (or when the token names none and there are some), else refetched.
    pub async fn for_kid(&self, kid: Option<&str>) -> Result<Keys, String> {
        match self {
            ProviderKeys::Static(keys) => Ok(keys.clone()),
            ProviderKeys::Remote(r) => r.for_kid(kid).await,
        }
    }
}

impl Remote {
    fn cached(&self) -> Keys {
        match self.cached.read() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    async fn for_kid(&self, kid: Option<&str>) -> Result<Keys, String> {
        let has = |keys: &Keys| match kid {
            Some(kid) => keys.iter().any(|k| k.kid == kid),
            None => !keys.is_empty(),
        };
        let keys = self.cached();
        if has(&keys) {
            return Ok(keys);
        }
        let mut last = self.last_fetch.lock().await;
        // Another request may have fetched while this one waited.
        let keys = self.cached();
        if has(&keys) {
            return Ok(keys);
        }
        if last.is_some_and(|t| t.elapsed() < self.refetch_interval) {
            return Ok(keys);
        }
        *last = Some(Instant::now());
        let fetched = Arc::new(self.fetch().await?);
        match self.cached.write() {
            Ok(mut g) => *g = fetched.clone(),
            Err(p) => *p.into_inner() = fetched.clone(),
        }
        Ok(fetched)
    }

    /// The discovery document, then the JWKS it names.
    async fn fetch(&self) -> Result<Vec<VerificationKey>, String> {
        let url = format!("{}/.well-known/openid-configuration", self.issuer);
        let doc: Value = serde_json::from_slice(&self.get(&url).await?)
            .map_err(|e| format!("{url}: not JSON: {e}"))?;
        let issuer = doc
            .get("issuer")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if issuer.trim_end_matches('/') != self.issuer {
            return Err(format!(
                "oidc: issuer did not match the issuer returned by provider, expected {:?} got {issuer:?}",
                self.issuer
            ));
        }
        let jwks_uri = doc
            .get("jwks_uri")
            .and_then(Value::as_str)
            .ok_or_else(|| format!("{url}: no jwks_uri"))?;
        let body = self.get(jwks_uri).await?;
        keys_from_jwks(&body).map_err(|e| format!("{jwks_uri}: {e}"))
    }

    /// GETs an `https://` URL, within [`FETCH_TIMEOUT`] and [`MAX_BODY`].
    async fn get(&self, url: &str) -> Result<Bytes, String> {
        tokio::time::timeout(FETCH_TIMEOUT, self.get_inner(url))
            .await
            .map_err(|_| format!("GET {url}: timed out"))?
    }

    async fn get_inner(&self, url: &str) -> Result<Bytes, String> {
        let fail = |e: &dyn std::fmt::Display| format!("GET {url}: {e}");
        let uri: hyper::Uri = url.parse().map_err(|e| fail(&e))?;
        if uri.scheme_str() != Some("https") {
            return Err(fail(&"only https URLs are fetched"));
        }
        let host = uri.host().ok_or_else(|| fail(&"no host"))?;
        let host = host
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        let port = uri.port_u16().unwrap_or(443);
        let tcp = tokio::net::TcpStream::connect((host.as_str(), port))
            .await
            .map_err(|e| fail(&e))?;
        let name = rustls::pki_types::ServerName::try_from(host).map_err(|e| fail(&e))?;
        let tls = tokio_rustls::TlsConnector::from(self.tls.clone())
            .connect(name, tcp)
            .await
            .map_err(|e| fail(&e))?;
        let (mut send, conn) = hyper::client::conn::http1::handshake(TokioIo::new(tls))
            .await
            .map_err(|e| fail(&e))?;
        // Drives the connection; it ends with the response (or the timeout's drop).
        let driver = tokio::spawn(conn);
        let authority = uri.authority().map(|a| a.as_str()).unwrap_or_default();
        let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
        let req = hyper::Request::get(path)
            .header(hyper::header::HOST, authority)
            .header(hyper::header::ACCEPT, "application/json")
            .body(Empty::<Bytes>::new())
            .map_err(|e| fail(&e))?;
        let result = async {
            let resp = send.send_request(req).await.map_err(|e| fail(&e))?;
            if resp.status() != hyper::StatusCode::OK {
                return Err(fail(&format!("status {}", resp.status())));
            }
            let body = Limited::new(resp.into_body(), MAX_BODY)
                .collect()
                .await
                .map_err(|e| fail(&e))?;
            Ok(body.to_bytes())
        }
        .await;
        driver.abort();
        result
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::serviceaccount::keys::tests::ec_keys;

    #[test]
    fn jwks_keys_round_trip_and_skip_unusable_ones() {
        let keys = ec_keys();
        let mut jwks = keys.jwks();
        let list = jwks["keys"].as_array_mut().unwrap();
        list.push(serde_json::json!({"kty": "oct", "k": "AAAA"}));
        list.push(serde_json::json!({"kty": "EC", "crv": "P-384", "x": "AA", "y": "AA"}));
        let parsed = keys_from_jwks(jwks.to_string().as_bytes()).unwrap();
        assert_eq!(parsed.len(), 1);
        assert_eq!(parsed[0].kid, keys.signing.kid);
        assert_eq!(parsed[0].jwk(), keys.signing.public.jwk());
        assert!(keys_from_jwks(br#"{"keys": []}"#).is_err());
        assert!(keys_from_jwks(b"nope").is_err());
    }

    /// A provider on loopback HTTPS (its certificate from a CA written to `dir/ca.crt`):
    /// the discovery document names `<base>/keys`, which serves `jwks`; fetches counted.
    async fn provider(
        dir: &std::path::Path,
        jwks: Arc<std::sync::Mutex<Value>>,
        fetches: Arc<std::sync::atomic::AtomicUsize>,
    ) -> String {
        use hyper::service::service_fn;
        let pki = crate::tls::load_or_create(dir, &[]).unwrap();
        let tls = crate::tls::server_config(&pki, None).unwrap();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!(
            "https://127.0.0.1:{}",
            listener.local_addr().unwrap().port()
        );
        let issuer = base.clone();
        tokio::spawn(async move {
            loop {
                let (tcp, _) = listener.accept().await.unwrap();
                let tls = tokio_rustls::TlsAcceptor::from(tls.clone());
                let (jwks, fetches, issuer) = (jwks.clone(), fetches.clone(), issuer.clone());
                tokio::spawn(async move {
                    let Ok(stream) = tls.accept(tcp).await else {
                        return;
                    };
                    let svc = service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
                        fetches.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        let body = match req.uri().path() {
                            "/.well-known/openid-configuration" => serde_json::json!({
                                "issuer": issuer, "jwks_uri": format!("{issuer}/keys")}),
                            _ => jwks.lock().unwrap().clone(),
                        };
                        let resp = hyper::Response::new(http_body_util::Full::new(Bytes::from(
                            body.to_string(),
                        )));
                        async move { Ok::<_, std::convert::Infallible>(resp) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        base
    }

    /// Keys are fetched from the issuer's discovery document over HTTPS (trusting
    /// `--oidc-ca-file`), cached, refetched for an unknown `kid`, but not again within the
    /// refetch interval.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn keys_are_fetched_cached_and_refetched_for_unknown_kids() {
        use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (ec_keys(), ec_keys());
        let jwks = Arc::new(std::sync::Mutex::new(a.jwks()));
        let fetches = Arc::new(AtomicUsize::new(0));
        let base = provider(dir.path(), jwks.clone(), fetches.clone()).await;
        let cfg = OidcConfig {
            issuer_url: base,
            client_id: "x".into(),
            ca_file: Some(dir.path().join("ca.crt")),
            ..Default::default()
        };
        let mut keys = ProviderKeys::new(&cfg).unwrap();
        let got = keys.for_kid(Some(&a.signing.kid)).await.unwrap();
        assert_eq!(got[0].kid, a.signing.kid);
        assert_eq!(fetches.load(SeqCst), 2, "discovery and JWKS");
        keys.for_kid(Some(&a.signing.kid)).await.unwrap();
        assert_eq!(fetches.load(SeqCst), 2, "cached");

        // The provider rotates to b: a token of b makes one refetch.
        *jwks.lock().unwrap() = b.jwks();
        let ProviderKeys::Remote(r) = &mut keys else {
            panic!("not fetched");
        };
        r.refetch_interval = Duration::ZERO;
        let got = keys.for_kid(Some(&b.signing.kid)).await.unwrap();
        assert_eq!(got[0].kid, b.signing.kid);
        assert_eq!(fetches.load(SeqCst), 4);

        // Unknown kids within the interval: no fetch.
        let ProviderKeys::Remote(r) = &mut keys else {
            panic!("not fetched");
        };
        r.refetch_interval = Duration::from_secs(3600);
        for _ in 0..3 {
            let got = keys.for_kid(Some("made-up")).await.unwrap();
            assert_eq!(got[0].kid, b.signing.kid);
        }
        assert_eq!(fetches.load(SeqCst), 4);

        // Without the CA, the provider's certificate is not trusted.
        let untrusted = ProviderKeys::new(&OidcConfig {
            ca_file: None,
            ..cfg.clone()
        })
        .unwrap();
        assert!(untrusted.for_kid(None).await.is_err());
    }

    #[tokio::test]
    async fn unreachable_issuer_is_an_error_and_refetch_is_bounded() {
        // Port 1 on loopback: refused at once.
        let cfg = OidcConfig {
            issuer_url: "https://127.0.0.1:1".into(),
            client_id: "x".into(),
            ..Default::default()
        };
        let keys = ProviderKeys::new(&cfg).unwrap();
        let err = keys.for_kid(Some("k")).await.unwrap_err();
        assert!(err.contains("openid-configuration"), "{err}");
        // Within the refetch interval: no second fetch, just no keys.
        assert!(keys.for_kid(Some("k")).await.unwrap().is_empty());
    }
}
