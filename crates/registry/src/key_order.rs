//! The order of a watch's initial events across namespaces. kube-apiserver sends them in
//! the order of its storage keys, `<namespace>/<name>` compared bytewise (the watch cache's
//! B-tree, `storage/cacher`), and client-go's list-via-watch refuses an ADDED whose
//! `<namespace>/<name>` sorts before the previous one (`rest/request.go`
//! `handleWatchList`, then falls back to a LIST). kplane's storage orders by namespace
//! and then by name, which differs in one case: a namespace that another extends with a
//! byte below `/` (`a` and `a-b`: `a-b/x` < `a/x`, while kplane reads `a` first).
//!
//! [`KeyOrder`] takes the batches of the cluster-wide scan in storage order and puts the
//! namespaces in key order with bounded memory: a namespace whose successor in storage
//! must come before it is skipped by the scan and sent later from a list of that
//! namespace alone at the same revision, once the scan reaches a namespace that does not
//! come before it (a stack, since `a`, `a-b`, `a-b-c` are sent in reverse). Whether a
//! namespace's successor comes first is seen in the batch, or, for the batch's last
//! namespace, by reading the first key after it.

use std::sync::Arc;

use bytes::Bytes;
use kplane_storage::{Key, ListOptions, Prefix, Revision};

use super::{storage_error, ListPage, Registry, Target};
use crate::error::ApiResult;
use crate::options::{ListParams, RvMatch};

/// Whether namespace `a`'s objects come before namespace `b`'s in kube-apiserver's key
/// order (`a/` before `b/`, bytewise).
fn before(a: &str, b: &str) -> bool {
    a.bytes().chain(Some(b'/')).lt(b.bytes().chain(Some(b'/')))
}

/// What to send next: items of the scan, or the whole list of one namespace.
pub(crate) enum Segment {
    Items(Vec<Bytes>),
    Namespace(ListPage),
}

/// Puts the initial events of a list across namespaces in kube-apiserver's key order.
pub(crate) struct KeyOrder {
    registry: Arc<Registry>,
    target: Target,
    params: ListParams,
    revision: Revision,
    /// Namespaces skipped by the scan, to send later; each extends the one below it.
    deferred: Vec<String>,
    /// The namespace of the scan's last item, and whether its items are being skipped.
    current: Option<(String, bool)>,
}

impl KeyOrder {
    /// The ordering for a watch of `t`, when its list spans namespaces of one cluster.
    pub(crate) fn for_target(
        registry: &Arc<Registry>,
        t: &Target,
        p: &ListParams,
        revision: Revision,
    ) -> Option<KeyOrder> {
        if !t.rt.namespaced || t.namespace.is_some() || t.cluster.is_multi() {
            return None;
        }
        Some(KeyOrder {
            registry: registry.clone(),
            target: t.clone(),
            params: ListParams {
                label_selector: p.label_selector.clone(),
                field_selector: p.field_selector.clone(),
                annotation: p.annotation.clone(),
                resource_version: Some(revision.to_string()),
                rv_match: Some(RvMatch::Exact),
                ..Default::default()
            },
            revision,
            deferred: Vec::new(),
            current: None,
        })
    }

    /// One batch of the scan, as the segments to send in its place.
    pub(crate) async fn batch(&mut self, items: Vec<Bytes>) -> ApiResult<Vec<Segment>> {
        let namespaces: Vec<String> = items.iter().map(|b| namespace_of(b)).collect();
        let mut out = Vec::new();
        let mut run = Vec::new();
        for (i, item) in items.into_iter().enumerate() {
            let ns = &namespaces[i];
            if let Some((cur, skipping)) = &self.current {
                if cur == ns {
                    if !skipping {
                        run.push(item);
                    }
                    continue;
                }
            }
            // A new namespace: the deferred ones that do not come after it go first.
            if !run.is_empty() {
                out.push(Segment::Items(std::mem::take(&mut run)));
            }
            while self.deferred.last().is_some_and(|top| !before(ns, top)) {
                if let Some(top) = self.deferred.pop() {
                    out.push(Segment::Namespace(self.read_namespace(top).await?));
                }
            }
            let next = match namespaces[i + 1..].iter().find(|n| *n != ns) {
                Some(n) => Some(n.clone()),
                None => self.namespace_after(ns).await?,
            };
            let skip = next.is_some_and(|n| before(&n, ns));
            if skip {
                self.deferred.push(ns.clone());
            } else {
                run.push(item);
            }
            self.current = Some((ns.clone(), skip));
        }
        if !run.is_empty() {
            out.push(Segment::Items(run));
        }
        Ok(out)
    }

    /// After the scan's last batch: the namespaces still deferred, innermost first.
    pub(crate) async fn finish(&mut self) -> ApiResult<Vec<Segment>> {
        let mut out = Vec::new();
        while let Some(ns) = self.deferred.pop() {
            out.push(Segment::Namespace(self.read_namespace(ns).await?));
        }
        Ok(out)
    }

    /// The list of one namespace at the scan's revision, with the watch's selectors.
    async fn read_namespace(&self, ns: String) -> ApiResult<ListPage> {
        let t = Target {
            namespace: Some(ns),
            ..self.target.clone()
        };
        self.registry.list(&t, &self.params).await
    }

