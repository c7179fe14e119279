//! A [`WebhookTransport`] for the registry's tests: each review is answered by a closure
//! (from the URL and the review sent), and every call is recorded. Helpers write webhook
//! configurations and make requesters, so that a test drives admission webhooks and CRD
//! conversion webhooks without a network.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::BoxFuture;
use kplane_types::{ClusterName, ClusterScope};
use serde_json::{json, Value};

use super::{ClientConfig, TransportResponse, WebhookTransport};
use crate::admission::{Admission, UserInfo};
use crate::options::WriteParams;
use crate::{Registry, Target};

type Handler = dyn Fn(String, Value) -> BoxFuture<'static, Result<Value, String>> + Send + Sync;

/// Answers reviews with a closure; records `(url, review)` of each call.
pub(crate) struct FakeTransport {
    handler: Box<Handler>,
    pub(crate) calls: Mutex<Vec<(String, Value)>>,
}

impl std::fmt::Debug for FakeTransport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("FakeTransport")
    }
}

impl FakeTransport {
    /// A transport whose answer to a review posted to `url` is `handler(url, review)`: the
    /// whole response body, or a transport error.
    pub(crate) fn new<F, Fut>(handler: F) -> Arc<FakeTransport>
    where
        F: Fn(String, Value) -> Fut + Send + Sync + 'static,
        Fut: std::future::Future<Output = Result<Value, String>> + Send + 'static,
    {
        Arc::new(FakeTransport {
            handler: Box::new(move |u, v| Box::pin(handler(u, v))),
            calls: Mutex::new(Vec::new()),
        })
    }

    /// The URLs called so far, in order.
    pub(crate) fn urls(&self) -> Vec<String> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .map(|(u, _)| u.clone())
            .collect()
    }

    /// The admission chain with this transport's webhooks.
    pub(crate) fn admission(self: &Arc<Self>) -> Admission {
        Admission::recommended().with_webhooks(self.clone())
    }
}

#[async_trait::async_trait]
impl WebhookTransport for FakeTransport {
    async fn post(
        &self,
        client: &ClientConfig,
        body: Vec<u8>,
        _timeout: Duration,
    ) -> Result<TransportResponse, String> {
        let url = client.url.clone().unwrap_or_default();
        let review: Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
        self.calls
            .lock()
            .unwrap()
            .push((url.clone(), review.clone()));
        let answer = (self.handler)(url, review).await?;
        Ok(TransportResponse {
            status: 200,
            body: answer.to_string().into_bytes(),
        })
    }
}

/// An AdmissionReview answer allowing `review`'s request, with a JSON patch when given.
pub(crate) fn allow(review: &Value, patch: Option<Value>) -> Value {
    use base64::Engine as _;
    let mut response = json!({"uid": review["request"]["uid"], "allowed": true});
    if let Some(p) = patch {
        response["patchType"] = json!("JSONPatch");
        response["patch"] = json!(base64::engine::general_purpose::STANDARD.encode(p.to_string()));
    }
    json!({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response})
}

/// Write parameters of a request by a user (webhooks are called only for requesters).
pub(crate) fn as_user() -> WriteParams {
    WriteParams {
        user: Some(UserInfo {
            username: "alice".into(),
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// A target of built-in `group`/`plural` in `cluster`.
pub(crate) fn target_in(
    reg: &Registry,
    cluster: &ClusterName,
    group: &str,
    plural: &str,
    ns: Option<&str>,
) -> Target {
    Target {
        cluster: ClusterScope::One(cluster.clone()),
        ..crate::testing::target(reg, group, plural, ns)
    }
}

/// Stores in `cluster` a webhook configuration of `kind` (`Mutating`/`Validating`) named
/// `name` with one webhook calling `url` for `rules`; `extra` is merged into the webhook.
pub(crate) async fn configure(
    reg: &Registry,
    cluster: &ClusterName,
    kind: &str,
    name: &str,
    url: &str,
    rules: Value,
    extra: Value,
) {
    let mut hook = json!({
        "name": format!("{name}.kplane.test"),
        "clientConfig": {"url": url},
        "rules": rules,
        "sideEffects": "None",
        "admissionReviewVersions": ["v1"],
        "timeoutSeconds": 30,
    });
    if let (Some(h), Value::Object(e)) = (hook.as_object_mut(), extra) {
        h.extend(e);
    }
    let plural = format!("{}webhookconfigurations", kind.to_lowercase());
    let t = target_in(reg, cluster, "admissionregistration.k8s.io", &plural, None);
    let obj = json!({"apiVersion": "admissionregistration.k8s.io/v1",
        "kind": format!("{kind}WebhookConfiguration"),
        "metadata": {"name": name}, "webhooks": [hook]});
    reg.create(&t, obj, &WriteParams::default()).await.unwrap();
}

/// Rules matching `resources` of `group` (all versions) on create and update.
pub(crate) fn rules(group: &str, resources: &[&str]) -> Value {
    json!([{"operations": ["CREATE", "UPDATE"], "apiGroups": [group], "apiVersions": ["*"],
            "resources": resources}])
}
