//! The socket under an IMAP session: plain or TLS over TCP, with the
//! deadlines of every read ([`Control`]: the ordinary command's time-out,
//! the IDLE wait's planned end, the slowest pace an answer may come at)
//! and the account's wake-up during IDLE.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

/// The socket under an IMAP session, plain or TLS.
#[derive(Debug)]
pub struct Stream {
    inner: Inner,
    control: Arc<Control>,
}

impl Stream {
    pub(super) fn plain(tcp: Tcp, control: Arc<Control>) -> Stream {
        Stream {
            inner: Inner::Plain(tcp),
            control,
        }
    }

    pub(super) fn tls(tls: native_tls::TlsStream<Tcp>, control: Arc<Control>) -> Stream {
        Stream {
            inner: Inner::Tls(Box::new(tls)),
            control,
        }
    }
}

#[derive(Debug)]
enum Inner {
    Plain(Tcp),
    Tls(Box<native_tls::TlsStream<Tcp>>),
}

/// What the reads of a session are waiting for, shared by the session's
/// stream and its worker. Every wait of the account loop has a deadline
/// that holds whatever the server sends meanwhile: the imap crate restarts
/// the socket's read time-out on every line it reads (flag updates,
/// `* OK Still here`), so a time-out alone would let a talkative server
/// postpone a renewal, a due retry or the IDLE re-issue for ever.
#[derive(Debug)]
pub struct Control {
    wait: Mutex<Wait>,
    /// The end the worker planned for the next IDLE wait.
    planned: Mutex<Option<Instant>>,
    /// Whether the last byte handed to the imap crate ended a line: an IDLE
    /// wait ends only between lines, so the crate never loses half a line.
    at_line_start: AtomicBool,
    /// What the answer to `DONE` (and the NOOP after it) may take.
    idle_exit: Duration,
    /// `imap.timeout`: the longest silence of an ordinary command.
    timeout: Duration,
    /// The answer under way (since the last command went out; within a
    /// line while idling): when it began and what has come of it.
    pace: Mutex<Pace>,
}

/// The slowest an answer may come, in bytes a second, once its first wait
/// (`imap.timeout`, or the IDLE exit's) is spent: a server that sends a
/// byte now and then, each within the socket's time-out, held an account
/// for ever (its reconnect and the service's stop waited with it).
const MIN_RATE: u64 = 1024;

#[derive(Debug, Clone, Copy)]
struct Pace {
    /// When `left` was last settled.
    at: Instant,
    /// Time the answer had left then.
    left: Duration,
    /// The most it may have left: its first wait.
    cap: Duration,
    /// Bytes of it received so far.
    got: u64,
}

