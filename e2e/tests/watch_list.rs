//! client-go 1.32's List via watch (`WatchListClient`), replayed over HTTP: the requests
//! its typed (`gentype/type.go` `watchList`), dynamic (`dynamic/simple.go`) and metadata
//! (`metadata/metadata.go`) clients make, the checks `rest/request.go` `handleWatchList`
//! and `WatchListResult.Into` apply before accepting the stream (any failure there makes
//! client-go fall back to a LIST), the comparisons of upstream's e2e
//! `test/e2e/apimachinery/watchlist.go`, and the LIST the consistency detector
//! (`util/consistencydetector`) compares the result with.

use anyhow::{bail, ensure, Context as _, Result};
use base64::Engine as _;
use futures::StreamExt as _;
use kplane_e2e::KplaneServer;
use serde_json::{json, Value};

/// The Accept headers of each client (typed: the e2e framework's JSON `ClientConfig`).
const TYPED: &str = "application/json";
const DYNAMIC: &str = "application/json";
const METADATA: &str = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1,application/json";

/// Which client's decoder reads the stream.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Decoder {
    Typed,
    Dynamic,
    Metadata,
}

/// What `WatchListResult.Into` assembles: the list's kind and apiVersion (from the
/// blueprint), its resourceVersion (the end bookmark's) and the items.
struct Assembled {
    kind: String,
    api_version: String,
    resource_version: String,
    items: Vec<Value>,
}

/// The query of `PrepareWatchListOptionsFromListOptions`, encoded as Go's
/// `url.Values.Encode` (keys sorted; `resourceVersion` left out when empty).
fn watch_list_query(selector: &str, rv: &str) -> String {
    let mut q = format!("allowWatchBookmarks=true&{selector}");
    if !rv.is_empty() {
        q.push_str(&format!("&resourceVersion={rv}"));
    }
    q + "&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&watch=true"
}

async fn send(
    client: &kube::Client,
    uri: &str,
    accept: &str,
) -> Result<http::Response<axum::body::Body>> {
    let req = http::Request::get(uri)
        .header(http::header::ACCEPT, accept)
        .body(kube::client::Body::empty())?;
    let resp = client.send(req).await?;
    Ok(resp.map(axum::body::Body::new))
}

/// Removes the TypeMeta a decoder clears (`WithoutVersionDecoder` for typed and metadata
/// objects; unstructured objects keep theirs).
fn as_decoded(mut obj: Value, decoder: Decoder) -> Value {
    if decoder != Decoder::Dynamic {
        if let Some(o) = obj.as_object_mut() {
            o.remove("kind");
            o.remove("apiVersion");
        }
    }
    obj
}

/// Checks an event object as the decoder would (kind registered for it) and returns it.
fn decode_object(obj: &Value, decoder: Decoder, kind: &str) -> Result<()> {
    let (want_kind, want_version) = match decoder {
        Decoder::Metadata => ("PartialObjectMetadata", "meta.k8s.io/v1"),
        _ => (kind, ""),
    };
    ensure!(obj["kind"] == want_kind, "{decoder:?} cannot decode {obj}");
    if !want_version.is_empty() {
        ensure!(
            obj["apiVersion"] == want_version,
            "{decoder:?} cannot decode {obj}"
        );
    }
    ensure!(obj["metadata"].is_object(), "no metadata: {obj}");
    Ok(())
}

/// `objectKeyFromMeta`.
fn key_of(obj: &Value) -> String {
    let m = &obj["metadata"];
    match m["namespace"].as_str().filter(|n| !n.is_empty()) {
        Some(ns) => format!("{ns}/{}", m["name"].as_str().unwrap_or_default()),
        None => m["name"].as_str().unwrap_or_default().to_string(),
    }
}

