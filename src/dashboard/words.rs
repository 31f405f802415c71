//! Errors in the operator's words. What an IMAP server, a TLS library or
//! the store says (`No Response: Mailbox doesn't exist: Receipts`) is
//! precise but not meant for a person; the dashboard says what happened
//! and what to do, and keeps the exact text one click away.

use maud::{html, Markup};

/// What went wrong, said plainly; `None` when the raw text is the
/// clearest there is.
pub fn plain(raw: &str) -> Option<String> {
    // Quoted text is a name (a folder's, a rule's), never what happened: a
    // move to "~Timeout-Meldungen" read "did not answer in time" (an audit).
    let l = unquoted(raw).to_ascii_lowercase();
    let has = |s: &str| l.contains(s);
    // Errors reach the dashboard from the mail server, the model provider
    // and webhook targets alike, and the text does not always say which:
    // what only a mail server says is said as the mail server's (a missing
    // folder names a mailbox or folder; a model's "the model `x` does not
    // exist" is not one), the rest as a server's.
    let text: &str = if has("refused to create the folder") {
        "The mail server refused to create this folder (see Details): it may not allow such a \
             name. Rename the folder in the configuration, or create it there under a name it \
             allows."
    } else if has("invalid mailbox name") {
        "The mail server does not allow this folder name: rename it in the configuration."
    } else if (has("doesn't exist")
        || has("does not exist")
        || has("nonexistent")
        || has("no such mailbox"))
        && (has("mailbox") || has("folder"))
    {
        "This folder does not exist on the mail server. Create it there, or remove it from \
             the account's folders."
    } else if has("authenticationfailed") || has("authentication failed") || has("login failed") {
        "The mail server refused the username or password."
    } else if let Some(network) = network(&has) {
        // Which server: a model provider's failure (`llm: io: Connection
        // refused`) read as the mail server's, beside an account shown
        // connected (an audit). The name that leads the text says whose.
        return Some(match leading_name(raw) {
            Some(who) => format!("{who}: {network}"),
            None => network.to_string(),
        });
    } else if has("no longer in") || has("not found in") || has("no message") {
        "The message is no longer where mailproc put it: it was moved or deleted on the server."
    } else if has("already undone") {
        "This was undone already."
    } else if has("the message was not moved") {
        // Undo's own refusal (`store::undo`), not every "Not moved: …" a
        // failed "Move to…" begins with.
        "Only a move can be undone, and this message was not moved."
    } else if has("moved before undo") {
        "This move was recorded before mailproc kept what undo needs."
    } else if has("over quota") || has("overquota") {
        "The mailbox is over its quota on the server."
    } else if has("another program holds the database file") {
        "Another program holds mailproc's database file (a sqlite3 shell, a backup tool): \
             close it, then try again."
    } else if has("database or disk is full") || has("no space left") {
        "The disk that holds mailproc's database is full: make room on it, then try again."
    } else if has("store:") || has("database") {
        "mailproc could not read or write its database (see the log)."
    } else if has("no response") || has("bad response") {
        "The mail server refused the request."
    } else {
        return None;
    };
    Some(text.to_string())
}

/// A network failure, said plainly, whichever server it was.
fn network(has: &dyn Fn(&str) -> bool) -> Option<&'static str> {
    Some(if has("connection refused") {
        "The server refused the connection: check its host and port."
    } else if has("timed out") || has("timeout") || has("deadline") {
        "The server did not answer in time."
    } else if has("certificate") || has("handshake") {
        "The server's TLS certificate was not accepted: check its `ca_file` or the host name."
    } else if has("dns") || has("lookup") || has("resolve") || has("name or service not known") {
        "The server's name could not be found: check the host name."
    } else {
        return None;
    })
}

/// The configured name (a provider's, an account's) that leads an error's
/// text, `name: what happened`; not a word of the error itself (`io`,
/// `store`, an IMAP command).
fn leading_name(raw: &str) -> Option<&str> {
    let (who, _) = raw.split_once(": ")?;
    let generic = [
        "io",
        "store",
        "http",
        "tls",
        "imap",
        "connect",
        "error",
        "llm error",
    ];
    (!who.is_empty()
        && who.len() <= 64
        && !who.contains(char::is_whitespace)
        && !who.contains('"')
        && !generic.iter().any(|g| who.eq_ignore_ascii_case(g))
        && !who.bytes().all(|b| b.is_ascii_uppercase()))
    .then_some(who)
}

