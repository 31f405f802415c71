//! Where the user's folders live on a server (RFC 2342 NAMESPACE), and the
//! mapping between the names of the configuration and the server's.
//!
//! The configuration names folders as the user sees them, levels separated
//! by `/` whatever the server uses: `Lists`, `Archive/2024`. The server
//! may keep personal folders under a prefix with its own separator: Cyrus
//! (Debian's defaults) and Courier answer `(("INBOX." "."))`, so `Lists` is
//! `INBOX.Lists` there; Dovecot answers `(("" "."))`, so it stays `Lists`
//! (and `Archive/2024` is `Archive.2024`).
//!
//! [`FolderNames`] does that mapping both ways, as a pure function of the
//! server's answer: `INBOX` stays `INBOX` (any case), a name that already
//! carries the personal prefix or lies in another namespace (`#shared.x`,
//! `user.bob`) is left alone. Names here are UTF-8; modified UTF-7 is the
//! wire's business ([`super::mutf7`]).

use super::wire::{after_untagged, tokens, Token};

/// One namespace of a NAMESPACE answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Namespace {
    /// Prefix as the server sends it, decoded from modified UTF-7 when it
    /// is valid (`INBOX.`, `""`, `#shared.`).
    pub prefix: String,
    /// Hierarchy separator; `None` for a flat namespace (NIL).
    pub delimiter: Option<char>,
}

/// The three lists of a NAMESPACE answer (RFC 2342 §5); each may be empty
/// (NIL). The first personal namespace is the one the user's folders use.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Namespaces {
    pub personal: Vec<Namespace>,
    pub other_users: Vec<Namespace>,
    pub shared: Vec<Namespace>,
}

impl Namespaces {
    /// Whether the server folder `name` is one of the user's own: INBOX,
    /// or under a personal prefix and under no other user's or shared
    /// prefix (a personal prefix `""` names everything). A junk folder
    /// looked for by its usual name was taken from the public namespace
    /// (`Public/Spam`: the user's mail moved where others read it; an
    /// audit).
    pub fn is_personal(&self, name: &str) -> bool {
        if name.eq_ignore_ascii_case("INBOX") {
            return true;
        }
        let under = |ns: &Namespace| {
            let p = ns.prefix.as_str();
            !p.is_empty()
                && (name.starts_with(p)
                    || Some(name) == p.strip_suffix(ns.delimiter.unwrap_or('\0')))
        };
        if self.other_users.iter().chain(&self.shared).any(under) {
            return false;
        }
        self.personal.is_empty()
            || self.personal.iter().any(|ns| {
                ns.prefix.is_empty()
                    || name.starts_with(&ns.prefix)
                    || Some(name) == ns.prefix.strip_suffix(ns.delimiter.unwrap_or('\0'))
            })
    }

    /// Reads the untagged `* NAMESPACE` response in `raw` (what the server
    /// sent for the NAMESPACE command, other untagged lines allowed).
    pub fn parse(raw: &[u8]) -> Result<Namespaces, String> {
        let rest = after_untagged(raw, "NAMESPACE")
            .ok_or_else(|| "no NAMESPACE response in the answer".to_string())?;
        let toks = tokens(rest).map_err(|e| format!("NAMESPACE: {e}"))?;
        let mut pos = 0;
        let personal = namespace_list(&toks, &mut pos)?;
        let other_users = namespace_list(&toks, &mut pos)?;
        let shared = namespace_list(&toks, &mut pos)?;
        Ok(Namespaces {
            personal,
            other_users,
            shared,
        })
    }
}

