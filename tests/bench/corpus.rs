//! The SpamAssassin corpus as backlogs of any size, delivered fast: the
//! messages in path order, again and again, each copy after the first pass
//! with a Message-ID of its own; written once as a maildir and imported
//! into each user by `doveadm import` (as a delivery agent stores mail:
//! indexed, under `new/`).

use crate::common::dovecot::mail::write_maildir;

/// Every message of the corpus, in path order (easy-ham-1 first), without
/// its mbox `From ` line (the one reader, `common::corpus`).
pub fn corpus() -> Vec<Vec<u8>> {
    use crate::common::corpus::{data, files, raw, GROUPS};
    let data = data();
    GROUPS
        .iter()
        .flat_map(|g| files(&data, g))
        .map(|p| raw(&p))
        .collect()
}

/// The first `n` messages of a backlog cycling through `corpus`: the first
/// pass as they are, every later copy with a Message-ID of its own (so
/// each activity row names one message).
pub fn cycled(corpus: &[Vec<u8>], n: usize) -> impl Iterator<Item = Vec<u8>> + '_ {
    (0..n).map(move |i| {
        let raw = &corpus[i % corpus.len()];
        match i / corpus.len() {
            0 => raw.clone(),
            pass => with_message_id(raw, &format!("<p{pass}.{i}@scale.mailproc.test>")),
        }
    })
}

/// `raw` with its (first) Message-ID header, folded lines included,
/// replaced by `id`; one is added on top when it has none.
fn with_message_id(raw: &[u8], id: &str) -> Vec<u8> {
    let line = format!("Message-ID: {id}\n");
    let end = raw
        .windows(2)
        .position(|w| w == b"\n\n")
        .map_or(raw.len(), |p| p + 1);
    let mut at = 0;
    while at < end {
        let next = raw[at..end]
            .iter()
            .position(|&b| b == b'\n')
            .map_or(end, |p| at + p + 1);
        if raw[at..next]
            .get(..11)
            .is_some_and(|h| h.eq_ignore_ascii_case(b"message-id:"))
        {
            // The field goes on while lines start with white space.
            let mut stop = next;
            while stop < end && matches!(raw[stop], b' ' | b'\t') {
                stop = raw[stop..end]
                    .iter()
                    .position(|&b| b == b'\n')
                    .map_or(end, |p| stop + p + 1);
            }
            return [&raw[..at], line.as_bytes(), &raw[stop..]].concat();
        }
        at = next;
    }
    [line.as_bytes(), raw].concat()
}

/// A maildir holding the first `n` messages of the cycled corpus.
pub fn scratch_maildir(corpus: &[Vec<u8>], n: usize) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("mailproc-backlog-")
        .tempdir()
        .unwrap();
    // doveadm (as `dovecot`) must reach it.
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let written = write_maildir(dir.path(), "INBOX", cycled(corpus, n));
    assert_eq!(written, n);
    dir
}
