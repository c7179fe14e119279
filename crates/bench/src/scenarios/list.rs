//! `list`: a namespace holding `--list-size` ConfigMaps is listed whole (one measured phase),
//! then walked page by page with `limit=--page-size` (a second phase of the same duration; each
//! page's latency and each whole walk's latency are reported).

use std::sync::Arc;

use hyper::Method;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::json;

use super::{add_errors, fill, limits, progress};
use crate::client::{Conn, Failure};
use crate::ctx::Ctx;
use crate::report::{Report, Row};
use crate::runner::{drive, Worker};
use crate::setup::{bulk_create, cleanup_objects, encode_query, ensure_namespaces};
use crate::stats::Samples;

#[derive(Deserialize)]
struct Page {
    #[serde(default)]
    metadata: PageMeta,
    #[serde(default)]
    items: Vec<IgnoredAny>,
}

#[derive(Deserialize, Default)]
struct PageMeta {
    #[serde(default, rename = "continue")]
    cont: Option<String>,
}

fn parse_page(body: &[u8]) -> Result<(usize, Option<String>), Failure> {
    let p: Page = serde_json::from_slice(body)
        .map_err(|e| Failure::Protocol(format!("unparsable list: {e}")))?;
    Ok((p.items.len(), p.metadata.cont.filter(|c| !c.is_empty())))
}

struct FullWorker {
    conn: Conn,
    path: String,
    /// Items in the first measured answer. Later answers are read frame by frame and
    /// dropped: parsing or even joining every 10-50 MB answer would load the client, which
    /// shares the cores with the server, and make the figure grow faster than the list.
    items: Option<usize>,
    bytes: u64,
    lists: u64,
}

impl Worker for FullWorker {
    async fn op(&mut self, measuring: bool) -> Result<(), Failure> {
        let len = if measuring && self.items.is_none() {
            let body = self.conn.call_ok(Method::GET, &self.path, None).await?;
            self.items = Some(parse_page(&body)?.0);
            body.len() as u64
        } else {
            // A non-2xx body is kept, so `ok` reports its message.
            let reply = self.conn.call_discard(Method::GET, &self.path).await?;
            let len = reply.len;
            reply.ok()?;
            len
        };
        if measuring {
            self.bytes += len;
            self.lists += 1;
        }
        Ok(())
    }
}

struct PagedWorker {
    conn: Conn,
    path: String,
    page_size: u32,
    pages: Samples,
    page_count: u64,
    items: u64,
    walks: u64,
}

/// Bound on pages per walk (a walk of a namespace that keeps growing must still end).
const MAX_PAGES: usize = 100_000;

impl Worker for PagedWorker {
    async fn op(&mut self, measuring: bool) -> Result<(), Failure> {
        let mut cont: Option<String> = None;
        let mut items = 0u64;
        for _ in 0..MAX_PAGES {
            let mut url = format!("{}?limit={}", self.path, self.page_size);
            if let Some(c) = &cont {
                url.push_str("&continue=");
                url.push_str(&encode_query(c));
            }
            let t0 = std::time::Instant::now();
            let body = self.conn.call_ok(Method::GET, &url, None).await?;
            let dt = t0.elapsed();
            let (n, next) = parse_page(&body)?;
            items += n as u64;
            if measuring {
                self.pages.record(dt);
                self.page_count += 1;
            }
            match next {
                Some(c) => cont = Some(c),
                None => {
                    if measuring {
                        self.items += items;
                        self.walks += 1;
                    }
                    return Ok(());
                }
            }
        }
        Err(Failure::Protocol(format!("more than {MAX_PAGES} pages")))
    }
}

