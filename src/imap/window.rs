//! One window of a folder's new mail: its headers fetched and decided in one
//! go (journal, rules), what they decide acted on as one group, and the
//! messages left for the model handed to `model`, whose answers come back
//! here to be acted on as they arrive.

use std::borrow::Cow;
use std::collections::HashMap;
use std::time::Instant;

use super::headers::{read_heads, send_heads, Heads, HEADER_CHUNK};
use super::reader::Reader;
use super::session::{Caps, Folders, Session};
use super::state::{Failure, Item, Seen, Stop, Window};
use super::{ImapError, Runner};
use crate::classify::{Classification, Email};
use crate::store::{Decision, EmailMeta, KnownEmail, Status};

/// The folder a window belongs to.
#[derive(Clone, Copy)]
pub(super) struct Folder<'a> {
    pub(super) mailbox: &'a str,
    pub(super) uidvalidity: u32,
}

/// The decision a `pending` journal row holds.
fn journalled(k: &KnownEmail) -> Classification {
    Classification {
        actions: k.actions.clone(),
        reasoning: k.reasoning.clone(),
        model: k.model.clone(),
        confidence: k.confidence,
    }
}

impl Runner {
    pub(super) fn meta(
        &self,
        mailbox: &str,
        uidvalidity: u32,
        uid: u32,
        e: Option<&Email>,
    ) -> EmailMeta {
        EmailMeta {
            account: self.name().to_string(),
            mailbox: mailbox.to_string(),
            uidvalidity,
            uid,
            message_id: e.map(|e| e.message_id.clone()).unwrap_or_default(),
            subject: e.map(|e| e.subject.clone()).unwrap_or_default(),
            from: e.map(|e| e.from.clone()).unwrap_or_default(),
        }
    }

