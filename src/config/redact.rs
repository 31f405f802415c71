//! What of the configuration may leave the process: `GET /api/config`
//! and the webhook delivery log show secrets only as their `${NAME}`
//! references and URLs without their credentials; [`redact_text`] takes
//! the credentials out of every URL in a log line or an error message
//! (the log, `/api/logs`, activity errors, `error` webhooks); a caller
//! without `read:config` gets only [`summary_json`].

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
/// log, log lines, error messages): the secret part of its user-info (the
/// password, or a user name standing alone, which is then the token),
/// every query value and every path segment that looks like a token
/// (Slack, Discord and similar hooks carry their credential in the path)
/// are [`MASK`]. `${NAME}` references stay, literal `:-default`s are
/// masked. Not a URL at all: [`MASK`].
pub fn redact_url(s: &str) -> String {
    redact(s)
}

fn redact(s: &str) -> String {
    if !s.contains("${") {
        return redact_literal_url(s, &[]);
    }
    // References stand in the URL as placeholders while it is redacted,
    // so the literal parts around them lose their credentials too.
    let Ok(ps) = pieces(s) else {
        return MASK.into();
    };
    let mut refs = Vec::new();
    let mut text = String::new();
    for p in &ps {
        match p {
            Piece::Text(t) => text.push_str(t),
            Piece::Ref { name, default } => {
                text.push_str(&format!("mpref{}x", refs.len()));
                refs.push(match default {
                    None => format!("${{{name}}}"),
                    Some(_) => format!("${{{name}:-{MASK}}}"),
                });
            }
        }
    }
    let placeholders: Vec<String> = (0..refs.len()).map(|i| format!("mpref{i}x")).collect();
    let mut out = redact_literal_url(&text, &placeholders);
    if out == MASK {
        // A reference may stand for the scheme or the whole URL.
        out = text;
        if out.contains("://") || out.contains('@') || out.contains('?') {
            return MASK.into();
        }
    }
    for (i, r) in refs.iter().enumerate().rev() {
        out = out.replace(&format!("mpref{i}x"), r);
    }
    out
}

/// `s` as an error may quote it: a URL that does not parse has no parts to
/// mask one by one, so what may hold a secret is cut: the user-info (up to
/// an `@` before the path) and everything from the query or fragment on.
pub fn without_credentials(s: &str) -> String {
    let (head, cut) = match s.find(['?', '#']) {
        Some(i) => (&s[..i], true),
        None => (s, false),
    };
    let start = head.find("://").map_or(0, |i| i + 3);
    let authority_end = head[start..].find('/').map_or(head.len(), |i| start + i);
    let mut out = match head[start..authority_end].rfind('@') {
        Some(at) => format!("{}…@{}", &head[..start], &head[start + at + 1..]),
        None => head.to_string(),
    };
    if cut {
        out.push('…');
    }
    out
}

/// `shown` (a URL as [`redact_url`] writes it, then edited) with each
/// masked part taken back from `stored`: when both are URLs without
/// references of the same origin and each masked part has its counterpart
/// there (the password of the same user, a query value by its key, a path
/// segment by its place in a path as long). `None` otherwise: the masked
/// parts of a URL follow it along its own origin only.
pub(super) fn unmask_url(shown: &str, stored: &str) -> Option<String> {
    if shown.contains("${") || stored.contains("${") {
        return None;
    }
    let new = url::Url::parse(shown).ok()?;
    let old = url::Url::parse(stored).ok()?;
    if new.origin() != old.origin() {
        return None;
    }
    let mut out = new.clone();
    if new.password() == Some(MASK) {
        if new.username() != old.username() {
            return None;
        }
        out.set_password(old.password()).ok()?;
    } else if new.username() == MASK {
        out.set_username(old.username()).ok()?;
    }
    let segments: Vec<String> = new.path_segments()?.map(unencode_masks).collect();
    if segments.iter().any(|s| s.starts_with(MASK)) {
        let stored_segments: Vec<&str> = old.path_segments()?.collect();
        if stored_segments.len() != segments.len() {
            return None;
        }
        // A mask stands for the stored segment at its place.
        let mut path: Vec<&str> = Vec::new();
        for (n, o) in segments.iter().zip(&stored_segments) {
            if n == MASK {
                path.push(o);
            } else if n.starts_with(MASK) {
                return None;
            } else {
                path.push(n);
            }
        }
        out.set_path(&format!("/{}", path.join("/")));
    }
    if let Some(query) = new.query() {
        let stored_pairs: Vec<(String, String)> = old.query_pairs().into_owned().collect();
        let mut parts = Vec::new();
        for part in query.split('&').filter(|p| !p.is_empty()) {
            match part.split_once('=') {
                Some((k, MASK)) => {
                    let key: String = url::form_urlencoded::parse(format!("{k}=").as_bytes())
                        .next()
                        .map(|(k, _)| k.into_owned())
                        .unwrap_or_default();
                    let (_, v) = stored_pairs.iter().find(|(sk, _)| *sk == key)?;
                    let v: String = url::form_urlencoded::byte_serialize(v.as_bytes()).collect();
                    parts.push(format!("{k}={v}"));
                }
                None if part == MASK => return None,
                _ => parts.push(part.to_string()),
            }
        }
        out.set_query(Some(&parts.join("&")));
    }
    Some(out.to_string())
}

