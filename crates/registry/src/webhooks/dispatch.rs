//! The two admission plugins: `MutatingAdmissionWebhook` (the last mutating plugin:
//! webhooks called one after the other, each answer's JSON patch applied before the next
//! call, `reinvocationPolicy: IfNeeded` webhooks called once more when a later webhook
//! changed the object) and `ValidatingAdmissionWebhook` (the last validating plugin,
//! after schema validation: the matching webhooks called in parallel, the first refusal
//! in webhook order answered). Messages and codes are upstream's
//! (`mutating/dispatcher.go`, `validating/dispatcher.go`, `errors/statuserror.go`,
//! `util/webhook/error.go`).

use std::collections::HashSet;
use std::sync::Arc;

use kplane_schema::policy::{self, Inputs, Matched, Values as CelValues};
use kplane_types::{ClusterName, Status, StatusReason};
use serde_json::{Map, Value};

use super::cache::{is_configuration, ClusterWebhooks};
use super::matching::{self, Request};
use super::model::Webhook;
use super::review;
use super::WebhookTransport;
use crate::admission::chain::{Attributes, MutatingAdmission, Operation, ValidatingAdmission};
use crate::catalog::{Catalog, ResourceType};
use crate::error::{ApiError, ApiResult};
use crate::Registry;

/// The mutating plugin's name (kube-apiserver's).
pub const MUTATING_PLUGIN: &str = "MutatingAdmissionWebhook";
/// The validating plugin's name (kube-apiserver's).
pub const VALIDATING_PLUGIN: &str = "ValidatingAdmissionWebhook";

/// How one webhook call failed.
#[derive(Debug)]
enum HookError {
    /// The webhook could not be called or answered nonsense (`ErrCallingWebhook`): its
    /// failure policy decides. The message follows `failed calling webhook "<name>": `.
    Calling(String),
    /// Anything else (a refusal, a dry run it does not support, a patch that does not
    /// apply): the request fails whatever the policy.
    Refused(ApiError),
}

/// What a mutating call did to the object.
type CallResult = Result<bool, HookError>;

/// Mutating webhooks (`MutatingAdmissionWebhook`).
#[derive(Debug)]
pub struct MutatingWebhooks {
    transport: Arc<dyn WebhookTransport>,
}

/// Validating webhooks (`ValidatingAdmissionWebhook`).
#[derive(Debug)]
pub struct ValidatingWebhooks {
    transport: Arc<dyn WebhookTransport>,
}

impl MutatingWebhooks {
    pub fn new(transport: Arc<dyn WebhookTransport>) -> Self {
        MutatingWebhooks { transport }
    }
}

impl ValidatingWebhooks {
    pub fn new(transport: Arc<dyn WebhookTransport>) -> Self {
        ValidatingWebhooks { transport }
    }
}

fn handles(op: Operation) -> bool {
    matches!(
        op,
        Operation::Create | Operation::Update | Operation::Delete
    )
}

/// The request as rules see it.
fn request<'a>(a: &'a Attributes<'a>) -> Request<'a> {
    let rt = a.resource;
    let is_namespace = rt.group.is_empty() && rt.plural == "namespaces";
    Request {
        operation: a.operation,
        group: &rt.group,
        version: &rt.version,
        resource: &rt.plural,
        subresource: a.subresource.unwrap_or(""),
        namespace: if is_namespace { a.name } else { a.namespace },
        is_namespace,
    }
}

/// The cluster's webhooks when the request is one webhooks see: it has a requester, and
/// it is not a write of a webhook configuration (`IsExemptAdmissionConfigurationResource`).
async fn webhooks_for(
    reg: &Registry,
    a: &Attributes<'_>,
) -> ApiResult<Option<Arc<ClusterWebhooks>>> {
    if a.user.is_none() || is_configuration(&a.resource.storage_resource) {
        return Ok(None);
    }
    let set = reg.cluster_webhooks(a.cluster).await?;
    Ok((!set.is_empty()).then_some(set))
}

