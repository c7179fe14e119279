//! The exact GET cache of a [`super::PostgresStorage`]: the latest value (or absence) of
//! recently read or written keys, bounded in bytes, with second-chance ("clock") eviction.
//!
//! Each entry is the key's state as of a revision `as_of`: a GET miss stores what it read
//! with the database revision of the same statement's snapshot, a published event stores
//! its value at its own revision. An entry is exact from `as_of` on as long as every
//! later event for its key replaces it, which [`Cache::apply`] does for every published
//! event above `as_of` (events at or below it are already in the entry). The caller
//! ([`super::publish`]) keeps that true: it applies every event it publishes, in order,
//! under the lock that guards the cache, and stores a GET's result only if no event above
//! its snapshot was published yet.
//!
//! The data structure only: it knows nothing of the database or the hub.

use std::collections::{HashMap, VecDeque};

use crate::{Event, EventType, Key, KeyValue, Revision};

/// Bytes counted per entry beyond its key and value (map and queue slots, revisions).
const ENTRY_OVERHEAD: usize = 96;

struct Entry {
    value: Option<KeyValue>,
    as_of: Revision,
    /// Distinguishes this entry from an earlier one of the same key in the queue.
    generation: u64,
    cost: usize,
    /// Read since the clock hand last passed: spared once.
    referenced: bool,
}

/// Figures of the cache, for tests and metrics.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheFigures {
    /// Keys held (values and known absences).
    pub entries: usize,
    /// Their cost in bytes (keys twice, values, a fixed overhead per entry).
    pub bytes: usize,
    /// GETs answered from the cache.
    pub hits: u64,
    /// GETs that read the database.
    pub misses: u64,
}

/// Latest values of keys, each exact as of its revision; at most `limit` bytes.
pub(crate) struct Cache {
    map: HashMap<Key, Entry>,
    /// The clock: keys in insertion order, each with its entry's generation (an older
    /// generation is stale and skipped).
    order: VecDeque<(Key, u64)>,
    bytes: usize,
    limit: usize,
    next_generation: u64,
    hits: u64,
    misses: u64,
}

fn key_len(k: &Key) -> usize {
    k.cluster.len() + k.resource.len() + k.namespace.len() + k.name.len()
}

fn cost(key: &Key, value: Option<&KeyValue>) -> usize {
    // The key is held twice: in the map and in the clock.
    2 * key_len(key) + value.map_or(0, |v| v.value.len()) + ENTRY_OVERHEAD
}

impl Cache {
    /// An empty cache of at most `limit` bytes (0 disables it).
    pub(crate) fn new(limit: usize) -> Cache {
        Cache {
            map: HashMap::new(),
            order: VecDeque::new(),
            bytes: 0,
            limit,
            next_generation: 0,
            hits: 0,
            misses: 0,
        }
    }

    /// The cached state of `key`: `Some(None)` when it is known absent, `None` on a miss.
    pub(crate) fn get(&mut self, key: &Key) -> Option<Option<KeyValue>> {
        match self.map.get_mut(key) {
            Some(e) => {
                e.referenced = true;
                self.hits += 1;
                Some(e.value.clone())
            }
            None => {
                self.misses += 1;
                None
            }
        }
    }

    /// Stores what a GET read: `value` is the state of `key` at revision `as_of`. The
    /// caller guarantees that no event above `as_of` was applied yet.
    pub(crate) fn insert_read(&mut self, key: &Key, value: Option<KeyValue>, as_of: Revision) {
        if self.map.get(key).is_some_and(|e| e.as_of >= as_of) {
            return;
        }
        self.store(key, value, as_of);
    }

    /// Applies one published event: the key's state from the event's revision on.
    /// A put is stored (written keys are likely read next); a delete replaces a cached
    /// entry with its absence and adds nothing otherwise.
    pub(crate) fn apply(&mut self, ev: &Event) {
        let rev = ev.kv.mod_revision;
        let key = &ev.kv.key;
        let cached = self.map.get(key).map(|e| e.as_of);
        if cached.is_some_and(|as_of| as_of >= rev) {
            return;
        }
        match ev.event_type {
            EventType::Deleted if cached.is_none() => {}
            EventType::Deleted => self.store(key, None, rev),
            EventType::Added | EventType::Modified => self.store(key, Some(ev.kv.clone()), rev),
        }
    }

    /// Drops every entry (the cache can no longer be kept exact).
    pub(crate) fn clear(&mut self) {
        self.map.clear();
        self.order.clear();
        self.bytes = 0;
    }

    pub(crate) fn figures(&self) -> CacheFigures {
        CacheFigures {
            entries: self.map.len(),
            bytes: self.bytes,
            hits: self.hits,
            misses: self.misses,
        }
    }

