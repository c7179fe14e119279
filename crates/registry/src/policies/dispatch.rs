//! The `ValidatingAdmissionPolicy` plugin (`policy/validating/dispatcher.go`): for each of
//! the cluster's policies whose `matchConstraints` select the request, each of its
//! bindings whose `matchResources` do, and each param the binding's `paramRef` finds,
//! the policy's `matchConditions`, `validations` (with `messageExpression`) and
//! `auditAnnotations` are evaluated (`evaluate.rs`); failures go where the binding's
//! `validationActions` say (Deny: the first one refuses the request; Warn: a warning;
//! Audit: the request's `validation.policy.admission.k8s.io/validation_failure` audit
//! annotation), an audit annotation's error refuses the request whatever the actions, and
//! the audit annotations' values are recorded as `<policy>/<key>` once the policy's
//! bindings are done (distinct values of one key joined with `, `, as upstream's
//! collector). Configuration errors (a param
//! kind not served, params not found with `Deny`) go under the policy's
//! `failurePolicy`.

use std::sync::Arc;

use kplane_schema::policy::ResourceAttributes;
use kplane_storage::{Key, ListOptions, Prefix};
use kplane_types::{Status, StatusReason};
use serde_json::{Map, Value};

use super::cache::is_policy_resource;
use super::evaluate::{evaluate_all, Decision};
use super::matching::select;
use super::model::{Binding, MatchResources, Policy};
use crate::admission::chain::{Attributes, Operation, ValidatingAdmission};
use crate::catalog::{Catalog, ResourceType};
use crate::error::{ApiError, ApiResult};
use crate::webhooks::cache::is_configuration;
use crate::webhooks::matching::{self, Request};
use crate::Registry;

/// The audit annotation of a failure under the `Audit` action.
pub const VALIDATION_FAILURE: &str = "validation.policy.admission.k8s.io/validation_failure";

/// The value of [`VALIDATION_FAILURE`]: upstream's `ValidationFailureValue` in a list, its
/// fields in its order.
fn validation_failure(p: &Policy, b: &Binding, d: &Decision) -> String {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Failure<'a> {
        message: &'a str,
        policy: &'a str,
        binding: &'a str,
        expression_index: usize,
        validation_actions: &'a [String],
    }
    let f = [Failure {
        message: &d.message,
        policy: &p.name,
        binding: &b.name,
        expression_index: d.index,
        validation_actions: &b.actions,
    }];
    serde_json::to_string(&f).unwrap_or_default()
}

/// The plugin's name (kube-apiserver's).
pub const PLUGIN: &str = "ValidatingAdmissionPolicy";

/// The plugin.
#[derive(Debug, Default)]
pub struct ValidatingAdmissionPolicy;

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

/// `authorizer.requestResource`'s attributes: the request's own resource (upstream's
/// versioned attributes' resource, the request's, whatever version matched).
pub fn request_resource(a: &Attributes<'_>) -> ResourceAttributes {
    ResourceAttributes {
        group: a.resource.group.clone(),
        resource: a.resource.plural.clone(),
        subresource: a.subresource.unwrap_or("").to_string(),
        namespace: a.namespace.to_string(),
        name: a.name.to_string(),
        ..Default::default()
    }
}

/// A refusal: the policy, the binding (none for a policy's own configuration error) and
/// the decision.
struct Denial<'p> {
    policy: &'p str,
    binding: Option<&'p str>,
    decision: Decision,
}

/// Per-request state: what is read at most once, when first needed.
struct Ctx<'a> {
    reg: &'a Registry,
    a: &'a Attributes<'a>,
    obj: Option<&'a Value>,
    r: Request<'a>,
    catalog: Arc<Catalog>,
    rt: Arc<ResourceType>,
    namespace: Option<Option<Value>>,
}

impl<'a> Ctx<'a> {
    /// The stored namespace of the request (`None` for cluster-scoped requests and a
    /// Namespace's own); 404 when it does not exist.
    async fn namespace(&mut self) -> ApiResult<Option<&Value>> {
        if self.namespace.is_none() {
            let name = if self.r.is_namespace {
                ""
            } else {
                self.a.namespace
            };
            let found = match (name, self.a.new_namespace) {
                ("", _) => None,
                (_, Some(ns)) => Some(ns.clone()),
                _ => Some(read_namespace(self.reg, self.a, name).await?),
            };
            self.namespace = Some(found);
        }
        Ok(self.namespace.as_ref().and_then(Option::as_ref))
    }

