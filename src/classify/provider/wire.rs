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
            text: content.to_string(),
            raw: v.clone(),
            prompt_tokens: pt,
            completion_tokens: ct,
        })
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
