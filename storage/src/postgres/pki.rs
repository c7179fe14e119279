//! Files every replica on one database must share (its table `kplane_pki`): the caller
//! proposes its own copies, the first proposal of each name is kept, and every replica
//! adopts what the table holds.
//!
//! The storage crate knows only names and bytes here; which files are shared (the CAs,
//! the ServiceAccount signing key, the admin token) and how they are made is the API
//! server's business (docs/storage-postgres.md, "Running several replicas"). The table
//! is not part of the store's key space and not versioned by the schema migration: it is
//! created on first use, so it exists as soon as one replica started.
//!
//! Simultaneous first starts: the proposal runs in one transaction under an advisory
//! lock, inserts with `ON CONFLICT DO NOTHING` and reads the table back before commit, so
//! one replica's whole proposal wins and every replica reads the same set, never a mix of
//! two replicas' halves of a certificate and its key.

use std::collections::BTreeMap;

use super::errors::pg_err;
use super::store::PostgresStorage;
use crate::Result;

/// The id of the advisory lock serializing proposals (any constant; not the schema's).
const PKI_LOCK: i64 = 7_263_542;

const CREATE: &str = "CREATE TABLE IF NOT EXISTS kplane_pki (
    name text PRIMARY KEY,
    value bytea NOT NULL,
    created_at timestamptz NOT NULL DEFAULT clock_timestamp()
)";

impl PostgresStorage {
    /// Inserts each proposed `(name, value)` whose name the table does not hold yet, and
    /// returns the whole table afterwards (the adopted set, proposals of earlier replicas
    /// winning over this one's).
    ///
    /// The table holds private keys: whoever can read it can act as any user of every
    /// replica; restrict it with the database's permissions.
    pub async fn share_files(
        &self,
        proposed: &[(String, Vec<u8>)],
    ) -> Result<BTreeMap<String, Vec<u8>>> {
        let mut client = self.shared.client().await?;
        let tx = client.transaction().await.map_err(pg_err)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&PKI_LOCK])
            .await
            .map_err(pg_err)?;
        tx.batch_execute(CREATE).await.map_err(pg_err)?;
        let names: Vec<&str> = proposed.iter().map(|(n, _)| n.as_str()).collect();
        let values: Vec<&[u8]> = proposed.iter().map(|(_, v)| v.as_slice()).collect();
        tx.execute(
            "INSERT INTO kplane_pki (name, value) \
             SELECT * FROM unnest($1::text[], $2::bytea[]) \
             ON CONFLICT (name) DO NOTHING",
            &[&names, &values],
        )
        .await
        .map_err(pg_err)?;
        let rows = tx
            .query("SELECT name, value FROM kplane_pki", &[])
            .await
            .map_err(pg_err)?;
        tx.commit().await.map_err(pg_err)?;
        Ok(rows
            .into_iter()
            .map(|r| (r.get::<_, String>(0), r.get::<_, Vec<u8>>(1)))
            .collect())
    }
}
