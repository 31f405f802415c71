//! A pass over the watched folders (the wait for new mail between passes is
//! `schedule`).

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use super::headers::HEADER_CHUNK;
use super::held::Held;
use super::reader::{self, Reader, TWO_SESSIONS_MIN};
use super::session::{Caps, Folders, Session};
use super::{window, Exit, ImapError, Runner};
use crate::account::State;
use crate::config::Backlog;
use crate::store::{KnownEmail, Status, Watermark};
use crate::timestamp::now_ms;

impl Runner {
    /// One pass: corrections, then every watched folder. Returns an exit
    /// when a command asks for one.
    pub(super) fn pass(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
    ) -> Result<Option<Exit>, ImapError> {
        self.w.handle.set_state(State::Processing);
        self.last_pass_ms = now_ms();
        self.found = 0;
        self.w
            .metrics
            .passes
            .with_label_values(&[self.name()])
            .inc();
        crate::failpoint::hit("account-pass");
        // A database file removed or replaced under the process: nothing
        // is processed that its records would not survive.
        self.w.store.check_file().map_err(ImapError::Store)?;
        let had_trouble = self.trouble.take().is_some();
        self.junk.clone_from(&folders.junk);
        self.close_orphaned_retries();
        // Before the watched folders: a message an interrupted undo put
        // back is recorded as put back, not sorted away again.
        self.finish_undos(s, caps, folders)?;
        // Before the watched folders: a message the user moved back into
        // one is then recorded, not sorted away again.
        if let Err(e) = self.check_corrections(s, caps, folders) {
            match e {
                ImapError::Store(e) => log::warn!("{}: corrections: {e}", self.name()),
                e => return Err(e),
            }
        }
        for mailbox in self.w.account.folders.watch.clone() {
            // An undo asked for meanwhile does not wait for the whole pass.
            self.serve_refiles(s, caps, folders)?;
            let r = match self.process_folder(s, caps, folders, &mailbox) {
                // A command the server refuses about this folder (NO, BAD)
                // costs the folder, not the session: the others go on, and
                // the account shows the server's words until a pass reads
                // them all.
                Err(ImapError::Protocol(e @ (imap::Error::No(_) | imap::Error::Bad(_)))) => {
                    self.folder_trouble(folders, &mailbox, "reading its mail", &e);
                    None
                }
                r => r?,
            };
            if let Some(exit) = r {
                self.index_search();
                self.passes_done += 1;
                return Ok(Some(exit));
            }
        }
        if had_trouble && self.trouble.is_none() {
            log::info!("{}: every watched folder read again", self.name());
            self.w.handle.set_error(None);
        }
        // Any left were of messages no longer new (gone, or recorded by
        // their journal).
        self.unrecorded_answers.clear();
        // Its failure was an ERROR line; its end is told too (it was not:
        // /health alone turned healthy again; an audit).
        if std::mem::take(&mut self.store_failed) {
            log::info!(
                "{}: the database answers again; processing goes on",
                self.name()
            );
        }
        self.index_search();
        self.passes_done += 1;
        Ok(None)
    }

    /// Whether the pass must stop early for a pause: not while it is the
    /// pass `process` asked for.
    pub(super) fn paused_now(&self) -> bool {
        self.w.handle.is_paused() && !self.forced
    }

    /// Retries of this account that no pass can take — their folder is no
    /// longer watched, or their UIDVALIDITY is not the folder's any more —
    /// are closed as failed with the reason; due for ever, they would end
    /// every wait at once.
    fn close_orphaned_retries(&self) {
        match self
            .w
            .store
            .close_orphaned_retries(self.name(), &self.w.account.folders.watch)
        {
            Ok(closed) => {
                for (id, why) in closed {
                    log::warn!(
                        "{}: activity {id}: retry closed as failed: {why}",
                        self.name()
                    );
                }
            }
            Err(e) => log::warn!("{}: {e}", self.name()),
        }
    }

