//! The read timeouts of one connection, as Go's `http.Server` applies kube-apiserver's
//! settings: a connection with no request in flight is closed after the idle timeout
//! (`IdleTimeout`, 90 s), and an HTTP/1.1 request whose head has begun to arrive must be
//! complete within the header timeout (`ReadHeaderTimeout`, 32 s), so a client trickling
//! its headers is cut off while a client holding an idle keep-alive connection is not.
//! (hyper's own `header_read_timeout` starts counting as soon as the previous response is
//! written, which would close idle keep-alive connections after 32 s.)
//!
//! Three pieces share one [`Activity`] per connection: [`Watched`], the stream, notes the
//! first bytes read while no request is in flight; [`ActiveGuard`], held by each request
//! from the moment hyper hands it over until its response body ends (a watch stays active
//! for as long as it streams); and [`run`], which runs the connection, drops it once its
//! header deadline has passed and closes it gracefully (HTTP/2: GOAWAY) once idle.
//!
//! Request bodies have their own rule ([`TimedBody`]): from the moment a handler starts
//! reading, each `request_body_timeout` window must bring at least
//! [`MIN_BODY_BYTES_PER_WINDOW`] or the end of the body, so one byte a second is cut off
//! while a large upload on a slow link is not.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Instant;

use crate::limits::Refusal;

/// The bit of [`Activity::mark`] that says a request head has begun to arrive.
const HEAD_STARTED: u64 = 1 << 63;

/// What one connection is doing, as far as its timeouts are concerned.
#[derive(Debug)]
pub struct Activity {
    /// Requests handed to the service whose response has not ended.
    active: AtomicU32,
    /// Milliseconds since `epoch` when the connection last became idle or a head began
    /// (with [`HEAD_STARTED`] set in the latter case).
    mark: AtomicU64,
    epoch: Instant,
    /// Whether bytes start a request head (HTTP/1.1); HTTP/2 only has the idle timeout.
    http1: bool,
}

/// What the timer should do next.
#[derive(Debug, PartialEq, Eq)]
enum Next {
    /// Check again at this instant.
    At(Instant),
    /// The connection is past its deadline.
    Close(Refusal),
}

impl Activity {
    /// A connection that has just started (idle, no request yet). On HTTP/1.1 the first
    /// request's head is under the header timeout from the start, as in Go.
    pub fn new(http1: bool) -> Arc<Activity> {
        Arc::new(Activity {
            active: AtomicU32::new(0),
            mark: AtomicU64::new(if http1 { HEAD_STARTED } else { 0 }),
            epoch: Instant::now(),
            http1,
        })
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX >> 1) & !HEAD_STARTED
    }

    /// A request was handed to the service.
    pub fn begin(self: &Arc<Self>) -> ActiveGuard {
        self.active.fetch_add(1, Ordering::AcqRel);
        ActiveGuard(self.clone())
    }

    /// Bytes arrived; on HTTP/1.1 with no request in flight they begin a head.
    fn on_bytes(&self) {
        if !self.http1 || self.active.load(Ordering::Acquire) > 0 {
            return;
        }
        let mark = self.mark.load(Ordering::Acquire);
        if mark & HEAD_STARTED == 0 {
            let _ = self.mark.compare_exchange(
                mark,
                self.now_ms() | HEAD_STARTED,
                Ordering::AcqRel,
                Ordering::Acquire,
            );
        }
    }

    /// The connection's next deadline under `header` and `idle` timeouts, at `now`.
    fn next(&self, now: Instant, header: Duration, idle: Duration) -> Next {
        if self.active.load(Ordering::Acquire) > 0 {
            // Nothing to enforce while a request is in flight; look again later.
            return Next::At(now + header.min(idle));
        }
        let mark = self.mark.load(Ordering::Acquire);
        let (limit, refusal) = if mark & HEAD_STARTED != 0 {
            (header, Refusal::HeaderTimeout)
        } else {
            (idle, Refusal::IdleTimeout)
        };
        let deadline = self.epoch + Duration::from_millis(mark & !HEAD_STARTED) + limit;
        if now >= deadline {
            Next::Close(refusal)
        } else {
            Next::At(deadline)
        }
    }
}

