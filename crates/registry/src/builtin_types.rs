//! The built-in types kplane serves in every logical cluster: each one's served facts
//! (group, version, kind, scope, verbs, short names, subresources, schema) and the
//! strategy that gives it its behaviour. Custom resources get entries of the same shape
//! from their CRDs (`crd.rs`).

use std::sync::Arc;

use crate::catalog::ResourceType;
use crate::cluster_cache::Invalidate;
use crate::hooks::{DropCached, Table, WriteHooks};
use crate::strategies;
use crate::strategy::TypeStrategy;
use crate::Registry;

fn strings(s: &[&str]) -> Vec<String> {
    s.iter().map(|x| x.to_string()).collect()
}

const CRUD: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
const STATUS_VERBS: &[&str] = &["get", "patch", "update"];

struct Spec {
    group: &'static str,
    version: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
    schema: &'static str,
    strategy: Arc<dyn TypeStrategy>,
}

fn base(s: Spec) -> ResourceType {
    ResourceType {
        group: s.group.into(),
        version: s.version.into(),
        kind: s.kind.into(),
        list_kind: format!("{}List", s.kind),
        plural: s.plural.into(),
        singular: s.kind.to_ascii_lowercase(),
        namespaced: s.namespaced,
        short_names: vec![],
        categories: vec![],
        verbs: CRUD.to_vec(),
        subresources: vec![],
        schema_name: s.schema.into(),
        storage_resource: format!("{}/{}", s.group, s.plural),
        strategy: s.strategy,
        conversion: None,
        status_subresource: false,
        selectable_fields: vec![],
        custom: None,
    }
}

fn review(
    group: &'static str,
    kind: &'static str,
    plural: &'static str,
    namespaced: bool,
) -> ResourceType {
    let version = "v1";
    let schema = match group {
        "authorization.k8s.io" => format!("io.k8s.api.authorization.v1.{kind}"),
        _ => format!("io.k8s.api.authentication.v1.{kind}"),
    };
    let mut r = base(Spec {
        group,
        version,
        kind,
        plural,
        namespaced,
        schema: "",
        strategy: Arc::new(strategies::Review),
    });
    r.schema_name = schema;
    r.verbs = vec!["create"];
    r
}

