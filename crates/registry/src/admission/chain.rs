//! The admission contract and chain: what a plugin sees of a write ([`Attributes`]), the
//! two plugin traits, and [`Admission`], the ordered chain every write passes between
//! validation and storage. Which plugins kplane runs is the parent module's business.

use std::fmt;
use std::sync::Arc;

use kplane_types::{ClusterName, Status};
use serde_json::Value;

use crate::catalog::ResourceType;
use crate::error::{ApiError, ApiResult};

/// The operation being admitted (`admission.Operation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operation {
    Create,
    Update,
    Delete,
    Connect,
}

impl Operation {
    /// The name upstream gives it (`CREATE`, ...).
    pub fn as_str(self) -> &'static str {
        match self {
            Operation::Create => "CREATE",
            Operation::Update => "UPDATE",
            Operation::Delete => "DELETE",
            Operation::Connect => "CONNECT",
        }
    }
}

/// Who is making a request, as authenticated (`user.Info`).
pub use kplane_types::UserInfo;

/// What a plugin is asked to admit (`admission.Attributes`). The object itself is passed
/// next to it: mutable to mutating plugins, read-only to validating ones, absent on delete.
#[derive(Clone, Copy, Debug)]
pub struct Attributes<'a> {
    pub operation: Operation,
    /// The resource the request went through (group, version, plural, kind, scope).
    pub resource: &'a ResourceType,
    pub subresource: Option<&'a str>,
    /// The logical cluster.
    pub cluster: &'a ClusterName,
    /// The namespace ("" for a cluster-scoped resource).
    pub namespace: &'a str,
    /// The object's name ("" on a create that generates it).
    pub name: &'a str,
    /// The stored object, on update (in the write form: a custom resource in the request's
    /// version, any other type as stored) and delete (in its stored form).
    pub old: Option<&'a Value>,
    /// The requester, when the write came from a request (controllers' writes have none).
    pub user: Option<&'a UserInfo>,
    pub dry_run: bool,
    /// On a create: the object's namespace when it is not stored yet but written before
    /// the object in the same storage batch (a new cluster's default namespaces and their
    /// bootstrap objects, `namespaces.rs`), as it will be stored.
    pub new_namespace: Option<&'a Value>,
    /// The request's options and warnings (admission webhooks send the options and add
    /// their warnings).
    pub options: RequestOptions<'a>,
}

/// A write request's options as an AdmissionReview carries them (`CreateOptions`,
/// `UpdateOptions`, `DeleteOptions`), and where its warnings go.
#[derive(Clone, Copy, Debug, Default)]
pub struct RequestOptions<'a> {
    pub field_manager: Option<&'a str>,
    pub propagation_policy: Option<&'a str>,
    pub grace_period_seconds: Option<i64>,
    /// The response's warnings (none for the server's own deletes).
    pub warnings: Option<&'a crate::warnings::Warnings>,
    /// The request's audit annotations (none for the server's own deletes).
    pub audit: Option<&'a crate::audit_annotations::AuditAnnotations>,
}

impl<'a> RequestOptions<'a> {
    /// The options of a create or update with `w`.
    pub fn of_write(w: &'a crate::options::WriteParams) -> Self {
        RequestOptions {
            field_manager: w.field_manager.as_deref(),
            warnings: Some(&w.warnings),
            audit: Some(&w.audit),
            ..Default::default()
        }
    }
}

/// A plugin of the mutating phase (`admission.MutationInterface`), given the registry `R`
/// it runs in (kplane's `Registry`; this contract names none) to read cluster state.
#[async_trait::async_trait]
pub trait MutatingAdmission<R: Sync>: Send + Sync + fmt::Debug {
    /// The plugin's name (for logs and messages).
    fn name(&self) -> &'static str;

    /// Whether the plugin takes part in `op` (`admission.Handler.Handles`).
    fn handles(&self, op: Operation) -> bool;

    /// Admits `obj` (in the write form, see [`Attributes::old`]; `None` on delete), changing it if the plugin's
    /// policy says so, or refuses the request.
    async fn admit(&self, reg: &R, a: &Attributes<'_>, obj: Option<&mut Value>) -> ApiResult<()>;
}

/// A plugin of the validating phase (`admission.ValidationInterface`), given the registry
/// `R` it runs in.
#[async_trait::async_trait]
pub trait ValidatingAdmission<R: Sync>: Send + Sync + fmt::Debug {
    /// The plugin's name (for logs and messages).
    fn name(&self) -> &'static str;

    /// Whether the plugin takes part in `op`.
    fn handles(&self, op: Operation) -> bool;

