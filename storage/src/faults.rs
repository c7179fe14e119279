//! Fault injection for tests (the `testing` feature): [`Faulty`] wraps any [`Storage`] and
//! makes chosen operations fail, deterministically and under the test's control, so tests
//! can prove what the layers above promise when storage misbehaves (nothing partly
//! written, nothing acknowledged lost, work retried until it succeeds).
//!
//! A test adds [`Fault`]s to an [`Op`] with [`Faulty::inject`]: fail the call with an
//! error ([`Fault::fail`]), apply it and then report an error ([`Fault::commit_then_fail`]:
//! the ambiguous commit, durable but reported failed, as after a timeout), or delay it
//! ([`Fault::delay`]); each for the next `n` calls ([`Fault::times`]) or until cleared, and
//! optionally only with a probability drawn from the wrapper's seeded generator
//! ([`Fault::with_probability`]), so a failing run repeats with the same seed. The
//! wrapper counts calls and injected faults per operation, and can make
//! [`Storage::health`] report a failure.
//!
//! Faults apply when an operation is called: a watch can be refused, not cut later; a
//! scan can be refused at its start, not between pages.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use crate::range::{RangeScan, Tombstone};
use crate::{
    BatchWrite, Claim, Encoder, Error, Filter, Key, KeyValue, ListOptions, ListResult,
    Precondition, Prefix, Result, Revision, Storage, StorageStats, WatchReceiver,
};

/// The operations of [`Storage`] a fault can be injected into.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Op {
    Get,
    List,
    Count,
    Put,
    Delete,
    WriteBatch,
    DeleteCluster,
    FenceCluster,
    Clusters,
    Scan,
    Watch,
    Claim,
}

impl Op {
    /// The operations that write: [`Op::Put`], [`Op::Delete`], [`Op::WriteBatch`] and
    /// [`Op::DeleteCluster`].
    pub const WRITES: [Op; 4] = [Op::Put, Op::Delete, Op::WriteBatch, Op::DeleteCluster];
}

/// Makes the error a failing call returns (errors are not `Clone`).
type MakeError = Arc<dyn Fn() -> Error + Send + Sync>;

#[derive(Clone)]
enum Action {
    Fail(MakeError),
    CommitThenFail(MakeError),
    Delay(Duration),
}

/// What happens to a call of the operation it is injected into; see the module docs.
#[derive(Clone)]
pub struct Fault {
    action: Action,
    /// Calls it still applies to (`None`: until cleared).
    times: Option<u64>,
    /// The chance it applies to a call, when not always.
    probability: Option<f64>,
}

impl std::fmt::Debug for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let action = match &self.action {
            Action::Fail(_) => "fail".to_string(),
            Action::CommitThenFail(_) => "commit then fail".to_string(),
            Action::Delay(d) => format!("delay {d:?}"),
        };
        f.debug_struct("Fault")
            .field("action", &action)
            .field("times", &self.times)
            .field("probability", &self.probability)
            .finish()
    }
}

impl Fault {
    fn new(action: Action) -> Fault {
        Fault {
            action,
            times: None,
            probability: None,
        }
    }

    /// The call fails with `error()` and nothing is done.
    pub fn fail(error: impl Fn() -> Error + Send + Sync + 'static) -> Fault {
        Fault::new(Action::Fail(Arc::new(error)))
    }

    /// The call is made (a write is applied and durable) and then reported as failed with
    /// `error()`; a batch reports it for every write.
    pub fn commit_then_fail(error: impl Fn() -> Error + Send + Sync + 'static) -> Fault {
        Fault::new(Action::CommitThenFail(Arc::new(error)))
    }

    /// The call is made after `delay`.
    pub fn delay(delay: Duration) -> Fault {
        Fault::new(Action::Delay(delay))
    }

    /// Applies to the next `n` calls only (the ones it applies to, with a probability).
    pub fn times(mut self, n: u64) -> Fault {
        self.times = Some(n);
        self
    }