/// Every built-in resource kplane serves, in discovery order.
pub fn builtin() -> Vec<ResourceType> {
    use strategies::*;
    let mut out = Vec::new();

    let mut ns = base(Spec {
        group: "",
        version: "v1",
        kind: "Namespace",
        plural: "namespaces",
        namespaced: false,
        schema: "io.k8s.api.core.v1.Namespace",
        strategy: Arc::new(Namespace),
    });
    ns.short_names = vec!["ns".into()];
    ns.subresources = vec![
        ("finalize".into(), vec!["update"]),
        ("status".into(), STATUS_VERBS.to_vec()),
    ];
    ns.status_subresource = true;
    ns.selectable_fields = strings(&["status.phase"]);
    out.push(ns);

    let mut cm = base(Spec {
        group: "",
        version: "v1",
        kind: "ConfigMap",
        plural: "configmaps",
        namespaced: true,
        schema: "io.k8s.api.core.v1.ConfigMap",
        strategy: Arc::new(ConfigMap),
    });
    cm.short_names = vec!["cm".into()];
    out.push(cm);

    let mut rq = base(Spec {
        group: "",
        version: "v1",
        kind: "ResourceQuota",
        plural: "resourcequotas",
        namespaced: true,
        schema: "io.k8s.api.core.v1.ResourceQuota",
        strategy: Arc::new(ResourceQuota),
    });
    rq.short_names = vec!["quota".into()];
    rq.subresources = vec![("status".into(), STATUS_VERBS.to_vec())];
    rq.status_subresource = true;
    out.push(rq);

    let mut ev = base(Spec {
        group: "",
        version: "v1",
        kind: "Event",
        plural: "events",
        namespaced: true,
        schema: "io.k8s.api.core.v1.Event",
        strategy: Arc::new(CoreEvent),
    });
    ev.short_names = vec!["ev".into()];
    ev.selectable_fields = strings(&[
        "involvedObject.kind",
        "involvedObject.namespace",
        "involvedObject.name",
        "involvedObject.uid",
        "involvedObject.apiVersion",
        "involvedObject.resourceVersion",
        "involvedObject.fieldPath",
        "reason",
        "reportingComponent",
        "source",
        "type",
    ]);
    out.push(ev);

    // Reflections of a host cluster's pods, written only by its syncer (`PodReflection`).
    let mut pod = base(Spec {
        group: "",
        version: "v1",
        kind: "Pod",
        plural: "pods",
        namespaced: true,
        schema: "io.k8s.api.core.v1.Pod",
        strategy: Arc::new(Pod),
    });
    pod.short_names = vec!["po".into()];
    pod.categories = vec!["all".into()];
    // `log` is read from the host through the target's syncer (`pod_logs`).
    pod.subresources = vec![
        ("log".into(), vec!["get"]),
        ("status".into(), STATUS_VERBS.to_vec()),
    ];
    pod.status_subresource = true;
    pod.selectable_fields = strings(&[
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.podIPs",
        "status.nominatedNodeName",
    ]);
    out.push(pod);

    // Stored as data: nothing provisions or binds volumes here.
    let mut pvc = base(Spec {
        group: "",
        version: "v1",
        kind: "PersistentVolumeClaim",
        plural: "persistentvolumeclaims",
        namespaced: true,
        schema: "io.k8s.api.core.v1.PersistentVolumeClaim",
        strategy: Arc::new(PersistentVolumeClaim),
    });
    pvc.short_names = vec!["pvc".into()];
    pvc.subresources = vec![("status".into(), STATUS_VERBS.to_vec())];
    pvc.status_subresource = true;
    out.push(pvc);

    out.push(base(Spec {
        group: "",
        version: "v1",
        kind: "PodTemplate",
        plural: "podtemplates",
        namespaced: true,
        schema: "io.k8s.api.core.v1.PodTemplate",
        strategy: Arc::new(PodTemplate),
    }));

    let mut secret = base(Spec {
        group: "",
        version: "v1",
        kind: "Secret",
        plural: "secrets",
        namespaced: true,
        schema: "io.k8s.api.core.v1.Secret",
        strategy: Arc::new(Secret),
    });
    secret.selectable_fields = strings(&["type"]);
    out.push(secret);

    let mut sa = base(Spec {
        group: "",
        version: "v1",
        kind: "ServiceAccount",
        plural: "serviceaccounts",
        namespaced: true,
        schema: "io.k8s.api.core.v1.ServiceAccount",
        strategy: Arc::new(ServiceAccount),
    });
    sa.short_names = vec!["sa".into()];
    // TokenRequest (`kubectl create token`), served by the HTTP layer, which holds the keys.
    sa.subresources = vec![("token".into(), vec!["create"])];
    out.push(sa);

    out.push(review(
        "authentication.k8s.io",
        "SelfSubjectReview",
        "selfsubjectreviews",
        false,
    ));
    out.push(review(
        "authentication.k8s.io",
        "TokenReview",
        "tokenreviews",
        false,
    ));
    out.push(review(
        "authorization.k8s.io",
        "LocalSubjectAccessReview",
        "localsubjectaccessreviews",
        true,
    ));
    out.push(review(
        "authorization.k8s.io",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        false,
    ));
    out.push(review(
        "authorization.k8s.io",
        "SelfSubjectRulesReview",
        "selfsubjectrulesreviews",
        false,
    ));
    out.push(review(
        "authorization.k8s.io",
        "SubjectAccessReview",
        "subjectaccessreviews",
        false,
    ));

    let mut job = base(Spec {
        group: "batch",
        version: "v1",
        kind: "Job",
        plural: "jobs",
        namespaced: true,
        schema: "io.k8s.api.batch.v1.Job",
        strategy: Arc::new(Job),
    });
    job.categories = vec!["all".into()];
    job.subresources = vec![("status".into(), STATUS_VERBS.to_vec())];
    job.status_subresource = true;
    job.selectable_fields = strings(&["status.successful"]);
    out.push(job);

    let mut netpol = base(Spec {
        group: "networking.k8s.io",
        version: "v1",
        kind: "NetworkPolicy",
        plural: "networkpolicies",
        namespaced: true,
        schema: "io.k8s.api.networking.v1.NetworkPolicy",
        strategy: Arc::new(NetworkPolicy),
    });
    netpol.short_names = vec!["netpol".into()];
    out.push(netpol);

    for (kind, plural, schema, webhooks) in [
        (
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration",
            crate::webhooks::config::Kind::Mutating,
        ),
        (
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration",
            crate::webhooks::config::Kind::Validating,
        ),
    ] {
        let mut hooks = base(Spec {
            group: "admissionregistration.k8s.io",
            version: "v1",
            kind,
            plural,
            namespaced: false,
            schema,
            strategy: Arc::new(WebhookConfiguration(webhooks)),
        });
        hooks.categories = vec!["api-extensions".into()];
        out.push(hooks);
    }

    for (kind, plural, schema, which) in [
        (
            "ValidatingAdmissionPolicy",
            "validatingadmissionpolicies",
            "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicy",
            PolicyKind::Policy,
        ),
        (
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
            "io.k8s.api.admissionregistration.v1.ValidatingAdmissionPolicyBinding",
            PolicyKind::Binding,
        ),
    ] {
        let mut p = base(Spec {
            group: "admissionregistration.k8s.io",
            version: "v1",
            kind,
            plural,
            namespaced: false,
            schema,
            strategy: Arc::new(AdmissionPolicy(which)),
        });
        p.categories = vec!["api-extensions".into()];
        if which == PolicyKind::Policy {
            p.subresources = vec![("status".into(), STATUS_VERBS.to_vec())];
            // the main endpoint keeps the stored status, and a status write is no new
            // generation (which the status controller's `observedGeneration` relies on)
            p.status_subresource = true;
        }
        out.push(p);
    }

    out.push(base(Spec {
        group: "coordination.k8s.io",
        version: "v1",
        kind: "Lease",
        plural: "leases",
        namespaced: true,
        schema: "io.k8s.api.coordination.v1.Lease",
        strategy: Arc::new(Lease),
    }));

    let mut ev2 = base(Spec {
        group: "events.k8s.io",
        version: "v1",
        kind: "Event",
        plural: "events",
        namespaced: true,
        schema: "io.k8s.api.events.v1.Event",
        strategy: Arc::new(EventsV1Event),
    });
    ev2.short_names = vec!["ev".into()];
    ev2.storage_resource = "/events".into();
    ev2.conversion = Some(Arc::new(EventsV1Conversion));
    out.push(ev2);

    let mut crd = base(Spec {
        group: "apiextensions.k8s.io",
        version: "v1",
        kind: "CustomResourceDefinition",
        plural: "customresourcedefinitions",
        namespaced: false,
        schema: "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
        strategy: Arc::new(CustomResourceDefinition),
    });
    crd.short_names = strings(&["crd", "crds"]);
    crd.categories = strings(&["api-extensions"]);
    crd.subresources = vec![("status".into(), STATUS_VERBS.to_vec())];
    crd.status_subresource = true;
    out.push(crd);

    for (kind, plural, namespaced) in [
        ("ClusterRoleBinding", "clusterrolebindings", false),
        ("ClusterRole", "clusterroles", false),
        ("RoleBinding", "rolebindings", true),
        ("Role", "roles", true),
    ] {
        let schema: &'static str = match kind {
            "ClusterRoleBinding" => "io.k8s.api.rbac.v1.ClusterRoleBinding",
            "ClusterRole" => "io.k8s.api.rbac.v1.ClusterRole",
            "RoleBinding" => "io.k8s.api.rbac.v1.RoleBinding",
            _ => "io.k8s.api.rbac.v1.Role",
        };
        out.push(base(Spec {
            group: "rbac.authorization.k8s.io",
            version: "v1",
            kind,
            plural,
            namespaced,
            schema,
            strategy: Arc::new(Rbac),
        }));
    }

    let mut ws = base(Spec {
        group: workspace::TENANCY_GROUP,
        version: "v1alpha1",
        kind: "Workspace",
        plural: "workspaces",
        namespaced: false,
        schema: kplane_openapi::kplane_kinds::WORKSPACE,
        strategy: Arc::new(Workspace),
    });
    ws.short_names = vec!["ws".into()];
    ws.subresources = vec![("status".into(), STATUS_VERBS.to_vec())];
    ws.status_subresource = true;
    out.push(ws);

    let mut tpl = base(Spec {
        group: workspace::TENANCY_GROUP,
        version: "v1alpha1",
        kind: "WorkspaceTemplate",
        plural: "workspacetemplates",
        namespaced: false,
        schema: kplane_openapi::kplane_kinds::WORKSPACE_TEMPLATE,
        strategy: Arc::new(WorkspaceTemplate),
    });
    tpl.short_names = vec!["wstpl".into()];
    out.push(tpl);

    let mut st = base(Spec {
        group: crate::sync::spec::SYNC_GROUP,
        version: "v1alpha1",
        kind: "SyncTarget",
        plural: "synctargets",
        namespaced: false,
        schema: kplane_openapi::kplane_kinds::SYNC_TARGET,
        strategy: Arc::new(SyncTarget),
    });
    st.subresources = vec![("status".into(), STATUS_VERBS.to_vec())];
    st.status_subresource = true;
    out.push(st);
    out
}