    /// The namespace of the first stored key after every key of namespace `ns` (whether
    /// or not its object matches the selectors: sending a namespace later than needed
    /// keeps the order right).
    async fn namespace_after(&self, ns: &str) -> ApiResult<Option<String>> {
        let Some(cluster) = self.target.cluster.one() else {
            return Ok(None);
        };
        let resource = self.target.rt.storage_resource.clone();
        // Namespace `ns` followed by a NUL sorts after every key of `ns` and before any
        // other namespace (names hold no NUL), in every backend's (namespace, name) order.
        let after = Key::new(cluster.as_str(), resource.as_str(), format!("{ns}\0"), "");
        let opts = ListOptions {
            at_revision: Some(self.revision),
            start_after: Some(after),
            limit: Some(1),
        };
        let prefix = Prefix::resource(cluster.as_str(), resource.as_str());
        let found = self
            .registry
            .storage
            .list(&prefix, &opts, None)
            .await
            .map_err(|e| storage_error(e, &self.target.rt, ""))?;
        Ok(found.items.into_iter().next().map(|kv| kv.key.namespace))
    }
}

/// An item's `metadata.namespace`.
fn namespace_of(item: &[u8]) -> String {
    #[derive(serde::Deserialize)]
    struct Meta {
        #[serde(default)]
        namespace: String,
    }
    #[derive(serde::Deserialize)]
    struct Object {
        metadata: Meta,
    }
    serde_json::from_slice::<Object>(item)
        .map(|o| o.metadata.namespace)
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::read::LIST_BATCH;
    use crate::testing::{create_all, create_namespace, fixture, target};
    use crate::watch::WatchType;
    use serde_json::{json, Value};
    use std::time::Duration;

    fn secret(name: &str, watched: bool) -> Value {
        json!({"apiVersion": "v1", "kind": "Secret",
               "metadata": {"name": name, "labels": {"watched": watched.to_string()}}})
    }

    /// `<namespace>/<name>` of the ADDED events before the first other event.
    async fn initial_keys(reg: &Arc<Registry>, t: &Target, selector: &str) -> Vec<String> {
        let p = ListParams {
            watch: true,
            send_initial_events: Some(true),
            allow_bookmarks: true,
            rv_match: Some(RvMatch::NotOlderThan),
            label_selector: Some(selector.into()),
            timeout_seconds: Some(1),
            ..Default::default()
        };
        let mut w = reg.watch(t, &p).await.unwrap();
        let mut keys = Vec::new();
        loop {
            let item = tokio::time::timeout(Duration::from_secs(30), w.next())
                .await
                .unwrap()
                .unwrap();
            if item.ty != WatchType::Added {
                assert_eq!(item.ty, WatchType::Bookmark);
                return keys;
            }
            let v: Value = serde_json::from_slice(&item.object).unwrap();
            keys.push(format!(
                "{}/{}",
                v["metadata"]["namespace"].as_str().unwrap(),
                v["metadata"]["name"].as_str().unwrap()
            ));
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn initial_events_across_namespaces_are_in_kube_apiserver_key_order() {
        let f = fixture().await;
        let reg = &f.reg;
        // "a" fills more than a batch, so whether "a-b" comes first is only seen by
        // reading past the batch; "a-b-c" nests a second deferral; "x" has no watched
        // object, yet comes after "x-y", which has.
        let layout: [(&str, usize, bool); 7] = [
            ("a", LIST_BATCH + 3, true),
            ("a-b", 2, true),
            ("a-b-c", 2, true),
            ("a0", 2, true),
            ("b", 2, true),
            ("x", 1, false),
            ("x-y", 1, true),
        ];
        let mut want = Vec::new();
        for (ns, n, watched) in layout {
            create_namespace(reg, ns).await;
            let t = target(reg, "", "secrets", Some(ns));
            let names: Vec<String> = (0..n).map(|i| format!("s-{i:04}")).collect();
            create_all(reg, &t, names.iter().map(|n| secret(n, watched)).collect()).await;
            if watched {
                want.extend(names.iter().map(|n| format!("{ns}/{n}")));
            }
        }
        want.sort();
        assert_eq!(
            want[0], "a-b-c/s-0000",
            "the order tested differs from storage's"
        );
        let all = target(reg, "", "secrets", None);
        let got = initial_keys(reg, &all, "watched=true").await;
        assert_eq!(got.len(), want.len());
        if let Some(i) = (0..got.len()).find(|&i| got[i] != want[i]) {
            panic!("initial event {i} is {} instead of {}", got[i], want[i]);
        }
        // One namespace's watch is unaffected.
        let one = target(reg, "", "secrets", Some("a-b"));
        let got = initial_keys(reg, &one, "watched=true").await;
        assert_eq!(got, ["a-b/s-0000", "a-b/s-0001"]);
    }

    #[test]
    fn namespaces_extended_below_the_slash_come_first() {
        assert!(before("a-b", "a"));
        assert!(before("a.b", "a"));
        assert!(before("a-b-c", "a-b"));
        assert!(before("a", "a0"));
        assert!(before("a", "ab"));
        assert!(before("a", "b"));
        assert!(!before("a", "a"));
        assert!(!before("a", "a-b"));
    }
}
