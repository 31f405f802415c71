//! The headers rules read: which fields are fetched, and how much of them.
//!
//! A message's header fields come in one FETCH of at most [`HEADER_CAP`]
//! bytes. A message whose fields are longer (a megabyte of `To:`, a
//! thousand `Subject:` lines: broken or hostile) is read again field by
//! field, each field at most [`FIELD_CAP`] bytes, cut at a line's end (a
//! first line longer than that keeps its start): so padding in one field
//! can neither hide another field from a rule nor leave the record without
//! its Subject and Message-ID, and no message costs more than a bounded
//! number of bytes. Such a message is marked
//! (`header_truncated`) and its record says so.

use std::collections::HashMap;

use super::commands::{quoted, uid_set};
use super::session::Session;
use super::Runner;

/// The most of a message's header fields fetched at once.
pub(super) const HEADER_CAP: usize = 64 * 1024;
/// The most of one field (all its occurrences) read for a message whose
/// fields pass [`HEADER_CAP`].
const FIELD_CAP: usize = 8 * 1024;
/// The most header bytes one FETCH may bring.
const CHUNK_BYTES: usize = 32 << 20;
/// UIDs whose headers come in one FETCH: 1,000 (a few MB of ordinary
/// mail), fewer when [`HEADER_CAP`] each would pass [`CHUNK_BYTES`].
pub(super) const HEADER_CHUNK: usize = if CHUNK_BYTES / HEADER_CAP < 1000 {
    CHUNK_BYTES / HEADER_CAP
} else {
    1000
};

/// The FETCH items of a window's headers, and the fields asked for (as
/// sent), for reading a long header field by field.
#[derive(Clone)]
pub(super) struct HeaderQuery {
    pub(super) items: String,
    fields: Vec<String>,
}

/// One FETCH of a chunk's headers, and the headers of the long ones read
/// field by field (UID → header).
pub(super) struct Heads {
    pub(super) fetched: imap::types::Fetches,
    pub(super) long: HashMap<u32, Vec<u8>>,
}

/// The header fields a window fetches: those rules read, and with the
/// learned classifier every field its features read
/// ([`crate::learn::HEADER_FIELDS`]: the sender's display name, the
/// recipients' count, Return-Path, Reply-To, the mailer, the MIME fields
/// that decode the text), so it decides on the features it was trained on.
pub(super) fn fields_for(rules: &crate::classify::Rules, learned: bool) -> Vec<String> {
    let mut names = rules.header_fields();
    if learned {
        for f in crate::learn::HEADER_FIELDS {
            if !names.iter().any(|x| x.eq_ignore_ascii_case(f)) {
                names.push(f.into());
            }
        }
    }
    names
}

impl Runner {
    /// The FETCH items of a window's headers: only the fields rules read,
    /// and with the learned classifier the start of the text; the size,
    /// which bounds the groups sent to the model.
    pub(super) fn header_query(&self) -> HeaderQuery {
        let learned = self.w.account.learned.enabled;
        let names = fields_for(&self.w.rules, learned);
        // A field name no message can have (line breaks, 8-bit) is left
        // out; a FETCH cannot carry it anyway.
        let fields: Vec<String> = names
            .iter()
            .filter_map(|f| {
                let q = quoted(f);
                if q.is_none() {
                    log::warn!(
                        "{}: header {f:?} cannot be fetched by name; left out",
                        self.name(),
                        f = crate::shown::quoted(f)
                    );
                }
                q
            })
            .collect();
        let text = if learned {
            format!(" BODY.PEEK[TEXT]<0.{}>", crate::learn::FETCH_TEXT_BYTES)
        } else {
            String::new()
        };
        HeaderQuery {
            items: format!(
                "(UID FLAGS RFC822.SIZE BODY.PEEK[HEADER.FIELDS ({})]<0.{HEADER_CAP}>{text})",
                fields.join(" ")
            ),
            fields,
        }
    }
}

/// Sends the FETCH of the headers of `uids` (non-empty) without
/// waiting for its answer: the server prepares it while the caller
/// decides the chunk before. [`read_heads`] reads it; no other
/// command may go out in between.
pub(super) fn send_heads(s: &mut Session, q: &HeaderQuery, uids: &[u32]) -> imap::Result<()> {
    s.run_command(format!("UID FETCH {} {}", uid_set(uids), q.items))
}

