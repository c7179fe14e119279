//! A lean HTTP/1.1 client for the hot path: each [`Conn`] owns exactly one keep-alive
//! connection (TCP + rustls + hyper's HTTP/1 client connection) and reconnects only after the
//! connection failed or was closed. No pooling, no retries: a failed request is reported as a
//! [`Failure`] and counted by the caller.
//!
//! [`H2Conn`] is the HTTP/2 counterpart for watches that share one connection (as client-go
//! multiplexes them): cheap to clone, one stream per request, never reconnects.
//!
//! [`encode_query`] percent-encodes the values put into request paths' queries.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper::client::conn::http2;
use hyper::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, HOST, USER_AGENT};
use hyper::{Method, Request};
use hyper_util::rt::{TokioExecutor, TokioIo};
use rustls::pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

use crate::kubeconfig::{Auth, Endpoint};

/// Why a request did not succeed. [`Failure::key`] is what error counts are keyed by.
#[derive(Debug, Clone)]
pub enum Failure {
    /// The server answered with a non-2xx status (with the start of the body).
    Status(u16, String),
    /// Connecting, TLS or HTTP failed.
    Transport(String),
    /// No complete answer within the request timeout.
    Timeout,
    /// A 2xx answer that the benchmark could not use (e.g. unparsable JSON).
    Protocol(String),
}

impl Failure {
    /// `"404"`, `"transport"`, `"timeout"` or `"protocol"`.
    pub fn key(&self) -> String {
        match self {
            Failure::Status(code, _) => code.to_string(),
            Failure::Transport(_) => "transport".to_string(),
            Failure::Timeout => "timeout".to_string(),
            Failure::Protocol(_) => "protocol".to_string(),
        }
    }

    /// A one-line description.
    pub fn message(&self) -> String {
        self.to_string()
    }
}

impl fmt::Display for Failure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Failure::Status(code, body) => write!(f, "HTTP {code}: {body}"),
            Failure::Transport(m) => write!(f, "transport: {m}"),
            Failure::Timeout => write!(f, "request timed out"),
            Failure::Protocol(m) => write!(f, "unexpected response: {m}"),
        }
    }
}

/// A complete answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Bytes,
    /// Body length in bytes (also for a discarded body).
    pub len: u64,
}

impl Reply {
    /// The body of a 2xx answer, or the status as a failure.
    pub fn ok(self) -> Result<Bytes, Failure> {
        if (200..300).contains(&self.status) {
            Ok(self.body)
        } else {
            Err(status_failure(self.status, &self.body))
        }
    }
}

/// A non-2xx status with the (Status) message of its body.
pub fn status_failure(status: u16, body: &[u8]) -> Failure {
    let text = String::from_utf8_lossy(&body[..body.len().min(400)]);
    let msg = serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| {
            v.get("message")
                .and_then(|m| m.as_str())
                .map(str::to_string)
        })
        .unwrap_or_else(|| text.trim().to_string());
    Failure::Status(status, msg)
}