/// `NIL` or `( 1*( "(" prefix SP delimiter *extension ")" ) )`.
fn namespace_list(t: &[Token], pos: &mut usize) -> Result<Vec<Namespace>, String> {
    let bad = |what: &str, at: usize| format!("NAMESPACE: expected {what} at token {at}");
    match t.get(*pos) {
        Some(Token::Nil) => {
            *pos += 1;
            return Ok(Vec::new());
        }
        Some(Token::Open) => *pos += 1,
        _ => return Err(bad("NIL or '('", *pos)),
    }
    let mut list = Vec::new();
    loop {
        match t.get(*pos) {
            Some(Token::Close) => {
                *pos += 1;
                return Ok(list);
            }
            Some(Token::Open) => *pos += 1,
            _ => return Err(bad("'(' or ')'", *pos)),
        }
        let prefix = match t.get(*pos) {
            Some(Token::Str(s)) => s.clone(),
            _ => return Err(bad("a prefix string", *pos)),
        };
        *pos += 1;
        let delimiter = match t.get(*pos) {
            Some(Token::Nil) => None,
            Some(Token::Str(s)) if s.chars().count() == 1 => s.chars().next(),
            _ => return Err(bad("a one-character delimiter or NIL", *pos)),
        };
        *pos += 1;
        // Extensions (RFC 2342 §5 Namespace_Response_Extension): skipped.
        let mut depth = 0usize;
        loop {
            match t.get(*pos) {
                None => return Err(bad("')'", *pos)),
                Some(Token::Close) if depth == 0 => {
                    *pos += 1;
                    break;
                }
                Some(Token::Close) => depth -= 1,
                Some(Token::Open) => depth += 1,
                Some(_) => {}
            }
            *pos += 1;
        }
        let prefix = super::mutf7::decode(&prefix).unwrap_or(prefix);
        // A prefix goes before every folder name in log lines, errors and
        // commands: a control character in it forged log lines and drove
        // the operator's terminal (a hostile server; an audit). Joiners and
        // the marks of right-to-left text are a language's (ZWNJ in
        // Persian) and stay.
        let forges = |c: char| {
            c.is_control()
                || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
        };
        if prefix.chars().chain(delimiter).any(forges) {
            return Err(format!(
                "NAMESPACE: a prefix or delimiter holds a control character ({})",
                prefix.escape_debug()
            ));
        }
        list.push(Namespace { prefix, delimiter });
    }
}

/// Maps configured folder names to server names and back; see the module
/// documentation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FolderNames {
    prefix: String,
    delimiter: Option<char>,
    /// Non-empty prefixes of the other namespaces: names under them are
    /// someone else's and are not put under the personal prefix.
    foreign: Vec<String>,
}

impl FolderNames {
    /// A personal namespace with this prefix and separator, and no others.
    pub fn new(prefix: &str, delimiter: Option<char>) -> FolderNames {
        FolderNames {
            prefix: prefix.to_string(),
            delimiter,
            foreign: Vec::new(),
        }
    }

    /// From the server's NAMESPACE answer when it has one; else from the
    /// separator that `LIST "" ""` reports (RFC 3501 §6.3.8), with no
    /// prefix. With neither, names are used as written.
    pub fn resolve(namespaces: Option<&Namespaces>, list_delimiter: Option<char>) -> FolderNames {
        let Some(ns) = namespaces else {
            return FolderNames::new("", list_delimiter);
        };
        let mut names = match ns.personal.first() {
            Some(p) => FolderNames::new(&p.prefix, p.delimiter.or(list_delimiter)),
            None => FolderNames::new("", list_delimiter),
        };
        names.foreign = ns
            .personal
            .iter()
            .skip(1)
            .chain(&ns.other_users)
            .chain(&ns.shared)
            .map(|n| n.prefix.clone())
            .filter(|p| !p.is_empty())
            .collect();
        names
    }

    /// The personal prefix (`INBOX.` on Cyrus and Courier, empty on Dovecot).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The hierarchy separator, when the server has one.
    pub fn delimiter(&self) -> Option<char> {
        self.delimiter
    }

