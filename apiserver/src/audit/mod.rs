//! The audit log: Kubernetes' audit events (`audit.k8s.io/v1` `Event`, one JSON line each)
//! for the requests an audit policy ([`policy`], `--audit-policy-file`) selects, written by
//! a [`sink`] that never makes a request wait (`--audit-log-path` and rotation flags).
//!
//! A request's [`Trail`] is started when it arrives (audit ID, time, URI, client), the
//! policy is evaluated once it is authenticated (with the authenticated user, before
//! impersonation, as kube-apiserver does) and `RequestReceived` is written; the trail
//! then collects the impersonated user and the authorization decision, and the response
//! ends it: `ResponseComplete`, or for a long-running request (watch, logs, exec...)
//! `ResponseStarted` when the response head goes out and `ResponseComplete` when its body
//! ends. A request that fails authentication gets one `ResponseStarted` event with its 401,
//! as upstream. Every event carries the logical cluster as the `kplane.io/cluster`
//! annotation. No policy file: no audit at all (kube-apiserver's default).

pub mod event;
pub mod policy;
pub mod sink;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Request};
use axum::response::Response;
use kplane_types::{RequestInfo, UserInfo, Verb};
use serde_json::Value;

use event::{Event, ObjectRef, ResponseStatus, User};
use policy::{Attributes, Decision, Level, Policy, Stage};

/// The annotation naming a request's logical cluster.
pub const CLUSTER_ANNOTATION: &str = "kplane.io/cluster";
/// Upstream's annotations of the authorization decision and its reason.
pub const DECISION_ANNOTATION: &str = "authorization.k8s.io/decision";
pub const REASON_ANNOTATION: &str = "authorization.k8s.io/reason";

/// What an event without objects counts for against the queue's byte bound (an estimate
/// of its size).
const EVENT_WEIGHT: usize = 1024;

/// The largest request or response body copied into an event (larger ones are left out).
const MAX_OBJECT_BYTES: usize = super::http::negotiation::MAX_BODY_BYTES;

/// The `Status` body of an error response, which the response carries in its extensions
/// for the audit log (`responseStatus` of a failure).
#[derive(Clone, Debug)]
pub struct ErrorStatus(pub Arc<Value>);

/// The audit policy and the log it writes to.
#[derive(Debug)]
pub struct Auditor {
    policy: Policy,
    sink: sink::Sink,
}

impl Auditor {
    pub fn new(policy: Policy, sink: sink::Sink) -> Self {
        Auditor { policy, sink }
    }

    /// Reads the policy file and opens the log.
    pub fn from_files(policy_file: &std::path::Path, log: sink::LogConfig) -> Result<Self, String> {
        let text = std::fs::read_to_string(policy_file)
            .map_err(|e| format!("reading {}: {e}", policy_file.display()))?;
        let policy = Policy::parse(&text).map_err(|e| format!("{}: {e}", policy_file.display()))?;
        let log_path = log.path.clone();
        let sink = sink::Sink::start(log)
            .map_err(|e| format!("opening the audit log {}: {e}", log_path.display()))?;
        Ok(Auditor::new(policy, sink))
    }

    /// Stops auditing and waits until the queued events are written.
    pub fn close(self) {
        self.sink.close();
    }

    /// Starts the trail of a request that just arrived.
    pub fn begin<B>(self: &Arc<Self>, req: &Request<B>, peer: Option<std::net::IpAddr>) -> Trail {
        let uri = req
            .uri()
            .path_and_query()
            .map_or_else(|| req.uri().path().to_string(), |p| p.as_str().to_string());
        Trail {
            auditor: self.clone(),
            id: uuid::Uuid::new_v4().to_string(),
            received: chrono::Utc::now(),
            uri,
            source_ips: source_ips(req.headers(), peer),
            user_agent: req
                .headers()
                .get(axum::http::header::USER_AGENT)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string(),
            decision: None,
            user: None,
            impersonated: None,
            annotations: BTreeMap::new(),
            request_object: None,
            object_meta: None,
            request_bytes: 0,
        }
    }

