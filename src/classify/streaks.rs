//! Whether a provider is down: the calls in a row that got no answer, and
//! the messages in a row whose calls were no use (refused as a bad
//! request, or no verdict), each counted from the lane's results.

use std::sync::atomic::{AtomicU32, Ordering};

use parking_lot::Mutex;

use super::ClassifyError;

/// Calls in a row without an answer (time-outs, refused connections, HTTP
/// errors that are not about the message) after which a provider counts as
/// down: `/health` reads `degraded` and the log says so once, until a call
/// is answered. Each call has already been retried by then.
pub const DOWN_AFTER: u32 = 3;

/// Messages in a row whose calls were answered with no use after which a
/// provider counts as down too: refused as a bad request (HTTP 400, 413,
/// 422) or answered with no verdict. One such answer is about its message
/// (a mail the model cannot read); ten messages in a row, none with a
/// verdict between, are the settings (a model name the server reads as
/// another, a `response_format` it refuses, a model that writes prose).
/// Every message then failed while `/health` read healthy (an audit).
/// Messages, not calls: each message is asked up to `max_attempts` times,
/// and four refused messages read as ten calls (a regression audit).
pub const USELESS_AFTER: usize = 10;

/// The two counts of one provider's lane.
#[derive(Default)]
pub(super) struct Streaks {
    /// Calls in a row that got no answer from the provider.
    unanswered: AtomicU32,
    /// The messages (account and `Job::message`) whose calls were of no use,
    /// since the last verdict; at most [`USELESS_AFTER`].
    useless: Mutex<Vec<String>>,
    /// What the log said when the provider went down (for the dashboard);
    /// read only while [`Streaks::down`].
    why: Mutex<String>,
    /// Whether any call was answered since the start (a verdict or not).
    answered: std::sync::atomic::AtomicBool,
}

/// A provider as the dashboard tells it (`/health` reads only down or
/// not).
#[derive(Debug, Clone, PartialEq)]
pub enum State {
    /// Its last call was answered with a verdict.
    Answering,
    /// Asked, and no call answered yet.
    Unanswered,
    /// Its last calls failed, not yet enough of them to be down: why.
    Failing(String),
    /// Down (see [`Streaks::down`]): what the log said.
    Down(String),
}

impl Streaks {
    /// Whether the provider counts as down.
    pub fn down(&self) -> bool {
        self.unanswered.load(Ordering::SeqCst) >= DOWN_AFTER
            || self.useless.lock().len() >= USELESS_AFTER
    }

    /// Why the provider is down, as the log said it; `None` while it is
    /// not.
    pub fn why_down(&self) -> Option<String> {
        self.down().then(|| self.why.lock().clone())
    }

    /// How the provider is doing, for the dashboard: a provider whose
    /// first two calls were refused read "answering" there (the
    /// regression audit), as `/health` reads it `ok` until the third.
    pub fn state(&self) -> State {
        if let Some(why) = self.why_down() {
            return State::Down(why);
        }
        let unanswered = self.unanswered.load(Ordering::SeqCst);
        if unanswered > 0 {
            return State::Failing(format!(
                "its last {unanswered} call(s) got no answer (down at {DOWN_AFTER})"
            ));
        }
        let useless = self.useless.lock().len();
        if useless > 0 {
            return State::Failing(format!(
                "the calls for its last {useless} message(s) were refused or had no verdict \
                 (down at {USELESS_AFTER})"
            ));
        }
        if self.answered.load(Ordering::SeqCst) {
            State::Answering
        } else {
            State::Unanswered
        }
    }

    /// Starts both counts again (the provider's settings changed); whether
    /// it was down.
    pub fn reset(&self) -> bool {
        let was = self.down();
        self.unanswered.store(0, Ordering::SeqCst);
        self.useless.lock().clear();
        was
    }

    /// Counts `result` of a call to `provider` about `message` (which
    /// stored message it is), and says in the log when the provider goes down
    /// (the [`DOWN_AFTER`]th call in a row without an answer, or the
    /// [`USELESS_AFTER`]th message with no use) and when it answers again.
    pub fn count<T>(&self, provider: &str, message: &str, result: &Result<T, ClassifyError>) {
        match result {
            Err(ClassifyError::Cancelled) => {}
            Err(e) if unanswered(e) => {
                if self.unanswered.fetch_add(1, Ordering::SeqCst) + 1 == DOWN_AFTER {
                    let what = no_answer(provider, e);
                    let why = format!("{DOWN_AFTER} calls in a row {what}");
                    warn_down(provider, &why);
                    *self.why.lock() = why;
                }
            }
            Err(e) => {
                // An answer, if not a verdict: the provider is reachable.
                self.answered.store(true, Ordering::SeqCst);
                let was = self.unanswered.swap(0, Ordering::SeqCst) >= DOWN_AFTER;
                if useless(e) {
                    let mut seen = self.useless.lock();
                    if seen.len() < USELESS_AFTER && !seen.iter().any(|m| m == message) {
                        seen.push(message.to_string());
                        if seen.len() == USELESS_AFTER {
                            let what = no_use(provider, e);
                            let why =
                                format!("the calls for {USELESS_AFTER} messages in a row {what}");
                            warn_down(provider, &why);
                            *self.why.lock() = why;
                        }
                    }
                } else if was && !self.down() {
                    log::info!("provider {provider}: answering again");
                }
            }
            Ok(_) => {
                self.answered.store(true, Ordering::SeqCst);
                if self.reset() {
                    log::info!("provider {provider}: answering again");
                }
            }
        }
    }
}

