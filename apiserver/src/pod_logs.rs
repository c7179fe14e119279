//! Pod logs through the syncers (docs/sync.md, "Pod logs"). kplane runs nothing: the log of
//! a reflected pod is read on its host by the syncer of the SyncTarget the reflection names.
//! The syncer is a client of kplane, which cannot call it, so this broker is where the two
//! meet: a log request waits here until the target's syncer, long-polling its sync
//! endpoint ([`LogBroker::take`]), takes it; the syncer then posts the host's answer back in
//! pieces ([`LogBroker::deliver`]): first its status code, then the bytes, then the end,
//! which the waiting response passes on as they come.
//!
//! The broker is in memory: the syncer must poll the same server the log request reaches
//! (one server, or replicas whose load balancer keeps a syncer and its users together).

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use kplane_registry::pod_logs::LogRoute;
use serde::Serialize;
use tokio::sync::{mpsc, oneshot, Notify};

/// How long a log request waits for its syncer to answer with a status code.
pub const ANSWER_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a log stream may go without a piece from the syncer (which sends an empty one
/// every [`KEEPALIVE`] while the host's stream is quiet) before it is ended.
pub const IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// How often a syncer says a quiet stream is still open (documented for the syncer).
pub const KEEPALIVE: Duration = Duration::from_secs(20);
/// How long after its last poll a syncer still counts as connected (it polls again at once
/// after each answer).
const POLL_GRACE: Duration = Duration::from_secs(10);
/// Pieces buffered per stream before a syncer's post waits for the reader (each at most
/// the sync endpoint's largest piece, 256 KiB: 1 MiB per stream).
const BUFFERED_PIECES: usize = 4;
/// Log requests open at once (waiting or streaming) per SyncTarget, and per logical
/// cluster of the pods: past them a request is refused with 429, so one tenant's many
/// `kubectl logs -f` neither exhaust the server's memory nor take a shared syncer's.
pub const MAX_OPEN_PER_TARGET: usize = 256;
pub const MAX_OPEN_PER_CLUSTER: usize = 64;

/// One log request as the syncer receives it.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LogRequest {
    pub id: String,
    pub cluster: String,
    pub namespace: String,
    pub pod: String,
    /// `<host namespace>/<name>` of the host pod ("" when the reflection does not say).
    pub host_pod: String,
    pub container: String,
    /// The query of the host's `pods/log` request.
    pub query: String,
}

/// Why a request could not be served or a piece not delivered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BrokerError {
    /// No syncer of the target polls this server.
    NoSyncer,
    /// The syncer did not answer in time.
    NoAnswer,
    /// Too many requests are open for the target or the pod's logical cluster.
    TooMany,
    /// No such request for this target (delivery).
    Unknown,
    /// The reader went away (delivery): the syncer should stop.
    Gone,
}

/// The head of a syncer's answer: the host's status code.
#[derive(Debug)]
pub struct Opened {
    pub code: u16,
    /// The answer's bytes, as the syncer posts them.
    pub body: LogBody,
}

#[derive(Default)]
struct TargetQueue {
    pending: VecDeque<LogRequest>,
    notify: Arc<Notify>,
    polling: usize,
    last_poll: Option<Instant>,
}

struct Stream {
    target: String,
    /// The logical cluster of the pod.
    cluster: String,
    head: Option<oneshot::Sender<u16>>,
    pieces: Option<mpsc::Sender<Bytes>>,
}

#[derive(Default)]
struct Inner {
    targets: HashMap<String, TargetQueue>,
    streams: HashMap<String, Stream>,
}

/// The meeting point of log requests and syncers.
#[derive(Default)]
pub struct LogBroker {
    inner: Arc<Mutex<Inner>>,
}

impl std::fmt::Debug for LogBroker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogBroker").finish_non_exhaustive()
    }
}

fn lock(inner: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    inner
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Removes a request when its reader goes (answered, failed or dropped).
struct Forget {
    inner: Arc<Mutex<Inner>>,
    id: String,
}

impl Drop for Forget {
    fn drop(&mut self) {
        let mut g = lock(&self.inner);
        if let Some(s) = g.streams.remove(&self.id) {
            if let Some(q) = g.targets.get_mut(&s.target) {
                q.pending.retain(|r| r.id != self.id);
            }
        }
    }
}

/// The bytes of an answer: the pieces the syncer posts, empty ones (keepalives) skipped,
/// ended by the syncer's last piece or [`IDLE_TIMEOUT`] of silence.
pub struct LogBody {
    rx: mpsc::Receiver<Bytes>,
    _forget: Forget,
}

impl std::fmt::Debug for LogBody {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogBody").finish_non_exhaustive()
    }
}