    /// `apiserver_audit_event_total` and `apiserver_audit_error_total` in the text format.
    pub fn render_metrics(&self, out: &mut String) {
        let c = &self.sink.counters;
        let _ = writeln!(
            out,
            "# HELP apiserver_audit_event_total Counter of audit events generated and sent to the audit backend.\n# TYPE apiserver_audit_event_total counter\napiserver_audit_event_total {}",
            c.events.load(Ordering::Relaxed)
        );
        let _ = writeln!(
            out,
            "# HELP apiserver_audit_error_total Counter of audit events that failed to be audited properly (dropped when the queue was full, or not written).\n# TYPE apiserver_audit_error_total counter\napiserver_audit_error_total{{plugin=\"log\"}} {}",
            c.errors.load(Ordering::Relaxed)
        );
    }
}

/// kube-apiserver's source IPs: the `X-Forwarded-For` list, then `X-Real-Ip`, then the
/// connection's address, without repeats.
fn source_ips(headers: &HeaderMap, peer: Option<std::net::IpAddr>) -> Vec<String> {
    let mut ips: Vec<String> = Vec::new();
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok());
    if let Some(xff) = header("x-forwarded-for") {
        for part in xff.split(',') {
            if let Ok(ip) = part.trim().parse::<std::net::IpAddr>() {
                ips.push(ip.to_string());
            }
        }
    }
    if let Some(ip) = header("x-real-ip").and_then(|v| v.trim().parse::<std::net::IpAddr>().ok()) {
        let ip = ip.to_string();
        if !ips.contains(&ip) {
            ips.push(ip);
        }
    }
    if let Some(ip) = peer.map(|p| p.to_string()) {
        if !ips.contains(&ip) {
            ips.push(ip);
        }
    }
    ips
}

/// What is known of one audited request so far.
#[derive(Debug)]
pub struct Trail {
    auditor: Arc<Auditor>,
    id: String,
    received: chrono::DateTime<chrono::Utc>,
    uri: String,
    source_ips: Vec<String>,
    user_agent: String,
    /// The policy's answer, once the request is authenticated.
    decision: Option<Decision>,
    user: Option<User>,
    impersonated: Option<User>,
    annotations: BTreeMap<String, String>,
    request_object: Option<Value>,
    /// The metadata of the request's object (create, update), completing `objectRef`.
    object_meta: Option<event::ObjectMeta>,
    /// The size of the request's body, when it is recorded.
    request_bytes: usize,
}

impl Trail {
    /// The audit ID (also the response's `Audit-Id` header).
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The level the policy chose (`None` before authentication).
    pub fn level(&self) -> Level {
        self.decision.as_ref().map_or(Level::None, |d| d.level)
    }

    /// The request is authenticated as `user`: evaluates the policy and writes
    /// `RequestReceived`.
    pub fn authenticated(&mut self, user: &UserInfo, info: &RequestInfo) {
        let decision = self.auditor.policy.evaluate(&Attributes {
            user: Some(user),
            request: info,
        });
        self.user = Some(User::from(user));
        self.decision = Some(decision);
        self.emit(Stage::RequestReceived, info, None, None);
    }

    /// The request acts as `user` (impersonation).
    pub fn impersonating(&mut self, user: &UserInfo) {
        self.impersonated = Some(User::from(user));
    }

    /// The annotations admission added (admission policies and webhooks), recorded at
    /// `Metadata` level and above as upstream's `Attributes.AddAnnotation` does; the
    /// authorization annotations keep theirs.
    pub fn admission_annotations(&mut self, annotations: BTreeMap<String, String>) {
        if self.level() == Level::None {
            return;
        }
        for (k, v) in annotations {
            self.annotations.entry(k).or_insert(v);
        }
    }

    /// Whether the request is audited at the `Request` level or above (annotations
    /// added with that level are kept only then).
    pub fn at_request_level(&self) -> bool {
        self.level() >= Level::Request
    }

    /// The authorizers' decision (`allow` or `forbid`) and reason.
    pub fn authorized(&mut self, allowed: bool, reason: &str) {
        if self.level() == Level::None {
            return;
        }
        self.annotations.insert(
            DECISION_ANNOTATION.into(),
            if allowed { "allow" } else { "forbid" }.into(),
        );
        self.annotations
            .insert(REASON_ANNOTATION.into(), reason.to_string());
    }

