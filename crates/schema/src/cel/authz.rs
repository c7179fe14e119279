//! The Kubernetes CEL `authorizer` library (`k8s.io/apiserver/pkg/cel/library/authz.go`,
//! 1.32, with the `AuthorizeWithSelectors` additions that are on by default there):
//! `authorizer.path(p)`, `authorizer.group(g).resource(r)` with `subresource`,
//! `namespace`, `name`, `fieldSelector` and `labelSelector`, `.check(verb)` giving a
//! decision (`allowed()`, `reason()`, `errored()`, `error()`), and
//! `authorizer.serviceAccount(ns, name)` checking as that service account.
//!
//! The values are opaque: each carries the request's [`Authorize`] function, which the
//! caller (the registry) prepares for one request before evaluation, so a check is a
//! plain synchronous call. This module knows nothing of how it decides.

use std::fmt;
use std::sync::Arc;

use kplane_types::validation::{is_dns1123_label, is_dns1123_subdomain};
use kube_cel::cel::objects::Opaque;
use kube_cel::cel::{Context, ExecutionError, FunctionContext, Value as Cel};

/// cel-go's names of the library's types.
pub(crate) const AUTHORIZER: &str = "kubernetes.authorization.Authorizer";
pub(crate) const PATH_CHECK: &str = "kubernetes.authorization.PathCheck";
pub(crate) const GROUP_CHECK: &str = "kubernetes.authorization.GroupCheck";
pub(crate) const RESOURCE_CHECK: &str = "kubernetes.authorization.ResourceCheck";
pub(crate) const DECISION: &str = "kubernetes.authorization.Decision";

/// The library's functions (all member functions).
pub(crate) const FUNCTIONS: &[&str] = &[
    "allowed",
    "check",
    "error",
    "errored",
    "fieldSelector",
    "group",
    "labelSelector",
    "name",
    "namespace",
    "path",
    "reason",
    "resource",
    "serviceAccount",
    "subresource",
];

/// The resource attributes of a check (`AttributesRecord` of a resource request; the
/// version is always `*`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ResourceAttributes {
    pub group: String,
    pub resource: String,
    pub subresource: String,
    pub namespace: String,
    pub name: String,
    /// As written; empty when not set.
    pub field_selector: String,
    pub label_selector: String,
}

/// What is checked: a non-resource path or a resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    Path(String),
    Resource(ResourceAttributes),
}

/// One authorization check an expression makes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AuthzRequest {
    /// `(namespace, name)` of the service account checked as
    /// (`authorizer.serviceAccount(...)`); `None`: the requesting user.
    pub service_account: Option<(String, String)>,
    pub verb: String,
    pub target: Target,
}

/// An authorizer's answer to a check.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AuthzDecision {
    pub allowed: bool,
    pub reason: String,
    /// The authorizer's error, if it had one (`errored()`, `error()`).
    pub error: Option<String>,
}

/// Decides the checks of one request's expressions.
pub type Authorize = Arc<dyn Fn(&AuthzRequest) -> AuthzDecision + Send + Sync>;

/// An `Authorizer` value: the request's authorizer, as the requester or a service account.
#[derive(Clone)]
pub(crate) struct AuthorizerVal {
    authorize: Authorize,
    service_account: Option<(String, String)>,
}

impl AuthorizerVal {
    pub(crate) fn new(authorize: Authorize) -> AuthorizerVal {
        AuthorizerVal {
            authorize,
            service_account: None,
        }
    }
}

impl fmt::Debug for AuthorizerVal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Authorizer")
            .field("service_account", &self.service_account)
            .finish_non_exhaustive()
    }
}

impl PartialEq for AuthorizerVal {
    fn eq(&self, o: &Self) -> bool {
        Arc::ptr_eq(&self.authorize, &o.authorize) && self.service_account == o.service_account
    }
}

impl Eq for AuthorizerVal {}

/// The library's values other than the authorizer itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Check {
    Path(AuthorizerVal, String),
    Group(AuthorizerVal, String),
    Resource(AuthorizerVal, ResourceAttributes),
}

/// `authorizer.requestResource`: the check of the request's own resource.
pub(crate) fn request_resource(authorize: Authorize, attrs: ResourceAttributes) -> Cel {
    Cel::Opaque(Arc::new(Check::Resource(
        AuthorizerVal::new(authorize),
        attrs,
    )))
}

