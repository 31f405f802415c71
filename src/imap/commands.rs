//! IMAP commands that change messages: moves with or without MOVE, and the
//! UID sets they take.

use std::collections::HashSet;

use super::session::{session_fatal, Caps, Folders, Session};
use super::{ImapError, Runner};

impl Runner {
    /// Moves `set` to `folder`. The inner error is the server refusing
    /// (NO/BAD: those messages failed); the outer one a broken session
    /// (time-out, reset), which must end the batch with its decisions still
    /// journalled, not record them as failed attempts that would ask the
    /// model again.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn move_uids(
        &self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        created: &mut HashSet<String>,
        set: &[u32],
        folder: &str,
        from: &str,
    ) -> Result<Result<(), String>, ImapError> {
        if !folders.existing.contains(folder) && !created.contains(folder) {
            if !self.w.account.folders.create {
                return Ok(Err(format!(
                    "folder {folder:?} does not exist and folders.create is false"
                )));
            }
            match s.create(folder) {
                Ok(()) => log::info!("{}: created folder {folder:?}", self.name()),
                // Another client may have created it meanwhile; MOVE will tell.
                Err(e) => log::debug!("{}: CREATE {folder:?}: {e}", self.name()),
            }
            created.insert(folder.to_string());
        }
        let set_s = uid_set(set);
        let step = |r: imap::Result<()>, what: String| -> Result<Result<(), String>, ImapError> {
            match r {
                Ok(()) => Ok(Ok(())),
                Err(e) => Ok(Err(format!("{what} failed: {}", session_fatal(e)?))),
            }
        };
        if caps.mv {
            return step(s.uid_mv(&set_s, folder), format!("moving to {folder:?}"));
        }
        if let Err(e) = step(
            s.run_command_and_check_ok(format!("UID COPY {set_s} {}", quote(folder))),
            format!("copying to {folder:?}"),
        )? {
            return Ok(Err(e));
        }
        if let Err(e) = step(
            s.uid_store(&set_s, "+FLAGS.SILENT (\\Deleted)").map(|_| ()),
            format!("marking moved messages in {from:?}"),
        )? {
            return Ok(Err(e));
        }
        if caps.uidplus {
            if let Err(e) = step(
                s.uid_expunge(&set_s).map(|_| ()),
                format!("expunging moved messages from {from:?}"),
            )? {
                return Ok(Err(e));
            }
        } else {
            log::warn!(
                "{}: server lacks MOVE and UIDPLUS: copied to {folder:?} and marked \\Deleted in {from:?}, \
                 but not expunged (a plain EXPUNGE could remove mail the user marked)",
                self.name()
            );
        }
        Ok(Ok(()))
    }
}

/// `1:3,5,7:9` from sorted or unsorted UIDs.
pub fn uid_set(uids: &[u32]) -> String {
    let mut v = uids.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut out = String::new();
    let mut i = 0;
    while i < v.len() {
        let start = v[i];
        let mut end = start;
        while i + 1 < v.len() && v[i + 1] == end + 1 {
            i += 1;
            end = v[i];
        }
        if !out.is_empty() {
            out.push(',');
        }
        if start == end {
            out.push_str(&start.to_string());
        } else {
            out.push_str(&format!("{start}:{end}"));
        }
        i += 1;
    }
    out
}

fn quote(s: &str) -> String {
    format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\""))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uid_sets_compress_runs() {
        assert_eq!(uid_set(&[5, 1, 2, 3, 9, 7, 8]), "1:3,5,7:9");
        assert_eq!(uid_set(&[4]), "4");
        assert_eq!(uid_set(&[]), "");
        assert_eq!(quote("a \"b\\"), "\"a \\\"b\\\\\"");
    }
}
