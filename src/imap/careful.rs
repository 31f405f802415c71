//! Messages that end the session. A server may close the connection
//! whenever it reads one stored message (Dovecot says `* BYE Internal
//! error occurred` for a file it cannot read: damaged, or not readable by
//! it); the account reconnected, read the same window again, lost the
//! session again, and no message of the folder was processed for good
//! (found by an audit: one unreadable file of 50 stopped the account, the
//! other 49 never got a row).
//!
//! So a session lost while a window's headers were read makes the next
//! pass of that folder read smaller windows: each loss in the same place
//! divides the window by [`SHRINK`], down to one message. A single message
//! whose reading ends the session [`LOSSES_TO_PARK`] times is parked
//! without being read again: a `failed` row with the server's words, left
//! where it is (Retry asks the server again). Every other message of the
//! folder is processed meanwhile, in the smaller windows up to the one
//! that breaks. A pass that reads its folder through without a loss goes
//! back to whole windows. What this knows lives with the account's thread,
//! across reconnects; a restart starts from whole windows again.

use std::collections::{BTreeMap, HashMap};

use super::state::{Failure, Item, Seen};
use super::Runner;
use crate::store::KnownEmail;

/// Each loss in the same window divides the next window by this.
const SHRINK: usize = 10;

/// Losses while one message alone was read before it is parked.
const LOSSES_TO_PARK: u32 = 2;

/// A folder's generation: its name and UIDVALIDITY.
type Generation = (String, u32);

/// The window whose headers are being read: its first UID and size.
#[derive(Debug)]
pub(super) struct Reading {
    folder: Generation,
    first: u32,
    len: usize,
}

/// What the account learnt of a folder's generation from sessions lost
/// while reading it.
#[derive(Debug, Default)]
pub(super) struct Careful {
    /// The window size its next pass reads with.
    size: Option<usize>,
    /// Losses while this one message alone was read.
    alone: HashMap<u32, u32>,
    /// Messages parked without being read: UID → why.
    parked: BTreeMap<u32, String>,
}

impl Runner {
    /// What sessions lost while reading `mailbox` taught; `None` (without
    /// a lookup) for every folder of an account that never lost one.
    fn careful_of(&self, mailbox: &str, uidvalidity: u32) -> Option<&Careful> {
        if self.careful.is_empty() {
            return None;
        }
        self.careful.get(&(mailbox.to_string(), uidvalidity))
    }

    /// The window size for a pass of `mailbox`: smaller after sessions
    /// lost while reading it.
    pub(super) fn window_for(&self, mailbox: &str, uidvalidity: u32) -> usize {
        self.careful_of(mailbox, uidvalidity)
            .and_then(|c| c.size)
            .unwrap_or_else(super::window)
    }

    /// Whether a pass of `mailbox` reads carefully: in smaller windows, or
    /// past a parked message, on the account's session alone.
    pub(super) fn is_careful(&self, mailbox: &str, uidvalidity: u32) -> bool {
        self.careful_of(mailbox, uidvalidity).is_some()
    }

    /// A window's headers are about to be read.
    pub(super) fn reading(&mut self, mailbox: &str, uidvalidity: u32, uids: &[u32]) {
        self.reading = Some(Reading {
            folder: (mailbox.to_string(), uidvalidity),
            first: uids.first().copied().unwrap_or(0),
            len: uids.len(),
        });
    }

    /// The window's headers were read.
    pub(super) fn read_done(&mut self) {
        self.reading = None;
    }

    /// `UID FETCH uids (items)` of `mailbox`, read carefully: between
    /// [`Runner::reading`] and [`Runner::read_done`], and a refusal that
    /// keeps the session (a NO) counted as a loss too, so the next pass
    /// reads fewer at a time and parks the message that keeps failing.
    pub(super) fn fetch_carefully(
        &mut self,
        s: &mut super::session::Session,
        (mailbox, uidvalidity): (&str, u32),
        uids: &[u32],
        items: &str,
    ) -> Result<imap::types::Fetches, super::ImapError> {
        self.reading(mailbox, uidvalidity, uids);
        let fetched = match s.uid_fetch(super::commands::uid_set(uids), items) {
            Ok(fetched) => fetched,
            Err(e @ (imap::Error::No(_) | imap::Error::Bad(_))) => {
                self.lost_while_reading(&e.to_string());
                return Err(e.into());
            }
            Err(e) => return Err(e.into()),
        };
        self.read_done();
        Ok(fetched)
    }

