//! Messages the tests deliver.

/// A plain-text message `<id@mailproc.test>` from sender@example.org with
/// `extra` header lines (each ending in CRLF) before the MIME headers.
pub fn msg_with(id: &str, subject: &str, extra: &str) -> Vec<u8> {
    format!(
        "From: Sender <sender@example.org>\r\nTo: test@example.test\r\nSubject: {subject}\r\n\
         Message-ID: <{id}@mailproc.test>\r\nDate: Sat, 21 Nov 2026 10:00:00 +0000\r\n{extra}\
         MIME-Version: 1.0\r\nContent-Type: text/plain; charset=utf-8\r\n\r\nBody of {subject}.\r\n"
    )
    .into_bytes()
}

/// [`msg_with`] without extra headers.
pub fn msg(id: &str, subject: &str) -> Vec<u8> {
    msg_with(id, subject, "")
}
