//! Kubernetes `ResourceQuota` (core/v1) inside a namespace, as kube-apiserver's quota
//! admission and kube-controller-manager's resource quota controller run it:
//!
//! - [`validation`]: upstream's rules for `spec.hard`, `spec.scopes`, `spec.scopeSelector`
//!   and the status (resource names standard or qualified, quantities non-negative and
//!   whole for counted resources);
//! - [`usage`]: what a namespace uses of each resource name a quota can limit: object
//!   counts (`count/<resource>[.<group>]` for every served namespaced resource, and the
//!   legacy names `configmaps`, `secrets`, `resourcequotas`, `pods`), the requests and
//!   limits of the namespace's pods (reflections of synced Jobs' pods), and zero for the
//!   kinds kplane does not serve (`services`, `persistentvolumeclaims`, ...);
//! - [`scopes`]: which pods a scoped quota counts (`Terminating`, `BestEffort`,
//!   `PriorityClass`, `CrossNamespacePodAffinity` and their negations);
//! - [`admission`] (the `ResourceQuota` validating plugin): a create that a quota's
//!   `status.hard` counts is refused with upstream's `exceeded quota: ...` 403 when it
//!   would pass the limit, and otherwise recorded in the quota's `status.used` before the
//!   object is stored (a dry run is checked, not recorded);
//! - [`controller`]: `status.hard` from `spec.hard` and `status.used` recounted from
//!   storage when a quota is written, when an object of its namespace is deleted, a few
//!   seconds after admission recorded a create (which puts right a create that failed
//!   after admission), and at every informer resync;
//! - [`index`]: which namespaces of which clusters hold quotas, followed from the store's
//!   events on every replica, so that a create where no quota is pays one map lookup.
//!
//! kplane's own per-cluster limits (Workspace `spec.quota`, `crate::quota`) are separate:
//! they bound a whole logical cluster and are enforced in the storage writer.

pub mod admission;
pub mod controller;
pub mod index;
pub mod scopes;
pub mod usage;
pub mod validation;

#[cfg(test)]
mod tests;

/// The storage resource of ResourceQuotas.
pub const RESOURCE: &str = "/resourcequotas";

/// The field manager of the controller's status writes (upstream's controller runs in
/// kube-controller-manager).
pub const CONTROLLER: &str = "resourcequota-controller";

/// Whether quota ignores a resource (upstream's `ignoredResources`: Events, which were
/// never counted, and the review kinds, which are not stored).
pub fn ignored(group: &str, plural: &str) -> bool {
    matches!(
        (group, plural),
        ("", "events" | "bindings" | "componentstatuses")
            | ("events.k8s.io", "events")
            | (
                "authentication.k8s.io",
                "tokenreviews" | "selfsubjectreviews"
            )
            | (
                "authorization.k8s.io",
                "subjectaccessreviews"
                    | "selfsubjectaccessreviews"
                    | "localsubjectaccessreviews"
                    | "selfsubjectrulesreviews"
            )
    )
}

/// Whether a quota is scoped (`spec.scopes` or `spec.scopeSelector`): object counts
/// never match a scoped quota (upstream's object-count evaluators match no scope), so
/// such a quota limits pods only and reports no usage of other objects.
pub fn is_scoped(quota: &serde_json::Value) -> bool {
    quota
        .pointer("/spec/scopes")
        .and_then(serde_json::Value::as_array)
        .is_some_and(|s| !s.is_empty())
        || quota
            .pointer("/spec/scopeSelector")
            .is_some_and(|s| !s.is_null())
}

/// The quota resource name counting objects of `plural` in `group`
/// (`count/<plural>` for the core group, `count/<plural>.<group>` otherwise).
pub fn count_name(group: &str, plural: &str) -> String {
    if group.is_empty() {
        format!("count/{plural}")
    } else {
        format!("count/{plural}.{group}")
    }
}

/// The legacy quota resource name counting objects of a core resource, where there is one.
pub fn legacy_count_name(group: &str, plural: &str) -> Option<&'static str> {
    if !group.is_empty() {
        return None;
    }
    Some(match plural {
        "configmaps" => "configmaps",
        "secrets" => "secrets",
        "resourcequotas" => "resourcequotas",
        "pods" => "pods",
        "services" => "services",
        "replicationcontrollers" => "replicationcontrollers",
        "persistentvolumeclaims" => "persistentvolumeclaims",
        _ => return None,
    })
}