/// [`redact`] of a URL without references; a query value or a path
/// segment that is one of `keep` (a reference's placeholder) is left for
/// the caller.
fn redact_literal_url(s: &str, keep: &[String]) -> String {
    let Ok(mut u) = url::Url::parse(s) else {
        return MASK.into();
    };
    if u.password().is_some() {
        let _ = u.set_password(Some(MASK));
    } else if !u.username().is_empty() {
        let _ = u.set_username(MASK);
    }
    if let Some(query) = u.query() {
        // Each value masked, and a part without `=` (`?TOKEN`) whole: it is
        // as likely a credential as any value.
        let masked: Vec<String> = query
            .split('&')
            .filter(|part| !part.is_empty())
            .map(|part| {
                let kept = |v: &str| {
                    let v = url::form_urlencoded::parse(format!("x={v}").as_bytes())
                        .next()
                        .map(|(_, v)| v.into_owned())
                        .unwrap_or_default();
                    keep.contains(&v)
                };
                match part.split_once('=') {
                    Some((k, v)) if kept(v) => format!("{k}={v}"),
                    Some((k, _)) => format!("{k}={MASK}"),
                    None if kept(part) => part.to_string(),
                    None => MASK.to_string(),
                }
            })
            .collect();
        u.set_query(Some(&masked.join("&")));
    }
    if let Some(segs) = u.path_segments() {
        let segs: Vec<String> = segs
            .map(|seg| {
                // A reference's placeholder is the caller's, not a token.
                let own = keep
                    .iter()
                    .fold(seg.to_string(), |t, k| t.replace(k.as_str(), ""));
                if unencode_masks(seg).starts_with(MASK) || looks_like_token(&own) {
                    MASK.to_string()
                } else {
                    seg.to_string()
                }
            })
            .collect();
        u.set_path(&segs.join("/"));
    }
    u.set_fragment(None);
    // The masks must read as written, not percent-encoded.
    unencode_masks(u.as_str())
}

/// [`MASK`] percent-encoded, as a URL library may send it back.
const MASK_ENCODED: &str = "%2A%2A%2A%2A%2A%2A%2A%2A";

/// `s` with each percent-encoded [`MASK`] (either case) written as one:
/// the one reading of such masks, for whatever compares or shows them. In
/// one pass (a search of the whole rest for each mask was quadratic in a
/// 1 MiB value of masks).
pub(super) fn unencode_masks(s: &str) -> String {
    let upper = s.to_ascii_uppercase();
    let mut out = String::with_capacity(s.len());
    let mut at = 0;
    while let Some(i) = upper[at..].find(MASK_ENCODED) {
        out.push_str(&s[at..at + i]);
        out.push_str(MASK);
        at += i + MASK_ENCODED.len();
    }
    out.push_str(&s[at..]);
    out
}

