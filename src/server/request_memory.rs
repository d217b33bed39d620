//! A server-wide budget for the request bytes held at once.
//!
//! tonic reads a request body as it arrives and keeps it until the whole
//! message is there, so HTTP/2 flow control does not bound what a client
//! can make the server hold: every stream of every connection may hold up to
//! the receive limit (`--max-recv-message-size`) of a message it never
//! finishes. Each body here takes its bytes from one budget as they arrive
//! and gives them back when it is dropped (answered, reset, timed out or its
//! connection closed); a body that would exceed the budget is refused with
//! RESOURCE_EXHAUSTED, which Crossplane retries, instead of being buffered.
//!
//! One connection's calls may hold at most a share of the budget (one
//! message of the largest size; the budget is at least two), so that a client
//! holding many streams open cannot starve the calls of another.

use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, ready};

use hyper::body::{Body as HttpBody, Frame, SizeHint};
use tokio::sync::Semaphore;
use tonic::Status;
use tonic::body::Body;
use tonic::codegen::http::Request;

use super::connections::Connection;

/// The layer; see the module documentation.
#[derive(Clone, Debug)]
pub(crate) struct RequestMemoryLayer {
    budget: Arc<Semaphore>,
    bytes: usize,
    share: usize,
}

impl RequestMemoryLayer {
    /// A budget of `bytes` shared by every connection, of which one
    /// connection may hold `share`.
    pub(crate) fn new(bytes: usize, share: usize) -> Self {
        let bytes = bytes.min(Semaphore::MAX_PERMITS);
        Self {
            budget: Arc::new(Semaphore::new(bytes)),
            bytes,
            share,
        }
    }
}

impl<S> tower::Layer<S> for RequestMemoryLayer {
    type Service = RequestMemory<S>;

    fn layer(&self, inner: S) -> Self::Service {
        RequestMemory {
            inner,
            layer: self.clone(),
        }
    }
}

/// The service the layer makes: the inner service with budgeted bodies.
#[derive(Clone, Debug)]
pub(crate) struct RequestMemory<S> {
    inner: S,
    layer: RequestMemoryLayer,
}

impl<S> tower::Service<Request<Body>> for RequestMemory<S>
where
    S: tower::Service<Request<Body>>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<Body>) -> Self::Future {
        let layer = &self.layer;
        let connection = request.extensions().get::<Arc<Connection>>().cloned();
        self.inner.call(request.map(|body| {
            Body::new(Budgeted {
                inner: body,
                budget: layer.budget.clone(),
                total: layer.bytes,
                share: layer.share,
                connection,
                held: 0,
            })
        }))
    }
}

/// A request body whose bytes are counted against the budget.
struct Budgeted {
    inner: Body,
    budget: Arc<Semaphore>,
    total: usize,
    share: usize,
    connection: Option<Arc<Connection>>,
    held: usize,
}

impl Budgeted {
    /// Takes `n` bytes from the connection's share and the budget, or says
    /// why not.
    fn take(&self, n: usize) -> Result<(), Status> {
        let mib = |bytes: usize| bytes / (1024 * 1024);
        if let Some(connection) = &self.connection
            && !connection.take_request_bytes(n, self.share)
        {
            tracing::warn!(
                share_bytes = self.share,
                "request refused: its connection's calls hold the connection's share of the request memory budget"
            );
            return Err(Status::resource_exhausted(format!(
                "this connection's calls are receiving {} MiB of requests, one connection's limit; retry later",
                mib(self.share)
            )));
        }
        match u32::try_from(n).map(|n| self.budget.try_acquire_many(n)) {
            Ok(Ok(permit)) => {
                // Given back in bulk on drop.
                permit.forget();
                Ok(())
            }
            _ => {
                if let Some(connection) = &self.connection {
                    connection.give_request_bytes(n);
                }
                tracing::warn!(
                    budget_bytes = self.total,
                    "request refused: the requests being received hold the whole request memory budget"
                );
                Err(Status::resource_exhausted(format!(
                    "the server is receiving {} MiB of requests, its limit; retry later",
                    mib(self.total)
                )))
            }
        }
    }
}

impl HttpBody for Budgeted {
    type Data = hyper::body::Bytes;
    type Error = Status;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Self::Data>, Self::Error>>> {
        let frame = ready!(Pin::new(&mut self.inner).poll_frame(cx));
        if let Some(Ok(frame)) = &frame
            && let Some(data) = frame.data_ref()
            && !data.is_empty()
        {
            let n = data.len();
            if let Err(refused) = self.take(n) {
                return Poll::Ready(Some(Err(refused)));
            }
            self.held += n;
        }
        Poll::Ready(frame)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

impl Drop for Budgeted {
    fn drop(&mut self) {
        self.budget.add_permits(self.held);
        if let Some(connection) = &self.connection {
            connection.give_request_bytes(self.held);
        }
    }
}