    /// Time left until the next retry falls due. A retry that was due
    /// when the last pass began and is due still could not be taken (its
    /// folder cannot be opened): it waits for the next pass, without
    /// shortening the wait to nothing.
    pub(super) fn next_retry(&self) -> Option<Duration> {
        let at = self.w.store.next_retry_at(self.name()).ok()??;
        if at <= self.last_pass_ms {
            return None;
        }
        Some(Duration::from_millis((at - now_ms()).max(0) as u64))
    }

    /// Indexes what the pass recorded for search, in bulk. A failure only
    /// delays it (searches read unindexed rows without the index).
    fn index_search(&self) {
        let t = std::time::Instant::now();
        match self.w.store.index_search() {
            Ok(0) => {}
            Ok(n) => log::debug!(
                "{}: {n} row(s) indexed for search in {:?}",
                self.name(),
                t.elapsed()
            ),
            Err(e) => log::warn!("{}: {e}", self.name()),
        }
    }

    /// Whether `mailbox`, as just selected, holds UIDs past its watermark.
    pub(super) fn behind(
        &self,
        s: &mut Session,
        folders: &Folders,
        mailbox: &str,
        mb: &imap::types::Mailbox,
    ) -> Result<bool, ImapError> {
        let uid_next = match mb.uid_next {
            Some(n) => n,
            None => match self.uid_next(s, folders, mailbox, mb.exists) {
                Ok(n) => n,
                // Unknown: a pass settles it.
                Err(ImapError::Protocol(imap::Error::No(_) | imap::Error::Bad(_))) => {
                    return Ok(true)
                }
                Err(e) => return Err(e),
            },
        };
        Ok(match self.w.store.folder_state(self.name(), mailbox)? {
            Some((v, last)) if Some(v) == mb.uid_validity => uid_next > last.saturating_add(1),
            // First sight or a new UIDVALIDITY: a pass settles it.
            _ => true,
        })
    }

    /// A watched folder could not be opened or read: logged, counted
    /// (`mailproc_errors_total{kind="folder"}`), and shown with the server's
    /// words; the account reads `error` after this pass.
    fn folder_trouble(&mut self, folders: &Folders, mailbox: &str, what: &str, e: &imap::Error) {
        let msg = format!(
            "watched folder {}: {what} failed: {e}",
            folders.describe(mailbox)
        );
        log::warn!("{}: {msg}", self.name());
        self.w.handle.set_error(Some(msg.clone()));
        self.count_error("folder");
        self.trouble.get_or_insert(msg);
    }

    /// The UIDNEXT of the selected `mailbox` when SELECT did not say
    /// (Courier): STATUS, else the highest UID plus one. Never a guess of
    /// 1 that would hide every message from the search.
    fn uid_next(
        &self,
        s: &mut Session,
        folders: &Folders,
        mailbox: &str,
        exists: u32,
    ) -> Result<u32, ImapError> {
        if let Some(n) = folders.status_uid_next(s, mailbox)? {
            return Ok(n);
        }
        if exists == 0 {
            return Ok(1);
        }
        let top = s
            .uid_fetch("*", "(UID)")?
            .iter()
            .filter_map(|f| f.uid)
            .max()
            .unwrap_or(0);
        Ok(top.saturating_add(1))
    }

    /// Whether a watched folder after the first (the one IDLE watches) has
    /// nothing to do, by `STATUS (MESSAGES UIDNEXT UIDVALIDITY)` (DESIGN
    /// §3.8): the same UIDVALIDITY, nothing above its watermark, and none
    /// of its mail pending or due for a retry. It is then not selected: a
    /// SELECT per folder per wake-up cost round trips and, on servers that
    /// hand out `\Recent` per session, the user's client lost it (an
    /// audit). "Process now" selects every folder; so does anything the
    /// server's answer leaves in doubt.
    fn nothing_new(
        &self,
        s: &mut Session,
        folders: &Folders,
        mailbox: &str,
    ) -> Result<bool, ImapError> {
        let watch = &self.w.account.folders.watch;
        if self.forced || watch.first().is_none_or(|f| f == mailbox) {
            return Ok(false);
        }
        let Some((v, last)) = self.w.store.folder_state(self.name(), mailbox)? else {
            return Ok(false);
        };
        let (_, uid_next, uidvalidity) = match folders.status_counts(s, mailbox) {
            Ok(Some(counts)) => counts,
            // A folder the server refuses is reported by the SELECT.
            Ok(None) | Err(imap::Error::No(_) | imap::Error::Bad(_)) => return Ok(false),
            Err(e) => return Err(e.into()),
        };
        if uidvalidity != v || uid_next > last.saturating_add(1) {
            return Ok(false);
        }
        let now = now_ms();
        let due = self
            .w
            .store
            .known_emails(self.name(), mailbox, v, last)?
            .iter()
            .any(|k| match k.status {
                Status::Pending => true,
                Status::Retrying => k.next_attempt_at.is_none_or(|t| t <= now),
                _ => false,
            });
        Ok(!due)
    }

