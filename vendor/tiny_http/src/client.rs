use ascii::AsciiString;

use std::io::Error as IoError;
use std::io::Result as IoResult;
use std::io::{BufReader, BufWriter, ErrorKind, Read, Write};

use std::net::SocketAddr;
use std::str::FromStr;

use crate::common::{HTTPVersion, Header, HeaderField, Method};
use crate::util::RefinedTcpStream;
use crate::util::{SequentialReader, SequentialReaderBuilder, SequentialWriterBuilder};
use crate::util::Abandon;
use crate::util::ReadClock;
use crate::Request;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A ClientConnection is an object that will store a socket to a client
/// and return Request objects.
pub struct ClientConnection {
    // address of the client (mailproc patch: the one `accept` gave; asking
    // the socket later fails once the client has reset it, and the release
    // unwrapped that failure, one panic per reset connection)
    remote_addr: Option<SocketAddr>,

    // sequence of Readers to the stream, so that the data is not read in
    //  the wrong order
    source: SequentialReaderBuilder<BufReader<RefinedTcpStream>>,

    // sequence of Writers to the stream, to avoid writing response #2 before
    //  response #1
    sink: SequentialWriterBuilder<BufWriter<RefinedTcpStream>>,

    // Reader to read the next header from
    next_header_source: SequentialReader<BufReader<RefinedTcpStream>>,

    // set to true if we know that the previous request is the last one
    no_more_requests: bool,

    // true if the connection goes through SSL
    secure: bool,

    /// mailproc patch: bounds on this connection.
    limits: crate::Limits,

    /// mailproc patch: set when a request body was left unread; no further
    /// request is read from this connection (see `BodyGuard`).
    abandoned: Arc<AtomicBool>,

    /// mailproc patch: shuts the socket down when a body is abandoned.
    shutdown: Arc<dyn Fn(std::net::Shutdown) + Send + Sync>,

    /// mailproc patch: the deadlines of the read side, by phase.
    clock: Arc<ReadClock>,

    /// mailproc patch: whether a request was read; later ones start idle.
    served: bool,

    /// mailproc patch: asked, for a request that has a body, how much of
    /// it may be buffered (see [`crate::BodyAdmission`]).
    admission: Option<crate::BodyAdmission>,
}

/// Error that can happen when reading a request.
#[derive(Debug)]
enum ReadError {
    /// mailproc patch: a request head `httparse` refuses, a bare CR or LF,
    /// a field that is not ASCII: `400`.
    BadHead,
    /// mailproc patch: request line and headers beyond `Limits::max_header_bytes`.
    HeaderTooLarge,
    /// mailproc patch: more than [`MAX_HEADERS`] fields: `431` too.
    TooManyFields,
    /// the client sent an unrecognized `Expect` header
    ExpectationFailed(HTTPVersion),
    /// mailproc patch: the request's framing or body is refused with this
    /// status (400, 413, 501) and reason; what follows cannot be trusted to
    /// be a request, so the connection closes.
    Refused(u16, String),
    ReadIoError(IoError),
}

/// Header fields a request may have (mailproc patch: `httparse` parses into
/// a fixed array). Browsers send about 20.
const MAX_HEADERS: usize = 100;

impl ClientConnection {
    /// Creates a new `ClientConnection` that takes ownership of the `TcpStream`.
    pub fn new(
        write_socket: RefinedTcpStream,
        read_socket: RefinedTcpStream,
        limits: crate::Limits,
        clock: Arc<ReadClock>,
        remote_addr: Option<SocketAddr>,
        admission: Option<crate::BodyAdmission>,
    ) -> ClientConnection {
        let secure = read_socket.secure();
        let shutdown = Arc::from(read_socket.shutdown_handle());

        let mut source = SequentialReaderBuilder::new(BufReader::with_capacity(1024, read_socket));
        let first_header = source.next().unwrap();

        ClientConnection {
            source,
            sink: SequentialWriterBuilder::new(BufWriter::with_capacity(1024, write_socket)),
            remote_addr,
            next_header_source: first_header,
            no_more_requests: false,
            secure,
            limits,
            abandoned: Arc::new(AtomicBool::new(false)),
            shutdown,
            clock,
            served: false,
            admission,
        }
    }

    /// true if the connection is HTTPS
    pub fn secure(&self) -> bool {
        self.secure
    }

