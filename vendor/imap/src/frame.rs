//! mailproc patch: the framing of a server's response, read before any
//! parser sees it. A response is its lines and the literals they announce
//! (`{N}` at a line's end); it ends with the first line that announces
//! none. Knowing that, a response is parsed once, when it is whole: the
//! release parsed it again from its start after each line it read, so an
//! answer of many small literals (or a literal of many lines) cost time
//! quadratic in its length. And the parentheses of a response are counted
//! on the way: imap-proto's parsers recurse once for each level, so a
//! response nested a few hundred levels deep (a `BODYSTRUCTURE` of 500
//! `(`, sent unasked) overflowed the stack of the thread that read it,
//! and took the whole process down with it.

/// The deepest nesting of parentheses a response may have. A
/// `BODYSTRUCTURE` takes about two levels per level of MIME nesting; the
/// answers mailproc asks for, two or three.
pub(crate) const MAX_DEPTH: usize = 64;

/// The most items a parenthesised list may hold. Each item becomes a
/// value of its own once parsed, several times the bytes it took on the
/// wire: one `FLAGS` list of 30 million `\a` (90 MB, under the response
/// cap) took 2.4 GB. No list mailproc reads holds more than a few dozen.
pub(crate) const MAX_LIST_ITEMS: usize = 10_000;

/// Where a response stands, line after line: how deep it is nested, and
/// how many items each open list holds so far.
#[derive(Debug, Default)]
pub(crate) struct Frame {
    items: Vec<usize>,
    /// Whether the last byte seen outside a quote could end an item.
    in_item: bool,
    /// A list of a `cut` response passed [`MAX_LIST_ITEMS`].
    overflow: bool,
    /// What stands in for the response once it is read, when it is a
    /// mailbox's list of flags (`* FLAGS`, `* OK [PERMANENTFLAGS`) longer
    /// than [`MAX_LIST_ITEMS`]: the keywords every client ever set in the
    /// folder, which a server keeps after they are gone from every
    /// message. Refused, such a list stopped the account for good (an
    /// audit set 10,001 keywords and removed them again). mailproc reads
    /// only whether `PERMANENTFLAGS` lets it keep a flag, so the list is
    /// read past instead of parsed: `FLAGS` stands in empty, and
    /// `PERMANENTFLAGS` as `(\*)`, every flag kept (a server listing
    /// 10,001 keywords keeps them).
    cut: Option<&'static [u8]>,
    /// The first line has been seen.
    started: bool,
}

/// What follows a line of a response.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// The response is whole.
    Done,
    /// A literal of this many bytes, then another line.
    Literal(usize),
}

impl Frame {
    /// Reads one line of the response (ending with its LF; never a
    /// literal's bytes). An error when its nesting passes [`MAX_DEPTH`].
    pub(crate) fn line(&mut self, line: &[u8]) -> Result<Next, String> {
        let body = line.strip_suffix(b"\n").unwrap_or(line);
        let body = body.strip_suffix(b"\r").unwrap_or(body);
        if !std::mem::replace(&mut self.started, true) {
            self.cut = mailbox_flags(body);
        }
        let (mut quoted, mut escaped) = (false, false);
        for &b in body {
            if quoted {
                match b {
                    _ if escaped => escaped = false,
                    b'\\' => escaped = true,
                    b'"' => quoted = false,
                    _ => {}
                }
                continue;
            }
            match b {
                b'(' => {
                    self.item()?;
                    if self.items.len() == MAX_DEPTH {
                        return Err(format!(
                            "the server's response is nested deeper than {MAX_DEPTH} levels"
                        ));
                    }
                    self.items.push(0);
                    self.in_item = false;
                }
                b')' => {
                    self.items.pop();
                    self.in_item = true;
                }
                b' ' => self.in_item = false,
                b'"' => {
                    self.item()?;
                    quoted = true;
                }
                _ => self.item()?,
            }
        }
        // A literal ends the line and is an item; the line after it goes on.
        self.in_item = true;
        // A quoted string cannot span lines: left open, the line is
        // malformed and its parser says so.
        if quoted {
            return Ok(Next::Done);
        }
        Ok(literal(body).map_or(Next::Done, Next::Literal))
    }
}

impl Frame {
    /// A byte that may begin an item of the innermost open list.
    fn item(&mut self) -> Result<(), String> {
        if std::mem::replace(&mut self.in_item, true) {
            return Ok(());
        }
        let Some(n) = self.items.last_mut() else {
            return Ok(());
        };
        *n += 1;
        if *n > MAX_LIST_ITEMS {
            if self.cut.is_some() {
                // Counted no further; replaced whole once read.
                *n = MAX_LIST_ITEMS;
                self.overflow = true;
                return Ok(());
            }
            return Err(format!(
                "the server's response has a list of more than {MAX_LIST_ITEMS} items"
            ));
        }
        Ok(())
    }

    /// What the response read should be taken as instead: set when it is
    /// a mailbox's list of flags past [`MAX_LIST_ITEMS`] items.
    pub(crate) fn replacement(&self) -> Option<&'static [u8]> {
        self.cut.filter(|_| self.overflow)
    }
}

/// The stand-in for a response that lists a mailbox's flags, by its
/// first line (see [`Frame::cut`]); `None` for any other response.
fn mailbox_flags(first: &[u8]) -> Option<&'static [u8]> {
    let starts = |p: &[u8]| first.len() >= p.len() && first[..p.len()].eq_ignore_ascii_case(p);
    if starts(b"* FLAGS ") {
        Some(b"* FLAGS ()\r\n")
    } else if starts(b"* OK [PERMANENTFLAGS ") {
        Some(b"* OK [PERMANENTFLAGS (\\*)] flags not listed: too many\r\n")
    } else {
        None
    }
}

