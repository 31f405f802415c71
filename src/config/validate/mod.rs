//! Checks serde cannot make: lengths, ranges, references between sections,
//! regexes, certificates. One message per problem, each naming its key.

use std::collections::HashSet;
use std::net::IpAddr;
use std::path::Path;
use std::time::Duration;

use super::typed::shown_key;
use super::{
    parse_net, AnswerMode, Backlog, Config, ImapAuth, ImapConfig, ProviderKind, WebhookConfig,
    MAX_DURATION, PERMISSIONS,
};
use crate::actions::{check_action, is_keyword};

/// The longest rule name: the dashboard's rule form takes as many.
pub const MAX_RULE_NAME: usize = 100;
/// The most rules one account may have.
pub const MAX_RULES: usize = 1000;

/// The problem with a duration setting longer than [`MAX_DURATION`].
fn check_duration(at: &str, d: Duration, p: &mut Vec<String>) {
    if d > MAX_DURATION {
        p.push(format!("{at}: longer than 10 years"));
    }
}

fn valid_http_url(s: &str) -> Result<(), String> {
    match url::Url::parse(s) {
        Ok(u) if (u.scheme() == "http" || u.scheme() == "https") && u.host().is_some() => Ok(()),
        Ok(u) => Err(format!(
            "expected an http or https URL, got scheme {:?}",
            u.scheme()
        )),
        Err(e) => Err(format!(
            "invalid URL {:?}: {e}",
            super::redact::without_credentials(s)
        )),
    }
}

/// Whether `v` can go on the wire as an HTTP field value: visible ASCII,
/// spaces and tabs. A CR, LF or other control character could end the line
/// and forge another; the one rule of webhook headers (config and
/// deliveries alike).
/// Past [`MAX_HEADER_VALUE`] it is refused too: the HTTP client could not
/// write it (an audit found "protocol: output too small to write output"
/// for a 900 KB value), and receivers refuse far less.
pub fn sendable_header_value(v: &str) -> bool {
    v.len() <= MAX_HEADER_VALUE && v.chars().all(|c| c == '\t' || (' '..='~').contains(&c))
}

/// The longest value of one webhook header, and of all of a webhook's
/// headers together (names and values).
pub const MAX_HEADER_VALUE: usize = 8 << 10;
pub const MAX_HEADERS: usize = 64 << 10;

pub const BAD_HEADER_VALUE: &str = "not a valid header value (visible ASCII only: no CR, LF or \
     other control character; at most 8 KiB)";

/// Whether `name` is a header that frames the request or steers its
/// connection: the HTTP client writes those itself. Sent as configured
/// (`Content-Length: 0` beside `Transfer-Encoding: chunked`, another
/// `Host`), they were the shape of request smuggling toward a receiver
/// behind a proxy (an audit).
pub fn framing_header(name: &str) -> bool {
    const FRAMING: &[&str] = &[
        "content-length",
        "transfer-encoding",
        "host",
        "connection",
        "keep-alive",
        "proxy-connection",
        "upgrade",
        "te",
        "trailer",
        "expect",
    ];
    FRAMING.iter().any(|f| f.eq_ignore_ascii_case(name))
}

pub const FRAMING_HEADER: &str =
    "written by the HTTP client itself (framing and connection headers cannot be set)";

/// The header of `headers` at which they together pass [`MAX_HEADERS`].
pub fn too_many_headers<'a>(
    headers: impl IntoIterator<Item = (&'a String, &'a String)>,
) -> Option<&'a String> {
    let mut total = 0;
    headers.into_iter().find_map(|(name, value)| {
        total += name.len() + value.len();
        (total > MAX_HEADERS).then_some(name)
    })
}

pub const TOO_MANY_HEADERS: &str = "the headers together (names and values) pass 64 KiB";

fn valid_account_name(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 64
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_' || c == '.')
}

/// Largest trust-root file read: a bundle of a few hundred certificates
/// (the whole Mozilla bundle is about 220 KiB).
pub const MAX_CERTIFICATE_FILE: u64 = 1 << 20;

