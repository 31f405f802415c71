//! The model's side of a window, without I/O ([`Flow`]): the questions the
//! classifier pool has not taken yet, those in flight, and the answers in
//! hand with when to act on them. `model` drives it with the pool and the
//! session; the tests below drive it alone, through every transition,
//! including a stop (shutdown, a pause, a command, an undo) mid-window.

use std::collections::{HashMap, VecDeque};
use std::time::{Duration, Instant};

use super::state::{Item, MODEL_GROUP};
use crate::classify::{Classification, ClassifyError};

/// An answer of the model in hand waits this long for more, to be acted
/// on with them (one MOVE and one transaction for all)...
pub(super) const LINGER: Duration = Duration::from_millis(100);
/// ...but never longer than this in all, however steadily answers come:
/// what the model decided is on the server and recorded within about a
/// second of its answer, not when the last answer of its group is in.
pub(super) const MAX_HOLD: Duration = Duration::from_secs(1);

/// The model's side of a window. A message left for the model is asked
/// (its question, a `J`, waits until the classifier pool's queue takes
/// it), then answered; answers are held briefly and acted on together
/// ([`LINGER`], [`MAX_HOLD`]), so a slow model's decisions are recorded as
/// they come while a fast model's are still acted on in bulk.
pub(super) struct Flow<J> {
    /// Asked and not answered, by the index their answer carries.
    asked: HashMap<usize, Item>,
    /// Questions the pool has not taken yet, in order.
    waiting: VecDeque<(usize, J)>,
    /// Settled and not acted on yet.
    ready: Vec<Item>,
    /// When the oldest and the newest of `ready` came.
    first: Option<Instant>,
    last: Option<Instant>,
    next: usize,
    stopped: bool,
}

impl<J> Flow<J> {
    pub(super) fn new() -> Flow<J> {
        Flow {
            asked: HashMap::new(),
            waiting: VecDeque::new(),
            ready: Vec::new(),
            first: None,
            last: None,
            next: 0,
            stopped: false,
        }
    }

    /// Asks about an item: `question(index)` is what the pool gets, its
    /// answer carrying `index`. Returns the index.
    pub(super) fn ask(&mut self, item: Item, question: impl FnOnce(usize) -> J) -> usize {
        let index = self.next;
        self.next += 1;
        self.waiting.push_back((index, question(index)));
        self.asked.insert(index, item);
        index
    }

    /// An item settled without the model (its body gone or unreadable):
    /// in hand at once.
    pub(super) fn settled(&mut self, item: Item, now: Instant) {
        self.first.get_or_insert(now);
        self.last = Some(now);
        self.ready.push(item);
    }

    /// The question the pool should take next, if one waits.
    pub(super) fn next_question(&self) -> Option<&J> {
        self.waiting.front().map(|(_, q)| q)
    }

    /// The pool took the next question.
    pub(super) fn handed(&mut self) -> Option<J> {
        self.waiting.pop_front().map(|(_, q)| q)
    }

    /// The model answered question `index` (an unknown index, a question
    /// dropped by [`Flow::stop`], changes nothing).
    pub(super) fn answered(
        &mut self,
        index: usize,
        r: Result<Classification, ClassifyError>,
        took: Duration,
        now: Instant,
    ) {
        if let Some(mut it) = self.asked.remove(&index) {
            it.answered(r, took);
            self.settled(it, now);
        }
    }

    /// The answers to `indexes` will not come (the pool dropped them):
    /// those still asked are failures.
    pub(super) fn unanswered(&mut self, indexes: &[usize], now: Instant) {
        for i in indexes {
            if let Some(mut it) = self.asked.remove(i) {
                it.unanswered();
                self.settled(it, now);
            }
        }
    }

    /// Stops asking (shutdown, a pause, a command or an undo waits): the
    /// questions the pool has not taken are dropped and their messages
    /// left as they are, unrecorded and above the watermark, for the next
    /// pass; the questions in flight are still answered and acted on.
    /// Returns how many were dropped.
    pub(super) fn stop(&mut self) -> usize {
        self.stopped = true;
        let dropped = self.waiting.len();
        for (i, _) in self.waiting.drain(..) {
            self.asked.remove(&i);
        }
        dropped
    }

    /// Whether the next group may be fetched and asked: not stopped, the
    /// pool has taken every question, and less than a group is still
    /// unanswered — so the pool never runs dry while at most about two
    /// groups of bodies are in memory.
    pub(super) fn wants_group(&self) -> bool {
        !self.stopped && self.waiting.is_empty() && self.asked.len() < MODEL_GROUP
    }

    /// Whether the items in hand are to be acted on now: nothing else is
    /// asked, or none came for [`LINGER`], or the oldest waited
    /// [`MAX_HOLD`].
    pub(super) fn due(&self, now: Instant) -> bool {
        !self.ready.is_empty()
            && (self.asked.is_empty() || self.deadline().is_some_and(|d| now >= d))
    }

    /// When the items in hand fall due if nothing else comes.
    pub(super) fn deadline(&self) -> Option<Instant> {
        Some((self.last? + LINGER).min(self.first? + MAX_HOLD))
    }

    /// The items in hand, to be acted on.
    pub(super) fn take_ready(&mut self) -> Vec<Item> {
        self.first = None;
        self.last = None;
        std::mem::take(&mut self.ready)
    }

    /// Questions asked and not answered (in flight or waiting).
    pub(super) fn unanswered_count(&self) -> usize {
        self.asked.len()
    }