/// Percent-encodes a query value (continue tokens may hold `=`, `+`, `/`).
pub fn encode_query(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Where and how to connect; shared by all connections.
pub struct Target {
    host: String,
    port: u16,
    tls: Option<(tokio_rustls::TlsConnector, ServerName<'static>)>,
    /// The same with ALPN `h2` (for [`H2Conn`]).
    h2_tls: Option<tokio_rustls::TlsConnector>,
    authority: HeaderValue,
    auth: Option<HeaderValue>,
    user_agent: HeaderValue,
    /// Bound on connecting and on a whole request/answer exchange.
    pub timeout: Duration,
}

impl Target {
    /// Builds the target of a kubeconfig endpoint.
    pub fn new(ep: &Endpoint, timeout: Duration) -> anyhow::Result<Target> {
        let (tls, h2_tls) = if ep.server.tls {
            let http1 = crate::tls::client_config(ep, b"http/1.1")?;
            let h2 = crate::tls::client_config(ep, b"h2")?;
            (
                Some((
                    tokio_rustls::TlsConnector::from(http1),
                    crate::tls::server_name(ep)?,
                )),
                Some(tokio_rustls::TlsConnector::from(h2)),
            )
        } else {
            (None, None)
        };
        let auth = match &ep.auth {
            Auth::None => None,
            Auth::Bearer(t) => Some(HeaderValue::from_str(&format!("Bearer {t}"))?),
            Auth::Basic { username, password } => {
                use base64::Engine as _;
                let raw = format!("{username}:{password}");
                let enc = base64::engine::general_purpose::STANDARD.encode(raw);
                Some(HeaderValue::from_str(&format!("Basic {enc}"))?)
            }
        };
        Ok(Target {
            host: ep.server.host.clone(),
            port: ep.server.port,
            tls,
            h2_tls,
            authority: HeaderValue::from_str(&ep.server.authority)?,
            auth,
            user_agent: HeaderValue::from_static(concat!(
                "kplane-bench/",
                env!("CARGO_PKG_VERSION")
            )),
            timeout,
        })
    }

    /// Opens the TCP connection (no delay).
    async fn tcp(&self) -> Result<TcpStream, Failure> {
        let tcp = TcpStream::connect((self.host.as_str(), self.port))
            .await
            .map_err(|e| {
                Failure::Transport(format!("connecting to {}:{}: {e}", self.host, self.port))
            })?;
        let _ = tcp.set_nodelay(true);
        Ok(tcp)
    }

    fn request(
        &self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> Result<Request<Full<Bytes>>, Failure> {
        let mut b = Request::builder()
            .method(method)
            .uri(path)
            .header(HOST, self.authority.clone())
            .header(USER_AGENT, self.user_agent.clone())
            .header(ACCEPT, HeaderValue::from_static("application/json"));
        if let Some(a) = &self.auth {
            b = b.header(AUTHORIZATION, a.clone());
        }
        if body.is_some() {
            b = b.header(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        b.body(Full::new(body.unwrap_or_default()))
            .map_err(|e| Failure::Protocol(format!("building request for {path}: {e}")))
    }
}

/// One keep-alive HTTP/1.1 connection, opened lazily and reopened after it broke.
pub struct Conn {
    target: Arc<Target>,
    sender: Option<SendRequest<Full<Bytes>>>,
    timeout: Duration,
}

impl Conn {
    pub fn new(target: Arc<Target>) -> Conn {
        let timeout = target.timeout;
        Conn {
            target,
            sender: None,
            timeout,
        }
    }

    /// The same with another per-request timeout (for long cleanup requests).
    pub fn with_timeout(target: Arc<Target>, timeout: Duration) -> Conn {
        Conn {
            target,
            sender: None,
            timeout,
        }
    }

    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, Failure> {
        let t = &self.target;
        let tcp = t.tcp().await?;
        match &t.tls {
            Some((connector, name)) => {
                let tls = connector
                    .connect(name.clone(), tcp)
                    .await
                    .map_err(|e| Failure::Transport(format!("TLS handshake: {e}")))?;
                handshake(tls).await
            }
            None => handshake(tcp).await,
        }
    }

    async fn ready_sender(&mut self) -> Result<&mut SendRequest<Full<Bytes>>, Failure> {
        if let Some(s) = &mut self.sender {
            if s.ready().await.is_err() {
                self.sender = None;
            }
        }
        let sender = match self.sender.take() {
            Some(s) => s,
            None => tokio::time::timeout(self.target.timeout.min(self.timeout), self.connect())
                .await
                .map_err(|_| Failure::Timeout)??,
        };
        Ok(self.sender.insert(sender))
    }

    /// Sends one request and reads the whole answer, all within the target's timeout. A
    /// non-2xx answer is an `Ok(Reply)`; use [`Reply::ok`] to turn it into a failure.
    pub async fn call(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> Result<Reply, Failure> {
        self.call_inner(method, path, body, true).await
    }

    /// Like [`Conn::call`], but a 2xx body is read and dropped frame by frame instead of being
    /// kept (a deletecollection answer lists every deleted object: 100 MB for 100,000).
    pub async fn call_discard(&mut self, method: Method, path: &str) -> Result<Reply, Failure> {
        self.call_inner(method, path, None, false).await
    }

    async fn call_inner(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
        keep: bool,
    ) -> Result<Reply, Failure> {
        let timeout = self.timeout;
        match tokio::time::timeout(timeout, self.exchange(method, path, body, keep)).await {
            Ok(Ok(r)) => Ok(r),
            Ok(Err(e)) => {
                self.sender = None;
                Err(e)
            }
            Err(_) => {
                // The connection is in an unknown state: drop it.
                self.sender = None;
                Err(Failure::Timeout)
            }
        }
    }

    async fn exchange(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
        keep: bool,
    ) -> Result<Reply, Failure> {
        let req = self.target.request(method, path, body)?;
        let sender = self.ready_sender().await?;
        let resp = sender
            .send_request(req)
            .await
            .map_err(|e| Failure::Transport(format!("{e}")))?;
        let status = resp.status().as_u16();
        if !keep && (200..300).contains(&status) {
            let mut body = resp.into_body();
            let mut len = 0u64;
            // Bounded by the caller's timeout; ends with the body.
            while let Some(frame) = body.frame().await {
                let frame = frame.map_err(|e| Failure::Transport(format!("reading body: {e}")))?;
                if let Some(data) = frame.data_ref() {
                    len += data.len() as u64;
                }
            }
            return Ok(Reply {
                status,
                body: Bytes::new(),
                len,
            });
        }
        let body = resp
            .into_body()
            .collect()
            .await
            .map_err(|e| Failure::Transport(format!("reading body: {e}")))?
            .to_bytes();
        let len = body.len() as u64;
        Ok(Reply { status, body, len })
    }

    /// `call` + `Reply::ok`.
    pub async fn call_ok(
        &mut self,
        method: Method,
        path: &str,
        body: Option<Bytes>,
    ) -> Result<Bytes, Failure> {
        self.call(method, path, body).await?.ok()
    }

    /// Starts a streaming GET (a watch): waits (within the timeout) for a 2xx status and returns
    /// the body stream. The connection stays busy until the stream is dropped or ends.
    pub async fn stream(&mut self, path: &str) -> Result<Incoming, Failure> {
        let timeout = self.timeout;
        let fut = async {
            let req = self.target.request(Method::GET, path, None)?;
            let sender = self.ready_sender().await?;
            sender
                .send_request(req)
                .await
                .map_err(|e| Failure::Transport(format!("{e}")))
        };
        let resp = match tokio::time::timeout(timeout, fut).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                self.sender = None;
                return Err(e);
            }
            Err(_) => {
                self.sender = None;
                return Err(Failure::Timeout);
            }
        };
        streaming_body(resp, timeout).await
    }
}

/// The body of a 2xx streaming answer, or its status as a failure (reading the error body
/// within `timeout`).
async fn streaming_body(
    resp: hyper::Response<Incoming>,
    timeout: Duration,
) -> Result<Incoming, Failure> {
    let status = resp.status().as_u16();
    if !(200..300).contains(&status) {
        let body = tokio::time::timeout(timeout, resp.into_body().collect())
            .await
            .ok()
            .and_then(Result::ok)
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        return Err(status_failure(status, &body));
    }
    Ok(resp.into_body())
}

/// One HTTP/2 connection shared by many concurrent streams. Clones share the connection; it
/// closes when the last clone (and every stream) is gone.
#[derive(Clone)]
pub struct H2Conn {
    target: Arc<Target>,
    sender: http2::SendRequest<Full<Bytes>>,
}

impl H2Conn {
    /// Connects (ALPN `h2` over TLS, prior knowledge without TLS) within the target's timeout.
    pub async fn connect(target: Arc<Target>) -> Result<H2Conn, Failure> {
        let t = target.clone();
        let fut = async move {
            let tcp = t.tcp().await?;
            match (&t.tls, &t.h2_tls) {
                (Some((_, name)), Some(connector)) => {
                    let tls = connector
                        .connect(name.clone(), tcp)
                        .await
                        .map_err(|e| Failure::Transport(format!("TLS handshake: {e}")))?;
                    if tls.get_ref().1.alpn_protocol() != Some(b"h2".as_slice()) {
                        return Err(Failure::Transport(
                            "the server did not agree to HTTP/2 (ALPN h2)".into(),
                        ));
                    }
                    handshake_h2(tls).await
                }
                _ => handshake_h2(tcp).await,
            }
        };
        let sender = tokio::time::timeout(target.timeout, fut)
            .await
            .map_err(|_| Failure::Timeout)??;
        Ok(H2Conn { target, sender })
    }

    /// Starts a streaming GET (a watch) on a new stream; like [`Conn::stream`].
    pub async fn stream(&self, path: &str) -> Result<Incoming, Failure> {
        let timeout = self.target.timeout;
        let mut sender = self.sender.clone();
        let req = self.target.request(Method::GET, path, None)?;
        let fut = async move {
            sender
                .ready()
                .await
                .map_err(|e| Failure::Transport(format!("{e}")))?;
            sender
                .send_request(req)
                .await
                .map_err(|e| Failure::Transport(format!("{e}")))
        };
        let resp = tokio::time::timeout(timeout, fut)
            .await
            .map_err(|_| Failure::Timeout)??;
        streaming_body(resp, timeout).await
    }
}

async fn handshake_h2<I>(io: I) -> Result<http2::SendRequest<Full<Bytes>>, Failure>
where
    I: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let (sender, conn) = http2::handshake(TokioExecutor::new(), TokioIo::new(io))
        .await
        .map_err(|e| Failure::Transport(format!("HTTP/2 handshake: {e}")))?;
    tokio::spawn(async move {
        // Ends when the server closes the connection or every sender is dropped.
        let _ = conn.await;
    });
    Ok(sender)
}

async fn handshake<I>(io: I) -> Result<SendRequest<Full<Bytes>>, Failure>
where
    I: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| Failure::Transport(format!("HTTP handshake: {e}")))?;
    tokio::spawn(async move {
        // Ends when the server closes the connection or the sender is dropped.
        let _ = conn.await;
    });
    Ok(sender)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_encoding() {
        assert_eq!(encode_query("a+b/c=="), "a%2Bb%2Fc%3D%3D");
    }
}