/// Reads a PEM certificate (a trust root), as TLS will use it: the one
/// reader of every `ca_file` the configuration names. Only a regular file of
/// at most [`MAX_CERTIFICATE_FILE`] is read: `/dev/zero` would be read until
/// memory runs out, and a FIFO would block whoever opens it (so it is
/// opened without blocking, then checked).
pub fn read_certificate(path: &Path) -> Result<Vec<u8>, String> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let at = path.display();
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(nix::fcntl::OFlag::O_NONBLOCK.bits())
        .open(path)
        .map_err(|e| format!("{at}: {e}"))?;
    let meta = file.metadata().map_err(|e| format!("{at}: {e}"))?;
    if !meta.is_file() {
        return Err(format!("{at} is not a regular file"));
    }
    let too_big = || format!("{at} is larger than 1 MiB");
    if meta.len() > MAX_CERTIFICATE_FILE {
        return Err(too_big());
    }
    let mut pem = Vec::new();
    file.take(MAX_CERTIFICATE_FILE + 1)
        .read_to_end(&mut pem)
        .map_err(|e| format!("{at}: {e}"))?;
    if pem.len() as u64 > MAX_CERTIFICATE_FILE {
        return Err(too_big());
    }
    native_tls::Certificate::from_pem(&pem)
        .map_err(|e| format!("{} is not a PEM certificate: {e}", path.display()))?;
    Ok(pem)
}

/// Longest folder name accepted, in characters: far beyond real folder
/// names, short enough that a command naming it stays a small line.
const FOLDER_NAME_MAX: usize = 255;

/// Why `name` cannot name a folder, or `None`. Names are UTF-8 (any
/// language; the account loop encodes them for the wire, see
/// `crate::mailbox::mutf7`) with `/` between levels.
pub fn folder_name_problem(name: &str) -> Option<String> {
    if name.is_empty() {
        return Some("must not be empty".into());
    }
    if let Some(c) = name.chars().find(|c| c.is_control()) {
        return Some(format!(
            "{name:?} contains the control character {c:?}, which an IMAP mailbox name cannot carry", name = crate::shown::quoted(name)
        ));
    }
    if name.chars().count() > FOLDER_NAME_MAX {
        return Some(format!(
            "{:?}... is longer than {FOLDER_NAME_MAX} characters",
            name.chars().take(20).collect::<String>()
        ));
    }
    if name.starts_with('/') || name.ends_with('/') || name.contains("//") {
        return Some(format!(
            "{name:?} has an empty level: '/' separates levels (write Archive/2024)",
            name = crate::shown::quoted(name)
        ));
    }
    None
}

pub use warnings::{renamed_by_reading, warnings};

/// The IPv6 address inside `[…]`, as a URL writes one, where a bare
/// address is wanted (`imap.host`, `server.bind`).
fn bracketed_address(s: &str) -> Option<std::net::Ipv6Addr> {
    s.trim().strip_prefix('[')?.strip_suffix(']')?.parse().ok()
}

/// Whether `name` is a header field name as RFC 5322 §3.6.8 writes one:
/// printable ASCII but `:`, at least one character. A rule on another
/// (`List-Id:`, `X-Prüfung`) never matches.
pub fn is_field_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| (33..=126).contains(&b) && b != b':')
}

/// Whether two configured names are one folder as any server sees them:
/// equal, but for the case of a leading INBOX level (RFC 3501 §5.1). (A server's prefix, as
/// Cyrus's `INBOX.`, is known only once connected: the account loop
/// checks a move against the folder it is in.)
fn same_folder(a: &str, b: &str) -> bool {
    use crate::mailbox::namespace::inbox_upper;
    inbox_upper(a) == inbox_upper(b)
}

