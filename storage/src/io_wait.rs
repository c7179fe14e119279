//! The time a request spends waiting for the store's writer (its turn in a group commit,
//! the commit's fsync or transaction), made visible to whoever runs the request. Waiting
//! uses no CPU, so kplane's fair queuing hands the request's seats to others meanwhile
//! (`apiserver/src/flowcontrol`): writes wait for durability in large groups without
//! each holding a seat, while the seats still bound the work that uses the cores.
//!
//! The runner wraps the request in [`scope`] with its [`IoWait`]; the backends wrap each
//! wait for their writer in [`waiting`]. Outside a scope (background work) it does
//! nothing.

use std::future::Future;
use std::sync::Arc;

use tokio::sync::oneshot;

use crate::{Error, KeyValue, Result};

/// Told when the current request starts and stops waiting for the store.
pub trait IoWait: Send + Sync {
    /// The request waits for the store from now on.
    fn begin(&self);
    /// The request runs again.
    fn end(&self);
}

tokio::task_local! {
    static WAITER: Arc<dyn IoWait>;
}

/// Runs `f` with `waiter` told of its waits for the store.
pub async fn scope<F: Future>(waiter: Arc<dyn IoWait>, f: F) -> F::Output {
    WAITER.scope(waiter, f).await
}

/// Ends a wait when dropped, so that a request cancelled while waiting ends it too.
struct Ending(Option<Arc<dyn IoWait>>);

impl Drop for Ending {
    fn drop(&mut self) {
        if let Some(w) = &self.0 {
            w.end();
        }
    }
}

/// Awaits `f`, a wait for the store's writer, telling the current scope's waiter.
pub async fn waiting<F: Future>(f: F) -> F::Output {
    let waiter = WAITER.try_with(Arc::clone).ok();
    if let Some(w) = &waiter {
        w.begin();
    }
    let _ending = Ending(waiter);
    f.await
}

/// A write's reply from the store's writer, awaited as a wait for the store; the writer
/// gone is [`Error::ShuttingDown`].
pub(crate) async fn reply(rx: oneshot::Receiver<Result<KeyValue>>) -> Result<KeyValue> {
    waiting(rx).await.unwrap_or(Err(Error::ShuttingDown))
}

/// The replies of a batch's writes, in order, awaited as one wait for the store.
pub(crate) async fn replies(
    pending: Vec<oneshot::Receiver<Result<KeyValue>>>,
) -> Vec<Result<KeyValue>> {
    waiting(async move {
        let mut out = Vec::with_capacity(pending.len());
        for rx in pending {
            out.push(rx.await.unwrap_or(Err(Error::ShuttingDown)));
        }
        out
    })
    .await
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

    #[derive(Default)]
    struct Count {
        waiting: AtomicI64,
        waits: AtomicU64,
    }

    impl IoWait for Count {
        fn begin(&self) {
            self.waiting.fetch_add(1, Ordering::SeqCst);
            self.waits.fetch_add(1, Ordering::SeqCst);
        }
        fn end(&self) {
            self.waiting.fetch_sub(1, Ordering::SeqCst);
        }
    }

    #[tokio::test]
    async fn a_scope_hears_of_each_wait_and_its_end_even_when_cancelled() {
        let count = Arc::new(Count::default());
        let c = count.clone();
        scope(count.clone(), async move {
            waiting(async {}).await;
            waiting(async {}).await;
            assert_eq!(c.waiting.load(Ordering::SeqCst), 0);
            // A wait that never ends, cancelled: its end is still heard.
            let never = waiting(std::future::pending::<()>());
            let _ = tokio::time::timeout(std::time::Duration::from_millis(1), never).await;
        })
        .await;
        assert_eq!(count.waits.load(Ordering::SeqCst), 3);
        assert_eq!(count.waiting.load(Ordering::SeqCst), 0);
        // Outside a scope nothing is told.
        waiting(async {}).await;
        assert_eq!(count.waits.load(Ordering::SeqCst), 3);
    }
}
