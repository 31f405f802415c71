//! A bounded decoder of chunked request bodies (mailproc patch, replacing
//! `chunked_transfer::Decoder`).
//!
//! The release's decoder buffered a chunk-size line until its end: a line
//! that never ended grew the process until it aborted (1.67 GB in 40 s from
//! one connection). Here every line (a chunk size with its extensions, a
//! trailer field) is at most [`MAX_LINE`] bytes, every raw byte of the
//! encoding (sizes, extensions, data, line ends, trailers) counts against
//! the body limit the decoder is given, and a chunk size is parsed by
//! `httparse::parse_chunk_size` after checking that it is pure hex (`+2`,
//! `-1`, ` 5` and an empty size are refused). Lines end in CRLF only: a bare
//! CR or LF is an error.

use std::fmt;
use std::convert::TryFrom;
use std::io::{self, Read};

/// Longest chunk-size line (size and extensions) or trailer line, CRLF
/// included.
pub(crate) const MAX_LINE: usize = 1024;

/// Why a chunked body was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ChunkError {
    /// The encoded body is larger than the limit: `413`.
    TooLarge,
    /// Not valid chunked coding: `400`.
    Malformed(&'static str),
}

impl fmt::Display for ChunkError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ChunkError::TooLarge => write!(f, "chunked body larger than the limit"),
            ChunkError::Malformed(why) => write!(f, "invalid chunked body: {why}"),
        }
    }
}

impl std::error::Error for ChunkError {}

impl ChunkError {
    /// The [`ChunkError`] inside an I/O error from [`ChunkedReader`], if any.
    pub(crate) fn of(e: &io::Error) -> Option<ChunkError> {
        e.get_ref()
            .and_then(|e| e.downcast_ref::<ChunkError>())
            .copied()
    }
}

fn fail<T>(e: ChunkError) -> io::Result<T> {
    Err(io::Error::new(io::ErrorKind::InvalidData, e))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Expecting a chunk-size line.
    Size,
    /// Inside a chunk's data: this many bytes left.
    Data(u64),
    /// The CRLF after a chunk's data.
    DataEnd,
    /// Trailer fields after the last chunk, up to an empty line.
    Trailers,
    Done,
}

pub(crate) struct ChunkedReader<R: Read> {
    inner: R,
    state: State,
    /// Raw bytes the encoding may still take.
    raw_left: usize,
}

impl<R: Read> ChunkedReader<R> {
    /// Decodes from `inner`; the whole encoding may be at most `limit`
    /// bytes.
    pub(crate) fn new(inner: R, limit: usize) -> ChunkedReader<R> {
        ChunkedReader {
            inner,
            state: State::Size,
            raw_left: limit,
        }
    }

    fn take(&mut self, n: usize) -> io::Result<()> {
        match self.raw_left.checked_sub(n) {
            Some(left) => {
                self.raw_left = left;
                Ok(())
            }
            None => fail(ChunkError::TooLarge),
        }
    }

    fn byte(&mut self) -> io::Result<u8> {
        self.take(1)?;
        let mut b = [0u8; 1];
        loop {
            match self.inner.read(&mut b) {
                Ok(0) => {
                    return Err(io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        "the connection closed inside a chunked body",
                    ))
                }
                Ok(_) => return Ok(b[0]),
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
        }
    }

    /// One line, CRLF included, of at most [`MAX_LINE`] bytes.
    fn line(&mut self) -> io::Result<Vec<u8>> {
        let mut line = Vec::new();
        loop {
            if line.len() == MAX_LINE {
                return fail(ChunkError::Malformed("line longer than 1 KiB"));
            }
            let b = self.byte()?;
            if line.last() == Some(&b'\r') && b != b'\n' {
                return fail(ChunkError::Malformed("bare CR"));
            }
            line.push(b);
            if b == b'\n' {
                if line.len() < 2 || line[line.len() - 2] != b'\r' {
                    return fail(ChunkError::Malformed("bare LF"));
                }
                return Ok(line);
            }
        }
    }

