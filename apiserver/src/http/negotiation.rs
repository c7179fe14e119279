//! Content negotiation: which representation a client accepts (plain object, Table,
//! PartialObjectMetadata, aggregated discovery) and how a request body is decoded
//! (JSON, YAML, Kubernetes protobuf, and the patch media types).

use kplane_types::StatusReason;
use serde_json::Value;

use kplane_registry::error::{ApiError, ApiResult};

/// Largest request body accepted (kube-apiserver's limit is 3 MiB for most requests).
pub const MAX_BODY_BYTES: usize = 3 * 1024 * 1024;

/// One media range from an `Accept` header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MediaType {
    pub essence: String,
    pub params: Vec<(String, String)>,
}

impl MediaType {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.params
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn is_json_like(&self) -> bool {
        matches!(
            self.essence.as_str(),
            "application/json" | "application/*" | "*/*"
        )
    }
}

/// Parses an `Accept` header into media ranges, in the client's order of preference
/// (q-values sort stably; order breaks ties).
pub fn parse_accept(header: Option<&str>) -> Vec<MediaType> {
    let Some(h) = header.filter(|h| !h.trim().is_empty()) else {
        return vec![MediaType {
            essence: "*/*".into(),
            params: vec![],
        }];
    };
    let mut out: Vec<(f32, MediaType)> = Vec::new();
    for part in h.split(',') {
        let mut pieces = part.split(';');
        let essence = pieces.next().unwrap_or("").trim().to_ascii_lowercase();
        if essence.is_empty() {
            continue;
        }
        let mut q = 1.0f32;
        let mut params = Vec::new();
        for p in pieces {
            let Some((k, v)) = p.split_once('=') else {
                continue;
            };
            let k = k.trim().to_ascii_lowercase();
            let v = v.trim().trim_matches('"').to_string();
            if k == "q" {
                q = v.parse().unwrap_or(1.0);
            } else {
                params.push((k, v));
            }
        }
        if q > 0.0 {
            out.push((q, MediaType { essence, params }));
        }
    }
    out.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap_or(std::cmp::Ordering::Equal));
    out.into_iter().map(|(_, m)| m).collect()
}

/// What representation a resource response takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Representation {
    Object,
    Table,
    PartialObjectMetadata,
    PartialObjectMetadataList,
}

/// Picks the representation for a resource request. `is_list` selects which
/// `as=` values are valid (Table works for both; PartialObjectMetadata only for single
/// objects and watches, PartialObjectMetadataList only for lists).
pub fn negotiate(accept: &[MediaType], is_list: bool, is_watch: bool) -> ApiResult<Representation> {
    pick(accept, is_list, is_watch, true)
}

/// Picks the representation of a watch-list stream (`sendInitialEvents=true` with
/// `allowWatchBookmarks=true`): as [`negotiate`] for a watch, but a Table is never served
/// (kube-apiserver's `watchListEndpointRestrictions`, `endpoints/handlers/get.go`): a Table
/// media range is skipped, so a client that accepts nothing else gets the 406.
pub fn negotiate_watch_list(accept: &[MediaType]) -> ApiResult<Representation> {
    pick(accept, true, true, false)
}

fn pick(
    accept: &[MediaType],
    is_list: bool,
    is_watch: bool,
    table: bool,
) -> ApiResult<Representation> {
    for m in accept {
        match m.param("as") {
            None => {
                if m.is_json_like() || m.essence == "application/yaml" {
                    return Ok(Representation::Object);
                }
            }
            Some(kind) => {
                let meta_group = m.param("g") == Some("meta.k8s.io")
                    && matches!(m.param("v"), Some("v1") | Some("v1beta1"));
                if !meta_group || m.essence != "application/json" {
                    continue;
                }
                match kind {
                    "Table" if table => return Ok(Representation::Table),
                    "PartialObjectMetadata" if !is_list || is_watch => {
                        return Ok(Representation::PartialObjectMetadata)
                    }
                    "PartialObjectMetadataList" if is_list && !is_watch => {
                        return Ok(Representation::PartialObjectMetadataList)
                    }
                    _ => continue,
                }
            }
        }
    }
    Err(not_acceptable())
}

pub fn not_acceptable() -> ApiError {
    ApiError::new(
        StatusReason::NotAcceptable,
        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
    )
}

/// Whether the client accepts aggregated discovery, and which version.
pub fn wants_aggregated_discovery(accept: &[MediaType]) -> Option<&'static str> {
    for m in accept {
        if m.essence == "application/json" && m.param("as") == Some("APIGroupDiscoveryList") {
            if m.param("g") == Some("apidiscovery.k8s.io") {
                match m.param("v") {
                    Some("v2") => return Some("v2"),
                    Some("v2beta1") => return Some("v2beta1"),
                    _ => {}
                }
            }
            continue;
        }
        if m.param("as").is_none() && m.is_json_like() {
            return None;
        }
    }
    None
}

