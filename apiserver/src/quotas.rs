//! Counts of what one identity holds open, for the limits on them (docs/security.md,
//! "Limits"): concurrent watches per user (`--max-watches-per-user`) and connections per
//! client IP address (`--max-connections-per-ip`; connections are counted before TLS and
//! authentication, so the address is the only identity they have).
//!
//! A [`Permit`] holds one unit of its key's count and gives it back when dropped; a key
//! whose count falls to zero is removed, so the map holds only keys with something open.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::{Arc, Mutex};

/// Open units per key, under one limit.
#[derive(Debug)]
pub struct Counts<K: Eq + Hash> {
    open: Mutex<HashMap<K, usize>>,
}

impl<K: Eq + Hash> Default for Counts<K> {
    fn default() -> Self {
        Counts {
            open: Mutex::new(HashMap::new()),
        }
    }
}

impl<K: Eq + Hash + Clone + Send + 'static> Counts<K> {
    /// One more unit for `key`, unless it already holds `max`.
    pub fn acquire(self: &Arc<Self>, key: &K, max: usize) -> Option<Permit<K>> {
        let mut open = match self.open.lock() {
            Ok(o) => o,
            Err(poisoned) => poisoned.into_inner(),
        };
        let n = open.entry(key.clone()).or_insert(0);
        if *n >= max {
            return None;
        }
        *n += 1;
        Some(Permit {
            counts: self.clone(),
            key: key.clone(),
        })
    }

    /// What `key` holds now.
    pub fn get(&self, key: &K) -> usize {
        match self.open.lock() {
            Ok(o) => o.get(key).copied().unwrap_or(0),
            Err(poisoned) => poisoned.into_inner().get(key).copied().unwrap_or(0),
        }
    }

    fn release(&self, key: &K) {
        let mut open = match self.open.lock() {
            Ok(o) => o,
            Err(poisoned) => poisoned.into_inner(),
        };
        if let Some(n) = open.get_mut(key) {
            *n = n.saturating_sub(1);
            if *n == 0 {
                open.remove(key);
            }
        }
    }
}

/// One unit of a key's count, given back on drop.
#[derive(Debug)]
pub struct Permit<K: Eq + Hash + Clone + Send + 'static> {
    counts: Arc<Counts<K>>,
    key: K,
}

impl<K: Eq + Hash + Clone + Send + 'static> Drop for Permit<K> {
    fn drop(&mut self) {
        self.counts.release(&self.key);
    }
}

/// Watches are counted per user name and uid (ServiceAccounts of different logical
/// clusters share a name, not a uid).
pub type WatchCounts = Counts<(String, String)>;

/// Connections are counted per client address.
pub type ConnectionCounts = Counts<std::net::IpAddr>;

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    #[test]
    fn permits_at_above_and_ten_times_the_limit_and_given_back_on_drop() {
        const MAX: usize = 5;
        let counts: Arc<Counts<&'static str>> = Arc::default();
        let mut held: Vec<_> = (0..MAX)
            .map(|_| counts.acquire(&"a", MAX).unwrap())
            .collect();
        assert_eq!(counts.get(&"a"), MAX);
        // Above the limit, and ten times over: refused, the count unchanged.
        for _ in MAX..10 * MAX {
            assert!(counts.acquire(&"a", MAX).is_none());
        }
        assert_eq!(counts.get(&"a"), MAX);
        // Another key has its own count.
        let b = counts.acquire(&"b", MAX).unwrap();
        held.pop();
        assert_eq!(counts.get(&"a"), MAX - 1);
        assert!(counts.acquire(&"a", MAX).is_some());
        drop(held);
        drop(b);
        assert!(
            counts.open.lock().unwrap().is_empty(),
            "keys with nothing open are removed"
        );
    }
}
