//! The flags of a message that also moves (`move` + `read`, say) are set
//! where it ends up, never left behind on a message whose move failed:
//!
//! * with UIDPLUS the server names each moved message's UID in the
//!   destination (COPYUID): the flags are set there, on the copy, after
//!   the move succeeded (the destination selected for it, the watched
//!   folder again after);
//! * without UIDPLUS nothing names the copy: the flags are set before the
//!   move (MOVE and COPY carry them along) and taken off again, those the
//!   message did not have before, when the move fails.
//!
//! A crash between a move and the flags of its copy leaves the copy
//! without them (the journal then records the move as done).

use std::collections::{BTreeMap, BTreeSet, HashMap};

use super::commands::uid_set;
use super::session::{session_fatal, Folders, Session};
use super::{ImapError, Runner};

/// Flags each moving UID is to get, by UID.
pub(super) type Wanted = HashMap<u32, BTreeSet<String>>;

impl Runner {
    /// Sets the `wanted` flags of `uids` (moved from `mailbox` at
    /// `uidvalidity` to `folder`) on their copies, whose UIDs `dest` holds,
    /// and selects `mailbox` again. A copy whose flags could not be set is
    /// logged and counted (the message did move); a broken session, or
    /// `mailbox` back under another UIDVALIDITY, is an error.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn flag_copies(
        &self,
        s: &mut Session,
        folders: &Folders,
        (mailbox, uidvalidity): (&str, u32),
        folder: &str,
        uids: &[u32],
        dest: &HashMap<u32, u32>,
        wanted: &Wanted,
    ) -> Result<(), ImapError> {
        let mut groups: BTreeMap<Vec<String>, Vec<u32>> = BTreeMap::new();
        let mut unnamed: Vec<u32> = Vec::new();
        for u in uids {
            let Some(flags) = wanted.get(u).filter(|f| !f.is_empty()) else {
                continue;
            };
            match dest.get(u) {
                Some(d) => groups
                    .entry(flags.iter().cloned().collect())
                    .or_default()
                    .push(*d),
                None => unnamed.push(*u),
            }
        }
        if !unnamed.is_empty() {
            self.flags_lost(
                folder,
                &unnamed,
                "the server did not name their UIDs there (COPYUID)",
            );
        }
        if groups.is_empty() {
            return Ok(());
        }
        match folders.select(s, folder) {
            Ok(_) => {
                for (flags, set) in &groups {
                    let r =
                        s.uid_store(uid_set(set), format!("+FLAGS.SILENT ({})", flags.join(" ")));
                    if let Err(e) = r {
                        let e = session_fatal(e)?;
                        self.flags_lost(
                            folder,
                            set,
                            &format!("setting {} failed: {e}", flags.join(" ")),
                        );
                    }
                }
            }
            Err(e) => {
                let e = session_fatal(e)?;
                let all: Vec<u32> = groups.values().flatten().copied().collect();
                self.flags_lost(folder, &all, &format!("SELECT failed: {e}"));
            }
        }
        let mb = folders.select(s, mailbox)?;
        if mb.uid_validity != Some(uidvalidity) {
            return Err(ImapError::Io(std::io::Error::other(format!(
                "{mailbox:?} changed UIDVALIDITY while its batch was acted on"
            ))));
        }
        Ok(())
    }

    fn flags_lost(&self, folder: &str, uids: &[u32], why: &str) {
        log::warn!(
            "{}: {} message(s) moved to {folder:?} but their flags are not set there: {why}",
            self.name(),
            uids.len()
        );
        self.count_error("imap");
    }

    /// Takes off `uids` again the `wanted` flags each did not have
    /// `before`: set ahead of a move (no UIDPLUS) that failed. A refusal is
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