    /// Reads the next line from self.next_header_source.
    ///
    /// Reads until `CRLF` is reached. The next read will start
    ///  at the first byte of the new line.
    /// Before closing a connection whose client may still be sending (after
    /// its write side was shut down behind the last response), discards what
    /// arrives for a moment: closing with unread data would reset the
    /// connection, and a reset can destroy the response before the client
    /// reads it. Bounded in bytes and time (mailproc patch).
    fn linger(&mut self) {
        self.clock.drain(std::time::Duration::from_secs(2));
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        let mut left: usize = 1 << 20;
        let mut buf = [0u8; 8192];
        while left > 0 && std::time::Instant::now() < deadline {
            match self.next_header_source.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => left = left.saturating_sub(n),
            }
        }
    }

    /// Answers `status` with `Connection: close` and a JSON body
    /// `{"error": why}` (as every error of the application), shuts the
    /// write side and closes after a bounded linger: what follows on the
    /// socket is not a request to read (mailproc patch).
    fn refuse(&mut self, status: u16, why: &str) -> Option<Request> {
        let mut writer = self.sink.next().unwrap();
        let body = format!("{{\"error\":{}}}", json_string(why));
        // Written by hand: `Response` drops a `Connection` header.
        write!(
            writer,
            "HTTP/1.1 {status} {}\r\nConnection: close\r\nContent-Type: application/json\r\n\
             X-Content-Type-Options: nosniff\r\nContent-Length: {}\r\n\r\n{body}",
            crate::StatusCode(status).default_reason_phrase(),
            body.len()
        )
        .and_then(|_| writer.flush())
        .ok();
        drop(writer);
        self.no_more_requests = true;
        (self.shutdown)(std::net::Shutdown::Write);
        self.linger();
        None
    }

    /// Reads a request head, up to and including the empty line that ends
    /// it, within `Limits::max_header_bytes` (mailproc patch: the release
    /// read lines of any length and took a bare LF as a line end). Empty
    /// lines before the request line are skipped (RFC 9112 §2.2).
    fn read_head(&mut self) -> Result<Vec<u8>, ReadError> {
        let mut budget = self.limits.max_header_bytes;
        let mut head = Vec::with_capacity(512);
        let mut byte = [0u8; 1];
        loop {
            match self.next_header_source.read(&mut byte) {
                Ok(0) => {
                    return Err(ReadError::ReadIoError(IoError::new(
                        ErrorKind::ConnectionAborted,
                        "Unexpected EOF",
                    )))
                }
                Ok(_) => {}
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(e) => return Err(ReadError::ReadIoError(e)),
            }
            if budget == 0 {
                // Still inside the method: longer than any implemented,
                // 501 (RFC 9112 §3). Inside the request line: its target
                // is what is too long, 414; else the fields, 431.
                if !head.contains(&b' ') && !head.contains(&b'\n') {
                    return Err(ReadError::Refused(
                        501,
                        "method: longer than any this server implements".into(),
                    ));
                }
                if !head.contains(&b'\n') {
                    return Err(ReadError::Refused(
                        414,
                        format!(
                            "request target is longer than {}",
                            bytes(self.limits.max_header_bytes)
                        ),
                    ));
                }
                return Err(ReadError::HeaderTooLarge);
            }
            budget -= 1;
            let b = byte[0];
            if head.is_empty() && (b == b'\r' || b == b'\n') {
                continue;
            }
            head.push(b);
            if b == b'\n' {
                // A field may not hide a line end (RFC 9112 §2.2): every LF
                // closes a CRLF. (`httparse` refuses a bare CR itself.)
                if head.len() < 2 || head[head.len() - 2] != b'\r' {
                    return Err(ReadError::BadHead);
                }
                if head.ends_with(b"\r\n\r\n") {
                    return Ok(head);
                }
            }
        }
    }

    /// Reads a request from the stream.
    /// Blocks until the header has been read.
    fn read(&mut self) -> Result<Request, ReadError> {
        let head = self.read_head()?;
        let (method, path, version, headers) = parse_head(&head)?;
        self.clock.body();
        // mailproc patch: a request with a body may be held to less than
        // `buffer_body_up_to` before any of it is read (say, one without
        // credentials): over that, 413 and the connection closes.
        let has_body = headers
            .iter()
            .any(|h| h.field.equiv("Content-Length") || h.field.equiv("Transfer-Encoding"));
        let (body_limit, limit_note) = match &self.admission {
            Some(admit) if has_body => match admit(&method, &path, &headers) {
                Some((n, note)) if n < self.limits.buffer_body_up_to => (n, Some(note)),
                _ => (self.limits.buffer_body_up_to, None),
            },
            _ => (self.limits.buffer_body_up_to, None),
        };

        // building the writer for the request
        let writer = self.sink.next().unwrap();

        // follow-up for next potential request
        let mut data_source = self.source.next().unwrap();
        std::mem::swap(&mut self.next_header_source, &mut data_source);

        // building the next reader
        let request = crate::request::new_request(
            self.secure,
            method,
            path,
            version.clone(),
            headers,
            self.remote_addr,
            data_source,
            writer,
            Some(Abandon {
                flag: self.abandoned.clone(),
                shutdown: self.shutdown.clone(),
            }),
            body_limit,
            limit_note.is_some(),
        )
        .map_err(|e| {
            use crate::request;
            match e {
                request::RequestCreationError::CreationIoError(e) => ReadError::ReadIoError(e),
                request::RequestCreationError::ExpectationFailed => {
                    ReadError::ExpectationFailed(version)
                }
                request::RequestCreationError::BadContentLength => ReadError::Refused(
                    400,
                    "Content-Length: expected one decimal number of bytes".into(),
                ),
                request::RequestCreationError::BadFraming(why) => {
                    ReadError::Refused(400, why.into())
                }
                request::RequestCreationError::UnsupportedCoding => ReadError::Refused(
                    501,
                    "Transfer-Encoding: no coding but chunked is supported".into(),
                ),
                request::RequestCreationError::BodyTooLarge => ReadError::Refused(
                    413,
                    match &limit_note {
                        Some(note) => {
                            format!("request body is larger than {} {note}", bytes(body_limit))
                        }
                        None => format!("request body is larger than {}", bytes(body_limit)),
                    },
                ),
                request::RequestCreationError::BadChunk => {
                    ReadError::Refused(400, "request body: not valid chunked coding".into())
                }
            }
        })?;

        // mailproc patch: busy until answered (see `ReadClock`).
        let mut request = request;
        request.set_in_flight(self.clock.request_started());

        // return the request
        Ok(request)
    }
}

