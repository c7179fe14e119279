//! Compaction of [`super::PostgresStorage`]: on a schedule, moves the compaction point to
//! the last revision committed more than one event window ago, publishes it (in
//! `kplane_meta` and to readers) and only then deletes the log rows at or below it in
//! bounded batches, each its own short transaction, so no statement holds locks or
//! creates dead rows in bulk and autovacuum reclaims the space as it goes. Every round also
//! refreshes the size figures [`crate::Storage::stats`] reports.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::GenericClient;

use super::errors::pg_err;
use super::schema::{from_rev, to_rev};
use super::shared::Shared;
use crate::Result;

/// Log rows deleted per statement.
pub(crate) const DELETE_BATCH: i64 = 5000;

/// Runs until `stop` changes or its sender is gone.
pub(crate) async fn run(
    shared: Arc<Shared>,
    window: Duration,
    interval: Duration,
    mut stop: tokio::sync::watch::Receiver<bool>,
) {
    let mut tick = tokio::time::interval(interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            _ = stop.changed() => return,
        }
        if *stop.borrow() {
            return;
        }
        if let Err(e) = round(&shared, window).await {
            tracing::warn!(error = %e, "postgres storage: compaction round failed");
        }
        if let Err(e) = refresh_sizes(&shared).await {
            tracing::debug!(error = %e, "postgres storage: reading table sizes failed");
        }
    }
}

/// One round: find the new compaction point, publish it, delete what lies at or below it.
pub(crate) async fn round(shared: &Shared, window: Duration) -> Result<()> {
    let client = shared.client().await?;
    let stmt = client
        .prepare_cached(
            "SELECT revision FROM kplane_commits \
             WHERE committed_at < now() - make_interval(secs => $1) \
             ORDER BY committed_at DESC LIMIT 1",
        )
        .await
        .map_err(pg_err)?;
    let aged = client
        .query_opt(&stmt, &[&window.as_secs_f64()])
        .await
        .map_err(pg_err)?
        .map(|r| to_rev(r.get(0)))
        .transpose()?;
    // Deletes only up to the compaction point the database records, which every process
    // follows: this process's own point may be higher (read from a primary that a
    // failover replaced), and rows other processes may still read lie below it.
    let recorded = match aged.filter(|t| *t > shared.compacted_revision()) {
        Some(target) => {
            let stmt = client
                .prepare_cached(
                    "UPDATE kplane_meta SET compacted = GREATEST(compacted, $1) WHERE id = 1 \
                     RETURNING compacted",
                )
                .await
                .map_err(pg_err)?;
            client
                .query_one(&stmt, &[&from_rev(target)?])
                .await
                .map_err(pg_err)?
                .get(0)
        }
        None => {
            let stmt = client
                .prepare_cached("SELECT compacted FROM kplane_meta WHERE id = 1")
                .await
                .map_err(pg_err)?;
            client.query_one(&stmt, &[]).await.map_err(pg_err)?.get(0)
        }
    };
    let target = to_rev(recorded)?;
    // Published before anything is deleted: readers re-check it after reading.
    shared.compacted.fetch_max(target, Ordering::AcqRel);
    shared.lost.prune(shared.compacted_revision());
    shared.compaction.target.store(target, Ordering::Relaxed);
    let upto = from_rev(target)?;
    for table in ["kplane_log", "kplane_commits"] {
        let stmt = client
            .prepare_cached(&format!(
                "WITH gone AS (DELETE FROM {table} WHERE revision IN \
                   (SELECT revision FROM {table} WHERE revision <= $1 ORDER BY revision LIMIT $2) \
                   RETURNING revision) \
                 SELECT count(*), max(revision) FROM gone"
            ))
            .await
            .map_err(pg_err)?;
        loop {
            let row = client
                .query_one(&stmt, &[&upto, &DELETE_BATCH])
                .await
                .map_err(pg_err)?;
            let n: i64 = row.get(0);
            if table == "kplane_log" {
                if let Some(done) = row.get::<_, Option<i64>>(1) {
                    shared
                        .compaction
                        .done
                        .store(to_rev(done)?, Ordering::Relaxed);
                }
            }
            if n < DELETE_BATCH {
                break;
            }
        }
    }
    shared.compaction.done.store(target, Ordering::Relaxed);
    Ok(())
}

/// Reads the tables' sizes on disk and the planner's count of log rows.
async fn refresh_sizes(shared: &Shared) -> Result<()> {
    let client = shared.client().await?;
    let stmt = client
        .prepare_cached(
            "SELECT pg_total_relation_size('kplane_objects') \
                  + pg_total_relation_size('kplane_meta'), \
                    pg_total_relation_size('kplane_log') \
                  + pg_total_relation_size('kplane_commits'), \
                    (SELECT reltuples::bigint FROM pg_class WHERE oid = 'kplane_log'::regclass)",
        )
        .await
        .map_err(pg_err)?;
    let row = client.query_one(&stmt, &[]).await.map_err(pg_err)?;
    let latest: i64 = row.get(0);
    let log: i64 = row.get(1);
    let rows: Option<i64> = row.get(2);
    let s = &shared.sizes;
    s.latest_disk
        .store(u64::try_from(latest).unwrap_or(0), Ordering::Relaxed);
    s.log_disk
        .store(u64::try_from(log).unwrap_or(0), Ordering::Relaxed);
    s.history_rows.store(
        u64::try_from(rows.unwrap_or(0)).unwrap_or(0),
        Ordering::Relaxed,
    );
    Ok(())
}
