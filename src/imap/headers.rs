//! The headers rules read: which fields are fetched, and how much of them.
//!
//! A message's header fields come in one FETCH of at most [`HEADER_CAP`]
//! bytes. A message whose fields are longer (a megabyte of `To:`, a
//! thousand `Subject:` lines: broken or hostile) is read again field by
//! field, each field at most [`FIELD_CAP`] bytes, cut at a line's end: so
//! padding in one field can neither hide another field from a rule nor
//! leave the record without its Subject and Message-ID, and no message
//! costs more than a bounded number of bytes. Such a message is marked
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

impl Runner {
    /// The FETCH items of a window's headers: only the fields rules read,
    /// and with the learned classifier the start of the text; the size,
    /// which bounds the groups sent to the model.
    pub(super) fn header_query(&self) -> HeaderQuery {
        let learned = self.w.account.learned.enabled;
        let mut names = self.w.rules.header_fields();
        // The learned classifier reads the first part of the text, which
        // needs the MIME headers to be decoded (and its features read the
        // mailing list).
        if learned {
            for f in [
                "List-Id",
                "Content-Type",
                "Content-Transfer-Encoding",
                "MIME-Version",
            ] {
                if !names.iter().any(|x| x.eq_ignore_ascii_case(f)) {
                    names.push(f.into());
                }
            }
        }
        // A field name no message can have (line breaks, 8-bit) is left
        // out; a FETCH cannot carry it anyway.
        let fields: Vec<String> = names
            .iter()
            .filter_map(|f| {
                let q = quoted(f);
                if q.is_none() {
                    log::warn!(
                        "{}: header {f:?} cannot be fetched by name; left out",
                        self.name()
                    );
                }
                q
            })
            .collect();
        let text = if learned {
            format!(" BODY.PEEK[TEXT]<0.{}>", crate::learn::TEXT_BYTES)
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
                    .extend_from_slice(whole_lines(h, FIELD_CAP));
            }
        }
    }
    for h in long.values_mut() {
        h.extend_from_slice(b"\r\n");
    }
    Ok(Heads { fetched, long })
}

/// `h` without a trailing blank line, and when it filled `cap` (cut
/// short), without the line the cut fell in: whole field lines only.
fn whole_lines(h: &[u8], cap: usize) -> &[u8] {
    let h = if h.len() >= cap {
        match h.iter().rposition(|b| *b == b'\n') {
            Some(i) => &h[..=i],
            None => &[],
        }
    } else {
        h
    };
    let mut end = h.len();
    while end > 0 && matches!(h[end - 1], b'\r' | b'\n') {
        end -= 1;
    }
    if end < h.len() {
        // Keep the one line break that ends the last field.
        let rest = &h[end..];
        let keep = if rest.starts_with(b"\r\n") { 2 } else { 1 };
        &h[..end + keep]
    } else {
        h
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_field_keeps_its_whole_lines_only() {
        assert_eq!(whole_lines(b"Subject: a\r\n\r\n", 100), b"Subject: a\r\n");
        assert_eq!(
            whole_lines(b"To: a@x,\r\n b@x,\r\n c@", 20),
            b"To: a@x,\r\n b@x,\r\n"
        );
        assert_eq!(whole_lines(b"To: aaaaaaaaaa", 10), b"");
        assert_eq!(whole_lines(b"", 10), b"");
        const { assert!(HEADER_CHUNK * HEADER_CAP <= CHUNK_BYTES) };
    }
}
