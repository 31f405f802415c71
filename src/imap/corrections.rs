//! Corrections: a message we moved that the user then moved elsewhere.
//! Checked before each pass through the UID each move recorded; what is
//! found is learned (the learned classifier unlearns the folder we chose and
//! learns the user's) and shown to the model as an example.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::by_id::{ids_in_folder, search_message_id};
use super::commands::{set_max, uid_pieces, uid_set};
use super::folders::Counts;
use super::session::{session_fatal, Caps, Folders, Session};
use super::{ImapError, Runner};
use crate::store::UndoTarget;
use crate::timestamp::now_ms;

/// Moves older than this are not checked any more.
const CHECK_DAYS: i64 = 7;

/// The time one pass gives to looking for the messages that left the
/// folders we moved them to; the rest wait for the next pass. Each is a
/// search of every folder training reads: the user emptying Junk or
/// filing a folder (1,000 messages) held the account's new mail, undo and
/// "Move to…" for 25 s to minutes (an audit).
const LOOK_BUDGET: std::time::Duration = std::time::Duration::from_secs(2);

fn look_budget() -> std::time::Duration {
    crate::failpoint::number("look_budget_ms").map_or(LOOK_BUDGET, |ms| {
        std::time::Duration::from_millis(ms as u64)
    })
}

/// Where a message the user moved went: the folder, its UIDVALIDITY and
/// UID there, and the message's features.
type Found = (String, u32, u32, Option<Vec<String>>);

impl Runner {
    /// Looks, in each folder we moved mail to lately, for the messages no
    /// longer there, and where they went. `learned.enabled` only.
    ///
    /// A command the server refuses (NO, BAD) costs the folder or the
    /// message it was about, never the session: the message is recorded as
    /// gone to an unknown place and not looked for again.
    pub(super) fn check_corrections(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
    ) -> Result<(), ImapError> {
        if !self.w.account.learned.enabled {
            return Ok(());
        }
        let since = now_ms() - CHECK_DAYS * 86_400_000;
        let moves = self.w.store.moves_to_check(self.name(), since)?;
        let mut by_folder: BTreeMap<String, Vec<(i64, u32)>> = BTreeMap::new();
        for (id, folder, uid) in moves {
            by_folder.entry(folder).or_default().push((id, uid));
        }
        // A folder whose counts are what they were when it was last read
        // whole has had no message arrive or leave since: nothing of ours
        // left it, and one STATUS saves an EXAMINE and the week's searches.
        self.corrections_read
            .retain(|f, _| by_folder.contains_key(f));
        let mut gone: Vec<(i64, String)> = Vec::new();
        for (folder, list) in &by_folder {
            let counts = self.counts_unless_watched(s, folders, folder)?;
            if counts.is_some() && self.corrections_read.get(folder) == counts.as_ref() {
                log::debug!(
                    "{}: corrections: {folder:?} unchanged since it was last read ({} move(s) to check)",
                    self.name(),
                    list.len(), folder = crate::shown::quoted(folder)
                );
                continue;
            }
            self.corrections_read.remove(folder);
            if let Err(e) = folders.examine(s, folder) {
                session_fatal(e)?;
                continue;
            }
            let uids: Vec<u32> = list.iter().map(|(_, u)| *u).collect();
            // A week of moves to one folder can name many UIDs: the set
            // goes in pieces a command line holds, as moves do.
            let mut present = HashSet::new();
            let mut refused = None;
            for piece in uid_pieces(&uids, set_max()) {
                match s.uid_search(format!("UID {}", uid_set(&piece))) {
                    Ok(p) => present.extend(p),
                    Err(e) => {
                        refused = Some(session_fatal(e)?);
                        break;
                    }
                }
            }
            if let Some(e) = refused {
                log::warn!(
                    "{}: corrections: {folder:?}: {e}",
                    self.name(),
                    folder = crate::shown::quoted(folder)
                );
                continue;
            }
            for (id, uid) in list {
                if !present.contains(uid) {
                    gone.push((*id, folder.clone()));
                }
            }
            if let Some(c) = counts {
                self.corrections_read.insert(folder.clone(), c);
            }
        }
        let started = std::time::Instant::now();
        let mut searched = 0;
        for (i, (id, from)) in gone.iter().enumerate() {
            let id = *id;
            let from = from.clone();
            let Some(t) = self.w.store.undo_target(id)? else {
                continue;
            };
            // Each pass looks for one at least, so that all are found in
            // time; one with no Message-ID is not looked for.
            if !t.message_id.is_empty() {
                if searched > 0 && started.elapsed() >= look_budget() {
                    // Read again next pass, though unchanged, to find these.
                    for (_, f) in &gone[i..] {
                        self.corrections_read.remove(f);
                    }
                    let back = self.claim_watched(s, caps, folders, &gone[i..])?;
                    let rest = gone.len() - i - back;
                    if back > 0 {
                        log::info!(
                            "{}: corrections: {back} message(s) the user moved back were found \
                             in a watched folder at once",
                            self.name()
                        );
                    }
                    if rest > 0 {
                        log::info!(
                            "{}: corrections: {rest} more message(s) that left their folders \
                             are looked for at the next pass",
                            self.name()
                        );
                    }
                    break;
                }
                searched += 1;
            }
            let found =
                match self.find_elsewhere(s, caps, folders, (&t.message_id, &t.from), &from)? {
                    Ok(found) => found,
                    Err(e) => {
                        log::warn!(
                        "{}: activity {id}: the message left {from:?}, and looking for it failed: \
                         {e}; not looked for again",
                        self.name(), from = crate::shown::quoted(&from)
                    );
                        None
                    }
                };
            let (folder, arrived, feats) = match found {
                Some((f, uidvalidity, uid, feats)) => (Some(f), Some((uidvalidity, uid)), feats),
                None => (None, None, None),
            };
            let watched = folder
                .as_ref()
                .is_some_and(|f| self.w.account.folders.watch.contains(f));
            let counted = self.counted_in(id, &from);
            self.w
                .store
                .record_correction(&t, folder.as_deref(), arrived.filter(|_| watched))?;
            let Some(to) = folder else {
                log::info!(
                    "{}: activity {id}: the message left {from:?} (deleted)",
                    self.name(),
                    from = crate::shown::quoted(&from)
                );
                continue;
            };
            log::info!(
                "{}: activity {id}: the user moved the message from {from:?} to {to:?}; learned as a correction",
                self.name(), from = crate::shown::quoted(&from), to = crate::shown::quoted(&to)
            );
            self.corrected(counted, feats, &from, &to);
        }
        Ok(())
    }

