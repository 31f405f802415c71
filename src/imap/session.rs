//! One IMAP connection: dialing the socket (plain, TLS or STARTTLS with
//! our own trust roots; the socket itself is `stream`), login (see
//! `login`), capabilities and the folder list.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

pub use super::stream::Stream;
pub(super) use super::stream::{timed_out, Control, Tcp};

use super::{ImapError, CONNECT_TIMEOUT, IDLE_EXIT};
use crate::account::{Handle, Wake};
use crate::config::{AccountConfig, Security};

pub(super) type Session = imap::Session<Stream>;

pub(super) struct Caps {
    pub(super) idle: bool,
    pub(super) mv: bool,
    pub(super) uidplus: bool,
    pub(super) namespace: bool,
    pub(super) special_use: bool,
    /// `ENABLE UTF8=ACCEPT` succeeded (RFC 6855): folder names go as UTF-8.
    pub(super) utf8: bool,
    /// The longest literal the server takes without its `+` first:
    /// unlimited with LITERAL+, 4096 bytes with LITERAL- (RFC 7888), none
    /// without either. Strings that cannot be quoted go as such literals.
    pub(super) literal_max: usize,
    /// A move in this session was answered with COPYUID: from then on its
    /// COPYUID names every message a move took (see `Landed::exact`).
    pub(super) copyuid_seen: AtomicBool,
}

pub(super) use super::folders::Folders;

/// A signed-in session and what goes with it.
pub(super) struct Connected {
    pub(super) session: Session,
    /// The deadlines of the session's reads.
    pub(super) control: Arc<Control>,
    pub(super) caps: Caps,
    pub(super) folders: Folders,
    /// The session's wake-up, for the account's [`crate::account::Handle`].
    pub(super) wake: Wake,
}

/// The most one IMAP answer may hold: mailproc's largest, a window's
/// header fields and text, a model group's bodies or a training chunk,
/// are at most about 40 MiB, or one message of `max_message_bytes`. Past
/// it the server is broken or hostile and the session is dropped; the
/// crate's own 128 MiB let one such server take 0.5 to 0.8 GB while its
/// answer was read and parsed (an audit).
pub(super) fn response_cap(account: &AccountConfig) -> usize {
    (48usize << 20).max(account.max_message_bytes.saturating_add(1 << 20))
}

/// Opens the socket (TLS or STARTTLS as configured) and reads the
/// greeting: a client ready to sign in, the deadlines of its reads and its
/// wake-up.
fn dial(
    account: &AccountConfig,
    handle: Option<&Handle>,
) -> Result<(imap::Client<Stream>, Arc<Control>, Wake), ImapError> {
    let c = &account.imap;
    let timeout = c.timeout.0;
    let stopped = || handle.is_some_and(|h| h.is_shutting_down());
    let tcp = open(&account.name, &c.host, c.port(), &stopped)?;
    if let Some(h) = handle {
        // From here a stop cuts the socket (see `Handle::set_dialing`);
        // one that came just before is seen here.
        h.set_dialing(tcp.try_clone().ok());
        if h.is_shutting_down() {
            return Err(ImapError::Connect("stopping".into()));
        }
    }
    tcp.set_read_timeout(Some(timeout))?;
    tcp.set_write_timeout(Some(timeout))?;
    let _ = tcp.set_nodelay(true);
    keepalive(&tcp);
    let (wake_rx, wake_tx) = UnixStream::pair()?;
    wake_rx.set_nonblocking(true)?;
    let control = Arc::new(Control::new(timeout, timeout.min(IDLE_EXIT)));
    let wake = Wake {
        tx: wake_tx,
        rx: wake_rx.try_clone()?,
        armed: Arc::new(AtomicBool::new(false)),
        sock: tcp.try_clone()?,
    };
    let wrap = |tcp: TcpStream| Tcp::new(tcp, wake_rx, control.clone());
    let tls = || -> Result<native_tls::TlsConnector, ImapError> {
        let mut b = native_tls::TlsConnector::builder();
        if let Some(ca) = &c.ca_file {
            let pem = crate::config::read_certificate(ca)
                .map_err(|e| ImapError::Connect(format!("ca_file: {e}")))?;
            let cert = native_tls::Certificate::from_pem(&pem)
                .map_err(|e| ImapError::Connect(format!("ca_file {}: {e}", ca.display())))?;
            b.add_root_certificate(cert);
        }
        b.build()
            .map_err(|e| ImapError::Connect(format!("TLS setup: {e}")))
    };
    let client = match c.security {
        Security::Tls => {
            let s = tls()?
                .connect(&c.host, wrap(tcp))
                .map_err(|e| ImapError::Connect(format!("TLS handshake with {}: {e}", c.host)))?;
            let mut client = imap::Client::new(Stream::tls(s, control.clone()));
            client.max_response_bytes = response_cap(account);
            refused_greeting(&client.read_greeting()?)?;
            client
        }
        Security::None => {
            let mut client = imap::Client::new(Stream::plain(wrap(tcp), control.clone()));
            client.max_response_bytes = response_cap(account);
            refused_greeting(&client.read_greeting()?)?;
            client
        }
        Security::Starttls => {
            let tcp = starttls(tcp, timeout)
                .map_err(|e| ImapError::Connect(format!("STARTTLS with {}: {e}", c.host)))?;
            let s = tls()?.connect(&c.host, wrap(tcp)).map_err(|e| {
                ImapError::Connect(format!("STARTTLS handshake with {}: {e}", c.host))
            })?;
            let mut client = imap::Client::new(Stream::tls(s, control.clone()));
            client.max_response_bytes = response_cap(account);
            client
        }
    };
    Ok((client, control, wake))
}

