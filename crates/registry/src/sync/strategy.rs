//! sync.kplane.io/v1alpha1 SyncTarget: a cluster-scoped object naming a syncer that runs
//! the objects of `spec.resources` (default batch/v1 jobs) of its logical cluster (and,
//! with `spec.includeDescendants`, of the workspaces below it) on a real cluster. The
//! strategy defaults the spec, validates it, adds the `sync.kplane.io/drain` finalizer on
//! create (released by the syncer or the sync controllers once the target is drained),
//! counts spec changes in `metadata.generation`, and leaves `status` to `/status` (the
//! syncer's heartbeat). Which objects go to which target is the `SyncAssignment`
//! admission plugin's business (`sync::admission`), which reads the spec
//! through [`TargetSpec`].

use kplane_types::{Cause, ClusterName};
use serde_json::{json, Value};

use crate::catalog::ResourceType;
use crate::error::ApiResult;
use crate::hooks::WriteHooks;
use crate::meta::{self, NameRule};
use crate::strategy::TypeStrategy;
use crate::Registry;

use super::spec::{
    validate_spec, validate_status, DEFAULT_HEARTBEAT_TIMEOUT_SECONDS, DRAIN_FINALIZER,
};

#[derive(Debug)]
pub struct SyncTarget;

impl TypeStrategy for SyncTarget {
    fn has_generation(&self) -> bool {
        true
    }

    /// A target's name is used as a label value and in a Lease's name on the host.
    fn name_rule(&self) -> NameRule {
        NameRule::Dns1123Label
    }

    /// `spec.resources` defaults to batch/v1 jobs, `spec.heartbeatTimeoutSeconds` to 30.
    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        let Some(o) = obj.as_object_mut() else {
            return;
        };
        let spec = o.entry("spec").or_insert_with(|| json!({}));
        if spec.is_null() {
            *spec = json!({});
        }
        let Some(spec) = spec.as_object_mut() else {
            return;
        };
        let empty = match spec.get("resources") {
            None | Some(Value::Null) => true,
            Some(Value::Array(a)) => a.is_empty(),
            Some(_) => false,
        };
        if empty {
            spec.insert(
                "resources".into(),
                json!([{"group": "batch", "version": "v1", "resource": "jobs"}]),
            );
        }
        if spec
            .get("heartbeatTimeoutSeconds")
            .is_none_or(Value::is_null)
        {
            spec.insert(
                "heartbeatTimeoutSeconds".into(),
                json!(DEFAULT_HEARTBEAT_TIMEOUT_SECONDS),
            );
        }
    }

    /// The drain finalizer, and a status that says no syncer has reported yet.
    fn prepare_for_create(&self, _rt: &ResourceType, obj: &mut Value) {
        if let Ok(m) = meta::meta_mut(obj) {
            let fins = m.entry("finalizers").or_insert_with(|| json!([]));
            if !fins.is_array() {
                *fins = json!([]);
            }
            if let Value::Array(a) = fins {
                if !a.iter().any(|f| f == DRAIN_FINALIZER) {
                    a.push(json!(DRAIN_FINALIZER));
                }
            }
        }
        obj["status"] = json!({
            "conditions": [{
                "type": "Ready",
                "status": "Unknown",
                "reason": "NoHeartbeat",
                "message": "no syncer has reported for this target yet",
                "lastTransitionTime": meta::now_time(),
            }],
        });
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value, _old: Option<&Value>) -> Vec<Cause> {
        validate_spec(obj)
    }

    fn validate_status_update(&self, _rt: &ResourceType, obj: &Value) -> Vec<Cause> {
        validate_status(obj)
    }

    fn deletes_in_bulk(&self) -> bool {
        false
    }
}

#[async_trait::async_trait]
impl WriteHooks<Registry> for SyncTarget {
    /// A changed target is re-read for assignment (heartbeats leave it as it is).
    async fn after_update(
        &self,
        reg: &Registry,
        cluster: &ClusterName,
        name: &str,
        _deleting: bool,
    ) -> ApiResult<()> {
        reg.sync_target_written(cluster, name).await;
        Ok(())
    }

