//! The read paths of [`super::PostgresStorage`]: one key, lists and counts of a prefix at
//! a revision, the logical clusters, the event log the watch hub replays, and scans.
//!
//! The state at revision `R` is the union of two disjoint sets, read by one statement (so
//! from one database snapshot, in which every write's object and log rows are both visible
//! or both not):
//! - the rows of `kplane_objects` with `mod_revision <= R` (keys unchanged since `R`);
//! - for every key changed after `R`, the previous version carried by its first log row
//!   after `R`, when it had one (it existed at `R`).
//!
//! At or near the latest revision the second set is the log's short tail, found through
//! the log's primary key; for an older snapshot it is bounded by the changes since then,
//! which compaction keeps within the event window.

use std::sync::Arc;

use bytes::Bytes;
use deadpool_postgres::GenericClient;

use super::errors::pg_err;
use super::lost::{Entry, Gap, GAP_EVENT};
use super::publish;
use super::schema::{from_rev, to_rev};
use super::shared::Shared;
use super::sql::{after_cond, key_at, kv, prefix_cond, Params, KEY_COLS};
use crate::event_log::{EventLog, EventPage};
use crate::range::RangeScan;
use crate::{
    Clusters, Error, Event, EventType, Filter, Key, KeyValue, ListOptions, ListResult, Prefix,
    Result, Revision,
};

/// Rows a list reads per statement when it has no limit (or a larger one).
pub(crate) const LIST_CHUNK: usize = 1000;

/// Snapshots at most this many revisions behind the current one read the changed keys
/// from the log's tail by revision; older ones through the log's per-key index.
pub(crate) const TAIL_SCAN_MAX_LAG: Revision = 4096;

/// Log rows [`read_log`] examines per page, matching or not.
pub(crate) const LOG_EXAMINE: i64 = 4096;

/// One key at the latest revision: from the cache, or read with the revision of the same
/// statement's snapshot and remembered (see [`super::publish::remember`]).
pub(crate) async fn get(shared: &Shared, key: &Key) -> Result<Option<KeyValue>> {
    if shared.cache_trusted() {
        if let Some(hit) = publish::cached(shared, key) {
            return Ok(hit);
        }
    }
    let (value, as_of) = get_at(shared, key).await?;
    publish::remember(shared, key, value.clone(), as_of);
    Ok(value)
}

/// Reads one key and the database's revision in one statement (one snapshot): the key's
/// state as of that revision.
async fn get_at(shared: &Shared, key: &Key) -> Result<(Option<KeyValue>, Revision)> {
    let client = shared.client().await?;
    let stmt = client
        .prepare_cached(
            "SELECT m.revision, o.value, o.create_revision, o.mod_revision \
               FROM kplane_meta m LEFT JOIN kplane_objects o \
                 ON o.cluster = $1 AND o.resource = $2 AND o.namespace = $3 AND o.name = $4 \
              WHERE m.id = 1",
        )
        .await
        .map_err(pg_err)?;
    let row = client
        .query_one(
            &stmt,
            &[
                &key.cluster.as_bytes(),
                &key.resource.as_bytes(),
                &key.namespace.as_bytes(),
                &key.name.as_bytes(),
            ],
        )
        .await
        .map_err(pg_err)?;
    let as_of = to_rev(row.try_get(0).map_err(pg_err)?)?;
    let value: Option<Vec<u8>> = row.try_get(1).map_err(pg_err)?;
    let Some(value) = value else {
        return Ok((None, as_of));
    };
    let kv = KeyValue {
        key: key.clone(),
        value: Bytes::from(value),
        create_revision: to_rev(row.try_get(2).map_err(pg_err)?)?,
        mod_revision: to_rev(row.try_get(3).map_err(pg_err)?)?,
    };
    Ok((Some(kv), as_of))
}