/// Reads the answer to [`send_heads`], and reads the headers
/// that fill [`HEADER_CAP`] again field by field.
pub(super) fn read_heads(s: &mut Session, q: &HeaderQuery, account: &str) -> imap::Result<Heads> {
    let fetched = s.read_fetches()?;
    let long_uids: Vec<u32> = fetched
        .iter()
        .filter(|f| f.header().is_some_and(|h| h.len() >= HEADER_CAP))
        .filter_map(|f| f.uid)
        .collect();
    let mut long: HashMap<u32, Vec<u8>> = HashMap::new();
    if long_uids.is_empty() {
        return Ok(Heads { fetched, long });
    }
    log::warn!(
        "{}: {} message(s) with header fields over {} KiB (UIDs {}): read field by field, \
         {} KiB of each",
        account,
        long_uids.len(),
        HEADER_CAP / 1024,
        uid_set(&long_uids),
        FIELD_CAP / 1024
    );
    for field in &q.fields {
        let one = s.uid_fetch(
            uid_set(&long_uids),
            format!("(UID BODY.PEEK[HEADER.FIELDS ({field})]<0.{FIELD_CAP}>)"),
        )?;
        for f in one.iter() {
            if let (Some(uid), Some(h)) = (f.uid, f.header()) {
                long.entry(uid)
                    .or_default()
                    .extend_from_slice(&whole_lines(h, FIELD_CAP));
            }
        }
    }
    for h in long.values_mut() {
        h.extend_from_slice(b"\r\n");
    }
    Ok(Heads { fetched, long })
}

/// `h` without a trailing blank line, and when it filled `cap` (cut
/// short), without the line the cut fell in: whole field lines only. A
/// field whose first line alone fills `cap` keeps that line as far as it
/// came (ended with a line break): a one-line Subject of 70 KB still starts
/// as it did, for rules and for the record.
fn whole_lines(h: &[u8], cap: usize) -> std::borrow::Cow<'_, [u8]> {
    let h = if h.len() >= cap {
        match h.iter().rposition(|b| *b == b'\n') {
            Some(i) => &h[..=i],
            None => {
                let mut line = h.to_vec();
                while line.last() == Some(&b'\r') {
                    line.pop();
                }
                without_a_cut_char(&mut line);
                line.extend_from_slice(b"\r\n");
                return line.into();
            }
        }
    } else {
        h
    };
    let mut end = h.len();
    while end > 0 && matches!(h[end - 1], b'\r' | b'\n') {
        end -= 1;
    }
    if end == 0 {
        // A field the message lacks comes back as a bare line break: kept,
        // it would be the blank line that ends the joined header, and every
        // field read after it would be lost.
        return Vec::new().into();
    }
    if end < h.len() {
        // Keep the one line break that ends the last field.
        let rest = &h[end..];
        let keep = if rest.starts_with(b"\r\n") { 2 } else { 1 };
        h[..end + keep].into()
    } else {
        h.into()
    }
}

