//! The end of every writing transaction ([`finish`]): it moves the revision counter (the
//! `kplane_meta` row), records when the group committed and notifies every process's log
//! tailer on [`CHANNEL`].

use deadpool_postgres::Transaction;

use super::errors::pg_err;
use super::schema::from_rev;
use crate::{Result, Revision};

/// The channel writers notify and the tailer listens on.
pub(crate) const CHANNEL: &str = "kplane_log";

/// Moves the counter to `last`, records when the group committed and notifies the log
/// tailers of every process on the database (PostgreSQL delivers the notification at
/// commit, and not at all on rollback), in one statement.
pub(crate) async fn finish(tx: &Transaction<'_>, last: Revision) -> Result<()> {
    let last = from_rev(last)?;
    let stmt = tx
        .prepare_cached(&format!(
            "WITH counter AS (UPDATE kplane_meta SET revision = $1::bigint WHERE id = 1) \
             INSERT INTO kplane_commits (revision, committed_at) \
             SELECT $1::bigint, clock_timestamp() \
               FROM (SELECT pg_notify('{}', $1::bigint::text)) AS n",
            CHANNEL
        ))
        .await
        .map_err(pg_err)?;
    tx.execute(&stmt, &[&last]).await.map_err(pg_err)?;
    Ok(())
}
