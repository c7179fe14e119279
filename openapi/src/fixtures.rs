//! The built-in resources kplane serves, as a ready-made [`ServedResource`] list for tests
//! (of this crate and of its users), and a custom resource of the `example.com` group.

use crate::{SchemaSource, ServedResource};

const ALL_VERBS: &[&str] = &[
    "create",
    "delete",
    "deletecollection",
    "get",
    "list",
    "patch",
    "update",
    "watch",
];
const CREATE_ONLY: &[&str] = &["create"];

#[allow(clippy::too_many_arguments)]
fn resource(
    group: &str,
    version: &str,
    kind: &str,
    plural: &str,
    namespaced: bool,
    verbs: &[&str],
    subresources: &[&str],
    definition: &str,
) -> ServedResource {
    ServedResource {
        group: group.to_owned(),
        version: version.to_owned(),
        kind: kind.to_owned(),
        plural: plural.to_owned(),
        namespaced,
        verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
        subresources: subresources.iter().map(|s| (*s).to_owned()).collect(),
        schema: SchemaSource::BuiltIn(definition.to_owned()),
    }
}

/// The built-in resources the kplane server serves (core, events, coordination, RBAC, batch,
/// admissionregistration, networking, authorization, authentication, apiextensions).
pub fn builtin_served_resources_for_tests() -> Vec<ServedResource> {
    let core = |kind: &str, plural: &str, namespaced: bool, subs: &[&str], def: &str| {
        resource("", "v1", kind, plural, namespaced, ALL_VERBS, subs, def)
    };
    vec![
        core(
            "Namespace",
            "namespaces",
            false,
            &["status", "finalize"],
            "io.k8s.api.core.v1.Namespace",
        ),
        core(
            "ConfigMap",
            "configmaps",
            true,
            &[],
            "io.k8s.api.core.v1.ConfigMap",
        ),
        core("Secret", "secrets", true, &[], "io.k8s.api.core.v1.Secret"),
        core(
            "ServiceAccount",
            "serviceaccounts",
            true,
            &["token"],
            "io.k8s.api.core.v1.ServiceAccount",
        ),
        core("Event", "events", true, &[], "io.k8s.api.core.v1.Event"),
        core("Pod", "pods", true, &["status"], "io.k8s.api.core.v1.Pod"),
        resource(
            "events.k8s.io",
            "v1",
            "Event",
            "events",
            true,
            ALL_VERBS,
            &[],
            "io.k8s.api.events.v1.Event",
        ),
        resource(
            "coordination.k8s.io",
            "v1",
            "Lease",
            "leases",
            true,
            ALL_VERBS,
            &[],
            "io.k8s.api.coordination.v1.Lease",
        ),
        resource(
            "rbac.authorization.k8s.io",
            "v1",
            "Role",
            "roles",
            true,
            ALL_VERBS,
            &[],
            "io.k8s.api.rbac.v1.Role",
        ),
        resource(
            "rbac.authorization.k8s.io",
            "v1",
            "RoleBinding",
            "rolebindings",
            true,
            ALL_VERBS,
            &[],
            "io.k8s.api.rbac.v1.RoleBinding",
        ),
        resource(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRole",
            "clusterroles",
            false,
            ALL_VERBS,
            &[],
            "io.k8s.api.rbac.v1.ClusterRole",
        ),
        resource(
            "rbac.authorization.k8s.io",
            "v1",
            "ClusterRoleBinding",
            "clusterrolebindings",
            false,
            ALL_VERBS,
            &[],
            "io.k8s.api.rbac.v1.ClusterRoleBinding",
        ),
        resource(
            "batch",
            "v1",
            "Job",
            "jobs",
            true,
            ALL_VERBS,
            &["status"],
            "io.k8s.api.batch.v1.Job",
        ),
        resource(
            "admissionregistration.k8s.io",
            "v1",
            "MutatingWebhookConfiguration",
            "mutatingwebhookconfigurations",
            false,
            ALL_VERBS,
            &[],
            "io.k8s.api.admissionregistration.v1.MutatingWebhookConfiguration",
        ),
        resource(
            "admissionregistration.k8s.io",
            "v1",
            "ValidatingWebhookConfiguration",
            "validatingwebhookconfigurations",
            false,
            ALL_VERBS,
            &[],
            "io.k8s.api.admissionregistration.v1.ValidatingWebhookConfiguration",
        ),
        resource(
            "networking.k8s.io",
            "v1",
            "NetworkPolicy",
            "networkpolicies",
            true,
            ALL_VERBS,
            &[],
            "io.k8s.api.networking.v1.NetworkPolicy",
        ),
        resource(
            "authorization.k8s.io",
            "v1",
            "SelfSubjectAccessReview",
            "selfsubjectaccessreviews",
            false,
            CREATE_ONLY,
            &[],
            "io.k8s.api.authorization.v1.SelfSubjectAccessReview",
        ),
        resource(
            "authorization.k8s.io",
            "v1",
            "SelfSubjectRulesReview",
            "selfsubjectrulesreviews",
            false,
            CREATE_ONLY,
            &[],
            "io.k8s.api.authorization.v1.SelfSubjectRulesReview",
        ),
        resource(
            "authorization.k8s.io",
            "v1",
            "SubjectAccessReview",
            "subjectaccessreviews",
            false,
            CREATE_ONLY,
            &[],
            "io.k8s.api.authorization.v1.SubjectAccessReview",
        ),
        resource(
            "authorization.k8s.io",
            "v1",
            "LocalSubjectAccessReview",
            "localsubjectaccessreviews",
            true,
            CREATE_ONLY,
            &[],
            "io.k8s.api.authorization.v1.LocalSubjectAccessReview",
        ),
        resource(
            "authentication.k8s.io",
            "v1",
            "SelfSubjectReview",
            "selfsubjectreviews",
            false,
            CREATE_ONLY,
            &[],
            "io.k8s.api.authentication.v1.SelfSubjectReview",
        ),
        resource(
            "authentication.k8s.io",
            "v1",
            "TokenReview",
            "tokenreviews",
            false,
            CREATE_ONLY,
            &[],
            "io.k8s.api.authentication.v1.TokenReview",
        ),
        resource(
            "apiextensions.k8s.io",
            "v1",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            false,
            ALL_VERBS,
            &["status"],
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition",
        ),
    ]
}

/// A namespaced custom resource `widgets.example.com` (kind `Widget`) of `version` with every
/// verb, the given subresources and the CRD `schema`, for tests.
pub fn widget_for_tests(
    version: &str,
    subresources: &[&str],
    schema: serde_json::Value,
) -> ServedResource {
    ServedResource {
        group: "example.com".to_owned(),
        version: version.to_owned(),
        kind: "Widget".to_owned(),
        plural: "widgets".to_owned(),
        namespaced: true,
        verbs: ALL_VERBS.iter().map(|v| (*v).to_owned()).collect(),
        subresources: subresources.iter().map(|s| (*s).to_owned()).collect(),
        schema: SchemaSource::Custom { schema },
    }
}
