//! A message as the classifier and the learned classifier read it:
//! [`Email`], parsed once from raw RFC 822 bytes (or its headers alone).
//! Hostile or broken input never panics; parsing is best-effort.

use mail_parser::decoders::html::html_to_text;
use mail_parser::MimeHeaders;

/// Longest subject or Message-ID kept of a message, in characters (RFC 5322
/// lines end at 998).
pub const MAX_HEADER_CHARS: usize = 998;

/// Parses only the headers an [`Email`] holds decoded; the rest are kept
/// raw (`headers_raw` reads them from the message by offset). `Received`
/// chains, dates and MIME parameters, which rules never read, were a tenth
/// of a rules backlog's parsing.
static HEADER_PARSER: std::sync::LazyLock<mail_parser::MessageParser> =
    std::sync::LazyLock::new(|| {
        use mail_parser::HeaderName;
        mail_parser::MessageParser::new()
            .header_address(HeaderName::From)
            .header_address(HeaderName::To)
            .header_address(HeaderName::Cc)
            .header_text(HeaderName::Subject)
            .header_id(HeaderName::MessageId)
            .default_header_ignore()
    });

/// What the classifier needs of a message, parsed once.
#[derive(Debug, Clone, Default)]
pub struct Email {
    pub message_id: String,
    pub subject: String,
    pub from: String,
    pub to: Vec<String>,
    /// The first field of each name as `(name, raw value)`, in order, of
    /// at most [`MAX_FIELD_NAMES`] names: what [`Email::header`] reads (the
    /// first field of a name), without a copy of every field (200,000
    /// fields of `X:a`, a megabyte of mail, took 12 MB while the message
    /// waited for the model).
    pub headers: Vec<(String, String)>,
    /// Plain text of the body (HTML converted), as much as the parser gave.
    pub body: String,
    pub attachments: Vec<String>,
    pub size: usize,
    /// The whole subject as rules read it, made at most once a message
    /// (see [`Email::rule_subject`]): each of up to 1,000 subject rules
    /// made its own copy of a 64 KiB field.
    pub(crate) whole_subject: std::sync::OnceLock<Option<String>>,
}

/// The most header names an [`Email`] keeps. Rules decide on the fields
/// they read, fetched by name; what reads a parsed message's header (the
/// model's prompt, the learned classifier) reads a dozen names.
pub const MAX_FIELD_NAMES: usize = 1000;

/// Drops a parsed message without recursing: mail-parser's tree holds a
/// message nested in a message (`message/rfc822`) inside its part, and its
/// drop recursed once per level. 33,000 levels fit in 1 MB of mail and
/// overflowed the account thread's stack, which aborts the whole process,
/// again at each start while the message waited (an audit). Each nested
/// message is taken out of its part and dropped from a list instead.
fn drop_flat(msg: mail_parser::Message<'_>) {
    let mut pending = vec![msg];
    while let Some(mut m) = pending.pop() {
        for part in &mut m.parts {
            if matches!(part.body, mail_parser::PartType::Message(_)) {
                if let mail_parser::PartType::Message(inner) = std::mem::take(&mut part.body) {
                    pending.push(inner);
                }
            }
        }
    }
}

impl Email {
    /// Parses raw RFC 822 bytes. Hostile or broken input never panics;
    /// `None` means there is nothing recognisable as a message at all.
    pub fn parse(raw: &[u8]) -> Option<Email> {
        Email::parse_with(raw, true)
    }

    /// Parses only the header of a message (what `BODY.PEEK[HEADER]`
    /// returns, or a whole message whose body is then ignored): everything
    /// rules read, with no body text, no attachments, and no HTML converted.
    pub fn parse_headers(raw: &[u8]) -> Option<Email> {
        Email::parse_with(raw, false)
    }