/// `raw` without its double-quoted parts (a `\"` inside one is part of it).
fn unquoted(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let (mut inside, mut escaped) = (false, false);
    for c in raw.chars() {
        match (inside, escaped, c) {
            (true, false, '\\') => escaped = true,
            (true, true, _) => escaped = false,
            (_, _, '"') => inside = !inside,
            (false, _, c) => out.push(c),
            _ => {}
        }
    }
    out
}

/// An error as a notice's content: the plain words, and the exact text in
/// a disclosure for whoever needs it, named for a screen reader by what
/// the error is `of` when a page shows several (an account's, a folder's:
/// a list of "Details" told none apart, the accessibility audit).
pub fn error_markup(raw: &str, of: Option<&str>) -> Markup {
    match plain(raw) {
        Some(p) => html! {
            (p) " "
            details.raw { summary { "Details" @if let Some(of) = of { span.sr { " of " (of) } } }
                code { (raw) } }
        },
        None => html! { (raw) },
    }
}

/// A one-line notice text: the plain words, else the raw text.
pub fn said(raw: &str) -> String {
    plain(raw).unwrap_or_else(|| raw.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_text_becomes_plain_words() {
        assert_eq!(
            said("cannot open: No Response: Mailbox doesn't exist: Receipts (0.001 + 0.000 secs)."),
            "This folder does not exist on the mail server. Create it there, or remove it from \
             the account's folders."
        );
        assert!(
            said("acct: login failed: [AUTHENTICATIONFAILED] Authentication failed.")
                .contains("username or password")
        );
        assert_eq!(said("something new"), "something new");
        // Whose server: the name leading the text (an audit read a model
        // provider's refusal as the mail server's).
        assert_eq!(
            said("llm: io: Connection refused (os error 111)"),
            "llm: The server refused the connection: check its host and port."
        );
        assert_eq!(
            said("io: Connection refused"),
            "The server refused the connection: check its host and port."
        );
        // A model provider's words are not said as the mail server's.
        let model = said(
            "llm: HTTP 404: The model `gpt-9` does not exist or you do not have access to it.",
        );
        assert!(
            !model.contains("mail server") && !model.contains("folder"),
            "{model}"
        );
        let refused = said("dead: io: Connection refused");
        assert!(!refused.contains("mail server"), "{refused}");
        assert!(refused.contains("check its host and port"), "{refused}");
        assert!(
            said("folder \"Offers\" does not exist and folders.create is false")
                .contains("This folder does not exist")
        );
        // A name is not what happened (an audit: "did not answer in time"
        // for a folder named `~Timeout-Meldungen`), and the server's own
        // refusal of the name is said as such.
        let named = said(
            "moving to \"~Timeout-Meldungen\": No Response: [CANNOT] Invalid mailbox name: \
             Begins with '~'",
        );
        assert!(named.contains("does not allow this folder name"), "{named}");
        assert!(
            said("moving to \"dns \\\"lookup\\\" database\": something new").starts_with("moving"),
            "quoted words, escaped quotes and all, say nothing"
        );
        let refused = said(
            "moving to \"Say \\\"hi\\\"\": No Response: Mailbox does not exist; the server \
             refused to create the folder: No Response: Invalid mailbox name",
        );
        assert!(
            refused.contains("refused to create this folder"),
            "{refused}"
        );
        // Found by an audit: every failed "Move to…" was explained as a
        // failed undo.
        assert!(said("Not undone: the message was not moved").contains("Only a move can be undone"));
        let moved = said(
            "Not moved: folder: \"Offers\" is not one of the account's folders.allowed \
             (watched folders excepted)",
        );
        assert!(!moved.contains("undone"), "{moved}");
        let m = error_markup("No Response: Mailbox doesn't exist: X", None).into_string();
        assert!(m.contains("<details"), "{m}");
        assert!(m.contains("<summary>Details</summary>"), "{m}");
        let named = error_markup("login failed: x", Some("b's last error")).into_string();
        assert!(
            named
                .contains("<summary>Details<span class=\"sr\"> of b's last error</span></summary>"),
            "{named}"
        );
        assert!(m.contains("Mailbox doesn&#39;t exist") || m.contains("Mailbox doesn't exist"));
    }
}
