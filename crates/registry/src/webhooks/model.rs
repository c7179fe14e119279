//! A webhook as the dispatcher uses it: parsed once from its stored configuration (when a
//! cluster's entry is built, `cache.rs`), with its selectors and match conditions
//! compiled, so a request only compares strings and labels and evaluates CEL.

use std::sync::Arc;
use std::time::Duration;

use crate::json_map::strings;
use kplane_schema::policy::{self, Expression};
use kplane_types::labels::LabelSelector;
use serde_json::Value;

/// One rule of a webhook (`RuleWithOperations`, defaulted).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Rule {
    pub operations: Vec<String>,
    pub api_groups: Vec<String>,
    pub api_versions: Vec<String>,
    /// `res`, `res/sub`, `*`, `*/sub`, `res/*`, `*/*`.
    pub resources: Vec<String>,
    /// `*`, `Cluster` or `Namespaced`.
    pub scope: String,
}

/// A `service` reference of a client configuration.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ServiceRef {
    pub namespace: String,
    pub name: String,
    pub path: String,
    pub port: u16,
}

/// Where and how a webhook is called (`WebhookClientConfig`).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClientConfig {
    /// `url`, when given.
    pub url: Option<String>,
    /// `service`, when given instead.
    pub service: Option<ServiceRef>,
    /// `caBundle`, decoded (PEM); empty: the system's roots.
    pub ca_bundle: Vec<u8>,
}

impl ClientConfig {
    /// The URL the request goes to, as client-go prints it in errors (`Post "<url>"`):
    /// a service is addressed as `https://<name>.<namespace>.svc:<port><path>`; the
    /// `timeout` query parameter client-go adds is included.
    pub fn display_url(&self, timeout: Duration) -> String {
        let base = match (&self.url, &self.service) {
            (Some(u), _) => u.clone(),
            (None, Some(s)) => format!(
                "https://{}.{}.svc:{}{}",
                s.name, s.namespace, s.port, s.path
            ),
            (None, None) => String::new(),
        };
        format!("{base}?timeout={}s", timeout.as_secs())
    }
}

/// One webhook of a configuration.
#[derive(Debug)]
pub struct Webhook {
    pub name: String,
    /// The configuration's name.
    pub configuration: String,
    /// Unique among the cluster's webhooks (`<configuration>/<index>`), for reinvocation.
    pub uid: String,
    pub rules: Vec<Rule>,
    /// `failurePolicy: Ignore`.
    pub ignore_failures: bool,
    /// `matchPolicy: Exact`.
    pub exact: bool,
    pub namespace_selector: LabelSelector,
    pub object_selector: LabelSelector,
    /// `sideEffects` is `None` or `NoneOnDryRun` (may be called for dry-run requests).
    pub dry_run_safe: bool,
    pub timeout: Duration,
    /// The AdmissionReview version to send (`v1` or `v1beta1`, the first known listed),
    /// `None` when none is known.
    pub review_version: Option<&'static str>,
    pub client: Arc<ClientConfig>,
    /// `reinvocationPolicy: IfNeeded` (mutating webhooks).
    pub reinvoke: bool,
    /// `matchConditions[].expression`, in order, compiled (an `Err` is the compiler's
    /// message: evaluating it is an error, as upstream's stored compilation errors are).
    pub match_conditions: Vec<Result<Expression, String>>,
}

/// A selector as stored (defaulted to `{}`); one that does not compile selects nothing,
/// as validation keeps such selectors out.
fn selector(v: Option<&Value>) -> LabelSelector {
    match v {
        None | Some(Value::Null) => LabelSelector::everything(),
        Some(s) => {
            LabelSelector::from_label_selector_json(s).unwrap_or_else(|_| LabelSelector::nothing())
        }
    }
}

/// A stored `clientConfig` (`WebhookClientConfig`; also a CRD's conversion webhook's):
/// `caBundle` decoded, a service's port defaulted to 443.
pub(crate) fn client_config(cc: Option<&Value>) -> ClientConfig {
    let cc = cc.unwrap_or(&Value::Null);
    let ca_bundle = cc
        .get("caBundle")
        .and_then(Value::as_str)
        .and_then(|b| {
            use base64::Engine as _;
            base64::engine::general_purpose::STANDARD.decode(b).ok()
        })
        .unwrap_or_default();
    let service = cc.get("service").filter(|s| s.is_object()).map(|s| {
        let f = |k: &str| s.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        ServiceRef {
            namespace: f("namespace"),
            name: f("name"),
            path: f("path"),
            port: s
                .get("port")
                .and_then(Value::as_u64)
                .and_then(|p| u16::try_from(p).ok())
                .unwrap_or(443),
        }
    });
    ClientConfig {
        url: cc.get("url").and_then(Value::as_str).map(str::to_string),
        service,
        ca_bundle,
    }
}

/// The webhooks of a stored configuration, in order.
pub fn parse_configuration(obj: &Value) -> Vec<Webhook> {
    let configuration = obj
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let hooks = obj
        .get("webhooks")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice);
    hooks
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let s = |k: &str| h.get(k).and_then(Value::as_str).unwrap_or("");
            let rules = h
                .get("rules")
                .and_then(Value::as_array)
                .map_or(&[][..], Vec::as_slice)
                .iter()
                .map(|r| Rule {
                    operations: strings(r.get("operations")),
                    api_groups: strings(r.get("apiGroups")),
                    api_versions: strings(r.get("apiVersions")),
                    resources: strings(r.get("resources")),
                    scope: r
                        .get("scope")
                        .and_then(Value::as_str)
                        .unwrap_or("*")
                        .to_string(),
                })
                .collect();
            let versions = strings(h.get("admissionReviewVersions"));
            Webhook {
                name: s("name").to_string(),
                configuration: configuration.clone(),
                uid: format!("{configuration}/{i}"),
                rules,
                ignore_failures: s("failurePolicy") == "Ignore",
                exact: s("matchPolicy") == "Exact",
                namespace_selector: selector(h.get("namespaceSelector")),
                object_selector: selector(h.get("objectSelector")),
                dry_run_safe: matches!(s("sideEffects"), "None" | "NoneOnDryRun"),
                timeout: Duration::from_secs(
                    h.get("timeoutSeconds")
                        .and_then(Value::as_u64)
                        .unwrap_or(10)
                        .clamp(1, 30),
                ),
                review_version: versions.iter().find_map(|v| match v.as_str() {
                    "v1" => Some("v1"),
                    "v1beta1" => Some("v1beta1"),
                    _ => None,
                }),
                client: Arc::new(client_config(h.get("clientConfig"))),
                reinvoke: s("reinvocationPolicy") == "IfNeeded",
                match_conditions: h
                    .get("matchConditions")
                    .and_then(Value::as_array)
                    .map_or(&[][..], Vec::as_slice)
                    .iter()
                    .map(|c| {
                        let src = c.get("expression").and_then(Value::as_str).unwrap_or("");
                        policy::compile_condition(src, false)
                    })
                    .collect(),
            }
        })
        .collect()
}
