//! The controllers' contract and the items of their shared work queue.
//!
//! A controller implements [`Controller`]: its own key type (what one unit of its work
//! names: a namespace, an object, a logical cluster), its state, and `reconcile`, which
//! brings the stored state of one key to what it should be. Controllers are registered
//! once, when the registry is built ([`Registered`]: [`super::builtin`] lists kplane's
//! own); everything else names one by its type: `registry.enqueue::<C>(key)`, or
//! `registry.work::<C>(key)` for an item to give a deadline (`timers`). The queue's machinery (deduplication, retries,
//! deadlines, the one-at-a-time worker and the concurrent pool) sees only [`Item`]s, a
//! key with its controller behind a type-erased handle, and never what the key means.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::pin::Pin;
use std::sync::Arc;

use kplane_types::ClusterName;

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::AtomicU64;
use std::sync::{Mutex, MutexGuard};

use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::error::ApiResult;

/// One controller: the work it does for a key, given the registry `R` it is registered
/// with (kplane's `Registry`; this contract names none). Its items run one at a time on
/// the controllers' worker unless [`Controller::pooled`] says they run on the concurrent
/// pool.
pub trait Controller<R>: Send + Sync + 'static {
    /// What one unit of its work names. Two equal keys queued before the first runs run
    /// once.
    type Key: Clone + fmt::Debug + Eq + Hash + Send + Sync + 'static;

    /// The name it logs under (upstream's controller name where there is one).
    fn name(&self) -> &'static str;

    /// Brings `key`'s stored state where it should be, reading it afresh: `Ok(true)` when
    /// done, `Ok(false)` (or an error, logged) to run again after [`super::RETRY_EVERY`].
    fn reconcile<'a>(
        &'a self,
        registry: &'a R,
        key: &'a Self::Key,
    ) -> impl Future<Output = ApiResult<bool>> + Send + 'a;

    /// Whether its items run on the bounded concurrent pool (`pool`) instead of the
    /// one-at-a-time worker.
    fn pooled(&self) -> bool {
        false
    }

    /// Whether `key` runs on the foreground runtime (a client waits for it) rather than the
    /// background one. Only pooled items are asked; the worker's all run in the background.
    fn in_foreground(&self, _registry: &R, _key: &Self::Key) -> bool {
        false
    }
}

/// An object in a logical cluster, by name (a namespace, a CRD, a Workspace, a SyncTarget).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Named {
    pub cluster: ClusterName,
    pub name: String,
}

impl Named {
    pub fn new(cluster: ClusterName, name: impl Into<String>) -> Named {
        Named {
            cluster,
            name: name.into(),
        }
    }
}

/// A namespace of a logical cluster, for work over what it holds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InNamespace {
    pub cluster: ClusterName,
    pub namespace: String,
}

impl InNamespace {
    pub fn new(cluster: ClusterName, namespace: impl Into<String>) -> InNamespace {
        InNamespace {
            cluster,
            namespace: namespace.into(),
        }
    }
}

type Reconciling<'a> = Pin<Box<dyn Future<Output = ApiResult<bool>> + Send + 'a>>;

/// What the queue needs of a key and its controller, without their types.
trait Erased<R>: Send + Sync {
    fn controller(&self) -> TypeId;
    fn key(&self) -> &dyn Any;
    fn same_key(&self, other: &dyn Erased<R>) -> bool;
    fn hash_key(&self, state: &mut dyn Hasher);
    fn run<'a>(&'a self, registry: &'a R) -> Reconciling<'a>;
    fn pooled(&self) -> bool;
    fn in_foreground(&self, registry: &R) -> bool;
    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
}

struct Typed<C, K> {
    controller: Arc<C>,
    key: K,
}

impl<R, C: Controller<R>> Erased<R> for Typed<C, C::Key> {
    fn controller(&self) -> TypeId {
        TypeId::of::<C>()
    }

