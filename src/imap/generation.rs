//! A folder's UIDVALIDITY changed (it was deleted and made again, or the
//! server rebuilt it): its UIDs name other messages, and the records of the
//! old generation say nothing about them by UID. What the new generation
//! holds at that moment is sorted out once:
//!
//! * a message whose Message-ID a record of an earlier generation of the
//!   folder carries (anything but a failure that never got to a decision)
//!   was handled already: it is left alone, never acted on twice;
//! * a message older (INTERNALDATE) than the first record of the folder was
//!   there before mailproc handled anything in it, and the `backlog`
//!   setting left it alone then: so it stays (a rebuilt folder keeps its
//!   mail's dates); but under `backlog: all` nothing was left alone then,
//!   so such a message came since (a copy keeps its date) and is new;
//! * a message without a Message-ID is matched by its subject and sender,
//!   each record of the old generation without a Message-ID standing for
//!   one message, the earliest first: a matched one was handled (the
//!   folder's mail saved again, with new dates, found by an audit: each
//!   was asked about and acted on twice); any other is taken only when it
//!   arrived after the last record of the old generation; and one whose
//!   Date says it was sent after that last record (by more than five
//!   minutes of a sender's clock) came since, whatever record is left: a
//!   copy saved again keeps its Date (an audit found a new nightly report
//!   taken for the handled one of the day before);
//! * every other message is new: it is processed.
//!
//! The new ones become due retries in the same transaction that moves the
//! watermark past the whole generation (`Store::adopt_generation`), so a
//! crash at any point loses none and doubles none. Mail arriving later is
//! above the watermark and processed as always, but for a message whose
//! Message-ID an earlier generation's record carries (a folder restored
//! from a backup after mailproc saw it empty), or, without one, whose
//! subject and sender one carries, sent (Date, else INTERNALDATE) before
//! the last of them: that one is left alone too, for as long as such
//! records are kept (`storage.activity_retention`).
//! Without records of the old generation nothing was handled there: the
//! folder is seen for the first time, under the `backlog` setting.

use std::collections::{BTreeSet, HashMap, HashSet};

use super::session::Session;
use super::{ImapError, Runner};
use crate::store::{Earlier, EmailMeta, KnownEmail};

/// UIDs read per FETCH while sorting a generation out.
const CHUNK: usize = 1000;

/// The most of a message's four fields read to place it in its
/// generation: a Message-ID, a Subject, a From and a Date fit many times.
const FIELDS_CAP: usize = 8 * 1024;
/// INTERNALDATE has whole seconds, and the server's clock is not ours:
/// dates this close to a record's time count as after it.
const CLOCK_SLACK_MS: i64 = 2000;
/// A sender's clock is less sure still: a Date this far after a record's
/// time says the message was sent after it.
const SENDER_CLOCK_SLACK_MS: i64 = 5 * 60 * 1000;

