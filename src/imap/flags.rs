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