    fn key(&self) -> &dyn Any {
        &self.key
    }

    fn same_key(&self, other: &dyn Erased<R>) -> bool {
        other
            .key()
            .downcast_ref::<C::Key>()
            .is_some_and(|k| *k == self.key)
    }

    fn hash_key(&self, mut state: &mut dyn Hasher) {
        self.key.hash(&mut state);
    }

    fn run<'a>(&'a self, registry: &'a R) -> Reconciling<'a> {
        Box::pin(self.controller.reconcile(registry, &self.key))
    }

    fn pooled(&self) -> bool {
        self.controller.pooled()
    }

    fn in_foreground(&self, registry: &R) -> bool {
        self.controller.in_foreground(registry, &self.key)
    }

    fn describe(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} {:?}", self.controller.name(), self.key)
    }
}

/// One unit of controller work: a key of one controller. Equal when both are.
pub struct Item<R>(Arc<dyn Erased<R>>);

impl<R> Clone for Item<R> {
    fn clone(&self) -> Self {
        Item(self.0.clone())
    }
}

impl<R> Item<R> {
    /// The item of `key` for `controller`.
    pub fn new<C: Controller<R>>(controller: Arc<C>, key: C::Key) -> Item<R> {
        Item(Arc::new(Typed { controller, key }))
    }

    /// Reconciles it.
    pub(crate) fn run<'a>(&'a self, registry: &'a R) -> Reconciling<'a> {
        self.0.run(registry)
    }

    pub(crate) fn pooled(&self) -> bool {
        self.0.pooled()
    }

    pub(crate) fn in_foreground(&self, registry: &R) -> bool {
        self.0.in_foreground(registry)
    }

    /// Its key, when it is an item of controller `C`.
    #[cfg(test)]
    pub(crate) fn key_of<C: Controller<R>>(&self) -> Option<&C::Key> {
        match self.0.controller() == TypeId::of::<C>() {
            true => self.0.key().downcast_ref::<C::Key>(),
            false => None,
        }
    }
}

impl<R> PartialEq for Item<R> {
    fn eq(&self, other: &Item<R>) -> bool {
        self.0.controller() == other.0.controller() && self.0.same_key(&*other.0)
    }
}

impl<R> Eq for Item<R> {}

impl<R> Hash for Item<R> {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.controller().hash(state);
        self.0.hash_key(state);
    }
}

impl<R> fmt::Debug for Item<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.describe(f)
    }
}

/// The controllers a registry `R` runs, one of each type.
pub struct Registered<R> {
    by_type: HashMap<TypeId, Arc<dyn Any + Send + Sync>>,
    registry: std::marker::PhantomData<fn(&R)>,
}

impl<R> Default for Registered<R> {
    fn default() -> Self {
        Registered {
            by_type: HashMap::new(),
            registry: std::marker::PhantomData,
        }
    }
}

impl<R> Registered<R> {
    /// Adds `controller` (replacing one of the same type).
    pub fn with<C: Controller<R>>(mut self, controller: C) -> Registered<R> {
        self.by_type.insert(
            TypeId::of::<C>(),
            Arc::new(controller) as Arc<dyn Any + Send + Sync>,
        );
        self
    }

    /// The registered controller of type `C`.
    pub(crate) fn get<C: Controller<R>>(&self) -> Option<Arc<C>> {
        self.by_type
            .get(&TypeId::of::<C>())?
            .clone()
            .downcast::<C>()
            .ok()
    }

    /// The item of `key` for the registered `C`; `None` (logged) when `C` is not
    /// registered, a mistake of whoever built the registry.
    pub(crate) fn item<C: Controller<R>>(&self, key: C::Key) -> Option<Item<R>> {
        match self.get::<C>() {
            Some(c) => Some(Item::new(c, key)),
            None => {
                tracing::error!(
                    controller = std::any::type_name::<C>(),
                    ?key,
                    "work for a controller that is not registered; dropped"
                );
                None
            }
        }
    }
}