    /// Processes new (and due) messages of one watched folder.
    fn process_folder(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        mailbox: &str,
    ) -> Result<Option<Exit>, ImapError> {
        if self.nothing_new(s, folders, mailbox)? {
            return Ok(None);
        }
        let mb = match folders.select(s, mailbox) {
            Ok(mb) => mb,
            // A watched folder that is missing (deleted, renamed, not yet
            // created) is that folder's problem, not the connection's: the
            // other folders go on and this one is tried again next pass.
            Err(e @ (imap::Error::No(_) | imap::Error::Bad(_))) => {
                self.folder_trouble(folders, mailbox, "opening it", &e);
                return Ok(None);
            }
            Err(e) => return Err(e.into()),
        };
        let uidvalidity = mb.uid_validity.unwrap_or(0);
        let uid_next = match mb.uid_next {
            Some(n) => n,
            None => self.uid_next(s, folders, mailbox, mb.exists)?,
        };
        let account = self.name().to_string();
        let last = match self.w.store.folder_state(&account, mailbox)? {
            Some((v, last)) if v == uidvalidity => last,
            Some((v, _)) => {
                // With records of the old generation, its mail that none of
                // them handled is taken up (see `generation`); without, the
                // folder is seen for the first time.
                let earlier = self
                    .w
                    .store
                    .earlier_generation(&account, mailbox, uidvalidity)?;
                let (w, closed, taken) = match earlier {
                    Some(e) => {
                        let new = self.unhandled_in_new_generation(
                            s,
                            mailbox,
                            uidvalidity,
                            mb.exists,
                            &e,
                        )?;
                        let w = uid_next.saturating_sub(1);
                        let closed = self.w.store.adopt_generation(
                            (&account, mailbox),
                            v,
                            uidvalidity,
                            w,
                            &new,
                        )?;
                        (w, closed, Some(new.len()))
                    }
                    None => {
                        let w = self.initial_watermark(s, mb.exists, uid_next)?;
                        let closed = self.w.store.reset_watermark(
                            &Watermark::new(&account, mailbox, uidvalidity, w),
                            v,
                        )?;
                        // Seen for the first time, under `backlog`: what is
                        // there now was there before (the fifth regression
                        // audit found it taken at the next change).
                        self.w.store.note_first_sight(
                            &account,
                            mailbox,
                            matches!(self.w.account.backlog, crate::config::Backlog::All),
                        )?;
                        (w, closed, None)
                    }
                };
                log::warn!(
                    "{account}: {mailbox}: UIDVALIDITY changed from {v} to {uidvalidity}; {}; \
                     {closed} unfinished message(s) of the old generation closed as failed",
                    match taken {
                        Some(n) => format!(
                            "{n} message(s) of the new one that nothing handled are processed, \
                             new mail after UID {w}"
                        ),
                        None => format!(
                            "nothing was handled under the old one: backlog {:?} starts after UID {w}",
                            self.w.account.backlog
                        ),
                    }
                );
                w
            }
            None => {
                let w = self.initial_watermark(s, mb.exists, uid_next)?;
                log::info!(
                    "{account}: {mailbox}: first sight, backlog {:?} starts after UID {w}",
                    self.w.account.backlog
                );
                self.w.store.advance_watermark(&Watermark::new(
                    &account,
                    mailbox,
                    uidvalidity,
                    w,
                ))?;
                self.w.store.note_first_sight(
                    &account,
                    mailbox,
                    matches!(self.w.account.backlog, crate::config::Backlog::All),
                )?;
                w
            }
        };
        let mut uids: BTreeSet<u32> = BTreeSet::new();
        if mb.exists > 0 && uid_next > last.saturating_add(1) {
            // Only UIDs under the SELECT's UIDNEXT: the watermark follows
            // the UIDs handled, and one past UIDNEXT is either mail that came
            // during this pass (the SELECT after it finds it) or a UID no
            // message has (an audit's server answered `* SEARCH 2 5000` with
            // UIDNEXT 3, and the watermark's jump to 5000 skipped the real
            // UIDs 3 to 4999 for good, with no row).
            let mut later = 0usize;
            uids.extend(
                s.uid_search(format!("UID {}:*", last.saturating_add(1)))?
                    .into_iter()
                    .filter(|u| *u > last)
                    .filter(|u| {
                        let before = *u < uid_next;
                        later += usize::from(!before);
                        before
                    }),
            );
            if later > 0 {
                log::debug!(
                    "{}: {mailbox}: {later} UID(s) from the search at or past UIDNEXT {uid_next}, \
                     left for the next pass",
                    self.name()
                );
            }
        }
        let mut known: HashMap<u32, KnownEmail> = HashMap::new();
        let now = now_ms();
        for k in self
            .w
            .store
            .known_emails(&account, mailbox, uidvalidity, last)?
        {
            match k.status {
                Status::Pending => {
                    uids.insert(k.uid);
                }
                Status::Retrying if k.next_attempt_at.is_none_or(|t| t <= now) => {
                    uids.insert(k.uid);
                }
                _ => {
                    uids.remove(&k.uid);
                }
            }
            known.insert(k.uid, k);
        }
        // Mail left alone as handled earlier was found all the same: the
        // server's signal of it was no false one (it read "signalled new
        // mail … that no pass found", and the passes after it waited: an
        // audit).
        let skipped = self.skip_handled_earlier(s, mailbox, uidvalidity, &mut uids, &known)?;
        let uids: Vec<u32> = uids.into_iter().collect();
        self.found += uids.len() + skipped;
        let mut reader = self.second_session(caps, folders, mailbox, uidvalidity, &uids);
        // More than one window: their moves are held and made at the end
        // (see `held`).
        let window = self.window_for(mailbox, uidvalidity);
        self.held = (uids.len() > window).then(|| Held::new(mailbox, uidvalidity));
        let ended = self.windows(
            s,
            caps,
            folders,
            (mailbox, uidvalidity),
            &uids,
            &mut known,
            &mut reader,
        );
        // The second session only reads: it is closed before the moves.
        drop(reader);
        let released = match ended {
            Ok(_) => self.release_held(s, caps, folders),
            // Left `pending` for the next pass.
            Err(_) => Ok(()),
        };
        // Rows recorded behind (see `held`) are announced once durable;
        // after a failed write they are not (the next pass decides them).
        let announced = match self.held.is_some().then(|| self.writer.barrier()) {
            None => Ok(()),
            Some(Ok(())) => self.announce_behind(),
            Some(Err(e)) => Err(e.into()),
        };
        self.held = None;
        let (ended, (), ()) = (ended?, released?, announced?);
        if let Some(end) = ended {
            return Ok(end);
        }
        self.read_through(mailbox, uidvalidity);
        // Everything below the UIDNEXT of the SELECT was searched and
        // handled; UIDs missing from the search were expunged meanwhile.
        // Moving the watermark up to it keeps `behind` from passing again
        // for mail that no longer exists.
        self.w.store.advance_watermark(&Watermark::new(
            &account,
            mailbox,
            uidvalidity,
            uid_next.saturating_sub(1),
        ))?;
        Ok(None)
    }

