//! The work of requests whose logical cluster is past its share of the server
//! ([`super::Seat::past_share`]), run on a runtime of its own whose threads have a lower
//! OS scheduling priority than the server's (`kplane serve` builds it beside the
//! background runtime; without one, the work runs where the request came in).
//!
//! Seats bound how many requests of a cluster execute at once, but not how the cores are
//! shared while they do: on a runtime shared by every request, a quiet tenant's GET waits
//! for a core behind the tasks of a busy tenant's LISTs and creates. When that busy
//! tenant has gone past its share (its requests queue behind its cap), its handlers, and
//! the production of their streamed response bodies, run here instead, and the kernel
//! gives the server's own threads, which serve the tenants within their share, the cores
//! first. A tenant alone on the server, or every tenant within its share, never comes
//! here; what runs here is only slower while others need the cores.

use std::future::Future;

use axum::body::{Body, HttpBody as _};
use axum::response::Response;
use futures::{FutureExt as _, StreamExt as _};
use tokio::runtime::Handle;
use tokio::task::JoinHandle;

/// Chunks of a streamed body produced ahead of the connection that sends them.
const BODY_AHEAD: usize = 2;

/// A task aborted when its awaiting request is dropped (its client went away), as the
/// request's own future would have been.
struct AbortOnDrop<T>(JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// Runs `work` on `runtime` and awaits it there: dropping the returned future aborts the
/// work. For work that must not run on the lowered runtime although the request that
/// needs it does, e.g. opening a connection that every tenant shares afterwards (its
/// socket is driven by the runtime it is opened on).
pub async fn run_on<F>(runtime: &Handle, work: F) -> Result<F::Output, tokio::task::JoinError>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let mut task = AbortOnDrop(runtime.spawn(work));
    (&mut task.0).await
}

/// The runtime was shut down before the request's work ended (the server is stopping).
#[derive(Debug)]
pub struct Cancelled;

/// Runs `work` (a request's handler) on `runtime` and answers what it answers. A panic
/// of the handler goes on unwinding here, where the request's scope recovers it. A
/// response whose body is streamed (its size not known ahead) has the body produced on
/// `runtime` too, a few chunks ahead of the connection, when `stream_body` (not for
/// watches: a watch's events are not the work of a cluster past its share).
pub async fn run<F>(runtime: &Handle, work: F, stream_body: bool) -> Result<Response, Cancelled>
where
    F: Future<Output = Response> + Send + 'static,
{
    let resp = match run_on(runtime, work).await {
        Ok(resp) => resp,
        Err(e) => match e.try_into_panic() {
            Ok(panic) => std::panic::resume_unwind(panic),
            Err(_) => return Err(Cancelled),
        },
    };
    if !stream_body || resp.body().size_hint().exact().is_some() {
        return Ok(resp);
    }
    let (parts, body) = resp.into_parts();
    let (tx, rx) = tokio::sync::mpsc::channel(BODY_AHEAD);
    runtime.spawn(async move {
        let produced = std::panic::AssertUnwindSafe(async {
            let mut chunks = body.into_data_stream();
            loop {
                // The client gone (the receiver dropped) ends the production at once,
                // also while a chunk is being made.
                let next = tokio::select! {
                    _ = tx.closed() => return,
                    next = chunks.next() => next,
                };
                let Some(chunk) = next else { break };
                let failed = chunk.is_err();
                if tx.send(Piece::Chunk(chunk)).await.is_err() || failed {
                    return;
                }
            }
            let _ = tx.send(Piece::End).await;
        })
        .catch_unwind()
        .await;
        if produced.is_err() {
            tracing::error!("the production of a response body panicked; the response is cut off");
        }
    });
    let chunks = futures::stream::unfold(Some(rx), |rx| async move {
        let mut rx = rx?;
        match rx.recv().await {
            Some(Piece::Chunk(chunk)) => Some((chunk, Some(rx))),
            Some(Piece::End) => None,
            // The producer ended without the body's end (it panicked, or the server is
            // stopping): the client must see a failed response, never a shortened one.
            None => Some((Err(axum::Error::new(Unfinished)), None)),
        }
    });
    Ok(Response::from_parts(parts, Body::from_stream(chunks)))
}

/// What the producer of a moved body sends the connection.
enum Piece {
    Chunk(Result<axum::body::Bytes, axum::Error>),
    /// The body is complete.
    End,
}

/// A moved body's producer ended before the body did.
#[derive(Debug)]
struct Unfinished;

impl std::fmt::Display for Unfinished {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the response body's production ended before the body")
    }
}

