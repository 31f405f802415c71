//! IMAP commands that change messages: moves with or without MOVE, and the
//! UID sets they take.

use std::collections::{HashMap, HashSet};

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
    ) -> Result<Result<HashMap<u32, u32>, String>, ImapError> {
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
            // RFC 6851: with UIDPLUS the server names the UIDs the messages
            // got in the destination (COPYUID, untagged), which undo uses.
            let t = std::time::Instant::now();
            let r = s.run_command_and_read_response(format!("UID MOVE {set_s} {}", quote(folder)));
            log::debug!(
                "{}: UID MOVE of {} message(s) to {folder:?} took {:?}",
                self.name(),
                set.len(),
                t.elapsed()
            );
            return match r {
                Ok(lines) => Ok(Ok(copy_uids(&lines))),
                Err(e) => Ok(Err(format!(
                    "moving to {folder:?} failed: {}",
                    session_fatal(e)?
                ))),
            };
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
        // COPYUID came in the tagged answer, which the client keeps to
        // itself: undo finds these by Message-ID.
        Ok(Ok(HashMap::new()))
    }
}

/// Source UID → destination UID from the COPYUID response codes among
/// untagged response lines.
pub(super) fn copy_uids(mut lines: &[u8]) -> HashMap<u32, u32> {
    use imap_proto::types::{ResponseCode, UidSetMember};
    let expand = |set: &[UidSetMember]| -> Vec<u32> {
        set.iter()
            .flat_map(|m| match m {
                UidSetMember::Uid(u) => *u..=*u,
                UidSetMember::UidRange(r) => r.clone(),
            })
            .collect()
    };
    let mut out = HashMap::new();
    while !lines.is_empty() {
        match imap_proto::parser::parse_response(lines) {
            Ok((rest, resp)) => {
                if let imap_proto::Response::Data {
                    code: Some(ResponseCode::CopyUid(_, src, dst)),
                    ..
                } = resp
                {
                    out.extend(expand(&src).into_iter().zip(expand(&dst)));
                }
                lines = rest;
            }
            // A line the parser does not know: skip it.
            Err(_) => match lines.iter().position(|b| *b == b'\n') {
                Some(i) => lines = &lines[i + 1..],
                None => break,
            },
        }
    }
    out
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

/// An IMAP quoted string.
pub(super) fn quote(s: &str) -> String {
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

    #[test]
    fn copyuid_maps_source_to_destination() {
        let lines = b"* OK [COPYUID 1700000000 3:4,9 10:12] Moved UIDs.\r\n* 2 EXPUNGE\r\n* 2 EXPUNGE\r\n* 5 EXPUNGE\r\n";
        let m = copy_uids(lines);
        assert_eq!(m, HashMap::from([(3, 10), (4, 11), (9, 12)]));
        assert!(copy_uids(b"* 2 EXPUNGE\r\n").is_empty());
    }
}