    /// The windows of a folder's pass, in order. Returns how the pass ends
    /// when it ends before its last window (shutdown, a pause, a command:
    /// the rest waits above the watermark for the next pass), `None` when
    /// every window was handled.
    #[allow(clippy::too_many_arguments)]
    fn windows(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        (mailbox, uidvalidity): (&str, u32),
        uids: &[u32],
        known: &mut HashMap<u32, KnownEmail>,
        reader: &mut Option<Reader>,
    ) -> Result<Option<Option<Exit>>, ImapError> {
        for chunk in uids.chunks(self.window_for(mailbox, uidvalidity)) {
            let complete =
                self.process_window(s, caps, folders, mailbox, uidvalidity, chunk, known, reader)?;
            if self.w.handle.is_shutting_down() {
                return Ok(Some(Some(Exit::Shutdown)));
            }
            if self.paused_now() {
                return Ok(Some(None));
            }
            if let Some(exit) = self.take_commands() {
                return Ok(Some(Some(exit)));
            }
            if !complete {
                // Cut short by a command.
                return Ok(Some(None));
            }
            if self.held_full() {
                self.release_held(s, caps, folders)?;
            }
        }
        Ok(None)
    }

    /// For a pass over at least [`TWO_SESSIONS_MIN`] UIDs of `mailbox`, a
    /// second session that reads their headers (see `reader`), opened for
    /// this folder's pass and closed after it; `None` below that, with
    /// OAuth2 (its tokens belong to the first session), while the folder is
    /// read carefully (see `careful`), or without a thread.
    fn second_session(
        &self,
        caps: &Caps,
        folders: &Folders,
        mailbox: &str,
        uidvalidity: u32,
        uids: &[u32],
    ) -> Option<Reader> {
        if uids.len() < TWO_SESSIONS_MIN
            || self.w.account.imap.auth != crate::config::ImapAuth::Password
            || self.is_careful(mailbox, uidvalidity)
        {
            return None;
        }
        log::info!(
            "{}: {mailbox}: {} UID(s) to read: their headers on two sessions",
            self.name(),
            uids.len()
        );
        // The odd chunks of each window (see `triage`).
        let chunks = uids
            .chunks(window())
            .flat_map(|w| w.chunks(HEADER_CHUNK).skip(1).step_by(2))
            .map(<[u32]>::to_vec)
            .collect();
        Reader::start(
            self.w.account.clone(),
            reader::Plan {
                folder: folders.resolved(mailbox),
                uidvalidity,
                utf8: caps.utf8,
                query: self.header_query(),
                chunks,
            },
            self.w.handle.clone(),
        )
    }