impl LogBody {
    /// The next non-empty piece; `None` at the end.
    pub async fn next(&mut self) -> Option<Bytes> {
        loop {
            match tokio::time::timeout(IDLE_TIMEOUT, self.rx.recv()).await {
                Ok(Some(b)) if b.is_empty() => continue,
                Ok(Some(b)) => return Some(b),
                Ok(None) | Err(_) => return None,
            }
        }
    }

    /// Everything up to the end, at most `limit` bytes (an error answer's body).
    pub async fn collect(mut self, limit: usize) -> Vec<u8> {
        let mut out = Vec::new();
        while let Some(b) = self.next().await {
            let room = limit.saturating_sub(out.len());
            out.extend_from_slice(&b[..b.len().min(room)]);
            if out.len() >= limit {
                break;
            }
        }
        out
    }

    /// The pieces as a stream, for a response body.
    pub fn into_stream(self) -> impl futures::Stream<Item = Result<Bytes, std::io::Error>> {
        futures::stream::unfold(self, |mut body| async move {
            body.next().await.map(|b| (Ok(b), body))
        })
    }
}

impl LogBroker {
    /// Hands `route` to its target's syncer and waits for the host's status code.
    pub async fn open(&self, route: LogRoute) -> Result<Opened, BrokerError> {
        let id = uuid::Uuid::new_v4().to_string();
        let (head_tx, head_rx) = oneshot::channel();
        let (tx, rx) = mpsc::channel(BUFFERED_PIECES);
        {
            let mut g = lock(&self.inner);
            let connected = g.targets.get(&route.target).is_some_and(|q| {
                q.polling > 0 || q.last_poll.is_some_and(|t| t.elapsed() < POLL_GRACE)
            });
            if !connected {
                return Err(BrokerError::NoSyncer);
            }
            let (mut of_target, mut of_cluster) = (0, 0);
            for s in g.streams.values() {
                of_target += usize::from(s.target == route.target);
                of_cluster += usize::from(s.cluster == route.cluster);
            }
            if of_target >= MAX_OPEN_PER_TARGET || of_cluster >= MAX_OPEN_PER_CLUSTER {
                return Err(BrokerError::TooMany);
            }
            let cluster = route.cluster.clone();
            let q = g.targets.entry(route.target.clone()).or_default();
            q.pending.push_back(LogRequest {
                id: id.clone(),
                cluster: route.cluster,
                namespace: route.namespace,
                pod: route.pod,
                host_pod: route.host_pod,
                container: route.container,
                query: route.query,
            });
            q.notify.notify_waiters();
            g.streams.insert(
                id.clone(),
                Stream {
                    target: route.target,
                    cluster,
                    head: Some(head_tx),
                    pieces: Some(tx),
                },
            );
        }
        let body = LogBody {
            rx,
            _forget: Forget {
                inner: Arc::clone(&self.inner),
                id,
            },
        };
        match tokio::time::timeout(ANSWER_TIMEOUT, head_rx).await {
            Ok(Ok(code)) => Ok(Opened { code, body }),
            _ => Err(BrokerError::NoAnswer),
        }
    }

    /// The requests waiting for `target`'s syncer, waiting up to `wait` for one.
    pub async fn take(&self, target: &str, wait: Duration) -> Vec<LogRequest> {
        let _polling = Polling::start(&self.inner, target);
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            let notify = {
                let mut g = lock(&self.inner);
                let q = g.targets.entry(target.to_string()).or_default();
                if !q.pending.is_empty() {
                    return q.pending.drain(..).collect();
                }
                Arc::clone(&q.notify)
            };
            let notified = notify.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            // A request queued between the check above and `enable` is seen now.
            {
                let mut g = lock(&self.inner);
                if let Some(q) = g.targets.get_mut(target) {
                    if !q.pending.is_empty() {
                        return q.pending.drain(..).collect();
                    }
                }
            }
            if tokio::time::timeout_at(deadline, notified).await.is_err() {
                return Vec::new();
            }
        }
    }

    /// A piece of request `id`'s answer from `target`'s syncer: the status code (first),
    /// bytes, and whether it is the last.
    pub async fn deliver(
        &self,
        target: &str,
        id: &str,
        code: Option<u16>,
        bytes: Bytes,
        end: bool,
    ) -> Result<(), BrokerError> {
        let pieces = {
            let mut g = lock(&self.inner);
            let Some(s) = g.streams.get_mut(id).filter(|s| s.target == target) else {
                return Err(BrokerError::Unknown);
            };
            if let Some(code) = code {
                if let Some(head) = s.head.take() {
                    if head.send(code).is_err() {
                        return Err(BrokerError::Gone);
                    }
                }
            }
            if end {
                // Dropping the sender ends the body once the buffered pieces are read.
                let tx = s.pieces.take();
                g.streams.remove(id);
                tx
            } else {
                s.pieces.clone()
            }
        };
        let Some(pieces) = pieces else {
            return Err(BrokerError::Gone);
        };
        if bytes.is_empty() && end {
            return Ok(());
        }
        pieces.send(bytes).await.map_err(|_| BrokerError::Gone)
    }
}

