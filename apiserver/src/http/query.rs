//! Query-string parameters of resource requests (list, watch, write and delete options),
//! parsed and validated as kube-apiserver does. Empty pairs are skipped: kube-rs sends
//! query strings that begin with `?&`.

use std::collections::HashMap;

use kplane_types::{Cause, Status};
use serde_json::json;

use kplane_registry::options::{field_manager_problems, list_options_invalid};
pub use kplane_registry::options::{
    parse_dry_run, FieldValidation, ListParams, OptionsKind, RvMatch, WriteParams,
};
use kplane_registry::{ApiError, ApiResult};

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

/// List and watch options from the query string (a watch when `watch=true`).
pub fn list_params(q: &Query) -> ApiResult<ListParams> {
    let p = parse_list_params(q)?;
    p.validate()?;
    Ok(p)
}

/// The options of a request that is a watch whatever its `watch` parameter says (the
/// legacy `/watch/` prefix).
pub fn list_params_watching(q: &Query) -> ApiResult<ListParams> {
    let mut p = parse_list_params(q)?;
    p.watch = true;
    p.validate()?;
    Ok(p)
}

fn parse_list_params(q: &Query) -> ApiResult<ListParams> {
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
        annotation: None,
        timeout_seconds,
    };
    Ok(p)
}

/// Create, update and patch options from the query string.
pub fn write_params(q: &Query, kind: OptionsKind) -> ApiResult<WriteParams> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use kplane_registry::options::manager_from_user_agent;

    #[test]
    fn skips_empty_pairs_like_kube_rs_sends() {
        let q = Query::parse(Some(
            "&watch=true&timeoutSeconds=290&allowWatchBookmarks=true&resourceVersion=5",
        ));
        let p = list_params(&q).unwrap();
        assert!(p.watch && p.allow_bookmarks);
        assert_eq!(p.timeout_seconds, Some(290));
        assert_eq!(p.resource_version.as_deref(), Some("5"));
    }

    #[test]
    fn rv_match_rules() {
        let q = Query::parse(Some("resourceVersionMatch=Exact"));
        assert_eq!(list_params(&q).unwrap_err().code(), 422);
        let q = Query::parse(Some("resourceVersion=0&resourceVersionMatch=Exact"));
        assert_eq!(list_params(&q).unwrap_err().code(), 422);
        let q = Query::parse(Some("sendInitialEvents=true"));
        assert_eq!(list_params(&q).unwrap_err().code(), 422);
        let q = Query::parse(Some("watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true"));
        assert!(list_params(&q).is_ok());
    }

    #[test]
    fn dry_run_only_all() {
        assert!(
            write_params(&Query::parse(Some("dryRun=All")), OptionsKind::Create)
                .unwrap()
                .dry_run
        );
        assert_eq!(
            write_params(&Query::parse(Some("dryRun=Some")), OptionsKind::Create)
                .unwrap_err()
                .code(),
            422
        );
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
        let w = write_params(&Query::parse(None), OptionsKind::Update)
            .unwrap()
            .with_user_agent(Some("kube-rs/0.98"));
        assert_eq!(w.manager(), "kube-rs");
    }

    #[test]
    fn field_manager_is_validated_like_upstream() {
        let q = Query::parse(Some("fieldManager=a%07b"));
        let e = write_params(&q, OptionsKind::Create).unwrap_err();
        assert_eq!(e.code(), 422);
        let body = e.0.to_json().to_string();
        assert!(
            body.contains("invalid character U+0007 (at position 1)"),
            "{body}"
        );
        assert!(body.contains("CreateOptions"), "{body}");
        let long = format!("fieldManager={}", "m".repeat(129));
        let e = write_params(&Query::parse(Some(&long)), OptionsKind::Patch).unwrap_err();
        let body = e.0.to_json().to_string();
        assert!(
            body.contains("Too long: may not be more than 128 bytes"),
            "{body}"
        );
        let ok = format!("fieldManager={}", "m".repeat(128));
        assert!(write_params(&Query::parse(Some(&ok)), OptionsKind::Patch).is_ok());
    }
}
