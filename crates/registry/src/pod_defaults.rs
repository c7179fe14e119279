//! Defaults of a pod template beyond the pod spec's and containers' own (those are in
//! `pod_template`): probes, HTTP handlers, field selectors and volumes, as core/v1's
//! `SetDefaults_*` functions apply them to every PodTemplateSpec (a Job's template here).

use serde_json::{json, Map, Value};

use super::json_map::{each_object, object_at, set_default};

/// `defaultMode` of secret, configMap, downwardAPI and projected volumes (0644).
const DEFAULT_VOLUME_MODE: i64 = 0o644;
/// `expirationSeconds` of a projected service account token (one hour).
const DEFAULT_TOKEN_EXPIRATION: i64 = 3600;

/// Applies the defaults to a pod spec (`spec.template.spec`).
pub fn default_pod_spec_parts(pod: &mut Map<String, Value>) {
    for list in ["containers", "initContainers"] {
        for c in each_object(pod, list) {
            default_container_parts(c);
        }
    }
    for v in each_object(pod, "volumes") {
        default_volume(v);
    }
}

fn default_container_parts(c: &mut Map<String, Value>) {
    for probe in ["livenessProbe", "readinessProbe", "startupProbe"] {
        if let Some(p) = object_at(c, probe) {
            // SetDefaults_Probe
            set_default(p, "timeoutSeconds", json!(1));
            set_default(p, "periodSeconds", json!(10));
            set_default(p, "successThreshold", json!(1));
            set_default(p, "failureThreshold", json!(3));
            default_http_get(p);
        }
    }
    if let Some(lifecycle) = object_at(c, "lifecycle") {
        for hook in ["postStart", "preStop"] {
            if let Some(h) = object_at(lifecycle, hook) {
                default_http_get(h);
            }
        }
    }
    for env in each_object(c, "env") {
        if let Some(field_ref) = env
            .get_mut("valueFrom")
            .and_then(Value::as_object_mut)
            .and_then(|vf| object_at(vf, "fieldRef"))
        {
            default_field_ref(field_ref);
        }
    }
}

/// SetDefaults_HTTPGetAction: path `/`, scheme `HTTP`.
fn default_http_get(handler: &mut Map<String, Value>) {
    if let Some(get) = object_at(handler, "httpGet") {
        if get
            .get("path")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            get.insert("path".into(), json!("/"));
        }
        if get
            .get("scheme")
            .and_then(Value::as_str)
            .is_none_or(str::is_empty)
        {
            get.insert("scheme".into(), json!("HTTP"));
        }
    }
}

/// SetDefaults_ObjectFieldSelector: `apiVersion: v1`.
fn default_field_ref(field_ref: &mut Map<String, Value>) {
    if field_ref
        .get("apiVersion")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty)
    {
        field_ref.insert("apiVersion".into(), json!("v1"));
    }
}

/// Volume sources (the fields of a volume other than its name).
const SOURCES: &[&str] = &[
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
];

fn default_volume(v: &mut Map<String, Value>) {
    // SetDefaults_Volume: a volume without a source is an emptyDir.
    if !SOURCES
        .iter()
        .any(|s| v.get(*s).is_some_and(|x| !x.is_null()))
    {
        v.insert("emptyDir".into(), json!({}));
    }
    for source in ["secret", "configMap", "downwardAPI", "projected"] {
        if let Some(src) = object_at(v, source) {
            set_default(src, "defaultMode", json!(DEFAULT_VOLUME_MODE));
        }
    }
    if let Some(host_path) = object_at(v, "hostPath") {
        set_default(host_path, "type", json!(""));
    }
    if let Some(downward) = object_at(v, "downwardAPI") {
        for item in each_object(downward, "items") {
            if let Some(field_ref) = object_at(item, "fieldRef") {
                default_field_ref(field_ref);
            }
        }
    }
    if let Some(projected) = object_at(v, "projected") {
        for src in each_object(projected, "sources") {
            if let Some(token) = object_at(src, "serviceAccountToken") {
                set_default(token, "expirationSeconds", json!(DEFAULT_TOKEN_EXPIRATION));
            }
            if let Some(downward) = object_at(src, "downwardAPI") {
                for item in each_object(downward, "items") {
                    if let Some(field_ref) = object_at(item, "fieldRef") {
                        default_field_ref(field_ref);
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probes_handlers_field_refs_and_volumes_get_upstreams_defaults() {
        let mut pod = json!({
            "containers": [{
                "name": "c",
                "livenessProbe": {"httpGet": {"port": 80}},
                "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 5},
                "lifecycle": {"preStop": {"httpGet": {"port": 81, "path": "/stop"}}},
                "env": [{"name": "NODE", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}]
            }],
            "volumes": [
                {"name": "scratch"},
                {"name": "s", "secret": {"secretName": "x"}},
                {"name": "c", "configMap": {"name": "x", "defaultMode": 256}},
                {"name": "h", "hostPath": {"path": "/tmp"}},
                {"name": "p", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}
            ]
        });
        default_pod_spec_parts(pod.as_object_mut().unwrap());
        let c = &pod["containers"][0];
        assert_eq!(
            c["livenessProbe"],
            json!({"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3})
        );
        assert_eq!(c["readinessProbe"]["periodSeconds"], 5);
        assert_eq!(
            c["lifecycle"]["preStop"]["httpGet"],
            json!({"port": 81, "path": "/stop", "scheme": "HTTP"})
        );
        assert_eq!(c["env"][0]["valueFrom"]["fieldRef"]["apiVersion"], "v1");
        let v = &pod["volumes"];
        assert_eq!(v[0], json!({"name": "scratch", "emptyDir": {}}));
        assert_eq!(v[1]["secret"]["defaultMode"], 420);
        assert_eq!(v[2]["configMap"]["defaultMode"], 256);
        assert_eq!(v[3]["hostPath"]["type"], "");
        assert_eq!(v[4]["projected"]["defaultMode"], 420);
        assert_eq!(
            v[4]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"],
            3600
        );
    }
}