impl Runner {
    /// The messages of the selected `mailbox` (new `uidvalidity`, `exists`
    /// messages) that no record of an `earlier` generation handled or
    /// meant to leave alone (see the module documentation).
    pub(super) fn unhandled_in_new_generation(
        &mut self,
        s: &mut Session,
        mailbox: &str,
        uidvalidity: u32,
        exists: u32,
        earlier: &Earlier,
    ) -> Result<Vec<EmailMeta>, ImapError> {
        if exists == 0 {
            return Ok(Vec::new());
        }
        let mut uids: Vec<u32> = s.uid_search("ALL")?.into_iter().collect();
        uids.sort_unstable();
        let (mut seen, parked) = self.fetch_seen(s, mailbox, uidvalidity, &uids)?;
        let ids: Vec<&str> = seen
            .iter()
            .map(|x| x.meta.message_id.as_str())
            .filter(|id| whole(id))
            .collect();
        let handled: HashSet<String> =
            self.w
                .store
                .handled_earlier(self.name(), mailbox, uidvalidity, &ids)?;
        // A message without a Message-ID stands for itself by its subject
        // and sender: one a record of the old generation carries (the
        // folder's mail saved again, which gives it new dates) was handled.
        // Each record stands for one message, the earliest first: a
        // nightly report that repeats its subject and sender, new since,
        // is still new (an audit found it left without a row).
        seen.sort_unstable_by_key(|x| x.meta.uid);
        let idless = idless_pairs(&seen);
        let mut handled_idless =
            self.w
                .store
                .handled_earlier_without_id(self.name(), mailbox, uidvalidity, &idless)?;
        let total = seen.len();
        // Under `backlog: all` whatever was there at first sight was
        // processed (and its Message-ID is `handled`): an older one not
        // handled came since (a copy keeps its date).
        let era = self.era(mailbox, earlier)?;
        // Copies dated in the old generation's time take their records
        // first (a restored copy that kept its date: the second regression
        // audit found its record vouching for a report that came since);
        // mail from before anything was handled takes none (it was never
        // handled: the third found a re-saved handled copy taken again).
        for x in &seen {
            if x.meta.message_id.is_empty()
                && !era.before_first(x)
                && !era.sent_since(x)
                && era.handled(x)
            {
                vouched(&mut handled_idless, &x.meta);
            }
        }
        let new: Vec<EmailMeta> = seen
            .into_iter()
            .filter(|x| {
                let m = &x.meta;
                let before_first = era.before_first(x);
                // Sent after the old generation's last record (its Date,
                // which a copy saved again keeps): a report that came
                // since, whatever record is left (an audit found one taken
                // for the handled report of the day before).
                let unmatched_old = m.message_id.is_empty()
                    && !era.sent_since(x)
                    && (era.handled(x) || vouched(&mut handled_idless, m));
                // Likewise a Message-ID handled before, on mail sent since
                // (a monitor's alerts reuse one: an audit found the new one
                // left without a row).
                let handled_old = handled.contains(&m.message_id) && !era.sent_since(x);
                let take = !(handled_old || before_first || unmatched_old);
                log::debug!(
                    "{}: {mailbox}: UID {} {:?} dated {:?}: {}",
                    self.name(),
                    m.uid,
                    crate::logging::clean(&m.message_id),
                    x.at,
                    if take { "new" } else { "left alone" }
                );
                take
            })
            .map(|x| x.meta)
            .chain(
                // Parked: never read, so never known to be handled. Taken
                // up as new, the pass meets them and records them failed.
                parked
                    .iter()
                    .map(|&uid| self.meta(mailbox, uidvalidity, uid, None)),
            )
            .collect();
        log::info!(
            "{}: {mailbox}: UIDVALIDITY {uidvalidity}: {} of {total} message(s) are new and will \
             be processed; the others were handled under an earlier UIDVALIDITY (same \
             Message-ID, or subject and sender for mail without one) or were there before \
             anything was handled in this folder",
            self.name(),
            new.len()
        );
        Ok(new)
    }

