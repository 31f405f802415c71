//! The folders of one connection, and the one way a folder name reaches
//! the server.
//!
//! Everything above this module speaks of folders as the configuration
//! names them (`Lists`, `Reçus`, `INBOX`): rules, the model's answers, the
//! store, the activity log and the dashboard. Here those names meet the
//! server's:
//!
//! * the personal namespace (RFC 2342) puts them under its prefix with its
//!   separator (`Lists` is `INBOX.Lists` on Cyrus and Courier), see
//!   [`crate::mailbox::FolderNames`];
//! * on the wire a name is modified UTF-7 (RFC 3501 §5.1.3, `Reçus` is
//!   `Re&AOc-us`), or UTF-8 once the server accepted `ENABLE UTF8=ACCEPT`
//!   (RFC 6855), always as a quoted string;
//! * the junk and trash folders are the ones the server marks `\Junk` and
//!   `\Trash` (RFC 6154) whatever they are called, unless the
//!   configuration names the junk folder (`folders.junk`).
//!
//! SELECT, EXAMINE, CREATE and STATUS of a folder go through [`Folders`]
//! only (a unit test keeps every other module from calling the crate's
//! own, which would send the configured name as it is).

use std::collections::HashSet;

use super::flags::Keeps;
use super::session::{session_fatal, Caps, Session};
use super::ImapError;
use crate::config::AccountConfig;
use crate::mailbox::{find_special_use, mutf7, FolderNames, ListEntry, Namespaces, SpecialUse};

/// What one connection knows of the server's folders.
pub(crate) struct Folders {
    /// Server names (UTF-8) that LIST returned.
    existing: HashSet<String>,
    /// Server names this session created since (or found there when its
    /// CREATE was answered `ALREADYEXISTS`): not created again at every
    /// pass of the session.
    created: parking_lot::Mutex<HashSet<String>>,
    /// The folder selected last (as the user knows it) and the flags it
    /// keeps: see [`Keeps`].
    selected: parking_lot::Mutex<Option<(String, Keeps)>>,
    /// Where `spam` goes, as the user knows it (`Junk` for Cyrus's
    /// `INBOX.Junk`).
    pub(super) junk: String,
    /// Every folder the server marks `\Junk`, as the user knows it: none
    /// is a folder the model may move to without `spam` (`junk` alone was
    /// kept from it, and a second marked folder was not: an audit).
    pub(super) marked_junk: Vec<String>,
    /// Where `trash` goes, as the user knows it.
    pub(super) trash: String,
    /// Every folder the server marks `\Trash`, as the user knows it: kept
    /// from a model without `trash`, as `marked_junk` from one without
    /// `spam`.
    pub(super) marked_trash: Vec<String>,
    /// Every folder the server marks `\All` (Gmail's `[Gmail]/All Mail`),
    /// as the user knows it: it holds every message of the account, so it
    /// is no class of its own to learn (see `train`).
    pub(super) marked_all: Vec<String>,
    names: FolderNames,
    /// `ENABLE UTF8=ACCEPT` succeeded: names go as UTF-8, not modified UTF-7.
    utf8: bool,
    /// The account, for what the server warns of.
    account: String,
}

impl Folders {
    /// Folders as a server without NAMESPACE, LIST attributes or UTF-8
    /// would have them (tests, and the start of [`discover`]).
    #[cfg(test)]
    pub(super) fn plain(names: FolderNames, utf8: bool) -> Folders {
        Folders {
            existing: HashSet::new(),
            created: Default::default(),
            selected: Default::default(),
            junk: "Junk".into(),
            marked_junk: Vec::new(),
            trash: "Trash".into(),
            marked_trash: Vec::new(),
            marked_all: Vec::new(),
            names,
            utf8,
            account: "test".into(),
        }
    }

    /// The server's name (UTF-8) for a configured one.
    pub(super) fn server(&self, name: &str) -> String {
        self.names.to_server(name)
    }