    /// Whether the request's body should be read: at `Request` level and above for
    /// `requestObject`; at `Metadata` for a create or update, whose object completes the
    /// `objectRef` (name, namespace, uid, resourceVersion), as upstream.
    pub fn wants_request_body(&self, info: &RequestInfo) -> bool {
        match self.level() {
            Level::None => false,
            Level::Metadata => matches!(info.verb, Verb::Create | Verb::Update),
            Level::Request | Level::RequestResponse => true,
        }
    }

    /// Takes the request's object (its body of `bytes` bytes, decoded): its metadata
    /// completes `objectRef` and, at `Request` level and above, it is the `requestObject`.
    pub fn request_object(&mut self, mut v: Value, bytes: usize) {
        self.request_bytes = bytes;
        self.object_meta = v
            .get("metadata")
            .and_then(|m| serde_json::from_value(m.clone()).ok());
        if self.level() < Level::Request {
            return;
        }
        if self
            .decision
            .as_ref()
            .is_some_and(|d| d.omit_managed_fields)
        {
            event::strip_managed_fields(&mut v);
        }
        self.request_object = Some(v);
    }

    /// The handler panicked: writes the `Panic` event (a 500 with upstream's message)
    /// instead of the response's.
    pub fn panicked(mut self, info: &RequestInfo, message: &str) {
        if self.decision.is_none() {
            self.decision = Some(self.auditor.policy.evaluate(&Attributes {
                user: None,
                request: info,
            }));
        }
        let status = ResponseStatus {
            status: Some("Failure".into()),
            reason: Some("InternalError".into()),
            message: Some(format!("APIServer panic'd: {message}")),
            code: 500,
            ..Default::default()
        };
        self.emit(Stage::Panic, info, Some(status), None);
    }

    /// The response is ready: writes `ResponseComplete`, or for a long-running request
    /// `ResponseStarted` now and `ResponseComplete` when its body ends; a request that was
    /// never authenticated (a 401) gets one `ResponseStarted`. Adds the `Audit-Id` header.
    pub async fn finish(mut self, info: &RequestInfo, mut resp: Response) -> Response {
        if let Ok(v) = HeaderValue::from_str(&self.id) {
            resp.headers_mut().insert("audit-id", v);
        }
        if self.decision.is_none() {
            // Authentication failed: the policy sees no user; one ResponseStarted event.
            self.decision = Some(self.auditor.policy.evaluate(&Attributes {
                user: None,
                request: info,
            }));
            let status = failure_status(&resp);
            self.emit(Stage::ResponseStarted, info, Some(status), None);
            return resp;
        }
        if self.level() == Level::None {
            return resp;
        }
        let status = failure_status(&resp);
        if crate::http::request_info::is_long_running(info) {
            self.emit(Stage::ResponseStarted, info, Some(status.clone()), None);
            let (parts, body) = resp.into_parts();
            let guard = CompleteOnDrop {
                trail: Some(self),
                info: info.clone(),
                status,
            };
            // The closure owns the guard: it goes when the body does.
            let body = Body::new(http_body_util::BodyExt::map_frame(body, move |frame| {
                let _ = &guard;
                frame
            }));
            return Response::from_parts(parts, body);
        }
        let mut response_object = None;
        let bounded = axum::body::HttpBody::size_hint(resp.body())
            .upper()
            .is_some_and(|n| n <= MAX_OBJECT_BYTES as u64);
        if self.level() >= Level::RequestResponse && bounded && is_json(resp.headers()) {
            let (parts, body) = resp.into_parts();
            match axum::body::to_bytes(body, MAX_OBJECT_BYTES).await {
                Ok(bytes) => {
                    if let Ok(mut v) = serde_json::from_slice::<Value>(&bytes) {
                        if self
                            .decision
                            .as_ref()
                            .is_some_and(|d| d.omit_managed_fields)
                        {
                            event::strip_managed_fields(&mut v);
                        }
                        response_object = Some((v, bytes.len()));
                    }
                    resp = Response::from_parts(parts, Body::from(bytes));
                }
                Err(e) => {
                    // Too large or broken: the client gets the same error as the log.
                    tracing::warn!(error = %e, "audit: reading the response body");
                    drop(parts);
                    resp = axum::response::IntoResponse::into_response(
                        axum::http::StatusCode::INTERNAL_SERVER_ERROR,
                    );
                }
            }
        }
        self.emit(Stage::ResponseComplete, info, Some(status), response_object);
        resp
    }