impl Iterator for ClientConnection {
    type Item = Request;

    /// Blocks until the next Request is available.
    /// Returns None when no new Requests will come from the client.
    fn next(&mut self) -> Option<Request> {
        use crate::{Response, StatusCode};

        // the client sent a "connection: close" header in this previous request
        //  or is using HTTP 1.0, meaning that no new request will come
        // mailproc patch: the answer is out; close the write side behind it
        // and take what the client still sends for a moment, so the close
        // does not reset the connection under the answer (a client that
        // asked for an upgrade goes on sending).
        // A body of the previous request was left unread: what follows on
        // the socket is that body, not a request (mailproc patch; its write
        // side is shut already).
        if self.abandoned.load(Ordering::SeqCst) {
            self.no_more_requests = true;
            // Shut already for a body abandoned; not for an answer the
            // application said is the last (`Request::close_after`).
            (self.shutdown)(std::net::Shutdown::Write);
            self.linger();
            return None;
        }
        if self.no_more_requests {
            (self.shutdown)(std::net::Shutdown::Write);
            self.linger();
            return None;
        }

        if self.served {
            self.clock.idle();
        }
        self.served = true;
        let result = self.read();
        // A body of the previous request was left unread: what follows
        // on the socket is that body, not a request (mailproc patch).
        if self.abandoned.load(Ordering::SeqCst) {
            self.no_more_requests = true;
            self.linger();
            return None;
        }
        let rq = match result {
            // The rest of the head or body is still unread: answered,
            // then closed (mailproc patch).
            Err(ReadError::HeaderTooLarge) => {
                let why = format!(
                    "request head is larger than {}",
                    bytes(self.limits.max_header_bytes)
                );
                return self.refuse(431, &why);
            }
            Err(ReadError::TooManyFields) => {
                let why = format!("request head has more than {MAX_HEADERS} header fields");
                return self.refuse(431, &why);
            }
            Err(ReadError::BadHead) => {
                return self.refuse(400, "malformed request head (see RFC 9112)")
            }
            Err(ReadError::Refused(status, why)) => return self.refuse(status, &why),

            // An idle keep-alive connection just closes: a 408 there
            // could meet a request the client sent at that moment.
            Err(ReadError::ReadIoError(ref err))
                if err.kind() == ErrorKind::TimedOut && self.clock.is_idle() =>
            {
                return None
            }

            // A request begun and not finished in time (mailproc patch: with
            // a JSON body saying so, as every refusal).
            Err(ReadError::ReadIoError(ref err)) if err.kind() == ErrorKind::TimedOut => {
                return self.refuse(408, "the request did not arrive in time");
            }

            Err(ReadError::ExpectationFailed(_)) => {
                return self.refuse(417, "Expect: only 100-continue is supported");
            }

            Err(ReadError::ReadIoError(_)) => return None,

            Ok(rq) => rq,
        };

        // updating the status of the connection (mailproc patch: no
        // protocol is switched to on an upgrade, but what the client sends
        // after it is not meant as HTTP: the connection closes after it)
        if crate::request::last_on_connection(rq.headers(), rq.http_version()) {
            self.no_more_requests = true;
        }

        // returning the request
        Some(rq)
    }
}

