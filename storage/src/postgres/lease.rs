//! Leadership among the kplane processes on one database ([`Storage::leadership`]): a
//! session advisory lock (`pg_try_advisory_lock`) held on a connection of its own, taken
//! out of the pool for as long as the process campaigns.
//!
//! The lock belongs to the database session, so it goes with the connection: a process
//! that is killed (or whose connection breaks) frees it as soon as the server sees the
//! session end, without waiting for any lease to expire, and another process takes it at
//! its next try ([`RETRY_EVERY`]). The holder checks its session every [`CHECK_EVERY`]
//! (`SELECT 1`, answered within [`CHECK_TIMEOUT`]); when the check fails it reports the
//! loss, drops the connection (which ends the session, and with it the lock, if the server
//! still had it) and campaigns again on a new one. So a holder that lost its session
//! stops believing it leads within `CHECK_EVERY + CHECK_TIMEOUT`. A process that is granted
//! the lock therefore waits that long ([`TAKEOVER_GRACE`], checking its own session
//! meanwhile) before it reports leadership: by then a predecessor that lost its session
//! without knowing has stopped, and the two do not overlap (unless the predecessor's
//! process stalls for longer than that; the registry's controllers stay correct even
//! then: every write is atomic and carries the resourceVersion it read).
//!
//! The campaign starts on the first [`Lease::subscribe`] (a store used without
//! controllers never opens the extra connection) and ends when the store shuts down.
//!
//! [`Storage::leadership`]: crate::Storage::leadership

use std::sync::atomic::Ordering;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use tokio::sync::watch;

use super::shared::Shared;

/// The advisory lock's key ("kplane" in ASCII). Schema migration uses another
/// (transaction-scoped) key, so the two never wait for each other.
pub(crate) const LEASE_KEY: i64 = 0x6b70_6c61_6e65;

/// How often a process that does not hold the lock tries again.
pub(crate) const RETRY_EVERY: Duration = Duration::from_secs(1);

/// How often the holder checks that its session is alive.
pub(crate) const CHECK_EVERY: Duration = Duration::from_secs(1);

/// How long the holder's check may take before it counts as a lost session.
pub(crate) const CHECK_TIMEOUT: Duration = Duration::from_secs(2);

/// How long a process granted the lock waits before it reports leadership: the longest a
/// predecessor that lost its session may still believe it leads.
pub(crate) const TAKEOVER_GRACE: Duration =
    Duration::from_secs(CHECK_EVERY.as_secs() + CHECK_TIMEOUT.as_secs());

/// The process's campaign for the lock: started on first use, stopped with the store.
#[derive(Debug)]
pub(crate) struct Lease {
    leader: OnceLock<watch::Receiver<bool>>,
    stop: watch::Sender<bool>,
}

impl Lease {
    pub(crate) fn new() -> Lease {
        Lease {
            leader: OnceLock::new(),
            stop: watch::channel(false).0,
        }
    }

    /// Whether this process holds the lock, starting the campaign on the first call (inside
    /// a Tokio runtime).
    pub(crate) fn subscribe(&self, shared: &Arc<Shared>) -> watch::Receiver<bool> {
        self.leader
            .get_or_init(|| {
                let (tx, rx) = watch::channel(false);
                tokio::spawn(campaign(shared.clone(), tx, self.stop.subscribe()));
                rx
            })
            .clone()
    }

    /// Ends the campaign (the store shuts down): the connection goes, and the lock with it.
    pub(crate) fn stop(&self) {
        self.stop.send_replace(true);
    }
}

/// Campaigns until `stop` (or the store closing): hold the lock while the session lives,
/// then try again on a new connection.
async fn campaign(
    shared: Arc<Shared>,
    leader: watch::Sender<bool>,
    mut stop: watch::Receiver<bool>,
) {
    loop {
        if *stop.borrow() || shared.closing.load(Ordering::Acquire) {
            break;
        }
        tokio::select! {
            _ = hold_once(&shared, &leader) => {}
            // Dropping `hold_once` drops its connection: the session and the lock end.
            _ = stop.changed() => break,
        }
        tokio::select! {
            _ = tokio::time::sleep(RETRY_EVERY) => {}
            _ = stop.changed() => break,
        }
    }
    if leader.send_replace(false) {
        tracing::info!("storage shut down; no longer the leader");
    }
}

/// One connection's life: try the lock until it is granted, then hold it while the
/// session answers. Returns when the connection fails (leadership lost, if it was held).
async fn hold_once(shared: &Shared, leader: &watch::Sender<bool>) {
    let client = match shared.client().await {
        Ok(c) => deadpool_postgres::Object::take(c),
        Err(e) => {
            tracing::debug!(error = %e, "leader election: no database connection; retrying");
            return;
        }
    };
    loop {
        let tried = tokio::time::timeout(
            CHECK_TIMEOUT,
            client.query_one("SELECT pg_try_advisory_lock($1)", &[&LEASE_KEY]),
        )
        .await;
        match tried {
            Ok(Ok(row)) => match row.try_get::<_, bool>(0) {
                Ok(true) => break,
                Ok(false) => {}
                Err(e) => {
                    tracing::warn!(error = %e, "leader election: unexpected answer; retrying");
                    return;
                }
            },
            Ok(Err(e)) => {
                tracing::debug!(error = %e, "leader election: the try failed; retrying");
                return;
            }
            Err(_) => {
                tracing::debug!("leader election: the try timed out; retrying");
                return;
            }
        }
        tokio::time::sleep(RETRY_EVERY).await;
    }
    let granted = tokio::time::Instant::now();
    let mut leading = false;
    loop {
        if !leading && granted.elapsed() >= TAKEOVER_GRACE {
            leading = true;
            leader.send_replace(true);
            tracing::info!("became the leader (PostgreSQL advisory lock {LEASE_KEY:#x})");
        }
        tokio::time::sleep(CHECK_EVERY).await;
        let alive = tokio::time::timeout(CHECK_TIMEOUT, client.simple_query("SELECT 1")).await;
        match alive {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "lost the lock's database session; no longer the leader");
                break;
            }
            Err(_) => {
                tracing::warn!("the lock's database session did not answer; no longer the leader");
                break;
            }
        }
    }
    if leading {
        leader.send_replace(false);
    }
}
