//! A small raw IMAP client for the test harness: it seeds and reads the
//! servers that have no `doveadm` (Cyrus, Courier), and shows tests what a
//! server answers, byte for byte (capabilities, NAMESPACE, SELECT).
//!
//! Blocking, one command at a time, a 30 s time-out on every read and
//! write, responses of at most 64 MiB. Mailbox names are given in UTF-8 and
//! sent in modified UTF-7 (mailproc's own encoder, unit-tested against the
//! RFC's examples).
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::time::Duration;

use mailproc::mailbox::mutf7;

const TIMEOUT: Duration = Duration::from_secs(30);
const MAX_RESPONSE: usize = 64 << 20;

/// The connection: plain until STARTTLS, or TLS from the start.
enum Conn {
    Plain(TcpStream),
    Tls(Box<native_tls::TlsStream<TcpStream>>),
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self {
            Conn::Plain(s) => s.read(buf),
            Conn::Tls(s) => s.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match self {
            Conn::Plain(s) => s.write(buf),
            Conn::Tls(s) => s.write(buf),
        }
    }
    fn flush(&mut self) -> std::io::Result<()> {
        match self {
            Conn::Plain(s) => s.flush(),
            Conn::Tls(s) => s.flush(),
        }
    }
}

/// The end of a command: its tagged status and everything untagged before it.
#[derive(Debug, Clone)]
pub struct Answer {
    /// Untagged responses (`* ...`) and continuation requests, each whole
    /// (literals inline, CRLF kept).
    pub untagged: Vec<Vec<u8>>,
    /// `OK`, `NO` or `BAD`.
    pub status: String,
    /// The tagged line after the status, e.g. `[TRYCREATE] No such mailbox`.
    pub text: String,
}

impl Answer {
    pub fn ok(&self) -> bool {
        self.status == "OK"
    }

    /// The untagged responses as text, one per line.
    pub fn text_of_untagged(&self) -> String {
        self.untagged
            .iter()
            .map(|u| String::from_utf8_lossy(u).trim_end().to_string())
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// All untagged bytes, concatenated (for parsers that take raw input).
    pub fn raw(&self) -> Vec<u8> {
        self.untagged.concat()
    }
}

pub struct ImapClient {
    stream: BufReader<Conn>,
    next_tag: u32,
    /// The server's greeting line.
    pub greeting: String,
}

/// Quotes `s` as an IMAP quoted string (ASCII only: names are encoded first).
pub fn quote(s: &str) -> String {
    let mut q = String::with_capacity(s.len() + 2);
    q.push('"');
    for c in s.chars() {
        if c == '"' || c == '\\' {
            q.push('\\');
        }
        q.push(c);
    }
    q.push('"');
    q
}

/// A mailbox name for a command: modified UTF-7, quoted.
pub fn mailbox_arg(name: &str) -> String {
    quote(&mutf7::encode(name))
}

impl ImapClient {
    /// Plain TCP to 127.0.0.1:`port`, greeting read.
    pub fn connect(port: u16) -> Result<ImapClient, String> {
        let tcp =
            TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect {port}: {e}"))?;
        tcp.set_read_timeout(Some(TIMEOUT))
            .map_err(|e| e.to_string())?;
        tcp.set_write_timeout(Some(TIMEOUT))
            .map_err(|e| e.to_string())?;
        Self::greet(Conn::Plain(tcp))
    }

    /// Implicit TLS to 127.0.0.1:`port`, trusting only `ca_file`.
    pub fn connect_tls(port: u16, ca_file: &Path) -> Result<ImapClient, String> {
        let tcp =
            TcpStream::connect(("127.0.0.1", port)).map_err(|e| format!("connect {port}: {e}"))?;
        tcp.set_read_timeout(Some(TIMEOUT))
            .map_err(|e| e.to_string())?;
        tcp.set_write_timeout(Some(TIMEOUT))
            .map_err(|e| e.to_string())?;
        let tls = tls_connector(ca_file)?
            .connect("localhost", tcp)
            .map_err(|e| format!("TLS handshake on {port}: {e}"))?;
        Self::greet(Conn::Tls(Box::new(tls)))
    }