/// Connects, logs in and reads what the server offers. Until it returns,
/// a stop of the account (`handle`, for the account's own session) cuts
/// the socket.
pub(super) fn connect(
    account: &AccountConfig,
    tokens: Option<&mut crate::oauth::Tokens>,
    handle: Option<&Handle>,
) -> Result<Connected, ImapError> {
    struct Dialing<'a>(Option<&'a Handle>);
    impl Drop for Dialing<'_> {
        fn drop(&mut self) {
            if let Some(h) = self.0 {
                h.set_dialing(None);
            }
        }
    }
    let _dialing = Dialing(handle);
    let c = &account.imap;
    let (client, control, wake) = dial(account, handle)?;
    let mut session = super::login::login(client, account, tokens)?;
    // Capabilities may change after login (RFC 3501 §6.2.3).
    let caps = session.capabilities()?;
    let utf8 =
        super::folders::enable_utf8(&mut session, caps.has_str("UTF8=ACCEPT"), &account.name)?;
    let caps = Caps {
        idle: caps.has_str("IDLE"),
        mv: caps.has_str("MOVE"),
        uidplus: caps.has_str("UIDPLUS"),
        namespace: caps.has_str("NAMESPACE"),
        special_use: caps.has_str("SPECIAL-USE"),
        utf8,
        literal_max: if caps.has_str("LITERAL+") {
            usize::MAX
        } else if caps.has_str("LITERAL-") {
            4096
        } else {
            0
        },
        copyuid_seen: AtomicBool::new(false),
    };
    let folders = super::folders::discover(&mut session, &caps, account)?;
    if let Some(h) = handle {
        h.set_folders_in_use(crate::account::FoldersInUse {
            junk: folders.junk.clone(),
            trash: folders.trash.clone(),
        });
    }
    log::info!(
        "{}: connected to {} (idle={}, move={}, uidplus={}, utf8={})",
        account.name,
        c.address(),
        caps.idle,
        caps.mv,
        caps.uidplus,
        caps.utf8
    );
    Ok(Connected {
        session,
        control,
        caps,
        folders,
        wake,
    })
}

