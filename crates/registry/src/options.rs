//! Options of the registry's verbs: list and watch options, write options (dry run, field
//! manager, `fieldValidation`), and their validation as kube-apiserver's
//! `ValidateListOptions`, `ValidateDryRun` and `ValidateFieldManager` do. The HTTP layer
//! parses them from the query string; the registry and its controllers build them directly.

use kplane_types::{Cause, Status};
use serde_json::json;

use crate::error::{ApiError, ApiResult};

/// `resourceVersionMatch`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RvMatch {
    NotOlderThan,
    Exact,
}

/// List and watch options.
#[derive(Clone, Debug, Default)]
pub struct ListParams {
    pub label_selector: Option<String>,
    pub field_selector: Option<String>,
    pub limit: Option<usize>,
    pub continue_token: Option<String>,
    pub resource_version: Option<String>,
    pub rv_match: Option<RvMatch>,
    pub watch: bool,
    pub allow_bookmarks: bool,
    pub send_initial_events: Option<bool>,
    pub timeout_seconds: Option<u64>,
    /// Only objects whose annotation (key, value) has exactly this value. Not a query
    /// parameter: the sync endpoint sets it to serve the objects assigned to one target
    /// (`crate::sync`), with paging and watch semantics of a label selector.
    pub annotation: Option<(String, String)>,
}

pub fn list_options_invalid(causes: Vec<Cause>) -> ApiError {
    ApiError::from(Status::invalid("meta.k8s.io", "ListOptions", "", causes))
}

impl ListParams {
    /// The cross-field rules of `ValidateListOptions`.
    pub fn validate(&self) -> ApiResult<()> {
        let mut causes = Vec::new();
        if self.watch {
            if let Some(send) = self.send_initial_events {
                if self.rv_match != Some(RvMatch::NotOlderThan) {
                    causes.push(Cause::forbidden(
                        "resourceVersionMatch",
                        "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan",
                    ));
                }
                if send && !self.allow_bookmarks {
                    causes.push(Cause::forbidden(
                        "allowWatchBookmarks",
                        "sendInitialEvents requires setting allowWatchBookmarks to true",
                    ));
                }
            } else if self.rv_match.is_some() {
                causes.push(Cause::forbidden(
                    "resourceVersionMatch",
                    "resourceVersionMatch is forbidden for watch unless sendInitialEvents is provided",
                ));
            }
        } else {
            if self.send_initial_events.is_some() {
                causes.push(Cause::forbidden(
                    "sendInitialEvents",
                    "sendInitialEvents is forbidden for list",
                ));
            }
            if let Some(m) = self.rv_match {
                if self.resource_version.is_none() {
                    causes.push(Cause::forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden unless resourceVersion is provided",
                    ));
                }
                if self.continue_token.is_some() {
                    causes.push(Cause::forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch is forbidden when continue is provided",
                    ));
                }
                if m == RvMatch::Exact && self.resource_version.as_deref() == Some("0") {
                    causes.push(Cause::forbidden(
                        "resourceVersionMatch",
                        "resourceVersionMatch \"exact\" is forbidden for resourceVersion \"0\"",
                    ));
                }
            }
        }
        if causes.is_empty() {
            Ok(())
        } else {
            Err(list_options_invalid(causes))
        }
    }
}

/// Options shared by create, update and patch.
#[derive(Clone, Debug, Default)]
pub struct WriteParams {
    pub dry_run: bool,
    pub field_manager: Option<String>,
    pub field_validation: FieldValidation,
    pub force: Option<bool>,
    /// Paths of keys the request body repeated (for `fieldValidation`).
    pub duplicates: Vec<String>,
    /// Warnings for the response.
    pub warnings: crate::warnings::Warnings,
    /// Audit annotations admission adds.
    pub audit: crate::audit_annotations::AuditAnnotations,
    /// The manager named by the User-Agent, for writes without `fieldManager`.
    pub default_manager: String,
    /// Set by server-side apply, which records its own managedFields entries.
    pub skip_managed_fields: bool,
    /// The subresource recorded in `Update` entries when the write reaches the object
    /// through another path (`scale`).
    pub managed_subresource: Option<&'static str>,
    /// The requester, for admission (`None` for the server's own writes).
    pub user: Option<kplane_types::UserInfo>,
}

