//! The work queue: keys (not objects) waiting for a reconcile, each at most once in the
//! queue, and never handed to two workers at once: a key added while a worker has it is
//! queued again when that worker is done (as client-go's workqueue). Failed keys come back
//! after an exponential delay with jitter.

use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::Hash;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use rand::Rng as _;
use tokio::sync::Notify;

/// The first retry delay; doubled per failure up to [`MAX_DELAY`].
const BASE_DELAY: Duration = Duration::from_millis(200);
const MAX_DELAY: Duration = Duration::from_secs(30);

#[derive(Debug)]
struct Inner<K> {
    queue: VecDeque<K>,
    /// Queued keys with the time they were first added.
    queued: HashMap<K, Instant>,
    processing: HashSet<K>,
    /// Keys added while being processed, with the time they were added.
    dirty: HashMap<K, Instant>,
    failures: HashMap<K, u32>,
    closed: bool,
}

/// See the module docs.
#[derive(Debug)]
pub struct WorkQueue<K> {
    inner: Mutex<Inner<K>>,
    notify: Notify,
}

impl<K: Clone + Eq + Hash + Send + 'static> Default for WorkQueue<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Clone + Eq + Hash + Send + 'static> WorkQueue<K> {
    pub fn new() -> Self {
        WorkQueue {
            inner: Mutex::new(Inner {
                queue: VecDeque::new(),
                queued: HashMap::new(),
                processing: HashSet::new(),
                dirty: HashMap::new(),
                failures: HashMap::new(),
                closed: false,
            }),
            notify: Notify::new(),
        }
    }

    /// Queues `key` unless it is queued already.
    pub fn add(&self, key: K) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        if inner.closed || inner.queued.contains_key(&key) {
            return;
        }
        if inner.processing.contains(&key) {
            inner.dirty.entry(key).or_insert_with(Instant::now);
            return;
        }
        inner.queued.insert(key.clone(), Instant::now());
        inner.queue.push_back(key);
        drop(inner);
        self.notify.notify_one();
    }

    /// The next key and when it was queued; `None` once the queue is closed.
    pub async fn next(&self) -> Option<(K, Instant)> {
        loop {
            {
                let mut inner = self.inner.lock().ok()?;
                if inner.closed {
                    return None;
                }
                if let Some(key) = inner.queue.pop_front() {
                    let since = inner.queued.remove(&key).unwrap_or_else(Instant::now);
                    inner.processing.insert(key.clone());
                    if !inner.queue.is_empty() {
                        // Wake another worker for the rest.
                        self.notify.notify_one();
                    }
                    return Some((key, since));
                }
            }
            self.notify.notified().await;
        }
    }

    /// Ends the processing of `key`; `ok` resets its failure count.
    pub fn done(&self, key: &K, ok: bool) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        inner.processing.remove(key);
        if ok {
            inner.failures.remove(key);
        }
        if let Some(since) = inner.dirty.remove(key) {
            if !inner.closed && !inner.queued.contains_key(key) {
                inner.queued.insert(key.clone(), since);
                inner.queue.push_back(key.clone());
                drop(inner);
                self.notify.notify_one();
            }
        }
    }

    /// Queues `key` again after a delay that grows with its consecutive failures; their
    /// number.
    pub fn retry(self: &Arc<Self>, key: K) -> u32 {
        let failures = match self.inner.lock() {
            Ok(mut inner) => {
                let n = inner.failures.entry(key.clone()).or_insert(0);
                *n = n.saturating_add(1);
                *n
            }
            Err(_) => return 0,
        };
        let delay = retry_delay(failures);
        let queue = Arc::clone(self);
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            queue.add(key);
        });
        failures
    }

    /// Keys waiting (not counting the ones being processed).
    pub fn len(&self) -> usize {
        self.inner.lock().map(|i| i.queue.len()).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Stops handing out keys: every `next` returns `None`.
    pub fn close(&self) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.closed = true;
        }
        self.notify.notify_waiters();
    }
}

/// `BASE_DELAY * 2^(failures-1)`, at most `MAX_DELAY`, times a jitter in [0.8, 1.2).
fn retry_delay(failures: u32) -> Duration {
    let exp = failures.saturating_sub(1).min(16);
    let delay = BASE_DELAY.saturating_mul(1u32 << exp).min(MAX_DELAY);
    let jitter: f64 = rand::rng().random_range(0.8..1.2);
    delay.mul_f64(jitter)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn keys_are_deduplicated_and_requeued_after_processing() {
        let q: WorkQueue<&str> = WorkQueue::new();
        q.add("a");
        q.add("b");
        q.add("a");
        assert_eq!(q.len(), 2);
        let (k, _) = q.next().await.unwrap_or(("?", Instant::now()));
        assert_eq!(k, "a");
        // Added while processed: not handed out twice at once, queued again after done.
        q.add("a");
        assert_eq!(q.len(), 1);
        let (k2, _) = q.next().await.unwrap_or(("?", Instant::now()));
        assert_eq!(k2, "b");
        assert!(q.is_empty());
        q.done(&"a", true);
        assert_eq!(q.len(), 1);
        q.done(&"b", true);
        let (k3, _) = q.next().await.unwrap_or(("?", Instant::now()));
        assert_eq!(k3, "a");
        q.done(&"a", true);
        q.close();
        assert!(q.next().await.is_none());
    }

    #[test]
    fn retry_delays_grow_and_stay_bounded() {
        assert!(retry_delay(1) < Duration::from_millis(250));
        assert!(retry_delay(4) >= Duration::from_millis(1200));
        for n in [10, 20, 100, u32::MAX] {
            assert!(retry_delay(n) <= MAX_DELAY.mul_f64(1.2), "{n}");
        }
    }

    #[tokio::test]
    async fn failed_keys_come_back() {
        let q = Arc::new(WorkQueue::new());
        q.add(1u32);
        let (k, _) = q.next().await.unwrap_or((0, Instant::now()));
        q.done(&k, false);
        q.retry(k);
        let got = tokio::time::timeout(Duration::from_secs(10), q.next()).await;
        assert_eq!(got.ok().flatten().map(|(k, _)| k), Some(1));
    }
}
