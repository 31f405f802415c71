//! "Move to…" from the dashboard: a person puts a message mailproc decided
//! about into another folder. It is a correction: recorded on the activity
//! entry (`corrected_to`, where undo finds it from then on), learned by the
//! learned classifier when it is on, and shown to the model as an example.
//! Also the header read of "Make a rule from this".
//!
//! Like undo, both run on the account's own thread and session, between
//! passes (an HTTP worker asks through the account's channel, see
//! [`crate::account::Handle::refile`]): no second connection, no second
//! login, and no pass looks at the folder between the move and its record.

use super::by_id::search_message_id;
use super::session::{session_fatal, Caps, Folders, Session};
use super::undo::{folder_missing, holds_the_entrys, idless_gone, server_words, NotBack};
use super::{ImapError, Runner};
use crate::account::{Location, Moved, RefileError};
use crate::store::UndoTarget;

impl Runner {
    /// Moves the message of activity entry `id`, now at `from`, to `to` (a
    /// folder the account may move to; the service checked). The outer
    /// error is a broken session; the inner one the answer for the asker.
    pub(super) fn move_to(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        id: i64,
        from: &Location,
        to: &str,
    ) -> Result<Result<Moved, RefileError>, ImapError> {
        let t = match self.target(id) {
            Ok(t) => t,
            Err(e) => return Ok(Err(e)),
        };
        if from.folder == to {
            return Ok(Err(RefileError::Refused(format!(
                "activity {id}: the message is in {to:?} already",
                to = crate::shown::quoted(to)
            ))));
        }
        let counted = self.counted_in(id, &from.folder);
        let (uid, feats) = match self.carry(s, caps, folders, &t, from, to)? {
            Ok(done) => done,
            // Not where its entry says: no retry finds it (a 409, as for
            // undo; the regression audit).
            Err(NotBack::Gone(e)) => {
                return Ok(Err(RefileError::Refused(format!("activity {id}: {e}"))))
            }
            Err(NotBack::Failed(e)) => {
                return Ok(Err(RefileError::Failed(format!(
                    "{}: moving activity {id}: {e}",
                    self.name()
                ))))
            }
        };
        let correction = self.corrected(counted, feats, &from.folder, to);
        log::info!(
            "{}: activity {id} moved by a person from {:?} to {to:?} (UID {uid})",
            self.name(),
            crate::shown::quoted(&from.folder),
            to = crate::shown::quoted(to)
        );
        Ok(Ok(Moved {
            id,
            from_folder: from.folder.clone(),
            folder: to.to_string(),
            uid,
            correction,
        }))
    }

    /// One header field (`List-Id`) of the message of entry `id`, now at
    /// `at`, read with `EXAMINE` and `BODY.PEEK` (nothing changes): what
    /// "Make a rule from this" prefills beyond the recorded sender.
    pub(super) fn peek_header(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        id: i64,
        at: &Location,
        field: &str,
    ) -> Result<Result<Option<String>, RefileError>, ImapError> {
        let t = match self.target(id) {
            Ok(t) => t,
            Err(e) => return Ok(Err(e)),
        };
        let Some(name) = super::commands::quoted(field) else {
            return Ok(Err(RefileError::Refused(format!(
                "header {field:?} cannot be fetched by name"
            ))));
        };
        let failed = |e: String| Ok(Err(RefileError::Failed(format!("{}: {e}", self.name()))));
        let mb = match folders.examine(s, &at.folder) {
            Ok(mb) => mb,
            Err(e) => {
                return failed(format!(
                    "EXAMINE {}: {}",
                    folders.describe(&at.folder),
                    session_fatal(e)?
                ))
            }
        };
        let mut at = at.clone();
        loop {
            let uid = match self.find(s, caps, &t, &at, mb.uid_validity)? {
                Ok(Some(u)) => u,
                Ok(None) => return Ok(Ok(None)),
                Err(e) => return failed(e),
            };
            // With what tells whether the UID still holds the entry's
            // message (see `holds_the_entrys`).
            let fetched = match s.uid_fetch(
                uid.to_string(),
                format!("(UID BODY.PEEK[HEADER.FIELDS (MESSAGE-ID FROM SUBJECT {name})])"),
            ) {
                Ok(f) => f,
                Err(e) => return failed(session_fatal(e)?),
            };
            let Some(h) = fetched
                .iter()
                .find(|f| f.uid == Some(uid))
                .and_then(|f| f.header())
            else {
                return Ok(Ok(None));
            };
            let e = crate::classify::Email::parse_headers(h);
            // A UID recorded in a folder renamed and made again since holds
            // another message, whose list the form was prefilled with (the
            // regression audit, stop 59): looked for by its Message-ID.
            if at.uid.is_some() && !holds_the_entrys(&t, e.as_ref()) {
                if t.message_id.is_empty() {
                    return Ok(Ok(None));
                }
                at.uid = None;
                continue;
            }
            // A Message-ID, which a stranger's copy may carry too (and
            // `find` searches by it also where the recorded UID is of
            // another UIDVALIDITY): from the recorded sender only, as
            // corrections take it (the regression audits, stop 59).
            let theirs = e.as_ref().map_or("", |e| e.from.as_str());
            // (Recorded with none: one with none only.)
            if !theirs.eq_ignore_ascii_case(&t.from) {
                return Ok(Ok(None));
            }
            return Ok(Ok(e.and_then(|e| e.header(field).map(str::to_string))));
        }
    }

