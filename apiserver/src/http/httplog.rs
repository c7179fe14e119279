//! The request log: one line per finished request, as kube-apiserver's `httplog` writes
//! its `"HTTP"` line, under the tracing target [`TARGET`].
//!
//! The level of the line says how it went, so a filter on the target chooses what is
//! written (`kplane serve -v N` sets it, see the binary):
//! - `ERROR`: a 5xx, with its cause (`error`): the message of the [`ApiError`] that became
//!   the response, which [`StatusResponse::into_response`] leaves in the response's extensions as
//!   an [`ErrorCause`]. This is the one place a 5xx is logged.
//! - `INFO`: a 4xx.
//! - `DEBUG`: every other status.
//!
//! Fields: `cluster` (logical cluster, `*` for the wildcard; from the request's
//! `RequestInfo`, or read off the path when it did not parse), `user` (empty when the
//! request was not authenticated), `verb` (the HTTP method, as upstream), `uri` (path and
//! query), `status`, `latency_ms` (until the response head: for a watch or a streamed list
//! that is when the stream started), `user_agent`, `src_ip` (the client's address and port,
//! from a [`Peer`] the connection adds to requests while 4xx or all requests are logged,
//! [`wants_peer`]; empty otherwise, so the default verbosity adds nothing per request).
//!
//! Cost: a disabled line costs one check of the target's cached interest; the fields are
//! computed only for a line that is written.
//!
//! [`ApiError`]: kplane_registry::error::ApiError
//! [`StatusResponse::into_response`]: super::error::StatusResponse::into_response

use std::time::Instant;

use axum::http::{HeaderValue, Method, Uri};
use axum::response::Response;
use kplane_types::RequestInfo;

/// The tracing target of the request log.
pub const TARGET: &str = "kplane_apiserver::httplog";

/// Why a response is a 5xx: put in the response's extensions where the error becomes the
/// response, read (and logged) once by [`log`].
#[derive(Clone, Debug)]
pub struct ErrorCause(pub String);

/// The client's address, in a request's extensions (see [`wants_peer`]).
#[derive(Clone, Copy, Debug)]
pub struct Peer(pub std::net::SocketAddr);

/// Whether the connection should add a [`Peer`] to its requests: only when lines other
/// than 5xx are written, so that the default verbosity costs no allocation per request.
pub fn wants_peer() -> bool {
    tracing::enabled!(target: TARGET, tracing::Level::INFO)
}

/// What is known of a request before it is handled, kept for its log line. Cloning the
/// method, URI and User-Agent only bumps reference counts.
#[derive(Clone, Debug)]
pub struct RequestStart {
    started: Instant,
    method: Method,
    uri: Uri,
    user_agent: Option<HeaderValue>,
    peer: Option<std::net::SocketAddr>,
}

impl RequestStart {
    pub fn new<B>(req: &axum::http::Request<B>) -> Self {
        RequestStart {
            started: Instant::now(),
            method: req.method().clone(),
            uri: req.uri().clone(),
            user_agent: req.headers().get(axum::http::header::USER_AGENT).cloned(),
            peer: req.extensions().get::<Peer>().map(|p| p.0),
        }
    }

    /// When the request arrived.
    pub fn started(&self) -> Instant {
        self.started
    }
}

/// The logical cluster a path addresses, without parsing or allocating: `root` when the
/// path has no `/clusters/<name>` prefix. Only for a request whose path did not parse (an
/// invalid cluster name): every other one has its cluster in its `RequestInfo`.
pub fn cluster_of(path: &str) -> &str {
    match path.strip_prefix("/clusters/") {
        Some(after) => after.split('/').next().unwrap_or(after),
        None => "root",
    }
}

