//! Which Secrets, ConfigMaps and ServiceAccounts a synced object's pod template refers to
//! (what the syncer copies to the host, and so what the sync endpoint lets it read), per
//! kind: the pod spec found in the object ([`pod_spec`]), its references found by the one
//! walker the syncer uses too (`kplane_types::pod_refs`), and the ServiceAccount `default`
//! when it names none.

use std::collections::BTreeSet;

pub use kplane_types::pod_refs::RefKind;
use kplane_types::pod_refs::{self, Reference, DEFAULT_SERVICE_ACCOUNT};
use serde_json::Value;

/// The names a pod template refers to, per kind.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct References {
    pub secrets: BTreeSet<String>,
    pub config_maps: BTreeSet<String>,
    pub service_accounts: BTreeSet<String>,
}

impl References {
    /// Every reference, with its kind.
    pub fn all(&self) -> impl Iterator<Item = (RefKind, &str)> {
        self.secrets
            .iter()
            .map(|n| (RefKind::Secret, n.as_str()))
            .chain(
                self.config_maps
                    .iter()
                    .map(|n| (RefKind::ConfigMap, n.as_str())),
            )
            .chain(
                self.service_accounts
                    .iter()
                    .map(|n| (RefKind::ServiceAccount, n.as_str())),
            )
    }

    /// Whether `name` of `kind` is among them.
    pub fn contains(&self, kind: RefKind, name: &str) -> bool {
        match kind {
            RefKind::Secret => self.secrets.contains(name),
            RefKind::ConfigMap => self.config_maps.contains(name),
            RefKind::ServiceAccount => self.service_accounts.contains(name),
        }
    }
}

/// The pod spec inside a synced object: `spec.template.spec` (Jobs, Deployments and the
/// other workload kinds), `spec.jobTemplate.spec.template.spec` (CronJobs), or `spec` of
/// a Pod. `None` when the object has none.
pub fn pod_spec(obj: &Value) -> Option<&Value> {
    if obj.get("kind").and_then(Value::as_str) == Some("Pod") {
        return obj.get("spec").filter(|s| s.is_object());
    }
    obj.pointer("/spec/template/spec")
        .or_else(|| obj.pointer("/spec/jobTemplate/spec/template/spec"))
        .filter(|s| s.is_object())
}

/// The references of an object's pod template (empty when it has none).
pub fn of_object(obj: &Value) -> References {
    pod_spec(obj).map(references).unwrap_or_default()
}

/// The references of a pod spec (the one walker of `kplane_types::pod_refs`), and the
/// `default` ServiceAccount when it names none: the pod runs as that one.
pub fn references(spec: &Value) -> References {
    let mut r = References::default();
    for Reference { kind, name } in pod_refs::extract(spec) {
        match kind {
            RefKind::Secret => r.secrets.insert(name),
            RefKind::ConfigMap => r.config_maps.insert(name),
            RefKind::ServiceAccount => r.service_accounts.insert(name),
        };
    }
    if r.service_accounts.is_empty() {
        r.service_accounts
            .insert(DEFAULT_SERVICE_ACCOUNT.to_string());
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn set(names: &[&str]) -> BTreeSet<String> {
        names.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn references_are_grouped_by_kind() {
        // Where references are is the walker's business (kplane_types::pod_refs, tested
        // there); here: one of each kind lands in its own set.
        let job = json!({"kind": "Job", "spec": {"template": {"spec": {
            "serviceAccountName": "runner",
            "imagePullSecrets": [{"name": "pull"}],
            "volumes": [{"name": "b", "configMap": {"name": "vol-cm"}}],
            "containers": [{"name": "m", "env": [{"name": "Z", "value": "plain"}]}]
        }}}});
        let r = of_object(&job);
        assert_eq!(r.secrets, set(&["pull"]));
        assert_eq!(r.config_maps, set(&["vol-cm"]));
        assert_eq!(r.service_accounts, set(&["runner"]));
        assert!(r.contains(RefKind::Secret, "pull"));
        assert!(!r.contains(RefKind::ConfigMap, "pull"));
        assert!(!r.contains(RefKind::Secret, "plain"));
    }

    #[test]
    fn the_service_account_defaults_to_default_and_other_shapes_are_found() {
        let job = json!({"spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}});
        assert_eq!(of_object(&job).service_accounts, set(&["default"]));
        assert!(of_object(&job).secrets.is_empty());
        let cron = json!({"kind": "CronJob", "spec": {"jobTemplate": {"spec": {"template": {"spec": {
            "serviceAccount": "legacy", "imagePullSecrets": [{"name": "p"}]}}}}}});
        assert_eq!(of_object(&cron).service_accounts, set(&["legacy"]));
        assert_eq!(of_object(&cron).secrets, set(&["p"]));
        let pod = json!({"kind": "Pod", "spec": {"volumes": [{"name": "v", "secret": {"secretName": "s"}}]}});
        assert_eq!(of_object(&pod).secrets, set(&["s"]));
        // No pod template: nothing at all, not even the default ServiceAccount.
        assert_eq!(
            of_object(&json!({"kind": "ConfigMap", "data": {}})),
            References::default()
        );
    }
}
