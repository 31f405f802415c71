//! IMAP commands that change messages: moves with or without MOVE, the UID
//! sets they take, and the one encoder of strings sent to the server.

use std::collections::{HashMap, HashSet};

use super::session::{session_fatal, Caps, Folders, Session};
use super::{ImapError, Runner};

impl Runner {
    /// Moves `set` to `folder` (a configured name), creating the folder
    /// first when LIST did not show it and `folders.create` allows. The
    /// inner error is the server refusing (NO/BAD: those messages failed);
    /// the outer one a broken session (time-out, reset), which must end the
    /// batch with its decisions still journalled, not record them as failed
    /// attempts that would ask the model again.
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
    ) -> Result<(Landed, Result<(), String>), ImapError> {
        // A name no folder can have on this server is refused here, before
        // a CREATE the server would read otherwise (`Trail.` made `Trail`).
        if let Err(e) = folders.arg(folder) {
            return Ok((Landed::default(), Err(e)));
        }
        // Why the server would not create the folder, said with the move's
        // own failure: Cyrus refuses names such as `Say "hi"`, and the
        // move's "Mailbox does not exist" alone read as if creating it by
        // hand would do (an audit).
        let mut create_refused: Option<String> = None;
        if !folders.exists(folder) && !created.contains(folder) {
            if !self.w.account.folders.create {
                // The list is the one read at login: the user may have made
                // the folder since. The server says whether it is there.
                let (landed, r) = move_set(s, caps, folders, set, folder, from)?;
                return Ok((
                    landed,
                    r.map_err(|e| {
                        format!(
                            "folder {} does not exist and folders.create is false ({e})",
                            folders.describe(folder)
                        )
                    }),
                ));
            }
            match folders.create(s, folder) {
                Ok(()) => log::info!(
                    "{}: created folder {}",
                    self.name(),
                    folders.describe(folder)
                ),
                // Another client may have created it meanwhile (MOVE will
                // tell); else the server's answer is why every move there
                // fails, and the operator must see it.
                Err(e) => {
                    let why = session_fatal(e)?;
                    log::warn!(
                        "{}: CREATE {} refused: {why}",
                        self.name(),
                        folders.describe(folder),
                    );
                    if !folders.exists(folder) {
                        create_refused = Some(why);
                    }
                }
            }
            created.insert(folder.to_string());
        }
        let t = std::time::Instant::now();
        let mut r = move_set(s, caps, folders, set, folder, from)?;
        // The folder was there at login and is gone (the user deleted or
        // renamed it since): created again, as a folder missing at login
        // is, and the move tried once more. A CREATE the server refuses
        // (the folder is there: the move failed for another reason) leaves
        // the first answer standing.
        if r.1.is_err()
            && r.0.dest.is_empty()
            && self.w.account.folders.create
            && !created.contains(folder)
        {
            created.insert(folder.to_string());
            match folders.create(s, folder) {
                Ok(()) => {
                    log::warn!(
                        "{}: folder {} was gone (deleted or renamed since login): created it again",
                        self.name(),
                        folders.describe(folder)
                    );
                    r = move_set(s, caps, folders, set, folder, from)?;
                }
                Err(e) => {
                    session_fatal(e)?;
                }
            }
        }
        if let (Err(e), Some(why)) = (&mut r.1, create_refused) {
            *e = format!("{e}; the server refused to create the folder: {why}");
        }
        log::debug!(
            "{}: {} of {} message(s) to {folder:?} took {:?}",
            self.name(),
            if caps.mv { "UID MOVE" } else { "UID COPY" },
            set.len(),
            t.elapsed(),
            folder = crate::shown::quoted(folder)
        );
        if r.1.is_ok() && !caps.mv && !caps.uidplus {
            log::warn!(
                "{}: server lacks MOVE and UIDPLUS: copied to {folder:?} and marked \\Deleted in {from:?}, \
                 but not expunged (a plain EXPUNGE could remove mail the user marked)",
                self.name(), folder = crate::shown::quoted(folder), from = crate::shown::quoted(from)
            );
        }
        Ok(r)
    }
}