/// `line` without a UTF-8 character the byte cut split at its end: left,
/// the line was no longer UTF-8 and was read as 8-bit text in a guessed
/// charset, the whole Subject turned to mojibake and rules matched or not
/// by where the cut fell (found by an audit).
fn without_a_cut_char(line: &mut Vec<u8>) {
    let n = line.len();
    for back in 1..=n.min(4) {
        let b = line[n - back];
        if b & 0xc0 == 0x80 {
            continue;
        }
        let needs = match b {
            0xc0..=0xdf => 2,
            0xe0..=0xef => 3,
            0xf0..=0xf7 => 4,
            _ => 1,
        };
        // Only a line that is UTF-8 up to there: 8-bit text in another
        // charset is read as a whole, as it came.
        if needs > back && std::str::from_utf8(&line[..n - back]).is_ok() {
            line.truncate(n - back);
        }
        return;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_field_cut_inside_a_character_loses_that_character_only() {
        for pad in 0..4 {
            let mut h = b"Subject: ".to_vec();
            h.extend(std::iter::repeat_n(b'x', pad));
            h.extend("é€😀".repeat(5000).as_bytes());
            let cut = &h[..8192];
            let line = whole_lines(cut, 8192).into_owned();
            let text = std::str::from_utf8(&line).expect("still UTF-8");
            assert!(text.ends_with("\r\n") && text.len() > 8180, "{pad}");
        }
        // 8-bit text that is not UTF-8 is left as it came.
        let mut latin = b"Subject: caf".to_vec();
        latin.extend(std::iter::repeat_n(0xe9u8, 9000));
        let line = whole_lines(&latin[..8192], 8192).into_owned();
        assert_eq!(line.len(), 8194);
    }

    #[test]
    fn a_cut_field_keeps_its_whole_lines_only() {
        let lines = |h: &[u8], cap| whole_lines(h, cap).into_owned();
        assert_eq!(lines(b"Subject: a\r\n\r\n", 100), b"Subject: a\r\n");
        assert_eq!(
            lines(b"To: a@x,\r\n b@x,\r\n c@", 20),
            b"To: a@x,\r\n b@x,\r\n"
        );
        // One line past the cap: its start, as a whole line.
        assert_eq!(lines(b"To: aaaaaaaaaa", 10), b"To: aaaaaaaaaa\r\n");
        assert_eq!(lines(b"Subject: aaaa\r", 10), b"Subject: aaaa\r\n");
        assert_eq!(lines(b"", 10), b"");
        // A field the message lacks: nothing, not a blank line (found by an
        // audit: it ended the joined header, hiding List-Id from a rule).
        assert_eq!(lines(b"\r\n", 10), b"");
        assert_eq!(lines(b"\n", 10), b"");
        const { assert!(HEADER_CHUNK * HEADER_CAP <= CHUNK_BYTES) };
    }

    /// The header lines of `raw` whose field is one of `names`, with
    /// their folded lines, and the blank line: what a server answers to
    /// `BODY.PEEK[HEADER.FIELDS (...)]`.
    fn only_fields(raw: &str, names: &[String]) -> String {
        let mut out = String::new();
        let mut keep = false;
        for line in raw.split("\r\n") {
            if line.is_empty() {
                break;
            }
            if !line.starts_with([' ', '\t']) {
                let name = line.split(':').next().unwrap_or("");
                keep = names.iter().any(|n| n.eq_ignore_ascii_case(name));
            }
            if keep {
                out.push_str(line);
                out.push_str("\r\n");
            }
        }
        out.push_str("\r\n");
        out
    }

    #[test]
    fn the_classifier_decides_on_the_fields_it_learned_from() {
        let header = "Return-Path: <bounce-42@mailer.shop.example>\r\n\
            Received: from mx.shop.example (mx.shop.example [192.0.2.1])\r\n\
            \tby mail.example.org with ESMTP id 1234\r\n\
            From: \"Shop News\" <news@shop.example>\r\n\
            To: alice@example.org,\r\n bob@example.org\r\n\
            Cc: carol@example.org\r\n\
            Reply-To: offers@shop-replies.example\r\n\
            Subject: This week's deals\r\n\
            Message-ID: <abc.123@mta.shop.example>\r\n\
            Date: Mon, 2 Sep 2002 10:00:00 +0100\r\n\
            X-Mailer: Bulk Sender 3.1\r\n\
            List-Id: Shop deals <deals.shop.example>\r\n\
            MIME-Version: 1.0\r\n\
            Content-Type: text/plain; charset=utf-8\r\n\
            Content-Transfer-Encoding: quoted-printable\r\n\
            X-Spam-Level: ***\r\n\
            \r\n";
        let text = b"Caf=C3=A9 deals this week: save on everything=21\r\n";
        let whole =
            crate::learn::features(&super::super::learn_email(header.as_bytes(), Some(text)));
        let rules = crate::classify::Rules::new(&[]).unwrap();
        let fetched = only_fields(header, &fields_for(&rules, true));
        let from_fields =
            crate::learn::features(&super::super::learn_email(fetched.as_bytes(), Some(text)));
        assert_eq!(from_fields, whole, "fetched: {fetched}");
        for f in [
            "to:3",
            "rp:shop.example",
            "rt:shop-replies.example",
            "xm:bulk",
            "b:café",
        ] {
            assert!(whole.iter().any(|x| x == f), "{f} missing from {whole:?}");
        }
        // Without the classifier only what rules read is fetched.
        assert_eq!(fields_for(&rules, false), ["From", "Subject", "Message-ID"]);
    }
}
