/*
 * SPDX-FileCopyrightText: 2020 Stalwart Labs LLC <hello@stalw.art>
 *
 * SPDX-License-Identifier: Apache-2.0 OR MIT
 */

use std::borrow::Cow;

use crate::{HeaderValue, parsers::MessageStream};
struct UnstructuredParser<'x> {
    token_start: usize,
    token_end: usize,
    tokens: Vec<Cow<'x, str>>,
    last_is_encoded: bool,
    /// mailproc patch: the charset and bytes of the encoded words read
    /// since the last other token, decoded together (see
    /// `decode_rfc2047_bytes`).
    pending: Option<(&'x [u8], Vec<u8>)>,
}

impl<'x> UnstructuredParser<'x> {
    fn add_token(&mut self, stream: &MessageStream<'x>) {
        if self.token_start > 0 {
            self.flush();
            if !self.tokens.is_empty() {
                self.tokens.push(" ".into());
            }
            self.tokens.push(String::from_utf8_lossy(
                stream.bytes(self.token_start - 1..self.token_end),
            ));

            self.token_start = 0;
            self.last_is_encoded = false;
        }
    }

    fn add_rfc2047(&mut self, token: String) {
        if !self.last_is_encoded {
            self.tokens.push(" ".into());
        }
        self.tokens.push(token.into());
        self.last_is_encoded = true;
    }

    /// An encoded word's bytes: joined to the words before it in the same
    /// charset, decoded once another token (or the end) comes.
    fn add_rfc2047_bytes(&mut self, charset: &'x [u8], bytes: Vec<u8>) {
        match &mut self.pending {
            Some((c, b)) if c.eq_ignore_ascii_case(charset) && stateless(charset) => {
                b.extend_from_slice(&bytes)
            }
            _ => {
                self.flush();
                self.pending = Some((charset, bytes));
            }
        }
    }

    fn flush(&mut self) {
        if let Some((charset, bytes)) = self.pending.take() {
            self.add_rfc2047(crate::decoders::encoded_word::decode_charset(charset, bytes));
        }
    }
}

/// mailproc patch: whether the bytes of two words in `charset` may be
/// joined: not a charset with shifts or a byte-order mark, whose words each
/// stand alone (ISO-2022-JP's escape back to ASCII at the end of one word
/// and out of it at the start of the next read as U+FFFD once joined).
fn stateless(charset: &[u8]) -> bool {
    let c = charset.to_ascii_lowercase();
    !["iso-2022", "utf-7", "utf-16", "utf-32", "hz"]
        .iter()
        .any(|s| c.starts_with(s.as_bytes()))
        && !c.starts_with(b"unicode")
}

impl<'x> MessageStream<'x> {
    pub fn parse_unstructured(&mut self) -> HeaderValue<'x> {
        let mut parser = UnstructuredParser {
            token_start: 0,
            token_end: 0,
            tokens: Vec::new(),
            last_is_encoded: true,
            pending: None,
        };

        while let Some(ch) = self.next() {
            match ch {
                b'\n' => {
                    parser.add_token(self);

                    if !self.try_next_is_space() {
                        parser.flush();
                        return match parser.tokens.len() {
                            1 => HeaderValue::Text(parser.tokens.pop().unwrap()),
                            0 => HeaderValue::Empty,
                            _ => HeaderValue::Text(parser.tokens.concat().into()),
                        };
                    } else {
                        continue;
                    }
                }
                b' ' | b'\t' | b'\r' => {
                    continue;
                }
                b'=' if self.peek_char(b'?') => {
                    self.checkpoint();
                    if let Some((charset, bytes)) = self.decode_rfc2047_bytes() {
                        parser.add_token(self);
                        parser.add_rfc2047_bytes(charset, bytes);
                        continue;
                    }
                    self.restore();
                }
                _ => (),
            }

            if parser.token_start == 0 {
                parser.token_start = self.offset();
            }

            parser.token_end = self.offset();
        }

        HeaderValue::Empty
    }
}

#[cfg(test)]
mod tests {
    use crate::parsers::{MessageStream, fields::load_tests};

    #[test]
    fn parse_unstructured() {
        for test in load_tests::<String>("unstructured.json") {
            assert_eq!(
                MessageStream::new(test.header.as_bytes())
                    .parse_unstructured()
                    .unwrap_text(),
                test.expected,
                "failed for {:?}",
                test.header
            );
        }
    }
}