/// A second session of the account for a large backlog's pass (see
/// `reader`): the same socket, TLS and login as [`connect`], with
/// `ENABLE UTF8=ACCEPT` when the first session has it (folder names then
/// go the same way on both), and nothing else: the first session's
/// capabilities and folders hold for it. Password logins only; with
/// OAuth2 the account's tokens belong to the first session. Returns the
/// session and its socket, which ends it at once when shut down.
pub(super) fn connect_second(
    account: &AccountConfig,
    utf8: bool,
) -> Result<(Session, TcpStream), ImapError> {
    if account.imap.auth != crate::config::ImapAuth::Password {
        return Err(ImapError::Login(
            "a second session signs in with a password only".into(),
        ));
    }
    let (client, _control, wake) = dial(account, None)?;
    let mut session = super::login::login(client, account, None)?;
    if utf8 && !super::folders::enable_utf8(&mut session, true, &account.name)? {
        return Err(ImapError::Login(
            "the second session could not enable UTF8=ACCEPT".into(),
        ));
    }
    Ok((session, wake.sock))
}

/// Connects to each address of `host` in turn, IPv6 first (in resolver
/// order within a family), until one answers; the error names every
/// address tried. `stopped` is asked while a connect waits, so a stop
/// does not wait out [`CONNECT_TIMEOUT`] on an address that drops the
/// handshake (a firewall, a server's full accept queue).
fn open(
    account: &str,
    host: &str,
    port: u16,
    stopped: &dyn Fn() -> bool,
) -> Result<TcpStream, ImapError> {
    let addrs: Vec<SocketAddr> = crate::resolve::system_lookup(host, port)
        .map_err(|e| ImapError::Connect(format!("{host}:{port}: {e}")))?;
    if addrs.is_empty() {
        return Err(ImapError::Connect(format!("{host}: no address")));
    }
    connect_first(account, host, addrs, stopped)
}

fn connect_first(
    account: &str,
    host: &str,
    mut addrs: Vec<SocketAddr>,
    stopped: &dyn Fn() -> bool,
) -> Result<TcpStream, ImapError> {
    addrs.sort_by_key(|a| a.is_ipv4());
    let mut failures = Vec::new();
    for addr in &addrs {
        match connect_one(addr, CONNECT_TIMEOUT, stopped) {
            Ok(tcp) => {
                if !failures.is_empty() {
                    log::info!(
                        "{account}: {host} answered at {addr} after: {}",
                        failures.join("; ")
                    );
                }
                return Ok(tcp);
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {
                return Err(ImapError::Connect("stopping".into()))
            }
            Err(e) => failures.push(format!("{addr}: {e}")),
        }
    }
    Err(ImapError::Connect(failures.join("; ")))
}

/// `TcpStream::connect_timeout`, asking `stopped` every 100 ms while the
/// handshake is under way (`Interrupted` when it says so).
fn connect_one(
    addr: &SocketAddr,
    timeout: Duration,
    stopped: &dyn Fn() -> bool,
) -> std::io::Result<TcpStream> {
    use nix::errno::Errno;
    use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
    use nix::sys::socket::{self, sockopt, AddressFamily, SockFlag, SockType, SockaddrStorage};
    use std::os::fd::{AsFd, AsRawFd};
    let family = if addr.is_ipv6() {
        AddressFamily::Inet6
    } else {
        AddressFamily::Inet
    };
    let fd = socket::socket(
        family,
        SockType::Stream,
        SockFlag::SOCK_NONBLOCK | SockFlag::SOCK_CLOEXEC,
        None,
    )?;
    match socket::connect(fd.as_raw_fd(), &SockaddrStorage::from(*addr)) {
        Ok(()) => {}
        Err(Errno::EINPROGRESS) => {
            let deadline = Instant::now() + timeout;
            loop {
                if stopped() {
                    return Err(std::io::ErrorKind::Interrupted.into());
                }
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Err(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        format!("no answer in {} s", timeout.as_secs()),
                    ));
                }
                let slice = left.min(Duration::from_millis(100));
                let mut fds = [PollFd::new(fd.as_fd(), PollFlags::POLLOUT)];
                match poll(
                    &mut fds,
                    PollTimeout::try_from(slice).unwrap_or(PollTimeout::MAX),
                ) {
                    Ok(0) | Err(Errno::EINTR) => continue,
                    Ok(_) => break,
                    Err(e) => return Err(e.into()),
                }
            }
            let err = socket::getsockopt(&fd, sockopt::SocketError)?;
            if err != 0 {
                return Err(std::io::Error::from_raw_os_error(err));
            }
        }
        Err(e) => return Err(e.into()),
    }
    let tcp = TcpStream::from(fd);
    tcp.set_nonblocking(false)?;
    Ok(tcp)
}

