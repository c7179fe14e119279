//! Encoding of resource responses in the negotiated representation: the object itself,
//! a Table, or PartialObjectMetadata(List); lists are assembled from stored bytes without
//! re-encoding items; watches are newline-delimited JSON events flushed one by one, or
//! length-prefixed protobuf events (`application/vnd.kubernetes.protobuf;stream=watch`).

use std::sync::Arc;

use axum::body::Body;
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;
use bytes::{BufMut, Bytes, BytesMut};
use serde_json::{json, Value};

use super::list_item;
use super::negotiation::{Representation, StreamEncoding};
use super::table::{self, partial_metadata, TableOptions};
use kplane_registry::error::{ApiError, ApiResult};
use kplane_registry::{CompleteList, ListPage, ResourceType, WatchItem, WatchSetup, WatchType};

const JSON: &str = "application/json";
const TABLE_CT: &str = "application/json;as=Table;v=v1;g=meta.k8s.io";
const POM_CT: &str = "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io";
const POML_CT: &str = "application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io";
/// A protobuf watch's content type, as kube-apiserver sends it.
const PROTOBUF_WATCH_CT: &str = "application/vnd.kubernetes.protobuf;stream=watch";

fn with_type(code: StatusCode, ct: &'static str, body: impl Into<Body>) -> Response {
    // Sized for the one header: hyper keeps a response's header map on an HTTP/1.1
    // connection for reuse, so a default-sized map (room for 6) stays with every idle
    // watch for as long as it is open.
    let mut headers = HeaderMap::with_capacity(1);
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    let mut r = Response::new(body.into());
    *r.status_mut() = code;
    *r.headers_mut() = headers;
    r
}

fn parse(bytes: &[u8]) -> ApiResult<Value> {
    serde_json::from_slice(bytes)
        .map_err(|e| ApiError::internal(format!("stored object could not be decoded: {e}")))
}

/// One object in the negotiated representation.
pub fn object(
    code: StatusCode,
    rt: &ResourceType,
    bytes: Bytes,
    repr: Representation,
    topts: &TableOptions,
) -> ApiResult<Response> {
    Ok(match repr {
        Representation::Object => with_type(code, JSON, bytes),
        Representation::Table => {
            let obj = parse(&bytes)?;
            let rv = obj
                .pointer("/metadata/resourceVersion")
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string();
            let t = table::build(rt, std::slice::from_ref(&obj), &rv, None, None, topts, true)?;
            with_type(code, TABLE_CT, t.to_string())
        }
        Representation::PartialObjectMetadata | Representation::PartialObjectMetadataList => {
            let obj = parse(&bytes)?;
            with_type(code, POM_CT, partial_metadata(&obj).to_string())
        }
    })
}

fn list_meta(rv: u64, cont: Option<&str>, remaining: Option<u64>) -> Value {
    let mut m = json!({"resourceVersion": rv.to_string()});
    if let Some(c) = cont {
        m["continue"] = json!(c);
    }
    if let Some(n) = remaining {
        m["remainingItemCount"] = json!(n);
    }
    m
}

/// Bodies up to this size are sent in one piece; larger lists are streamed in chunks of
/// about this size, so a 40 MB LIST never needs a 40 MB buffer.
const LIST_CHUNK: usize = 256 * 1024;

/// An empty body chunk, with room for the item that crosses `LIST_CHUNK`.
fn chunk_buf() -> BytesMut {
    BytesMut::with_capacity(LIST_CHUNK + 4096)
}

/// Where a streamed list body is: the items of the current batch, the list whose batches
/// are still to come, and the chunk being filled (`None` once the body is complete).
struct ListBody {
    batch: std::vec::IntoIter<Bytes>,
    rest: Option<ListPage>,
    first: bool,
    buf: Option<BytesMut>,
    /// Items go out without `apiVersion` and `kind` (built-in types).
    untyped_items: bool,
}

impl ListBody {
    /// Fills the chunk from the current batch, reading further batches as needed; returns
    /// the chunk once it is full or the list is complete.
    async fn next_chunk(&mut self) -> Option<Result<Bytes, std::io::Error>> {
        let mut buf = self.buf.take()?;
        loop {
            while buf.len() < LIST_CHUNK {
                let Some(item) = self.batch.next() else { break };
                if !self.first {
                    buf.put_u8(b',');
                }
                self.first = false;
                put_item(&mut buf, &item, self.untyped_items);
            }
            if buf.len() >= LIST_CHUNK {
                self.buf = Some(chunk_buf());
                return Some(Ok(buf.freeze()));
            }
            let Some(rest) = self.rest.as_mut() else {
                buf.put_slice(b"]}");
                return Some(Ok(buf.freeze()));
            };
            match rest.next_batch().await {
                Ok(Some(batch)) => self.batch = batch.into_iter(),
                Ok(None) => self.rest = None,
                Err(e) => {
                    // The status line is already sent: abort the body so that the client
                    // sees a failed response, never a shortened list.
                    tracing::warn!(error = %e.0.message, "list aborted while streaming");
                    return Some(Err(std::io::Error::other(e.0.message)));
                }
            }
        }
    }
}