    /// Of the messages the look budget left over (`left`: entry and the
    /// folder it left), those the user moved into a watched folder: found
    /// there all at once ([`ids_in_folder`]: 50 Message-IDs a search, then
    /// their fields read 50 at a time) and recorded as corrections before
    /// the pass reads that folder's new mail, which would otherwise decide
    /// them again. A user rescuing 1,200 messages from Junk saw the 907
    /// the budget left junked again by the same rule, and their
    /// corrections recorded as deletions (an audit). Taken as
    /// [`Runner::find_elsewhere`] takes a message: by its Message-ID, from
    /// the recorded sender (read on its own when the header's first 64 KiB
    /// hold no From), the newest of a few first; and only a message with
    /// no record yet. The rest wait for the next pass. Returns how many
    /// were found.
    fn claim_watched(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        left: &[(i64, String)],
    ) -> Result<usize, ImapError> {
        /// UIDs read in one FETCH (at most 80 KB each).
        const READ_AT_ONCE: usize = 50;
        /// The newest messages of a folder with one Message-ID read to find
        /// the one from the sender, as `find_elsewhere` reads them.
        const CANDIDATES: usize = 5;
        let mut wanted: HashMap<String, (UndoTarget, String)> = HashMap::new();
        for (id, from) in left {
            if let Some(t) = self.w.store.undo_target(*id)? {
                if !t.message_id.is_empty() {
                    wanted
                        .entry(t.message_id.clone())
                        .or_insert((t, from.clone()));
                }
            }
        }
        let mut back = 0;
        for folder in self.w.account.folders.watch.clone() {
            if wanted.is_empty() {
                break;
            }
            let mb = match folders.examine(s, &folder) {
                Ok(mb) => mb,
                Err(e) => {
                    session_fatal(e)?;
                    continue;
                }
            };
            let validity = mb.uid_validity.unwrap_or(0);
            let ids: Vec<&str> = wanted.keys().map(String::as_str).collect();
            let mut found = match ids_in_folder(s, caps, &ids) {
                Ok(found) => found,
                Err(e) => {
                    let e = session_fatal(e)?;
                    log::warn!(
                        "{}: corrections: {folder:?}: {e}",
                        self.name(),
                        folder = crate::shown::quoted(&folder)
                    );
                    continue;
                }
            };
            // An id one search could not take (8-bit, refused): searched on
            // its own.
            for id in std::mem::take(&mut found.left) {
                let Ok(query) = search_message_id(&id, caps) else {
                    continue;
                };
                match query.run(s) {
                    Ok(uids) if !uids.is_empty() => {
                        found.uids.insert(id, uids);
                    }
                    Ok(_) => {}
                    Err(e) => {
                        session_fatal(e)?;
                    }
                }
            }
            // The newest few of each id first; a UID recorded already is
            // another message (a twin processed before), never this one.
            let all: Vec<u32> = found.uids.values().flatten().copied().collect();
            let recorded: HashSet<u32> = self
                .w
                .store
                .recorded(self.name(), &folder, validity, &all)?
                .into_iter()
                .map(|(m, _)| m.uid)
                .collect();
            let mut hits: Vec<(String, u32)> = Vec::new();
            for (id, mut uids) in found.uids {
                uids.retain(|u| !recorded.contains(u));
                uids.sort_unstable_by(|a, b| b.cmp(a));
                hits.extend(uids.into_iter().take(CANDIDATES).map(|u| (id.clone(), u)));
            }
            for chunk in hits.chunks(READ_AT_ONCE) {
                let uids: Vec<u32> = chunk.iter().map(|h| h.1).collect();
                let fetched = match s.uid_fetch(uid_set(&uids), super::learn_query()) {
                    Ok(f) => f,
                    Err(e) => {
                        let e = session_fatal(e)?;
                        log::warn!(
                            "{}: corrections: reading {folder:?}: {e}",
                            self.name(),
                            folder = crate::shown::quoted(&folder)
                        );
                        break;
                    }
                };
                let read: HashMap<u32, crate::email::Email> = fetched
                    .iter()
                    .filter_map(|f| {
                        let h = f.header()?;
                        Some((f.uid?, super::learn_email(h, f.text())))
                    })
                    .collect();
                drop(fetched);
                for (id, uid) in chunk {
                    let Some((t, from)) = wanted.get(id) else {
                        continue;
                    };
                    let email = read.get(uid);
                    let mut theirs = email.map_or(String::new(), |e| e.from.clone());
                    if theirs.is_empty() && !t.from.is_empty() {
                        theirs = self.sender_of(s, *uid)?;
                    }
                    if !t.from.is_empty() && !theirs.eq_ignore_ascii_case(&t.from) {
                        continue;
                    }
                    let (t, from) = (t.clone(), from.clone());
                    let counted = self.counted_in(t.id, &from);
                    self.w
                        .store
                        .record_correction(&t, Some(&folder), Some((validity, *uid)))?;
                    log::info!(
                        "{}: activity {}: the user moved the message from {from:?} to {folder:?}; \
                         learned as a correction",
                        self.name(),
                        t.id,
                        folder = crate::shown::quoted(&folder),
                        from = crate::shown::quoted(&from)
                    );
                    let feats = email.map(crate::learn::features);
                    self.corrected(counted, feats, &from, &folder);
                    wanted.remove(id);
                    back += 1;
                }
            }
        }
        Ok(back)
    }