impl Pace {
    fn new(first: Duration) -> Pace {
        Pace {
            at: Instant::now(),
            left: first,
            cap: first,
            got: 0,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Wait {
    /// An ordinary command: each read waits at most the socket's read
    /// time-out (`imap.timeout`).
    Command,
    /// The IDLE wait: reads end (`WouldBlock`, which the crate takes as its
    /// time-out, so it sends `DONE` and the session goes on) at the
    /// deadline or when the worker is woken for a command, between lines.
    Idle(Instant),
    /// An answer that must be complete by the deadline (`DONE`, NOOP).
    Answer(Instant),
}

impl Control {
    pub(super) fn new(timeout: Duration, idle_exit: Duration) -> Control {
        Control {
            wait: Mutex::new(Wait::Command),
            planned: Mutex::new(None),
            at_line_start: AtomicBool::new(true),
            idle_exit,
            timeout,
            pace: Mutex::new(Pace::new(timeout)),
        }
    }

    /// An answer begins, with `first` to start: a command went out
    /// (`imap.timeout`), or a line began while idling (the IDLE exit's).
    fn restart_pace(&self, first: Duration) {
        *self.pace.lock() = Pace::new(first);
    }

    /// What is left for the answer under way: a bucket that starts at its
    /// first wait, drains with time and fills a second for every
    /// [`MIN_RATE`] bytes received, never past the first wait. Credit
    /// without a cap let a 100 MB burst buy a day of trickling a byte a
    /// second, the account held all that time (an audit).
    fn pace_left(&self) -> Duration {
        let p = *self.pace.lock();
        p.left.saturating_sub(p.at.elapsed())
    }

    /// Whether any of the answer under way has come.
    fn answered_some(&self) -> bool {
        self.pace.lock().got > 0
    }

    fn received(&self, n: usize) {
        let mut p = self.pace.lock();
        let now = Instant::now();
        let left = p.left.saturating_sub(now.saturating_duration_since(p.at));
        let earned = Duration::from_micros((n as u64).saturating_mul(1_000_000) / MIN_RATE);
        p.left = left.saturating_add(earned).min(p.cap);
        p.at = now;
        p.got = p.got.saturating_add(n as u64);
    }

    fn wait(&self) -> Wait {
        *self.wait.lock()
    }

    /// The next IDLE wait ends at `deadline` at the latest.
    pub(super) fn plan_idle(&self, deadline: Instant) {
        *self.planned.lock() = Some(deadline);
    }

    /// The answers to come must be complete within `limit`.
    pub(super) fn answer_within(&self, limit: Duration) {
        *self.wait.lock() = Wait::Answer(Instant::now() + limit);
    }

    /// Back to ordinary commands (the socket's read time-out).
    pub(super) fn commands(&self) {
        *self.wait.lock() = Wait::Command;
        *self.planned.lock() = None;
    }
}

/// The TCP socket under the (TLS) stream, with the deadlines of
/// [`Control`] and the wake-up of [`crate::account::Wake`]: during the
/// IDLE wait a read waits for the socket, the deadline or the wake-up,
/// whichever comes first; the deadline and a wake-up return `WouldBlock`,
/// so IDLE ends normally (DONE) and the session goes on. TLS treats
/// `WouldBlock` as "try again later", so its state survives too. Only the
/// IDLE wait listens for wake-ups: one that arrives while IDLE starts stays
/// in the pipe until the wait begins, and then ends it at once.
#[derive(Debug)]
pub(super) struct Tcp {
    tcp: TcpStream,
    wake_rx: UnixStream,
    control: Arc<Control>,
}

impl Tcp {
    pub(super) fn new(tcp: TcpStream, wake_rx: UnixStream, control: Arc<Control>) -> Tcp {
        Tcp {
            tcp,
            wake_rx,
            control,
        }
    }
}

pub(super) fn timed_out(what: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::TimedOut, what.to_string())
}

impl Tcp {
    /// Waits until the socket is readable, the wake-up fires (when
    /// `wake`), or `timeout` passes. Returns (socket ready, woken).
    fn poll(&self, timeout: Duration, wake: bool) -> std::io::Result<(bool, bool)> {
        use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
        use std::os::fd::AsFd;
        let timeout = PollTimeout::try_from(timeout).unwrap_or(PollTimeout::MAX);
        loop {
            let mut fds = [
                PollFd::new(self.tcp.as_fd(), PollFlags::POLLIN),
                PollFd::new(self.wake_rx.as_fd(), PollFlags::POLLIN),
            ];
            let n = if wake { 2 } else { 1 };
            match poll(&mut fds[..n], timeout) {
                Ok(_) => {
                    return Ok((
                        fds[0].any() == Some(true),
                        wake && fds[1].any() == Some(true),
                    ))
                }
                Err(nix::errno::Errno::EINTR) => continue,
                Err(e) => return Err(e.into()),
            }
        }
    }
}

impl Read for Tcp {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.read_within(buf)?;
        self.control.received(n);
        Ok(n)
    }
}

impl Tcp {
    fn read_within(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.control.wait() {
            Wait::Command => {
                let c = &self.control;
                let left = c.pace_left();
                let slow = || {
                    timed_out(&format!(
                        "the server's answer came slower than {} KiB/s (imap.timeout to start)",
                        MIN_RATE / 1024
                    ))
                };
                if left.is_zero() {
                    return Err(slow());
                }
                if !self.poll(left.min(c.timeout), false)?.0 {
                    // Silence from the start is no answer, not a slow one
                    // (an audit found a server mute after the login told
                    // as "came too slowly").
                    return Err(if c.answered_some() {
                        slow()
                    } else {
                        timed_out("no answer within imap.timeout")
                    });
                }
                self.tcp.read(buf)
            }
            Wait::Answer(deadline) => {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() || !self.poll(left, false)?.0 {
                    return Err(timed_out("no answer in time"));
                }
                self.tcp.read(buf)
            }
            Wait::Idle(deadline) => {
                // Within a line the wait goes on (the rest of a line comes
                // at once), bounded like an answer.
                let between = self.control.at_line_start.load(Ordering::SeqCst);
                let left = deadline.saturating_duration_since(Instant::now());
                let (limit, wake) = if between {
                    self.control.restart_pace(self.control.idle_exit);
                    (left, true)
                } else {
                    let limit = self.control.pace_left();
                    if limit.is_zero() {
                        return Err(timed_out("the server stopped within a line"));
                    }
                    (limit, false)
                };
                let (ready, woken) = if between && left.is_zero() {
                    (false, false)
                } else {
                    self.poll(limit, wake)?
                };
                if ready {
                    return self.tcp.read(buf);
                }
                if !between {
                    return Err(timed_out("the server stopped within a line"));
                }
                if woken {
                    let mut drain = [0u8; 64];
                    while matches!(self.wake_rx.read(&mut drain), Ok(n) if n > 0) {}
                }
                Err(std::io::Error::new(
                    std::io::ErrorKind::WouldBlock,
                    if woken {
                        "woken for a command"
                    } else {
                        "the wait's deadline"
                    },
                ))
            }
        }
    }
}

impl Write for Tcp {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.tcp.write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.tcp.flush()
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = match &mut self.inner {
            Inner::Plain(s) => s.read(buf),
            Inner::Tls(s) => s.read(buf),
        }?;
        if n > 0 {
            self.control
                .at_line_start
                .store(buf[n - 1] == b'\n', Ordering::SeqCst);
        }
        Ok(n)
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // What the client sends (a command, `DONE`) starts an answer; the
        // TLS layer's own writes below do not.
        self.control.restart_pace(self.control.timeout);
        match &mut self.inner {
            Inner::Plain(s) => s.write(buf),
            Inner::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.inner {
            Inner::Plain(s) => s.flush(),
            Inner::Tls(s) => s.flush(),
        }
    }
}

/// The imap crate sets a read time-out when its IDLE wait begins (after
/// the server's `+`) and removes it (`None`) before it sends `DONE` and
/// reads the answer. The first starts the IDLE wait of [`Control`], ending
/// at the deadline the worker planned (or the time-out given); the second
/// bounds the answer to `DONE` (with no bound, a server that stopped
/// answering held the account for ever). The worker goes back to ordinary
/// commands after IDLE.
impl imap::extensions::idle::SetReadTimeout for Stream {
    fn set_read_timeout(&mut self, timeout: Option<Duration>) -> imap::Result<()> {
        let c = &self.control;
        let wait = match timeout {
            Some(t) => Wait::Idle(
                c.planned
                    .lock()
                    .take()
                    .unwrap_or_else(|| Instant::now() + t),
            ),
            None => Wait::Answer(Instant::now() + c.idle_exit),
        };
        *c.wait.lock() = wait;
        Ok(())
    }
}
