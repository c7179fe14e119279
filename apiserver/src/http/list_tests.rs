//! A LIST without `limit` through the response encoder, around the registry's list batch:
//! every representation (objects, Table, PartialObjectMetadataList) carries every item, in
//! order, in one body at the list's revision; and a `limit` page's continue token and
//! `remainingItemCount` in each.

use bytes::Bytes;
use http_body_util::BodyExt;
use kplane_registry::options::ListParams;
use kplane_registry::testing::{configmap, create_all, create_namespace, fixture};
use kplane_registry::LIST_BATCH;
use serde_json::Value;

use super::negotiation::Representation;
use super::table::TableOptions;

/// The list body's item names, and the body itself.
async fn body(
    page: kplane_registry::ListPage,
    rt: &kplane_registry::ResourceType,
    repr: Representation,
) -> (Vec<String>, Value) {
    let resp = super::response::list(rt, page, repr, &TableOptions::default())
        .await
        .unwrap();
    let bytes: Bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let v: Value = serde_json::from_slice(&bytes).unwrap();
    let names = match repr {
        Representation::Table => v["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["cells"][0].as_str().unwrap().to_string())
            .collect(),
        _ => v["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o["metadata"]["name"].as_str().unwrap().to_string())
            .collect(),
    };
    (names, v)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_representation_of_a_list_carries_every_item_around_the_batch_size() {
    let f = fixture().await;
    let reg = &f.reg;
    let t = create_namespace(reg, "lists").await;
    // The namespace starts with kube-root-ca.crt: grow it to each size in turn.
    let mut names = vec!["kube-root-ca.crt".to_string()];
    for total in [
        LIST_BATCH - 1,
        LIST_BATCH,
        LIST_BATCH + 1,
        3 * LIST_BATCH + 7,
        10 * LIST_BATCH,
    ] {
        let new: Vec<String> = (names.len()..total).map(|i| format!("cm-{i:05}")).collect();
        create_all(reg, &t, new.iter().map(|n| configmap(n, "all")).collect()).await;
        names.extend(new);
        names.sort();
        for repr in [
            Representation::Object,
            Representation::Table,
            Representation::PartialObjectMetadataList,
        ] {
            let page = reg.list(&t, &ListParams::default()).await.unwrap();
            let rv = page.revision().to_string();
            let (got, v) = body(page, &t.rt, repr).await;
            assert_eq!(got.len(), total, "{repr:?} at {total}: number of items");
            assert!(got == names, "{repr:?} at {total}: items out of order");
            assert_eq!(v["metadata"]["resourceVersion"], rv.as_str(), "{repr:?}");
            assert!(v["metadata"].get("continue").is_none(), "{repr:?}");
            if repr == Representation::Object {
                assert_eq!(v["kind"], "ConfigMapList");
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_representation_of_a_limit_page_carries_its_remaining_item_count() {
    let f = fixture().await;
    let reg = &f.reg;
    let t = create_namespace(reg, "pages").await;
    let new: Vec<String> = (0..40).map(|i| format!("cm-{i:05}")).collect();
    create_all(reg, &t, new.iter().map(|n| configmap(n, "all")).collect()).await;
    // 41 with kube-root-ca.crt.
    for repr in [
        Representation::Object,
        Representation::Table,
        Representation::PartialObjectMetadataList,
    ] {
        let params = ListParams {
            limit: Some(17),
            ..Default::default()
        };
        let page = reg.list(&t, &params).await.unwrap();
        let (got, v) = body(page, &t.rt, repr).await;
        assert_eq!(got.len(), 17, "{repr:?}");
        assert_eq!(v["metadata"]["remainingItemCount"], 24, "{repr:?}");
        let token = v["metadata"]["continue"].as_str().unwrap().to_string();
        let last = ListParams {
            limit: Some(30),
            continue_token: Some(token),
            ..Default::default()
        };
        let page = reg.list(&t, &last).await.unwrap();
        let (got, v) = body(page, &t.rt, repr).await;
        assert_eq!(got.len(), 24, "{repr:?}");
        assert!(v["metadata"].get("continue").is_none(), "{repr:?}");
        assert!(
            v["metadata"].get("remainingItemCount").is_none(),
            "{repr:?}"
        );
    }
}