/// Per-request state of matching: the catalog and the namespace's labels, each read once
/// and only when a webhook needs them.
struct Matcher<'a> {
    a: &'a Attributes<'a>,
    r: Request<'a>,
    catalog: Option<Arc<Catalog>>,
    namespace_labels: Option<Map<String, Value>>,
}

impl<'a> Matcher<'a> {
    fn new(a: &'a Attributes<'a>) -> Self {
        Matcher {
            a,
            r: request(a),
            catalog: None,
            namespace_labels: None,
        }
    }

    /// The resource `hook` is called for, or `None` when it is not called
    /// (`ShouldCallHook`); `new` is the request's object.
    async fn should_call(
        &mut self,
        reg: &Registry,
        hook: &Webhook,
        new: Option<&Value>,
    ) -> ApiResult<Option<Arc<ResourceType>>> {
        let rt = self.rt(reg).await?;
        let mut invoked = matching::matched_resource(hook, &self.r, &rt, None);
        if invoked.is_none() && !hook.exact {
            if self.catalog.is_none() {
                self.catalog = Some(reg.cluster_catalog(self.a.cluster).await?);
            }
            invoked = matching::matched_resource(hook, &self.r, &rt, self.catalog.as_deref());
        }
        let Some(invoked) = invoked else {
            return Ok(None);
        };
        if !matching::object_selector_matches(&hook.object_selector, new, self.a.old) {
            return Ok(None);
        }
        if matching::needs_namespace_labels(&hook.namespace_selector, &self.r) {
            // A Namespace's own create or update: its labels as the webhooks before this
            // one left them (never memoised); else the namespace's, read once.
            let own;
            let labels = match self.own_labels(new) {
                Some(l) => {
                    own = l;
                    &own
                }
                None => match &self.namespace_labels {
                    Some(l) => l,
                    None => {
                        let l = self.read_namespace_labels(reg).await?;
                        self.namespace_labels.insert(l)
                    }
                },
            };
            if !hook.namespace_selector.matches(labels) {
                return Ok(None);
            }
        }
        if !hook.match_conditions.is_empty()
            && !self.conditions_match(reg, hook, &invoked, new).await?
        {
            return Ok(None);
        }
        Ok(Some(invoked))
    }

    /// `hook`'s `matchConditions`, once its rules and selectors matched (`ShouldCallHook`):
    /// evaluated against the object and old object in `invoked`'s version and the request
    /// (`CreateAdmissionRequest`: the invoked kind with the request's resource), without
    /// `params` or a namespace object, with the requester's `authorizer` (`rbac::chain`).
    /// An error fails the request with 403 under
    /// `failurePolicy: Fail` (`<resource> "<name>" is forbidden: <error>`) and skips the
    /// webhook under `Ignore`.
    async fn conditions_match(
        &self,
        reg: &Registry,
        hook: &Webhook,
        invoked: &ResourceType,
        new: Option<&Value>,
    ) -> ApiResult<bool> {
        let object = match new {
            Some(o) => Some(reg.api_value(invoked, o.clone()).await?),
            None => None,
        };
        let old_object = match self.a.old {
            Some(o) => Some(reg.api_value(invoked, o.clone()).await?),
            None => None,
        };
        let request = cel_request(self.a, self.r.namespace, invoked);
        let inputs = Inputs::new(CelValues {
            object: object.as_ref(),
            old_object: old_object.as_ref(),
            request: Some(&request),
            namespace_object: None,
            params: None,
        });
        let inputs = match self.a.user {
            Some(user) => inputs.with_authorizer(
                reg.cel_authorizer(self.a.cluster, user).await,
                crate::policies::request_resource(self.a),
            ),
            None => inputs,
        };
        match policy::match_conditions(&hook.match_conditions, &inputs) {
            Matched::Yes => Ok(true),
            Matched::No => Ok(false),
            Matched::Error(why) if hook.ignore_failures => {
                tracing::debug!(webhook = %hook.name, "Failed evaluating match conditions, skipping the webhook: {why}");
                Ok(false)
            }
            Matched::Error(why) => {
                tracing::warn!(webhook = %hook.name, "Failed evaluating match conditions, failing closed: {why}");
                let rt = self.a.resource;
                Err(ApiError::from(Status::forbidden(
                    &rt.group,
                    &rt.plural,
                    self.a.name,
                    &why,
                )))
            }
        }
    }

