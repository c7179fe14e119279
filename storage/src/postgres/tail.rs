//! The log tailer of a [`super::PostgresStorage`]: follows `kplane_log` after the position
//! (the last revision this process published) and publishes what other processes on the
//! same database committed, through the one publish path ([`super::publish`]).
//!
//! [`catch_up`] reads the counter and the compaction point from `kplane_meta` and, in one
//! REPEATABLE READ snapshot with them, the log rows from the position up to the counter, a
//! page at a time. In that snapshot every revision up to the counter is committed and
//! visible (revisions commit in order, under the counter row's lock), and no row above the
//! snapshot's compaction point is deleted yet (compaction moves the point before deleting,
//! and deletions committed after the snapshot are not seen), so the pages have no holes.
//! When the position is below the compaction point, the rows it needs are gone: the
//! store resyncs ([`super::publish::resync`]). The compaction point read also moves this
//! process's own (another replica's compactor may have moved it). A counter below the
//! position means the database lost revisions this process published (a failover to a
//! standby that had not received them): the tailer raises the counter past the position
//! with one gap row ([`super::lost`], [`super::transaction::settle`]); gap rows are published
//! like events. Before publishing the rows after the position, each catch-up checks that
//! the row at the position is the one this process published there: if another replica
//! wrote over lost revisions before this one noticed, it is not, and the revisions from
//! where they differ are recorded as lost too ([`super::transaction::realign`]).
//!
//! When to look: writers send `NOTIFY kplane_log` (payload: the last revision) in their
//! commit transaction, which PostgreSQL delivers at commit; a dedicated connection
//! `LISTEN`s and wakes the tailer for revisions above the position. The notification is
//! only a wake-up: the table is the truth, and the tailer also looks every
//! `tail_interval`, so a lost notification or a broken LISTEN connection (reconnected with
//! backoff) delays other replicas' writes by at most one interval plus a read.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::GenericClient;
use futures::StreamExt;
use tokio::sync::{watch, Notify};
use tokio_postgres::{AsyncMessage, IsolationLevel, NoTls};

use super::counter::CHANNEL;
use super::errors::pg_err;
use super::lost;
use super::publish::{self, Outcome};
use super::read;
use super::schema::to_rev;
use super::shared::Shared;
use super::transaction;
use crate::{Clusters, Error, Prefix, Result, Revision};

/// Events the tailer publishes at once (a page of the log). Watchers receive a page in one
/// dispatch, as they receive a commit group from the writer.
pub(crate) const TAIL_PAGE: usize = 512;

/// Pages read in one snapshot before a fresh one is taken (bounds how long a catch-up
/// holds a snapshot open).
const PAGES_PER_SNAPSHOT: usize = 64;

/// The longest wait between two attempts to open the LISTEN connection.
const MAX_LISTEN_BACKOFF: Duration = Duration::from_secs(5);

fn all() -> Prefix {
    Prefix {
        cluster: Clusters::All,
        resource: None,
        namespace: None,
    }
}

/// Publishes every revision committed in the database above the position (or resyncs when
/// the position fell below the compaction point). Safe to run concurrently with itself and
/// with the writer: the publish path skips what is already published.
pub(crate) async fn catch_up(shared: &Shared) -> Result<()> {
    let started = shared.clock_millis();
    read_up(shared).await?;
    // Everything committed before `started` is published now.
    shared.confirmed_at.fetch_max(started, Ordering::AcqRel);
    Ok(())
}