    /// The assignment cache sees a new or deleted target at once.
    fn after_write(&self, reg: &Registry, cluster: &ClusterName) {
        reg.sync_target_cache().invalidate(cluster.as_str());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::builtin_types::builtin;
    use crate::sync::spec::TargetSpec;

    fn rendered(causes: Vec<Cause>) -> Vec<String> {
        causes.iter().map(Cause::render).collect()
    }

    fn rt() -> ResourceType {
        builtin()
            .into_iter()
            .find(|r| r.plural == "synctargets")
            .unwrap()
    }

    #[test]
    fn the_spec_is_defaulted() {
        let rt = rt();
        let mut obj = json!({"metadata": {"name": "east"}});
        SyncTarget.default(&rt, &mut obj);
        assert_eq!(
            obj["spec"],
            json!({"resources": [{"group": "batch", "version": "v1", "resource": "jobs"}],
                   "heartbeatTimeoutSeconds": 30})
        );
        assert!(validate_spec(&obj).is_empty());
        let mut given = json!({"metadata": {"name": "east"}, "spec": {
            "resources": [{"group": "apps", "version": "v1", "resource": "deployments"}],
            "heartbeatTimeoutSeconds": 5}});
        let before = given.clone();
        SyncTarget.default(&rt, &mut given);
        assert_eq!(given, before);
    }

    #[test]
    fn reflected_pods_are_validated_and_defaulted() {
        let good = json!({"metadata": {"name": "east"}, "spec": {
        "resources": [{"group": "batch", "version": "v1", "resource": "jobs"}],
        "heartbeatTimeoutSeconds": 30,
        "reflectPods": [
            {"hostNamespace": "hive", "selector": {"matchLabels": {"control-plane": "controller-manager"}}},
            {"hostNamespace": "ops", "selector": {}, "cluster": "root:t:a", "namespace": "operators"},
        ]}});
        assert!(
            validate_spec(&good).is_empty(),
            "{:?}",
            validate_spec(&good)
        );
        let spec = TargetSpec::of(&good);
        assert_eq!(spec.reflect_pods[0].namespace, "hive");
        assert_eq!(spec.reflect_pods[0].cluster, "");
        assert!(spec.reflects_pods_into("root:t", "root:t", "hive"));
        assert!(spec.reflects_pods_into("root:t", "root:t:a", "operators"));
        assert!(!spec.reflects_pods_into("root:t", "root:t:a", "hive"));
        assert!(!spec.reflects_pods_into("root:t", "root:t", "operators"));
        let bad = json!({"spec": {
        "resources": [{"group": "batch", "version": "v1", "resource": "jobs"}],
        "heartbeatTimeoutSeconds": 30,
        "reflectPods": [
            {"selector": {}},
            {"hostNamespace": "Hive", "selector": {"matchLabels": {"a": "b c"}}, "cluster": "Root", "namespace": 3},
            "hive",
        ]}});
        assert_eq!(
            rendered(validate_spec(&bad)),
            [
                "spec.reflectPods[0].hostNamespace: Required value",
                "spec.reflectPods[1].hostNamespace: Invalid value: \"Hive\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "spec.reflectPods[1].namespace: Invalid value: 3: must be a string",
                "spec.reflectPods[1].selector.matchLabels: Invalid value: \"b c\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                "spec.reflectPods[1].cluster: Invalid value: \"Root\": must be a logical cluster name (segments of lower-case letters, digits and '-', joined by ':')",
                "spec.reflectPods[2]: Invalid value: \"hive\": must be an object",
            ]
        );
    }

    #[test]
    fn create_adds_the_drain_finalizer_and_an_unknown_ready_condition() {
        let rt = rt();
        let mut obj = json!({"metadata": {"name": "east", "finalizers": ["x"]},
                             "status": {"syncedObjects": 3}});
        SyncTarget.prepare_for_create(&rt, &mut obj);
        assert_eq!(obj["metadata"]["finalizers"], json!(["x", DRAIN_FINALIZER]));
        assert_eq!(obj["status"]["conditions"][0]["status"], "Unknown");
        assert_eq!(obj["status"]["conditions"][0]["reason"], "NoHeartbeat");
        assert!(obj["status"].get("syncedObjects").is_none());
        SyncTarget.prepare_for_create(&rt, &mut obj);
        assert_eq!(obj["metadata"]["finalizers"], json!(["x", DRAIN_FINALIZER]));
    }

    #[test]
    fn bad_specs_are_refused_with_each_field_named() {
        let bad = json!({"spec": {
            "namespaceSelector": {"matchExpressions": [{"key": "a", "operator": "Sometimes"}],
                                  "matchLabels": {"b": "not valid!"}},
            "includeDescendants": "yes",
            "resources": [
                {"group": "batch", "version": "v1", "resource": "jobs"},
                {"group": "batch", "version": "", "resource": "jobs"},
                {"group": "apps", "version": "v1"},
                {"group": "batch", "version": "v1", "resource": "jobs"},
                {"group": 1, "version": "v1", "resource": "Jobs"},
                "jobs",
            ],
            "heartbeatTimeoutSeconds": 0}});
        assert_eq!(
            rendered(validate_spec(&bad)),
            [
                "spec.namespaceSelector.matchLabels: Invalid value: \"not valid!\": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')",
                "spec.namespaceSelector.matchExpressions[0].operator: Invalid value: \"Sometimes\": not a valid selector operator",
                "spec.includeDescendants: Invalid value: \"yes\": must be a boolean",
                "spec.resources[1].version: Required value",
                "spec.resources[2].resource: Required value",
                "spec.resources[3]: Duplicate value: {\"group\":\"batch\",\"resource\":\"jobs\",\"version\":\"v1\"}",
                "spec.resources[4].group: Invalid value: 1: must be a string",
                "spec.resources[4].resource: Invalid value: \"Jobs\": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')",
                "spec.resources[5]: Invalid value: \"jobs\": must be an object",
                "spec.heartbeatTimeoutSeconds: Invalid value: 0: must be greater than or equal to 1",
            ]
        );
        assert_eq!(
            rendered(validate_spec(&json!({"spec": {"resources": []}}))),
            [
                "spec.resources: Required value",
                "spec.heartbeatTimeoutSeconds: Required value"
            ]
        );
        let core = json!({"spec": {"resources": [{"version": "v1", "resource": "pods"}],
                                   "heartbeatTimeoutSeconds": 1,
                                   "namespaceSelector": {"matchLabels": {"sync": "yes"}}}});
        assert!(validate_spec(&core).is_empty());
    }

    #[test]
    fn status_conditions_and_counts_are_checked() {
        let ok = json!({"status": {"syncedObjects": 0, "lastHeartbeatTime": "2026-11-24T10:00:00Z",
            "conditions": [{"type": "Ready", "status": "True", "reason": "HeartbeatReceived"},
                           {"type": "Drained", "status": "False"}]}});
        assert!(validate_status(&ok).is_empty());
        let bad = json!({"status": {"syncedObjects": -1, "conditions": [
            {"type": "Ready", "status": "Yes"}, {"type": "Ready", "status": "True"}, {"status": "True"}]}});
        assert_eq!(
            rendered(validate_status(&bad)),
            [
                "status.syncedObjects: Invalid value: -1: must be greater than or equal to 0",
                "status.conditions[0].status: Unsupported value: \"Yes\": supported values: \"True\", \"False\", \"Unknown\"",
                "status.conditions[1].type: Duplicate value: \"Ready\"",
                "status.conditions[2].type: Required value",
            ]
        );
    }

    #[test]
    fn the_target_spec_is_read_with_defaults() {
        let obj = json!({"metadata": {"name": "east", "deletionTimestamp": "2026-11-24T10:00:00Z"},
                         "spec": {"includeDescendants": true,
                                  "namespaceSelector": {"matchLabels": {"sync": "yes"}}}});
        let t = TargetSpec::of(&obj);
        assert_eq!(t.name, "east");
        assert!(t.deleting && t.include_descendants);
        assert!(t.syncs("batch", "v1", "jobs"));
        assert!(!t.syncs("apps", "v1", "deployments"));
        let yes = json!({"sync": "yes"});
        let no = json!({"sync": "no"});
        assert!(t.selects_namespace(yes.as_object().unwrap()));
        assert!(!t.selects_namespace(no.as_object().unwrap()));
        let all = TargetSpec::of(&json!({"metadata": {"name": "w"}}));
        assert!(all.selects_namespace(no.as_object().unwrap()));
        assert!(!all.deleting && !all.include_descendants);
    }
}