    /// The server's name for a configured one: `Lists` → `INBOX.Lists` under
    /// prefix `INBOX.`; `Archive/2024` → `Archive.2024` with separator `.`.
    pub fn to_server(&self, configured: &str) -> String {
        if configured.eq_ignore_ascii_case("INBOX") {
            return "INBOX".into();
        }
        let name = match self.delimiter {
            Some(d) if d != '/' => configured.replace('/', &d.to_string()),
            _ => configured.to_string(),
        };
        // A leading INBOX level goes as `INBOX` (RFC 3501 §5.1): Cyrus
        // refused to CREATE `inbox.Sub` for a configured `inbox/Sub` (an
        // audit). A level, not a word: `Inbox Archive` is a folder of its
        // own (taken for one under INBOX, its mail went to a new `INBOX
        // Archive`: a regression audit).
        if self.prefix.is_empty()
            || has_prefix(&name, &self.prefix)
            || self.foreign.iter().any(|p| has_prefix(&name, p))
        {
            let level = self.delimiter.unwrap_or('/');
            return match name.get(..5) {
                Some(h) if h.eq_ignore_ascii_case("INBOX") && name[5..].starts_with(level) => {
                    format!("INBOX{}", &name[5..])
                }
                _ => name,
            };
        }
        format!("{}{name}", self.prefix)
    }

    /// The name to show for a server name: the personal prefix taken off,
    /// levels separated by `/`. `INBOX.Lists` → `Lists`; `INBOX` → `INBOX`.
    pub fn to_display(&self, server: &str) -> String {
        if server.eq_ignore_ascii_case("INBOX") {
            return "INBOX".into();
        }
        let rest = match server.get(..self.prefix.len()) {
            Some(head)
                if !self.prefix.is_empty()
                    && has_prefix(server, &self.prefix)
                    && server.len() > head.len() =>
            {
                &server[head.len()..]
            }
            _ => server,
        };
        match self.delimiter {
            Some(d) if d != '/' => rest.replace(d, "/"),
            _ => rest.to_string(),
        }
    }

    /// The form a configured name is shown in: `INBOX.Lists` and `Lists`
    /// are both `Lists` on Cyrus; `Archive.2024` is `Archive/2024` where
    /// `.` separates levels.
    pub fn canonical(&self, configured: &str) -> String {
        self.to_display(&self.to_server(configured))
    }
}

/// `name` with a leading `INBOX` level in capitals (`inbox/Sub` →
/// `INBOX/Sub`, `Inbox.Sub` → `INBOX.Sub`): one folder, whatever the case
/// it is written in (RFC 3501 §5.1; servers take the level below INBOX
/// the same way). What compares folder names for sameness uses it.
pub fn inbox_upper(name: &str) -> std::borrow::Cow<'_, str> {
    let level = name.get(..5).filter(|h| h.eq_ignore_ascii_case("INBOX"));
    let ends = name[level.map_or(0, str::len)..]
        .chars()
        .next()
        .is_none_or(|c| !c.is_alphanumeric() && c != '_' && c != '-');
    match level {
        Some(h) if h != "INBOX" && ends => format!("INBOX{}", &name[5..]).into(),
        _ => name.into(),
    }
}

/// `name` starts with `prefix`; a leading `INBOX` level is compared without
/// regard to case, as RFC 3501 §5.1 treats INBOX.
fn has_prefix(name: &str, prefix: &str) -> bool {
    if name.starts_with(prefix) {
        return true;
    }
    let (Some(p_head), Some(n_head)) = (prefix.get(..5), name.get(..5)) else {
        return false;
    };
    p_head.eq_ignore_ascii_case("INBOX")
        && n_head.eq_ignore_ascii_case("INBOX")
        && name[5..].starts_with(&prefix[5..])
}

#[cfg(test)]
mod tests {