/// The per-cluster caches that writes of built-in types make stale ([`hooks`]).
pub struct Caches {
    pub rbac: Arc<dyn Invalidate>,
    pub webhooks: Arc<dyn Invalidate>,
    pub policies: Arc<dyn Invalidate>,
}

/// The hooks of the built-in types that have work around their writes
/// ([`crate::hooks`]), registered by group and plural: the types that feed `caches`
/// drop the written cluster's entry ([`DropCached`]); the others' hooks are their
/// strategy values.
pub fn hooks(caches: &Caches) -> Table<Registry> {
    use strategies::*;
    let rbac: Arc<dyn WriteHooks<Registry>> = Arc::new(DropCached(caches.rbac.clone()));
    let webhooks: Arc<dyn WriteHooks<Registry>> = Arc::new(DropCached(caches.webhooks.clone()));
    let policies: Arc<dyn WriteHooks<Registry>> = Arc::new(DropCached(caches.policies.clone()));
    let admission = "admissionregistration.k8s.io";
    let mut table = Table::default()
        .with("", "namespaces", Arc::new(Namespace))
        .with(
            "apiextensions.k8s.io",
            "customresourcedefinitions",
            Arc::new(CustomResourceDefinition),
        )
        .with(admission, "mutatingwebhookconfigurations", webhooks.clone())
        .with(admission, "validatingwebhookconfigurations", webhooks)
        .with(admission, "validatingadmissionpolicies", policies.clone())
        .with(admission, "validatingadmissionpolicybindings", policies)
        .with(workspace::TENANCY_GROUP, "workspaces", Arc::new(Workspace))
        .with(
            crate::sync::spec::SYNC_GROUP,
            "synctargets",
            Arc::new(SyncTarget),
        );
    for plural in [
        "roles",
        "rolebindings",
        "clusterroles",
        "clusterrolebindings",
    ] {
        table = table.with("rbac.authorization.k8s.io", plural, rbac.clone());
    }
    table
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    #[test]
    fn every_builtin_type_has_the_strategy_flags_kubernetes_gives_it() {
        // (group, plural): create on update, unconditional update, generation, stored
        let want: &[(&str, &str, bool, bool, bool, bool)] = &[
            ("", "namespaces", false, true, false, true),
            ("", "configmaps", false, true, false, true),
            ("", "pods", false, true, false, true),
            ("", "podtemplates", false, true, true, true),
            ("", "persistentvolumeclaims", false, true, false, true),
            ("", "events", true, true, false, true),
            ("events.k8s.io", "events", true, true, false, true),
            ("coordination.k8s.io", "leases", true, false, false, true),
            ("batch", "jobs", false, true, true, true),
            (
                "networking.k8s.io",
                "networkpolicies",
                false,
                true,
                true,
                true,
            ),
            (
                "apiextensions.k8s.io",
                "customresourcedefinitions",
                false,
                false,
                true,
                true,
            ),
            (
                "rbac.authorization.k8s.io",
                "roles",
                true,
                true,
                false,
                true,
            ),
            (
                "authorization.k8s.io",
                "selfsubjectaccessreviews",
                false,
                true,
                false,
                false,
            ),
        ];
        let all = super::builtin();
        for (group, plural, create, uncond, generation, stored) in want {
            let rt = all
                .iter()
                .find(|r| r.group == *group && r.plural == *plural)
                .unwrap();
            let s = &rt.strategy;
            assert_eq!(
                (
                    s.allow_create_on_update(),
                    s.allow_unconditional_update(),
                    s.has_generation(),
                    s.is_stored()
                ),
                (*create, *uncond, *generation, *stored),
                "{group}/{plural}"
            );
        }
    }

    #[test]
    fn the_main_endpoint_keeps_the_stored_status_only_with_a_status_subresource() {
        let all = super::builtin();
        let rt = |plural: &str| all.iter().find(|r| r.plural == plural).unwrap();
        let old = json!({"metadata": {"name": "x"}, "status": {"a": 1}});
        let mut job = json!({"metadata": {"name": "x"}, "status": {"a": 2}});
        let jobs = rt("jobs");
        jobs.strategy.prepare_for_update(jobs, &mut job, &old);
        assert_eq!(job["status"], json!({"a": 1}));
        let mut cm = json!({"metadata": {"name": "x"}, "status": {"a": 2}});
        let cms = rt("configmaps");
        cms.strategy.prepare_for_update(cms, &mut cm, &old);
        assert_eq!(cm["status"], json!({"a": 2}));
    }

    #[test]
    fn every_hooked_type_is_a_builtin_type() {
        let types = super::builtin();
        let caches = super::Caches {
            rbac: std::sync::Arc::new(crate::rbac::cache::Cache::default()),
            webhooks: std::sync::Arc::new(crate::webhooks::cache::Cache::default()),
            policies: std::sync::Arc::new(crate::policies::cache::Cache::default()),
        };
        for (group, plural) in super::hooks(&caches).entries() {
            assert!(
                types.iter().any(|t| t.group == group && t.plural == plural),
                "{group}/{plural} has hooks but is not served"
            );
        }
        let hooks = super::hooks(&caches);
        let mut plurals: Vec<&str> = hooks.entries().map(|(_, p)| p).collect();
        plurals.sort_unstable();
        assert_eq!(
            plurals,
            [
                "clusterrolebindings",
                "clusterroles",
                "customresourcedefinitions",
                "mutatingwebhookconfigurations",
                "namespaces",
                "rolebindings",
                "roles",
                "synctargets",
                "validatingadmissionpolicies",
                "validatingadmissionpolicybindings",
                "validatingwebhookconfigurations",
                "workspaces",
            ]
        );
    }
}
