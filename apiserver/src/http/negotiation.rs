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
                    "Table" => return Ok(Representation::Table),
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

/// How a watch stream is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamEncoding {
    /// `application/json`: one JSON `WatchEvent` per line.
    Json,
    /// `application/vnd.kubernetes.protobuf;stream=watch`: length-prefixed protobuf
    /// `WatchEvent`s (`kplane_protobuf::watch_frame`).
    Protobuf,
}

/// The media types a resource's serializer offers, in kube-apiserver's order; only JSON
/// and protobuf have a stream (watch) serializer.
const SERVED: [&str; 3] = [
    "application/json",
    "application/yaml",
    "application/vnd.kubernetes.protobuf",
];
const YAML: usize = 1;
const PROTOBUF: usize = 2;

/// Negotiates a watch as kube-apiserver does (`handlers/get.go` `ListResource`, then
/// `handlers/watch.go` `serveWatchHandler`): first the output media type of the endpoint
/// (the representation; 406 when no media range fits, and never a Table for a watch-list
/// stream, `watch_list`), then, over the same `Accept`, the stream media type: the first
/// media range the endpoint accepts must have a stream serializer (JSON or protobuf), a
/// 406 naming the `;stream=watch` types otherwise (YAML). `no_protobuf`: custom resources
/// (their `StandardSerializers` leave protobuf out) and kinds without a protobuf message.
/// Difference: PartialObjectMetadata is not served in protobuf (such a media range is
/// skipped).
pub fn negotiate_watch(
    accept: &[MediaType],
    no_protobuf: bool,
    watch_list: bool,
) -> ApiResult<(Representation, StreamEncoding)> {
    let Some((_, repr)) = first_served(accept, no_protobuf, !watch_list) else {
        return Err(not_acceptable());
    };
    match first_served(accept, no_protobuf, true) {
        Some((PROTOBUF, _)) => Ok((repr, StreamEncoding::Protobuf)),
        Some((i, _)) if i != YAML => Ok((repr, StreamEncoding::Json)),
        _ => Err(ApiError::new(
            StatusReason::NotAcceptable,
            "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch",
        )),
    }
}

/// The first (media range, served type) pair the endpoint allows, in the client's order
/// (upstream's `NegotiateMediaTypeOptions` with the request scope's restrictions): the
/// index in [`SERVED`] and the representation asked for.
fn first_served(
    accept: &[MediaType],
    custom: bool,
    table: bool,
) -> Option<(usize, Representation)> {
    for m in accept {
        for (i, served) in SERVED.iter().enumerate() {
            let matches =
                m.essence == *served || m.essence == "application/*" || m.essence == "*/*";
            if !matches {
                continue;
            }
            if let Some(repr) = watch_media_type_allowed(m, i, custom, table) {
                return Some((i, repr));
            }
        }
    }
    None
}

/// Whether served type `i` may answer media range `m` on a watch (upstream's
/// `acceptMediaTypeOptions` and `RequestScope.AllowsMediaTypeTransform`).
fn watch_media_type_allowed(
    m: &MediaType,
    i: usize,
    custom: bool,
    table: bool,
) -> Option<Representation> {
    if let Some(stream) = m.param("stream").filter(|s| !s.is_empty()) {
        if i == YAML || stream != "watch" {
            return None;
        }
    }
    let converts = ["as", "g", "v"].iter().any(|k| m.param(k).is_some());
    if !converts {
        return (!(custom && i == PROTOBUF)).then_some(Representation::Object);
    }
    let meta_group =
        m.param("g") == Some("meta.k8s.io") && matches!(m.param("v"), Some("v1" | "v1beta1"));
    if !meta_group || i == PROTOBUF {
        return None;
    }
    match m.param("as") {
        Some("Table") if table => Some(Representation::Table),
        Some("PartialObjectMetadata") => Some(Representation::PartialObjectMetadata),
        _ => None,
    }
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
        assert_eq!(
            negotiate_watch(&a, false, false).unwrap(),
            (Representation::Table, StreamEncoding::Json)
        );
        let e = negotiate_watch(&a, false, true).unwrap_err();
        assert_eq!(e.code(), 406);
        assert_eq!(
            e.0.message,
            "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf"
        );
        let a = parse_accept(Some(&format!("{table},application/json")));
        assert_eq!(
            negotiate_watch(&a, false, true).unwrap(),
            (Representation::Object, StreamEncoding::Json)
        );
        let a = parse_accept(Some(
            "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
        ));
        assert_eq!(
            negotiate_watch(&a, false, true).unwrap().0,
            Representation::PartialObjectMetadata
        );
    }

    #[test]
    fn protobuf_watches_of_built_ins_and_json_ones_of_custom_resources() {
        let pb = StreamEncoding::Protobuf;
        let json = StreamEncoding::Json;
        for (accept, custom, want) in [
            ("application/vnd.kubernetes.protobuf", false, Some(pb)),
            (
                "application/vnd.kubernetes.protobuf;stream=watch",
                false,
                Some(pb),
            ),
            (
                "application/vnd.kubernetes.protobuf,application/json",
                false,
                Some(pb),
            ),
            (
                "application/json,application/vnd.kubernetes.protobuf",
                false,
                Some(json),
            ),
            ("application/json;stream=watch", false, Some(json)),
            ("*/*", false, Some(json)),
            (
                "application/vnd.kubernetes.protobuf,application/json",
                true,
                Some(json),
            ),
            (
                "application/vnd.kubernetes.protobuf;stream=watch, application/json;stream=watch",
                true,
                Some(json),
            ),
            ("application/vnd.kubernetes.protobuf", true, None),
            (
                "application/vnd.kubernetes.protobuf;stream=other",
                false,
                None,
            ),
        ] {
            let got = negotiate_watch(&parse_accept(Some(accept)), custom, false);
            match want {
                Some(enc) => assert_eq!(got.unwrap(), (Representation::Object, enc), "{accept}"),
                None => {
                    let e = got.unwrap_err();
                    assert_eq!(e.code(), 406, "{accept}");
                    assert_eq!(
                        e.0.message,
                        "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf",
                        "{accept}"
                    );
                }
            }
        }
    }

    #[test]
    fn a_watch_s_first_acceptable_type_needs_a_stream_serializer() {
        for accept in ["application/yaml", "application/yaml,application/json"] {
            let e = negotiate_watch(&parse_accept(Some(accept)), false, false).unwrap_err();
            assert_eq!(e.code(), 406, "{accept}");
            assert_eq!(
                e.0.message,
                "only the following media types are accepted: application/json;stream=watch, application/vnd.kubernetes.protobuf;stream=watch"
            );
        }
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
