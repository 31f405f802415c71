//! A configured model endpoint: OpenAI-compatible or Anthropic, over ureq.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::{json, Value};

use super::choice::{choice_messages, choice_request, parse_choice};
use super::prompt::{shot_turns, JsonMode};
use super::*;
use crate::backoff::Backoff;
use crate::config::{AccountConfig, AnswerMode, ProviderConfig, ProviderKind};
use crate::learn::Shot;
use crate::metrics::Metrics;

/// A configured model endpoint with its own rate limit.
/// How long a provider that refused the best way to ask for JSON is asked
/// a lesser way before the best is tried again.
const ASK_AGAIN: Duration = Duration::from_secs(10 * 60);

pub struct Provider {
    pub config: ProviderConfig,
    agent: ureq::Agent,
    /// The earliest instant the next request may start (rate limit).
    next_slot: Mutex<Instant>,
    /// Index into [`JsonMode::ALL`] of the way this server last accepted.
    json_mode: std::sync::atomic::AtomicUsize,
    /// When it last fell back to a lesser way: the best is asked again
    /// after [`ASK_AGAIN`], so one refusal that was the server's hiccup does
    /// not cost the schema for good (an audit: one 400, then `json_object`
    /// until a restart, and with it the schema that keeps a llama.cpp
    /// model's folders inside `allowed`).
    fell_back: Mutex<Option<Instant>>,
    metrics: Arc<Metrics>,
    /// The pace of the log's retry lines: at most one a second for the
    /// provider, whichever account's call it was (a backlog with the
    /// provider down wrote one a call; an audit).
    retry_lines: Mutex<crate::logging::LinesPerSecond>,
}

mod wire;

use wire::Reply;

#[cfg(test)]
mod tests;

impl Provider {
    /// Builds the provider's HTTP agent: native-tls (the OpenSSL and system
    /// trust store the IMAP side uses) or only `ca_file` when set; no proxy
    /// unless `proxy` is set, whatever the environment says.
    pub fn new(config: ProviderConfig, metrics: Arc<Metrics>) -> Result<Provider, String> {
        let agent = crate::agent::build(
            config.ca_file.as_deref(),
            config.proxy.as_deref(),
            config.timeout.0,
            config.timeout.0.min(Duration::from_secs(10)),
        )
        .map_err(|e| format!("provider {}: {e}", config.name))?;
        metrics.init_provider(&config.name);
        Ok(Provider {
            config,
            agent,
            next_slot: Mutex::new(Instant::now()),
            json_mode: std::sync::atomic::AtomicUsize::new(0),
            fell_back: Mutex::new(None),
            retry_lines: Mutex::new(Default::default()),
            metrics,
        })
    }

    /// Waits for this provider's rate limit, if any; false when `stop`
    /// said stop meanwhile (the slot taken is then lost, which only
    /// makes the next call wait a little longer).
    fn throttle(&self, stop: &dyn Fn() -> bool) -> bool {
        wait_unless(self.take_slot(), stop)
    }

    /// Takes the next call slot of the rate limit: how long until it
    /// comes (zero without `rate_limit_rpm`).
    pub(crate) fn take_slot(&self) -> Duration {
        let Some(rpm) = self.config.rate_limit_rpm else {
            return Duration::ZERO;
        };
        let interval = Duration::from_secs(60) / rpm.max(1);
        let mut next = self.next_slot.lock();
        let now = Instant::now();
        let start = (*next).max(now);
        *next = start + interval;
        start - now
    }

    /// Waits, without taking it, until the rate limit's next slot has
    /// come; false when `stop` said stop first. A classifier thread waits
    /// so before it takes a job (see `pool`), so that the job is chosen
    /// when its call can start.
    pub(crate) fn await_slot(&self, stop: &dyn Fn() -> bool) -> bool {
        if self.config.rate_limit_rpm.is_none() {
            return true;
        }
        let next = *self.next_slot.lock();
        wait_unless(next.saturating_duration_since(Instant::now()), stop)
    }

    /// Classifies one email, retrying 429, 5xx and time-outs with backoff.
    pub fn classify(
        &self,
        account: &AccountConfig,
        e: &Email,
    ) -> Result<Classification, ClassifyError> {
        self.classify_with(account, e, &[], &|| false)
    }

    /// [`Provider::classify`] with examples from the user's folders, shown
    /// to the model as earlier turns of the conversation (nearest last).
    /// `stop` is asked through every wait (the rate limit, the pause
    /// before a retry, up to a minute each): once it says stop, no call
    /// is started and the answer is [`ClassifyError::Cancelled`], so a
    /// shutdown waits at most for the call in flight.
    pub fn classify_with(
        &self,
        account: &AccountConfig,
        e: &Email,
        shots: &[Shot],
        stop: &dyn Fn() -> bool,
    ) -> Result<Classification, ClassifyError> {
        self.classify_in_slot(account, e, shots, stop, None)
    }