    /// The request's resource type, shared.
    async fn rt(&mut self, reg: &Registry) -> ApiResult<Arc<ResourceType>> {
        let rt = self.a.resource;
        let found = reg
            .cluster_catalog(self.a.cluster)
            .await?
            .get(&rt.group, &rt.version, &rt.plural)
            .cloned();
        Ok(found.unwrap_or_else(|| Arc::new(rt.clone())))
    }

    /// `namespace.Matcher.GetNamespaceLabels` for a Namespace's own create and update:
    /// the labels of the object as it is now (`None` for any other request).
    fn own_labels(&self, new: Option<&Value>) -> Option<Map<String, Value>> {
        if self.r.is_namespace && self.r.subresource.is_empty() {
            if let (Operation::Create | Operation::Update, Some(obj)) = (self.a.operation, new) {
                return Some(matching::labels_of(obj));
            }
        }
        None
    }

    /// `namespace.Matcher.GetNamespaceLabels` for any other request: the stored
    /// namespace's labels (404 when it does not exist).
    async fn read_namespace_labels(&self, reg: &Registry) -> ApiResult<Map<String, Value>> {
        if let Some(ns) = self.a.new_namespace {
            return Ok(matching::labels_of(ns));
        }
        reg.namespace_labels_or_404(self.a.cluster, self.r.namespace)
            .await
    }
}

/// The `request` variable of match conditions: the review's request without `uid`,
/// `object` and `oldObject`, its `kind` the invoked one and its `resource` the request's
/// (upstream passes the versioned attributes' resource, which is the request's).
fn cel_request(a: &Attributes<'_>, namespace: &str, invoked: &ResourceType) -> Value {
    let review = review::request("", "v1", a, namespace, invoked, None, None);
    let mut request = review.get("request").cloned().unwrap_or(Value::Null);
    if let Some(m) = request.as_object_mut() {
        for f in ["uid", "object", "oldObject"] {
            m.remove(f);
        }
        let rt = a.resource;
        m.insert(
            "resource".into(),
            serde_json::json!({"group": rt.group, "version": rt.version, "resource": rt.plural}),
        );
    }
    request
}

impl Registry {
    /// The labels of namespace `ns` of `cluster`; 404 when it does not exist.
    async fn namespace_labels_or_404(
        &self,
        cluster: &ClusterName,
        ns: &str,
    ) -> ApiResult<Map<String, Value>> {
        let nst = self.namespace_type()?;
        let key = kplane_storage::Key::new(cluster.as_str(), nst.storage_resource.as_str(), "", ns);
        let Some(kv) = self.storage.get(&key).await? else {
            return Err(ApiError::from(Status::not_found("", "namespaces", ns)));
        };
        let obj: Value = serde_json::from_slice(&kv.value).map_err(|e| crate::corrupt(&e))?;
        Ok(matching::labels_of(&obj))
    }
}