    /// Writes the event of `stage` when the policy asks for it.
    fn emit(
        &mut self,
        stage: Stage,
        info: &RequestInfo,
        status: Option<ResponseStatus>,
        response_object: Option<(Value, usize)>,
    ) {
        let Some(d) = &self.decision else { return };
        if !d.records(stage) {
            return;
        }
        let level = d.level;
        let mut annotations = self.annotations.clone();
        annotations.insert(CLUSTER_ANNOTATION.into(), info.cluster.as_str().to_string());
        let with_request = level >= Level::Request && stage != Stage::RequestReceived;
        let with_response = level >= Level::RequestResponse;
        let weight = EVENT_WEIGHT
            + if with_request { self.request_bytes } else { 0 }
            + match &response_object {
                Some((_, n)) if with_response => *n,
                _ => 0,
            };
        let event = Event {
            weight,
            kind: "Event",
            api_version: "audit.k8s.io/v1",
            level: level.as_str(),
            audit_id: self.id.clone(),
            stage: stage.as_str(),
            request_uri: self.uri.clone(),
            verb: info.verb.as_str().to_string(),
            user: self.user.clone().unwrap_or_default(),
            impersonated_user: self.impersonated.clone(),
            source_ips: self.source_ips.clone(),
            user_agent: self.user_agent.clone(),
            object_ref: ObjectRef::of(info).map(|mut r| {
                if stage != Stage::RequestReceived {
                    if let Some(m) = &self.object_meta {
                        r.complete(m);
                    }
                }
                r
            }),
            response_status: status,
            // The body is read after RequestReceived, as upstream decodes it.
            request_object: with_request.then(|| self.request_object.clone()).flatten(),
            response_object: response_object.filter(|_| with_response).map(|(v, _)| v),
            request_received_timestamp: event::timestamp(self.received),
            stage_timestamp: event::timestamp(chrono::Utc::now()),
            annotations,
        };
        self.auditor.sink.send(event);
    }
}

/// The `responseStatus` of a response: its code and, for a failure, its Status.
fn failure_status(resp: &Response) -> ResponseStatus {
    let code = resp.status().as_u16();
    let status = resp.extensions().get::<ErrorStatus>().map(|s| s.0.clone());
    ResponseStatus::new(code, if code >= 400 { status.as_deref() } else { None })
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"))
}

/// Reads a request's body into `trail` (`requestObject`) and hands back the request with
/// the same body. Only a body of a declared length within the server's limit is read (one
/// that is not is left to the handler, which refuses it as it would anyway).
pub async fn keep_request_body(trail: &mut Trail, req: Request<Body>) -> Request<Body> {
    let declared = req
        .headers()
        .get(axum::http::header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if !declared.is_some_and(|n| n > 0 && n <= MAX_OBJECT_BYTES) {
        return req;
    }
    let content_type = req
        .headers()
        .get(axum::http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let protobuf = content_type.starts_with("application/vnd.kubernetes.protobuf");
    let json = content_type.contains("json");
    if !json && !protobuf {
        return req;
    }
    let (parts, body) = req.into_parts();
    match axum::body::to_bytes(body, MAX_OBJECT_BYTES).await {
        Ok(bytes) => {
            let object = if protobuf {
                kplane_protobuf::decode(&bytes).ok()
            } else {
                serde_json::from_slice::<Value>(&bytes).ok()
            };
            if let Some(v) = object {
                trail.request_object(v, bytes.len());
            }
            Request::from_parts(parts, Body::from(bytes))
        }
        // The body broke off: the handler sees an empty one and refuses it.
        Err(_) => Request::from_parts(parts, Body::empty()),
    }
}

/// Writes a long-running request's `ResponseComplete` when its body is done (or dropped:
/// the client went away).
struct CompleteOnDrop {
    trail: Option<Trail>,
    info: RequestInfo,
    status: ResponseStatus,
}

impl Drop for CompleteOnDrop {
    fn drop(&mut self) {
        if let Some(mut t) = self.trail.take() {
            let status = std::mem::take(&mut self.status);
            t.emit(Stage::ResponseComplete, &self.info, Some(status), None);
        }
    }
}

#[cfg(test)]
mod tests;
