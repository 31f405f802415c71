//! What a valid configuration does that an operator should hear about:
//! logged at start-up and on each change, printed by `check-config`. Each
//! is a warning, not a problem: a file that ran before a check was added
//! must still start.

use std::net::IpAddr;

use super::super::{Config, ProviderConfig, ProviderKind};
use super::is_field_name;

/// The server token's length below which it is guessable: a warning, not
/// a refusal (SPEC sets no minimum for it; API keys have 16 by SPEC).
const TOKEN_MIN: usize = 16;

/// What a valid configuration does that an operator should hear about:
/// logged at start-up, printed by `check-config`.
pub fn warnings(c: &Config) -> Vec<String> {
    let mut w = Vec::new();
    if let Some(t) = &c.server.auth_token {
        let n = t.chars().count();
        if (1..TOKEN_MIN).contains(&n) {
            w.push(format!(
                "server.auth_token: {n} characters is short enough to guess; use at least \
                 {TOKEN_MIN} (`openssl rand -hex 24`)"
            ));
        }
    }
    if let Some(sec) = &c.dashboard.session_secret {
        let n = sec.chars().count();
        if (1..TOKEN_MIN).contains(&n) {
            w.push(format!(
                "dashboard.session_secret: {n} characters is short enough to guess, and it signs \
                 the dashboard's cookies; use at least {TOKEN_MIN} (`openssl rand -hex 32`), \
                 or leave it out to have one generated"
            ));
        }
    }
    // Below 3 the gates of `crate::gate` give all kinds of wait together
    // one place: a read of the activity log turned the operator's logins
    // away (503) for as long as a script read it (the regression audit,
    // `server.workers: 2`). At 3 each kind has one and two may run.
    if c.server.workers < 3 {
        w.push(format!(
            "server.workers: with {} worker(s), a login, a request waiting on an account (an \
             undo, a \"Move to…\") and a read of the activity log take turns in one place: \
             while one runs, the others are answered 503; 3 or more let two run at once",
            c.server.workers
        ));
    }
    // Open mode believes no proxy (a page that rebound its name to
    // 127.0.0.1 could name an allowed host), so the list does nothing: an
    // operator behind nginx who forgot the token got 403 through the proxy
    // with no word of why (an audit).
    if !c.server.trusted_proxies.is_empty() && c.api_is_open() {
        w.push(
            "server.trusted_proxies: ignored while neither server.auth_token nor \
             dashboard.api_keys is set (open mode believes no forwarded header); a request \
             through the proxy for another host is refused 403"
                .into(),
        );
    }
    // Rules that cannot work as written. Warnings, not problems: a file
    // that ran before this check must still start (a regression audit),
    // and each of these did nothing, or no more than it does now.
    for (i, a) in c.accounts.iter().enumerate() {
        for (j, r) in a.rules.iter().enumerate() {
            let rat = format!("accounts[{i}].rules[{j}]");
            // A field name as RFC 5322 §3.6.8 writes one: a rule on
            // `List-Id:` (the colon a typo) or on 8-bit letters never
            // matched, and nothing said so (an audit).
            if let Some(h) = &r.when.header {
                if !is_field_name(h) {
                    w.push(format!(
                        "{rat}.when.header: {h:?} is no header field name (letters, digits and \
                         marks other than `:`, as `List-Id` or `X-Spam-Flag`), so the rule never \
                         matches"
                    ));
                }
            }
            // Shown in records, webhooks and logs as written, where the
            // white space or control character cannot be seen; the rule
            // form saves it under its name trimmed (it said the form could
            // not edit it, which the form since can: a regression audit).
            if r.name.trim() != r.name || r.name.chars().any(char::is_control) {
                w.push(format!(
                    "{rat}.name: {:?} begins or ends with white space or holds a control \
                     character, which records, webhooks and logs show unseen (the dashboard's \
                     rule form saves it under its name trimmed); rename it",
                    r.name
                ));
            }
            // As the rule form says it: keeping the message is no action
            // beside another, which is done all the same.
            if r.actions.len() > 1
                && (r.actions.iter()).any(|a| matches!(a, crate::actions::Action::Noop))
            {
                w.push(format!(
                    "{rat}.actions: noop (keep it where it is) beside another action, which is \
                     done all the same; take noop out"
                ));
            }
        }
    }
    // Resolved against the working directory of whoever runs it: the
    // shipped unit sets none (`/`), so check-config from the operator's
    // shell looked at another file than the service would (an audit).
    if c.storage.path.is_relative() {
        w.push(format!(
            "storage.path: {} is relative, so it is read from the working directory of the \
             process (the shipped unit sets none: /{}); write it in full",
            c.storage.path.display(),
            c.storage.path.display()
        ));
    }
    for (i, pr) in c.classifier.providers.iter().enumerate() {
        w.extend(provider_warnings(&format!("classifier.providers[{i}]"), pr));
    }
    // A folder kept from the model by its name alone (a junk or trash
    // folder's, at any level) is said: a configuration listing `Trash`
    // for the model, without `trash`, had its answers refused and parked
    // with no word before (a regression audit).
    // (With `model_actions` the narrowing is the operator's own, as the
    // example's `Junk` for rules alone.)
    for (i, a) in c.accounts.iter().enumerate() {
        if a.provider.is_none() || a.model_actions.is_some() {
            continue;
        }
        let kept = a.for_model().kept_from_model;
        if !kept.is_empty() {
            w.push(format!(
                "accounts[{i}].folders.allowed: {} named as junk or trash folders are, is not \
                 offered to the model, which may not spam or trash (allowed_actions, \
                 model_actions): rules may move there",
                kept.iter()
                    .map(|f| crate::shown::quoted(f).to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ));
        }
    }
    // An empty list takes no event at all: the entry is never sent
    // anything, and nothing said so (an integrator's audit); leaving
    // `events` out takes them all.
    let hooks = (c.webhooks.iter().enumerate())
        .map(|(i, h)| (format!("webhooks[{i}]"), h))
        .chain(c.accounts.iter().enumerate().flat_map(|(i, a)| {
            (a.webhooks.iter().enumerate())
                .map(move |(j, h)| (format!("accounts[{i}].webhooks[{j}]"), h))
        }));
    for (at, h) in hooks {
        if h.events.as_ref().is_some_and(Vec::is_empty) {
            w.push(format!(
                "{at}.events: an empty list, so this entry is sent no event at all; leave \
                 `events` out to send it every event, or name the ones it wants"
            ));
        }
    }
    w.extend(model_folder_lists(c));
    w.extend(shared_mailboxes(c));
    // Said at `run` only before (the first-hour audit): check-config, which
    // the README has an operator run after each change, said "ok".
    let bind = c.server.bind.parse::<IpAddr>().ok();
    if c.api_is_open() && !bind.is_some_and(|a| a.to_canonical().is_loopback()) {
        let at = bind.map_or(format!("{}:{}", c.server.bind, c.server.port), |a| {
            std::net::SocketAddr::new(a, c.server.port).to_string()
        });
        w.push(format!(
            "server.auth_token: neither it nor dashboard.api_keys is set, so anyone who reaches \
             {at} can read and change everything (open mode is for development on loopback); \
             set one (`openssl rand -hex 24`)"
        ));
    }
    w
}

/// The characters of an account's folder list past which a question to
/// the model is mostly that list: 16,000 (about 4,000 tokens, half of a
/// small local model's whole context of 8,192).
const MODEL_FOLDER_LIST_CHARS: usize = 16_000;

/// An account whose model may move mail is offered every folder of
/// `folders.allowed`, in every question (the list in the prompt, and the
/// answer's schema): an account with 3,000 folders sent each message
/// with a question of 338 KB, which no small model's context holds and a
/// hosted one bills for, and nothing said so (stop 65's audit of a
/// 3,000-folder tree).
fn model_folder_lists(c: &Config) -> Vec<String> {
    let mut w = Vec::new();
    for (i, a) in c.accounts.iter().enumerate() {
        if a.provider.is_none() {
            continue;
        }
        let m = a.for_model();
        if !m.allows(crate::actions::ActionKind::Move) {
            continue;
        }
        // As the prompt writes it: each name quoted, ", " between.
        let chars: usize = (m.folders.allowed.iter())
            .map(|f| format!("{f:?}").chars().count() + 2)
            .sum();
        if chars > MODEL_FOLDER_LIST_CHARS {
            w.push(format!(
                "accounts[{i}].folders.allowed: the model is offered all {} folders, a list of \
                 {chars} characters (about {} tokens) in every question it is asked; a small \
                 model's whole context is 8,192 tokens, and a hosted one bills each: list only \
                 the folders the model should choose among, or take `move` out of \
                 model_actions and leave these folders to rules",
                m.folders.allowed.len(),
                chars / 4
            ));
        }
    }
    w
}

/// Two accounts that sign in as the same user of the same server and
/// watch a folder in common: each processes every message of it, and both
/// act on it (two moves, the second refused as the message is gone; flags
/// twice; two rows and two webhooks). Mostly a copy of an account edited
/// in a hurry.
fn shared_mailboxes(c: &Config) -> Vec<String> {
    let mut w = Vec::new();
    let watched = |a: &super::super::AccountConfig| -> Vec<String> {
        (a.folders.watch.iter())
            .map(|f| crate::mailbox::namespace::inbox_upper(f).into_owned())
            .collect()
    };
    for (j, b) in c.accounts.iter().enumerate() {
        let same = (c.accounts[..j].iter().enumerate()).find_map(|(i, a)| {
            let alike = a.imap.host.eq_ignore_ascii_case(&b.imap.host)
                && a.imap.port() == b.imap.port()
                && a.imap.username == b.imap.username;
            let theirs = watched(a);
            let common: Vec<String> = (watched(b).into_iter())
                .filter(|f| theirs.contains(f))
                .collect();
            (alike && !common.is_empty()).then_some((i, common))
        });
        if let Some((i, common)) = same {
            w.push(format!(
                "accounts[{j}].folders.watch: {} watched by accounts[{i}] too, as the same user \
                 of the same server ({}@{}): both process every message there and act on it \
                 twice; watch other folders, or remove one",
                common
                    .iter()
                    .map(|f| crate::shown::quoted(f).to_string())
                    .collect::<Vec<_>>()
                    .join(", "),
                b.imap.username,
                b.imap.address()
            ));
        }
    }
    w
}

/// What a provider's settings say of calls that cannot work, or send its
/// key in the clear; each was found by an audit of an operator's mistakes
/// (`check-config` said "ok", and every message then failed).
fn provider_warnings(at: &str, pr: &ProviderConfig) -> Vec<String> {
    let mut w = Vec::new();
    let Ok(u) = url::Url::parse(&pr.url) else {
        return w;
    };
    let shown = super::super::redact_url(&pr.url);
    // The SDKs take a base URL (`https://api.openai.com/v1`); mailproc
    // posts to the URL as written.
    let endpoint = match pr.kind {
        ProviderKind::Openai => "/chat/completions",
        ProviderKind::Anthropic => "/messages",
    };
    if !u.path().trim_end_matches('/').ends_with(endpoint) {
        w.push(format!(
            "{at}.url: {shown} does not end in {endpoint}; calls go to the URL as written, the \
             whole endpoint (…/v1{endpoint}), not a base URL as the SDKs take"
        ));
    }
    let host = u.host_str().unwrap_or("").trim_end_matches('.');
    let keyless = pr.api_key.as_deref().is_none_or(str::is_empty) && u.username().is_empty();
    let hosted = ["api.openai.com", "api.anthropic.com"]
        .iter()
        .find(|h| host.eq_ignore_ascii_case(h));
    if let (true, Some(h)) = (keyless, hosted) {
        w.push(format!(
            "{at}.api_key: not set, and {h} refuses every call without one (HTTP 401); set it \
             from the environment (api_key: ${{NAME}})"
        ));
    }
    let loopback = host.eq_ignore_ascii_case("localhost")
        || u.host().is_some_and(|h| match h {
            url::Host::Ipv4(a) => a.is_loopback(),
            // `[::ffff:127.0.0.1]` too (the IPv6 audit).
            url::Host::Ipv6(a) => a.to_canonical().is_loopback(),
            url::Host::Domain(_) => false,
        });
    if u.scheme() == "http" && !loopback && (!keyless || hosted.is_some()) {
        w.push(format!(
            "{at}.url: {shown} is plain http to another host: the API key and every message \
             asked about cross the network unencrypted; use https (ca_file for a private CA)"
        ));
    }
    w
}

/// What YAML's own reading makes of `name` when it is no text: the number
/// or boolean an unquoted `1.10`, `0x1F` or `True` was before this version
/// read names as written (`1.1`, `31`, `true`); `None` when it is text.
pub fn number_reading(name: &str) -> Option<String> {
    let read = match serde_norway::from_str::<serde_norway::Value>(name).ok()? {
        serde_norway::Value::Number(n) => n.to_string(),
        serde_norway::Value::Bool(b) => b.to_string(),
        _ => return None,
    };
    (read != name).then_some(read)
}

/// Accounts whose name, written unquoted, an earlier version read as a
/// number (`name: 1.10` as `1.1`), when the database keeps the history of
/// that reading and none of the name as written (`seen`: the accounts it
/// keeps watermarks of): the account would start anew under its new name,
/// and with `backlog: all` decide its folders' mail again (the deployment
/// audit: 33 messages acted on twice, and nothing said so).
pub fn renamed_by_reading(c: &Config, seen: &[String]) -> Vec<String> {
    let mut w = Vec::new();
    for (i, a) in c.accounts.iter().enumerate() {
        let Some(old) = number_reading(&a.name) else {
            continue;
        };
        let configured = |n: &str| c.accounts.iter().any(|b| b.name == n);
        if seen.contains(&old) && !seen.contains(&a.name) && !configured(&old) {
            w.push(format!(
                "accounts[{i}].name: {name} is used as written since this version; an earlier \
                 one read it as YAML's number {old}, and the database keeps the history of an \
                 account named {old} and none of {name}: to go on as before, write \
                 `name: '{old}'`; as it is, the account starts anew (with `backlog: all`, it \
                 decides its folders' mail again)",
                name = a.name
            ));
        }
    }
    w
}
