//! A guest's stdout or stderr as the host keeps it: the first bytes up to its limit, and the
//! rest discarded without the guest noticing, so that a grader that prints too much still
//! grades (a write that failed would become the grader's own error).

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::Bytes;
use tokio::io::AsyncWrite;
use wasmtime_wasi::cli::{IsTerminal, StdoutStream};
use wasmtime_wasi::p2::{OutputStream, Pollable, StreamError};

/// What the guest may write in one go; past the limit it is all discarded.
const PERMIT: usize = 64 << 10;

/// One captured stream; its clones share what it kept.
#[derive(Clone)]
pub(super) struct Capture {
    limit: usize,
    kept: Arc<Mutex<Kept>>,
}

#[derive(Default)]
struct Kept {
    bytes: Vec<u8>,
    cut: bool,
}

impl Capture {
    pub(super) fn new(limit: usize) -> Capture {
        Capture {
            limit,
            kept: Arc::default(),
        }
    }

    fn kept(&self) -> std::sync::MutexGuard<'_, Kept> {
        self.kept.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn keep(&self, bytes: &[u8]) {
        let mut kept = self.kept();
        let room = self.limit.saturating_sub(kept.bytes.len());
        let taken = bytes.len().min(room);
        kept.bytes.extend_from_slice(&bytes[..taken]);
        kept.cut |= taken < bytes.len();
    }

    /// The last `keep` bytes kept, as text.
    pub(super) fn tail(&self, keep: usize) -> String {
        let kept = self.kept();
        let start = kept.bytes.len().saturating_sub(keep);
        String::from_utf8_lossy(&kept.bytes[start..]).into_owned()
    }

    /// The bytes kept.
    pub(super) fn bytes(&self) -> Vec<u8> {
        self.kept().bytes.clone()
    }

    /// Whether the guest wrote more than the limit.
    pub(super) fn cut(&self) -> bool {
        self.kept().cut
    }

    /// Forgets what was kept, and that it was cut: the next call's output has the whole limit.
    pub(super) fn clear(&self) {
        let mut kept = self.kept();
        kept.bytes.clear();
        kept.cut = false;
    }
}

#[wasmtime_wasi::async_trait]
impl OutputStream for Capture {
    fn write(&mut self, bytes: Bytes) -> Result<(), StreamError> {
        self.keep(&bytes);
        Ok(())
    }

    fn flush(&mut self) -> Result<(), StreamError> {
        Ok(())
    }

    fn check_write(&mut self) -> Result<usize, StreamError> {
        Ok(PERMIT)
    }
}

#[wasmtime_wasi::async_trait]
impl Pollable for Capture {
    async fn ready(&mut self) {}
}

impl AsyncWrite for Capture {
    fn poll_write(
        self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.keep(buf);
        Poll::Ready(Ok(buf.len()))
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

impl IsTerminal for Capture {
    fn is_terminal(&self) -> bool {
        false
    }
}

impl StdoutStream for Capture {
    fn p2_stream(&self) -> Box<dyn OutputStream> {
        Box::new(self.clone())
    }

    fn async_stream(&self) -> Box<dyn AsyncWrite + Send + Sync> {
        Box::new(self.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_bytes_are_kept_and_the_rest_cut_without_an_error() {
        let mut capture = Capture::new(8);
        assert_eq!(capture.check_write().ok(), Some(PERMIT));
        capture.write(Bytes::from_static(b"hello ")).unwrap();
        assert!(!capture.cut());
        capture.write(Bytes::from_static(b"world")).unwrap();
        capture.write(Bytes::from_static(b"!")).unwrap();
        assert_eq!(capture.check_write().ok(), Some(PERMIT));
        assert!(capture.cut());
        assert_eq!(capture.tail(100), "hello wo");
        assert_eq!(capture.tail(3), " wo");
    }
}
