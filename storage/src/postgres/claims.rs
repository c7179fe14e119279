//! Claims on names among the processes on one database ([`Storage::claim`]): each claim is
//! a session advisory lock (`pg_try_advisory_lock(int4, int4)`) held on a connection of
//! its own, taken out of the pool for the guard's life.
//!
//! The key is [`CLAIM_SPACE`] and the 32-bit FNV-1a hash of the name. The two-integer
//! form is a key space of its own in PostgreSQL, apart from the leader's lock and the
//! transaction locks of migrations and the credentials table (all single `bigint`s). Two
//! names whose hashes collide share one lock: each then waits for the other (never are
//! two holders granted one name).
//!
//! As with the leader's lock (`lease.rs`), the lock goes with the session: a guard dropped,
//! a store closed or dropped, a process killed: the connection ends and the name is free
//! as soon as the server sees it. A task keeps each claim: it checks the session every
//! [`CHECK_EVERY`] (`SELECT 1`, answered within [`CHECK_TIMEOUT`]) and, when the check
//! fails, reports the claim lost ([`Claim::is_held`]) and drops the connection. So a
//! holder learns of a loss within [`TAKEOVER_GRACE`], the claim's [`Claim::grace`].
//!
//! [`Storage::claim`]: crate::Storage::claim

use std::sync::Arc;

use tokio::sync::{oneshot, watch};

use super::errors::pg_err;
use super::lease::{CHECK_EVERY, CHECK_TIMEOUT, TAKEOVER_GRACE};
use super::shared::Shared;
use crate::{Claim, ClaimKeeper, Error, Result};

/// The first key of every claim's lock ("kpcl" in ASCII).
pub(crate) const CLAIM_SPACE: i32 = 0x6b70_636c;

/// The second key of the lock of `name`: its 32-bit FNV-1a hash (fixed, so that every
/// build and process agrees on it).
pub(crate) fn claim_key(name: &str) -> i32 {
    let mut h: u32 = 0x811c_9dc5;
    for b in name.bytes() {
        h ^= u32::from(b);
        h = h.wrapping_mul(0x0100_0193);
    }
    i32::from_ne_bytes(h.to_ne_bytes())
}

/// Tries to claim `name` on a connection of its own; `None` when another session holds
/// its lock. `stop` ends the claim with the store (shut down or dropped).
pub(crate) async fn claim(
    shared: &Arc<Shared>,
    name: &str,
    stop: watch::Receiver<bool>,
) -> Result<Option<Claim>> {
    if *stop.borrow() {
        return Err(Error::ShuttingDown);
    }
    let client = shared.client().await?;
    let key = claim_key(name);
    let tried = tokio::time::timeout(
        shared.statement_timeout,
        client.query_one("SELECT pg_try_advisory_lock($1, $2)", &[&CLAIM_SPACE, &key]),
    )
    .await;
    let answer = match tried {
        Ok(Ok(row)) => row.try_get::<_, bool>(0).map_err(pg_err),
        Ok(Err(e)) => return Err(pg_err(e)),
        Err(_) => Err(Error::Timeout(format!(
            "claiming {name:?}: the database did not answer"
        ))),
    };
    let granted = match answer {
        Ok(g) => g,
        Err(e) => {
            // The lock may be (or still become) the session's: the connection must not go
            // back to the pool, where it would hold it.
            drop(deadpool_postgres::Object::take(client));
            return Err(e);
        }
    };
    if !granted {
        // Back to the pool: it holds nothing.
        return Ok(None);
    }
    // Out of the pool for the claim's life: the lock is the session's.
    let client = deadpool_postgres::Object::take(client);
    let (held_tx, held) = watch::channel(true);
    let (release, released) = oneshot::channel();
    tokio::spawn(keep(client, name.to_string(), held_tx, released, stop));
    Ok(Some(Claim::new(
        name,
        held,
        TAKEOVER_GRACE,
        Box::new(PgKeeper { release }),
    )))
}

/// The guard's side of a kept claim: dropped, the keeping task ends (and the session with
/// it); [`ClaimKeeper::release`] has the task unlock first and waits for it.
struct PgKeeper {
    release: oneshot::Sender<oneshot::Sender<()>>,
}

#[async_trait::async_trait]
impl ClaimKeeper for PgKeeper {
    async fn release(self: Box<Self>) {
        let (done, unlocked) = oneshot::channel();
        if self.release.send(done).is_ok() {
            // An error: the task ended already (the claim was lost), nothing to wait for.
            let _ = unlocked.await;
        }
    }
}

/// Keeps a granted claim's session until the guard goes (`released`: a release, which is
/// answered once the lock is unlocked, or the guard dropped), the store stops, or the
/// session fails its check; then reports it no longer held and drops the connection,
/// which ends the session and the lock.
async fn keep(
    client: deadpool_postgres::ClientWrapper,
    name: String,
    held: watch::Sender<bool>,
    mut released: oneshot::Receiver<oneshot::Sender<()>>,
    mut stop: watch::Receiver<bool>,
) {
    let mut done = None;
    loop {
        tokio::select! {
            r = &mut released => {
                if let Ok(d) = r {
                    let key = claim_key(&name);
                    let params: [&(dyn tokio_postgres::types::ToSql + Sync); 2] =
                        [&CLAIM_SPACE, &key];
                    let unlock = client.query_one("SELECT pg_advisory_unlock($1, $2)", &params);
                    // Failed or slow: dropping the connection below ends the lock anyway.
                    let _ = tokio::time::timeout(CHECK_TIMEOUT, unlock).await;
                    done = Some(d);
                }
                break;
            }
            // Shut down (true) or the store dropped (an error): the claim ends with it.
            _ = stop.changed() => break,
            _ = tokio::time::sleep(CHECK_EVERY) => {
                let alive = tokio::time::timeout(CHECK_TIMEOUT, client.simple_query("SELECT 1")).await;
                match alive {
                    Ok(Ok(_)) => {}
                    Ok(Err(e)) => {
                        tracing::warn!(claim = %name, error = %e, "lost the claim's database session");
                        break;
                    }
                    Err(_) => {
                        tracing::warn!(claim = %name, "the claim's database session did not answer; claim lost");
                        break;
                    }
                }
            }
        }
    }
    held.send_replace(false);
    drop(client);
    if let Some(d) = done {
        let _ = d.send(());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_is_fixed_and_spreads() {
        // FNV-1a of "" and "a" (the published test vectors).
        assert_eq!(claim_key(""), 0x811c_9dc5_u32 as i32);
        assert_eq!(claim_key("a"), 0xe40c_292c_u32 as i32);
        assert_ne!(claim_key("import:root:a"), claim_key("import:root:b"));
    }
}