/// What the answer to a move said of where its messages went.
#[derive(Debug, Default)]
pub(super) struct Landed {
    /// Source UID → its UID in the folder, where the server said (COPYUID,
    /// RFC 4315).
    pub(super) dest: HashMap<u32, u32>,
    /// `dest` names every message the command moved: the server has
    /// UIDPLUS and answers moves with COPYUID (it did in this session). A
    /// UID sent and not in `dest` did not move: it was no longer there
    /// (another client expunged or moved it first).
    pub(super) exact: bool,
}

impl Caps {
    /// What a move's answer `lines` said, for the UIDs `sent`.
    fn landed(&self, lines: &[u8], sent: &[u32]) -> Landed {
        use std::sync::atomic::Ordering;
        match copy_uids(lines, sent) {
            Some(dest) => {
                if !dest.is_empty() {
                    self.copyuid_seen.store(true, Ordering::Relaxed);
                }
                let exact = self.uidplus && self.copyuid_seen.load(Ordering::Relaxed);
                Landed { dest, exact }
            }
            None => Landed::default(),
        }
    }
}

/// Moves `set` (UIDs of the selected `from`) to `folder`: `UID MOVE` where
/// the server has MOVE, else `UID COPY`, `\Deleted` and, with UIDPLUS only,
/// `UID EXPUNGE` of exactly those UIDs. Returns what the server said of
/// where they went (also of a move refused part-way), and whether it
/// refused; errors as for [`Runner::move_uids`], naming the folder as the
/// user knows it and as the server does.
pub(super) fn move_set(
    s: &mut Session,
    caps: &Caps,
    folders: &Folders,
    set: &[u32],
    folder: &str,
    from: &str,
) -> Result<(Landed, Result<(), String>), ImapError> {
    let set_s = uid_set(set);
    let to = match folders.arg(folder) {
        Ok(to) => to,
        Err(e) => return Ok((Landed::default(), Err(e))),
    };
    let named = folders.describe(folder);
    if caps.mv {
        // RFC 6851: with UIDPLUS the server names the UIDs the messages
        // got in the destination (COPYUID, untagged), which undo uses; a
        // move refused part-way names the ones it moved all the same.
        let (lines, r) = s.run_keeping(format!("UID MOVE {set_s} {to}"));
        let mut landed = caps.landed(&lines, set);
        return match r {
            Ok(_) => Ok((landed, Ok(()))),
            Err(e) => {
                let e = session_fatal(e)?;
                // RFC 5530: some of the messages were expunged (by another
                // client), which is why they are missing; only COPYUID
                // names any this move took.
                landed.exact |= e.contains("[EXPUNGEISSUED]");
                Ok((landed, Err(format!("moving to {named} failed: {e}"))))
            }
        };
    }
    let step = |r: imap::Result<()>, what: String| -> Result<Result<(), String>, ImapError> {
        match r {
            Ok(()) => Ok(Ok(())),
            Err(e) => Ok(Err(format!("{what} failed: {}", session_fatal(e)?))),
        }
    };
    // COPYUID comes in the tagged answer here, which `run` returns too.
    let landed = match s.run(format!("UID COPY {set_s} {to}")) {
        Ok((lines, _)) => caps.landed(&lines, set),
        Err(e) => {
            return Ok((
                Landed::default(),
                Err(format!("copying to {named} failed: {}", session_fatal(e)?)),
            ))
        }
    };
    crate::failpoint::hit("after-copy");
    // Only what was copied is taken out of `from`.
    let copied: Vec<u32> = if landed.exact {
        set.iter()
            .copied()
            .filter(|u| landed.dest.contains_key(u))
            .collect()
    } else {
        set.to_vec()
    };
    if copied.is_empty() {
        return Ok((landed, Ok(())));
    }
    let copied_s = uid_set(&copied);
    if let Err(e) = step(
        s.uid_store(&copied_s, "+FLAGS.SILENT (\\Deleted)")
            .map(|_| ()),
        format!(
            "marking moved messages in {from:?}",
            from = crate::shown::quoted(from)
        ),
    )? {
        return Ok((landed, Err(e)));
    }
    if caps.uidplus {
        if let Err(e) = step(
            s.uid_expunge(&copied_s).map(|_| ()),
            format!(
                "expunging moved messages from {from:?}",
                from = crate::shown::quoted(from)
            ),
        )? {
            return Ok((landed, Err(e)));
        }
    }
    Ok((landed, Ok(())))
}

