//! The Secrets, ConfigMaps and ServiceAccount a pod spec (JSON) references by name, found
//! and renamed by one walker, so that what the sync endpoint lets a syncer read, what the
//! syncer copies and what it rewrites can never disagree about where references are:
//! volumes (also projected sources), envFrom and env valueFrom of every container, init and
//! ephemeral container, imagePullSecrets, serviceAccountName (and its deprecated alias
//! serviceAccount).

use std::collections::BTreeSet;

use serde_json::Value;

/// The kinds of object a pod spec references by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RefKind {
    Secret,
    ConfigMap,
    ServiceAccount,
}

impl RefKind {
    /// The core/v1 resource (plural).
    pub fn resource(self) -> &'static str {
        match self {
            RefKind::Secret => "secrets",
            RefKind::ConfigMap => "configmaps",
            RefKind::ServiceAccount => "serviceaccounts",
        }
    }

    pub fn kind(self) -> &'static str {
        match self {
            RefKind::Secret => "Secret",
            RefKind::ConfigMap => "ConfigMap",
            RefKind::ServiceAccount => "ServiceAccount",
        }
    }

    pub const ALL: [RefKind; 3] = [RefKind::Secret, RefKind::ConfigMap, RefKind::ServiceAccount];

    /// The kind whose core/v1 resource is `group`/`version`/`plural`, or `None` for any
    /// other resource.
    pub fn from_resource(group: &str, version: &str, plural: &str) -> Option<RefKind> {
        if !group.is_empty() || version != "v1" {
            return None;
        }
        RefKind::ALL.into_iter().find(|k| k.resource() == plural)
    }
}

/// One referenced object (in the pod's own namespace).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Reference {
    pub kind: RefKind,
    pub name: String,
}

/// The ServiceAccount every namespace has; the host namespace has its own, so it is never
/// copied.
pub const DEFAULT_SERVICE_ACCOUNT: &str = "default";

/// Calls `f` with each reference's kind and the JSON string holding its name.
fn walk(pod_spec: &mut Value, f: &mut dyn FnMut(RefKind, &mut Value)) {
    let Some(spec) = pod_spec.as_object_mut() else {
        return;
    };
    if let Some(volumes) = spec.get_mut("volumes").and_then(Value::as_array_mut) {
        for v in volumes {
            if let Some(n) = v.pointer_mut("/secret/secretName") {
                f(RefKind::Secret, n);
            }
            if let Some(n) = v.pointer_mut("/configMap/name") {
                f(RefKind::ConfigMap, n);
            }
            if let Some(sources) = v
                .pointer_mut("/projected/sources")
                .and_then(Value::as_array_mut)
            {
                for s in sources {
                    if let Some(n) = s.pointer_mut("/secret/name") {
                        f(RefKind::Secret, n);
                    }
                    if let Some(n) = s.pointer_mut("/configMap/name") {
                        f(RefKind::ConfigMap, n);
                    }
                }
            }
        }
    }
    for list in ["initContainers", "containers", "ephemeralContainers"] {
        let Some(containers) = spec.get_mut(list).and_then(Value::as_array_mut) else {
            continue;
        };
        for c in containers {
            if let Some(env_from) = c.get_mut("envFrom").and_then(Value::as_array_mut) {
                for e in env_from {
                    if let Some(n) = e.pointer_mut("/secretRef/name") {
                        f(RefKind::Secret, n);
                    }
                    if let Some(n) = e.pointer_mut("/configMapRef/name") {
                        f(RefKind::ConfigMap, n);
                    }
                }
            }
            if let Some(env) = c.get_mut("env").and_then(Value::as_array_mut) {
                for e in env {
                    if let Some(n) = e.pointer_mut("/valueFrom/secretKeyRef/name") {
                        f(RefKind::Secret, n);
                    }
                    if let Some(n) = e.pointer_mut("/valueFrom/configMapKeyRef/name") {
                        f(RefKind::ConfigMap, n);
                    }
                }
            }
        }
    }
    if let Some(secrets) = spec
        .get_mut("imagePullSecrets")
        .and_then(Value::as_array_mut)
    {
        for s in secrets {
            if let Some(n) = s.get_mut("name") {
                f(RefKind::Secret, n);
            }
        }
    }
    for field in ["serviceAccountName", "serviceAccount"] {
        if let Some(n) = spec.get_mut(field) {
            f(RefKind::ServiceAccount, n);
        }
    }
}