/// At most `limit` keys under `prefix` after `after`, as of revision `rev`, in key order.
async fn page(
    client: &impl GenericClient,
    prefix: &Prefix,
    rev: Revision,
    after: Option<&Key>,
    limit: usize,
    lag: Revision,
) -> Result<Vec<KeyValue>> {
    let mut p = Params::default();
    let r = p.add(from_rev(rev)?);
    let oc = prefix_cond(&mut p, "o", prefix);
    let oa = after_cond(&mut p, "o", after);
    let lc = prefix_cond(&mut p, "l", prefix);
    let la = after_cond(&mut p, "l", after);
    let lim = p.add(i64::try_from(limit).unwrap_or(i64::MAX));
    // Each arm stops after `limit` rows in key order (an index range from the continue
    // key), so a page costs its size, not the rest of the prefix.
    // The keys changed after `rev`: near the latest revision, the log's tail by revision
    // (materialized, so the planner cannot trade it for a walk of the prefix's history);
    // further back, the prefix's log rows by key, which the planner picks by itself. Gap
    // rows (lost revisions) changed no key.
    let (with, source) = if lag <= TAIL_SCAN_MAX_LAG {
        (
            format!("WITH tail AS MATERIALIZED (SELECT * FROM kplane_log WHERE revision > {r})"),
            format!("tail l WHERE l.event <> {GAP_EVENT}"),
        )
    } else {
        (
            String::new(),
            format!("kplane_log l WHERE l.revision > {r} AND l.event <> {GAP_EVENT}"),
        )
    };
    let changed = format!(
        "{with} SELECT DISTINCT ON (l.cluster, l.resource, l.namespace, l.name) \
                l.cluster, l.resource, l.namespace, l.name, l.prev_value, \
                l.prev_create_revision, l.prev_mod_revision \
           FROM {source} AND {lc} AND {la} \
          ORDER BY l.cluster, l.resource, l.namespace, l.name, l.revision"
    );
    let sql = format!(
        "SELECT {KEY_COLS}, value, create_revision, mod_revision FROM ( \
           (SELECT o.cluster, o.resource, o.namespace, o.name, o.value, o.create_revision, \
                   o.mod_revision \
              FROM kplane_objects o WHERE {oc} AND {oa} AND o.mod_revision <= {r} \
             ORDER BY o.cluster, o.resource, o.namespace, o.name LIMIT {lim}) \
           UNION ALL \
           (SELECT f.cluster, f.resource, f.namespace, f.name, f.prev_value, \
                   f.prev_create_revision, f.prev_mod_revision FROM ({changed}) f \
             WHERE f.prev_value IS NOT NULL \
             ORDER BY f.cluster, f.resource, f.namespace, f.name LIMIT {lim}) \
         ) s ORDER BY {KEY_COLS} LIMIT {lim}"
    );
    let stmt = client.prepare_cached(&sql).await.map_err(pg_err)?;
    let rows = client.query(&stmt, &p.refs()).await.map_err(pg_err)?;
    rows.iter().map(kv).collect()
}

pub(crate) async fn list(
    shared: &Shared,
    prefix: &Prefix,
    opts: &ListOptions,
    filter: Option<Filter<'_>>,
) -> Result<ListResult> {
    let rev = shared.read_revision(opts.at_revision)?;
    let client = shared.client().await?;
    let chunk = opts
        .limit
        .map_or(LIST_CHUNK, |l| l.saturating_add(1).min(LIST_CHUNK));
    let mut items = Vec::new();
    let mut after = opts.start_after.clone();
    let mut more = false;
    'pages: loop {
        let lag = shared.current_revision().saturating_sub(rev);
        let rows = page(&client, prefix, rev, after.as_ref(), chunk, lag).await?;
        let n = rows.len();
        for kv in rows {
            if opts.limit.is_some_and(|l| items.len() >= l) {
                more = true;
                break 'pages;
            }
            after = Some(kv.key.clone());
            if filter.is_none_or(|f| f(&kv)) {
                items.push(kv);
            }
        }
        if n < chunk {
            break;
        }
    }
    // Compaction publishes its point before deleting: if it is still at or below `rev`,
    // every page read the exact state.
    shared.check_not_compacted(rev)?;
    Ok(ListResult {
        items,
        revision: rev,
        more,
    })
}

/// The keys under `prefix` after `after` that exist at `rev`, counted in the database as
/// [`page`] reads them: objects not changed since `rev`, and keys changed since whose first
/// later log row says they existed at `rev`.
pub(crate) async fn count_after(
    shared: &Shared,
    prefix: &Prefix,
    after: &Key,
    rev: Revision,
) -> Result<u64> {
    let rev = shared.read_revision(Some(rev))?;
    let client = shared.client().await?;
    let mut p = Params::default();
    let r = p.add(from_rev(rev)?);
    let oc = prefix_cond(&mut p, "o", prefix);
    let oa = after_cond(&mut p, "o", Some(after));
    let lc = prefix_cond(&mut p, "l", prefix);
    let la = after_cond(&mut p, "l", Some(after));
    // The keys changed after `rev` are found as `page` finds them (the log's tail near the
    // latest revision, the prefix's log rows further back).
    let lag = shared.current_revision().saturating_sub(rev);
    let (with, source) = if lag <= TAIL_SCAN_MAX_LAG {
        (
            format!("WITH tail AS MATERIALIZED (SELECT * FROM kplane_log WHERE revision > {r})"),
            format!("tail l WHERE l.event <> {GAP_EVENT}"),
        )
    } else {
        (
            String::new(),
            format!("kplane_log l WHERE l.revision > {r} AND l.event <> {GAP_EVENT}"),
        )
    };
    let sql = format!(
        "{with} SELECT (SELECT count(*) FROM kplane_objects o \
                  WHERE {oc} AND {oa} AND o.mod_revision <= {r}) \
              + (SELECT count(*) FROM ( \
                  SELECT DISTINCT ON (l.cluster, l.resource, l.namespace, l.name) l.prev_value \
                    FROM {source} AND {lc} AND {la} \
                   ORDER BY l.cluster, l.resource, l.namespace, l.name, l.revision) f \
                 WHERE f.prev_value IS NOT NULL)"
    );
    let stmt = client.prepare_cached(&sql).await.map_err(pg_err)?;
    let n: i64 = client
        .query_one(&stmt, &p.refs())
        .await
        .map_err(pg_err)?
        .get(0);
    shared.check_not_compacted(rev)?;
    Ok(u64::try_from(n).unwrap_or(0))
}