    /// Found by an audit: a public `Spam` was taken for the user's junk
    /// folder. Only the personal namespace's folders are the user's own.
    #[test]
    fn only_the_personal_namespace_is_the_users_own() {
        let ns = |raw: &str| Namespaces::parse(raw.as_bytes()).unwrap();
        let dovecot = ns("* NAMESPACE ((\"\" \"/\")) NIL ((\"Public/\" \"/\"))\r\n");
        assert!(dovecot.is_personal("INBOX"));
        assert!(dovecot.is_personal("Spam"));
        assert!(dovecot.is_personal("Lists/Rust"));
        assert!(!dovecot.is_personal("Public/Spam"));
        assert!(!dovecot.is_personal("Public"));
        let cyrus = ns("* NAMESPACE ((\"INBOX.\" \".\")) ((\"user.\" \".\")) ((\"\" \".\"))\r\n");
        assert!(cyrus.is_personal("INBOX"));
        assert!(cyrus.is_personal("INBOX.Junk"));
        assert!(!cyrus.is_personal("user.bob.Junk"));
        assert!(!cyrus.is_personal("shared.Spam"));
    }

    /// Found by an audit: a hostile server's prefix with a newline forged
    /// log lines (every folder name is told with it), and an escape
    /// sequence set the terminal's title.
    #[test]
    fn a_prefix_with_a_control_character_is_refused() {
        // In modified UTF-7, as a name is sent: a newline, ESC ... BEL, and
        // a line separator.
        for raw in [
            "* NAMESPACE ((\"x&AAo-2099-01-01 [ERROR] forged.\" \".\")) NIL NIL\r\n",
            "* NAMESPACE ((\"&ABs-]0;owned&AAc-\" \".\")) NIL NIL\r\n",
            "* NAMESPACE ((\"a&ICg-b.\" \".\")) NIL NIL\r\n",
        ] {
            let e = Namespaces::parse(raw.as_bytes()).unwrap_err();
            assert!(e.contains("control character"), "{e}");
            assert!(
                !e.chars().any(|c| c.is_control() || c == '\u{2028}'),
                "{e:?}"
            );
        }
        // A zero-width non-joiner is Persian's, not a forgery (a
        // regression audit).
        let persian = "* NAMESPACE ((\"&BkUGzCAMBkcGJwZH-.\" \".\")) NIL NIL\r\n";
        let ns = Namespaces::parse(persian.as_bytes()).unwrap();
        assert!(
            ns.personal[0].prefix.contains('\u{200c}'),
            "{:?}",
            ns.personal[0].prefix
        );
    }

    use super::*;

    #[test]
    fn a_leading_inbox_level_reads_in_capitals() {
        for (name, want) in [
            ("inbox", "INBOX"),
            ("Inbox/Sub", "INBOX/Sub"),
            ("inbox.Sub", "INBOX.Sub"),
            ("INBOX/Sub", "INBOX/Sub"),
            ("Inboxes", "Inboxes"),
            ("inbox-old", "inbox-old"),
            ("Work/inbox", "Work/inbox"),
            ("in", "in"),
        ] {
            assert_eq!(inbox_upper(name), want, "{name}");
        }
    }

    /// Answers recorded from the servers that tests/servers.rs starts:
    /// Dovecot 2.3.19 (Maildir++, tests/common/dovecot.rs), Cyrus 3.6.1 and
    /// Courier-IMAP 5.0.13 with Debian 12's default namespace settings.
    const DOVECOT: &[u8] = b"* NAMESPACE ((\"\" \".\")) NIL NIL\r\n";
    const CYRUS: &[u8] = b"* NAMESPACE ((\"INBOX.\" \".\")) ((\"user.\" \".\")) ((\"\" \".\"))\r\n";
    const COURIER: &[u8] =
        b"* NAMESPACE ((\"INBOX.\" \".\")) NIL ((\"#shared.\" \".\")(\"shared.\" \".\"))\r\n";
    /// Gmail and Microsoft 365, from their documentation and traces.
    const GMAIL: &[u8] = b"* NAMESPACE ((\"\" \"/\")) NIL NIL\r\n";

    fn ns(prefix: &str, d: char) -> Namespace {
        Namespace {
            prefix: prefix.into(),
            delimiter: Some(d),
        }
    }

    fn names(raw: &[u8]) -> FolderNames {
        FolderNames::resolve(Some(&Namespaces::parse(raw).unwrap()), None)
    }