/// Checks everything serde cannot; returns one message per problem.
pub fn validate(c: &Config) -> Vec<String> {
    let mut p = Vec::new();
    if c.server.port == 0 {
        p.push("server.port: must be between 1 and 65535".into());
    }
    if let Some(bare) = bracketed_address(&c.server.bind) {
        p.push(format!(
            "server.bind: an IPv6 address goes without brackets here: {bare}"
        ));
    } else if c.server.bind.parse::<IpAddr>().is_err() {
        p.push(format!(
            "server.bind: expected an IP address such as 127.0.0.1, got {:?}",
            c.server.bind
        ));
    }
    if !(1..=256).contains(&c.server.workers) {
        p.push("server.workers: must be between 1 and 256".into());
    }
    // Each connection holds a thread (about 10 KiB of stack touched) and a
    // file descriptor; beyond a few thousand the default RLIMIT_NOFILE or
    // the small host's memory gives out first.
    if !(8..=4096).contains(&c.server.max_connections) {
        p.push("server.max_connections: must be between 8 and 4096".into());
    }
    if let Some(u) = &c.server.public_url {
        if let Err(e) = valid_http_url(u) {
            p.push(format!("server.public_url: {e}"));
        }
    }
    if let Some(t) = &c.server.auth_token {
        if t.is_empty() {
            p.push("server.auth_token: must not be empty (leave it out for no token)".into());
        }
        if let Some(e) = unsendable(t) {
            p.push(format!("server.auth_token: {e}"));
        }
    }
    check_duration("dashboard.session_ttl", c.dashboard.session_ttl.0, &mut p);
    check_duration(
        "storage.activity_retention",
        c.storage.activity_retention.0,
        &mut p,
    );
    check_duration(
        "webhook_settings.timeout",
        c.webhook_settings.timeout.0,
        &mut p,
    );
    if c.dashboard.session_ttl.0.is_zero() {
        p.push("dashboard.session_ttl: must be longer than zero".into());
    }
    // Zero kept nothing: every record pruned at start (an audit).
    if c.storage.activity_retention.0.is_zero() {
        p.push("storage.activity_retention: must be longer than zero".into());
    }
    if c.dashboard
        .session_secret
        .as_deref()
        .is_some_and(|s| s.trim().is_empty())
    {
        p.push(
            "dashboard.session_secret: must not be empty or blank (leave it out to have one \
             generated)"
                .into(),
        );
    }
    let mut key_names = HashSet::new();
    for (i, k) in c.dashboard.api_keys.iter().enumerate() {
        let at = format!("dashboard.api_keys[{i}]");
        if k.name.trim().is_empty() {
            p.push(format!("{at}.name: must not be empty"));
        } else if !key_names.insert(k.name.as_str()) {
            p.push(format!("{at}.name: duplicate API key name {:?}", k.name));
        }
        if k.key.chars().count() < 16 {
            p.push(format!(
                "{at}.key: must be at least 16 characters (has {})",
                k.key.chars().count()
            ));
        }
        if let Some(e) = unsendable(&k.key) {
            p.push(format!("{at}.key: {e}"));
        }
        // A bearer token names one grant: a second key with the same value
        // (or the auth_token's) would never be the one found.
        if let Some(first) = c.dashboard.api_keys[..i]
            .iter()
            .position(|o| !k.key.is_empty() && k.key != super::MASK && o.key == k.key)
        {
            p.push(format!(
                "{at}.key: the same key as dashboard.api_keys[{first}] ({:?}); each key must be its own",
                c.dashboard.api_keys[first].name
            ));
        } else if !k.key.is_empty() && c.server.auth_token.as_deref() == Some(k.key.as_str()) {
            p.push(format!(
                "{at}.key: the same as server.auth_token; each key must be its own"
            ));
        }
        // An empty list reads as "no restriction" to some and grants
        // nothing: say which it is instead of starting a useless key.
        if k.permissions.is_empty() {
            p.push(format!(
                "{at}.permissions: empty grants nothing; list what the key may do \
                 (\"*\" for everything), or leave it out for [read:stats]"
            ));
        }
        for (j, perm) in k.permissions.iter().enumerate() {
            if !PERMISSIONS.contains(&perm.as_str()) {
                p.push(format!(
                    "{at}.permissions[{j}]: unknown permission {perm:?} (known: {})",
                    PERMISSIONS.join(", ")
                ));
            }
        }
    }
    if c.storage.path.as_os_str().is_empty() {
        p.push("storage.path: must not be empty".into());
    }
    if !(1..=64).contains(&c.classifier.concurrency) {
        p.push("classifier.concurrency: must be between 1 and 64".into());
    }
    let mut providers = HashSet::new();
    for (i, pr) in c.classifier.providers.iter().enumerate() {
        let at = format!("classifier.providers[{i}]");
        if pr.name.trim().is_empty() {
            p.push(format!("{at}.name: must not be empty"));
        } else if !providers.insert(pr.name.as_str()) {
            p.push(format!("{at}.name: duplicate provider name {:?}", pr.name));
        }
        if let Err(e) = valid_http_url(&pr.url) {
            p.push(format!("{at}.url: {e}"));
        }
        if pr.model.trim().is_empty() {
            p.push(format!("{at}.model: must not be empty"));
        } else if is_reserved_source(&pr.model) {
            // Recorded as each decision's source: `rules:x` read as a
            // rule's decision and was spared `minimum_confidence`,
            // `learned` as the classifier's, `undo` went uncounted (an
            // audit).
            p.push(format!(
                "{at}.model: {:?} is how mailproc records a decision that is not a model's \
                 (`learned`, `rules:…`, `undo`, `correction`, `none`); give the model's name as \
                 the provider knows it",
                pr.model
            ));
        }
        // Sent in a header: a line break in it failed every call as "http:
        // failed to parse header value", no key named (an audit).
        if pr
            .api_key
            .as_deref()
            .is_some_and(|k| !sendable_header_value(k))
        {
            p.push(format!("{at}.api_key: {BAD_HEADER_VALUE}"));
        }
        check_duration(&format!("{at}.timeout"), pr.timeout.0, &mut p);
        if pr.timeout.0.is_zero() {
            p.push(format!("{at}.timeout: must be longer than zero"));
        }
        if pr.rate_limit_rpm == Some(0) {
            p.push(format!(
                "{at}.rate_limit_rpm: must be at least 1 (omit it for no limit)"
            ));
        }
        if pr.max_body_chars < 100 && !(pr.max_body_chars == 0 && pr.answer == AnswerMode::Choice) {
            p.push(format!(
                "{at}.max_body_chars: must be at least 100 (or 0, no body, with answer: choice)"
            ));
        }
        if pr.answer == AnswerMode::Choice && pr.kind != ProviderKind::Openai {
            p.push(format!(
                "{at}.answer: choice needs kind: openai (log-probabilities of the answer)"
            ));
        }
        if let Some(ca) = &pr.ca_file {
            if let Err(e) = read_certificate(ca) {
                p.push(format!("{at}.ca_file: {e}"));
            }
        }
        if let Some(proxy) = &pr.proxy {
            match ureq::Proxy::new(proxy).map(|x| x.protocol()) {
                Err(e) => p.push(format!("{at}.proxy: invalid proxy URL: {e}")),
                Ok(ureq::ProxyProtocol::Http | ureq::ProxyProtocol::Https) => {}
                // This build speaks to HTTP proxies only: a SOCKS one
                // passed here and panicked at the first call (an audit).
                Ok(_) => p.push(format!(
                    "{at}.proxy: a SOCKS proxy is not supported; give an http:// or https:// proxy"
                )),
            }
        }
    }
    if c.webhook_settings.timeout.0.is_zero() {
        p.push("webhook_settings.timeout: must be longer than zero".into());
    }
    for (i, a) in c.webhook_settings.allow_private.iter().enumerate() {
        let host_like = !a.is_empty()
            && a.chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '-' || ch == '.');
        if parse_net(a).is_none() && !host_like {
            p.push(format!(
                "webhook_settings.allow_private[{i}]: expected a CIDR, an address or a host name, got {a:?}"
            ));
        }
    }
    validate_webhooks(&c.webhooks, "webhooks", &mut p);
    let mut names = HashSet::new();
    for (i, a) in c.accounts.iter().enumerate() {
        let at = format!("accounts[{i}]");
        if !valid_account_name(&a.name) {
            p.push(format!(
                "{at}.name: must be 1-64 characters of letters, digits, '-', '_' or '.', got {:?}",
                a.name
            ));
        } else if !names.insert(a.name.as_str()) {
            p.push(format!("{at}.name: duplicate account name {:?}", a.name));
        }
        if a.imap.host.trim().is_empty() {
            p.push(format!("{at}.imap.host: must not be empty"));
        } else if let Some(bare) = bracketed_address(&a.imap.host) {
            // Looked up as a name, it never connected, retried for ever
            // (the IPv6 audit).
            p.push(format!(
                "{at}.imap.host: an IPv6 address goes without brackets here: {bare}"
            ));
        } else if (a.imap.host.contains([':', '[', ']']) || a.imap.host.contains('%'))
            && a.imap.host.parse::<std::net::Ipv6Addr>().is_err()
        {
            // `127.0.0.1:993`, `[::1]:993`: the same, for any host with a
            // port in it (a regression audit).
            p.push(format!(
                "{at}.imap.host: {:?} is no host name or address (a port goes in imap.port, \
                 an IPv6 address without brackets)",
                a.imap.host
            ));
        }
        if a.imap.port == Some(0) {
            p.push(format!("{at}.imap.port: must be between 1 and 65535"));
        }
        if a.imap.username.is_empty() {
            p.push(format!("{at}.imap.username: must not be empty"));
        }
        for (key, d) in [
            ("timeout", a.imap.timeout.0),
            ("idle_interval", a.imap.idle_interval.0),
        ] {
            // Below a second a busy server looks dead; IDLE longer than 29
            // minutes may be dropped by the server (RFC 2177).
            let max = if key == "timeout" { 3600 } else { 29 * 60 };
            if d < Duration::from_secs(1) || d > Duration::from_secs(max) {
                p.push(format!(
                    "{at}.imap.{key}: must be between 1s and {}m",
                    max / 60
                ));
            }
        }
        if let Some(ca) = &a.imap.ca_file {
            if let Err(e) = read_certificate(ca) {
                p.push(format!("{at}.imap.ca_file: {e}"));
            }
        }
        validate_imap_auth(&a.imap, &a.name, &format!("{at}.imap"), &mut p);
        for (key, names) in [("watch", &a.folders.watch), ("allowed", &a.folders.allowed)] {
            for (j, f) in names.iter().enumerate() {
                if let Some(e) = folder_name_problem(f) {
                    p.push(format!("{at}.folders.{key}[{j}]: {e}"));
                }
            }
        }
        if let Some(j) = &a.folders.junk {
            if let Some(e) = folder_name_problem(j) {
                p.push(format!("{at}.folders.junk: {e}"));
            } else if a.folders.watch.iter().any(|w| same_folder(w, j)) {
                p.push(format!(
                    "{at}.folders.junk: {j:?} is also watched in folders.watch; spam moved there would be processed again", j = crate::shown::quoted(j)
                ));
            }
        }
        if a.folders.watch.is_empty() {
            p.push(format!(
                "{at}.folders.watch: must name at least one mailbox"
            ));
        }
        for (j, f) in a.folders.watch.iter().enumerate() {
            if a.folders.allowed.iter().any(|x| same_folder(x, f)) {
                p.push(format!(
                    "{at}.folders.watch[{j}]: {f:?} is also a move target in folders.allowed; mail moved there would be processed again", f = crate::shown::quoted(f)
                ));
            }
        }
        check_duration(&format!("{at}.poll_interval"), a.poll_interval.0, &mut p);
        check_duration(&format!("{at}.retry_delay"), a.retry_delay.0, &mut p);
        if let Backlog::Since(d) = a.backlog {
            check_duration(&format!("{at}.backlog"), d, &mut p);
        }
        // Zero doubled is zero: a failing message was retried every pass,
        // each a warning and an `error` webhook.
        if a.retry_delay.0 < Duration::from_secs(1) {
            p.push(format!("{at}.retry_delay: must be at least 1s"));
        }
        if a.poll_interval.0 < Duration::from_secs(1) {
            p.push(format!("{at}.poll_interval: must be at least 1s"));
        }
        if let Some(pr) = &a.provider {
            if !c.classifier.providers.iter().any(|x| &x.name == pr) {
                p.push(format!(
                    "{at}.provider: no provider named {pr:?} in classifier.providers"
                ));
            }
        }
        for k in a.model_actions.iter().flatten() {
            if !a.allows(*k) {
                p.push(format!(
                    "{at}.model_actions: {:?} is not in allowed_actions",
                    k.as_str()
                ));
            }
        }
        if a.max_attempts == 0 {
            p.push(format!("{at}.max_attempts: must be at least 1"));
        }
        if a.max_message_bytes < 1024 {
            p.push(format!("{at}.max_message_bytes: must be at least 1024"));
        }
        if !(0.0..=1.0).contains(&a.learned.min_confidence) {
            p.push(format!(
                "{at}.learned.min_confidence: must be between 0 and 1"
            ));
        }
        if a.learned
            .spam_confidence
            .is_some_and(|t| !(0.0..=1.0).contains(&t))
        {
            p.push(format!(
                "{at}.learned.spam_confidence: must be between 0 and 1"
            ));
        }
        if a.learned
            .spam_first
            .is_some_and(|t| !(0.0..=1.0).contains(&t))
        {
            p.push(format!("{at}.learned.spam_first: must be between 0 and 1"));
        }
        if let Some(mc) = a.minimum_confidence {
            if !(0.0..=1.0).contains(&mc) {
                p.push(format!("{at}.minimum_confidence: must be between 0 and 1"));
            }
        }
        if let Some(f) = &a.review_flag {
            if !is_keyword(f) {
                p.push(format!(
                    "{at}.review_flag: {f:?} is not an IMAP keyword (one atom of letters, digits, '$', '_', '-' or '.', without a backslash)", f = crate::shown::quoted(f)
                ));
            }
        }
        if a.rules.len() > MAX_RULES {
            // Each is compiled, kept and a metric label: 12,000 sent by a
            // key with write:accounts took 200 MB (found by an audit).
            p.push(format!(
                "{at}.rules: at most {MAX_RULES} rules, this account has {}",
                a.rules.len()
            ));
        }
        let mut rule_names = HashSet::new();
        for (j, r) in a.rules.iter().enumerate() {
            let rat = format!("{at}.rules[{j}]");
            let chars = r.name.chars().count();
            if r.name.trim().is_empty() {
                p.push(format!("{rat}.name: must not be empty"));
            } else if chars > MAX_RULE_NAME {
                // A rule's name is a metric label, a record's `rules:NAME`
                // and the rule form's field, which takes this many.
                p.push(format!(
                    "{rat}.name: at most {MAX_RULE_NAME} characters, this one has {chars}"
                ));
            } else if !rule_names.insert(r.name.as_str()) {
                p.push(format!(
                    "{rat}.name: duplicate rule name {}",
                    crate::shown::quoted(&r.name)
                ));
            }
            let w = &r.when;
            if w.from.is_none()
                && w.to.is_none()
                && w.subject.is_none()
                && w.header.is_none()
                && w.list_id.is_none()
            {
                p.push(format!(
                    "{rat}.when: needs at least one of from, to, subject, header, list_id"
                ));
            }
            if w.value.is_some() && w.header.is_none() {
                p.push(format!("{rat}.when.value: needs a header to match against"));
            }
            for (key, re) in [
                ("from", &w.from),
                ("to", &w.to),
                ("subject", &w.subject),
                ("value", &w.value),
                ("list_id", &w.list_id),
            ] {
                if let Some(re) = re {
                    if let Err(e) = regex::Regex::new(re) {
                        p.push(format!(
                            "{rat}.when.{key}: invalid regex: {}",
                            super::pattern_problem(re, &e)
                        ));
                    }
                }
            }
            if r.actions.is_empty() {
                p.push(format!("{rat}.actions: must list at least one action"));
            }
            for (k, act) in r.actions.iter().enumerate() {
                if let Err(e) = check_action(a, act) {
                    p.push(format!("{rat}.actions[{k}]: {e}"));
                }
            }
            if let Err(e) = crate::actions::one_destination(&r.actions)
                .and_then(|()| crate::actions::flags_bounded(&r.actions))
            {
                p.push(format!("{rat}.actions: {e}"));
            }
        }
        validate_webhooks(&a.webhooks, &format!("{at}.webhooks"), &mut p);
    }
    p
}