    /// Applies to each call with probability `p` (0 to 1), drawn from the wrapper's seeded
    /// generator.
    pub fn with_probability(mut self, p: f64) -> Fault {
        self.probability = Some(p.clamp(0.0, 1.0));
        self
    }
}

/// What one call meets.
enum Outcome {
    Pass,
    Fail(MakeError),
    CommitThenFail(MakeError),
}

#[derive(Default)]
struct Faults {
    rules: Vec<(Op, Fault)>,
    /// splitmix64 state: deterministic for a seed, not cryptographic.
    rng: u64,
    calls: HashMap<Op, u64>,
    injected: HashMap<Op, u64>,
    unhealthy: Option<String>,
}

impl Faults {
    /// A uniform draw in `[0, 1)`.
    fn draw(&mut self) -> f64 {
        self.rng = self.rng.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        (z >> 11) as f64 / (1u64 << 53) as f64
    }

    /// Decides what a call of `op` meets: the sum of the delays that apply, and the first
    /// failure that applies (later rules are then not consulted).
    fn decide(&mut self, op: Op) -> (Duration, Outcome) {
        *self.calls.entry(op).or_default() += 1;
        let mut delay = Duration::ZERO;
        let mut outcome = Outcome::Pass;
        for i in 0..self.rules.len() {
            if self.rules[i].0 != op {
                continue;
            }
            if let Some(p) = self.rules[i].1.probability {
                if self.draw() >= p {
                    continue;
                }
            }
            let fault = &mut self.rules[i].1;
            if let Some(left) = fault.times.as_mut() {
                *left = left.saturating_sub(1);
            }
            let action = fault.action.clone();
            match action {
                Action::Delay(d) => delay += d,
                Action::Fail(e) => outcome = Outcome::Fail(e),
                Action::CommitThenFail(e) => outcome = Outcome::CommitThenFail(e),
            }
            if !matches!(outcome, Outcome::Pass) {
                *self.injected.entry(op).or_default() += 1;
                break;
            }
        }
        self.rules.retain(|(_, f)| f.times != Some(0));
        (delay, outcome)
    }
}

/// A [`Storage`] that passes every call to `inner` except those a [`Fault`] applies to.
pub struct Faulty<S: Storage + ?Sized = dyn Storage> {
    inner: Arc<S>,
    faults: Mutex<Faults>,
}

impl<S: Storage + ?Sized> std::fmt::Debug for Faulty<S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let faults = self.lock();
        f.debug_struct("Faulty")
            .field("rules", &faults.rules)
            .field("calls", &faults.calls)
            .field("injected", &faults.injected)
            .finish_non_exhaustive()
    }
}

impl<S: Storage + ?Sized> Faulty<S> {
    /// Wraps `inner` with no fault injected, drawing probabilities from seed 0.
    pub fn new(inner: Arc<S>) -> Arc<Faulty<S>> {
        Faulty::with_seed(inner, 0)
    }

    /// Wraps `inner`; [`Fault::with_probability`] draws from a generator seeded with `seed`.
    pub fn with_seed(inner: Arc<S>, seed: u64) -> Arc<Faulty<S>> {
        Arc::new(Faulty {
            inner,
            faults: Mutex::new(Faults {
                rng: seed,
                ..Faults::default()
            }),
        })
    }

    /// The wrapped store (to read or write around the faults).
    pub fn inner(&self) -> &Arc<S> {
        &self.inner
    }

    fn lock(&self) -> MutexGuard<'_, Faults> {
        self.faults.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Adds `fault` to the calls of `op`, after those already there.
    pub fn inject(&self, op: Op, fault: Fault) {
        self.lock().rules.push((op, fault));
    }

    /// Fails the next `n` calls of each of `ops` with `error()`.
    pub fn fail_next(&self, ops: &[Op], n: u64, error: impl Fn() -> Error + Send + Sync + 'static) {
        let fault = Fault::fail(error).times(n);
        for op in ops {
            self.inject(*op, fault.clone());
        }
    }

