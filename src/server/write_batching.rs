//! Batches a connection's writes so that a response goes out in one system
//! call instead of two.
//!
//! h2 writes a DATA frame of 256 bytes or more straight from the response's
//! buffer (a vectored write) and flushes right after it, before it encodes
//! anything else; the gRPC trailers that end the same response then need a
//! write of their own. Every response this function sends carries manifests,
//! so every call cost two writes, each a trip through the kernel's TCP stack
//! (on loopback or a veth pair, the receiver's side too). [`BatchedWrites`]
//! copies what h2 writes into a buffer and lets a flush wait one turn of the
//! connection task: it wakes the task, and the next read (h2 reads on every
//! turn; TLS reads after its handshake flushes), or the next flush with
//! nothing new to send, writes the frames queued in the meantime together.
//!
//! A flush that follows new bytes waits too: h2 flushes after every DATA
//! frame of 256 bytes or more, so a turn that answers sixteen calls flushes
//! sixteen times, and only the turn's end should write. Nothing waits longer
//! than that turn, and a full buffer or a shutdown writes at once.

use std::io::{self, IoSlice};
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tonic::transport::server::Connected;

/// Bytes buffered before a write goes out regardless of flushes.
const LIMIT: usize = 64 * 1024;

/// An I/O object whose writes are batched (see the module documentation).
pub struct BatchedWrites<T> {
    io: T,
    buf: Vec<u8>,
    /// A flush was acknowledged without writing; the next read writes.
    deferred: bool,
    /// Bytes were buffered since the last flush: a flush now still waits.
    fresh: bool,
}

impl<T> BatchedWrites<T> {
    pub fn new(io: T) -> Self {
        Self {
            io,
            buf: Vec::new(),
            deferred: false,
            fresh: false,
        }
    }
}

