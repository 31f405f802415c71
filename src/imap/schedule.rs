//! The session's loop and its schedule: a pass over the watched folders,
//! then a wait for new mail (IDLE, or polling) until the next wake-up.
//!
//! When the next wake-up is, and why, is decided by a small pure
//! [`Schedule`]: the earliest of the IDLE re-issue, the poll interval, the
//! longest wait between passes, an OAuth2 token renewal and a retry falling
//! due. Only the IDLE re-issue is followed by no pass: the server's answer
//! to `DONE` proved it is there, and IDLE starts again. [`Runner::serve`]
//! follows it: commands first, then refile requests, a pass when one is
//! due, a token renewal when due, then the wait. A pass the server
//! prompts waits first once such passes keep finding nothing ([`Quiet`]).

use std::time::{Duration, Instant};

use super::session::{Caps, Control, Folders, Session};
use super::{Exit, ImapError, Runner, IDLE_EXIT, IDLE_MAX};
use crate::account::{Message, State};
use crate::config::AccountConfig;

/// A renewal or a retry that is due (or overdue) still waits this long, so
/// a deadline that cannot be met (its folder cannot be opened) does not
/// turn the loop into a spin.
const FLOOR: Duration = Duration::from_millis(200);

/// Passes the server prompted (an `EXISTS` in IDLE, or the folder found
/// behind its watermark after a pass) that found nothing, in a row, before
/// the next such pass waits: a real server's signal is followed by new
/// mail, so only a broken or hostile one (an `EXISTS` in every IDLE, a
/// UIDVALIDITY that changes at every SELECT) reaches it.
const QUIET_FREE: u32 = 2;
/// The wait before a prompted pass past [`QUIET_FREE`]: 1 s doubling to
/// this. New mail that comes meanwhile waits at most this long, and only
/// after such a run of empty passes; the first pass that finds a message
/// ends the run.
const QUIET_MAX: Duration = Duration::from_secs(30);

/// Empty passes the server prompted, in a row (see [`QUIET_FREE`]).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(super) struct Quiet {
    empty: u32,
}

impl Quiet {
    /// A pass ended: `prompted` by the server's signal, having taken up
    /// `found` messages. A pass that found mail ends the run; a pass the
    /// schedule made (a poll, the longest wait, a command) leaves it as
    /// it is.
    pub(super) fn after_pass(&mut self, prompted: bool, found: usize) {
        if found > 0 {
            self.empty = 0;
        } else if prompted {
            self.empty = self.empty.saturating_add(1);
        }
    }

    /// How long the next prompted pass waits first, if at all.
    pub(super) fn rest(&self) -> Option<Duration> {
        let past = self.empty.checked_sub(QUIET_FREE)?;
        let secs = 1u64.checked_shl(past.min(16)).unwrap_or(u64::MAX);
        Some(Duration::from_secs(secs).min(QUIET_MAX))
    }

    /// Whether the run of empty passes just reached the point where passes
    /// wait (said once in the log, not at every pass).
    pub(super) fn just_started(&self) -> bool {
        self.empty == QUIET_FREE
    }
}

/// Whether a pass is due, and who asked for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Due {
    No,
    /// The schedule: connecting, a poll, the longest wait, a retry.
    Scheduled,
    /// The server: an `EXISTS` ended IDLE, or the folder was found behind
    /// its watermark after a pass (see [`Quiet`]).
    Prompted,
}

/// Why a wait ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Why {
    /// IDLE is re-issued (`imap.idle_interval`): no pass follows.
    Reissue,
    /// The poll interval: no IDLE, or other watched folders to look at.
    Poll,
    /// The longest wait between passes while idling ([`IDLE_MAX`]).
    Longest,
    /// The session's access token falls due for renewal.
    Renew,
    /// A failed message's retry falls due.
    Retry,
}

impl Why {
    /// Whether a pass follows a wait that ran to its end for this reason.
    pub(super) fn pass_after(self) -> bool {
        self != Why::Reissue
    }
}

/// The next wake-up: after how long, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Wake {
    pub(super) after: Duration,
    pub(super) why: Why,
}

/// What the schedule knows of the account.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Schedule {
    pub(super) poll_interval: Duration,
    pub(super) idle_interval: Duration,
    /// More than one folder is watched: the others are polled while the
    /// first is idled on.
    pub(super) several_folders: bool,
}