    /// Removes every fault (and the health failure).
    pub fn clear(&self) {
        let mut f = self.lock();
        f.rules.clear();
        f.unhealthy = None;
    }

    /// Removes the faults of `op`.
    pub fn clear_op(&self, op: Op) {
        self.lock().rules.retain(|(o, _)| *o != op);
    }

    /// How many calls of `op` were made (failed ones included).
    pub fn calls(&self, op: Op) -> u64 {
        self.lock().calls.get(&op).copied().unwrap_or(0)
    }

    /// How many calls of `op` a failure was injected into.
    pub fn injected(&self, op: Op) -> u64 {
        self.lock().injected.get(&op).copied().unwrap_or(0)
    }

    /// Makes [`Storage::health`] report `reason` (`None`: the inner store's health again).
    pub fn set_unhealthy(&self, reason: Option<String>) {
        self.lock().unhealthy = reason;
    }

    /// Waits out the delays that apply to a call of `op`; returns its outcome.
    async fn enter(&self, op: Op) -> Outcome {
        let (delay, outcome) = self.lock().decide(op);
        if !delay.is_zero() {
            tokio::time::sleep(delay).await;
        }
        outcome
    }
}

/// Runs `$call` on the inner store unless a fault of `$op` says otherwise.
macro_rules! faulty {
    ($self:ident, $op:expr, $call:expr) => {
        match $self.enter($op).await {
            Outcome::Pass => $call.await,
            Outcome::Fail(e) => Err(e()),
            Outcome::CommitThenFail(e) => {
                let _ = $call.await;
                Err(e())
            }
        }
    };
}

#[async_trait::async_trait]
impl<S: Storage + ?Sized> Storage for Faulty<S> {
    fn current_revision(&self) -> Revision {
        self.inner.current_revision()
    }

    fn health(&self) -> std::result::Result<(), String> {
        match self.lock().unhealthy.clone() {
            Some(reason) => Err(reason),
            None => self.inner.health(),
        }
    }

    fn compacted_revision(&self) -> Revision {
        self.inner.compacted_revision()
    }

    async fn get(&self, key: &Key) -> Result<Option<KeyValue>> {
        faulty!(self, Op::Get, self.inner.get(key))
    }

    async fn list(
        &self,
        prefix: &Prefix,
        opts: &ListOptions,
        filter: Option<Filter<'_>>,
    ) -> Result<ListResult> {
        faulty!(self, Op::List, self.inner.list(prefix, opts, filter))
    }

    async fn count(&self, prefix: &Prefix) -> Result<u64> {
        faulty!(self, Op::Count, self.inner.count(prefix))
    }

    async fn count_after(&self, prefix: &Prefix, start_after: &Key, at: Revision) -> Result<u64> {
        faulty!(
            self,
            Op::Count,
            self.inner.count_after(prefix, start_after, at)
        )
    }

    async fn put(&self, key: Key, precondition: Precondition, encode: Encoder) -> Result<KeyValue> {
        faulty!(self, Op::Put, self.inner.put(key, precondition, encode))
    }

    async fn delete(
        &self,
        key: Key,
        precondition: Precondition,
        encode: Encoder,
    ) -> Result<KeyValue> {
        faulty!(
            self,
            Op::Delete,
            self.inner.delete(key, precondition, encode)
        )
    }

    async fn write_batch(&self, writes: Vec<BatchWrite>) -> Vec<Result<KeyValue>> {
        match self.enter(Op::WriteBatch).await {
            Outcome::Pass => self.inner.write_batch(writes).await,
            Outcome::Fail(e) => writes.iter().map(|_| Err(e())).collect(),
            Outcome::CommitThenFail(e) => {
                let results = self.inner.write_batch(writes).await;
                results.iter().map(|_| Err(e())).collect()
            }
        }
    }

    async fn delete_cluster(
        &self,
        cluster: &str,
        batch: usize,
        tombstone: Tombstone,
    ) -> Result<u64> {
        faulty!(
            self,
            Op::DeleteCluster,
            self.inner.delete_cluster(cluster, batch, tombstone)
        )
    }

