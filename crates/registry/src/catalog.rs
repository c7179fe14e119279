//! The catalog of served resources: for each group/version/resource, the facts discovery,
//! OpenAPI and the generic registry need (kind, scope, verbs, short names, subresources,
//! selectable fields), the type's strategy (`strategies`: everything a write does that is
//! particular to the type) and, for a type served in another form than it is stored in, its
//! version conversion.
//!
//! Built-in types are listed here once; custom resources (`crd.rs`) add entries of the same
//! shape, so one code path serves both.

use std::collections::HashMap;
use std::sync::Arc;

use super::strategies::{self, Conversion, TypeStrategy};

/// One served resource at one version.
#[derive(Clone)]
pub struct ResourceType {
    pub group: String,
    pub version: String,
    pub kind: String,
    pub list_kind: String,
    pub plural: String,
    pub singular: String,
    pub namespaced: bool,
    pub short_names: Vec<String>,
    pub categories: Vec<String>,
    pub verbs: Vec<&'static str>,
    /// Subresources with their verbs, e.g. `("status", ["get","patch","update"])`.
    pub subresources: Vec<(String, Vec<&'static str>)>,
    /// The OpenAPI definition name of the kind.
    pub schema_name: String,
    /// The storage key resource (`"<group>/<plural>"`); two API groups may share one store.
    pub storage_resource: String,
    /// Everything a write does that is particular to the type.
    pub strategy: Arc<dyn TypeStrategy>,
    /// How the served form is converted from and to the stored one; `None` when the type
    /// is stored as served (reads hand out the stored bytes).
    pub conversion: Option<Arc<dyn Conversion>>,
    /// The main endpoint keeps the stored `.status`; `/status` changes only `.status`.
    pub status_subresource: bool,
    /// Field selector labels beyond `metadata.name` / `metadata.namespace` (how each kind
    /// accepts and refuses labels is in `field_labels`).
    pub selectable_fields: Vec<String>,
    /// What a custom resource's CRD says (schema, columns, scale); `None` for built-ins.
    pub custom: Option<Arc<super::crd::CustomInfo>>,
}

impl std::fmt::Debug for ResourceType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResourceType")
            .field("group", &self.group)
            .field("version", &self.version)
            .field("plural", &self.plural)
            .field("strategy", &self.strategy)
            .finish_non_exhaustive()
    }
}

impl ResourceType {
    /// Whether kube-apiserver serves the kind as a Go type (a Kubernetes built-in): its list
    /// items then carry no `apiVersion` and `kind`. Custom resources and kplane's own kinds
    /// (`*.kplane.io`, CRDs in kcp) are served unstructured.
    pub fn is_typed(&self) -> bool {
        self.custom.is_none() && !self.group.ends_with(".kplane.io")
    }

    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    pub fn has_verb(&self, verb: &str) -> bool {
        self.verbs.contains(&verb)
    }

    pub fn has_subresource(&self, sub: &str) -> bool {
        self.subresources.iter().any(|(s, _)| s == sub)
    }

    /// Whether objects of the type are stored (create-only reviews are not).
    pub fn is_stored(&self) -> bool {
        self.strategy.is_stored()
    }

    /// Whether the type is a custom resource served from a CRD.
    pub fn is_custom(&self) -> bool {
        self.custom.is_some()
    }
}

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
        group: crate::sync::strategy::SYNC_GROUP,
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

/// Lookup of served resources by group/version/plural, by kind, and by group.
#[derive(Debug, Default)]
pub struct Catalog {
    by_gvr: HashMap<(String, String, String), Arc<ResourceType>>,
    ordered: Vec<Arc<ResourceType>>,
    fingerprint: String,
}

impl Catalog {
    pub fn new(types: Vec<ResourceType>) -> Self {
        Self::from_arcs(types.into_iter().map(Arc::new).collect(), "builtin".into())
    }

    /// A catalog of already-shared types; `fingerprint` identifies its content.
    pub fn from_arcs(types: Vec<Arc<ResourceType>>, fingerprint: String) -> Self {
        let mut c = Catalog {
            fingerprint,
            ..Default::default()
        };
        for t in types {
            c.by_gvr.insert(
                (t.group.clone(), t.version.clone(), t.plural.clone()),
                t.clone(),
            );
            c.ordered.push(t);
        }
        c
    }

    /// Identifies the served set: equal fingerprints serve identical APIs, so discovery and
    /// OpenAPI documents are shared across logical clusters.
    pub fn fingerprint(&self) -> &str {
        &self.fingerprint
    }

    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<&Arc<ResourceType>> {
        self.by_gvr
            .get(&(group.to_string(), version.to_string(), plural.to_string()))
    }

    /// All resources in discovery order.
    pub fn all(&self) -> &[Arc<ResourceType>] {
        &self.ordered
    }

    /// The group names in discovery order (core group `""` first).
    pub fn groups(&self) -> Vec<String> {
        let mut seen = Vec::<String>::new();
        for t in &self.ordered {
            if !seen.contains(&t.group) {
                seen.push(t.group.clone());
            }
        }
        seen
    }

    /// The versions served for `group`, preferred first.
    pub fn versions(&self, group: &str) -> Vec<String> {
        let mut seen = Vec::<String>::new();
        for t in self.ordered.iter().filter(|t| t.group == group) {
            if !seen.contains(&t.version) {
                seen.push(t.version.clone());
            }
        }
        seen
    }

    pub fn in_group_version<'a>(
        &'a self,
        group: &'a str,
        version: &'a str,
    ) -> impl Iterator<Item = &'a Arc<ResourceType>> + 'a {
        self.ordered
            .iter()
            .filter(move |t| t.group == group && t.version == version)
    }

    /// Stored, namespaced resources (for namespace deletion), one per storage resource.
    pub fn namespaced_storage(&self) -> Vec<Arc<ResourceType>> {
        let mut seen = Vec::<String>::new();
        let mut out = Vec::new();
        for t in &self.ordered {
            if t.namespaced && t.is_stored() && !seen.contains(&t.storage_resource) {
                seen.push(t.storage_resource.clone());
                out.push(t.clone());
            }
        }
        out
    }
}