impl Schedule {
    pub(super) fn of(a: &AccountConfig) -> Schedule {
        Schedule {
            poll_interval: a.poll_interval.0,
            idle_interval: a.imap.idle_interval.0,
            several_folders: a.folders.watch.len() > 1,
        }
    }

    /// The next wake-up. `idling`: the wait is an IDLE (the server offers
    /// it and the first watched folder could be selected); `renew`, `retry`:
    /// the time left until the token renewal and the next retry, if any.
    pub(super) fn next(
        &self,
        idling: bool,
        renew: Option<Duration>,
        retry: Option<Duration>,
    ) -> Wake {
        let mut wake = Wake {
            after: IDLE_MAX,
            why: Why::Longest,
        };
        let mut sooner = |after: Duration, why: Why| {
            if after < wake.after {
                wake = Wake { after, why };
            }
        };
        if !idling || self.several_folders {
            sooner(self.poll_interval, Why::Poll);
        }
        if let Some(left) = renew {
            sooner(left.max(FLOOR), Why::Renew);
        }
        if let Some(left) = retry {
            sooner(left.max(FLOOR), Why::Retry);
        }
        if idling {
            sooner(self.idle_interval, Why::Reissue);
        }
        wake
    }
}

impl Runner {
    /// Serves one session: passes over the watched folders, refile
    /// requests, and the waits between passes, until a command, a renewal
    /// or an error ends it.
    pub(super) fn serve(
        &mut self,
        s: &mut Session,
        control: &Control,
        caps: &Caps,
        folders: &Folders,
    ) -> Result<Exit, ImapError> {
        let schedule = Schedule::of(&self.w.account);
        // The first pass after connecting always runs (unless paused): mail
        // may have arrived while we were away.
        let mut due = Due::Scheduled;
        let mut quiet = Quiet::default();
        // The prompted pass due has had its rest (see `Quiet`).
        let mut rested = false;
        loop {
            if let Some(exit) = self.take_commands() {
                return Ok(exit);
            }
            self.serve_refiles(s, caps, folders)?;
            if std::mem::take(&mut self.refiled) {
                // The server's signal of a message put back is our doing.
                quiet = Quiet::default();
            }
            // `process` runs one whole pass, also while paused (`forced`
            // holds for the pass; a pause cuts short only the others).
            let force = std::mem::take(&mut self.force_pass);
            if force || (due != Due::No && !self.w.handle.is_paused()) {
                let prompted = due == Due::Prompted && !force;
                if prompted && !std::mem::take(&mut rested) {
                    if let Some(rest) = quiet.rest() {
                        if quiet.just_started() {
                            log::warn!(
                                "{}: the server signalled new mail {QUIET_FREE} times in a row \
                                 that no pass found; the passes it prompts wait first (1 s \
                                 doubling to {} s) until one finds mail",
                                self.name(),
                                QUIET_MAX.as_secs()
                            );
                        }
                        if !self.rest(rest) {
                            return Ok(Exit::Shutdown);
                        }
                        rested = true;
                        continue;
                    }
                }
                self.forced = force;
                let r = self.pass(s, caps, folders);
                self.forced = false;
                if let Some(exit) = r? {
                    return Ok(exit);
                }
                quiet.after_pass(prompted, self.found);
            } else if due != Due::No {
                log::debug!("{}: paused: the pass waits for resume", self.name());
            }
            rested = false;
            self.w.handle.set_state(if self.w.handle.is_paused() {
                State::Paused
            } else if self.trouble.is_some() {
                // A watched folder could not be read: not a quiet success.
                State::Error
            } else {
                State::Connected
            });
            // After the pass, so a session that took long to open still
            // does its work before signing in again.
            if self.renew_due() {
                if let Some(exit) = self.prepare_renewal() {
                    return Ok(exit);
                }
            }
            // What the pass took in between its windows (an undo, a
            // `process`, a reconnect) is served now, not after the IDLE that
            // would follow: an audit's undo sent during the last folder's
            // windows waited its 40 s and was refused, and a `process` of a
            // paused account waited for the IDLE's re-issue (60 s).
            if !self.refiles.is_empty() || self.force_pass || !self.queued.is_empty() {
                due = Due::No;
                continue;
            }
            // IDLE needs its folder selected; if it is missing, poll instead.
            let first = &self.w.account.folders.watch[0];
            let selected = if caps.idle {
                match folders.select(s, first) {
                    Ok(mb) => Some(mb),
                    Err(imap::Error::No(_) | imap::Error::Bad(_)) => None,
                    Err(e) => return Err(e.into()),
                }
            } else {
                None
            };
            // Mail that arrived during the pass is already counted by this
            // SELECT, so IDLE would not announce it: pass again instead of
            // waiting for the next message or the IDLE re-issue.
            if let Some(mb) = &selected {
                if !self.w.handle.is_paused() && self.behind(s, folders, first, mb)? {
                    due = Due::Prompted;
                    continue;
                }
            }
            let wake = schedule.next(selected.is_some(), self.until_renew(), self.next_retry());
            due = match selected {
                Some(_) => self.idle_until(s, control, wake)?,
                None => match self.poll_until(s, control, wake)? {
                    Some(due) => due,
                    None => return Ok(Exit::Shutdown),
                },
            };
        }
    }