/// A name the records give a decision that is not a model's.
fn is_reserved_source(model: &str) -> bool {
    let m = model.trim();
    // `learned` is `learn::PATH`, a room above this one.
    ["learned", "undo", "correction", "none"]
        .iter()
        .any(|r| m.eq_ignore_ascii_case(r))
        || m.get(..6).is_some_and(|p| p.eq_ignore_ascii_case("rules:"))
}

fn validate_webhooks(hooks: &[WebhookConfig], at: &str, p: &mut Vec<String>) {
    for (i, h) in hooks.iter().enumerate() {
        if let Err(e) = valid_http_url(&h.url) {
            p.push(format!("{at}[{i}].url: {e}"));
        }
        for name in h.headers.keys() {
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
            {
                p.push(format!(
                    "{at}[{i}].headers: invalid header name {name:?}",
                    name = crate::shown::quoted(name)
                ));
            } else if framing_header(name) {
                p.push(format!("{at}[{i}].headers.{name}: {FRAMING_HEADER}"));
            }
        }
        // A value every delivery would fail on (the test endpoint refuses
        // it too); the value itself is not quoted: it is often a secret.
        for (name, value) in &h.headers {
            if !sendable_header_value(value) {
                p.push(format!(
                    "{at}[{i}].headers.{}: {BAD_HEADER_VALUE}",
                    shown_key(name)
                ));
            }
        }
        if let Some(name) = too_many_headers(&h.headers) {
            p.push(format!(
                "{at}[{i}].headers.{}: {TOO_MANY_HEADERS}",
                shown_key(name)
            ));
        }
        if let Some(s) = &h.secret {
            if s.len() < 16 {
                p.push(format!("{at}[{i}].secret: must be at least 16 characters"));
            } else if let Err(e) = signing_key(s) {
                p.push(format!("{at}[{i}].{e}"));
            }
        }
    }
}