/// `authorizer`.
pub(crate) fn authorizer(authorize: Authorize) -> Cel {
    Cel::Opaque(Arc::new(AuthorizerVal::new(authorize)))
}

impl Opaque for AuthorizerVal {
    fn runtime_type_name(&self) -> &str {
        AUTHORIZER
    }
}

impl Opaque for Check {
    fn runtime_type_name(&self) -> &str {
        match self {
            Check::Path(..) => PATH_CHECK,
            Check::Group(..) => GROUP_CHECK,
            Check::Resource(..) => RESOURCE_CHECK,
        }
    }
}

impl Opaque for AuthzDecision {
    fn runtime_type_name(&self) -> &str {
        DECISION
    }
}

fn no_overload() -> ExecutionError {
    ExecutionError::NoSuchOverload
}

/// The call's receiver and its `n` string arguments, each argument's own error passed on.
fn receiver_and_strings(
    ftx: &FunctionContext,
    n: usize,
) -> Result<(Arc<dyn Opaque>, Vec<String>), ExecutionError> {
    let Some(Cel::Opaque(this)) = &ftx.this else {
        return Err(no_overload());
    };
    if ftx.args.len() != n {
        return Err(no_overload());
    }
    let mut out = Vec::with_capacity(n);
    for a in ftx.args {
        match Cel::resolve(a, ftx.ptx)? {
            Cel::String(s) => out.push(s.to_string()),
            _ => return Err(no_overload()),
        }
    }
    Ok((this.clone(), out))
}

fn failed(f: &str, msg: &str) -> ExecutionError {
    ExecutionError::function_error(f, msg)
}

fn take(mut v: Vec<String>) -> String {
    v.pop().unwrap_or_default()
}

fn authorizer_of(o: &Arc<dyn Opaque>) -> Result<&AuthorizerVal, ExecutionError> {
    o.downcast_ref::<AuthorizerVal>().ok_or_else(no_overload)
}

fn check_of(o: &Arc<dyn Opaque>) -> Result<&Check, ExecutionError> {
    o.downcast_ref::<Check>().ok_or_else(no_overload)
}

fn decision_of(o: &Arc<dyn Opaque>) -> Result<&AuthzDecision, ExecutionError> {
    o.downcast_ref::<AuthzDecision>().ok_or_else(no_overload)
}

fn opaque(v: impl Opaque) -> Cel {
    Cel::Opaque(Arc::new(v))
}

/// `<Authorizer>.path(string)`.
fn path(ftx: &FunctionContext) -> Result<Cel, ExecutionError> {
    let (this, args) = receiver_and_strings(ftx, 1)?;
    let a = authorizer_of(&this)?;
    let p = take(args);
    if p.trim().is_empty() {
        return Err(failed("path", "path must not be empty"));
    }
    Ok(opaque(Check::Path(a.clone(), p)))
}

/// `<Authorizer>.group(string)`.
fn group(ftx: &FunctionContext) -> Result<Cel, ExecutionError> {
    let (this, args) = receiver_and_strings(ftx, 1)?;
    let a = authorizer_of(&this)?;
    Ok(opaque(Check::Group(a.clone(), take(args))))
}

/// `<Authorizer>.serviceAccount(namespace, name)`.
fn service_account(ftx: &FunctionContext) -> Result<Cel, ExecutionError> {
    let (this, mut args) = receiver_and_strings(ftx, 2)?;
    let a = authorizer_of(&this)?;
    let name = args.pop().unwrap_or_default();
    let namespace = take(args);
    if !is_dns1123_subdomain(&name).is_empty() {
        return Err(failed("serviceAccount", "Invalid service account name"));
    }
    if !is_dns1123_label(&namespace).is_empty() {
        return Err(failed(
            "serviceAccount",
            "Invalid service account namespace",
        ));
    }
    Ok(opaque(AuthorizerVal {
        authorize: a.authorize.clone(),
        service_account: Some((namespace, name)),
    }))
}