    /// Waits up to `rest` for a command or a refile request, which the
    /// loop then serves. Returns `false` when the command channel is gone
    /// (shutdown).
    fn rest(&mut self, rest: Duration) -> bool {
        match self.w.commands.recv_timeout(rest) {
            Ok(Message::Command(cmd)) => self.queued.push(cmd),
            Ok(Message::Refile(r)) => self.refiles.push(r),
            Err(crossbeam_channel::RecvTimeoutError::Timeout) => {}
            Err(crossbeam_channel::RecvTimeoutError::Disconnected) => return false,
        }
        true
    }

    /// Waits in IDLE until `wake`, new mail or a command. Returns whether a
    /// pass follows: not after a wait that only re-issues IDLE (the SELECT
    /// on the way back still notices missed mail), nor when a command
    /// arrived before IDLE began (it is taken first); prompted when the
    /// server announced mail.
    fn idle_until(
        &mut self,
        s: &mut Session,
        control: &Control,
        wake: Wake,
    ) -> Result<Due, ImapError> {
        self.w.handle.arm_wake(true);
        // A command that arrived before the wake-up was armed could not
        // wake us; look once more before blocking. One that comes later
        // wakes the IDLE wait (see session::Stream).
        if !self.w.commands.is_empty() || self.w.handle.is_shutting_down() {
            self.w.handle.arm_wake(false);
            return Ok(Due::No);
        }
        // The wait ends at its deadline whatever the server sends
        // meanwhile.
        let deadline = Instant::now() + wake.after;
        control.plan_idle(deadline);
        let r = s
            .idle()
            .timeout(wake.after)
            .keepalive(false)
            .wait_while(|resp| {
                super::folders::tell_warning(&self.w.account.name, &resp, "the IDLE");
                !matches!(resp, imap::types::UnsolicitedResponse::Exists(_))
            });
        self.w.handle.arm_wake(false);
        let outcome = match r {
            Ok(o) => o,
            Err(e) => {
                control.commands();
                return Err(e.into());
            }
        };
        let timed_out = outcome == imap::extensions::idle::WaitOutcome::TimedOut;
        if timed_out {
            // The crate sent DONE but drops a missing answer; a NOOP within
            // the same bound (set when the wait ended) shows the server is
            // there.
            let r = s.noop();
            control.commands();
            r?;
        }
        control.commands();
        if !timed_out {
            return Ok(Due::Prompted);
        }
        if !wake.why.pass_after() {
            if Instant::now() >= deadline {
                log::debug!("{}: IDLE re-issued", self.name());
            }
            return Ok(Due::No);
        }
        Ok(Due::Scheduled)
    }