/// Counts a syncer as connected while it polls, and notes when it last did.
struct Polling {
    inner: Arc<Mutex<Inner>>,
    target: String,
}

impl Polling {
    fn start(inner: &Arc<Mutex<Inner>>, target: &str) -> Self {
        let mut g = lock(inner);
        let q = g.targets.entry(target.to_string()).or_default();
        q.polling += 1;
        q.last_poll = Some(Instant::now());
        Polling {
            inner: Arc::clone(inner),
            target: target.to_string(),
        }
    }
}

impl Drop for Polling {
    fn drop(&mut self) {
        let mut g = lock(&self.inner);
        if let Some(q) = g.targets.get_mut(&self.target) {
            q.polling = q.polling.saturating_sub(1);
            q.last_poll = Some(Instant::now());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(target: &str) -> LogRoute {
        LogRoute {
            target: target.into(),
            cluster: "root:a".into(),
            namespace: "default".into(),
            pod: "pi-x".into(),
            host_pod: "kplane-1/pi-x".into(),
            container: "main".into(),
            query: "container=main".into(),
        }
    }

    #[tokio::test]
    async fn without_a_polling_syncer_a_request_is_refused_at_once() {
        let b = LogBroker::default();
        assert_eq!(
            b.open(route("root/east")).await.err(),
            Some(BrokerError::NoSyncer)
        );
    }

    #[tokio::test]
    async fn a_request_reaches_the_polling_syncer_and_its_pieces_come_back_in_order() {
        let b = Arc::new(LogBroker::default());
        let poller = {
            let b = Arc::clone(&b);
            tokio::spawn(async move { b.take("root/east", Duration::from_secs(5)).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        let opener = {
            let b = Arc::clone(&b);
            tokio::spawn(async move { b.open(route("root/east")).await })
        };
        let reqs = poller.await.unwrap();
        assert_eq!(reqs.len(), 1);
        let id = reqs[0].id.clone();
        assert_eq!(reqs[0].host_pod, "kplane-1/pi-x");
        // Another target's syncer cannot answer it.
        assert_eq!(
            b.deliver("root/west", &id, Some(200), Bytes::new(), false)
                .await,
            Err(BrokerError::Unknown)
        );
        b.deliver("root/east", &id, Some(200), Bytes::from("a\n"), false)
            .await
            .unwrap();
        let mut opened = opener.await.unwrap().unwrap();
        assert_eq!(opened.code, 200);
        b.deliver("root/east", &id, None, Bytes::new(), false)
            .await
            .unwrap();
        b.deliver("root/east", &id, None, Bytes::from("b\n"), true)
            .await
            .unwrap();
        assert_eq!(opened.body.next().await.unwrap(), "a\n");
        assert_eq!(
            opened.body.next().await.unwrap(),
            "b\n",
            "keepalives are skipped"
        );
        assert_eq!(opened.body.next().await, None);
        assert_eq!(
            b.deliver("root/east", &id, None, Bytes::from("c"), false)
                .await,
            Err(BrokerError::Unknown),
            "an ended request is forgotten"
        );
    }

    #[tokio::test]
    async fn a_reader_that_goes_away_stops_the_syncer() {
        let b = Arc::new(LogBroker::default());
        let poller = {
            let b = Arc::clone(&b);
            tokio::spawn(async move { b.take("root/east", Duration::from_secs(5)).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        let opener = {
            let b = Arc::clone(&b);
            tokio::spawn(async move { b.open(route("root/east")).await })
        };
        let id = poller.await.unwrap()[0].id.clone();
        b.deliver("root/east", &id, Some(200), Bytes::new(), false)
            .await
            .unwrap();
        drop(opener.await.unwrap().unwrap());
        assert_eq!(
            b.deliver("root/east", &id, None, Bytes::from("x"), false)
                .await,
            Err(BrokerError::Unknown)
        );
        assert!(lock(&b.inner).streams.is_empty());
    }

    #[tokio::test]
    async fn open_requests_are_capped_per_cluster_and_per_target() {
        let b = Arc::new(LogBroker::default());
        // A syncer polled a moment ago: it counts as connected.
        assert!(b
            .take("root/east", Duration::from_millis(1))
            .await
            .is_empty());
        let mut opens = Vec::new();
        for _ in 0..MAX_OPEN_PER_CLUSTER {
            let b = Arc::clone(&b);
            opens.push(tokio::spawn(
                async move { b.open(route("root/east")).await },
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        assert_eq!(
            b.open(route("root/east")).await.err(),
            Some(BrokerError::TooMany),
            "one more of the same cluster"
        );
        // Another cluster's pods on the same target still get through, up to the
        // target's own cap.
        let mut other = route("root/east");
        other.cluster = "root:b".into();
        let opener = {
            let b = Arc::clone(&b);
            tokio::spawn(async move { b.open(other).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        let reqs = b.take("root/east", Duration::from_secs(1)).await;
        assert_eq!(reqs.len(), MAX_OPEN_PER_CLUSTER + 1);
        for r in &reqs {
            b.deliver("root/east", &r.id, Some(200), Bytes::new(), true)
                .await
                .unwrap();
        }
        assert_eq!(opener.await.unwrap().unwrap().code, 200);
        for o in opens {
            drop(o.await.unwrap().unwrap());
        }
        assert!(lock(&b.inner).streams.is_empty(), "every request forgotten");
        assert!(b.open(route("root/west")).await.is_err());
        assert!(
            !lock(&b.inner).targets.contains_key("root/west"),
            "a target nobody polls leaves nothing behind"
        );
    }

    #[tokio::test]
    async fn a_target_takes_at_most_its_cap_of_open_requests_from_all_clusters() {
        let b = Arc::new(LogBroker::default());
        assert!(b
            .take("root/east", Duration::from_millis(1))
            .await
            .is_empty());
        let clusters = MAX_OPEN_PER_TARGET / MAX_OPEN_PER_CLUSTER;
        let mut opens = Vec::new();
        for c in 0..clusters {
            for _ in 0..MAX_OPEN_PER_CLUSTER {
                let b = Arc::clone(&b);
                let mut r = route("root/east");
                r.cluster = format!("root:c{c}");
                opens.push(tokio::spawn(async move { b.open(r).await }));
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(lock(&b.inner).streams.len(), MAX_OPEN_PER_TARGET);
        let mut fresh = route("root/east");
        fresh.cluster = "root:fresh".into();
        assert_eq!(
            b.open(fresh.clone()).await.err(),
            Some(BrokerError::TooMany),
            "a cluster with none open is refused once the target is full"
        );
        // Another target is not affected.
        let mut west = fresh;
        west.target = "root/west".into();
        assert!(b
            .take("root/west", Duration::from_millis(1))
            .await
            .is_empty());
        let opener = {
            let b = Arc::clone(&b);
            tokio::spawn(async move { b.open(west).await })
        };
        tokio::time::sleep(Duration::from_millis(50)).await;
        let reqs = b.take("root/west", Duration::from_secs(1)).await;
        assert_eq!(reqs.len(), 1);
        b.deliver("root/west", &reqs[0].id, Some(200), Bytes::new(), true)
            .await
            .unwrap();
        assert_eq!(opener.await.unwrap().unwrap().code, 200);
        for r in b.take("root/east", Duration::from_secs(1)).await {
            b.deliver("root/east", &r.id, Some(200), Bytes::new(), true)
                .await
                .unwrap();
        }
        for o in opens {
            drop(o.await.unwrap().unwrap());
        }
        assert!(lock(&b.inner).streams.is_empty());
    }

    #[tokio::test]
    async fn requests_queued_before_the_poll_are_all_taken_and_a_quiet_poll_ends_empty() {
        let b = Arc::new(LogBroker::default());
        // A syncer polled a moment ago: it counts as connected.
        assert!(b
            .take("root/east", Duration::from_millis(10))
            .await
            .is_empty());
        let mut opens = Vec::new();
        for _ in 0..3 {
            let b = Arc::clone(&b);
            opens.push(tokio::spawn(
                async move { b.open(route("root/east")).await },
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
        let reqs = b.take("root/east", Duration::from_secs(1)).await;
        assert_eq!(reqs.len(), 3);
        for r in &reqs {
            b.deliver("root/east", &r.id, Some(404), Bytes::from("{}"), true)
                .await
                .unwrap();
        }
        for o in opens {
            let opened = o.await.unwrap().unwrap();
            assert_eq!(opened.code, 404);
            assert_eq!(opened.body.collect(1024).await, b"{}");
        }
        assert!(lock(&b.inner).streams.is_empty());
    }
}
