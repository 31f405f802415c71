//! Just enough of the IMAP response grammar (RFC 3501 §9) to read the
//! NAMESPACE and LIST answers that the `imap` crate leaves raw: atoms,
//! quoted strings with `\` escapes, `{n}` literals, `NIL`, parentheses.
//!
//! Every read is bounded by its input; malformed input is an error naming
//! the byte offset, never a panic.

/// One token of a response line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Token {
    Open,
    Close,
    Nil,
    /// A quoted string or a literal, unescaped (bytes as sent; names are
    /// ASCII in modified UTF-7, or UTF-8 under `UTF8=ACCEPT`).
    Str(String),
    /// Anything else: an atom, a flag (`\Junk`), a number.
    Atom(String),
}

/// Splits `input` (from just after the response's keyword) into tokens.
pub(super) fn tokens(input: &[u8]) -> Result<Vec<Token>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < input.len() {
        match input[i] {
            b' ' | b'\r' | b'\n' | b'\t' => i += 1,
            b'(' => {
                out.push(Token::Open);
                i += 1;
            }
            b')' => {
                out.push(Token::Close);
                i += 1;
            }
            b'"' => {
                let mut s = Vec::new();
                i += 1;
                loop {
                    match input.get(i) {
                        None | Some(b'\r' | b'\n') => {
                            return Err(format!("unterminated quoted string at {i}"))
                        }
                        Some(b'"') => break,
                        Some(b'\\') => {
                            let c = input
                                .get(i + 1)
                                .ok_or_else(|| format!("dangling escape at {i}"))?;
                            s.push(*c);
                            i += 2;
                        }
                        Some(c) => {
                            s.push(*c);
                            i += 1;
                        }
                    }
                }
                i += 1;
                out.push(Token::Str(String::from_utf8_lossy(&s).into_owned()));
            }
            b'{' => {
                let close = input[i..]
                    .iter()
                    .position(|&c| c == b'}')
                    .ok_or_else(|| format!("unterminated literal length at {i}"))?;
                let digits = &input[i + 1..i + close];
                let digits = digits.strip_suffix(b"+").unwrap_or(digits);
                let n: usize = std::str::from_utf8(digits)
                    .ok()
                    .filter(|d| !d.is_empty() && d.len() <= 9)
                    .and_then(|d| d.parse().ok())
                    .ok_or_else(|| format!("bad literal length at {i}"))?;
                let mut start = i + close + 1;
                if input.get(start) == Some(&b'\r') {
                    start += 1;
                }
                if input.get(start) == Some(&b'\n') {
                    start += 1;
                }
                let end = start
                    .checked_add(n)
                    .filter(|&e| e <= input.len())
                    .ok_or_else(|| format!("literal at {i} runs past the end"))?;
                out.push(Token::Str(
                    String::from_utf8_lossy(&input[start..end]).into_owned(),
                ));
                i = end;
            }
            _ => {
                let start = i;
                while i < input.len()
                    && !matches!(input[i], b' ' | b'(' | b')' | b'"' | b'\r' | b'\n' | b'\t')
                {
                    i += 1;
                }
                let atom = String::from_utf8_lossy(&input[start..i]).into_owned();
                out.push(if atom.eq_ignore_ascii_case("NIL") {
                    Token::Nil
                } else {
                    Token::Atom(atom)
                });
            }
        }
    }
    Ok(out)
}

/// The part of `raw` after the untagged response `* KEYWORD ` (case
/// insensitive), up to the end of `raw` (so literals spanning lines stay
/// whole); `None` when no line starts that way.
pub(super) fn after_untagged<'a>(raw: &'a [u8], keyword: &str) -> Option<&'a [u8]> {
    after_any_untagged(raw, &[keyword])
}

/// [`after_untagged`] for whichever of `keywords` comes first: one pass
/// over the lines, so reading every response of an answer in turn is
/// linear in its length (looking for each keyword apart scanned the rest of
/// the answer once per response: 80,000 folders took a minute).
pub(super) fn after_any_untagged<'a>(raw: &'a [u8], keywords: &[&str]) -> Option<&'a [u8]> {
    let wants: Vec<String> = keywords.iter().map(|k| format!("* {k} ")).collect();
    let mut line_start = 0;
    while line_start < raw.len() {
        let rest = &raw[line_start..];
        for want in &wants {
            if rest.len() >= want.len() && rest[..want.len()].eq_ignore_ascii_case(want.as_bytes())
            {
                return Some(&rest[want.len()..]);
            }
        }
        match rest.iter().position(|&c| c == b'\n') {
            Some(nl) => line_start += nl + 1,
            None => break,
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use Token::*;

    fn s(v: &str) -> Token {
        Str(v.into())
    }

    #[test]
    fn quoted_literal_nil_and_atoms() {
        assert_eq!(
            tokens(b"(\\HasNoChildren \\junk) \".\" {10}\r\nINBOX.Spam NIL x").unwrap(),
            vec![
                Open,
                Atom("\\HasNoChildren".into()),
                Atom("\\junk".into()),
                Close,
                s("."),
                s("INBOX.Spam"),
                Nil,
                Atom("x".into())
            ]
        );
        assert_eq!(tokens(br#""a\"b\\""#).unwrap(), vec![s("a\"b\\")]);
    }

    #[test]
    fn malformed_input_is_an_error() {
        for bad in [
            &b"\"abc"[..],
            b"{3}\r\nab",
            b"{x}\r\n",
            b"{}",
            b"\"a\\",
            b"{99999999999}",
        ] {
            assert!(tokens(bad).is_err(), "{:?}", String::from_utf8_lossy(bad));
        }
    }

    #[test]
    fn finds_the_untagged_line() {
        let raw = b"* OK still here\r\n* NAMESPACE ((\"\" \".\")) NIL NIL\r\n";
        assert_eq!(
            after_untagged(raw, "namespace"),
            Some(&b"((\"\" \".\")) NIL NIL\r\n"[..])
        );
        assert_eq!(after_untagged(raw, "LIST"), None);
    }
}
