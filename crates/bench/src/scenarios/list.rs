//! `list`: a namespace holding `--list-size` ConfigMaps is listed whole (one measured phase),
//! then walked page by page with `limit=--page-size` (a second phase of the same duration; each
//! page's latency and each whole walk's latency are reported).
//!
//! With `--list-history N` the same ConfigMaps are then updated N times in total (spread
//! evenly, `--history-clients` clients) and both phases are measured again: the report's
//! `after_history` and the p50 ratios say whether LIST cost grows with history (issue 17:
//! it must not) on the same server in the same run.

use std::sync::Arc;

use hyper::Method;
use serde::de::IgnoredAny;
use serde::Deserialize;
use serde_json::json;

use std::time::Duration;

use serde_json::Value;

use super::churn::random_text;
use super::crud::resource_version;
use super::{add_errors, limits, progress};
use crate::client::{encode_query, Conn, Failure};
use crate::ctx::Ctx;
use crate::report::{Report, Row};
use crate::runner::{drive, Limits, Worker};
use crate::setup::{bulk_create, cleanup_objects, ensure_namespaces};
use crate::stats::{ErrorCounts, Samples};

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

/// What one round of list measurements (full, then paged) found.
struct Lists {
    full: Row,
    items_per_list: Option<usize>,
    bytes_per_list: Option<u64>,
    /// The paged walks and pages, and their JSON summary.
    paged: Option<(Row, Row, Value)>,
    errors: ErrorCounts,
}

impl Lists {
    /// `{"full": row, "items_per_list", "bytes_per_list", "paged"}`.
    fn to_json(&self) -> Value {
        json!({
            "full": self.full.to_json(),
            "items_per_list": self.items_per_list,
            "bytes_per_list": self.bytes_per_list,
            "paged": self.paged.as_ref().map(|p| p.2.clone()),
        })
    }
}

/// Measures full lists of `path` for the duration, then (unless `--page-size 0`) paged walks
/// for the same duration; `tag` names the phases in the progress line.
async fn measure(ctx: &Arc<Ctx>, path: &str, tag: &str) -> Lists {
    let workers = (0..ctx.opts.concurrency)
        .map(|_| FullWorker {
            conn: ctx.conn(),
            path: path.to_string(),
            items: None,
            bytes: 0,
            lists: 0,
        })
        .collect();
    let phase = drive(
        &format!("list full{tag}"),
        progress(ctx),
        workers,
        limits(ctx),
    )
    .await;
    let mut errors = phase.errors.clone();
    let full = Row {
        label: format!("full{tag}"),
        ops: phase.ops,
        seconds: phase.seconds,
        latency: phase.samples.summary(),
        errors: phase.errors.short(),
    };
    let lists: u64 = phase.workers.iter().map(|w| w.lists).sum();
    let bytes: u64 = phase.workers.iter().map(|w| w.bytes).sum();
    let items_per_list = phase.workers.iter().find_map(|w| w.items);
    let bytes_per_list = bytes.checked_div(lists);

    let mut paged = None;
    if ctx.opts.page_size > 0 {
        let workers = (0..ctx.opts.concurrency)
            .map(|_| PagedWorker {
                conn: ctx.conn(),
                path: path.to_string(),
                page_size: ctx.opts.page_size,
                pages: Samples::default(),
                page_count: 0,
                items: 0,
                walks: 0,
            })
            .collect();
        let phase = drive(
            &format!("list paged{tag}"),
            progress(ctx),
            workers,
            limits(ctx),
        )
        .await;
        let seconds = phase.seconds;
        let walk_latency = phase.samples.clone().summary();
        let paged_errors = phase.errors.clone();
        let walks_ops = phase.ops;
        let mut pages = Samples::default();
        let (mut page_count, mut items, mut walks) = (0u64, 0u64, 0u64);
        for w in phase.workers {
            pages.merge(w.pages);
            page_count += w.page_count;
            items += w.items;
            walks += w.walks;
        }
        let page_latency = pages.summary();
        let walk_row = Row {
            label: format!("paged walk{tag}"),
            ops: walks_ops,
            seconds,
            latency: walk_latency,
            errors: paged_errors.short(),
        };
        let page_row = Row {
            label: format!("paged page (limit={}){tag}", ctx.opts.page_size),
            ops: page_count,
            seconds,
            latency: page_latency,
            errors: paged_errors.short(),
        };
        let summary = json!({
            "page_size": ctx.opts.page_size,
            "walks": walk_row.to_json(),
            "pages": page_row.to_json(),
            "page_latency_ms": page_latency.to_json(),
            "pages_per_walk": if walks > 0 { page_count as f64 / walks as f64 } else { 0.0 },
            "items_per_walk": items.checked_div(walks).unwrap_or(0),
            "errors": paged_errors.to_json(),
        });
        errors.merge_prefixed(paged_errors, "paged ");
        paged = Some((walk_row, page_row, summary));
    }
    Lists {
        full,
        items_per_list,
        bytes_per_list,
        paged,
        errors,
    }
}

/// A `--list-history` client: rewrites its share of the listed ConfigMaps in turn, each PUT
/// with the resourceVersion of its last write (no conflicts by design), its data value new
/// random text each time (so a store that compresses history is not flattered).
struct HistoryWorker {
    ctx: Arc<Ctx>,
    conn: Conn,
    scope: crate::ctx::Scope,
    owned: Vec<(String, Option<String>)>,
    next: usize,
    n: u64,
    rng: u64,
}