/// Appends one list item: as stored, or without its type fields.
fn put_item(buf: &mut BytesMut, item: &[u8], untyped: bool) {
    if untyped {
        list_item::put_without_type_meta(buf, item);
    } else {
        buf.put_slice(item);
    }
}

/// `{"apiVersion":..,"kind":..,"metadata":{..},"items":[<stored items joined by commas>]}`,
/// built from the stored bytes without re-encoding them (a built-in type's items less
/// their `apiVersion` and `kind`, as upstream's typed lists). A list with unread batches
/// is sent as they are read.
fn list_body(head: String, page: ListPage, untyped_items: bool) -> Body {
    let open = |buf: &mut BytesMut| {
        buf.put_slice(&head.as_bytes()[..head.len() - 1]);
        buf.put_slice(b",\"items\":[");
    };
    let page = match page.into_complete() {
        Ok(list) => {
            let total: usize =
                list.items.iter().map(|i| i.len() + 1).sum::<usize>() + head.len() + 16;
            if total > LIST_CHUNK {
                ListPage::from(list)
            } else {
                let mut buf = BytesMut::with_capacity(total);
                open(&mut buf);
                for (i, item) in list.items.iter().enumerate() {
                    if i > 0 {
                        buf.put_u8(b',');
                    }
                    put_item(&mut buf, item, untyped_items);
                }
                buf.put_slice(b"]}");
                return Body::from(buf.freeze());
            }
        }
        Err(page) => page,
    };
    let mut first = chunk_buf();
    open(&mut first);
    let state = ListBody {
        batch: Vec::new().into_iter(),
        rest: Some(page),
        first: true,
        buf: Some(first),
        untyped_items,
    };
    let stream = futures::stream::unfold(state, |mut st| async move {
        let chunk = st.next_chunk().await?;
        Some((chunk, st))
    });
    Body::from_stream(stream)
}

/// A list in the negotiated representation. Objects are streamed batch by batch; Tables
/// and metadata lists are built whole, so they read every batch first.
pub async fn list(
    rt: &ResourceType,
    page: ListPage,
    repr: Representation,
    topts: &TableOptions,
) -> ApiResult<Response> {
    let meta = list_meta(
        page.revision(),
        page.continue_token(),
        page.remaining_item_count(),
    );
    match repr {
        Representation::Object => {
            let head =
                json!({"kind": rt.list_kind, "apiVersion": rt.api_version(), "metadata": meta})
                    .to_string();
            Ok(with_type(
                StatusCode::OK,
                JSON,
                list_body(head, page, rt.is_typed()),
            ))
        }
        Representation::Table => {
            let list = page.collect().await?;
            let objs = list
                .items
                .iter()
                .map(|b| parse(b))
                .collect::<ApiResult<Vec<_>>>()?;
            let t = table::build(
                rt,
                &objs,
                &list.revision.to_string(),
                list.continue_token.as_deref(),
                list.remaining,
                topts,
                true,
            )?;
            Ok(with_type(StatusCode::OK, TABLE_CT, t.to_string()))
        }
        Representation::PartialObjectMetadataList | Representation::PartialObjectMetadata => {
            let list: CompleteList = page.collect().await?;
            let items = list
                .items
                .iter()
                .map(|b| parse(b).map(|o| partial_metadata(&o)))
                .collect::<ApiResult<Vec<_>>>()?;
            let body = json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": meta, "items": items});
            Ok(with_type(StatusCode::OK, POML_CT, body.to_string()))
        }
    }
}

/// Encodes one watch event line.
fn event_line(
    item: &WatchItem,
    rt: &ResourceType,
    repr: Representation,
    topts: &TableOptions,
    first: &mut bool,
) -> Bytes {
    let object: Bytes = match (repr, item.ty) {
        (_, WatchType::Error)
        | (Representation::Object | Representation::Table, WatchType::Bookmark)
        | (Representation::Object, _) => item.object.clone(),
        (Representation::Table, _) => {
            let converted = parse(&item.object).and_then(|o| {
                let rv = o
                    .pointer("/metadata/resourceVersion")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string();
                table::build(rt, std::slice::from_ref(&o), &rv, None, None, topts, *first)
            });
            *first = false;
            match converted {
                Ok(t) => Bytes::from(t.to_string()),
                Err(_) => item.object.clone(),
            }
        }
        // Bookmarks too: kube-apiserver converts every event's object (`handlers/response.go`
        // `doTransformObject`), and client-go's metadata decoder knows no other kind.
        (_, _) => match parse(&item.object) {
            Ok(o) => Bytes::from(partial_metadata(&o).to_string()),
            Err(_) => item.object.clone(),
        },
    };
    let mut buf = BytesMut::with_capacity(object.len() + 32);
    buf.put_slice(b"{\"type\":\"");
    buf.put_slice(item.ty.as_str().as_bytes());
    buf.put_slice(b"\",\"object\":");
    buf.put_slice(&object);
    buf.put_slice(b"}\n");
    buf.freeze()
}