/// `webhookerrors.ToStatusErr`: a refusal with the webhook's code (at least 400), reason
/// and message, the message prefixed `admission webhook "<name>" denied the request`.
fn denied(name: &str, result: Option<&Value>) -> ApiError {
    let result = result.unwrap_or(&Value::Null);
    let s = |k: &str| result.get(k).and_then(Value::as_str).unwrap_or("");
    let code = result
        .get("code")
        .and_then(Value::as_u64)
        .and_then(|c| u16::try_from(c).ok())
        .filter(|c| *c >= 400)
        .unwrap_or(400);
    let denied_by = format!("admission webhook {name:?} denied the request");
    let message = match (s("message"), s("reason")) {
        (m, _) if !m.is_empty() => format!("{denied_by}: {m}"),
        (_, r) if !r.is_empty() => format!("{denied_by}: {r}"),
        _ => format!("{denied_by} without explanation"),
    };
    let mut status = Status::new(reason_of(s("reason")), message);
    status.code = code;
    ApiError::from(status)
}

/// A `metav1.StatusReason` by its name; one kplane does not know is sent without reason.
fn reason_of(name: &str) -> StatusReason {
    use StatusReason::*;
    [
        BadRequest,
        Unauthorized,
        Forbidden,
        NotFound,
        AlreadyExists,
        Conflict,
        Gone,
        Expired,
        Invalid,
        MethodNotAllowed,
        NotAcceptable,
        UnsupportedMediaType,
        RequestEntityTooLarge,
        TooManyRequests,
        Timeout,
        InternalError,
        ServiceUnavailable,
    ]
    .into_iter()
    .find(|r| r.as_str() == name)
    .unwrap_or(Unknown)
}

/// Calls `hook` for `a` through `invoked` with the object `obj` (write form) and checks
/// the answer; returns it when the webhook allowed the request.
async fn call(
    transport: &dyn WebhookTransport,
    reg: &Registry,
    a: &Attributes<'_>,
    hook: &Webhook,
    invoked: &ResourceType,
    obj: Option<&Value>,
    mutating: bool,
) -> Result<review::Response, HookError> {
    if a.dry_run && !hook.dry_run_safe {
        return Err(HookError::Refused(ApiError::bad_request(format!(
            "admission webhook {:?} does not support dry run",
            hook.name
        ))));
    }
    let Some(version) = hook.review_version else {
        return Err(HookError::Calling(
            "could not create admission objects: webhook does not accept known AdmissionReview versions (v1, v1beta1)".into(),
        ));
    };
    let uid = uuid::Uuid::new_v4().to_string();
    let object = versioned(reg, invoked, obj).await?;
    let old_object = versioned(reg, invoked, a.old).await?;
    let namespace = request(a).namespace;
    let body = review::request(&uid, version, a, namespace, invoked, object, old_object);
    let bytes = serde_json::to_vec(&body)
        .map_err(|e| HookError::Calling(format!("could not create admission objects: {e}")))?;
    let url = hook.client.display_url(hook.timeout);
    let sent = tokio::time::timeout(
        hook.timeout,
        transport.post(&hook.client, bytes, hook.timeout),
    );
    let resp = match sent.await {
        Err(_) => {
            return Err(HookError::Calling(format!(
                "failed to call webhook: Post {url:?}: context deadline exceeded"
            )))
        }
        Ok(Err(e)) => {
            return Err(HookError::Calling(format!(
                "failed to call webhook: Post {url:?}: {e}"
            )))
        }
        Ok(Ok(r)) => r,
    };
    if !(200..300).contains(&resp.status) {
        let message = serde_json::from_slice::<Value>(&resp.body)
            .ok()
            .filter(|v| v.get("kind").and_then(Value::as_str) == Some("Status"))
            .and_then(|v| v.get("message").and_then(Value::as_str).map(str::to_string))
            .unwrap_or_else(|| {
                format!(
                    "the server responded with the status code {} but did not return more information",
                    resp.status
                )
            });
        return Err(HookError::Calling(format!(
            "failed to call webhook: {message}"
        )));
    }
    let answer: Value = serde_json::from_slice(&resp.body)
        .map_err(|e| HookError::Calling(format!("failed to call webhook: {e}")))?;
    // `response.auditAnnotations` is a `map[string]string`: another value fails the decoding.
    if let Some(m) = answer
        .pointer("/response/auditAnnotations")
        .and_then(Value::as_object)
    {
        if let Some(v) = m.values().find(|v| !v.is_string() && !v.is_null()) {
            let ty = match v {
                Value::Bool(_) => "bool",
                Value::Number(_) => "number",
                Value::Array(_) => "array",
                _ => "object",
            };
            return Err(HookError::Calling(format!(
                "failed to call webhook: json: cannot unmarshal {ty} into Go struct field AdmissionResponse.response.auditAnnotations of type string"
            )));
        }
    }
    let checked = review::verify(&uid, version, mutating, &answer)
        .map_err(|e| HookError::Calling(format!("received invalid webhook response: {e}")))?;
    if let Some(audit) = a.options.audit {
        for (k, v) in &checked.audit_annotations {
            audit.record(&format!("{}/{k}", hook.name), v);
        }
    }
    if let Some(w) = a.options.warnings {
        for text in &checked.warnings {
            w.push(text.clone());
        }
    }
    if !checked.allowed {
        return Err(HookError::Refused(denied(
            &hook.name,
            checked.result.as_ref(),
        )));
    }
    Ok(checked)
}