    async fn fence_cluster(&self, cluster: &str, fenced: bool) -> Result<Revision> {
        faulty!(
            self,
            Op::FenceCluster,
            self.inner.fence_cluster(cluster, fenced)
        )
    }

    async fn clusters(&self, start_after: Option<&str>, limit: usize) -> Result<Vec<String>> {
        faulty!(self, Op::Clusters, self.inner.clusters(start_after, limit))
    }

    async fn scan(
        &self,
        prefix: &Prefix,
        at: Option<Revision>,
        page_size: usize,
    ) -> Result<Box<dyn RangeScan>> {
        faulty!(self, Op::Scan, self.inner.scan(prefix, at, page_size))
    }

    async fn watch(
        &self,
        prefix: &Prefix,
        from: Revision,
        progress_every: Option<Duration>,
    ) -> Result<WatchReceiver> {
        faulty!(
            self,
            Op::Watch,
            self.inner.watch(prefix, from, progress_every)
        )
    }

    fn stale(&self, kv: &KeyValue) -> bool {
        self.inner.stale(kv)
    }

    fn encrypts(&self, storage_resource: &str) -> bool {
        self.inner.encrypts(storage_resource)
    }

    fn stats(&self) -> StorageStats {
        self.inner.stats()
    }

    fn leadership(&self) -> tokio::sync::watch::Receiver<bool> {
        self.inner.leadership()
    }

    fn shared(&self) -> bool {
        self.inner.shared()
    }

    async fn claim(&self, name: &str) -> Result<Option<Claim>> {
        faulty!(self, Op::Claim, self.inner.claim(name))
    }

    async fn shutdown(&self) -> Result<()> {
        self.inner.shutdown().await
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used, clippy::expect_used)]
mod tests {
    use super::*;
    use crate::memory::{MemoryStorage, MemoryStorageOptions};
    use crate::testing::conformance::{bw, enc, key, list_all, val};

    fn faulty() -> Arc<Faulty> {
        let inner: Arc<dyn Storage> = MemoryStorage::new(MemoryStorageOptions::default());
        Faulty::new(inner)
    }

    fn dyn_store(s: &Arc<Faulty>) -> Arc<dyn Storage> {
        s.clone()
    }

    fn disk_full() -> Error {
        Error::Backend("disk full".into())
    }

    async fn put(s: &Faulty, name: &str) -> Result<KeyValue> {
        s.put(key("c", "ns", name), Precondition::MustNotExist, enc("v"))
            .await
    }

    #[tokio::test]
    async fn the_next_n_calls_fail_and_write_nothing() {
        let s = faulty();
        s.fail_next(&[Op::Put], 2, disk_full);
        for name in ["a", "b"] {
            let e = put(&s, name).await.unwrap_err();
            assert!(matches!(&e, Error::Backend(m) if m == "disk full"), "{e:?}");
        }
        assert_eq!(s.current_revision(), 0, "nothing was written");
        assert!(s.get(&key("c", "ns", "a")).await.unwrap().is_none());
        // The third call passes; other operations never failed.
        assert_eq!(put(&s, "a").await.unwrap().mod_revision, 1);
        assert_eq!((s.calls(Op::Put), s.injected(Op::Put)), (3, 2));
        assert_eq!((s.calls(Op::Get), s.injected(Op::Get)), (1, 0));
    }

    #[tokio::test]
    async fn faults_hold_until_cleared_and_only_for_their_operation() {
        let s = faulty();
        s.inject(Op::Get, Fault::fail(|| Error::Timeout("slow disk".into())));
        s.inject(Op::Watch, Fault::fail(|| Error::ShuttingDown));
        put(&s, "a").await.unwrap();
        for _ in 0..3 {
            assert!(matches!(
                s.get(&key("c", "ns", "a")).await,
                Err(Error::Timeout(_))
            ));
        }
        assert!(matches!(
            s.watch(&Prefix::cluster("c"), 0, None).await,
            Err(Error::ShuttingDown)
        ));
        assert_eq!(
            list_all(&dyn_store(&s), &Prefix::cluster("c"), None)
                .await
                .len(),
            1
        );
        s.clear_op(Op::Get);
        assert!(s.get(&key("c", "ns", "a")).await.unwrap().is_some());
        assert!(s.watch(&Prefix::cluster("c"), 0, None).await.is_err());
        s.clear();
        assert!(s.watch(&Prefix::cluster("c"), 0, None).await.is_ok());
    }