/// The objects `pod_spec` references, without the `default` ServiceAccount.
pub fn extract(pod_spec: &Value) -> BTreeSet<Reference> {
    let mut copy = pod_spec.clone();
    let mut refs = BTreeSet::new();
    walk(&mut copy, &mut |kind, name| {
        if let Some(name) = name.as_str().filter(|n| !n.is_empty()) {
            if kind == RefKind::ServiceAccount && name == DEFAULT_SERVICE_ACCOUNT {
                return;
            }
            refs.insert(Reference {
                kind,
                name: name.to_owned(),
            });
        }
    });
    refs
}

/// Renames every reference in `pod_spec` to `rename(reference)` (the `default`
/// ServiceAccount stays as it is).
pub fn rewrite(pod_spec: &mut Value, rename: &dyn Fn(&Reference) -> String) {
    walk(pod_spec, &mut |kind, name| {
        let Some(current) = name.as_str().filter(|n| !n.is_empty()) else {
            return;
        };
        if kind == RefKind::ServiceAccount && current == DEFAULT_SERVICE_ACCOUNT {
            return;
        }
        let new = rename(&Reference {
            kind,
            name: current.to_owned(),
        });
        *name = Value::String(new);
    });
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec() -> Value {
        json!({
            "serviceAccountName": "runner",
            "imagePullSecrets": [{"name": "pull"}],
            "volumes": [
                {"name": "a", "secret": {"secretName": "vol-secret"}},
                {"name": "b", "configMap": {"name": "vol-cm"}},
                {"name": "c", "projected": {"sources": [
                    {"secret": {"name": "proj-secret"}},
                    {"configMap": {"name": "proj-cm"}},
                    {"serviceAccountToken": {"path": "t"}}
                ]}},
                {"name": "d", "emptyDir": {}}
            ],
            "initContainers": [{"name": "i", "envFrom": [{"secretRef": {"name": "init-env"}}]}],
            "containers": [{
                "name": "c",
                "envFrom": [{"configMapRef": {"name": "env-cm"}}],
                "env": [
                    {"name": "X", "valueFrom": {"secretKeyRef": {"name": "key-secret", "key": "k"}}},
                    {"name": "Y", "valueFrom": {"configMapKeyRef": {"name": "key-cm", "key": "k"}}},
                    {"name": "Z", "value": "plain"}
                ]
            }]
        })
    }

    #[test]
    fn every_reference_is_found() {
        let refs = extract(&spec());
        let got: Vec<(RefKind, &str)> = refs.iter().map(|r| (r.kind, r.name.as_str())).collect();
        let mut want = vec![
            (RefKind::ServiceAccount, "runner"),
            (RefKind::Secret, "pull"),
            (RefKind::Secret, "vol-secret"),
            (RefKind::ConfigMap, "vol-cm"),
            (RefKind::Secret, "proj-secret"),
            (RefKind::ConfigMap, "proj-cm"),
            (RefKind::Secret, "init-env"),
            (RefKind::ConfigMap, "env-cm"),
            (RefKind::Secret, "key-secret"),
            (RefKind::ConfigMap, "key-cm"),
        ];
        want.sort();
        assert_eq!(got, want);
    }

    #[test]
    fn the_default_service_account_is_not_a_reference() {
        assert!(extract(&json!({"serviceAccountName": "default", "containers": []})).is_empty());
        assert!(extract(&json!({"containers": [{"name": "c"}]})).is_empty());
        assert!(extract(&json!(null)).is_empty());
    }

    #[test]
    fn rewriting_renames_each_reference_where_it_is() {
        let mut s = spec();
        rewrite(&mut s, &|r| format!("{}-x", r.name));
        let refs = extract(&s);
        assert_eq!(refs.len(), 10);
        assert!(refs.iter().all(|r| r.name.ends_with("-x")), "{refs:?}");
        assert_eq!(s["volumes"][0]["secret"]["secretName"], "vol-secret-x");
        assert_eq!(
            s["containers"][0]["env"][1]["valueFrom"]["configMapKeyRef"]["name"],
            "key-cm-x"
        );
        assert_eq!(s["containers"][0]["env"][2]["value"], "plain");
        assert_eq!(s["serviceAccountName"], "runner-x");
        let mut d = json!({"serviceAccountName": "default"});
        rewrite(&mut d, &|r| format!("{}-x", r.name));
        assert_eq!(d["serviceAccountName"], "default");
    }

    #[test]
    fn kinds_are_found_by_their_core_resource() {
        assert_eq!(
            RefKind::from_resource("", "v1", "secrets"),
            Some(RefKind::Secret)
        );
        assert_eq!(
            RefKind::from_resource("", "v1", "serviceaccounts"),
            Some(RefKind::ServiceAccount)
        );
        assert_eq!(RefKind::from_resource("apps", "v1", "secrets"), None);
        assert_eq!(RefKind::from_resource("", "v1", "pods"), None);
    }
}
