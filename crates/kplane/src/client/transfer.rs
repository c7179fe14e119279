//! Raw HTTP requests with streamed bodies, for `kplane export` and `kplane import`:
//! kube-rs's `Client` only sends bodies it holds in memory, so this builds the same
//! stack from kube-rs's pieces (its rustls connector with the kubeconfig's CA and client
//! certificate, its authentication layer for tokens and exec plugins, its impersonation
//! headers, its base-URI layer) over hyper's client with a streaming body type.

use std::io;
use std::path::Path;
use std::pin::Pin;

use anyhow::{anyhow, bail, Context as _, Result};
use bytes::Bytes;
use futures::Stream;
use http::{Method, Request, Response, StatusCode};
use http_body_util::combinators::UnsyncBoxBody;
use http_body_util::{BodyExt as _, Empty, StreamBody};
use hyper::body::{Frame, Incoming};
use kube::client::ConfigExt as _;
use serde_json::Value;
use tower::util::BoxService;
use tower::{BoxError, Service as _, ServiceBuilder, ServiceExt as _};

use super::api::chain;

/// A request body: empty, or streamed.
pub type Body = UnsyncBoxBody<Bytes, BoxError>;

/// The most of an error response read to explain it.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Sends requests to one workspace's URL with the kubeconfig's credentials.
pub struct Transfer {
    service: BoxService<Request<Body>, Response<Incoming>, BoxError>,
    /// `<base>/clusters/<path>`, for messages.
    pub url: String,
}

impl std::fmt::Debug for Transfer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Transfer").field("url", &self.url).finish()
    }
}

impl Transfer {
    /// A client for `config.cluster_url` (a workspace URL).
    pub fn new(config: &kube::Config, url: String) -> Result<Self> {
        let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
        http.enforce_http(false);
        http.set_connect_timeout(config.connect_timeout);
        let connector = config
            .rustls_https_connector_with_connector(http)
            .context("setting up TLS for the server")?;
        let client: hyper_util::client::legacy::Client<_, Body> =
            hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
                .build(connector);
        let auth = config
            .auth_layer()
            .context("setting up the kubeconfig's credentials")?;
        let service = ServiceBuilder::new()
            .option_layer(auth)
            .layer(
                config
                    .extra_headers_layer()
                    .context("the kubeconfig's impersonation settings")?,
            )
            .layer(config.base_uri_layer())
            .service(client.map_err(BoxError::from))
            .map_err(BoxError::from);
        Ok(Self {
            service: BoxService::new(service),
            url,
        })
    }

    /// Sends `method path_and_query` (relative to the workspace URL) with `body`.
    /// Answers outside 2xx are errors carrying the server's Status message.
    pub async fn send(
        &mut self,
        method: Method,
        path_and_query: &str,
        headers: &[(&str, String)],
        body: Body,
    ) -> Result<Response<Incoming>> {
        let mut req = Request::builder().method(method).uri(path_and_query);
        for (name, value) in headers {
            req = req.header(*name, value);
        }
        let req = req.body(body).context("building the request")?;
        let url = self.url.clone();
        let unreachable =
            |e: BoxError| anyhow!("cannot reach the server at {url}: {}", chain(e.as_ref()));
        let service = self.service.ready().await.map_err(unreachable)?;
        let resp = service.call(req).await.map_err(unreachable)?;
        if resp.status().is_success() {
            return Ok(resp);
        }
        Err(refusal(resp).await)
    }
}

/// No body.
pub fn empty() -> Body {
    Empty::new().map_err(BoxError::from).boxed_unsync()
}

/// The file at `path` as a streamed body, read `chunk` bytes at a time; `on_chunk` is
/// told each chunk's length (for progress).
pub async fn file_body(
    path: &Path,
    chunk: usize,
    on_chunk: impl Fn(usize) + Send + 'static,
) -> Result<Body> {
    use tokio::io::AsyncReadExt as _;
    let file = tokio::fs::File::open(path)
        .await
        .with_context(|| format!("opening {}", path.display()))?;
    let stream =
        futures::stream::try_unfold((file, on_chunk), move |(mut file, on_chunk)| async move {
            let mut buf = vec![0u8; chunk];
            let n = file.read(&mut buf).await?;
            if n == 0 {
                return Ok::<_, io::Error>(None);
            }
            buf.truncate(n);
            on_chunk(n);
            Ok(Some((Frame::data(Bytes::from(buf)), (file, on_chunk))))
        });
    let stream: Pin<Box<dyn Stream<Item = io::Result<Frame<Bytes>>> + Send>> = Box::pin(stream);
    Ok(StreamBody::new(stream)
        .map_err(BoxError::from)
        .boxed_unsync())
}

/// An answer outside 2xx: its status and the server's message, as one line.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct Refused {
    pub status: StatusCode,
    pub message: String,
}

/// Reads an error answer (a bounded part of it) into a [`Refused`].
async fn refusal(resp: Response<Incoming>) -> anyhow::Error {
    let status = resp.status();
    match read_limited(resp.into_body(), MAX_ERROR_BODY).await {
        Ok(body) => explain(status, &body).into(),
        Err(e) => anyhow!("the server answered {status} and then failed: {e:#}"),
    }
}

/// The Status's message, code and reason, or what the body says.
pub fn explain(status: StatusCode, body: &[u8]) -> Refused {
    let message = match serde_json::from_slice::<Value>(body) {
        Ok(v) if v["kind"] == "Status" => format!(
            "the server refused: {} ({} {})",
            v["message"].as_str().unwrap_or(""),
            status.as_u16(),
            v["reason"].as_str().unwrap_or("")
        ),
        _ => {
            let text = String::from_utf8_lossy(body);
            let text = text.trim();
            if text.is_empty() {
                format!("the server refused: {status}")
            } else {
                let text: String = text.chars().take(300).collect();
                format!("the server refused: {status}: {text}")
            }
        }
    };
    Refused { status, message }
}

/// The whole body, failing past `limit` bytes.
pub async fn read_limited(mut body: Incoming, limit: usize) -> Result<Vec<u8>> {
    let mut out = Vec::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.context("reading the server's answer")?;
        if let Ok(data) = frame.into_data() {
            if out.len() + data.len() > limit {
                bail!("the server's answer is longer than {limit} bytes");
            }
            out.extend_from_slice(&data);
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_quote_the_status() {
        let status = br#"{"kind":"Status","apiVersion":"v1","status":"Failure","message":"logical cluster \"root:b\" already exists and is not empty","reason":"AlreadyExists","code":409}"#;
        assert_eq!(
            explain(StatusCode::CONFLICT, status).to_string(),
            "the server refused: logical cluster \"root:b\" already exists and is not empty (409 AlreadyExists)"
        );
        assert_eq!(
            explain(StatusCode::BAD_GATEWAY, b"upstream down\n").to_string(),
            "the server refused: 502 Bad Gateway: upstream down"
        );
        assert_eq!(
            explain(StatusCode::NOT_FOUND, b"").to_string(),
            "the server refused: 404 Not Found"
        );
    }
}