pub(crate) async fn count(shared: &Shared, prefix: &Prefix) -> Result<u64> {
    let client = shared.client().await?;
    let mut p = Params::default();
    let cond = prefix_cond(&mut p, "o", prefix);
    let sql = format!("SELECT count(*) FROM kplane_objects o WHERE {cond}");
    let stmt = client.prepare_cached(&sql).await.map_err(pg_err)?;
    let n: i64 = client
        .query_one(&stmt, &p.refs())
        .await
        .map_err(pg_err)?
        .get(0);
    Ok(u64::try_from(n).unwrap_or(0))
}

/// The clusters holding keys: one index probe per cluster (a loose index scan).
pub(crate) async fn clusters(
    shared: &Shared,
    start_after: Option<&str>,
    limit: usize,
) -> Result<Vec<String>> {
    let client = shared.client().await?;
    let op = if start_after.is_some() { ">" } else { ">=" };
    let sql = format!(
        "WITH RECURSIVE c AS ( \
           (SELECT cluster FROM kplane_objects WHERE cluster {op} $1 ORDER BY cluster LIMIT 1) \
           UNION ALL \
           SELECT (SELECT o.cluster FROM kplane_objects o WHERE o.cluster > c.cluster \
                   ORDER BY o.cluster LIMIT 1) \
             FROM c WHERE c.cluster IS NOT NULL \
         ) SELECT cluster FROM c WHERE cluster IS NOT NULL LIMIT $2"
    );
    let stmt = client.prepare_cached(&sql).await.map_err(pg_err)?;
    let from = start_after.unwrap_or("").as_bytes();
    let limit = i64::try_from(limit.max(1)).unwrap_or(i64::MAX);
    let rows = client
        .query(&stmt, &[&from, &limit])
        .await
        .map_err(pg_err)?;
    rows.iter()
        .map(|r| {
            String::from_utf8(r.get::<_, Vec<u8>>(0))
                .map_err(|_| Error::Corrupt("a cluster name is not UTF-8".into()))
        })
        .collect()
}

fn event_type(code: i16) -> Result<EventType> {
    match code {
        0 => Ok(EventType::Added),
        1 => Ok(EventType::Modified),
        2 => Ok(EventType::Deleted),
        other => Err(Error::Corrupt(format!(
            "unknown event type {other} in the log"
        ))),
    }
}

/// A page of the log: the events under a prefix and every gap row, with revisions in
/// `(after, through]`, in revision order.
#[derive(Debug, Default)]
pub(crate) struct LogPage {
    pub(crate) entries: Vec<Entry>,
    pub(crate) through: Revision,
}

