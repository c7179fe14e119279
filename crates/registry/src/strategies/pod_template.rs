//! core/v1 PodTemplate: a pod template stored for others to stamp out. The rules are the
//! crate's `pod_template` module (pod spec defaults, `ValidatePodTemplateSpec` at
//! `template`); this is how they plug into the write path. A generation counting template
//! changes, no status, and the generic field selector labels.

use kplane_types::Cause;
use serde_json::Value;

use crate::catalog::ResourceType;
use crate::strategy::TypeStrategy;
use crate::{pod, pod_template, stored_form};

#[derive(Debug)]
pub struct PodTemplate;

#[async_trait::async_trait]
impl TypeStrategy for PodTemplate {
    fn has_generation(&self) -> bool {
        true
    }

    fn default(&self, _rt: &ResourceType, obj: &mut Value) {
        pod_template::default_pod_template(obj);
    }

    fn canonicalize(&self, _rt: &ResourceType, obj: &mut Value) {
        pod::template_round_trip(obj);
        stored_form::pod_template(obj);
    }

    fn validate(&self, _rt: &ResourceType, obj: &Value, _old: Option<&Value>) -> Vec<Cause> {
        pod_template::validate_pod_template(obj)
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::{json, Value};

    use crate::options::WriteParams;
    use crate::testing::{self, target};

    fn template(spec: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "PodTemplate",
            "metadata": {"name": "tpl", "namespace": "default"},
            "template": {"metadata": {"labels": {"app": "web"}}, "spec": spec}})
    }

    #[tokio::test]
    async fn written_templates_are_defaulted_stored_as_upstream_and_count_template_changes() {
        let fx = testing::fixture().await;
        let reg = &fx.reg;
        let t = target(reg, "", "podtemplates", Some("default"));
        let w = WriteParams::default();
        let body = template(json!({"containers": [{"name": "c", "image": "nginx",
            "ports": [{"containerPort": 80}]}], "serviceAccount": "builder",
            "nodeName": "", "activeDeadlineSeconds": null}));
        let created: Value =
            serde_json::from_slice(&reg.create(&t, body, &w).await.unwrap()).unwrap();
        assert_eq!(created["metadata"]["generation"], 1);
        assert_eq!(
            created["template"],
            json!({"metadata": {"creationTimestamp": null, "labels": {"app": "web"}},
                "spec": {"containers": [{"name": "c", "image": "nginx",
                    "ports": [{"containerPort": 80, "protocol": "TCP"}], "resources": {},
                    "terminationMessagePath": "/dev/termination-log",
                    "terminationMessagePolicy": "File", "imagePullPolicy": "Always"}],
                    "restartPolicy": "Always", "terminationGracePeriodSeconds": 30,
                    "dnsPolicy": "ClusterFirst", "serviceAccountName": "builder",
                    "serviceAccount": "builder", "securityContext": {},
                    "schedulerName": "default-scheduler"}})
        );
        assert!(created.get("status").is_none());

        // A label change keeps the generation; a template that defaults to the stored one
        // too; a changed template bumps it.
        let mut labelled = created.clone();
        labelled["metadata"]["labels"] = json!({"team": "a"});
        let after: Value =
            serde_json::from_slice(&reg.update(&t, "tpl", None, labelled, &w).await.unwrap().0)
                .unwrap();
        assert_eq!(after["metadata"]["generation"], 1);
        let mut same = after.clone();
        same["template"]["spec"]
            .as_object_mut()
            .unwrap()
            .remove("dnsPolicy");
        let after: Value =
            serde_json::from_slice(&reg.update(&t, "tpl", None, same, &w).await.unwrap().0)
                .unwrap();
        assert_eq!(after["metadata"]["generation"], 1);
        let mut changed = after.clone();
        changed["template"]["spec"]["containers"][0]["image"] = json!("nginx:2");
        let after: Value =
            serde_json::from_slice(&reg.update(&t, "tpl", None, changed, &w).await.unwrap().0)
                .unwrap();
        assert_eq!(after["metadata"]["generation"], 2);
        assert_eq!(
            after["template"]["spec"]["containers"][0]["imagePullPolicy"],
            "Always"
        );
    }

    #[tokio::test]
    async fn an_invalid_template_is_a_422_at_upstreams_paths_on_create_and_update() {
        let fx = testing::fixture().await;
        let reg = &fx.reg;
        let t = target(reg, "", "podtemplates", Some("default"));
        let w = WriteParams::default();
        let bare = json!({"apiVersion": "v1", "kind": "PodTemplate",
            "metadata": {"name": "tpl", "namespace": "default"}});
        let err = reg.create(&t, bare, &w).await.err().unwrap();
        assert_eq!(err.code(), 422);
        assert_eq!(
            err.0.message,
            "PodTemplate \"tpl\" is invalid: template.spec.containers: Required value"
        );
        let bad = template(json!({"containers": [{"name": "c", "image": "x"}],
            "restartPolicy": "Sometimes",
            "ephemeralContainers": [{"name": "e", "image": "x"}]}));
        let err = reg.create(&t, bad, &w).await.err().unwrap();
        assert_eq!(
            err.0.message,
            "PodTemplate \"tpl\" is invalid: [\
             template.spec.restartPolicy: Unsupported value: \"Sometimes\": supported values: \"Always\", \"OnFailure\", \"Never\", \
             template.spec.ephemeralContainers: Forbidden: ephemeral containers not allowed in pod template]"
        );
        assert_eq!(reg.get(&t, "tpl").await.err().unwrap().code(), 404);

        let ok = template(json!({"containers": [{"name": "c", "image": "x"}]}));
        let created: Value =
            serde_json::from_slice(&reg.create(&t, ok, &w).await.unwrap()).unwrap();
        let mut emptied = created.clone();
        emptied["template"]["spec"]["containers"] = json!([]);
        let err = reg
            .update(&t, "tpl", None, emptied, &w)
            .await
            .err()
            .unwrap();
        assert_eq!(err.code(), 422);
        assert_eq!(
            err.0.message,
            "PodTemplate \"tpl\" is invalid: template.spec.containers: Required value"
        );
    }
}
