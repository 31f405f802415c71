//! Undo of a move: the message goes back to the folder it came from, with
//! the flags it had, and a correction for the learned classifier when it
//! is on.
//!
//! Undo runs on the account's own thread and session, between passes (an
//! HTTP worker asks through the account's channel and waits for the answer
//! with a deadline; see [`crate::account::Handle::refile`]). So no pass can
//! look at the folder between the move back and its record: the message is
//! recorded under the UID the server gave it, never a predicted one, and a
//! message arriving meanwhile keeps its own UID and is processed as usual.
//! The undo is journalled before the move ([`crate::store::Store::begin_undo`]):
//! a crash or a lost session between the move and its record leaves the
//! message back without a record, and the next pass finishes the undo
//! ([`Runner::finish_undos`]) before it reads the folder's new mail, so
//! the message is not sorted away again.

use std::collections::HashSet;
use std::time::Instant;

use super::by_id::search_message_id;
use super::commands::uid_set;
use super::session::{session_fatal, Caps, Folders, Session};
use super::{ImapError, Runner};
use crate::account::{RefileError as UndoError, RefileTo, Refiled, Undone};
use crate::store::UndoTarget;

/// Why a message was not put back (or, for "Move to…", not moved).
pub(super) enum NotBack {
    /// It is not where its entry says, or cannot be told apart there: moved
    /// or deleted by another client since. No retry finds it.
    Gone(String),
    /// The server refused a step, or a step failed.
    Failed(String),
}

/// Whether a NO says the folder does not exist (`[NONEXISTENT]`,
/// `[TRYCREATE]`, or the words servers use without a code).
pub(super) fn folder_missing(no: &imap::error::No) -> bool {
    let said = format!("{:?} {}", no.code, no.information).to_ascii_lowercase();
    [
        "nonexistent",
        "trycreate",
        "doesn't exist",
        "does not exist",
        "no such",
    ]
    .iter()
    .any(|w| said.contains(w))
}

/// Whether `e`, read at the UID an entry recorded, is the entry's message:
/// the same Message-ID; for a message recorded with none, none either and
/// the same sender and subject (a sender that writes no Message-ID sends
/// many such messages: the second regression audit's undo moved the next
/// one). A folder renamed and made again gives its UIDs from 1
/// again, to other messages (audits found undo and "Move to…" moving a
/// stranger's message, one with a Message-ID of its own among them). A
/// message whose fields could not be read is taken as it was before.
pub(super) fn holds_the_entrys(t: &UndoTarget, e: Option<&crate::email::Email>) -> bool {
    let Some(e) = e else {
        return true;
    };
    if t.message_id.is_empty() {
        e.message_id.is_empty() && e.from.eq_ignore_ascii_case(&t.from) && e.subject == t.subject
    } else {
        e.message_id == t.message_id
    }
}

/// Why a message recorded without a Message-ID is not at its UID.
pub(super) fn idless_gone(uid: u32, folder: &str) -> String {
    format!(
        "UID {uid} in {folder:?} holds another message now, and this one has no Message-ID to \
         look for it by: moved or deleted since",
        folder = crate::shown::quoted(folder)
    )
}

/// A server's text without its closing dot and Dovecot's timing
/// (`Mailbox doesn't exist: Archive (0.001 + 0.000 secs).`), which an
/// answer to an operator has no use for.
pub(super) fn server_words(information: &str) -> &str {
    let t = information.trim_end_matches(['.', ' ']);
    if let Some(inner) = t.strip_suffix(" secs)") {
        if let Some(i) = inner.rfind(" (") {
            let timing = &inner[i + 2..];
            if !timing.is_empty()
                && timing
                    .chars()
                    .all(|c| c.is_ascii_digit() || matches!(c, '.' | '+' | ' '))
            {
                return inner[..i].trim_end_matches(['.', ' ']);
            }
        }
    }
    t
}

impl From<String> for NotBack {
    fn from(why: String) -> NotBack {
        NotBack::Failed(why)
    }
}

