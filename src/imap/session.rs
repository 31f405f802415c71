//! One IMAP connection: the socket (plain or TLS), STARTTLS with our own
//! trust roots, login (see `login`), capabilities and the folder list.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use super::{ImapError, COMMAND_TIMEOUT, CONNECT_TIMEOUT};
use crate::config::{AccountConfig, Security};

/// The socket under an IMAP session, plain or TLS.
#[derive(Debug)]
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<native_tls::TlsStream<TcpStream>>),
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.read(buf),
            Stream::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Stream::Plain(s) => s.write(buf),
            Stream::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Stream::Plain(s) => s.flush(),
            Stream::Tls(s) => s.flush(),
        }
    }
}

impl imap::extensions::idle::SetReadTimeout for Stream {
    fn set_read_timeout(&mut self, timeout: Option<Duration>) -> imap::Result<()> {
        let tcp = match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => s.get_ref(),
        };
        tcp.set_read_timeout(timeout).map_err(imap::Error::Io)
    }
}

pub(super) type Session = imap::Session<Stream>;

pub(super) struct Caps {
    pub(super) idle: bool,
    pub(super) mv: bool,
    pub(super) uidplus: bool,
}

/// What one connection knows of the server's folders.
pub(super) struct Folders {
    pub(super) existing: HashSet<String>,
    pub(super) junk: String,
    pub(super) trash: String,
}

/// Connects, logs in and reads what the server offers.
pub(super) fn connect(
    account: &AccountConfig,
    tokens: Option<&mut crate::oauth::Tokens>,
) -> Result<(Session, TcpStream, Caps, Folders), ImapError> {
    let c = &account.imap;
    let addr = (c.host.as_str(), c.port())
        .to_socket_addrs()
        .map_err(|e| ImapError::Connect(format!("{}:{}: {e}", c.host, c.port())))?
        .next()
        .ok_or_else(|| ImapError::Connect(format!("{}: no address", c.host)))?;
    let tcp = TcpStream::connect_timeout(&addr, CONNECT_TIMEOUT)
        .map_err(|e| ImapError::Connect(format!("{addr}: {e}")))?;
    tcp.set_read_timeout(Some(COMMAND_TIMEOUT))?;
    tcp.set_write_timeout(Some(COMMAND_TIMEOUT))?;
    let _ = tcp.set_nodelay(true);
    let sock = tcp.try_clone()?;
    let tls = || -> Result<native_tls::TlsConnector, ImapError> {
        let mut b = native_tls::TlsConnector::builder();
        if let Some(ca) = &c.ca_file {
            let pem = std::fs::read(ca)
                .map_err(|e| ImapError::Connect(format!("ca_file {}: {e}", ca.display())))?;
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
                .connect(&c.host, tcp)
                .map_err(|e| ImapError::Connect(format!("TLS handshake with {}: {e}", c.host)))?;
            let mut client = imap::Client::new(Stream::Tls(Box::new(s)));
            client.read_greeting()?;
            client
        }
        Security::None => {
            let mut client = imap::Client::new(Stream::Plain(tcp));
            client.read_greeting()?;
            client
        }
        Security::Starttls => {
            let tcp = starttls(tcp)
                .map_err(|e| ImapError::Connect(format!("STARTTLS with {}: {e}", c.host)))?;
            let s = tls()?.connect(&c.host, tcp).map_err(|e| {
                ImapError::Connect(format!("STARTTLS handshake with {}: {e}", c.host))
            })?;
            imap::Client::new(Stream::Tls(Box::new(s)))
        }
    };
    let mut session = super::login::login(client, account, tokens)?;
    // Capabilities may change after login (RFC 3501 §6.2.3).
    let caps = session.capabilities()?;
    let caps = Caps {
        idle: caps.has_str("IDLE"),
        mv: caps.has_str("MOVE"),
        uidplus: caps.has_str("UIDPLUS"),
    };
    let folders = list_folders(&mut session)?;
    log::info!(
        "{}: connected to {}:{} (idle={}, move={}, uidplus={})",
        account.name,
        c.host,
        c.port(),
        caps.idle,
        caps.mv,
        caps.uidplus
    );
    Ok((session, sock, caps, folders))
}

/// Upgrades a fresh plain connection (RFC 3501 §6.2.1): reads the greeting,
/// asks for STARTTLS and waits for its OK. The imap crate offers this only
/// with its own TLS settings, which cannot take our `ca_file`.
fn starttls(mut tcp: TcpStream) -> std::io::Result<TcpStream> {
    fn line(tcp: &mut TcpStream) -> std::io::Result<String> {
        // Byte by byte: nothing after the OK may be swallowed, the TLS
        // handshake starts right there.
        let mut out = Vec::new();
        let mut b = [0u8; 1];
        while !out.ends_with(b"\r\n") {
            if tcp.read(&mut b)? == 0 {
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
    }
    let greeting = line(&mut tcp)?;
    if !greeting.starts_with("* OK") {
        return Err(std::io::Error::other(format!(
            "unexpected greeting {:?}",
            greeting.trim()
        )));
    }
    tcp.write_all(b"m0 STARTTLS\r\n")?;
    loop {
        let l = line(&mut tcp)?;
        if l.starts_with("m0 OK") {
            return Ok(tcp);
        }
        if l.starts_with("m0 ") {
            return Err(std::io::Error::other(format!(
                "server refused: {}",
                l.trim()
            )));
        }
    }
}

/// A NO or BAD answer concerns the command; anything else (I/O, parse) means
/// the session is broken and must be rebuilt.
pub(super) fn session_fatal(e: imap::Error) -> Result<String, ImapError> {
    match e {
        imap::Error::No(_) | imap::Error::Bad(_) => Ok(e.to_string()),
        other => Err(other.into()),
    }
}

fn list_folders(s: &mut Session) -> Result<Folders, ImapError> {
    let names = s.list(Some(""), Some("*"))?;
    let mut f = Folders {
        existing: HashSet::new(),
        junk: "Junk".into(),
        trash: "Trash".into(),
    };
    let mut junk = None;
    let mut trash = None;
    for n in names.iter() {
        f.existing.insert(n.name().to_string());
        for a in n.attributes() {
            match a {
                imap_proto::NameAttribute::Junk => junk = Some(n.name().to_string()),
                imap_proto::NameAttribute::Trash => trash = Some(n.name().to_string()),
                _ => {}
            }
        }
    }
    if let Some(j) = junk {
        f.junk = j;
    }
    if let Some(t) = trash {
        f.trash = t;
    }
    Ok(f)
}