    /// A configured name for messages: `"Lists"`, or `"Lists" ("INBOX.Lists"
    /// on the server)` where the two differ.
    pub(super) fn describe(&self, name: &str) -> String {
        let server = self.server(name);
        if server == name {
            format!("{name:?}", name = crate::shown::quoted(name))
        } else {
            format!(
                "{name:?} ({server:?} on the server)",
                name = crate::shown::quoted(name),
                server = crate::shown::quoted(&server)
            )
        }
    }

    /// The name as it goes on the wire, before quoting.
    fn wire(&self, name: &str) -> String {
        let server = self.server(name);
        if self.utf8 {
            server
        } else {
            mutf7::encode(&server)
        }
    }

    /// The name as a command argument: a quoted string. Folder names with
    /// CR, LF or NUL are refused (the configuration refuses them; one from
    /// a server's LIST is never sent back broken).
    pub(super) fn arg(&self, name: &str) -> Result<String, String> {
        if name.chars().any(|c| matches!(c, '\r' | '\n' | '\0')) {
            return Err(format!(
                "folder {name:?} holds a line break or NUL, which no IMAP name can carry",
                name = crate::shown::quoted(name)
            ));
        }
        if let Some(d) = self.names.delimiter() {
            let server = self.server(name);
            if server.split(d).any(str::is_empty) {
                return Err(format!(
                    "folder {name:?} is {server:?} on the server, whose level separator is {d:?}: \
                     a level of it is empty; no folder can have that name there",
                    name = crate::shown::quoted(name),
                    server = crate::shown::quoted(&server)
                ));
            }
        }
        let w = self.wire(name);
        Ok(format!(
            "\"{}\"",
            w.replace('\\', "\\\\").replace('"', "\\\"")
        ))
    }

    /// Whether LIST showed the folder, or this session created it.
    pub(super) fn exists(&self, name: &str) -> bool {
        let server = self.server(name);
        self.existing.contains(&server) || self.created.lock().contains(&server)
    }

    /// `name` resolved and encoded for another session of the account
    /// (see `reader`), which has no `Folders` of its own.
    pub(super) fn resolved(&self, name: &str) -> Resolved {
        Resolved(self.wire(name))
    }

    pub(super) fn select(&self, s: &mut Session, name: &str) -> imap::Result<imap::types::Mailbox> {
        let selected = s.select(self.wire(name));
        self.tell_warnings(s, name);
        self.note_selected(name, &selected);
        selected
    }

    pub(super) fn examine(
        &self,
        s: &mut Session,
        name: &str,
    ) -> imap::Result<imap::types::Mailbox> {
        let examined = s.examine(self.wire(name));
        self.tell_warnings(s, name);
        self.note_selected(name, &examined);
        examined
    }

    fn note_selected(&self, name: &str, mb: &imap::Result<imap::types::Mailbox>) {
        *self.selected.lock() = mb.as_ref().ok().map(|mb| (name.to_string(), Keeps::of(mb)));
    }

    /// Which flags `name` keeps, when it is the folder selected last.
    pub(super) fn keeps(&self, name: &str) -> Option<Keeps> {
        match &*self.selected.lock() {
            Some((n, k)) if n == name => Some(k.clone()),
            _ => None,
        }
    }

    /// Logs what the server warned of with the SELECT or EXAMINE of `name`
    /// (see [`tell_warnings`]).
    fn tell_warnings(&self, s: &mut Session, name: &str) {
        tell_warnings(&self.account, s, name);
    }

