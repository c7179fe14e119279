//! The `pods/log` subresource's rules, as kube-apiserver 1.32 has them
//! (`pkg/registry/core/pod/rest/log.go`, `LogLocation` and `validateContainer` in
//! `pkg/registry/core/pod/strategy.go`, `ValidatePodLogOptions`): the options decoded from
//! the query, validated, the container chosen, and where the log is read. kplane runs
//! nothing, so a pod's log is read from its host by the syncer of the SyncTarget the pod's
//! reflection annotation names ([`LogRoute`]); the streaming itself is the HTTP layer's.

use kplane_types::{Cause, ClusterScope, Status};
use serde_json::{json, Value};

use crate::error::{ApiError, ApiResult};
use crate::sync::TARGET_ANNOTATION;
use crate::{Registry, Target};

/// The annotation of a reflection naming its host pod, `<host namespace>/<name>` (written by
/// the syncer).
pub const HOST_POD_ANNOTATION: &str = "sync.kplane.io/host-pod";

/// `core/v1` `PodLogOptions`, as the query gives them.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct PodLogOptions {
    pub container: String,
    pub follow: bool,
    pub previous: bool,
    pub timestamps: bool,
    pub since_seconds: Option<i64>,
    /// RFC 3339, as given (checked to parse).
    pub since_time: Option<String>,
    pub tail_lines: Option<i64>,
    pub limit_bytes: Option<i64>,
    pub insecure_skip_tls_verify_backend: bool,
    /// `stream`, which 1.32 refuses (its `PodLogsQuerySplitStreams` gate is off).
    pub stream: Option<String>,
}

/// A query parameter's boolean as the parameter codec reads it: only `0` and `false`
/// (any case) are false.
fn query_bool(v: &str) -> bool {
    !(v == "0" || v.eq_ignore_ascii_case("false"))
}

fn query_int(v: &str) -> ApiResult<Option<i64>> {
    if v.is_empty() {
        return Ok(None);
    }
    v.parse::<i64>().map(Some).map_err(|_| {
        let why = if v
            .trim_start_matches(['-', '+'])
            .bytes()
            .all(|b| b.is_ascii_digit())
        {
            "value out of range"
        } else {
            "invalid syntax"
        };
        ApiError::bad_request(format!("strconv.ParseInt: parsing {v:?}: {why}"))
    })
}

impl PodLogOptions {
    /// The options of a query's `(name, value)` pairs (the first value of each name
    /// counts, as for the parameter codec); 400 for a number or time that does not parse.
    pub fn from_query<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> ApiResult<Self> {
        let mut o = PodLogOptions::default();
        let mut seen: Vec<&str> = Vec::new();
        for (k, v) in pairs {
            if seen.contains(&k) {
                continue;
            }
            seen.push(k);
            match k {
                "container" => o.container = v.to_string(),
                "follow" => o.follow = query_bool(v),
                "previous" => o.previous = query_bool(v),
                "timestamps" => o.timestamps = query_bool(v),
                "insecureSkipTLSVerifyBackend" => {
                    o.insecure_skip_tls_verify_backend = query_bool(v)
                }
                "sinceSeconds" => o.since_seconds = query_int(v)?,
                "tailLines" => o.tail_lines = query_int(v)?,
                "limitBytes" => o.limit_bytes = query_int(v)?,
                "sinceTime" if !v.is_empty() => {
                    if chrono::DateTime::parse_from_rfc3339(v).is_err() {
                        return Err(ApiError::bad_request(format!(
                            "parsing time {v:?} as \"2006-01-02T15:04:05Z07:00\": cannot parse {v:?} as \"2006\""
                        )));
                    }
                    o.since_time = Some(v.to_string());
                }
                "stream" if !v.is_empty() => o.stream = Some(v.to_string()),
                _ => {}
            }
        }
        Ok(o)
    }

    /// `ValidatePodLogOptions` (stream selection off): 422 `PodLogOptions "<pod>" is invalid`.
    pub fn validate(&self, pod: &str) -> ApiResult<()> {
        let mut causes = Vec::new();
        if let Some(n) = self.tail_lines.filter(|n| *n < 0) {
            causes.push(Cause::invalid(
                "tailLines",
                &json!(n),
                "must be greater than or equal to 0",
            ));
        }
        if let Some(n) = self.limit_bytes.filter(|n| *n < 1) {
            causes.push(Cause::invalid(
                "limitBytes",
                &json!(n),
                "must be greater than 0",
            ));
        }
        match (self.since_seconds, &self.since_time) {
            (Some(_), Some(_)) => causes.push(Cause::forbidden(
                "",
                "at most one of `sinceTime` or `sinceSeconds` may be specified",
            )),
            (Some(n), None) if n < 1 => causes.push(Cause::invalid(
                "sinceSeconds",
                &json!(n),
                "must be greater than 0",
            )),
            _ => {}
        }
        if self.stream.is_some() {
            causes.push(Cause::forbidden("stream", "may not be specified"));
        }
        if causes.is_empty() {
            Ok(())
        } else {
            Err(ApiError::from(Status::invalid(
                "",
                "PodLogOptions",
                pod,
                causes,
            )))
        }
    }