    /// Accepts `obj` as it would be stored (`None` on delete) or refuses the request.
    async fn validate(&self, reg: &R, a: &Attributes<'_>, obj: Option<&Value>) -> ApiResult<()>;
}

/// The admission chain of a registry `R`: mutating plugins, then validating plugins, each
/// in order.
#[derive(Debug)]
pub struct Admission<R: Sync> {
    pub(super) mutating: Vec<Arc<dyn MutatingAdmission<R>>>,
    pub(super) validating: Vec<Arc<dyn ValidatingAdmission<R>>>,
    /// The transport of `Admission::with_webhooks`, which CRD conversion webhooks use
    /// too (kept when the webhook plugins are disabled: conversion is not admission).
    pub(super) transport: Option<Arc<dyn crate::webhooks::transport::WebhookTransport>>,
}

impl<R: Sync> Clone for Admission<R> {
    fn clone(&self) -> Self {
        Admission {
            mutating: self.mutating.clone(),
            validating: self.validating.clone(),
            transport: self.transport.clone(),
        }
    }
}

impl<R: Sync> Default for Admission<R> {
    fn default() -> Self {
        Admission {
            mutating: Vec::new(),
            validating: Vec::new(),
            transport: None,
        }
    }
}

impl<R: Sync> Admission<R> {
    /// A chain without plugins: every write is admitted as it is.
    pub fn none() -> Self {
        Self::default()
    }

    /// Appends a mutating plugin.
    pub fn with_mutating(mut self, plugin: Arc<dyn MutatingAdmission<R>>) -> Self {
        self.mutating.push(plugin);
        self
    }

    /// Appends a validating plugin.
    pub fn with_validating(mut self, plugin: Arc<dyn ValidatingAdmission<R>>) -> Self {
        self.validating.push(plugin);
        self
    }

    /// The chain without the plugins named in `names` (kube-apiserver's
    /// `--disable-admission-plugins`); a name that is not in the chain is an error naming
    /// the plugins there are.
    pub fn without(mut self, names: &[String]) -> Result<Self, String> {
        let known = self.plugin_names();
        if let Some(bad) = names.iter().find(|n| !known.contains(&n.as_str())) {
            return Err(format!(
                "{bad} is not an admission plugin of this server; the plugins are {}",
                known.join(", ")
            ));
        }
        let keep = |n: &str| !names.iter().any(|x| x == n);
        self.mutating.retain(|p| keep(p.name()));
        self.validating.retain(|p| keep(p.name()));
        Ok(self)
    }

    /// The server's webhook transport (`Admission::with_webhooks`), for CRD conversion.
    pub fn webhook_transport(&self) -> Option<&Arc<dyn crate::webhooks::WebhookTransport>> {
        self.transport.as_ref()
    }

    /// The plugins' names, mutating first, in order.
    pub fn plugin_names(&self) -> Vec<&'static str> {
        let m = self.mutating.iter().map(|p| p.name());
        m.chain(self.validating.iter().map(|p| p.name())).collect()
    }

    /// Whether any plugin takes part in `op` (a deletecollection skips the per-object
    /// calls when none does).
    pub fn handles(&self, op: Operation) -> bool {
        self.mutating.iter().any(|p| p.handles(op)) || self.validating.iter().any(|p| p.handles(op))
    }

    /// The mutating phase.
    pub async fn admit(
        &self,
        reg: &R,
        a: &Attributes<'_>,
        mut obj: Option<&mut Value>,
    ) -> ApiResult<()> {
        for p in self.mutating.iter().filter(|p| p.handles(a.operation)) {
            p.admit(reg, a, obj.as_deref_mut()).await?;
        }
        Ok(())
    }

    /// The validating phase.
    pub async fn validate(
        &self,
        reg: &R,
        a: &Attributes<'_>,
        obj: Option<&Value>,
    ) -> ApiResult<()> {
        for p in self.validating.iter().filter(|p| p.handles(a.operation)) {
            p.validate(reg, a, obj).await?;
        }
        Ok(())
    }

    /// Both phases, for a delete (no object to change).
    pub async fn admit_delete(&self, reg: &R, a: &Attributes<'_>) -> ApiResult<()> {
        self.admit(reg, a, None).await?;
        self.validate(reg, a, None).await
    }
}

/// A plugin's refusal as upstream's `errors.NewForbidden`: 403, reason `Forbidden`,
/// `<resource> "<name>" is forbidden: <why>` (`<resource> is forbidden: <why>` without a
/// name), with the resource in the details.
pub fn forbidden(a: &Attributes<'_>, why: &str) -> ApiError {
    let rt = a.resource;
    ApiError::from(Status::forbidden(&rt.group, &rt.plural, a.name, why))
}
