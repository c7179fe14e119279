//! The server's protective limits (docs/security.md, "Limits"): their settings with
//! kube-apiserver's defaults where it has one (Go's `http.Server` settings in
//! `k8s.io/apiserver/pkg/server/secure_serving.go`), generous ones where it has none, and
//! the counter of refusals by limit (`kplane_limit_refusals_total{limit="..."}`).
//!
//! The limits themselves are enforced where the data they bound is read: the connection's
//! timeouts in `conn_timeouts.rs`, header sizes by hyper (`connection.rs`), the query string,
//! selectors and page size in `http/`.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The limits one server applies. `Default` gives the documented defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// From the first byte of a request (or the connection's start) to its complete head;
    /// also bounds the TLS handshake (at most [`HANDSHAKE_TIMEOUT`]). Go's
    /// `ReadHeaderTimeout` in kube-apiserver: 32 s.
    pub request_header_timeout: Duration,
    /// How long a request body may take to arrive, from the start of its reading (kube-
    /// apiserver's request timeout of non-long-running requests, 60 s, which covers
    /// reading their body).
    pub request_body_timeout: Duration,
    /// A connection with no request in flight (HTTP/1.1 keep-alive between requests, an
    /// HTTP/2 connection without streams) is closed after this long. Go's `IdleTimeout`
    /// in kube-apiserver: 90 s.
    pub idle_timeout: Duration,
    /// The largest request head (request line and headers; HTTP/2: the header list). Go's
    /// `MaxHeaderBytes` in kube-apiserver: 1 MiB.
    pub max_header_bytes: usize,
    /// The longest query string, in bytes (kube-apiserver has no limit of its own).
    pub max_query_length: usize,
    /// The most requirements one label or field selector may have.
    pub max_selector_requirements: usize,
    /// The most values one `in` / `notin` requirement may list.
    pub max_selector_values: usize,
    /// The most objects one LIST page holds: a larger `limit` is served as this one, with a
    /// continue token when more remain (kube-apiserver has no maximum).
    pub max_list_page: usize,
    /// The most watches one user (name and uid) may hold open; more is a 429. Members of
    /// `system:masters` are exempt, as from kube-apiserver's priority and fairness.
    pub max_watches_per_user: usize,
    /// The most connections one client IP address may hold open; more are answered 429 and
    /// closed.
    pub max_connections_per_ip: usize,
}

/// The TLS handshake is bounded by this, or by the header timeout when that is shorter.
pub const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

impl Default for Limits {
    fn default() -> Self {
        Limits {
            request_header_timeout: Duration::from_secs(32),
            request_body_timeout: Duration::from_secs(60),
            idle_timeout: Duration::from_secs(90),
            max_header_bytes: 1 << 20,
            max_query_length: 32 * 1024,
            max_selector_requirements: 100,
            max_selector_values: 1000,
            max_list_page: 10_000,
            max_watches_per_user: 1000,
            max_connections_per_ip: 20_000,
        }
    }
}

impl Limits {
    /// The bound on a TLS handshake.
    pub fn handshake_timeout(&self) -> Duration {
        self.request_header_timeout.min(HANDSHAKE_TIMEOUT)
    }
}

/// What a refusal was for: the `limit` label of `kplane_limit_refusals_total`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// A client that did not complete the TLS handshake in time.
    HandshakeTimeout,
    /// A request head that did not arrive in time.
    HeaderTimeout,
    /// A request body that did not arrive in time.
    BodyTimeout,
    /// A connection idle for longer than the idle timeout (closed, not an error).
    IdleTimeout,
    /// A request head over `max_header_bytes` (431).
    HeaderSize,
    /// A query string over `max_query_length` (414).
    QueryLength,
    /// A selector over its requirement or value count (400).
    SelectorComplexity,
    /// A LIST `limit` above `max_list_page`, served as the maximum (not an error).
    ListPageClamped,
    /// A watch over `max_watches_per_user` (429).
    WatchesPerUser,
    /// A connection over `max_connections_per_ip` (429, then closed).
    ConnectionsPerIp,
}

impl Refusal {
    const ALL: [Refusal; 10] = [
        Refusal::HandshakeTimeout,
        Refusal::HeaderTimeout,
        Refusal::BodyTimeout,
        Refusal::IdleTimeout,
        Refusal::HeaderSize,
        Refusal::QueryLength,
        Refusal::SelectorComplexity,
        Refusal::ListPageClamped,
        Refusal::WatchesPerUser,
        Refusal::ConnectionsPerIp,
    ];

    /// The metric label.
    pub fn label(self) -> &'static str {
        match self {
            Refusal::HandshakeTimeout => "tls_handshake_timeout",
            Refusal::HeaderTimeout => "request_header_timeout",
            Refusal::BodyTimeout => "request_body_timeout",
            Refusal::IdleTimeout => "idle_timeout",
            Refusal::HeaderSize => "max_header_bytes",
            Refusal::QueryLength => "max_query_length",
            Refusal::SelectorComplexity => "selector_complexity",
            Refusal::ListPageClamped => "max_list_page",
            Refusal::WatchesPerUser => "max_watches_per_user",
            Refusal::ConnectionsPerIp => "max_connections_per_ip",
        }
    }
}

/// Refusals counted by limit: one atomic add per refusal, nothing on other requests.
#[derive(Debug, Default)]
pub struct Refusals {
    counts: [AtomicU64; Refusal::ALL.len()],
}

impl Refusals {
    /// Counts one refusal.
    pub fn count(&self, refusal: Refusal) {
        self.counts[refusal as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// How many refusals of this kind there were.
    pub fn get(&self, refusal: Refusal) -> u64 {
        self.counts[refusal as usize].load(Ordering::Relaxed)
    }

    /// Appends `kplane_limit_refusals_total` in the text format, every limit listed.
    pub fn render(&self, out: &mut String) {
        let _ = writeln!(
            out,
            "# HELP kplane_limit_refusals_total Requests and connections refused, closed or clamped by a server limit"
        );
        let _ = writeln!(out, "# TYPE kplane_limit_refusals_total counter");
        for r in Refusal::ALL {
            let _ = writeln!(
                out,
                "kplane_limit_refusals_total{{limit=\"{}\"}} {}",
                r.label(),
                self.get(r)
            );
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn every_refusal_has_its_own_counter_and_line() {
        let r = Refusals::default();
        for (i, kind) in Refusal::ALL.into_iter().enumerate() {
            assert_eq!(kind as usize, i);
            for _ in 0..=i {
                r.count(kind);
            }
        }
        let mut out = String::new();
        r.render(&mut out);
        for (i, kind) in Refusal::ALL.into_iter().enumerate() {
            let line = format!(
                "kplane_limit_refusals_total{{limit=\"{}\"}} {}",
                kind.label(),
                i + 1
            );
            assert!(out.contains(&line), "{line} missing in {out}");
        }
    }

    #[test]
    fn the_handshake_is_bounded_by_the_shorter_timeout() {
        let mut l = Limits::default();
        assert_eq!(l.handshake_timeout(), HANDSHAKE_TIMEOUT);
        l.request_header_timeout = Duration::from_secs(1);
        assert_eq!(l.handshake_timeout(), Duration::from_secs(1));
    }
}