/// `imap.auth` and what it needs: a password, or an `oauth2` section with a
/// token endpoint, a client and a refresh token.
fn validate_imap_auth(imap: &ImapConfig, imap_account: &str, at: &str, p: &mut Vec<String>) {
    match imap.auth {
        ImapAuth::Password => {
            match imap.password.as_deref() {
                None => p.push(format!("{at}.password: required with auth: password")),
                // `password: ""`, or a `${NAME}` set to nothing: every
                // login failed while check-config said ok (an audit).
                Some("") => p.push(format!(
                    "{at}.password: empty (a variable set to nothing?); write the password"
                )),
                Some(_) => {}
            }
            if imap
                .password
                .as_deref()
                .is_some_and(|pw| pw.contains(['\r', '\n', '\0']))
            {
                p.push(format!(
                    "{at}.password: holds a line break or NUL, which IMAP LOGIN cannot send \
                     (a stray newline at the end of a secret file?)"
                ));
            }
            if imap.oauth2.is_some() {
                p.push(format!(
                    "{at}.oauth2: only used with auth: oauth2 (this account has auth: password)"
                ));
            }
        }
        ImapAuth::Oauth2 => {
            if imap.password.is_some() {
                p.push(format!(
                    "{at}.password: not used with auth: oauth2; remove it (the refresh token goes in oauth2.refresh_token)"
                ));
            }
            let Some(o) = &imap.oauth2 else {
                p.push(format!(
                    "{at}.oauth2: required with auth: oauth2 (client_id, refresh_token, and preset or token_url)"
                ));
                return;
            };
            let at = format!("{at}.oauth2");
            match o.token_url() {
                None => p.push(format!(
                    "{at}.token_url: required unless a preset (google or microsoft) is set"
                )),
                Some(u) => {
                    if let Err(e) = valid_http_url(u) {
                        p.push(format!("{at}.token_url: {e}"));
                    }
                }
            }
            if let Some(u) = &o.device_authorization_url {
                if let Err(e) = valid_http_url(u) {
                    p.push(format!("{at}.device_authorization_url: {e}"));
                }
            }
            if o.client_id.trim().is_empty() {
                p.push(format!("{at}.client_id: must not be empty"));
            }
            if o.refresh_token
                .as_deref()
                .is_none_or(|t| t.trim().is_empty())
            {
                p.push(format!(
                    "{at}.refresh_token: required; get one with `mailproc oauth {}`",
                    imap_account
                ));
            }
            if let Some(ca) = &o.ca_file {
                if let Err(e) = read_certificate(ca) {
                    p.push(format!("{at}.ca_file: {e}"));
                }
            }
        }
    }
}

