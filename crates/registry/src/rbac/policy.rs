//! The compiled RBAC policy of one logical cluster and its evaluation.
//!
//! A [`Layer`] is a set of Roles, ClusterRoles and bindings compiled for lookup by subject:
//! per binding scope (cluster-wide, or one namespace), a map from user name and from group
//! name to the bindings naming them (a ServiceAccount subject is the user
//! `system:serviceaccount:<ns>:<name>`). Role references are resolved when a request is
//! evaluated, so a binding to a role that does not exist grants nothing (and is reported,
//! as upstream does), and a role created later takes effect without recompiling bindings.
//!
//! A [`Policy`] is a cluster's layer above the shared defaults' layer
//! ([`super::defaults`]): ClusterRoles are looked up in the cluster first, and a stored
//! ClusterRoleBinding takes the place of the default of the same name. Aggregated
//! ClusterRoles (`aggregationRule`) get the union of the rules of every ClusterRole their
//! selectors match (in name order, duplicates dropped, nested aggregation followed), as
//! upstream's aggregation controller writes them; the defaults' aggregation is computed
//! once, a cluster's only when it stores ClusterRoles of its own.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use kplane_types::{RequestInfo, UserInfo};
use serde_json::{Map, Value};

use super::rules::Rule;
use crate::label_selector::selector_matches;

/// A Role or ClusterRole.
#[derive(Debug, Default)]
pub struct Role {
    pub name: String,
    pub rules: Arc<[Rule]>,
    pub labels: Map<String, Value>,
    /// `aggregationRule.clusterRoleSelectors` (ClusterRoles only).
    pub aggregation: Option<Vec<Value>>,
}

impl Role {
    /// A stored Role or ClusterRole.
    pub fn from_json(v: &Value) -> Role {
        let rules: Vec<Rule> = v
            .get("rules")
            .and_then(Value::as_array)
            .map(|a| a.iter().map(Rule::from_json).collect())
            .unwrap_or_default();
        Role {
            name: crate::meta::name_of(v).to_string(),
            rules: rules.into(),
            labels: v
                .pointer("/metadata/labels")
                .and_then(Value::as_object)
                .cloned()
                .unwrap_or_default(),
            aggregation: v
                .pointer("/aggregationRule/clusterRoleSelectors")
                .and_then(Value::as_array)
                .filter(|s| !s.is_empty())
                .cloned(),
        }
    }
}

/// What a binding refers to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RoleKind {
    Role,
    ClusterRole,
}

/// One binding, shared by the index entries of its subjects.
#[derive(Debug)]
struct Binding {
    /// `None` for a ClusterRoleBinding.
    namespace: Option<String>,
    name: String,
    role_kind: RoleKind,
    role: String,
}

/// A binding naming one subject, with the subject as upstream describes it in reasons.
#[derive(Debug, Clone)]
struct Grant {
    binding: Arc<Binding>,
    subject: Arc<str>,
}

/// Entries sorted by name, looked up by binary search: a compiled layer is held for every
/// logical cluster that uses RBAC, so its maps are exact-size slices rather than hash maps
/// (a one-entry hash map allocates four buckets).
type ByName<T> = Box<[(Box<str>, T)]>;

fn sorted<T>(map: HashMap<String, T>) -> ByName<T> {
    let mut v: Vec<(Box<str>, T)> = map
        .into_iter()
        .map(|(k, t)| (k.into_boxed_str(), t))
        .collect();
    v.sort_by(|a, b| a.0.cmp(&b.0));
    v.into_boxed_slice()
}

fn find<'a, T>(list: &'a [(Box<str>, T)], name: &str) -> Option<&'a T> {
    list.binary_search_by(|(k, _)| (**k).cmp(name))
        .ok()
        .and_then(|i| list.get(i))
        .map(|(_, t)| t)
}

/// Bindings by the user and group names they name.
#[derive(Debug, Default)]
struct Subjects {
    users: ByName<Box<[Grant]>>,
    groups: ByName<Box<[Grant]>>,
}

/// [`Subjects`] while a layer is built.
#[derive(Debug, Default)]
struct SubjectsBuilder {
    users: HashMap<String, Vec<Grant>>,
    groups: HashMap<String, Vec<Grant>>,
}

