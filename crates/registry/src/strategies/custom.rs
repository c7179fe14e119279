//! Custom resources served from a CRD (`ResourceType::custom` holds the CRD's schema,
//! columns, scale paths): the rules are in the crate's `custom` module; this is how they
//! plug into the write path. Path-segment names, no unconditional update, a generation,
//! schema validation, and apiextensions' field selector labels (the CRD's selectable
//! fields). The version conversion (`strategy: None`: `apiVersion` rewritten, defaults
//! applied on read) is [`CustomConversion`]; a write is validated in the request's version
//! and converted to the storage version to be stored.

use bytes::Bytes;
use kplane_types::Cause;
use serde_json::{json, Value};

use crate::catalog::ResourceType;
use crate::custom;
use crate::error::ApiResult;
use crate::meta::NameRule;
use crate::strategy::{Conversion, TypeStrategy};

#[derive(Debug)]
pub struct Custom;

#[async_trait::async_trait]
impl TypeStrategy for Custom {
    fn allow_unconditional_update(&self) -> bool {
        false
    }

    fn has_generation(&self) -> bool {
        true
    }

    fn name_rule(&self) -> NameRule {
        NameRule::PathSegment
    }

    fn validate(&self, rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
        custom::validate(obj, old, rt)
    }

    fn validate_update(
        &self,
        rt: &ResourceType,
        obj: &Value,
        old: &Value,
        warnings: &mut Vec<String>,
    ) -> Vec<Cause> {
        custom::validate_update(obj, old, rt, warnings)
    }

    /// apiextensions' converter: `metadata.namespace` only when namespaced, then the
    /// CRD's selectable fields.
    fn field_label(&self, rt: &ResourceType, label: &str) -> Result<String, String> {
        if label == "metadata.name"
            || (rt.namespaced && label == "metadata.namespace")
            || rt.selectable_fields.iter().any(|f| f == label)
        {
            Ok(label.to_string())
        } else {
            Err(format!("field label not supported: {label}"))
        }
    }
}

/// A custom resource version ↔ the CRD's storage version.
#[derive(Debug)]
pub struct CustomConversion;

impl Conversion for CustomConversion {
    fn to_storage(&self, rt: &ResourceType, obj: Value) -> Value {
        custom::to_storage(rt, obj)
    }

    fn to_api(&self, rt: &ResourceType, stored: Bytes) -> ApiResult<Bytes> {
        custom::to_api(rt, stored)
    }

    fn to_api_value(&self, rt: &ResourceType, mut obj: Value) -> Value {
        obj["apiVersion"] = json!(rt.api_version());
        obj
    }

    /// Each served version has its own schema: a write is validated in its version (the
    /// stored object converted to it), as kube-apiserver's per-version strategies do.
    fn writes_in_request_version(&self) -> bool {
        true
    }
}