/// The size of the literal a line announces at its end (`{N}`, or `{N+}`
/// or `~{N}`), as many bytes as the digits say (saturating).
fn literal(body: &[u8]) -> Option<usize> {
    let inner = body.strip_suffix(b"}")?;
    let inner = inner.strip_suffix(b"+").unwrap_or(inner);
    let open = inner.iter().rposition(|&b| b == b'{')?;
    let digits = &inner[open + 1..];
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    Some(digits.iter().fold(0usize, |n, d| {
        n.saturating_mul(10).saturating_add(usize::from(d - b'0'))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_are_announced_at_a_lines_end_only() {
        let mut f = Frame::default();
        assert_eq!(f.line(b"* 1 FETCH (UID 1 BODY[] {12}\r\n"), Ok(Next::Literal(12)));
        assert_eq!(f.line(b")\r\n"), Ok(Next::Done));
        assert_eq!(f.line(b"* OK {3} is text\r\n"), Ok(Next::Done));
        assert_eq!(f.line(b"* OK \"quoted {3}\"\r\n"), Ok(Next::Done));
        assert_eq!(f.line(b"A1 APPEND x {3+}\r\n"), Ok(Next::Literal(3)));
        assert_eq!(f.line(b"* 1 FETCH (BINARY[] ~{7}\r\n"), Ok(Next::Literal(7)));
        assert_eq!(
            f.line(b"* 1 FETCH (BODY[] {99999999999999999999999}\r\n"),
            Ok(Next::Literal(usize::MAX))
        );
        assert_eq!(f.line(b"* OK {}\r\n"), Ok(Next::Done));
        assert_eq!(f.line(b"* OK {1a}\r\n"), Ok(Next::Done));
    }

    #[test]
    fn nesting_is_counted_across_lines_outside_quotes() {
        let mut f = Frame::default();
        let deep = [b"(".repeat(MAX_DEPTH), b"\r\n".to_vec()].concat();
        assert_eq!(f.line(&deep), Ok(Next::Done));
        assert!(f.line(b"(\r\n").is_err());
        let mut f = Frame::default();
        let quoted = [b"* 1 FETCH (X \"".to_vec(), b"(".repeat(500), b"\\\"\")\r\n".to_vec()].concat();
        assert_eq!(f.line(&quoted), Ok(Next::Done));
        let mut f = Frame::default();
        let balanced = b"(()()(()))".repeat(100);
        assert_eq!(f.line(&balanced), Ok(Next::Done));
        // Items of one list, however they are written.
        let mut f = Frame::default();
        let flags = [b"* 1 FETCH (FLAGS (".to_vec(), b"\\a ".repeat(MAX_LIST_ITEMS), b"))\r\n".to_vec()].concat();
        assert_eq!(f.line(&flags), Ok(Next::Done));
        let mut f = Frame::default();
        let flags = [b"* 1 FETCH (FLAGS (".to_vec(), b"\\a ".repeat(MAX_LIST_ITEMS + 1), b"))\r\n".to_vec()].concat();
        assert!(f.line(&flags).is_err());
        // Literals are items too: a FETCH of many small literals.
        let mut f = Frame::default();
        assert_eq!(f.line(b"* 1 FETCH (UID 1 BODY[0] {1}\r\n"), Ok(Next::Literal(1)));
        let mut refused = None;
        for i in 1..=MAX_LIST_ITEMS {
            match f.line(format!(" BODY[{i}] {{1}}\r\n").as_bytes()) {
                Ok(next) => assert_eq!(next, Next::Literal(1)),
                Err(_) => {
                    refused = Some(i);
                    break;
                }
            }
        }
        // `UID 1 BODY[0] {1}`, then two items a line: past the cap there.
        assert_eq!(refused, Some((MAX_LIST_ITEMS - 4) / 2 + 1));
        // Counted across a literal's lines.
        let mut f = Frame::default();
        let half = [b"(".repeat(40), b" {1}\r\n".to_vec()].concat();
        assert_eq!(f.line(&half), Ok(Next::Literal(1)));
        assert!(f.line(&[b"(".repeat(30), b"\r\n".to_vec()].concat()).is_err());
    }

    #[test]
    fn a_mailboxs_long_list_of_flags_is_cut_not_refused() {
        let many = b"k ".repeat(MAX_LIST_ITEMS + 1);
        for (first, stand_in) in [
            (b"* FLAGS (".as_slice(), b"* FLAGS ()\r\n".as_slice()),
            (b"* ok [PERMANENTFLAGS (", b"* OK [PERMANENTFLAGS (\\*)] flags not listed: too many\r\n"),
        ] {
            let mut f = Frame::default();
            let line = [first, &many, b")]\r\n"].concat();
            assert_eq!(f.line(&line), Ok(Next::Done));
            assert_eq!(f.replacement(), Some(stand_in));
        }
        // Within the cap it is parsed as sent.
        let mut f = Frame::default();
        assert_eq!(f.line(b"* FLAGS (\\Seen k1)\r\n"), Ok(Next::Done));
        assert_eq!(f.replacement(), None);
        // A message's own flags stay refused: nothing reads past them.
        let mut f = Frame::default();
        let line = [b"* 1 FETCH (FLAGS (".as_slice(), &many, b"))\r\n"].concat();
        assert!(f.line(&line).is_err());
    }
}