impl Runner {
    /// Carries out the refile requests in hand on the session, answering
    /// each. A request whose asker gave up is dropped, untouched. A broken
    /// session answers the request at hand and ends the session (the
    /// others are answered by the caller). One carried out sets
    /// `refiled`: a message put back in a watched folder makes the server
    /// signal new mail that no pass will find, which is not the server's
    /// doing (see `schedule::Quiet`).
    pub(super) fn serve_refiles(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
    ) -> Result<(), ImapError> {
        while !self.refiles.is_empty() {
            let r = self.refiles.remove(0);
            if Instant::now() >= r.deadline {
                log::info!(
                    "{}: refile of activity {} dropped: it waited past its deadline",
                    self.name(),
                    r.entry
                );
                continue;
            }
            let done = match &r.to {
                RefileTo::Back => self
                    .undo(s, caps, folders, r.entry)
                    .map(|a| a.map(Refiled::Undone)),
                RefileTo::Folder { from, folder } => self
                    .move_to(s, caps, folders, r.entry, from, folder)
                    .map(|a| a.map(Refiled::Moved)),
                RefileTo::Peek { at, field } => self
                    .peek_header(s, caps, folders, r.entry, at, field)
                    .map(|a| a.map(Refiled::Header)),
            };
            match done {
                Ok(answer) => {
                    self.refiled = true;
                    let _ = r.reply.send(answer);
                }
                Err(e) => {
                    let what = match r.to {
                        RefileTo::Back => "undo of",
                        RefileTo::Folder { .. } => "moving",
                        RefileTo::Peek { .. } => "reading",
                    };
                    let _ = r.reply.send(Err(UndoError::Failed(format!(
                        "{}: {what} activity {}: {e}",
                        self.name(),
                        r.entry
                    ))));
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Puts the message of activity entry `id` back where it was. The outer
    /// error is a broken session; the inner one the answer for the asker.
    fn undo(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        id: i64,
    ) -> Result<Result<Undone, UndoError>, ImapError> {
        let t = match self.w.store.undo_target(id) {
            Ok(Some(t)) => t,
            Ok(None) => return Ok(Err(UndoError::Refused(format!("no activity entry {id}")))),
            Err(e) => return Ok(Err(UndoError::Failed(e.to_string()))),
        };
        let refuse = |m: &str| Ok(Err(UndoError::Refused(format!("activity {id}: {m}"))));
        if t.account != self.name() {
            return refuse("belongs to another account");
        }
        if let Some(why) = t.why_not_undoable() {
            return refuse(why);
        }
        let (Some(dest), Some(flags)) = (t.dest_folder.clone(), t.flags.clone()) else {
            unreachable!("why_not_undoable checked both");
        };
        let counted = self.counted_in(id, &dest);
        let (uid, undo_id, feats) = match self.put_back(s, caps, folders, &t, &dest, &flags)? {
            Ok(done) => done,
            // Not where the entry says: no retry finds it (409, not 502:
            // the server refused nothing; an audit's client retried).
            Err(NotBack::Gone(e)) => return refuse(&e),
            Err(NotBack::Failed(e)) => {
                return Ok(Err(UndoError::Failed(format!(
                    "{}: undo of activity {id}: {e}",
                    self.name()
                ))))
            }
        };
        let correction = self.corrected(counted, feats, &dest, &t.mailbox);
        log::info!(
            "{}: activity {id} undone: back from {dest:?} to {:?} as UID {uid}",
            self.name(),
            crate::shown::quoted(&t.mailbox),
            dest = crate::shown::quoted(&dest)
        );
        Ok(Ok(Undone {
            id,
            undo_id,
            mailbox: t.mailbox.clone(),
            uid,
            from_folder: dest,
            flags,
            correction,
        }))
    }

    /// Moves it back, records it, and restores its flags. Returns its UID
    /// in the folder it came from, the id of the undo's record, and its
    /// features (for a correction).
    #[allow(clippy::type_complexity)]
    fn put_back(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        t: &UndoTarget,
        dest: &str,
        flags: &[String],
    ) -> Result<Result<(u32, i64, Option<Vec<String>>), NotBack>, ImapError> {
        macro_rules! answer {
            ($r:expr, $what:expr) => {
                match $r {
                    Ok(v) => v,
                    Err(e) => return Ok(Err(format!("{}: {}", $what, session_fatal(e)?).into())),
                }
            };
        }
        // The folder refused (renamed or deleted by another client since):
        // no retry opens it (a regression audit got a 502 and an ERROR).
        match folders.select(s, dest) {
            Ok(_) => {}
            // Only a folder the server says is not there: a refusal for
            // another reason (in use, unavailable) may pass (the second
            // regression audit).
            Err(imap::Error::No(no)) if folder_missing(&no) => {
                return Ok(Err(NotBack::Gone(format!(
                    "{} is not there: renamed or deleted since (the server: {})",
                    folders.describe(dest),
                    server_words(&no.information)
                ))))
            }
            Err(e) => {
                let e = session_fatal(e)?;
                return Ok(Err(format!("SELECT {}: {e}", folders.describe(dest)).into()));
            }
        }
        // Where the server said it went; else (no COPYUID), or when that
        // UID holds another message now (the folder was renamed and made
        // again since: its UIDs start over, and an audit's undo moved a
        // stranger's message back under this entry's name), found by its
        // Message-ID.
        let mut by_id = false;
        let mut uid = match t.dest_uid {
            Some(u) => u,
            None => {
                by_id = true;
                match self.find_by_message_id(s, caps, t, dest)? {
                    Ok(u) => u,
                    Err(why) => return Ok(Err(why)),
                }
            }
        };
        let feats = loop {
            // Still there? (The user may have moved or deleted it since.)
            let fetched = answer!(
                s.uid_fetch(
                    uid.to_string(),
                    format!(
                        "(UID RFC822.SIZE INTERNALDATE {})",
                        super::train::learn_items()
                    )
                ),
                "reading it"
            );
            let Some(f) = fetched.iter().find(|f| f.uid == Some(uid)) else {
                return Ok(Err(NotBack::Gone(format!(
                    "UID {uid} is no longer in {dest:?}: moved or deleted since",
                    dest = crate::shown::quoted(dest)
                ))));
            };
            let email = f.header().map(|h| super::learn_email(h, f.text()));
            let held = email.as_ref().map_or("", |e| e.message_id.as_str());
            if !by_id && !holds_the_entrys(t, email.as_ref()) {
                if t.message_id.is_empty() {
                    return Ok(Err(NotBack::Gone(idless_gone(uid, dest))));
                }
                log::info!(
                    "{}: activity {}: UID {uid} in {dest:?} now holds another message \
                     ({held:?}); looking for {} by its Message-ID",
                    self.name(),
                    t.id,
                    t.message_id,
                    dest = crate::shown::quoted(dest)
                );
                by_id = true;
                uid = match self.find_by_message_id(s, caps, t, dest)? {
                    Ok(u) => u,
                    Err(why) => return Ok(Err(why)),
                };
                continue;
            }
            // What MOVE and COPY keep of it: an interrupted undo tells
            // it from a look-alike by these (see `finish_undos`).
            let stamp = f.size.zip(f.internal_date().map(|d| d.timestamp()));
            break (email.as_ref().map(crate::learn::features), stamp);
        };
        let (feats, stamp) = feats;
        // Where UIDs will be when the message is back: a look-alike that
        // came before (while the account was paused, say) is below it (a
        // regression audit's took the message's place).
        let uid_next = match folders.status_uid_next(s, &t.mailbox) {
            Ok(n) => n,
            Err(e) => {
                session_fatal(e)?;
                None
            }
        };
        if let Err(e) = self.w.store.begin_undo(t, stamp, uid_next) {
            return Ok(Err(format!("journalling the undo: {e}").into()));
        }
        crate::failpoint::hit("undo-before-move");
        let mut created = HashSet::new();
        let moved =
            match self.move_uids(s, caps, folders, &mut created, &[uid], &t.mailbox, dest)? {
                (landed, Ok(())) if landed.exact && !landed.dest.contains_key(&uid) => {
                    let _ = self.w.store.end_undo(t.id);
                    return Ok(Err(NotBack::Gone(format!(
                        "the message left {dest:?} before it could be moved back \
                         (another client moved or deleted it)",
                        dest = crate::shown::quoted(dest)
                    ))));
                }
                (landed, Ok(())) => landed.dest,
                (_, Err(e)) => {
                    // Refused: nothing moved, nothing to finish.
                    let _ = self.w.store.end_undo(t.id);
                    return Ok(Err(format!(
                        "moving back to {:?}: {e}",
                        crate::shown::quoted(&t.mailbox)
                    )
                    .into()));
                }
            };
        crate::failpoint::hit("undo-after-move");
        let mb = answer!(
            folders.select(s, &t.mailbox),
            format!("SELECT {}", folders.describe(&t.mailbox))
        );
        let uidvalidity = mb.uid_validity.unwrap_or(t.uidvalidity);
        let new_uid = match moved.get(&uid) {
            Some(u) => *u,
            // No COPYUID: the newest message with its Message-ID.
            None => {
                let query = match search_message_id(&t.message_id, caps) {
                    Ok(q) => q,
                    Err(e) => {
                        return Ok(Err(format!("moved back, but cannot find it: {e}").into()))
                    }
                };
                let found = answer!(query.run(s), "searching by Message-ID");
                match found.into_iter().max() {
                    Some(u) => u,
                    None => {
                        return Ok(Err(format!(
                            "moved back, but not found in {:?}",
                            crate::shown::quoted(&t.mailbox)
                        )
                        .into()))
                    }
                }
            }
        };
        let row = match self.w.store.record_undo(t, uidvalidity, new_uid) {
            Ok(row) => row,
            Err(e) => return Ok(Err(format!("moved back as UID {new_uid}, but {e}").into())),
        };
        if let Err(e) = flags_back(s, new_uid, flags) {
            return Ok(Err(format!("restoring flags: {}", session_fatal(e)?).into()));
        }
        Ok(Ok((new_uid, row, feats)))
    }

    /// The UID of `t`'s message in `dest` (selected), found by its
    /// Message-ID: refused when none or several hold it.
    fn find_by_message_id(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        t: &UndoTarget,
        dest: &str,
    ) -> Result<Result<u32, NotBack>, ImapError> {
        let query = match search_message_id(&t.message_id, caps) {
            Ok(q) => q,
            Err(e) => {
                return Ok(Err(format!(
                    "its UID in {dest:?} is unknown and {e}",
                    dest = crate::shown::quoted(dest)
                )
                .into()))
            }
        };
        let found = match query.run(s) {
            Ok(v) => v,
            Err(e) => {
                return Ok(Err(format!(
                    "searching by Message-ID: {}",
                    session_fatal(e)?
                )
                .into()))
            }
        };
        // Two with this Message-ID (a monitor's alerts, say): which is this
        // entry's cannot be told, and the other's would be put back under
        // this entry's name (an audit). Refused.
        Ok(match found.len() {
            0 => Err(NotBack::Gone(format!(
                "no message {} in {dest:?}: moved or deleted since",
                t.message_id,
                dest = crate::shown::quoted(dest)
            ))),
            1 => Ok(found[0]),
            n => Err(NotBack::Gone(format!(
                "{n} messages in {dest:?} have the Message-ID {} and the server did not say \
                 which UID this one got, so undo cannot tell which is this one; move it back \
                 by hand",
                t.message_id,
                dest = crate::shown::quoted(dest)
            ))),
        })
    }

    /// Finishes the undos journalled and not recorded (the process or the
    /// session ended between the move and its record): a message back in
    /// its folder past the watermark is recorded as put back, with its
    /// flags restored; one still where it was moved to was never moved
    /// back, and the undo is dropped (the entry can be undone again).
    pub(super) fn finish_undos(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
    ) -> Result<(), ImapError> {
        let pending = match self.w.store.pending_undos(self.name()) {
            Ok(p) => p,
            Err(e) => {
                log::warn!("{}: undos to finish: {e}", self.name());
                return Ok(());
            }
        };
        for p in pending {
            let (id, stamp) = (p.entry, p.stamp);
            // Past the watermark, and at or past the folder's UIDNEXT
            // before the move back, when it was journalled.
            let seen_before = p.uid_next.map_or(0, |n| n.saturating_sub(1));
            let t = match self.w.store.undo_target(id) {
                Ok(Some(t)) if t.undone_at.is_none() => t,
                _ => {
                    let _ = self.w.store.end_undo(id);
                    continue;
                }
            };
            let Some(mb) = self.select_for_undo(s, folders, &t)? else {
                continue;
            };
            let uidvalidity = mb.uid_validity.unwrap_or(t.uidvalidity);
            let seen = match self.w.store.folder_state(self.name(), &t.mailbox) {
                Ok(Some((v, last))) if v == uidvalidity => last.max(seen_before),
                _ => 0,
            };
            // By its Message-ID; a message with none (or one no search can
            // carry) by reading what came since the watermark: such an
            // undo was dropped, and the pass sorted the message away again
            // (an audit, on Cyrus and Courier).
            let found = match search_message_id(&t.message_id, caps) {
                Ok(query) => query
                    .run(s)
                    .map(|found| found.into_iter().filter(|u| *u > seen).collect()),
                Err(_) => newest_holding(s, &t, seen),
            };
            let found = match found {
                Ok(found) => the_one_back(s, found, stamp),
                Err(e) => Err(e),
            };
            let back = match found {
                Ok((back, None)) => back,
                Ok((back, Some(among))) => {
                    log::warn!(
                        "{}: undo of activity {id}: UIDs {among} of {:?} each hold the message \
                         (a look-alike came meanwhile) and its size and date tell none apart: \
                         the first, UID {}, is taken for the one put back",
                        self.name(),
                        crate::shown::quoted(&t.mailbox),
                        back.unwrap_or_default()
                    );
                    back
                }
                Err(e) => {
                    log::warn!(
                        "{}: undo of activity {id}: {}",
                        self.name(),
                        session_fatal(e)?
                    );
                    continue;
                }
            };
            let Some(uid) = back else {
                log::info!(
                    "{}: undo of activity {id} was not carried out (the message is not back \
                     in {:?}); it can be asked again",
                    self.name(),
                    crate::shown::quoted(&t.mailbox)
                );
                let _ = self.w.store.end_undo(id);
                continue;
            };
            // Still where it was moved to, the message was not moved back
            // (MOVE is one command), unless, without MOVE, the copy back
            // was made and the original not yet taken out: only a copy of
            // it, byte for byte, proves that. A look-alike that came
            // meanwhile (the same sender and subject, or Message-ID) was
            // taken for it, and the original expunged (a regression
            // audit: the message was lost).
            let left = self.original_left(s, folders, &t)?;
            if let Some(original) = &left {
                let copy = !caps.mv && self.is_copy_of(s, folders, &t, uid, original)?;
                if !copy {
                    log::info!(
                        "{}: undo of activity {id} was not carried out (the message is still in \
                         {:?}; UID {uid} of {:?} is another message); it can be asked again",
                        self.name(),
                        crate::shown::quoted(&original.folder),
                        crate::shown::quoted(&t.mailbox)
                    );
                    let _ = self.w.store.end_undo(id);
                    continue;
                }
            }
            if self.select_for_undo(s, folders, &t)?.is_none() {
                continue;
            }
            if let Err(e) = self.w.store.record_undo(&t, uidvalidity, uid) {
                log::warn!("{}: undo of activity {id}: {e}", self.name());
                continue;
            }
            if let Err(e) = flags_back(s, uid, t.flags.as_deref().unwrap_or_default()) {
                log::warn!(
                    "{}: undo of activity {id}: restoring flags: {}",
                    self.name(),
                    session_fatal(e)?
                );
            }
            log::info!(
                "{}: activity {id} undone (finished after an interruption): back in {:?} as UID {uid}",
                self.name(),
                crate::shown::quoted(&t.mailbox)
            );
            if let Some(original) = left {
                self.take_out_original(s, caps, folders, &t, &original)?;
            }
        }
        Ok(())
    }

    /// Selects the folder `t`'s message came from, for finishing its undo;
    /// `None` (logged) when the server refuses it.
    fn select_for_undo(
        &mut self,
        s: &mut Session,
        folders: &Folders,
        t: &UndoTarget,
    ) -> Result<Option<imap::types::Mailbox>, ImapError> {
        match folders.select(s, &t.mailbox) {
            Ok(mb) => Ok(Some(mb)),
            Err(e) => {
                log::warn!(
                    "{}: undo of activity {}: SELECT {}: {}",
                    self.name(),
                    t.id,
                    folders.describe(&t.mailbox),
                    session_fatal(e)?
                );
                Ok(None)
            }
        }
    }

    /// The entry's message still at the UID it was moved to, with its size,
    /// date and content digest; `None` when it is not there (moved back,
    /// or moved or deleted by the user), when the entry knows no such UID,
    /// or when the folder cannot be read.
    fn original_left(
        &mut self,
        s: &mut Session,
        folders: &Folders,
        t: &UndoTarget,
    ) -> Result<Option<Original>, ImapError> {
        let (Some(dest), Some(uid)) = (t.dest_folder.as_deref(), t.dest_uid) else {
            return Ok(None);
        };
        let name = self.name().to_string();
        let left = |e: &dyn std::fmt::Display| {
            log::warn!(
                "{name}: undo of activity {}: looking for the original in {dest:?}: {e}",
                t.id,
                dest = crate::shown::quoted(dest)
            )
        };
        if let Err(e) = folders.select(s, dest) {
            left(&session_fatal(e)?);
            return Ok(None);
        }
        let query = format!(
            "(UID RFC822.SIZE INTERNALDATE BODY.PEEK[HEADER.FIELDS ({})]<0.{}>)",
            crate::learn::HEADER_FIELDS.join(" "),
            super::headers::HEADER_CAP
        );
        let fetched = match s.uid_fetch(uid.to_string(), &query) {
            Ok(f) => f,
            Err(e) => {
                left(&session_fatal(e)?);
                return Ok(None);
            }
        };
        let Some(f) = fetched.iter().find(|f| f.uid == Some(uid)) else {
            return Ok(None);
        };
        let (Some(header), Some(size), Some(date)) = (f.header(), f.size, f.internal_date()) else {
            return Ok(None);
        };
        if !holds_the_entrys(t, Some(&super::learn_email(header, None))) {
            return Ok(None);
        }
        let digest = super::acting::content_digests(s, &[uid], size)?.remove(&uid);
        Ok(Some(Original {
            folder: dest.to_string(),
            uid,
            stamp: (size, date.timestamp()),
            digest,
        }))
    }

    /// Whether `uid` of the entry's folder is a copy of `original`: COPY
    /// keeps size and INTERNALDATE, and the content is the same, byte for
    /// byte (the header alone past 4 MiB, as a replayed move knows one).
    fn is_copy_of(
        &mut self,
        s: &mut Session,
        folders: &Folders,
        t: &UndoTarget,
        uid: u32,
        original: &Original,
    ) -> Result<bool, ImapError> {
        let Some(digest) = original.digest else {
            return Ok(false);
        };
        if let Err(e) = folders.select(s, &t.mailbox) {
            session_fatal(e)?;
            return Ok(false);
        }
        let fetched = match s.uid_fetch(uid.to_string(), "(UID RFC822.SIZE INTERNALDATE)") {
            Ok(f) => f,
            Err(e) => {
                session_fatal(e)?;
                return Ok(false);
            }
        };
        let stamp = fetched
            .iter()
            .find(|f| f.uid == Some(uid))
            .and_then(|f| Some((f.size?, f.internal_date()?.timestamp())));
        if stamp != Some(original.stamp) {
            return Ok(false);
        }
        let theirs = super::acting::content_digests(s, &[uid], original.stamp.0)?;
        Ok(theirs.get(&uid) == Some(&digest))
    }

    /// After an undo finished by [`finish_undos`](Self::finish_undos): on a
    /// server without MOVE the undo was a COPY back, then `\Deleted` and
    /// `UID EXPUNGE` of the original, and an interruption after the COPY
    /// left the message in both folders (an audit, on Courier). The
    /// original, proven copied back ([`is_copy_of`](Self::is_copy_of)), is
    /// taken out as the move back would have.
    fn take_out_original(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        t: &UndoTarget,
        original: &Original,
    ) -> Result<(), ImapError> {
        let dest = &original.folder;
        if let Err(e) = folders.select(s, dest) {
            let e = session_fatal(e)?;
            log::warn!(
                "{}: undo of activity {}: the original left in {dest:?}: {e}",
                self.name(),
                t.id,
                dest = crate::shown::quoted(dest)
            );
            return Ok(());
        }
        match self.take_out(s, caps, dest, &[original.uid])? {
            Ok(()) => log::info!(
                "{}: activity {}: the original left in {dest:?} by the interrupted undo \
                 (UID {}) taken out",
                self.name(),
                t.id,
                original.uid,
                dest = crate::shown::quoted(dest)
            ),
            Err(e) => log::warn!(
                "{}: undo of activity {}: the original left in {dest:?}: {e}",
                self.name(),
                t.id,
                dest = crate::shown::quoted(dest)
            ),
        }
        Ok(())
    }
}

/// An interrupted undo's message still where it was moved to.
struct Original {
    folder: String,
    uid: u32,
    /// RFC822.SIZE and INTERNALDATE (seconds), which COPY keeps.
    stamp: (u32, i64),
    /// Its content's SHA-256 (see `acting::content_digests`); `None` when
    /// it could not be read: then nothing proves a copy.
    digest: Option<[u8; 32]>,
}

/// The most messages past the watermark an interrupted undo reads the
/// header of, the newest first, to find a message it cannot search for.
const BACK_SCAN_MAX: usize = 2_000;

/// The messages past `seen` in the selected folder that hold `t`'s
/// message ([`holds_the_entrys`], its header read), of the newest
/// [`BACK_SCAN_MAX`]: how an interrupted undo of a message with no
/// Message-ID finds it back.
fn newest_holding(s: &mut Session, t: &UndoTarget, seen: u32) -> imap::Result<Vec<u32>> {
    // `n:*` names the highest UID even when it is below n.
    let mut since: Vec<u32> = s
        .uid_search(format!("UID {}:*", seen.saturating_add(1)))?
        .into_iter()
        .filter(|u| *u > seen)
        .collect();
    since.sort_unstable();
    let newest = &since[since.len().saturating_sub(BACK_SCAN_MAX)..];
    let query = format!(
        "(UID BODY.PEEK[HEADER.FIELDS ({})]<0.{}>)",
        crate::learn::HEADER_FIELDS.join(" "),
        super::headers::HEADER_CAP
    );
    let mut holding = Vec::new();
    for piece in newest.chunks(200) {
        let fetched = s.uid_fetch(uid_set(piece), &query)?;
        holding.extend(fetched.iter().filter_map(|f| {
            let e = super::learn_email(f.header()?, None);
            holds_the_entrys(t, Some(&e)).then_some(f.uid?)
        }));
    }
    Ok(holding)
}

/// Of the messages `found` past the watermark that hold an interrupted
/// undo's message, the one put back: the only one, or, of several (a
/// look-alike with its Message-ID, or its sender and subject, came
/// meanwhile), the only one with the `stamp` the message had before its
/// move back (MOVE and COPY keep RFC822.SIZE and INTERNALDATE). When that
/// does not tell (no stamp: an undo journalled before stamps were; the
/// same size and date; a server that kept no date), the first to come of
/// those left (the lowest UID: the move back came right after the
/// journal, and a look-alike after the process stopped), with the UIDs it
/// chose among. `None` when none is there.
fn the_one_back(
    s: &mut Session,
    mut found: Vec<u32>,
    stamp: Option<(u32, i64)>,
) -> imap::Result<(Option<u32>, Option<String>)> {
    found.sort_unstable();
    found.dedup();
    if found.len() <= 1 {
        return Ok((found.first().copied(), None));
    }
    let mut alike: Vec<u32> = match stamp {
        Some(stamp) => s
            .uid_fetch(uid_set(&found), "(UID RFC822.SIZE INTERNALDATE)")?
            .iter()
            .filter(|f| f.size.zip(f.internal_date().map(|d| d.timestamp())) == Some(stamp))
            .filter_map(|f| f.uid)
            .collect(),
        None => Vec::new(),
    };
    alike.sort_unstable();
    match alike[..] {
        [one] => Ok((Some(one), None)),
        [] => Ok((Some(found[0]), Some(list(&found)))),
        _ => Ok((Some(alike[0]), Some(list(&alike)))),
    }
}

fn list(uids: &[u32]) -> String {
    uids.iter()
        .map(u32::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Sets exactly the flags the message had before it was moved (what undo
/// restores), on the selected folder's `uid`.
fn flags_back(s: &mut Session, uid: u32, flags: &[String]) -> imap::Result<()> {
    s.uid_store(
        uid_set(&[uid]),
        format!("FLAGS.SILENT ({})", flags.join(" ")),
    )
    .map(drop)
}

#[cfg(test)]
mod tests {
    use super::server_words;

    #[test]
    fn a_servers_words_lose_dovecots_timing() {
        assert_eq!(
            server_words("Mailbox doesn't exist: Archive (0.001 + 0.000 secs)."),
            "Mailbox doesn't exist: Archive"
        );
        assert_eq!(server_words("No such folder."), "No such folder");
        assert_eq!(server_words("in use (by you)"), "in use (by you)");
        assert_eq!(server_words("odd ( secs)"), "odd ( secs)");
    }
}