async fn read_up(shared: &Shared) -> Result<()> {
    let mut client = shared.client().await?;
    // Read before the counter: everything published by then is committed, so a counter
    // below it means the database lost revisions (a failover), not a race.
    let seen = shared.current_revision();
    // The common case costs one statement: nothing new.
    let (head, compacted) = meta(&client).await?;
    if head < seen {
        // Decided again under the counter row's lock.
        drop(client);
        return transaction::settle(shared).await;
    }
    shared.compacted.fetch_max(compacted, Ordering::AcqRel);
    if head <= shared.current_revision() {
        return Ok(());
    }
    let mut verified = false;
    loop {
        let tx = client
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(pg_err)?;
        let (head, compacted) = meta(&tx).await?;
        shared.compacted.fetch_max(compacted, Ordering::AcqRel);
        let mut pos = shared.current_revision();
        if pos < compacted {
            tx.rollback().await.map_err(pg_err)?;
            publish::resync(shared, head, compacted);
            return Ok(());
        }
        if !verified && pos < head {
            // Once per catch-up: the rows after the position continue what was published.
            verified = true;
            if !continues(shared, &tx, pos, compacted).await? {
                tx.rollback().await.map_err(pg_err)?;
                transaction::realign(shared, pos).await?;
                continue;
            }
        }
        let mut pages = 0;
        while pos < head && pages < PAGES_PER_SNAPSHOT {
            let page = read::read_log(&tx, &all(), pos, head, TAIL_PAGE).await?;
            if page.through <= pos {
                return Err(Error::Corrupt(format!(
                    "the log holds nothing after revision {pos}, below the counter {head}"
                )));
            }
            match publish::publish(shared, page.entries, pos, page.through)? {
                Outcome::Done => {}
                // Cannot happen (the position never moves back), but reading on from the
                // position is right either way.
                Outcome::Deferred { .. } => {}
            }
            pos = shared.current_revision().max(page.through);
            pages += 1;
        }
        tx.commit().await.map_err(pg_err)?;
        if pos >= head {
            return Ok(());
        }
    }
}

/// Publishes the revisions up to `upto` that this process has not published, read with
/// `client` in READ COMMITTED statements: the writer's own connection right after its
/// commit, where `upto` is the revision its group started from (committed before the
/// group took the counter's lock, so every row up to it is visible). Usually one
/// statement: the writes other processes committed since this one last published. Fails
/// without publishing anything further when the rows are gone (the position fell below
/// the compaction point; [`catch_up`] resyncs).
pub(crate) async fn catch_up_to(
    shared: &Shared,
    client: &impl GenericClient,
    upto: Revision,
) -> Result<()> {
    let mut verified = false;
    loop {
        let pos = shared.current_revision();
        if pos >= upto {
            return Ok(());
        }
        let compacted = shared.compacted_revision();
        if pos < compacted {
            return Err(Error::Compacted {
                requested: pos,
                compacted,
            });
        }
        if !verified {
            verified = true;
            if !continues(shared, client, pos, compacted).await? {
                // [`catch_up`] records the difference.
                return Err(Error::Corrupt(format!(
                    "the log's revision {pos} is not the one this process published"
                )));
            }
        }
        let page = read::read_log(client, &all(), pos, upto, TAIL_PAGE).await?;
        if page.through <= pos {
            return Err(Error::Corrupt(format!(
                "the log holds nothing after revision {pos}, below {upto}"
            )));
        }
        publish::publish(shared, page.entries, pos, page.through)?;
    }
}

/// Whether the log's row at the position `pos` is what this process published there (or
/// cannot be checked: compacted, or not remembered). It is not when the database lost
/// revisions this process published and another replica, which had not seen them, wrote
/// over them before this one noticed ([`super::lost`]).
async fn continues(
    shared: &Shared,
    client: &impl GenericClient,
    pos: Revision,
    compacted: Revision,
) -> Result<bool> {
    match publish::published_at(shared, pos) {
        Some(fp) if pos > compacted => lost::holds(client, pos, fp).await,
        _ => Ok(true),
    }
}

/// The counter and the compaction point.
async fn meta(client: &impl GenericClient) -> Result<(Revision, Revision)> {
    let stmt = client
        .prepare_cached("SELECT revision, compacted FROM kplane_meta WHERE id = 1")
        .await
        .map_err(pg_err)?;
    let row = client.query_one(&stmt, &[]).await.map_err(pg_err)?;
    Ok((to_rev(row.get(0))?, to_rev(row.get(1))?))
}

