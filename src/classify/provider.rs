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
pub struct Provider {
    pub config: ProviderConfig,
    agent: ureq::Agent,
    /// The earliest instant the next request may start (rate limit).
    next_slot: Mutex<Instant>,
    /// Index into [`JsonMode::ALL`] of the way this server last accepted.
    json_mode: std::sync::atomic::AtomicUsize,
    metrics: Arc<Metrics>,
}

struct Reply {
    text: String,
    /// The whole answer (`answer: choice` reads its log-probabilities).
    raw: Value,
    prompt_tokens: Option<u64>,
    completion_tokens: Option<u64>,
}

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
            metrics,
        })
    }

    /// Waits for this provider's rate limit, if any; false when `stop`
    /// said stop meanwhile (the slot taken is then lost, which only
    /// makes the next call wait a little longer).
    fn throttle(&self, stop: &dyn Fn() -> bool) -> bool {
        let Some(rpm) = self.config.rate_limit_rpm else {
            return true;
        };
        let interval = Duration::from_secs(60) / rpm.max(1);
        let wait = {
            let mut next = self.next_slot.lock();
            let now = Instant::now();
            let start = (*next).max(now);
            *next = start + interval;
            start - now
        };
        wait_unless(wait, stop)
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
            if !self.throttle(stop) || stop() {
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
                    if choice {
                        return parse_choice(name, &self.config.model, account, &reply.raw);
                    }
                    return parse_answer(name, &self.config.model, account, &reply.text);
                }
                (Err((err, _)), Some(wait)) if attempt < self.config.max_retries => {
                    let wait = wait.min(MAX_RETRY_WAIT);
                    log::warn!("{}: {err}; retrying in {wait:?}", account.name);
                    if !wait_unless(wait, stop) {
                        return Err(ClassifyError::Cancelled);
                    }
                    attempt += 1;
                }
                (Err((err, _)), _) => return Err(err),
            }
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
        let start = self
            .json_mode
            .load(Ordering::Relaxed)
            .min(JsonMode::ALL.len() - 1);
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
        secrets.extend(c.api_key.clone());
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

    fn call(&self, body: Value) -> Result<Reply, (ClassifyError, Option<Duration>)> {
        let c = &self.config;
        let mut req = self
            .agent
            .post(&c.url)
            .header("Content-Type", "application/json");
        let key = c.api_key.as_deref().filter(|k| !k.is_empty());
        // The URL's user-info goes decoded (`agent::basic_auth`), unless
        // the API key takes the Authorization header.
        let basic = crate::agent::basic_auth(&c.url);
        match (c.kind, key) {
            (ProviderKind::Openai, Some(k)) => {
                req = req.header("Authorization", &format!("Bearer {k}"));
            }
            (ProviderKind::Openai, None) => {
                if let Some(b) = &basic {
                    req = req.header("Authorization", b);
                }
            }
            (ProviderKind::Anthropic, key) => {
                req = req.header("anthropic-version", "2023-06-01");
                if let Some(k) = key {
                    req = req.header("x-api-key", k);
                }
                if let Some(b) = &basic {
                    req = req.header("Authorization", b);
                }
            }
        }
        let provider = c.name.clone();
        let started = Instant::now();
        // A time-out in either phase (sending, or reading the answer) is a
        // time-out of the call; anything else the transport says is kept.
        let failed = |e: ureq::Error| {
            let err = match e {
                ureq::Error::Timeout(_) => ClassifyError::Timeout {
                    provider: provider.clone(),
                    after: started.elapsed(),
                },
                e => ClassifyError::Transport {
                    provider: provider.clone(),
                    error: e.to_string(),
                },
            };
            (err, None)
        };
        let mut res = req.send(body.to_string().as_bytes()).map_err(failed)?;
        let status = res.status().as_u16();
        let retry_after = crate::agent::retry_after(res.headers(), Duration::MAX);
        let text = match res.body_mut().with_config().limit(4 << 20).read_to_string() {
            Ok(text) => text,
            // An answer that arrived whole but cannot be read (over 4 MiB,
            // not UTF-8) would be the same if asked again: not retried (a
            // 2xx is an invalid answer), and an error status keeps its own
            // say on retrying. A time-out or a connection lost half-way is
            // the transport's, as before.
            Err(e @ (ureq::Error::BodyExceedsLimit(_) | ureq::Error::Io(_))) if unreadable(&e) => {
                let why = format!("the answer cannot be read: {e}");
                let err = if (200..300).contains(&status) {
                    ClassifyError::InvalidAnswer {
                        provider: provider.clone(),
                        error: why,
                    }
                } else {
                    ClassifyError::Http {
                        provider: provider.clone(),
                        status,
                        body: why,
                    }
                };
                return Err((err, retry_after));
            }
            Err(e) => return Err(failed(e)),
        };
        // A server may quote back what it was sent ("invalid key sk-…");
        // the answer's text reaches records, logs and webhooks, the
        // provider's secrets never do (found by an audit).
        let text = self.without_secrets(text);
        if !(200..300).contains(&status) {
            return Err((
                ClassifyError::Http {
                    provider,
                    status,
                    body: text,
                },
                retry_after,
            ));
        }
        // A URL that reaches some other API (a models list, a web page, an
        // event stream) must say so, not "invalid answer" for every email.
        let not_api = |why: String| {
            let (api, path) = match c.kind {
                ProviderKind::Openai => {
                    ("an OpenAI Chat Completions answer", "/v1/chat/completions")
                }
                ProviderKind::Anthropic => ("an Anthropic Messages answer", "/v1/messages"),
            };
            (
                ClassifyError::InvalidAnswer {
                    provider: provider.clone(),
                    error: format!(
                        "the server's answer is not {api} ({why}): {:?}; does url {} end in {path}?",
                        truncate(text.trim(), 120),
                        crate::config::redact_url(&c.url)
                    ),
                },
                None,
            )
        };
        let v: Value =
            serde_json::from_str(&text).map_err(|e| not_api(format!("not JSON: {e}")))?;
        let (content, pt, ct) = match c.kind {
            ProviderKind::Openai => (
                v.pointer("/choices/0/message/content")
                    .and_then(Value::as_str),
                v.pointer("/usage/prompt_tokens").and_then(Value::as_u64),
                v.pointer("/usage/completion_tokens")
                    .and_then(Value::as_u64),
            ),
            ProviderKind::Anthropic => (
                v.pointer("/content/0/text").and_then(Value::as_str),
                v.pointer("/usage/input_tokens").and_then(Value::as_u64),
                v.pointer("/usage/output_tokens").and_then(Value::as_u64),
            ),
        };
        let content = content.ok_or_else(|| match c.kind {
            ProviderKind::Openai if v.pointer("/choices/0/message").is_none() => {
                not_api("no choices[0].message".into())
            }
            ProviderKind::Anthropic if v.get("content").is_none() => not_api("no content".into()),
            _ => (
                ClassifyError::InvalidAnswer {
                    provider: provider.clone(),
                    error: format!(
                        "the answer has no text content: {:?}",
                        truncate(text.trim(), 200)
                    ),
                },
                None,
            ),
        })?;
        Ok(Reply {
            text: content.to_string(),
            raw: v.clone(),
            prompt_tokens: pt,
            completion_tokens: ct,
        })
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

/// Whether a failed read of an answer's body failed on the answer itself
/// (too large, not UTF-8) rather than on the way (a time-out, a reset).
fn unreadable(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::BodyExceedsLimit(_) => true,
        ureq::Error::Io(io) => io.kind() == std::io::ErrorKind::InvalidData,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::classify::tests::{account, email};
    use std::thread::JoinHandle;

    /// A chat-completions server on loopback, its URL, and the record of
    /// the `response_format` type of each request [`answer_requests`] gets
    /// (`-` for none).
    fn server() -> (String, Arc<Mutex<Vec<String>>>, tiny_http::Server) {
        let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
        let url = format!(
            "http://127.0.0.1:{}/v1/chat/completions",
            server.server_addr().to_ip().unwrap().port()
        );
        (url, Arc::new(Mutex::new(Vec::new())), server)
    }

    /// Answers `n` requests on `server`: 400 for a `response_format` type
    /// in `refused`, else `answer`.
    fn answer_requests(
        server: tiny_http::Server,
        n: usize,
        refused: &'static [&'static str],
        answer: &'static str,
        seen: Arc<Mutex<Vec<String>>>,
    ) -> JoinHandle<()> {
        std::thread::spawn(move || {
            for _ in 0..n {
                let Ok(mut req) = server.recv() else { return };
                let mut body = String::new();
                let _ = req.as_reader().read_to_string(&mut body);
                let v: Value = serde_json::from_str(&body).unwrap();
                assert_eq!(v["stream"], json!(false), "{v}");
                let kind = v
                    .pointer("/response_format/type")
                    .and_then(Value::as_str)
                    .unwrap_or("-")
                    .to_string();
                if kind == "json_schema" {
                    // The account's own folders reach the server.
                    assert!(body.contains(r#""enum":["Receipts","Lists"]"#), "{body}");
                }
                seen.lock().push(kind.clone());
                let resp = if refused.contains(&kind.as_str()) {
                    tiny_http::Response::from_string(format!(
                        r#"{{"error":{{"message":"response_format {kind} is not supported"}}}}"#
                    ))
                    .with_status_code(400)
                } else {
                    tiny_http::Response::from_string(answer)
                };
                let _ = req.respond(resp);
            }
        })
    }

    fn provider(url: &str) -> Provider {
        provider_of(&format!(
            "{{ name: p, kind: openai, url: \"{url}\", model: m, max_retries: 0 }}"
        ))
    }

    /// The provider of one `classifier.providers` entry, as YAML.
    fn provider_of(entry: &str) -> Provider {
        let yaml = format!("classifier: {{ providers: [ {entry} ] }}");
        let c = crate::config::parse(&yaml, &|_| None).unwrap().0;
        Provider::new(c.classifier.providers[0].clone(), Arc::new(Metrics::new())).unwrap()
    }

    const GOOD: &str = r#"{"choices":[{"message":{"role":"assistant","content":"{\"actions\":[{\"type\":\"move\",\"folder\":\"Lists\"}],\"reasoning\":\"a list\",\"confidence\":0.8}"}}],"usage":{"prompt_tokens":7,"completion_tokens":3}}"#;

    #[test]
    fn json_schema_first_then_json_object_then_plain_and_the_way_that_worked_is_kept() {
        let a = account();
        let e = email("From: a@b.c\r\nSubject: hi");
        for (refused, expect_first, expect_second) in [
            (&[][..], &["json_schema"][..], &["json_schema"][..]),
            (
                &["json_schema"][..],
                &["json_schema", "json_object"][..],
                &["json_object"][..],
            ),
            (
                &["json_schema", "json_object"][..],
                &["json_schema", "json_object", "-"][..],
                &["-"][..],
            ),
        ] {
            let (url, seen, server) = server();
            let refused: &'static [&'static str] = Box::leak(refused.to_vec().into_boxed_slice());
            let n = expect_first.len() + expect_second.len();
            let t = answer_requests(server, n, refused, GOOD, seen.clone());
            let p = provider(&url);
            let c = p.classify(&a, &e).unwrap();
            assert_eq!(
                c.actions,
                vec![Action::Move {
                    folder: "Lists".into()
                }]
            );
            assert_eq!(seen.lock().as_slice(), expect_first);
            p.classify(&a, &e).unwrap();
            assert_eq!(seen.lock()[expect_first.len()..], *expect_second);
            t.join().unwrap();
            let tokens = p
                .metrics
                .llm_tokens
                .with_label_values(&["p", "prompt"])
                .get();
            assert_eq!(tokens, 14, "usage counted for both answers");
        }
    }

    #[test]
    fn a_refusal_of_every_way_is_the_first_refusal() {
        let (url, seen, server) = server();
        let t = answer_requests(
            server,
            3,
            &["json_schema", "json_object", "-"],
            GOOD,
            seen.clone(),
        );
        let e = provider(&url)
            .classify(&account(), &email("From: a@b.c"))
            .unwrap_err();
        t.join().unwrap();
        assert!(
            matches!(&e, ClassifyError::Http { status: 400, body, .. } if body.contains("json_schema is not supported")),
            "{e}"
        );
        assert_eq!(seen.lock().len(), 3);
    }

    #[test]
    fn a_server_error_after_a_refusal_stays_a_server_error() {
        let (url, seen, server) = server();
        // json_schema refused, then json_object meets a 500 (scripted as a
        // refused "json_object" that answers 500 instead of 400 below).
        let t = std::thread::spawn(move || {
            for status in [400, 500] {
                let mut req = server.recv().unwrap();
                let mut body = String::new();
                let _ = req.as_reader().read_to_string(&mut body);
                seen.lock().push(body);
                let _ =
                    req.respond(tiny_http::Response::from_string("{}").with_status_code(status));
            }
        });
        let e = provider(&url)
            .classify(&account(), &email("From: a@b.c"))
            .unwrap_err();
        t.join().unwrap();
        assert!(matches!(e, ClassifyError::Http { status: 500, .. }), "{e}");
    }

    /// Found by an audit: a 401 whose body quoted the API key (and a URL
    /// with a password) put both in the error, which reaches records, the
    /// log and the `error` webhook.
    #[test]
    fn secrets_a_server_quotes_back_are_masked() {
        let (url, _, server) = server();
        let url = url.replace("http://", "http://user:url-pass-7731@");
        let t = std::thread::spawn(move || {
            let mut req = server.recv().unwrap();
            let mut body = String::new();
            let _ = req.as_reader().read_to_string(&mut body);
            let _ = req.respond(
                tiny_http::Response::from_string(
                    "invalid key sk-secret-key-4411 for user:url-pass-7731",
                )
                .with_status_code(401),
            );
        });
        let p = provider_of(&format!(
            "{{ name: p, kind: openai, url: \"{url}\", model: m, \
             max_retries: 0, api_key: sk-secret-key-4411 }}"
        ));
        let e = p
            .classify(&account(), &email("From: a@b.c"))
            .unwrap_err()
            .to_string();
        t.join().unwrap();
        assert!(e.contains("401"), "{e}");
        assert!(e.contains("invalid key ********"), "{e}");
        assert!(
            !e.contains("sk-secret-key-4411") && !e.contains("url-pass-7731"),
            "{e}"
        );
    }

    #[test]
    fn an_answer_that_is_not_chat_completions_says_so() {
        for (answer, says) in [
            (
                r#"{"object":"list","data":[{"id":"m"}]}"#,
                "no choices[0].message",
            ),
            ("<html>It works!</html>", "not JSON"),
            ("data: {\"choices\":[]}\n\n", "not JSON"),
        ] {
            let (url, seen, server) = server();
            let answer: &'static str = answer;
            let t = answer_requests(server, 1, &[], answer, seen);
            let e = provider(&url)
                .classify(&account(), &email("From: a@b.c"))
                .unwrap_err()
                .to_string();
            t.join().unwrap();
            assert!(
                e.contains("is not an OpenAI Chat Completions answer"),
                "{e}"
            );
            assert!(e.contains(says), "{e}");
            assert!(e.contains("end in /v1/chat/completions?"), "{e}");
        }
        // Usage is optional: an answer without it is fine and counts nothing.
        let (url, seen, server) = server();
        let t = answer_requests(
            server,
            1,
            &[],
            r#"{"choices":[{"message":{"content":"{\"actions\":[]}"}}]}"#,
            seen,
        );
        let p = provider(&url);
        p.classify(&account(), &email("From: a@b.c")).unwrap();
        t.join().unwrap();
        assert_eq!(
            p.metrics
                .llm_tokens
                .with_label_values(&["p", "prompt"])
                .get(),
            0
        );
    }

    /// A provider that answers 429 with `Retry-After: 60` (or any wait):
    /// a shutdown must not sit the minute out, and once stopped no call is
    /// made.
    #[test]
    fn a_stop_cuts_the_wait_before_a_retry_and_no_call_follows() {
        let (url, _, server) = server();
        let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let c = calls.clone();
        let t = std::thread::spawn(move || {
            while let Ok(Some(req)) = server.recv_timeout(Duration::from_secs(5)) {
                c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let resp = tiny_http::Response::from_string("slow down\nWARN forged line")
                    .with_status_code(429)
                    .with_header("Retry-After: 60".parse::<tiny_http::Header>().unwrap());
                let _ = req.respond(resp);
            }
        });
        let p = provider_of(&format!(
            "{{ name: p, kind: openai, url: \"{url}\", model: m, max_retries: 3 }}"
        ));
        let started = Instant::now();
        let stop_at = started + Duration::from_millis(500);
        let e = p
            .classify_with(&account(), &email("From: a@b.c"), &[], &|| {
                Instant::now() >= stop_at
            })
            .unwrap_err();
        assert!(matches!(e, ClassifyError::Cancelled), "{e}");
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "the retry's minute was sat out: {:?}",
            started.elapsed()
        );
        t.join().unwrap();
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1);
    }

    /// Found by an audit: a 200 whose body was not UTF-8, or over 4 MiB,
    /// was retried as a transport error (three paid calls) and counted as
    /// one. Asked again it would be the same: an invalid answer, once.
    #[test]
    fn a_200_that_cannot_be_read_is_an_invalid_answer_asked_once() {
        for body in [b"\x00\xffgarbage".to_vec(), vec![b'{'; 5 << 20]] {
            let (url, _, server) = server();
            let calls = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            let c = calls.clone();
            let t = std::thread::spawn(move || {
                while let Ok(Some(req)) = server.recv_timeout(Duration::from_secs(3)) {
                    c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    let _ = req.respond(tiny_http::Response::from_data(body.clone()));
                }
            });
            let p = provider_of(&format!(
                "{{ name: p, kind: openai, url: \"{url}\", model: m, max_retries: 2 }}"
            ));
            let e = p.classify(&account(), &email("From: a@b.c")).unwrap_err();
            assert!(
                matches!(&e, ClassifyError::InvalidAnswer { error, .. } if error.contains("cannot be read")),
                "{e}"
            );
            t.join().unwrap();
            assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 1, "{e}");
        }
    }

    #[test]
    fn a_stop_cuts_the_rate_limits_wait() {
        let p = provider_of("{ name: p, kind: openai, url: \"http://127.0.0.1:9/v1/chat/completions\", model: m, rate_limit_rpm: 1 }");
        // The first slot is now; the second a minute later.
        assert!(p.throttle(&|| false));
        let started = Instant::now();
        let stop_at = started + Duration::from_millis(300);
        assert!(!p.throttle(&|| Instant::now() >= stop_at));
        assert!(
            started.elapsed() < Duration::from_secs(2),
            "{:?}",
            started.elapsed()
        );
    }

    /// The second regression audit: a URL's user-info went out as written
    /// (`p%40ss`), so no server could take it, and its echo was not masked.
    #[test]
    fn a_urls_user_info_goes_decoded_and_its_echo_is_masked() {
        use base64::Engine;
        let server = tiny_http::Server::http("127.0.0.1:0").unwrap();
        let port = server.server_addr().to_ip().unwrap().port();
        let t = std::thread::spawn(move || {
            let req = server.recv().unwrap();
            let auth = req
                .headers()
                .iter()
                .find(|h| h.field.equiv("Authorization"))
                .map(|h| h.value.to_string())
                .unwrap_or_default();
            let _ = req.respond(
                tiny_http::Response::from_string(format!("you sent {auth}")).with_status_code(401),
            );
            auth
        });
        let p = provider_of(&format!(
            "{{ name: p, kind: anthropic, url: \"http://bob:p%40ss-w0rd@127.0.0.1:{port}/v1/messages\", model: m, max_retries: 0 }}"
        ));
        let e = p
            .classify(&account(), &email("From: a@b.c"))
            .unwrap_err()
            .to_string();
        let sent = t.join().unwrap();
        let want = base64::engine::general_purpose::STANDARD.encode("bob:p@ss-w0rd");
        assert_eq!(sent, format!("Basic {want}"));
        assert!(e.contains("you sent Basic ********"), "{e}");
    }

    #[test]
    fn a_providers_words_stay_on_one_line_of_the_log() {
        let e = ClassifyError::Http {
            provider: "p".into(),
            status: 500,
            body: "oops\n2026-01-01 ERROR [mailproc] forged\r\u{1b}[31m".into(),
        };
        let shown = e.to_string();
        assert!(
            !shown.contains('\n') && !shown.contains('\r') && !shown.contains('\u{1b}'),
            "{shown}"
        );
        assert!(shown.contains(r"oops\n2026-01-01 ERROR"), "{shown}");
        let e = ClassifyError::Transport {
            provider: "p".into(),
            error: "io: a\nb".into(),
        };
        assert_eq!(e.to_string(), r"p: io: a\nb");
    }
}
