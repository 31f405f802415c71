//! What only the server can tell of an account's folders, said at each
//! sign-in as warnings in the log: the configuration is checked without
//! it (`config::validate`), and these need its folder list, its
//! separator and its special-use marks. Each was found by an audit in
//! which mail was processed twice, or went where the user would not look.

use crate::config::AccountConfig;
use crate::mailbox::namespace::inbox_upper;
use crate::mailbox::{FolderNames, ListEntry};

/// What the sign-in chose and found, as the user knows the names.
pub(super) struct Chosen<'a> {
    /// The junk folder in use.
    pub(super) junk: &'a str,
    /// Every folder the server marks `\Junk` among the user's own.
    pub(super) marked_junk: &'a [String],
    /// Every folder the server marks `\All`.
    pub(super) marked_all: &'a [String],
}

/// Logs what is wrong with `account`'s folders on this server.
pub(super) fn warn(
    account: &AccountConfig,
    names: &FolderNames,
    entries: &[ListEntry],
    c: &Chosen,
) {
    if account.folders.junk.is_none() && c.marked_junk.len() > 1 {
        log::warn!(
            "{}: {} folders are marked \\Junk ({}); spam goes to {:?}: set folders.junk to \
             choose",
            account.name,
            c.marked_junk.len(),
            c.marked_junk.join(", "),
            crate::shown::quoted(c.junk)
        );
    }
    // A `folders.junk` the server does not have, beside one it marks:
    // Exchange's spelling `Junk E-mail` where Outlook's is `Junk Email`
    // made a new folder for spam, silently (the layouts audit).
    if let Some(j) = account.folders.junk.as_deref() {
        let there = names.to_server(j);
        let exists = entries
            .iter()
            .any(|e| inbox_upper(&e.name) == inbox_upper(&there));
        if !exists && !c.marked_junk.is_empty() && !c.marked_junk.iter().any(|m| m == j) {
            log::warn!(
                "{}: folders.junk {j:?} is no folder on the server, which marks {} \\Junk: \
                 spam goes to a new {j:?} beside it; set folders.junk to {:?}, or leave it out",
                account.name,
                c.marked_junk
                    .iter()
                    .map(|m| crate::shown::quoted(m).to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                crate::shown::quoted(&c.marked_junk[0]),
                j = crate::shown::quoted(j)
            );
        }
    }
    // What the configuration could not check: the junk folder the server
    // marks, and two spellings of one folder (`Arch/Sub` and `Arch.Sub`
    // on a server whose separator is `.`). Mail moved to a watched folder
    // is processed again there (an audit: each spam recorded, counted and
    // asked about twice).
    for w in &account.folders.watch {
        let on_server = names.to_server(w);
        // Gmail's All Mail holds each message of INBOX and of every label,
        // and the user's sent mail: watched beside INBOX, each was decided
        // twice; alone, sent mail went to the model (the layouts audit).
        if c.marked_all.iter().any(|a| names.to_server(a) == on_server) {
            log::warn!(
                "{}: watched folder {w:?} is marked \\All by the server: it holds every message \
                 of the account (INBOX's, each label's, the sent mail), so mail there is \
                 processed again, and mail the user sent or filed is decided on; watch INBOX, \
                 or the folders mail arrives in",
                account.name,
                w = crate::shown::quoted(w)
            );
        }
        if account.folders.junk.is_none() && on_server == names.to_server(c.junk) {
            log::warn!(
                "{}: watched folder {w:?} is the server's junk folder: spam moved there is \
                 processed again in it; set folders.junk to another folder, or stop watching it",
                account.name,
                w = crate::shown::quoted(w)
            );
        }
        for a in &account.folders.allowed {
            if a != w && names.to_server(a) == on_server {
                log::warn!(
                    "{}: watched folder {w:?} and allowed folder {a:?} are one folder on the \
                     server ({on_server:?}): mail moved there is processed again in it",
                    account.name,
                    a = crate::shown::quoted(a),
                    on_server = crate::shown::quoted(&on_server),
                    w = crate::shown::quoted(w)
                );
            }
        }
    }
    if let Some(d) = names.delimiter().filter(|d| *d != '/') {
        let configured = account
            .folders
            .watch
            .iter()
            .chain(&account.folders.allowed)
            .chain(account.folders.junk.as_ref());
        for name in configured {
            // Levels are written with `/`; the server's own separator in
            // a name is read as a level by the server. The personal prefix
            // of a name written in the server's form (`INBOX.Lists`) is
            // meant so.
            let server = names.to_server(name);
            let rest = server.strip_prefix(names.prefix()).unwrap_or(&server);
            if server.split(d).any(str::is_empty) {
                log::warn!(
                    "{}: folder {name:?} is {server:?} on the server, whose level separator \
                     is {d:?}: a level of it is empty, so it can never be used; write levels \
                     with \"/\"",
                    account.name,
                    name = crate::shown::quoted(name),
                    server = crate::shown::quoted(&server)
                );
            } else if name.contains(d) && rest.contains(d) {
                log::warn!(
                    "{}: folder {name:?} holds {d:?}, this server's level separator: it is {:?} \
                     on the server, {} level(s) deep; write levels with \"/\" (a {d:?} cannot \
                     be part of one folder's name here)",
                    account.name,
                    crate::shown::quoted(&names.to_server(name)),
                    names.to_server(name).split(d).count(),
                    name = crate::shown::quoted(name)
                );
            }
        }
    }
}