/// Source UID → destination UID from the COPYUID response codes among
/// untagged response lines, for the UIDs of `sent` only. A server's ranges
/// are never expanded beyond what was sent: a code whose sets hold more
/// UIDs than were sent, or sets of different sizes, is not believed, and
/// then nothing is (`None`).
pub(super) fn copy_uids(mut lines: &[u8], sent: &[u32]) -> Option<HashMap<u32, u32>> {
    use imap_proto::types::{ResponseCode, UidSetMember};
    let size = |set: &[UidSetMember]| -> u64 {
        set.iter()
            .map(|m| match m {
                UidSetMember::Uid(_) => 1,
                UidSetMember::UidRange(r) => u64::from(r.end().saturating_sub(*r.start())) + 1,
            })
            .sum()
    };
    let expand = |set: &[UidSetMember]| -> Vec<u32> {
        set.iter()
            .flat_map(|m| match m {
                UidSetMember::Uid(u) => *u..=*u,
                UidSetMember::UidRange(r) => r.clone(),
            })
            .collect()
    };
    let sent: HashSet<u32> = sent.iter().copied().collect();
    let mut out = HashMap::new();
    let mut doubted = false;
    while !lines.is_empty() {
        match imap_proto::parser::parse_response(lines) {
            Ok((rest, resp)) => {
                let code = match resp {
                    imap_proto::Response::Data { code, .. }
                    | imap_proto::Response::Done { code, .. } => code,
                    _ => None,
                };
                if let Some(ResponseCode::CopyUid(_, src, dst)) = code {
                    let n = size(&src);
                    if n == size(&dst) && n <= sent.len() as u64 {
                        out.extend(
                            expand(&src)
                                .into_iter()
                                .zip(expand(&dst))
                                .filter(|(u, _)| sent.contains(u)),
                        );
                    } else {
                        log::warn!(
                            "imap: a COPYUID naming {n} UID(s) for {} sent was ignored",
                            sent.len()
                        );
                        doubted = true;
                    }
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
    (!doubted).then_some(out)
}

/// The longest UID set one command carries, in bytes: Dovecot refuses a
/// command line past its `imap_max_line_length` (64 KiB by default) with
/// "Too long argument". A fragmented set (every other message of a
/// folder) takes about 7 bytes a UID, so a large one goes in several
/// commands; the sets of a 100,000-message backlog's moves held to the
/// end of its pass took 3 to 34 KB each (the benchmark's corpus). Below
/// RFC 7162's advice of about 8 KB a line, the same moves took 12
/// commands instead of 4, each rewriting Dovecot's index of the folder.
pub(super) const SET_MAX: usize = 48 * 1024;

/// [`SET_MAX`], or in a debug build the failpoint `set_max=N` (tests cut
/// a few hundred UIDs into pieces).
pub(super) fn set_max() -> usize {
    crate::failpoint::number("set_max").unwrap_or(SET_MAX)
}

/// `uids` sorted, deduplicated and cut into pieces whose [`uid_set`] is at
/// most `max` bytes (a single UID is never cut), in order.
pub(super) fn uid_pieces(uids: &[u32], max: usize) -> Vec<Vec<u32>> {
    let mut v = uids.to_vec();
    v.sort_unstable();
    v.dedup();
    let mut pieces: Vec<Vec<u32>> = Vec::new();
    let mut piece: Vec<u32> = Vec::new();
    // Bytes of `piece`'s set, and where its last range began.
    let mut len = 0usize;
    let mut run_start = 0u32;
    for u in v {
        let digits = |x: u32| x.to_string().len();
        let extends = piece.last().is_some_and(|l| *l + 1 == u);
        // A run grows `a:b` to `a:c`; anything else adds `,c`.
        let grown = if extends {
            let last = *piece.last().unwrap_or(&u);
            let before = if last == run_start {
                0
            } else {
                1 + digits(last)
            };
            len - before + 1 + digits(u)
        } else if piece.is_empty() {
            digits(u)
        } else {
            len + 1 + digits(u)
        };
        if grown > max && !piece.is_empty() {
            pieces.push(std::mem::take(&mut piece));
            len = digits(u);
            run_start = u;
        } else {
            if !extends {
                run_start = u;
            }
            len = grown;
        }
        piece.push(u);
    }
    if !piece.is_empty() {
        pieces.push(piece);
    }
    pieces
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

/// A string argument of a command (RFC 3501 `astring`), the one way
/// strings reach the server: a quoted string when it is 7-bit without CR,
/// LF or NUL, else a literal sent without waiting for the server's `+`
/// (`{n+}`, RFC 7888, when the server offers LITERAL+, or LITERAL- for up
/// to 4096 bytes). A string with NUL, or one that needs a literal the
/// server does not take so, is refused (the error says why): it never
/// reaches the server to break the command line, and so the session.
pub(super) fn imap_string(s: &str, caps: &Caps) -> Result<String, String> {
    if s.bytes().any(|b| b == 0) {
        return Err("holds a NUL byte, which IMAP cannot carry".into());
    }
    if let Some(q) = quoted(s) {
        return Ok(q);
    }
    if s.len() > caps.literal_max {
        return Err(if caps.literal_max == 0 {
            "holds line breaks or 8-bit bytes, which need a literal, and the server offers \
             neither LITERAL+ nor LITERAL-"
                .into()
        } else {
            format!(
                "holds line breaks or 8-bit bytes and is longer ({} bytes) than the server \
                 takes as a literal without asking ({})",
                s.len(),
                caps.literal_max
            )
        });
    }
    Ok(format!("{{{}+}}\r\n{s}", s.len()))
}

/// `s` as an IMAP quoted string, when it can be one (7-bit, no CR, LF or
/// NUL); where a literal cannot go (inside FETCH items), the only form.
pub(super) fn quoted(s: &str) -> Option<String> {
    s.bytes()
        .all(|b| b.is_ascii() && b != 0 && b != b'\r' && b != b'\n')
        .then(|| format!("\"{}\"", s.replace('\\', "\\\\").replace('"', "\\\"")))
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;

    #[test]
    fn uid_pieces_keep_each_set_within_the_bound_and_lose_nothing() {
        // Every other UID: no runs at all.
        let sparse: Vec<u32> = (0..40_000u32).map(|i| 100_001 + 2 * i).collect();
        // Runs of three, apart.
        let runs: Vec<u32> = (0..30_000u32).map(|i| 10 * (i / 3) + i % 3 + 1).collect();
        for uids in [
            sparse,
            runs,
            (1..=50_000).collect::<Vec<u32>>(),
            vec![7],
            vec![],
        ] {
            for max in [1, 12, 100, SET_MAX] {
                let pieces = uid_pieces(&uids, max);
                for p in &pieces {
                    let set = uid_set(p);
                    assert!(
                        set.len() <= max || p.len() == 1,
                        "{} bytes over {max}",
                        set.len()
                    );
                }
                let back: Vec<u32> = pieces.concat();
                assert_eq!(back, uids, "max {max}");
            }
        }
        // A run is one piece however long; a sparse set is cut near the
        // bound, not far below it.
        assert_eq!(uid_pieces(&(1..=50_000).collect::<Vec<_>>(), 20).len(), 1);
        let sparse: Vec<u32> = (0..40_000u32).map(|i| 100_001 + 2 * i).collect();
        let pieces = uid_pieces(&sparse, SET_MAX);
        assert!(uid_set(&pieces[0]).len() > SET_MAX - 8);
        assert_eq!(pieces.len(), (40_000usize * 7).div_ceil(SET_MAX));
        // Out of order and repeated UIDs come out sorted, once.
        assert_eq!(uid_pieces(&[5, 3, 5, 4, 9], 100), [vec![3, 4, 5, 9]]);
    }

    #[test]
    fn uid_sets_compress_runs() {
        assert_eq!(uid_set(&[5, 1, 2, 3, 9, 7, 8]), "1:3,5,7:9");
        assert_eq!(uid_set(&[4]), "4");
        assert_eq!(uid_set(&[]), "");
    }

    /// A server with every capability but UTF8=ACCEPT, taking literals up
    /// to `literal_max` bytes without its `+` first.
    pub(in crate::imap) fn caps(literal_max: usize) -> Caps {
        Caps {
            idle: true,
            mv: true,
            uidplus: true,
            namespace: true,
            special_use: true,
            utf8: false,
            literal_max,
            copyuid_seen: std::sync::atomic::AtomicBool::new(false),
        }
    }

    #[test]
    fn strings_are_quoted_or_sent_as_literals_never_raw() {
        let plus = caps(usize::MAX);
        assert_eq!(imap_string("a \"b\\", &plus).unwrap(), "\"a \\\"b\\\\\"");
        assert_eq!(imap_string("", &plus).unwrap(), "\"\"");
        // CR, LF and 8-bit bytes go as literals, counted in bytes.
        assert_eq!(
            imap_string("<abc\r\n def@x>", &plus).unwrap(),
            "{13+}\r\n<abc\r\n def@x>"
        );
        assert_eq!(imap_string("Entwürfe", &plus).unwrap(), "{9+}\r\nEntwürfe");
        assert!(imap_string("a\0b", &plus).unwrap_err().contains("NUL"));
        // Without LITERAL+ (or past LITERAL-'s 4096 bytes): refused.
        assert!(imap_string("a\nb", &caps(0))
            .unwrap_err()
            .contains("LITERAL+"));
        assert!(imap_string(&"é".repeat(3000), &caps(4096)).is_err());
        assert!(imap_string("é", &caps(4096)).is_ok());
    }

    #[test]
    fn copyuid_maps_source_to_destination() {
        let lines = b"* OK [COPYUID 1700000000 3:4,9 10:12] Moved UIDs.\r\n* 2 EXPUNGE\r\n* 2 EXPUNGE\r\n* 5 EXPUNGE\r\n";
        let m = copy_uids(lines, &[3, 4, 9]).unwrap();
        assert_eq!(m, HashMap::from([(3, 10), (4, 11), (9, 12)]));
        assert_eq!(copy_uids(b"* 2 EXPUNGE\r\n", &[3]), Some(HashMap::new()));
        // Only UIDs we sent map.
        assert_eq!(copy_uids(lines, &[4, 9, 77]).unwrap().len(), 2);
        // In the tagged answer to UID COPY (Courier).
        let tagged =
            b"* 3 FETCH (FLAGS (\\Seen))\r\nA7 OK [COPYUID 42 5:6 1:2] COPY completed.\r\n";
        assert_eq!(
            copy_uids(tagged, &[5, 6]),
            Some(HashMap::from([(5, 1), (6, 2)]))
        );
    }

    /// Issue [14] item 19: a server's range is never expanded beyond the
    /// UIDs sent (this one would be 2^32 UIDs, 16 GiB, before).
    #[test]
    fn a_servers_copyuid_range_is_not_expanded_without_bound() {
        let huge = b"* OK [COPYUID 1 1:4294967295 1:4294967295] Moved.\r\n";
        assert_eq!(copy_uids(huge, &[5]), None);
        // Sets of different sizes are not believed either.
        assert_eq!(
            copy_uids(b"* OK [COPYUID 1 3:4 10] Moved.\r\n", &[3, 4]),
            None
        );
    }
}
