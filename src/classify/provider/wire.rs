//! One exchange with a model endpoint: the request sent, the answer
//! read within its limits, and the provider's errors told apart.

use std::time::{Duration, Instant};

use serde_json::Value;

use super::Provider;
use crate::classify::{truncate, ClassifyError};
use crate::config::ProviderKind;

/// What a model answered.
pub(super) struct Reply {
    pub(super) text: String,
    /// The whole answer (`answer: choice` reads its log-probabilities).
    pub(super) raw: Value,
    pub(super) prompt_tokens: Option<u64>,
    pub(super) completion_tokens: Option<u64>,
    /// The server stopped the answer at `max_tokens` (Anthropic's
    /// `stop_reason: max_tokens`, OpenAI's `finish_reason: length`).
    pub(super) cut: bool,
}

impl Provider {
    /// Sends one request and reads its answer; the wait the server asked
    /// for (`Retry-After`) goes with an error.
    pub(super) fn call(&self, body: Value) -> Result<Reply, (ClassifyError, Option<Duration>)> {
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
        // Where it failed, without the URL's path, query or credentials:
        // "llm: io: Connection refused" named no server to check (an
        // audit).
        let origin = (url::Url::parse(&c.url).ok())
            .map(|u| u.origin().ascii_serialization())
            .filter(|o| o != "null");
        let started = Instant::now();
        // A time-out in either phase (sending, or reading the answer) is a
        // time-out of the call; anything else the transport says is kept.
        let failed = |e: ureq::Error| {
            let err = match e {
                ureq::Error::Timeout(t) => ClassifyError::Timeout {
                    provider: provider.clone(),
                    after: started.elapsed(),
                    server: origin.clone().unwrap_or_default(),
                    limit: timeout_limit(t, c),
                },
                // The server first, and what to set when its certificate
                // is not trusted: the transport's text (OpenSSL's is about
                // 190 characters) is clipped at 200, and a server named
                // after it was cut, and its cut URL then masked as a
                // secret (`server ********`: an audit).
                e => ClassifyError::Transport {
                    provider: provider.clone(),
                    error: match (&origin, certificate_trouble(&e, &provider)) {
                        (Some(o), Some(why)) => format!("server {o}/: {why}: {e}"),
                        (Some(o), None) => format!("server {o}/: {e}"),
                        (None, _) => e.to_string(),
                    },
                },
            };
            (err, None)
        };
        let mut res = req.send(body.to_string().as_bytes()).map_err(failed)?;
        let status = res.status().as_u16();
        let retry_after = crate::agent::retry_after(res.headers(), Duration::MAX);
        // A relative `Location` read against the URL asked.
        let location = (res.headers().get("location"))
            .and_then(|l| l.to_str().ok())
            .and_then(|l| url::Url::parse(&c.url).ok()?.join(l).ok())
            .map(|l| crate::logging::clean_up_to(&crate::config::redact_url(l.as_str()), 300));
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
            // No redirect is followed (the key would go along): where the
            // endpoint moved is said (it read "HTTP 307: ", an audit).
            let body = match location.filter(|_| (300..400).contains(&status)) {
                Some(to) => format!(
                    "redirected to {to}; mailproc follows no redirects: set \
                     classifier.providers[{}].url to the endpoint itself",
                    c.name
                ),
                None => text,
            };
            return Err((
                ClassifyError::Http {
                    provider,
                    status,
                    body,
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
        // The Messages API's error object, sent with a 200 by some proxies
        // and as a stream's error event: the provider's error, under the
        // status its type stands for, so an overload is retried (it was
        // "not an Anthropic Messages answer … does url end in
        // /v1/messages?", an audit).
        if c.kind == ProviderKind::Anthropic && v.get("type") == Some(&Value::from("error")) {
            return Err((
                ClassifyError::Http {
                    provider,
                    status: anthropic_error_status(&v),
                    body: text,
                },
                retry_after,
            ));
        }
        let (content, pt, ct, cut) = match c.kind {
            ProviderKind::Openai => (
                v.pointer("/choices/0/message/content")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                v.pointer("/usage/prompt_tokens").and_then(Value::as_u64),
                v.pointer("/usage/completion_tokens")
                    .and_then(Value::as_u64),
                v.pointer("/choices/0/finish_reason") == Some(&Value::from("length")),
            ),
            ProviderKind::Anthropic => (
                anthropic_text(&v),
                v.pointer("/usage/input_tokens").and_then(Value::as_u64),
                v.pointer("/usage/output_tokens").and_then(Value::as_u64),
                v.get("stop_reason") == Some(&Value::from("max_tokens")),
            ),
        };
        let content = content.ok_or_else(|| match c.kind {
            // No choices at all is a Chat Completions answer with nothing
            // in it (a content filter's), not a wrong URL (an audit was
            // sent to check the URL).
            ProviderKind::Openai
                if v.pointer("/choices/0/message").is_none()
                    && !v.get("choices").is_some_and(Value::is_array) =>
            {
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
            text: content,
            raw: v.clone(),
            prompt_tokens: pt,
            completion_tokens: ct,
            cut,
        })
    }
}

/// The text of a Messages API answer: its `text` blocks, in order, joined
/// as they are (a verdict's JSON may run on from one block into the next;
/// a newline between them broke its string: a regression audit). Only the
/// first block was read: a `thinking` block before the text (compatible
/// gateways and reasoning models send them), a short line before the
/// JSON, or an empty first block failed every message (an audit). `None`
/// without a `text` block.
fn anthropic_text(v: &Value) -> Option<String> {
    let texts: Vec<&str> = v
        .get("content")?
        .as_array()?
        .iter()
        .filter(|b| b.get("type").is_none_or(|t| t == "text"))
        .filter_map(|b| b.get("text")?.as_str())
        .collect();
    (!texts.is_empty()).then(|| texts.concat())
}

/// The HTTP status a Messages API error object's `error.type` stands for
/// (Anthropic's list of errors); 500 for one it does not list.
fn anthropic_error_status(v: &Value) -> u16 {
    match v.pointer("/error/type").and_then(Value::as_str) {
        Some("invalid_request_error") => 400,
        Some("authentication_error") => 401,
        Some("billing_error") => 402,
        Some("permission_error") => 403,
        Some("not_found_error") => 404,
        Some("request_too_large") => 413,
        Some("rate_limit_error") => 429,
        Some("timeout_error") => 504,
        Some("overloaded_error") => 529,
        _ => 500,
    }
}

/// What is wrong with the server's certificate, said before the TLS
/// library's words (which the 200-character cut of an error may leave
/// out: OpenSSL gives its reason last): one for another host name or
/// address, or one no CA it trusts signed (an audit was told to set
/// `ca_file` for a name mismatch, with `ca_file` set). `None` when it is
/// neither.
pub(super) fn certificate_trouble(e: &ureq::Error, provider: &str) -> Option<String> {
    let said = e.to_string().to_ascii_lowercase();
    if said.contains("certificate") && said.contains("mismatch") {
        return Some(
            "its certificate is for another host name or address (the url must name one the \
             certificate lists)"
                .to_string(),
        );
    }
    let untrusted = [
        "unable to get local issuer",
        "self-signed certificate",
        "self signed certificate",
        "untrusted root",
        "not trusted",
    ];
    untrusted.iter().any(|w| said.contains(w)).then(|| {
        format!(
            "its certificate is not trusted (a private CA: set \
             classifier.providers[{provider}].ca_file to the CA's file)"
        )
    })
}

/// Whether a failed read of an answer's body failed on the answer itself
/// (too large, not UTF-8) rather than on the way (a time-out, a reset).
fn unreadable(e: &ureq::Error) -> bool {
    match e {
        ureq::Error::BodyExceedsLimit(_) => true,
        ureq::Error::Io(io) => io.kind() == std::io::ErrorKind::InvalidData,
        _ => false,
    }
}

/// Which of the call's limits ran out, for its time-out error: connecting
/// has its own (`timeout`, or 10 s when that is longer; see `agent`).
pub(super) fn timeout_limit(t: ureq::Timeout, c: &crate::config::ProviderConfig) -> String {
    let name = &c.name;
    let whole = c.timeout.0;
    match t {
        ureq::Timeout::Resolve | ureq::Timeout::Connect if whole > Duration::from_secs(10) => {
            "connecting: 10 s at most".to_string()
        }
        ureq::Timeout::Resolve | ureq::Timeout::Connect => {
            format!(
                "connecting: classifier.providers[{name}].timeout {}",
                crate::config::format_duration(whole)
            )
        }
        _ => format!(
            "classifier.providers[{name}].timeout {}",
            crate::config::format_duration(whole)
        ),
    }
}