    /// The query of the host's `pods/log` request for `container` (the parameters
    /// `LogLocation` passes on, in its order).
    pub fn host_query(&self, container: &str) -> String {
        let mut q: Vec<(&str, String)> = vec![("container", container.to_string())];
        if self.follow {
            q.push(("follow", "true".into()));
        }
        if self.previous {
            q.push(("previous", "true".into()));
        }
        if self.timestamps {
            q.push(("timestamps", "true".into()));
        }
        if let Some(n) = self.since_seconds {
            q.push(("sinceSeconds", n.to_string()));
        }
        if let Some(t) = &self.since_time {
            q.push(("sinceTime", t.clone()));
        }
        if let Some(n) = self.tail_lines {
            q.push(("tailLines", n.to_string()));
        }
        if let Some(n) = self.limit_bytes {
            q.push(("limitBytes", n.to_string()));
        }
        q.iter()
            .map(|(k, v)| format!("{k}={}", encode_query_value(v)))
            .collect::<Vec<_>>()
            .join("&")
    }
}

/// Percent-encodes a query value (unreserved characters kept).
fn encode_query_value(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Where a pod's log is read: the host pod behind a reflection, by the syncer of the
/// SyncTarget `target` (`<cluster>/<name>`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogRoute {
    pub target: String,
    /// The reflection's cluster, namespace and name.
    pub cluster: String,
    pub namespace: String,
    pub pod: String,
    /// `<host namespace>/<name>` ("" when the reflection does not say).
    pub host_pod: String,
    pub container: String,
    /// The host request's query (`container=...&follow=true...`).
    pub query: String,
}

/// `validateContainer`: the named container must be one of the pod's (init, regular or
/// ephemeral); without a name, a pod with one container uses it.
fn choose_container(pod: &Value, name: &str, wanted: &str) -> ApiResult<String> {
    let names = |list: &str| -> Vec<String> {
        pod.pointer(&format!("/spec/{list}"))
            .and_then(Value::as_array)
            .map(|cs| {
                cs.iter()
                    .filter_map(|c| c.get("name").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    let containers = names("containers");
    let mut all = names("initContainers");
    all.extend(containers.iter().cloned());
    all.extend(names("ephemeralContainers"));
    if wanted.is_empty() {
        return match containers.len() {
            1 => Ok(containers[0].clone()),
            0 => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}"
            ))),
            _ => Err(ApiError::bad_request(format!(
                "a container name must be specified for pod {name}, choose one of: [{}]",
                all.join(" ")
            ))),
        };
    }
    if all.iter().any(|c| c == wanted) {
        Ok(wanted.to_string())
    } else {
        Err(ApiError::bad_request(format!(
            "container {wanted} is not valid for pod {name}"
        )))
    }
}