/// The media type of a request body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyType {
    Json,
    Yaml,
    Protobuf,
    JsonPatch,
    MergePatch,
    StrategicMergePatch,
    ApplyPatch,
}

/// Reads `Content-Type`. A missing header means JSON (the Python client sends none).
pub fn body_type(content_type: Option<&str>) -> ApiResult<BodyType> {
    let essence = content_type
        .map(|c| {
            c.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default();
    Ok(match essence.as_str() {
        "" | "application/json" => BodyType::Json,
        "application/yaml" => BodyType::Yaml,
        "application/vnd.kubernetes.protobuf" => BodyType::Protobuf,
        "application/json-patch+json" => BodyType::JsonPatch,
        "application/merge-patch+json" => BodyType::MergePatch,
        "application/strategic-merge-patch+json" => BodyType::StrategicMergePatch,
        "application/apply-patch+yaml" => BodyType::ApplyPatch,
        other => {
            return Err(ApiError::new(
                StatusReason::UnsupportedMediaType,
                format!(
                    "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf (got {other:?})"
                ),
            ))
        }
    })
}

/// Decodes an object body (create/update) into JSON.
pub fn decode_object(body: &[u8], ty: BodyType) -> ApiResult<Value> {
    decode_object_checked(body, ty).map(|(v, _)| v)
}

/// Decodes an object body, also returning the paths of duplicated JSON keys.
pub fn decode_object_checked(body: &[u8], ty: BodyType) -> ApiResult<(Value, Vec<String>)> {
    let mut dups = Vec::new();
    let v = match ty {
        BodyType::Json => {
            let (v, d) = super::json::parse_with_duplicates(body).map_err(|e| {
                ApiError::bad_request(format!(
                    "the object provided is unrecognized (must be of type JSON): {e}"
                ))
            })?;
            dups = d;
            v
        }
        BodyType::Yaml => parse_yaml(body)?,
        BodyType::Protobuf => kplane_protobuf::decode(body)
            .map_err(|e| ApiError::bad_request(format!("failed to decode protobuf body: {e}")))?,
        _ => {
            return Err(ApiError::new(
                StatusReason::UnsupportedMediaType,
                "the body of the request was in an unknown format - accepted media types include: application/json, application/yaml, application/vnd.kubernetes.protobuf",
            ))
        }
    };
    if !v.is_object() {
        return Err(ApiError::bad_request(
            "the body of the request must be a JSON object",
        ));
    }
    Ok((v, dups))
}

/// Parses JSON with serde_json's nesting limit (deeply nested input is a 400, not a crash).
pub fn parse_json(body: &[u8]) -> ApiResult<Value> {
    serde_json::from_slice(body).map_err(|e| {
        ApiError::bad_request(format!(
            "the object provided is unrecognized (must be of type JSON): {e}"
        ))
    })
}

/// Parses YAML (a single document) into JSON.
pub fn parse_yaml(body: &[u8]) -> ApiResult<Value> {
    let text = std::str::from_utf8(body)
        .map_err(|_| ApiError::bad_request("the YAML body is not valid UTF-8"))?;
    let v: Value = serde_saphyr::from_str(text)
        .map_err(|e| ApiError::bad_request(format!("error converting YAML to JSON: {e}")))?;
    if depth(&v) > 100 {
        return Err(ApiError::bad_request("the YAML body is nested too deeply"));
    }
    Ok(v)
}

/// Decodes a server-side apply body (YAML, or JSON as kubectl, client-go and kube-rs send
/// it). Duplicate keys do not fail the decode (the last one wins, as Go's non-strict YAML
/// decode does); they come back as strict-decoding problems for `fieldValidation`.
pub fn parse_apply_body(body: &[u8]) -> ApiResult<(Value, Vec<String>)> {
    let first = body.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'{') {
        if let Ok((v, dups)) = super::json::parse_with_duplicates(body) {
            let problems = dups
                .iter()
                .map(|p| format!("key {:?} already set in map", last_segment(p)))
                .collect();
            return Ok((v, problems));
        }
    }
    match parse_yaml(body) {
        Ok(v) => Ok((v, Vec::new())),
        Err(strict_err) => {
            let text = std::str::from_utf8(body)
                .map_err(|_| ApiError::bad_request("the YAML body is not valid UTF-8"))?;
            let lenient = serde_saphyr::options! {
                duplicate_keys: serde_saphyr::DuplicateKeyPolicy::LastWins,
            };
            let Ok(v) = serde_saphyr::from_str_with_options::<Value>(text, lenient) else {
                return Err(strict_err);
            };
            if depth(&v) > 100 {
                return Err(ApiError::bad_request("the YAML body is nested too deeply"));
            }
            let problem = match serde_saphyr::from_str::<Value>(text) {
                Err(e) => duplicate_key_problem(&e),
                Ok(_) => String::from("duplicate key"),
            };
            Ok((v, vec![problem]))
        }
    }
}

/// `line N: key "k" already set in map`, as Go's strict YAML decoder words it.
fn duplicate_key_problem(e: &serde_saphyr::Error) -> String {
    let line = e.location().map(|l| l.line()).unwrap_or(0);
    let text = e.to_string();
    // The error may come wrapped (with a snippet); its text names the key.
    let key = match e {
        serde_saphyr::Error::DuplicateMappingKey { key: Some(k), .. } => Some(k.clone()),
        _ => text
            .split_once("duplicate mapping key: ")
            .map(|(_, rest)| rest.split([',', '\n']).next().unwrap_or(rest).to_string()),
    };
    match key {
        Some(k) => format!("line {line}: key {k:?} already set in map"),
        None => text.lines().next().unwrap_or("duplicate key").to_string(),
    }
}

/// The last field name of a duplicate-key path such as `data.a`.
fn last_segment(path: &str) -> &str {
    path.rsplit('.').next().unwrap_or(path)
}

fn depth(v: &Value) -> usize {
    let mut max = 0;
    let mut stack = vec![(v, 1usize)];
    while let Some((v, d)) = stack.pop() {
        max = max.max(d);
        match v {
            Value::Array(a) => stack.extend(a.iter().map(|x| (x, d + 1))),
            Value::Object(o) => stack.extend(o.values().map(|x| (x, d + 1))),
            _ => {}
        }
    }
    max
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_accept_from_kubectl() {
        let a = parse_accept(Some(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json",
        ));
        assert_eq!(negotiate(&a, true, false).unwrap(), Representation::Table);
    }

    #[test]
    fn protobuf_then_json_gets_json() {
        let a = parse_accept(Some("application/vnd.kubernetes.protobuf,application/json"));
        assert_eq!(negotiate(&a, false, false).unwrap(), Representation::Object);
        let a = parse_accept(Some("application/vnd.kubernetes.protobuf"));
        assert!(negotiate(&a, false, false).is_err());
    }

    #[test]
    fn watch_lists_skip_tables() {
        let table = "application/json;as=Table;v=v1;g=meta.k8s.io";
        let a = parse_accept(Some(table));
        assert_eq!(negotiate(&a, true, true).unwrap(), Representation::Table);
        let e = negotiate_watch_list(&a).unwrap_err();
        assert_eq!(e.code(), 406);
        assert_eq!(
            e.0.message,
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
        let a = parse_accept(Some(&format!("{table},application/json")));
        assert_eq!(negotiate_watch_list(&a).unwrap(), Representation::Object);
        let a = parse_accept(Some(
            "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
        ));
        assert_eq!(
            negotiate_watch_list(&a).unwrap(),
            Representation::PartialObjectMetadata
        );
    }

    #[test]
    fn partial_metadata_list_only_for_lists() {
        let a = parse_accept(Some(
            "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1",
        ));
        assert!(negotiate(&a, true, false).is_err());
        assert_eq!(
            negotiate(&a, false, false).unwrap(),
            Representation::PartialObjectMetadata
        );
    }

    #[test]
    fn aggregated_discovery() {
        let a = parse_accept(Some("application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList,application/json"));
        assert_eq!(wants_aggregated_discovery(&a), Some("v2"));
        assert_eq!(
            wants_aggregated_discovery(&parse_accept(Some("application/json"))),
            None
        );
    }

    #[test]
    fn missing_content_type_is_json() {
        assert_eq!(body_type(None).unwrap(), BodyType::Json);
        assert_eq!(body_type(Some("text/plain")).unwrap_err().code(), 415);
    }

    #[test]
    fn deep_json_is_rejected() {
        let deep = "[".repeat(10_000) + &"]".repeat(10_000);
        assert_eq!(parse_json(deep.as_bytes()).unwrap_err().code(), 400);
    }

    #[test]
    fn apply_bodies_keep_the_last_duplicate_and_report_it() {
        let (v, dups) = parse_apply_body(b"a: 1\nb:\n  c: 1\n  c: 2\n").unwrap();
        assert_eq!(v["b"]["c"], 2);
        assert_eq!(
            dups,
            vec![r#"line 4: key "c" already set in map"#.to_string()]
        );
        let (v, dups) = parse_apply_body(br#"{"a":{"x":1,"x":3}}"#).unwrap();
        assert_eq!(v["a"]["x"], 3);
        assert_eq!(dups, vec![r#"key "x" already set in map"#.to_string()]);
        let (_, dups) = parse_apply_body(b"a: 1\n").unwrap();
        assert!(dups.is_empty());
        assert!(parse_apply_body(b"a: [").is_err());
    }
}