/// Held by a request until its response body ends (or is dropped unsent).
#[derive(Debug)]
pub struct ActiveGuard(Arc<Activity>);

impl Drop for ActiveGuard {
    fn drop(&mut self) {
        let a = &self.0;
        // The last request to end makes the connection idle from now.
        if a.active.fetch_sub(1, Ordering::AcqRel) == 1 {
            a.mark.store(a.now_ms(), Ordering::Release);
        }
    }
}

/// A response body that keeps a guard (its request's [`ActiveGuard`], a watch's permit)
/// until it ends.
#[derive(Debug)]
pub struct GuardedBody<G = ActiveGuard> {
    inner: axum::body::Body,
    _guard: G,
}

impl<G> GuardedBody<G> {
    pub fn new(inner: axum::body::Body, guard: G) -> Self {
        GuardedBody {
            inner,
            _guard: guard,
        }
    }
}

impl<G: Unpin> hyper::body::Body for GuardedBody<G> {
    type Data = bytes::Bytes;
    type Error = axum::Error;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.get_mut().inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// A stream that tells its connection's [`Activity`] when bytes arrive.
#[derive(Debug)]
pub struct Watched<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S> Watched<S> {
    pub fn new(inner: S, activity: Arc<Activity>) -> Self {
        Watched { inner, activity }
    }
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let before = buf.filled().len();
        let r = Pin::new(&mut this.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            this.activity.on_bytes();
        }
        r
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().inner).poll_shutdown(cx)
    }
}

/// What a body must deliver in each timeout window (about 270 bytes a second at 60 s).
pub const MIN_BODY_BYTES_PER_WINDOW: u64 = 16 * 1024;

/// The error a [`TimedBody`] ends with when its client is too slow.
#[derive(Debug, thiserror::Error)]
#[error("the request body did not arrive in time")]
pub struct BodyTimedOut;

/// Whether `e`, or an error it wraps, is a [`BodyTimedOut`].
pub fn is_body_timeout(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut cur = Some(e);
    while let Some(err) = cur {
        if err.is::<BodyTimedOut>() {
            return true;
        }
        cur = err.source();
    }
    false
}

/// A request body that fails with [`BodyTimedOut`] when a window of `window` brings less
/// than [`MIN_BODY_BYTES_PER_WINDOW`]. Its timer exists only while a read waits.
pub struct TimedBody<B> {
    inner: B,
    window: Duration,
    /// The current window's end and the bytes it has brought; set on the first read.
    deadline: Option<Pin<Box<tokio::time::Sleep>>>,
    received: u64,
    refusals: Arc<crate::limits::Refusals>,
}

impl<B> std::fmt::Debug for TimedBody<B> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TimedBody")
            .field("window", &self.window)
            .field("received", &self.received)
            .finish_non_exhaustive()
    }
}

impl<B> TimedBody<B> {
    pub fn new(inner: B, window: Duration, refusals: Arc<crate::limits::Refusals>) -> Self {
        TimedBody {
            inner,
            window,
            deadline: None,
            received: 0,
            refusals,
        }
    }
}

impl<B> hyper::body::Body for TimedBody<B>
where
    B: hyper::body::Body<Data = bytes::Bytes> + Unpin,
    B::Error: Into<axum::BoxError>,
{
    type Data = bytes::Bytes;
    type Error = axum::BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Self::Data>, Self::Error>>> {
        let this = self.get_mut();
        match Pin::new(&mut this.inner).poll_frame(cx) {
            Poll::Ready(Some(Ok(frame))) => {
                if let Some(data) = frame.data_ref() {
                    this.received += data.len() as u64;
                }
                Poll::Ready(Some(Ok(frame)))
            }
            Poll::Ready(other) => Poll::Ready(other.map(|r| r.map_err(Into::into))),
            Poll::Pending => {
                let window = this.window;
                let deadline = this
                    .deadline
                    .get_or_insert_with(|| Box::pin(tokio::time::sleep(window)));
                while deadline.as_mut().poll(cx).is_ready() {
                    if this.received < MIN_BODY_BYTES_PER_WINDOW {
                        this.refusals.count(Refusal::BodyTimeout);
                        return Poll::Ready(Some(Err(Box::new(BodyTimedOut))));
                    }
                    this.received = 0;
                    deadline.as_mut().reset(Instant::now() + window);
                }
                Poll::Pending
            }
        }
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.inner.size_hint()
    }
}

