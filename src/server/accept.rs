//! Accepting connections: a cap on how many are open at once, and a backoff
//! when `accept` fails for want of resources.
//!
//! `accept` fails at once, again and again, while the process is out of file
//! descriptors (EMFILE, ENFILE) or memory (ENOBUFS, ENOMEM), and the
//! connection that caused it stays in the listen queue. tonic's accept loop
//! and a plain `loop { accept }` retry immediately, spinning a core. Here
//! such an error waits, doubling from [`Backoff::MIN`] to [`Backoff::MAX`],
//! and the first success resets it; errors that concern one connection only
//! (the peer reset it before it was accepted) are retried at once.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tonic::codegen::tokio_stream::StreamExt;
use tonic::codegen::tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::{Connected, TcpIncoming};

/// How long to wait after an `accept` error before trying again.
#[derive(Debug, Default)]
pub(crate) struct Backoff {
    next: Option<Duration>,
}

impl Backoff {
    /// The first wait: short, so a brief shortage costs little latency.
    pub(crate) const MIN: Duration = Duration::from_millis(5);
    /// The longest wait: a server out of descriptors notices freed ones within a second.
    pub(crate) const MAX: Duration = Duration::from_secs(1);

    /// Whether `error` concerns the one connection being accepted, so that
    /// the next `accept` may well succeed at once.
    fn is_per_connection(error: &io::Error) -> bool {
        matches!(
            error.kind(),
            io::ErrorKind::ConnectionAborted
                | io::ErrorKind::ConnectionReset
                | io::ErrorKind::Interrupted
                | io::ErrorKind::WouldBlock
        )
    }

    /// The wait before retrying after `error`, if any; logs the start of a
    /// run of errors (not every retry, which would flood the log).
    pub(crate) fn after(&mut self, error: &io::Error, what: &str) -> Option<Duration> {
        if Self::is_per_connection(error) {
            return None;
        }
        let wait = match self.next {
            None => {
                tracing::warn!(error = %error, "cannot accept {what} connections; retrying with backoff");
                Self::MIN
            }
            Some(wait) => wait,
        };
        self.next = Some((wait * 2).min(Self::MAX));
        Some(wait)
    }

    /// A connection was accepted: the next error starts from [`Backoff::MIN`].
    pub(crate) fn succeeded(&mut self, what: &str) {
        if self.next.take().is_some() {
            tracing::info!("accepting {what} connections again");
        }
    }
}

/// Accepts one connection from `listener`, backing off on errors.
pub(crate) async fn accept(listener: &TcpListener, backoff: &mut Backoff, what: &str) -> TcpStream {
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                backoff.succeeded(what);
                return stream;
            }
            Err(e) => {
                if let Some(wait) = backoff.after(&e, what) {
                    tokio::time::sleep(wait).await;
                }
            }
        }
    }
}

/// The HTTP/2 client connection preface ("PRI * HTTP/2.0...") is 24 bytes.
const PREFACE_LEN: usize = 24;

/// An accepted connection holding one of the server's connection slots
/// until it is dropped. In plaintext, its first read fails with `TimedOut`
/// if the client has not sent the HTTP/2 preface in time, which closes the
/// connection: the TLS handshake timeout's counterpart, as hyper has no timer
/// for an HTTP/2 connection before its preface.
pub(crate) struct Accepted<T> {
    io: T,
    _slot: OwnedSemaphorePermit,
    preface: Option<(usize, Pin<Box<tokio::time::Sleep>>)>,
}

impl<T: AsyncRead + Unpin> AsyncRead for Accepted<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let this = &mut *self;
        let result = Pin::new(&mut this.io).poll_read(cx, buf);
        if let Some((read, deadline)) = &mut this.preface {
            match &result {
                Poll::Ready(Ok(())) => {
                    *read += buf.filled().len() - before;
                    if *read >= PREFACE_LEN || buf.filled().len() == before {
                        this.preface = None;
                    }
                }
                Poll::Ready(Err(_)) => this.preface = None,
                // Polling the timer registers this task to be woken by it.
                Poll::Pending if deadline.as_mut().poll(cx).is_ready() => {
                    return Poll::Ready(Err(io::Error::new(
                        io::ErrorKind::TimedOut,
                        "no HTTP/2 preface in time",
                    )));
                }
                Poll::Pending => {}
            }
        }
        result
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for Accepted<T> {
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

impl<T: Connected> Connected for Accepted<T> {
    type ConnectInfo = T::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.connect_info()
    }
}

/// The gRPC server's connections: at most `max_connections` open at once
/// (beyond that, new ones wait in the kernel's listen queue), accepted with
/// backoff, with TCP_NODELAY and TCP keepalive set, and closed if
/// `preface_timeout` is given and passes before the client's HTTP/2 preface
/// arrives. Accepting stops, and the listener closes, once the returned
/// stream is dropped.
pub(crate) fn incoming(
    listener: TcpListener,
    max_connections: usize,
    preface_timeout: Option<Duration>,
) -> ReceiverStream<io::Result<Accepted<TcpStream>>> {
    let slots = Arc::new(Semaphore::new(max_connections));
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(async move {
        let mut tcp = TcpIncoming::from(listener)
            .with_nodelay(Some(true))
            .with_keepalive(Some(Duration::from_secs(60)));
        let mut backoff = Backoff::default();
        loop {
            let slot = tokio::select! {
                slot = slots.clone().acquire_owned() => slot.expect("the semaphore is never closed"),
                _ = tx.closed() => return,
            };
            let io = loop {
                let wait = tokio::select! {
                    next = tcp.next() => match next {
                        Some(Ok(io)) => {
                            backoff.succeeded("gRPC");
                            break io;
                        }
                        Some(Err(e)) => backoff.after(&e, "gRPC"),
                        None => return,
                    },
                    _ = tx.closed() => return,
                };
                if let Some(wait) = wait {
                    tokio::select! {
                        _ = tokio::time::sleep(wait) => {}
                        _ = tx.closed() => return,
                    }
                }
            };
            let accepted = Accepted {
                io,
                _slot: slot,
                preface: preface_timeout.map(|t| (0, Box::pin(tokio::time::sleep(t)))),
            };
            if tx.send(Ok(accepted)).await.is_err() {
                return;
            }
        }
    });
    ReceiverStream::new(rx)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_errors_back_off_exponentially_up_to_a_second() {
        let mut b = Backoff::default();
        let emfile = io::Error::from_raw_os_error(24);
        let waits: Vec<_> = (0..12).map(|_| b.after(&emfile, "test").unwrap()).collect();
        assert_eq!(waits[0], Backoff::MIN);
        assert_eq!(waits[1], Backoff::MIN * 2);
        assert_eq!(*waits.last().unwrap(), Backoff::MAX);
        assert!(waits.windows(2).all(|w| w[0] <= w[1]));
        b.succeeded("test");
        assert_eq!(b.after(&emfile, "test"), Some(Backoff::MIN));
        // A reset by the peer is that connection's problem: retry at once.
        let reset = io::Error::from(io::ErrorKind::ConnectionAborted);
        assert_eq!(b.after(&reset, "test"), None);
    }
}