/// A stored object in the version the webhook is sent (a custom resource's conversion
/// webhook may be called; its failure fails the request whatever the policy).
async fn versioned(
    reg: &Registry,
    invoked: &ResourceType,
    obj: Option<&Value>,
) -> Result<Option<Value>, HookError> {
    match obj {
        None => Ok(None),
        Some(o) => reg
            .api_value(invoked, o.clone())
            .await
            .map(Some)
            .map_err(HookError::Refused),
    }
}

/// The audit annotation prefixes naming a webhook whose failed call was ignored.
const VALIDATING_FAILED_OPEN: &str = "failed-open.validating.webhook.admission.k8s.io/";
const MUTATING_FAILED_OPEN: &str = "failed-open.mutation.webhook.admission.k8s.io/";
/// Upstream's `MutationAuditAnnotationPrefix`: whether each mutating call changed the object.
const MUTATION: &str = "mutation.webhook.admission.k8s.io/";
/// Upstream's `PatchAuditAnnotationPrefix`: each applied patch (`Request` level and above).
const PATCH: &str = "patch.webhook.admission.k8s.io/";

/// Records `mutation.webhook.admission.k8s.io/round_<r>_index_<i>` for a mutating call
/// (`{"configuration","webhook","mutated"}`, as upstream's `MutationAuditAnnotation`).
fn record_mutation(a: &Attributes<'_>, hook: &Webhook, key: &str, mutated: bool) {
    #[derive(serde::Serialize)]
    struct Mutation<'a> {
        configuration: &'a str,
        webhook: &'a str,
        mutated: bool,
    }
    if let Some(audit) = a.options.audit {
        let value = Mutation {
            configuration: &hook.configuration,
            webhook: &hook.name,
            mutated,
        };
        if let Ok(v) = serde_json::to_string(&value) {
            audit.record(&format!("{MUTATION}{key}"), &v);
        }
    }
}