    /// The account's review flag, when `flags` (a message's) hold it.
    /// Keywords are matched without regard to case (RFC 3501).
    fn review_flag_on(&self, flags: &[String]) -> Option<String> {
        let f = self.w.account.review_flag.as_deref()?;
        flags
            .iter()
            .any(|g| g.eq_ignore_ascii_case(f))
            .then(|| f.to_string())
    }

    /// The entry's record, when it is this account's.
    fn target(&self, id: i64) -> Result<UndoTarget, RefileError> {
        match self.w.store.undo_target(id) {
            Ok(Some(t)) if t.account == self.name() => Ok(t),
            Ok(Some(_)) => Err(RefileError::Refused(format!(
                "activity {id}: belongs to another account"
            ))),
            Ok(None) => Err(RefileError::Refused(format!("no activity entry {id}"))),
            Err(e) => Err(RefileError::Failed(e.to_string())),
        }
    }

    /// The message's UID in the folder selected at `at` (whose UIDVALIDITY
    /// is `validity`): the known one, else the newest with its
    /// Message-ID; `None` when it is not there. The outer error is a
    /// broken session.
    fn find(
        &self,
        s: &mut Session,
        caps: &Caps,
        t: &UndoTarget,
        at: &Location,
        validity: Option<u32>,
    ) -> Result<Result<Option<u32>, String>, ImapError> {
        // A UID is good only under the UIDVALIDITY it was recorded with.
        let known = at
            .uid
            .filter(|_| at.folder != t.mailbox || validity == Some(t.uidvalidity));
        if let Some(u) = known {
            return Ok(Ok(Some(u)));
        }
        if t.message_id.is_empty() {
            return Ok(Err("its UID is unknown and it has no Message-ID".into()));
        }
        let query = match search_message_id(&t.message_id, caps) {
            Ok(q) => q,
            Err(e) => return Ok(Err(e)),
        };
        match query.run(s) {
            Ok(found) => Ok(Ok(found.into_iter().max())),
            Err(e) => Ok(Err(session_fatal(e)?)),
        }
    }

