//! Claims on names among the processes sharing a store ([`crate::Storage::claim`]): the
//! [`Claim`] guard every backend hands out, and [`LocalClaims`], the claims of a backend
//! only one process opens (sled), which are exact within that process.
//!
//! A claim says "this process works on `name`": at most one holder per name among every
//! process on the store, and it ends with its holder (the guard dropped, the store closed,
//! the process gone), so that whoever finds the name free knows that nobody works on it
//! any more. The registry claims each import journal's name for as long as it works on
//! the import, so that the journal of an import whose process died is told apart from one
//! that is in progress elsewhere.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::watch;

/// What keeps a claim for a backend (PostgreSQL: the task holding the lock's session).
/// Dropping it releases the name, possibly a little later (the server sees the session
/// end); [`ClaimKeeper::release`] returns once the name is free for every process.
#[async_trait::async_trait]
pub trait ClaimKeeper: Send + Sync {
    async fn release(self: Box<Self>);
}

/// A held claim on a name ([`crate::Storage::claim`]). [`Claim::release`] frees the name
/// and returns once any process may be granted it; dropping the guard frees it too, but
/// possibly a moment later (as a crash would).
pub struct Claim {
    name: String,
    held: watch::Receiver<bool>,
    grace: Duration,
    keeper: Option<Box<dyn ClaimKeeper>>,
}

impl std::fmt::Debug for Claim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Claim")
            .field("name", &self.name)
            .field("held", &self.is_held())
            .field("grace", &self.grace)
            .finish_non_exhaustive()
    }
}

impl Claim {
    /// A claim on `name` kept by `keeper`, held while `held` says so, with the backend's
    /// `grace` (see [`Claim::grace`]).
    pub fn new(
        name: impl Into<String>,
        held: watch::Receiver<bool>,
        grace: Duration,
        keeper: Box<dyn ClaimKeeper>,
    ) -> Claim {
        Claim {
            name: name.into(),
            held,
            grace,
            keeper: Some(keeper),
        }
    }

    /// Releases the name; returns once any process may be granted it (so the next step of
    /// the same work, through any process, is not refused for a claim still going away).
    pub async fn release(mut self) {
        if let Some(k) = self.keeper.take() {
            k.release().await;
        }
    }

    /// The name claimed.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether the claim still holds. It can be lost without being released (PostgreSQL:
    /// its database session ended); then another process may be granted the name, and
    /// the holder must stop working on it.
    pub fn is_held(&self) -> bool {
        *self.held.borrow()
    }

    /// The longest a holder may still believe it holds a claim it has lost (it notices
    /// within this time). A process granted a name whose previous holder may have lost it
    /// rather than released it waits this long before it takes over that holder's work.
    /// Zero where a claim cannot be lost (one process).
    pub fn grace(&self) -> Duration {
        self.grace
    }
}

/// The claims of a store one process opens: a set of names, held by this process's
/// guards. A name is granted unless a guard of this set holds it.
#[derive(Clone, Debug, Default)]
pub struct LocalClaims {
    held: Arc<Mutex<HashSet<String>>>,
}

/// Removes its name from the set when dropped.
struct LocalKeeper {
    set: Arc<Mutex<HashSet<String>>>,
    name: String,
    _held: watch::Sender<bool>,
}

#[async_trait::async_trait]
impl ClaimKeeper for LocalKeeper {
    async fn release(self: Box<Self>) {
        drop(self);
    }
}

impl Drop for LocalKeeper {
    fn drop(&mut self) {
        self.set
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.name);
    }
}

impl LocalClaims {
    /// Claims `name`: `None` while a guard of this set holds it.
    pub fn claim(&self, name: &str) -> Option<Claim> {
        let fresh = self
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(name.to_string());
        if !fresh {
            return None;
        }
        let (tx, rx) = watch::channel(true);
        let keeper = LocalKeeper {
            set: self.held.clone(),
            name: name.to_string(),
            _held: tx,
        };
        Some(Claim::new(name, rx, Duration::ZERO, Box::new(keeper)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_local_claim_is_exclusive_until_dropped() {
        let claims = LocalClaims::default();
        let a = claims.claim("x").expect("free");
        assert!(a.is_held());
        assert_eq!(a.name(), "x");
        assert!(claims.claim("x").is_none(), "held");
        let b = claims.claim("y").expect("another name is free");
        drop(a);
        let again = claims.claim("x").expect("released");
        assert!(again.is_held() && b.is_held());
        drop(again);
        let x = claims.claim("x").expect("released");
        futures::executor::block_on(x.release());
        assert!(claims.claim("x").is_some(), "released explicitly");
        assert!(LocalClaims::default().claim("y").is_some(), "per store");
    }
}