impl Registry {
    /// Where the log of pod `name` in `t` (core/v1 pods, one cluster) is read, with
    /// `opts` validated and the container chosen: 404 for a missing pod, 422 for invalid
    /// options, 400 for a container the pod does not have. `None` for a pod no SyncTarget
    /// reflects (nothing runs it: kube-apiserver answers an unscheduled pod's log the same
    /// way, with no content).
    pub async fn pod_log_route(
        &self,
        t: &Target,
        name: &str,
        opts: &PodLogOptions,
    ) -> ApiResult<Option<LogRoute>> {
        opts.validate(name)?;
        let ClusterScope::One(cluster) = &t.cluster else {
            return Err(ApiError::not_found_path());
        };
        let bytes = self.get(t, name).await?;
        let pod: Value = serde_json::from_slice(&bytes).map_err(|e| crate::corrupt(&e))?;
        let container = choose_container(&pod, name, &opts.container)?;
        let annotation = |k: &str| {
            pod.pointer("/metadata/annotations")
                .and_then(|a| a.get(k))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let target = annotation(TARGET_ANNOTATION);
        if target.is_empty() {
            return Ok(None);
        }
        Ok(Some(LogRoute {
            target,
            cluster: cluster.as_str().to_string(),
            namespace: t.namespace.clone().unwrap_or_default(),
            pod: name.to_string(),
            host_pod: annotation(HOST_POD_ANNOTATION),
            query: opts.host_query(&container),
            container,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(q: &[(&str, &str)]) -> ApiResult<PodLogOptions> {
        PodLogOptions::from_query(q.iter().copied())
    }

    #[test]
    fn the_query_decodes_as_the_parameter_codec_does() {
        let o = opts(&[
            ("container", "main"),
            ("follow", ""),
            ("previous", "False"),
            ("timestamps", "1"),
            ("tailLines", "10"),
            ("sinceSeconds", ""),
            ("tailLines", "x"),
        ])
        .unwrap();
        assert_eq!(o.container, "main");
        assert!(o.follow, "an empty value is true");
        assert!(!o.previous);
        assert!(o.timestamps);
        assert_eq!(o.tail_lines, Some(10), "the first value counts");
        assert_eq!(o.since_seconds, None);
        let e = opts(&[("tailLines", "ten")]).unwrap_err();
        assert_eq!(e.code(), 400);
        assert_eq!(
            e.0.message,
            r#"strconv.ParseInt: parsing "ten": invalid syntax"#
        );
        let e = opts(&[("limitBytes", "99999999999999999999")]).unwrap_err();
        assert!(
            e.0.message.ends_with("value out of range"),
            "{}",
            e.0.message
        );
        assert_eq!(opts(&[("sinceTime", "yesterday")]).unwrap_err().code(), 400);
        assert_eq!(
            opts(&[("sinceTime", "2026-11-28T10:00:00Z")])
                .unwrap()
                .since_time
                .as_deref(),
            Some("2026-11-28T10:00:00Z")
        );
    }

    #[test]
    fn invalid_options_are_refused_with_upstreams_messages() {
        let check = |q: &[(&str, &str)]| opts(q).unwrap().validate("p").map_err(|e| e.0);
        assert!(check(&[
            ("tailLines", "0"),
            ("limitBytes", "1"),
            ("sinceSeconds", "1")
        ])
        .is_ok());
        let s = check(&[("tailLines", "-1")]).unwrap_err();
        assert_eq!(s.code, 422);
        assert_eq!(
            s.message,
            r#"PodLogOptions "p" is invalid: tailLines: Invalid value: -1: must be greater than or equal to 0"#
        );
        let s = check(&[("limitBytes", "0"), ("sinceSeconds", "0")]).unwrap_err();
        assert_eq!(
            s.message,
            r#"PodLogOptions "p" is invalid: [limitBytes: Invalid value: 0: must be greater than 0, sinceSeconds: Invalid value: 0: must be greater than 0]"#
        );
        let s = check(&[("sinceSeconds", "5"), ("sinceTime", "2026-11-28T10:00:00Z")]).unwrap_err();
        assert_eq!(
            s.message,
            "PodLogOptions \"p\" is invalid: Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified"
        );
        let s = check(&[("stream", "Stdout")]).unwrap_err();
        assert_eq!(
            s.message,
            r#"PodLogOptions "p" is invalid: stream: Forbidden: may not be specified"#
        );
    }

    #[test]
    fn the_host_query_carries_the_options_set() {
        let o = opts(&[
            ("follow", "true"),
            ("tailLines", "5"),
            ("sinceTime", "2026-11-28T10:00:00+01:00"),
            ("insecureSkipTLSVerifyBackend", "true"),
        ])
        .unwrap();
        assert_eq!(
            o.host_query("main"),
            "container=main&follow=true&sinceTime=2026-11-28T10%3A00%3A00%2B01%3A00&tailLines=5"
        );
        assert_eq!(PodLogOptions::default().host_query("c"), "container=c");
    }

    #[test]
    fn the_container_is_chosen_as_upstream_chooses_it() {
        let one = json!({"spec": {"containers": [{"name": "main"}]}});
        assert_eq!(choose_container(&one, "p", "").unwrap(), "main");
        assert_eq!(choose_container(&one, "p", "main").unwrap(), "main");
        let e = choose_container(&one, "p", "other").unwrap_err();
        assert_eq!(
            (e.code(), e.0.message.as_str()),
            (400, "container other is not valid for pod p")
        );
        let two = json!({"spec": {
            "initContainers": [{"name": "init"}],
            "containers": [{"name": "a"}, {"name": "b"}],
            "ephemeralContainers": [{"name": "debug"}],
        }});
        let e = choose_container(&two, "p", "").unwrap_err();
        assert_eq!(
            e.0.message,
            "a container name must be specified for pod p, choose one of: [init a b debug]"
        );
        for c in ["init", "b", "debug"] {
            assert_eq!(choose_container(&two, "p", c).unwrap(), c);
        }
        let none = json!({"spec": {"containers": []}});
        assert_eq!(
            choose_container(&none, "p", "").unwrap_err().0.message,
            "a container name must be specified for pod p"
        );
    }
}
