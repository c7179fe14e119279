//! What a served custom resource version carries beyond the generic `ResourceType`
//! ([`CustomInfo`]): its CRD's schema, printer columns, scale paths, storage version and
//! conversion webhook.

use std::sync::Arc;

use kplane_schema::CompiledSchema;
use serde_json::Value;
use std::fmt;
use std::sync::OnceLock;

use kplane_merge::TypeInfo;

/// One `additionalPrinterColumns` entry.
#[derive(Clone, Debug, PartialEq)]
pub struct PrinterColumn {
    pub name: String,
    pub type_: String,
    pub format: String,
    pub description: String,
    pub priority: i64,
    pub json_path: String,
}

/// The `scale` subresource's paths.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScalePaths {
    pub spec_replicas: String,
    pub status_replicas: String,
    pub label_selector: Option<String>,
}

/// What a served custom resource version needs beyond the generic [`ResourceType`].
#[derive(Debug)]
pub struct CustomInfo {
    pub crd_name: String,
    pub schema: Option<Arc<CompiledSchema>>,
    /// The version's `openAPIV3Schema`, as published in OpenAPI.
    pub raw_schema: Value,
    pub has_defaults: bool,
    pub columns: Vec<PrinterColumn>,
    pub scale: Option<ScalePaths>,
    pub storage_version: String,
    pub deprecation_warning: Option<String>,
    /// The CRD is being deleted: no new instances.
    pub terminating: bool,
    /// List/map semantics for server-side apply and managedFields, built on first use.
    pub merge_types: LazyTypeInfo,
    /// The CRD's conversion webhook (`spec.conversion.strategy: Webhook`).
    pub webhook: Option<Arc<crate::conversion::WebhookConversion>>,
    /// With a conversion webhook, the storage version's schema, which prunes what the
    /// webhook answers for the storage version (`schema`, the served version's, decodes,
    /// defaults and validates requests, and prunes and defaults reads).
    pub storage_schema: Option<Arc<CompiledSchema>>,
}

impl CustomInfo {
    /// This information without the CRD's conversion webhook (and the storage schema only
    /// a webhook's writes use), objects stored in `storage_version`: reads and writes
    /// through it only relabel `apiVersion`, as for conversion strategy None.
    pub(crate) fn without_webhook(&self, storage_version: &str) -> CustomInfo {
        CustomInfo {
            crd_name: self.crd_name.clone(),
            schema: self.schema.clone(),
            raw_schema: self.raw_schema.clone(),
            has_defaults: self.has_defaults,
            columns: self.columns.clone(),
            scale: self.scale.clone(),
            storage_version: storage_version.to_string(),
            deprecation_warning: self.deprecation_warning.clone(),
            terminating: self.terminating,
            merge_types: Default::default(),
            webhook: None,
            storage_schema: None,
        }
    }
}

/// A custom resource version's merge type information, built from its schema on first use
/// and shared by every request after that.
#[derive(Default)]
pub struct LazyTypeInfo(pub(crate) OnceLock<Arc<dyn TypeInfo>>);

impl fmt::Debug for LazyTypeInfo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("LazyTypeInfo")
    }
}