/// Records `patch.webhook.admission.k8s.io/round_<r>_index_<i>`: the JSON patch a mutating
/// call applied, each operation's keys in name order as Go writes its map
/// (`PatchAuditAnnotation`), kept for the `Request` audit level and above.
fn record_patch(a: &Attributes<'_>, hook: &Webhook, key: &str, patch: &Value) {
    let Some(audit) = a.options.audit else {
        return;
    };
    let ops: Vec<Value> = patch
        .as_array()
        .map(|ops| {
            ops.iter()
                .map(|op| match op.as_object() {
                    Some(m) => {
                        let sorted: std::collections::BTreeMap<&String, &Value> =
                            m.iter().collect();
                        serde_json::to_value(sorted).unwrap_or(Value::Null)
                    }
                    None => op.clone(),
                })
                .collect()
        })
        .unwrap_or_default();
    #[derive(serde::Serialize)]
    struct Patched<'a> {
        configuration: &'a str,
        webhook: &'a str,
        patch: Vec<Value>,
        #[serde(rename = "patchType")]
        patch_type: &'a str,
    }
    let value = Patched {
        configuration: &hook.configuration,
        webhook: &hook.name,
        patch: ops,
        patch_type: "JSONPatch",
    };
    let Ok(value) = serde_json::to_string(&value) else {
        return;
    };
    if let Err(e) = audit.add_at_request_level(&format!("{PATCH}{key}"), &value) {
        tracing::debug!(error = %e, "audit annotation not recorded");
    }
}

/// A failed call under the webhook's failure policy: `None` to go on (Ignore, logged, and
/// the webhook's name recorded as the audit annotation `failed_open`), else the error to
/// answer (`Internal error occurred: failed calling webhook ...`).
fn under_policy(
    hook: &Webhook,
    e: HookError,
    a: &Attributes<'_>,
    failed_open: &str,
) -> Option<ApiError> {
    match e {
        HookError::Calling(why) => {
            let msg = format!("failed calling webhook {:?}: {why}", hook.name);
            if hook.ignore_failures {
                tracing::warn!(webhook = %hook.name, "Failed calling webhook, failing open: {msg}");
                if let Some(audit) = a.options.audit {
                    audit.record(failed_open, &hook.name);
                }
                None
            } else {
                tracing::warn!(webhook = %hook.name, "Failed calling webhook, failing closed: {msg}");
                Some(ApiError::internal(msg))
            }
        }
        HookError::Refused(e) => Some(e),
    }
}

impl MutatingWebhooks {
    /// One mutating call: the answer's JSON patch applied to `obj` (the write form: a
    /// custom resource in the request's version, any other type stored) through `invoked`'s
    /// version, then the type's defaults; whether the object changed.
    async fn call_mutating(
        &self,
        reg: &Registry,
        a: &Attributes<'_>,
        hook: &Webhook,
        invoked: &ResourceType,
        obj: Option<&mut Value>,
        key: &str,
    ) -> CallResult {
        let answer = call(
            &*self.transport,
            reg,
            a,
            hook,
            invoked,
            obj.as_deref(),
            true,
        )
        .await?;
        if answer.patch.is_empty() {
            return Ok(false);
        }
        let internal =
            |e: &dyn std::fmt::Display| HookError::Refused(ApiError::internal(e.to_string()));
        let patch: json_patch::Patch =
            serde_json::from_slice(&answer.patch).map_err(|e| internal(&e))?;
        if patch.0.is_empty() {
            return Ok(false);
        }
        let Some(obj) = obj else {
            return Err(internal(&format!(
                "admission webhook {:?} attempted to modify the object, which is not supported for this operation",
                hook.name
            )));
        };
        if answer.patch_type != "JSONPatch" {
            return Err(HookError::Calling(format!(
                "unsupported patch type {:?}",
                answer.patch_type
            )));
        }
        let mut versioned = reg
            .api_value(invoked, obj.clone())
            .await
            .map_err(HookError::Refused)?;
        // The answer (at most the transport's response limit) bounds what `add` operations
        // bring; what `copy` operations add is bounded as a user's JSON patch is.
        let ops = &patch.0;
        if ops.len() > crate::patch::MAX_JSON_PATCH_OPS {
            return Err(internal(&format!(
                "The allowed maximum operations in a JSON patch is {}, got {}",
                crate::patch::MAX_JSON_PATCH_OPS,
                ops.len()
            )));
        }
        let mut copied = 0;
        for op in ops {
            crate::patch::apply_json_patch_op(&mut versioned, op, &mut copied)
                .map_err(|e| internal(&e))?;
        }
        let mut patched = reg
            .write_value_from(invoked, a.resource, versioned)
            .await
            .map_err(HookError::Refused)?;
        crate::write::default_and_canonicalize(a.resource, &mut patched);
        let changed = patched != *obj;
        *obj = patched;
        if let Ok(v) = serde_json::from_slice::<Value>(&answer.patch) {
            record_patch(a, hook, key, &v);
        }
        Ok(changed)
    }
}

