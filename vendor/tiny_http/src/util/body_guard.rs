//! Ends a connection whose request body was not read to its end (mailproc
//! patch, replacing the release's drain in `EqualReader::drop`).
//!
//! The release read and discarded the rest of an unread body so the
//! connection could serve another request, allocating a buffer of the
//! declared remaining size first: `Content-Length: 100000000000000` aborted
//! the process, `18446744073709551615` panicked, and a body that never came
//! blocked the thread for ever. Reading the rest is the client's choice of
//! cost, so instead the connection is marked finished and its write side
//! shut down after the response; the connection's own thread then discards
//! a bounded amount of what the client still sends (so closing does not
//! reset the connection under the response) and closes it.

use std::io::{Read, Result as IoResult};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// What a [`BodyGuard`] does when its body is abandoned.
pub(crate) struct Abandon {
    /// Checked by the connection before it reads another request.
    pub(crate) flag: Arc<AtomicBool>,
    pub(crate) shutdown: Arc<dyn Fn(std::net::Shutdown) + Send + Sync>,
}

pub(crate) struct BodyGuard<R: Read> {
    inner: R,
    finished: bool,
    abandon: Option<Abandon>,
}

impl<R: Read> BodyGuard<R> {
    pub(crate) fn new(inner: R, abandon: Option<Abandon>) -> BodyGuard<R> {
        BodyGuard {
            inner,
            finished: false,
            abandon,
        }
    }
}

impl<R: Read> Read for BodyGuard<R> {
    fn read(&mut self, buf: &mut [u8]) -> IoResult<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && !buf.is_empty() {
            self.finished = true;
        }
        Ok(n)
    }
}

impl<R: Read> Drop for BodyGuard<R> {
    fn drop(&mut self) {
        if self.finished {
            return;
        }
        if let Some(a) = self.abandon.take() {
            a.flag.store(true, Ordering::SeqCst);
            (a.shutdown)(std::net::Shutdown::Write);
        }
    }
}