/// `<GroupCheck>.resource(string)`.
fn resource(ftx: &FunctionContext) -> Result<Cel, ExecutionError> {
    let (this, args) = receiver_and_strings(ftx, 1)?;
    let Check::Group(a, group) = check_of(&this)? else {
        return Err(no_overload());
    };
    let r = take(args);
    if r.trim().is_empty() {
        return Err(failed("resource", "resource must not be empty"));
    }
    Ok(opaque(Check::Resource(
        a.clone(),
        ResourceAttributes {
            group: group.clone(),
            resource: r,
            ..Default::default()
        },
    )))
}

/// The `<ResourceCheck>` builders: a copy with one attribute set.
fn resource_attribute(
    ftx: &FunctionContext,
    set: fn(&mut ResourceAttributes, String),
) -> Result<Cel, ExecutionError> {
    let (this, args) = receiver_and_strings(ftx, 1)?;
    let Check::Resource(a, attrs) = check_of(&this)? else {
        return Err(no_overload());
    };
    let mut attrs = attrs.clone();
    set(&mut attrs, take(args));
    Ok(opaque(Check::Resource(a.clone(), attrs)))
}

fn subresource(ftx: &FunctionContext) -> Result<Cel, ExecutionError> {
    resource_attribute(ftx, |a, v| a.subresource = v)
}

fn namespace(ftx: &FunctionContext) -> Result<Cel, ExecutionError> {
    resource_attribute(ftx, |a, v| a.namespace = v)
}

fn name(ftx: &FunctionContext) -> Result<Cel, ExecutionError> {
    resource_attribute(ftx, |a, v| a.name = v)
}

fn field_selector(ftx: &FunctionContext) -> Result<Cel, ExecutionError> {
    resource_attribute(ftx, |a, v| a.field_selector = v)
}

fn label_selector(ftx: &FunctionContext) -> Result<Cel, ExecutionError> {
    resource_attribute(ftx, |a, v| a.label_selector = v)
}

/// `<PathCheck>.check(verb)`, `<ResourceCheck>.check(verb)`: asks the authorizer.
fn check(ftx: &FunctionContext) -> Result<Cel, ExecutionError> {
    let (this, args) = receiver_and_strings(ftx, 1)?;
    let (a, target) = match check_of(&this)? {
        Check::Path(a, p) => (a, Target::Path(p.clone())),
        Check::Resource(a, r) => (a, Target::Resource(r.clone())),
        Check::Group(..) => return Err(no_overload()),
    };
    let request = AuthzRequest {
        service_account: a.service_account.clone(),
        verb: take(args),
        target,
    };
    Ok(opaque((a.authorize)(&request)))
}

fn decision_field(
    ftx: &FunctionContext,
    get: fn(&AuthzDecision) -> Cel,
) -> Result<Cel, ExecutionError> {
    let (this, _) = receiver_and_strings(ftx, 0)?;
    Ok(get(decision_of(&this)?))
}

fn allowed(ftx: &FunctionContext) -> Result<Cel, ExecutionError> {
    decision_field(ftx, |d| Cel::Bool(d.allowed))
}

fn reason(ftx: &FunctionContext) -> Result<Cel, ExecutionError> {
    decision_field(ftx, |d| Cel::String(Arc::new(d.reason.clone())))
}

fn errored(ftx: &FunctionContext) -> Result<Cel, ExecutionError> {
    decision_field(ftx, |d| Cel::Bool(d.error.is_some()))
}

fn error(ftx: &FunctionContext) -> Result<Cel, ExecutionError> {
    decision_field(ftx, |d| {
        Cel::String(Arc::new(d.error.clone().unwrap_or_default()))
    })
}

/// Registers the library's functions.
pub(crate) fn register(ctx: &mut Context<'static>) {
    ctx.add_function("path", path);
    ctx.add_function("group", group);
    ctx.add_function("serviceAccount", service_account);
    ctx.add_function("resource", resource);
    ctx.add_function("subresource", subresource);
    ctx.add_function("namespace", namespace);
    ctx.add_function("name", name);
    ctx.add_function("fieldSelector", field_selector);
    ctx.add_function("labelSelector", label_selector);
    ctx.add_function("check", check);
    ctx.add_function("allowed", allowed);
    ctx.add_function("reason", reason);
    ctx.add_function("errored", errored);
    ctx.add_function("error", error);
}
