//! core/v1 Namespace (`pkg/registry/core/namespace/strategy.go`): the
//! `kubernetes.io/metadata.name` label, the `kubernetes` finalizer in `spec.finalizers`, the
//! phase (Active, Terminating when marked for deletion), a spec only `/finalize` may change,
//! and the namespace controller's work once a namespace is being deleted.

use kplane_types::Cause;
use kplane_types::ClusterName;
use serde_json::{json, Value};

use crate::catalog::ResourceType;
use crate::controllers::namespace::Namespaces;
use crate::controllers::queue::Named;
use crate::error::{ApiError, ApiResult};
use crate::hooks::WriteHooks;
use crate::meta::{self, NameRule};
use crate::strategy::{keep_stored_status, with_field_from, TypeStrategy};
use crate::Registry;

#[derive(Debug)]
pub struct Namespace;

impl TypeStrategy for Namespace {
    fn name_rule(&self) -> NameRule {
        NameRule::Dns1123Label
    }

    fn prepare_for_create(&self, _rt: &ResourceType, obj: &mut Value) {
        let name = meta::name_of(obj).to_string();
        set_name_label(obj, &name);
        // PrepareForCreate: the `kubernetes` finalizer is always there.
        if !obj.get("spec").is_some_and(Value::is_object) {
            obj["spec"] = json!({});
        }
        let fins = &mut obj["spec"]["finalizers"];
        if !fins.is_array() {
            *fins = json!([]);
        }
        if let Value::Array(list) = fins {
            if !list.iter().any(|f| f == "kubernetes") {
                list.push(json!("kubernetes"));
            }
        }
        obj["status"] = json!({"phase": "Active"});
    }

    /// The main endpoint changes neither the status nor the spec (its finalizers belong to
    /// `/finalize`).
    fn prepare_for_update(&self, rt: &ResourceType, new: &mut Value, old: &Value) {
        keep_stored_status(rt, new, old);
        set_name_label(new, meta::name_of(old));
        match old.get("spec") {
            Some(s) => new["spec"] = s.clone(),
            None => {
                if let Some(o) = new.as_object_mut() {
                    o.remove("spec");
                }
            }
        }
    }

    /// `/status` takes the request's metadata and status and keeps the stored spec;
    /// `/finalize` takes the request's metadata and spec (its finalizers) and keeps the
    /// stored status (`namespaceFinalizeStrategy`).
    fn prepare_for_subresource_update(
        &self,
        _rt: &ResourceType,
        sub: &str,
        new: Value,
        old: &Value,
    ) -> ApiResult<Value> {
        let kept = match sub {
            "status" => "spec",
            "finalize" => "status",
            other => return Err(ApiError::not_found_sub(other)),
        };
        let mut out = with_field_from(new, old, kept);
        set_name_label(&mut out, meta::name_of(old));
        Ok(out)
    }

    /// ValidateNamespaceStatusUpdate: the phase follows the deletion timestamp.
    fn validate_status_update(&self, _rt: &ResourceType, obj: &Value) -> Vec<Cause> {
        let phase = obj
            .pointer("/status/phase")
            .and_then(Value::as_str)
            .unwrap_or("");
        let (want, detail) = if meta::is_deleting(obj) {
            (
                "Terminating",
                "may only be 'Terminating' if `deletionTimestamp` is not empty",
            )
        } else {
            (
                "Active",
                "may only be 'Active' if `deletionTimestamp` is empty",
            )
        };
        if phase == want {
            return Vec::new();
        }
        vec![Cause::invalid("status.Phase", &json!(phase), detail)]
    }

    /// The namespace controller empties a namespace; its owner references are not the
    /// garbage collector's business.
    fn delete_propagates(&self) -> bool {
        false
    }

    /// `spec.finalizers` (the `kubernetes` finalizer) hold the namespace until it is empty.
    fn holds_deletion(&self, obj: &Value) -> bool {
        obj.pointer("/spec/finalizers")
            .and_then(Value::as_array)
            .is_some_and(|a| !a.is_empty())
    }

    fn prepare_for_delete(&self, _rt: &ResourceType, marked: &mut Value) {
        marked["status"]["phase"] = json!("Terminating");
    }

    fn deletes_in_bulk(&self) -> bool {
        false
    }

    /// Namespace accepts `metadata.name` and its selectable fields (`status.phase`) only.
    fn field_label(&self, rt: &ResourceType, label: &str) -> Result<String, String> {
        if label == "metadata.name" || rt.selectable_fields.iter().any(|f| f == label) {
            Ok(label.to_string())
        } else {
            Err(format!("field label not supported: {label}"))
        }
    }
}

#[async_trait::async_trait]
impl WriteHooks<Registry> for Namespace {
    /// A new namespace gets its `default` ServiceAccount and `kube-root-ca.crt`.
    async fn after_create(
        &self,
        reg: &Registry,
        cluster: &ClusterName,
        name: &str,
    ) -> ApiResult<()> {
        reg.bootstrap_namespace(cluster, name).await;
        Ok(())
    }

    /// A namespace marked for deletion is emptied by the namespace lifecycle worker.
    async fn after_update(
        &self,
        reg: &Registry,
        cluster: &ClusterName,
        name: &str,
        deleting: bool,
    ) -> ApiResult<()> {
        if deleting {
            reg.enqueue::<Namespaces>(Named::new(cluster.clone(), name));
        }
        Ok(())
    }
}

fn set_name_label(obj: &mut Value, name: &str) {
    if let Ok(m) = meta::meta_mut(obj) {
        let labels = m.entry("labels").or_insert_with(|| json!({}));
        if !labels.is_object() {
            *labels = json!({});
        }
        labels["kubernetes.io/metadata.name"] = json!(name);
    }
}