    fn parse_with(original: &[u8], body: bool) -> Option<Email> {
        let decoded = header_as_utf8(original);
        let raw = decoded.as_deref().unwrap_or(original);
        let msg = if body {
            mail_parser::MessageParser::default().parse(raw)?
        } else {
            HEADER_PARSER.parse_headers(raw)?
        };
        // A message with no header field at all (a blank line, then a
        // body) is RFC 5322 all the same: its fields are empty, as the
        // header-only parse of the rules' path reads them.
        let addr = |a: Option<&mail_parser::Address<'_>>| -> Vec<String> {
            a.map(|a| {
                a.iter()
                    .filter_map(|x| x.address().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
        };
        // The first field of each name, as `headers` keeps and `header:`
        // rules read (mail-parser's accessors give the last): a message
        // with two Subjects shows one subject to every reader.
        use mail_parser::HeaderName;
        let first = |name: HeaderName<'static>| msg.header_values(name).next();
        let first_text = |name| first(name).and_then(|v| v.as_text());
        let first_addr = |name| first(name).and_then(|v| v.as_address());
        // Recorded, shown and sent in webhooks: a header of any length a
        // stranger writes is cut to what a person would read.
        let email = Email {
            message_id: first_text(HeaderName::MessageId)
                .map(|m| {
                    // Unfolded first: a folded Message-ID's line break is
                    // not part of it (`search_message_id` reads it so).
                    let m: String = m.chars().filter(|c| *c != '\r' && *c != '\n').collect();
                    format!("<{}>", visible(truncate(&m, MAX_HEADER_CHARS), '\u{FFFD}'))
                })
                .unwrap_or_default(),
            subject: visible(
                truncate(
                    first_text(HeaderName::Subject).unwrap_or("").trim(),
                    MAX_HEADER_CHARS,
                ),
                ' ',
            ),
            from: addr(first_addr(HeaderName::From))
                .into_iter()
                .next()
                .map(|a| visible(&a, '\u{FFFD}'))
                .unwrap_or_default(),
            to: addr(first_addr(HeaderName::To))
                .into_iter()
                .chain(addr(first_addr(HeaderName::Cc)))
                .collect(),
            headers: {
                let mut names = std::collections::HashSet::new();
                msg.headers_raw()
                    .filter(|(k, _)| {
                        names.len() < MAX_FIELD_NAMES && names.insert(k.to_ascii_lowercase())
                    })
                    .map(|(k, v)| (k.to_string(), decoded_value(v)))
                    .collect()
            },
            body: if body {
                message_text(&msg)
                    .filter(|b| !b.trim().is_empty())
                    .or_else(|| stray_text(&msg, raw))
                    .map_or_else(
                        || attached_texts(&msg).trim_start().to_string(),
                        |b| b + &attached_texts(&msg),
                    )
            } else {
                String::new()
            },
            attachments: if body {
                // A forwarded message is named by its subject, as a mail
                // client lists it (it read "(unnamed)": the regression
                // audit).
                msg.attachments()
                    .map(|a| match (a.attachment_name(), a.message()) {
                        (Some(name), _) => name.to_string(),
                        (None, Some(m)) => format!(
                            "message: {}",
                            visible(truncate(m.subject().unwrap_or("").trim(), 200), ' ')
                        ),
                        (None, None) => "(unnamed)".to_string(),
                    })
                    .collect()
            } else {
                Vec::new()
            },
            size: original.len(),
            whole_subject: Default::default(),
        };
        drop_flat(msg);
        Some(email)
    }

    /// The subject as rules read it: the record's, unless that was cut
    /// (998 characters), then the whole field read the same way (decoded,
    /// unfolded, characters that hide or turn text made spaces): padding
    /// hid a word past the cut from `subject:` rules (an audit), and the
    /// raw field read otherwise than the record (a regression audit).
    pub fn rule_subject(&self) -> &str {
        let whole = self.whole_subject.get_or_init(|| {
            (self.subject.chars().count() >= MAX_HEADER_CHARS)
                .then(|| self.header("Subject"))
                .flatten()
                .map(|whole| visible(whole.trim(), ' '))
        });
        whole.as_deref().unwrap_or(&self.subject)
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A field's value as rules and the model read it: unfolded (a line
/// break before white space is no part of it: `value: "^alpha beta$"`
/// missed a folded `alpha\r\n beta`, a long List-Id folded before its
/// `<id>` read with the break; an audit), RFC 2047 encoded words decoded
/// (`=?UTF-8?Q?M=C3=BCller?=` reads `Müller`), as the subject is; a value
/// without one is read the same way. A `header:` or `list_id` rule matched
/// the encoded text before (an audit).
fn decoded_value(raw: &str) -> String {
    // Read as the subject is read (mail-parser's unstructured field), so a
    // fold is a space whichever blank follows the line break, and a bare
    // CR inside a line stays no join of two words (a regression audit).
    let line = format!("{raw}\n");
    match mail_parser::parsers::MessageStream::new(line.as_bytes()).parse_unstructured() {
        mail_parser::HeaderValue::Text(text) => text.trim().to_string(),
        _ => raw.trim().to_string(),
    }
}

/// The message with its header's fields in 8-bit text that is not UTF-8
/// (sent with no charset declared, against RFC 2047) decoded by the one
/// charset chardetng guesses from all such lines together, as a browser
/// guesses an undeclared page (`caf\xe9` is Windows-1252's `café`, a
/// Shift_JIS subject Japanese); `None`, and nothing copied, when the
/// header is UTF-8, as nearly all mail is. UTF-8 lines and the body are
/// kept as they are.
fn header_as_utf8(raw: &[u8]) -> Option<Vec<u8>> {
    let lines = || {
        raw.split_inclusive(|b| *b == b'\n')
            .take_while(|l| !matches!(*l, b"\n" | b"\r\n"))
    };
    let head: usize = lines().map(<[u8]>::len).sum();
    if std::str::from_utf8(&raw[..head]).is_ok() {
        return None;
    }
    let not_utf8 = |l: &&[u8]| std::str::from_utf8(l).is_err();
    let mut detector = chardetng::EncodingDetector::new(chardetng::Iso2022JpDetection::Deny);
    for line in lines().filter(not_utf8) {
        detector.feed(line, false);
    }
    detector.feed(&[], true);
    let charset = detector.guess(None, chardetng::Utf8Detection::Deny);
    let mut out = Vec::with_capacity(raw.len() + raw.len() / 4);
    for line in lines() {
        if not_utf8(&line) {
            let (text, _) = charset.decode_without_bom_handling(line);
            out.extend_from_slice(text.as_bytes());
        } else {
            out.extend_from_slice(line);
        }
    }
    out.extend_from_slice(&raw[head..]);
    Some(out)
}

/// The text of a message whose structure the parser could not make a body
/// of: a `multipart` whose closing boundary never comes (as a message cut
/// at the fetch limit reads too) has its parts taken for attachments, and
/// a mail client still shows its text: an audit's spam left out one line
/// and showed the model an empty body. Only that case, and only a part
/// that is prose: unnamed, not marked `attachment`, `text/plain` or
/// `text/html` (converted). A message that closes its multipart keeps the
/// body the parser made, empty or not: a regression audit found a CSV the
/// sender attached, a calendar invitation and a delivery report's headers
/// sent to the model as the body of mail whose text part was empty. Inside
/// a multipart that closes, a prose part left open itself counts too (an
/// inner `text/html` without its closing delimiter became an attachment,
/// and the body came out empty: the next regression audit).
fn stray_text(msg: &mail_parser::Message<'_>, raw: &[u8]) -> Option<String> {
    let ct = msg.content_type()?;
    if !ct.ctype().eq_ignore_ascii_case("multipart") {
        return None;
    }
    let close = format!("--{}--", ct.attribute("boundary")?);
    let closed = raw.windows(close.len()).any(|w| w == close.as_bytes());
    let subtype = |a: &mail_parser::MessagePart<'_>| {
        a.content_type().map_or(Some("plain".to_string()), |t| {
            t.ctype()
                .eq_ignore_ascii_case("text")
                .then(|| t.subtype().unwrap_or("plain").to_ascii_lowercase())
        })
    };
    // Left open: it ran to the end of the message (a part that failed to
    // decode is marked the same, and ends where it should; the second
    // regression audit found one's bad base64 given as the body).
    let left_open = |a: &mail_parser::MessagePart<'_>| {
        a.is_encoding_problem
            && (msg.raw_message.get(a.offset_end as usize..))
                .is_none_or(|rest| rest.iter().all(u8::is_ascii_whitespace))
    };
    let (part, html) = msg.attachments().find_map(|a| {
        let prose = (!closed || left_open(a))
            && a.is_text()
            && a.attachment_name().is_none()
            && !a.content_disposition().is_some_and(|d| d.is_attachment());
        match subtype(a).as_deref() {
            Some("plain") if prose => Some((a, false)),
            Some("html") if prose => Some((a, true)),
            _ => None,
        }
    })?;
    let text = written_text(part, msg)?;
    Some(if html {
        html_to_text(&text)
    } else {
        text.into_owned()
    })
    .filter(|t| !t.trim().is_empty())
}

/// The most messages attached to a message (`message/rfc822`, as a
/// mail client forwards "as attachment") whose text is read after its own.
const ATTACHED_MESSAGES: usize = 3;

/// The messages attached to `msg` (forwarded as attachments), as a mail
/// client shows them below the message's own text: each one's sender,
/// subject and text. A forward's own text is mostly "see below": the
/// model was asked about "FYI" and an attachment named "(unnamed)",
/// never what was forwarded (an audit). Only messages attached to this
/// one, not those attached to them: a nesting 100,000 deep is read as
/// its first level.
fn attached_texts(msg: &mail_parser::Message<'_>) -> String {
    let mut out = String::new();
    let inner = msg.attachments().filter_map(|a| a.message());
    for m in inner.take(ATTACHED_MESSAGES) {
        let text = message_text(m).unwrap_or_default();
        let from = (m.from().and_then(|a| a.first()))
            .and_then(|a| a.address())
            .unwrap_or("");
        let subject = m.subject().unwrap_or("");
        if text.trim().is_empty() && from.is_empty() && subject.is_empty() {
            continue;
        }
        out.push_str(&format!(
            "\n\n---------- Attached message ----------\nFrom: {}\nSubject: {}\n\n{}",
            visible(truncate(from, MAX_HEADER_CHARS), '\u{FFFD}'),
            visible(truncate(subject.trim(), MAX_HEADER_CHARS), ' '),
            text.trim_end()
        ));
    }
    out
}

/// The text of `msg`'s first text part (a message's own, or one attached
/// to it), HTML converted.
fn message_text(msg: &mail_parser::Message<'_>) -> Option<String> {
    let p = msg.text_part(0)?;
    let text = written_text(p, msg)?;
    Some(match p.body {
        mail_parser::PartType::Html(_) => html_to_text(&text),
        _ => text.into_owned(),
    })
}

/// A text part's text, HTML not yet converted. A part the parser found no
/// end for (no delimiter of its own multipart came: left open, or cut at
/// the fetch limit) is given raw, as written, to the end of the message;
/// it ends at the first delimiter line of another of the message's
/// multiparts, as a mail client ends it, and quoted-printable text is
/// decoded here in its charset (it went to the model and the classifier
/// as written: a regression audit).
fn written_text<'m>(
    part: &'m mail_parser::MessagePart<'_>,
    msg: &mail_parser::Message<'_>,
) -> Option<std::borrow::Cow<'m, str>> {
    use std::borrow::Cow;
    let text = part.text_contents()?;
    if !part.is_encoding_problem {
        return Some(Cow::Borrowed(text));
    }
    let text = cut_at_boundaries(text, msg);
    let encoding = part.content_transfer_encoding().unwrap_or("").trim();
    let bytes = if encoding.eq_ignore_ascii_case("quoted-printable") {
        match mail_parser::decoders::quoted_printable::quoted_printable_decode(text.as_bytes()) {
            Some(bytes) => bytes,
            None => return Some(Cow::Borrowed(text)),
        }
    } else if encoding.eq_ignore_ascii_case("base64") {
        // Decoded up to its last whole group, as the parser decodes a
        // single part cut short. Given as written, a newsletter's HTML
        // cut at the fetch limit reached the model and the classifier as
        // base64. A stray byte ends it there, and what came before is
        // kept (one `!` lost the whole text: a regression audit); what
        // decodes to no text (below) gives no body rather than noise.
        let valid = text
            .bytes()
            .position(|b| !(b.is_ascii_alphanumeric() || b"+/=\r\n \t".contains(&b)))
            .unwrap_or(text.len());
        mail_parser::decoders::base64::base64_decode(&text.as_bytes()[..valid])?
    } else {
        return Some(Cow::Borrowed(text));
    };
    let decoder = (part.content_type())
        .and_then(|t| t.attribute("charset"))
        .and_then(|c| mail_parser::decoders::charsets::map::charset_decoder(c.as_bytes()));
    let text = match decoder {
        Some(decode) => decode(&bytes),
        None => String::from_utf8_lossy(&bytes).into_owned(),
    };
    // Judged once read in its charset (UTF-16 has NULs, ISO-2022-JP
    // escapes, as bytes; a regression audit).
    // Control characters are noise; U+FFFD is not (text in a charset
    // mislabelled or unknown reads with some, and is still text).
    let noise = (text.chars())
        .filter(|c| c.is_control() && !matches!(c, '\r' | '\n' | '\t' | '\x0c'))
        .count();
    let base64 = encoding.eq_ignore_ascii_case("base64");
    (!base64 || (!text.contains('\0') && noise * 20 <= text.chars().count()))
        .then_some(Cow::Owned(text))
}

