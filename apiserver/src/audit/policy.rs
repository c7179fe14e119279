//! The audit policy (`audit.k8s.io/v1` `Policy`, `--audit-policy-file`): which level and
//! stages a request is recorded at. Rules are tried in order and the first that matches
//! decides, as kube-apiserver's policy checker does; a request no rule matches is not
//! recorded (level `None`). The policy's own `omitStages` are added to every rule's, and a
//! rule's `omitManagedFields` overrides the policy's. Unknown fields are ignored, as
//! kube-apiserver's (non-strict) decoding of the file does.

use serde::Deserialize;

use kplane_types::{RequestInfo, UserInfo};

/// How much of a request is recorded, least first.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub enum Level {
    #[default]
    None,
    Metadata,
    Request,
    RequestResponse,
}

impl Level {
    pub fn as_str(self) -> &'static str {
        match self {
            Level::None => "None",
            Level::Metadata => "Metadata",
            Level::Request => "Request",
            Level::RequestResponse => "RequestResponse",
        }
    }
}

/// When in its life a request is recorded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
pub enum Stage {
    RequestReceived,
    ResponseStarted,
    ResponseComplete,
    Panic,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Stage::RequestReceived => "RequestReceived",
            Stage::ResponseStarted => "ResponseStarted",
            Stage::ResponseComplete => "ResponseComplete",
            Stage::Panic => "Panic",
        }
    }
}

/// A group's resources in a rule (`GroupResources`).
#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GroupResources {
    #[serde(default)]
    pub group: String,
    #[serde(default)]
    pub resources: Vec<String>,
    #[serde(default)]
    pub resource_names: Vec<String>,
}

/// One rule (`PolicyRule`).
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Rule {
    pub level: Level,
    #[serde(default)]
    pub users: Vec<String>,
    #[serde(default)]
    pub user_groups: Vec<String>,
    #[serde(default)]
    pub verbs: Vec<String>,
    #[serde(default)]
    pub resources: Vec<GroupResources>,
    #[serde(default)]
    pub namespaces: Vec<String>,
    #[serde(default, rename = "nonResourceURLs")]
    pub non_resource_urls: Vec<String>,
    #[serde(default)]
    pub omit_stages: Vec<Stage>,
    #[serde(default)]
    pub omit_managed_fields: Option<bool>,
}

/// The policy file as written.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
struct PolicyFile {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    rules: Vec<Rule>,
    #[serde(default)]
    omit_stages: Vec<Stage>,
    #[serde(default)]
    omit_managed_fields: bool,
}

/// A validated policy.
#[derive(Clone, Debug, Default)]
pub struct Policy {
    rules: Vec<Rule>,
    omit_stages: Vec<Stage>,
    omit_managed_fields: bool,
}

/// What the policy says about one request.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Decision {
    pub level: Level,
    pub omit_stages: Vec<Stage>,
    pub omit_managed_fields: bool,
}

impl Decision {
    /// Whether an event of `stage` is written.
    pub fn records(&self, stage: Stage) -> bool {
        self.level > Level::None && !self.omit_stages.contains(&stage)
    }
}

/// What the policy looks at: the authenticated user (none for a request that failed
/// authentication) and the request's attributes.
#[derive(Clone, Copy, Debug)]
pub struct Attributes<'a> {
    pub user: Option<&'a UserInfo>,
    pub request: &'a RequestInfo,
}

impl Policy {
    /// Parses and validates a policy file's text (YAML or JSON).
    pub fn parse(text: &str) -> Result<Policy, String> {
        let file: PolicyFile =
            serde_saphyr::from_str(text).map_err(|e| format!("invalid audit policy: {e}"))?;
        if file.kind != "Policy" {
            return Err(format!(
                "invalid audit policy: kind must be \"Policy\", not {:?}",
                file.kind
            ));
        }
        if file.api_version != "audit.k8s.io/v1" {
            return Err(format!(
                "invalid audit policy: apiVersion must be \"audit.k8s.io/v1\", not {:?}",
                file.api_version
            ));
        }
        if file.rules.is_empty() {
            // kube-apiserver refuses a policy without rules.
            return Err("invalid audit policy: it has no rules".into());
        }
        for (i, r) in file.rules.iter().enumerate() {
            validate_rule(r).map_err(|e| format!("invalid audit policy: rules[{i}]: {e}"))?;
        }
        let mut rules = file.rules;
        for r in &mut rules {
            for s in &file.omit_stages {
                if !r.omit_stages.contains(s) {
                    r.omit_stages.push(*s);
                }
            }
        }
        Ok(Policy {
            rules,
            omit_stages: file.omit_stages,
            omit_managed_fields: file.omit_managed_fields,
        })
    }

