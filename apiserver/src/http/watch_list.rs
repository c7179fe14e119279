//! The list blueprint of a watch-list stream (`sendInitialEvents=true` with
//! `allowWatchBookmarks=true`), as kube-apiserver's `watchListTransformer`
//! (`handlers/response.go`) adds it: the `k8s.io/initial-events-end` bookmark carries
//! the annotation `kubernetes.io/initial-events-list-blueprint`, the base64 of an empty
//! list of the resource encoded as the stream's objects are (JSON or protobuf; a
//! `PartialObjectMetadataList` for a PartialObjectMetadata stream). client-go's
//! list-via-watch (`rest/request.go` `handleWatchList`) refuses an end bookmark without
//! it, and decodes it to learn the list's kind.

use base64::Engine;
use bytes::Bytes;
use serde_json::Value;

use super::negotiation::{Representation, StreamEncoding};
use kplane_registry::error::{ApiError, ApiResult};
use kplane_registry::{ResourceType, WatchItem, WatchType};

/// The annotation of the bookmark that ends the initial events.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";
/// The annotation holding the encoded empty list.
const LIST_BLUEPRINT: &str = "kubernetes.io/initial-events-list-blueprint";

/// The empty list of `rt` in the stream's representation and encoding, base64-encoded.
/// JSON is written as Go's JSON serializer writes it (with its trailing newline): a
/// built-in list with `"metadata":{}` and `"items":null`, a custom resource's list
/// (an `UnstructuredList`) with sorted keys and `"items":[]`.
pub fn blueprint(
    rt: &ResourceType,
    repr: Representation,
    encoding: StreamEncoding,
) -> ApiResult<String> {
    let quoted = |s: &str| Value::from(s).to_string();
    let encoded = match (encoding, repr) {
        (StreamEncoding::Protobuf, _) => {
            kplane_protobuf::encode_empty_list(&rt.api_version(), &rt.kind)
                .map_err(|e| ApiError::internal(e.to_string()))?
        }
        (_, Representation::PartialObjectMetadata | Representation::PartialObjectMetadataList) => {
            typed_empty_list("PartialObjectMetadataList", "meta.k8s.io/v1").into_bytes()
        }
        (_, _) if rt.custom.is_some() => format!(
            "{{\"apiVersion\":{},\"items\":[],\"kind\":{}}}\n",
            quoted(&rt.api_version()),
            quoted(&rt.list_kind)
        )
        .into_bytes(),
        (_, _) => typed_empty_list(&rt.list_kind, &rt.api_version()).into_bytes(),
    };
    Ok(base64::engine::general_purpose::STANDARD.encode(encoded))
}

fn typed_empty_list(kind: &str, api_version: &str) -> String {
    format!(
        "{{\"kind\":{},\"apiVersion\":{},\"metadata\":{{}},\"items\":null}}\n",
        Value::from(kind),
        Value::from(api_version)
    )
}

/// The event as sent: the initial-events-end bookmark with the blueprint annotation
/// added; any other event unchanged.
pub fn annotate_end(item: &WatchItem, blueprint: &str) -> Option<WatchItem> {
    if item.ty != WatchType::Bookmark {
        return None;
    }
    let mut obj: Value = serde_json::from_slice(&item.object).ok()?;
    let annotations = obj.pointer_mut("/metadata/annotations")?.as_object_mut()?;
    if annotations.get(INITIAL_EVENTS_END).and_then(Value::as_str) != Some("true") {
        return None;
    }
    annotations.insert(LIST_BLUEPRINT.to_string(), Value::from(blueprint));
    Some(WatchItem {
        ty: item.ty,
        object: Bytes::from(obj.to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kplane_registry::builtin_types::builtin;
    use kplane_registry::catalog::Catalog;
    use serde_json::json;

    fn decoded(b64: &str) -> String {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .unwrap();
        String::from_utf8(bytes).unwrap()
    }

    fn secrets() -> std::sync::Arc<ResourceType> {
        let catalog = Catalog::new(builtin());
        catalog.get("", "v1", "secrets").unwrap().clone()
    }

    #[test]
    fn json_blueprints_are_the_empty_lists_go_writes() {
        let secrets = secrets();
        let json = StreamEncoding::Json;
        assert_eq!(
            decoded(&blueprint(&secrets, Representation::Object, json).unwrap()),
            "{\"kind\":\"SecretList\",\"apiVersion\":\"v1\",\"metadata\":{},\"items\":null}\n"
        );
        assert_eq!(
            decoded(&blueprint(&secrets, Representation::PartialObjectMetadata, json).unwrap()),
            "{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":{},\"items\":null}\n"
        );
    }

    #[test]
    fn protobuf_blueprints_are_protobuf_lists() {
        let secrets = secrets();
        let b = blueprint(&secrets, Representation::Object, StreamEncoding::Protobuf).unwrap();
        let bytes = base64::engine::general_purpose::STANDARD.decode(b).unwrap();
        assert!(bytes.starts_with(kplane_protobuf::MAGIC));
        let tm = kplane_protobuf::type_meta(&bytes).unwrap();
        assert_eq!(
            (tm.api_version.as_str(), tm.kind.as_str()),
            ("v1", "SecretList")
        );
    }

    #[test]
    fn only_the_initial_events_end_bookmark_gets_the_blueprint() {
        let end = WatchItem {
            ty: WatchType::Bookmark,
            object: Bytes::from(
                json!({"kind": "Secret", "apiVersion": "v1", "metadata": {"resourceVersion": "7",
                       "annotations": {INITIAL_EVENTS_END: "true"}}})
                .to_string(),
            ),
        };
        let got = annotate_end(&end, "Ymx1ZXByaW50").unwrap();
        let v: Value = serde_json::from_slice(&got.object).unwrap();
        assert_eq!(
            v["metadata"],
            json!({"resourceVersion": "7", "annotations": {
                INITIAL_EVENTS_END: "true", LIST_BLUEPRINT: "Ymx1ZXByaW50"}})
        );
        let progress = WatchItem {
            ty: WatchType::Bookmark,
            object: Bytes::from(
                json!({"kind": "Secret", "apiVersion": "v1", "metadata": {"resourceVersion": "8"}})
                    .to_string(),
            ),
        };
        assert!(annotate_end(&progress, "x").is_none());
        let added = WatchItem {
            ty: WatchType::Added,
            ..end
        };
        assert!(annotate_end(&added, "x").is_none());
    }
}
