//! The open connections of one listener: a cap on how many, and which to
//! close to make room.
//!
//! A cap alone lets a client lock everyone out: connections that open and
//! then say nothing (no TLS handshake, no HTTP/2 preface, or a preface and no
//! call) hold their slots for ever. So the cap sheds what costs nothing to
//! shed, a connection with no call in flight: when a client arrives at the
//! cap, the connection idle longest is closed to make room, and a timer
//! closes connections idle past their limit (a short one for a connection
//! that has not carried a call yet, a longer one for one that has). Only
//! when every slot carries a call does a new client wait, in the listen
//! queue; the server's timeout bounds how long a call holds its slot.
//!
//! Closing means the connection's next read fails, which makes hyper (or
//! the TLS handshake) drop it at once. gRPC clients open a new connection
//! for their next call, as they do after any disconnect.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use hyper::body::{Body as HttpBody, Frame, SizeHint};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;
use tonic::body::Body;
use tonic::codegen::http::{Request, Response};

/// How long a connection may stay without a call in flight.
#[derive(Clone, Copy, Debug)]
pub(crate) struct IdleLimits {
    /// For a connection that has not carried a call yet: covers a TLS
    /// handshake, the HTTP/2 preface and the first call.
    pub(crate) unused: Duration,
    /// For one that has carried calls and has none in flight.
    pub(crate) idle: Duration,
}

/// The open connections, and their slots.
#[derive(Debug)]
pub(crate) struct Connections {
    slots: Arc<Semaphore>,
    open: Mutex<Vec<Weak<Connection>>>,
    limits: IdleLimits,
    what: &'static str,
}

/// One open connection: what it has in flight, and the switch that closes it.
#[derive(Debug)]
pub(crate) struct Connection {
    calls: AtomicUsize,
    used: AtomicBool,
    /// When the last call ended (or the connection opened).
    idle_since: Mutex<Instant>,
    closed: AtomicBool,
    /// The task reading the connection, woken to see that it is closed.
    reader: Mutex<Option<Waker>>,
    /// Request bytes this connection's calls hold (see request_memory.rs).
    request_bytes: AtomicUsize,
}

impl Connection {
    fn new() -> Self {
        Self {
            calls: AtomicUsize::new(0),
            used: AtomicBool::new(false),
            idle_since: Mutex::new(Instant::now()),
            closed: AtomicBool::new(false),
            reader: Mutex::new(None),
            request_bytes: AtomicUsize::new(0),
        }
    }

    /// Counts `n` more request bytes held by this connection's calls, unless
    /// that would pass `share`.
    pub(crate) fn take_request_bytes(&self, n: usize, share: usize) -> bool {
        self.request_bytes
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |held| {
                held.checked_add(n).filter(|total| *total <= share)
            })
            .is_ok()
    }

    /// Gives back request bytes taken with [`Connection::take_request_bytes`].
    pub(crate) fn give_request_bytes(&self, n: usize) {
        self.request_bytes.fetch_sub(n, Ordering::SeqCst);
    }

    /// Marks a call in flight until the returned guard is dropped.
    pub(crate) fn call_started(self: &Arc<Self>) -> CallInFlight {
        self.used.store(true, Ordering::SeqCst);
        self.calls.fetch_add(1, Ordering::SeqCst);
        CallInFlight(self.clone())
    }

    /// How long the connection has had no call in flight, and its limit;
    /// `None` while a call is in flight or once it is closed.
    fn idle(&self, now: Instant, limits: IdleLimits) -> Option<(Duration, Duration)> {
        if self.calls.load(Ordering::SeqCst) > 0 || self.closed.load(Ordering::SeqCst) {
            return None;
        }
        let since = *self.idle_since.lock().expect("idle_since lock");
        let limit = if self.used.load(Ordering::SeqCst) {
            limits.idle
        } else {
            limits.unused
        };
        Some((now.saturating_duration_since(since), limit))
    }

    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        if let Some(reader) = self.reader.lock().expect("reader lock").take() {
            reader.wake();
        }
    }
}

/// A call in flight on a connection; see [`Connection::call_started`].
#[derive(Debug)]
pub(crate) struct CallInFlight(Arc<Connection>);