    /// Plain TCP, then STARTTLS trusting only `ca_file`.
    pub fn connect_starttls(port: u16, ca_file: &Path) -> Result<ImapClient, String> {
        let mut plain = Self::connect(port)?;
        let a = plain.command("STARTTLS")?;
        if !a.ok() {
            return Err(format!("STARTTLS refused: {} {}", a.status, a.text));
        }
        let greeting = plain.greeting.clone();
        // Nothing may be buffered past the tagged OK (RFC 3501 §6.2.1).
        let Conn::Plain(tcp) = plain.stream.into_inner() else {
            return Err("STARTTLS on a TLS connection".into());
        };
        let tls = tls_connector(ca_file)?
            .connect("localhost", tcp)
            .map_err(|e| format!("TLS handshake after STARTTLS on {port}: {e}"))?;
        Ok(ImapClient {
            stream: BufReader::new(Conn::Tls(Box::new(tls))),
            next_tag: plain.next_tag,
            greeting,
        })
    }

    fn greet(stream: Conn) -> Result<ImapClient, String> {
        let mut c = ImapClient {
            stream: BufReader::new(stream),
            next_tag: 1,
            greeting: String::new(),
        };
        let g = c.read_response()?;
        c.greeting = String::from_utf8_lossy(&g).trim_end().to_string();
        if !c.greeting.starts_with("* OK") && !c.greeting.starts_with("* PREAUTH") {
            return Err(format!("unexpected greeting: {}", c.greeting));
        }
        Ok(c)
    }

    /// Reads one response: a line, with any literals it announces.
    fn read_response(&mut self) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        loop {
            let before = out.len();
            let n = (&mut self.stream)
                .take((MAX_RESPONSE - out.len().min(MAX_RESPONSE)) as u64)
                .read_until(b'\n', &mut out)
                .map_err(|e| format!("read: {e}"))?;
            if n == 0 {
                return Err(format!(
                    "connection closed (after {:?})",
                    String::from_utf8_lossy(&out)
                ));
            }
            if !out.ends_with(b"\n") {
                return Err("response over 64 MiB".into());
            }
            let line = &out[before..];
            let trimmed = line.strip_suffix(b"\r\n").unwrap_or(line);
            // A literal: `{n}` (or `{n+}`) at the end of the line.
            let Some(open) = trimmed
                .ends_with(b"}")
                .then(|| trimmed.iter().rposition(|&c| c == b'{'))
                .flatten()
            else {
                return Ok(out);
            };
            let digits = &trimmed[open + 1..trimmed.len() - 1];
            let digits = digits.strip_suffix(b"+").unwrap_or(digits);
            let Some(len) = std::str::from_utf8(digits)
                .ok()
                .and_then(|d| d.parse::<usize>().ok())
            else {
                return Ok(out);
            };
            if out.len() + len > MAX_RESPONSE {
                return Err("response over 64 MiB".into());
            }
            let start = out.len();
            out.resize(start + len, 0);
            self.stream
                .read_exact(&mut out[start..])
                .map_err(|e| format!("read literal: {e}"))?;
        }
    }

    fn tag(&mut self) -> String {
        let t = format!("t{}", self.next_tag);
        self.next_tag += 1;
        t
    }

    fn write(&mut self, bytes: &[u8]) -> Result<(), String> {
        let s = self.stream.get_mut();
        s.write_all(bytes)
            .and_then(|_| s.flush())
            .map_err(|e| format!("write: {e}"))
    }

    /// Reads up to the tagged response of `tag`.
    fn finish(&mut self, tag: &str) -> Result<Answer, String> {
        let mut untagged = Vec::new();
        loop {
            let r = self.read_response()?;
            if let Some(rest) = r
                .strip_prefix(tag.as_bytes())
                .and_then(|r| r.strip_prefix(b" "))
            {
                let rest = String::from_utf8_lossy(rest).trim_end().to_string();
                let (status, text) = rest.split_once(' ').unwrap_or((&rest, ""));
                return Ok(Answer {
                    untagged,
                    status: status.to_ascii_uppercase(),
                    text: text.to_string(),
                });
            }
            untagged.push(r);
        }
    }

    /// Sends one command line (no literals) and reads its answer.
    pub fn command(&mut self, cmd: &str) -> Result<Answer, String> {
        let tag = self.tag();
        self.write(format!("{tag} {cmd}\r\n").as_bytes())?;
        self.finish(&tag)
    }

