//! Serving one accepted TCP connection: the TLS handshake, then HTTP/2 or HTTP/1.1 chosen by
//! the protocol the client negotiated with ALPN (as Go's net/http does: no ALPN means
//! HTTP/1.1), each served by hyper's own connection type until it ends or the server drains it.
//!
//! Why not hyper-util's auto-detecting builder: it reads the first bytes to sniff the HTTP/2
//! preface and replays them to hyper, and that short first read makes hyper's HTTP/1 read
//! buffer grow from 8 KiB to 16 KiB on every connection. A client that holds one watch per
//! connection (kube-rs, the Python client) keeps that buffer for the life of the watch, so
//! it was a third of the memory of an idle watch (docs/performance.md).
//!
//! Protocol upgrades (exec, attach, port-forward) are not served.
//!
//! The limits of a connection (docs/security.md, "Limits") are applied here: the handshake
//! timeout, the header and idle timeouts (`conn_timeouts`, which also times request
//! bodies), the header size (hyper's settings: HTTP/1.1 answers 431 past it, HTTP/2
//! advertises it as the header list size), and the answer to a connection over the
//! per-address limit ([`too_many_connections`]).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::net::TcpStream;

use crate::conn_timeouts::{self, Activity, Graceful, GuardedBody, TimedBody, Watched};
use crate::limits::{Limits, Refusal, Refusals};
use crate::tls_stream::{self, TlsStream};

/// Concurrent streams one HTTP/2 connection may open (kube-apiserver's default for
/// `--http2-max-streams-per-connection`).
const MAX_CONCURRENT_STREAMS: u32 = 1000;

/// The HTTP settings shared by every connection.
#[derive(Debug)]
pub struct Protocols {
    http1: http1::Builder,
    /// HTTP/1.1 without keep-alive, for connections over the per-address limit.
    http1_refusing: http1::Builder,
    http2: http2::Builder<TokioExecutor>,
    /// Every request carries the client's address (the audit log records it), not only
    /// while the request log would write it.
    pub always_peer: bool,
    limits: Limits,
    refusals: Arc<Refusals>,
}

impl Default for Protocols {
    fn default() -> Self {
        Protocols::new(Limits::default(), Arc::default())
    }
}

impl Protocols {
    /// The settings for `limits`, counting refusals in `refusals`.
    pub fn new(limits: Limits, refusals: Arc<Refusals>) -> Self {
        let mut http1 = http1::Builder::new();
        // A head larger than this is answered 431 by hyper, as Go answers past
        // `MaxHeaderBytes`; the read buffer may grow a little past it (never below hyper's
        // minimum of 8 KiB).
        http1.max_header_size(limits.max_header_bytes);
        http1.max_buf_size(limits.max_header_bytes.saturating_add(8192).max(400 * 1024));
        let mut http1_refusing = http1.clone();
        http1_refusing.keep_alive(false);
        let mut http2 = http2::Builder::new(TokioExecutor::new());
        http2.max_concurrent_streams(MAX_CONCURRENT_STREAMS);
        // Go's HTTP/2 server advertises `MaxHeaderBytes` as its header list size.
        http2.max_header_list_size(u32::try_from(limits.max_header_bytes).unwrap_or(u32::MAX));
        Protocols {
            http1,
            http1_refusing,
            http2,
            always_peer: false,
            limits,
            refusals,
        }
    }
}

