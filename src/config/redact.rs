//! What of the configuration may leave the process: `GET /api/config`
//! and the webhook delivery log show secrets only as their `${NAME}`
//! references and URLs without their credentials.

use super::env::{pieces, Piece};
use super::MASK;

/// A secret value as it may be shown: its `${NAME}` references (which name a
/// variable without revealing it) with any literal `:-default` masked, after
/// at most an authorization scheme word (`Bearer `). Anything else written
/// literally, `$${` escapes included, is [`MASK`] as a whole.
pub fn masked_secret(s: &str) -> String {
    const SCHEMES: [&str; 3] = ["Bearer ", "Basic ", "Token "];
    let Ok(ps) = pieces(s) else {
        return MASK.into();
    };
    let mut out = String::new();
    let mut refs = 0;
    for (i, p) in ps.iter().enumerate() {
        match p {
            Piece::Text(t) if i == 0 && SCHEMES.contains(t) && ps.len() > 1 => out.push_str(t),
            Piece::Text(_) => return MASK.into(),
            Piece::Ref { name, default } => {
                refs += 1;
                out.push_str(&format!("${{{name}"));
                if default.is_some() {
                    out.push_str(&format!(":-{MASK}"));
                }
                out.push('}');
            }
        }
    }
    if refs == 0 {
        return MASK.into();
    }
    out
}

/// A URL as it may leave the process (the configuration API, the delivery
/// log): the password of `user:pass@`, every query value and every path
/// segment that looks like a token (Slack, Discord and similar hooks carry
/// their credential in the path) are [`MASK`]. `${NAME}` references stay,
/// literal `:-default`s are masked. Not a URL at all: [`MASK`].
pub fn redact_url(s: &str) -> String {
    if s.contains("${") {
        let Ok(ps) = pieces(s) else {
            return MASK.into();
        };
        return ps
            .iter()
            .map(|p| match p {
                Piece::Text(t) => t.to_string(),
                Piece::Ref {
                    name,
                    default: None,
                } => format!("${{{name}}}"),
                Piece::Ref { name, .. } => format!("${{{name}:-{MASK}}}"),
            })
            .collect();
    }
    let Ok(mut u) = url::Url::parse(s) else {
        return MASK.into();
    };
    if u.password().is_some() {
        let _ = u.set_password(Some(MASK));
    }
    if u.query().is_some() {
        let keys: Vec<String> = u.query_pairs().map(|(k, _)| k.into_owned()).collect();
        let mut q = u.query_pairs_mut();
        q.clear();
        for k in keys {
            q.append_pair(&k, MASK);
        }
    }
    let looks_like_token = |seg: &str| {
        let n = seg.chars().count();
        let letters = seg.chars().any(|c| c.is_ascii_alphabetic());
        let digits = seg.chars().any(|c| c.is_ascii_digit());
        n >= 32 || (n >= 16 && letters && digits)
    };
    if let Some(segs) = u.path_segments() {
        let segs: Vec<String> = segs
            .map(|seg| {
                if looks_like_token(seg) {
                    MASK.to_string()
                } else {
                    seg.to_string()
                }
            })
            .collect();
        u.set_path(&segs.join("/"));
    }
    u.set_fragment(None);
    // The query mask must read as written, not percent-encoded.
    u.to_string().replace("%2A%2A%2A%2A%2A%2A%2A%2A", MASK)
}

/// Paths (with `*` for any index or key) whose literal values are secrets.
const SECRET_PATHS: &[&[&str]] = &[
    &["server", "auth_token"],
    &["dashboard", "session_secret"],
    &["dashboard", "api_keys", "*", "key"],
    &["classifier", "providers", "*", "api_key"],
    &["accounts", "*", "imap", "password"],
    &["accounts", "*", "imap", "oauth2", "client_secret"],
    &["accounts", "*", "imap", "oauth2", "refresh_token"],
    &["webhooks", "*", "headers", "*"],
    &["webhooks", "*", "secret"],
    &["accounts", "*", "webhooks", "*", "headers", "*"],
    &["accounts", "*", "webhooks", "*", "secret"],
];

pub(super) fn is_secret_path(path: &[String]) -> bool {
    SECRET_PATHS.iter().any(|pat| {
        pat.len() == path.len() && pat.iter().zip(path).all(|(a, b)| *a == "*" || a == b)
    })
}

/// The configuration as written, as JSON, with every literal secret replaced
/// by [`MASK`] (see [`masked_secret`]) and every `url` stripped of its
/// credentials (see [`redact_url`]).
pub fn redacted_json(raw: &serde_norway::Value) -> serde_json::Value {
    fn walk(v: &serde_norway::Value, path: &mut Vec<String>) -> serde_json::Value {
        use serde_norway::Value;
        match v {
            Value::Mapping(m) => {
                let mut out = serde_json::Map::new();
                for (k, x) in m {
                    let key = match k {
                        Value::String(s) => s.clone(),
                        other => serde_json::to_string(other).unwrap_or_default(),
                    };
                    path.push(key.clone());
                    out.insert(key, walk(x, path));
                    path.pop();
                }
                serde_json::Value::Object(out)
            }
            Value::Sequence(items) => serde_json::Value::Array(
                items
                    .iter()
                    .map(|x| {
                        path.push("*".into());
                        let r = walk(x, path);
                        path.pop();
                        r
                    })
                    .collect(),
            ),
            Value::Tagged(t) => walk(&t.value, path),
            scalar if is_secret_path(path) => match scalar {
                Value::Null => serde_json::Value::Null,
                Value::String(s) => serde_json::Value::String(masked_secret(s)),
                _ => serde_json::Value::String(MASK.into()),
            },
            Value::String(s) if path.last().is_some_and(|k| k == "url") => {
                serde_json::Value::String(redact_url(s))
            }
            Value::Null => serde_json::Value::Null,
            Value::Bool(b) => serde_json::Value::Bool(*b),
            Value::Number(n) => serde_json::to_value(n).unwrap_or(serde_json::Value::Null),
            Value::String(s) => serde_json::Value::String(s.clone()),
        }
    }
    walk(raw, &mut Vec::new())
}