/// `fieldValidation`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum FieldValidation {
    Ignore,
    #[default]
    Warn,
    Strict,
}

/// Which `*Options` kind a write verb validates against (for 422 messages).
#[derive(Clone, Copy, Debug)]
pub enum OptionsKind {
    Create,
    Update,
    Patch,
    Delete,
}

impl OptionsKind {
    pub fn name(self) -> &'static str {
        match self {
            OptionsKind::Create => "CreateOptions",
            OptionsKind::Update => "UpdateOptions",
            OptionsKind::Patch => "PatchOptions",
            OptionsKind::Delete => "DeleteOptions",
        }
    }
}

/// Parses `dryRun` values: only `All` is allowed (`ValidateDryRun`).
pub fn parse_dry_run(values: &[String], kind: OptionsKind) -> ApiResult<bool> {
    let mut dry = false;
    for v in values {
        if v == "All" {
            dry = true;
        } else {
            return Err(ApiError::from(Status::invalid(
                "meta.k8s.io",
                kind.name(),
                "",
                vec![Cause::not_supported("dryRun", &json!(values), &["All"])],
            )));
        }
    }
    Ok(dry)
}

impl WriteParams {
    /// Options of a write made by kplane's own controllers (garbage collector, namespace
    /// controller, root-CA publisher, namespace bootstrap), recorded under the manager
    /// kube-controller-manager uses upstream.
    pub fn controller() -> WriteParams {
        WriteParams::controller_named(CONTROLLER_MANAGER)
    }

    /// Options of a controller write recorded under `manager` (e.g. [`APISERVER_MANAGER`]
    /// for the controllers kube-apiserver runs itself).
    pub fn controller_named(manager: &str) -> WriteParams {
        WriteParams {
            default_manager: manager.to_string(),
            ..Default::default()
        }
    }

    /// Takes the default field manager from the request's User-Agent.
    pub fn with_user_agent(mut self, user_agent: Option<&str>) -> Self {
        self.default_manager = manager_from_user_agent(user_agent.unwrap_or(""));
        self
    }

    /// The manager this write is recorded under: `fieldManager`, else the User-Agent's.
    pub fn manager(&self) -> &str {
        self.field_manager
            .as_deref()
            .unwrap_or(&self.default_manager)
    }
}

/// The field manager of writes by the built-in controllers.
pub const CONTROLLER_MANAGER: &str = "kube-controller-manager";

/// The field manager of writes by the controllers kube-apiserver runs itself (the
/// apiextensions-apiserver's CRD finalizer and naming controller, which write through its
/// loopback client).
pub const APISERVER_MANAGER: &str = "kube-apiserver";

/// Longest field manager name (`FieldManagerMaxLength`).
const FIELD_MANAGER_MAX_LENGTH: usize = 128;

/// Go's `unicode.IsPrint`: graphic characters and the ASCII space.
fn is_print(c: char) -> bool {
    c == ' ' || !(c.is_control() || c.is_whitespace() || is_format_char(c))
}

/// Unicode format characters (category Cf) clients are likely to send by accident.
fn is_format_char(c: char) -> bool {
    matches!(c, '\u{ad}' | '\u{600}'..='\u{605}' | '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2064}' | '\u{feff}')
}

/// `ValidateFieldManager`: at most 128 bytes, printable characters only.
pub fn field_manager_problems(m: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    if m.len() > FIELD_MANAGER_MAX_LENGTH {
        causes.push(Cause::too_long("fieldManager", FIELD_MANAGER_MAX_LENGTH));
    }
    for (i, c) in m.char_indices().filter(|(_, c)| !is_print(*c)) {
        causes.push(Cause::invalid(
            "fieldManager",
            &json!(m),
            &format!("invalid character U+{:04X} (at position {i})", c as u32),
        ));
    }
    causes
}

/// The default manager of a request without `fieldManager` (upstream
/// `prefixFromUserAgent`): the User-Agent up to its first `/`, unprintable characters
/// dropped, cut to 128 bytes.
pub fn manager_from_user_agent(ua: &str) -> String {
    let prefix = ua.split('/').next().unwrap_or("");
    let mut out = String::new();
    for c in prefix.chars().filter(|c| is_print(*c)) {
        if out.len() + c.len_utf8() > FIELD_MANAGER_MAX_LENGTH {
            break;
        }
        out.push(c);
    }
    out
}