/// TCP keepalive: a peer that vanished (host down, path cut) is found by
/// the kernel even when no command is waiting, and NAT mappings stay up.
/// A stopped server whose kernel still answers is found by the command
/// time-outs and the IDLE re-issue instead. Best effort: a socket that
/// refuses the options still works.
fn keepalive(tcp: &TcpStream) {
    use nix::sys::socket::{setsockopt, sockopt};
    let set = || -> nix::Result<()> {
        setsockopt(tcp, sockopt::KeepAlive, &true)?;
        setsockopt(tcp, sockopt::TcpKeepIdle, &60)?;
        setsockopt(tcp, sockopt::TcpKeepInterval, &10)?;
        setsockopt(tcp, sockopt::TcpKeepCount, &6)
    };
    if let Err(e) = set() {
        log::debug!("imap: TCP keepalive not set: {e}");
    }
}

/// A greeting of `* BYE` (RFC 3501 §7.1.5: the server will not serve this
/// connection) is the error, in the server's words: the login after it
/// failed as "Connection Lost" (a hostile-server audit).
fn refused_greeting(greeting: &[u8]) -> Result<(), ImapError> {
    let text = String::from_utf8_lossy(greeting);
    match text.get(..6) {
        Some(bye) if bye.eq_ignore_ascii_case("* BYE ") => Err(ImapError::Connect(format!(
            "the server refused the connection: {}",
            crate::logging::clean_up_to(text[6..].trim_end(), 200)
        ))),
        _ => Ok(()),
    }
}

/// Upgrades a fresh plain connection (RFC 3501 §6.2.1): reads the greeting,
/// asks for STARTTLS and waits for its OK. The imap crate offers this only
/// with its own TLS settings, which cannot take our `ca_file`.
/// All of it within `timeout`, however the server trickles its lines.
fn starttls(mut tcp: TcpStream, timeout: Duration) -> std::io::Result<TcpStream> {
    let until = Instant::now() + timeout;
    let line = |tcp: &mut TcpStream| -> std::io::Result<String> {
        // Byte by byte: nothing after the OK may be swallowed, the TLS
        // handshake starts right there.
        let mut out = Vec::new();
        let mut b = [0u8; 1];
        while !out.ends_with(b"\r\n") {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Err(timed_out("no answer to STARTTLS within imap.timeout"));
            }
            tcp.set_read_timeout(Some(left))?;
            let n = tcp.read(&mut b).map_err(|e| match e.kind() {
                std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
                    timed_out("no answer to STARTTLS within imap.timeout")
                }
                _ => e,
            })?;
            if n == 0 {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "server closed the connection",
                ));
            }
            out.push(b[0]);
            if out.len() > 8192 {
                return Err(std::io::Error::other("line too long"));
            }
        }
        Ok(String::from_utf8_lossy(&out).into_owned())
    };
    let greeting = line(&mut tcp)?;
    if !greeting.starts_with("* OK") {
        return Err(std::io::Error::other(format!(
            "unexpected greeting {:?}",
            greeting.trim()
        )));
    }
    tcp.write_all(b"m0 STARTTLS\r\n")?;
    // Untagged lines before the answer are read and dropped, a few: a
    // server that floods them kept a core busy until imap.timeout.
    for _ in 0..STARTTLS_LINES {
        let l = line(&mut tcp)?;
        if l.starts_with("m0 OK") {
            tcp.set_read_timeout(Some(timeout))?;
            return Ok(tcp);
        }
        if l.starts_with("m0 ") {
            return Err(std::io::Error::other(format!(
                "server refused: {}",
                l.trim()
            )));
        }
    }
    Err(std::io::Error::other(format!(
        "more than {STARTTLS_LINES} lines before the answer to STARTTLS"
    )))
}