    /// [`Provider::classify_with`] whose first call has its rate-limit
    /// slot taken already, `slot` from now ([`Provider::take_slot`]).
    pub(crate) fn classify_in_slot(
        &self,
        account: &AccountConfig,
        e: &Email,
        shots: &[Shot],
        stop: &dyn Fn() -> bool,
        mut slot: Option<Duration>,
    ) -> Result<Classification, ClassifyError> {
        let choice = self.config.answer == AnswerMode::Choice;
        let messages = if choice {
            choice_messages(account, &self.config, e, shots)
        } else {
            let (system, user) = prompt(account, &self.config, e);
            let mut m = vec![("system", system)];
            m.extend(shot_turns(account, shots));
            m.push(("user", user));
            m
        };
        let name = &self.config.name;
        let mut attempt = 0;
        let mut backoff = RETRY_BACKOFF;
        loop {
            let in_slot = match slot.take() {
                Some(wait) => wait_unless(wait, stop),
                None => self.throttle(stop),
            };
            if !in_slot || stop() {
                return Err(ClassifyError::Cancelled);
            }
            let result = if choice {
                self.call(choice_request(&self.config.model, &messages))
            } else {
                self.call_with_json_fallback(account, &messages)
            };
            let retry_after = match &result {
                Ok(_) => None,
                Err((err, retry_after)) => match err {
                    ClassifyError::Timeout { .. } | ClassifyError::Transport { .. } => {
                        Some(backoff.next_wait_or(*retry_after))
                    }
                    ClassifyError::Http { status, .. } if *status == 429 || *status >= 500 => {
                        Some(backoff.next_wait_or(*retry_after))
                    }
                    _ => None,
                },
            };
            match (result, retry_after) {
                (Ok(reply), _) => {
                    // Counted when the server reports them (not every
                    // OpenAI-compatible server does).
                    for (kind, n) in [
                        ("prompt", reply.prompt_tokens),
                        ("completion", reply.completion_tokens),
                    ] {
                        // A count no answer can have (a provider's bug, or a
                        // hostile one) would wrap the counter, which reads as
                        // a reset: counts past 100 million are dropped.
                        if let Some(n) = n.filter(|n| *n <= 100_000_000) {
                            self.metrics
                                .llm_tokens
                                .with_label_values(&[name, kind])
                                .inc_by(n);
                        }
                    }
                    let parsed = if choice {
                        parse_choice(name, &self.config.model, account, &reply.raw)
                    } else {
                        parse_answer(name, &self.config.model, account, &reply.text)
                    };
                    return parsed.map_err(|e| self.cut_short(e, reply.cut));
                }
                (Err((err, _)), Some(wait)) if attempt < self.config.max_retries => {
                    let wait = self.retry_wait(wait);
                    // The retry's slot is taken with the wait it says.
                    slot = Some(Duration::ZERO);
                    match self.retry_lines.lock().admit(Instant::now()) {
                        Some(0) => log::warn!("{}: {err}; retrying in {wait:?}", account.name),
                        Some(n) => log::warn!(
                            "{}: {err}; retrying in {wait:?} ({n} more retried call(s) to {} \
                             since the last line)",
                            account.name,
                            self.config.name
                        ),
                        None => log::debug!("{}: {err}; retrying in {wait:?}", account.name),
                    }
                    if !wait_unless(wait, stop) {
                        return Err(ClassifyError::Cancelled);
                    }
                    attempt += 1;
                }
                (Err((err, _)), _) => return Err(err),
            }
        }
    }

    /// How long before a retry whose backoff (or `Retry-After`) is
    /// `backoff`: that, at most [`MAX_RETRY_WAIT`], or until the rate
    /// limit's next slot, which it takes, when that is later. The log said
    /// "retrying in 500ms" of a retry that then waited out its slot too,
    /// 1 s under `rate_limit_rpm: 60` (an audit).
    fn retry_wait(&self, backoff: Duration) -> Duration {
        backoff.min(MAX_RETRY_WAIT).max(self.take_slot())
    }

    /// `e`, an answer that could not be read, saying so when the server
    /// stopped it at `max_tokens`: a verdict cut off read only as "EOF
    /// while parsing a string", and nothing named the setting (an audit).
    fn cut_short(&self, e: ClassifyError, cut: bool) -> ClassifyError {
        match e {
            ClassifyError::InvalidAnswer { provider, error } if cut => {
                ClassifyError::InvalidAnswer {
                    error: format!(
                        "{error} (the answer was cut at max_tokens, {}: raise \
                         classifier.providers[{provider}].max_tokens)",
                        self.config.max_tokens
                    ),
                    provider,
                }
            }
            e => e,
        }
    }