    /// The first matching rule's level and stages; `None` when no rule matches.
    pub fn evaluate(&self, attrs: &Attributes<'_>) -> Decision {
        match self.rules.iter().find(|r| rule_matches(r, attrs)) {
            Some(r) => Decision {
                level: r.level,
                omit_stages: r.omit_stages.clone(),
                omit_managed_fields: r.omit_managed_fields.unwrap_or(self.omit_managed_fields),
            },
            None => Decision {
                level: Level::None,
                omit_stages: self.omit_stages.clone(),
                omit_managed_fields: self.omit_managed_fields,
            },
        }
    }
}

/// kube-apiserver's validation of a rule: resource and non-resource selectors exclude each
/// other; non-resource URLs are paths with `*` only at the end.
fn validate_rule(r: &Rule) -> Result<(), String> {
    if !r.non_resource_urls.is_empty() && (!r.resources.is_empty() || !r.namespaces.is_empty()) {
        return Err("rules cannot apply to both regular resources and non-resource URLs".into());
    }
    for u in &r.non_resource_urls {
        if u == "*" {
            continue;
        }
        if !u.starts_with('/') {
            return Err(format!("nonResourceURLs: {u:?} must start with \"/\""));
        }
        if u[..u.len() - 1].contains('*') {
            return Err(format!(
                "nonResourceURLs: {u:?}: \"*\" is only allowed at the end"
            ));
        }
    }
    for gr in &r.resources {
        if gr.resources.is_empty() && !gr.resource_names.is_empty() {
            return Err("resourceNames require resources".into());
        }
        if !gr.resource_names.is_empty() && gr.resources.iter().any(|r| r == "*") {
            return Err("using resourceNames with wildcard resources is not allowed".into());
        }
    }
    Ok(())
}

fn rule_matches(r: &Rule, attrs: &Attributes<'_>) -> bool {
    if !r.users.is_empty() {
        match attrs.user {
            Some(u) if r.users.contains(&u.username) => {}
            _ => return false,
        }
    }
    if !r.user_groups.is_empty() {
        match attrs.user {
            Some(u) if u.groups.iter().any(|g| r.user_groups.contains(g)) => {}
            _ => return false,
        }
    }
    if !r.verbs.is_empty() && !r.verbs.iter().any(|v| v == attrs.request.verb.as_str()) {
        return false;
    }
    if !r.namespaces.is_empty() || !r.resources.is_empty() {
        return matches_resource(r, attrs.request);
    }
    if !r.non_resource_urls.is_empty() {
        return !attrs.request.is_resource_request
            && r.non_resource_urls
                .iter()
                .any(|spec| path_matches(&attrs.request.path, spec));
    }
    true
}

fn path_matches(path: &str, spec: &str) -> bool {
    spec == "*"
        || spec == path
        || spec
            .strip_suffix('*')
            .is_some_and(|prefix| path.starts_with(prefix.trim_end_matches('*')))
}

fn matches_resource(r: &Rule, req: &RequestInfo) -> bool {
    if !req.is_resource_request {
        return false;
    }
    // A cluster-scoped resource's namespace is "".
    if !r.namespaces.is_empty()
        && !r
            .namespaces
            .iter()
            .any(|n| n == req.namespace.as_deref().unwrap_or(""))
    {
        return false;
    }
    if r.resources.is_empty() {
        return true;
    }
    let resource = req.resource.as_str();
    let sub = req.subresource.as_deref().unwrap_or("");
    let combined = if sub.is_empty() {
        resource.to_string()
    } else {
        format!("{resource}/{sub}")
    };
    let name = req.name.as_deref().unwrap_or("");
    r.resources
        .iter()
        .filter(|gr| gr.group == req.api_group)
        .any(|gr| {
            gr.resources.is_empty()
                || (gr.resource_names.is_empty() || gr.resource_names.iter().any(|n| n == name))
                    && gr.resources.iter().any(|res| {
                        *res == combined
                            || res == "*"
                            || (!sub.is_empty()
                                && res.starts_with("*/")
                                && res.trim_start_matches(['*', '/']) == sub)
                            || (res.ends_with("/*") && res.trim_end_matches(['/', '*']) == resource)
                    })
        })
}