/// Whether a path segment may be a credential, as hook services put them
/// in paths: 24 characters or more (Slack's token, letters alone in one
/// of about 70), or 16 or more of letters and digits mixed. Shorter ids
/// (Slack's `T0ABCDEFG`, Zapier's, IFTTT's key) stay shown: masked, two
/// hooks of one workspace read alike and a configuration holding both
/// could not be saved back as it was read (the second regression audit,
/// stop 59); the README says to keep such a secret in the query.
fn looks_like_token(seg: &str) -> bool {
    let n = seg.chars().count();
    let letters = seg.chars().any(|c| c.is_ascii_alphabetic());
    let digits = seg.chars().any(|c| c.is_ascii_digit());
    n >= 24 || (n >= 16 && letters && digits)
}

/// `text` (a log line, an error message) with every URL in it passed
/// through [`redact_url`]. A URL is taken to run from its scheme to the
/// next white space, quote or angle bracket; text without `://` comes back
/// unchanged.
pub fn redact_text(text: &str) -> String {
    if !text.contains("://") {
        return text.to_string();
    }
    let ends = |c: char| c.is_whitespace() || matches!(c, '"' | '\'' | '<' | '>' | '`');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find("://") {
        let start = rest[..i]
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
            .map_or(0, |j| j + 1);
        let end = rest[i..].find(ends).map_or(rest.len(), |j| i + j);
        out.push_str(&rest[..start]);
        let candidate = &rest[start..end];
        // A trailing `:`, `,`, `.` or `)` belongs to the sentence.
        let body = candidate.trim_end_matches([':', ',', '.', ')', ';']);
        if start == i {
            out.push_str(candidate);
        } else {
            out.push_str(&redact_url(body));
            out.push_str(&candidate[body.len()..]);
        }
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
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

/// Whether a key holds a URL whose credentials [`redact_url`] hides:
/// `url`, `token_url`, `public_url`, `proxy` and the like.
pub(super) fn is_url_key(key: &str) -> bool {
    key == "url" || key == "proxy" || key.ends_with("_url")
}

pub(super) fn is_secret_path(path: &[String]) -> bool {
    SECRET_PATHS.iter().any(|pat| {
        pat.len() == path.len() && pat.iter().zip(path).all(|(a, b)| *a == "*" || a == b)
    })
}

/// A part of a configuration as a client sent it back, with every
/// percent-encoded mask read as the mask (`%2A` × 8, as a URL library
/// writes `********`), to be compared with what [`redacted_json`] showed.
pub fn masks_unencoded(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match v {
        Value::String(s) => Value::String(unencode_masks(s)),
        Value::Array(items) => Value::Array(items.iter().map(masks_unencoded).collect()),
        Value::Object(m) => Value::Object(
            m.iter()
                .map(|(k, v)| (k.clone(), masks_unencoded(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// The configuration as written, as JSON, with every literal secret replaced
/// by [`MASK`] (see [`masked_secret`]) and every URL (`url`, `*_url`,
/// `proxy`) stripped of its credentials (see [`redact_url`]).
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
            Value::String(s) if path.last().is_some_and(|k| is_url_key(k)) => {
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

/// Whether `v`, found at `at` in a configuration (`["accounts", "*"]` for
/// one account), writes a secret out literally rather than as the mask or a
/// `${NAME}` reference: a value only its owner could know, or a guess.
pub fn holds_literal_secret(v: &serde_norway::Value, at: &[&str]) -> bool {
    fn walk(v: &serde_norway::Value, path: &mut Vec<String>) -> bool {
        use serde_norway::Value;
        match v {
            Value::Mapping(m) => m.iter().any(|(k, x)| {
                let key = k.as_str().map(String::from).unwrap_or_default();
                path.push(key);
                let found = walk(x, path);
                path.pop();
                found
            }),
            Value::Sequence(items) => items.iter().any(|x| {
                path.push("*".into());
                let found = walk(x, path);
                path.pop();
                found
            }),
            Value::Tagged(t) => walk(&t.value, path),
            Value::Null => false,
            Value::String(s) if is_secret_path(path) => masked_secret(s) != *s,
            // A URL's credentials, tokens in its path and query values are
            // secrets too (`redact_url` masks them): one written out is a
            // guess to test as well (the regression audit).
            // (A mask sent percent-encoded is a mask: the fourth
            // regression audit found it restarting the account.)
            Value::String(s) if path.last().is_some_and(|k| is_url_key(k)) => {
                redact_url(s) != unencode_masks(s)
            }
            _ => is_secret_path(path),
        }
    }
    walk(v, &mut at.iter().map(|s| s.to_string()).collect())
}

/// What a caller with `read:stats` but not `read:config` sees of the
/// configuration: the settings that shape processing, as written, and no
/// connection detail (no host, user name, URL, proxy, header, file path or
/// key). A list, not a filter: a setting added later stays out until it is
/// added here.
const SUMMARY_PATHS: &[&[&str]] = &[
    &["log_level"],
    &["server", "port"],
    &["server", "workers"],
    &["server", "max_connections"],
    &["dashboard", "enabled"],
    &["dashboard", "session_ttl"],
    &["storage", "activity_retention"],
    &["classifier", "concurrency"],
    &["classifier", "providers", "*", "name"],
    &["classifier", "providers", "*", "kind"],
    &["classifier", "providers", "*", "model"],
    &["classifier", "providers", "*", "timeout"],
    &["classifier", "providers", "*", "rate_limit_rpm"],
    &["classifier", "providers", "*", "max_body_chars"],
    &["classifier", "providers", "*", "max_tokens"],
    &["classifier", "providers", "*", "max_retries"],
    &["webhook_settings", "timeout"],
    &["webhooks", "*", "events"],
    &["accounts", "*", "name"],
    &["accounts", "*", "folders"],
    &["accounts", "*", "backlog"],
    &["accounts", "*", "poll_interval"],
    &["accounts", "*", "provider"],
    &["accounts", "*", "allowed_actions"],
    &["accounts", "*", "model_actions"],
    &["accounts", "*", "dry_run"],
    &["accounts", "*", "max_attempts"],
    &["accounts", "*", "retry_delay"],
    &["accounts", "*", "max_message_bytes"],
    &["accounts", "*", "minimum_confidence"],
    &["accounts", "*", "review_flag"],
    &["accounts", "*", "learned"],
    &["accounts", "*", "rules", "*", "name"],
    &["accounts", "*", "webhooks", "*", "events"],
];

/// The configuration as a `read:stats` caller sees it: [`redacted_json`]
/// reduced to [`SUMMARY_PATHS`].
pub fn summary_json(raw: &serde_norway::Value) -> serde_json::Value {
    fn keep(v: &serde_json::Value, path: &mut Vec<String>) -> Option<serde_json::Value> {
        let fits = |pat: &&[&str], path: &[String]| {
            pat.iter()
                .zip(path.iter())
                .all(|(a, b)| *a == "*" || a == b)
        };
        // Wholly inside a listed path: kept as it is.
        if SUMMARY_PATHS
            .iter()
            .any(|pat| pat.len() <= path.len() && fits(pat, path))
        {
            return Some(v.clone());
        }
        // On the way to a listed path: only what leads there.
        if !SUMMARY_PATHS.iter().any(|pat| fits(pat, path)) {
            return None;
        }
        match v {
            serde_json::Value::Object(m) => {
                let mut out = serde_json::Map::new();
                for (k, x) in m {
                    path.push(k.clone());
                    if let Some(x) = keep(x, path) {
                        out.insert(k.clone(), x);
                    }
                    path.pop();
                }
                Some(serde_json::Value::Object(out))
            }
            serde_json::Value::Array(items) => {
                path.push("*".into());
                let out = items.iter().filter_map(|x| keep(x, path)).collect();
                path.pop();
                Some(serde_json::Value::Array(out))
            }
            _ => None,
        }
    }
    keep(&redacted_json(raw), &mut Vec::new()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a client sent written out, where `GET /api/config` shows a
    /// mask: a password, a key, and a URL's token or query value.
    #[test]
    fn secrets_written_out_are_told_from_masks_and_references() {
        let at = ["accounts", "*"];
        let v = |yaml: &str| -> serde_norway::Value { serde_norway::from_str(yaml).unwrap() };
        for (yaml, literal) in [
            ("{ imap: { password: '********' } }", false),
            ("{ imap: { password: '${PW}' } }", false),
            ("{ imap: { password: hunter2 } }", true),
            ("{ webhooks: [ { url: 'https://h.example/x' } ] }", false),
            (
                "{ webhooks: [ { url: 'https://h.example/hook/tok_ABCDEF1234567890abcdef?key=S' } ] }",
                true,
            ),
        ] {
            assert_eq!(holds_literal_secret(&v(yaml), &at), literal, "{yaml}");
        }
        // A mask sent back percent-encoded, in either case, is no secret
        // written out (it restarted the account; the fourth regression
        // audit found the lower case read apart from the upper).
        for enc in ["%2A%2A%2A%2A%2A%2A%2A%2A", "%2a%2a%2a%2a%2a%2a%2a%2a"] {
            let back = v(&format!(
                "{{ webhooks: [ {{ url: 'https://h.example/x?key={enc}' }} ] }}"
            ));
            assert!(!holds_literal_secret(&back, &at), "{enc}");
        }
        assert_eq!(
            unencode_masks("a%2a%2A%2a%2A%2a%2A%2a%2Ab%2A%2A%2A%2A%2A%2A%2A%2A"),
            "a********b********"
        );
        assert_eq!(unencode_masks("%2A%2A é"), "%2A%2A é");
        // What GET showed, sent back: no secret in it.
        let shown = redact_url("https://h.example/hook/tok_ABCDEF1234567890abcdef?key=S");
        let back = v(&format!("{{ webhooks: [ {{ url: '{shown}' }} ] }}"));
        assert!(!holds_literal_secret(&back, &at), "{shown}");
    }

    #[test]
    fn url_credentials_are_masked_around_references_too() {
        assert_eq!(
            redact_url("http://proxyuser:proxypass@proxy.example:3128"),
            "http://proxyuser:********@proxy.example:3128/"
        );
        assert_eq!(
            redact_url("https://ghp_token0123@git.example/x"),
            "https://********@git.example/x"
        );
        assert_eq!(
            redact_url("https://u:literal-pass@h.example/${PATH}?key=${KEY}&sig=abc"),
            "https://u:********@h.example/${PATH}?key=${KEY}&sig=********"
        );
        // Paths stay readable (the delivery log tells targets apart by
        // them) but for segments that look like tokens.
        assert_eq!(
            redact_url("https://hooks.slack.com/services/T0123/B0123/abcDEF0123456789ghijKLMN"),
            "https://hooks.slack.com/services/T0123/B0123/********"
        );
        // A part of the query without `=` is masked whole.
        assert_eq!(
            redact_url("http://127.0.0.1:9/bare?BARETOKENV22xyz&a=1&&b"),
            "http://127.0.0.1:9/bare?********&a=********&********"
        );
        assert_eq!(
            redact_url("https://h.example/x?${TOKEN}&k=${KEY}"),
            "https://h.example/x?${TOKEN}&k=${KEY}"
        );
        assert_eq!(redact_url("${HOOK_URL}"), "${HOOK_URL}");
        assert_eq!(redact_url("${BASE}/v1?key=abc"), MASK);
        assert_eq!(redact_url("not a url"), MASK);
    }

    /// Found by the secrets audit (stop 59): Slack's token of letters
    /// alone was shown whole to `read:activity` and `read:config`. Ids
    /// shorter than 16 stay shown, as do a path's words.
    #[test]
    fn hook_tokens_in_paths_are_masked_and_words_stay() {
        for (url, shown) in [
            (
                "http://h.example/services/T0ABCDEFG/B0ABCDEFG/QwErTyUiOpAsDfGhJkLzXcVb",
                "http://h.example/services/T0ABCDEFG/B0ABCDEFG/********",
            ),
            (
                "https://discord.com/api/webhooks/123456789012345678/aBcDeFgHiJkLmNoPqRsTuVwXyZ-012",
                "https://discord.com/api/webhooks/123456789012345678/********",
            ),
            (
                "https://api.example/v1beta/openai/deployments/gpt-4o-mini/chat/completions",
                "https://api.example/v1beta/openai/deployments/gpt-4o-mini/chat/completions",
            ),
            (
                "https://login.example/11111111-2222-3333-4444-555555555555/oauth2/v2.0/token",
                "https://login.example/********/oauth2/v2.0/token",
            ),
            (
                "http://127.0.0.1:9/api/webhook/mailproc-events",
                "http://127.0.0.1:9/api/webhook/mailproc-events",
            ),
        ] {
            assert_eq!(redact_url(url), shown, "{url}");
        }
        // A mask sent back, also percent-encoded, is a mask.
        let shown = redact_url("http://h.example/a/QwErTyUiOpAsDfGhJkLzXcVb");
        assert_eq!(redact_url(&shown), shown);
        assert_eq!(
            redact_url("http://h.example/a/%2A%2A%2A%2A%2A%2A%2A%2A"),
            shown
        );
    }

    /// README: a URL's masked parts are written out again only when its
    /// origin changes; a path edited on the same origin keeps them.
    #[test]
    fn masked_url_parts_follow_a_path_change_on_the_same_origin_only() {
        let stored = "http://llmuser:URLPASS@127.0.0.1:32001/v1/chat?apikey=K%2B1&x=y";
        let shown = redact_url(stored);
        assert_eq!(
            shown,
            "http://llmuser:********@127.0.0.1:32001/v1/chat?apikey=********&x=********"
        );
        let edited = shown.replace("/v1/chat", "/v2/chat");
        assert_eq!(
            unmask_url(&edited, stored).as_deref(),
            Some("http://llmuser:URLPASS@127.0.0.1:32001/v2/chat?apikey=K%2B1&x=y")
        );
        // Another origin, another user, a key the stored URL lacks: no.
        assert_eq!(unmask_url(&edited.replace("32001", "32002"), stored), None);
        assert_eq!(
            unmask_url(&edited.replace("llmuser", "other"), stored),
            None
        );
        assert_eq!(unmask_url(&edited.replace("apikey", "key"), stored), None);
        // A masked path segment, by its place.
        let hook = "https://hooks.example/services/T0/abcDEF0123456789ghij";
        let shown = redact_url(hook);
        assert_eq!(unmask_url(&shown, hook).as_deref(), Some(hook));
        assert_eq!(unmask_url(&shown.replace("/T0/", "/T0/x/"), hook), None);
    }

    #[test]
    fn urls_in_text_lose_their_credentials() {
        let line = "provider p: does url http://u:pw-1@127.0.0.1:9/v1?key=k-2 end in /v1/chat? \
                    (\"https://h.example/a?token=t-3\"), see https://docs.example/page.";
        let out = redact_text(line);
        for secret in ["pw-1", "k-2", "t-3"] {
            assert!(!out.contains(secret), "{out}");
        }
        assert!(
            out.contains("http://u:********@127.0.0.1:9/v1?key=******** end"),
            "{out}"
        );
        assert!(out.ends_with("see https://docs.example/page."), "{out}");
        assert_eq!(redact_text("no URL: a://"), "no URL: a://");
        assert_eq!(redact_text("plain"), "plain");
    }

    #[test]
    fn the_summary_has_no_connection_details() {
        let raw: serde_norway::Value = serde_norway::from_str(
            r#"
server: { port: 8080, bind: 10.0.0.1, auth_token: tok, trusted_proxies: [10.0.0.2] }
classifier:
  providers:
    - { name: p, kind: openai, url: "https://api.example/v1?key=k", model: m, proxy: "http://u:pw@proxy.example:3128", api_key: sk }
webhooks: [ { url: "https://hooks.example/x", headers: { A: b }, events: [error] } ]
accounts:
  - name: a
    imap: { host: imap.example, username: me@example.com, password: pw }
    folders: { watch: [INBOX] }
    rules: [ { name: r, when: { from: "boss@example.com" }, actions: [ { type: read } ] } ]
"#,
        )
        .unwrap();
        let s = summary_json(&raw);
        assert_eq!(
            s,
            serde_json::json!({
                "server": { "port": 8080 },
                "classifier": { "providers": [ { "name": "p", "kind": "openai", "model": "m" } ] },
                "webhooks": [ { "events": ["error"] } ],
                "accounts": [ { "name": "a", "folders": { "watch": ["INBOX"] }, "rules": [ { "name": "r" } ] } ],
            })
        );
    }
}
