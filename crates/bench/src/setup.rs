//! Fixtures and cleanup: making sure namespaces exist, creating objects in bulk before a
//! measurement, and deleting what the run created. Every step is bounded by the setup timeout
//! and its failures are returned for the report.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use hyper::Method;
use serde::Deserialize;

use crate::client::{encode_query, status_failure, Conn, Failure};
use crate::ctx::{Ctx, Scope};
use crate::stats::ErrorCounts;

/// How often a terminating namespace is polled.
const POLL: Duration = Duration::from_millis(200);

/// Creates `scope`'s namespace unless it exists; returns whether this call created it. Waits
/// (bounded) for a terminating namespace of the same name to go away first.
pub async fn ensure_namespace(
    conn: &mut Conn,
    scope: &Scope,
    deadline: Instant,
) -> Result<bool, Failure> {
    loop {
        let r = conn
            .call(Method::GET, &scope.namespace_path(), None)
            .await?;
        match r.status {
            200 => {
                if !terminating(&r.body) {
                    return Ok(false);
                }
            }
            404 => {
                let body = format!(
                    "{{\"apiVersion\":\"v1\",\"kind\":\"Namespace\",\"metadata\":{{\"name\":\"{}\"}}}}",
                    scope.namespace
                );
                let c = conn
                    .call(Method::POST, &scope.namespaces(), Some(body.into()))
                    .await?;
                match c.status {
                    200..=299 => return Ok(true),
                    409 => {} // Raced with someone (or still terminating): look again.
                    _ => return Err(status_failure(c.status, &c.body)),
                }
            }
            _ => return Err(status_failure(r.status, &r.body)),
        }
        if Instant::now() + POLL >= deadline {
            return Err(Failure::Protocol(format!(
                "namespace {} still terminating",
                scope.namespace
            )));
        }
        tokio::time::sleep(POLL).await;
    }
}

fn terminating(body: &[u8]) -> bool {
    #[derive(Deserialize)]
    struct Ns {
        #[serde(default)]
        status: Option<Status>,
    }
    #[derive(Deserialize)]
    struct Status {
        #[serde(default)]
        phase: Option<String>,
    }
    serde_json::from_slice::<Ns>(body)
        .ok()
        .and_then(|n| n.status)
        .and_then(|s| s.phase)
        .is_some_and(|p| p == "Terminating")
}

/// Ensures the namespaces of `scopes` exist, remembering the ones created for cleanup.
pub async fn ensure_namespaces(ctx: &Ctx, scopes: &[Scope]) -> ErrorCounts {
    let mut errors = ErrorCounts::default();
    let deadline = Instant::now() + ctx.opts.setup_timeout;
    let mut conn = ctx.conn();
    let mut seen: Vec<&Scope> = Vec::new();
    for s in scopes {
        if seen.contains(&s) {
            continue;
        }
        seen.push(s);
        match ensure_namespace(&mut conn, s, deadline).await {
            Ok(true) => remember_namespace(ctx, s),
            Ok(false) => {}
            Err(f) => errors.add(&f.key(), &format!("namespace {}: {f}", s.namespace)),
        }
    }
    errors
}

/// Records a namespace this run created.
pub fn remember_namespace(ctx: &Ctx, s: &Scope) {
    if let Ok(mut v) = ctx.created_namespaces.lock() {
        v.push(s.clone());
    }
}