    fn store(&mut self, key: &Key, value: Option<KeyValue>, as_of: Revision) {
        let cost = cost(key, value.as_ref());
        if cost > self.limit {
            // Too large to cache at all: forget the key's older state.
            if let Some(old) = self.map.remove(key) {
                self.bytes -= old.cost;
            }
            return;
        }
        match self.map.get_mut(key) {
            Some(e) => {
                self.bytes = self.bytes - e.cost + cost;
                e.value = value;
                e.as_of = as_of;
                e.cost = cost;
            }
            None => {
                let generation = self.next_generation;
                self.next_generation += 1;
                self.map.insert(
                    key.clone(),
                    Entry {
                        value,
                        as_of,
                        generation,
                        cost,
                        referenced: false,
                    },
                );
                self.order.push_back((key.clone(), generation));
                self.bytes += cost;
            }
        }
        self.evict();
    }

    /// Evicts until the cache fits its limit: the clock hand passes entries in insertion
    /// order, sparing each one read since its last pass once.
    fn evict(&mut self) {
        while self.bytes > self.limit {
            let Some((key, generation)) = self.order.pop_front() else {
                break;
            };
            match self.map.get_mut(&key) {
                Some(e) if e.generation == generation => {
                    if e.referenced {
                        e.referenced = false;
                        self.order.push_back((key, generation));
                    } else if let Some(e) = self.map.remove(&key) {
                        self.bytes -= e.cost;
                    }
                }
                // A stale slot of an entry already gone.
                _ => {}
            }
        }
        if self.order.len() > 2 * self.map.len() + 64 {
            let map = &self.map;
            self.order
                .retain(|(k, g)| map.get(k).is_some_and(|e| e.generation == *g));
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use bytes::Bytes;

    use super::*;

    fn k(name: &str) -> Key {
        Key {
            cluster: "c".into(),
            resource: "r".into(),
            namespace: "n".into(),
            name: name.into(),
        }
    }

    fn kv(name: &str, rev: Revision, len: usize) -> KeyValue {
        KeyValue {
            key: k(name),
            value: Bytes::from(vec![b'x'; len]),
            create_revision: 1,
            mod_revision: rev,
        }
    }

    fn ev(t: EventType, name: &str, rev: Revision) -> Event {
        Event {
            event_type: t,
            kv: kv(name, rev, 10),
            prev: None,
        }
    }

    #[test]
    fn events_replace_older_entries_only() {
        let mut c = Cache::new(1 << 20);
        c.insert_read(&k("a"), Some(kv("a", 5, 10)), 7);
        // An event at or below the entry's snapshot is already in it.
        c.apply(&ev(EventType::Modified, "a", 6));
        assert_eq!(c.get(&k("a")).unwrap().unwrap().mod_revision, 5);
        c.apply(&ev(EventType::Modified, "a", 8));
        assert_eq!(c.get(&k("a")).unwrap().unwrap().mod_revision, 8);
        // A read older than the entry does not replace it.
        c.insert_read(&k("a"), Some(kv("a", 5, 10)), 7);
        assert_eq!(c.get(&k("a")).unwrap().unwrap().mod_revision, 8);
        c.apply(&ev(EventType::Deleted, "a", 9));
        assert_eq!(c.get(&k("a")), Some(None));
        // A delete of an uncached key adds nothing; a create adds the key.
        c.apply(&ev(EventType::Deleted, "b", 10));
        assert_eq!(c.get(&k("b")), None);
        c.apply(&ev(EventType::Added, "b", 11));
        assert_eq!(c.get(&k("b")).unwrap().unwrap().mod_revision, 11);
        c.insert_read(&k("gone"), None, 11);
        assert_eq!(c.get(&k("gone")), Some(None));
        c.clear();
        assert_eq!(c.get(&k("b")), None);
        assert_eq!(c.figures().bytes, 0);
    }

    /// The byte bound holds at, above and at ten times the number of entries that fit,
    /// and entries read since the clock last passed survive one pass.
    #[test]
    fn bounded_in_bytes() {
        let one = cost(&k("k0000"), Some(&kv("k0000", 1, 100)));
        let fit = 50;
        for n in [fit, fit + 1, 10 * fit] {
            let mut c = Cache::new(fit * one);
            for i in 0..n {
                let name = format!("k{i:04}");
                c.insert_read(&k(&name), Some(kv(&name, 1, 100)), 1);
                assert!(c.figures().bytes <= fit * one);
                if i == 0 {
                    // Keep the first key hot.
                    assert!(c.get(&k(&name)).is_some());
                }
            }
            let f = c.figures();
            assert_eq!(f.entries, n.min(fit), "{n} inserted");
            assert_eq!(f.bytes, n.min(fit) * one);
            // The newest key is always held.
            let last = format!("k{:04}", n - 1);
            assert!(c.get(&k(&last)).is_some());
            if n == fit + 1 {
                // The hot first key was spared; the second (cold) one went.
                assert!(c.get(&k("k0000")).is_some());
                assert!(c.get(&k("k0001")).is_none());
            }
            assert!(c.order.len() <= 2 * f.entries + 64);
        }
        // A value larger than the whole cache is not held, and drops the older state.
        let mut c = Cache::new(10 * one);
        c.insert_read(&k("big"), Some(kv("big", 1, 10)), 1);
        c.apply(&Event {
            event_type: EventType::Modified,
            kv: kv("big", 2, 20 * one),
            prev: None,
        });
        assert_eq!(c.get(&k("big")), None);
        assert_eq!(c.figures().bytes, 0);
    }
}