    fn initial_watermark(
        &self,
        s: &mut Session,
        exists: u32,
        uid_next: u32,
    ) -> Result<u32, ImapError> {
        let all = |s: &mut Session| -> Result<Vec<u32>, ImapError> {
            if exists == 0 {
                return Ok(Vec::new());
            }
            let mut v: Vec<u32> = s.uid_search("ALL")?.into_iter().collect();
            v.sort_unstable();
            Ok(v)
        };
        Ok(match self.w.account.backlog {
            Backlog::NewOnly => uid_next.saturating_sub(1),
            Backlog::All => 0,
            Backlog::Recent(n) => {
                let v = all(s)?;
                let n = n as usize;
                if v.len() <= n {
                    0
                } else {
                    v[v.len() - n - 1]
                }
            }
            Backlog::Since(d) => {
                let cutoff = since_cutoff(d);
                let mut found: Vec<u32> = if exists == 0 {
                    Vec::new()
                } else {
                    s.uid_search(format!("SINCE {}", since_date(cutoff)))?
                        .into_iter()
                        .collect()
                };
                found.sort_unstable();
                since_watermark(&arrived_since(s, &found, cutoff)?, uid_next)
            }
        })
    }
}

/// `backlog: since:D`: the moment `D` ago (the epoch when that lies
/// before it).
fn since_cutoff(d: Duration) -> time::OffsetDateTime {
    time::OffsetDateTime::now_utc()
        .checked_sub(time::Duration::try_from(d).unwrap_or(time::Duration::MAX))
        .filter(|t| t.unix_timestamp() >= 0)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH)
}