/// Creates the ConfigMaps `items` (scope, name) with `--concurrency` connections. Returns
/// the failures; bounded by the setup timeout.
pub async fn bulk_create(
    ctx: &Arc<Ctx>,
    items: Arc<Vec<(Scope, String)>>,
    scenario: &'static str,
) -> ErrorCounts {
    let next = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + ctx.opts.setup_timeout;
    let workers = (ctx.opts.concurrency as usize).min(items.len()).max(1);
    let mut handles = Vec::new();
    for _ in 0..workers {
        let (ctx, items, next) = (ctx.clone(), items.clone(), next.clone());
        handles.push(tokio::spawn(async move {
            let mut errors = ErrorCounts::default();
            let mut conn = ctx.conn();
            while Instant::now() < deadline {
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some((scope, name)) = items.get(i) else {
                    break;
                };
                let body = ctx.configmap_body(scope, name, scenario);
                if let Err(f) = conn
                    .call_ok(Method::POST, &scope.configmaps(), Some(body))
                    .await
                {
                    errors.add(&f.key(), &f.message());
                }
            }
            errors
        }));
    }
    let mut errors = join_errors(handles).await;
    let left = items.len().saturating_sub(next.load(Ordering::Relaxed));
    if left > 0 {
        errors.add_n(
            "timeout",
            left as u64,
            "setup timeout reached before all fixtures were created",
        );
    }
    errors
}

/// Merges the error counts returned by tasks (a panicked task counts as an error).
pub async fn join_errors(handles: Vec<tokio::task::JoinHandle<ErrorCounts>>) -> ErrorCounts {
    let mut errors = ErrorCounts::default();
    for h in handles {
        match h.await {
            Ok(e) => errors.merge(e),
            Err(e) => errors.add("panic", &e.to_string()),
        }
    }
    errors
}

#[derive(Deserialize)]
struct ListMeta {
    #[serde(default, rename = "continue")]
    cont: Option<String>,
    #[serde(default, rename = "resourceVersion")]
    resource_version: Option<String>,
}

#[derive(Deserialize)]
struct NameOnly {
    metadata: ItemMeta,
}

#[derive(Deserialize)]
struct ItemMeta {
    name: String,
}

#[derive(Deserialize)]
struct NameList {
    #[serde(default)]
    metadata: Option<ListMeta>,
    #[serde(default)]
    items: Vec<NameOnly>,
}

/// The list's `metadata.resourceVersion` (for starting a watch).
pub fn list_resource_version(body: &[u8]) -> Result<String, Failure> {
    #[derive(Deserialize)]
    struct L {
        metadata: ListMeta,
    }
    serde_json::from_slice::<L>(body)
        .ok()
        .and_then(|l| l.metadata.resource_version)
        .ok_or_else(|| Failure::Protocol("list without metadata.resourceVersion".into()))
}

/// Deletes this run's objects of `scenario` in each scope: one deletecollection per scope,
/// falling back to listing and deleting one by one when the server refuses it.
pub async fn cleanup_objects(
    ctx: &Arc<Ctx>,
    scopes: &[Scope],
    scenario: &'static str,
) -> ErrorCounts {
    if ctx.opts.keep {
        return ErrorCounts::default();
    }
    let started = Instant::now();
    let deadline = started + ctx.opts.setup_timeout;
    let mut conn = ctx.setup_conn();
    let mut errors = ErrorCounts::default();
    // Until the objects are really gone (a server may delete in the background or cut a
    // collection short), so that the next measurement does not pay for this one.
    let mut left = scopes.to_vec();
    while !left.is_empty() {
        errors.merge(delete_objects(ctx, &left, scenario).await);
        if !errors.is_empty() {
            break;
        }
        left = crate::settle::objects_left(ctx, &mut conn, &left, scenario, &mut errors).await;
        if !left.is_empty() && Instant::now() >= deadline {
            errors.add(
                "timeout",
                &format!("objects of {scenario} still present at the setup timeout"),
            );
            break;
        }
        if !left.is_empty() {
            crate::settle::pause().await;
        }
    }
    crate::settle::server_idle(&mut conn, deadline).await;
    ctx.last_cleanup_ms.store(
        u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX),
        Ordering::Relaxed,
    );
    errors
}

