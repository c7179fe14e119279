//! One RBAC `PolicyRule` and whether it allows a request, with Kubernetes' matching rules
//! (`plugin/pkg/auth/authorizer/rbac` `RuleAllows` and the `rbacv1helpers` matchers):
//!
//! - verbs, apiGroups, resources and nonResourceURLs match exactly or by `*`;
//! - a resource request matches its resource, or `resource/subresource` when it names a
//!   subresource; `*` matches every resource and subresource, `*/scale` the `scale`
//!   subresource of every resource (a rule naming only `configmaps` does not cover
//!   `configmaps/status`);
//! - resourceNames, when set, must contain the request's name (a request without a name,
//!   such as list or create, is not covered by a rule with resourceNames);
//! - a nonResourceURL ending in `*` matches every path with the part before it as prefix.

use crate::json_map::strings;
use kplane_types::RequestInfo;
use serde_json::Value;

/// The wildcard of every rule field.
pub const ALL: &str = "*";

/// A `rbac.authorization.k8s.io/v1` PolicyRule.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rule {
    pub verbs: Vec<String>,
    pub api_groups: Vec<String>,
    pub resources: Vec<String>,
    pub resource_names: Vec<String>,
    pub non_resource_urls: Vec<String>,
}

fn owned(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

impl Rule {
    /// A resource rule.
    pub fn resource(verbs: &[&str], groups: &[&str], resources: &[&str]) -> Rule {
        Rule {
            verbs: owned(verbs),
            api_groups: owned(groups),
            resources: owned(resources),
            ..Default::default()
        }
    }

    /// A non-resource rule.
    pub fn urls(verbs: &[&str], urls: &[&str]) -> Rule {
        Rule {
            verbs: owned(verbs),
            non_resource_urls: owned(urls),
            ..Default::default()
        }
    }

    /// The same rule restricted to `names`.
    pub fn named(mut self, names: &[&str]) -> Rule {
        self.resource_names = owned(names);
        self
    }

    /// A rule of a stored Role or ClusterRole (`rules[i]`).
    pub fn from_json(v: &Value) -> Rule {
        Rule {
            verbs: strings(v.get("verbs")),
            api_groups: strings(v.get("apiGroups")),
            resources: strings(v.get("resources")),
            resource_names: strings(v.get("resourceNames")),
            non_resource_urls: strings(v.get("nonResourceURLs")),
        }
    }

    /// The rule as JSON (a PolicyRule; empty lists left out).
    pub fn to_json(&self) -> Value {
        let mut m = serde_json::Map::new();
        m.insert("verbs".into(), self.verbs.clone().into());
        for (k, v) in [
            ("apiGroups", &self.api_groups),
            ("resources", &self.resources),
            ("resourceNames", &self.resource_names),
            ("nonResourceURLs", &self.non_resource_urls),
        ] {
            if !v.is_empty() || (k == "apiGroups" && !self.resources.is_empty()) {
                m.insert(k.into(), v.clone().into());
            }
        }
        Value::Object(m)
    }

    /// Whether the rule allows the request (`RuleAllows`).
    pub fn allows(&self, r: &RequestInfo) -> bool {
        if !self.verb_matches(r.verb.as_str()) {
            return false;
        }
        if !r.is_resource_request {
            return self.url_matches(&r.path);
        }
        self.group_matches(&r.api_group)
            && self.resource_matches(&r.resource, r.subresource.as_deref())
            && self.name_matches(r.name.as_deref().unwrap_or(""))
    }

    pub fn verb_matches(&self, verb: &str) -> bool {
        self.verbs.iter().any(|v| v == ALL || v == verb)
    }

    pub fn group_matches(&self, group: &str) -> bool {
        self.api_groups.iter().any(|g| g == ALL || g == group)
    }

    /// `resource` with `subresource` (`ResourceMatches` on the combined resource).
    pub fn resource_matches(&self, resource: &str, subresource: Option<&str>) -> bool {
        let sub = subresource.filter(|s| !s.is_empty());
        self.resources.iter().any(|rule| {
            if rule == ALL {
                return true;
            }
            match sub {
                None => rule == resource,
                Some(sub) => {
                    let combined = rule.len() == resource.len() + 1 + sub.len()
                        && rule.starts_with(resource)
                        && rule[resource.len()..].starts_with('/')
                        && rule.ends_with(sub);
                    combined || rule.strip_prefix("*/") == Some(sub)
                }
            }
        })
    }

    pub fn name_matches(&self, name: &str) -> bool {
        self.resource_names.is_empty() || self.resource_names.iter().any(|n| n == name)
    }

    pub fn url_matches(&self, path: &str) -> bool {
        self.non_resource_urls.iter().any(|u| {
            u == ALL
                || u == path
                || u.strip_suffix('*')
                    .is_some_and(|prefix| path.starts_with(prefix))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_round_trip_through_json() {
        let r = Rule::resource(&["get"], &[""], &["configmaps"]).named(&["a"]);
        assert_eq!(Rule::from_json(&r.to_json()), r);
        let u = Rule::urls(&["get"], &["/healthz"]);
        assert_eq!(Rule::from_json(&u.to_json()), u);
        assert!(u.to_json().get("apiGroups").is_none());
    }
}
