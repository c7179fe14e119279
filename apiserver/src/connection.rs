//! Serving one accepted TCP connection: the TLS handshake, then HTTP/2 or HTTP/1.1 chosen by
//! the protocol the client negotiated with ALPN (as Go's net/http does: no ALPN means
//! HTTP/1.1), each served by hyper's own connection type under the graceful-shutdown watcher.
//!
//! Why not hyper-util's auto-detecting builder: it reads the first bytes to sniff the HTTP/2
//! preface and replays them to hyper, and that short first read makes hyper's HTTP/1 read
//! buffer grow from 8 KiB to 16 KiB on every connection. A client that holds one watch per
//! connection (kube-rs, the Python client) keeps that buffer for the life of the watch, so
//! it was a third of the memory of an idle watch (docs/performance.md).
//!
//! Protocol upgrades (exec, attach, port-forward) are not served.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use hyper::server::conn::{http1, http2};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::graceful::Watcher;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpStream;

use crate::tls_stream::{self, TlsStream};

/// Bound on a client completing the TLS handshake.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Concurrent streams one HTTP/2 connection may open (kube-apiserver's default for
/// `--http2-max-streams-per-connection`).
const MAX_CONCURRENT_STREAMS: u32 = 1000;

/// The HTTP settings shared by every connection.
#[derive(Debug)]
pub struct Protocols {
    http1: http1::Builder,
    http2: http2::Builder<TokioExecutor>,
    /// Every request carries the client's address (the audit log records it), not only
    /// while the request log would write it.
    pub always_peer: bool,
}

impl Default for Protocols {
    fn default() -> Self {
        let http1 = http1::Builder::new();
        let mut http2 = http2::Builder::new(TokioExecutor::new());
        http2.max_concurrent_streams(MAX_CONCURRENT_STREAMS);
        Protocols {
            http1,
            http2,
            always_peer: false,
        }
    }
}

/// Completes the TLS handshake on `tcp` and serves HTTP on it until the client leaves or the
/// graceful shutdown behind `watcher` ends the connection. Failures are only logged (debug):
/// they concern one client.
pub async fn serve(
    tcp: TcpStream,
    peer: SocketAddr,
    tls: Arc<rustls::ServerConfig>,
    protocols: Arc<Protocols>,
    app: axum::Router,
    watcher: Watcher,
) {
    // The handshake runs in a future of its own, boxed and freed once it is done, and hands
    // back only a pointer to the boxed connection: a TLS stream held by value in this
    // function (even one already moved into the connection) would size the task for as
    // long as the connection lives, because a future is as large as its largest state.
    let handshake = Box::pin(async move {
        match tokio::time::timeout(HANDSHAKE_TIMEOUT, tls_stream::accept(tcp, tls)).await {
            Ok(Ok(stream)) => Some(connection(stream, peer, &protocols, app, watcher)),
            Ok(Err(e)) => {
                tracing::debug!(%peer, error = %e, "TLS handshake failed");
                None
            }
            Err(_) => None,
        }
    });
    let Some(connection) = handshake.await else {
        return;
    };
    let result = connection.await;
    if let Err(e) = result {
        tracing::debug!(%peer, error = %e, "connection ended with an error");
    }
}

/// A served connection, boxed: the task holds only this pointer.
type Connection = std::pin::Pin<Box<dyn Future<Output = Result<(), hyper::Error>> + Send>>;

/// The HTTP connection on an established TLS stream, with the protocol chosen by ALPN.
/// Requests carry the client's address only while the request log would write it, and the
/// client's certificate chain ([`PeerCertificates`], for authenticators) when it sent one.
///
/// [`PeerCertificates`]: crate::http::auth::PeerCertificates
fn connection(
    stream: TlsStream,
    peer: SocketAddr,
    protocols: &Protocols,
    app: axum::Router,
    watcher: Watcher,
) -> Connection {
    let h2 = stream.alpn_protocol() == Some(b"h2".as_slice());
    let certificates = stream
        .peer_certificates()
        .filter(|chain| !chain.is_empty())
        .map(|chain| crate::http::auth::PeerCertificates(chain.into()));
    let io = TokioIo::new(stream);
    let always_peer = protocols.always_peer;
    let app = tower::ServiceExt::map_request(app, move |mut req: hyper::Request<_>| {
        if always_peer || crate::http::httplog::wants_peer() {
            req.extensions_mut()
                .insert(crate::http::httplog::Peer(peer));
        }
        if let Some(c) = &certificates {
            req.extensions_mut().insert(c.clone());
        }
        req
    });
    let svc = TowerToHyperService::new(app);
    if h2 {
        Box::pin(watcher.watch(protocols.http2.serve_connection(io, svc)))
    } else {
        Box::pin(watcher.watch(protocols.http1.serve_connection(io, svc)))
    }
}