/// `text` up to the first line that is a delimiter of one of the
/// message's multiparts (`--B` or `--B--`). A part that never closes runs
/// on to its parent's next delimiter, and the parser gives it all: an
/// inner `multipart/alternative` left open inside a closed
/// `multipart/mixed` put the attachment after it, headers and content, in
/// the body the model was shown, and left it out of the attachments (a
/// regression audit). A mail client ends the part there too. Only for
/// such a part, whose text is the raw message itself: a delimiter exists
/// in what was written, and a line that reads as one only once decoded
/// (`=2D-B` in quoted-printable, a base64 text) is text. Cutting every
/// part's decoded text hid the rest of a closed message's body from the
/// model and the classifier behind one encoded line (the next audit).
fn cut_at_boundaries<'t>(text: &'t str, msg: &mail_parser::Message<'_>) -> &'t str {
    let delimiters: Vec<String> = (msg.parts.iter())
        .filter_map(|p| p.content_type())
        .filter(|t| t.ctype().eq_ignore_ascii_case("multipart"))
        .filter_map(|t| t.attribute("boundary"))
        .take(64)
        .map(|b| format!("--{b}"))
        .collect();
    if delimiters.is_empty() {
        return text;
    }
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        let bare = line
            .trim_end_matches(['\r', '\n'])
            .trim_end_matches([' ', '\t']);
        let delimiter = (delimiters.iter()).any(|d| {
            bare.strip_prefix(d.as_str())
                .is_some_and(|rest| rest.is_empty() || rest == "--")
        });
        if delimiter {
            return &text[..at];
        }
        at += line.len();
    }
    text
}

