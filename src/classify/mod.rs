//! Deciding what to do with a message: account rules first, then a model.
//!
//! Rules are compiled once per account and run on the account thread (they
//! cost microseconds). Model calls run on a fixed pool of
//! `classifier.concurrency` threads shared by all accounts ([`Pool`]), so a
//! backlog is bounded by the pool, not by one call at a time, and a slow model
//! never blocks an IMAP thread's other work beyond the batch in hand.
//!
//! A model's answer is parsed tolerantly (code fences, prose around the JSON)
//! and validated strictly against the account's allow-lists: an action or
//! folder it may not use is an error, never silently dropped or turned into
//! a no-op.

mod choice;
mod pool;
mod prompt;
mod provider;
mod rules;
mod streaks;
#[cfg(test)]
mod tests;

pub use choice::{choice_messages, choices, parse_choice, Choice, DEFAULT_CHOICE_INSTRUCTIONS};
pub use pool::{providers, Job, Pool};
pub use prompt::{answer_schema, parse_answer, prompt, DEFAULT_INSTRUCTIONS, MAX_REASONING_CHARS};
pub use provider::Provider;
pub use rules::Rules;
pub use streaks::State;
// A message as the classifier reads it: its own module, below `learn`
// and `classify` both.
pub use crate::email::{truncate, Email, MAX_HEADER_CHARS};

use std::time::Duration;

use crate::actions::Action;

/// The decision about one message.
#[derive(Debug, Clone, PartialEq)]
pub struct Classification {
    pub actions: Vec<Action>,
    pub reasoning: String,
    /// `rules:<name>` for a rule, else the provider's model name.
    pub model: String,
    pub confidence: Option<f64>,
}

#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ClassifyError {
    /// No answer within the provider's timeout (after retries). `server`
    /// is its origin (`https://api.example.com`, no path or credentials);
    /// `limit` says which limit ran out.
    Timeout {
        provider: String,
        after: Duration,
        server: String,
        limit: String,
    },
    /// The provider answered with an HTTP error status (after retries).
    Http {
        provider: String,
        status: u16,
        body: String,
    },
    /// The request could not be sent or the answer not read.
    Transport { provider: String, error: String },
    /// The answer was not the JSON object asked for.
    InvalidAnswer { provider: String, error: String },
    /// The answer asked for something the account does not allow.
    Disallowed { provider: String, error: String },
    /// The classifier thread panicked on this message (a bug); the thread
    /// lives on and the message is retried like any other failure.
    Panicked { provider: String, message: String },
    /// Not started: its account is shutting down. Not a failure; the
    /// message is left for the next start.
    Cancelled,
}

impl ClassifyError {
    /// A short label for metrics.
    pub fn kind(&self) -> &'static str {
        match self {
            ClassifyError::Timeout { .. } => "classify_timeout",
            ClassifyError::Http { .. } => "classify_http",
            ClassifyError::Transport { .. } => "classify_transport",
            ClassifyError::InvalidAnswer { .. } => "classify_invalid",
            ClassifyError::Disallowed { .. } => "classify_disallowed",
            ClassifyError::Panicked { .. } => "panic",
            ClassifyError::Cancelled => "cancelled",
        }
    }
}

impl std::fmt::Display for ClassifyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClassifyError::Timeout {
                provider,
                after,
                server,
                limit,
            } => {
                // The time waited, to a tenth of a second ("3.11627603s"
                // read badly, an audit), the server and the limit that
                // ran out: "no answer within 30.0s" named neither the
                // server to check nor the setting (an audit).
                write!(
                    f,
                    "{provider}: no answer within {:.1}s",
                    after.as_secs_f64()
                )?;
                if !server.is_empty() {
                    write!(f, " from {server}/")?;
                }
                if !limit.is_empty() {
                    write!(f, " ({limit})")?;
                }
                Ok(())
            }
            ClassifyError::Http {
                provider,
                status,
                body,
            } => {
                // The provider's words, on one line: a body with line
                // breaks must not forge lines of the log it is quoted in.
                write!(
                    f,
                    "{provider}: HTTP {status}: {}",
                    crate::logging::clean(body)
                )
            }
            ClassifyError::Transport { provider, error } => {
                write!(f, "{provider}: {}", crate::logging::clean(error))
            }
            ClassifyError::InvalidAnswer { provider, error } => {
                write!(f, "{provider}: invalid answer: {error}")
            }
            ClassifyError::Disallowed { provider, error } => {
                write!(f, "{provider}: disallowed answer: {error}")
            }
            ClassifyError::Panicked { provider, message } => {
                write!(f, "{provider}: the classifier panicked: {message}")
            }
            ClassifyError::Cancelled => write!(f, "cancelled: shutting down"),
        }
    }
}

impl std::error::Error for ClassifyError {}