    /// The ambiguous commit: the caller sees an error, the write is durable and watchers
    /// see it.
    #[tokio::test]
    async fn commit_then_fail_applies_the_write() {
        let s = faulty();
        let mut rx = s.watch(&Prefix::cluster("c"), 0, None).await.unwrap();
        s.inject(
            Op::Put,
            Fault::commit_then_fail(|| Error::Timeout("no reply".into())).times(1),
        );
        assert!(matches!(put(&s, "a").await, Err(Error::Timeout(_))));
        let stored = s.get(&key("c", "ns", "a")).await.unwrap().unwrap();
        assert_eq!(val(&stored), "v@1");
        let e = crate::testing::conformance::next_event(&mut rx).await;
        assert_eq!(e.kv, stored);
        // A retry of the create finds it.
        assert!(matches!(put(&s, "a").await, Err(Error::AlreadyExists)));
    }

    #[tokio::test]
    async fn batches_fail_whole_or_commit_whole() {
        let s = faulty();
        let writes = |v: &str| {
            vec![
                bw(key("c", "ns", "a"), false, Precondition::MustNotExist, v),
                bw(key("c", "ns", "b"), false, Precondition::MustNotExist, v),
            ]
        };
        s.fail_next(&[Op::WriteBatch], 1, disk_full);
        let r = s.write_batch(writes("x")).await;
        assert_eq!(r.len(), 2);
        assert!(r.iter().all(|r| matches!(r, Err(Error::Backend(_)))));
        assert_eq!(s.current_revision(), 0);
        s.inject(Op::WriteBatch, Fault::commit_then_fail(disk_full).times(1));
        let r = s.write_batch(writes("y")).await;
        assert!(r.iter().all(Result::is_err));
        assert_eq!(
            list_all(&dyn_store(&s), &Prefix::cluster("c"), None)
                .await
                .len(),
            2
        );
        assert!(s.write_batch(vec![]).await.is_empty());
    }

    /// The same seed fails the same calls; about the asked share of them fail.
    #[tokio::test]
    async fn probabilities_are_seeded() {
        async fn pattern(seed: u64) -> Vec<bool> {
            let inner: Arc<dyn Storage> = MemoryStorage::new(MemoryStorageOptions::default());
            let s = Faulty::with_seed(inner, seed);
            s.inject(Op::Get, Fault::fail(disk_full).with_probability(0.3));
            let mut out = Vec::new();
            for _ in 0..1000 {
                out.push(s.get(&key("c", "ns", "a")).await.is_err());
            }
            assert_eq!(
                s.injected(Op::Get),
                out.iter().filter(|f| **f).count() as u64
            );
            out
        }
        let a = pattern(7).await;
        assert_eq!(a, pattern(7).await);
        assert_ne!(a, pattern(8).await);
        let failed = a.iter().filter(|f| **f).count();
        assert!((200..400).contains(&failed), "{failed} of 1000");
    }

    #[tokio::test]
    async fn delays_and_health() {
        let s = faulty();
        let delay = Duration::from_millis(50);
        s.inject(Op::Put, Fault::delay(delay).times(1));
        let start = tokio::time::Instant::now();
        put(&s, "a").await.unwrap();
        assert!(start.elapsed() >= delay);
        assert_eq!(s.injected(Op::Put), 0, "a delay is not a failure");
        assert!(s.health().is_ok());
        s.set_unhealthy(Some("stuck".into()));
        assert_eq!(s.health(), Err("stuck".to_string()));
        s.clear();
        assert!(s.health().is_ok());
    }
}