    /// `MatchNamespaceSelector` and `MatchObjectSelector`.
    async fn selectors_match(&mut self, mr: &MatchResources) -> ApiResult<bool> {
        if !matching::object_selector_matches(&mr.object_selector, self.obj, self.a.old) {
            return Ok(false);
        }
        if !matching::needs_namespace_labels(&mr.namespace_selector, &self.r) {
            return Ok(true);
        }
        let own = self.r.is_namespace
            && self.r.subresource.is_empty()
            && matches!(self.a.operation, Operation::Create | Operation::Update);
        let labels = match (own, self.obj) {
            (true, Some(o)) => matching::labels_of(o),
            _ if self.r.is_namespace => match self.a.old {
                Some(o) => matching::labels_of(o),
                None => Map::new(),
            },
            _ => self
                .namespace()
                .await?
                .map(matching::labels_of)
                .unwrap_or_default(),
        };
        Ok(mr.namespace_selector.matches(&labels))
    }

    /// The resource `mr` selects the request through, when its rules and selectors do.
    async fn matches(&mut self, mr: &MatchResources) -> ApiResult<Option<Arc<ResourceType>>> {
        let Some(via) = select(mr, &self.r, self.a.name, &self.rt, &self.catalog) else {
            return Ok(None);
        };
        Ok(self.selectors_match(mr).await?.then_some(via))
    }
}

/// The stored namespace `name`; 404 when it does not exist.
async fn read_namespace(reg: &Registry, a: &Attributes<'_>, name: &str) -> ApiResult<Value> {
    let nst = reg.namespace_type()?;
    let key = Key::new(a.cluster.as_str(), nst.storage_resource.as_str(), "", name);
    let Some(kv) = reg.storage.get(&key).await? else {
        return Err(ApiError::from(Status::not_found("", "namespaces", name)));
    };
    serde_json::from_slice(&kv.value).map_err(|e| crate::corrupt(&e))
}