    /// `CREATE name`, then `SUBSCRIBE name`; the folder counts as existing
    /// for the rest of the session once made, or once the server says it
    /// already exists. Subscribed because clients that show subscribed
    /// folders only (Roundcube's default, Thunderbird's option) showed none
    /// of the folders mail was sorted into on Courier and Cyrus, which
    /// subscribe nothing themselves (an audit): to the user the mail was
    /// gone. A refused SUBSCRIBE is a warning; the folder is made.
    pub(super) fn create(&self, s: &mut Session, name: &str) -> imap::Result<()> {
        let r = s.create(self.wire(name));
        let there = match &r {
            Ok(()) => true,
            Err(imap::Error::No(no)) => already_exists(&no.information),
            Err(_) => false,
        };
        if there {
            self.created.lock().insert(self.server(name));
        }
        if r.is_ok() {
            match s.subscribe(self.wire(name)) {
                Ok(()) => {}
                Err(imap::Error::No(imap::error::No { information, .. }))
                | Err(imap::Error::Bad(imap::error::Bad { information, .. })) => log::warn!(
                    "{}: SUBSCRIBE {} refused (clients that show subscribed folders only will \
                     not show it): {information}",
                    self.account,
                    self.describe(name),
                ),
                Err(e) => return Err(e),
            }
        }
        r
    }

    /// `STATUS name (UIDNEXT)`, read from the raw answer: the crate's
    /// parser takes no 8-bit name, which a UTF8=ACCEPT server echoes.
    /// `None` when the server answered without UIDNEXT.
    pub(super) fn status_uid_next(&self, s: &mut Session, name: &str) -> imap::Result<Option<u32>> {
        Ok(self
            .status(s, name, "UIDNEXT")?
            .and_then(|raw| status_item(&raw, "UIDNEXT")))
    }

    /// `STATUS name (MESSAGES UIDNEXT UIDVALIDITY)`, read as
    /// [`Folders::status_uid_next`] reads it. `None` when the server left
    /// an item out.
    pub(super) fn status_counts(
        &self,
        s: &mut Session,
        name: &str,
    ) -> imap::Result<Option<Counts>> {
        Ok(self
            .status(s, name, "MESSAGES UIDNEXT UIDVALIDITY")?
            .and_then(|raw| counts_of(&raw)))
    }

    /// The raw answer to `STATUS name (items)`; `None` for a name that
    /// cannot be sent (the configuration refuses those), which leaves the
    /// numbers to the caller's other means.
    fn status(&self, s: &mut Session, name: &str, items: &str) -> imap::Result<Option<Vec<u8>>> {
        let Ok(arg) = self.arg(name) else {
            return Ok(None);
        };
        s.run_command_and_read_response(format!("STATUS {arg} ({items})"))
            .map(Some)
    }
}

/// Logs what the server warned of since the last command that looked, with
/// `what` (a folder's SELECT, the sign-in): an untagged `NO` or `BAD`, an
/// `[ALERT]` (which RFC 3501 §7.1 says a user must be shown). Cyrus says
/// `* NO [ALERT] Mailbox is over STORAGE quota` with the `SELECT` of a
/// full mailbox, and a move into it will fail. Every other unsolicited
/// answer is dropped here: nothing reads it after the command it came with.
pub(super) fn tell_warnings(account: &str, s: &mut Session, what: &str) {
    for said in s.take_all_unsolicited() {
        tell_warning(account, &said, what);
    }
}

/// Logs `said` when it is a warning (see [`tell_warnings`]).
pub(super) fn tell_warning(account: &str, said: &imap::types::UnsolicitedResponse, what: &str) {
    use imap::types::UnsolicitedResponse as U;
    use imap_proto::types::ResponseCode;
    let (kind, code, words) = match said {
        U::No { code, information } => ("a warning (NO)", code, information),
        U::Bad { code, information } => ("an error (BAD)", code, information),
        U::Ok {
            code: code @ Some(ResponseCode::Alert),
            information,
        } => ("an alert", code, information),
        _ => return,
    };
    let alert = if matches!(code, Some(ResponseCode::Alert)) {
        "[ALERT] "
    } else {
        ""
    };
    log::warn!(
        "{account}: the server sent {kind} with {what}: {alert}{}",
        crate::email::visible(words.as_deref().unwrap_or(""), '\u{FFFD}')
    );
}