    #[test]
    fn parses_each_servers_answer() {
        assert_eq!(
            Namespaces::parse(DOVECOT).unwrap(),
            Namespaces {
                personal: vec![ns("", '.')],
                ..Default::default()
            }
        );
        assert_eq!(
            Namespaces::parse(CYRUS).unwrap(),
            Namespaces {
                personal: vec![ns("INBOX.", '.')],
                other_users: vec![ns("user.", '.')],
                shared: vec![ns("", '.')],
            }
        );
        assert_eq!(
            Namespaces::parse(COURIER).unwrap(),
            Namespaces {
                personal: vec![ns("INBOX.", '.')],
                other_users: vec![],
                shared: vec![ns("#shared.", '.'), ns("shared.", '.')],
            }
        );
    }

    #[test]
    fn parses_extensions_nil_delimiters_literals_and_encoded_prefixes() {
        let raw = b"* NAMESPACE ((\"\" \"/\" \"X-PARAM\" (\"FLAG1\" \"FLAG2\"))) NIL \
                    ((\"Gemeinsame &AMQ-rdner/\" \"/\")({7}\r\nPublic/ NIL))\r\n";
        let n = Namespaces::parse(raw).unwrap();
        assert_eq!(n.personal, vec![ns("", '/')]);
        assert_eq!(n.shared[0], ns("Gemeinsame Ärdner/", '/'));
        assert_eq!(
            n.shared[1],
            Namespace {
                prefix: "Public/".into(),
                delimiter: None
            }
        );
        assert_eq!(
            Namespaces::parse(b"* NAMESPACE ((\"\" \"\\\\\")) NIL NIL")
                .unwrap()
                .personal,
            vec![ns("", '\\')]
        );
    }

