//! Carrying out a group's plan on the server: the flags, then the moves,
//! each destination's set sent whole and, when another client's expunge
//! makes the server refuse it, again in halves; a refused move split into
//! what left and what stayed; journalled moves carried out again without
//! copying twice. Each message is confirmed as soon as the server has
//! done its every command.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap, HashSet};

use super::batch::{Confirmed, Moved, Replayed};
use super::by_id::{ids_in_folder, search_message_id};
use super::commands::{set_max, uid_pieces, uid_set};
use super::flags::Wanted;
use super::session::{session_fatal, Caps, Folders, Session};
use super::{ImapError, Runner};
use crate::actions::Plan;

/// How many more moves a destination's set may take after the server
/// refused one with `[EXPUNGEISSUED]` (another client expunged some of its
/// messages): each refused set is sent again in halves.
const EXPUNGE_RETRIES: u32 = 64;

/// Source UID and UID in the destination of messages an earlier run copied.
type Copied = Vec<(u32, u32)>;

/// One destination's move, what it reads: the folder it goes to from
/// `mailbox`, and the flags set for it (`wanted`) over those each message
/// had `before`, taken off again if it fails.
struct MoveTo<'a> {
    caps: &'a Caps,
    folders: &'a Folders,
    mailbox: &'a str,
    folder: &'a str,
    wanted: &'a Wanted,
    before: &'a HashMap<u32, Vec<String>>,
}