/// The most untagged lines a server may send before it answers STARTTLS.
const STARTTLS_LINES: usize = 100;

/// A NO or BAD answer concerns the command; anything else (I/O, parse) means
/// the session is broken and must be rebuilt.
pub(super) fn session_fatal(e: imap::Error) -> Result<String, ImapError> {
    match e {
        imap::Error::No(_) | imap::Error::Bad(_) => Ok(e.to_string()),
        other => Err(other.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

    #[test]
    fn each_address_is_tried_in_turn_ipv6_first() {
        let open = TcpListener::bind("127.0.0.1:0").unwrap();
        let good = open.local_addr().unwrap();
        // Ports just released: nothing listens there.
        let closed_v4 = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap();
        let closed_v6: Option<SocketAddr> = TcpListener::bind("[::1]:0")
            .ok()
            .map(|l| l.local_addr().unwrap());
        let mut addrs = vec![closed_v4, good];
        addrs.extend(closed_v6);
        let tcp = connect_first("acct", "h", addrs.clone(), &|| false).unwrap();
        assert_eq!(tcp.peer_addr().unwrap(), good);
        let Err(ImapError::Connect(e)) = connect_first("acct", "h", vec![closed_v4], &|| false)
        else {
            panic!("a closed port must fail");
        };
        assert!(e.contains(&closed_v4.to_string()), "{e}");
        if let Some(v6) = closed_v6 {
            // The IPv6 address is tried first, and named in a failure.
            let Err(ImapError::Connect(e)) =
                connect_first("acct", "h", vec![closed_v4, v6], &|| false)
            else {
                panic!("closed ports must fail");
            };
            let (i6, i4) = (
                e.find(&v6.to_string()).unwrap(),
                e.find(&closed_v4.to_string()).unwrap(),
            );
            assert!(i6 < i4, "{e}");
        }
    }

    /// A connect to an address that drops the handshake (here a server's
    /// full accept queue; in the field a firewall) waits out its time-out,
    /// unless the account is stopped meanwhile: then it ends at once.
    #[test]
    fn a_stop_cuts_a_connect_that_gets_no_answer() {
        use nix::sys::socket::{bind, getsockname, listen, socket, Backlog};
        use nix::sys::socket::{AddressFamily, SockFlag, SockType, SockaddrIn};
        use std::os::fd::AsRawFd;
        let fd = socket(
            AddressFamily::Inet,
            SockType::Stream,
            SockFlag::empty(),
            None,
        )
        .unwrap();
        bind(fd.as_raw_fd(), &SockaddrIn::new(127, 0, 0, 1, 0)).unwrap();
        listen(&fd, Backlog::new(0).unwrap()).unwrap();
        let addr: SockaddrIn = getsockname(fd.as_raw_fd()).unwrap();
        let addr = SocketAddr::from(std::net::SocketAddrV4::from(addr));
        // One connection fills the queue; the next handshakes are dropped.
        let _queued = connect_one(&addr, Duration::from_secs(5), &|| false).unwrap();
        let t = Instant::now();
        let e = connect_one(&addr, Duration::from_millis(1200), &|| false).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::TimedOut, "{e}");
        assert!(
            t.elapsed() >= Duration::from_millis(1200),
            "{:?}",
            t.elapsed()
        );
        let t = Instant::now();
        let stop_at = Duration::from_millis(300);
        let e = connect_one(&addr, Duration::from_secs(15), &|| t.elapsed() > stop_at).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::Interrupted, "{e}");
        assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
        let Err(ImapError::Connect(e)) = connect_first("acct", "h", vec![addr], &|| true) else {
            panic!("a stopped connect must fail");
        };
        assert_eq!(e, "stopping");
    }
}