    /// Handles one window of a folder's UIDs. The headers of the window come
    /// in FETCHes of [`HEADER_CHUNK`] (only the fields rules read) and what
    /// the journal or the rules decide is acted on and recorded as one
    /// group. With a second session (`reader`), it reads every other FETCH.
    /// Messages left for the model go to `ask_model`, and its answers are
    /// acted on and recorded as they arrive (see `flow::Flow`).
    ///
    /// Returns whether the whole window was handled; `false` when shutdown,
    /// a pause or a command cut it short (the rest stays above the watermark
    /// for the next pass).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn process_window(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        mailbox: &str,
        uidvalidity: u32,
        uids: &[u32],
        known: &mut HashMap<u32, KnownEmail>,
        reader: &mut Option<Reader>,
    ) -> Result<bool, ImapError> {
        let t = Instant::now();
        let (ready, to_model) = self.triage(s, mailbox, uidvalidity, uids, known, reader)?;
        log::debug!(
            "{}: {mailbox}: window of {} UID(s): headers fetched and decided in {:?}, {} for the model",
            self.name(),
            uids.len(),
            t.elapsed(),
            to_model.len()
        );
        let f = Folder {
            mailbox,
            uidvalidity,
        };
        let mut w = Window::new(uids, ready.iter().chain(&to_model).map(|it| it.meta.uid));
        self.finish(s, caps, folders, f, &mut w, ready, true)?;
        let complete =
            to_model.is_empty() || self.ask_model(s, caps, folders, f, &mut w, to_model)?;
        Ok(complete && w.is_done())
    }

    /// Why the window must stop before its end, if it must.
    pub(super) fn stop_now(&self) -> Option<Stop> {
        Stop::check(
            self.w.handle.is_shutting_down(),
            self.paused_now(),
            !self.w.commands.is_empty(),
            !self.refiles.is_empty(),
        )
    }

    /// Journals, acts on and records one decided group of a window: the
    /// decisions are durable before the first command, and the watermark
    /// is written after every row of the group. With `hold`, in a pass
    /// that holds its moves (see `held`), the group's moves are held for
    /// the pass's end instead, journalled.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn finish(
        &mut self,
        s: &mut Session,
        caps: &Caps,
        folders: &Folders,
        f: Folder<'_>,
        w: &mut Window,
        items: Vec<Item>,
        hold: bool,
    ) -> Result<(), ImapError> {
        if items.is_empty() {
            return Ok(());
        }
        let mut items = items;
        let t = Instant::now();
        // (What `triage` decided is journalled already; the model's answers
        // are journalled here.)
        self.journal(&mut items);
        self.writer.barrier()?;
        // Rows a group before sent behind are durable now.
        self.announce_behind()?;
        let mut outcomes = self.outcomes(&items);
        // Decisions journalled, nothing done on the server yet.
        crate::failpoint::hit("before-act");
        let journalled = t.elapsed();
        if hold {
            // Held: journalled, so settled; learned from now.
            let held = self.hold(&mut items, &mut outcomes);
            if !held.is_empty() {
                w.settle(&held);
                let o = self.outcomes(&held);
                let mut examples = Vec::new();
                let mut learned = Vec::new();
                for (it, o) in held.iter().zip(&o) {
                    if let Some(e) = o
                        .as_ref()
                        .and_then(|o| self.example(it, o, folders, f.mailbox))
                    {
                        examples.push(e);
                        learned.push(it.meta.uid);
                    }
                }
                self.held_learned(&learned);
                self.learn(examples);
            }
        }
        let plan = self.plan(&items, &outcomes, folders);
        if hold && self.may_record_behind(&plan, &items) {
            let examples = self.examples(&items, &outcomes, &HashMap::new(), folders, f.mailbox);
            self.learn(examples);
            let n = items.len();
            self.record_behind(items, outcomes, w, f);
            log::debug!(
                "{}: {}: group of {n}: journalled in {journalled:?}, recorded behind; \
                 {} message(s) held to move at the pass's end",
                self.name(),
                f.mailbox,
                self.held.as_ref().map_or(0, |h| h.len())
            );
            return Ok(());
        }
        let super::batch::Acted {
            failed,
            finals: early,
            moved,
        } = self.act_and_finalize(s, caps, folders, f.mailbox, &plan, &items, &outcomes)?;
        let acted = t.elapsed();
        // The watermark may pass everything of the window but what is still
        // undecided (a later group) or cancelled: those stay above it.
        w.settle(&items);
        let examples = self.examples(&items, &outcomes, &failed, folders, f.mailbox);
        self.record(
            &items,
            outcomes,
            &failed,
            &early,
            &moved,
            (f.mailbox, f.uidvalidity, w.watermark()),
        )?;
        self.learn(examples);
        log::debug!(
            "{}: {}: group of {}: journalled in {journalled:?}, acted by {acted:?}, recorded by {:?}{}",
            self.name(),
            f.mailbox,
            items.len(),
            t.elapsed(),
            match &self.held {
                Some(h) if hold => format!("; {} message(s) held to move at the pass's end", h.len()),
                _ => String::new(),
            }
        );
        Ok(())
    }

    /// Fetches the window's headers and decides what needs no model: the
    /// journalled decision of a `pending` row, a rule, the learned
    /// classifier, or nothing at all when no model is configured. Returns
    /// those, journalled, and the messages left for the model (asked).
    ///
    /// The headers come in FETCHes of [`HEADER_CHUNK`] UIDs, pipelined: the
    /// next chunk's FETCH is sent before this chunk is decided, so the
    /// server reads the next headers while we parse and decide these, and
    /// each chunk's decisions go to the journal writer and are written
    /// meanwhile too. One FETCH is unanswered at a time. (A broken session
    /// leaves the chunks decided before it journalled, as after a crash.)
    ///
    /// With a second session (`reader`), that session reads the odd chunks
    /// and this one the even ones, each pipelined: the server works on two
    /// FETCHes at once, in two processes. The chunks are decided in order.
    /// When the second session ends early, this one reads the chunk it did
    /// not deliver and the rest.
    fn triage(
        &mut self,
        s: &mut Session,
        mailbox: &str,
        uidvalidity: u32,
        uids: &[u32],
        known: &mut HashMap<u32, KnownEmail>,
        reader: &mut Option<Reader>,
    ) -> Result<(Vec<Item>, Vec<Item>), ImapError> {
        self.refresh_learner();
        let query = self.header_query();
        // A message whose reading ended the session is not read again.
        let (uids, mut ready) = match self.without_parked(mailbox, uidvalidity, uids, known) {
            Some((kept, parked)) => (Cow::Owned(kept), parked),
            None => (Cow::Borrowed(uids), Vec::new()),
        };
        ready.reserve(uids.len());
        let mut to_model: Vec<Item> = Vec::new();
        let chunks: Vec<&[u32]> = uids.chunks(HEADER_CHUNK).collect();
        self.reading(mailbox, uidvalidity, &uids);
        // Whether the FETCH of this session's next chunk went out already,
        // and a chunk's answer read ahead of its turn.
        let mut sent = false;
        let mut stash: Option<Heads> = None;
        for (i, chunk) in chunks.iter().enumerate() {
            // With a second session, it reads the odd chunks.
            let mine = reader.is_none() || i % 2 == 0;
            let heads = if !mine {
                match reader.as_mut().map(Reader::next) {
                    Some(Ok(h)) => h,
                    other => {
                        if let Some(Err(e)) = other {
                            log::info!(
                                "{}: {}: {e}; reading on with one session",
                                self.name(),
                                mailbox
                            );
                        }
                        *reader = None;
                        if sent {
                            // The next chunk's answer, read before this one's.
                            stash = Some(read_heads(s, &query, self.name())?);
                            sent = false;
                        }
                        send_heads(s, &query, chunk)?;
                        read_heads(s, &query, self.name())?
                    }
                }
            } else {
                let h = match stash.take() {
                    Some(h) => h,
                    None => {
                        if !sent {
                            send_heads(s, &query, chunk)?;
                        }
                        // (Reading a long header again field by field
                        // happens here, before the next FETCH goes out.)
                        read_heads(s, &query, self.name())?
                    }
                };
                sent = false;
                let step = if reader.is_some() { 2 } else { 1 };
                if let Some(next) = chunks.get(i + step) {
                    send_heads(s, &query, next)?;
                    sent = true;
                }
                h
            };
            let (mut r, m) = self.decide(mailbox, uidvalidity, chunk, &heads, known);
            drop(heads);
            self.journal(&mut r);
            ready.extend(r);
            to_model.extend(m);
        }
        self.read_done();
        Ok((ready, to_model))
    }

    /// Decides the messages of one FETCH of headers (see [`Runner::triage`]).
    fn decide(
        &self,
        mailbox: &str,
        uidvalidity: u32,
        uids: &[u32],
        fetched: &Heads,
        known: &mut HashMap<u32, KnownEmail>,
    ) -> (Vec<Item>, Vec<Item>) {
        crate::failpoint::hit("decide");
        let learned = self.w.account.learned.enabled;
        // UID → (header, first part of the text, flags, size, whether the
        // header was read field by field).
        type Head<'a> = (&'a [u8], Option<&'a [u8]>, Vec<String>, u32, bool);
        let mut heads: HashMap<u32, Head<'_>> = HashMap::with_capacity(uids.len());
        // UIDs the server answered for, without the header asked for.
        let mut headless = std::collections::HashSet::new();
        // A header under no UID asked for (none, 0, or another): the
        // answer cannot be trusted to leave out only messages gone, so
        // what it leaves out is a failure of the server's, not gone (a
        // hostile-server audit saw the watermark pass such messages with
        // no row). An unsolicited FETCH of flags carries no header.
        let asked: std::collections::HashSet<u32> = uids.iter().copied().collect();
        let stray_header = fetched
            .fetched
            .iter()
            .any(|f| f.header().is_some() && f.uid.is_none_or(|u| !asked.contains(&u)));
        for f in fetched.fetched.iter() {
            if let (Some(uid), None) = (f.uid, f.header()) {
                headless.insert(uid);
            }
            if let (Some(uid), Some(h)) = (f.uid, f.header()) {
                let flags = f
                    .flags()
                    .iter()
                    .filter(|x| !matches!(x, imap::types::Flag::Recent))
                    .map(|x| x.to_string())
                    .collect();
                let (h, long) = match fetched.long.get(&uid) {
                    Some(l) => (l.as_slice(), true),
                    None => (h, false),
                };
                heads.insert(uid, (h, f.text(), flags, f.size.unwrap_or(0), long));
            }
        }

        let mut ready: Vec<Item> = Vec::with_capacity(uids.len());
        let mut to_model: Vec<Item> = Vec::new();
        let mut moved_already: Vec<u32> = Vec::new();
        for &uid in uids {
            let k = known.remove(&uid);
            let Some((raw, text, flags, size, long)) = heads.remove(&uid) else {
                // Answered without its header: a failure of the server's,
                // recorded and retried, never passed over in silence.
                if headless.contains(&uid) {
                    ready.push(Item::failed(
                        self.meta(mailbox, uidvalidity, uid, None),
                        Seen::default(),
                        Failure::new(
                            "the server answered the header FETCH without the header",
                            "imap",
                        ),
                    ));
                    continue;
                }
                if stray_header && k.is_none() {
                    ready.push(Item::failed(
                        self.meta(mailbox, uidvalidity, uid, None),
                        Seen::default(),
                        Failure::new(
                            "the server answered the header FETCH with a header under a UID \
                             not asked for (none, 0 or another), and not for this one",
                            "imap",
                        ),
                    ));
                    continue;
                }
                // Gone between SEARCH and FETCH, or moved by us before a crash.
                if let Some(item) = self.gone(mailbox, uidvalidity, uid, k.as_ref()) {
                    if item.gone() {
                        moved_already.push(uid);
                    }
                    ready.push(item);
                }
                continue;
            };
            let started = Instant::now();
            // Only the fields rules read were fetched: a message with none
            // of them is not broken, just one no rule can match by them (the
            // model, which reads it whole, judges whether it parses at all).
            let email = if learned {
                super::learn_email(raw, text)
            } else {
                Email::parse_headers(raw).unwrap_or_default()
            };
            let meta = self.meta(mailbox, uidvalidity, uid, Some(&email));
            let seen = Seen {
                known: k.is_some(),
                flags,
                size,
                header_truncated: long,
                features: learned.then(|| crate::learn::features(&email)),
            };
            let item = match k {
                Some(k) if k.status == Status::Pending => {
                    Item::journalled(meta, seen, journalled(&k), false)
                }
                _ => {
                    let guess = seen
                        .features
                        .as_ref()
                        .and_then(|f| self.learned(mailbox, f));
                    // A filing rule gives way to the classifier's sure
                    // spam verdict (`learned.spam_first`).
                    let rule = self.w.rules.classify(&email).map(|c| {
                        match guess
                            .as_ref()
                            .filter(|g| self.spam_first(Some(g), &c, &self.junk))
                        {
                            Some(g) => super::learned::before_rule(g, &c),
                            None => c,
                        }
                    });
                    let decision = if let Some(c) = rule {
                        c
                    } else if let Some(c) =
                        guess.clone().filter(|c| self.learned_sure(c, &self.junk))
                    {
                        c
                    } else if self.w.provider.is_some() {
                        to_model.push(Item::asked(meta, seen));
                        continue;
                    } else if let Some(c) = guess {
                        // Neither sure: recorded for review (see `outcomes`).
                        c
                    } else {
                        Classification {
                            actions: Vec::new(),
                            reasoning: "no rule matched and no model is configured".into(),
                            model: "none".into(),
                            confidence: None,
                        }
                    };
                    Item::decided(meta, seen, decision, started.elapsed())
                }
            };
            ready.push(item);
        }
        // One line for the window: a database that could not take the
        // records (a full disk) had a line per message at each retry, 800
        // at a time, saying "before a restart" when none had happened (an
        // audit), hiding the error that mattered.
        if let (Some(first), Some(last)) = (moved_already.first(), moved_already.last()) {
            log::info!(
                "{}: {mailbox}: {} message(s) (UIDs {first} to {last}) were moved as journalled \
                 before their records were written (a restart, or a record that failed); \
                 recording them",
                self.name(),
                moved_already.len()
            );
        }
        (ready, to_model)
    }

    /// Journals the decided messages of `items` that this run will act on
    /// (not a dry run, not for review, not already journalled), marking
    /// each so its row is finished as journalled. The writes go to the
    /// journal writer; `finish` waits for them before acting.
    fn journal(&self, items: &mut [Item]) {
        let outcomes = self.outcomes(items);
        let (at, journal): (Vec<usize>, Vec<Decision>) = items
            .iter()
            .zip(outcomes)
            .enumerate()
            .filter_map(|(i, (it, o))| {
                o.filter(|o| {
                    o.status == Status::Ok
                        && !o.actions.is_empty()
                        && !it.is_replay()
                        && !it.journalled_now()
                })
                .map(|o| (i, (it.meta.clone(), o, it.seen.flags.clone())))
            })
            .unzip();
        self.writer.decisions(journal);
        for i in at {
            items[i].mark_journalled();
        }
    }

    /// A message the FETCH did not return: a journalled one we moved before
    /// its record was written (a restart, a record that failed) is finished
    /// with its decision; one that was failing is
    /// given up; a new one is simply gone.
    fn gone(
        &self,
        mailbox: &str,
        uidvalidity: u32,
        uid: u32,
        k: Option<&KnownEmail>,
    ) -> Option<Item> {
        // Announced as recorded: its header is out of reach, and its
        // webhooks went out with an empty subject and sender (the crash
        // audit: 150 of 300 after a kill mid-pass).
        let recorded = |k: &KnownEmail| EmailMeta {
            message_id: k.message_id.clone(),
            subject: k.subject.clone(),
            from: k.sender.clone(),
            ..self.meta(mailbox, uidvalidity, uid, None)
        };
        match k {
            Some(k) if k.status == Status::Pending => Some(Item::journalled(
                recorded(k),
                Seen::default(),
                journalled(k),
                true,
            )),
            Some(k) if k.status == Status::Retrying => {
                Some(Item::failed(recorded(k), Seen::default(), Failure::gone()))
            }
            _ => None,
        }
    }
}