impl Drop for CallInFlight {
    fn drop(&mut self) {
        *self.0.idle_since.lock().expect("idle_since lock") = Instant::now();
        self.0.calls.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Connections {
    /// At most `max` connections open at once; `what` names them in logs.
    pub(crate) fn new(max: usize, limits: IdleLimits, what: &'static str) -> Arc<Self> {
        let connections = Arc::new(Self {
            slots: Arc::new(Semaphore::new(max)),
            open: Mutex::new(Vec::new()),
            limits,
            what,
        });
        // The timer holds the registry weakly: it ends with the listener.
        let weak = Arc::downgrade(&connections);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(250));
            loop {
                tick.tick().await;
                let Some(connections) = weak.upgrade() else {
                    return;
                };
                connections.close_expired();
            }
        });
        connections
    }

    /// Takes a slot for `io`, closing the connection idle longest when every
    /// slot is taken; waits only while every slot carries a call.
    pub(crate) async fn admit<T>(&self, io: T) -> Tracked<T> {
        let slot = match self.slots.clone().try_acquire_owned() {
            Ok(slot) => slot,
            Err(_) => {
                if !self.close_idlest() {
                    tracing::warn!(
                        "every {} connection has a call in flight; the next waits",
                        self.what
                    );
                }
                self.slots
                    .clone()
                    .acquire_owned()
                    .await
                    .expect("the semaphore is never closed")
            }
        };
        let connection = Arc::new(Connection::new());
        let mut open = self.open.lock().expect("open lock");
        open.retain(|c| c.strong_count() > 0);
        open.push(Arc::downgrade(&connection));
        Tracked {
            io,
            connection,
            _slot: slot,
        }
    }

    /// Closes a connection without a call in flight: one that has not
    /// carried a call yet first (a client that connects and says nothing),
    /// then the one idle longest; false if every connection has a call in
    /// flight.
    fn close_idlest(&self) -> bool {
        let now = Instant::now();
        let open = self.open.lock().expect("open lock");
        let idlest = open
            .iter()
            .filter_map(Weak::upgrade)
            .filter_map(|c| {
                let (idle, _) = c.idle(now, self.limits)?;
                Some(((!c.used.load(Ordering::SeqCst), idle), c))
            })
            .max_by_key(|(rank, _)| *rank);
        match idlest {
            Some((_, connection)) => {
                connection.close();
                true
            }
            None => false,
        }
    }

    /// Closes every connection idle past its limit.
    fn close_expired(&self) {
        let now = Instant::now();
        let mut open = self.open.lock().expect("open lock");
        open.retain(|c| c.strong_count() > 0);
        for connection in open.iter().filter_map(Weak::upgrade) {
            if let Some((idle, limit)) = connection.idle(now, self.limits)
                && idle >= limit
            {
                connection.close();
            }
        }
    }
}

/// An admitted connection: holds its slot until dropped, and fails its next
/// read once closed.
pub(crate) struct Tracked<T> {
    io: T,
    connection: Arc<Connection>,
    _slot: OwnedSemaphorePermit,
}

impl<T> Tracked<T> {
    pub(crate) fn connection(&self) -> &Arc<Connection> {
        &self.connection
    }
}

impl<T: AsyncRead + Unpin> AsyncRead for Tracked<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        // The waker goes first, so that a close between the check and the
        // read still wakes this task.
        *self.connection.reader.lock().expect("reader lock") = Some(cx.waker().clone());
        if self.connection.closed.load(Ordering::SeqCst) {
            return Poll::Ready(Err(io::Error::new(
                io::ErrorKind::ConnectionAborted,
                "closed while idle to make room, or idle too long",
            )));
        }
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Tracked<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, data)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

/// Marks each gRPC call in flight on its connection, from its request until
/// its response body is sent or dropped, so that the connection is not idle.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CallsInFlightLayer;

impl<S> tower::Layer<S> for CallsInFlightLayer {
    type Service = CallsInFlight<S>;
    fn layer(&self, inner: S) -> Self::Service {
        CallsInFlight { inner }
    }
}

/// The service the layer makes.
#[derive(Clone, Debug)]
pub(crate) struct CallsInFlight<S> {
    inner: S,
}

impl<S, ReqBody> tower::Service<Request<ReqBody>> for CallsInFlight<S>
where
    S: tower::Service<Request<ReqBody>, Response = Response<Body>>,
    S::Future: Send + 'static,
{
    type Response = Response<Body>;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Response<Body>, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let call = request
            .extensions()
            .get::<Arc<Connection>>()
            .map(Connection::call_started);
        let response = self.inner.call(request);
        Box::pin(async move {
            let response = response.await?;
            Ok(match call {
                Some(call) => response.map(|inner| Body::new(WithCall { inner, _call: call })),
                None => response,
            })
        })
    }
}

/// A response body that keeps its call in flight until it is done.
struct WithCall {
    inner: Body,
    _call: CallInFlight,
}

impl HttpBody for WithCall {
    type Data = hyper::body::Bytes;
    type Error = tonic::Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: IdleLimits = IdleLimits {
        unused: Duration::from_secs(10),
        idle: Duration::from_secs(120),
    };

    #[tokio::test(start_paused = true)]
    async fn at_the_cap_the_idlest_connection_makes_room_and_busy_ones_stay() {
        let connections = Connections::new(3, LIMITS, "test");
        let busy = connections.admit(()).await;
        let _call = busy.connection().call_started();
        let crossplane = connections.admit(()).await;
        drop(crossplane.connection().call_started());
        tokio::time::advance(Duration::from_secs(60)).await;
        let silent = connections.admit(()).await;
        // Full: the one that never carried a call goes first, though it
        // has been idle for less time; then the one idle longest.
        assert!(connections.close_idlest());
        assert!(silent.connection().closed.load(Ordering::SeqCst));
        assert!(connections.close_idlest());
        assert!(crossplane.connection().closed.load(Ordering::SeqCst));
        assert!(!busy.connection().closed.load(Ordering::SeqCst));
        assert!(!connections.close_idlest(), "only the busy one is left");
        // A closed one's slot comes back once it is dropped.
        drop(silent);
        let _newcomer = connections.admit(()).await;
    }

    #[tokio::test(start_paused = true)]
    async fn idle_connections_are_closed_past_their_limit() {
        let connections = Connections::new(8, LIMITS, "test");
        let unused = connections.admit(()).await;
        let used = connections.admit(()).await;
        drop(used.connection().call_started());
        tokio::time::advance(LIMITS.unused).await;
        connections.close_expired();
        assert!(unused.connection().closed.load(Ordering::SeqCst));
        assert!(!used.connection().closed.load(Ordering::SeqCst));
        tokio::time::advance(LIMITS.idle).await;
        connections.close_expired();
        assert!(used.connection().closed.load(Ordering::SeqCst));
    }
}