/// `CreateNamespaceObject`: the namespace's spec, status and the metadata fields upstream
/// keeps (no managedFields, owners), without apiVersion and kind.
fn namespace_object(ns: &Value) -> Value {
    const KEPT: &[&str] = &[
        "name",
        "generateName",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "labels",
        "annotations",
        "finalizers",
    ];
    let mut out = Map::new();
    if let Some(m) = ns.get("metadata").and_then(Value::as_object) {
        let meta: Map<String, Value> = m
            .iter()
            .filter(|(k, _)| KEPT.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        out.insert("metadata".into(), Value::Object(meta));
    }
    for f in ["spec", "status"] {
        if let Some(v) = ns.get(f) {
            out.insert(f.into(), v.clone());
        }
    }
    Value::Object(out)
}

/// The params a binding validates with (`CollectParams`): `[None]` without a param kind
/// or reference; empty when none is found and `parameterNotFoundAction` is `Allow`. The
/// error is a configuration error's message.
async fn collect_params(
    reg: &Registry,
    a: &Attributes<'_>,
    catalog: &Catalog,
    p: &Policy,
    b: &Binding,
) -> Result<Vec<Option<Value>>, ApiError> {
    let (Some(pk), Some(pr)) = (&p.param_kind, &b.param_ref) else {
        return Ok(vec![None]);
    };
    let config = |msg: String| ApiError::bad_request(msg);
    let (group, version) = pk.group_version();
    let Some(rt) = catalog
        .all()
        .iter()
        .find(|t| t.group == group && t.version == version && t.kind == pk.kind)
    else {
        return Err(config(format!(
            "paramKind kind `&ParamKind{{APIVersion:{},Kind:{},}}` not known",
            pk.api_version, pk.kind
        )));
    };
    let namespace = if rt.namespaced {
        match (pr.namespace.as_str(), a.namespace) {
            ("", "") => return Err(config("cannot use namespaced paramRef in policy binding that matches cluster-scoped resources".into())),
            ("", ns) => ns,
            (ns, _) => ns,
        }
    } else if !pr.namespace.is_empty() {
        return Err(config(
            "paramRef.namespace must not be provided for a cluster-scoped `paramKind`".into(),
        ));
    } else {
        ""
    };
    let mut found = Vec::new();
    if !pr.name.is_empty() {
        let key = Key::new(
            a.cluster.as_str(),
            rt.storage_resource.as_str(),
            namespace,
            pr.name.as_str(),
        );
        if let Some(kv) = reg.storage.get(&key).await? {
            found.push(serde_json::from_slice::<Value>(&kv.value).map_err(|e| crate::corrupt(&e))?);
        }
    } else {
        let prefix = if rt.namespaced {
            Prefix::namespace(a.cluster.as_str(), rt.storage_resource.as_str(), namespace)
        } else {
            Prefix::resource(a.cluster.as_str(), rt.storage_resource.as_str())
        };
        let listed = reg
            .storage
            .list(&prefix, &ListOptions::default(), None)
            .await?;
        for kv in &listed.items {
            let obj: Value = serde_json::from_slice(&kv.value).map_err(|e| crate::corrupt(&e))?;
            if pr
                .selector
                .as_ref()
                .is_none_or(|s| s.matches(&matching::labels_of(&obj)))
            {
                found.push(obj);
            }
        }
    }
    if found.is_empty() && pr.deny_not_found {
        return Err(config(
            "no params found for policy binding with `Deny` parameterNotFoundAction".into(),
        ));
    }
    let mut out = Vec::with_capacity(found.len());
    for obj in found {
        out.push(Some(reg.api_value(rt, obj).await?));
    }
    Ok(out)
}

/// `reasonToCode`.
fn code_of(reason: StatusReason) -> u16 {
    match reason {
        StatusReason::Forbidden => 403,
        StatusReason::Unauthorized => 401,
        StatusReason::RequestEntityTooLarge => 413,
        _ => 422,
    }
}

/// The refusal of the first denial: `admission.NewForbidden` with the policy's message,
/// its reason and the reason's code.
fn refusal(a: &Attributes<'_>, d: &Denial<'_>) -> ApiError {
    let message = match d.binding {
        Some(b) => format!(
            "ValidatingAdmissionPolicy '{}' with binding '{b}' denied request: {}",
            d.policy, d.decision.message
        ),
        None => format!(
            "ValidatingAdmissionPolicy '{}' denied request: {}",
            d.policy, d.decision.message
        ),
    };
    let mut err = crate::admission::chain::forbidden(a, &message);
    err.0.reason = d.decision.reason;
    err.0.code = code_of(d.decision.reason);
    if let Some(details) = err.0.details.as_mut() {
        details.causes.push(kplane_types::Cause::new(
            kplane_types::CauseType::Unspecified,
            "",
            message,
        ));
    }
    err
}

/// A configuration error under the policy's failure policy (`addConfigError`).
fn config_error<'p>(p: &'p Policy, b: Option<&'p Binding>, why: &str) -> Option<Denial<'p>> {
    if p.ignore_failures {
        return None;
    }
    let what = if b.is_some() { "binding" } else { "policy" };
    Some(Denial {
        policy: &p.name,
        binding: b.map(|b| b.name.as_str()),
        decision: Decision {
            message: format!("failed to configure {what}: {why}"),
            reason: StatusReason::Invalid,
            index: 0,
        },
    })
}

impl ValidatingAdmissionPolicy {
    /// The request's object (or old object) in the version of `via`.
    async fn versioned(
        reg: &Registry,
        via: &ResourceType,
        v: Option<&Value>,
    ) -> ApiResult<Option<Value>> {
        match v {
            None => Ok(None),
            Some(o) => Ok(Some(reg.api_value(via, o.clone()).await?)),
        }
    }

    /// Every binding of `p` that selects the request, evaluated; denials to `denied`.
    async fn run_policy<'p>(
        ctx: &mut Ctx<'_>,
        p: &'p Policy,
        bindings: &'p [Binding],
        denied: &mut Vec<Denial<'p>>,
    ) -> ApiResult<()> {
        let Some(mc) = &p.constraints else {
            denied.extend(config_error(
                p,
                None,
                "policy contained no match constraints, a required field",
            ));
            return Ok(());
        };
        let Some(via) = ctx.matches(mc).await? else {
            return Ok(());
        };
        let mut inputs = None;
        // Audit annotation values by key, distinct values in the order found.
        let mut annotations: Vec<(String, Vec<String>)> = Vec::new();
        for b in bindings {
            if let Some(mr) = &b.match_resources {
                if ctx.matches(mr).await?.is_none() {
                    continue;
                }
            }
            let params = match collect_params(ctx.reg, ctx.a, &ctx.catalog, p, b).await {
                Ok(params) => params,
                Err(e) => {
                    denied.extend(config_error(p, Some(b), &e.0.message));
                    continue;
                }
            };
            if params.is_empty() {
                continue;
            }
            if inputs.is_none() {
                inputs = Some(Self::inputs(ctx, &via).await?);
            }
            let Some(values) = &inputs else { continue };
            let found = evaluate_all(p, values, &params);
            for (key, value) in found.annotations {
                match annotations.iter_mut().find(|(k, _)| *k == key) {
                    Some((_, vs)) if vs.contains(&value) => {}
                    Some((_, vs)) => vs.push(value),
                    None => annotations.push((key, vec![value])),
                }
            }
            for decision in found.decisions {
                if b.audit {
                    if let Some(audit) = ctx.a.options.audit {
                        audit.record(VALIDATION_FAILURE, &validation_failure(p, b, &decision));
                    }
                }
                if b.warn {
                    if let Some(w) = ctx.a.options.warnings {
                        w.push(format!(
                            "Validation failed for ValidatingAdmissionPolicy '{}' with binding '{}': {}",
                            p.name, b.name, decision.message
                        ));
                    }
                }
                if b.deny {
                    denied.push(Denial {
                        policy: &p.name,
                        binding: Some(&b.name),
                        decision,
                    });
                }
            }
            for decision in found.annotation_errors {
                denied.push(Denial {
                    policy: &p.name,
                    binding: Some(&b.name),
                    decision,
                });
            }
        }
        if let Some(audit) = ctx.a.options.audit {
            for (key, values) in annotations {
                audit.record(&format!("{}/{key}", p.name), &values.join(", "));
            }
        }
        Ok(())
    }

    /// The JSON of the CEL variables but `params`, for a request selected through `via`.
    async fn inputs(ctx: &mut Ctx<'_>, via: &ResourceType) -> ApiResult<super::evaluate::Values> {
        let object = Self::versioned(ctx.reg, via, ctx.obj).await?;
        let old_object = Self::versioned(ctx.reg, via, ctx.a.old).await?;
        let namespace = ctx.namespace().await?.map(namespace_object);
        let review =
            crate::webhooks::review::request("", "v1", ctx.a, ctx.r.namespace, via, None, None);
        let mut request = review.get("request").cloned().unwrap_or(Value::Null);
        if let Some(m) = request.as_object_mut() {
            for f in ["uid", "object", "oldObject"] {
                m.remove(f);
            }
            if ctx.r.is_namespace {
                m.remove("namespace");
            }
        }
        let authorizer = match ctx.a.user {
            Some(user) => Some((
                ctx.reg.cel_authorizer(ctx.a.cluster, user).await,
                request_resource(ctx.a),
            )),
            None => None,
        };
        Ok(super::evaluate::Values {
            object,
            old_object,
            request,
            namespace,
            authorizer,
        })
    }
}

