use std::io::Error as IoError;
use std::io::{self, Cursor, ErrorKind, Read, Write};

use std::fmt;
use std::net::SocketAddr;
use std::str::FromStr;

use std::sync::mpsc::Sender;

use crate::util::{Abandon, BodyGuard, ChunkError, ChunkedReader, EqualReader, FusedReader};
use crate::{HTTPVersion, Header, Method, Response, StatusCode};

/// Represents an HTTP request made by a client.
///
/// A `Request` object is what is produced by the server, and is your what
/// your code must analyse and answer.
///
/// This object implements the `Send` trait, therefore you can dispatch your requests to
/// worker threads.
///
/// # Pipelining
///
/// mailproc patch: a client may send several requests in a row, but its
/// connection hands them out one at a time: the next is read only once the
/// last is answered (see `Answered`). `Connection: upgrade` switches to
/// nothing; the connection closes after that request.
///
/// # Automatic cleanup
///
/// If a `Request` object is destroyed without `into_writer` or `respond` being called,
/// an empty response with a 500 status code (internal server error) will automatically be
/// sent back to the client.
/// This means that if your code fails during the handling of a request, this "internal server
/// error" response will automatically be sent during the stack unwinding.
///
/// # Testing
///
/// If you want to build fake requests to test your server, use [`TestRequest`](crate::test::TestRequest).
pub struct Request {
    // where to read the body from
    data_reader: Option<Box<dyn Read + Send + 'static>>,

    // if this writer is empty, then the request has been answered
    response_writer: Option<Box<dyn Write + Send + 'static>>,

    remote_addr: Option<SocketAddr>,

    // true if HTTPS, false if HTTP
    secure: bool,

    method: Method,

    path: String,

    http_version: HTTPVersion,

    headers: Vec<Header>,

    body_length: Option<usize>,

    // true if a `100 Continue` response must be sent when `as_reader()` is called
    must_send_continue: bool,

    // If Some, a message must be sent after responding
    notify_when_responded: Option<Sender<Answered>>,

    /// mailproc patch: a response printed to memory, with the writer it is
    /// for, waiting to be handed to the connection's thread (see
    /// [`Answered`]).
    handed: Option<Handed>,

    /// mailproc patch: marks the connection busy until this request is
    /// answered and dropped (it is then neither idle nor sheddable).
    in_flight: Option<crate::util::InFlight>,

    /// mailproc patch: the connection closes after this request's answer
    /// (see [`last_on_connection`], or a body too large to buffer, which
    /// is read, if at all, by the application): the answer says
    /// `Connection: close` (RFC 9112 §9.6).
    closes: bool,

    /// mailproc patch: tells the connection to read no further request
    /// (see [`Request::close_after`]).
    no_more: Option<std::sync::Arc<std::sync::atomic::AtomicBool>>,
}

/// Whether the client said this is its last request on the connection
/// (mailproc patch): `Connection: close`, an upgrade (no protocol is
/// switched to, but what follows is not meant as HTTP), or HTTP/1.0
/// without keep-alive. The options are the comma-separated tokens of every
/// `Connection` field line together (RFC 9110 §5.3, §7.6.1), compared
/// whole: only the first line was read, and `close` was found inside any
/// option holding it (`x-closed`).
pub(crate) fn last_on_connection(headers: &[Header], version: &HTTPVersion) -> bool {
    let options: Vec<String> = headers
        .iter()
        .filter(|h| h.field.equiv("Connection"))
        .flat_map(|h| h.value.as_str().split(','))
        .map(|o| o.trim().to_ascii_lowercase())
        .collect();
    let has = |o: &str| options.iter().any(|x| x == o);
    if has("close") || has("upgrade") {
        return true;
    }
    *version == HTTPVersion(1, 0) && !has("keep-alive")
}

/// A response printed to memory, the writer it is for, and the request's
/// body reader: dropped only after the response is out, since dropping an
/// unread body shuts the write side (see `BodyGuard`).
type Handed = (
    Box<dyn Write + Send + 'static>,
    Vec<u8>,
    Option<Box<dyn Read + Send + 'static>>,
);