/// A folder's `MESSAGES`, `UIDNEXT` and `UIDVALIDITY`: the same exactly
/// while no message has arrived in it or left it.
pub(super) type Counts = (u32, u32, u32);

/// The three counts of a `STATUS` answer, or `None` when one is missing.
fn counts_of(raw: &[u8]) -> Option<Counts> {
    Some((
        status_item(raw, "MESSAGES")?,
        status_item(raw, "UIDNEXT")?,
        status_item(raw, "UIDVALIDITY")?,
    ))
}

/// The number after `item` in the last parenthesised list of the
/// `* STATUS` line of `raw`.
fn status_item(raw: &[u8], item: &str) -> Option<u32> {
    let text = String::from_utf8_lossy(raw);
    let line = text.lines().find(|l| {
        l.get(..9)
            .is_some_and(|h| h.eq_ignore_ascii_case("* STATUS "))
    })?;
    let list = &line[line.rfind('(')? + 1..];
    let list = &list[..list.find(')')?];
    let mut words = list.split_ascii_whitespace();
    while let Some(w) = words.next() {
        let v = words.next()?;
        if w.eq_ignore_ascii_case(item) {
            return v.parse().ok();
        }
    }
    None
}

/// Turns UTF-8 on where the server offers it (RFC 6855): names then go
/// and come as UTF-8. Returns whether it is on. A refusal is not an
/// error: names go as modified UTF-7 then.
/// A folder name as [`Folders`] sends it (resolved in the namespace,
/// encoded as the session agreed), for a session without `Folders`.
#[derive(Clone, Debug)]
pub(super) struct Resolved(String);

impl Resolved {
    /// `EXAMINE` of the folder (read-only).
    pub(super) fn examine(&self, s: &mut Session) -> imap::Result<imap::types::Mailbox> {
        s.examine(&self.0)
    }
}

pub(super) fn enable_utf8(
    s: &mut Session,
    offered: bool,
    account: &str,
) -> Result<bool, ImapError> {
    if !offered {
        return Ok(false);
    }
    match s.run_command_and_read_response("ENABLE UTF8=ACCEPT") {
        Ok(raw) => {
            let text = String::from_utf8_lossy(&raw).to_ascii_uppercase();
            Ok(text
                .lines()
                .any(|l| l.starts_with("* ENABLED") && l.contains("UTF8=ACCEPT")))
        }
        Err(e) => {
            let e = session_fatal(e)?;
            log::info!("{account}: ENABLE UTF8=ACCEPT refused ({e}); names go as modified UTF-7");
            Ok(false)
        }
    }
}

/// Reads the server's namespace and folder list: how configured names map
/// to its own, which folders exist, and its junk and trash folders.
/// Longest folder name taken from the server, in bytes: four times the
/// longest a configuration may write (`folders`, 255 characters), far
/// beyond any real folder's.
const SERVER_NAME_MAX: usize = 1024;