impl Worker for HistoryWorker {
    async fn op(&mut self, _measuring: bool) -> Result<(), Failure> {
        if self.owned.is_empty() {
            return Ok(());
        }
        let i = self.next % self.owned.len();
        self.next = self.next.wrapping_add(1);
        self.n += 1;
        let (name, rv) = &mut self.owned[i];
        let path = self.scope.configmap(name);
        let current = match rv.take() {
            Some(rv) => rv,
            None => resource_version(&self.conn.call_ok(Method::GET, &path, None).await?)?,
        };
        let pad = random_text(self.ctx.opts.size as usize, &mut self.rng);
        let body = self
            .ctx
            .update_body_padded(&self.scope, name, "list", &current, self.n, &pad);
        let b = self.conn.call_ok(Method::PUT, &path, Some(body)).await?;
        *rv = Some(resource_version(&b)?);
        Ok(())
    }
}

/// Makes `--list-history` updates spread evenly over `names` (client k owns every
/// `--history-clients`-th name from k) and reports them as a row, with their failures.
async fn make_history(
    ctx: &Arc<Ctx>,
    scope: &crate::ctx::Scope,
    names: &[String],
) -> (Row, ErrorCounts) {
    let c = ctx.opts.history_clients as usize;
    crate::runner::note(&format!(
        "list: {} updates over the {} ConfigMaps ({c} clients)",
        ctx.opts.list_history,
        names.len()
    ));
    let workers = (0..c)
        .map(|id| HistoryWorker {
            ctx: ctx.clone(),
            conn: ctx.conn_at(id),
            scope: scope.clone(),
            owned: names
                .iter()
                .skip(id)
                .step_by(c)
                .map(|n| (n.clone(), None))
                .collect(),
            next: 0,
            n: 0,
            rng: 0x9e37_79b9_7f4a_7c15 ^ (id as u64 + 1),
        })
        .collect();
    let limits = Limits {
        warmup: Duration::ZERO,
        // Bounded by the count; the setup timeout bounds a server that stalls.
        duration: ctx.opts.setup_timeout,
        count: Some(ctx.opts.list_history),
    };
    let phase = drive("list history", progress(ctx), workers, limits).await;
    let row = Row {
        label: "history updates".into(),
        ops: phase.ops,
        seconds: phase.seconds,
        latency: phase.samples.summary(),
        errors: phase.errors.short(),
    };
    (row, phase.errors)
}

/// `after / before` of two optional latencies, rounded to 3 digits.
fn ratio(after: Option<f64>, before: Option<f64>) -> Option<f64> {
    match (after, before) {
        (Some(a), Some(b)) if b > 0.0 => Some((a / b * 1000.0).round() / 1000.0),
        _ => None,
    }
}

/// Full and paged lists of one namespace; with `--list-history`, again after that many
/// updates of the listed objects.
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
    let names: Vec<String> = (0..n).map(|i| ctx.name("l", i)).collect();
    let items: Vec<_> = names.iter().map(|m| (scope.clone(), m.clone())).collect();
    add_errors(
        &mut report,
        bulk_create(ctx, Arc::new(items), "list").await,
        "setup ",
    );

    let path = scope.configmaps();
    let fresh = measure(ctx, &path, "").await;
    report.ops = fresh.full.ops;
    report.seconds = fresh.full.seconds;
    report.latency = fresh.full.latency;
    report.errors.merge(fresh.errors.clone());
    if let Some(items) = fresh.items_per_list {
        report.set("items_per_list", items);
    }
    if let Some(b) = fresh.bytes_per_list {
        report.set("bytes_per_list", b);
    }
    if let Some((walk, page, summary)) = &fresh.paged {
        report.set("paged", summary.clone());
        report.rows.push(walk.clone());
        report.rows.push(page.clone());
    }

    if ctx.opts.list_history > 0 {
        let (history, history_errors) = make_history(ctx, &scope, &names).await;
        report.set("history_updates", history.to_json());
        report.rows.push(history.clone());
        if !ctx.opts.history_settle.is_zero() {
            tokio::time::sleep(ctx.opts.history_settle).await;
        }
        let after = measure(ctx, &path, " after history").await;
        report.set(
            "full_p50_ratio_after_history",
            ratio(after.full.latency.p50, fresh.full.latency.p50),
        );
        let page_p50 = |l: &Lists| l.paged.as_ref().and_then(|p| p.1.latency.p50);
        report.set(
            "page_p50_ratio_after_history",
            ratio(page_p50(&after), page_p50(&fresh)),
        );
        report.set("after_history", after.to_json());
        report.rows.push(after.full.clone());
        if let Some((walk, page, _)) = &after.paged {
            report.rows.push(walk.clone());
            report.rows.push(page.clone());
        }
        add_errors(&mut report, history_errors, "history ");
        add_errors(&mut report, after.errors, "after history ");
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
    fn ratios() {
        assert_eq!(ratio(Some(3.0), Some(2.0)), Some(1.5));
        assert_eq!(ratio(Some(1.0), Some(3.0)), Some(0.333));
        assert_eq!(ratio(Some(1.0), Some(0.0)), None);
        assert_eq!(ratio(None, Some(1.0)), None);
    }

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
