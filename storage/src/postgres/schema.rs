//! The PostgreSQL schema of the backend and its versioned migration at open.
//!
//! Tables (all key parts are `bytea`: Kubernetes names never hold NUL bytes, but the
//! storage contract allows any string, and `bytea` compares bytewise exactly like
//! [`crate::Key`]'s derived order):
//! - `kplane_objects`: the latest value of every live key, primary key = the key. Lists read
//!   only this table (plus the log's tail for older snapshots), so their cost grows with
//!   live keys, never with history.
//! - `kplane_log`: one row per committed write, primary key = its revision, with the
//!   previous version of the key (`prev_*`), so the state of a key at a revision `R` is the
//!   previous version carried by its first change after `R`. Compaction therefore deletes a
//!   plain revision range.
//! - `kplane_commits`: one row per commit group (its last revision and the database's clock),
//!   which the compactor reads to find the revision that left the event window.
//! - `kplane_meta`: one row: schema version, the revision counter (its row lock serializes
//!   revision assignment across writers) and the compaction point.
//! - `kplane_fences` (version 2): the logical clusters whose writes are fenced
//!   ([`crate::Storage::fence_cluster`]), written and checked under the revision lock.
//! - Version 3: gap rows in `kplane_log` (`event` 3: revisions a failover lost,
//!   [`super::lost`]) and a partial index on them, read at open. A binary of version 2
//!   refuses the database at open; one already running when the version moved fails on
//!   a gap row (`Corrupt`, "unknown event type 3") instead of misreading it.
//!
//! Storage parameters: `kplane_objects` leaves a fifth of each page free so that an update
//! (which changes no indexed column) stays on its page (a HOT update, no index writes), and
//! both it and `kplane_log` are vacuumed after a small share of dead rows, so the space
//! compaction and updates free is reused soon.

use tokio_postgres::Client;

use super::errors::pg_err;
use crate::{Error, EventType, Result};

/// The schema version this build writes. Opening a database with a newer one fails.
pub const SCHEMA_VERSION: i32 = 3;

/// Creates the schema in an empty database (version 0) up to [`SCHEMA_VERSION`].
const V1: &str = "
CREATE TABLE IF NOT EXISTS kplane_meta (
    id smallint PRIMARY KEY CHECK (id = 1),
    schema_version integer NOT NULL,
    revision bigint NOT NULL,
    compacted bigint NOT NULL
);
CREATE TABLE IF NOT EXISTS kplane_objects (
    cluster bytea NOT NULL,
    resource bytea NOT NULL,
    namespace bytea NOT NULL,
    name bytea NOT NULL,
    value bytea NOT NULL,
    create_revision bigint NOT NULL,
    mod_revision bigint NOT NULL,
    PRIMARY KEY (cluster, resource, namespace, name)
) WITH (fillfactor = 80, autovacuum_vacuum_scale_factor = 0.05);
CREATE INDEX IF NOT EXISTS kplane_objects_by_resource
    ON kplane_objects (resource, cluster, namespace, name);
CREATE TABLE IF NOT EXISTS kplane_log (
    revision bigint PRIMARY KEY,
    event smallint NOT NULL,
    cluster bytea NOT NULL,
    resource bytea NOT NULL,
    namespace bytea NOT NULL,
    name bytea NOT NULL,
    value bytea NOT NULL,
    create_revision bigint NOT NULL,
    prev_value bytea,
    prev_create_revision bigint,
    prev_mod_revision bigint
) WITH (autovacuum_vacuum_scale_factor = 0.02, autovacuum_vacuum_insert_scale_factor = 0.05);
CREATE INDEX IF NOT EXISTS kplane_log_by_key
    ON kplane_log (cluster, resource, namespace, name, revision);
CREATE TABLE IF NOT EXISTS kplane_commits (
    revision bigint PRIMARY KEY,
    committed_at timestamptz NOT NULL
);
CREATE INDEX IF NOT EXISTS kplane_commits_by_time ON kplane_commits (committed_at);
INSERT INTO kplane_meta (id, schema_version, revision, compacted)
    VALUES (1, 1, 0, 0) ON CONFLICT (id) DO NOTHING;
";

/// Version 1 to 2: the fenced clusters.
const V2: &str = "
CREATE TABLE IF NOT EXISTS kplane_fences (
    cluster bytea PRIMARY KEY
);
";

/// Version 2 to 3: gap rows (`event` 3) in the log, found at open by this (tiny) partial
/// index. Building it reads the log once, which holds the event window only.
const V3: &str = "
CREATE INDEX IF NOT EXISTS kplane_log_gaps ON kplane_log (revision) WHERE event = 3;
";

/// Creates or migrates the schema, under an advisory lock so that several processes
/// opening one database at once do it once. Returns `(revision, compacted)`.
pub(crate) async fn migrate(client: &mut Client) -> Result<(u64, u64)> {
    let tx = client.transaction().await.map_err(pg_err)?;
    // Any constant: the id of kplane's schema lock.
    tx.execute("SELECT pg_advisory_xact_lock(7263541)", &[])
        .await
        .map_err(pg_err)?;
    let exists = tx
        .query_opt("SELECT to_regclass('kplane_meta') IS NOT NULL", &[])
        .await
        .map_err(pg_err)?
        .map(|r| r.get::<_, bool>(0))
        .unwrap_or(false);
    let version: i32 = if exists {
        tx.query_opt("SELECT schema_version FROM kplane_meta WHERE id = 1", &[])
            .await
            .map_err(pg_err)?
            .map_or(0, |r| r.get(0))
    } else {
        0
    };
    if version > SCHEMA_VERSION {
        return Err(Error::Backend(format!(
            "the database holds kplane schema version {version}, newer than this build's \
             {SCHEMA_VERSION}: upgrade kplane"
        )));
    }
    if version < 1 {
        tx.batch_execute(V1).await.map_err(pg_err)?;
    }
    if version < 2 {
        tx.batch_execute(V2).await.map_err(pg_err)?;
    }
    if version < 3 {
        tx.batch_execute(V3).await.map_err(pg_err)?;
    }
    // Later versions: `if version < 4 { ... }`, each ending with the version bump.
    tx.execute(
        "UPDATE kplane_meta SET schema_version = $1 WHERE id = 1",
        &[&SCHEMA_VERSION],
    )
    .await
    .map_err(pg_err)?;
    let row = tx
        .query_one(
            "SELECT revision, compacted FROM kplane_meta WHERE id = 1",
            &[],
        )
        .await
        .map_err(pg_err)?;
    tx.commit().await.map_err(pg_err)?;
    Ok((to_rev(row.get(0))?, to_rev(row.get(1))?))
}

/// A revision read from a `bigint` column.
pub(crate) fn to_rev(v: i64) -> Result<u64> {
    u64::try_from(v).map_err(|_| Error::Corrupt(format!("negative revision {v}")))
}

/// A revision for a `bigint` parameter.
pub(crate) fn from_rev(v: u64) -> Result<i64> {
    i64::try_from(v).map_err(|_| Error::Backend(format!("revision {v} out of range")))
}

/// The event type's code in `kplane_log.event`.
pub(crate) fn event_code(t: EventType) -> i16 {
    match t {
        EventType::Added => 0,
        EventType::Modified => 1,
        EventType::Deleted => 2,
    }
}