#[async_trait::async_trait]
impl ValidatingAdmission<Registry> for ValidatingAdmissionPolicy {
    fn name(&self) -> &'static str {
        PLUGIN
    }

    fn handles(&self, _op: Operation) -> bool {
        true
    }

    /// Every matching policy and binding; the first denial in policy and binding order
    /// refuses the request.
    async fn validate(
        &self,
        reg: &Registry,
        a: &Attributes<'_>,
        obj: Option<&Value>,
    ) -> ApiResult<()> {
        let storage = &a.resource.storage_resource;
        if a.user.is_none() || is_configuration(storage) || is_policy_resource(storage) {
            return Ok(());
        }
        let set = reg.cluster_policies(a.cluster).await?;
        if set.policies.is_empty() {
            return Ok(());
        }
        let catalog = reg.cluster_catalog(a.cluster).await?;
        let rt = a.resource;
        let found = catalog.get(&rt.group, &rt.version, &rt.plural).cloned();
        let mut ctx = Ctx {
            reg,
            a,
            obj,
            r: request(a),
            rt: found.unwrap_or_else(|| Arc::new(rt.clone())),
            catalog,
            namespace: None,
        };
        let mut denied = Vec::new();
        for bound in &set.policies {
            Self::run_policy(&mut ctx, &bound.policy, &bound.bindings, &mut denied).await?;
        }
        match denied.first() {
            Some(d) => Err(refusal(a, d)),
            None => Ok(()),
        }
    }
}