impl<T: AsyncWrite + Unpin> BatchedWrites<T> {
    /// Writes out everything buffered.
    fn poll_drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut written = 0;
        let result = loop {
            if written == self.buf.len() {
                break Poll::Ready(Ok(()));
            }
            match Pin::new(&mut self.io).poll_write(cx, &self.buf[written..]) {
                Poll::Ready(Ok(0)) => break Poll::Ready(Err(io::ErrorKind::WriteZero.into())),
                Poll::Ready(Ok(n)) => written += n,
                Poll::Ready(Err(e)) => break Poll::Ready(Err(e)),
                Poll::Pending => break Poll::Pending,
            }
        };
        self.buf.drain(..written);
        if self.buf.is_empty() {
            self.deferred = false;
            self.fresh = false;
        }
        result
    }

    /// Makes room for `len` more bytes, writing the buffer out if needed.
    fn poll_room(&mut self, cx: &mut Context<'_>, len: usize) -> Poll<io::Result<()>> {
        if self.buf.len() + len > LIMIT && !self.buf.is_empty() {
            ready!(self.poll_drain(cx))?;
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for BatchedWrites<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        ready!(this.poll_room(cx, data.len()))?;
        if data.len() >= LIMIT {
            return Pin::new(&mut this.io).poll_write(cx, data);
        }
        this.buf.extend_from_slice(data);
        this.fresh = true;
        Poll::Ready(Ok(data.len()))
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        slices: &[IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let len: usize = slices.iter().map(|s| s.len()).sum();
        ready!(this.poll_room(cx, len))?;
        if len >= LIMIT {
            return Pin::new(&mut this.io).poll_write_vectored(cx, slices);
        }
        for s in slices {
            this.buf.extend_from_slice(s);
        }
        this.fresh = true;
        Poll::Ready(Ok(len))
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if !this.buf.is_empty() {
            if this.fresh {
                this.fresh = false;
                if !this.deferred {
                    this.deferred = true;
                    cx.waker().wake_by_ref();
                }
                return Poll::Ready(Ok(()));
            }
            ready!(this.poll_drain(cx))?;
        }
        Pin::new(&mut this.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        ready!(this.poll_drain(cx))?;
        Pin::new(&mut this.io).poll_shutdown(cx)
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> AsyncRead for BatchedWrites<T> {
    /// Writes out a deferred flush first: a peer is only waited for after
    /// what it is answering has been sent (a TLS handshake flushes once and
    /// then reads). A write that cannot finish now does not hold up reading.
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        if this.deferred
            && let Poll::Ready(Err(e)) = this.poll_drain(cx)
        {
            return Poll::Ready(Err(e));
        }
        Pin::new(&mut this.io).poll_read(cx, buf)
    }
}

impl<T: Connected> Connected for BatchedWrites<T> {
    type ConnectInfo = T::ConnectInfo;

    fn connect_info(&self) -> Self::ConnectInfo {
        self.io.connect_info()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Wake, Waker};
    use tokio::io::{AsyncReadExt, DuplexStream, duplex};

    /// Counts how often the task would have been woken.
    #[derive(Default)]
    struct Wakes(AtomicUsize);

    impl Wake for Wakes {
        fn wake(self: Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.fetch_add(1, Ordering::SeqCst);
        }
    }

    struct Harness {
        io: BatchedWrites<DuplexStream>,
        peer: DuplexStream,
        wakes: Arc<Wakes>,
        waker: Waker,
    }

    impl Harness {
        fn new() -> Self {
            let (ours, peer) = duplex(4 * LIMIT);
            let wakes = Arc::new(Wakes::default());
            Self {
                io: BatchedWrites::new(ours),
                peer,
                waker: Waker::from(wakes.clone()),
                wakes,
            }
        }

        fn write(&mut self, data: &[u8]) -> usize {
            let waker = self.waker.clone();
            match Pin::new(&mut self.io).poll_write(&mut Context::from_waker(&waker), data) {
                Poll::Ready(Ok(n)) => n,
                other => panic!("write: {other:?}"),
            }
        }

        fn flush(&mut self) {
            let waker = self.waker.clone();
            let polled = Pin::new(&mut self.io).poll_flush(&mut Context::from_waker(&waker));
            assert!(matches!(polled, Poll::Ready(Ok(()))), "{polled:?}");
        }

        /// What the peer has received so far.
        async fn received(&mut self) -> Vec<u8> {
            let mut out = vec![0; 8 * LIMIT];
            let mut got = 0;
            loop {
                let read = self.peer.read(&mut out[got..]);
                match tokio::time::timeout(std::time::Duration::from_millis(20), read).await {
                    Ok(Ok(0)) | Err(_) => break,
                    Ok(Ok(n)) => got += n,
                    Ok(Err(e)) => panic!("read: {e}"),
                }
            }
            out.truncate(got);
            out
        }
    }

    #[tokio::test]
    async fn flushes_wait_for_the_turn_to_end_and_then_write_everything_at_once() {
        let mut h = Harness::new();
        assert_eq!(h.write(b"response 1"), 10);
        h.flush();
        assert_eq!(h.wakes.0.load(Ordering::SeqCst), 1, "the task is woken");
        assert_eq!(h.received().await, b"");
        // More of the same turn: h2 flushes after each large DATA frame.
        assert_eq!(h.write(b"+response 2"), 11);
        h.flush();
        assert_eq!(h.received().await, b"", "a flush after new bytes waits too");
        assert_eq!(h.wakes.0.load(Ordering::SeqCst), 1, "woken once per batch");
        // The next turn: a flush with nothing new writes the whole batch.
        h.flush();
        assert_eq!(h.received().await, b"response 1+response 2");
        // A flush with nothing buffered neither defers nor wakes.
        h.flush();
        assert_eq!(h.wakes.0.load(Ordering::SeqCst), 1);
        // The next batch is deferred again.
        h.write(b"next");
        h.flush();
        assert_eq!(h.received().await, b"");
        assert_eq!(h.wakes.0.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn the_next_turns_read_writes_a_batch_flushed_many_times() {
        let mut h = Harness::new();
        for i in 0..16 {
            h.write(format!("response {i};").as_bytes());
            h.flush();
        }
        assert_eq!(h.received().await, b"");
        let mut space = [0u8; 16];
        let mut buf = ReadBuf::new(&mut space);
        let waker = h.waker.clone();
        let polled = Pin::new(&mut h.io).poll_read(&mut Context::from_waker(&waker), &mut buf);
        assert!(polled.is_pending(), "nothing to read yet");
        let expected: String = (0..16).map(|i| format!("response {i};")).collect();
        assert_eq!(h.received().await, expected.as_bytes());
        assert_eq!(h.wakes.0.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn a_read_after_a_deferred_flush_sends_it_first() {
        // As a TLS handshake does: flush once, then wait for the peer.
        let mut h = Harness::new();
        h.write(b"server hello");
        h.flush();
        let mut space = [0u8; 16];
        let mut buf = ReadBuf::new(&mut space);
        let waker = h.waker.clone();
        let polled = Pin::new(&mut h.io).poll_read(&mut Context::from_waker(&waker), &mut buf);
        assert!(polled.is_pending(), "nothing to read yet");
        assert_eq!(h.received().await, b"server hello");
    }

    #[tokio::test]
    async fn buffered_writes_go_out_without_a_flush_when_the_buffer_is_full() {
        let mut h = Harness::new();
        let first = vec![b'a'; LIMIT - 1];
        h.write(&first);
        assert_eq!(h.received().await, b"");
        h.write(b"bb");
        assert_eq!(h.received().await, first, "the full buffer went out");
        // A write as large as the buffer bypasses it.
        let large = vec![b'c'; LIMIT];
        h.flush();
        h.flush();
        assert_eq!(h.received().await, b"bb");
        let n = h.write(&large);
        assert!(n > 0);
        assert_eq!(h.received().await, large[..n].to_vec());
    }

    #[tokio::test]
    async fn vectored_writes_are_batched_in_order() {
        let mut h = Harness::new();
        let slices = [IoSlice::new(b"head"), IoSlice::new(b"-payload")];
        let waker = h.waker.clone();
        let polled =
            Pin::new(&mut h.io).poll_write_vectored(&mut Context::from_waker(&waker), &slices);
        assert!(matches!(polled, Poll::Ready(Ok(12))), "{polled:?}");
        h.write(b"-trailers");
        h.flush();
        h.flush();
        assert_eq!(h.received().await, b"head-payload-trailers");
    }

    #[tokio::test]
    async fn shutdown_writes_what_is_buffered() {
        let mut h = Harness::new();
        h.write(b"goaway");
        let waker = h.waker.clone();
        let polled = Pin::new(&mut h.io).poll_shutdown(&mut Context::from_waker(&waker));
        assert!(matches!(polled, Poll::Ready(Ok(()))), "{polled:?}");
        assert_eq!(h.received().await, b"goaway");
    }
}