/// One deletecollection per scope, or one delete per object where it is refused.
async fn delete_objects(ctx: &Arc<Ctx>, scopes: &[Scope], scenario: &'static str) -> ErrorCounts {
    let deadline = Instant::now() + ctx.opts.setup_timeout;
    let selector = encode_query(&ctx.selector(scenario));
    let mut conn = ctx.setup_conn();
    let mut errors = ErrorCounts::default();
    for scope in scopes {
        let path = format!("{}?labelSelector={selector}", scope.configmaps());
        match conn.call_discard(Method::DELETE, &path).await {
            Ok(r) if (200..300).contains(&r.status) => continue,
            Ok(r) if r.status == 405 || r.status == 404 => {}
            Ok(r) => {
                if let Err(f) = r.ok() {
                    errors.add(&f.key(), &format!("deletecollection: {f}"));
                }
                continue;
            }
            Err(f) => {
                errors.add(&f.key(), &format!("deletecollection: {f}"));
                continue;
            }
        }
        // One by one: list names page by page (bounded by the deadline), delete each.
        let mut cont = String::new();
        while Instant::now() < deadline {
            let page = format!("{path}&limit=500{cont}");
            let list = match conn.call_ok(Method::GET, &page, None).await {
                Ok(b) => b,
                Err(f) => {
                    errors.add(&f.key(), &format!("listing for cleanup: {f}"));
                    break;
                }
            };
            let Ok(list) = serde_json::from_slice::<NameList>(&list) else {
                errors.add("protocol", "unparsable list during cleanup");
                break;
            };
            for item in &list.items {
                if let Err(f) = conn
                    .call_ok(Method::DELETE, &scope.configmap(&item.metadata.name), None)
                    .await
                {
                    if !matches!(f, Failure::Status(404, _)) {
                        errors.add(&f.key(), &format!("delete: {f}"));
                    }
                }
            }
            match list.metadata.and_then(|m| m.cont).filter(|c| !c.is_empty()) {
                Some(c) => cont = format!("&continue={}", encode_query(&c)),
                None => break,
            }
        }
    }
    errors
}

/// Deletes the namespaces this run created (unless --keep), in parallel.
pub async fn delete_namespaces(ctx: &Arc<Ctx>) -> ErrorCounts {
    if ctx.opts.keep {
        return ErrorCounts::default();
    }
    let scopes: Vec<Scope> = match ctx.created_namespaces.lock() {
        Ok(mut v) => std::mem::take(&mut *v),
        Err(_) => return ErrorCounts::default(),
    };
    if let Ok(mut d) = ctx.deleted_namespaces.lock() {
        d.extend(scopes.iter().cloned());
    }
    let scopes = Arc::new(scopes);
    let next = Arc::new(AtomicUsize::new(0));
    let deadline = Instant::now() + ctx.opts.setup_timeout;
    let mut handles = Vec::new();
    for _ in 0..(ctx.opts.concurrency as usize).min(scopes.len()) {
        let (ctx, scopes, next) = (ctx.clone(), scopes.clone(), next.clone());
        handles.push(tokio::spawn(async move {
            let mut errors = ErrorCounts::default();
            let mut conn = ctx.setup_conn();
            while Instant::now() < deadline {
                let Some(s) = scopes.get(next.fetch_add(1, Ordering::Relaxed)) else {
                    break;
                };
                match conn
                    .call_ok(Method::DELETE, &s.namespace_path(), None)
                    .await
                {
                    Ok(_) | Err(Failure::Status(404, _)) => {}
                    Err(f) => errors.add(
                        &f.key(),
                        &format!("deleting namespace {}: {f}", s.namespace),
                    ),
                }
            }
            errors
        }));
    }
    join_errors(handles).await
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn namespace_and_list_parsing() {
        assert!(terminating(br#"{"status":{"phase":"Terminating"}}"#));
        assert!(!terminating(br#"{"status":{"phase":"Active"}}"#));
        assert!(!terminating(b"{}"));
        assert_eq!(
            list_resource_version(br#"{"metadata":{"resourceVersion":"42"},"items":[]}"#).unwrap(),
            "42"
        );
        assert!(list_resource_version(b"{}").is_err());
    }
}
