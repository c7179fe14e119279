//! The catalogue of built-in Kubernetes types and their OpenAPI v3 definitions.
//!
//! The type list names the `k8s-openapi` resource types (extracted from the crate's
//! `Resource`/`ListableResource` implementations for the enabled Kubernetes version); their
//! schemas, and every schema they reference, come from the crate's `schemars` implementations.
//! Nothing here describes a schema by hand (kplane's own kinds, which `k8s-openapi` does not
//! have, are declared in [`crate::kplane_kinds`] and added at the end): the few corrections
//! applied afterwards (see [`crate::convert`]) only reshape what `k8s-openapi` emits into
//! the form the upstream API server publishes.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use k8s_openapi::schemars::generate::SchemaSettings;
use k8s_openapi::schemars::{JsonSchema, SchemaGenerator};
use k8s_openapi::{ListableResource, Resource};
use serde_json::Value;

use crate::convert;
use crate::kind_schema::{add_gvk, list_definition, Gvk, TypeMeta};
use crate::names::{DELETE_OPTIONS, WATCH_EVENT};

/// Collects schemas and the group/version/kind of every resource type.
struct Collector {
    generator: SchemaGenerator,
    kinds: Vec<(String, Gvk)>,
    lists: Vec<(String, Gvk)>,
}

impl Collector {
    fn resource<T: Resource + JsonSchema>(&mut self) {
        self.generator.subschema_for::<T>();
        self.kinds.push((
            T::schema_name().into_owned(),
            Gvk::new(T::GROUP, T::VERSION, T::KIND),
        ));
    }

    fn listable<T: ListableResource + JsonSchema>(&mut self) {
        self.resource::<T>();
        self.lists.push((
            T::schema_name().into_owned(),
            Gvk::new(T::GROUP, T::VERSION, T::LIST_KIND),
        ));
    }

    fn plain<T: JsonSchema>(&mut self) {
        self.generator.subschema_for::<T>();
    }
}

macro_rules! catalog {
    (listable: [$($l:ident :: $($lp:ident)::+,)*] other: [$($o:ident :: $($op:ident)::+,)*]) => {
        fn collect_resources(c: &mut Collector) {
            $( c.listable::<k8s_openapi::$l::$($lp)::+>(); )*
            $( c.resource::<k8s_openapi::$o::$($op)::+>(); )*
        }
    };
}

catalog! {
    listable: [
    api::admissionregistration::v1::MutatingWebhookConfiguration,
    api::admissionregistration::v1::ValidatingAdmissionPolicy,
    api::admissionregistration::v1::ValidatingAdmissionPolicyBinding,
    api::admissionregistration::v1::ValidatingWebhookConfiguration,
    api::admissionregistration::v1alpha1::MutatingAdmissionPolicy,
    api::admissionregistration::v1alpha1::MutatingAdmissionPolicyBinding,
    api::admissionregistration::v1beta1::ValidatingAdmissionPolicy,
    api::admissionregistration::v1beta1::ValidatingAdmissionPolicyBinding,
    api::apiserverinternal::v1alpha1::StorageVersion,
    api::apps::v1::ControllerRevision,
    api::apps::v1::DaemonSet,
    api::apps::v1::Deployment,
    api::apps::v1::ReplicaSet,
    api::apps::v1::StatefulSet,
    api::autoscaling::v1::HorizontalPodAutoscaler,
    api::autoscaling::v2::HorizontalPodAutoscaler,
    api::batch::v1::CronJob,
    api::batch::v1::Job,
    api::certificates::v1::CertificateSigningRequest,
    api::certificates::v1alpha1::ClusterTrustBundle,
    api::certificates::v1beta1::ClusterTrustBundle,
    api::coordination::v1::Lease,
    api::coordination::v1alpha2::LeaseCandidate,
    api::coordination::v1beta1::LeaseCandidate,
    api::core::v1::ComponentStatus,
    api::core::v1::ConfigMap,
    api::core::v1::Endpoints,
    api::core::v1::Event,
    api::core::v1::LimitRange,
    api::core::v1::Namespace,
    api::core::v1::Node,
    api::core::v1::PersistentVolume,
    api::core::v1::PersistentVolumeClaim,
    api::core::v1::Pod,
    api::core::v1::PodTemplate,
    api::core::v1::ReplicationController,
    api::core::v1::ResourceQuota,
    api::core::v1::Secret,
    api::core::v1::Service,
    api::core::v1::ServiceAccount,
    api::discovery::v1::EndpointSlice,
    api::events::v1::Event,
    api::flowcontrol::v1::FlowSchema,
    api::flowcontrol::v1::PriorityLevelConfiguration,
    api::networking::v1::IPAddress,
    api::networking::v1::Ingress,
    api::networking::v1::IngressClass,
    api::networking::v1::NetworkPolicy,
    api::networking::v1::ServiceCIDR,
    api::networking::v1beta1::IPAddress,
    api::networking::v1beta1::ServiceCIDR,
    api::node::v1::RuntimeClass,
    api::policy::v1::PodDisruptionBudget,
    api::rbac::v1::ClusterRole,
    api::rbac::v1::ClusterRoleBinding,
    api::rbac::v1::Role,
    api::rbac::v1::RoleBinding,
    api::resource::v1alpha3::DeviceClass,
    api::resource::v1alpha3::DeviceTaintRule,
    api::resource::v1alpha3::ResourceClaim,
    api::resource::v1alpha3::ResourceClaimTemplate,
    api::resource::v1alpha3::ResourceSlice,
    api::resource::v1beta1::DeviceClass,
    api::resource::v1beta1::ResourceClaim,
    api::resource::v1beta1::ResourceClaimTemplate,
    api::resource::v1beta1::ResourceSlice,
    api::resource::v1beta2::DeviceClass,
    api::resource::v1beta2::ResourceClaim,
    api::resource::v1beta2::ResourceClaimTemplate,
    api::resource::v1beta2::ResourceSlice,
    api::scheduling::v1::PriorityClass,
    api::storage::v1::CSIDriver,
    api::storage::v1::CSINode,
    api::storage::v1::CSIStorageCapacity,
    api::storage::v1::StorageClass,
    api::storage::v1::VolumeAttachment,
    api::storage::v1alpha1::VolumeAttributesClass,
    api::storage::v1beta1::VolumeAttributesClass,
    api::storagemigration::v1alpha1::StorageVersionMigration,
    apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
    kube_aggregator::pkg::apis::apiregistration::v1::APIService,
    ]
    other: [
    api::authentication::v1::SelfSubjectReview,
    api::authentication::v1::TokenRequest,
    api::authentication::v1::TokenReview,
    api::authorization::v1::LocalSubjectAccessReview,
    api::authorization::v1::SelfSubjectAccessReview,
    api::authorization::v1::SelfSubjectRulesReview,
    api::authorization::v1::SubjectAccessReview,
    api::autoscaling::v1::Scale,
    api::core::v1::Binding,
    api::policy::v1::Eviction,
    apimachinery::pkg::apis::meta::v1::APIGroup,
    apimachinery::pkg::apis::meta::v1::APIGroupList,
    apimachinery::pkg::apis::meta::v1::APIResourceList,
    apimachinery::pkg::apis::meta::v1::APIVersions,
    apimachinery::pkg::apis::meta::v1::Status,
    ]
}