/// The log rows under `prefix` and the gap rows with revisions in `(after, upto]`, at
/// most `max_events` entries, after examining at most [`LOG_EXAMINE`] rows (see
/// [`EventLog::read`]).
pub(crate) async fn read_log(
    client: &impl GenericClient,
    prefix: &Prefix,
    after: Revision,
    upto: Revision,
    max_events: usize,
) -> Result<LogPage> {
    if after >= upto {
        return Ok(LogPage {
            entries: Vec::new(),
            through: upto,
        });
    }
    // Every row matches an unrestricted prefix (the tailer's): no more rows than events.
    let everything = matches!(prefix.cluster, Clusters::All)
        && prefix.resource.is_none()
        && prefix.namespace.is_none();
    let examine = if everything {
        LOG_EXAMINE.min(i64::try_from(max_events.max(1)).unwrap_or(i64::MAX))
    } else {
        LOG_EXAMINE
    };
    let mut p = Params::default();
    let a = p.add(from_rev(after)?);
    let u = p.add(from_rev(upto)?);
    let lim = p.add(examine);
    let cond = prefix_cond(&mut p, "l", prefix);
    // Values of rows outside the prefix are not sent. A gap row is in no prefix.
    let sql = format!(
        "SELECT w.revision, w.hit, w.event, w.cluster, w.resource, w.namespace, w.name, \
                CASE WHEN w.hit THEN w.value END, w.create_revision, \
                CASE WHEN w.hit THEN w.prev_value END \
           FROM (SELECT l.*, (l.event <> {GAP_EVENT} AND {cond}) AS hit FROM kplane_log l \
                  WHERE l.revision > {a} AND l.revision <= {u} \
                  ORDER BY l.revision LIMIT {lim}) w \
          ORDER BY w.revision"
    );
    let stmt = client.prepare_cached(&sql).await.map_err(pg_err)?;
    let rows = client.query(&stmt, &p.refs()).await.map_err(pg_err)?;
    let examined = rows.len();
    let mut entries = Vec::new();
    let mut through = after;
    for row in &rows {
        let rev = to_rev(row.try_get(0).map_err(pg_err)?)?;
        through = rev;
        if row.try_get::<_, i16>(2).map_err(pg_err)? == GAP_EVENT {
            entries.push(Entry::Gap(Gap {
                from: to_rev(row.try_get(8).map_err(pg_err)?)?,
                at: rev,
            }));
            if entries.len() >= max_events {
                return Ok(LogPage { entries, through });
            }
            continue;
        }
        if !row.try_get::<_, bool>(1).map_err(pg_err)? {
            continue;
        }
        let value: Vec<u8> = row.try_get(7).map_err(pg_err)?;
        let prev: Option<Vec<u8>> = row.try_get(9).map_err(pg_err)?;
        entries.push(Entry::Event(Event {
            event_type: event_type(row.try_get(2).map_err(pg_err)?)?,
            kv: KeyValue {
                key: key_at(row, 3)?,
                value: Bytes::from(value),
                create_revision: to_rev(row.try_get(8).map_err(pg_err)?)?,
                mod_revision: rev,
            },
            prev: prev.map(Bytes::from),
        }));
        if entries.len() >= max_events {
            return Ok(LogPage { entries, through });
        }
    }
    if i64::try_from(examined).unwrap_or(i64::MAX) < examine {
        through = upto;
    }
    Ok(LogPage { entries, through })
}

/// The event log the hub replays from: `kplane_log`.
pub(crate) struct PgEventLog {
    pub(crate) shared: Arc<Shared>,
}

#[async_trait::async_trait]
impl EventLog for PgEventLog {
    async fn read(
        &self,
        prefix: &Prefix,
        after: Revision,
        upto: Revision,
        max_events: usize,
    ) -> Result<EventPage> {
        let client = self.shared.client().await?;
        let page = read_log(&client, prefix, after, upto, max_events.max(1)).await?;
        // Gap rows are no events: a replay passes over them to the next change.
        let events = page
            .entries
            .into_iter()
            .filter_map(|e| match e {
                Entry::Event(e) => Some(e),
                Entry::Gap(_) => None,
            })
            .collect();
        Ok(EventPage {
            events,
            through: page.through,
        })
    }

    fn compacted_revision(&self) -> Revision {
        self.shared.compacted_revision()
    }
}

/// A scan of a prefix at one revision: lists at that revision, page after page.
pub(crate) struct PgScan {
    pub(crate) shared: Arc<Shared>,
    pub(crate) prefix: Prefix,
    pub(crate) rev: Revision,
    pub(crate) page_size: usize,
    pub(crate) after: Option<Key>,
    pub(crate) done: bool,
    /// Set once a page failed because the revision was compacted: every later call fails.
    pub(crate) compacted: bool,
}

#[async_trait::async_trait]
impl RangeScan for PgScan {
    fn revision(&self) -> Revision {
        self.rev
    }

    async fn next_page(&mut self) -> Result<Option<Vec<KeyValue>>> {
        if self.compacted || self.shared.check_not_compacted(self.rev).is_err() {
            self.compacted = true;
            return Err(Error::Compacted {
                requested: self.rev,
                compacted: self.shared.compacted_revision(),
            });
        }
        if self.done {
            return Ok(None);
        }
        let opts = ListOptions {
            at_revision: Some(self.rev),
            start_after: self.after.clone(),
            limit: Some(self.page_size),
        };
        let r = match list(&self.shared, &self.prefix, &opts, None).await {
            Err(e @ Error::Compacted { .. }) => {
                self.compacted = true;
                return Err(e);
            }
            other => other?,
        };
        self.done = !r.more;
        match r.items.last() {
            None => {
                self.done = true;
                Ok(None)
            }
            Some(last) => {
                self.after = Some(last.key.clone());
                Ok(Some(r.items))
            }
        }
    }
}