pub(super) fn discover(
    s: &mut Session,
    caps: &Caps,
    account: &AccountConfig,
) -> Result<Folders, ImapError> {
    let namespaces = if caps.namespace {
        match s.run_command_and_read_response("NAMESPACE") {
            Ok(raw) => match Namespaces::parse(&raw) {
                Ok(ns) => Some(ns),
                Err(e) => {
                    log::warn!("{}: {e}; folder names are used as written", account.name);
                    None
                }
            },
            Err(e) => {
                let e = session_fatal(e)?;
                log::warn!("{}: NAMESPACE refused: {e}", account.name);
                None
            }
        }
    } else {
        None
    };
    // A name the server sent in bytes that are not UTF-8 came with U+FFFD
    // in their place, one that is no valid modified UTF-7 as sent (not
    // `readable`): it cannot be named back, so
    // the folder is left alone rather than taken for a junk folder that a
    // move would then create under the mangled name.
    // A name longer than any folder's is left alone too: it would go on
    // into every log line and command naming it (an audit's server sent a
    // junk folder named with 10 MB: 10 MB a connection in the log, and a
    // 10 MB MOVE).
    let (entries, unreadable): (Vec<_>, Vec<_>) = list(s, caps)?.into_iter().partition(|e| {
        e.readable && !e.name.contains('\u{fffd}') && e.name.len() <= SERVER_NAME_MAX
    });
    if !unreadable.is_empty() {
        const SHOWN: usize = 10;
        let mut shown: Vec<String> = unreadable
            .iter()
            .take(SHOWN)
            .map(|e| format!("\"{}\"", crate::logging::clean_up_to(&e.name, 100)))
            .collect();
        if unreadable.len() > SHOWN {
            shown.push(format!("and {} more", unreadable.len() - SHOWN));
        }
        log::warn!(
            "{}: {} folder name(s) from the server are not valid {} or longer than {SERVER_NAME_MAX} bytes, left alone: {}",
            account.name,
            unreadable.len(),
            if caps.utf8 { "UTF-8" } else { "modified UTF-7" },
            shown.join(", ")
        );
    }
    // `LIST "" "*"` lists INBOX with the separator; RFC 3501 also allows
    // asking with `LIST "" ""`, which every server here answers the same.
    let delimiter = entries.iter().find_map(|e| e.delimiter);
    let names = FolderNames::resolve(namespaces.as_ref(), delimiter);
    // The junk and trash folders are the user's own: one of another
    // namespace (a public `Spam`) is no place for their mail.
    let own = own_entries(&entries, namespaces.as_ref());
    let found = |use_: SpecialUse| find_special_use(use_, &own, None).map(|(n, _)| n);
    // Every folder of the user's marked `attribute`, as the user knows it.
    let marked = |attribute: &str| -> Vec<String> {
        crate::mailbox::special_use::marked_with(attribute, &own)
            .map(|e| names.to_display(&e.name))
            .collect()
    };
    let marked_junk = marked(SpecialUse::Junk.attribute());
    let marked_trash = marked(SpecialUse::Trash.attribute());
    let marked_all = marked("\\All");
    let junk = match account.folders.junk.as_deref() {
        Some(j) => j.to_string(),
        None => found(SpecialUse::Junk)
            .map(|n| names.to_display(n))
            .unwrap_or_else(|| "Junk".into()),
    };
    let trash = found(SpecialUse::Trash)
        .map(|n| names.to_display(n))
        .unwrap_or_else(|| "Trash".into());
    log::info!(
        "{}: folders: personal namespace {:?} separator {:?}, {} folder(s), junk {:?}, trash {:?}, names as {}",
        account.name,
        names.prefix(),
        names.delimiter().map(String::from).unwrap_or_default(),
        entries.len(),
        crate::shown::quoted(&names.to_server(&junk)),
        crate::shown::quoted(&names.to_server(&trash)),
        if caps.utf8 { "UTF-8" } else { "modified UTF-7" }
    );
    super::folder_checks::warn(
        account,
        &names,
        &entries,
        &super::folder_checks::Chosen {
            junk: &junk,
            marked_junk: &marked_junk,
            marked_all: &marked_all,
        },
    );
    // What the server warned of with the sign-in, NAMESPACE or LIST (a
    // password about to expire, say).
    tell_warnings(&account.name, s, "the sign-in");
    Ok(Folders {
        existing: entries.into_iter().map(|e| e.name).collect(),
        created: Default::default(),
        selected: Default::default(),
        junk,
        marked_junk,
        trash,
        marked_trash,
        marked_all,
        names,
        utf8: caps.utf8,
        account: account.name.clone(),
    })
}

/// The folders of `entries` in the user's personal namespace (all of them
/// when the server has no NAMESPACE).
fn own_entries(entries: &[ListEntry], namespaces: Option<&Namespaces>) -> Vec<ListEntry> {
    entries
        .iter()
        .filter(|e| namespaces.is_none_or(|ns| ns.is_personal(&e.name)))
        .cloned()
        .collect()
}