/// Writes the line of a finished request (at the level its status calls for, when enabled):
/// `info` is the request's attributes (absent when its path did not parse), `user` the
/// authenticated user's name.
pub fn log(start: &RequestStart, info: Option<&RequestInfo>, user: Option<&str>, resp: &Response) {
    let status = resp.status().as_u16();
    macro_rules! emit {
        ($level:expr, $($extra:tt)*) => {
            tracing::event!(
                target: TARGET,
                $level,
                cluster = %info.map_or_else(|| cluster_of(start.uri.path()), |i| i.cluster.as_str()),
                user = %user.unwrap_or(""),
                verb = %start.method,
                uri = %start
                    .uri
                    .path_and_query()
                    .map_or(start.uri.path(), |p| p.as_str()),
                status,
                latency_ms = latency_ms(start.started),
                user_agent = start
                    .user_agent
                    .as_ref()
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or(""),
                src_ip = %PeerField(start.peer),
                $($extra)*
            )
        };
    }
    if status >= 500 {
        let cause = resp
            .extensions()
            .get::<ErrorCause>()
            .map_or("", |c| c.0.as_str());
        emit!(tracing::Level::ERROR, error = %cause, "HTTP");
    } else if status >= 400 {
        emit!(tracing::Level::INFO, "HTTP");
    } else {
        emit!(tracing::Level::DEBUG, "HTTP");
    }
}

/// Displays a known peer as `ip:port`, an unknown one as nothing.
struct PeerField(Option<std::net::SocketAddr>);

impl std::fmt::Display for PeerField {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(p) => write!(f, "{p}"),
            None => Ok(()),
        }
    }
}