    /// Takes out of `uids` (new to the folder, not known by any record of
    /// this generation) the messages an earlier generation of `mailbox`
    /// handled: its records carry their Message-ID, or, for a message
    /// without one, their subject and sender, the message sent (its Date,
    /// else its INTERNALDATE) before the last of them (a copy restored after
    /// mailproc saw the folder empty: found by an audit acted on again).
    /// Returns how many.
    pub(super) fn skip_handled_earlier(
        &mut self,
        s: &mut Session,
        mailbox: &str,
        uidvalidity: u32,
        uids: &mut BTreeSet<u32>,
        known: &HashMap<u32, KnownEmail>,
    ) -> Result<usize, ImapError> {
        let new: Vec<u32> = uids
            .iter()
            .copied()
            .filter(|u| !known.contains_key(u))
            .collect();
        if new.is_empty() {
            return Ok(0);
        }
        if !self
            .w
            .store
            .has_earlier_generation(self.name(), mailbox, uidvalidity)?
        {
            return Ok(0);
        }
        // A parked message stays in `uids`: the pass records it failed.
        let (seen, _parked) = self.fetch_seen(s, mailbox, uidvalidity, &new)?;
        let ids: Vec<&str> = seen
            .iter()
            .map(|x| x.meta.message_id.as_str())
            .filter(|id| whole(id))
            .collect();
        let handled = self
            .w
            .store
            .handled_earlier(self.name(), mailbox, uidvalidity, &ids)?;
        // The old generation's times and records without a Message-ID
        // are read only for new mail without one: a scan of the old
        // records on every pass with new mail is not needed otherwise.
        let pairs = idless_pairs(&seen);
        let earlier = match pairs.is_empty() && handled.is_empty() {
            true => None,
            false => self
                .w
                .store
                .earlier_generation(self.name(), mailbox, uidvalidity)?,
        };
        let era = match &earlier {
            Some(e) => Some(self.era(mailbox, e)?),
            None => None,
        };
        let idless = match (&era, pairs.is_empty()) {
            (Some(era), false) => Some((
                era,
                self.w.store.handled_earlier_without_id(
                    self.name(),
                    mailbox,
                    uidvalidity,
                    &pairs,
                )?,
            )),
            _ => None,
        };
        let mut skipped = 0;
        for x in &seen {
            let m = &x.meta;
            let left = if m.message_id.is_empty() {
                let Some((era, records)) = &idless else {
                    continue;
                };
                !era.before_first(x)
                    && era.sent_before(x)
                    && records
                        .get(&(m.subject.clone(), m.from.clone()))
                        .is_some_and(|n| *n > 0)
            } else {
                // Sent after the old generation's last record, it cannot
                // be what that generation handled, whatever its
                // Message-ID (a monitor's alerts reuse one): an audit found
                // such new mail skipped for good, with no row.
                handled.contains(&m.message_id) && !era.as_ref().is_some_and(|e| e.sent_since(x))
            };
            if left {
                uids.remove(&m.uid);
                skipped += 1;
            }
        }
        if skipped > 0 {
            log::info!(
                "{}: {mailbox}: {skipped} message(s) were handled under an earlier UIDVALIDITY \
                 (same Message-ID, or subject and sender for mail without one): left alone",
                self.name()
            );
        }
        Ok(skipped)
    }

    /// The Message-ID, subject, sender, INTERNALDATE and Date of each of
    /// `uids` in the selected `mailbox`, but for the parked ones (returned
    /// beside). Read as a pass reads headers (see `careful`): each message's
    /// fields cut at [`FIELDS_CAP`], and a session lost while a chunk was
    /// read makes the next try read smaller ones, down to one message,
    /// which is parked when it ends the session again. Without that, one
    /// unreadable message (or a few with 1 MB subjects) ended every session
    /// at the same FETCH, and nothing of the folder was processed again
    /// (an audit).
    fn fetch_seen(
        &mut self,
        s: &mut Session,
        mailbox: &str,
        uidvalidity: u32,
        uids: &[u32],
    ) -> Result<(Vec<Seen>, Vec<u32>), ImapError> {
        let parked = self.parked_among(mailbox, uidvalidity, uids);
        let uids: Vec<u32> = uids
            .iter()
            .copied()
            .filter(|u| !parked.contains(u))
            .collect();
        let size = CHUNK.min(self.window_for(mailbox, uidvalidity));
        let mut seen = Vec::with_capacity(uids.len());
        for chunk in uids.chunks(size) {
            let fetched = self.fetch_carefully(
                s,
                (mailbox, uidvalidity),
                chunk,
                &format!(
                    "(UID INTERNALDATE BODY.PEEK[HEADER.FIELDS (MESSAGE-ID SUBJECT FROM DATE)]<0.{FIELDS_CAP}>)"
                ),
            )?;
            for f in fetched.iter() {
                let Some(uid) = f.uid else { continue };
                let e = f
                    .header()
                    .and_then(crate::classify::Email::parse_headers)
                    .unwrap_or_default();
                // A Date ahead of now says nothing (an audit found a
                // handled copy with one taken for mail that came since).
                let sent = e
                    .header("Date")
                    .and_then(mail_parser::DateTime::parse_rfc822)
                    .filter(|d| d.is_valid())
                    .map(|d| d.to_timestamp().saturating_mul(1000))
                    .filter(|t| *t <= crate::timestamp::now_ms() + SENDER_CLOCK_SLACK_MS);
                seen.push(Seen {
                    meta: EmailMeta {
                        account: self.name().to_string(),
                        mailbox: mailbox.to_string(),
                        uidvalidity,
                        uid,
                        message_id: e.message_id,
                        subject: e.subject,
                        from: e.from,
                    },
                    at: f.internal_date().map(|d| d.timestamp_millis()),
                    sent,
                });
            }
        }
        Ok((seen, parked))
    }