    /// Nothing asked, nothing in hand.
    pub(super) fn is_idle(&self) -> bool {
        self.asked.is_empty() && self.ready.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::super::state::{Seen, State, Window};
    use super::*;
    use crate::store::EmailMeta;

    const T: Duration = Duration::from_millis(7);

    fn c(model: &str) -> Classification {
        Classification {
            actions: Vec::new(),
            reasoning: "r".into(),
            model: model.into(),
            confidence: None,
        }
    }

    fn asked(uid: u32) -> Item {
        Item::asked(
            EmailMeta {
                uid,
                ..Default::default()
            },
            Seen::default(),
        )
    }

    fn uids(items: &[Item]) -> Vec<u32> {
        let mut v: Vec<u32> = items.iter().map(|it| it.meta.uid).collect();
        v.sort_unstable();
        v
    }

    /// A flow with `n` messages asked (UIDs 1..=n), questions 0..n.
    fn flow_of(n: u32) -> Flow<u32> {
        let mut f = Flow::new();
        for u in 1..=n {
            f.ask(asked(u), |i| i as u32);
        }
        f
    }

    #[test]
    fn questions_wait_for_the_pool_in_order() {
        let mut f = flow_of(3);
        assert!(!f.wants_group(), "questions still wait for the pool");
        assert_eq!(f.next_question(), Some(&0));
        assert_eq!(f.handed(), Some(0));
        assert_eq!(f.handed(), Some(1));
        assert_eq!(f.handed(), Some(2));
        assert_eq!((f.handed(), f.next_question()), (None, None));
        assert!(f.wants_group(), "all taken, less than a group unanswered");
        assert_eq!(f.unanswered_count(), 3);
        assert!(!f.is_idle());
    }

    #[test]
    fn an_answer_is_acted_on_within_the_linger_not_at_the_end_of_its_group() {
        let t0 = Instant::now();
        let mut f = flow_of(3);
        while f.handed().is_some() {}
        f.answered(1, Ok(c("m")), T, t0);
        assert!(!f.due(t0), "others are in flight: it waits a little");
        assert_eq!(f.deadline(), Some(t0 + LINGER));
        assert!(f.due(t0 + LINGER), "none came meanwhile: acted on");
        let got = f.take_ready();
        assert_eq!(uids(&got), [2]);
        assert!(matches!(got[0].state, State::Decided(_)));
        assert_eq!(f.deadline(), None);
        assert!(!f.due(t0 + MAX_HOLD * 10), "nothing in hand");
        // The last answer of all is acted on at once.
        f.answered(0, Ok(c("m")), T, t0);
        f.answered(2, Err(ClassifyError::Cancelled), T, t0);
        assert!(f.due(t0));
        assert_eq!(uids(&f.take_ready()), [1, 3]);
        assert!(f.is_idle());
    }

    #[test]
    fn a_steady_trickle_of_answers_is_acted_on_at_least_every_max_hold() {
        let t0 = Instant::now();
        let mut f = flow_of(50);
        while f.handed().is_some() {}
        let step = LINGER / 2;
        let mut now = t0;
        let mut i = 0;
        while !f.due(now) {
            f.answered(i, Ok(c("m")), T, now);
            i += 1;
            now += step;
        }
        assert!(now >= t0 + MAX_HOLD && now <= t0 + MAX_HOLD + step);
        assert_eq!(f.take_ready().len(), i);
    }

    #[test]
    fn a_command_mid_window_drops_the_questions_the_pool_has_not_taken() {
        let t0 = Instant::now();
        let mut f = flow_of(5);
        assert_eq!(f.handed(), Some(0));
        assert_eq!(f.handed(), Some(1));
        // Pause, a command, an undo or shutdown: stop asking.
        assert_eq!(f.stop(), 3);
        assert_eq!(f.next_question(), None);
        assert!(!f.wants_group(), "no new group after a stop");
        assert_eq!(f.unanswered_count(), 2, "the two in flight");
        // Answers of dropped questions (they cannot come, but) change
        // nothing; those in flight are acted on.
        f.answered(4, Ok(c("m")), T, t0);
        f.answered(0, Ok(c("m")), T, t0);
        f.answered(1, Err(ClassifyError::Cancelled), T, t0);
        assert!(f.due(t0));
        let got = f.take_ready();
        assert_eq!(uids(&got), [1, 2]);
        assert!(f.is_idle());
        // The window: the dropped three stay open, below the mark.
        let all: Vec<u32> = (1..=5).collect();
        let mut w = Window::new(&all, all.iter().copied());
        w.settle(&got);
        assert_eq!(w.watermark(), 1, "2 was cancelled: it holds the mark");
        assert!(!w.is_done());
    }

    #[test]
    fn unanswered_questions_fail_and_settled_items_come_in_hand() {
        let t0 = Instant::now();
        let mut f = flow_of(2);
        let mut gone = asked(9);
        gone.body_missing();
        f.settled(gone, t0);
        assert!(!f.due(t0), "two are still asked");
        f.unanswered(&[0, 1, 7], t0);
        assert!(f.due(t0));
        let got = f.take_ready();
        assert_eq!(uids(&got), [1, 2, 9]);
        assert_eq!(
            got.iter()
                .filter_map(|it| it.failure().map(|f| f.kind))
                .collect::<Vec<_>>(),
            ["classify_no_answer", "classify_no_answer"]
        );
    }

    #[test]
    fn the_next_group_is_fetched_while_the_last_of_this_one_is_in_flight() {
        let mut f = flow_of(MODEL_GROUP as u32);
        for _ in 0..MODEL_GROUP - 1 {
            f.handed();
        }
        assert!(!f.wants_group(), "one question still waits for the pool");
        f.handed();
        assert!(!f.wants_group(), "a whole group unanswered");
        f.answered(0, Ok(c("m")), T, Instant::now());
        assert!(f.wants_group(), "the pool would run dry otherwise");
    }
}