    /// Waits for a command until `wake`, then a NOOP keeps the connection
    /// alive and learns of new mail. Returns that a pass follows, or `None`
    /// when the command channel is gone (shutdown).
    fn poll_until(
        &mut self,
        s: &mut Session,
        control: &Control,
        wake: Wake,
    ) -> Result<Option<Due>, ImapError> {
        if !self.rest(wake.after) {
            return Ok(None);
        }
        control.answer_within(self.w.account.imap.timeout.0.min(IDLE_EXIT));
        let r = s.noop();
        control.commands();
        r?;
        Ok(Some(Due::Scheduled))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Duration = Duration::from_secs(1);

    fn schedule(poll: u64, idle: u64, several_folders: bool) -> Schedule {
        Schedule {
            poll_interval: Duration::from_secs(poll),
            idle_interval: Duration::from_secs(idle),
            several_folders,
        }
    }

    fn wake(after: Duration, why: Why) -> Wake {
        Wake { after, why }
    }

    #[test]
    fn idling_re_issues_idle_without_a_pass() {
        let s = schedule(300, 60, false);
        let w = s.next(true, None, None);
        assert_eq!(w, wake(60 * S, Why::Reissue));
        assert!(!w.why.pass_after());
        // An IDLE interval past the longest wait: the longest wait, a pass.
        let w = schedule(300, 3600, false).next(true, None, None);
        assert_eq!(w, wake(IDLE_MAX, Why::Longest));
        assert!(w.why.pass_after());
    }

    #[test]
    fn without_idle_the_poll_interval_and_a_pass() {
        let s = schedule(300, 60, false);
        let w = s.next(false, None, None);
        assert_eq!(w, wake(300 * S, Why::Poll));
        assert!(w.why.pass_after());
        // The poll interval bounds the wait, never the IDLE interval.
        assert_eq!(
            schedule(10, 60, false).next(false, None, None).after,
            10 * S
        );
        assert_eq!(
            schedule(3600, 60, false).next(false, None, None),
            wake(IDLE_MAX, Why::Longest)
        );
    }

    #[test]
    fn other_watched_folders_are_polled_while_idling() {
        // Poll sooner than the re-issue: the poll wins, and a pass follows.
        let w = schedule(30, 60, true).next(true, None, None);
        assert_eq!(w, wake(30 * S, Why::Poll));
        // The re-issue sooner: IDLE again, no pass, until the poll is due.
        assert_eq!(
            schedule(300, 60, true).next(true, None, None).why,
            Why::Reissue
        );
        // One folder: the poll interval plays no part while idling.
        assert_eq!(
            schedule(30, 60, false).next(true, None, None).why,
            Why::Reissue
        );
    }

    #[test]
    fn a_token_renewal_or_a_retry_wakes_the_session_sooner() {
        let s = schedule(300, 60, false);
        assert_eq!(s.next(true, Some(20 * S), None), wake(20 * S, Why::Renew));
        assert_eq!(
            s.next(true, Some(20 * S), Some(5 * S)),
            wake(5 * S, Why::Retry)
        );
        assert_eq!(s.next(false, None, Some(5 * S)), wake(5 * S, Why::Retry));
        // Later than the re-issue: the re-issue first.
        assert_eq!(s.next(true, Some(90 * S), Some(70 * S)).why, Why::Reissue);
        assert!(Why::Renew.pass_after() && Why::Retry.pass_after());
    }

    #[test]
    fn an_overdue_deadline_waits_a_little_not_at_all() {
        let s = schedule(300, 60, false);
        assert_eq!(
            s.next(true, Some(Duration::ZERO), None),
            wake(FLOOR, Why::Renew)
        );
        assert_eq!(
            s.next(false, None, Some(Duration::from_millis(1))),
            wake(FLOOR, Why::Retry)
        );
    }

    #[test]
    fn empty_passes_the_server_prompts_wait_longer_and_longer() {
        let mut q = Quiet::default();
        let mut rests = Vec::new();
        for _ in 0..10 {
            rests.push(q.rest().map(|d| d.as_secs()));
            q.after_pass(true, 0);
        }
        assert_eq!(
            rests,
            [
                None,
                None,
                Some(1),
                Some(2),
                Some(4),
                Some(8),
                Some(16),
                Some(30),
                Some(30),
                Some(30)
            ]
        );
        // Never overflows, however long the run.
        for _ in 0..100 {
            q.after_pass(true, 0);
        }
        assert_eq!(q.rest(), Some(QUIET_MAX));
        // A pass that finds mail ends the run, prompted or not.
        q.after_pass(false, 3);
        assert_eq!(q.rest(), None);
    }

    #[test]
    fn passes_the_schedule_makes_neither_count_nor_end_the_run() {
        let mut q = Quiet::default();
        for _ in 0..3 {
            q.after_pass(true, 0);
        }
        assert!(!q.just_started());
        assert_eq!(q.rest(), Some(2 * S));
        q.after_pass(false, 0);
        assert_eq!(q.rest(), Some(2 * S));
        // Said once, when passes first wait.
        let mut q = Quiet::default();
        q.after_pass(true, 0);
        assert!(!q.just_started());
        q.after_pass(true, 0);
        assert!(q.just_started());
    }

    #[test]
    fn equal_deadlines_keep_the_pass() {
        // The re-issue equal to another deadline is that deadline: its pass
        // is not skipped.
        let w = schedule(60, 60, true).next(true, None, None);
        assert_eq!(w, wake(60 * S, Why::Poll));
        let w = schedule(300, 60, false).next(true, Some(60 * S), None);
        assert_eq!(w, wake(60 * S, Why::Renew));
    }
}