    /// The times that place a message of a new generation of `mailbox`
    /// against what the `earlier` one handled.
    fn era(&self, mailbox: &str, earlier: &Earlier) -> Result<Era, ImapError> {
        // Before the folder was first seen, else (seen by an older
        // version) before its first record: the first record may come well
        // after the mail it handled (a paused account: the fourth
        // regression audit found such mail taken for mail from before).
        // Under `backlog: all` then (whatever the setting now: the fifth
        // found it read from the setting now), nothing was before.
        let all = matches!(self.w.account.backlog, crate::config::Backlog::All);
        let (since, none_before) = match self.w.store.first_sight(self.name(), mailbox)? {
            Some(f) => (f.at, f.all),
            None => (earlier.first_at, all),
        };
        Ok(Era {
            since,
            none_before,
            last_at: earlier.last_at,
        })
    }
}

/// A message of a new generation: what identifies it, when the server got
/// it (INTERNALDATE, ms) and when it says it was sent (Date, ms).
struct Seen {
    meta: EmailMeta,
    at: Option<i64>,
    sent: Option<i64>,
}

/// The (subject, sender) of the messages of `seen` without a Message-ID.
fn idless_pairs(seen: &[Seen]) -> HashSet<(String, String)> {
    seen.iter()
        .filter(|x| x.meta.message_id.is_empty())
        .map(|x| (x.meta.subject.clone(), x.meta.from.clone()))
        .collect()
}

/// When a folder was first seen (and whether `backlog: all` took what
/// was there then), and when the old generation's last record was made.
struct Era {
    since: i64,
    none_before: bool,
    last_at: i64,
}

impl Era {
    /// There before mailproc handled anything in the folder.
    fn before_first(&self, x: &Seen) -> bool {
        !self.none_before && x.at.is_some_and(|t| t < self.since - CLOCK_SLACK_MS)
    }

    /// Dated (INTERNALDATE) in the old generation's time, or undated.
    fn handled(&self, x: &Seen) -> bool {
        x.at.is_none_or(|t| t < self.last_at - CLOCK_SLACK_MS)
    }

    /// Sent (its Date) after the old generation's last record: it came
    /// since, whatever its INTERNALDATE.
    fn sent_since(&self, x: &Seen) -> bool {
        x.sent
            .is_some_and(|t| t > self.last_at + SENDER_CLOCK_SLACK_MS)
    }

    /// Sent (its Date, else its INTERNALDATE) before the old generation's
    /// last record.
    fn sent_before(&self, x: &Seen) -> bool {
        x.sent
            .or(x.at)
            .is_some_and(|t| t < self.last_at - CLOCK_SLACK_MS)
    }
}

/// Whether a record without a Message-ID of the old generation is left
/// to stand for `m` (by subject and sender); taking it uses it up.
fn vouched(left: &mut HashMap<(String, String), usize>, m: &EmailMeta) -> bool {
    match left.get_mut(&(m.subject.clone(), m.from.clone())) {
        Some(n) if *n > 0 => {
            *n -= 1;
            true
        }
        _ => false,
    }
}

/// Whether a recorded Message-ID can stand for its message here: not
/// empty, and not cut (a record keeps 998 characters of it; two messages
/// whose ids share those were taken for one, and the second was left
/// without a row: found by an audit).
fn whole(id: &str) -> bool {
    !id.is_empty() && id.chars().count() < crate::email::MAX_HEADER_CHARS + 2
}