/// The IMAP date for `SEARCH SINCE` that surely takes in `cutoff`: the
/// day before its own (SINCE compares dates only, in the server's time
/// zone), or the epoch's.
fn since_date(cutoff: time::OffsetDateTime) -> String {
    let day = cutoff
        .checked_sub(time::Duration::DAY)
        .filter(|t| t.unix_timestamp() >= 0)
        .unwrap_or(time::OffsetDateTime::UNIX_EPOCH);
    let fmt = time::macros::format_description!("[day]-[month repr:short]-[year]");
    day.format(fmt).unwrap_or_else(|_| "01-Jan-1970".into())
}

/// Of `found` (ascending), the UIDs that arrived (INTERNALDATE) at or after
/// `cutoff`, read in chunks from the oldest and stopping at the first chunk
/// that has one: only the lowest matters (see [`since_watermark`]). SEARCH
/// SINCE knows days only, so `since:30s` took in everything since the
/// server's midnight (an audit). See [`came_since`].
fn arrived_since(
    s: &mut Session,
    found: &[u32],
    cutoff: time::OffsetDateTime,
) -> Result<Vec<u32>, ImapError> {
    let (cutoff, now) = (
        cutoff.unix_timestamp(),
        time::OffsetDateTime::now_utc().unix_timestamp(),
    );
    for chunk in found.chunks(HEADER_CHUNK) {
        let fetched = s.uid_fetch(super::commands::uid_set(chunk), "(UID INTERNALDATE)")?;
        let young: Vec<u32> = fetched
            .iter()
            .filter(|f| came_since(f.internal_date().map(|at| at.timestamp()), cutoff, now))
            .filter_map(|f| f.uid)
            .collect();
        if !young.is_empty() {
            return Ok(young);
        }
    }
    Ok(Vec::new())
}

/// Whether a message that arrived at `at` (INTERNALDATE, seconds; `None`
/// for none given) came since `cutoff`. A date ahead of `now` by more than
/// an hour (the server's clock) says nothing of when it came: one such
/// message made everything above it "recent" (a regression audit; Dovecot
/// itself clamps a future date to now).
fn came_since(at: Option<i64>, cutoff: i64, now: i64) -> bool {
    at.is_none_or(|at| (cutoff..=now.saturating_add(3600)).contains(&at))
}

/// The watermark before the first UID found by `SINCE`; with none found,
/// everything up to UIDNEXT is old. A UID 0 (which no server should send)
/// yields 0, never a wrap.
fn since_watermark(found: &[u32], uid_next: u32) -> u32 {
    match found.iter().min() {
        Some(min) => min.saturating_sub(1),
        None => uid_next.saturating_sub(1),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_date_far_ahead_is_no_sign_of_having_come_since() {
        let (cutoff, now) = (1_000_000, 1_003_600);
        assert!(came_since(Some(now), cutoff, now));
        assert!(came_since(Some(cutoff), cutoff, now));
        assert!(came_since(None, cutoff, now), "undated: taken");
        assert!(!came_since(Some(cutoff - 1), cutoff, now));
        assert!(
            came_since(Some(now + 600), cutoff, now),
            "a clock a little ahead"
        );
        assert!(!came_since(Some(now + 86_400), cutoff, now));
    }

    #[test]
    fn since_never_wraps() {
        assert_eq!(since_watermark(&[7, 5, 9], 10), 4);
        assert_eq!(since_watermark(&[0, 3], 10), 0);
        assert_eq!(since_watermark(&[], 0), 0);
        assert_eq!(since_watermark(&[], 12), 11);
        let date = |d: Duration| since_date(since_cutoff(d));
        assert_eq!(date(Duration::from_secs(u64::MAX)), "01-Jan-1970");
        assert_eq!(date(Duration::from_secs(100 * 365 * 86_400)), "01-Jan-1970");
        let day = date(Duration::from_secs(86_400));
        assert_eq!(day.len(), 11, "DD-Mon-YYYY: {day}");
        assert_ne!(day, "01-Jan-1970");
        // The day before the cutoff's: SINCE is by the server's date.
        let cutoff = time::macros::datetime!(2026-11-29 00:30 UTC);
        assert_eq!(since_date(cutoff), "28-Nov-2026");
    }
}