/// `s` with every control character (a NUL, a lone CR, an escape that
/// would recolour a terminal, a tab) and every [`unseen`] one replaced by
/// `with`: what is recorded, shown, logged and sent in webhooks is text a
/// person can read, whatever bytes a header's encoded words decoded to.
pub(crate) fn visible(s: &str, with: char) -> String {
    s.chars()
        .map(|c| if c.is_control() || unseen(c) { with } else { c })
        .collect()
}

/// A character that changes how the text around it is shown without being
/// seen itself: bidi embeddings, overrides and isolates (U+202E showed
/// `evil@example.org` turned around in the activity table, an audit), and
/// zero-width spaces and the BOM (a subject of U+200B alone was a link no
/// one could see to click). The joiners (U+200C, U+200D), which scripts
/// and emoji need, and the directional marks of right-to-left text stay.
/// The line and paragraph separators (U+2028, U+2029) split a line for
/// many log viewers (a subject showed as two lines: an audit).
fn unseen(c: char) -> bool {
    matches!(
        c,
        '\u{200B}'
            | '\u{2028}'..='\u{202E}'
            | '\u{2060}'..='\u{2064}'
            | '\u{2066}'..='\u{2069}'
            | '\u{FEFF}'
    )
}

/// The first `max` characters of `s`.
pub fn truncate(s: &str, max: usize) -> &str {
    match s.char_indices().nth(max) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests;
