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

/// [`msg_with`] dated now: servers that take INTERNALDATE from the Date
/// header (Dovecot's `doveadm save`) then file it as mail that just came.
pub fn msg_now(id: &str, subject: &str) -> Vec<u8> {
    let now = time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc2822)
        .unwrap();
    String::from_utf8(msg(id, subject))
        .unwrap()
        .replace("Sat, 21 Nov 2026 10:00:00 +0000", &now)
        .into_bytes()
}

/// [`msg_with`] without extra headers.
pub fn msg(id: &str, subject: &str) -> Vec<u8> {
    msg_with(id, subject, "")
}

/// The first `n` messages of each corpus group, in file order, whose
/// Message-ID (the first header, unfolded) is present and not already
/// taken, with that Message-ID: real mail each of which can be told apart.
pub fn corpus_unique(groups: &[(&str, usize)]) -> Vec<(String, Vec<u8>)> {
    let dir = super::corpus::data();
    let mut seen = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (group, n) in groups {
        let mut taken = 0;
        for p in super::corpus::files(&dir, group) {
            if taken == *n {
                break;
            }
            let raw = crlf(&std::fs::read(&p).unwrap());
            let Some(id) = message_id_of(&raw) else {
                continue;
            };
            if seen.insert(id.clone()) {
                out.push((id, raw));
                taken += 1;
            }
        }
        assert_eq!(
            taken, *n,
            "{dir}/{group}: only {taken} messages with a Message-ID of their own"
        );
    }
    out
}

/// The first Message-ID header of a raw message, unfolded, whitespace
/// collapsed, when it is one `<...>` token.
pub fn message_id_of(raw: &[u8]) -> Option<String> {
    let text = String::from_utf8_lossy(raw);
    let head = text.split("\r\n\r\n").next().unwrap_or("");
    let mut lines = head.lines();
    while let Some(l) = lines.next() {
        if l.get(..11)
            .is_some_and(|h| h.eq_ignore_ascii_case("message-id:"))
        {
            let mut v = l[11..].to_string();
            for more in lines.by_ref() {
                if more.starts_with([' ', '\t']) {
                    v.push(' ');
                    v.push_str(more);
                } else {
                    break;
                }
            }
            let v = v.split_whitespace().collect::<Vec<_>>().join(" ");
            return (v.starts_with('<') && v.ends_with('>') && !v.contains(' ')).then_some(v);
        }
    }
    None
}

/// Line ends as IMAP wants them (CRLF; Cyrus refuses bare newlines), the
/// corpus's leading mbox `From ` line dropped.
pub fn crlf(raw: &[u8]) -> Vec<u8> {
    let raw = super::server::strip_mbox_from(raw);
    let mut out = Vec::with_capacity(raw.len() + raw.len() / 30);
    for (i, &b) in raw.iter().enumerate() {
        if b == b'\n' && (i == 0 || raw[i - 1] != b'\r') {
            out.push(b'\r');
        }
        out.push(b);
    }
    out
}

/// `text` as an RFC 2047 encoded word (UTF-8, base64), as mail clients
/// write non-ASCII subjects.
pub fn encoded_word(text: &str) -> String {
    use base64::Engine as _;
    format!(
        "=?UTF-8?B?{}?=",
        base64::engine::general_purpose::STANDARD.encode(text)
    )
}