    /// LOGIN; a refusal is an error with the server's words.
    pub fn login(&mut self, user: &str, password: &str) -> Result<Answer, String> {
        let a = self.command(&format!("LOGIN {} {}", quote(user), quote(password)))?;
        if !a.ok() {
            return Err(format!("LOGIN {user}: {} {}", a.status, a.text));
        }
        Ok(a)
    }

    /// APPEND with a synchronizing literal (every server takes those).
    pub fn append(&mut self, mailbox: &str, flags: &str, message: &[u8]) -> Result<Answer, String> {
        self.append_dated(mailbox, flags, None, message)
    }

    /// APPEND with an INTERNALDATE (`"01-Jan-2020 00:00:00 +0000"`), as a
    /// copy from elsewhere or a restore keeps it.
    pub fn append_dated(
        &mut self,
        mailbox: &str,
        flags: &str,
        date: Option<&str>,
        message: &[u8],
    ) -> Result<Answer, String> {
        let tag = self.tag();
        let flags = if flags.is_empty() {
            String::new()
        } else {
            format!("({flags}) ")
        };
        let date = date.map(|d| format!("\"{d}\" ")).unwrap_or_default();
        self.write(
            format!(
                "{tag} APPEND {} {flags}{date}{{{}}}\r\n",
                mailbox_arg(mailbox),
                message.len()
            )
            .as_bytes(),
        )?;
        let cont = self.read_response()?;
        if !cont.starts_with(b"+") {
            // The server refused before the literal (e.g. no such mailbox).
            let line = String::from_utf8_lossy(&cont).trim_end().to_string();
            let rest = line
                .strip_prefix(&format!("{tag} "))
                .unwrap_or(&line)
                .to_string();
            let (status, text) = rest.split_once(' ').unwrap_or((&rest, ""));
            return Ok(Answer {
                untagged: Vec::new(),
                status: status.to_ascii_uppercase(),
                text: text.to_string(),
            });
        }
        let mut body = message.to_vec();
        body.extend_from_slice(b"\r\n");
        self.write(&body)?;
        self.finish(&tag)
    }

    /// LOGOUT, ignoring what the server says (it may just close).
    pub fn logout(mut self) {
        let _ = self.command("LOGOUT");
    }
}

fn tls_connector(ca_file: &Path) -> Result<native_tls::TlsConnector, String> {
    let pem = std::fs::read(ca_file).map_err(|e| format!("{}: {e}", ca_file.display()))?;
    let cert = native_tls::Certificate::from_pem(&pem).map_err(|e| e.to_string())?;
    native_tls::TlsConnector::builder()
        .disable_built_in_roots(true)
        .add_root_certificate(cert)
        .build()
        .map_err(|e| e.to_string())
}

/// Logs in as `user` on the plain port.
pub fn session(port: u16, user: &str, password: &str) -> ImapClient {
    let mut c = ImapClient::connect(port).unwrap_or_else(|e| panic!("IMAP {port}: {e}"));
    c.login(user, password)
        .unwrap_or_else(|e| panic!("IMAP {port}: {e}"));
    c
}

/// What the user's own mail client does: `commands` in one session of
/// `user` (password `secret`), each of which must succeed.
pub fn user_does(port: u16, user: &str, commands: &[&str]) {
    let mut c = session(port, user, "secret");
    for cmd in commands {
        let a = c.command(cmd).unwrap_or_else(|e| panic!("{cmd}: {e}"));
        assert!(a.ok(), "{cmd}: {:?}", a.text_of_untagged());
    }
    c.logout();
}

/// CREATE `mailbox`; one that exists already is fine.
pub fn create_mailbox(c: &mut ImapClient, mailbox: &str) {
    let a = c
        .command(&format!("CREATE {}", mailbox_arg(mailbox)))
        .unwrap_or_else(|e| panic!("CREATE {mailbox}: {e}"));
    let exists = a.text.to_ascii_lowercase().contains("exist");
    assert!(
        a.ok() || exists,
        "CREATE {mailbox}: {} {}",
        a.status,
        a.text
    );
}