/// The tailer task: catches up whenever woken (a notification, the writer) and every
/// `interval`, until `stop` changes or its sender is gone.
pub(crate) async fn run(
    shared: Arc<Shared>,
    interval: Duration,
    wake: Arc<Notify>,
    mut stop: watch::Receiver<bool>,
) {
    // The store opened at the database's revision: the first look is one interval later.
    let interval = interval.max(Duration::from_millis(1));
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + interval, interval);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut failing = false;
    loop {
        tokio::select! {
            _ = tick.tick() => {}
            () = wake.notified() => {}
            _ = stop.changed() => return,
        }
        if *stop.borrow() {
            return;
        }
        match catch_up(&shared).await {
            Ok(()) => {
                if failing {
                    tracing::info!("postgres storage: the log tailer reads the log again");
                }
                failing = false;
            }
            // Reported once per outage, not once per interval.
            Err(e) if !failing => {
                failing = true;
                tracing::warn!(error = %e, "postgres storage: reading the log failed; retrying every interval");
            }
            Err(e) => tracing::debug!(error = %e, "postgres storage: reading the log failed"),
        }
    }
}

/// The LISTEN task: holds one connection listening on [`CHANNEL`] and wakes the tailer
/// for every notification of a revision above the position; reconnects with backoff
/// (waking the tailer each time, since notifications were lost meanwhile).
pub(crate) async fn listen(
    shared: Arc<Shared>,
    config: tokio_postgres::Config,
    wake: Arc<Notify>,
    mut stop: watch::Receiver<bool>,
) {
    let mut backoff = Duration::from_millis(100);
    // Whether the current outage was reported (once, not at every attempt).
    let mut reported = false;
    loop {
        if *stop.borrow() {
            return;
        }
        match listen_once(&shared, &config, &wake, &mut stop).await {
            Ok(()) => return,
            Err((connected, e)) => {
                if connected {
                    backoff = Duration::from_millis(100);
                    reported = false;
                }
                if reported {
                    tracing::debug!(error = %e, "postgres storage: the LISTEN connection failed; reconnecting");
                } else {
                    reported = true;
                    tracing::warn!(error = %e, "postgres storage: the LISTEN connection failed; other replicas' writes arrive within the tail interval until it is back");
                }
            }
        }
        wake.notify_one();
        tokio::select! {
            () = tokio::time::sleep(backoff) => {}
            _ = stop.changed() => return,
        }
        backoff = (backoff * 2).min(MAX_LISTEN_BACKOFF);
    }
}

/// One LISTEN connection, until it breaks (`Err`, with whether it had been listening) or
/// `stop` changes (`Ok`).
async fn listen_once(
    shared: &Shared,
    config: &tokio_postgres::Config,
    wake: &Notify,
    stop: &mut watch::Receiver<bool>,
) -> std::result::Result<(), (bool, Error)> {
    let (client, mut conn) = config
        .connect(NoTls)
        .await
        .map_err(|e| (false, pg_err(e)))?;
    let mut messages = futures::stream::poll_fn(move |cx| conn.poll_message(cx));
    // Drives the connection: the LISTEN below needs it, and notifications arrive on it.
    let driver = async {
        while let Some(m) = messages.next().await {
            match m {
                Ok(AsyncMessage::Notification(n)) => {
                    let rev = n.payload().parse::<Revision>().unwrap_or(Revision::MAX);
                    if rev > shared.current_revision() {
                        wake.notify_one();
                    }
                }
                Ok(_) => {}
                Err(e) => return pg_err(e),
            }
        }
        Error::Timeout("the LISTEN connection closed".into())
    };
    tokio::pin!(driver);
    let statement = format!("LISTEN {CHANNEL}");
    let listening = client.batch_execute(&statement);
    tokio::select! {
        e = &mut driver => return Err((false, e)),
        r = listening => r.map_err(|e| (false, pg_err(e)))?,
    }
    // Whatever committed before the LISTEN took effect was not notified.
    wake.notify_one();
    tokio::select! {
        e = &mut driver => Err((true, e)),
        _ = stop.changed() => Ok(()),
    }
}
