//! The flags of a message that also moves (`move` + `read`, say) are set
//! before the move, which carries them along (MOVE and COPY keep a
//! message's flags), and taken off again, those the message did not have
//! before, when the move fails: a message ends with its flags where it
//! ends up, and one whose move failed is not left flagged in the watched
//! folder.
//!
//! Set after the move instead, on the copy the server names (COPYUID), a
//! crash between the move and the flags left the copy without them for
//! good: the journal took the message for moved, and nothing named its
//! copy any more (`tests/crash_rounds.rs` caught a newsletter moved but
//! never marked read). Set first, a crash at any point is carried out
//! again from the journal: the flags again (harmless), then the move. Only
//! a crash between a move that failed and the flags coming off leaves them
//! on the message in the watched folder; the next pass tries the move
//! again, and should it fail again, the flags stay (the message's flags
//! before are not journalled).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::commands::uid_set;
use super::session::{session_fatal, Session};
use super::{ImapError, Runner};

/// Flags each moving UID is to get, by UID.
pub(super) type Wanted = HashMap<u32, BTreeSet<String>>;

impl Runner {
    /// Takes off `uids` again the `wanted` flags each did not have
    /// `before`: set ahead of a move that failed. A refusal is
    /// logged; a broken session is an error.
    pub(super) fn unflag(
        &self,
        s: &mut Session,
        uids: &[u32],
        wanted: &Wanted,
        before: &HashMap<u32, Vec<String>>,
    ) -> Result<(), ImapError> {
        let mut groups: BTreeMap<Vec<String>, Vec<u32>> = BTreeMap::new();
        for u in uids {
            let had: BTreeSet<String> = before
                .get(u)
                .map(|f| f.iter().map(|x| x.to_ascii_lowercase()).collect())
                .unwrap_or_default();
            let added: Vec<String> = wanted
                .get(u)
                .into_iter()
                .flatten()
                .filter(|f| !had.contains(&f.to_ascii_lowercase()))
                .cloned()
                .collect();
            if !added.is_empty() {
                groups.entry(added).or_default().push(*u);
            }
        }
        for (flags, set) in groups {
            if let Err(e) = s.uid_store(
                uid_set(&set),
                format!("-FLAGS.SILENT ({})", flags.join(" ")),
            ) {
                let e = session_fatal(e)?;
                log::warn!(
                    "{}: the move of {} message(s) failed, and taking {} off them again failed too: {e}",
                    self.name(),
                    set.len(),
                    flags.join(" ")
                );
                self.count_error("imap");
            }
        }
        Ok(())
    }
}

/// Which flags the selected folder keeps, as its `SELECT` said: a folder
/// selected `[READ-ONLY]` keeps none, and one whose `PERMANENTFLAGS` list
/// neither a flag nor `\*` keeps that flag for the session only (RFC 3501
/// §7.1). Dovecot answers a `STORE` of either with OK: the flags were
/// recorded as set, counted and announced, and gone at the next session
/// (an audit).
#[derive(Clone, Debug, PartialEq)]
pub(super) struct Keeps {
    read_only: bool,
    /// The flags kept, as the server spells them; `None` for every one (no `PERMANENTFLAGS`
    /// sent, or `\*` among them).
    only: Option<Vec<String>>,
}

impl Keeps {
    pub(super) fn of(mb: &imap::types::Mailbox) -> Keeps {
        use imap::types::Flag;
        let every = !mb.permanent_flags_listed || mb.permanent_flags.contains(&Flag::MayCreate);
        Keeps {
            read_only: mb.is_read_only,
            only: (!every).then(|| mb.permanent_flags.iter().map(|f| f.to_string()).collect()),
        }
    }

    /// Why `folder` (as messages name it) would not keep `flags`; `None`
    /// when it keeps them all.
    pub(super) fn refusal(&self, folder: &str, flags: &[String]) -> Option<String> {
        if self.read_only {
            return Some(format!(
                "{folder} is read-only to this account (its SELECT said READ-ONLY): \
                 the server keeps no flag set there"
            ));
        }
        let only = self.only.as_ref()?;
        let lost: Vec<&str> = flags
            .iter()
            .filter(|f| !only.iter().any(|k| k.eq_ignore_ascii_case(f)))
            .map(String::as_str)
            .collect();
        if lost.is_empty() {
            return None;
        }
        // A server may list up to 10,000 keywords, each long: the error
        // goes into rows, logs and webhooks, so 400 characters of them are
        // named and the rest counted. (Atoms: nothing to escape.)
        let all = only.join(" ");
        let listed = match (only.len(), all.char_indices().nth(400)) {
            (0, _) => "none".to_string(),
            (_, None) => all,
            (n, Some((cut, _))) => format!("{}… ({n} in all)", &all[..cut]),
        };
        Some(format!(
            "the server keeps no {} in {folder} beyond this session \
             (its PERMANENTFLAGS: {listed})",
            lost.join(" ")
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::Keeps;
    use imap::types::{Flag, Mailbox};

    fn selected(listed: Option<Vec<Flag<'static>>>, read_only: bool) -> Keeps {
        let mut mb = Mailbox::default();
        mb.permanent_flags_listed = listed.is_some();
        mb.permanent_flags = listed.unwrap_or_default();
        mb.is_read_only = read_only;
        Keeps::of(&mb)
    }

    #[test]
    fn a_folder_keeps_what_its_permanentflags_list() {
        let seen = vec!["\\Seen".to_string()];
        let both = vec!["\\Seen".to_string(), "\\Flagged".to_string()];
        // No list: every flag is kept (RFC 3501 §7.1).
        assert_eq!(selected(None, false).refusal("\"INBOX\"", &both), None);
        // `\*`: any keyword, and (read leniently) any flag.
        let any = selected(Some(vec![Flag::MayCreate]), false);
        assert_eq!(any.refusal("\"INBOX\"", &both), None);
        // Listed, in any case.
        let only_seen = selected(Some(vec![Flag::Custom("\\SEEN".into())]), false);
        assert_eq!(only_seen.refusal("\"INBOX\"", &seen), None);
        assert_eq!(
            only_seen.refusal("\"INBOX\"", &both).as_deref(),
            Some(
                "the server keeps no \\Flagged in \"INBOX\" beyond this session \
                 (its PERMANENTFLAGS: \\SEEN)"
            )
        );
        // A long list is cut, whatever its keywords' lengths.
        let many: Vec<Flag<'static>> = (0..200)
            .map(|i| Flag::Custom(format!("$k{i}{}", "x".repeat(100)).into()))
            .collect();
        let cut = selected(Some(many), false)
            .refusal("\"INBOX\"", &seen)
            .unwrap();
        assert!(cut.contains("(200 in all)") && cut.len() < 700, "{cut}");
        // An empty list keeps nothing.
        let none = selected(Some(Vec::new()), false);
        assert!(none
            .refusal("\"INBOX\"", &seen)
            .unwrap()
            .ends_with("(its PERMANENTFLAGS: none)"));
        // Read-only keeps nothing, whatever the list.
        let ro = selected(None, true);
        assert!(ro
            .refusal("\"INBOX\"", &seen)
            .unwrap()
            .contains("read-only"));
    }
}