/// What a request tells its connection's thread once it is answered
/// (mailproc patch). The connection reads no further request until then,
/// so at most one request per connection is in the application's hands.
pub(crate) enum Answered {
    /// The response was written (or the request gave up its writer).
    Written,
    /// The response, printed to memory, for the connection's thread to
    /// write: a client that does not read holds its own connection's
    /// thread, never one of the application's. The body reader goes along
    /// and is dropped after the write.
    Write(Handed),
}

/// Responses of a known length up to this size are printed to memory and
/// written by the connection's thread (mailproc patch); longer or streamed
/// ones are written by the responding thread, within the response deadline.
const HAND_OFF_UP_TO: usize = 16 << 20;

struct NotifyOnDrop<R> {
    sender: Sender<Answered>,
    inner: R,
}

impl<R: Read> Read for NotifyOnDrop<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.inner.read(buf)
    }
}
impl<R: Write> Write for NotifyOnDrop<R> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.inner.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
impl<R> Drop for NotifyOnDrop<R> {
    fn drop(&mut self) {
        self.sender.send(Answered::Written).ok();
    }
}

/// Error that can happen when building a `Request` object.
#[derive(Debug)]
pub enum RequestCreationError {
    /// The client sent an `Expect` header that was not recognized by tiny-http.
    ExpectationFailed,

    /// Error while reading data from the socket during the creation of the `Request`.
    CreationIoError(IoError),

    /// A `Content-Length` that is not a number, or several that differ
    /// (mailproc patch: the release took an unparsable one for "no body").
    BadContentLength,

