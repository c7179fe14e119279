//! Query-string parameters of resource requests (list, watch, write and delete options),
//! parsed and validated as kube-apiserver does. Empty pairs are skipped: kube-rs sends
//! query strings that begin with `?&`.

use std::collections::HashMap;

use kplane_types::{Cause, Status};
use serde_json::json;

use crate::error::{ApiError, ApiResult};

/// Raw query pairs (last value wins, as Go's `url.Values.Get` takes the first — we keep the
/// first to match).
#[derive(Clone, Debug, Default)]
pub struct Query(HashMap<String, String>);

impl Query {
    pub fn parse(q: Option<&str>) -> Query {
        let mut map = HashMap::new();
        if let Some(q) = q {
            for (k, v) in form_urlencoded::parse(q.as_bytes()) {
                if k.is_empty() {
                    continue;
                }
                map.entry(k.into_owned()).or_insert_with(|| v.into_owned());
            }
        }
        Query(map)
    }

    pub fn get(&self, k: &str) -> Option<&str> {
        self.0.get(k).map(String::as_str)
    }

    /// Go `strconv.ParseBool` spellings.
    pub fn bool(&self, k: &str) -> ApiResult<Option<bool>> {
        match self.get(k) {
            None => Ok(None),
            Some(v) => match v {
                "1" | "t" | "T" | "true" | "TRUE" | "True" => Ok(Some(true)),
                "0" | "f" | "F" | "false" | "FALSE" | "False" | "" => Ok(Some(false)),
                other => Err(ApiError::bad_request(format!(
                    "invalid value {other:?} for query parameter {k:?}: must be a boolean"
                ))),
            },
        }
    }

    pub fn int(&self, k: &str) -> ApiResult<Option<i64>> {
        match self.get(k) {
            None | Some("") => Ok(None),
            Some(v) => v.parse::<i64>().map(Some).map_err(|_| {
                ApiError::bad_request(format!(
                    "invalid value {v:?} for query parameter {k:?}: must be an integer"
                ))
            }),
        }
    }
}

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
}

fn list_options_invalid(causes: Vec<Cause>) -> ApiError {
    ApiError::from(Status::invalid("meta.k8s.io", "ListOptions", "", causes))
}

impl ListParams {
    /// The list or watch options of a request (a watch when `watch=true`).
    pub fn from_query(q: &Query) -> ApiResult<ListParams> {
        let p = Self::parse(q)?;
        p.validate()?;
        Ok(p)
    }

    /// The options of a request that is a watch whatever its `watch` parameter says (the
    /// legacy `/watch/` prefix).
    pub fn from_query_watching(q: &Query) -> ApiResult<ListParams> {
        let mut p = Self::parse(q)?;
        p.watch = true;
        p.validate()?;
        Ok(p)
    }

    fn parse(q: &Query) -> ApiResult<ListParams> {
        let limit = match q.int("limit")? {
            Some(n) if n > 0 => Some(n as usize),
            _ => None,
        };
        let timeout_seconds = match q.int("timeoutSeconds")? {
            Some(n) if n > 0 => Some(n as u64),
            _ => None,
        };
        let rv_match = match q.get("resourceVersionMatch") {
            None | Some("") => None,
            Some("NotOlderThan") => Some(RvMatch::NotOlderThan),
            Some("Exact") => Some(RvMatch::Exact),
            Some(other) => {
                return Err(list_options_invalid(vec![Cause::not_supported(
                    "resourceVersionMatch",
                    &json!(other),
                    &["Exact", "NotOlderThan"],
                )]))
            }
        };
        if let Some(t) = q.get("timeout") {
            parse_go_duration(t).ok_or_else(|| {
                ApiError::bad_request(format!(
                    "invalid timeout {t:?}: must be a duration such as 32s"
                ))
            })?;
        }
        let p = ListParams {
            label_selector: q
                .get("labelSelector")
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            field_selector: q
                .get("fieldSelector")
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            limit,
            continue_token: q
                .get("continue")
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            resource_version: q
                .get("resourceVersion")
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            rv_match,
            watch: q.bool("watch")?.unwrap_or(false),
            allow_bookmarks: q.bool("allowWatchBookmarks")?.unwrap_or(false),
            send_initial_events: q.bool("sendInitialEvents")?,
            timeout_seconds,
        };
        Ok(p)
    }