impl Runner {
    /// Carries out the plan: the flags (of moving messages too, which the
    /// moves carry along, see `flags`), then the moves.
    /// `done` is told the UIDs whose every command the server has
    /// confirmed, as soon as it has. `before` holds each message's flags
    /// before we acted. Returns the UIDs whose commands the server refused,
    /// with why, and where the moved ones went; a broken session is an
    /// error.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn act(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        mailbox: &str,
        plan: &Plan,
        replayed: &Replayed,
        before: &HashMap<u32, Vec<String>>,
        done: &mut dyn FnMut(Confirmed),
    ) -> Result<(HashMap<u32, String>, Moved), ImapError> {
        let mut failed: HashMap<u32, String> = HashMap::new();
        let mut moved: Moved = HashMap::new();
        let moving: HashSet<u32> = plan.moves.values().flatten().copied().collect();
        let mut wanted: Wanted = HashMap::new();
        for (flags, set) in &plan.flag_sets {
            for u in set.iter().filter(|u| moving.contains(u)) {
                wanted.entry(*u).or_default().extend(flags.iter().cloned());
            }
            // Flags the folder would keep for this session only are not
            // set at all: the server says OK and drops them (see `Keeps`).
            if let Some(why) = folders
                .keeps(mailbox)
                .and_then(|k| k.refusal(&folders.describe(mailbox), flags))
            {
                for u in set {
                    failed.insert(*u, format!("setting flags failed: {why}"));
                }
                continue;
            }
            // A moving message gets its flags before the move, which
            // carries them along (and they come off again if it fails):
            // see `flags`. (A large fragmented set goes in several
            // commands.)
            for now in uid_pieces(set, set_max()) {
                if let Err(e) = s.uid_store(
                    uid_set(&now),
                    format!("+FLAGS.SILENT ({})", flags.join(" ")),
                ) {
                    let e = session_fatal(e)?;
                    // The server's reason first: after a long list of flags
                    // it was cut off the record and the log (an audit).
                    let list = flags.join(" ");
                    let list = match list.char_indices().nth(200) {
                        Some((cut, _)) => format!("{}… ({} flags)", &list[..cut], flags.len()),
                        None => list,
                    };
                    for u in &now {
                        failed.insert(*u, format!("setting flags failed: {e} (flags: {list})"));
                    }
                }
            }
        }
        // Flagged messages that move nowhere are done with their flags.
        let flagged: BTreeSet<u32> = plan
            .flag_sets
            .values()
            .flatten()
            .copied()
            .filter(|u| !moving.contains(u) && !failed.contains_key(u))
            .collect();
        if !flagged.is_empty() {
            done(Confirmed {
                uids: flagged.into_iter().collect(),
                to: None,
            });
        }
        let mut created: HashSet<String> = HashSet::new();
        // The largest move first: its records are written while the
        // smaller ones run, so little is left to write after the last.
        // (A large fragmented set goes in several commands, see `SET_MAX`.)
        let mut moves: Vec<(&String, Vec<u32>)> = plan
            .moves
            .iter()
            .flat_map(|(folder, set)| {
                uid_pieces(set, set_max())
                    .into_iter()
                    .map(move |piece| (folder, piece))
            })
            .collect();
        moves.sort_by_key(|(_, set)| std::cmp::Reverse(set.len()));
        for (folder, set) in moves {
            let set: Vec<u32> = set
                .into_iter()
                .filter(|u| !failed.contains_key(u))
                .collect();
            if set.is_empty() {
                continue;
            }
            // A move to the folder the message is in (`inbox` for INBOX,
            // `INBOX.Lists` for `Lists` under Cyrus's prefix) would give it
            // a new UID here, to be processed again, for ever (an audit:
            // 992 rows of one message in a minute). It is where it should
            // be: nothing to send.
            use crate::mailbox::namespace::inbox_upper;
            if inbox_upper(&folders.server(folder)) == inbox_upper(&folders.server(mailbox)) {
                log::warn!(
                    "{}: {} message(s) to be moved to {folder:?} are in that folder already: not moved",
                    self.name(),
                    set.len(), folder = crate::shown::quoted(folder)
                );
                done(Confirmed {
                    uids: set,
                    to: None,
                });
                continue;
            }
            let (set, copied) = self.reconcile(s, caps, folders, mailbox, folder, set, replayed)?;
            if !copied.is_empty() {
                let uids: Vec<u32> = copied.iter().map(|(u, _)| *u).collect();
                match self.take_out(s, caps, mailbox, &uids)? {
                    Ok(()) => {
                        let dest: HashMap<u32, u32> = copied.iter().copied().collect();
                        for (u, d) in &copied {
                            moved.insert(*u, (folder.clone(), Some(*d)));
                        }
                        done(Confirmed {
                            uids,
                            to: Some((folder.clone(), dest)),
                        });
                    }
                    Err(e) => {
                        for u in &uids {
                            failed.insert(*u, e.clone());
                        }
                    }
                }
            }
            if set.is_empty() {
                continue;
            }
            // `?`: a broken session ends the batch, decisions journalled.
            let to = MoveTo {
                caps,
                folders,
                mailbox,
                folder,
                wanted: &wanted,
                before,
            };
            self.send_move(s, &to, &mut created, set, &mut failed, &mut moved, done)?;
        }
        Ok((failed, moved))
    }

    /// Sends the move of `set` as `to` says, then records what the server
    /// did: the messages it took are `done` and `moved`, those it refused
    /// `failed` (their flags set for the move taken off again). A set
    /// refused because another client expunged some of its messages is
    /// sent again in halves. A broken session is an error.
    #[allow(clippy::too_many_arguments)]
    fn send_move(
        &self,
        s: &mut Session,
        to: &MoveTo<'_>,
        created: &mut HashSet<String>,
        set: Vec<u32>,
        failed: &mut HashMap<u32, String>,
        moved: &mut Moved,
        done: &mut dyn FnMut(Confirmed),
    ) -> Result<(), ImapError> {
        let MoveTo {
            caps,
            folders,
            mailbox,
            folder,
            wanted,
            before,
        } = *to;
        // The sets still to send (more than one after a refusal for
        // another client's expunge: see below).
        let mut pending = std::collections::VecDeque::from([set]);
        let mut tries = 0;
        while let Some(set) = pending.pop_front() {
            let sent = set.len();
            let (landed, r) = self.move_uids(s, caps, folders, created, &set, folder, mailbox)?;
            // Of the messages that left `mailbox`, the ones the move did not
            // take (where the server says, `Landed::exact`) were taken by
            // another client first: not recorded as moved.
            let split = |left: Vec<u32>| -> (Vec<u32>, Vec<u32>) {
                left.into_iter()
                    .partition(|u| !landed.exact || landed.dest.contains_key(u))
            };
            let (took, kept, refused) = match r {
                Ok(()) => {
                    crate::failpoint::hit("after-move");
                    (set, Vec::new(), None)
                }
                Err(e) => {
                    let (left, kept) = self.split_refused(s, caps, &set)?;
                    (left, kept, Some(e))
                }
            };
            let (took, vanished) = split(took);
            if !vanished.is_empty() {
                log::warn!(
                    "{}: {} message(s) left {mailbox:?} before their move to {folder:?} \
                     (another client moved or deleted them): not recorded as moved",
                    self.name(),
                    vanished.len(),
                    folder = crate::shown::quoted(folder),
                    mailbox = crate::shown::quoted(mailbox)
                );
                for u in &vanished {
                    failed.insert(
                        *u,
                        format!(
                            "the message left {mailbox:?} before its move to {folder:?} \
                             (another client moved or deleted it)",
                            folder = crate::shown::quoted(folder),
                            mailbox = crate::shown::quoted(mailbox)
                        ),
                    );
                }
            }
            if let (Some(e), false) = (&refused, took.is_empty()) {
                log::warn!(
                    "{}: the server refused the move of {} message(s) to {folder:?} \
                     ({e}) after {} of them had moved: those are recorded as moved",
                    self.name(),
                    sent,
                    took.len(),
                    folder = crate::shown::quoted(folder)
                );
            }
            if !took.is_empty() {
                for u in &took {
                    moved.insert(*u, (folder.to_string(), landed.dest.get(u).copied()));
                }
                done(Confirmed {
                    uids: took,
                    to: Some((folder.to_string(), landed.dest)),
                });
            }
            if let Some(e) = refused {
                // RFC 5530: refused whole because another client expunged
                // some of them meanwhile (Dovecot does so). The ones still
                // here are moved again in halves, each sent sooner after
                // the last sync than the whole, while that client goes on,
                // instead of each being charged a failed attempt for a
                // message it never was (an audit parked 450 of a
                // 15,000-message backlog beside a client deleting mail;
                // three retries of the whole set were not enough for one
                // deleting every 10 ms).
                if e.contains("[EXPUNGEISSUED]") && !kept.is_empty() && tries < EXPUNGE_RETRIES {
                    tries += 1;
                    let say = format!(
                        "{}: the move of {sent} message(s) to {folder:?} was refused because \
                         another client expunged some of them; moving the {} still here again",
                        self.name(),
                        kept.len(),
                        folder = crate::shown::quoted(folder)
                    );
                    if tries == 1 {
                        log::info!("{say}");
                    } else {
                        log::debug!("{say}");
                    }
                    let (first, second) = kept.split_at(kept.len().div_ceil(2));
                    if !second.is_empty() {
                        pending.push_front(second.to_vec());
                    }
                    pending.push_front(first.to_vec());
                    continue;
                }
                self.unflag(s, &kept, wanted, before)?;
                for u in &kept {
                    failed.insert(*u, e.clone());
                }
            }
        }
        Ok(())
    }

    /// `set`, whose `UID MOVE` the server refused, split into the messages
    /// that left the selected folder all the same and those still in it. A
    /// MOVE may fail part-way, each message moved or untouched (RFC 6851,
    /// 3.3): the ones moved are where the decision put them, only their
    /// UIDs there are unknown (undo finds them by Message-ID). Without MOVE
    /// (COPY is all or nothing), or when the server will not say, every
    /// message counts as still there.
    fn split_refused(
        &self,
        s: &mut Session,
        caps: &Caps,
        set: &[u32],
    ) -> Result<(Vec<u32>, Vec<u32>), ImapError> {
        if !caps.mv {
            return Ok((Vec::new(), set.to_vec()));
        }
        match s.uid_search(format!("UID {}", uid_set(set))) {
            Ok(here) => Ok(set.iter().partition(|u| !here.contains(u))),
            Err(e) => {
                let e = session_fatal(e)?;
                log::warn!(
                    "{}: after a refused move, which messages stayed is unknown: {e}",
                    self.name()
                );
                Ok((Vec::new(), set.to_vec()))
            }
        }
    }

    /// Before a journalled move is carried out again on a server without
    /// MOVE: a run before may have copied the message already and stopped
    /// before the expunge (or lost the answer). Those of `set` already in
    /// `folder` are not copied a second time. Returns the UIDs still to
    /// move, and the found ones with their UID in `folder`. Leaves
    /// `mailbox` selected again, as it found it.
    ///
    /// With MOVE there is nothing to find: a MOVE is one command, so a
    /// message still in `mailbox` was not moved (one that left is `gone`,
    /// and recorded as moved). Without it, a copy is a message in `folder`
    /// with the same Message-ID, size and INTERNALDATE (COPY keeps both),
    /// each taken for one original at most: a Message-ID alone proves
    /// nothing (it is not unique), and taking the original out on it alone
    /// would lose a message that was never copied.
    #[allow(clippy::too_many_arguments)]
    fn reconcile(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        mailbox: &str,
        folder: &str,
        set: Vec<u32>,
        replayed: &Replayed,
    ) -> Result<(Vec<u32>, Copied), ImapError> {
        if caps.mv {
            return Ok((set, Vec::new()));
        }
        let check: Vec<(u32, &str)> = set
            .iter()
            .filter_map(|u| Some((*u, replayed.ids.get(u)?.as_str())))
            .collect();
        if check.is_empty() {
            return Ok((set, Vec::new()));
        }
        // Size and INTERNALDATE (seconds since the epoch).
        type Stamp = (u32, i64);
        let stamps = |s: &mut Session, uids: &[u32]| -> Result<HashMap<u32, Stamp>, ImapError> {
            match s.uid_fetch(uid_set(uids), "(UID RFC822.SIZE INTERNALDATE)") {
                Ok(f) => Ok(f
                    .iter()
                    .filter_map(|f| Some((f.uid?, (f.size?, f.internal_date()?.timestamp()))))
                    .collect()),
                Err(e) => {
                    session_fatal(e)?;
                    Ok(HashMap::new())
                }
            }
        };
        let originals = stamps(s, &check.iter().map(|(u, _)| *u).collect::<Vec<_>>())?;
        // A message with no Message-ID to search by is looked for by its
        // size and known by its content: a copy is the message byte for
        // byte. Without this, such a message (a monitor's alert) was
        // copied a second time, the copy carrying the first run's
        // `\Deleted` (an audit).
        let unsearchable: HashSet<u32> = check
            .iter()
            .filter(|(u, id)| originals.contains_key(u) && search_message_id(id, caps).is_err())
            .map(|(u, _)| *u)
            .collect();
        // Their digests: one FETCH for each size, not one for each message.
        let mut sizes: HashMap<u32, Vec<u32>> = HashMap::new();
        for u in &unsearchable {
            sizes.entry(originals[u].0).or_default().push(*u);
        }
        let mut digests: HashMap<u32, [u8; 32]> = HashMap::new();
        for (size, uids) in &sizes {
            digests.extend(content_digests(s, uids, *size)?);
        }
        // The destination's messages of each size looked for.
        let mut of_size: HashMap<(u32, i64), Vec<u32>> = HashMap::new();
        let mut found: Copied = Vec::new();
        match folders.examine(s, folder) {
            Ok(_) => {
                // Many ids to a search, and the stamps of every hit in one
                // FETCH (see `ids_in_folder`); the rest one at a time.
                let wanted: Vec<&str> = check
                    .iter()
                    .filter(|(u, _)| originals.contains_key(u) && !unsearchable.contains(u))
                    .map(|(_, id)| *id)
                    .collect();
                let many = ids_in_folder(s, caps, &wanted)?;
                let all_hits: Vec<u32> = many.uids.values().flatten().copied().collect();
                let mut hit_stamps: HashMap<u32, Stamp> = HashMap::new();
                for piece in uid_pieces(&all_hits, set_max()) {
                    hit_stamps.extend(stamps(s, &piece)?);
                }
                log::debug!(
                    "{}: looked for {} journalled message(s) in {folder:?}: {} search(es) of many, \
                     {} of one",
                    self.name(),
                    wanted.len(),
                    many.searches,
                    many.left.len(), folder = crate::shown::quoted(folder)
                );
                let mut claimed: HashSet<u32> = HashSet::new();
                for (u, id) in &check {
                    let Some(stamp) = originals.get(u) else {
                        continue;
                    };
                    let hits: Vec<u32> = if unsearchable.contains(u) {
                        // Its content unread (it left meanwhile): no copy
                        // can be told its own.
                        if !digests.contains_key(u) {
                            continue;
                        }
                        match of_size.entry(*stamp) {
                            Entry::Occupied(e) => e.get().clone(),
                            Entry::Vacant(e) => e.insert(of_size_and_date(s, *stamp)?).clone(),
                        }
                    } else if many.left.contains(*id) {
                        let Ok(query) = search_message_id(id, caps) else {
                            continue;
                        };
                        match query.run(s) {
                            Ok(hits) => hits,
                            Err(e) => {
                                session_fatal(e)?;
                                continue;
                            }
                        }
                    } else {
                        many.uids.get(*id).cloned().unwrap_or_default()
                    };
                    let hits: Vec<u32> =
                        hits.into_iter().filter(|h| !claimed.contains(h)).collect();
                    if hits.is_empty() {
                        continue;
                    }
                    // A copy that an earlier record moved there is that
                    // message's, not this one's: two messages alike in
                    // Message-ID, size and date (a monitor's alerts) had
                    // the second expunged for the first's copy, and lost
                    // (an audit).
                    let taken = self.w.store.dest_uids_taken(
                        self.name(),
                        folder,
                        &hits,
                        (mailbox, replayed.uidvalidity, *u),
                    )?;
                    let hits: Vec<u32> = hits.into_iter().filter(|h| !taken.contains(h)).collect();
                    if hits.is_empty() {
                        continue;
                    }
                    let known = |h: &u32| hit_stamps.get(h).map(|st| (*h, *st));
                    let mut of_hits: Vec<(u32, Stamp)> = hits.iter().filter_map(known).collect();
                    if of_hits.len() < hits.len() {
                        of_hits = stamps(s, &hits)?.into_iter().collect();
                    }
                    let mut alike: Vec<u32> = of_hits
                        .into_iter()
                        .filter(|(_, st)| st == stamp)
                        .map(|(d, _)| d)
                        .collect();
                    if let Some(digest) = digests.get(u) {
                        let of_alike = content_digests(s, &alike, stamp.0)?;
                        alike.retain(|d| of_alike.get(d) == Some(digest));
                    }
                    let copy = alike.into_iter().max();
                    if let Some(dest) = copy {
                        claimed.insert(dest);
                        found.push((*u, dest));
                    }
                }
            }
            // No such folder yet: nothing was copied there.
            Err(e) => {
                session_fatal(e)?;
            }
        }
        // A failed EXAMINE leaves no mailbox selected: select it again
        // either way, and only the generation the UIDs belong to.
        let mb = folders.select(s, mailbox)?;
        if mb.uid_validity != Some(replayed.uidvalidity) {
            return Err(ImapError::Io(std::io::Error::other(format!(
                "{mailbox:?} changed UIDVALIDITY while its batch was acted on",
                mailbox = crate::shown::quoted(mailbox)
            ))));
        }
        if !found.is_empty() {
            log::info!(
                "{}: {} journalled message(s) already in {folder:?} (an earlier run's copy: \
                 same Message-ID, or same content, and same size and date): taken out of \
                 {mailbox:?}, not copied again",
                self.name(),
                found.len(),
                folder = crate::shown::quoted(folder),
                mailbox = crate::shown::quoted(mailbox)
            );
        }
        let copied: HashSet<u32> = found.iter().map(|(u, _)| *u).collect();
        let rest: Vec<u32> = set.into_iter().filter(|u| !copied.contains(u)).collect();
        // What is copied again may carry the first run's `\Deleted` (set
        // after its copy, before the expunge): a copy would carry it too.
        let again: Vec<u32> = rest
            .iter()
            .copied()
            .filter(|u| replayed.ids.contains_key(u))
            .collect();
        if !again.is_empty() {
            if let Err(e) = s.uid_store(uid_set(&again), "-FLAGS.SILENT (\\Deleted)") {
                let e = session_fatal(e)?;
                log::warn!(
                    "{}: could not take the \\Deleted of an earlier run off {} message(s) in \
                     {mailbox:?} before copying them again: {e}",
                    self.name(),
                    again.len(),
                    mailbox = crate::shown::quoted(mailbox)
                );
            }
        }
        Ok((rest, found))
    }

    /// Takes already copied messages out of `mailbox`: `\Deleted`, then
    /// `UID EXPUNGE` of just those (UIDPLUS; without it they stay marked, as
    /// after a COPY).
    pub(super) fn take_out(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        mailbox: &str,
        uids: &[u32],
    ) -> Result<Result<(), String>, ImapError> {
        let set = uid_set(uids);
        if let Err(e) = s.uid_store(&set, "+FLAGS.SILENT (\\Deleted)") {
            let e = session_fatal(e)?;
            return Ok(Err(format!(
                "marking copied messages in {mailbox:?} failed: {e}",
                mailbox = crate::shown::quoted(mailbox)
            )));
        }
        if caps.uidplus {
            if let Err(e) = s.uid_expunge(&set) {
                let e = session_fatal(e)?;
                return Ok(Err(format!(
                    "expunging copied messages from {mailbox:?} failed: {e}",
                    mailbox = crate::shown::quoted(mailbox)
                )));
            }
        }
        Ok(Ok(()))
    }
}