    fn chunk_size(&mut self) -> io::Result<u64> {
        let line = self.line()?;
        if !line[0].is_ascii_hexdigit() {
            return fail(ChunkError::Malformed("chunk size is not hexadecimal"));
        }
        match httparse::parse_chunk_size(&line) {
            Ok(httparse::Status::Complete((_, size))) => Ok(size),
            _ => fail(ChunkError::Malformed("chunk size is not hexadecimal")),
        }
    }
}

impl<R: Read> Read for ChunkedReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            match self.state {
                State::Done => return Ok(0),
                State::Size => {
                    let size = self.chunk_size()?;
                    if size > self.raw_left as u64 {
                        return fail(ChunkError::TooLarge);
                    }
                    self.state = if size == 0 {
                        State::Trailers
                    } else {
                        State::Data(size)
                    };
                }
                State::Data(left) => {
                    let want = buf.len().min(usize::try_from(left).unwrap_or(usize::MAX));
                    self.take(want)?;
                    let n = match self.inner.read(&mut buf[..want]) {
                        Ok(0) => {
                            return Err(io::Error::new(
                                io::ErrorKind::UnexpectedEof,
                                "the connection closed inside a chunk",
                            ))
                        }
                        Ok(n) => n,
                        Err(e) => {
                            self.raw_left += want;
                            return Err(e);
                        }
                    };
                    // Give back what was reserved and not read.
                    self.raw_left += want - n;
                    let left = left - n as u64;
                    self.state = if left == 0 {
                        State::DataEnd
                    } else {
                        State::Data(left)
                    };
                    return Ok(n);
                }
                State::DataEnd => {
                    if self.byte()? != b'\r' || self.byte()? != b'\n' {
                        return fail(ChunkError::Malformed("chunk data not followed by CRLF"));
                    }
                    self.state = State::Size;
                }
                State::Trailers => {
                    if self.line()? == b"\r\n" {
                        self.state = State::Done;
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode(raw: &[u8], limit: usize) -> Result<Vec<u8>, ChunkError> {
        let mut out = Vec::new();
        ChunkedReader::new(raw, limit)
            .read_to_end(&mut out)
            .map(|_| out)
            .map_err(|e| ChunkError::of(&e).unwrap_or(ChunkError::Malformed("io")))
    }

    #[test]
    fn decodes_chunks_extensions_and_trailers() {
        assert_eq!(
            decode(b"4;a=b\r\nRust\r\n3\r\n ok\r\n0\r\nX-T: 1\r\n\r\n", 100).unwrap(),
            b"Rust ok"
        );
        assert_eq!(decode(b"0\r\n\r\n", 100).unwrap(), b"");
    }

    #[test]
    fn refuses_what_is_not_pure_hex_or_ends_lines_badly() {
        for bad in [
            &b"+2\r\nab\r\n0\r\n\r\n"[..],
            b"-1\r\n",
            b" 2\r\nab\r\n0\r\n\r\n",
            b"\r\n",
            b";x\r\n",
            b"2\nab\r\n0\r\n\r\n",
            b"2\r\nabX\r\n0\r\n\r\n",
            b"2\r\nab\r\n0\r\n\r\r\n",
            b"10000000000000000\r\n",
        ] {
            assert!(
                matches!(decode(bad, 1 << 20), Err(ChunkError::Malformed(_))),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn caps_lines_and_counts_raw_bytes() {
        let mut endless = b"1;".to_vec();
        endless.extend(std::iter::repeat(b'a').take(5000));
        assert_eq!(
            decode(&endless, 1 << 20),
            Err(ChunkError::Malformed("line longer than 1 KiB"))
        );
        // 10 data bytes in 1-byte chunks take 60 raw bytes.
        let tiny: Vec<u8> = b"1\r\nx\r\n".repeat(10).into_iter().chain(*b"0\r\n\r\n").collect();
        assert_eq!(decode(&tiny, 65).unwrap(), b"x".repeat(10));
        assert_eq!(decode(&tiny, 40), Err(ChunkError::TooLarge));
        // A declared chunk beyond the limit is refused before it is read.
        assert_eq!(decode(b"ffffff\r\n", 1000), Err(ChunkError::TooLarge));
    }
}