impl SubjectsBuilder {
    fn build(self) -> Subjects {
        let frozen = |m: HashMap<String, Vec<Grant>>| {
            sorted(
                m.into_iter()
                    .map(|(k, v)| (k, v.into_boxed_slice()))
                    .collect(),
            )
        };
        Subjects {
            users: frozen(self.users),
            groups: frozen(self.groups),
        }
    }
}

impl Subjects {
    fn matching<'a>(&'a self, user: &'a UserInfo) -> impl Iterator<Item = &'a Grant> + 'a {
        let by_user = find(&self.users, &user.username)
            .into_iter()
            .flat_map(|g| g.iter());
        let by_group = user
            .groups
            .iter()
            .filter_map(|g| find(&self.groups, g))
            .flat_map(|g| g.iter());
        by_user.chain(by_group)
    }

    fn is_empty(&self) -> bool {
        self.users.is_empty() && self.groups.is_empty()
    }
}

/// Compiled RBAC objects: one logical cluster's stored ones, or the defaults.
#[derive(Debug, Default)]
pub struct Layer {
    cluster_roles: HashMap<String, Arc<Role>>,
    /// Roles by namespace, then name.
    roles: HashMap<String, HashMap<String, Arc<Role>>>,
    cluster_bindings: Subjects,
    /// The names of the ClusterRoleBindings, sorted (a stored one hides the default of its
    /// name).
    cluster_binding_names: Box<[Box<str>]>,
    /// RoleBindings by namespace.
    bindings: ByName<Subjects>,
    /// The rules of aggregated ClusterRoles (set when the layer has ClusterRoles).
    aggregated: HashMap<String, Arc<[Rule]>>,
}

fn str_at<'a>(v: &'a Value, p: &str) -> &'a str {
    v.pointer(p).and_then(Value::as_str).unwrap_or("")
}

impl Layer {
    /// Compiles ClusterRoles, Roles (with their namespaces), ClusterRoleBindings and
    /// RoleBindings (stored JSON). `below`: the layer under this one (the defaults), whose
    /// ClusterRoles take part in this layer's aggregation.
    pub fn build(
        cluster_roles: Vec<Arc<Role>>,
        roles: Vec<(String, Arc<Role>)>,
        cluster_role_bindings: &[Value],
        role_bindings: &[Value],
        below: Option<&Layer>,
    ) -> Layer {
        let mut l = Layer::default();
        for r in cluster_roles {
            l.cluster_roles.insert(r.name.clone(), r);
        }
        for (ns, r) in roles {
            l.roles.entry(ns).or_default().insert(r.name.clone(), r);
        }
        let mut cluster_bindings = SubjectsBuilder::default();
        let mut names: Vec<Box<str>> = Vec::with_capacity(cluster_role_bindings.len());
        for b in cluster_role_bindings {
            names.push(crate::meta::name_of(b).into());
            index_binding(&mut cluster_bindings, b, None);
        }
        names.sort();
        names.dedup();
        l.cluster_binding_names = names.into_boxed_slice();
        l.cluster_bindings = cluster_bindings.build();
        let mut bindings: HashMap<String, SubjectsBuilder> = HashMap::new();
        for b in role_bindings {
            let ns = str_at(b, "/metadata/namespace").to_string();
            let subjects = bindings.entry(ns.clone()).or_default();
            index_binding(subjects, b, Some(ns));
        }
        l.bindings = sorted(
            bindings
                .into_iter()
                .map(|(ns, b)| (ns, b.build()))
                .filter(|(_, s)| !s.is_empty())
                .collect(),
        );
        if !l.cluster_roles.is_empty() {
            l.aggregated = aggregate(&l.cluster_roles, below);
        }
        l
    }

    /// Whether the layer holds nothing.
    pub fn is_empty(&self) -> bool {
        self.cluster_roles.is_empty()
            && self.roles.is_empty()
            && self.cluster_bindings.is_empty()
            && self.bindings.is_empty()
    }
}