/// Full and paged lists of one namespace.
pub async fn run(ctx: &Arc<Ctx>) -> Report {
    let mut report = Report::new("list");
    let scope = ctx.base_scope();
    let n = u64::from(ctx.opts.list_size);
    report.set("concurrency", ctx.opts.concurrency);
    report.set("list_size", n);
    report.set("size", ctx.opts.size);
    add_errors(
        &mut report,
        ensure_namespaces(ctx, std::slice::from_ref(&scope)).await,
        "setup ",
    );
    crate::runner::note(&format!(
        "list: creating {n} ConfigMaps in {}",
        scope.namespace
    ));
    let items: Vec<_> = (0..n).map(|i| (scope.clone(), ctx.name("l", i))).collect();
    add_errors(
        &mut report,
        bulk_create(ctx, Arc::new(items), "list").await,
        "setup ",
    );

    let path = scope.configmaps();
    let workers = (0..ctx.opts.concurrency)
        .map(|_| FullWorker {
            conn: ctx.conn(),
            path: path.clone(),
            items: None,
            bytes: 0,
            lists: 0,
        })
        .collect();
    let phase = drive("list full", progress(ctx), workers, limits(ctx)).await;
    let workers = fill(&mut report, phase);
    let lists: u64 = workers.iter().map(|w| w.lists).sum();
    let bytes: u64 = workers.iter().map(|w| w.bytes).sum();
    if let Some(items) = workers.iter().find_map(|w| w.items) {
        report.set("items_per_list", items);
    }
    if let Some(b) = bytes.checked_div(lists) {
        report.set("bytes_per_list", b);
    }

    if ctx.opts.page_size > 0 {
        let workers = (0..ctx.opts.concurrency)
            .map(|_| PagedWorker {
                conn: ctx.conn(),
                path: path.clone(),
                page_size: ctx.opts.page_size,
                pages: Samples::default(),
                page_count: 0,
                items: 0,
                walks: 0,
            })
            .collect();
        let phase = drive("list paged", progress(ctx), workers, limits(ctx)).await;
        let seconds = phase.seconds;
        let walk_latency = phase.samples.clone().summary();
        let paged_errors = phase.errors.clone();
        let walks_ops = phase.ops;
        let workers = phase.workers;
        let mut pages = Samples::default();
        let (mut page_count, mut items, mut walks) = (0u64, 0u64, 0u64);
        for w in workers {
            pages.merge(w.pages);
            page_count += w.page_count;
            items += w.items;
            walks += w.walks;
        }
        let page_latency = pages.summary();
        let walk_row = Row {
            label: "paged walk".into(),
            ops: walks_ops,
            seconds,
            latency: walk_latency,
            errors: paged_errors.short(),
        };
        let page_row = Row {
            label: format!("paged page (limit={})", ctx.opts.page_size),
            ops: page_count,
            seconds,
            latency: page_latency,
            errors: paged_errors.short(),
        };
        report.set(
            "paged",
            json!({
                "page_size": ctx.opts.page_size,
                "walks": walk_row.to_json(),
                "pages": page_row.to_json(),
                "page_latency_ms": page_latency.to_json(),
                "pages_per_walk": if walks > 0 { page_count as f64 / walks as f64 } else { 0.0 },
                "items_per_walk": items.checked_div(walks).unwrap_or(0),
                "errors": paged_errors.to_json(),
            }),
        );
        report.rows.push(walk_row);
        report.rows.push(page_row);
        add_errors(&mut report, paged_errors, "paged ");
    }
    add_errors(
        &mut report,
        cleanup_objects(ctx, &[scope], "list").await,
        "cleanup ",
    );
    report
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;

    #[test]
    fn parses_pages() {
        let (n, c) =
            parse_page(br#"{"metadata":{"continue":"abc"},"items":[{"a":1},{}]}"#).unwrap();
        assert_eq!((n, c.as_deref()), (2, Some("abc")));
        let (n, c) = parse_page(br#"{"metadata":{"continue":""},"items":[]}"#).unwrap();
        assert_eq!((n, c), (0, None));
        let (n, c) = parse_page(br#"{"items":[1]}"#).unwrap();
        assert_eq!((n, c), (1, None));
        assert!(parse_page(b"nope").is_err());
    }
}