/// A hyper server connection that can be asked to finish gracefully (HTTP/1.1: close once
/// the request in flight is answered; HTTP/2: GOAWAY, then close once its streams end).
pub trait Graceful: Future<Output = Result<(), hyper::Error>> {
    fn graceful_shutdown(self: Pin<&mut Self>);
}

impl<I, B, S> Graceful for hyper::server::conn::http1::Connection<I, S>
where
    S: hyper::service::HttpService<hyper::body::Incoming, ResBody = B>,
    S::Error: Into<axum::BoxError>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin + 'static,
    B: hyper::body::Body + 'static,
    B::Error: Into<axum::BoxError>,
{
    fn graceful_shutdown(self: Pin<&mut Self>) {
        hyper::server::conn::http1::Connection::graceful_shutdown(self);
    }
}

impl<I, B, S, E> Graceful for hyper::server::conn::http2::Connection<I, S, E>
where
    S: hyper::service::HttpService<hyper::body::Incoming, ResBody = B>,
    S::Error: Into<axum::BoxError>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin + 'static,
    B: hyper::body::Body + 'static,
    B::Error: Into<axum::BoxError>,
    E: hyper::rt::bounds::Http2ServerConnExec<S::Future, B>,
{
    fn graceful_shutdown(self: Pin<&mut Self>) {
        hyper::server::conn::http2::Connection::graceful_shutdown(self);
    }
}