/// The UIDs of the selected folder's messages that may be the copy of one
/// of `size` octets (RFC822.SIZE) received at `date` (INTERNALDATE, Unix
/// seconds): those of exactly that size; when there are none, those of at
/// least half of it from the days around `date`. Courier's `SEARCH
/// LARGER`/`SMALLER` compare the size of the file it stores, with bare LF
/// line ends, where RFC822.SIZE counts CRLF (a message of n octets is
/// stored in n less its line count, at least n/2): searched exactly, no
/// copy was ever found there, and a message with no Message-ID was copied
/// a second time (an audit). The caller keeps only the hits whose own
/// RFC822.SIZE and INTERNALDATE are the message's.
fn of_size_and_date(s: &mut Session, (size, date): (u32, i64)) -> Result<Vec<u32>, ImapError> {
    let exact = match size {
        0 => "SMALLER 1".to_string(),
        n => format!("LARGER {} SMALLER {}", n - 1, u64::from(n) + 1),
    };
    let hits = search_or_none(s, exact)?;
    if !hits.is_empty() || size < 2 {
        return Ok(hits);
    }
    // The days around it: a server compares dates in its own zone.
    let day = 86_400;
    let wide = format!(
        "LARGER {} SMALLER {size} SINCE {} BEFORE {}",
        (size / 2).saturating_sub(1),
        crate::timestamp::imap_date(date - day),
        crate::timestamp::imap_date(date + 2 * day)
    );
    search_or_none(s, wide)
}