    #[test]
    fn malformed_answers_are_errors() {
        for bad in [
            &b"* OK no namespace here\r\n"[..],
            b"* NAMESPACE ((\"\" \".\")) NIL\r\n",
            b"* NAMESPACE ((\"\" \"..\")) NIL NIL\r\n",
            b"* NAMESPACE ((\"\")) NIL NIL\r\n",
            b"* NAMESPACE (\"\" \".\") NIL NIL\r\n",
            b"* NAMESPACE ((\"\" \".\" NIL NIL\r\n",
            b"* NAMESPACE ((\"unterminated \".\")) NIL NIL\r\n",
        ] {
            assert!(
                Namespaces::parse(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }

    #[test]
    fn cyrus_and_courier_put_folders_under_inbox() {
        for raw in [CYRUS, COURIER] {
            let n = names(raw);
            assert_eq!(n.prefix(), "INBOX.");
            assert_eq!(n.to_server("Lists"), "INBOX.Lists");
            assert_eq!(n.to_server("Archive/2024"), "INBOX.Archive.2024");
            assert_eq!(n.to_server("Reçus"), "INBOX.Reçus");
            assert_eq!(n.to_display("INBOX.Lists"), "Lists");
            assert_eq!(n.to_display("INBOX.Archive.2024"), "Archive/2024");
            // Already prefixed: left alone, but for INBOX's case.
            assert_eq!(n.to_server("INBOX.Lists"), "INBOX.Lists");
            assert_eq!(n.to_server("inbox.Lists"), "INBOX.Lists");
            assert_eq!(n.to_server("inbox/Sub"), "INBOX.Sub");
            assert_eq!(n.to_server("INBOX/Lists"), "INBOX.Lists");
            assert_eq!(n.to_server("Inboxes"), "INBOX.Inboxes");
            // A word, not a level (a regression audit).
            assert_eq!(n.to_server("Inbox Archive"), "INBOX.Inbox Archive");
            assert_eq!(n.canonical("INBOX.Lists"), "Lists");
            assert_eq!(n.canonical("Lists"), "Lists");
            // INBOX itself.
            for inbox in ["INBOX", "inbox", "Inbox"] {
                assert_eq!(n.to_server(inbox), "INBOX");
                assert_eq!(n.to_display(inbox), "INBOX");
            }
        }
    }

    #[test]
    fn other_namespaces_are_left_alone() {
        let cyrus = names(CYRUS);
        assert_eq!(cyrus.to_server("user.bob.Lists"), "user.bob.Lists");
        assert_eq!(cyrus.to_display("user.bob.Lists"), "user/bob/Lists");
        assert_eq!(cyrus.to_server("user/bob/Lists"), "user.bob.Lists");
        let courier = names(COURIER);
        assert_eq!(courier.to_server("#shared.team"), "#shared.team");
        assert_eq!(courier.to_server("#shared/team"), "#shared.team");
    }

    #[test]
    fn dovecot_and_gmail_keep_names_at_the_top() {
        let d = names(DOVECOT);
        assert_eq!(d.to_server("Lists"), "Lists");
        assert_eq!(d.to_server("Archive/2024"), "Archive.2024");
        assert_eq!(d.to_server("Archive.2024"), "Archive.2024");
        assert_eq!(d.to_display("Archive.2024"), "Archive/2024");
        assert_eq!(d.to_server("INBOX"), "INBOX");
        assert_eq!(d.to_server("inbox/Sub"), "INBOX.Sub");
        assert_eq!(d.to_server("Inbox Archive"), "Inbox Archive");
        assert_eq!(d.to_server("Inbox (2019)"), "Inbox (2019)");
        let g = names(GMAIL);
        assert_eq!(g.to_server("[Gmail]/Spam"), "[Gmail]/Spam");
        assert_eq!(g.to_display("[Gmail]/Spam"), "[Gmail]/Spam");
        assert_eq!(g.to_server("Archive/2024"), "Archive/2024");
    }

    #[test]
    fn without_namespace_the_list_delimiter_is_used() {
        let n = FolderNames::resolve(None, Some('.'));
        assert_eq!(n.prefix(), "");
        assert_eq!(n.to_server("Archive/2024"), "Archive.2024");
        let flat = FolderNames::resolve(None, None);
        assert_eq!(flat.to_server("Archive/2024"), "Archive/2024");
        assert_eq!(flat.to_display("Archive.2024"), "Archive.2024");
        // A personal namespace with a NIL delimiter borrows LIST's.
        let nil = Namespaces::parse(b"* NAMESPACE ((\"INBOX.\" NIL)) NIL NIL").unwrap();
        assert_eq!(
            FolderNames::resolve(Some(&nil), Some('.')).delimiter(),
            Some('.')
        );
        // NAMESPACE answered with no personal namespace at all.
        let none = Namespaces::parse(b"* NAMESPACE NIL NIL NIL").unwrap();
        let n = FolderNames::resolve(Some(&none), Some('/'));
        assert_eq!((n.prefix(), n.delimiter()), ("", Some('/')));
    }

    #[test]
    fn round_trips_for_names_without_the_servers_separator() {
        let servers = [CYRUS, COURIER, DOVECOT, GMAIL];
        let configured = [
            "Lists",
            "Archive/2024",
            "Reçus",
            "受信箱",
            "Courrier indésirable",
            "a/b/c",
            "INBOX",
        ];
        for raw in servers {
            let n = names(raw);
            for c in configured {
                assert_eq!(n.to_display(&n.to_server(c)), c, "{c:?}");
                assert_eq!(n.to_server(&n.canonical(c)), n.to_server(c), "{c:?}");
            }
        }
    }

    #[test]
    fn the_prefix_alone_is_not_taken_for_a_folder() {
        let n = names(CYRUS);
        // "INBOX." itself (nothing after the prefix) is shown as sent.
        assert_eq!(n.to_display("INBOX."), "INBOX/");
        assert_eq!(n.to_display("INBOXfoo"), "INBOXfoo");
        assert!(!has_prefix("INB", "INBOX."));
        assert!(has_prefix("Inbox.x", "INBOX."));
        assert!(!has_prefix("Mail/x", "mail/"));
    }
}