/// A list via watch as client-go makes and accepts it; an error where client-go would
/// fall back to a LIST.
async fn watch_list(
    client: &kube::Client,
    path: &str,
    query: &str,
    accept: &str,
    decoder: Decoder,
    kind: &str,
) -> Result<Assembled> {
    let resp = send(client, &format!("{path}?{query}"), accept).await?;
    ensure!(
        resp.status() == 200,
        "watch-list answered {}",
        resp.status()
    );
    let ct = resp
        .headers()
        .get(http::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok());
    ensure!(
        ct.and_then(|c| c.split(';').next()) == Some("application/json"),
        "stream content type {ct:?}"
    );
    let mut body = resp.into_body().into_data_stream();
    let mut buf = Vec::new();
    let mut items: Vec<Value> = Vec::new();
    let mut last_key = String::new();
    loop {
        let Some(nl) = buf.iter().position(|b| *b == b'\n') else {
            let chunk = tokio::time::timeout(std::time::Duration::from_secs(30), body.next())
                .await
                .context("stream stalled")?
                .context("unexpected watch close")??;
            buf.extend_from_slice(&chunk);
            continue;
        };
        let line: Vec<u8> = buf.drain(..=nl).collect();
        let event: Value = serde_json::from_slice(&line)?;
        let obj = &event["object"];
        match event["type"].as_str().unwrap_or_default() {
            "ERROR" => bail!("ERROR event {obj}"),
            "ADDED" => {
                decode_object(obj, decoder, kind)?;
                let key = key_of(obj);
                ensure!(
                    last_key <= key,
                    "{key} after {last_key} violates the ordering"
                );
                last_key = key;
                items.push(as_decoded(obj.clone(), decoder));
            }
            "BOOKMARK" => {
                decode_object(obj, decoder, kind)?;
                let ann = &obj["metadata"]["annotations"];
                if ann["k8s.io/initial-events-end"] != "true" {
                    continue;
                }
                let b64 = ann["kubernetes.io/initial-events-list-blueprint"]
                    .as_str()
                    .filter(|s| !s.is_empty())
                    .context("the blueprint annotation is missing content")?;
                let raw = base64::engine::general_purpose::STANDARD.decode(b64)?;
                let blueprint: Value = serde_json::from_slice(&raw)?;
                let (list_kind, list_version) = match decoder {
                    Decoder::Metadata => {
                        ("PartialObjectMetadataList".to_string(), "meta.k8s.io/v1")
                    }
                    _ => (format!("{kind}List"), ""),
                };
                ensure!(
                    blueprint["kind"] == list_kind.as_str(),
                    "blueprint {blueprint}"
                );
                if !list_version.is_empty() {
                    ensure!(
                        blueprint["apiVersion"] == list_version,
                        "blueprint {blueprint}"
                    );
                }
                return Ok(Assembled {
                    kind: list_kind,
                    api_version: blueprint["apiVersion"].as_str().unwrap_or_default().into(),
                    resource_version: obj["metadata"]["resourceVersion"]
                        .as_str()
                        .unwrap_or_default()
                        .into(),
                    items,
                });
            }
            other => bail!("unexpected watch event {other}"),
        }
    }
}

/// The consistency detector's LIST (`resourceVersionMatch=Exact` at the list's
/// resourceVersion, with the caller's options) and its comparison, items sorted by uid.
/// Typed lists keep their items' TypeMeta as sent (only the list's is cleared), so a
/// built-in LIST's items must come without it, as upstream's do; the dynamic client's
/// `UnstructuredList` gives an item without kind and apiVersion the list's.
async fn check_consistency(
    client: &kube::Client,
    path: &str,
    selector: &str,
    decoder: Decoder,
    got: &Assembled,
) -> Result<()> {
    let accept = match decoder {
        Decoder::Typed => TYPED,
        Decoder::Dynamic => DYNAMIC,
        Decoder::Metadata => METADATA,
    };
    let query = format!(
        "{selector}&resourceVersion={}&resourceVersionMatch=Exact",
        got.resource_version
    );
    let resp = send(client, &format!("{path}?{query}"), accept).await?;
    ensure!(
        resp.status() == 200,
        "consistency LIST answered {}",
        resp.status()
    );
    let body = axum::body::to_bytes(resp.into_body(), 64 << 20).await?;
    let list: Value = serde_json::from_slice(&body)?;
    let by_uid = |items: &[Value]| {
        let mut v = items.to_vec();
        v.sort_by(|a, b| {
            a["metadata"]["uid"]
                .as_str()
                .cmp(&b["metadata"]["uid"].as_str())
        });
        v
    };
    let mut listed = list["items"].as_array().context("no items")?.clone();
    if decoder == Decoder::Dynamic {
        let item_kind = list["kind"]
            .as_str()
            .and_then(|k| k.strip_suffix("List"))
            .context("list kind")?;
        for item in &mut listed {
            if item.get("kind").is_none() && item.get("apiVersion").is_none() {
                item["kind"] = json!(item_kind);
                item["apiVersion"] = list["apiVersion"].clone();
            }
        }
    }
    ensure!(
        by_uid(&listed) == by_uid(&got.items),
        "{decoder:?} data inconsistency: LIST {listed:?}\nwatch-list {:?}",
        got.items
    );
    Ok(())
}