    /// One call, asking for JSON the strongest way the server accepts: a
    /// refusal (400 or 422) of one way is answered by trying the next at
    /// once; the way that worked is kept. When every way is refused, the
    /// first refusal is the error (it says most about the request).
    fn call_with_json_fallback(
        &self,
        account: &AccountConfig,
        messages: &[(&str, String)],
    ) -> Result<Reply, (ClassifyError, Option<Duration>)> {
        use std::sync::atomic::Ordering;
        if self.config.kind != ProviderKind::Openai {
            return self.call(self.json_body(None, messages));
        }
        let mut start = self
            .json_mode
            .load(Ordering::Relaxed)
            .min(JsonMode::ALL.len() - 1);
        if start > 0
            && self
                .fell_back
                .lock()
                .is_some_and(|at| at.elapsed() >= ASK_AGAIN)
        {
            *self.fell_back.lock() = Some(Instant::now());
            start = 0;
        }
        let mut first_refusal = None;
        for (i, mode) in JsonMode::ALL.iter().enumerate().skip(start) {
            match self.call(self.json_body(mode.response_format(account), messages)) {
                Err((ClassifyError::Http { status, body, .. }, _))
                    if (status == 400 || status == 422) && i + 1 < JsonMode::ALL.len() =>
                {
                    log::debug!(
                        "{}: {} refused (HTTP {status}: {}); trying {}",
                        self.config.name,
                        mode.label(),
                        crate::logging::clean(&body),
                        JsonMode::ALL[i + 1].label()
                    );
                    first_refusal.get_or_insert((
                        ClassifyError::Http {
                            provider: self.config.name.clone(),
                            status,
                            body,
                        },
                        None,
                    ));
                }
                Ok(reply) => {
                    if i != start {
                        log::warn!(
                            "{}: the server refused {}; asking it with {} from now on",
                            self.config.name,
                            JsonMode::ALL[start].label(),
                            mode.label()
                        );
                        self.json_mode.store(i, Ordering::Relaxed);
                        *self.fell_back.lock() = Some(Instant::now());
                    } else if i == 0 {
                        self.json_mode.store(0, Ordering::Relaxed);
                    }
                    return Ok(reply);
                }
                // Every way refused: the first refusal says most.
                Err((ClassifyError::Http { status, body, .. }, retry))
                    if status == 400 || status == 422 =>
                {
                    let last = ClassifyError::Http {
                        provider: self.config.name.clone(),
                        status,
                        body,
                    };
                    return Err(first_refusal.unwrap_or((last, retry)));
                }
                // Anything else (a 5xx, a time-out) keeps its own error, so
                // the caller retries what is worth retrying.
                Err(e) => return Err(e),
            }
        }
        unreachable!("the last way's answer is returned whatever it is")
    }

    /// The request for a JSON answer: `messages` is the system message,
    /// then the conversation.
    /// `text` with the API key and the URL's password (where set) masked.
    fn without_secrets(&self, text: String) -> String {
        let c = &self.config;
        let mut secrets = crate::agent::url_secrets(&c.url);
        // An empty key is sent as none, and is no secret: masked, "Bearer "
        // hid the provider's own words ("using ********auth": an audit).
        let key = c.api_key.as_ref().filter(|k| !k.is_empty());
        secrets.extend(key.cloned());
        // The header as sent, base64-encoded whole (an audit's server
        // echoed that, and the key was read back from it).
        secrets.extend(key.map(|k| format!("Bearer {k}")));
        crate::agent::mask_secrets(text, &secrets)
    }

    fn json_body(&self, response_format: Option<Value>, messages: &[(&str, String)]) -> Value {
        let c = &self.config;
        let turns = |from: usize| -> Vec<Value> {
            messages[from..]
                .iter()
                .map(|(role, content)| json!({ "role": role, "content": content }))
                .collect()
        };
        match c.kind {
            ProviderKind::Openai => {
                let mut body = json!({
                    "model": c.model,
                    "temperature": 0,
                    "max_tokens": c.max_tokens,
                    // One JSON answer, not server-sent events.
                    "stream": false,
                    "messages": turns(0),
                });
                if let Some(rf) = response_format {
                    body["response_format"] = rf;
                }
                body
            }
            ProviderKind::Anthropic => json!({
                "model": c.model,
                "temperature": 0,
                "max_tokens": c.max_tokens,
                "system": messages.first().map(|m| m.1.as_str()).unwrap_or_default(),
                "messages": turns(1),
            }),
        }
    }
}

/// Sleeps for `wait`, asking `stop` every 100 ms; false when it said stop.
fn wait_unless(wait: Duration, stop: &dyn Fn() -> bool) -> bool {
    let end = Instant::now() + wait;
    loop {
        let now = Instant::now();
        if now >= end {
            return true;
        }
        if stop() {
            return false;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(100)));
    }
}

/// The longest wait before a retry, whatever the provider's `Retry-After`.
const MAX_RETRY_WAIT: Duration = Duration::from_secs(60);
/// Waits between retries of a call: 0.5 s, doubling (a `Retry-After` wins).
const RETRY_BACKOFF: Backoff = Backoff::new(Duration::from_millis(500), MAX_RETRY_WAIT);