/// Every folder, with its special-use attributes where the server marks
/// them: `RETURN (SPECIAL-USE)` where offered (Cyrus marks them only
/// then), plain LIST elsewhere (Courier refuses the extended form).
fn list(s: &mut Session, caps: &Caps) -> Result<Vec<ListEntry>, ImapError> {
    if caps.special_use {
        match s.run_command_and_read_response("LIST \"\" \"*\" RETURN (SPECIAL-USE)") {
            Ok(raw) => return Ok(ListEntry::parse_all_with(&raw, !caps.utf8)),
            Err(e) => {
                session_fatal(e)?;
            }
        }
    }
    let raw = s.run_command_and_read_response("LIST \"\" \"*\"")?;
    Ok(ListEntry::parse_all_with(&raw, !caps.utf8))
}

/// Whether a refused CREATE said the folder is there already: the
/// `[ALREADYEXISTS]` code of RFC 5530 (which the parser leaves in the
/// text, knowing no such code), or the words where a server sends none.
fn already_exists(text: &str) -> bool {
    let text = text.to_ascii_lowercase();
    text.contains("[alreadyexists]") || text.contains("already exists")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_resolved_then_encoded_then_quoted() {
        let cyrus = Folders::plain(FolderNames::new("INBOX.", Some('.')), false);
        assert_eq!(cyrus.arg("Lists").unwrap(), "\"INBOX.Lists\"");
        assert_eq!(cyrus.arg("Reçus").unwrap(), "\"INBOX.Re&AOc-us\"");
        assert_eq!(cyrus.arg("受信箱").unwrap(), "\"INBOX.&U9dP4Xux-\"");
        assert_eq!(cyrus.arg("R&D").unwrap(), "\"INBOX.R&-D\"");
        assert_eq!(cyrus.arg("INBOX").unwrap(), "\"INBOX\"");
        assert_eq!(cyrus.arg("a\"b\\c").unwrap(), "\"INBOX.a\\\"b\\\\c\"");
        assert!(cyrus.arg("a\r\nb").is_err());
        assert_eq!(
            cyrus.describe("Lists"),
            "\"Lists\" (\"INBOX.Lists\" on the server)"
        );
        // UTF-8 accepted: the name goes as it is, still quoted.
        let courier = Folders::plain(FolderNames::new("INBOX.", Some('.')), true);
        assert_eq!(courier.arg("Reçus").unwrap(), "\"INBOX.Reçus\"");
        assert_eq!(courier.arg("R&D").unwrap(), "\"INBOX.R&D\"");
        let dovecot = Folders::plain(FolderNames::new("", Some('.')), false);
        assert_eq!(dovecot.arg("Archive/2024").unwrap(), "\"Archive.2024\"");
        assert_eq!(dovecot.describe("Lists"), "\"Lists\"");
    }

    /// The vendored parser (vendor/imap-proto/PATCHES.md) takes what the
    /// crate's did not: the NAMESPACE answer, and UTF-8 names.
    #[test]
    fn the_response_parser_takes_namespace_and_utf8_names() {
        let parse = imap_proto::parser::parse_response;
        assert!(parse(b"* NAMESPACE ((\"INBOX.\" \".\")) NIL ((\"#shared.\" \".\"))\r\n").is_ok());
        assert!(parse("* LIST (\\HasNoChildren) \".\" \"INBOX.受信箱\"\r\n".as_bytes()).is_ok());
        assert!(parse("* STATUS \"INBOX.Reçus\" (UIDNEXT 3)\r\n".as_bytes()).is_ok());
        // A name that is not UTF-8 is taken, not the end of the session.
        assert!(parse(b"* LIST (\\Junk) \".\" \"Sp\xe4m\"\r\n").is_ok());
    }

    /// The corrections check skips a folder only on all three counts: an
    /// answer missing one, or with one past 32 bits or not a number, gives
    /// none (the folder is then read whole).
    #[test]
    fn counts_need_all_three_numbers() {
        assert_eq!(
            counts_of(b"* STATUS \"Lists\" (MESSAGES 3 UIDNEXT 17 UIDVALIDITY 99)\r\nA1 OK\r\n"),
            Some((3, 17, 99))
        );
        assert_eq!(
            counts_of(b"* STATUS Lists (UIDVALIDITY 99 MESSAGES 3 UIDNEXT 17)\r\n"),
            Some((3, 17, 99))
        );
        assert_eq!(
            counts_of(b"* STATUS Lists (MESSAGES 3 UIDNEXT 17)\r\n"),
            None
        );
        assert_eq!(
            counts_of(b"* STATUS Lists (MESSAGES 3 UIDNEXT 17 UIDVALIDITY 4294967296)\r\n"),
            None
        );
        assert_eq!(
            counts_of(b"* STATUS Lists (MESSAGES x UIDNEXT 17 UIDVALIDITY 9)\r\n"),
            None
        );
        assert_eq!(counts_of(b"A1 NO [NONEXISTENT] no such folder\r\n"), None);
    }

    #[test]
    fn status_answers_are_read_whatever_the_name() {
        let raw = b"* STATUS \"INBOX.Re\xc3\xa7us (UIDNEXT 9)\" (MESSAGES 3 UIDNEXT 17)\r\n";
        assert_eq!(status_item(raw, "UIDNEXT"), Some(17));
        assert_eq!(status_item(raw, "MESSAGES"), Some(3));
        assert_eq!(
            status_item(b"* STATUS INBOX (MESSAGES 3)\r\n", "UIDNEXT"),
            None
        );
        assert_eq!(status_item(b"* OK nothing\r\n", "UIDNEXT"), None);
        assert_eq!(
            status_item(b"* status x (uidnext 4)\r\n", "UIDNEXT"),
            Some(4)
        );
    }

    /// Every SELECT, EXAMINE, CREATE and STATUS of a folder goes through
    /// [`Folders`]: a direct call sends the configured name unresolved and
    /// unencoded (`Reçus` as raw UTF-8, `Lists` outside Cyrus's namespace).
    /// Dovecot's answer to a CREATE of a folder that is there (as its log
    /// showed it), the words alone, and two other refusals.
    #[test]
    fn a_refused_create_tells_a_folder_already_there() {
        assert!(already_exists(
            "[ALREADYEXISTS] Mailbox already exists (0.001 + 0.000 secs)."
        ));
        assert!(already_exists("Mailbox already exists"));
        assert!(already_exists("Mailbox already exists."));
        assert!(!already_exists("[NOPERM] Permission denied"));
        assert!(!already_exists("[OVERQUOTA] Quota exceeded"));
    }

    #[test]
    fn no_module_sends_a_folder_name_past_this_one() {
        let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/src/imap");
        let mut found = Vec::new();
        // Every file of the room, those of its sub-rooms (`state/`) too.
        let mut files = Vec::new();
        let mut dirs = vec![std::path::PathBuf::from(dir)];
        while let Some(d) = dirs.pop() {
            for e in std::fs::read_dir(d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    dirs.push(p);
                } else {
                    files.push(p);
                }
            }
        }
        assert!(files.len() > 20, "{files:?}");
        for p in files {
            if p.file_name().is_some_and(|n| n == "folders.rs") {
                continue;
            }
            let text = std::fs::read_to_string(&p).unwrap();
            for (i, line) in text.lines().enumerate() {
                for call in [
                    "s.select(",
                    "s.examine(",
                    "s.create(",
                    "s.status(",
                    "s.list(",
                ] {
                    if line.contains(call) && !line.contains("folders.") {
                        found.push(format!("{}:{}: {}", p.display(), i + 1, line.trim()));
                    }
                }
            }
        }
        assert!(found.is_empty(), "direct folder commands: {found:#?}");
    }
}