/// Keeps `apiserver_registered_watchers` right for as long as a watch stream lives.
struct WatcherGauge {
    metrics: Arc<crate::metrics::Metrics>,
    rt: Arc<ResourceType>,
}

impl WatcherGauge {
    fn new(metrics: Arc<crate::metrics::Metrics>, rt: Arc<ResourceType>) -> WatcherGauge {
        metrics.watcher(&rt.group, &rt.version, &rt.kind, 1);
        WatcherGauge { metrics, rt }
    }
}

impl Drop for WatcherGauge {
    fn drop(&mut self) {
        self.metrics
            .watcher(&self.rt.group, &self.rt.version, &self.rt.kind, -1);
    }
}

/// A streaming watch response. `blueprint`: a watch-list stream's encoded empty list,
/// added to its initial-events-end bookmark (`super::watch_list`).
pub fn watch(
    rt: Arc<ResourceType>,
    setup: WatchSetup,
    (repr, encoding): (Representation, StreamEncoding),
    topts: TableOptions,
    blueprint: Option<String>,
    metrics: Arc<crate::metrics::Metrics>,
) -> Response {
    let ct = match (encoding, repr) {
        (StreamEncoding::Protobuf, _) => PROTOBUF_WATCH_CT,
        (_, Representation::Table) => TABLE_CT,
        (_, Representation::PartialObjectMetadata | Representation::PartialObjectMetadataList) => {
            POM_CT
        }
        (_, Representation::Object) => JSON,
    };
    let gauge = WatcherGauge::new(metrics, rt.clone());
    let stream = futures::stream::unfold(
        (setup, true, gauge),
        move |(mut setup, mut first, gauge)| {
            let rt = rt.clone();
            let topts = topts.clone();
            let blueprint = blueprint.clone();
            async move {
                let mut item = setup.next().await?;
                if let Some(end) = blueprint
                    .as_deref()
                    .and_then(|b| super::watch_list::annotate_end(&item, b))
                {
                    item = end;
                }
                let event = match encoding {
                    StreamEncoding::Json => event_line(&item, &rt, repr, &topts, &mut first),
                    // An event that cannot be encoded ends the stream, as upstream's
                    // watch server does (the client watches again).
                    StreamEncoding::Protobuf => protobuf_event(&item, &rt)?,
                };
                Some((
                    Ok::<Bytes, std::convert::Infallible>(event),
                    (setup, first, gauge),
                ))
            }
        },
    );
    with_type(StatusCode::OK, ct, Body::from_stream(stream))
}

/// Encodes one watch event as a protobuf frame; `None` (logged) when the object has no
/// protobuf form.
fn protobuf_event(item: &WatchItem, rt: &ResourceType) -> Option<Bytes> {
    let encoded = parse(&item.object)
        .map_err(|e| e.0.message.clone())
        .and_then(|o| kplane_protobuf::encode(&o).map_err(|e| e.to_string()));
    match encoded {
        Ok(object) => Some(Bytes::from(kplane_protobuf::watch_frame(
            item.ty.as_str(),
            &object,
        ))),
        Err(e) => {
            tracing::warn!(resource = %rt.plural, error = %e, "unable to encode watch object in protobuf");
            None
        }
    }
}

/// A Status `Success` for an immediate delete.
pub fn delete_success(rt: &ResourceType, name: &str, uid: &str) -> Response {
    let body = json!({
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success",
        "details": {"name": name, "group": rt.group, "kind": rt.plural, "uid": uid},
    });
    with_type(StatusCode::OK, JSON, body.to_string())
}