/// Runs `connection` until it ends, with the connection's result and the limit that ended
/// it, if one did. Past its header deadline the connection is dropped at once (its client
/// is trickling a request); past its idle deadline, or when `drain` fires (the server is
/// shutting down), it is asked to finish gracefully, and dropped if it has not finished by
/// the next deadline. `drain` is held until the connection ends, so the server's shutdown
/// can wait for every connection.
pub async fn run<C: Graceful + ?Sized>(
    mut connection: Pin<Box<C>>,
    activity: &Activity,
    (header, idle): (Duration, Duration),
    mut drain: tokio::sync::watch::Receiver<()>,
) -> (Result<(), hyper::Error>, Option<Refusal>) {
    let sleep = tokio::time::sleep(header.min(idle));
    tokio::pin!(sleep);
    let mut closing = false;
    let mut refusal = None;
    loop {
        tokio::select! {
            out = connection.as_mut() => return (out, refusal),
            _ = drain.changed(), if !closing => {
                closing = true;
                connection.as_mut().graceful_shutdown();
            }
            () = &mut sleep => match activity.next(Instant::now(), header, idle) {
                Next::Close(Refusal::IdleTimeout) if !closing => {
                    closing = true;
                    refusal = Some(Refusal::IdleTimeout);
                    connection.as_mut().graceful_shutdown();
                    sleep.as_mut().reset(Instant::now() + header);
                }
                Next::Close(r) => return (Ok(()), refusal.or(Some(r))),
                Next::At(at) => sleep.as_mut().reset(at),
            },
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use futures::StreamExt as _;
    use http_body_util::BodyExt as _;

    type Frames = std::pin::Pin<
        Box<
            dyn futures::Stream<
                    Item = Result<hyper::body::Frame<bytes::Bytes>, std::convert::Infallible>,
                > + Send,
        >,
    >;

    /// A body that sends `first` bytes at once and then nothing, ever.
    fn stalling(first: usize) -> http_body_util::StreamBody<Frames> {
        let frame = hyper::body::Frame::data(bytes::Bytes::from(vec![b'x'; first]));
        let frames = futures::stream::iter((first > 0).then_some(Ok(frame)))
            .chain(futures::stream::pending());
        http_body_util::StreamBody::new(Box::pin(frames))
    }

    const WINDOW: Duration = Duration::from_millis(50);

    #[tokio::test]
    async fn a_stalled_body_ends_with_a_timeout_and_is_counted() {
        let refusals = Arc::new(crate::limits::Refusals::default());
        let body = TimedBody::new(stalling(0), WINDOW, refusals.clone());
        let e = body.collect().await.unwrap_err();
        assert!(is_body_timeout(&*e), "{e}");
        assert_eq!(refusals.get(Refusal::BodyTimeout), 1);
    }

    #[tokio::test]
    async fn each_window_must_bring_its_share_of_the_body() {
        let refusals = Arc::new(crate::limits::Refusals::default());
        // The first window brings enough; the second nothing.
        let first = usize::try_from(MIN_BODY_BYTES_PER_WINDOW).unwrap();
        let mut body = TimedBody::new(stalling(first), WINDOW, refusals.clone());
        let frame = body.frame().await.unwrap().unwrap();
        assert_eq!(frame.into_data().unwrap().len(), first);
        let e = body.frame().await.unwrap().unwrap_err();
        assert!(is_body_timeout(&*e), "{e}");
        assert_eq!(refusals.get(Refusal::BodyTimeout), 1);
    }

    #[tokio::test]
    async fn a_complete_body_is_not_timed() {
        let refusals = Arc::new(crate::limits::Refusals::default());
        let full = http_body_util::Full::new(bytes::Bytes::from_static(b"{}"));
        let body = TimedBody::new(full, WINDOW, refusals.clone());
        assert_eq!(body.collect().await.unwrap().to_bytes(), "{}");
        assert_eq!(refusals.get(Refusal::BodyTimeout), 0);
    }

    const HEADER: Duration = Duration::from_secs(32);
    const IDLE: Duration = Duration::from_secs(90);

    fn at(a: &Activity, secs: u64) -> Instant {
        a.epoch + Duration::from_secs(secs)
    }

    #[test]
    fn a_new_http1_connection_must_send_its_first_head_within_the_header_timeout() {
        let a = Activity::new(true);
        assert_eq!(a.next(at(&a, 31), HEADER, IDLE), Next::At(at(&a, 32)));
        assert_eq!(
            a.next(at(&a, 32), HEADER, IDLE),
            Next::Close(Refusal::HeaderTimeout)
        );
    }

    #[test]
    fn an_idle_keep_alive_connection_lasts_the_idle_timeout_not_the_header_timeout() {
        let a = Activity::new(true);
        let guard = a.begin();
        // In flight: never closed, only looked at again.
        assert!(matches!(a.next(at(&a, 500), HEADER, IDLE), Next::At(_)));
        drop(guard);
        let idle_since = a.epoch + Duration::from_millis(a.mark.load(Ordering::Acquire));
        assert_eq!(
            a.next(idle_since + HEADER, HEADER, IDLE),
            Next::At(idle_since + IDLE)
        );
        assert_eq!(
            a.next(idle_since + IDLE, HEADER, IDLE),
            Next::Close(Refusal::IdleTimeout)
        );
    }

    #[test]
    fn bytes_after_idle_start_the_header_timeout_and_bytes_in_flight_do_not() {
        let a = Activity::new(true);
        let guard = a.begin();
        a.on_bytes(); // a body: no head
        drop(guard);
        assert_eq!(a.mark.load(Ordering::Acquire) & HEAD_STARTED, 0);
        a.on_bytes();
        let mark = a.mark.load(Ordering::Acquire);
        assert_ne!(mark & HEAD_STARTED, 0);
        let began = a.epoch + Duration::from_millis(mark & !HEAD_STARTED);
        assert_eq!(
            a.next(began + HEADER, HEADER, IDLE),
            Next::Close(Refusal::HeaderTimeout)
        );
    }

    #[test]
    fn http2_bytes_without_streams_keep_only_the_idle_timeout() {
        let a = Activity::new(false);
        a.on_bytes(); // a PING, SETTINGS or trickled frame
        assert_eq!(a.next(at(&a, 40), HEADER, IDLE), Next::At(at(&a, 90)));
        assert_eq!(
            a.next(at(&a, 90), HEADER, IDLE),
            Next::Close(Refusal::IdleTimeout)
        );
    }

    #[test]
    fn several_requests_in_flight_keep_the_connection_active_until_the_last_ends() {
        let a = Activity::new(false);
        let one = a.begin();
        let two = a.begin();
        drop(one);
        assert!(a.active.load(Ordering::Acquire) == 1);
        assert!(matches!(a.next(at(&a, 1000), HEADER, IDLE), Next::At(_)));
        drop(two);
        assert_eq!(a.active.load(Ordering::Acquire), 0);
    }
}
