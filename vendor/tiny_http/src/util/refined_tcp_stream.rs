use std::io::Result as IoResult;
use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr};

use crate::connection::Connection;
use crate::util::ReadClock;
use std::sync::Arc;
#[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
use crate::ssl::SslStream;

pub(crate) enum Stream {
    /// mailproc patch: shared, not `dup`ed. The halves of a connection and
    /// the handles that shut it down hold one descriptor between them (the
    /// release took three to five a connection, and a `dup` failing at
    /// `EMFILE` panicked the accept thread).
    Http(Arc<Connection>),
    #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
    Https(SslStream),
}

impl Stream {
    /// A second handle on the same connection.
    fn share(&self) -> Self {
        match self {
            Stream::Http(c) => Stream::Http(Arc::clone(c)),
            #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
            Stream::Https(ssl_stream) => Stream::Https(ssl_stream.clone()),
        }
    }
}

impl From<Connection> for Stream {
    fn from(tcp_stream: Connection) -> Self {
        Stream::Http(Arc::new(tcp_stream))
    }
}

impl Stream {
    fn secure(&self) -> bool {
        match self {
            Stream::Http(_) => false,
            #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
            Stream::Https(_) => true,
        }
    }

    fn peer_addr(&mut self) -> IoResult<Option<SocketAddr>> {
        match self {
            Stream::Http(tcp_stream) => tcp_stream.peer_addr(),
            #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
            Stream::Https(ssl_stream) => ssl_stream.peer_addr(),
        }
    }

    /// How long the next read may block (mailproc patch). TLS streams keep
    /// the time-out set at accept: their deadlines are checked between reads.
    fn set_read_timeout(&mut self, timeout: Option<std::time::Duration>) -> IoResult<()> {
        match self {
            Stream::Http(c) => c.set_read_timeout(timeout),
            #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
            Stream::Https(_) => Ok(()),
        }
    }

    /// How long the next write may block (mailproc patch), as for reads.
    fn set_write_timeout(&mut self, timeout: Option<std::time::Duration>) -> IoResult<()> {
        match self {
            Stream::Http(c) => c.set_write_timeout(timeout),
            #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
            Stream::Https(_) => Ok(()),
        }
    }

    fn shutdown(&mut self, how: Shutdown) -> IoResult<()> {
        match self {
            Stream::Http(tcp_stream) => tcp_stream.shutdown(how),
            #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
            Stream::Https(ssl_stream) => ssl_stream.shutdown(how),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> IoResult<usize> {
        match self {
            Stream::Http(tcp_stream) => (&**tcp_stream).read(buf),
            #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
            Stream::Https(ssl_stream) => ssl_stream.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> IoResult<usize> {
        match self {
            Stream::Http(tcp_stream) => (&**tcp_stream).write(buf),
            #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
            Stream::Https(ssl_stream) => ssl_stream.write(buf),
        }
    }

    fn flush(&mut self) -> IoResult<()> {
        match self {
            Stream::Http(tcp_stream) => (&**tcp_stream).flush(),
            #[cfg(any(feature = "ssl-openssl", feature = "ssl-rustls"))]
            Stream::Https(ssl_stream) => ssl_stream.flush(),
        }
    }
}

pub struct RefinedTcpStream {
    stream: Stream,
    close_read: bool,
    close_write: bool,
    /// mailproc patch: the connection's deadlines (the read side's on the
    /// read half, the response's on the write half).
    clock: Option<Arc<ReadClock>>,
}

impl RefinedTcpStream {
    /// The read and write halves of `stream`.
    pub(crate) fn new<S>(stream: S) -> (RefinedTcpStream, RefinedTcpStream)
    where
        S: Into<Stream>,
    {
        let stream: Stream = stream.into();

        let read = RefinedTcpStream {
            stream: stream.share(),
            close_read: true,
            close_write: false,
            clock: None,
        };

        let write = RefinedTcpStream {
            stream,
            close_read: false,
            close_write: true,
            clock: None,
        };

        (read, write)
    }

    /// Reads from now on keep the deadlines of `clock` (mailproc patch).
    pub(crate) fn set_clock(&mut self, clock: Arc<ReadClock>) {
        self.clock = Some(clock);
    }

    /// Returns true if this struct wraps around a secure connection.
    #[inline]
    pub(crate) fn secure(&self) -> bool {
        self.stream.secure()
    }

    pub(crate) fn peer_addr(&mut self) -> IoResult<Option<SocketAddr>> {
        self.stream.peer_addr()
    }

    /// A handle that shuts the connection down from another place
    /// (mailproc patch: used to end a connection whose request body was
    /// left unread, and to shed one at the cap).
    pub(crate) fn shutdown_handle(&self) -> Box<dyn Fn(Shutdown) + Send + Sync> {
        let stream = std::sync::Mutex::new(self.stream.share());
        Box::new(move |how| {
            if let Ok(mut s) = stream.lock() {
                s.shutdown(how).ok();
            }
        })
    }
}

impl Drop for RefinedTcpStream {
    fn drop(&mut self) {
        if self.close_read {
            self.stream.shutdown(Shutdown::Read).ok();
        }

        if self.close_write {
            self.stream.shutdown(Shutdown::Write).ok();
        }
    }
}

impl Read for RefinedTcpStream {
    fn read(&mut self, buf: &mut [u8]) -> IoResult<usize> {
        let Some(clock) = &self.clock else {
            return self.stream.read(buf);
        };
        let wait = clock.before_read()?;
        self.stream.set_read_timeout(wait)?;
        match self.stream.read(buf) {
            Ok(n) => {
                clock.after_read(n);
                Ok(n)
            }
            // An expired socket time-out is EAGAIN on Unix; callers answer
            // 408 to `TimedOut`, and the next read reports the deadline.
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                clock.expired();
                Err(std::io::Error::new(
                    std::io::ErrorKind::TimedOut,
                    "the client sent nothing in time",
                ))
            }
            Err(e) => Err(e),
        }
    }
}

impl Write for RefinedTcpStream {
    fn write(&mut self, buf: &[u8]) -> IoResult<usize> {
        let Some(clock) = &self.clock else {
            return self.stream.write(buf);
        };
        // mailproc patch: a response has a total deadline. A client that
        // misses it loses the connection: both directions are shut down, so
        // its thread's next read ends it too.
        let missed = |stream: &mut Stream| {
            stream.shutdown(Shutdown::Both).ok();
            std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "the client did not take the response in time",
            )
        };
        let wait = match clock.before_write() {
            Ok(wait) => wait,
            Err(_) => return Err(missed(&mut self.stream)),
        };
        self.stream.set_write_timeout(wait)?;
        match self.stream.write(buf) {
            Ok(n) => {
                clock.after_write(n);
                Ok(n)
            }
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => {
                clock.expired();
                Err(missed(&mut self.stream))
            }
            Err(e) => Err(e),
        }
    }

    fn flush(&mut self) -> IoResult<()> {
        self.stream.flush()
    }
}
