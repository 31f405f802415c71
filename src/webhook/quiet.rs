//! The targets that gave no answer to their last attempt: the one
//! delivery thread does not ask them again until their wait is over.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use super::{shown_url, WebhookError};

/// The targets that gave no answer to their last attempt, by URL: not
/// asked again until their wait is over (one sequential thread serves every
/// target, and a silent one would cost each event its whole time-out).
#[derive(Default)]
pub(super) struct Quiet {
    targets: HashMap<String, Silent>,
}

struct Silent {
    until: Instant,
    wait: Duration,
}

/// The first wait after a target gave no answer, doubled each time it stays
/// silent, up to [`QUIET_MAX`].
const QUIET_FIRST: Duration = Duration::from_secs(10);
const QUIET_MAX: Duration = Duration::from_secs(300);

impl Quiet {
    /// Whether `url` is still in its wait: how long it has left.
    pub(super) fn waiting(&self, url: &str, now: Instant) -> Option<Duration> {
        self.targets
            .get(url)
            .and_then(|s| s.until.checked_duration_since(now))
            .filter(|left| !left.is_zero())
    }

    /// Forgets `url`'s wait: a reload removed it.
    pub(super) fn forget(&mut self, url: &str) {
        self.targets.remove(url);
    }

    /// Notes the outcome of an attempt to `url`.
    pub(super) fn note(&mut self, url: &str, result: &Result<u16, WebhookError>, now: Instant) {
        if !matches!(result, Err(WebhookError::Transport(_))) {
            self.targets.remove(url);
            return;
        }
        let wait = self
            .targets
            .get(url)
            .map_or(QUIET_FIRST, |s| (s.wait * 2).min(QUIET_MAX));
        log::warn!(
            "webhooks: {} gave no answer; its events are not sent for {} s",
            shown_url(url),
            wait.as_secs()
        );
        self.targets.insert(
            url.to_string(),
            Silent {
                until: now + wait,
                wait,
            },
        );
    }
}
