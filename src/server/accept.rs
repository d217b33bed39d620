//! Accepting connections: a backoff when `accept` fails for want of
//! resources, and the gRPC listener's stream of admitted connections.
//!
//! `accept` fails at once, again and again, while the process is out of file
//! descriptors (EMFILE, ENFILE) or memory (ENOBUFS, ENOMEM), and the
//! connection that caused it stays in the listen queue. tonic's accept loop
//! and a plain `loop { accept }` retry immediately, spinning a core. Here
//! such an error waits, doubling from [`Backoff::MIN`] to [`Backoff::MAX`],
//! and the first success resets it; errors that concern one connection only
//! (the peer reset it before it was accepted) are retried at once.

use std::io;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tonic::codegen::tokio_stream::StreamExt;
use tonic::codegen::tokio_stream::wrappers::ReceiverStream;
use tonic::transport::server::{Connected, TcpIncoming};

use super::connections::{Connection, Connections, Tracked};

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

/// Each request carries its connection's record in its extensions.
impl Connected for Tracked<TcpStream> {
    type ConnectInfo = Arc<Connection>;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.connection().clone()
    }
}

/// The gRPC server's connections: admitted by `connections` (see
/// connections.rs), accepted with backoff, with TCP_NODELAY and TCP
/// keepalive set. Accepting stops, and the listener closes, once the returned
/// stream is dropped.
pub(crate) fn incoming(
    listener: TcpListener,
    connections: Arc<Connections>,
) -> ReceiverStream<io::Result<Tracked<TcpStream>>> {
    let (tx, rx) = mpsc::channel(1);
    tokio::spawn(async move {
        let mut tcp = TcpIncoming::from(listener)
            .with_nodelay(Some(true))
            .with_keepalive(Some(Duration::from_secs(60)));
        let mut backoff = Backoff::default();
        loop {
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
            let admitted = tokio::select! {
                admitted = connections.admit(io) => admitted,
                _ = tx.closed() => return,
            };
            if tx.send(Ok(admitted)).await.is_err() {
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