impl std::error::Error for Unfinished {}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use axum::body::Bytes;
    use axum::response::IntoResponse as _;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;

    fn lowered() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("test-lowered")
            .enable_all()
            .build()
            .unwrap()
    }

    fn thread_name() -> String {
        std::thread::current().name().unwrap_or("").to_string()
    }

    /// The body a client reads of a handler's response whose body is `chunks`, the
    /// handler run on `rt` (and the body moved there when `stream_body`).
    async fn read_body<S>(
        rt: &tokio::runtime::Runtime,
        chunks: S,
        stream_body: bool,
    ) -> Result<Bytes, axum::Error>
    where
        S: futures::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static,
    {
        let resp = run(
            rt.handle(),
            async move { Response::new(Body::from_stream(chunks)) },
            stream_body,
        )
        .await
        .unwrap();
        axum::body::to_bytes(resp.into_body(), usize::MAX).await
    }

    #[tokio::test]
    async fn the_work_runs_on_the_given_runtime_and_its_answer_comes_back() {
        let rt = lowered();
        let resp = run(rt.handle(), async { thread_name().into_response() }, true)
            .await
            .unwrap();
        let body = axum::body::to_bytes(resp.into_body(), usize::MAX)
            .await
            .unwrap();
        assert_eq!(&body[..], b"test-lowered");
        rt.shutdown_background();
    }

    /// A body of 10x the chunks produced ahead, each produced on the given runtime, all
    /// of them in order.
    #[tokio::test]
    async fn a_streamed_body_is_produced_on_the_given_runtime_whole_and_in_order() {
        let rt = lowered();
        let n = BODY_AHEAD * 10 + 1;
        let chunks =
            futures::stream::iter(0..n).map(|i| Ok(Bytes::from(format!("{i}:{};", thread_name()))));
        let body = read_body(&rt, chunks, true).await.unwrap();
        let want: String = (0..n).map(|i| format!("{i}:test-lowered;")).collect();
        assert_eq!(String::from_utf8(body.to_vec()).unwrap(), want);
        rt.shutdown_background();
    }

    /// A watch's body (`stream_body` false) is polled where the response is sent.
    #[tokio::test]
    async fn a_body_not_to_be_moved_is_produced_where_it_is_sent() {
        let rt = lowered();
        let chunks = futures::stream::once(async { Ok(Bytes::from(thread_name())) });
        let body = read_body(&rt, chunks, false).await.unwrap();
        assert_ne!(&body[..], b"test-lowered");
        rt.shutdown_background();
    }

    /// A body whose production fails ends with the error, as it would where it is sent.
    #[tokio::test]
    async fn a_failing_body_fails_for_the_client_too() {
        let rt = lowered();
        let chunks = futures::stream::iter([
            Ok(Bytes::from_static(b"a")),
            Err(std::io::Error::other("list aborted")),
        ]);
        assert!(read_body(&rt, chunks, true).await.is_err());
        rt.shutdown_background();
    }

    /// A body whose production panics part way fails for the client: never a body cut
    /// short that reads as complete.
    #[tokio::test]
    async fn a_body_whose_production_panics_fails_for_the_client() {
        let rt = lowered();
        let chunks = futures::stream::iter(0..10).map(|i| {
            assert!(i < 5, "the body's producer panicked");
            Ok(Bytes::from_static(b"x"))
        });
        assert!(read_body(&rt, chunks, true).await.is_err());
        rt.shutdown_background();
    }

    #[tokio::test]
    async fn a_panic_of_the_work_unwinds_in_the_request() {
        let rt = lowered();
        let caught = futures::FutureExt::catch_unwind(std::panic::AssertUnwindSafe(run(
            rt.handle(),
            async { panic!("the handler panicked") },
            true,
        )))
        .await;
        let panic = caught.err().unwrap();
        assert_eq!(
            panic.downcast_ref::<&str>().copied(),
            Some("the handler panicked")
        );
        rt.shutdown_background();
    }

    /// A response dropped while its moved body is being made (its client went away)
    /// stops the production, also in the middle of a chunk.
    #[tokio::test]
    async fn dropping_the_response_stops_its_bodys_production() {
        let rt = lowered();
        let finished = Arc::new(AtomicBool::new(false));
        let f = finished.clone();
        let resp = run(
            rt.handle(),
            async move {
                let chunks = futures::stream::iter(0..2).then(move |i| {
                    let f = f.clone();
                    async move {
                        if i == 1 {
                            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
                            f.store(true, Ordering::SeqCst);
                        }
                        Ok::<_, std::io::Error>(Bytes::from_static(b"x"))
                    }
                });
                Response::new(Body::from_stream(chunks))
            },
            true,
        )
        .await
        .unwrap();
        let mut body = resp.into_body().into_data_stream();
        assert_eq!(&body.next().await.unwrap().unwrap()[..], b"x");
        drop(body);
        tokio::time::sleep(std::time::Duration::from_millis(600)).await;
        assert!(!finished.load(Ordering::SeqCst));
        rt.shutdown_background();
    }

    /// A request dropped while its work runs (its client went away) stops the work.
    #[tokio::test]
    async fn dropping_the_request_stops_its_work() {
        let rt = lowered();
        let finished = Arc::new(AtomicBool::new(false));
        let (started_tx, started_rx) = tokio::sync::oneshot::channel();
        let f = finished.clone();
        let request = tokio::spawn({
            let handle = rt.handle().clone();
            async move {
                run(
                    &handle,
                    async move {
                        let _ = started_tx.send(());
                        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
                        f.store(true, Ordering::SeqCst);
                        "late".into_response()
                    },
                    true,
                )
                .await
            }
        });
        started_rx.await.unwrap();
        request.abort();
        assert!(request.await.unwrap_err().is_cancelled());
        tokio::time::sleep(std::time::Duration::from_millis(600)).await;
        assert!(!finished.load(Ordering::SeqCst));
        rt.shutdown_background();
    }
}