impl<R> fmt::Debug for Registered<R> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registered")
            .field("controllers", &self.by_type.len())
            .finish()
    }
}

/// Items waiting: queued to run, or delayed before a retry.
#[derive(Debug)]
pub(crate) struct Waiting<R> {
    pub(crate) queued: HashSet<Item<R>>,
    pub(crate) delayed: HashSet<Item<R>>,
}

impl<R> Default for Waiting<R> {
    fn default() -> Self {
        Waiting {
            queued: HashSet::new(),
            delayed: HashSet::new(),
        }
    }
}

/// The controllers' shared state inside the registry: the registered controllers, the work
/// queue and the deadlines.
#[derive(Debug)]
pub(crate) struct Shared<R> {
    /// The controllers, one of each type.
    pub(crate) registered: Registered<R>,
    pub(crate) queue: UnboundedSender<Item<R>>,
    pub(crate) waiting: Mutex<Waiting<R>>,
    /// Items queued or running (delayed ones not counted), for `/metrics`.
    pub(crate) queued: AtomicU64,
    /// Deadlines of work that waits for time to pass (`timers`).
    pub(crate) timers: Timers<R>,
    /// Whether this process runs the controllers now (`leader`): true until `start`
    /// learns otherwise from the store. While false, nothing is queued (the leader finds
    /// the work from the storage events).
    pub(crate) leader: std::sync::atomic::AtomicBool,
}

impl<R> Shared<R> {
    /// The state of `registered` and the receiving end of its work queue (for
    /// `run_worker`).
    pub(crate) fn new(registered: Registered<R>) -> (Shared<R>, UnboundedReceiver<Item<R>>) {
        let (queue, rx) = tokio::sync::mpsc::unbounded_channel();
        let shared = Shared {
            registered,
            queue,
            waiting: Mutex::new(Waiting::default()),
            queued: AtomicU64::new(0),
            timers: Timers::default(),
            leader: std::sync::atomic::AtomicBool::new(true),
        };
        (shared, rx)
    }

    pub(crate) fn waiting(&self) -> MutexGuard<'_, Waiting<R>> {
        // Nothing panics while holding it; a poisoned set is still a valid set.
        self.waiting
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The deadlines, earliest first.
#[derive(Debug)]
pub(crate) struct Wheel<R> {
    /// (deadline, sequence number) → item; the sequence keeps equal deadlines apart.
    pub(crate) by_time: BTreeMap<(Instant, u64), Item<R>>,
    /// item → its key in `by_time`.
    pub(crate) by_item: HashMap<Item<R>, (Instant, u64)>,
    pub(crate) seq: u64,
}

impl<R> Default for Wheel<R> {
    fn default() -> Self {
        Wheel {
            by_time: BTreeMap::new(),
            by_item: HashMap::new(),
            seq: 0,
        }
    }
}

/// Work items waiting for their deadline.
#[derive(Debug)]
pub(crate) struct Timers<R> {
    pub(crate) wheel: Mutex<Wheel<R>>,
    /// Woken when an earlier deadline may have been added.
    pub(crate) changed: Notify,
}

impl<R> Default for Timers<R> {
    fn default() -> Self {
        Timers {
            wheel: Mutex::new(Wheel::default()),
            changed: Notify::new(),
        }
    }
}

impl<R> Timers<R> {
    pub(crate) fn wheel(&self) -> MutexGuard<'_, Wheel<R>> {
        // Nothing panics while holding it; a poisoned wheel is still a valid wheel.
        self.wheel
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Queues `w` at `at` (replacing an earlier deadline of the same item).
    pub(crate) fn schedule(&self, w: Item<R>, at: Instant) {
        let mut wheel = self.wheel();
        if let Some(old) = wheel.by_item.remove(&w) {
            wheel.by_time.remove(&old);
        }
        wheel.seq += 1;
        let key = (at, wheel.seq);
        let earliest = wheel.by_time.keys().next().is_none_or(|first| key < *first);
        wheel.by_time.insert(key, w.clone());
        wheel.by_item.insert(w, key);
        drop(wheel);
        if earliest {
            self.changed.notify_one();
        }
    }