    /// mailproc patch (RFC 9112 §6): `Transfer-Encoding` together with
    /// `Content-Length`, in an HTTP/1.0 request, or without `chunked` as its
    /// final and only chunked coding. The release decoded any value as
    /// chunked and ignored `Content-Length`, so a proxy that framed by it
    /// forwarded a smuggled request. Carries which of these it was, for the
    /// body of the `400`.
    BadFraming(&'static str),

    /// mailproc patch: a transfer coding other than `chunked` before it
    /// (`gzip, chunked`): `501`, nothing else is decoded.
    UnsupportedCoding,

    /// mailproc patch: a chunked body whose encoding is over the buffered
    /// body limit.
    BodyTooLarge,

    /// mailproc patch: a chunked body that is not valid chunked coding.
    BadChunk,
}

impl From<IoError> for RequestCreationError {
    fn from(err: IoError) -> RequestCreationError {
        RequestCreationError::CreationIoError(err)
    }
}

/// Builds a new request.
///
/// After the request line and headers have been read from the socket, a new `Request` object
/// is built.
///
/// You must pass a `Read` that will allow the `Request` object to read from the incoming data.
/// It is the responsibility of the `Request` to read only the data of the request and not further.
///
/// The `Write` object will be used by the `Request` to write the response.
#[allow(clippy::too_many_arguments)]
pub fn new_request<R, W>(
    secure: bool,
    method: Method,
    path: String,
    version: HTTPVersion,
    headers: Vec<Header>,
    remote_addr: Option<SocketAddr>,
    mut source_data: R,
    mut writer: W,
    abandon: Option<Abandon>,
    buffer_body_up_to: usize,
    refuse_larger: bool,
) -> Result<Request, RequestCreationError>
where
    R: Read + Send + 'static,
    W: Write + Send + 'static,
{
    let no_more = abandon.as_ref().map(|a| a.flag.clone());
    // mailproc patch: framing by RFC 9112 §6. Transfer codings are listed
    // across every `Transfer-Encoding` field; only `chunked`, alone, is
    // decoded, and it never stands beside `Content-Length`.
    let codings: Vec<String> = headers
        .iter()
        .filter(|h| h.field.equiv("Transfer-Encoding"))
        .flat_map(|h| h.value.as_str().split(','))
        .map(|c| c.trim().to_ascii_lowercase())
        .collect();
    let has_content_length = headers.iter().any(|h| h.field.equiv("Content-Length"));
    let chunked = if codings.is_empty() {
        false
    } else if has_content_length {
        return Err(RequestCreationError::BadFraming(
            "Transfer-Encoding: not allowed together with Content-Length",
        ));
    } else if version < HTTPVersion(1, 1) {
        return Err(RequestCreationError::BadFraming(
            "Transfer-Encoding: not allowed in HTTP/1.0",
        ));
    } else {
        let (last, before) = codings.split_last().expect("not empty");
        if last != "chunked" || before.iter().any(|c| c.is_empty() || c == "chunked") {
            return Err(RequestCreationError::BadFraming(
                "Transfer-Encoding: the codings must end in one chunked",
            ));
        }
        if !before.is_empty() {
            return Err(RequestCreationError::UnsupportedCoding);
        }
        true
    };

    // finding the content-length header
    let content_length = if chunked {
        None
    } else {
        let mut values = headers
            .iter()
            .filter(|h: &&Header| h.field.equiv("Content-Length"))
            .map(|h| h.value.as_str().trim());
        match values.next() {
            None => None,
            Some(first) => {
                // mailproc patch: a number past usize is still a number,
                // too large for any limit (413), not a malformed one (400).
                let n = (!first.is_empty() && first.bytes().all(|b| b.is_ascii_digit()))
                    .then(|| usize::from_str(first).unwrap_or(usize::MAX))
                    .ok_or(RequestCreationError::BadContentLength)?;
                if values.any(|v| v != first) {
                    return Err(RequestCreationError::BadContentLength);
                }
                Some(n)
            }
        }
    };

    // true if the client sent a `Expect: 100-continue` header
    let expects_continue = {
        match headers
            .iter()
            .find(|h: &&Header| h.field.equiv("Expect"))
            .map(|h| h.value.as_str())
        {
            None => false,
            Some(v) if v.eq_ignore_ascii_case("100-continue") => true,
            _ => return Err(RequestCreationError::ExpectationFailed),
        }
    };

    // we wrap `source_data` around a reading whose nature depends on the transfer-encoding and
    // content-length headers
    // mailproc patch: bodies up to `buffer_body_up_to` bytes are read here,
    // on the connection's own thread, so a slow client never holds a thread
    // of the application's pool; `100 Continue` is sent first when asked for.
    let buffer_limit = buffer_body_up_to.max(1024);
    // mailproc patch: never to an HTTP/1.0 client, which knows no 1xx
    // (RFC 9110 §15.2); it sends its body without waiting.
    let mut must_send_continue = expects_continue && version >= HTTPVersion(1, 1);
    let mut send_continue = |writer: &mut W| -> io::Result<()> {
        if must_send_continue {
            writer.write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
            writer.flush()?;
            must_send_continue = false;
        }
        Ok(())
    };
    // mailproc patch: `Connection: upgrade` no longer hands the raw socket
    // over as the body (a client trickling bytes held a thread for ever);
    // no protocol is switched to and the request is framed as any other.
    let mut closes = last_on_connection(&headers, &version);
    let reader = if let Some(content_length) = content_length {
        // mailproc patch: a body held to less than the usual limit (see
        // `BodyAdmission`) is refused unread, not handed out unbuffered.
        if refuse_larger && content_length > buffer_body_up_to {
            return Err(RequestCreationError::BodyTooLarge);
        }
        if content_length == 0 {
            Box::new(io::empty()) as Box<dyn Read + Send + 'static>
        } else if content_length <= buffer_limit
            && (!expects_continue || buffer_body_up_to > 1024)
        {
            // if the content-length is small enough, we just read everything into a buffer
            send_continue(&mut writer)?;

            // mailproc patch: the buffer grows with what arrives instead of
            // being allocated at the declared size: 256 clients declaring
            // 1 MiB and sending a trickle held 256 MiB.
            let mut buffer = Vec::new();
            while buffer.len() != content_length {
                let start = buffer.len();
                buffer.resize(start + (content_length - start).min(16 << 10), 0);
                let read = match source_data.read(&mut buffer[start..]) {
                    Ok(n) => n,
                    Err(e) if e.kind() == ErrorKind::Interrupted => {
                        buffer.truncate(start);
                        continue;
                    }
                    Err(e) => return Err(RequestCreationError::CreationIoError(e)),
                };
                buffer.truncate(start + read);
                if read == 0 {
                    // the socket returned EOF, but we were before the expected content-length
                    // aborting
                    let info = "Connection has been closed before we received enough data";
                    let err = IoError::new(ErrorKind::ConnectionAborted, info);
                    return Err(RequestCreationError::CreationIoError(err));
                }
            }

            Box::new(Cursor::new(buffer)) as Box<dyn Read + Send + 'static>
        } else {
            closes = true;
            let (data_reader, _) = EqualReader::new(source_data, content_length); // TODO:
            let guarded = BodyGuard::new(data_reader, abandon);
            Box::new(FusedReader::new(guarded)) as Box<dyn Read + Send + 'static>
        }
    } else if chunked {
        // mailproc patch: a bounded decoder; when buffering, every raw byte
        // of the encoding counts against the limit (see `util/chunked.rs`).
        if buffer_body_up_to > 0 {
            send_continue(&mut writer)?;
            let mut decoder = ChunkedReader::new(source_data, buffer_body_up_to);
            let mut buffer = Vec::new();
            decoder
                .read_to_end(&mut buffer)
                .map_err(|e| match ChunkError::of(&e) {
                    Some(ChunkError::TooLarge) => RequestCreationError::BodyTooLarge,
                    Some(ChunkError::Malformed(_)) => RequestCreationError::BadChunk,
                    None => RequestCreationError::CreationIoError(e),
                })?;
            Box::new(Cursor::new(buffer)) as Box<dyn Read + Send + 'static>
        } else {
            closes = true;
            let decoder = ChunkedReader::new(source_data, usize::MAX);
            let guarded = BodyGuard::new(decoder, abandon);
            Box::new(FusedReader::new(guarded)) as Box<dyn Read + Send + 'static>
        }
    } else {
        // if we have neither a Content-Length nor a Transfer-Encoding,
        // assuming that we have no data
        // TODO: could also be multipart/byteranges
        Box::new(io::empty()) as Box<dyn Read + Send + 'static>
    };

    Ok(Request {
        data_reader: Some(reader),
        response_writer: Some(Box::new(writer) as Box<dyn Write + Send + 'static>),
        remote_addr,
        secure,
        method,
        path,
        http_version: version,
        headers,
        body_length: content_length,
        must_send_continue,
        notify_when_responded: None,
        handed: None,
        in_flight: None,
        closes,
        no_more,
    })
}

impl Request {
    /// Returns true if the request was made through HTTPS.
    #[inline]
    pub fn secure(&self) -> bool {
        self.secure
    }

    /// Returns the method requested by the client (eg. `GET`, `POST`, etc.).
    #[inline]
    pub fn method(&self) -> &Method {
        &self.method
    }

    /// Returns the resource requested by the client.
    #[inline]
    pub fn url(&self) -> &str {
        &self.path
    }

    /// Returns a list of all headers sent by the client.
    #[inline]
    pub fn headers(&self) -> &[Header] {
        &self.headers
    }

    /// Returns the HTTP version of the request.
    #[inline]
    pub fn http_version(&self) -> &HTTPVersion {
        &self.http_version
    }

    /// Returns the length of the body in bytes.
    ///
    /// Returns `None` if the length is unknown.
    #[inline]
    pub fn body_length(&self) -> Option<usize> {
        self.body_length
    }

    /// Returns the address of the client that sent this request.
    ///
    /// The address is always `Some` for TCP listeners, but always `None` for UNIX listeners
    /// (as the remote address of a UNIX client is almost always unnamed).
    ///
    /// Note that this is gathered from the socket. If you receive the request from a proxy,
    /// this function will return the address of the proxy and not the address of the actual
    /// user.
    #[inline]
    pub fn remote_addr(&self) -> Option<&SocketAddr> {
        self.remote_addr.as_ref()
    }

    /// Allows to read the body of the request.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # use std::io::Read;
    /// # fn get_content_type(_: &tiny_http::Request) -> &'static str { "" }
    /// # let server = tiny_http::Server::http("0.0.0.0:0").unwrap();
    /// let mut request = server.recv().unwrap();
    ///
    /// if get_content_type(&request) == "text/plain" {
    ///     let mut content = String::new();
    ///     request.as_reader().read_to_string(&mut content).unwrap();
    ///     println!("{content}");
    /// }
    /// ```
    ///
    /// If the client sent a `Expect: 100-continue` header with the request, calling this
    ///  function will send back a `100 Continue` response.
    #[inline]
    pub fn as_reader(&mut self) -> &mut dyn Read {
        if self.must_send_continue {
            let msg = Response::new_empty(StatusCode(100));
            msg.raw_print(
                self.response_writer.as_mut().unwrap().by_ref(),
                self.http_version.clone(),
                &self.headers,
                true,
                None,
                false,
            )
            .ok();
            self.response_writer.as_mut().unwrap().flush().ok();
            self.must_send_continue = false;
        }

        self.data_reader.as_mut().unwrap()
    }

    /// Turns the `Request` into a writer.
    ///
    /// The writer has a raw access to the stream to the user.
    /// This function is useful for things like CGI.
    ///
    /// Note that the destruction of the `Writer` object may trigger
    /// some events. For exemple if a client has sent multiple requests and the requests
    /// have been processed in parallel, the destruction of a writer will trigger
    /// the writing of the next response.
    /// Therefore you should always destroy the `Writer` as soon as possible.
    #[inline]
    pub fn into_writer(mut self) -> Box<dyn Write + Send + 'static> {
        let writer = self.extract_writer_impl();
        if let Some(sender) = self.notify_when_responded.take() {
            let writer = NotifyOnDrop {
                sender,
                inner: writer,
            };
            Box::new(writer) as Box<dyn Write + Send + 'static>
        } else {
            writer
        }
    }

    /// Extract the response `Writer` object from the Request, dropping this `Writer` has the same side effects
    /// as the object returned by `into_writer` above.
    ///
    /// This may only be called once on a single request.
    fn extract_writer_impl(&mut self) -> Box<dyn Write + Send + 'static> {
        use std::mem;

        assert!(self.response_writer.is_some());

        let mut writer = None;
        mem::swap(&mut self.response_writer, &mut writer);
        writer.unwrap()
    }