/// APPENDs every message in order (a leading mbox `From ` line dropped),
/// creating the mailbox when the server says it is missing.
pub fn append_all(c: &mut ImapClient, mailbox: &str, raws: &[Vec<u8>]) {
    for (i, raw) in raws.iter().enumerate() {
        let raw = super::server::strip_mbox_from(raw);
        let mut a = c
            .append(mailbox, "", raw)
            .unwrap_or_else(|e| panic!("APPEND to {mailbox}: {e}"));
        if !a.ok() && i == 0 {
            create_mailbox(c, mailbox);
            a = c
                .append(mailbox, "", raw)
                .unwrap_or_else(|e| panic!("APPEND to {mailbox}: {e}"));
        }
        assert!(a.ok(), "APPEND to {mailbox}: {} {}", a.status, a.text);
    }
}

/// Every message of every selectable mailbox, read with EXAMINE (nothing
/// changes, `\Recent` left out) and `UID FETCH`, sorted by mailbox and UID.
pub fn all_messages(c: &mut ImapClient) -> Vec<super::server::StoredMsg> {
    let list = c
        .command("LIST \"\" \"*\"")
        .unwrap_or_else(|e| panic!("LIST: {e}"));
    assert!(list.ok(), "LIST: {} {}", list.status, list.text);
    let mut out = Vec::new();
    for entry in mailproc::mailbox::ListEntry::parse_all(&list.raw()) {
        if entry.attributes.iter().any(|a| {
            a.eq_ignore_ascii_case("\\Noselect") || a.eq_ignore_ascii_case("\\NonExistent")
        }) {
            continue;
        }
        let ex = c
            .command(&format!("EXAMINE {}", mailbox_arg(&entry.name)))
            .unwrap_or_else(|e| panic!("EXAMINE {}: {e}", entry.name));
        assert!(ex.ok(), "EXAMINE {}: {} {}", entry.name, ex.status, ex.text);
        let empty = ex
            .untagged
            .iter()
            .any(|u| u.eq_ignore_ascii_case(b"* 0 EXISTS\r\n"));
        if empty {
            continue;
        }
        let f = c
            .command("UID FETCH 1:* (UID FLAGS BODY.PEEK[HEADER.FIELDS (MESSAGE-ID)])")
            .unwrap_or_else(|e| panic!("UID FETCH in {}: {e}", entry.name));
        assert!(
            f.ok(),
            "UID FETCH in {}: {} {}",
            entry.name,
            f.status,
            f.text
        );
        for r in &f.untagged {
            if let Some(m) = parse_fetch(&entry.name, r) {
                out.push(m);
            }
        }
    }
    out.sort_by(|a, b| (&a.mailbox, a.uid).cmp(&(&b.mailbox, b.uid)));
    out
}

/// One `* n FETCH (UID u FLAGS (...) BODY[...] {k}\r\n<header>)` response.
fn parse_fetch(mailbox: &str, r: &[u8]) -> Option<super::server::StoredMsg> {
    let text = String::from_utf8_lossy(r);
    let upper = text.to_ascii_uppercase();
    if !upper.starts_with("* ") || !upper.contains(" FETCH (") {
        return None;
    }
    let uid_at = upper.find("UID ")? + 4;
    let uid: u32 = text[uid_at..]
        .chars()
        .take_while(|c| c.is_ascii_digit())
        .collect::<String>()
        .parse()
        .ok()?;
    let flags_at = upper.find("FLAGS (")? + 7;
    let flags_end = flags_at + text[flags_at..].find(')')?;
    let flags = text[flags_at..flags_end]
        .split_whitespace()
        .filter(|f| !f.eq_ignore_ascii_case("\\Recent"))
        .map(str::to_string)
        .collect();
    // The header literal: after the first "}\r\n".
    let header = text.find("}\r\n").map_or("", |i| &text[i + 3..]);
    let mut message_id = String::new();
    let mut lines = header.lines();
    while let Some(l) = lines.next() {
        if l.get(..11)
            .is_some_and(|h| h.eq_ignore_ascii_case("message-id:"))
        {
            message_id = l[11..].to_string();
            for more in lines.by_ref() {
                if more.starts_with([' ', '\t']) {
                    message_id.push(' ');
                    message_id.push_str(more);
                } else {
                    break;
                }
            }
            break;
        }
    }
    Some(super::server::StoredMsg {
        mailbox: mailbox.to_string(),
        uid,
        flags,
        message_id: message_id.split_whitespace().collect::<Vec<_>>().join(" "),
    })
}