    /// Finds the message, moves it and records where it went. Returns its
    /// new UID and its features (for the classifier). The outer error is a
    /// broken session.
    #[allow(clippy::type_complexity)]
    fn carry(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        t: &UndoTarget,
        from: &Location,
        to: &str,
    ) -> Result<Result<(u32, Option<Vec<String>>), NotBack>, ImapError> {
        macro_rules! answer {
            ($r:expr, $what:expr) => {
                match $r {
                    Ok(v) => v,
                    Err(e) => return Ok(Err(format!("{}: {}", $what, session_fatal(e)?).into())),
                }
            };
        }
        let mb = match folders.select(s, &from.folder) {
            Ok(mb) => mb,
            Err(imap::Error::No(no)) if folder_missing(&no) => {
                return Ok(Err(NotBack::Gone(format!(
                    "{} is not there: renamed or deleted since (the server: {})",
                    folders.describe(&from.folder),
                    server_words(&no.information)
                ))))
            }
            Err(e) => {
                let e = session_fatal(e)?;
                return Ok(Err(format!(
                    "SELECT {}: {e}",
                    folders.describe(&from.folder)
                )
                .into()));
            }
        };
        let mut at = from.clone();
        let gone = |what: String| {
            Ok(Err(NotBack::Gone(format!(
                "{what}: moved or deleted since"
            ))))
        };
        let (uid, f) = loop {
            let uid = match self.find(s, caps, t, &at, mb.uid_validity)? {
                Ok(Some(u)) => u,
                Ok(None) => {
                    return gone(format!("no message {} in {:?}", t.message_id, from.folder))
                }
                Err(e) => return Ok(Err(e.into())),
            };
            let fetched = answer!(
                s.uid_fetch(
                    uid.to_string(),
                    format!("(UID FLAGS {})", super::train::learn_items()),
                ),
                "reading it"
            );
            let Some(f) = fetched.iter().find(|f| f.uid == Some(uid)) else {
                return gone(format!("UID {uid} is no longer in {:?}", from.folder));
            };
            // A UID recorded in a folder renamed and made again since holds
            // another message: looked for by its Message-ID instead (undo
            // moved a stranger's message so; the learning-loop audit).
            let held = f.header().and_then(crate::email::Email::parse_headers);
            if at.uid.is_some() && !holds_the_entrys(t, held.as_ref()) {
                if t.message_id.is_empty() {
                    return Ok(Err(NotBack::Gone(idless_gone(uid, &from.folder))));
                }
                at.uid = None;
                continue;
            }
            let flags: Vec<String> = f
                .flags()
                .iter()
                .filter(|f| !matches!(f, imap::types::Flag::Recent))
                .map(|f| f.to_string())
                .collect();
            let feats = f
                .header()
                .map(|h| crate::learn::features(&super::learn_email(h, f.text())));
            break (uid, (flags, feats));
        };
        let (flags, feats) = f;
        // A person deciding where the message goes is its review: the
        // review flag goes before the move, so the copy in `to` does not
        // ask the user's mail client for a review that is over (it did:
        // an audit of the operator's loop). The flags recorded are the
        // ones it had, for undo to give back.
        if let Some(flag) = self.review_flag_on(&flags) {
            if let Err(e) = s.uid_store(uid.to_string(), format!("-FLAGS.SILENT ({flag})")) {
                let e = session_fatal(e)?;
                log::warn!(
                    "{}: activity {}: review flag {flag} not taken off before the move: {e}",
                    self.name(),
                    t.id
                );
            }
        }
        let mut created = std::collections::HashSet::new();
        let moved =
            match self.move_uids(s, caps, folders, &mut created, &[uid], to, &from.folder)? {
                (landed, Ok(())) if landed.exact && !landed.dest.contains_key(&uid) => {
                    return Ok(Err(NotBack::Gone(format!(
                        "the message left {:?} before it could be moved \
                         (another client moved or deleted it)",
                        crate::shown::quoted(&from.folder)
                    ))))
                }
                (landed, Ok(())) => landed.dest,
                (_, Err(e)) => return Ok(Err(e.into())),
            };
        let new_uid = match moved.get(&uid).copied() {
            Some(u) => u,
            // No COPYUID: the newest message with its Message-ID.
            None => {
                answer!(
                    folders.select(s, to),
                    format!("SELECT {}", folders.describe(to))
                );
                let query = match search_message_id(&t.message_id, caps) {
                    Ok(q) => q,
                    Err(e) => return Ok(Err(format!("moved, but cannot find it: {e}").into())),
                };
                let found = answer!(query.run(s), "searching by Message-ID");
                match found.into_iter().max() {
                    Some(u) => u,
                    None => {
                        return Ok(Err(format!(
                            "moved, but not found in {to:?}",
                            to = crate::shown::quoted(to)
                        )
                        .into()))
                    }
                }
            }
        };
        if let Err(e) = self.w.store.record_move_to(t.id, to, new_uid, &flags) {
            return Ok(Err(format!("moved as UID {new_uid}, but {e}").into()));
        }
        Ok(Ok((new_uid, feats)))
    }
}
