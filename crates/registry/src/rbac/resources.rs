//! Where RBAC objects are stored: their storage resources.

/// The storage resources of RBAC objects.
pub const CLUSTER_ROLES: &str = "rbac.authorization.k8s.io/clusterroles";
pub const ROLES: &str = "rbac.authorization.k8s.io/roles";
pub const CLUSTER_ROLE_BINDINGS: &str = "rbac.authorization.k8s.io/clusterrolebindings";
pub const ROLE_BINDINGS: &str = "rbac.authorization.k8s.io/rolebindings";
pub const RBAC_RESOURCES: &[&str] = &[CLUSTER_ROLES, ROLES, CLUSTER_ROLE_BINDINGS, ROLE_BINDINGS];