/// Milliseconds since `started`, to the microsecond.
fn latency_ms(started: Instant) -> f64 {
    // Microseconds of a request fit an f64 exactly.
    #[allow(clippy::cast_precision_loss)]
    let us = started.elapsed().as_micros() as f64;
    us / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::error::StatusResponse;
    use axum::response::IntoResponse;
    use kplane_registry::error::ApiError;
    use std::sync::{Arc, Mutex};
    use tracing_subscriber::fmt::MakeWriter;

    /// Collects what a subscriber writes.
    #[derive(Clone, Default)]
    struct Captured(Arc<Mutex<Vec<u8>>>);

    impl std::io::Write for Captured {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            if let Ok(mut v) = self.0.lock() {
                v.extend_from_slice(buf);
            }
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Captured {
        type Writer = Captured;
        fn make_writer(&'a self) -> Self::Writer {
            self.clone()
        }
    }

    /// The JSON lines written while `f` runs with the request log at `directive`.
    fn capture(directive: &str, f: impl FnOnce()) -> Vec<serde_json::Value> {
        let out = Captured::default();
        let subscriber = tracing_subscriber::fmt()
            .json()
            .flatten_event(true)
            .with_env_filter(tracing_subscriber::EnvFilter::new(directive))
            .with_writer(out.clone())
            .finish();
        tracing::subscriber::with_default(subscriber, f);
        let bytes = out.0.lock().map(|v| v.clone()).unwrap_or_default();
        String::from_utf8(bytes)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    }

    fn request(path: &str) -> RequestStart {
        let mut req = axum::http::Request::builder()
            .method("POST")
            .uri(path)
            .header("user-agent", "kubectl/v1.32.0 (linux/amd64)")
            .body(())
            .unwrap();
        req.extensions_mut()
            .insert(Peer("127.0.0.1:40000".parse().unwrap()));
        RequestStart::new(&req)
    }

    /// The attributes of the request `start` describes.
    fn info(start: &RequestStart) -> RequestInfo {
        let target = crate::http::request_info::parse(start.uri.path()).unwrap();
        crate::http::request_info::request_info(&start.method, &target, start.uri.query())
    }

    #[test]
    fn a_5xx_is_logged_once_with_its_cause_and_the_request() {
        // An HTTP/2 request's URI has a scheme and authority: only path and query are logged.
        let start = request(
            "https://127.0.0.1:6443/clusters/root:acme/api/v1/namespaces/a/configmaps?dryRun=All",
        );
        let resp = ApiError::internal("storage: disk full").into_response();
        let lines = capture(&format!("{TARGET}=error"), || {
            log(&start, Some(&info(&start)), Some("kplane-admin"), &resp)
        });
        assert_eq!(lines.len(), 1, "{lines:?}");
        let l = &lines[0];
        assert_eq!(l["level"], "ERROR");
        assert_eq!(l["message"], "HTTP");
        assert_eq!(l["status"], 500);
        assert_eq!(l["cluster"], "root:acme");
        assert_eq!(l["user"], "kplane-admin");
        assert_eq!(l["verb"], "POST");
        assert_eq!(
            l["uri"],
            "/clusters/root:acme/api/v1/namespaces/a/configmaps?dryRun=All"
        );
        assert_eq!(l["user_agent"], "kubectl/v1.32.0 (linux/amd64)");
        assert_eq!(l["src_ip"], "127.0.0.1:40000");
        assert!(l["latency_ms"].is_f64(), "{l}");
        let error = l["error"].as_str().unwrap();
        assert!(error.contains("storage: disk full"), "{error}");
    }

    #[test]
    fn the_level_follows_the_status() {
        let start = request("/api/v1/namespaces");
        let levels = |directive: &str| -> Vec<String> {
            let mut out = vec![];
            for resp in [
                ApiError::internal("boom").into_response(),
                ApiError::not_found_path().into_response(),
                axum::http::StatusCode::OK.into_response(),
            ] {
                for l in capture(directive, || log(&start, None, None, &resp)) {
                    out.push(format!("{} {}", l["level"].as_str().unwrap(), l["status"]));
                }
            }
            out
        };
        assert_eq!(levels(&format!("{TARGET}=error")), ["ERROR 500"]);
        assert_eq!(levels(&format!("{TARGET}=info")), ["ERROR 500", "INFO 404"]);
        assert_eq!(
            levels(&format!("{TARGET}=debug")),
            ["ERROR 500", "INFO 404", "DEBUG 200"]
        );
        assert!(levels("warn,kplane=info,kplane_apiserver::httplog=off").is_empty());
    }

    #[test]
    fn a_4xx_carries_no_error_field() {
        let start = request("/api/v1/namespaces/x");
        let resp = ApiError::not_found_path().into_response();
        let lines = capture(&format!("{TARGET}=info"), || {
            log(&start, Some(&info(&start)), None, &resp)
        });
        assert_eq!(lines.len(), 1);
        assert!(lines[0].get("error").is_none(), "{}", lines[0]);
        assert_eq!(lines[0]["user"], "");
        assert_eq!(lines[0]["cluster"], "root");
    }

    #[test]
    fn the_cluster_comes_from_the_request_info_or_else_the_path() {
        let start = request("/clusters/*/api/v1/configmaps");
        let resp = ApiError::not_found_path().into_response();
        let lines = capture(&format!("{TARGET}=info"), || {
            log(&start, Some(&info(&start)), None, &resp)
        });
        assert_eq!(lines[0]["cluster"], "*");
        // An invalid cluster name has no RequestInfo (the request is a 400).
        let start = request("/clusters/Bad_Name/api");
        let lines = capture(&format!("{TARGET}=info"), || log(&start, None, None, &resp));
        assert_eq!(lines[0]["cluster"], "Bad_Name");
    }

    #[test]
    fn the_peer_is_only_wanted_when_more_than_5xx_is_logged() {
        for (directive, wanted) in [
            (format!("warn,kplane=info,{TARGET}=error"), false),
            (format!("{TARGET}=info"), true),
            (format!("{TARGET}=debug"), true),
        ] {
            let subscriber = tracing_subscriber::fmt()
                .with_env_filter(tracing_subscriber::EnvFilter::new(&directive))
                .with_writer(std::io::sink)
                .finish();
            let got = tracing::subscriber::with_default(subscriber, wants_peer);
            assert_eq!(got, wanted, "{directive}");
        }
    }

    #[test]
    fn cluster_of_paths() {
        assert_eq!(cluster_of("/api/v1/namespaces"), "root");
        assert_eq!(cluster_of("/clusters/root:a:b/api"), "root:a:b");
        assert_eq!(cluster_of("/clusters/*/api/v1/configmaps"), "*");
        assert_eq!(cluster_of("/clusters/root"), "root");
    }
}
