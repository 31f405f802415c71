//! The events producers report and the payloads they become (SPEC §2,
//! plus `dry_run`, `review` and `confidence` where they apply): the payload
//! shapes are written here and nowhere else.

use crate::actions::{Action, Destinations};
use crate::config::EventKind;

/// Longest string in a payload, in characters; longer ones are cut and end
/// with `…`.
pub const MAX_FIELD_CHARS: usize = 2048;

/// An event as a producer reports it; [`Webhooks::emit`] turns it into the
/// payload of SPEC §2 (plus `dry_run`, `review` and `confidence` where they
/// apply), so the payload shapes are written here and nowhere else.
#[derive(Debug, Clone)]
pub enum Event<'a> {
    EmailProcessed {
        subject: &'a str,
        from: &'a str,
        actions: &'a [Action],
        model: &'a str,
        reasoning: &'a str,
        dry_run: bool,
        /// `Some(confidence)` when the message was left for review.
        review: Option<Option<f64>>,
        /// Where `spam` and `trash` go, named in their action objects.
        to: Option<Destinations<'a>>,
    },
    ActionTaken {
        action: &'a Action,
        subject: &'a str,
        from: &'a str,
        to: Option<Destinations<'a>>,
    },
    Error {
        error: &'a str,
        details: &'a str,
    },
    ConnectionLost {
        error: &'a str,
        details: &'a str,
    },
    ConnectionRestored {
        details: &'a str,
    },
}

impl Event<'_> {
    pub fn kind(&self) -> EventKind {
        match self {
            Event::EmailProcessed { .. } => EventKind::EmailProcessed,
            Event::ActionTaken { .. } => EventKind::ActionTaken,
            Event::Error { .. } => EventKind::Error,
            Event::ConnectionLost { .. } => EventKind::ConnectionLost,
            Event::ConnectionRestored { .. } => EventKind::ConnectionRestored,
        }
    }

    pub(super) fn fields(&self) -> serde_json::Map<String, serde_json::Value> {
        use crate::config::redact_text;
        use serde_json::json;
        let v = match self {
            Event::EmailProcessed {
                subject,
                from,
                actions,
                model,
                reasoning,
                dry_run,
                review,
                to,
            } => {
                let mut actions = json!(actions);
                name_destinations(&mut actions, to);
                let mut v = json!({
                    "subject": subject, "from": from, "actions": actions,
                    "model": model, "reasoning": reasoning,
                });
                if *dry_run {
                    v["dry_run"] = json!(true);
                }
                if let Some(confidence) = review {
                    v["review"] = json!(true);
                    v["confidence"] = json!(confidence);
                }
                v
            }
            Event::ActionTaken {
                action,
                subject,
                from,
                to,
            } => {
                let mut action = json!(action);
                name_destinations(&mut action, to);
                json!({ "action": action, "subject": subject, "from": from })
            }
            // Errors may quote a URL with its credentials; they leave
            // without them.
            Event::Error { error, details } | Event::ConnectionLost { error, details } => {
                json!({ "error": redact_text(error), "details": redact_text(details) })
            }
            Event::ConnectionRestored { details } => {
                json!({ "error": "", "details": redact_text(details) })
            }
        };
        match v {
            serde_json::Value::Object(m) => m,
            _ => serde_json::Map::new(),
        }
    }
}

fn name_destinations(v: &mut serde_json::Value, to: &Option<Destinations<'_>>) {
    if let Some(to) = to {
        crate::actions::name_destinations(v, Some(to.junk), Some(to.trash));
    }
}

/// Cuts every string in `v` to [`MAX_FIELD_CHARS`].
pub(super) fn cap_strings(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::String(s) => {
            if let Some((i, _)) = s.char_indices().nth(MAX_FIELD_CHARS) {
                s.truncate(i);
                s.push('…');
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(cap_strings),
        serde_json::Value::Object(m) => m.values_mut().for_each(cap_strings),
        _ => {}
    }
}
