//! Writing transactions under the revision counter row's lock: [`lock_revision`] opens
//! one (raising a counter found below the position with a gap row, [`super::lost`]),
//! [`commit`] ends it within the statement timeout, and [`settle`] and [`realign`] are the
//! log tailer's own such transactions, which only raise or realign the counter.

use std::sync::atomic::Ordering;

use deadpool_postgres::Transaction;

use super::errors::pg_err;
use super::lost::{self, Entry, Gap};
use super::publish;
use super::schema::to_rev;
use super::shared::Shared;
use crate::{Error, Result, Revision};

/// What [`lock_revision`] found under the counter row's lock.
pub(crate) struct Locked {
    /// The counter as the transaction found it.
    pub(crate) counter: Revision,
    /// The revision the transaction's own revisions follow: the counter, or the gap row's
    /// after a raise.
    pub(crate) base: Revision,
    /// The gap row written in this transaction, if the database was behind the position.
    pub(crate) gap: Option<Gap>,
    /// The database's compaction point.
    pub(crate) compacted: Revision,
}

/// Opens the group's transaction: takes the revision lock and returns the revision the
/// database is at (and follows its compaction point). Nothing is read from the log under
/// the lock: revisions this process has not published yet (other replicas' writes, a
/// commit whose acknowledgement was lost) are published after the commit (`publish_group`
/// in [`super::writer`]), so the lock every writer of the database waits for is held for
/// the group's own statements only. A counter below the position (the database lost
/// revisions this process published) is raised past it in the same transaction
/// ([`lost::raise`]).
pub(crate) async fn lock_revision(shared: &Shared, tx: &Transaction<'_>) -> Result<Locked> {
    let stmt = tx
        .prepare_cached("SELECT revision, compacted FROM kplane_meta WHERE id = 1 FOR UPDATE")
        .await
        .map_err(pg_err)?;
    // Read before the counter: everything published by then is committed, so a counter
    // below it means the database lost revisions, not a race.
    let known = shared.current.load(Ordering::Acquire);
    let row = tx.query_one(&stmt, &[]).await.map_err(pg_err)?;
    let counter = to_rev(row.get(0))?;
    let compacted = to_rev(row.get(1))?;
    shared.compacted.fetch_max(compacted, Ordering::AcqRel);
    if counter >= known {
        return Ok(Locked {
            counter,
            base: counter,
            gap: None,
            compacted,
        });
    }
    // The lock is held: `counter` is the database's last word. Past everything this
    // process published, including what it published since `known`.
    let position = shared.current_revision().max(known);
    let recent = publish::recent(shared);
    let gap = lost::raise(tx, counter, position, compacted, &recent).await?;
    Ok(Locked {
        counter,
        base: gap.at,
        gap: Some(gap),
        compacted,
    })
}

/// A transaction that only takes the revision lock, to raise the counter if it is below
/// the position (the tailer found it so); commits and publishes the gap row.
pub(crate) async fn settle(shared: &Shared) -> Result<()> {
    let mut client = shared.client().await?;
    let tx = client.transaction().await.map_err(pg_err)?;
    let locked = lock_revision(shared, &tx).await?;
    let Some(gap) = locked.gap else {
        tx.rollback().await.map_err(pg_err)?;
        return Ok(());
    };
    if let Err(e) = commit(shared, tx).await {
        // Perhaps mid-commit: the connection must not go back to the pool.
        drop(deadpool_postgres::Object::take(client));
        return Err(e);
    }
    publish_gap(shared, locked.counter, gap);
    Ok(())
}

/// The database's row at `position` is not the one this process published there: in a
/// transaction of its own under the counter row's lock, records the revisions from where
/// the database differs as lost ([`lost::realign`]; or raises the counter, if it is below
/// the position by now). The tailer publishes the gap row with the rows before it.
pub(crate) async fn realign(shared: &Shared, position: Revision) -> Result<()> {
    let mut client = shared.client().await?;
    let tx = client.transaction().await.map_err(pg_err)?;
    let locked = lock_revision(shared, &tx).await?;
    let gap = match locked.gap {
        Some(gap) => Some(gap),
        None => {
            let recent = publish::recent(shared);
            lost::realign(&tx, locked.counter, position, locked.compacted, &recent).await?
        }
    };
    let Some(gap) = gap else {
        tx.rollback().await.map_err(pg_err)?;
        return Ok(());
    };
    if let Err(e) = commit(shared, tx).await {
        drop(deadpool_postgres::Object::take(client));
        return Err(e);
    }
    if locked.gap.is_some() {
        publish_gap(shared, locked.counter, gap);
    }
    Ok(())
}

/// Publishes a committed gap row alone (the counter was `counter` before it, below the
/// position, so nothing before it is missing). A failure loses nothing: the tailer
/// publishes it from the log.
pub(crate) fn publish_gap(shared: &Shared, counter: Revision, gap: Gap) {
    if let Err(e) = publish::publish(shared, vec![Entry::Gap(gap)], counter, gap.at) {
        tracing::error!(error = %e, "postgres storage: publishing a gap row failed");
        shared.tail_wake.notify_one();
    }
}

/// Commits `tx`, waiting at most the statement timeout for the answer. PostgreSQL's own
/// statement timeout does not cover a `COMMIT`'s wait for a synchronous standby, so
/// without this bound a write would hang for as long as no standby answers. Without an
/// answer in time the outcome is unknown: the write is reported as failed
/// ([`Error::Timeout`]), never acknowledged, and the caller closes the connection. On the
/// server the commit stays pending (holding the counter row, so other writes fail with
/// `Timeout` too) until a standby confirms it; then it is visible and the log tailer
/// publishes it like any other.
pub(crate) async fn commit(shared: &Shared, tx: Transaction<'_>) -> Result<()> {
    match tokio::time::timeout(shared.statement_timeout, tx.commit()).await {
        Ok(r) => r.map_err(pg_err),
        Err(_) => Err(Error::Timeout(format!(
            "the database did not confirm the commit within {:?} (waiting for a \
             synchronous standby?): it may or may not have committed",
            shared.statement_timeout
        ))),
    }
}