/// `n` bytes as a person reads a limit: `64 KiB`, `1 MiB`, `1000 bytes`.
fn bytes(n: usize) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} bytes"),
    }
}

/// `s` as a JSON string, quotes included (tiny_http has no JSON library;
/// the reasons are ours, but escaped all the same).
fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Parses a request head with `httparse` (mailproc patch: the release's
/// hand-written parser took any version string it knew, split fields at the
/// first colon and trimmed what it found).
fn parse_head(head: &[u8]) -> Result<(Method, String, HTTPVersion, Vec<Header>), ReadError> {
    // The request line is ASCII (httparse lets bytes over 0x7f through in
    // the target, which is no `str` then).
    let line_end = head.iter().position(|b| *b == b'\n').unwrap_or(head.len());
    if !head[..line_end].is_ascii() {
        return Err(ReadError::BadHead);
    }
    let mut fields = [httparse::EMPTY_HEADER; MAX_HEADERS];
    let mut req = httparse::Request::new(&mut fields);
    match req.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        Ok(httparse::Status::Partial) => return Err(ReadError::BadHead),
        Err(httparse::Error::TooManyHeaders) => return Err(ReadError::TooManyFields),
        Err(_) => return Err(ReadError::BadHead),
    }
    let (Some(method), Some(path), Some(minor)) = (req.method, req.path, req.version) else {
        return Err(ReadError::BadHead);
    };
    let method: Method = method.parse().map_err(|_| ReadError::BadHead)?;
    let mut headers = Vec::with_capacity(req.headers.len());
    for f in req.headers.iter() {
        let field: HeaderField = f.name.parse().map_err(|_| ReadError::BadHead)?;
        // RFC 9110 §5.5 lets a value carry obs-text (bytes 0x80 to 0xFF:
        // a cookie another application of the host set in UTF-8, say),
        // which an `AsciiString` cannot hold; each such byte becomes DEL
        // (0x7f), which no valid value contains, so it can never equal
        // anything the application compares it with.
        let value: Vec<u8> = f
            .value
            .trim_ascii()
            .iter()
            .map(|b| if b.is_ascii() { *b } else { 0x7f })
            .collect();
        let value = AsciiString::from_ascii(value).map_err(|_| ReadError::BadHead)?;
        headers.push(Header { field, value });
    }
    // mailproc patch: RFC 9112 §3.2, a request carries one Host field, and
    // an HTTP/1.1 request must have it; either is a 400.
    match headers.iter().filter(|h| h.field.equiv("Host")).count() {
        0 if minor == 1 => {
            return Err(ReadError::Refused(
                400,
                "Host: an HTTP/1.1 request must have one (RFC 9112, 3.2)".into(),
            ))
        }
        0 | 1 => {}
        _ => {
            return Err(ReadError::Refused(
                400,
                "Host: more than one (RFC 9112, 3.2)".into(),
            ))
        }
    }
    // mailproc patch: RFC 9112 §3.2.2, a server must accept a target in
    // absolute form (`GET http://host/path`); its authority is the host
    // and stands in for the Host field, and the rest is the path. The
    // release passed the whole URL on as the path (a 404).
    let path = match absolute_form(path) {
        Some((authority, rest)) => {
            let value = AsciiString::from_ascii(authority).map_err(|_| ReadError::BadHead)?;
            headers.retain(|h| !h.field.equiv("Host"));
            headers.push(Header {
                field: "Host".parse().map_err(|_| ReadError::BadHead)?,
                value,
            });
            rest
        }
        None => path.to_owned(),
    };
    // mailproc patch: RFC 9112 §3.2.1 and §3.2, a target in origin form
    // begins with `/` (`*` only for OPTIONS), and a Host value that is not
    // `host[:port]` is a 400; `GET health` was served as `/health`, and
    // `Host: a b` or `Host: localhost/x?y` as any name.
    if !(path.starts_with('/') || (path == "*" && method == Method::Options)) {
        return Err(ReadError::Refused(
            400,
            "request target: expected a path beginning with / (RFC 9112, 3.2.1)".into(),
        ));
    }
    if let Some(h) = headers.iter().find(|h| h.field.equiv("Host")) {
        if !valid_host(h.value.as_str()) {
            return Err(ReadError::Refused(
                400,
                "Host: expected host[:port] (RFC 9112, 3.2)".into(),
            ));
        }
    }
    Ok((method, path, HTTPVersion(1, minor), headers))
}