    /// Extract the body `Reader` object from the Request.
    ///
    /// This may only be called once on a single request.
    fn extract_reader_impl(&mut self) -> Box<dyn Read + Send + 'static> {
        use std::mem;

        assert!(self.data_reader.is_some());

        let mut reader = None;
        mem::swap(&mut self.data_reader, &mut reader);
        reader.unwrap()
    }

    /// Sends a response to this request.
    #[inline]
    pub fn respond<R>(mut self, response: Response<R>) -> Result<(), IoError>
    where
        R: Read,
    {
        let res = self.respond_impl(response);
        self.notify();
        res
    }

    /// Tells the connection's thread the request is answered, handing it
    /// the response to write if one was printed to memory (mailproc patch).
    fn notify(&mut self) {
        if let Some(sender) = self.notify_when_responded.take() {
            let answered = match self.handed.take() {
                Some(handed) => Answered::Write(handed),
                None => Answered::Written,
            };
            // The connection's thread waits for this; if it is gone, the
            // connection is too and there is no one to tell.
            sender.send(answered).ok();
        }
    }

    fn respond_impl<R>(&mut self, response: Response<R>) -> Result<(), IoError>
    where
        R: Read,
    {
        let do_not_send_body = self.method == Method::Head;

        // mailproc patch: when the connection's thread waits for the answer,
        // a response of known length is printed to memory and handed to it
        // (see `Answered`).
        let known = response.data_length().filter(|n| *n <= HAND_OFF_UP_TO);
        if let (Some(n), true) = (known, self.notify_when_responded.is_some()) {
            let mut bytes = Vec::with_capacity(n.saturating_add(512));
            response.raw_print(
                &mut bytes,
                self.http_version.clone(),
                &self.headers,
                do_not_send_body,
                None,
                self.closes,
            )?;
            let writer = self.extract_writer_impl();
            self.handed = Some((writer, bytes, self.data_reader.take()));
            return Ok(());
        }

        let mut writer = self.extract_writer_impl();

        Self::ignore_client_closing_errors(response.raw_print(
            writer.by_ref(),
            self.http_version.clone(),
            &self.headers,
            do_not_send_body,
            None,
            self.closes,
        ))?;

        Self::ignore_client_closing_errors(writer.flush())
    }

    fn ignore_client_closing_errors(result: io::Result<()>) -> io::Result<()> {
        result.or_else(|err| match err.kind() {
            ErrorKind::BrokenPipe => Ok(()),
            ErrorKind::ConnectionAborted => Ok(()),
            ErrorKind::ConnectionRefused => Ok(()),
            ErrorKind::ConnectionReset => Ok(()),
            _ => Err(err),
        })
    }

    /// mailproc patch: the connection closes after this request's answer,
    /// which says `Connection: close` (a method the application does not
    /// know: what else the client sends is not read).
    pub fn close_after(&mut self) {
        self.closes = true;
        if let Some(f) = &self.no_more {
            f.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }

    /// mailproc patch: see the `in_flight` field.
    pub(crate) fn set_in_flight(&mut self, guard: crate::util::InFlight) {
        self.in_flight = Some(guard);
    }

    pub(crate) fn with_notify_sender(mut self, sender: Sender<Answered>) -> Self {
        self.notify_when_responded = Some(sender);
        self
    }
}