/// Completes the TLS handshake on `tcp` and serves HTTP on it until the client leaves,
/// `drain` (the server's shutdown) ends the connection gracefully, or the connection's
/// timeouts ([`conn_timeouts`]) close it. Failures are only logged (debug): they concern
/// one client.
///
/// `permit` is the connection's unit of its address' count; without one the address is
/// over `--max-connections-per-ip` and every request is answered [`too_many_connections`]
/// until the connection closes (HTTP/1.1 after the first answer, HTTP/2 once idle for the
/// header timeout).
pub async fn serve(
    tcp: TcpStream,
    (peer, permit): (SocketAddr, Option<crate::quotas::Permit<std::net::IpAddr>>),
    tls: Arc<rustls::ServerConfig>,
    protocols: Arc<Protocols>,
    app: axum::Router,
    drain: tokio::sync::watch::Receiver<()>,
) {
    // The handshake runs in a future of its own, boxed and freed once it is done, and hands
    // back only a pointer to the boxed connection: a TLS stream held by value in this
    // function (even one already moved into the connection) would size the task for as
    // long as the connection lives, because a future is as large as its largest state.
    let limits = protocols.limits.clone();
    let refusals = protocols.refusals.clone();
    let refused = permit.is_none();
    let handshake = Box::pin(async move {
        let timeout = protocols.limits.handshake_timeout();
        match tokio::time::timeout(timeout, tls_stream::accept(tcp, tls)).await {
            Ok(Ok(stream)) => Some(connection(stream, peer, &protocols, app, refused)),
            Ok(Err(e)) => {
                tracing::debug!(%peer, error = %e, "TLS handshake failed");
                None
            }
            Err(_) => {
                protocols.refusals.count(Refusal::HandshakeTimeout);
                tracing::debug!(%peer, "TLS handshake timed out");
                None
            }
        }
    });
    let Some((connection, activity)) = handshake.await else {
        return;
    };
    let header = limits.request_header_timeout;
    let idle = if refused { header } else { limits.idle_timeout };
    let (result, refusal) = conn_timeouts::run(connection, &activity, (header, idle), drain).await;
    drop(permit);
    if let Err(e) = result {
        if e.is_parse_too_large() {
            refusals.count(Refusal::HeaderSize);
        }
        tracing::debug!(%peer, error = %e, "connection ended with an error");
    }
    if let Some(refusal) = refusal {
        refusals.count(refusal);
        tracing::debug!(%peer, limit = refusal.label(), "connection closed by a limit");
    }
}

/// A served connection, boxed: the task holds only this pointer.
type Connection = std::pin::Pin<Box<dyn Graceful + Send>>;

/// The HTTP connection on an established TLS stream, with the protocol chosen by ALPN, and
/// the activity its timeouts watch. Requests carry the client's address only while the
/// request log would write it, and the client's certificate chain ([`PeerCertificates`],
/// for authenticators) when it sent one.
///
/// [`PeerCertificates`]: crate::http::auth::PeerCertificates
fn connection(
    stream: TlsStream,
    peer: SocketAddr,
    protocols: &Protocols,
    app: axum::Router,
    refused: bool,
) -> (Connection, Arc<Activity>) {
    let h2 = stream.alpn_protocol() == Some(b"h2".as_slice());
    let certificates = stream
        .peer_certificates()
        .filter(|chain| !chain.is_empty())
        .map(|chain| crate::http::auth::PeerCertificates(chain.into()));
    let activity = Activity::new(!h2);
    let io = TokioIo::new(Watched::new(stream, activity.clone()));
    let always_peer = protocols.always_peer;
    let requests = activity.clone();
    let body_window = protocols.limits.request_body_timeout;
    let refusals = protocols.refusals.clone();
    let svc = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
        // Held until the response body ends: the connection is not idle meanwhile.
        let guard = requests.begin();
        let mut req = req.map(|body| {
            if hyper::body::Body::is_end_stream(&body) {
                axum::body::Body::new(body)
            } else {
                axum::body::Body::new(TimedBody::new(body, body_window, refusals.clone()))
            }
        });
        if always_peer || crate::http::httplog::wants_peer() {
            req.extensions_mut()
                .insert(crate::http::httplog::Peer(peer));
        }
        if let Some(c) = &certificates {
            req.extensions_mut().insert(c.clone());
        }
        let response = if refused {
            futures::future::Either::Left(std::future::ready(Ok(too_many_connections())))
        } else {
            futures::future::Either::Right(tower::ServiceExt::oneshot(app.clone(), req))
        };
        async move {
            let response = match response.await {
                Ok(r) => r,
                Err(never) => match never {},
            };
            Ok::<_, Infallible>(response.map(|body| GuardedBody::new(body, guard)))
        }
    });
    let connection: Connection = if h2 {
        Box::pin(protocols.http2.serve_connection(io, svc))
    } else if refused {
        Box::pin(protocols.http1_refusing.serve_connection(io, svc))
    } else {
        Box::pin(protocols.http1.serve_connection(io, svc))
    };
    (connection, activity)
}

/// The answer to every request of a connection over `--max-connections-per-ip`: a 429
/// Status with Retry-After, as kube-apiserver answers a request it has no seat for.
fn too_many_connections() -> axum::response::Response {
    let mut e = kplane_registry::ApiError::new(
        kplane_types::StatusReason::TooManyRequests,
        "too many connections from this address, please try again later",
    );
    e.0.retry_after = Some(1);
    crate::http::error::StatusResponse::into_response(e)
}