    /// A pass of `mailbox` read it through: whole windows again. A parked
    /// message that pass did not meet is gone from the folder (its row
    /// was written when the pass met it), so nothing is kept.
    pub(super) fn read_through(&mut self, mailbox: &str, uidvalidity: u32) {
        if !self.careful.is_empty() {
            self.careful.remove(&(mailbox.to_string(), uidvalidity));
        }
    }

    /// The session ended with `error`; if a window's headers were being
    /// read, the next pass of that folder reads smaller windows, and a
    /// message read alone that ended it often enough is parked.
    pub(super) fn lost_while_reading(&mut self, error: &str) {
        let Some(Reading { folder, first, len }) = self.reading.take() else {
            return;
        };
        let name = self.name().to_string();
        let c = self.careful.entry(folder.clone()).or_default();
        if len == 1 {
            let uid = first;
            let n = c.alone.entry(uid).or_insert(0);
            *n += 1;
            if *n < LOSSES_TO_PARK {
                log::warn!(
                    "{name}: {}: the session ended while UID {uid} alone was read ({error}); \
                     if it does again, the message is parked",
                    folder.0
                );
            } else {
                log::warn!(
                    "{name}: {}: the session ended each time UID {uid} was read ({error}): \
                     it is parked, not read again",
                    folder.0
                );
                c.alone.remove(&uid);
                c.parked.insert(
                    uid,
                    format!(
                        "the server ended the session each time this message was read \
                         ({error}); it was left where it is, unread: Retry asks the server again"
                    ),
                );
            }
            c.size = Some(1);
            return;
        }
        let size = (len / SHRINK).max(1);
        log::warn!(
            "{name}: {}: the session ended while {len} message(s) from UID {first} were read; \
             the next pass reads {size} at a time",
            folder.0
        );
        c.size = Some(size);
    }

    /// Which of `uids` are parked in `mailbox` (usually none, without a
    /// lookup).
    pub(super) fn parked_among(&self, mailbox: &str, uidvalidity: u32, uids: &[u32]) -> Vec<u32> {
        match self.careful_of(mailbox, uidvalidity) {
            Some(c) if !c.parked.is_empty() => uids
                .iter()
                .copied()
                .filter(|u| c.parked.contains_key(u))
                .collect(),
            _ => Vec::new(),
        }
    }

    /// `uids` without the parked ones of `mailbox`, and a failed item for
    /// each parked one, recorded as such (`known` loses their rows); `None`
    /// when the folder has none.
    pub(super) fn without_parked(
        &mut self,
        mailbox: &str,
        uidvalidity: u32,
        uids: &[u32],
        known: &mut HashMap<u32, KnownEmail>,
    ) -> Option<(Vec<u32>, Vec<Item>)> {
        self.careful_of(mailbox, uidvalidity)
            .filter(|c| !c.parked.is_empty())?;
        let c = self.careful.get_mut(&(mailbox.to_string(), uidvalidity))?;
        let mut keep = Vec::with_capacity(uids.len());
        let mut parked = Vec::new();
        for &uid in uids {
            match c.parked.remove(&uid) {
                Some(why) => parked.push((uid, why)),
                None => keep.push(uid),
            }
        }
        let items = parked
            .into_iter()
            .map(|(uid, why)| {
                let seen = Seen {
                    known: known.remove(&uid).is_some(),
                    ..Seen::default()
                };
                let meta = self.meta(mailbox, uidvalidity, uid, None);
                Item::failed(meta, seen, Failure::permanent(why, "imap"))
            })
            .collect();
        Some((keep, items))
    }
}