/// Whether `v` is an RFC 3986 `host [ ":" port ]`: a bracketed IP literal
/// or a reg-name (an IPv4 address is one), and a port of digits.
fn valid_host(v: &str) -> bool {
    let (host, port) = if v.starts_with('[') {
        match v.find(']') {
            Some(i) => (&v[..=i], &v[i + 1..]),
            None => return false,
        }
    } else {
        v.rfind(':').map_or((v, ""), |i| (&v[..i], &v[i..]))
    };
    let port_ok = port.is_empty()
        || (port.starts_with(':') && port[1..].bytes().all(|b| b.is_ascii_digit()));
    let host_ok = if let Some(inner) = host.strip_prefix('[') {
        let inner = inner.strip_suffix(']').unwrap_or("");
        !inner.is_empty()
            && inner
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b":.%-_~!$&'()*+,;=".contains(&b))
    } else {
        host.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._~%!$&'()*+,;=".contains(&b))
    };
    port_ok && host_ok
}

/// The authority and the origin-form rest (`/` when empty) of an
/// `http://` or `https://` target, or `None` for any other target.
fn absolute_form(target: &str) -> Option<(&str, String)> {
    let scheme_end = target.find("://")?;
    let scheme = &target[..scheme_end];
    if !(scheme.eq_ignore_ascii_case("http") || scheme.eq_ignore_ascii_case("https")) {
        return None;
    }
    let after = &target[scheme_end + 3..];
    let end = after.find(['/', '?']).unwrap_or(after.len());
    let (authority, rest) = after.split_at(end);
    let rest = if rest.starts_with('/') {
        rest.to_owned()
    } else {
        format!("/{rest}")
    };
    Some((authority, rest))
}

#[cfg(test)]
mod test {
    use super::{bytes, json_string, parse_head, ReadError};