impl fmt::Debug for Request {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> Result<(), fmt::Error> {
        write!(
            formatter,
            "Request({} {} from {:?})",
            self.method, self.path, self.remote_addr
        )
    }
}

impl Drop for Request {
    fn drop(&mut self) {
        if self.response_writer.is_some() {
            let response = Response::empty(500);
            let _ = self.respond_impl(response); // ignoring any potential error
            self.notify();
        }
    }
}

/// Dummy trait that regroups the `Read` and `Write` traits.
///
/// Automatically implemented on all types that implement both `Read` and `Write`.
pub trait ReadWrite: Read + Write {}
impl<T> ReadWrite for T where T: Read + Write {}

#[cfg(test)]
mod tests {
    use super::{last_on_connection, Request};
    use crate::common::{HTTPVersion, Header};

    /// mailproc patch: every `Connection` line counts, and an option is
    /// compared whole.
    #[test]
    fn connection_options_are_every_lines_whole_tokens() {
        let h = |lines: &[&str]| -> Vec<Header> {
            lines
                .iter()
                .map(|v| Header::from_bytes(&b"Connection"[..], v.as_bytes()).unwrap())
                .collect()
        };
        let (v10, v11) = (HTTPVersion(1, 0), HTTPVersion(1, 1));
        assert!(last_on_connection(&h(&["keep-alive", "close"]), &v11));
        assert!(last_on_connection(&h(&["keep-alive, Close"]), &v11));
        assert!(!last_on_connection(&h(&["x-closed-header"]), &v11));
        assert!(!last_on_connection(&h(&[]), &v11));
        assert!(last_on_connection(&h(&[]), &v10));
        assert!(!last_on_connection(&h(&["Keep-Alive"]), &v10));
        assert!(last_on_connection(&h(&["keep-alive", "upgrade"]), &v10));
    }

    #[test]
    fn must_be_send() {
        #![allow(dead_code)]
        fn f<T: Send>(_: &T) {}
        fn bar(rq: &Request) {
            f(rq);
        }
    }
}
