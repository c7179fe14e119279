//! How a webhook is reached ([`WebhookTransport`]): the one call the registry makes out
//! of the process, implemented by the server (HTTPS, service resolution) and by tests.

use std::fmt;
use std::time::Duration;

use crate::webhooks::model::ClientConfig;

/// What a webhook's server answered: the HTTP status code and the body.
#[derive(Debug)]
pub struct TransportResponse {
    pub status: u16,
    pub body: Vec<u8>,
}

/// How a webhook is reached: one HTTPS POST of an AdmissionReview.
#[async_trait::async_trait]
pub trait WebhookTransport: Send + Sync + fmt::Debug {
    /// POSTs `body` (JSON) to `client`'s endpoint (its `url`, or its `service` as the
    /// server resolves services), trusting `client.ca_bundle`, with client-go's
    /// `?timeout=<timeout>s` query. The error is the message of a transport failure as Go
    /// words it after `Post "<url>": ` (`dial tcp 127.0.0.1:1: connect: connection
    /// refused`, `service "x" not found`, a TLS error). The caller bounds the call with
    /// `timeout` too.
    async fn post(
        &self,
        client: &ClientConfig,
        body: Vec<u8>,
        timeout: Duration,
    ) -> Result<TransportResponse, String>;
}