    #[test]
    fn refusal_bodies_are_json() {
        assert_eq!(bytes(64 << 10), "64 KiB");
        assert_eq!(bytes(1 << 20), "1 MiB");
        assert_eq!(bytes(1000), "1000 bytes");
        assert_eq!(json_string("a\"b\\c\r\n"), r#""a\"b\\c\u000d\u000a""#);
    }

    #[test]
    fn heads_are_parsed_by_httparse() {
        let (method, path, ver, headers) =
            parse_head(b"GET /hello HTTP/1.1\r\nHost: a\r\nX-Y:  b \r\n\r\n").unwrap();
        assert!(method == crate::Method::Get);
        assert_eq!(path, "/hello");
        assert!(ver == crate::common::HTTPVersion(1, 1));
        assert_eq!(headers[1].value.as_str(), "b");

        for bad in [
            &b"GET /hello\r\n\r\n"[..],
            b"qsd qsd qsd\r\n\r\n",
            b"GET / HTTP/2.0\r\n\r\n",
            b"GET / HTTP/1.1\r\nX: a\rb\r\n\r\n",
            b"GET / HTTP/1.1\r\nX : a\r\n\r\n",
            b"GET / HTTP/1.1\r\n folded\r\n\r\n",
            b"GET /\xe9 HTTP/1.1\r\n\r\n",
        ] {
            assert!(
                matches!(parse_head(bad), Err(ReadError::BadHead)),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    /// RFC 9110 §5.5: a value may carry obs-text (0x80-0xFF); each such
    /// byte is kept as DEL, which no valid value holds (a UTF-8 cookie of
    /// another application made every request a 400).
    #[test]
    fn obs_text_in_a_value_is_kept_as_del() {
        let (_, _, _, headers) =
            parse_head(b"GET / HTTP/1.1\r\nHost: a\r\nCookie: p=caf\xc3\xa9; s=1\r\n\r\n").unwrap();
        assert_eq!(headers[1].value.as_str(), "p=caf\x7f\x7f; s=1");
    }

    #[test]
    fn a_host_that_is_not_host_port_and_a_target_without_a_slash_are_400() {
        for bad in [
            &b"GET /health HTTP/1.1\r\nHost: a b\r\n\r\n"[..],
            b"GET /health HTTP/1.1\r\nHost: localhost/x?y\r\n\r\n",
            b"GET /health HTTP/1.1\r\nHost: localhost:notaport\r\n\r\n",
            b"GET /health HTTP/1.1\r\nHost: a@localhost\r\n\r\n",
            b"GET /health HTTP/1.1\r\nHost: [::1\r\n\r\n",
            b"GET health HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GET * HTTP/1.1\r\nHost: a\r\n\r\n",
        ] {
            match parse_head(bad) {
                Err(ReadError::Refused(400, _)) => {}
                other => panic!("{:?}: {other:?}", String::from_utf8_lossy(bad)),
            }
        }
        for good in [
            &b"GET / HTTP/1.1\r\nHost: 127.0.0.1:8080\r\n\r\n"[..],
            b"GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: mail.example.com\r\n\r\n",
            b"GET / HTTP/1.1\r\nHost: \r\n\r\n",
            b"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n",
            b"GET http://a:1/x HTTP/1.1\r\nHost: b\r\n\r\n",
        ] {
            assert!(parse_head(good).is_ok(), "{:?}", String::from_utf8_lossy(good));
        }
    }

    #[test]
    fn one_host_field_and_http_1_1_must_have_it() {
        for (bad, why) in [
            (&b"GET / HTTP/1.1\r\nX: a\r\n\r\n"[..], "must have one"),
            (b"GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", "more than one"),
            (b"GET / HTTP/1.0\r\nHost: a\r\nHost: a\r\n\r\n", "more than one"),
        ] {
            match parse_head(bad) {
                Err(ReadError::Refused(400, e)) => assert!(e.contains(why), "{e}"),
                other => panic!("{:?}: {other:?}", String::from_utf8_lossy(bad)),
            }
        }
        assert!(parse_head(b"GET / HTTP/1.0\r\n\r\n").is_ok());
        assert!(parse_head(b"GET / HTTP/1.1\r\nHOST: a\r\n\r\n").is_ok());
    }

    #[test]
    fn an_absolute_target_is_its_path_and_its_authority_the_host() {
        let host = |headers: &[crate::Header]| -> Vec<String> {
            headers
                .iter()
                .filter(|h| h.field.equiv("Host"))
                .map(|h| h.value.to_string())
                .collect()
        };
        for (target, path) in [
            ("http://127.0.0.1:8080/api/stats?x=1", "/api/stats?x=1"),
            ("HTTP://127.0.0.1:8080", "/"),
            ("https://127.0.0.1:8080?x", "/?x"),
        ] {
            let head = format!("GET {target} HTTP/1.1\r\nHost: evil.example\r\n\r\n");
            let (_, p, _, headers) = parse_head(head.as_bytes()).unwrap();
            assert_eq!(p, path, "{target}");
            assert_eq!(host(&headers), ["127.0.0.1:8080"], "{target}");
        }
        // Still one Host field required in HTTP/1.1, as RFC 9112 says.
        assert!(matches!(
            parse_head(b"GET http://a/ HTTP/1.1\r\n\r\n"),
            Err(ReadError::Refused(400, _))
        ));
        // Origin form and other targets are left as they are.
        let (_, p, _, _) = parse_head(b"GET /x?http://y HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
        assert_eq!(p, "/x?http://y");
        let (_, p, _, _) = parse_head(b"OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n").unwrap();
        assert_eq!(p, "*");
    }
}