    /// The cross-field rules of `ValidateListOptions`.
    fn validate(&self) -> ApiResult<()> {
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
    /// The manager named by the User-Agent, for writes without `fieldManager`.
    pub default_manager: String,
    /// Set by server-side apply, which records its own managedFields entries.
    pub skip_managed_fields: bool,
    /// The subresource recorded in `Update` entries when the write reaches the object
    /// through another path (`scale`).
    pub managed_subresource: Option<&'static str>,
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
    fn name(self) -> &'static str {
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
    pub fn from_query(q: &Query, kind: OptionsKind) -> ApiResult<WriteParams> {
        let dry: Vec<String> = q
            .get("dryRun")
            .map(|s| vec![s.to_string()])
            .unwrap_or_default();
        let dry_run = parse_dry_run(&dry, kind)?;
        let field_validation = match q.get("fieldValidation") {
            None | Some("") | Some("Warn") => FieldValidation::Warn,
            Some("Ignore") => FieldValidation::Ignore,
            Some("Strict") => FieldValidation::Strict,
            Some(other) => {
                return Err(ApiError::from(Status::invalid(
                    "meta.k8s.io",
                    kind.name(),
                    "",
                    vec![Cause::not_supported(
                        "fieldValidation",
                        &json!(other),
                        &["Ignore", "Strict", "Warn"],
                    )],
                )))
            }
        };
        let field_manager = q
            .get("fieldManager")
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        if let Some(m) = &field_manager {
            let causes = field_manager_problems(m);
            if !causes.is_empty() {
                return Err(ApiError::from(Status::invalid(
                    "meta.k8s.io",
                    kind.name(),
                    "",
                    causes,
                )));
            }
        }
        Ok(WriteParams {
            dry_run,
            field_manager,
            field_validation,
            force: q.bool("force")?,
            ..Default::default()
        })
    }

    /// Options of a write made by kplane's own controllers (garbage collector, namespace
    /// bootstrap), recorded under the manager kube-controller-manager uses upstream.
    pub fn controller() -> WriteParams {
        WriteParams {
            default_manager: CONTROLLER_MANAGER.to_string(),
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
fn field_manager_problems(m: &str) -> Vec<Cause> {
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

/// Parses a Go duration such as `32s`, `1m30s`, `500ms`.
pub fn parse_go_duration(s: &str) -> Option<std::time::Duration> {
    if s.is_empty() {
        return None;
    }
    let mut total = 0f64;
    let mut rest = s;
    while !rest.is_empty() {
        let num_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.'))?;
        let n: f64 = rest[..num_end].parse().ok()?;
        rest = &rest[num_end..];
        let unit_end = rest
            .find(|c: char| c.is_ascii_digit() || c == '.')
            .unwrap_or(rest.len());
        let mult = match &rest[..unit_end] {
            "ns" => 1e-9,
            "us" | "µs" => 1e-6,
            "ms" => 1e-3,
            "s" => 1.0,
            "m" => 60.0,
            "h" => 3600.0,
            _ => return None,
        };
        total += n * mult;
        rest = &rest[unit_end..];
    }
    Some(std::time::Duration::from_secs_f64(total))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_empty_pairs_like_kube_rs_sends() {
        let q = Query::parse(Some(
            "&watch=true&timeoutSeconds=290&allowWatchBookmarks=true&resourceVersion=5",
        ));
        let p = ListParams::from_query(&q).unwrap();
        assert!(p.watch && p.allow_bookmarks);
        assert_eq!(p.timeout_seconds, Some(290));
        assert_eq!(p.resource_version.as_deref(), Some("5"));
    }

    #[test]
    fn rv_match_rules() {
        let q = Query::parse(Some("resourceVersionMatch=Exact"));
        assert_eq!(ListParams::from_query(&q).unwrap_err().code(), 422);
        let q = Query::parse(Some("resourceVersion=0&resourceVersionMatch=Exact"));
        assert_eq!(ListParams::from_query(&q).unwrap_err().code(), 422);
        let q = Query::parse(Some("sendInitialEvents=true"));
        assert_eq!(ListParams::from_query(&q).unwrap_err().code(), 422);
        let q = Query::parse(Some("watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"));
        assert!(ListParams::from_query(&q).is_ok());
    }

    #[test]
    fn dry_run_only_all() {
        assert!(
            WriteParams::from_query(&Query::parse(Some("dryRun=All")), OptionsKind::Create)
                .unwrap()
                .dry_run
        );
        assert_eq!(
            WriteParams::from_query(&Query::parse(Some("dryRun=Some")), OptionsKind::Create)
                .unwrap_err()
                .code(),
            422
        );
    }

    #[test]
    fn go_durations() {
        assert_eq!(
            parse_go_duration("32s"),
            Some(std::time::Duration::from_secs(32))
        );
        assert_eq!(
            parse_go_duration("1m30s"),
            Some(std::time::Duration::from_secs(90))
        );
        assert_eq!(parse_go_duration("abc"), None);
    }

    #[test]
    fn default_manager_is_the_user_agent_prefix() {
        assert_eq!(
            manager_from_user_agent("kubectl/v1.32.0 (linux/amd64) kubernetes/abc"),
            "kubectl"
        );
        assert_eq!(manager_from_user_agent("my\u{7}controller"), "mycontroller");
        assert_eq!(manager_from_user_agent(&"x".repeat(300)).len(), 128);
        assert_eq!(manager_from_user_agent(""), "");
        let w = WriteParams::from_query(&Query::parse(None), OptionsKind::Update)
            .unwrap()
            .with_user_agent(Some("kube-rs/0.98"));
        assert_eq!(w.manager(), "kube-rs");
    }

    #[test]
    fn field_manager_is_validated_like_upstream() {
        let q = Query::parse(Some("fieldManager=a%07b"));
        let e = WriteParams::from_query(&q, OptionsKind::Create).unwrap_err();
        assert_eq!(e.code(), 422);
        let body = e.0.to_json().to_string();
        assert!(
            body.contains("invalid character U+0007 (at position 1)"),
            "{body}"
        );
        assert!(body.contains("CreateOptions"), "{body}");
        let long = format!("fieldManager={}", "m".repeat(129));
        let e =
            WriteParams::from_query(&Query::parse(Some(&long)), OptionsKind::Patch).unwrap_err();
        let body = e.0.to_json().to_string();
        assert!(
            body.contains("Too long: may not be more than 128 bytes"),
            "{body}"
        );
        let ok = format!("fieldManager={}", "m".repeat(128));
        assert!(WriteParams::from_query(&Query::parse(Some(&ok)), OptionsKind::Patch).is_ok());
    }
}