    /// The sender of `uid` in the selected folder, read on its own: the
    /// fields the classifier reads stop at 64 KiB, and a From after 80 KB
    /// of To is not in them (a third regression audit). Empty when the
    /// server has none to give.
    fn sender_of(&self, s: &mut Session, uid: u32) -> Result<String, ImapError> {
        match s.uid_fetch(uid.to_string(), "BODY.PEEK[HEADER.FIELDS (FROM)]") {
            Ok(f) => Ok(f
                .iter()
                .find(|f| f.uid == Some(uid))
                .and_then(|f| f.header())
                .and_then(crate::email::Email::parse_headers)
                .map(|e| e.from)
                .unwrap_or_default()),
            Err(e) => {
                session_fatal(e)?;
                Ok(String::new())
            }
        }
    }

    /// The folder's counts (`STATUS`), or `None`: for a watched folder
    /// (the session may have it selected, where RFC 3501 leaves STATUS
    /// unreliable), a name that cannot be sent, or a refusal.
    fn counts_unless_watched(
        &self,
        s: &mut Session,
        folders: &Folders,
        folder: &str,
    ) -> Result<Option<Counts>, ImapError> {
        if self.w.account.folders.watch.iter().any(|w| w == folder) {
            return Ok(None);
        }
        match folders.status_counts(s, folder) {
            Ok(c) => Ok(c),
            Err(e) => {
                session_fatal(e)?;
                Ok(None)
            }
        }
    }

