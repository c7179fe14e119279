//! The watches that feed the workers: the assigned objects in kplane (one watch across
//! clusters per synced resource, filling the source cache) and the host objects of the
//! target (filling the host cache, so status changes on the host queue their source).
//! Events of the syncer's own writes update the caches without queueing the key again.

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;

use futures::StreamExt as _;
use kube::api::{Api, DynamicObject};
use kube::runtime::watcher::{self, Event};
use kube::runtime::WatchStreamExt as _;
use serde_json::Value;
use tokio::sync::Notify;

use crate::copies::ours;
use crate::naming::{HostLayout, CLUSTER_ANNOTATION, NAMESPACE_ANNOTATION, NAME_ANNOTATION};
use crate::state::{annotation, slim, Compact, ObjectKey, State};

/// Caches the assigned objects of kind `i` from kplane and queues every change.
pub async fn watch_sources(state: Arc<State>, i: usize, sweep: Arc<Notify>) {
    let client = match state.kplane.cluster("*") {
        Ok(c) => c,
        Err(e) => {
            tracing::error!(error = %e, "no client for the watch");
            return;
        }
    };
    let ar = state.kinds[i].api_resource();
    let api: Api<DynamicObject> = Api::all_with(client, &ar);
    let mut stream = watcher::watcher(api, watcher::Config::default())
        .default_backoff()
        .boxed();
    let mut seen: HashSet<ObjectKey> = HashSet::new();
    while let Some(ev) = stream.next().await {
        match ev {
            Ok(Event::Init) => seen.clear(),
            Ok(Event::InitApply(o)) => {
                if let Some(k) = apply(&state, i, o) {
                    seen.insert(k);
                }
            }
            Ok(Event::Apply(o)) => {
                apply(&state, i, o);
            }
            Ok(Event::Delete(o)) => {
                let v = serde_json::to_value(o).unwrap_or(Value::Null);
                if let Some(key) = state.key_of(i, &v) {
                    let had = state
                        .cache
                        .lock()
                        .map(|mut c| c.remove(&key).is_some())
                        .unwrap_or(false);
                    state.note_live(&key, false);
                    if had {
                        state.queue.add(key);
                    }
                }
            }
            Ok(Event::InitDone) => {
                let gone: Vec<ObjectKey> = match state.cache.lock() {
                    Ok(mut cache) => {
                        let gone: Vec<ObjectKey> = cache
                            .keys()
                            .filter(|k| k.kind == i && !seen.contains(*k))
                            .cloned()
                            .collect();
                        for k in &gone {
                            cache.remove(k);
                        }
                        gone
                    }
                    Err(_) => Vec::new(),
                };
                for k in gone {
                    state.note_live(&k, false);
                    state.queue.add(k);
                }
                state.listed[i].store(true, Ordering::Release);
                tracing::info!(resource = %ar.plural, assigned = seen.len(), "listed the assigned objects");
                seen.clear();
                sweep.notify_one();
            }
            Err(e) => {
                tracing::warn!(resource = %ar.plural, error = %e, "watching kplane failed; retrying with backoff");
                state.metrics.error();
            }
        }
    }
}

/// Caches (or uncaches) one object the watch delivered and queues it; its key if assigned.
fn apply(state: &State, i: usize, obj: DynamicObject) -> Option<ObjectKey> {
    let v = slim(serde_json::to_value(obj).unwrap_or(Value::Null));
    let key = state.key_of(i, &v)?;
    if state.assigned(&v) {
        let own = State::own_write(&state.own_source_writes, &key, &v);
        state
            .cache
            .lock()
            .ok()?
            .insert(key.clone(), Compact::new(&v));
        state.note_live(&key, v.pointer("/metadata/deletionTimestamp").is_none());
        if !own {
            state.queue.add(key.clone());
        }
        Some(key)
    } else {
        let had = state.cache.lock().ok()?.remove(&key).is_some();
        state.note_live(&key, false);
        if had {
            state.queue.add(key);
        }
        None
    }
}

/// Queues the source of every host object of kind `i` that changes (status flowing back,
/// or a host object deleted by someone else).
pub async fn watch_host(state: Arc<State>, i: usize) {
    let ar = state.kinds[i].api_resource();
    let api: Api<DynamicObject> = match &state.layout {
        HostLayout::Shared(ns) => Api::namespaced_with(state.host.clone(), ns, &ar),
        HostLayout::PerNamespace => Api::all_with(state.host.clone(), &ar),
    };
    let config = watcher::Config::default().labels(&state.target.label_selector());
    let mut stream = watcher::watcher(api, config).default_backoff().boxed();
    let mut seen: HashSet<ObjectKey> = HashSet::new();
    while let Some(ev) = stream.next().await {
        let (obj, deleted, initial) = match ev {
            Ok(Event::Apply(o)) => (o, false, false),
            Ok(Event::InitApply(o)) => (o, false, true),
            Ok(Event::Delete(o)) => (o, true, false),
            Ok(Event::Init) => {
                seen.clear();
                continue;
            }
            Ok(Event::InitDone) => {
                // Host objects gone while the watch was down.
                let gone: Vec<ObjectKey> = match state.host_cache.lock() {
                    Ok(mut cache) => {
                        let gone: Vec<ObjectKey> = cache
                            .keys()
                            .filter(|k| k.kind == i && !seen.contains(*k))
                            .cloned()
                            .collect();
                        for k in &gone {
                            cache.remove(k);
                        }
                        gone
                    }
                    Err(_) => Vec::new(),
                };
                for k in gone {
                    if state.is_cached(&k) {
                        state.queue.add(k);
                    }
                }
                seen.clear();
                continue;
            }
            Err(e) => {
                tracing::warn!(resource = %ar.plural, error = %e, "watching the host failed; retrying with backoff");
                state.set_host_reachable(false);
                state.metrics.error();
                continue;
            }
        };
        state.set_host_reachable(true);
        let v = serde_json::to_value(obj).unwrap_or(Value::Null);
        if !ours(&state, &v) {
            continue;
        }
        let key = (|| {
            Some(ObjectKey {
                kind: i,
                cluster: annotation(&v, CLUSTER_ANNOTATION)?.to_owned(),
                namespace: annotation(&v, NAMESPACE_ANNOTATION)?.to_owned(),
                name: annotation(&v, NAME_ANNOTATION)?.to_owned(),
            })
        })();
        let Some(key) = key else { continue };
        if initial {
            seen.insert(key.clone());
        }
        let own = !deleted && State::own_write(&state.own_host_writes, &key, &v);
        if let Ok(mut cache) = state.host_cache.lock() {
            if deleted {
                cache.remove(&key);
            } else {
                cache.insert(key.clone(), Compact::new(&slim(v)));
            }
        }
        if !own && state.is_cached(&key) {
            state.queue.add(key);
        }
    }
}