    /// Queues `w` at `at` unless it already has a deadline at or before `at`.
    pub(crate) fn schedule_unless_sooner(&self, w: Item<R>, at: Instant) {
        if self.wheel().by_item.get(&w).is_some_and(|k| k.0 <= at) {
            return;
        }
        self.schedule(w, at);
    }

    /// Forgets the deadline of `w`, if any.
    pub(crate) fn cancel(&self, w: &Item<R>) {
        let mut wheel = self.wheel();
        if let Some(old) = wheel.by_item.remove(w) {
            wheel.by_time.remove(&old);
        }
    }

    /// Forgets every deadline (this replica stopped leading: the next leader's controllers
    /// schedule them again from what they replay).
    pub(crate) fn clear(&self) {
        let mut wheel = self.wheel();
        wheel.by_time.clear();
        wheel.by_item.clear();
    }

    /// The deadline of `w`, if it has one.
    #[cfg(test)]
    pub(crate) fn deadline(&self, w: &Item<R>) -> Option<Instant> {
        self.wheel().by_item.get(w).map(|k| k.0)
    }

    /// How many items wait for a deadline.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.wheel().by_item.len()
    }

    /// Removes and returns the items due at `now`; and the next deadline after them.
    pub(crate) fn take_due(&self, now: Instant) -> (Vec<Item<R>>, Option<Instant>) {
        let mut wheel = self.wheel();
        let mut due = Vec::new();
        while let Some(entry) = wheel.by_time.first_entry() {
            if entry.key().0 > now {
                break;
            }
            let w = entry.remove();
            wheel.by_item.remove(&w);
            due.push(w);
        }
        let next = wheel.by_time.keys().next().map(|k| k.0);
        (due, next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    struct A;
    struct B;

    impl Controller<()> for A {
        type Key = Named;
        fn name(&self) -> &'static str {
            "a"
        }
        async fn reconcile(&self, _: &(), _: &Named) -> ApiResult<bool> {
            Ok(true)
        }
    }

    impl Controller<()> for B {
        type Key = Named;
        fn name(&self) -> &'static str {
            "b"
        }
        async fn reconcile(&self, _: &(), _: &Named) -> ApiResult<bool> {
            Ok(true)
        }
    }

    fn key(name: &str) -> Named {
        Named::new(ClusterName::root(), name)
    }

    #[test]
    fn items_are_equal_when_controller_and_key_are() {
        let reg = Registered::<()>::default().with(A).with(B);
        let a1 = reg.item::<A>(key("x")).unwrap();
        let a1_again = reg.item::<A>(key("x")).unwrap();
        let a2 = reg.item::<A>(key("y")).unwrap();
        let b1 = reg.item::<B>(key("x")).unwrap();
        assert_eq!(a1, a1_again);
        assert_ne!(a1, a2);
        assert_ne!(a1, b1, "the same key of another controller is another item");
        let set: HashSet<Item<()>> = [a1, a1_again, a2, b1].into_iter().collect();
        assert_eq!(set.len(), 3);
        assert_eq!(
            format!("{:?}", reg.item::<B>(key("x")).unwrap()),
            format!("b {:?}", key("x"))
        );
    }

    #[test]
    fn an_unregistered_controller_gets_no_item() {
        let reg = Registered::<()>::default().with(A);
        assert!(reg.item::<B>(key("x")).is_none());
        assert_eq!(
            reg.item::<A>(key("x")).unwrap().key_of::<A>(),
            Some(&key("x"))
        );
        assert_eq!(reg.item::<A>(key("x")).unwrap().key_of::<B>(), None);
    }
}