async fn create(client: &kube::Client, path: &str, obj: Value) -> Result<Value> {
    let req = http::Request::post(path)
        .header(http::header::CONTENT_TYPE, "application/json")
        .body(serde_json::to_vec(&obj)?)?;
    Ok(serde_json::from_str(&client.request_text(req).await?)?)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typed_dynamic_and_metadata_lists_via_watch_are_accepted_and_match_what_was_created(
) -> Result<()> {
    let server = KplaneServer::start()?;
    let client = server.client().await?;
    // "wl-x" sorts before "wl" in kube-apiserver's keys ("wl-x/..." < "wl/...").
    let mut created = Vec::new();
    for ns in ["wl", "wl-x"] {
        server.kubectl_ok(&["create", "namespace", ns])?;
        for i in 1..=3 {
            let secret = json!({"apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": format!("secret-{i}"), "labels": {"watchlist": "true"}}});
            created
                .push(create(&client, &format!("/api/v1/namespaces/{ns}/secrets"), secret).await?);
        }
    }
    server.kubectl_ok(&["create", "secret", "generic", "other", "-n", "wl"])?;
    let selector = "labelSelector=watchlist%3Dtrue";
    let ns_path = "/api/v1/namespaces/wl/secrets";
    let in_wl: Vec<Value> = created[..3].to_vec();

    // The e2e's exact query, then the other resourceVersions client-go passes on.
    let current = watch_list(
        &client,
        ns_path,
        &watch_list_query(selector, ""),
        TYPED,
        Decoder::Typed,
        "Secret",
    )
    .await?;
    for rv in ["", "0", current.resource_version.as_str()] {
        let query = watch_list_query(selector, rv);
        for (decoder, accept) in [(Decoder::Typed, TYPED), (Decoder::Dynamic, DYNAMIC)] {
            let got = watch_list(&client, ns_path, &query, accept, decoder, "Secret").await?;
            let want: Vec<Value> = in_wl
                .iter()
                .map(|o| as_decoded(o.clone(), decoder))
                .collect();
            ensure!(got.items == want, "{decoder:?} rv={rv:?}: {:?}", got.items);
            ensure!(
                got.kind == "SecretList",
                "{decoder:?}: list kind {}",
                got.kind
            );
            if decoder == Decoder::Dynamic {
                ensure!(got.api_version == "v1");
            }
            check_consistency(&client, ns_path, selector, decoder, &got).await?;
        }
        // The metadata client: items as its GET returns them.
        let got = watch_list(
            &client,
            ns_path,
            &query,
            METADATA,
            Decoder::Metadata,
            "Secret",
        )
        .await?;
        let mut want = Vec::new();
        for o in &in_wl {
            let name = o["metadata"]["name"].as_str().unwrap_or_default();
            let resp = send(&client, &format!("{ns_path}/{name}"), METADATA).await?;
            let body = axum::body::to_bytes(resp.into_body(), 1 << 20).await?;
            want.push(as_decoded(
                serde_json::from_slice(&body)?,
                Decoder::Metadata,
            ));
        }
        ensure!(got.items == want, "metadata rv={rv:?}: {:?}", got.items);
    }

    // A field selector, and a list across namespaces in key order.
    let query = watch_list_query("fieldSelector=metadata.name%3Dsecret-2", "");
    let got = watch_list(&client, ns_path, &query, TYPED, Decoder::Typed, "Secret").await?;
    ensure!(got.items == [as_decoded(in_wl[1].clone(), Decoder::Typed)]);
    check_consistency(
        &client,
        ns_path,
        "fieldSelector=metadata.name%3Dsecret-2",
        Decoder::Typed,
        &got,
    )
    .await?;
    let all = "/api/v1/secrets";
    let got = watch_list(
        &client,
        all,
        &watch_list_query(selector, ""),
        DYNAMIC,
        Decoder::Dynamic,
        "Secret",
    )
    .await?;
    let mut want = created.clone();
    want.sort_by_key(key_of);
    ensure!(
        got.items == want,
        "across namespaces: {:?}",
        got.items.iter().map(key_of).collect::<Vec<_>>()
    );
    check_consistency(&client, all, selector, Decoder::Dynamic, &got).await?;

    // A Table-only Accept is refused (client-go falls back to a LIST).
    let table = "application/json;as=Table;v=v1;g=meta.k8s.io";
    let resp = send(
        &client,
        &format!("{ns_path}?{}", watch_list_query(selector, "")),
        table,
    )
    .await?;
    ensure!(
        resp.status() == 406,
        "Table watch-list answered {}",
        resp.status()
    );
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dynamic_client_lists_custom_resources_via_watch() -> Result<()> {
    let server = crate::crds::server_with_widgets()?;
    let client = server.client().await?;
    let path = "/apis/example.com/v1/namespaces/default/widgets";
    let mut created = Vec::new();
    for name in ["w-1", "w-2"] {
        let w = json!({"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": name, "labels": {"watchlist": "true"}}, "spec": {"color": "red"}});
        created.push(create(&client, path, w).await?);
    }
    let selector = "labelSelector=watchlist%3Dtrue";
    let got = watch_list(
        &client,
        path,
        &watch_list_query(selector, ""),
        DYNAMIC,
        Decoder::Dynamic,
        "Widget",
    )
    .await?;
    ensure!(got.items == created, "{:?}", got.items);
    ensure!((got.kind.as_str(), got.api_version.as_str()) == ("WidgetList", "example.com/v1"));
    check_consistency(&client, path, selector, Decoder::Dynamic, &got).await?;
    // Custom resources are served unstructured: their LIST items keep kind and apiVersion.
    let resp = send(&client, path, DYNAMIC).await?;
    let list: Value =
        serde_json::from_slice(&axum::body::to_bytes(resp.into_body(), 1 << 20).await?)?;
    ensure!(
        list["items"][0]["kind"] == "Widget" && list["items"][0]["apiVersion"] == "example.com/v1"
    );
    let got = watch_list(
        &client,
        path,
        &watch_list_query(selector, "0"),
        METADATA,
        Decoder::Metadata,
        "Widget",
    )
    .await?;
    ensure!(got.items.len() == 2 && got.items[1]["metadata"]["name"] == "w-2");
    Ok(())
}