fn index_binding(into: &mut SubjectsBuilder, b: &Value, namespace: Option<String>) {
    let role_kind = match str_at(b, "/roleRef/kind") {
        "Role" if namespace.is_some() => RoleKind::Role,
        "ClusterRole" => RoleKind::ClusterRole,
        _ => return,
    };
    let binding = Arc::new(Binding {
        name: crate::meta::name_of(b).to_string(),
        namespace: namespace.clone(),
        role_kind,
        role: str_at(b, "/roleRef/name").to_string(),
    });
    let ns = namespace.as_deref().unwrap_or("");
    for s in b
        .get("subjects")
        .and_then(Value::as_array)
        .map_or(&[][..], Vec::as_slice)
    {
        let name = str_at(s, "/name");
        let grant = |subject: String| Grant {
            binding: binding.clone(),
            subject: subject.into(),
        };
        match str_at(s, "/kind") {
            "User" => into
                .users
                .entry(name.to_string())
                .or_default()
                .push(grant(format!("User {name:?}"))),
            "Group" => into
                .groups
                .entry(name.to_string())
                .or_default()
                .push(grant(format!("Group {name:?}"))),
            "ServiceAccount" => {
                let sa_ns = match str_at(s, "/namespace") {
                    "" => ns,
                    n => n,
                };
                if sa_ns.is_empty() || name.is_empty() {
                    continue;
                }
                into.users
                    .entry(format!("system:serviceaccount:{sa_ns}:{name}"))
                    .or_default()
                    .push(grant(format!("ServiceAccount \"{name}/{sa_ns}\"")));
            }
            _ => {}
        }
    }
}

/// The rules of every aggregated ClusterRole among `own` and (not hidden by `own`) those of
/// `below`, to a fixed point (an aggregated role may select another).
fn aggregate(
    own: &HashMap<String, Arc<Role>>,
    below: Option<&Layer>,
) -> HashMap<String, Arc<[Rule]>> {
    let mut all: BTreeMap<&str, &Arc<Role>> = BTreeMap::new();
    if let Some(b) = below {
        for (n, r) in &b.cluster_roles {
            all.insert(n, r);
        }
    }
    for (n, r) in own {
        all.insert(n, r);
    }
    let mut out: HashMap<String, Arc<[Rule]>> = HashMap::new();
    // Each pass follows one more level of nesting; the default roles need two.
    for _ in 0..8 {
        let mut changed = false;
        for (name, role) in &all {
            let Some(selectors) = &role.aggregation else {
                continue;
            };
            let mut rules: Vec<Rule> = Vec::new();
            for sel in selectors {
                for (other, r) in &all {
                    if other == name || selector_matches(sel, &r.labels) != Some(true) {
                        continue;
                    }
                    let theirs: &[Rule] = match out.get(*other) {
                        Some(a) if r.aggregation.is_some() => a,
                        _ => &r.rules,
                    };
                    for rule in theirs {
                        if !rules.contains(rule) {
                            rules.push(rule.clone());
                        }
                    }
                }
            }
            if out.get(*name).map(|a| &a[..]) != Some(&rules[..]) {
                out.insert(name.to_string(), rules.into());
                changed = true;
            }
        }
        if !changed {
            break;
        }
    }
    out
}

/// A decision of RBAC alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Allowed, with upstream's reason (`RBAC: allowed by ...`).
    Allow(String),
    /// No rule allows it; the reason lists the bindings whose roles are missing.
    NoOpinion(String),
    /// Refused outright (a token bound to another logical cluster).
    Deny(String),
}

/// One logical cluster's policy: its own layer above the defaults.
#[derive(Debug, Clone, Copy)]
pub struct Policy<'a> {
    pub cluster: &'a Layer,
    pub defaults: &'a Layer,
}