/// Whether `e` says the provider could not be reached or would not answer
/// at all, rather than something about this message or its answer: a
/// time-out, a connection that failed, or an HTTP error other than one
/// about the request's content (400, 413, 422).
fn unanswered(e: &ClassifyError) -> bool {
    match e {
        ClassifyError::Timeout { .. } | ClassifyError::Transport { .. } => true,
        ClassifyError::Http { status, .. } => !matches!(status, 400 | 413 | 422),
        _ => false,
    }
}

/// Whether `e` is an answer of no use: the request refused for its
/// content, or no verdict. A verdict the account does not allow is one
/// account's settings, not the provider's (every account shares it); a
/// panic is a bug of ours.
fn useless(e: &ClassifyError) -> bool {
    matches!(
        e,
        ClassifyError::Http { .. } | ClassifyError::InvalidAnswer { .. }
    )
}

fn warn_down(provider: &str, what: &str) {
    log::warn!(
        "provider {provider}: {what}; /health reads degraded until one is \
         answered with a verdict, and messages that fail meanwhile are parked as failed after \
         their attempts (Retry all on the dashboard's Needs attention page, or POST \
         /api/activity/retry)"
    );
}

/// What the calls without an answer got, and what to check.
fn no_answer(provider: &str, e: &ClassifyError) -> String {
    match e {
        // A refusal of the credentials is an answer, and says what to
        // mend (it read "no answer", naming no setting: an audit).
        ClassifyError::Http {
            status: 401 | 403, ..
        } => format!(
            "were refused the credentials (the last: {e}): check \
             classifier.providers[{provider}].api_key, or the user and password in its url when \
             it has no api_key"
        ),
        // A wrong endpoint or model name is a 404 at every provider:
        // named, as the key is for a 401 (an audit).
        ClassifyError::Http { status: 404, .. } => format!(
            "got HTTP 404 (the last: {e}): check classifier.providers[{provider}].url (the whole \
             endpoint, ending in /v1/chat/completions or /v1/messages) and its model"
        ),
        ClassifyError::Http { .. } => format!("got an HTTP error (the last: {e})"),
        _ => format!("got no answer (the last: {e})"),
    }
}

/// What the calls of no use got, and what to check.
fn no_use(provider: &str, e: &ClassifyError) -> String {
    format!(
        "were refused as bad requests or answered with no verdict (the last: {e}): check \
         classifier.providers[{provider}].model and its settings (each failed message's error \
         says more)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn http(status: u16) -> Result<(), ClassifyError> {
        Err(ClassifyError::Http {
            provider: "p".into(),
            status,
            body: String::new(),
        })
    }

    fn invalid() -> Result<(), ClassifyError> {
        Err(ClassifyError::InvalidAnswer {
            provider: "p".into(),
            error: "not JSON".into(),
        })
    }

    #[test]
    fn three_calls_without_an_answer_are_down_until_an_answer() {
        let s = Streaks::default();
        assert_eq!(s.state(), State::Unanswered);
        s.count("p", "m1", &http(503));
        assert!(
            matches!(s.state(), State::Failing(ref w) if w.starts_with("its last 1 call(s)")),
            "{:?}",
            s.state()
        );
        s.count("p", "m1", &http(503));
        assert!(!s.down());
        s.count("p", "m2", &http(503));
        assert!(s.down());
        let why = s.why_down().unwrap();
        assert!(
            why.starts_with("3 calls in a row got an HTTP error"),
            "{why}"
        );
        // A refusal of the request is an answer: reachable again.
        s.count("p", "m3", &http(400));
        assert!(!s.down());
        assert_eq!(s.why_down(), None);
        // Reachable, but of no use to that message: failing, not down.
        assert!(matches!(s.state(), State::Failing(_)), "{:?}", s.state());
        s.count("p", "m4", &Ok::<(), ClassifyError>(()));
        assert_eq!(s.state(), State::Answering);
    }

    #[test]
    fn ten_messages_of_no_use_in_a_row_are_down_until_a_verdict() {
        let s = Streaks::default();
        for i in 0..USELESS_AFTER {
            assert!(!s.down(), "after {i}");
            // Each message asked three times (its attempts): one message.
            for _ in 0..3 {
                if i % 2 == 0 {
                    s.count("p", &format!("m{i}"), &http(400));
                } else {
                    s.count("p", &format!("m{i}"), &invalid());
                }
            }
        }
        assert!(s.down());
        // Nor does a call that got no answer, or a cancelled one, end it.
        s.count("p", "m", &http(503));
        s.count::<()>("p", "m", &Err(ClassifyError::Cancelled));
        assert!(s.down());
        s.count("p", "m", &Ok(()));
        assert!(!s.down());
        // Nine, then a verdict, then nine: never down.
        for i in 0..USELESS_AFTER - 1 {
            s.count("p", &format!("a{i}"), &invalid());
        }
        s.count("p", "m", &Ok(()));
        for i in 0..USELESS_AFTER - 1 {
            s.count("p", &format!("b{i}"), &invalid());
        }
        assert!(!s.down());
        assert!(!s.reset());
        // Four messages refused at every one of their attempts: not down.
        for i in 0..4 {
            for _ in 0..3 {
                s.count("p", &format!("c{i}"), &http(400));
            }
        }
        assert!(!s.down());
        // A verdict the account does not allow is the account's settings.
        for i in 0..USELESS_AFTER {
            s.count::<()>(
                "p",
                &format!("d{i}"),
                &Err(ClassifyError::Disallowed {
                    provider: "p".into(),
                    error: "spam is not allowed".into(),
                }),
            );
        }
        assert!(!s.down());
    }
}