/// `UID SEARCH`, its refusal taken as no hits (a broken session is the
/// error).
fn search_or_none(s: &mut Session, query: String) -> Result<Vec<u32>, ImapError> {
    match s.uid_search(query) {
        Ok(hits) => Ok(hits.into_iter().collect()),
        Err(e) => {
            session_fatal(e)?;
            Ok(Vec::new())
        }
    }
}

/// Messages up to this size are known by all of their bytes, larger ones
/// by their header (with their size and date): a replay reads each whole.
const WHOLE_DIGEST_MAX: u32 = 4 << 20;

/// A SHA-256 of each message of `uids` (all of `size` octets): of the
/// whole message when it is small (two alerts alike but for a figure in
/// the text are two messages: a regression audit), else of its header.
/// Fetched a few at a time.
pub(super) fn content_digests(
    s: &mut Session,
    uids: &[u32],
    size: u32,
) -> Result<HashMap<u32, [u8; 32]>, ImapError> {
    use sha2::{Digest, Sha256};
    let whole = size <= WHOLE_DIGEST_MAX;
    let (query, per) = if whole {
        ("(UID BODY.PEEK[])", 8)
    } else {
        ("(UID BODY.PEEK[HEADER])", 32)
    };
    let mut out = HashMap::new();
    for piece in uids.chunks(per) {
        match s.uid_fetch(uid_set(piece), query) {
            Ok(fetches) => {
                for f in fetches.iter() {
                    let bytes = if whole { f.body() } else { f.header() };
                    if let (Some(uid), Some(bytes)) = (f.uid, bytes) {
                        out.insert(uid, Sha256::digest(bytes).into());
                    }
                }
            }
            Err(e) => {
                session_fatal(e)?;
            }
        }
    }
    Ok(out)
}