#[async_trait::async_trait]
impl MutatingAdmission<Registry> for MutatingWebhooks {
    fn name(&self) -> &'static str {
        MUTATING_PLUGIN
    }

    fn handles(&self, op: Operation) -> bool {
        handles(op)
    }

    /// Every matching webhook in order, then, when an object changed after an
    /// `IfNeeded` webhook was called, those webhooks once more (upstream's reinvocation,
    /// limited here to the webhooks: kplane's built-in plugins are not reinvoked).
    async fn admit(
        &self,
        reg: &Registry,
        a: &Attributes<'_>,
        mut obj: Option<&mut Value>,
    ) -> ApiResult<()> {
        let Some(set) = webhooks_for(reg, a).await? else {
            return Ok(());
        };
        let mut m = Matcher::new(a);
        let mut previously_invoked: HashSet<&str> = HashSet::new();
        let mut reinvoke: HashSet<&str> = HashSet::new();
        let mut should_reinvoke = false;
        for round in 0..2 {
            if round == 1 && !should_reinvoke {
                break;
            }
            for (index, hook) in set.mutating.iter().enumerate() {
                if round == 1 && !reinvoke.contains(hook.uid.as_str()) {
                    continue;
                }
                let Some(invoked) = m.should_call(reg, hook, obj.as_deref()).await? else {
                    continue;
                };
                let key = format!("round_{round}_index_{index}");
                let result = self
                    .call_mutating(reg, a, hook, &invoked, obj.as_deref_mut(), &key)
                    .await;
                // Whatever the outcome, as upstream's deferred annotation.
                record_mutation(a, hook, &key, matches!(result, Ok(true)));
                if matches!(result, Ok(true)) {
                    // The reinvocable webhooks called so far see the change next round.
                    reinvoke.extend(previously_invoked.drain());
                    should_reinvoke = true;
                }
                if hook.reinvoke {
                    previously_invoked.insert(hook.uid.as_str());
                }
                if let Err(e) = result {
                    let key = format!("{MUTATING_FAILED_OPEN}{key}");
                    if let Some(err) = under_policy(hook, e, a, &key) {
                        return Err(err);
                    }
                }
            }
        }
        Ok(())
    }
}

#[async_trait::async_trait]
impl ValidatingAdmission<Registry> for ValidatingWebhooks {
    fn name(&self) -> &'static str {
        VALIDATING_PLUGIN
    }

    fn handles(&self, op: Operation) -> bool {
        handles(op)
    }

    /// The matching webhooks in parallel; the first refusal in webhook order answers.
    async fn validate(
        &self,
        reg: &Registry,
        a: &Attributes<'_>,
        obj: Option<&Value>,
    ) -> ApiResult<()> {
        let Some(set) = webhooks_for(reg, a).await? else {
            return Ok(());
        };
        let mut m = Matcher::new(a);
        let mut calls = Vec::new();
        for hook in &set.validating {
            if let Some(invoked) = m.should_call(reg, hook, obj).await? {
                // Upstream's index: among the webhooks called.
                let key = format!("{VALIDATING_FAILED_OPEN}round_0_index_{}", calls.len());
                calls.push(async move {
                    let r = call(&*self.transport, reg, a, hook, &invoked, obj, false).await;
                    r.err().and_then(|e| under_policy(hook, e, a, &key))
                });
            }
        }
        match futures::future::join_all(calls)
            .await
            .into_iter()
            .flatten()
            .next()
        {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}
