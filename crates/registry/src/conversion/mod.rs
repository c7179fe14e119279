//! CRD conversion webhooks (`spec.conversion.strategy: Webhook`), as apiextensions-apiserver's
//! `webhookConverter` calls them: the objects that are not already in the wanted version are
//! sent in one ConversionReview (a list's items in one review), and the answer is checked
//! (uid, result, count, each object's apiVersion and kind, identity, metadata other than
//! labels and annotations restored from the original).
//!
//! - `review`: the ConversionReview and the checks of its answer (pure);
//! - `paths`: the registry's conversions between a request's version and the storage
//!   version that call the webhook when a CRD has one (get, list, watch, writes);
//!   every other type keeps its synchronous [`crate::Conversion`].
//!
//! The webhook is reached through the server's [`WebhookTransport`] (the one admission
//! webhooks use: `caBundle` trust, `service` references resolved by the server), with
//! upstream's fixed 30 s timeout (`webhook.defaultRequestTimeout`). A failure is the
//! request's error: 500 with no reason and `conversion webhook for <gvk> failed: ...`.

pub(crate) mod paths;
pub mod review;
#[cfg(test)]
mod write_tests;

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;

use crate::webhooks::model::ClientConfig;
use crate::webhooks::transport::WebhookTransport;

/// Every conversion call's timeout (client-go's `?timeout=30s` too).
pub const TIMEOUT: Duration = Duration::from_secs(30);

/// A CRD's conversion webhook.
#[derive(Debug, PartialEq)]
pub struct WebhookConversion {
    pub client: Arc<ClientConfig>,
    /// The ConversionReview version sent: the first of `conversionReviewVersions` known.
    pub review_version: Option<&'static str>,
}

impl WebhookConversion {
    /// The webhook of a (defaulted) CRD, `None` unless its strategy is `Webhook`.
    pub fn of_crd(crd: &Value) -> Option<Self> {
        let conversion = crd.pointer("/spec/conversion")?;
        if conversion.get("strategy").and_then(Value::as_str) != Some("Webhook") {
            return None;
        }
        let listed: Vec<String> = conversion
            .pointer("/webhook/conversionReviewVersions")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        Some(WebhookConversion {
            client: Arc::new(crate::webhooks::model::client_config(
                conversion.pointer("/webhook/clientConfig"),
            )),
            review_version: review::review_version(&listed),
        })
    }

    /// Converts `objects` to `desired` (`<group>/<version>`): those already in it are
    /// kept, the others sent in one review. The error is the text after `conversion
    /// webhook for <gvk> ` (the caller knows the kind to name).
    pub async fn convert(
        &self,
        transport: Option<&dyn WebhookTransport>,
        objects: Vec<Value>,
        desired: &str,
    ) -> Result<Vec<Value>, String> {
        let api_version = |o: &Value| {
            o.get("apiVersion")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let to_send: Vec<usize> = (0..objects.len())
            .filter(|&i| api_version(&objects[i]) != desired)
            .collect();
        if to_send.is_empty() {
            return Ok(objects);
        }
        let sent: Vec<Value> = to_send.iter().map(|&i| objects[i].clone()).collect();
        let converted = self.call(transport, &sent, desired).await?;
        if converted.len() != sent.len() {
            return Err(format!(
                "returned {} objects, expected {}",
                converted.len(),
                sent.len()
            ));
        }
        let single = objects.len() == 1;
        let mut out = objects;
        for (n, (i, c)) in to_send.into_iter().zip(converted).enumerate() {
            let place = if single {
                review::Place::Single
            } else {
                review::Place::Listed(n)
            };
            out[i] = review::accept(&out[i], c, desired, place)?;
        }
        Ok(out)
    }

    /// One review: POSTed, answered with 2xx, decoded and checked; the converted objects.
    async fn call(
        &self,
        transport: Option<&dyn WebhookTransport>,
        objects: &[Value],
        desired: &str,
    ) -> Result<Vec<Value>, String> {
        let Some(version) = self.review_version else {
            return Err("failed: no supported conversion review versions".into());
        };
        let url = self.client.display_url(TIMEOUT);
        let Some(transport) = transport else {
            return Err(format!(
                "failed: Post {url:?}: no webhook client is configured"
            ));
        };
        let uid = uuid::Uuid::new_v4().to_string();
        let body = serde_json::to_vec(&review::request(version, &uid, desired, objects))
            .map_err(|e| format!("failed: {e}"))?;
        let sent = tokio::time::timeout(TIMEOUT, transport.post(&self.client, body, TIMEOUT));
        let resp = match sent.await {
            Err(_) => return Err(format!("failed: Post {url:?}: context deadline exceeded")),
            Ok(Err(e)) => return Err(format!("failed: Post {url:?}: {e}")),
            Ok(Ok(r)) => r,
        };
        if !(200..300).contains(&resp.status) {
            return Err(format!(
                "failed: {}",
                review::http_error(resp.status, &resp.body)
            ));
        }
        let answer: Value =
            serde_json::from_slice(&resp.body).map_err(|e| format!("failed: {e}"))?;
        review::converted_objects(version, &uid, &answer)
    }
}