/// Every built-in definition, in OpenAPI 3 form (`$ref`s point to
/// `#/components/schemas/<name>`), keyed by its Kubernetes definition name
/// (e.g. `io.k8s.api.core.v1.ConfigMap`).
///
/// Resource kinds carry `x-kubernetes-group-version-kind`; every listable kind also has a
/// `<name>List` definition. Computed once, on first use.
pub fn builtin_definitions() -> &'static BTreeMap<String, Value> {
    static DEFINITIONS: OnceLock<BTreeMap<String, Value>> = OnceLock::new();
    DEFINITIONS.get_or_init(generate)
}

fn generate() -> BTreeMap<String, Value> {
    let mut c = Collector {
        generator: SchemaSettings::openapi3().into_generator(),
        kinds: Vec::new(),
        lists: Vec::new(),
    };
    collect_resources(&mut c);
    c.plain::<k8s_openapi::apimachinery::pkg::apis::meta::v1::DeleteOptions>();
    c.plain::<k8s_openapi::apimachinery::pkg::apis::meta::v1::Patch>();
    c.plain::<k8s_openapi::apimachinery::pkg::apis::meta::v1::WatchEvent<
        k8s_openapi::api::core::v1::ConfigMap,
    >>();

    let mut defs: BTreeMap<String, Value> = c
        .generator
        .take_definitions(true)
        .into_iter()
        .map(|(name, mut schema)| {
            convert::to_openapi3(&mut schema);
            (name, schema)
        })
        .collect();
    convert::fix_known_types(&mut defs);
    for schema in defs.values_mut() {
        convert::fix_object_meta_usage(schema);
    }

    for (name, gvk) in &c.kinds {
        if let Some(schema) = defs.get_mut(name) {
            add_gvk(schema, gvk);
        }
    }
    for name in [DELETE_OPTIONS, WATCH_EVENT] {
        if let Some(schema) = defs.get_mut(name) {
            let kind = name.rsplit('.').next().unwrap_or(name);
            add_gvk(schema, &Gvk::new("", "v1", kind));
        }
    }
    let type_meta = TypeMeta::from_definitions(&defs);
    for (name, gvk) in &c.lists {
        let kind = name.rsplit('.').next().unwrap_or(name);
        let list = list_definition(&type_meta, name, kind, gvk);
        defs.insert(format!("{name}List"), list);
    }
    crate::kplane_kinds::add(&mut defs, &type_meta);
    defs
}

/// The shared type-meta schemas, taken from [`builtin_definitions`].
pub(crate) fn builtin_type_meta() -> &'static TypeMeta {
    static TYPE_META: OnceLock<TypeMeta> = OnceLock::new();
    TYPE_META.get_or_init(|| TypeMeta::from_definitions(builtin_definitions()))
}