/// A list body built from already-encoded items (deletecollection).
pub fn raw_list(rt: &ResourceType, items: Vec<Bytes>, rv: u64) -> Response {
    let head = json!({"kind": rt.list_kind, "apiVersion": rt.api_version(), "metadata": list_meta(rv, None, None)})
        .to_string();
    with_type(
        StatusCode::OK,
        JSON,
        list_body(head, ListPage::from_items(items, rv), rt.is_typed()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use http_body_util::BodyExt;

    async fn collect(body: Body) -> Vec<u8> {
        body.collect().await.unwrap().to_bytes().to_vec()
    }

    fn items(n: usize, size: usize) -> Vec<Bytes> {
        (0..n)
            .map(|i| Bytes::from(json!({"i": i, "pad": "x".repeat(size)}).to_string()))
            .collect()
    }

    #[tokio::test]
    async fn small_and_streamed_lists_are_the_same_json() {
        let head = json!({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "7"}}).to_string();
        for (n, size) in [(0, 10), (3, 10), (2000, 1000)] {
            let page = ListPage::from_items(items(n, size), 7);
            let body = collect(list_body(head.clone(), page, false)).await;
            assert_eq!(
                body.len() > LIST_CHUNK,
                n == 2000,
                "n={n} exercises the intended path"
            );
            let v: Value = serde_json::from_slice(&body).unwrap();
            let got = v["items"].as_array().unwrap();
            assert_eq!(got.len(), n);
            assert!(got.iter().enumerate().all(|(i, o)| o["i"] == i));
            assert_eq!(v["metadata"]["resourceVersion"], "7");
            assert_eq!(v["kind"], "ConfigMapList");
        }
    }

    #[tokio::test]
    async fn built_in_items_lose_their_type_fields_in_whole_and_streamed_lists() {
        let head = json!({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "7"}}).to_string();
        let typed = |n: usize, size: usize| -> Vec<Bytes> {
            (0..n)
                .map(|i| {
                    let o = json!({"apiVersion": "v1", "data": {"kind": "x".repeat(size)},
                        "kind": "ConfigMap", "metadata": {"name": format!("c{i}")}});
                    Bytes::from(o.to_string())
                })
                .collect()
        };
        for (n, size) in [(1, 10), (3, 10), (2000, 1000)] {
            for untyped in [true, false] {
                let page = ListPage::from_items(typed(n, size), 7);
                let body = collect(list_body(head.clone(), page, untyped)).await;
                let v: Value = serde_json::from_slice(&body).unwrap();
                let got = v["items"].as_array().unwrap();
                assert_eq!(got.len(), n);
                for (i, o) in got.iter().enumerate() {
                    assert_eq!(o["metadata"]["name"], format!("c{i}"));
                    assert_eq!(o["data"]["kind"].as_str().map(str::len), Some(size));
                    assert_eq!(o.get("kind").is_some(), !untyped, "n={n}");
                    assert_eq!(o.get("apiVersion").is_some(), !untyped, "n={n}");
                }
            }
        }
    }

    /// `n` items whose one-piece size estimate in [`list_body`] is exactly `total`.
    fn items_totalling(head: &str, total: usize, n: usize) -> Vec<Bytes> {
        let budget = total - head.len() - 16;
        let item = |k: usize, len: usize| {
            let bare = format!("{{\"i\":{k},\"p\":\"\"}}").len();
            Bytes::from(format!(
                "{{\"i\":{k},\"p\":\"{}\"}}",
                "x".repeat(len - bare)
            ))
        };
        let each = budget / n - 1;
        let mut out: Vec<Bytes> = (0..n - 1).map(|k| item(k, each)).collect();
        let used: usize = out.iter().map(|i| i.len() + 1).sum();
        out.push(item(n - 1, budget - used - 1));
        out
    }

    #[tokio::test]
    async fn list_bodies_around_the_chunk_size_are_whole_and_chunked_within_bounds() {
        let head = json!({"kind": "ConfigMapList", "apiVersion": "v1", "metadata": {"resourceVersion": "7"}}).to_string();
        for total in [LIST_CHUNK - 1, LIST_CHUNK, LIST_CHUNK + 1, 10 * LIST_CHUNK] {
            let items = items_totalling(&head, total, 200);
            let largest = items.iter().map(Bytes::len).max().unwrap_or(0);
            let mut body = list_body(head.clone(), ListPage::from_items(items.clone(), 7), false);
            let mut frames = Vec::new();
            while let Some(frame) = body.frame().await {
                frames.push(frame.unwrap().into_data().unwrap());
            }
            // (The one-piece test is an estimate a little above the real size.)
            let size: usize = frames.iter().map(Bytes::len).sum();
            if total <= LIST_CHUNK || size <= LIST_CHUNK {
                assert_eq!(frames.len(), 1, "{total}: sent in one piece");
            } else {
                assert!(frames.len() > 1, "{total}: streamed");
                for f in &frames[..frames.len() - 1] {
                    assert!(
                        f.len() >= LIST_CHUNK && f.len() <= LIST_CHUNK + largest + 1,
                        "{total}: a chunk of {}",
                        f.len()
                    );
                }
            }
            let whole: Vec<u8> = frames.concat();
            let v: Value = serde_json::from_slice(&whole).unwrap();
            let got = v["items"].as_array().unwrap();
            assert_eq!(got.len(), items.len(), "{total}");
            for (g, want) in got.iter().zip(&items) {
                assert_eq!(*g, serde_json::from_slice::<Value>(want).unwrap());
            }
        }
    }
}