    /// The folder (of those training reads) now holding the message of
    /// `message_id` from `sender`, its UIDVALIDITY and UID there, and the
    /// message's features. A Message-ID is not proof on its own (another
    /// message may carry it: a stranger's copy of a list message's made
    /// the user's deletion of the list message count as a move, learned
    /// with the stranger's words, an audit): a message found by it must
    /// also come from the recorded sender, when one was recorded. The
    /// inner error: this message cannot be looked for (the server refused
    /// the search, or the Message-ID cannot be sent).
    fn find_elsewhere(
        &self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        (message_id, sender): (&str, &str),
        not: &str,
    ) -> Result<Result<Option<Found>, String>, ImapError> {
        /// The most messages of one folder that carry the Message-ID read
        /// to find the one from the sender.
        const CANDIDATES: usize = 5;
        if message_id.is_empty() {
            return Ok(Ok(None));
        }
        let query = match search_message_id(message_id, caps) {
            Ok(q) => q,
            Err(e) => return Ok(Err(e)),
        };
        for folder in super::training_folders(&self.w.account) {
            if folder == not {
                continue;
            }
            let mb = match folders.examine(s, &folder) {
                Ok(mb) => mb,
                Err(e) => {
                    session_fatal(e)?;
                    continue;
                }
            };
            let found = match query.run(s) {
                Ok(found) => found,
                Err(e) => {
                    return Ok(Err(format!(
                        "searching {folder:?}: {}",
                        session_fatal(e)?,
                        folder = crate::shown::quoted(&folder)
                    )))
                }
            };
            let mut uids: Vec<u32> = found.into_iter().collect();
            // The newest first.
            uids.sort_unstable_by(|a, b| b.cmp(a));
            for uid in uids.into_iter().take(CANDIDATES) {
                let fetched = match s.uid_fetch(uid.to_string(), super::learn_query()) {
                    Ok(f) => f,
                    Err(e) => {
                        return Ok(Err(format!(
                            "reading it in {folder:?}: {}",
                            session_fatal(e)?,
                            folder = crate::shown::quoted(&folder)
                        )))
                    }
                };
                let email = fetched
                    .iter()
                    .find(|f| f.uid == Some(uid))
                    .and_then(|f| f.header().map(|h| super::learn_email(h, f.text())));
                let mut theirs = email.as_ref().map_or(String::new(), |e| e.from.clone());
                if theirs.is_empty() && !sender.is_empty() {
                    theirs = self.sender_of(s, uid)?;
                }
                if !sender.is_empty() && !theirs.eq_ignore_ascii_case(sender) {
                    continue;
                }
                let feats = email.as_ref().map(crate::learn::features);
                return Ok(Ok(Some((folder, mb.uid_validity.unwrap_or(0), uid, feats))));
            }
        }
        Ok(Ok(None))
    }
}