impl<'a> Policy<'a> {
    /// The rules of ClusterRole `name`, `None` when there is none.
    fn cluster_role(&self, name: &str) -> Option<&'a [Rule]> {
        let (c, d) = (self.cluster, self.defaults);
        if !c.cluster_roles.is_empty() {
            if let Some(r) = c.aggregated.get(name) {
                return Some(r);
            }
            if let Some(r) = c.cluster_roles.get(name) {
                return Some(&r.rules);
            }
        }
        if let Some(r) = d.aggregated.get(name) {
            return Some(r);
        }
        d.cluster_roles.get(name).map(|r| &r.rules[..])
    }

    fn role_rules(&self, b: &Binding) -> Result<&'a [Rule], String> {
        match (b.role_kind, &b.namespace) {
            (RoleKind::Role, Some(ns)) => self
                .cluster
                .roles
                .get(ns)
                .and_then(|m| m.get(&b.role))
                .map(|r| &r.rules[..])
                .ok_or_else(|| format!("role.rbac.authorization.k8s.io {:?} not found", b.role)),
            _ => self.cluster_role(&b.role).ok_or_else(|| {
                format!(
                    "clusterrole.rbac.authorization.k8s.io {:?} not found",
                    b.role
                )
            }),
        }
    }

    /// Every grant that applies to `user`: cluster-wide ones, then those of `namespace`.
    fn grants(
        &self,
        user: &'a UserInfo,
        namespace: Option<&'a str>,
    ) -> impl Iterator<Item = &'a Grant> + 'a {
        let c = self.cluster;
        let own = c.cluster_bindings.matching(user);
        let defaults = self
            .defaults
            .cluster_bindings
            .matching(user)
            .filter(move |g| {
                c.cluster_binding_names
                    .binary_search_by(|n| (**n).cmp(g.binding.name.as_str()))
                    .is_err()
            });
        let namespaced = namespace
            .and_then(|ns| find(&c.bindings, ns))
            .into_iter()
            .flat_map(move |s| s.matching(user));
        own.chain(defaults).chain(namespaced)
    }

    /// Whether RBAC allows `request` to `user` (`RBACAuthorizer.Authorize`). With
    /// `cluster_wide_only`, RoleBindings do not count (requests across logical clusters).
    pub fn authorize(
        &self,
        user: &UserInfo,
        request: &RequestInfo,
        cluster_wide_only: bool,
    ) -> Verdict {
        let namespace = if cluster_wide_only || !request.is_resource_request {
            None
        } else {
            request.namespace.as_deref().filter(|n| !n.is_empty())
        };
        let mut errors: Vec<String> = Vec::new();
        for g in self.grants(user, namespace) {
            match self.role_rules(&g.binding) {
                Ok(rules) => {
                    if rules.iter().any(|r| r.allows(request)) {
                        return Verdict::Allow(format!("RBAC: allowed by {}", describe(g)));
                    }
                }
                Err(e) => errors.push(e),
            }
        }
        Verdict::NoOpinion(match errors.len() {
            0 => String::new(),
            1 => format!("RBAC: {}", errors.remove(0)),
            _ => format!("RBAC: [{}]", errors.join(", ")),
        })
    }

    /// Every rule that applies to `user` in `namespace` (cluster-wide ones included), and
    /// the errors met (missing roles): a SelfSubjectRulesReview.
    pub fn rules_for(&self, user: &UserInfo, namespace: Option<&str>) -> (Vec<Rule>, Vec<String>) {
        let mut rules: Vec<Rule> = Vec::new();
        let mut errors = Vec::new();
        for g in self.grants(user, namespace) {
            match self.role_rules(&g.binding) {
                Ok(rs) => {
                    for r in rs {
                        if !rules.contains(r) {
                            rules.push(r.clone());
                        }
                    }
                }
                Err(e) => errors.push(e),
            }
        }
        (rules, errors)
    }

    /// The rules of ClusterRole `name` as this cluster evaluates it (aggregation applied).
    pub fn cluster_role_rules(&self, name: &str) -> Option<&'a [Rule]> {
        self.cluster_role(name)
    }

    /// The rules a binding's `roleRef` of `kind` (`Role` or `ClusterRole`) and `name`
    /// refers to, in `namespace` for a Role (`GetRoleReferenceRules`); the error is
    /// upstream's text for a missing role.
    pub fn role_ref_rules(
        &self,
        kind: &str,
        name: &str,
        namespace: Option<&str>,
    ) -> Result<&'a [Rule], String> {
        match (kind, namespace) {
            ("Role", Some(ns)) => self
                .cluster
                .roles
                .get(ns)
                .and_then(|m| m.get(name))
                .map(|r| &r.rules[..])
                .ok_or_else(|| format!("roles.rbac.authorization.k8s.io {name:?} not found")),
            ("ClusterRole", _) => self.cluster_role(name).ok_or_else(|| {
                format!("clusterroles.rbac.authorization.k8s.io {name:?} not found")
            }),
            _ => Err(format!("unsupported role reference kind: {kind:?}")),
        }
    }
}

/// Upstream's description of the binding that allowed a request.
fn describe(g: &Grant) -> String {
    let b = &g.binding;
    let kind = match b.role_kind {
        RoleKind::Role => "Role",
        RoleKind::ClusterRole => "ClusterRole",
    };
    match &b.namespace {
        None => format!(
            "ClusterRoleBinding {:?} of {kind} {:?} to {}",
            b.name, b.role, g.subject
        ),
        Some(ns) => format!(
            "RoleBinding \"{}/{ns}\" of {kind} {:?} to {}",
            b.name, b.role, g.subject
        ),
    }
}