/// The HMAC key of a webhook entry's `secret` (Standard Webhooks): the
/// base64-decoded remainder of a
/// `whsec_` secret, otherwise the secret's own bytes.
pub fn signing_key(secret: &str) -> Result<Vec<u8>, String> {
    use base64::Engine as _;
    match secret.strip_prefix("whsec_") {
        Some(b64) => base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|e| format!("secret: a whsec_ secret must be base64 after the prefix: {e}")),
        None => Ok(secret.as_bytes().to_vec()),
    }
}

/// Why a credential cannot be presented in `Authorization: Bearer …`, or
/// `None`: a token there is visible ASCII (RFC 6750's `b64token` is
/// narrower still), and the server refuses a request head with a byte
/// past ASCII as malformed, so a key with an accent, a space or a control
/// character would pass the check and never let anyone in.
fn unsendable(secret: &str) -> Option<String> {
    let (at, bad) = secret
        .chars()
        .enumerate()
        .find(|(_, c)| !c.is_ascii_graphic())?;
    // Told by its kind and place, never quoted: the character is part of
    // a secret (the fourth regression audit found `has 'é'`).
    let kind = match bad {
        ' ' => "a space",
        c if c.is_control() => "a control character",
        _ => "a character outside ASCII",
    };
    Some(format!(
        "must be visible ASCII characters only (letters, digits, punctuation; no spaces), \
         as an HTTP header carries it: has {kind} at character {}",
        at + 1
    ))
}

pub(crate) mod warnings;

#[cfg(test)]
mod tests;
